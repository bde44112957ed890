//! Shared by the integration tests of the `mongo-schema` binary.

pub mod scratch;
pub mod shop;
