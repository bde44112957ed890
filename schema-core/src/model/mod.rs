//! The schema model: what the derives describe and `apply` brings about. A collection root
//! ([`document`]) and its [`collection::CollectionSpec`] (validator, indexes, references,
//! copies), the `$jsonSchema` of
//! every type ([`bson_schema`]), index descriptions ([`index`]), copied fields and the sync graph
//! ([`copy`]), parts stored under their owner's `_id` ([`part`]), the worst-case size a schema allows ([`size`]), the schemas of std and ecosystem types
//! ([`ecosystem`]), the stored shapes of known serde helpers ([`stored`]), and how strings
//! compare ([`collation`]), and time series collections ([`timeseries`]).

pub(crate) mod bson_schema;
pub(crate) mod collation;
pub(crate) mod collection;
pub(crate) mod copy;
pub(crate) mod copy_de;
pub(crate) mod document;
pub(crate) mod ecosystem;
pub(crate) mod encoding;
pub(crate) mod index;
pub(crate) mod part;
pub(crate) mod size;
pub(crate) mod sort;
pub mod stored;
pub(crate) mod timeseries;
