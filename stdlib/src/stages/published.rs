//! What `std/post` published, as its `published` output: whether the review ran (and why not),
//! and the findings it published counted by severity, all and new. `reviewflow run --fail-on`
//! decides the exit status from this alone, so every forge is judged by one rule
//! (docs/executor.md, "Failing the run on findings").

use serde::{Deserialize, Serialize};

use crate::forge::{FindingState, ReviewFinding};
use crate::rules::Severity;

/// Findings counted by severity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Counts {
    pub error: u64,
    pub warning: u64,
    pub info: u64,
}

impl Counts {
    fn add(&mut self, severity: Severity) {
        let n = match severity {
            Severity::Error => &mut self.error,
            Severity::Warning => &mut self.warning,
            Severity::Info => &mut self.info,
        };
        *n = n.saturating_add(1);
    }

    /// How many are of `severity` or above.
    pub fn at_or_above(&self, severity: Severity) -> u64 {
        [
            (Severity::Error, self.error),
            (Severity::Warning, self.warning),
            (Severity::Info, self.info),
        ]
        .into_iter()
        .filter(|(s, _)| *s >= severity)
        .fold(0u64, |sum, (_, n)| sum.saturating_add(n))
    }

    pub fn total(&self) -> u64 {
        self.at_or_above(Severity::Info)
    }
}

impl std::fmt::Display for Counts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // "1 error, 0 warnings, 2 info": a count reads as a sentence ("info" has no plural).
        let plural = |n: u64| if n == 1 { "" } else { "s" };
        write!(
            f,
            "{} error{}, {} warning{}, {} info",
            self.error,
            plural(self.error),
            self.warning,
            plural(self.warning),
            self.info
        )
    }
}

/// `std/post`'s `published` output.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Published {
    /// False when the review it published did not run (fell back, skipped, gated out).
    pub reviewed: bool,
    /// Why it was not reviewed; `None` when it was.
    pub reason: Option<String>,
    /// Every published finding that counts against the review, by severity: resolved and
    /// accepted ones do not.
    pub findings: Counts,
    /// The findings of state `new`, and those of no state: a finding that could not be compared
    /// with an earlier review counts as new.
    pub new: Counts,
}

impl Published {
    /// What a post of `findings` published; `not_reviewed` is the reason when the review did
    /// not run.
    pub fn of(findings: &[ReviewFinding], not_reviewed: Option<&str>) -> Self {
        let mut all = Counts::default();
        let mut new = Counts::default();
        for f in findings {
            match f.state {
                Some(FindingState::Resolved | FindingState::Accepted) => {}
                Some(FindingState::Persisting | FindingState::Refuted | FindingState::Upheld) => {
                    all.add(f.severity)
                }
                Some(FindingState::New) | None => {
                    all.add(f.severity);
                    new.add(f.severity);
                }
            }
        }
        Published {
            reviewed: not_reviewed.is_none(),
            reason: not_reviewed.map(str::to_owned),
            findings: all,
            new,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(severity: Severity, state: Option<FindingState>) -> ReviewFinding {
        ReviewFinding {
            rule: "r".into(),
            severity,
            path: "a.rs".into(),
            line: Some(1),
            end_line: None,
            message: "m".into(),
            fingerprint: None,
            state,
            dialogue: None,
            suggestion: None,
        }
    }

    #[test]
    fn counts_every_published_finding_and_the_new_or_uncompared_ones() {
        let fs = [
            finding(Severity::Error, Some(FindingState::New)),
            finding(Severity::Error, Some(FindingState::Persisting)),
            finding(Severity::Warning, None),
            finding(Severity::Info, Some(FindingState::Persisting)),
            finding(Severity::Error, Some(FindingState::Resolved)),
        ];
        let p = Published::of(&fs, None);
        assert!(p.reviewed && p.reason.is_none());
        let all = Counts {
            error: 2,
            warning: 1,
            info: 1,
        };
        assert_eq!(p.findings, all);
        let new = Counts {
            error: 1,
            warning: 1,
            info: 0,
        };
        assert_eq!(p.new, new);
        assert_eq!(p.findings.at_or_above(Severity::Error), 2);
        assert_eq!(p.findings.at_or_above(Severity::Warning), 3);
        assert_eq!(p.findings.total(), 4);
        assert_eq!(p.new.to_string(), "1 error, 1 warning, 0 info");
        assert_eq!(p.findings.to_string(), "2 errors, 1 warning, 1 info");
        assert_eq!(
            Counts::default().to_string(),
            "0 errors, 0 warnings, 0 info"
        );
    }

    #[test]
    fn a_review_that_did_not_run_says_why() {
        let p = Published::of(&[], Some("the review fell back"));
        assert!(!p.reviewed);
        assert_eq!(p.reason.as_deref(), Some("the review fell back"));
        let json = serde_json::to_value(&p).unwrap();
        assert_eq!(json["reviewed"], false);
        assert_eq!(json["findings"]["error"], 0);
        let back: Published = serde_json::from_value(json).unwrap();
        assert_eq!(back, p);
    }
}
