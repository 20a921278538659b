//! The core of `std/aggregate`, pure: several lenses' findings → one set, a verdict and counts.
//! docs/lenses.md, "`std/aggregate`", is the specification; the stage (`stages/aggregate.rs`)
//! reads and writes, this computes.
//!
//! Per lens, in order: cross-validation against the diff (dropped, demoted), then forged notes
//! stripped and the ceiling applied. Across lenses: deduplication, keeping every lens that agreed;
//! then the verdict.

mod cross;
mod dedup;
mod metadata;

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

pub use cross::Validation;
pub use metadata::{NO_MESSAGE, annotate, clamp, strip_forged};

use crate::forge::FileRanges;
use crate::lens::{LensMeta, VerdictMode};
use crate::reviewer::ReviewFinding;
use crate::rules::Severity;

/// One `from`: a lens and its findings; `None` when its review did not run.
#[derive(Clone, Debug)]
pub struct LensFindings {
    pub lens: LensMeta,
    pub findings: Option<Vec<ReviewFinding>>,
}

/// What decides the verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    /// The least severity of an included finding that requests changes; `None`: never.
    pub request_changes_on: Option<Severity>,
    /// Approve when nothing remains (and every lens ran, one of them included).
    pub approve_when_clean: bool,
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            request_changes_on: Some(Severity::Error),
            approve_when_clean: false,
        }
    }
}

/// The verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Comment,
    RequestChanges,
    Approve,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Comment => "comment",
            Verdict::RequestChanges => "request-changes",
            Verdict::Approve => "approve",
        }
    }
}

/// What happened to the findings, counted (never narrated per finding).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Lenses given.
    pub lenses: usize,
    /// Lenses whose review did not run.
    pub missing: usize,
    /// Findings received from every lens.
    pub received: usize,
    /// Findings in the result.
    pub findings: usize,
    /// On a path outside the change and its context.
    pub dropped: usize,
    /// Whose line was outside the hunks (widened by the tolerance), made file-level.
    pub demoted: usize,
    /// Above their lens's ceiling.
    pub clamped: usize,
    /// Whose message imitated the aggregate's notes.
    pub stripped: usize,
    /// Folded into another lens's identical finding.
    pub merged: usize,
}

/// The result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Aggregated {
    pub findings: Vec<ReviewFinding>,
    pub verdict: Verdict,
    pub counts: Counts,
    /// The names of the lenses whose review did not run, in `from` order.
    pub missing: Vec<String>,
    /// The suggested fixes removed (the findings kept), each as `path:line: why`
    /// ([`crate::forge::Filtered::unsuggested`]).
    pub unsuggested: Vec<String>,
}

/// A finding being merged.
struct Item {
    path: String,
    line: Option<u32>,
    end_line: Option<u32>,
    severity: Severity,
    /// The most severe severity any lens claimed, before its ceiling.
    claimed: Severity,
    rule: Option<String>,
    message: String,
    /// The first reporting lens's suggested fix that stood.
    suggestion: Option<String>,
    /// Indices of the lenses that reported it, in `from` order, once each.
    lenses: Vec<usize>,
    /// The most severe severity of an included lens's report of it.
    included: Option<Severity>,
}

