//! The schema model: what the derives describe and `apply` brings about. A collection root's
//! [`document::CollectionSpec`] (validator, indexes, references, copies), the `$jsonSchema` of
//! every type ([`bson_schema`]), index descriptions ([`index`]), copied fields and the sync graph
//! ([`copy`]), and the worst-case size a schema allows ([`size`]).

pub(crate) mod bson_schema;
pub(crate) mod copy;
pub(crate) mod document;
pub(crate) mod index;
pub(crate) mod size;
