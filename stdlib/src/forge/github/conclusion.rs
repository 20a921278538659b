//! The check run's conclusion, honestly: `success` only when a review ran and found nothing
//! blocking.
//!
//! A review that fell back, was skipped, was gated out by `when`, or had no key did not look
//! at the change; reporting `success` for it would tell a reader (and branch protection) that
//! the change was reviewed and is fine. Such a run is `neutral` and says why. GitHub's own
//! errors (rate limits, 5xx) never reach here: the caller handles them before a conclusion
//! exists.

use serde::Serialize;

use super::body::{CHECK_TEXT_MAX_CHARS, CHECK_TITLE_MAX_CHARS, fit, fit_line};
use crate::forge::ReviewFinding;
use crate::rules::Severity;

/// Which findings block: every one, those at or above a severity, or none.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum BlockOn {
    /// Every finding blocks, `info` included: a round passes only when it reports no findings.
    Any,
    /// Errors block (the default).
    #[default]
    Error,
    /// Warnings and errors block.
    Warning,
    /// Nothing blocks: the check is `success` whenever the review ran.
    Never,
}

impl BlockOn {
    pub const ALL: [BlockOn; 4] = [
        BlockOn::Any,
        BlockOn::Error,
        BlockOn::Warning,
        BlockOn::Never,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            BlockOn::Any => "any",
            BlockOn::Error => "error",
            BlockOn::Warning => "warning",
            BlockOn::Never => "never",
        }
    }

    /// Whether a finding of `severity` blocks.
    pub fn blocks(self, severity: Severity) -> bool {
        match self {
            BlockOn::Any => true,
            BlockOn::Error => severity >= Severity::Error,
            BlockOn::Warning => severity >= Severity::Warning,
            BlockOn::Never => false,
        }
    }
}

impl std::fmt::Display for BlockOn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for BlockOn {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        BlockOn::ALL
            .into_iter()
            .find(|b| b.as_str() == s)
            .ok_or_else(|| format!("unknown block-on `{s}` (any, error, warning, never)"))
    }
}

/// What happened to the review.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReviewState {
    /// The reviewer ran and its findings were read.
    Reviewed { blocking: usize, findings: usize },
    /// The review did not run or its result is not usable: it fell back, was skipped, was
    /// gated out, or a key was missing. `reason` says which, for a reader.
    NotReviewed { reason: String },
}

impl ReviewState {
    /// A review that ran, its blocking findings counted under `block_on`.
    pub fn reviewed(findings: &[ReviewFinding], block_on: BlockOn) -> ReviewState {
        // An accepted finding no longer counts (docs/findings.md, "Answering a finding").
        let counted = || {
            findings
                .iter()
                .filter(|f| f.state.is_none_or(crate::forge::FindingState::fails))
        };
        ReviewState::Reviewed {
            blocking: counted().filter(|f| block_on.blocks(f.severity)).count(),
            findings: counted().count(),
        }
    }
}

/// A check run's `conclusion`; only the three this module ever reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckConclusion {
    Success,
    Failure,
    Neutral,
}

impl CheckConclusion {
    pub fn as_str(self) -> &'static str {
        match self {
            CheckConclusion::Success => "success",
            CheckConclusion::Failure => "failure",
            CheckConclusion::Neutral => "neutral",
        }
    }
}

/// The check run's `conclusion`, `output.title` and `output.summary`, within GitHub's limits.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Conclusion {
    pub conclusion: CheckConclusion,
    pub title: String,
    pub summary: String,
}

