//! `std/post`: publishes the review. On GitHub: one upserted comment with a metadata marker,
//! a check run, inline comments on changed lines. Locally: markdown, JSON, rdjsonl and SARIF
//! in `.reviewflow/forge/<change>/`. Uploads sealed blobs to a store, or a tombstone when there
//! is none.
//!
//! Every finding gets its fingerprint, and its state against the baseline the last posted
//! review kept (`docs/findings.md`): new, persisting, or resolved (in `Review::resolved`).
//!
//! With `cost "review.cost"` the forge keeps the change's running total of what its reviews
//! spent (the marker, the record) and the comment's footer says what this review and the change
//! cost; a review that did not finish is counted from the facts its stage recorded
//! (`cost.change`, `cost.run`). Without it the last total is kept as it was.
//!
//! Its preconditions are checked before anything is kept or posted: the change's head is still
//! the one gathered (`require-head`), and that head is authored by one of the `require-author`
//! names. When one fails, nothing at all is written and the stage fails, saying which and what
//! it found; its `on-error` decides what follows.

use reviewflow_engine::contract::{
    BlocksFrom, ChildSpec, Effect, FallbackValue, LabelRule, OutputType, Role, StageContract,
    ValueType,
};

use super::words;

pub const FORMATS: &[&str] = &["markdown", "json", "rdjsonl", "sarif"];
pub const INLINE_MODES: &[&str] = &["added", "diff-context", "file", "nofilter"];
pub const BLOCK_ON: &[&str] = &["any", "error", "warning", "never"];
pub const NOT_REVIEWED: &[&str] = &["neutral", "fail"];

pub fn contract() -> StageContract {
    StageContract::new("std/post", "publishes the review and keeps sealed blobs")
        .child(
            ChildSpec::new("comment", Role::Publish, "the review comment")
                .arg(ValueType::Reference)
                .accepts(&[OutputType::Text]),
        )
        .child(
            ChildSpec::new(
                "findings",
                Role::Publish,
                "findings to publish (inline and as files)",
            )
            .arg(ValueType::Reference)
            .accepts(&[OutputType::Findings]),
        )
        .child(
            ChildSpec::new(
                "ranges",
                Role::Data,
                "changed-line ranges: findings outside the change are dropped, outside its hunks demoted",
            )
            .arg(ValueType::Reference)
            .accepts(&[OutputType::Ranges]),
        )
        .child(
            ChildSpec::new(
                "responses",
                Role::Data,
                "the author's answers the reviewer was given (std/gather's `responses`): each finding's dialogue state",
            )
            .arg(ValueType::Reference)
            .accepts(&[OutputType::Json]),
        )
        .child(
            ChildSpec::new(
                "decisions",
                Role::Data,
                "the reviewer's decisions on the refutations (std/review's `decisions`)",
            )
            .arg(ValueType::Reference)
            .accepts(&[OutputType::Json]),
        )
        .child(
            ChildSpec::new(
                "cost",
                Role::Data,
                "what the review cost (std/review's `cost`): the forge keeps the change's running total, the comment's footer says it",
            )
            .arg(ValueType::Reference)
            .accepts(&[OutputType::Json]),
        )
        .child(
            ChildSpec::new(
                "require-head",
                Role::Config,
                "refuse when the change's head is no longer this",
            )
            .arg(ValueType::Reference)
            .accepts(&[OutputType::Sha]),
        )
        .child(
            ChildSpec::new(
                "require-author",
                Role::Config,
                "refuse unless the head is authored by one of these (GitHub: the account's login; a `[bot]` name only a Bot account)",
            )
            .many(ValueType::String)
            .repeatable()
            .gates_on_author(),
        )
        .child(
            ChildSpec::new(
                "upload",
                Role::Keep,
                "keep a sealed blob in a store (a tombstone when it is absent)",
            )
            .arg(ValueType::Reference)
            .accepts(&[OutputType::Blob])
            .prop("to", ValueType::Store, true, "the store")
            .repeatable(),
        )
        .child(
            ChildSpec::new(
                "check-run",
                Role::Config,
                "also record a check run of this name (a template: `{project}` names one per project)",
            )
            .arg(ValueType::Template)
            .names_record()
            .claims_whole(&[]),
        )
        .child(
            ChildSpec::new(
                "inline",
                Role::Config,
                "also comment on the lines findings name: `added`, `diff-context`, `file` or `nofilter`",
            )
            .arg(words(INLINE_MODES)),
        )
        .child(
            ChildSpec::new(
                "block-on",
                Role::Config,
                "findings at or above this severity fail the check run (default `error`; `any`: every finding)",
            )
            .arg(words(BLOCK_ON))
            .cannot_fail(&["never"])
            .blocks_from(BlocksFrom {
                default: "error",
                from: &[("any", "info"), ("warning", "warning"), ("error", "error")],
            }),
        )
        .child(
            ChildSpec::new(
                "not-reviewed",
                Role::Config,
                "a review that did not run: `neutral` (the default) publishes it as not reviewed; `fail` then fails the run",
            )
            .arg(words(NOT_REVIEWED))
            .fails_not_reviewed(&["fail"]),
        )
        .child(
            ChildSpec::new(
                "formats",
                Role::Config,
                "files the local forge writes (default: all)",
            )
            .many(words(FORMATS)),
        )
        .output(
            "posted",
            OutputType::Bool,
            "the review was recorded",
            LabelRule::none(),
        )
        .output(
            "url",
            OutputType::Text,
            "where the review can be read",
            LabelRule::none(),
        )
        .output(
            "published",
            OutputType::Json,
            "what was published: whether the review ran (and why not), counts of findings and of new findings by severity",
            LabelRule::none(),
        )
        .fallback("posted", FallbackValue::Bool(false))
        .fallback("url", FallbackValue::Absent)
        .fallback("published", FallbackValue::Absent)
        .permission("pull-requests:write")
        .permission("issues:write")
        .permission("checks:write")
        .permission("actions:read")
        .effect(Effect::Publishes)
        .effect(Effect::Keeps)
}

