//! What the change's reviews cost, as the posted review shows it: one footer line under the
//! review comment (`docs/github.md`, "Costs and budgets"). The running total itself is kept by
//! the forge with the posted review: the comment's marker (`spent=`), the local record
//! (`spent`).

use crate::forge::RunOrder;
use crate::forge::github::marker_line;
use crate::forge::github::{COMMENT_MAX_CHARS, Marker};
use crate::reviewer::usage::Usage;

/// The footer line: `Cost: this review 1,280 tokens (…), $0.0123 · this pull request so far
/// 45,678 tokens (…), $0.0456`. `change` names the change as the forge does ("pull request",
/// "merge request", "change"). Numbers and fixed words only: nothing in it comes from the change.
pub fn footer(review: &Usage, so_far: &Usage, change: &str) -> String {
    format!(
        "Cost: this review {} · this {change} so far {}",
        review.say(),
        so_far.say()
    )
}

/// The footer of a post that carries a cost (`std/post`'s `cost`); `None` without one.
pub fn footer_of(review: Option<Usage>, so_far: Option<Usage>, change: &str) -> Option<String> {
    let review = review?;
    Some(footer(&review, &so_far.unwrap_or(review), change))
}

/// What keeping a total in a posted review's body comes to ([`keep_total`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kept {
    /// The marker already says the total: nothing to write.
    Unchanged,
    /// The body with only its marker line rewritten to say the total.
    Rewritten(String),
    /// The marker is by a newer run than this one: it stands, total included.
    Newer(RunOrder),
}

/// The change's total `total` kept in `body`, a posted review's, for a run whose review did not
/// run (`docs/github.md`, "Costs and budgets"): only the first marker line changes, to the same
/// marker with `spent=` the total; the rest of the body stays byte for byte, so the review, its
/// head, conversation and counts stand. A body whose marker names no head holds no review: it is
/// replaced by `fresh`, the body of this run ([`not_reviewed_body`]), so its reason and footer
/// are this run's. A marker by a newer run than `ours` is left as it is. `None`: the body has no
/// marker.
pub fn keep_total(
    body: &str,
    total: Usage,
    ours: Option<RunOrder>,
    fresh: impl FnOnce() -> String,
) -> Option<Kept> {
    let (range, marker) = marker_line(body)?;
    if let (Some(posted), Some(ours)) = (marker.order(), ours)
        && posted > ours
    {
        return Some(Kept::Newer(posted));
    }
    if marker.spent() == Some(total) {
        return Some(Kept::Unchanged);
    }
    if marker.head().is_none() {
        return Some(Kept::Rewritten(fresh()));
    }
    let line = marker.with_spent(Some(total)).render();
    let mut kept = String::with_capacity(body.len() + line.len());
    kept.push_str(body.get(..range.start)?);
    kept.push_str(&line);
    kept.push_str(body.get(range.end..)?);
    // A body cut to the limit before may not hold a longer total: cut again, marker kept.
    let kept = crate::forge::github::fit(&kept, COMMENT_MAX_CHARS).into_owned();
    Some(Kept::Rewritten(kept))
}

/// The body of the first review comment of a change whose review did not run: `marker` (one
/// that names no head, [`Marker::unreviewed`]), the reason on one line, and the cost footer when
/// there is one. The next posted review replaces it wholly.
pub fn not_reviewed_body(marker: &Marker, reason: &str, footer: Option<&str>) -> String {
    // One line: a reason spanning lines could start one that reads as markup of its own.
    let reason = reason.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut body = format!("{}\n**Not reviewed:** {reason}\n", marker.render());
    if let Some(footer) = footer {
        body.push('\n');
        body.push_str(footer);
        body.push('\n');
    }
    body
}

/// How a hosted forge names what keeps a change's total, for the status lines of [`plan`]:
/// `record` ("review comment"), the change ("pull request") and a newer run.
pub struct Place {
    pub record: &'static str,
    pub change: &'static str,
    /// "run (run 9 attempt 1)": the run whose record stands.
    pub newer: fn(RunOrder) -> String,
}

/// The write [`plan`] asks of the forge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Write {
    /// Replace the body of our record with this.
    Update(String),
    /// Create our record with this body.
    Create(String),
    /// Write nothing.
    Nothing,
}

/// What a hosted forge does with the total of a run whose review did not run, and the status
/// line that says so once it is done.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub write: Write,
    pub say: String,
}