/// The conclusion of `state`. `block_on` only names the rule in the summary: the blocking
/// count in [`ReviewState::Reviewed`] is taken as given, and any blocking finding fails the
/// check, even when it exceeds `findings`.
pub fn conclude(state: &ReviewState, block_on: BlockOn) -> Conclusion {
    let rule = match block_on {
        BlockOn::Any => "any finding blocks (block-on: any)".to_owned(),
        BlockOn::Never => "no finding blocks (block-on: never)".to_owned(),
        b => format!("findings of severity {b} or above block"),
    };
    let (conclusion, title, summary) = match state {
        ReviewState::Reviewed {
            blocking: 0,
            findings: 0,
        } => (
            CheckConclusion::Success,
            "Reviewed: no findings".to_owned(),
            format!("The review ran and found nothing; {rule}."),
        ),
        ReviewState::Reviewed {
            blocking: 0,
            findings,
        } => (
            CheckConclusion::Success,
            format!("Reviewed: {}, none blocking", plural(*findings, "finding")),
            format!(
                "The review ran and found {}, none of them blocking; {rule}.",
                plural(*findings, "finding")
            ),
        ),
        ReviewState::Reviewed { blocking, findings } => (
            CheckConclusion::Failure,
            format!(
                "Reviewed: {} of {}",
                plural(*blocking, "blocking finding"),
                (*findings).max(*blocking)
            ),
            format!(
                "The review ran and found {}; {rule}.",
                plural(*blocking, "blocking finding")
            ),
        ),
        ReviewState::NotReviewed { reason } => {
            let reason = reason.trim();
            let reason = if reason.is_empty() {
                "no reason given"
            } else {
                reason
            };
            (
                CheckConclusion::Neutral,
                format!("Not reviewed: {reason}"),
                format!(
                    "The review did not run, so this change has not been reviewed. \
                     This is not a pass.\n\nReason: {reason}"
                ),
            )
        }
    };
    Conclusion {
        conclusion,
        title: fit_line(&title, CHECK_TITLE_MAX_CHARS).into_owned(),
        summary: fit(&summary, CHECK_TEXT_MAX_CHARS).into_owned(),
    }
}

impl Conclusion {
    /// The same conclusion, a review that did not run failing the check (`std/post`'s
    /// `not-reviewed "fail"`): a `neutral` check does not block a merge. Any other conclusion is
    /// returned as it is.
    pub fn failing_not_reviewed(self) -> Conclusion {
        if self.conclusion != CheckConclusion::Neutral {
            return self;
        }
        Conclusion {
            conclusion: CheckConclusion::Failure,
            summary: fit(
                &format!(
                    "{}\n\nThe pipeline fails a review that did not run (not-reviewed: fail).",
                    self.summary
                ),
                CHECK_TEXT_MAX_CHARS,
            )
            .into_owned(),
            ..self
        }
    }
}

