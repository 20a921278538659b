//! `std/gather`: what is under review. Resolves base and head to commit SHAs once, at the
//! start; the diff cut to a path; the diff since the last posted review; changed-line ranges;
//! size tiers and a gate. Everything that comes from the change is labelled untrusted; the SHAs
//! are validated hex and carry no label.
//!
//! When the head is the one the last posted review names, there is nothing new to review: the
//! stage asks the run to stop (docs/executor.md, "A stage that ends the run: stop"). Under
//! `--force` the run goes on, and `since-last-review` is the whole diff.

use reviewflow_engine::contract::{
    Bound, ChildSpec, Effect, LabelAdd, LabelRule, OutputType, Role, StageContract, ValueType,
};

use super::words;

pub const TIERS: &[&str] = &["green", "yellow", "orange", "red", "black"];

/// The largest diff a gather may be told to read (`max-bytes`): 16 MiB by default.
const MAX_BYTES: Bound = Bound::bytes(
    1,
    64 << 20,
    "the diff is held whole in memory and handed to a reviewer whose model reads a few megabytes at most: past 64 MiB the size limit no longer keeps a run's memory bounded, and the review covers less than the limit says",
);

pub fn contract() -> StageContract {
    let untrusted = || LabelRule::none().adding(LabelAdd::Untrusted);
    StageContract::new(
        "std/gather",
        "the change under review: diff, commits, size tier",
    )
    .child(
        ChildSpec::new(
            "path",
            Role::Config,
            "cut the diff to files under this path",
        )
        .arg(ValueType::Template)
        .narrows(),
    )
    .child(ChildSpec::new(
        "since-last-review",
        Role::Config,
        "also produce the diff from the head the last posted review names to this head",
    ))
    .child(
        ChildSpec::new(
            "responses",
            Role::Config,
            "also read the author's answers to the last review's findings (GitHub: the pull request's author's, and these logins'; GitLab: the merge request's author's, and these usernames')",
        )
        .any(ValueType::String),
    )
    .child(
        ChildSpec::new(
            "base",
            Role::Config,
            "the base revision (default: the merge base with the default branch); the local forge only",
        )
        .arg(ValueType::Template),
    )
    .child(
        ChildSpec::new(
            "head",
            Role::Config,
            "the head revision (default: HEAD); the local forge only",
        )
            .arg(ValueType::Template),
    )
    .child(
        ChildSpec::new(
            "gate",
            Role::Config,
            "what a size tier does: `gate halt=\"black\" warn=\"red\"`",
        )
        .prop(
            "halt",
            words(TIERS),
            false,
            "halt the run from this tier up",
        )
        .prop("warn", words(TIERS), false, "warn from this tier up")
        .halts("halt"),
    )
    .child(
        ChildSpec::new("max-bytes", Role::Config, "the largest diff read, in bytes")
            .arg(ValueType::Int(MAX_BYTES)),
    )
    .output(
        "diff",
        OutputType::Diff,
        "the unified diff base..head, cut to `path`",
        untrusted(),
    )
    .output(
        "since-last-review",
        OutputType::Diff,
        "the diff from the last reviewed head to this head (the whole diff when that head is gone)",
        untrusted(),
    )
    .part("since-last-review")
    .output(
        "responses",
        OutputType::Json,
        "the author's answers to the last review's findings that no reviewer was given yet (with `responses`)",
        untrusted(),
    )
    .output(
        "ranges",
        OutputType::Ranges,
        "changed-line ranges per file",
        untrusted(),
    )
    .output("title", OutputType::Text, "the change's title", untrusted())
    .output(
        "body",
        OutputType::Text,
        "the change's description",
        untrusted(),
    )
    .output(
        "branch",
        OutputType::Text,
        "the head branch's name",
        untrusted(),
    )
    .output(
        "base",
        OutputType::Sha,
        "the base commit",
        LabelRule::none(),
    )
    .output(
        "head",
        OutputType::Sha,
        "the head commit, resolved once",
        LabelRule::none(),
    )
    .output(
        "last-reviewed",
        OutputType::Sha,
        "the head the last posted review names",
        LabelRule::none(),
    )
    .change_commit("head")
    .change_commit("last-reviewed")
    // Our own record, as trusted as `last-reviewed`: the forge keeps it only where the review's
    // author is trusted (the marker of a trusted comment, the record the run wrote).
    .output(
        "spent",
        OutputType::Json,
        "what the change's reviews spent so far, kept with the last posted review: tokens in, out and cached, and the cost in dollars (`null` when not reported); nothing when none kept it",
        LabelRule::none(),
    )
    .output(
        "tier",
        OutputType::Text,
        "the size tier: green, yellow, orange, red or black",
        LabelRule::none(),
    )
    .output(
        "changed",
        OutputType::Bool,
        "the diff is not empty",
        LabelRule::none(),
    )
    .output(
        "draft",
        OutputType::Bool,
        "the forge marks the change a draft (`when=\"!gather.draft\"` skips a stage until it is marked ready)",
        LabelRule::none(),
    )
    // `std/post` says a draft first when the review did not run (`stages/draft.rs`).
    .skip_reported("draft")
    .permission("contents:read")
    .permission("pull-requests:read")
    .effect(Effect::Reads)
}

