//! Copied fields: extended references and subsets, with the sync strategy of each copy, and
//! the static sync graph of a schema.

use crate::model::collation::Collation;
use crate::model::sort::SortDirection;
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
    /// For a copy inside arrays of embedded values, the stored paths of those arrays, outermost
    /// first (`["lines"]` for the copy `lines.product` of each order line): each is one
    /// `$[eN]` of the fan-out's update path, with an array filter on that element. Empty for a
    /// copy at the root or inside single embedded values (plain dotted paths). Relative to an
    /// embedded value (in [`crate::BsonSchema`]'s description of it), `""` is the value itself.
    pub arrays: Vec<String>,
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
            arrays: Vec::new(),
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

    /// The path of the copied id (`customer._id`, `lines.product._id`), which the fan-out
    /// update filters on.
    pub fn id_path(&self) -> String {
        format!("{}._id", self.path)
    }

    /// The path as the report shows it, each array of values marked (`lines[].product`).
    pub fn shown_path(&self) -> String {
        let mut shown = String::new();
        let mut at = 0;
        for array in &self.arrays {
            if let Some(segment) = self.path.get(at..array.len()) {
                shown.push_str(segment);
                shown.push_str("[]");
                at = array.len();
            }
        }
        shown.push_str(self.path.get(at..).unwrap_or_default());
        shown
    }

    /// The path of the copy in an update, one `$[eN]` per array of values it is inside
    /// (`lines.$[e0].product`); the plain path when it is inside none.
    pub(crate) fn element_path(&self) -> String {
        let mut path = String::new();
        let mut at = 0;
        for (i, array) in self.arrays.iter().enumerate() {
            if let Some(segment) = self.path.get(at..array.len()) {
                path.push_str(segment);
                path.push_str(&format!(".$[{}]", element_identifier(i)));
                at = array.len();
            }
        }
        path.push_str(self.path.get(at..).unwrap_or_default());
        path
    }

    /// The path of copied field `field` in an update: [`CopySpec::element_path`], then
    /// `$[copy]` in an array of copies (`lines.$[e0].product.name`, `parts.$[copy].name`).
    pub(crate) fn field_path(&self, field: &str) -> String {
        match self.shape {
            CopyShape::Many => format!("{}.$[copy].{field}", self.element_path()),
            _ => format!("{}.{field}", self.element_path()),
        }
    }

    /// The array filters of [`CopySpec::element_path`] for copies of source `id`: per array
    /// of values, its elements holding a copy of `id` (`{ "e0.product._id": id }`), plain
    /// equalities on dotted paths, each under its own identifier.
    pub(crate) fn element_filters(&self, id: &mongodb::bson::Bson) -> Vec<mongodb::bson::Document> {
        self.element_filters_at(&self.id_path(), id)
    }

    /// Per array of values the copy is inside, the array filter of its elements where `path`
    /// (a holder path inside the innermost of them: the copied id `lines.product._id`, a
    /// reference beside the copy) equals `value`.
    pub(crate) fn element_filters_at(
        &self,
        path: &str,
        value: &mongodb::bson::Bson,
    ) -> Vec<mongodb::bson::Document> {
        (0..self.arrays.len())
            .map(|i| {
                let mut filter = mongodb::bson::Document::new();
                filter.insert(self.path_in_element(i, path), value.clone());
                filter
            })
            .collect()
    }

    /// The holder filter of the documents with one element, in the innermost array of values
    /// the copy is inside, that meets all of `conditions` (keyed by holder paths inside that
    /// element): one `$elemMatch` per array; `conditions` as they are outside arrays.
    pub(crate) fn element_match(
        &self,
        conditions: mongodb::bson::Document,
    ) -> mongodb::bson::Document {
        let mut matched = conditions;
        for array in self.arrays.iter().rev() {
            let inside: mongodb::bson::Document = matched
                .into_iter()
                .map(|(path, condition)| (relative(array, &path).to_owned(), condition))
                .collect();
            let mut wrapped = mongodb::bson::Document::new();
            wrapped.insert(array.clone(), mongodb::bson::doc! { "$elemMatch": inside });
            matched = wrapped;
        }
        matched
    }

    /// The array filters of [`CopySpec::field_path`]: [`CopySpec::element_filters`], then, in
    /// an array of copies, the copies of `id` (`{ "copy._id": id }`).
    pub(crate) fn field_filters(&self, id: &mongodb::bson::Bson) -> Vec<mongodb::bson::Document> {
        let mut filters = self.element_filters(id);
        if self.shape == CopyShape::Many {
            let mut own = mongodb::bson::Document::new();
            own.insert("copy._id", id.clone());
            filters.push(own);
        }
        filters
    }

    /// Where a condition on the copied values of one copy goes: `Some(i)` the `i`-th of
    /// [`CopySpec::field_filters`] (the innermost, which picks the copy itself), `None` the
    /// holder's filter; with the prefix of the copy in it (`e0.product`, `copy`, `customer`).
    pub(crate) fn condition_slot(&self) -> (Option<usize>, String) {
        match (self.shape, self.arrays.len()) {
            (CopyShape::Many, n) => (Some(n), "copy".to_owned()),
            (_, 0) => (None, self.path.clone()),
            (_, n) => (Some(n - 1), self.in_element(n - 1)),
        }
    }

    /// The copy's path from an element of its `i`-th array, under that element's identifier
    /// (`e0.product`).
    fn in_element(&self, i: usize) -> String {
        self.path_in_element(i, &self.path)
    }

    /// Holder path `path` from an element of the copy's `i`-th array, under that element's
    /// identifier (`lines.product._id` from a line: `e0.product._id`).
    fn path_in_element(&self, i: usize, path: &str) -> String {
        format!(
            "{}.{}",
            element_identifier(i),
            relative(&self.arrays[i], path)
        )
    }

    /// The copy as an embedded value `prefix` holds it: paths under `prefix` (the value
    /// itself, `""` in [`CopySpec::arrays`], becomes `prefix`), and `within` shown from them.
    pub(crate) fn under(mut self, prefix: &str) -> CopySpec {
        let join = |path: &str| match path {
            "" => prefix.to_owned(),
            path => format!("{prefix}.{path}"),
        };
        self.path = join(&self.path);
        self.arrays = self.arrays.iter().map(|a| join(a)).collect();
        self.order = None;
        let shown = self.shown_path();
        self.within = shown.rsplit_once('.').map(|(within, _)| within.to_owned());
        self
    }

    /// The index the copy's queries need: `{ <path>._id: 1, _id: 1 }` for the fan-out (its walk
    /// of the holders in `_id` order and its chunks by `_id`), or with keyset pages on a key
    /// that is not unique `{ <path>._id: 1, key: d, _id: d }` (the pages' tie-break in index
    /// order, as for a reference; the fan-out's walk then gets an index of its own from
    /// `Schema::build`). `None` for a frozen copy without pages: nothing rewrites it.
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
            None => {
                keys.insert("_id", 1);
            }
        }
        Some(keys)
    }
}