/// The implementation on the local forge.
pub struct Post;

super::runtime::stage_impl!(Post, run);

async fn run(
    cx: reviewflow_engine::run::StageCx<'_>,
) -> Result<reviewflow_engine::run::StageOutputs, reviewflow_engine::run::StageError> {
    use reviewflow_engine::run::{OutputValue, Resolved, StageError, StageOutputs};

    use super::runtime::{arg, value_bytes};
    use crate::forge::{Format, ReviewFinding, filter_findings_in};
    use crate::git::Sha;
    use crate::kinds::forge::{Preconditions, check_preconditions};
    use crate::kinds::{PostRequest, ReviewState, Services};
    use crate::store::{Keep, Producer};

    let services = Services::of(&cx)?;
    let forge = services.forge(&cx)?;
    let change = forge.change().clone();
    let (comment, state) = match arg(&cx, "comment") {
        Some(Resolved::Output(Some(v))) => (
            String::from_utf8_lossy(&value_bytes(v).await?).into_owned(),
            ReviewState::Reviewed,
        ),
        Some(_) => (
            String::new(),
            ReviewState::NotReviewed(not_reviewed(&cx, "comment").unwrap_or_else(|| {
                "the review did not run: it fell back, was skipped or was gated out".into()
            })),
        ),
        None => (String::new(), ReviewState::Reviewed),
    };
    // Findings asked for but absent: the review did not run, and publishing none would read as
    // "no findings".
    let state = match (state, arg(&cx, "findings")) {
        (ReviewState::Reviewed, Some(Resolved::Output(None))) => {
            ReviewState::NotReviewed(not_reviewed(&cx, "findings").unwrap_or_else(|| {
                "the review did not run: its findings are absent (it fell back, was skipped or was gated out)"
                    .into()
            }))
        }
        (state, _) => state,
    };
    let state = super::draft::state(&change, state);
    let mut findings: Vec<ReviewFinding> = Vec::new();
    if let Some(Resolved::Output(Some(OutputValue::Json(v)))) = arg(&cx, "findings") {
        let reviewed: Vec<crate::reviewer::ReviewFinding> = serde_json::from_value(v.clone())
            .map_err(|e| StageError::failed(format!("the findings are not valid: {e}")))?;
        findings = reviewed
            .into_iter()
            .map(|f| ReviewFinding {
                rule: f.rule.unwrap_or_else(|| "review".into()),
                severity: f.severity,
                path: f.path,
                line: f.line,
                end_line: f.end_line,
                message: f.message,
                fingerprint: None,
                state: None,
                dialogue: None,
                suggestion: f.suggestion,
            })
            .collect();
    }
    let json_of = |name: &str| match arg(&cx, name) {
        Some(Resolved::Output(Some(OutputValue::Json(v)))) => Some(v.clone()),
        _ => None,
    };
    let answers = Answers {
        responses: match json_of("responses") {
            Some(v) => serde_json::from_value(v)
                .map_err(|e| StageError::failed(format!("the responses are not valid: {e}")))?,
            None => Default::default(),
        },
        decisions: match json_of("decisions") {
            Some(v) => serde_json::from_value(v)
                .map_err(|e| StageError::failed(format!("the decisions are not valid: {e}")))?,
            None => Vec::new(),
        },
    };
    let mut ranges: Vec<crate::forge::FileRanges> = Vec::new();
    if let Some(Resolved::Output(Some(OutputValue::Json(v)))) = arg(&cx, "ranges") {
        ranges = serde_json::from_value(v.clone())
            .map_err(|e| StageError::failed(format!("the ranges are not valid: {e}")))?;
        let filtered = filter_findings_in(findings, &ranges);
        if filtered.dropped + filtered.demoted > 0 {
            cx.status.status(format!(
                "{} findings on files outside the change dropped, {} outside its hunks demoted to the file",
                filtered.dropped, filtered.demoted
            ));
        }
        for why in &filtered.unsuggested {
            cx.status.status(format!("{why} (the finding is kept)"));
        }
        findings = filtered.kept;
    } else {
        // Without the change's ranges nothing proves a suggestion replaces lines the change
        // added: none is published.
        let mut removed = 0;
        for f in &mut findings {
            removed += usize::from(f.suggestion.take().is_some());
        }
        if removed > 0 {
            cx.status.status(format!(
                "{removed} {} removed: without `ranges` nothing shows they replace lines the change added (the findings are kept)",
                if removed == 1 { "suggestion" } else { "suggestions" }
            ));
        }
    }
    let expected_head = match arg(&cx, "require-head") {
        Some(Resolved::Output(Some(v))) => Sha::parse(v.render().trim())
            .map_err(|e| StageError::failed(format!("`require-head` is not a commit: {e}")))?,
        _ => change.head.clone(),
    };
    let mut formats: Vec<Format> = Vec::new();
    for c in cx.children.iter().filter(|c| c.name == "formats") {
        for a in c.args.iter().filter_map(Resolved::text) {
            formats.push(
                a.parse()
                    .map_err(|_| StageError::failed(format!("unknown format `{a}`")))?,
            );
        }
    }
    if formats.is_empty() {
        formats = Format::ALL.to_vec();
    }
    let authors: Vec<String> = cx
        .children
        .iter()
        .filter(|c| c.name == "require-author")
        .flat_map(|c| c.args.iter().filter_map(Resolved::text))
        .collect();
    let text_arg = |name: &str| arg(&cx, name).and_then(Resolved::text);
    let fails_not_reviewed = text_arg("not-reviewed").as_deref() == Some("fail");
    // Read before any write: a cost that does not parse fails the stage having written nothing.
    let cost = cost_of(&cx)?;

    // Before any write: nothing is kept or posted for a head that moved (the next run reviews
    // the new one), nor for a head nobody `require-author` names authored.
    let preconditions = Preconditions {
        head: expected_head.clone(),
        authors,
    };
    check_preconditions(forge, &preconditions).await?;

    // Keep (or tombstone) first: a posted review must never name a conversation that is not kept.
    // A review that did not run keeps nothing: the last posted review stays the one the next run
    // starts from, and so does the conversation it names.
    let mut conversation_id = None;
    let reviewed = matches!(state, ReviewState::Reviewed);
    for c in cx.children.iter().filter(|c| c.name == "upload") {
        let Some(Resolved::Store(store)) = c.prop("to") else {
            continue;
        };
        if !reviewed {
            cx.status.status(format!(
                "not reviewed, so nothing kept in store `{store}`: the conversation the last posted review names stays"
            ));
            continue;
        }
        let (opened, name) = services.store(&cx, store)?;
        let mut producer = Producer::new();
        producer.insert("head".into(), change.head.to_string());
        producer.insert("run".into(), cx.run_id.to_string());
        let bytes = match c.args.first() {
            Some(Resolved::Output(Some(v))) => Some(value_bytes(v).await?),
            _ => None,
        };
        let item = match &bytes {
            Some(b) => Keep::Blob(b),
            None => Keep::Tombstone,
        };
        let kept = opened
            .store
            .keep(&name, item, producer)
            .await
            .map_err(|e| StageError::failed(format!("cannot keep in store `{store}`: {e}")))?;
        cx.status.status(kept.description);
        // The posted review names the blob by its digest, the same in every store and known
        // before an artifact is uploaded: `std/restore` accepts only these bytes.
        if let Some(b) = &bytes {
            conversation_id = Some(crate::conversation::blob_id(b));
        }
    }

    // Finding identity (docs/findings.md): each finding's fingerprint at the reviewed head, its
    // state against the baseline the last posted review kept, and the baseline to keep now.
    let identified = identify(
        forge,
        &services.checkout,
        &change.head,
        findings,
        &state,
        &answers,
    )
    .await;
    if let Some(line) = &identified.status {
        cx.status.status(line.clone());
    }
    // The change's new total: what the review says it is now, else the last one kept, carried
    // forward so that a run without a cost never loses what earlier ones spent.
    let spent = match &cost {
        Some(c) => Some(c.change),
        None => identified.spent,
    };
    let fail_not_reviewed =
        fails_not_reviewed && matches!(state, ReviewState::NotReviewed(_)) && review_failed(&cx);
    let request = PostRequest {
        review: crate::forge::Review {
            comment,
            findings: identified.findings,
            base: change.base.clone(),
            head: change.head.clone(),
            run_id: cx.run_id.to_string(),
            conversation_id,
            reviewer: "reviewflow".into(),
            resolved: identified.resolved,
        },
        state,
        expected_head,
        ranges,
        pipeline: services.pipeline.clone(),
        formats,
        check_run: text_arg("check-run"),
        inline: text_arg("inline"),
        block_on: text_arg("block-on").unwrap_or_else(|| "error".into()),
        fail_not_reviewed,
        baseline: identified.baseline,
        spent,
        cost: cost.and_then(|c| c.run),
    };
    let posted = forge.post(&request, &cx.status).await?;
    if posted.recorded {
        cx.status.status(format!(
            "posted the review of {} to {}",
            change.head.short(),
            posted.location
        ));
    } else {
        cx.status.status(format!(
            "not reviewed, so no review written to {}: the last posted review stays the one the next run starts from",
            posted.location
        ));
    }
    let mut out = StageOutputs::new();
    out.insert("posted".into(), OutputValue::Bool(posted.recorded));
    out.insert("url".into(), OutputValue::Text(posted.location));
    // What `reviewflow run --fail-on` judges, the same for every forge.
    let not_reviewed = match &request.state {
        ReviewState::Reviewed => None,
        ReviewState::NotReviewed(reason) => Some(reason.as_str()),
    };
    let published = super::published::Published::of(&request.review.findings, not_reviewed);
    let published = serde_json::to_value(&published)
        .map_err(|e| StageError::failed(format!("cannot encode `published`: {e}")))?;
    out.insert("published".into(), OutputValue::Json(published));
    // `not-reviewed "fail"`: a review that failed is published as not reviewed (its spend
    // kept), and then a failure, so that the run's own status does not pass a change nobody
    // reviewed either. A review skipped by a `when` (a draft) is the pipeline's choice.
    if let (ReviewState::NotReviewed(reason), true) = (&request.state, fail_not_reviewed) {
        return Err(StageError::failed(format!(
            "published as not reviewed (`not-reviewed \"fail\"`): {reason}"
        )));
    }
    Ok(out)
}