/// The implementation: the change the run opened, gathered once.
pub struct Gather;

super::runtime::stage_impl!(Gather, run);

fn tier_of(word: Option<String>) -> Option<crate::diff::Tier> {
    use crate::diff::Tier;
    match word.as_deref()? {
        "green" => Some(Tier::Green),
        "yellow" => Some(Tier::Yellow),
        "orange" => Some(Tier::Orange),
        "red" => Some(Tier::Red),
        "black" => Some(Tier::Black),
        _ => None,
    }
}

async fn run(
    cx: reviewflow_engine::run::StageCx<'_>,
) -> Result<reviewflow_engine::run::StageOutputs, reviewflow_engine::run::StageError> {
    use reviewflow_engine::run::{OutputValue, Resolved, StageError, StageOutputs};

    use super::runtime::{arg, flag};
    use crate::gather::{GateOutcome, GatherConfig};
    use crate::kinds::Services;

    let services = Services::of(&cx)?;
    let forge = services.forge(&cx)?;
    let mut config = GatherConfig {
        path: arg(&cx, "path").and_then(Resolved::text),
        since_last_review: flag(&cx, "since-last-review"),
        ..GatherConfig::default()
    };
    if let Some(Resolved::Int(n)) = arg(&cx, "max-bytes") {
        config.max_bytes = u64::try_from(*n).unwrap_or(0);
    }
    if let Some(gate) = cx.children.iter().find(|c| c.name == "gate") {
        config.gate.halt = tier_of(gate.prop("halt").and_then(Resolved::text));
        config.gate.warn = tier_of(gate.prop("warn").and_then(Resolved::text));
    }
    let posted = forge.last_posted().await?;
    // A marker with no head is of no posted review: there is no last head to start from.
    let last = posted.as_ref().and_then(|p| p.head.clone());
    let mut gathered = forge.gather(&config, last.as_ref()).await?;
    // Already reviewed: a second review would post the same review again. The same test on every
    // forge, on what it gathered.
    let already = gathered.last_reviewed.as_ref() == Some(&gathered.head);
    let stopping =
        already && cx.request_stop(crate::gather::notes::already_reviewed(&gathered.head));
    if already
        && !stopping
        && let Some(since) = gathered.since_last_review.as_mut()
    {
        since.clone_from(&gathered.diff);
        gathered.since_note = Some(crate::gather::notes::forced_whole_diff());
    }
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    cx.status.status(format!(
        "{}..{}: {}, {}, tier {}",
        gathered.base.short(),
        gathered.head.short(),
        plural(gathered.files as usize, "file", "files"),
        plural(gathered.lines as usize, "line", "lines"),
        gathered.tier
    ));
    // When stopping, the engine says why once; nothing is reviewed, so the size gate has
    // nothing to warn about or halt.
    if !stopping {
        if let Some(note) = &gathered.since_note {
            cx.status.status(note.clone());
        }
        if let Some(line) = super::draft::gathered(forge.change(), &cx.stage.name.value) {
            cx.status.status(line);
        }
        match &gathered.gate_outcome {
            GateOutcome::Pass => {}
            GateOutcome::Warn(reason) => cx.status.status(format!("warning: {reason}")),
            GateOutcome::Halt(reason) => return Err(StageError::failed(reason.clone())),
        }
    }
    let mut out = StageOutputs::new();
    if let Some(child) = cx.children.iter().find(|c| c.name == "responses") {
        let from: Vec<String> = child.args.iter().filter_map(Resolved::text).collect();
        let responses = responses(&cx, forge, posted.as_ref(), &from).await?;
        let json = serde_json::to_value(&responses)
            .map_err(|e| StageError::failed(format!("cannot encode the responses: {e}")))?;
        out.insert("responses".into(), OutputValue::Json(json));
    }
    out.insert("diff".into(), OutputValue::Bytes(gathered.diff));
    if let Some(since) = gathered.since_last_review {
        out.insert("since-last-review".into(), OutputValue::Bytes(since));
    }
    let ranges = serde_json::to_value(&gathered.ranges)
        .map_err(|e| StageError::failed(format!("cannot encode the ranges: {e}")))?;
    out.insert("ranges".into(), OutputValue::Json(ranges));
    out.insert("title".into(), OutputValue::Text(gathered.title));
    out.insert("body".into(), OutputValue::Text(gathered.body));
    if let Some(branch) = gathered.branch {
        out.insert("branch".into(), OutputValue::Text(branch));
    }
    out.insert("base".into(), OutputValue::Text(gathered.base.to_string()));
    out.insert("head".into(), OutputValue::Text(gathered.head.to_string()));
    if let Some(last) = gathered.last_reviewed {
        out.insert("last-reviewed".into(), OutputValue::Text(last.to_string()));
    }
    // The change's total: nothing spent when no earlier review kept one.
    let spent = posted
        .as_ref()
        .and_then(|p| p.spent)
        .unwrap_or_else(crate::reviewer::usage::Usage::nothing);
    let spent = serde_json::to_value(spent)
        .map_err(|e| StageError::failed(format!("cannot encode what was spent: {e}")))?;
    out.insert("spent".into(), OutputValue::Json(spent));
    out.insert("tier".into(), OutputValue::Text(gathered.tier.to_string()));
    out.insert("changed".into(), OutputValue::Bool(gathered.changed));
    out.insert("draft".into(), OutputValue::Bool(forge.change().draft));
    Ok(out)
}