/// Holder path `path` from inside the value at `outer` (`lines.product` from `lines`:
/// `product`).
fn relative<'p>(outer: &str, path: &'p str) -> &'p str {
    path.strip_prefix(outer)
        .and_then(|rest| rest.strip_prefix('.'))
        .unwrap_or(path)
}

/// The identifier of the `i`-th array of values in an update path (`$[e0]`): lowercase
/// letters and digits starting with a letter, as mongod requires.
fn element_identifier(i: usize) -> String {
    format!("e{i}")
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
    /// At most this many previews (1: an `Option`, kept with `$set`); 0 for a `#[counter]`,
    /// which keeps the count alone (then `path` and `count` are the count field, and
    /// `sort_field` is empty).
    pub max: u64,
    /// Stored field of the preview and the child that orders them.
    pub sort_field: String,
    /// The order of the previews (`-at`: [`SortDirection::Descending`], newest first).
    pub sort_direction: SortDirection,
    /// Stored field of the parent counting all children, if declared.
    pub count: Option<String>,
    /// The integer type of the count.
    pub count_type: CounterType,
    /// The child's stored path holding the parent's `_id` (`ticket_id`, `member._id`); empty
    /// when not declared (then the child's one `#[reference]` to the parent).
    pub parent_field: String,
    /// Only children matching these equalities are previewed and counted.
    pub filter: Option<mongodb::bson::Document>,
    /// Who keeps it current besides the helpers' transactions: `Transactional` (only they),
    /// `Async` (the sync worker follows the children) or `Reconcile`.
    pub strategy: SyncStrategy,
    #[doc(hidden)]
    /// Builds a preview from a stored child (`V::from(&C)`), for reconcile and the worker.
    pub preview: Option<PreviewBuilder>,
}

/// A subset's [`PreviewFn`](crate::PreviewFn), compared by identity of the subset it belongs
/// to (two specs of one subset are equal whatever function pointer each holds).
#[derive(Clone, Copy)]
pub struct PreviewBuilder(pub PreviewFn);

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
    /// Whether it is a `#[counter]`: the count of the children alone, no previews.
    pub fn is_counter(&self) -> bool {
        self.max == 0
    }

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
            sort_direction: SortDirection::from_sign(sort_direction),
            count: count.map(str::to_owned),
            count_type: CounterType::Int64,
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
    /// The collation of the commands that find the holders by the copied id: the simple one
    /// where the holder's default collation is another
    /// ([`Collation::for_identities`]), so that a rename of `"abc"` never reaches the
    /// copies of `"ABC"`.
    pub(crate) identities: Option<Collation>,
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
#[non_exhaustive]
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
    /// The collation of the reads of the children: the simple one where their default
    /// collation is another ([`Collation::for_identities`]).
    pub(crate) identities: Option<Collation>,
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
            if edge.subset.is_counter() {
                writeln!(
                    f,
                    "{} -> {}.{} (counter{}, {})",
                    edge.subset.child,
                    edge.parent,
                    edge.subset.path,
                    if edge.subset.filter.is_some() {
                        " of the matching"
                    } else {
                        ""
                    },
                    edge.subset.strategy
                )?;
                continue;
            }
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

