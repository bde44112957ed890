//! Copied fields: extended references and subsets, with the sync strategy of each copy, and
//! the static sync graph of a schema.

use std::fmt;

/// How a copy is kept in step with its source (seed 003, "Duplicated data and keeping it in
/// sync"). Declared per copy with `#[extended_ref(sync = "...")]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SyncStrategy {
    /// A snapshot: the value at the time of the event is the right one. Never rewritten by any
    /// path of the library.
    Frozen,
    /// Source and copies change in one multi-document transaction
    /// ([`crate::Schema::update_source`]).
    Transactional,
    /// A change-stream consumer ([`crate::SyncWorker`]) applies `updateMany` after the source
    /// changes; reconcile is its safety net.
    Async,
    /// A scheduled job ([`crate::Schema::reconcile`]) compares and repairs.
    Reconcile,
}

impl SyncStrategy {
    /// The spelling of the attribute.
    pub fn as_str(self) -> &'static str {
        match self {
            SyncStrategy::Frozen => "frozen",
            SyncStrategy::Transactional => "transactional",
            SyncStrategy::Async => "async",
            SyncStrategy::Reconcile => "reconcile",
        }
    }
}

impl fmt::Display for SyncStrategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What happens to the copies of a source document when it is deleted
/// (`#[extended_ref(..., on_delete = "keep" | "unset")]`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OnDelete {
    /// The copies keep their last values; [`crate::Schema::reconcile`] and
    /// [`crate::Schema::audit`] count them as missing sources. The default.
    #[default]
    Keep,
    /// The holder's copy field is set to `null` (only on `Option<Copy>` fields): by the sync
    /// worker for `async` copies, by reconcile, and by [`crate::Schema::delete_source`] in the
    /// deleting transaction for `transactional` ones.
    Unset,
}

impl OnDelete {
    /// The spelling of the attribute.
    pub fn as_str(self) -> &'static str {
        match self {
            OnDelete::Keep => "keep",
            OnDelete::Unset => "unset",
        }
    }
}

impl fmt::Display for OnDelete {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether a copy field holds one copy, maybe one, or an array of copies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CopyShape {
    /// `customer: TicketCustomer`
    One,
    /// `assignee: Option<TicketAssignee>`
    Optional,
    /// `parts: Vec<ProductPart>` (bounded with `max`)
    Many,
}

/// One extended reference: the holder's `path` keeps `_id` and `fields` of a `source` document.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CopySpec {
    /// Stored path of the copy in the holder (`customer`).
    pub path: String,
    /// The source collection.
    pub source: String,
    /// The source's Rust type, for messages.
    pub source_type: String,
    /// The copied fields, as stored in both the source and the copy.
    pub fields: Vec<String>,
    /// The sync strategy.
    pub strategy: SyncStrategy,
    /// One, optional or an array.
    pub shape: CopyShape,
    /// What a deletion of the source does to the copies.
    pub on_delete: OnDelete,
    /// The order of the holders of one source (the key after `<path>._id` in a declared
    /// index), for the keyset pages of the relation constant: `(key, direction, unique)`.
    pub order: Option<(String, i32, bool)>,
    /// For a copy inside an embedded value, the embedding field as the report shows it
    /// (`lines[]` for an array of values, `shipping` for one value).
    pub within: Option<String>,
}

impl CopySpec {
    /// A copy at `path` of `fields` of `source` documents.
    pub fn new(
        path: impl Into<String>,
        source: impl Into<String>,
        source_type: impl Into<String>,
        fields: &[&str],
        strategy: SyncStrategy,
        shape: CopyShape,
    ) -> Self {
        CopySpec {
            path: path.into(),
            source: source.into(),
            source_type: source_type.into(),
            fields: fields.iter().map(|f| (*f).to_owned()).collect(),
            strategy,
            shape,
            on_delete: OnDelete::Keep,
            order: None,
            within: None,
        }
    }

    /// Orders the holders of one source by `key` (`unique`: the pair copied id + key is
    /// unique), for keyset pages of the extended reference's relation.
    pub fn order(mut self, key: impl Into<String>, direction: i32, unique: bool) -> Self {
        self.order = Some((key.into(), direction, unique));
        self
    }

    /// Sets what a deletion of the source does to the copies ([`OnDelete::Keep`] unless set).
    pub fn on_delete(mut self, on_delete: OnDelete) -> Self {
        self.on_delete = on_delete;
        self
    }

    /// The path of the copied id (`customer._id`), which the fan-out update filters on.
    pub fn id_path(&self) -> String {
        format!("{}._id", self.path)
    }

    /// The index the copy's queries need: `{ <path>._id: 1 }` for the fan-out, or with keyset
    /// pages on a key that is not unique `{ <path>._id: 1, key: d, _id: d }` (the pages'
    /// tie-break in index order, as for a reference). `None` for a frozen copy without pages:
    /// nothing rewrites it.
    pub fn index_keys(&self) -> Option<mongodb::bson::Document> {
        let mut keys = mongodb::bson::Document::new();
        keys.insert(self.id_path(), 1);
        match &self.order {
            Some((key, direction, unique)) => {
                keys.insert(key.clone(), *direction);
                if !unique {
                    keys.insert("_id", *direction);
                }
            }
            None if self.strategy == SyncStrategy::Frozen => return None,
            None => {}
        }
        Some(keys)
    }
}

