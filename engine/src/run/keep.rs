//! Keeping a stage's outputs in the run directory: redacted, written atomically, digested. A
//! `file` output may be a folder (tree.rs); it is read beneath the stage's own folder through the
//! reader (beneath.rs), never by a path that could be resolved again.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::atomic;
use super::digest::digest;
use super::file_output::{FileOutput, Kept};
use super::manifest::OutputRecord;
use super::stage_error::StageError;
use super::tree;
use super::value::{OutputValue, StageOutputs};
use crate::beneath::Entry;
use crate::exec::redact::Redactor;
use crate::platform::HandOver;

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
        discarded: None,
        empty_folders: Vec::new(),
    }
}

/// Keeps the file or folder `from` (what the stage wrote, read beneath its folder through the
/// reader) at `to` (replacing what a refused resume left there) and returns its digest and, for a
/// folder, its empty folders. The entry is opened once and everything after reads that
/// descriptor, so a process the stage left behind cannot swap what is read. Blocking.
fn keep_file_blocking(
    from: &FileOutput,
    to: &Path,
    redactor: &Redactor,
    ty: &str,
    name: &str,
    hand_over: &[&'static HandOver],
) -> Result<(String, Vec<String>), StageError> {
    let io = |e| StageError::io(format!("keep output `{name}`"), e);
    let refused =
        |e: &dyn std::fmt::Display| StageError::failed(format!("cannot keep output `{name}`: {e}"));
    let parent = to
        .parent()
        .ok_or_else(|| StageError::failed(format!("output `{name}` has no folder")))?;
    match from.open().map_err(|e| refused(&e))? {
        Entry::Folder(dir) => {
            let staged = tree::stage(&dir, parent, Some(redactor)).map_err(|e| refused(&e))?;
            let kept = (staged.digest.clone(), staged.empty.clone());
            staged.install(to).map_err(io)?;
            // Read from our own copy: what the stage left behind cannot rename it.
            match unhandable_name(to, Path::new(""), hand_over) {
                Ok(None) => Ok(kept),
                Ok(Some((rel, rule))) => {
                    let _ = std::fs::remove_dir_all(to);
                    Err(refused(&format!(
                        "the folder holds {:?}, a name {} refuses (it may hold none of {}), so \
                         the run could not be handed over to another job; rename it",
                        rel.to_string_lossy(),
                        rule.by,
                        rule.refused_in_words()
                    )))
                }
                Err(e) => {
                    let _ = std::fs::remove_dir_all(to);
                    Err(io(e))
                }
            }
        }
        Entry::File(file) => {
            if tree::is_folder(to) {
                std::fs::remove_dir_all(to).map_err(io)?;
            }
            atomic::redacted_copy_blocking(file, &from.path(), to, redactor, ty)
                .map(|digest| (digest, Vec::new()))
                .map_err(|e| refused(&e))
        }
    }
}

/// The first path below `dir` (relative, `rel` and below) whose name a platform's hand-over
/// refuses (`Platform::hand_over`, the rules of every registered platform), with the rule.
/// Links are not followed (a kept folder holds none). Blocking.
fn unhandable_name(
    dir: &Path,
    rel: &Path,
    hand_over: &[&'static HandOver],
) -> std::io::Result<Option<(PathBuf, &'static HandOver)>> {
    if hand_over.is_empty() {
        return Ok(None);
    }
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        let name = entry.file_name();
        let path = rel.join(&name);
        let text = name.to_string_lossy();
        if let Some(rule) = hand_over.iter().find(|r| text.contains(r.refused)) {
            return Ok(Some((path, rule)));
        }
        if entry.file_type()?.is_dir()
            && let Some(found) = unhandable_name(&entry.path(), &path, hand_over)?
        {
            return Ok(Some(found));
        }
    }
    Ok(None)
}

/// Keeps every output: booleans inline, the rest under `outputs/`. Returns the values as later
/// stages see them (redacted; files at their kept path) and their records.
pub(crate) async fn keep(
    run_dir: &Path,
    stage: &str,
    outputs: StageOutputs,
    redactor: &Redactor,
    hand_over: &[&'static HandOver],
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
            // Files are copied through the redactor in chunks, never read whole; a folder is
            // copied file by file the same way (tree.rs). The value later stages see carries the
            // digest, so reading it back can prove it unchanged.
            let rel = relative(stage, &name);
            let path: PathBuf = run_dir.join(&rel);
            if let Some(parent) = path.parent() {
                tokio::fs::create_dir_all(parent)
                    .await
                    .map_err(|e| StageError::io(format!("create {}", parent.display()), e))?;
            }
            let (from, to, r, ty_owned, name_owned, rules) = (
                from.clone(),
                path.clone(),
                redactor.clone(),
                ty.to_string(),
                name.clone(),
                hand_over.to_vec(),
            );
            let (d, empty_folders) = tokio::task::spawn_blocking(move || {
                keep_file_blocking(&from, &to, &r, &ty_owned, &name_owned, &rules)
            })
            .await
            .map_err(|e| StageError::failed(format!("a worker thread failed: {e}")))??;
            let kept = Kept {
                stage: stage.to_string(),
                output: name.clone(),
                digest: d.clone(),
            };
            values.insert(
                name.clone(),
                OutputValue::File(FileOutput::kept(run_dir, &rel, kept)),
            );
            records.insert(
                name,
                OutputRecord {
                    ty: ty.into(),
                    digest: d,
                    file: Some(rel),
                    value: None,
                    discarded: None,
                    empty_folders,
                },
            );
            continue;
        }
        let raw = value.bytes().unwrap_or_default();
        let bytes = redactor.redact(&raw).into_owned();
        let rel = relative(stage, &name);
        let path: PathBuf = run_dir.join(&rel);
        if let Some(parent) = path.parent() {
            tokio::fs::create_dir_all(parent)
                .await
                .map_err(|e| StageError::io(format!("create {}", parent.display()), e))?;
        }
        let kept = OutputValue::from_kept(ty, bytes.clone(), None)
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
                discarded: None,
                empty_folders: Vec::new(),
            },
        );
    }
    Ok((values, records))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A rule like the one a platform's hand-over registers.
    const RULE: HandOver = HandOver {
        by: "the test platform's upload",
        refused: &['"', ':', '<', '>', '|', '*', '?', '\r', '\n'],
    };

    fn kept_folder(names: &[&str]) -> Result<(String, Vec<String>), StageError> {
        let work = tempfile::tempdir().expect("tempdir");
        let run = tempfile::tempdir().expect("tempdir");
        for name in names {
            let path = work.path().join("out").join(name);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(&path, "x").expect("write");
        }
        let from = FileOutput::beneath(work.path(), "out").expect("output");
        let to = run.path().join("outputs/s/o");
        std::fs::create_dir_all(to.parent().expect("parent")).expect("mkdir");
        let kept = keep_file_blocking(&from, &to, &Redactor::empty(), "file", "o", &[&RULE]);
        assert_eq!(
            to.exists(),
            kept.is_ok(),
            "a refused folder is not left kept"
        );
        kept
    }

    #[test]
    fn without_a_platform_that_refuses_names_any_name_is_kept() {
        let work = tempfile::tempdir().expect("tempdir");
        let run = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(work.path().join("out")).expect("mkdir");
        std::fs::write(work.path().join("out/a:b"), "x").expect("write");
        let from = FileOutput::beneath(work.path(), "out").expect("output");
        let to = run.path().join("outputs/s/o");
        std::fs::create_dir_all(to.parent().expect("parent")).expect("mkdir");
        keep_file_blocking(&from, &to, &Redactor::empty(), "file", "o", &[]).expect("kept");
        assert!(to.join("a:b").is_file());
    }

    #[test]
    fn a_folder_with_a_name_a_hand_over_refuses_is_not_kept() {
        assert!(kept_folder(&["a.txt", "sub/b-c_d.e f"]).is_ok());
        for bad in [
            "a:b",
            "sub/what?",
            "q\"",
            "x|y",
            "star*",
            "l<t",
            "g>t",
            "cr\r",
            "lf\n",
        ] {
            let Err(e) = kept_folder(&["fine.txt", bad]) else {
                panic!("{bad:?} was kept");
            };
            let text = e.to_string();
            assert!(
                text.contains(&format!("{bad:?}"))
                    && text.contains(
                        "the test platform's upload refuses (it may hold none of \
                                      `\" : < > | * ?`, CR or LF)"
                    ),
                "{text}"
            );
        }
    }
}
