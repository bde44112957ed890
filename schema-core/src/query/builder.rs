//! The filter, sort and update builders: typed per operator, values encoded as the field is
//! stored, plain match expressions only (never `$expr`).

use std::marker::PhantomData;
use std::ops::{Bound, RangeBounds};

use mongodb::bson::{Bson, Document};

use super::path::{encode, Path};
use super::{Array, Numeric, Ordered, Value};
use crate::Result;

fn ser_error(e: crate::bson_compat::SerError) -> crate::Error {
    crate::Error::serialization("a value of the filter or update", e)
}

/// A filter on the documents of `R`, built from typed paths: `{ team: "billing", status: "open" }`
/// as [`Filter::new`]`().eq(field!(Ticket, team), "billing").eq(field!(Ticket, status),
/// &Status::Open)`.
///
/// Each value is encoded as the driver stores the field (its serde helper included), so a uuid or
/// an enum compares with what is stored; a value that serializes to a document is compared with
/// `$eq`, so a value from a client can never become an operator. The first value that fails to
/// encode is reported by [`Filter::build`].
#[must_use]
pub struct Filter<R: ?Sized> {
    doc: Document,
    error: Option<Box<crate::Error>>,
    /// The arrays of [`Filter::same_element`].
    elements: Vec<&'static str>,
    _root: PhantomData<fn() -> Box<R>>,
}

impl<R: ?Sized> Default for Filter<R> {
    fn default() -> Self {
        Filter::new()
    }
}

impl<R: ?Sized> std::fmt::Debug for Filter<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Filter")
            .field("doc", &self.doc)
            .field("error", &self.error)
            .field("elements", &self.elements)
            .finish()
    }
}

impl<R: ?Sized> Filter<R> {
    /// An empty filter (matches every document).
    #[inline]
    pub fn new() -> Self {
        Filter {
            doc: Document::new(),
            error: None,
            elements: Vec::new(),
            _root: PhantomData,
        }
    }

    #[inline]
    fn value<T: ?Sized, V: Value<T> + ?Sized>(
        &mut self,
        encoder: super::Encoder<T>,
        value: &V,
    ) -> Option<Bson> {
        match encode(encoder, value) {
            Ok(bson) => Some(bson),
            Err(e) => {
                self.error.get_or_insert(Box::new(ser_error(e)));
                None
            }
        }
    }

    /// Adds `op: value` under `path`, merging with the operators already there
    /// (`{ at: { $gte: a, $lt: b } }`).
    #[inline]
    fn operator(&mut self, path: &'static str, op: &str, value: Bson) {
        if let Some(Bson::Document(ops)) = self.doc.get_mut(path) {
            if ops.keys().all(|k| k.starts_with('$')) {
                ops.insert(op, value);
                return;
            }
        }
        let mut ops = Document::new();
        ops.insert(op, value);
        self.doc.insert(path, ops);
    }

    /// `{ path: value }`: the field equals `value` (for an array field, mongod also matches an
    /// array holding it; see [`Filter::contains`]).
    #[inline]
    pub fn eq<T: ?Sized, S: ?Sized, V: Value<T> + ?Sized>(
        mut self,
        path: Path<R, T, S>,
        value: &V,
    ) -> Self {
        if let Some(bson) = self.value(path.encoder(), value) {
            match bson {
                // a document value is matched with `$eq`: its keys are never read as operators
                Bson::Document(_) => self.operator(path.as_str(), "$eq", bson),
                bson => {
                    self.doc.insert(path.as_str(), bson);
                }
            }
        }
        self
    }

    /// `{ path: { $geoWithin: area } }`: the GeoJSON point at `path` lies inside `area` (a
    /// circle or a polygon, [`crate::geo::Area`]).
    #[inline]
    pub fn within<T: crate::geo::GeoField, S: ?Sized>(
        self,
        path: Path<R, T, S>,
        area: &crate::geo::Area,
    ) -> Self {
        self.__within(path, area)
    }

    /// [`Filter::within`] with no bound on the field's type: what a declared query's
    /// `within(field)` sends, whose field the derive checks once, at the field
    /// (`require_geo`), so that a field that is no point is one error there.
    #[doc(hidden)]
    #[inline]
    pub fn __within<T: ?Sized, S: ?Sized>(
        mut self,
        path: Path<R, T, S>,
        area: &crate::geo::Area,
    ) -> Self {
        self.operator(
            path.as_str(),
            "$geoWithin",
            Bson::Document(area.geo_within()),
        );
        self
    }

