//! Resume of a run: admission by identity, then reuse of what the parent's manifest records as
//! completed and still verifies by digest. Both steps are blocking; run them off the runtime.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::digest::digest;
use super::events::{Unreadable, unreadable_lines};
use super::file_output::{FileOutput, Kept};
use super::identity::{Difference, Identity};
use super::manifest::{MANIFEST_FORMAT_VERSION, Manifest, OutputRecord};
use super::tree;
use super::value::{OutputValue, StageOutputs};
use crate::beneath::{Entry, Folder, Why};
use crate::graph::Dag;
use crate::model::Pipeline;

/// The most bytes read of a parent's `manifest.json` or `events.jsonl`.
const MAX_RECORD_BYTES: u64 = 64 << 20;

#[derive(Debug, thiserror::Error)]
pub enum ResumeError {
    #[error("`{id}` is not a run id (letters, digits, `.`, `_` and `-`)")]
    BadId { id: String },
    #[error("there is no run `{id}` in {}", dir.display())]
    NoParent { id: String, dir: PathBuf },
    #[error(
        "run `{id}` has no manifest: it was interrupted before it ended, so what it completed cannot be verified; start a new run"
    )]
    NoManifest { id: String },
    #[error(
        "run `{id}` never ended (its manifest is not final): it cannot be resumed; start a new run"
    )]
    NotFinal { id: String },
    #[error("the manifest of run `{id}` cannot be read: {message}")]
    Unreadable { id: String, message: String },
    #[error("cannot resume: {message}")]
    Unsafe { message: String },
    #[error("cannot resume run `{id}`: it did not review the same thing; these fields differ:\n{}{}",
        differences.iter().map(|d| format!("  {d}\n")).collect::<String>(),
        if differences.iter().all(Difference::is_model_change) {
            "a reviewer change is admitted only with --allow-model-change"
        } else { "start a new run instead" })]
    Mismatch {
        id: String,
        differences: Vec<Difference>,
    },
}

/// A parent admitted for resume.
#[derive(Debug)]
pub struct Admitted {
    pub id: String,
    pub dir: PathBuf,
    pub manifest: Manifest,
    /// Reviewer changes admitted by the flag.
    pub model_changes: Vec<Difference>,
}

/// Whether `id` can name a run directory (and nothing outside it).
pub fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && !id.starts_with('.')
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// Admits run `id` of `runs_dir` as the parent of a run of `identity`, or says why not.
pub fn admit(
    runs_dir: &Path,
    id: &str,
    identity: &Identity,
    allow_model_change: bool,
) -> Result<Admitted, ResumeError> {
    if !valid_id(id) {
        return Err(ResumeError::BadId { id: id.into() });
    }
    let dir = runs_dir.join(id);
    // The parent's folder and files may have been committed by the change under review: the
    // folder is opened once (never a link) and its manifest read beneath it through the reader:
    // no link followed, no FIFO waited on, nothing read past its bound.
    let parent = match Folder::open(&dir) {
        Ok(f) => f,
        Err(e) if crate::beneath::refused(&e).is_some_and(|r| r.why == Why::Link) => {
            return Err(ResumeError::Unsafe {
                message: crate::nofollow::link_error(&dir).to_string(),
            });
        }
        Err(_) => {
            return Err(ResumeError::NoParent {
                id: id.into(),
                dir: runs_dir.to_path_buf(),
            });
        }
    };
    let read = parent
        .read(Path::new("manifest.json"), MAX_RECORD_BYTES)
        .map_err(|e| crate::nofollow::checkout_error(e, Path::new("manifest.json")));
    let bytes = match read {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ResumeError::NoManifest { id: id.into() });
        }
        Err(e) => {
            return Err(ResumeError::Unreadable {
                id: id.into(),
                message: e.to_string(),
            });
        }
    };
    let manifest: Manifest =
        serde_json::from_slice(&bytes).map_err(|e| ResumeError::Unreadable {
            id: id.into(),
            message: e.to_string(),
        })?;
    if manifest.version != MANIFEST_FORMAT_VERSION {
        return Err(ResumeError::Unreadable {
            id: id.into(),
            message: format!(
                "format version {} is not {MANIFEST_FORMAT_VERSION}",
                manifest.version
            ),
        });
    }
    if !manifest.is_final {
        return Err(ResumeError::NotFinal { id: id.into() });
    }
    let differences = manifest.identity.differences(identity);
    let model_only = differences.iter().all(Difference::is_model_change);
    let admitted = differences.is_empty() || (model_only && allow_model_change);
    if !admitted {
        return Err(ResumeError::Mismatch {
            id: id.into(),
            differences,
        });
    }
    Ok(Admitted {
        id: id.into(),
        dir,
        manifest,
        model_changes: differences,
    })
}

