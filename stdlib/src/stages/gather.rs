//! `std/gather`: what is under review. Resolves base and head to commit SHAs once, at the
//! start; the diff cut to a path; the diff since the last posted review; changed-line ranges;
//! size tiers and a gate. Everything that comes from the change is labelled untrusted; the SHAs
//! are validated hex and carry no label.

use reviewflow_engine::contract::{
    ChildSpec, Effect, LabelAdd, LabelRule, OutputType, Role, StageContract, ValueType,
};

use super::words;

pub const TIERS: &[&str] = &["green", "yellow", "orange", "red", "black"];

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
        .arg(ValueType::Template),
    )
    .child(ChildSpec::new(
        "since-last-review",
        Role::Config,
        "also produce the diff from the head the last posted review names to this head",
    ))
    .child(
        ChildSpec::new(
            "base",
            Role::Config,
            "the base revision (default: the merge base with the default branch)",
        )
        .arg(ValueType::Template),
    )
    .child(
        ChildSpec::new("head", Role::Config, "the head revision (default: HEAD)")
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
        .prop("warn", words(TIERS), false, "warn from this tier up"),
    )
    .child(
        ChildSpec::new("max-bytes", Role::Config, "the largest diff read, in bytes")
            .arg(ValueType::Int),
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
    .permission("contents:read")
    .permission("pull-requests:read")
    .effect(Effect::Reads)
}