/// The author's responses to the last posted review's findings that no reviewer was given yet
/// (`docs/findings.md`, "Answering a finding"), with a status line of what was read and what
/// was left out. No posted review, or one that kept no baseline: nothing to answer.
async fn responses(
    cx: &reviewflow_engine::run::StageCx<'_>,
    forge: &dyn crate::kinds::Forge,
    posted: Option<&crate::kinds::PostedMarker>,
    from: &[String],
) -> Result<crate::forge::Responses, reviewflow_engine::run::StageError> {
    use crate::forge::Responses;
    let Some((posted, baseline)) = posted.and_then(|p| Some((p, p.baseline.as_ref()?))) else {
        return Ok(Responses::default());
    };
    let read = forge.responses(posted, from).await?;
    let total = read.len();
    let (responses, left) = Responses::matched(read, &baseline.findings);
    if total > 0 {
        let mut line = format!(
            "responses: {} of {total} read are new answers to the last review's findings",
            responses.responses.len()
        );
        for (n, why) in [
            (left.unknown, "name no finding of it"),
            (left.seen, "were answered already"),
            (left.over, "are past the 100 a run reads"),
        ] {
            if n > 0 {
                line.push_str(&format!("; {n} {why}"));
            }
        }
        cx.status.status(line);
    }
    Ok(responses)
}
