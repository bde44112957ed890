//! The calls the library sends for a service, as actions in the driver's style: each starts
//! with the database (`Ticket::LAST_MESSAGE.add(&db, &message)`), takes its options as
//! setters, and is awaited directly. Every one that reads or writes for the service takes
//! `.session(&mut ClientSession)` and then runs inside the caller's transaction (the caller
//! owns the commit, the abort and the retry):
//!
//! ```no_run
//! # use mongo_schema_core::*;
//! # async fn f<T: Document + serde::Serialize + serde::de::DeserializeOwned, C: Document + serde::Serialize + serde::de::DeserializeOwned, V: for<'c> From<&'c C> + serde::Serialize>(
//! #     db: &mongodb::Database, subset: &Subset<T, C, V>, child: &C, target: &Ref<T>,
//! #     status: query::Path<T, String>, // `field!(Ticket, status)`
//! # ) -> Result<()> where T::Id: serde::Serialize {
//! let mut session = db.client().start_session().await?;
//! session.start_transaction().await?;
//! subset.add(db, child).session(&mut session).await?;
//! target
//!     .compare_and_set(db, status, "open", mongodb::bson::doc! { "$set": { "status": "closed" } })
//!     .session(&mut session)
//!     .await?;
//! session.commit_transaction().await?;
//! # Ok(()) }
//! ```

pub use crate::query::DeclaredQuery;
pub use crate::relations::bucket::{BucketAppend, BucketEntries};
pub use crate::relations::compare::CompareAndSet;
pub use crate::relations::embedded::EmbeddedPush;
pub use crate::relations::part::PartInsert;
pub use crate::relations::resolve::{Resolve, ResolveAll};
pub use crate::relations::subset::{SubsetAdd, SubsetDelete, SubsetRebuild, SubsetUpdate};
pub use crate::relations::{Attached, ChildPage, Detached, Lookup};
pub use crate::schema::Reconcile;
pub use crate::sync::source::{DeleteSource, UpdateSource};
pub use crate::sync::Transaction;
