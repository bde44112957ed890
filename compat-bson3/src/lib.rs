//! Nothing here: the crate exists for its tests, which build mongo-schema where the driver
//! re-exports bson 3 (see `Cargo.toml`).