    /// `{ path: { $ne: value } }`.
    #[inline]
    pub fn ne<T: ?Sized, S: ?Sized, V: Value<T> + ?Sized>(
        mut self,
        path: Path<R, T, S>,
        value: &V,
    ) -> Self {
        if let Some(bson) = self.value(path.encoder(), value) {
            self.operator(path.as_str(), "$ne", bson);
        }
        self
    }

    fn list<'v, T: ?Sized, S: ?Sized, V: Value<T> + ?Sized + 'v>(
        mut self,
        op: &str,
        path: Path<R, T, S>,
        values: impl IntoIterator<Item = &'v V>,
    ) -> Self {
        let mut list = Vec::new();
        for value in values {
            match self.value(path.encoder(), value) {
                Some(bson) => list.push(bson),
                None => return self,
            }
        }
        self.operator(path.as_str(), op, Bson::Array(list));
        self
    }

    /// `{ path: { $in: [values] } }`: a multi-value equality.
    #[inline]
    pub fn is_in<'v, T: ?Sized, S: ?Sized, V: Value<T> + ?Sized + 'v>(
        self,
        path: Path<R, T, S>,
        values: impl IntoIterator<Item = &'v V>,
    ) -> Self {
        self.list("$in", path, values)
    }

    /// `{ path: { $nin: [values] } }`.
    #[inline]
    pub fn not_in<'v, T: ?Sized, S: ?Sized, V: Value<T> + ?Sized + 'v>(
        self,
        path: Path<R, T, S>,
        values: impl IntoIterator<Item = &'v V>,
    ) -> Self {
        self.list("$nin", path, values)
    }

    #[inline]
    fn compare<T: ?Sized, S: ?Sized, V: Value<T> + ?Sized>(
        mut self,
        op: &str,
        path: Path<R, T, S>,
        value: &V,
    ) -> Self {
        if let Some(bson) = self.value(path.encoder(), value) {
            self.operator(path.as_str(), op, bson);
        }
        self
    }

    /// `{ path: { $gt: value } }`; only on fields stored in a form that orders like the value.
    #[inline]
    pub fn gt<T: ?Sized, S: Ordered + ?Sized, V: Value<T> + ?Sized>(
        self,
        path: Path<R, T, S>,
        value: &V,
    ) -> Self {
        self.compare("$gt", path, value)
    }

    /// `{ path: { $gte: value } }`.
    #[inline]
    pub fn gte<T: ?Sized, S: Ordered + ?Sized, V: Value<T> + ?Sized>(
        self,
        path: Path<R, T, S>,
        value: &V,
    ) -> Self {
        self.compare("$gte", path, value)
    }

    /// `{ path: { $lt: value } }`.
    #[inline]
    pub fn lt<T: ?Sized, S: Ordered + ?Sized, V: Value<T> + ?Sized>(
        self,
        path: Path<R, T, S>,
        value: &V,
    ) -> Self {
        self.compare("$lt", path, value)
    }

    /// `{ path: { $lte: value } }`.
    #[inline]
    pub fn lte<T: ?Sized, S: Ordered + ?Sized, V: Value<T> + ?Sized>(
        self,
        path: Path<R, T, S>,
        value: &V,
    ) -> Self {
        self.compare("$lte", path, value)
    }

    /// A range from Rust's range syntax: `a..b` is `{ $gte: a, $lt: b }`, `a..=b` `{ $gte: a,
    /// $lte: b }`, `a..` `{ $gte: a }`, `..` nothing.
    #[inline]
    pub fn range<T: ?Sized, S: Ordered + ?Sized, V: Value<T>>(
        self,
        path: Path<R, T, S>,
        range: impl RangeBounds<V>,
    ) -> Self {
        self.__range_checked_elsewhere(path, range)
    }

    /// [`Filter::range`] without its `Ordered` bound: for a declared query's function, whose
    /// range field the derive checks once, at the field's token.
    #[doc(hidden)]
    #[inline]
    pub fn __range_checked_elsewhere<T: ?Sized, S: ?Sized, V: Value<T>>(
        mut self,
        path: Path<R, T, S>,
        range: impl RangeBounds<V>,
    ) -> Self {
        match range.start_bound() {
            Bound::Included(v) => self = self.compare("$gte", path, v),
            Bound::Excluded(v) => self = self.compare("$gt", path, v),
            Bound::Unbounded => {}
        }
        match range.end_bound() {
            Bound::Included(v) => self = self.compare("$lte", path, v),
            Bound::Excluded(v) => self = self.compare("$lt", path, v),
            Bound::Unbounded => {}
        }
        self
    }

