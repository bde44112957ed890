//! The indexes of a plan: which declared index the server has, and which of the server's are a
//! prefix of a longer one.

use mongodb::bson::{Bson, Document};

use crate::deploy::observe::ObservedCollection;
use crate::model::index;
use crate::{json_schema, CollectionSpec, IndexSpec};

/// The server's indexes that the schema does not declare (by name or keys) and that are a
/// prefix of a longer index, with that index's name: one of the schema that holds every
/// document, or another of the server's that does.
pub(super) fn prefix_indexes<'a>(
    spec: &'a CollectionSpec,
    observed: &'a ObservedCollection,
) -> impl Iterator<Item = (&'a Document, String)> + 'a {
    let keys_of = |index: &Document| index.get_document("key").cloned().unwrap_or_default();
    observed.indexes.iter().filter_map(move |existing| {
        let name = existing.get_str("name").unwrap_or_default();
        let keys = keys_of(existing);
        let declared = spec
            .indexes
            .iter()
            .any(|wanted| wanted.name == name || json_schema::same_ordered(&wanted.keys, &keys));
        if name == "_id_" || declared {
            return None;
        }
        let wanted = spec
            .indexes
            .iter()
            .filter(|wanted| !wanted.sparse && wanted.partial_filter.is_none())
            .find(|wanted| index::server_index_is_prefix(existing, &wanted.keys))
            .map(|wanted| wanted.name.clone());
        let holds_every_document = |other: &Document| {
            !other.get_bool("sparse").unwrap_or(false)
                && !other.contains_key("partialFilterExpression")
        };
        let server = || {
            observed
                .indexes
                .iter()
                .filter(|other| holds_every_document(other))
                .find(|other| index::server_index_is_prefix(existing, &keys_of(other)))
                .map(|other| other.get_str("name").unwrap_or_default().to_owned())
        };
        wanted
            .or_else(server)
            .map(|served_by| (existing, served_by))
    })
}

pub(super) enum IndexState {
    Present,
    Missing,
    Conflict {
        existing: Document,
        differences: Vec<String>,
    },
}

/// The server's index that is `wanted`: one of its key pattern and name, else one of its key
/// pattern and collation (the same index for mongod under another name: a conflict). mongod
/// holds two indexes of one key pattern when their collations differ (`sku_1` under a
/// collection's default beside the library's exact `sku_1_simple`; on a collated time series,
/// the `meta_1_time_1` mongod creates itself under the default): one of another collation and
/// name is not this one.
pub(super) fn find_index(wanted: &IndexSpec, existing: &[Document]) -> IndexState {
    let keys_of = |index: &Document| index.get_document("key").ok().cloned().unwrap_or_default();
    let same_keys = || {
        existing
            .iter()
            .filter(|index| json_schema::same_ordered(&keys_of(index), &wanted.keys))
    };
    let named = |index: &&Document| index.get_str("name").ok() == Some(wanted.name.as_str());
    let collated_alike = |index: &&Document| {
        crate::Collation::same_as_server(
            wanted.collation.as_ref(),
            index.get_document("collation").ok(),
        )
    };
    if let Some(index) = same_keys()
        .find(named)
        .or_else(|| same_keys().find(collated_alike))
    {
        let differences = wanted.differences(index);
        return if differences.is_empty() {
            IndexState::Present
        } else {
            IndexState::Conflict {
                existing: index.clone(),
                differences,
            }
        };
    }
    if let Some(index) = existing
        .iter()
        .find(|index| index.get_str("name").ok() == Some(wanted.name.as_str()))
    {
        return IndexState::Conflict {
            existing: index.clone(),
            differences: vec![format!(
                "the server's index `{}` has keys {}, the schema's has {}{}",
                wanted.name,
                index.get("key").cloned().unwrap_or(Bson::Null),
                wanted.keys,
                if index::server_index_is_prefix(index, &wanted.keys) {
                    " (the server's keys are a prefix of the schema's: the declared index was \
                     extended so that one index also serves a relationship; drop the server's \
                     and apply again to create the longer one under this name)"
                } else {
                    ""
                }
            )],
        };
    }
    IndexState::Missing
}
