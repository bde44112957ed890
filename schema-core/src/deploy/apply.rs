//! The part of `apply` that talks to the server: observe, then execute a [`Plan`].

use std::fmt;

use futures_util::TryStreamExt;
use mongodb::bson::{doc, Bson, Document};
use mongodb::Database;

use super::plan::{
    Action, Observed, ObservedCollection, OnViolations, Plan, PlanOptions, Violations, Warning,
};
use crate::error::server_code;
use crate::ValidationLevel;
use crate::{CollectionSpec, Error, Result};

const NAMESPACE_EXISTS: i32 = 48;

/// What [`crate::Schema::apply`] did.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ApplyReport {
    /// The writes performed, in order.
    pub applied: Vec<AppliedAction>,
    /// Differences left alone (see [`Warning`]).
    pub warnings: Vec<Warning>,
}

/// One write of `apply` and how it went.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct AppliedAction {
    /// The action.
    pub action: Action,
    /// `true` when another instance had already done it (a `create` lost to a concurrent start).
    pub done_concurrently: bool,
}

impl ApplyReport {
    /// Whether nothing was written.
    pub fn is_noop(&self) -> bool {
        self.applied.iter().all(|a| a.done_concurrently)
    }
}

impl fmt::Display for ApplyReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.applied.is_empty() {
            writeln!(f, "schema up to date: nothing written")?;
        }
        for applied in &self.applied {
            let note = if applied.done_concurrently {
                " (already done by a concurrent instance)"
            } else {
                ""
            };
            writeln!(f, "- {}{note}", applied.action)?;
        }
        for warning in &self.warnings {
            writeln!(f, "! {warning}")?;
        }
        Ok(())
    }
}

/// Reads the server's state of the schema's collections: one `listCollections`, then one
/// `listIndexes` per existing collection.
pub(crate) async fn observe(db: &Database, specs: &[CollectionSpec]) -> Result<Observed> {
    let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
    let mut observed = Observed::default();
    let mut cursor = db
        .run_cursor_command(doc! { "listCollections": 1, "filter": { "name": { "$in": names } } })
        .await?;
    while let Some(entry) = cursor.try_next().await? {
        observed
            .collections
            .push(ObservedCollection::from_list_collections(&entry));
    }
    for collection in &mut observed.collections {
        if collection.kind == "collection" {
            collection.indexes = list_indexes(db, &collection.name).await?;
        }
    }
    Ok(observed)
}

async fn list_indexes(db: &Database, collection: &str) -> Result<Vec<Document>> {
    let cursor = db
        .run_cursor_command(doc! { "listIndexes": collection })
        .await?;
    Ok(cursor.try_collect().await?)
}

async fn observe_one(db: &Database, spec: &CollectionSpec) -> Result<Option<ObservedCollection>> {
    let observed = observe(db, std::slice::from_ref(spec)).await?;
    Ok(observed.collections.into_iter().next())
}

/// `schema.plan(&db)`: await it, optionally after setting options.
#[must_use = "a plan does nothing until awaited"]
pub struct PlanAction<'a> {
    specs: &'a [CollectionSpec],
    db: &'a Database,
    options: PlanOptions,
}

/// `schema.apply(&db)`: await it, optionally after setting options.
#[must_use = "apply does nothing until awaited"]
pub struct ApplyAction<'a> {
    specs: &'a [CollectionSpec],
    db: &'a Database,
    options: PlanOptions,
}

impl<'a> PlanAction<'a> {
    pub(crate) fn new(specs: &'a [CollectionSpec], db: &'a Database) -> Self {
        PlanAction {
            specs,
            db,
            options: PlanOptions::default(),
        }
    }

    /// Also plan to drop the indexes the schema does not declare (never `_id_`).
    pub fn drop_stale_indexes(mut self, drop: bool) -> Self {
        self.options.drop_stale_indexes = drop;
        self
    }
}

const SAMPLE_VIOLATIONS: i64 = 5;

/// Counts the existing documents of `collection` that `validator` would reject (a validator is
/// a query: `{ $nor: [validator] }` matches them), with a few of their ids.
pub(crate) async fn violations(
    db: &Database,
    collection: &str,
    validator: &Document,
) -> Result<Violations> {
    let filter = doc! { "$nor": [validator.clone()] };
    let coll = db.collection::<Document>(collection);
    let count = coll.count_documents(filter.clone()).await?;
    let sample_ids = if count == 0 {
        Vec::new()
    } else {
        coll.find(filter)
            .projection(doc! { "_id": 1 })
            .limit(SAMPLE_VIOLATIONS)
            .await?
            .try_collect::<Vec<Document>>()
            .await?
            .into_iter()
            .filter_map(|d| d.get("_id").cloned())
            .collect()
    };
    Ok(Violations { count, sample_ids })
}