    /// `{ path: { $exists: present } }`.
    pub fn exists<T: ?Sized, S: ?Sized>(mut self, path: Path<R, T, S>, present: bool) -> Self {
        self.operator(path.as_str(), "$exists", Bson::Boolean(present));
        self
    }

    /// `{ path: value }` on an array field: some element equals `value`.
    pub fn contains<T: Array + ?Sized, S: ?Sized, V: Value<T::Elem> + ?Sized>(
        mut self,
        path: Path<R, T, S>,
        value: &V,
    ) -> Self {
        match value.plain() {
            Ok(bson @ Bson::Document(_)) => self.operator(path.as_str(), "$eq", bson),
            Ok(bson) => {
                self.doc.insert(path.as_str(), bson);
            }
            Err(e) => {
                self.error.get_or_insert(Box::new(ser_error(e)));
            }
        }
        self
    }

    /// `{ path: { $elemMatch: { ... } } }`: one element of the array field matches every
    /// condition of `element`, a filter on the element type.
    pub fn elem_match<T: Array + ?Sized, S: ?Sized>(
        mut self,
        path: Path<R, T, S>,
        element: Filter<T::Elem>,
    ) -> Self {
        match element.build() {
            Ok(doc) => self.operator(path.as_str(), "$elemMatch", Bson::Document(doc)),
            Err(e) => {
                self.error.get_or_insert(Box::new(e));
            }
        }
        self
    }

    /// One element of the array of sub-documents at `path` holds every condition on a path
    /// under it: those conditions, before and after this call, are sent as one `$elemMatch` on
    /// it, relative to its elements. `.range(field!(Order, items.price), 10..20)` alone sends
    /// `{ "items.price": { $gte: 10, $lt: 20 } }`, which an order whose items cost 5 and 100
    /// matches (each bound holds for some item); with `.same_element(field!(Order, items))` it
    /// sends `{ items: { $elemMatch: { price: { $gte: 10, $lt: 20 } } } }`, one item priced in
    /// the range, and mongod's index on `items.price` bounds both sides (on `{ "items.sku": 1,
    /// "items.qty": 1 }`, both keys). A declared query does this for every array its
    /// conditions cross. (The same, with paths of the element type: [`Filter::elem_match`].)
    pub fn same_element<T: Array + ?Sized, S: ?Sized>(mut self, path: Path<R, T, S>) -> Self {
        if !self.elements.contains(&path.as_str()) {
            self.elements.push(path.as_str());
        }
        self
    }

    /// The filter document.
    ///
    /// # Errors
    /// The first value that could not be serialized (a `u64` above `i64::MAX`, a helper's
    /// refusal), as [`crate::Error::Driver`].
    #[inline]
    pub fn build(self) -> Result<Document> {
        match self.error {
            Some(e) => Err(*e),
            None if self.elements.is_empty() => Ok(self.doc),
            None => Ok(elem_match_in(self.doc, &self.elements)),
        }
    }
}

/// A sort of the documents of `R` on typed paths, in order: only fields stored in a form that
/// orders like their values ([`Ordered`]).
#[must_use]
pub struct Sort<R: ?Sized> {
    doc: Document,
    _root: PhantomData<fn() -> Box<R>>,
}

impl<R: ?Sized> Default for Sort<R> {
    fn default() -> Self {
        Sort::new()
    }
}

impl<R: ?Sized> std::fmt::Debug for Sort<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Sort").field(&self.doc).finish()
    }
}

impl<R: ?Sized> Sort<R> {
    /// No sort.
    #[inline]
    pub fn new() -> Self {
        Sort {
            doc: Document::new(),
            _root: PhantomData,
        }
    }

    /// Then ascending on `path`.
    #[inline]
    pub fn asc<T: ?Sized, S: Ordered + ?Sized>(mut self, path: Path<R, T, S>) -> Self {
        self.doc.insert(path.as_str(), 1_i32);
        self
    }

    /// Then descending on `path`.
    #[inline]
    pub fn desc<T: ?Sized, S: Ordered + ?Sized>(mut self, path: Path<R, T, S>) -> Self {
        self.doc.insert(path.as_str(), -1_i32);
        self
    }

    /// The sort document (`{ priority: -1, updatedAt: -1 }`).
    #[inline]
    pub fn build(self) -> Document {
        self.doc
    }
}

/// An update of the documents of `R` on typed paths: `$set` takes the field's type, `$inc` a
/// number in the field's own type, `$push` an element of an array field (a capped array's push
/// writes its `$slice`), `$unset` an optional field.
#[must_use]
pub struct Update<R: ?Sized> {
    doc: Document,
    error: Option<Box<crate::Error>>,
    _root: PhantomData<fn() -> Box<R>>,
}

