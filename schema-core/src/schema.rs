//! The set of models of a service.

use std::fmt;

use mongodb::Database;

use crate::{json_schema, CollectionSpec, Document, Result};

/// The collections of a service: built once from its `Document` types, then planned against or
/// applied to a database at start-up.
///
/// ```no_run
/// # use mongo_schema_core::{Schema, Document};
/// # async fn start<A: Document, B: Document>(db: &mongodb::Database) -> mongo_schema_core::Result<()> {
/// let schema = Schema::new().model::<A>().model::<B>().build()?;
/// let report = schema.apply(db).await?;
/// println!("{report}");
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Schema {
    collections: Vec<CollectionSpec>,
}

/// Collects models; [`SchemaBuilder::build`] checks the rules that span them.
#[derive(Debug, Default)]
#[must_use = "call `.build()` to get a `Schema`"]
pub struct SchemaBuilder {
    collections: Vec<CollectionSpec>,
}

/// Why a set of models does not make a schema. Every problem is listed, not only the first.
#[derive(Debug, Clone, PartialEq)]
pub struct SchemaError {
    /// One sentence per problem.
    pub problems: Vec<String>,
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid schema: {}", self.problems.join("; "))
    }
}

impl std::error::Error for SchemaError {}

impl Schema {
    /// Starts a schema: add each collection root with [`SchemaBuilder::model`].
    #[allow(clippy::new_ret_no_self)]
    pub fn new() -> SchemaBuilder {
        SchemaBuilder::default()
    }

    /// The collections, in the order the models were added.
    pub fn collections(&self) -> &[CollectionSpec] {
        &self.collections
    }

    /// The collection called `name`.
    pub fn collection(&self, name: &str) -> Option<&CollectionSpec> {
        self.collections.iter().find(|c| c.name == name)
    }

    /// What [`Schema::apply`] would do to `db`, without doing it. Sends only reads
    /// (`listCollections`, `listIndexes`). Await it, or set options first:
    /// `schema.plan(&db).drop_stale_indexes(true).await`.
    pub fn plan<'a>(&'a self, db: &'a Database) -> crate::apply::PlanAction<'a> {
        crate::apply::PlanAction::new(&self.collections, db)
    }

    /// Brings `db` to the schema: creates missing collections with their validator, runs
    /// `collMod` where the validator, level or action differ, and creates missing indexes. It never
    /// drops or rebuilds anything; differences it will not fix are reported as warnings. A
    /// database that already matches receives no write command at all.
    ///
    /// Safe when many instances start at once: a `create` lost to a concurrent instance is not
    /// an error (the collection is re-read and compared), and index creation is idempotent.
    ///
    /// Await it, or opt in to dropping the indexes the schema does not declare first:
    /// `schema.apply(&db).drop_stale_indexes(true).await` (never `_id_`, never an index that
    /// conflicts with a schema index: those stay reported).
    pub fn apply<'a>(&'a self, db: &'a Database) -> crate::apply::ApplyAction<'a> {
        crate::apply::ApplyAction::new(&self.collections, db)
    }
}

impl SchemaBuilder {
    /// Adds the collection of a `Document` type.
    pub fn model<T: Document>(self) -> Self {
        self.collection(T::collection_spec())
    }

    /// Adds a collection described by hand.
    pub fn collection(mut self, spec: CollectionSpec) -> Self {
        self.collections.push(spec);
        self
    }

    /// Checks the rules that span models and returns the schema, or every problem found:
    /// collection names are valid and unique, every index key names a field of the collection's
    /// schema, and every reference target is part of the schema.
    pub fn build(self) -> Result<Schema, SchemaError> {
        let mut problems = Vec::new();
        for (i, spec) in self.collections.iter().enumerate() {
            if let Some(problem) = collection_name_problem(&spec.name) {
                problems.push(problem);
            }
            if self.collections[..i].iter().any(|c| c.name == spec.name) {
                problems.push(format!(
                    "collection `{}` is declared by two models",
                    spec.name
                ));
            }
            for reference in &spec.references {
                if !self.collections.iter().any(|c| c.name == reference.target) {
                    problems.push(format!(
                        "`{}.{}` references `{}` (collection `{}`), which is not part of the schema: add `.model::<{}>()`",
                        spec.name,
                        reference.field,
                        reference.target_type,
                        reference.target,
                        reference.target_type
                    ));
                }
            }
            let schema = spec.validator.get_document("$jsonSchema").ok();
            for index in &spec.indexes {
                for (path, _) in &index.keys {
                    let known = path == "_id"
                        || path.starts_with('$')
                        || path.ends_with("$**")
                        || schema.is_none_or(|schema| json_schema::has_path(schema, path));
                    if !known {
                        problems.push(format!(
                            "index `{}` of `{}` names `{path}`, which is not a field of its documents",
                            index.name, spec.name
                        ));
                    }
                }
                if spec
                    .indexes
                    .iter()
                    .filter(|other| other.name == index.name)
                    .count()
                    > 1
                    && !problems
                        .iter()
                        .any(|p| p.contains(&format!("name `{}`", index.name)))
                {
                    problems.push(format!(
                        "two indexes of `{}` have the name `{}`",
                        spec.name, index.name
                    ));
                }
            }
        }
        if problems.is_empty() {
            Ok(Schema {
                collections: self.collections,
            })
        } else {
            Err(SchemaError { problems })
        }
    }
}

fn collection_name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        Some("a collection name is empty".to_owned())
    } else if name.contains('$') || name.contains('\0') {
        Some(format!(
            "collection name `{name}` contains `$` or a NUL byte"
        ))
    } else if name.starts_with("system.") {
        Some(format!(
            "collection name `{name}` is in the reserved `system.` namespace"
        ))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::IndexSpec;
    use mongodb::bson::doc;

    fn spec(name: &str) -> CollectionSpec {
        CollectionSpec::new(
            name,
            doc! { "$jsonSchema": { "bsonType": "object", "properties": {
                "customer": { "bsonType": "object", "properties": { "_id": { "bsonType": "objectId" } } },
            } } },
        )
    }

    #[test]
    fn every_problem_is_reported() {
        let error = Schema::new()
            .collection(spec("a").index(IndexSpec::new(doc! { "customer.name": 1 })))
            .collection(spec("a"))
            .collection(spec("system.x"))
            .build()
            .unwrap_err();
        assert_eq!(error.problems.len(), 3, "{error}");
    }

    #[test]
    fn dotted_paths_into_the_schema_are_accepted() {
        let schema = Schema::new()
            .collection(spec("a").index(IndexSpec::new(doc! { "customer._id": 1, "_id": 1 })))
            .build()
            .unwrap();
        assert_eq!(schema.collections().len(), 1);
    }
}