/// Fills in the violations of every validator change of `plan`.
async fn count_violations(db: &Database, plan: &mut Plan) -> Result<()> {
    for action in &mut plan.actions {
        if let Action::UpdateValidator {
            collection,
            validator,
            violations: slot,
            ..
        } = action
        {
            *slot = Some(violations(db, collection, validator).await?);
        }
    }
    Ok(())
}

impl<'a> ApplyAction<'a> {
    pub(crate) fn new(specs: &'a [CollectionSpec], db: &'a Database) -> Self {
        ApplyAction {
            specs,
            db,
            options: PlanOptions::default(),
        }
    }

    /// Also drop the indexes the schema does not declare (never `_id_`, never one that conflicts
    /// with a schema index).
    pub fn drop_stale_indexes(mut self, drop: bool) -> Self {
        self.options.drop_stale_indexes = drop;
        self
    }

    /// What to do when a validator change would reject existing documents (default:
    /// [`OnViolations::Refuse`]). Whatever the choice, no document is deleted or rewritten.
    pub fn on_violations(mut self, decision: OnViolations) -> Self {
        self.options.on_violations = decision;
        self
    }
}

impl<'a> std::future::IntoFuture for PlanAction<'a> {
    type Output = Result<Plan>;
    type IntoFuture =
        std::pin::Pin<Box<dyn std::future::Future<Output = Result<Plan>> + Send + 'a>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let observed = observe(self.db, self.specs).await?;
            let mut plan = Plan::compute_with(self.specs, &observed, self.options);
            count_violations(self.db, &mut plan).await?;
            Ok(plan)
        })
    }
}

impl<'a> std::future::IntoFuture for ApplyAction<'a> {
    type Output = Result<ApplyReport>;
    type IntoFuture =
        std::pin::Pin<Box<dyn std::future::Future<Output = Result<ApplyReport>> + Send + 'a>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let observed = observe(self.db, self.specs).await?;
            let mut report = ApplyReport::default();
            for spec in self.specs {
                let plan =
                    Plan::for_collection_with(spec, observed.collection(&spec.name), self.options);
                apply_collection(self.db, spec, plan, self.options, &mut report).await?;
            }
            Ok(report)
        })
    }
}

async fn apply_collection(
    db: &Database,
    spec: &CollectionSpec,
    plan: Plan,
    options: PlanOptions,
    report: &mut ApplyReport,
) -> Result<()> {
    report.warnings.extend(plan.warnings);
    for mut action in plan.actions {
        if let Action::UpdateValidator {
            collection,
            validator,
            level,
            violations: slot,
            ..
        } = &mut action
        {
            let found = violations(db, collection, validator).await?;
            if found.count > 0 {
                report.warnings.push(Warning::ValidatorOverViolations {
                    collection: collection.clone(),
                    violations: found.clone(),
                    decision: options.on_violations,
                });
                match options.on_violations {
                    OnViolations::Refuse => continue,
                    OnViolations::Moderate => *level = ValidationLevel::Moderate,
                    _ => {}
                }
            }
            *slot = Some(found);
        }
        match run(db, &action).await {
            Ok(()) => report.applied.push(AppliedAction {
                action,
                done_concurrently: false,
            }),
            Err(error)
                if matches!(action, Action::CreateCollection { .. })
                    && server_code(&error) == Some(NAMESPACE_EXISTS) =>
            {
                // Another instance created it between our read and our write: compare again
                // with what it created and carry on from there.
                report.applied.push(AppliedAction {
                    action,
                    done_concurrently: true,
                });
                let observed = observe_one(db, spec).await?;
                let replan = Plan::for_collection_with(spec, observed.as_ref(), options);
                if replan
                    .actions
                    .iter()
                    .any(|a| matches!(a, Action::CreateCollection { .. }))
                {
                    return Err(Error::Apply {
                        action: format!("create `{}`", spec.name),
                        source: error,
                    });
                }
                return Box::pin(apply_collection(db, spec, replan, options, report)).await;
            }
            Err(source) => {
                return Err(Error::Apply {
                    action: action.to_string(),
                    source,
                })
            }
        }
    }
    Ok(())
}

async fn run(db: &Database, action: &Action) -> mongodb::error::Result<()> {
    let command = match action {
        Action::CreateCollection {
            collection,
            validator,
            level,
            action,
        } => doc! {
            "create": collection,
            "validator": validator.clone(),
            "validationLevel": level.as_str(),
            "validationAction": action.as_str(),
        },
        Action::UpdateValidator {
            collection,
            validator,
            level,
            action,
            ..
        } => doc! {
            "collMod": collection,
            "validator": validator.clone(),
            "validationLevel": level.as_str(),
            "validationAction": action.as_str(),
        },
        Action::CreateIndexes {
            collection,
            indexes,
        } => doc! {
            "createIndexes": collection,
            "indexes": indexes.iter().map(|i| Bson::Document(i.to_document())).collect::<Vec<_>>(),
        },
        Action::DropIndex {
            collection, name, ..
        } => doc! {
            "dropIndexes": collection,
            "index": name,
        },
    };
    db.run_command(command).await.map(drop)
}
