//! The derives' pass cases (SPEC §4): each module under `tests/ui-pass/` must compile, and its
//! `main` checks what the derives generated for it. Ordinary tests beside the compile-fail cases
//! of `tests/ui.rs`, so that trybuild only checks (a pass case would make it build every
//! dependency with code generation, a second time).

// a pass case declares what a service would, not all of which it reads
#[allow(dead_code)]
#[path = "ui-pass/collections_and_options.rs"]
mod collections_and_options;
// a pass case declares what a service would, not all of which it reads
#[allow(dead_code)]
#[path = "ui-pass/copies.rs"]
mod copies;
// a pass case declares what a service would, not all of which it reads
#[allow(dead_code)]
#[path = "ui-pass/generic_and_newtypes.rs"]
mod generic_and_newtypes;
// a pass case declares what a service would, not all of which it reads
#[allow(dead_code)]
#[path = "ui-pass/generic_constraints.rs"]
mod generic_constraints;
// a pass case declares what a service would, not all of which it reads
#[allow(dead_code)]
#[path = "ui-pass/indexes.rs"]
mod indexes;
// a pass case declares what a service would, not all of which it reads
#[allow(dead_code)]
#[path = "ui-pass/references.rs"]
mod references;
// a pass case declares what a service would, not all of which it reads
#[allow(dead_code)]
#[path = "ui-pass/serde_renames.rs"]
mod serde_renames;
// a pass case declares what a service would, not all of which it reads
#[allow(dead_code)]
#[path = "ui-pass/serde_representations.rs"]
mod serde_representations;
// a pass case declares what a service would, not all of which it reads
#[allow(dead_code)]
#[path = "ui-pass/ticket_model.rs"]
mod ticket_model;

#[test]
fn collections_and_options() {
    collections_and_options::main();
}

#[test]
fn copies() {
    copies::main();
}

#[test]
fn generic_and_newtypes() {
    generic_and_newtypes::main();
}

#[test]
fn generic_constraints() {
    generic_constraints::main();
}

#[test]
fn indexes() {
    indexes::main();
}

#[test]
fn references() {
    references::main();
}

#[test]
fn serde_renames() {
    serde_renames::main();
}

#[test]
fn serde_representations() {
    serde_representations::main();
}

#[test]
fn ticket_model() {
    ticket_model::main();
}
