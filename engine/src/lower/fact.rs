//! What the compiler noticed while lowering KDL into the model. Each structural check turns
//! its kind of fact into findings (the message text lives in the check, not here).

use crate::span::Span;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fact {
    UnknownNode {
        span: Span,
        name: String,
        /// Where it stood: "the top level", "stage \"seal\" (std/seal)", …
        context: String,
        candidates: Vec<String>,
    },
    UnknownProperty {
        span: Span,
        name: String,
        node: String,
        candidates: Vec<String>,
    },
    UnknownStageKind {
        span: Span,
        name: String,
        candidates: Vec<String>,
    },
    /// A property given twice on one node, a child given twice where one is allowed, or two
    /// declarations with the same name.
    Duplicate {
        span: Span,
        first: Span,
        what: String,
        name: String,
    },
    TypeMismatch {
        span: Span,
        what: String,
        expected: String,
        found: String,
        help: Option<String>,
    },
    /// A number outside the range its setting declares (`retries=100000`): the `limit` check.
    OutOfBound {
        span: Span,
        /// The setting, as messages name it: "`retries`".
        what: String,
        /// The value as written.
        found: u64,
        bound: crate::contract::Bound,
    },
    Missing {
        span: Span,
        what: String,
        node: String,
        help: Option<String>,
    },
}