/// The integer type of a count field (`message_count: i64` or `i32`): every `$inc` and every
/// rebuilt count uses it, so a count never turns into another BSON type that its validator
/// (`bsonType: "int"` or `"long"`) rejects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum CounterType {
    /// `i32`, BSON `int`.
    Int32,
    /// `i64`, BSON `long` (the default of a hand-written helper).
    #[default]
    Int64,
}

impl CounterType {
    /// `n` as a value of this type (saturating at `i32::MAX` for `Int32`).
    pub fn value(self, n: u64) -> mongodb::bson::Bson {
        match self {
            CounterType::Int32 => mongodb::bson::Bson::Int32(i32::try_from(n).unwrap_or(i32::MAX)),
            CounterType::Int64 => mongodb::bson::Bson::Int64(i64::try_from(n).unwrap_or(i64::MAX)),
        }
    }
}

/// Builds a subset's preview from a stored child: `V::from(&C)`, serialized as the driver
/// does (generated next to each `#[subset]`, so that code working on BSON can build previews).
pub type PreviewFn = fn(&mongodb::bson::Document) -> crate::error::Result<mongodb::bson::Bson>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::collection::CollectionSpec;
    use mongodb::bson::{doc, Bson};

    fn copy(path: &str, shape: CopyShape) -> CollectionSpec {
        CollectionSpec::new("", doc! {}).copy(CopySpec::new(
            path,
            "products",
            "Product",
            &["name"],
            SyncStrategy::Async,
            shape,
        ))
    }

    #[test]
    fn a_copy_inside_arrays_of_values_has_one_element_filter_per_array() {
        // orders.lines[].bundle[].product: a copy in a line's bundle
        let bundle = copy("product", CopyShape::One).in_array();
        let line = CollectionSpec::new("", doc! {}).embedded("bundle", Some(bundle));
        let order = CollectionSpec::new("orders", doc! {}).embedded("lines", Some(line.in_array()));
        let nested = &order.copies[0];
        assert_eq!(nested.path, "lines.bundle.product");
        assert_eq!(nested.arrays, ["lines", "lines.bundle"]);
        assert_eq!(nested.shown_path(), "lines[].bundle[].product");
        assert_eq!(nested.within.as_deref(), Some("lines[].bundle[]"));
        assert_eq!(
            nested.field_path("name"),
            "lines.$[e0].bundle.$[e1].product.name"
        );
        let id = Bson::String("bolt".into());
        assert_eq!(
            nested.field_filters(&id),
            [
                doc! { "e0.bundle.product._id": "bolt" },
                doc! { "e1.product._id": "bolt" }
            ]
        );
        assert_eq!(nested.condition_slot(), (Some(1), "e1.product".to_owned()));
        assert_eq!(
            nested.index_keys(),
            Some(doc! { "lines.bundle.product._id": 1, "_id": 1 })
        );

        // an array of copies in each line: the copies' own `$[copy]` after the line's
        let parts = copy("parts", CopyShape::Many).in_array();
        let order = CollectionSpec::new("orders", doc! {}).embedded("lines", Some(parts));
        let many = &order.copies[0];
        assert_eq!(many.field_path("name"), "lines.$[e0].parts.$[copy].name");
        assert_eq!(
            many.field_filters(&id),
            [doc! { "e0.parts._id": "bolt" }, doc! { "copy._id": "bolt" }]
        );
        assert_eq!(many.element_path(), "lines.$[e0].parts");
        assert_eq!(many.condition_slot(), (Some(1), "copy".to_owned()));

        // one embedded value: plain dotted paths, no array filter
        let shipping = CollectionSpec::new("orders", doc! {})
            .embedded("shipping", Some(copy("carrier", CopyShape::Optional)));
        let one = &shipping.copies[0];
        assert_eq!(one.field_path("name"), "shipping.carrier.name");
        assert!(one.field_filters(&id).is_empty());
        assert_eq!(one.within.as_deref(), Some("shipping"));
        assert_eq!(one.condition_slot(), (None, "shipping.carrier".to_owned()));

        // at the root: as before
        let root = &copy("customer", CopyShape::One).copies[0];
        assert_eq!(root.field_path("name"), "customer.name");
        assert_eq!(root.shown_path(), "customer");
        assert_eq!(root.within, None);
    }

    #[test]
    fn a_copy_declared_twice_is_declared_once() {
        let spec = copy("product", CopyShape::One).copy(CopySpec::new(
            "product",
            "products",
            "Product",
            &["name"],
            SyncStrategy::Async,
            CopyShape::One,
        ));
        assert_eq!(spec.copies.len(), 1);
        assert_eq!(spec.indexes.len(), 1);
    }
}