/// This round's dialogue: the responses the reviewer was given and its decisions on them.
struct Answers {
    responses: crate::forge::Responses,
    decisions: Vec<crate::forge::Decision>,
}

/// The findings with their fingerprints and states, what they resolved, the baseline to keep,
/// and a status line.
struct Identified {
    findings: Vec<crate::forge::ReviewFinding>,
    resolved: Vec<crate::forge::ReviewFinding>,
    baseline: Option<crate::forge::Baseline>,
    /// The change's running total the last posted review keeps.
    spent: Option<crate::reviewer::usage::Usage>,
    status: Option<String>,
}

/// Fingerprints `findings` from the files at `head` in the checkout's git objects and compares
/// them with the last posted review's baseline. Never fails the post: what cannot be read is
/// said in the status line (the message recipe, or nothing compared). A review that did not run
/// compares nothing and keeps the last baseline again.
async fn identify(
    forge: &dyn crate::kinds::Forge,
    checkout: &std::path::Path,
    head: &crate::git::Sha,
    mut findings: Vec<crate::forge::ReviewFinding>,
    state: &crate::kinds::ReviewState,
    answers: &Answers,
) -> Identified {
    use crate::forge::baseline::{LOCAL_BASELINE_BYTES, compare};
    use crate::forge::identity::moved_prints;
    use crate::forge::{Baseline, StateCounts, fingerprint_all, read_head_files};

    let mut notes = Vec::new();
    let (previous, spent) = match forge.last_posted().await {
        Ok(last) => last.map_or((None, None), |l| (l.baseline, l.spent)),
        Err(e) => {
            notes.push(format!(
                "the last posted review cannot be read ({e}): nothing compared"
            ));
            (None, None)
        }
    };
    if !matches!(state, crate::kinds::ReviewState::Reviewed) {
        return Identified {
            findings,
            resolved: Vec::new(),
            baseline: previous,
            spent,
            status: None,
        };
    }
    let paths: Vec<String> = findings
        .iter()
        .filter(|f| f.line.is_some())
        .map(|f| f.path.clone())
        .collect();
    let (repo, sha) = (checkout.to_path_buf(), head.clone());
    let read = tokio::task::spawn_blocking(move || {
        read_head_files(&repo, &sha, paths.iter().map(String::as_str))
    })
    .await;
    let files = match read {
        Ok((files, None)) => files,
        Ok((files, Some(e))) => {
            notes.push(format!(
                "files at the head {} cannot be read from the checkout ({e}): findings on them are identified by their message",
                head.short()
            ));
            files
        }
        Err(e) => {
            notes.push(format!(
                "a worker thread failed ({e}): findings are identified by their message"
            ));
            Default::default()
        }
    };
    fingerprint_all(&mut findings, &files);
    let moved = moved_prints(&findings, &files);
    let mut resolved = compare(&mut findings, &moved, previous.as_ref());
    let ignored = crate::forge::converse(
        &mut findings,
        &mut resolved,
        previous.as_ref(),
        &answers.responses,
        &answers.decisions,
    );
    if ignored.decisions > 0 {
        notes.push(format!(
            "{} of the reviewer's decisions name no refutation it was given, and were ignored",
            ignored.decisions
        ));
    }
    let baseline = Baseline::of(&findings, &moved, LOCAL_BASELINE_BYTES);
    if let Some(c) = StateCounts::of(&findings, &resolved) {
        notes.push(format!("{} since the last review", c.phrase()));
    }
    Identified {
        findings,
        resolved,
        baseline: Some(baseline),
        spent,
        status: (!notes.is_empty()).then(|| format!("finding identity: {}", notes.join("; "))),
    }
}

