//! SARIF 2.1.0: one writer for every log reviewflow writes (`docs/sarif.md`).
//!
//! - [`log`] builds a log: schema, tool, rules, `automationDetails`, results; it numbers rules,
//!   and keeps every result's fingerprint unique;
//! - [`uri`] turns file names into artifact URIs relative to `%SRCROOT%`;
//! - [`fingerprint`] numbers repeated fingerprints;
//! - [`cap`] keeps a log within GitHub's 25,000 results a run, the most important first;
//! - [`taxonomy`] says how code scanning files a rule's alerts (tags, security severity,
//!   precision);
//! - [`check`] writes the findings of `reviewflow check` through the builder (the review's
//!   findings are written by `reviewflow_stdlib`'s `review.sarif` format, through it too).

pub mod cap;
pub mod check;
pub mod fingerprint;
pub mod log;
pub mod taxonomy;
pub mod uri;

pub use cap::{MAX_RESULTS, Quota};
pub use check::{
    FINGERPRINT_KEY, RuleDoc, fingerprint, help_uri, information_uri, results_left_out, rule_doc,
    sarif_log, sarif_log_at, sarif_text_at,
};
pub use log::{
    Analysis, DOCS_URL, Level, LogBuilder, Rule, SARIF_SCHEMA, SARIF_VERSION, SarifResult,
};
pub use uri::SrcRoot;