/// Aggregates `inputs` (see the [module documentation](self)).
pub fn aggregate(inputs: &[LensFindings], validation: &Validation, policy: Policy) -> Aggregated {
    let mut counts = Counts {
        lenses: inputs.len(),
        ..Counts::default()
    };
    let mut missing = Vec::new();
    let mut unsuggested = Vec::new();
    let mut items: Vec<Item> = Vec::new();
    let mut index: HashMap<dedup::Key, usize> = HashMap::new();
    for (n, input) in inputs.iter().enumerate() {
        let Some(findings) = &input.findings else {
            counts.missing += 1;
            missing.push(input.lens.name.clone());
            continue;
        };
        counts.received += findings.len();
        let included = input.lens.verdict == VerdictMode::Included;
        for f in findings {
            // One finding at a time through `std/post`'s filter: what it keeps is this one.
            let filtered = validation.filter(vec![crate::forge::ReviewFinding {
                rule: f.rule.clone().unwrap_or_default(),
                severity: f.severity,
                path: f.path.clone(),
                line: f.line,
                end_line: f.end_line,
                message: String::new(),
                fingerprint: None,
                state: None,
                dialogue: None,
                suggestion: f.suggestion.clone(),
            }]);
            counts.dropped += filtered.dropped;
            counts.demoted += filtered.demoted;
            unsuggested.extend(filtered.unsuggested);
            let Some(f) = filtered.kept.into_iter().next().map(|kept| ReviewFinding {
                line: kept.line,
                end_line: kept.end_line,
                suggestion: kept.suggestion,
                ..f.clone()
            }) else {
                continue;
            };
            let message = match strip_forged(&f.message) {
                Some(m) => {
                    counts.stripped += 1;
                    m
                }
                None => f.message,
            };
            let claim = f.severity;
            let (severity, from) = clamp(claim, input.lens.ceiling);
            counts.clamped += usize::from(from.is_some());
            let rule = f.rule;
            let key = dedup::Key::new(
                &input.lens.name,
                &f.path,
                f.line,
                f.end_line,
                rule.as_deref(),
                &message,
            );
            let inc = included.then_some(severity);
            match index.get(&key) {
                Some(&i) => {
                    counts.merged += 1;
                    let item = &mut items[i];
                    item.severity = item.severity.max(severity);
                    item.claimed = item.claimed.max(claim);
                    item.included = item.included.max(inc);
                    if item.suggestion.is_none() {
                        item.suggestion = f.suggestion;
                    }
                    if !item.lenses.contains(&n) {
                        item.lenses.push(n);
                    }
                }
                None => {
                    index.insert(key, items.len());
                    items.push(Item {
                        path: f.path,
                        line: f.line,
                        end_line: f.end_line,
                        severity,
                        claimed: claim,
                        rule,
                        message,
                        suggestion: f.suggestion,
                        lenses: vec![n],
                        included: inc,
                    });
                }
            }
        }
    }
    let verdict = verdict_of(inputs, &items, &missing, policy);
    let findings: Vec<ReviewFinding> = items
        .into_iter()
        .map(|item| {
            let names: Vec<&str> = item
                .lenses
                .iter()
                .filter_map(|&i| inputs.get(i).map(|l| l.lens.name.as_str()))
                .collect();
            let clamped_from = (item.claimed > item.severity).then_some(item.claimed);
            ReviewFinding {
                message: annotate(&item.message, clamped_from, &names),
                path: item.path,
                line: item.line,
                end_line: item.end_line,
                severity: item.severity,
                rule: item.rule,
                suggestion: item.suggestion,
            }
        })
        .collect();
    counts.findings = findings.len();
    Aggregated {
        findings,
        verdict,
        counts,
        missing,
        unsuggested,
    }
}

fn verdict_of(
    inputs: &[LensFindings],
    items: &[Item],
    missing: &[String],
    policy: Policy,
) -> Verdict {
    let blocking = policy
        .request_changes_on
        .is_some_and(|bar| items.iter().any(|i| i.included.is_some_and(|s| s >= bar)));
    if blocking {
        return Verdict::RequestChanges;
    }
    let any_included = inputs
        .iter()
        .any(|l| l.lens.verdict == VerdictMode::Included);
    if policy.approve_when_clean && items.is_empty() && missing.is_empty() && any_included {
        return Verdict::Approve;
    }
    Verdict::Comment
}

/// [`Validation::new`], re-exported for the stage and the bench.
pub fn validation(ranges: &[FileRanges], context: &[String], tolerance: u32) -> Validation {
    Validation::new(ranges, context, tolerance)
}

#[cfg(test)]
mod tests;