/// Why the value of `child` is absent, in the words of the stage that did not produce it:
/// `` the review did not run: `review` fell back: no review after 2 tries: … ``. The reason is
/// the one the manifest keeps (redacted; a reviewer's never quotes what its program printed),
/// and becomes the check run's title.
fn not_reviewed(cx: &reviewflow_engine::run::StageCx<'_>, child: &str) -> Option<String> {
    let unfinished = unfinished(cx, child)?;
    // One line: a reason may hold line breaks, and a title holds none.
    let line: String = unfinished
        .to_string()
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    Some(format!("the review did not run: {line}"))
}

/// Whether the review that did not run failed (it fell back, a missing secret disabled it)
/// rather than was skipped: any producer of an absent `comment` or `findings` that did not
/// finish but was not skipped, or none known.
fn review_failed(cx: &reviewflow_engine::run::StageCx<'_>) -> bool {
    use reviewflow_engine::run::{Outcome, Resolved};
    let absent: Vec<&str> = ["comment", "findings"]
        .into_iter()
        .filter(|c| matches!(super::runtime::arg(cx, c), Some(Resolved::Output(None))))
        .collect();
    let known: Vec<_> = absent.iter().filter_map(|c| unfinished(cx, c)).collect();
    known.is_empty() || known.iter().any(|u| u.outcome != Outcome::Skipped)
}