impl<R: ?Sized> Default for Update<R> {
    fn default() -> Self {
        Update::new()
    }
}

impl<R: ?Sized> std::fmt::Debug for Update<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Update")
            .field("doc", &self.doc)
            .field("error", &self.error)
            .finish()
    }
}

impl<R: ?Sized> Update<R> {
    /// An empty update.
    #[inline]
    pub fn new() -> Self {
        Update {
            doc: Document::new(),
            error: None,
            _root: PhantomData,
        }
    }

    fn put(&mut self, op: &str, path: &str, value: Bson) {
        match self.doc.get_mut(op) {
            Some(Bson::Document(fields)) => {
                fields.insert(path, value);
            }
            _ => {
                let mut fields = Document::new();
                fields.insert(path, value);
                self.doc.insert(op, fields);
            }
        }
    }

    fn encoded<T: ?Sized, S: ?Sized, V: Value<T> + ?Sized>(
        &mut self,
        op: &str,
        path: Path<R, T, S>,
        value: &V,
    ) {
        match encode(path.encoder(), value) {
            Ok(bson) => self.put(op, path.as_str(), bson),
            Err(e) => {
                self.error.get_or_insert(Box::new(ser_error(e)));
            }
        }
    }

    /// `{ $set: { path: value } }`: `value` is borrowed, a value of the field's type (`&str`
    /// for a `String`), encoded as the field is stored, as [`Update::inc`] takes its `by`.
    #[inline]
    pub fn set<T: ?Sized, S: ?Sized, V: Value<T> + ?Sized>(
        mut self,
        path: Path<R, T, S>,
        value: &V,
    ) -> Self {
        self.encoded("$set", path, value);
        self
    }

    /// `{ $inc: { path: by } }`, `by` borrowed as [`Update::set`] takes its value, in the
    /// field's own numeric type (an `i32` field is incremented by an `int`, so it stays one):
    /// `.inc(field!(Ticket, message_count), &1)`.
    ///
    /// Moving from 0.1: `by` was taken by value (`.inc(path, 1)`); add the `&`.
    #[inline]
    pub fn inc<T: ?Sized, S: Numeric + ?Sized, V: Value<T> + ?Sized>(
        mut self,
        path: Path<R, T, S>,
        by: &V,
    ) -> Self {
        self.encoded("$inc", path, by);
        self
    }

    /// `{ $unset: { path: "" } }` on an optional field.
    pub fn unset<T, S: ?Sized>(mut self, path: Path<R, Option<T>, S>) -> Self {
        self.put("$unset", path.as_str(), Bson::String(String::new()));
        self
    }

    /// `{ $push: { path: element } }`; on a capped array (`#[embed(max = N, cap)]`)
    /// `{ $push: { path: { $each: [element], $slice: -N } } }`, so the array keeps its bound.
    pub fn push<T: Array + ?Sized, S: ?Sized, V: Value<T::Elem> + ?Sized>(
        mut self,
        path: Path<R, T, S>,
        element: &V,
    ) -> Self {
        match element.plain() {
            Ok(bson) => {
                let value = match path.cap() {
                    Some(cap) => mongodb::bson::doc! {
                        "$each": [bson],
                        "$slice": -i64::from(cap),
                    }
                    .into(),
                    None => bson,
                };
                self.put("$push", path.as_str(), value);
            }
            Err(e) => {
                self.error.get_or_insert(Box::new(ser_error(e)));
            }
        }
        self
    }

    /// The update document.
    ///
    /// # Errors
    /// The first value that could not be serialized, as [`crate::Error::Driver`].
    #[inline]
    pub fn build(self) -> Result<Document> {
        match self.error {
            Some(e) => Err(*e),
            None => Ok(self.doc),
        }
    }
}

