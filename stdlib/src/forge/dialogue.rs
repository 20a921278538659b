//! The dialogue about a review's findings across pushes (`docs/findings.md`, "Answering a
//! finding"): the author refutes a finding, the next round's reviewer accepts or upholds the
//! refutation, and each finding's state says where that stands.
//!
//! [`converse`] runs after [`super::baseline::compare`] has set `new`, `persisting` and
//! `resolved`: it carries each finding's dialogue over from the baseline and applies this
//! round's responses (those the reviewer was given, `std/gather`'s `responses`) and the
//! reviewer's decisions on them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::baseline::{Baseline, Dialogue};
use super::response::{Responses, finding_id, parse_id};
use super::review::{FindingState, ReviewFinding};

/// A reviewer's answer to a refutation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// The refutation is right: the finding no longer counts.
    Accepted,
    /// The finding stands.
    Upheld,
}

/// One decision of a reviewer, as its answer writes it (validated by
/// [`crate::reviewer::result`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Decision {
    /// The finding's id (`rf-3f2a9c1b`).
    pub finding: String,
    pub decision: Verdict,
    /// Why, in one line.
    pub reason: String,
}

/// What [`converse`] left out, for a status line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ignored {
    /// Decisions naming no refutation the reviewer was given.
    pub decisions: usize,
}