/// The producer of `child`'s value, when it did not finish.
fn unfinished<'a>(
    cx: &'a reviewflow_engine::run::StageCx<'_>,
    child: &str,
) -> Option<&'a reviewflow_engine::run::Unfinished> {
    use reviewflow_engine::model::Value;
    let producer = cx
        .stage
        .children
        .iter()
        .filter(|c| c.name.value == child)
        .flat_map(|c| c.args.iter())
        .find_map(|a| match &a.value {
            Value::Reference(r) => Some(r.stage.as_str()),
            _ => None,
        })?;
    cx.unfinished.iter().find(|u| u.stage == producer)
}

/// What the review cost, as `std/post` reads it: this run's part, when known, and the change's
/// total with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Spend {
    run: Option<crate::reviewer::usage::Usage>,
    change: crate::reviewer::usage::Usage,
}

/// The `cost` child's value: the review's `cost` output, or, when the review did not finish (it
/// fell back after spending, its budget was spent), the totals its stage recorded as facts.
/// `None` without the child, or when the review recorded no total (it was skipped).
fn cost_of(
    cx: &reviewflow_engine::run::StageCx<'_>,
) -> Result<Option<Spend>, reviewflow_engine::run::StageError> {
    use reviewflow_engine::run::{OutputValue, Resolved, StageError};

    match super::runtime::arg(cx, "cost") {
        Some(Resolved::Output(Some(OutputValue::Json(v)))) => spend_of_output(v)
            .map(Some)
            .map_err(|e| StageError::failed(format!("the cost is not valid: {e}"))),
        Some(Resolved::Output(None)) => {
            Ok(unfinished(cx, "cost").and_then(|u| spend_of_facts(&u.facts)))
        }
        _ => Ok(None),
    }
}