/// A stage taken from the parent.
#[derive(Debug)]
pub struct ReusedStage {
    /// Its values (files and folders at their new place).
    pub values: StageOutputs,
    /// Their records, as the parent kept them.
    pub records: BTreeMap<String, OutputRecord>,
    /// The facts the parent recorded for it: they describe what produced these outputs.
    pub facts: BTreeMap<String, String>,
}

/// What a resume takes from its parent.
#[derive(Debug, Default)]
pub struct Reuse {
    /// Reused stages by index.
    pub stages: BTreeMap<usize, ReusedStage>,
    /// Completed stages of the parent that are not reused, and why.
    pub not_reused: Vec<(String, String)>,
    /// Lines of the parent's events log that did not parse.
    pub dropped_event_lines: Unreadable,
    /// Reuse panicked (a bug), with the panic's message: nothing is reused, every stage runs.
    pub failed: Option<String>,
}

/// [`reuse`], with a panic caught: then nothing is reused and `failed` says why, so that the run
/// goes on with every stage and says so rather than trusting half a reuse.
///
/// `idle`: stages this run decides without running them (a partial run's stages outside
/// `--stages`, and those it takes as the parent skipped them or fell back): a stage that
/// depends on one is reusable all the same, and one does not read a discarded output.
pub fn reuse_guarded(
    admitted: &Admitted,
    pipeline: &Pipeline,
    dag: &Dag,
    new_dir: &Path,
    idle: &BTreeSet<usize>,
) -> Reuse {
    guarded(|| reuse(admitted, pipeline, dag, new_dir, idle))
}

fn guarded(f: impl FnOnce() -> Reuse) -> Reuse {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|panic| {
        let message = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic".into());
        Reuse {
            failed: Some(message),
            ..Reuse::default()
        }
    })
}

/// Decides which stages to reuse and copies their kept outputs into `new_dir`.
pub fn reuse(
    admitted: &Admitted,
    pipeline: &Pipeline,
    dag: &Dag,
    new_dir: &Path,
    idle: &BTreeSet<usize>,
) -> Reuse {
    let mut out = Reuse::default();
    if let Ok(dropped) = unreadable_lines(&admitted.dir.join("events.jsonl")) {
        out.dropped_event_lines = dropped;
    }
    let changed: BTreeSet<String> = admitted
        .model_changes
        .iter()
        .filter_map(|d| d.field.strip_prefix("reviewers.").map(str::to_string))
        .collect();
    let Some(order) = &dag.order else {
        return out;
    };
    for &i in order {
        let stage = &pipeline.stages[i];
        let name = &stage.name.value;
        let Some(record) = admitted.manifest.stage(name) else {
            continue;
        };
        if !record.outcome.completed() {
            continue;
        }
        // The stage that stopped the parent decides again: reusing it would go on past its stop.
        let stopper = admitted
            .manifest
            .stopped
            .as_ref()
            .is_some_and(|s| &s.stage == name);
        let why_not = if changed.contains(name) {
            Some("its reviewer changed".to_string())
        } else if stopper {
            Some(format!("it stopped run {}; it decides again", admitted.id))
        } else if let Some((p, _)) = dag
            .producers(i)
            .find(|(p, _)| !out.stages.contains_key(p) && !idle.contains(p))
        {
            Some(format!(
                "it depends on `{}`, which runs again",
                pipeline.stages[p].name.value
            ))
        } else {
            None
        };
        if let Some(why) = why_not {
            out.not_reused.push((name.clone(), why));
            continue;
        }
        match verify(name, &admitted.dir, new_dir, &record.outputs) {
            Ok(values) => {
                out.stages.insert(
                    i,
                    ReusedStage {
                        values,
                        records: record.outputs.clone(),
                        facts: record.facts.clone(),
                    },
                );
            }
            Err(why) => out.not_reused.push((name.clone(), why)),
        }
    }
    rerun_discarded(&admitted.id, pipeline, dag, idle, &mut out);
    out
}