/// The one decision both hosted forges make for a run whose review did not run
/// (`docs/github.md`, "Costs and budgets"): `existing`, the body of our record when there is
/// one, keeps `total` ([`keep_total`]); without one a first record is created, `first` (the body
/// of [`first_body`]), unless nothing was spent.
pub fn plan(
    existing: Option<&str>,
    total: Usage,
    ours: Option<RunOrder>,
    first: String,
    place: &Place,
) -> Plan {
    let Place { record, change, .. } = place;
    let keeps = || {
        format!(
            "the review did not run: the {record} keeps the {change}'s total spent, {}",
            total.say()
        )
    };
    let Some(body) = existing else {
        return if total.is_zero() {
            // Nothing spent, nothing to charge: no first record only to say so.
            Plan {
                write: Write::Nothing,
                say: format!("the review did not run and spent nothing: no {record} is written"),
            }
        } else {
            Plan {
                write: Write::Create(first),
                say: keeps(),
            }
        };
    };
    match keep_total(body, total, ours, move || first) {
        Some(Kept::Rewritten(body)) => Plan {
            write: Write::Update(body),
            say: keeps(),
        },
        Some(Kept::Unchanged) | None => Plan {
            write: Write::Nothing,
            say: format!(
                "the review did not run: the {record} already keeps the {change}'s total spent, {}",
                total.say()
            ),
        },
        Some(Kept::Newer(posted)) => Plan {
            write: Write::Nothing,
            say: format!(
                "the review did not run: the {record} is by a newer {}, so it keeps its own total spent",
                (place.newer)(posted)
            ),
        },
    }
}