/// What std/review's `cost` output says.
fn spend_of_output(value: &serde_json::Value) -> Result<Spend, serde_json::Error> {
    let cost: crate::reviewer::cost::Cost = serde_json::from_value(value.clone())?;
    Ok(Spend {
        run: Some(cost.run),
        change: cost.change,
    })
}

/// What the facts of a review stage that did not finish say (`cost.change`, `cost.run`, as
/// [`crate::reviewer::usage::Usage::fact`] writes them); `None` without the change's total.
fn spend_of_facts(facts: &std::collections::BTreeMap<String, String>) -> Option<Spend> {
    use crate::reviewer::cost::{CHANGE_FACT, RUN_FACT};
    use crate::reviewer::usage::Usage;
    let fact = |name: &str| facts.get(name).and_then(|f| Usage::parse_fact(f));
    Some(Spend {
        run: fact(RUN_FACT),
        change: fact(CHANGE_FACT)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reviewer::usage::{Usage, Usd};

    fn used(tokens: u64, micros: Option<u64>) -> Usage {
        Usage {
            input_tokens: tokens,
            output_tokens: 10,
            cached_tokens: 0,
            cost_usd: micros.map(Usd),
        }
    }

    #[test]
    fn the_cost_output_gives_the_run_and_the_change() {
        let cost = crate::reviewer::cost::Cost {
            run: used(100, Some(1_000)),
            change: used(300, None),
            tries: vec![Some(used(100, Some(1_000))), None],
        };
        let value = serde_json::to_value(&cost).unwrap();
        assert_eq!(
            spend_of_output(&value).unwrap(),
            Spend {
                run: Some(cost.run),
                change: cost.change,
            }
        );
        assert!(spend_of_output(&serde_json::json!({"run": 1})).is_err());
    }

    #[test]
    fn a_review_that_did_not_finish_is_counted_from_its_facts() {
        let facts = |pairs: &[(&str, String)]| {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.clone()))
                .collect::<std::collections::BTreeMap<_, _>>()
        };
        let (run, change) = (used(100, Some(1_000)), used(900, None));
        assert_eq!(
            spend_of_facts(&facts(&[
                ("cost.run", run.fact()),
                ("cost.change", change.fact()),
                ("try.1.usage", run.fact()),
            ])),
            Some(Spend {
                run: Some(run),
                change,
            })
        );
        // The run's part unreadable: the change's total still counts.
        assert_eq!(
            spend_of_facts(&facts(&[
                ("cost.run", "in=[redacted:key]".to_owned()),
                ("cost.change", change.fact()),
            ])),
            Some(Spend { run: None, change })
        );
        // No total recorded (the review spent nothing it could say): nothing to count.
        assert_eq!(spend_of_facts(&facts(&[("cost.run", run.fact())])), None);
        assert_eq!(spend_of_facts(&facts(&[])), None);
    }
}
