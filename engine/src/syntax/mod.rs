//! Reading a pipeline file: bytes → checked text → KDL document, within safe limits.

mod fast;
mod guard;
mod parse;

pub use fast::parse as parse_fast;
pub use guard::{LimitError, Limits, check_limits};
pub use parse::{SyntaxError, parse_document};
