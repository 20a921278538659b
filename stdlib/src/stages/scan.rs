//! `std/scan`: looks for credentials in what is about to be kept or published: JWT-shaped
//! tokens, GitHub, Anthropic, OpenAI and AWS keys, private key blocks, and the exact values (and
//! base64 forms) of every secret of the run. The secret values are compared in-process and never
//! leave it; `clean` carries no label. `clean` is false on any hit or any error.
//!
//! The log names what was scanned: one line per hit (`github: review.conversation:3:7`), then
//! one line per target (`review.conversation: clean`, `review.conversation: 2 hits: not clean`),
//! so that a clean scan of the conversation is not read as a verdict on the diff.

use reviewflow_engine::contract::{
    ChildSpec, FallbackValue, LabelRule, OutputType, Role, StageContract, ValueType,
};

use super::words;
use crate::detect::DetectorId;

/// The detectors `detect` may name: every detector of the registry's ids but `secret-value`,
/// which looks for the run's own secret values rather than a kind of credential. Read from
/// [`DetectorId::ALL`], so a detector added there is namable here without a second list.
fn detectors() -> Vec<&'static str> {
    DetectorId::ALL
        .into_iter()
        .filter(|d| *d != DetectorId::SecretValue)
        .map(DetectorId::as_str)
        .collect()
}

pub fn contract() -> StageContract {
    StageContract::new(
        "std/scan",
        "scans values for credentials before they are kept",
    )
    .child(
        ChildSpec::new("target", Role::Data, "the values to scan")
            .many(ValueType::Reference)
            .required(),
    )
    .child(
        ChildSpec::new(
            "detect",
            Role::Config,
            "detectors to run (default: all); the run's own secret values are always searched",
        )
        .many(words(&detectors())),
    )
    .output(
        "clean",
        OutputType::Bool,
        "no detector found anything and nothing failed",
        LabelRule::none(),
    )
    .output(
        "hits",
        OutputType::Findings,
        "detector and location of each hit (never the value)",
        LabelRule::none(),
    )
    .vets("target", "clean")
    .vets_narrowed_by("detect")
    .fallback("clean", FallbackValue::Bool(false))
    .fallback("hits", FallbackValue::Absent)
}

/// The implementation. The run's own secret values never reach this stage: by the time a value
/// is kept for later stages the executor has replaced each of them with `[redacted:<name>]`, so a
/// redaction marker is itself a hit (the value held a secret of the run).
pub struct Scan;

super::runtime::stage_impl!(Scan, run);

/// What the executor writes in place of a secret of the run.
const REDACTION_MARKER: &[u8] = b"[redacted:";

async fn run(
    cx: reviewflow_engine::run::StageCx<'_>,
) -> Result<reviewflow_engine::run::StageOutputs, reviewflow_engine::run::StageError> {
    use reviewflow_engine::run::{OutputValue, Resolved, StageError, StageOutputs};

    use super::runtime::value_bytes;
    use crate::detect::{DetectorId, scan};

    let mut enabled: Vec<DetectorId> = Vec::new();
    for c in cx.children.iter().filter(|c| c.name == "detect") {
        for a in c.args.iter().filter_map(Resolved::text) {
            let id = a
                .parse::<DetectorId>()
                .map_err(|_| StageError::failed(format!("unknown detector `{a}`")))?;
            enabled.push(id);
        }
    }
    if enabled.is_empty() {
        enabled = DetectorId::ALL.to_vec();
    }
    let names: Vec<String> = cx
        .stage
        .children_named("target")
        .flat_map(|c| c.args.iter())
        .map(|v| match &v.value {
            reviewflow_engine::model::Value::Reference(r) => r.to_string(),
            _ => "target".into(),
        })
        .collect();
    let targets: Vec<&Resolved> = cx
        .children
        .iter()
        .filter(|c| c.name == "target")
        .flat_map(|c| c.args.iter())
        .collect();
    let mut hits = Vec::new();
    for (i, t) in targets.into_iter().enumerate() {
        let before = hits.len();
        let name = names
            .get(i)
            .cloned()
            .unwrap_or_else(|| format!("target-{i}"));
        let Resolved::Output(Some(value)) = t else {
            cx.status.status(format!("{name}: absent, nothing to scan"));
            continue;
        };
        let bytes = value_bytes(value).await?;
        let enabled = enabled.clone();
        let (found, marker) = tokio::task::spawn_blocking(move || {
            let found = scan(&bytes, &[], &enabled);
            let marker = memchr::memmem::find(&bytes, REDACTION_MARKER);
            (found, marker)
        })
        .await
        .map_err(|e| StageError::failed(format!("the scan thread failed: {e}")))?;
        for h in found {
            cx.status.status(format!(
                "{}: {name}:{}:{}",
                h.detector.as_str(),
                h.line,
                h.column
            ));
            hits.push(serde_json::json!({
                "detector": h.detector.as_str(),
                "target": name,
                "line": h.line,
                "column": h.column,
            }));
        }
        if let Some(offset) = marker {
            cx.status.status(format!(
                "secret-value: {name} held a secret of the run (redacted at byte {offset})"
            ));
            hits.push(serde_json::json!({
                "detector": "secret-value",
                "target": name,
                "offset": offset,
            }));
        }
        cx.status.status(target_status(&name, hits.len() - before));
    }
    let clean = hits.is_empty();
    let mut out = StageOutputs::new();
    out.insert("clean".into(), OutputValue::Bool(clean));
    out.insert(
        "hits".into(),
        OutputValue::Json(serde_json::Value::Array(hits)),
    );
    Ok(out)
}

/// The status line that ends the scan of one target: it names the target (its reference,
/// `review.conversation`), so that a clean scan of one value is not read as a verdict on another
/// (the diff a reviewer found a credential in).
fn target_status(name: &str, hits: usize) -> String {
    match hits {
        0 => format!("{name}: clean"),
        1 => format!("{name}: 1 hit: not clean"),
        n => format!("{name}: {n} hits: not clean"),
    }
}

#[cfg(test)]
mod tests {
    use super::target_status;

    /// `detect` names every credential detector of the registry, and only those: one list.
    #[test]
    fn detect_names_every_credential_detector() {
        use crate::detect::DetectorId;
        use reviewflow_engine::contract::ValueType;
        let contract = super::contract();
        let spec = contract.child_spec("detect").expect("a detect child");
        let Some(ValueType::Enum(words)) = spec.args.first() else {
            panic!("detect takes words: {:?}", spec.args);
        };
        let expected: Vec<String> = DetectorId::ALL
            .iter()
            .filter(|d| **d != DetectorId::SecretValue)
            .map(|d| d.as_str().to_owned())
            .collect();
        assert_eq!(words, &expected);
        assert!(words.iter().any(|w| w == "aws") && !words.iter().any(|w| w == "secret-value"));
    }

    #[test]
    fn the_status_line_names_the_target() {
        assert_eq!(
            target_status("review.conversation", 0),
            "review.conversation: clean"
        );
        assert_eq!(
            target_status("review.conversation", 1),
            "review.conversation: 1 hit: not clean"
        );
        assert_eq!(
            target_status("gather.diff", 3),
            "gather.diff: 3 hits: not clean"
        );
    }
}