/// A subset: the newest (or most relevant) `max` children copied into the parent, with a count.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SubsetSpec {
    /// Stored path of the subset in the parent (`last_message`).
    pub path: String,
    /// The child collection.
    pub child: String,
    /// The child's Rust type, for messages.
    pub child_type: String,
    /// At most this many previews (1: an `Option`, kept with `$set`).
    pub max: u64,
    /// Stored field of the preview and the child that orders them.
    pub sort_field: String,
    /// 1 or -1 (`-at`: newest first).
    pub sort_direction: i32,
    /// Stored field of the parent counting all children, if declared.
    pub count: Option<String>,
    /// The integer type of the count.
    pub count_type: crate::CounterType,
    /// The child's stored path holding the parent's `_id` (`ticket_id`, `member._id`); empty
    /// when not declared (then the child's one `#[reference]` to the parent).
    pub parent_field: String,
    /// Only children matching these equalities are previewed and counted.
    pub filter: Option<mongodb::bson::Document>,
    /// Who keeps it current besides the helpers' transactions: `Transactional` (only they),
    /// `Async` (the sync worker follows the children) or `Reconcile`.
    pub strategy: SyncStrategy,
    /// Builds a preview from a stored child (`V::from(&C)`), for reconcile and the worker.
    pub preview: Option<PreviewBuilder>,
}

/// A subset's [`PreviewFn`](crate::PreviewFn), compared by identity of the subset it belongs
/// to (two specs of one subset are equal whatever function pointer each holds).
#[derive(Clone, Copy)]
pub struct PreviewBuilder(pub crate::PreviewFn);

impl PartialEq for PreviewBuilder {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for PreviewBuilder {}

impl std::fmt::Debug for PreviewBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PreviewBuilder")
    }
}

impl SubsetSpec {
    /// A subset at `path` of at most `max` children of `child`, ordered by `sort_field`.
    pub fn new(
        path: impl Into<String>,
        child: impl Into<String>,
        child_type: impl Into<String>,
        max: u64,
        sort_field: impl Into<String>,
        sort_direction: i32,
        count: Option<&str>,
    ) -> Self {
        SubsetSpec {
            path: path.into(),
            child: child.into(),
            child_type: child_type.into(),
            max,
            sort_field: sort_field.into(),
            sort_direction,
            count: count.map(str::to_owned),
            count_type: crate::CounterType::Int64,
            parent_field: String::new(),
            filter: None,
            strategy: SyncStrategy::Transactional,
            preview: None,
        }
    }
}

/// An embedded array or map and its bound (`#[embed(max = N, cap)]`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EmbedSpec {
    /// Stored path.
    pub path: String,
    /// The bound.
    pub max: u64,
    /// Whether every push the library emits keeps only the newest `max` (`$slice`).
    pub cap: bool,
    /// The element type, for messages and the report.
    pub element_type: String,
}

impl EmbedSpec {
    /// An embedded array or map at `path` holding at most `max` elements.
    pub fn new(
        path: impl Into<String>,
        max: u64,
        cap: bool,
        element_type: impl Into<String>,
    ) -> Self {
        EmbedSpec {
            path: path.into(),
            max,
            cap,
            element_type: element_type.into(),
        }
    }
}

/// One edge of the sync graph: `fields` of `source` documents are copied at `holder.path`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SyncEdge {
    /// The holder collection.
    pub holder: String,
    /// The copy.
    pub copy: CopySpec,
    /// The holder's one `#[reference]` field to the copy's source, if it has exactly one (not
    /// an array): where reconcile finds the source of a holder whose copy is missing.
    pub reference: Option<String>,
}

impl SyncEdge {
    /// `holder.path`, the name of the copy in reports and failure records.
    pub fn label(&self) -> String {
        format!("{}.{}", self.holder, self.copy.path)
    }
}

/// Every copied field of a schema: for each source collection and field, which collections
/// and paths hold copies and by which strategy. Built by [`crate::Schema::sync_graph`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SyncGraph {
    /// The edges, in model order.
    pub edges: Vec<SyncEdge>,
    /// The subsets: previews of children kept on their parents, in model order.
    pub subsets: Vec<SubsetEdge>,
}

/// A subset in the [`SyncGraph`]: the parent collection and the subset.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SubsetEdge {
    /// The parent collection.
    pub parent: String,
    /// The subset.
    pub subset: SubsetSpec,
}

impl SyncGraph {
    /// The copies of `source` documents.
    pub fn copies_of<'a>(&'a self, source: &'a str) -> impl Iterator<Item = &'a SyncEdge> + 'a {
        self.edges.iter().filter(move |e| e.copy.source == source)
    }

    /// The copies kept by `strategy`.
    pub fn by_strategy(&self, strategy: SyncStrategy) -> impl Iterator<Item = &SyncEdge> + '_ {
        self.edges
            .iter()
            .filter(move |e| e.copy.strategy == strategy)
    }

    /// The source collections with at least one copy kept by `strategy`.
    pub fn sources(&self, strategy: SyncStrategy) -> Vec<String> {
        let mut sources: Vec<String> = Vec::new();
        for edge in self.by_strategy(strategy) {
            if !sources.contains(&edge.copy.source) {
                sources.push(edge.copy.source.clone());
            }
        }
        sources
    }
}

impl fmt::Display for SyncGraph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for edge in &self.edges {
            writeln!(
                f,
                "{}.{{{}}} -> {}.{} ({})",
                edge.copy.source,
                edge.copy.fields.join(", "),
                edge.holder,
                edge.copy.path,
                edge.copy.strategy
            )?;
        }
        for edge in &self.subsets {
            writeln!(
                f,
                "{} -> {}.{} (subset of the newest {}{}, {})",
                edge.subset.child,
                edge.parent,
                edge.subset.path,
                edge.subset.max,
                if edge.subset.filter.is_some() {
                    " matching"
                } else {
                    ""
                },
                edge.subset.strategy
            )?;
        }
        Ok(())
    }
}