fn plural(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(severity: Severity) -> ReviewFinding {
        ReviewFinding {
            rule: "r".into(),
            severity,
            path: "a".into(),
            line: Some(1),
            end_line: None,
            message: "m".into(),
            fingerprint: None,
            state: None,
            dialogue: None,
            suggestion: None,
        }
    }

    #[test]
    fn block_on_parses_and_counts() {
        assert_eq!("error".parse(), Ok(BlockOn::Error));
        assert_eq!("warning".parse(), Ok(BlockOn::Warning));
        assert_eq!("never".parse(), Ok(BlockOn::Never));
        assert_eq!("any".parse(), Ok(BlockOn::Any));
        assert!("Error".parse::<BlockOn>().is_err());
        assert_eq!(BlockOn::default(), BlockOn::Error);
        let fs = [
            finding(Severity::Info),
            finding(Severity::Warning),
            finding(Severity::Error),
        ];
        let blocking = |b| match ReviewState::reviewed(&fs, b) {
            ReviewState::Reviewed { blocking, findings } => (blocking, findings),
            other => panic!("{other:?}"),
        };
        assert_eq!(blocking(BlockOn::Error), (1, 3));
        assert_eq!(blocking(BlockOn::Warning), (2, 3));
        assert_eq!(blocking(BlockOn::Never), (0, 3));
        assert_eq!(blocking(BlockOn::Any), (3, 3));
    }

    #[test]
    fn block_on_any_fails_on_info_alone_and_passes_only_without_findings() {
        let info = [finding(Severity::Info)];
        let c = conclude(&ReviewState::reviewed(&info, BlockOn::Any), BlockOn::Any);
        assert_eq!(c.conclusion, CheckConclusion::Failure);
        assert_eq!(c.title, "Reviewed: 1 blocking finding of 1");
        assert!(
            c.summary.contains("any finding blocks (block-on: any)"),
            "{}",
            c.summary
        );
        let clean = conclude(&ReviewState::reviewed(&[], BlockOn::Any), BlockOn::Any);
        assert_eq!(clean.conclusion, CheckConclusion::Success);
        // Under the default, the same info finding passes.
        let c = conclude(
            &ReviewState::reviewed(&info, BlockOn::Error),
            BlockOn::Error,
        );
        assert_eq!(c.conclusion, CheckConclusion::Success);
    }

    #[test]
    fn success_only_when_reviewed_and_nothing_blocks() {
        let clean = conclude(
            &ReviewState::Reviewed {
                blocking: 0,
                findings: 0,
            },
            BlockOn::Error,
        );
        assert_eq!(clean.conclusion, CheckConclusion::Success);
        assert_eq!(clean.title, "Reviewed: no findings");
        let some = conclude(
            &ReviewState::Reviewed {
                blocking: 0,
                findings: 2,
            },
            BlockOn::Error,
        );
        assert_eq!(some.conclusion, CheckConclusion::Success);
        assert_eq!(some.title, "Reviewed: 2 findings, none blocking");
    }

    #[test]
    fn blocking_findings_fail() {
        let c = conclude(
            &ReviewState::Reviewed {
                blocking: 1,
                findings: 4,
            },
            BlockOn::Warning,
        );
        assert_eq!(c.conclusion, CheckConclusion::Failure);
        assert_eq!(c.title, "Reviewed: 1 blocking finding of 4");
        assert!(c.summary.contains("severity warning or above"));
        // An inconsistent count still fails, whatever block-on says.
        let c = conclude(
            &ReviewState::Reviewed {
                blocking: 3,
                findings: 1,
            },
            BlockOn::Never,
        );
        assert_eq!(c.conclusion, CheckConclusion::Failure);
        assert_eq!(c.title, "Reviewed: 3 blocking findings of 3");
    }

    #[test]
    fn not_reviewed_is_neutral_never_success() {
        let c = conclude(
            &ReviewState::NotReviewed {
                reason: "conversation key missing (on-missing=disable)".into(),
            },
            BlockOn::Error,
        );
        assert_eq!(c.conclusion, CheckConclusion::Neutral);
        assert_eq!(
            c.title,
            "Not reviewed: conversation key missing (on-missing=disable)"
        );
        assert!(c.summary.contains("not a pass"));
        let empty = conclude(
            &ReviewState::NotReviewed {
                reason: "  ".into(),
            },
            BlockOn::Error,
        );
        assert_eq!(empty.title, "Not reviewed: no reason given");
    }

    #[test]
    fn a_pipeline_may_fail_a_review_that_did_not_run() {
        let not = ReviewState::NotReviewed {
            reason: "`review` fell back: budget spent".into(),
        };
        let c = conclude(&not, BlockOn::Error).failing_not_reviewed();
        assert_eq!(c.conclusion, CheckConclusion::Failure);
        assert_eq!(c.title, "Not reviewed: `review` fell back: budget spent");
        assert!(c.summary.contains("not a pass"), "{}", c.summary);
        assert!(c.summary.contains("not-reviewed: fail"), "{}", c.summary);
        // A review that ran keeps its own conclusion.
        let ran = ReviewState::Reviewed {
            blocking: 0,
            findings: 0,
        };
        assert_eq!(
            conclude(&ran, BlockOn::Error).failing_not_reviewed(),
            conclude(&ran, BlockOn::Error)
        );
    }

    #[test]
    fn long_reasons_fit_the_limits() {
        let reason = format!("{}\nsecond line", "x".repeat(100_000));
        let c = conclude(&ReviewState::NotReviewed { reason }, BlockOn::Error);
        assert!(c.title.chars().count() <= CHECK_TITLE_MAX_CHARS);
        assert!(!c.title.contains('\n'));
        assert!(c.summary.chars().count() <= CHECK_TEXT_MAX_CHARS);
        let json = serde_json::to_value(&c).unwrap();
        assert_eq!(json["conclusion"], "neutral");
    }
}
