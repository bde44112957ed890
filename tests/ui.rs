//! Compile-fail and pass cases of the derives (SPEC §4), grouped by failure kind under
//! `tests/ui/<kind>/`. Regenerate reviewed `.stderr` files with `TRYBUILD=overwrite`.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*/*.rs");
    t.pass("tests/ui-pass/*.rs");
}