/// A stage that runs again and reads an output its parent discarded at rest (its plaintext is
/// gone) needs that output's producer to run again, and with it every stage that depends on the
/// producer. Repeated until no stage that runs reads a discarded output of a reused one.
fn rerun_discarded(
    parent: &str,
    pipeline: &Pipeline,
    dag: &Dag,
    idle: &BTreeSet<usize>,
    out: &mut Reuse,
) {
    let name = |i: usize| pipeline.stages[i].name.value.clone();
    loop {
        let found = (0..pipeline.stages.len())
            .filter(|j| !out.stages.contains_key(j) && !idle.contains(j))
            .find_map(|j| {
                dag.producers(j).find_map(|(p, edge)| {
                    let reused = out.stages.get(&p)?;
                    edge.data.iter().chain(&edge.guard).find_map(|o| {
                        let why = reused.records.get(o)?.discarded.as_ref()?;
                        Some((j, p, o.clone(), why.clone()))
                    })
                })
            });
        let Some((reader, producer, output, why)) = found else {
            return;
        };
        out.stages.remove(&producer);
        out.not_reused.push((
            name(producer),
            format!(
                "its output `{output}` was discarded at the end of run {parent} ({why}), and `{}` runs again and reads it",
                name(reader)
            ),
        ));
        // Everything downstream of a producer that runs again runs again too.
        let mut stack = vec![producer];
        while let Some(p) = stack.pop() {
            for (c, _) in dag.consumers(p) {
                if out.stages.remove(&c).is_some() {
                    out.not_reused.push((
                        name(c),
                        format!("it depends on `{}`, which runs again", name(p)),
                    ));
                    stack.push(c);
                }
            }
        }
    }
}

/// Reads and verifies each recorded output, copying kept files and folders into the new run
/// directory. Everything is read beneath the parent's folder through the reader (no link at any
/// component); a kept folder is verified on its copy, so what is checked is what is used. The
/// values carry the digests verified: the parent's manifest is the only record of them.
fn verify(
    stage: &str,
    parent_dir: &Path,
    new_dir: &Path,
    records: &BTreeMap<String, OutputRecord>,
) -> Result<StageOutputs, String> {
    let mut values = StageOutputs::new();
    let parent = Folder::open(parent_dir).map_err(|e| e.to_string())?;
    for (name, r) in records {
        // Gone at the parent's end; no stage that runs reads it (see `rerun_discarded`).
        if r.discarded.is_some() {
            continue;
        }
        let unreadable = |e: &dyn std::fmt::Display| format!("output `{name}` cannot be read: {e}");
        let (bytes, rel) = match (&r.file, r.value) {
            (None, Some(b)) => (
                if b {
                    b"true".to_vec()
                } else {
                    b"false".to_vec()
                },
                None,
            ),
            (Some(rel), _) => {
                if rel.split('/').any(|c| c == ".." || c.is_empty()) || rel.starts_with('/') {
                    return Err(format!("output `{name}` names an unsafe path"));
                }
                if r.ty == "file" && !r.empty_folders.is_empty() {
                    make_empty_folders(parent_dir, rel, &r.empty_folders)
                        .map_err(|e| unreadable(&e))?;
                }
                match parent.entry(Path::new(rel)).map_err(|e| unreadable(&e))? {
                    Entry::Folder(dir) if r.ty == "file" => {
                        let kept = Kept {
                            stage: stage.to_string(),
                            output: name.clone(),
                            digest: r.digest.clone(),
                        };
                        values.insert(name.clone(), verify_folder(&dir, new_dir, rel, kept)?);
                        continue;
                    }
                    Entry::Folder(dir) => {
                        return Err(unreadable(&format_args!(
                            "{} is a folder",
                            dir.path().display()
                        )));
                    }
                    Entry::File(f) => {
                        let bytes = crate::bounded::read_bounded(f, tree::MAX_BYTES)
                            .map_err(|e| unreadable(&e))?;
                        (bytes, Some(rel))
                    }
                }
            }
            (None, None) => return Err(format!("output `{name}` has no value")),
        };
        if digest(&r.ty, &bytes) != r.digest {
            return Err(format!("output `{name}` no longer matches its digest"));
        }
        let file = rel.map(|rel| {
            let kept = Kept {
                stage: stage.to_string(),
                output: name.clone(),
                digest: r.digest.clone(),
            };
            FileOutput::kept(new_dir, rel, kept)
        });
        let dest = rel.map(|rel| new_dir.join(rel));
        let value = OutputValue::from_kept(&r.ty, bytes.clone(), file)
            .ok_or_else(|| format!("output `{name}` is not valid {}", r.ty))?;
        if let Some(dest) = dest {
            if let Some(parent) = dest.parent() {
                std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
            }
            super::atomic::write_blocking(&dest, &bytes).map_err(|e| e.to_string())?;
        }
        values.insert(name.clone(), value);
    }
    Ok(values)
}

