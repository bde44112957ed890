//! Compile-fail cases of the derives (SPEC §4), grouped by failure kind under
//! `tests/ui/<kind>/`. Regenerate reviewed `.stderr` files with `TRYBUILD=overwrite`. The pass
//! cases are ordinary tests (`tests/ui_pass.rs`): with none here, trybuild checks without
//! building (`cargo check`), and does not build every dependency a second time.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*/*.rs");
}
