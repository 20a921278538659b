//! `std/post`: publishes the review. On GitHub: one upserted comment with a metadata marker,
//! a check run, inline comments on changed lines. Locally: markdown, JSON, rdjsonl and SARIF
//! in `.reviewflow/forge/<change>/`. Refuses when the change's head moved since gather. Uploads
//! sealed blobs to a store, or a tombstone when there is none.

use reviewflow_engine::contract::{
    ChildSpec, Effect, FallbackValue, LabelRule, OutputType, Role, StageContract, ValueType,
};

use super::words;

pub const FORMATS: &[&str] = &["markdown", "json", "rdjsonl", "sarif"];

pub fn contract() -> StageContract {
    StageContract::new("std/post", "publishes the review and keeps sealed blobs")
        .child(
            ChildSpec::new("comment", Role::Publish, "the review comment")
                .arg(ValueType::Reference),
        )
        .child(
            ChildSpec::new(
                "findings",
                Role::Publish,
                "findings to publish (inline and as files)",
            )
            .arg(ValueType::Reference),
        )
        .child(
            ChildSpec::new(
                "require-head",
                Role::Config,
                "refuse when the change's head is no longer this",
            )
            .arg(ValueType::Reference),
        )
        .child(
            ChildSpec::new(
                "upload",
                Role::Keep,
                "keep a sealed blob in a store (a tombstone when it is absent)",
            )
            .arg(ValueType::Reference)
            .prop("to", ValueType::Store, true, "the store")
            .repeatable(),
        )
        .child(
            ChildSpec::new(
                "check-run",
                Role::Config,
                "also record a check run of this name",
            )
            .arg(ValueType::String),
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
        .fallback("posted", FallbackValue::Bool(false))
        .fallback("url", FallbackValue::Absent)
        .permission("pull-requests:write")
        .permission("issues:write")
        .permission("checks:write")
        .permission("actions:read")
        .effect(Effect::Publishes)
        .effect(Effect::Keeps)
}