/// Sets the dialogue states of `findings` (this round's, states set by `compare`) and of
/// `resolved` (the last review's findings this round no longer has), from the dialogues
/// `previous` kept, this round's `responses` and the reviewer's `decisions`.
///
/// - A refutation the reviewer decided on makes its finding `accepted` or `upheld`; one it did
///   not decide on leaves it `refuted`, and it is given to the next round's reviewer again.
/// - Without a new refutation a finding keeps the state its dialogue had: an accepted finding
///   stays accepted on later pushes, an upheld one upheld, until the author refutes it anew.
/// - A finding gone from the code is `resolved`, or `accepted` when this round accepted its
///   refutation (a reviewer that accepts drops the finding).
/// - Every response answered is remembered (its digest), so that the same words are not asked
///   again: a refutation once decided, a `fixed` once given (it needs no decision).
pub fn converse(
    findings: &mut [ReviewFinding],
    resolved: &mut [ReviewFinding],
    previous: Option<&Baseline>,
    responses: &Responses,
    decisions: &[Decision],
) -> Ignored {
    let mut ignored = Ignored::default();
    let decided = |id: &str| decisions.iter().find(|d| d.finding == id);
    for d in decisions {
        let asked = parse_id(&d.finding)
            .is_some_and(|id| responses.refutations().any(|a| a.response.finding == id));
        if !asked {
            ignored.decisions += 1;
        }
    }
    // Looked up once per finding of up to a thousand: by fingerprint, not by a scan.
    let kept: std::collections::HashMap<&str, &Dialogue> = previous
        .map(|b| {
            b.findings
                .iter()
                .filter_map(|f| Some((f.fingerprint.as_str(), f.dialogue.as_ref()?)))
                .collect()
        })
        .unwrap_or_default();
    let before = |fingerprint: &str| kept.get(fingerprint).map(|d| (*d).clone());
    for f in findings.iter_mut().chain(resolved.iter_mut()) {
        let Some(print) = f.fingerprint.clone() else {
            continue;
        };
        let id = finding_id(&print);
        let gone = f.state == Some(FindingState::Resolved);
        let mut dialogue = before(&print).unwrap_or_default();
        let given: Vec<_> = responses
            .responses
            .iter()
            .filter(|a| a.response.finding == id)
            .collect();
        // Remembered once answered: a `fixed` needs no answer, a refutation the reviewer's
        // decision.
        for a in &given {
            let answered =
                a.response.kind == super::response::ResponseKind::Fixed || decided(&id).is_some();
            if answered {
                dialogue.seen.retain(|s| s != &a.digest);
                dialogue.seen.push(a.digest.clone());
            }
        }
        // The latest refutation given this round is the one the reviewer answers.
        if let Some(refutation) = responses
            .refutations()
            .filter(|a| a.response.finding == id)
            .last()
        {
            dialogue.by = refutation.response.author.clone();
            dialogue.reason = refutation.response.reason.clone();
            dialogue.answer.clear();
            dialogue.state = Some(match decided(&id) {
                Some(d) => {
                    dialogue.answer = d.reason.clone();
                    match d.decision {
                        Verdict::Accepted => FindingState::Accepted,
                        Verdict::Upheld => FindingState::Upheld,
                    }
                }
                None => FindingState::Refuted,
            });
        }
        let empty = dialogue == Dialogue::default();
        if gone {
            // Fixed, unless this round accepted its refutation.
            if dialogue.state == Some(FindingState::Accepted) && !given.is_empty() {
                f.state = Some(FindingState::Accepted);
            }
        } else if let Some(state) = dialogue.state {
            f.state = Some(state);
        }
        f.dialogue = (!empty).then_some(dialogue);
    }
    ignored
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forge::baseline::{LOCAL_BASELINE_BYTES, compare};
    use crate::forge::response::{Responses, parse};
    use crate::rules::Severity;

    fn finding(print: char) -> ReviewFinding {
        ReviewFinding {
            rule: "r".into(),
            severity: Severity::Error,
            path: "a.rs".into(),
            line: Some(1),
            end_line: None,
            message: format!("finding {print}"),
            fingerprint: Some(print.to_string().repeat(32)),
            state: None,
            dialogue: None,
            suggestion: None,
        }
    }

    fn id(print: char) -> String {
        format!("rf-{}", print.to_string().repeat(8))
    }

    /// One round: this round's findings against `previous`, with `text` as the author's
    /// responses and `decisions`; the findings, the resolved ones, and the baseline kept.
    fn round(
        now: &[char],
        previous: Option<&Baseline>,
        text: &str,
        decisions: &[(char, Verdict)],
    ) -> (Vec<ReviewFinding>, Vec<ReviewFinding>, Baseline) {
        let mut findings: Vec<ReviewFinding> = now.iter().map(|c| finding(*c)).collect();
        let mut resolved = compare(&mut findings, &[], previous);
        let known = previous.map(|b| b.findings.clone()).unwrap_or_default();
        let (responses, _) = Responses::matched(parse(text, "alice", None), &known);
        let decisions: Vec<Decision> = decisions
            .iter()
            .map(|(c, v)| Decision {
                finding: id(*c),
                decision: *v,
                reason: "because".into(),
            })
            .collect();
        converse(
            &mut findings,
            &mut resolved,
            previous,
            &responses,
            &decisions,
        );
        let baseline = Baseline::of(&findings, &[], LOCAL_BASELINE_BYTES);
        (findings, resolved, baseline)
    }

    fn states(findings: &[ReviewFinding]) -> Vec<(char, FindingState)> {
        findings
            .iter()
            .map(|f| {
                (
                    f.message.chars().last().unwrap_or(' '),
                    f.state.unwrap_or(FindingState::New),
                )
            })
            .collect()
    }

    #[test]
    fn four_pushes_refuted_accepted_fixed_and_upheld() {
        use FindingState::*;
        // Push 1: three findings.
        let (f1, _, b1) = round(&['a', 'b', 'c'], None, "", &[]);
        assert!(f1.iter().all(|f| f.state.is_none()));
        // The author refutes a and c; push 2 fixes b; the reviewer accepts a, upholds c.
        let text = format!(
            "refuted {}: not a bug\nrefuted {}: also fine",
            id('a'),
            id('c')
        );
        let (f2, r2, b2) = round(
            &['a', 'c'],
            Some(&b1),
            &text,
            &[('a', Verdict::Accepted), ('c', Verdict::Upheld)],
        );
        assert_eq!(states(&f2), [('a', Accepted), ('c', Upheld)]);
        assert_eq!(states(&r2), [('b', Resolved)]);
        let a = f2[0].dialogue.as_ref().unwrap();
        assert_eq!((a.by.as_str(), a.reason.as_str()), ("alice", "not a bug"));
        assert_eq!(a.answer, "because");
        // Push 3: the same refutations posted again are not asked again; the states stay.
        let (f3, _, b3) = round(&['a', 'c'], Some(&b2), &text, &[]);
        assert_eq!(states(&f3), [('a', Accepted), ('c', Upheld)]);
        // Push 4: a new refutation of c, not yet decided: refuted, and failing.
        let again = format!("refuted {}: see the test I added", id('c'));
        let (f4, _, _) = round(&['a', 'c'], Some(&b3), &again, &[]);
        assert_eq!(states(&f4), [('a', Accepted), ('c', Refuted)]);
        assert!(!Accepted.fails() && Refuted.fails() && Upheld.fails());
    }

    #[test]
    fn an_accepted_finding_the_reviewer_dropped_is_accepted_not_fixed() {
        let (_, _, b1) = round(&['a', 'b'], None, "", &[]);
        let text = format!("refuted {}: wrong", id('a'));
        let (f2, r2, _) = round(&['b'], Some(&b1), &text, &[('a', Verdict::Accepted)]);
        assert_eq!(states(&f2), [('b', FindingState::Persisting)]);
        assert_eq!(states(&r2), [('a', FindingState::Accepted)]);
    }

    #[test]
    fn an_undecided_refutation_is_asked_again_and_a_stray_decision_is_ignored() {
        let (_, _, b1) = round(&['a'], None, "", &[]);
        let text = format!("refuted {}: wrong", id('a'));
        let (f2, _, b2) = round(&['a'], Some(&b1), &text, &[]);
        assert_eq!(f2[0].state, Some(FindingState::Refuted));
        // Not answered: given again in the next round, and decided there.
        let (responses, left) = Responses::matched(parse(&text, "alice", None), &b2.findings);
        assert_eq!((responses.responses.len(), left.seen), (1, 0));
        let (f3, _, _) = round(&['a'], Some(&b2), &text, &[('a', Verdict::Upheld)]);
        assert_eq!(f3[0].state, Some(FindingState::Upheld));
        let responses = Responses::default();
        let mut findings = vec![finding('a')];
        let mut resolved = compare(&mut findings, &[], Some(&b2));
        let stray = [Decision {
            finding: id('a'),
            decision: Verdict::Accepted,
            reason: "x".into(),
        }];
        let ignored = converse(&mut findings, &mut resolved, Some(&b2), &responses, &stray);
        assert_eq!(ignored.decisions, 1);
        assert_eq!(findings[0].state, Some(FindingState::Refuted));
    }
}
