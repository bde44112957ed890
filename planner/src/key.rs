//! What the planner knows of one key of an index for a query: the bounds mongod builds for it
//! (`index_bounds_builder.cpp`) and whether it gives an order; built by [`crate::bounds`], read
//! by every rule family.

use crate::KeyDir;

/// The bounds mongod builds for one key from the query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Bound {
    /// `[MinKey, MaxKey]`.
    None,
    /// One point: an equality or a one-element `$in`.
    Point,
    /// A union of this many points (an `$in`, at least two).
    Points(usize),
    /// Not points: a range, or an empty `$in`.
    Range,
}

#[derive(Debug)]
pub(crate) struct Key<'a> {
    pub(crate) path: &'a str,
    pub(crate) dir: &'a KeyDir,
    pub(crate) bound: Bound,
    pub(crate) multikey: bool,
    /// Under another collation than the query's, on a path that may hold strings: no bounds
    /// (`_compatible`) and no order (`computeSortsForScan`'s unsupported fields), rule 6.
    pub(crate) collated: bool,
    /// A measurement of a time series collection: its buckets' minimum and maximum give no
    /// order, rule 9.
    pub(crate) measurement: bool,
}

impl Key<'_> {
    /// A key whose scan gives no order of its own and cuts the order there.
    pub(crate) fn unordered(&self) -> bool {
        self.collated || self.measurement
    }
}