/// Makes again, in the parent's kept folder `rel`, the empty folders its record lists: a copy
/// that carries files only (a CI artifact) lost them, and the digest covers them. Each is
/// made a component at a time, mode 0700, no link followed; a name that would leave the kept
/// folder is refused. What was there is not changed: a file changed, added or removed still fails
/// the digest.
fn make_empty_folders(parent_dir: &Path, rel: &str, empty: &[String]) -> Result<(), String> {
    for folder in empty {
        let safe = folder == "."
            || !(folder.starts_with('/')
                || folder.split('/').any(|c| matches!(c, "" | "." | "..")));
        if !safe {
            return Err(format!("its record names an unsafe folder {folder:?}"));
        }
        crate::nofollow::ensure_dir(parent_dir, &Path::new(rel).join(folder), 0o700)
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Copies the kept folder `kept` to `rel` in the new run directory when its copy matches the
/// digest. A changed, added or removed entry changes the digest; a link or special file planted
/// in it is refused by name.
fn verify_folder(
    kept: &Folder,
    new_dir: &Path,
    rel: &str,
    record: Kept,
) -> Result<OutputValue, String> {
    let name = record.output.clone();
    let dest = new_dir.join(rel);
    let parent = dest
        .parent()
        .ok_or_else(|| format!("output `{name}` names an unsafe path"))?;
    std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
    let staged = tree::stage(kept, parent, None)
        .map_err(|e| format!("output `{name}` cannot be read: {e}"))?;
    if staged.digest != record.digest {
        return Err(format!("output `{name}` no longer matches its digest"));
    }
    staged.install(&dest).map_err(|e| e.to_string())?;
    Ok(OutputValue::File(FileOutput::kept(new_dir, rel, record)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// gather → review → seal → post, as run stages; `review.conversation` and `gather.diff`
    /// were discarded at the parent's end.
    fn chain() -> crate::compile::Compiled {
        let text = r#"
stage "gather" uses="run" {
    command "true"
    output "diff"
}
stage "review" uses="run" {
    command "echo" "{gather.diff}"
    output "conversation"
    output "comment"
}
stage "seal" uses="run" {
    command "echo" "{review.conversation}"
    output "blob"
}
stage "post" uses="run" {
    command "echo" "{review.comment}" "{seal.blob}"
}
"#;
        crate::compile::compile(
            crate::Source::new("p.kdl", text),
            &crate::Registry::with_builtins(),
            &crate::syntax::Limits::default(),
        )
        .expect("compiles")
    }

    fn reused(outputs: &[(&str, bool)]) -> ReusedStage {
        ReusedStage {
            values: StageOutputs::new(),
            records: outputs
                .iter()
                .map(|(o, discarded)| {
                    (
                        (*o).to_string(),
                        OutputRecord {
                            ty: "text".into(),
                            digest: "sha256:00".into(),
                            file: (!discarded).then(|| format!("outputs/x/{o}")),
                            value: None,
                            discarded: discarded.then(|| "private".into()),
                            empty_folders: Vec::new(),
                        },
                    )
                })
                .collect(),
            facts: BTreeMap::new(),
        }
    }

    /// The parent's completed stages, all reused at first; `runs` runs again.
    fn resume_with(c: &crate::compile::Compiled, runs: usize) -> Reuse {
        let mut out = Reuse::default();
        let all: [&[(&str, bool)]; 4] = [
            &[("diff", true)],
            &[("conversation", true), ("comment", false)],
            &[("blob", false)],
            &[],
        ];
        for (i, outputs) in all.iter().enumerate() {
            if i != runs {
                out.stages.insert(i, reused(outputs));
            }
        }
        rerun_discarded("R1", &c.pipeline, &c.dag, &BTreeSet::new(), &mut out);
        out
    }

    #[test]
    fn a_resume_after_the_last_stage_failed_reuses_what_it_reads_kept() {
        let c = chain();
        let out = resume_with(&c, 3);
        assert_eq!(out.stages.keys().copied().collect::<Vec<_>>(), [0, 1, 2]);
        assert!(out.not_reused.is_empty());
    }

    #[test]
    fn a_stage_that_reads_a_discarded_output_runs_its_producer_again_and_what_follows() {
        let c = chain();
        let out = resume_with(&c, 2);
        assert!(out.stages.is_empty(), "{:?}", out.stages.keys());
        assert_eq!(
            out.not_reused,
            [
                (
                    "review".to_string(),
                    "its output `conversation` was discarded at the end of run R1 (private), and `seal` runs again and reads it".to_string()
                ),
                (
                    "post".to_string(),
                    "it depends on `review`, which runs again".to_string()
                ),
                (
                    "gather".to_string(),
                    "its output `diff` was discarded at the end of run R1 (private), and `review` runs again and reads it".to_string()
                ),
            ]
        );
    }

    #[test]
    fn the_empty_folders_a_record_lists_are_made_again_beneath_the_kept_folder_only() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let listed = ["a/b".to_string(), "c".to_string()];
        make_empty_folders(dir.path(), "outputs/s/o", &listed).unwrap();
        for made in ["outputs/s/o/a/b", "outputs/s/o/c"] {
            let meta = std::fs::metadata(dir.path().join(made)).unwrap();
            assert!(meta.is_dir());
            assert_eq!(meta.permissions().mode() & 0o777, 0o700);
        }
        make_empty_folders(dir.path(), "outputs/s/none", &[".".to_string()]).unwrap();
        assert!(dir.path().join("outputs/s/none").is_dir());
        for unsafe_name in ["../x", "/x", "a//b", "a/./b", ""] {
            let e = make_empty_folders(dir.path(), "outputs/s/o", &[unsafe_name.to_string()]);
            assert!(e.is_err(), "{unsafe_name:?} was made");
        }
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("outputs/s/o/link")).unwrap();
        let e = make_empty_folders(dir.path(), "outputs/s/o", &["link/x".to_string()]);
        assert!(e.is_err());
        assert!(!outside.path().join("x").exists(), "a link was followed");
    }

    #[test]
    fn a_panicking_reuse_reuses_nothing_and_says_why() {
        let reuse = guarded(|| panic!("a test panic in reuse"));
        assert!(reuse.stages.is_empty());
        assert_eq!(reuse.failed.as_deref(), Some("a test panic in reuse"));
        let reuse = guarded(Reuse::default);
        assert_eq!(reuse.failed, None);
    }
}
