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
                "ranges",
                Role::Data,
                "changed-line ranges: findings outside the change are dropped, outside its hunks demoted",
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

/// The implementation on the local forge.
pub struct Post;

super::runtime::stage_impl!(Post, run);

async fn run(
    cx: reviewflow_engine::run::StageCx<'_>,
) -> Result<reviewflow_engine::run::StageOutputs, reviewflow_engine::run::StageError> {
    use reviewflow_engine::run::{OutputValue, Resolved, StageError, StageOutputs};

    use super::runtime::{arg, blocking, services, store_for, value_bytes};
    use crate::forge::{Format, ReviewFinding, filter_findings_in};
    use crate::git::Sha;
    use crate::store::{BlobSource, Producer};

    let services = services(&cx)?;
    let change = services.change.clone();
    let comment = match arg(&cx, "comment") {
        Some(Resolved::Output(Some(v))) => {
            String::from_utf8_lossy(&value_bytes(v).await?).into_owned()
        }
        _ => String::new(),
    };
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
            })
            .collect();
    }
    if let Some(Resolved::Output(Some(OutputValue::Json(v)))) = arg(&cx, "ranges") {
        let ranges: Vec<crate::forge::FileRanges> = serde_json::from_value(v.clone())
            .map_err(|e| StageError::failed(format!("the ranges are not valid: {e}")))?;
        let filtered = filter_findings_in(findings, &ranges);
        if filtered.dropped + filtered.demoted > 0 {
            cx.status.status(format!(
                "{} findings on files outside the change dropped, {} outside its hunks demoted to the file",
                filtered.dropped, filtered.demoted
            ));
        }
        findings = filtered.kept;
    }
    let expected_head = match arg(&cx, "require-head") {
        Some(Resolved::Output(Some(v))) => Sha::parse(v.render().trim())
            .map_err(|e| StageError::failed(format!("`require-head` is not a commit: {e}")))?,
        _ => change.head().clone(),
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

    // Keep (or tombstone) first: a posted review must never name a conversation that is not kept.
    let mut conversation_id = None;
    for c in cx.children.iter().filter(|c| c.name == "upload") {
        let Some(Resolved::Store(store)) = c.prop("to") else {
            continue;
        };
        let (store, name, decl) = store_for(&cx, services, store)?;
        let keep_last = decl.retain_count.as_ref().map(|c| c.value as usize);
        let max_age = decl
            .retain_age
            .as_ref()
            .map(|a| std::time::Duration::from_millis(a.value));
        let retainer = (store.clone(), name.clone());
        let mut producer = Producer::new();
        producer.insert("forge".into(), "local".into());
        producer.insert("head".into(), change.head().to_string());
        producer.insert("run".into(), cx.run_id.to_string());
        match c.args.first() {
            Some(Resolved::Output(Some(v))) => {
                let bytes = value_bytes(v).await?;
                let entry = blocking(move || {
                    store
                        .put(&name, BlobSource::Bytes(&bytes), producer)
                        .map_err(|e| {
                            StageError::failed(format!("cannot keep the sealed blob: {e}"))
                        })
                })
                .await?;
                cx.status.status(format!(
                    "kept the sealed conversation as {}",
                    entry.id.as_str()
                ));
                conversation_id = Some(entry.id.as_str().to_string());
            }
            _ => {
                blocking(move || {
                    store
                        .put_tombstone(&name, producer)
                        .map_err(|e| StageError::failed(format!("cannot write the tombstone: {e}")))
                })
                .await?;
                cx.status.status(
                    "no sealed conversation: kept a tombstone, so the next review starts fresh",
                );
            }
        }
        if keep_last.is_some() || max_age.is_some() {
            // Retention runs after the new entry is kept: it never removes the newest.
            let (store, name) = retainer;
            let report = blocking(move || {
                store
                    .retain(&name, keep_last, max_age)
                    .map_err(|e| StageError::failed(format!("cannot apply retention: {e}")))
            })
            .await?;
            if !report.removed.is_empty() {
                cx.status.status(format!(
                    "retention removed {} older entries",
                    report.removed.len()
                ));
            }
        }
    }

    let review = crate::forge::Review {
        comment,
        findings,
        base: change.base().clone(),
        head: change.head().clone(),
        run_id: cx.run_id.to_string(),
        conversation_id,
        reviewer: "reviewflow".into(),
    };
    let forge = services.forge.clone();
    let posted = blocking(move || {
        forge
            .post_formats(&change, &review, &expected_head, &formats)
            .map_err(|e| StageError::failed(e.to_string()))
    })
    .await?;
    cx.status.status(format!(
        "posted the review of {} to {}",
        posted.record.head.short(),
        posted.location.display()
    ));
    let mut out = StageOutputs::new();
    out.insert("posted".into(), OutputValue::Bool(true));
    out.insert(
        "url".into(),
        OutputValue::Text(posted.location.display().to_string()),
    );
    Ok(out)
}
