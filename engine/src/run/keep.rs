//! Keeping a stage's outputs in the run directory: redacted, written atomically, digested.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::atomic;
use super::manifest::OutputRecord;
use super::stage::StageError;
use super::value::{OutputValue, StageOutputs, digest};
use crate::exec::redact::Redactor;

/// A path component made of safe characters only, so that no name can leave its folder.
pub(crate) fn component(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() { "_".into() } else { s }
}

/// `outputs/<stage>/<output>`, relative to the run directory.
pub(crate) fn relative(stage: &str, output: &str) -> String {
    format!("outputs/{}/{}", component(stage), component(output))
}

/// The record of a boolean, kept inline.
pub(crate) fn bool_record(b: bool) -> OutputRecord {
    let v = OutputValue::Bool(b);
    OutputRecord {
        ty: "bool".into(),
        digest: digest("bool", &v.bytes().unwrap_or_default()),
        file: None,
        value: Some(b),
    }
}

/// Keeps every output: booleans inline, the rest under `outputs/`. Returns the values as later
/// stages see them (redacted; files at their kept path) and their records.
pub(crate) async fn keep(
    run_dir: &Path,
    stage: &str,
    outputs: StageOutputs,
    redactor: &Redactor,
) -> Result<(StageOutputs, BTreeMap<String, OutputRecord>), StageError> {
    let mut values = StageOutputs::new();
    let mut records = BTreeMap::new();
    for (name, value) in outputs {
        if let OutputValue::Bool(b) = value {
            values.insert(name.clone(), value);
            records.insert(name, bool_record(b));
            continue;
        }
        let ty = value.type_name();
        if let OutputValue::File(from) = &value {
            // Files are copied through the redactor in chunks, never read whole.
            let rel = relative(stage, &name);
            let path: PathBuf = run_dir.join(&rel);
            if let Some(parent) = path.parent() {
                tokio::fs::create_dir_all(parent)
                    .await
                    .map_err(|e| StageError::io(format!("create {}", parent.display()), e))?;
            }
            let (from, to, r, ty_owned) =
                (from.clone(), path.clone(), redactor.clone(), ty.to_string());
            let d = tokio::task::spawn_blocking(move || {
                atomic::redacted_copy_blocking(&from, &to, &r, &ty_owned)
            })
            .await
            .map_err(|e| StageError::failed(format!("a worker thread failed: {e}")))?
            .map_err(|e| StageError::io(format!("keep output `{name}`"), e))?;
            values.insert(name.clone(), OutputValue::File(path));
            records.insert(
                name,
                OutputRecord {
                    ty: ty.into(),
                    digest: d,
                    file: Some(rel),
                    value: None,
                },
            );
            continue;
        }
        let raw = match &value {
            OutputValue::File(p) => tokio::fs::read(p).await.map_err(|e| {
                StageError::io(format!("read output `{name}` ({})", p.display()), e)
            })?,
            other => other.bytes().unwrap_or_default(),
        };
        let bytes = redactor.redact(&raw).into_owned();
        let rel = relative(stage, &name);
        let path: PathBuf = run_dir.join(&rel);
        if let Some(parent) = path.parent() {
            tokio::fs::create_dir_all(parent)
                .await
                .map_err(|e| StageError::io(format!("create {}", parent.display()), e))?;
        }
        let kept = OutputValue::from_kept(ty, bytes.clone(), path.clone())
            .ok_or_else(|| StageError::failed(format!("output `{name}` is not valid {ty}")))?;
        let d = digest(ty, &bytes);
        atomic::write(path.clone(), bytes)
            .await
            .map_err(|e| StageError::io(format!("keep output `{name}`"), e))?;
        values.insert(name.clone(), kept);
        records.insert(
            name,
            OutputRecord {
                ty: ty.into(),
                digest: d,
                file: Some(rel),
                value: None,
            },
        );
    }
    Ok((values, records))
}
