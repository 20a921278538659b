//! Reading a pipeline file: bytes → checked text → KDL document, within safe limits.

mod fast;
mod guard;
pub mod lexical;
mod parse;

pub use fast::parse as parse_fast;
pub use guard::{LimitError, Limits, Malformed, Scan, check_limits};
pub use parse::{SyntaxError, parse_document};
