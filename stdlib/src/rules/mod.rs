//! The built-in reviewer that needs no model: deterministic rules over the lines a diff adds.
//!
//! Each rule lives in its own file and is listed once in [`registry`]. Rules only look at added
//! lines (and, for file-level rules, at the file as a whole), so a finding always points at
//! something the change wrote. Findings come out sorted by path, line, rule and message, with
//! duplicates removed, so the same diff always gives the same output.
//!
//! | rule                  | severity | finds |
//! |-----------------------|----------|-------|
//! | `conflict-marker`     | error    | `<<<<<<< `, `>>>>>>> `, `\|\|\|\|\|\|\| ` at line start; a bare `=======` only in a file that also adds one of those (Markdown underlines look the same) |
//! | `credential`          | error    | what the [`crate::detect`] detectors find, secret values included |
//! | `debug-leftover`      | warning  | `dbg!(` (Rust), `console.log(` and `debugger` (JavaScript, TypeScript), `binding.pry`, `binding.irb`, `byebug` (Ruby), `import pdb`, `import ipdb`, `pdb.set_trace(`, `breakpoint()` (Python); by file extension, comment lines skipped |
//! | `todo-added`          | info     | `TODO`, `FIXME`, `XXX` as words |
//! | `binary-file`         | warning  | a binary file added |
//! | `oversized-file`      | warning  | a file adding more than [`RulesConfig::max_added_lines`] lines (default 1000) |
//! | `trailing-whitespace` | info     | an added line ending in a space or tab (not in Markdown, where two spaces break a line) |

mod binary_file;
mod config;
mod conflict_marker;
mod credential;
mod debug_leftover;
mod finding;
mod id;
mod oversized_file;
pub mod registry;
mod text;
mod todo_added;
mod trailing_whitespace;

pub use config::RulesConfig;
pub use finding::{Finding, Severity};
pub use id::{RuleId, UnknownRule};

use crate::detect::NamedSecret;
use crate::diff::{Diff, FileDiff};

/// What a rule may read besides the file.
pub struct Context<'a> {
    pub config: &'a RulesConfig,
    pub secrets: &'a [NamedSecret],
}

/// One rule.
pub trait Rule: Sync {
    fn id(&self) -> RuleId;
    fn severity(&self) -> Severity;
    /// One line for documentation and `--help`.
    fn description(&self) -> &'static str;
    /// Whether its findings are security findings (a credential in the change): code scanning
    /// files them as security alerts. Not unless a rule says so.
    fn security(&self) -> bool {
        false
    }
    /// Appends this rule's findings on `file`.
    fn check(&self, file: &FileDiff, ctx: &Context<'_>, out: &mut Vec<Finding>);

    /// A finding of this rule on `file`; `line` is a new-side line, `None` for the whole file.
    fn finding(&self, file: &FileDiff, line: Option<u32>, message: String) -> Finding {
        Finding {
            rule: self.id(),
            severity: self.severity(),
            path: file.path().to_owned(),
            line,
            message,
            suggestion: None,
        }
    }
}

/// Runs the enabled rules over every file of `diff`.
pub fn review(diff: &Diff, secrets: &[NamedSecret], config: &RulesConfig) -> Vec<Finding> {
    let ctx = Context { config, secrets };
    let mut out = Vec::new();
    for file in &diff.files {
        for rule in registry::RULES {
            if config.rules.contains(&rule.id()) {
                rule.check(file, &ctx, &mut out);
            }
        }
    }
    out.sort_by(|a, b| {
        (&a.path, a.line, a.rule, &a.message).cmp(&(&b.path, b.line, b.rule, &b.message))
    });
    out.dedup();
    out
}