/// `filter` with the conditions under each of `arrays` (paths relative to `filter`'s level)
/// in one `$elemMatch` on it, in the place of its first condition.
pub(crate) fn elem_match_in(filter: Document, arrays: &[&str]) -> Document {
    use mongodb::bson::Bson;
    let under = |path: &str, array: &str| {
        path.len() > array.len() && path.starts_with(array) && path.as_bytes()[array.len()] == b'.'
    };
    // the outermost arrays: not under another of `arrays`
    let outer: Vec<&str> = arrays
        .iter()
        .copied()
        .filter(|a| !arrays.iter().any(|b| under(a, b)))
        .collect();
    if outer.is_empty() {
        return filter;
    }
    let mut out = Document::new();
    // per outer array met: its own condition, and its elements' conditions
    let mut met: Vec<(&str, Option<Bson>, Document)> = Vec::new();
    for (key, value) in filter {
        let array = outer.iter().copied().find(|a| key == *a || under(&key, a));
        let Some(array) = array else {
            out.insert(key, value);
            continue;
        };
        let at = match met.iter().position(|(a, _, _)| *a == array) {
            Some(at) => at,
            None => {
                // a place holder: the array keeps the place of its first condition
                out.insert(array, Bson::Null);
                met.push((array, None, Document::new()));
                met.len() - 1
            }
        };
        if key == array {
            met[at].1 = Some(value);
        } else {
            met[at].2.insert(&key[array.len() + 1..], value);
        }
    }
    for (array, own, conditions) in met {
        let nested: Vec<&str> = arrays
            .iter()
            .filter(|a| under(a, array))
            .map(|a| &a[array.len() + 1..])
            .collect();
        let element = (!conditions.is_empty()).then(|| elem_match_in(conditions, &nested));
        let value = match (own, element) {
            (Some(own), None) => own,
            (None, Some(element)) => Bson::Document(mongodb::bson::doc! { "$elemMatch": element }),
            // an operator document on the array itself takes the `$elemMatch` among its
            // operators; another value (a whole array, an element) stays as it is under `$and`
            (Some(Bson::Document(mut ops)), Some(element))
                if !ops.is_empty()
                    && ops.keys().all(|k| k.starts_with('$'))
                    && !ops.contains_key("$elemMatch") =>
            {
                ops.insert("$elemMatch", element);
                Bson::Document(ops)
            }
            (Some(own), Some(element)) => {
                let both = [
                    Bson::Document(mongodb::bson::doc! { array: own }),
                    Bson::Document(mongodb::bson::doc! { array: { "$elemMatch": element } }),
                ];
                out.remove(array);
                match out.get_mut("$and") {
                    Some(Bson::Array(all)) => all.extend(both),
                    _ => {
                        out.insert("$and", Bson::Array(both.to_vec()));
                    }
                }
                continue;
            }
            (None, None) => continue,
        };
        out.insert(array, value);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::elem_match_in;
    use mongodb::bson::doc;

    #[test]
    fn the_conditions_under_an_array_become_one_elem_match_in_its_place() {
        let filter = doc! {
            "status": "open",
            "items.price": { "$gte": 10, "$lt": 20 },
            "customer.name": "Ada",
            "items.sku": "a",
        };
        assert_eq!(
            elem_match_in(filter, &["items"]),
            doc! {
                "status": "open",
                "items": { "$elemMatch": { "price": { "$gte": 10, "$lt": 20 }, "sku": "a" } },
                "customer.name": "Ada",
            }
        );
        // a path that only starts like the array is not under it
        let filter = doc! { "itemsCount": 2, "items.qty": 1 };
        assert_eq!(
            elem_match_in(filter, &["items"]),
            doc! { "itemsCount": 2, "items": { "$elemMatch": { "qty": 1 } } }
        );
        // no condition under the array: nothing moves
        let filter = doc! { "status": "open" };
        assert_eq!(elem_match_in(filter.clone(), &["items"]), filter);
    }

    #[test]
    fn an_inner_array_gets_its_own_elem_match_inside_the_outer_one() {
        let filter = doc! { "orders.lines.sku": "a", "orders.lines.qty": 2, "orders.at": 1 };
        assert_eq!(
            elem_match_in(filter, &["orders", "orders.lines"]),
            doc! { "orders": { "$elemMatch": {
                "lines": { "$elemMatch": { "sku": "a", "qty": 2 } },
                "at": 1,
            } } }
        );
    }

    #[test]
    fn a_condition_on_the_array_itself_stays_beside_the_elem_match() {
        // an operator document takes `$elemMatch` among its operators
        let filter = doc! { "items": { "$size": 2 }, "items.qty": 1 };
        assert_eq!(
            elem_match_in(filter, &["items"]),
            doc! { "items": { "$size": 2, "$elemMatch": { "qty": 1 } } }
        );
        // another value is kept as it is, both under `$and`
        let filter = doc! { "items.qty": 1, "items": { "$elemMatch": { "sku": "b" } } };
        assert_eq!(
            elem_match_in(filter, &["items"]),
            doc! { "$and": [
                { "items": { "$elemMatch": { "sku": "b" } } },
                { "items": { "$elemMatch": { "qty": 1 } } },
            ] }
        );
    }
}
