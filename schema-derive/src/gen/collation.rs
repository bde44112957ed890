//! The `mongo_schema::Collation` of a `collation(...)` option.

use proc_macro2::TokenStream;
use quote::quote;

use crate::attr::Collation;
use crate::gen::private;

/// `Collation::new("en").strength(2)...`.
pub fn expr(collation: &Collation) -> TokenStream {
    let private = private();
    let locale = &collation.locale;
    let mut out = quote!(#private::Collation::new(#locale));
    if let Some(v) = collation.strength {
        out.extend(quote!(.strength(#v)));
    }
    if let Some(v) = collation.case_level {
        out.extend(quote!(.case_level(#v)));
    }
    if let Some(v) = &collation.case_first {
        out.extend(quote!(.case_first(#v)));
    }
    if let Some(v) = collation.numeric_ordering {
        out.extend(quote!(.numeric_ordering(#v)));
    }
    if let Some(v) = &collation.alternate {
        out.extend(quote!(.alternate(#v)));
    }
    if let Some(v) = collation.backwards {
        out.extend(quote!(.backwards(#v)));
    }
    out
}
