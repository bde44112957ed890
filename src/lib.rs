pub use mongo_schema_core::*;