/// The first record's body of a change whose review did not run ([`not_reviewed_body`]), cut
/// to the comment's limit: a marker that names no head, with the total and this run's order.
#[allow(clippy::too_many_arguments)]
pub fn first_body(
    pipeline: &str,
    project: Option<&str>,
    run: &str,
    order: Option<RunOrder>,
    total: Usage,
    cost: Option<Usage>,
    reason: &str,
    change: &str,
) -> Result<String, crate::forge::github::MarkerError> {
    let marker = Marker::unreviewed(pipeline, project, run)?
        .with_spent(Some(total))
        .with_order(order);
    let footer = footer_of(cost, Some(total), change);
    let body = not_reviewed_body(&marker, reason, footer.as_deref());
    Ok(crate::forge::github::fit(&body, COMMENT_MAX_CHARS).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reviewer::usage::Usd;

    fn usage(tokens: u64) -> Usage {
        Usage {
            input_tokens: tokens,
            output_tokens: 1,
            cached_tokens: 0,
            cost_usd: Some(Usd(tokens)),
        }
    }

    fn posted(spent: Option<Usage>, order: Option<RunOrder>) -> Marker {
        Marker::new("p", Some("web"), &"a".repeat(40), "r1", Some("c"))
            .expect("a marker")
            .with_spent(spent)
            .with_order(order)
    }

    #[test]
    fn keeping_a_total_rewrites_only_the_marker_line() {
        let old = posted(Some(usage(10)), None);
        let rest = "\r\n<!-- reviewflow:baseline {} -->\n## Review\ntext\n";
        let body = format!("intro\n{}{rest}", old.render());
        let Some(Kept::Rewritten(kept)) = keep_total(&body, usage(20), None, String::new) else {
            panic!("not rewritten");
        };
        let new = old.clone().with_spent(Some(usage(20)));
        assert_eq!(kept, format!("intro\n{}{rest}", new.render()));
        assert_eq!(Marker::parse_body(&kept), Some(new));
        // A marker that kept no total yet gets one.
        let none = format!("{}\nreview", posted(None, None).render());
        let Some(Kept::Rewritten(kept)) = keep_total(&none, usage(5), None, String::new) else {
            panic!("not rewritten");
        };
        assert_eq!(
            Marker::parse_body(&kept).and_then(|m| m.spent()),
            Some(usage(5))
        );
        assert!(kept.ends_with("\nreview"));
    }

    #[test]
    fn a_body_that_names_no_head_is_replaced_by_this_run_s() {
        let marker = |spent| {
            Marker::unreviewed("p", None, "r1")
                .expect("a marker")
                .with_spent(Some(spent))
        };
        let body = not_reviewed_body(&marker(usage(10)), "first reason", None);
        let fresh = not_reviewed_body(&marker(usage(20)), "second reason", None);
        assert_eq!(
            keep_total(&body, usage(20), None, || fresh.clone()),
            Some(Kept::Rewritten(fresh.clone()))
        );
        assert_eq!(
            keep_total(&body, usage(10), None, || fresh.clone()),
            Some(Kept::Unchanged)
        );
    }

    #[test]
    fn a_longer_total_in_a_full_body_still_fits() {
        let old = posted(Some(usage(1)), None);
        let head = format!("{}\n", old.render());
        let filler = "x\n".repeat((COMMENT_MAX_CHARS - head.len()) / 2);
        let body = format!("{head}{filler}");
        assert!(body.len() <= COMMENT_MAX_CHARS);
        let Some(Kept::Rewritten(kept)) = keep_total(&body, usage(u64::MAX), None, String::new)
        else {
            panic!("not rewritten");
        };
        assert!(crate::forge::github::char_count(&kept) <= COMMENT_MAX_CHARS);
        let marker = Marker::parse_body(&kept).expect("a marker");
        assert_eq!(marker.spent(), Some(usage(u64::MAX)));
    }

    #[test]
    fn an_equal_total_a_newer_run_or_no_marker_writes_nothing() {
        let body = format!("{}\nreview", posted(Some(usage(10)), None).render());
        assert_eq!(
            keep_total(&body, usage(10), None, String::new),
            Some(Kept::Unchanged)
        );
        let newer = RunOrder { run: 9, attempt: 1 };
        let body = format!("{}\nreview", posted(Some(usage(10)), Some(newer)).render());
        let ours = Some(RunOrder { run: 8, attempt: 3 });
        assert_eq!(
            keep_total(&body, usage(20), ours, String::new),
            Some(Kept::Newer(newer))
        );
        // The same run, or one that orders nothing, keeps it.
        assert!(matches!(
            keep_total(&body, usage(20), Some(newer), String::new),
            Some(Kept::Rewritten(_))
        ));
        assert!(matches!(
            keep_total(&body, usage(20), None, String::new),
            Some(Kept::Rewritten(_))
        ));
        assert_eq!(keep_total("no marker", usage(1), None, String::new), None);
    }

    #[test]
    fn a_not_reviewed_body_names_no_head_and_says_why() {
        let order = Some(RunOrder { run: 7, attempt: 2 });
        let marker = Marker::unreviewed("p", None, "r1")
            .expect("a marker")
            .with_spent(Some(usage(30)))
            .with_order(order);
        let footer = footer(&usage(30), &usage(30), "pull request");
        let body = not_reviewed_body(&marker, "the reviewer failed:\n  timed out", Some(&footer));
        assert_eq!(
            body,
            format!(
                "{}\n**Not reviewed:** the reviewer failed: timed out\n\n{footer}\n",
                marker.render()
            )
        );
        assert!(marker.render().contains(" head=- "));
        let parsed = Marker::parse_body(&body).expect("a marker");
        assert_eq!((parsed.head(), parsed.spent()), (None, Some(usage(30))));
        assert_eq!(crate::forge::github::baseline_of_body(&body), None);
        let bare = not_reviewed_body(&marker, "skipped", None);
        assert_eq!(
            bare,
            format!("{}\n**Not reviewed:** skipped\n", marker.render())
        );
    }

    #[test]
    fn the_footer_says_both_totals() {
        let review = Usage {
            input_tokens: 12_000,
            output_tokens: 345,
            cached_tokens: 0,
            cost_usd: Some(Usd(12_300)),
        };
        let so_far = Usage {
            input_tokens: 45_000,
            output_tokens: 678,
            cached_tokens: 1_000,
            cost_usd: None,
        };
        assert_eq!(
            footer(&review, &so_far, "pull request"),
            "Cost: this review 12,345 tokens (12,000 in, 345 out, 0 cached), $0.0123 · \
             this pull request so far 45,678 tokens (45,000 in, 678 out, 1,000 cached), cost not reported"
        );
        assert_eq!(footer_of(None, Some(so_far), "change"), None);
        assert_eq!(
            footer_of(Some(review), None, "change"),
            Some(footer(&review, &review, "change"))
        );
    }

    const PLACE: Place = Place {
        record: "review comment",
        change: "pull request",
        newer: |o| format!("run (run {} attempt {})", o.run, o.attempt),
    };

    #[test]
    fn the_plan_writes_what_the_total_needs_and_says_so() {
        let total = usage(3_000);
        let says = "3,001 tokens (3,000 in, 1 out, 0 cached), $0.0030";
        // No record yet: a first one, unless nothing was spent.
        assert_eq!(
            plan(None, total, None, "first".into(), &PLACE),
            Plan {
                write: Write::Create("first".into()),
                say: format!(
                    "the review did not run: the review comment keeps the pull request's total spent, {says}"
                ),
            }
        );
        let zero = Usage {
            input_tokens: 0,
            output_tokens: 0,
            cached_tokens: 0,
            cost_usd: None,
        };
        assert_eq!(
            plan(None, zero, None, "first".into(), &PLACE),
            Plan {
                write: Write::Nothing,
                say: "the review did not run and spent nothing: no review comment is written"
                    .into(),
            }
        );
        // A record: its marker rewritten, or nothing when it says the total already.
        let body = format!("{}\nreview", posted(Some(usage(10)), None).render());
        assert!(matches!(
            plan(Some(&body), total, None, "first".into(), &PLACE).write,
            Write::Update(b) if b.ends_with("\nreview")
        ));
        assert_eq!(
            plan(Some(&body), usage(10), None, "first".into(), &PLACE).say,
            "the review did not run: the review comment already keeps the pull request's total spent, 11 tokens (10 in, 1 out, 0 cached), $0.00001"
        );
        // A newer run's record stands.
        let newer = RunOrder { run: 9, attempt: 1 };
        let body = format!("{}\nreview", posted(Some(usage(10)), Some(newer)).render());
        let ours = Some(RunOrder { run: 8, attempt: 1 });
        assert_eq!(
            plan(Some(&body), total, ours, "first".into(), &PLACE),
            Plan {
                write: Write::Nothing,
                say: "the review did not run: the review comment is by a newer run (run 9 attempt 1), so it keeps its own total spent".into(),
            }
        );
    }
}
