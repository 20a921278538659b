//! `syntax`: the file is not KDL v2, not UTF-8, or beyond the parser's safe limits. Reported
//! by the parser before any other check runs; such a file is unusable input (exit 2).

use super::{Check, Context};
use crate::finding::{Finding, Severity};

pub const ID: &str = "syntax";

pub struct Syntax;

impl Check for Syntax {
    fn principle(&self) -> super::Principle {
        super::Principle::OneSourceOfTruth
    }
    fn id(&self) -> &'static str {
        ID
    }
    fn severity(&self) -> Severity {
        Severity::Error
    }
    fn summary(&self) -> &'static str {
        "the file is UTF-8, valid KDL v2, and within the parser's safe limits"
    }
    fn run(&self, _cx: &Context<'_>, _out: &mut Vec<Finding>) {}
}
