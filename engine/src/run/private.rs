//! Nothing private at rest (docs/executor.md): which kept outputs must not outlive the run, and
//! their removal when it ends, whatever the end. A run that never ended is leftovers.rs's.

use std::io;
use std::path::{Path, PathBuf};

use super::events::Event;
use super::keep;
use super::manifest::StageRecord;
use super::reporter::Reporter;
use crate::contract::OutputType;
use crate::flow::Flow;
use crate::graph::outputs_of;
use crate::model::Pipeline;
use crate::registry::Registry;

/// Why an output is discarded: the private label.
pub(crate) const PRIVATE: &str = "private";
/// Why an output is discarded: it is a diff (the change as read, which may carry a credential).
pub(crate) const DIFF: &str = "diff";
/// Why an output is discarded: it carries a secret (a program that held one wrote it: a trace, a
/// log, a configuration it filled in). The redactor removes the secret's known forms from what
/// is kept; a form it cannot know (encoded, split) must not outlive the run either.
pub(crate) const SECRET: &str = "secret";

/// The outputs discarded at the run's end: (stage, output, why).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct AtRest {
    outputs: Vec<(String, String, &'static str)>,
}

impl AtRest {
    /// From the flow labels: every output carrying `private` or a secret, and every `diff`.
    /// Booleans are kept inline in the manifest (one bit) whatever their labels.
    pub(crate) fn compute(pipeline: &Pipeline, registry: &Registry, flow: &Flow) -> Self {
        let mut outputs = Vec::new();
        for (i, stage) in pipeline.stages.iter().enumerate() {
            for (name, ty) in outputs_of(stage, registry) {
                if ty == OutputType::Bool {
                    continue;
                }
                let labels = flow.output(i, &name);
                let why = if labels.is_some_and(|l| l.private) {
                    PRIVATE
                } else if ty == OutputType::Diff {
                    DIFF
                } else if labels.is_some_and(|l| l.secrets().next().is_some()) {
                    SECRET
                } else {
                    continue;
                };
                outputs.push((stage.name.value.clone(), name, why));
            }
        }
        Self { outputs }
    }

    /// Removes every such output of the run and the run's work folders left in `temp_dir`, and
    /// marks the outputs discarded in `records`. A removal that fails is a warning naming the path.
    pub(crate) async fn discard(
        &self,
        run_dir: &Path,
        temp_dir: &Path,
        run_id: &str,
        records: &mut [StageRecord],
        reporter: &Reporter,
    ) {
        let (this, run_dir, temp_dir, run_id) = (
            self.clone(),
            run_dir.to_path_buf(),
            temp_dir.to_path_buf(),
            run_id.to_string(),
        );
        let failures = tokio::task::spawn_blocking(move || {
            let mut failures = this.remove_blocking(&run_dir);
            failures.extend(remove_work_folders(&temp_dir, &run_id).failures);
            failures
        })
        .await
        .unwrap_or_else(|e| vec![(PathBuf::new(), io::Error::other(e.to_string()))]);
        self.mark(records);
        for (path, e) in failures {
            reporter.event(Event::Warning {
                stage: None,
                message: cannot_remove(&path, &e),
            });
        }
    }

    /// Removes the kept files and folders (recorded or not: a stage that failed half-way may
    /// have kept some). Blocking.
    fn remove_blocking(&self, run_dir: &Path) -> Vec<(PathBuf, io::Error)> {
        self.outputs
            .iter()
            .filter_map(|(stage, output, _)| {
                let path = run_dir.join(keep::relative(stage, output));
                remove_path(&path).err().map(|e| (path, e))
            })
            .collect()
    }

    /// Marks the outputs discarded: no `file`, the reason; the digest stays. An output already
    /// marked (reused from a parent) keeps its reason.
    fn mark(&self, records: &mut [StageRecord]) {
        for (stage, output, why) in &self.outputs {
            let Some(record) = records
                .iter_mut()
                .find(|r| &r.name == stage)
                .and_then(|r| r.outputs.get_mut(output))
            else {
                continue;
            };
            if record.value.is_none() && record.discarded.is_none() {
                record.file = None;
                record.discarded = Some((*why).to_string());
            }
        }
    }
}

/// The warning of a removal that failed.
pub(crate) fn cannot_remove(path: &Path, e: &io::Error) -> String {
    format!(
        "could not remove {} ({e}): plaintext may remain at {}",
        path.display(),
        path.display()
    )
}

/// Removes a file, a folder and its contents, or a link (not what it points to). Gone already is
/// not an error.
pub(crate) fn remove_path(path: &Path) -> io::Result<()> {
    let result = match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
        Err(e) => Err(e),
    };
    match result {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

/// The folder of run `run_id`'s stages' work folders in the temp folder (0700, made by the run;
/// covered in every child's mount namespace but for the child's own folder).
pub(crate) fn work_root(temp_dir: &Path, run_id: &str) -> PathBuf {
    temp_dir.join(format!("reviewflow-{run_id}"))
}

/// Whether `name`, in the temp folder, is run `run_id`'s: its work root, or a work folder of the
/// earlier layout (`reviewflow-<run id>-<stage>-…`) a run killed before it ended left.
fn is_work_folder_of(name: &[u8], run_id: &str) -> bool {
    let root = format!("reviewflow-{run_id}");
    name == root.as_bytes()
        || name
            .strip_prefix(root.as_bytes())
            .is_some_and(|rest| rest.starts_with(b"-"))
}

/// What [`remove_work_folders`] did.
#[derive(Debug, Default)]
pub(crate) struct Removed {
    pub(crate) removed: Vec<PathBuf>,
    pub(crate) failures: Vec<(PathBuf, io::Error)>,
}

/// Removes the work folders of run `run_id` left in `temp_dir`. Blocking.
pub(crate) fn remove_work_folders(temp_dir: &Path, run_id: &str) -> Removed {
    let mut out = Removed::default();
    let Ok(entries) = std::fs::read_dir(temp_dir) else {
        return out;
    };
    for entry in entries.flatten() {
        if !is_work_folder_of(entry.file_name().as_encoded_bytes(), run_id) {
            continue;
        }
        let path = entry.path();
        match remove_path(&path) {
            Ok(()) => out.removed.push(path),
            Err(e) => out.failures.push((path, e)),
        }
    }
    out
}

/// The lock a run holds for its whole life (`lock` in its run directory): the kernel releases it
/// when the process dies, however it dies, so a run whose lock can be taken is not alive.
#[derive(Debug)]
pub(crate) struct RunLock {
    file: std::fs::File,
    path: PathBuf,
}

/// The lock file's name in a run directory.
pub(crate) const LOCK_FILE: &str = "lock";
/// The lock file's name once the run has ended and removed its plaintext.
pub(crate) const ENDED_FILE: &str = "ended";

impl RunLock {
    /// Creates `lock` in the new run directory and locks it. Waits while another run, looking
    /// for leftovers, briefly holds it (it sees no manifest yet and lets go).
    pub(crate) async fn hold(run_dir: &Path) -> io::Result<Self> {
        let path = run_dir.join(LOCK_FILE);
        tokio::task::spawn_blocking(move || {
            use std::os::unix::fs::OpenOptionsExt as _;
            let file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
                .open(&path)?;
            rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)?;
            Ok(Self { file, path })
        })
        .await
        .map_err(io::Error::other)?
    }

    /// The run has ended and removed its plaintext: `lock` becomes `ended` (still locked until
    /// the process lets go), so that later runs skip it without reading its manifest. A rename
    /// that fails only costs them that read.
    pub(crate) async fn ended(self) {
        let _ = tokio::task::spawn_blocking(move || {
            let ended = self.path.with_file_name(ENDED_FILE);
            let _ = std::fs::rename(&self.path, ended);
            drop(self.file);
        })
        .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::manifest::OutputRecord;
    use std::collections::BTreeMap;

    fn record(name: &str, outputs: &[(&str, Option<bool>)]) -> StageRecord {
        StageRecord {
            name: name.into(),
            kind: "run".into(),
            outcome: crate::run::outcome::Outcome::Succeeded,
            started_at: None,
            duration_ms: 0,
            reason: None,
            outputs: outputs
                .iter()
                .map(|(o, v)| {
                    (
                        (*o).to_string(),
                        OutputRecord {
                            ty: if v.is_some() { "bool" } else { "file" }.into(),
                            digest: "sha256:00".into(),
                            file: v.is_none().then(|| keep::relative(name, o)),
                            value: *v,
                            discarded: None,
                            empty_folders: Vec::new(),
                        },
                    )
                })
                .collect(),
            reused_from: None,
            facts: BTreeMap::new(),
        }
    }

    #[test]
    fn discarded_outputs_are_removed_and_marked_and_the_rest_stays() {
        let dir = tempfile::tempdir().expect("tempdir");
        let at_rest = AtRest {
            outputs: vec![
                ("review".into(), "conversation".into(), PRIVATE),
                ("gather".into(), "diff".into(), DIFF),
                ("gone".into(), "never-kept".into(), PRIVATE),
            ],
        };
        let conv = dir.path().join("outputs/review/conversation");
        std::fs::create_dir_all(&conv).expect("mkdir");
        std::fs::write(conv.join("c.txt"), "secret talk").expect("write");
        std::fs::create_dir_all(dir.path().join("outputs/gather")).expect("mkdir");
        std::fs::write(dir.path().join("outputs/gather/diff"), "+x").expect("write");
        std::fs::write(dir.path().join("outputs/gather/head"), "abc").expect("write");
        assert!(at_rest.remove_blocking(dir.path()).is_empty());
        assert!(!conv.exists());
        assert!(!dir.path().join("outputs/gather/diff").exists());
        assert!(dir.path().join("outputs/gather/head").exists());

        let mut records = vec![
            record(
                "review",
                &[("conversation", None), ("commented", Some(true))],
            ),
            record("gather", &[("diff", None), ("head", None)]),
        ];
        at_rest.mark(&mut records);
        let c = &records[0].outputs["conversation"];
        assert_eq!(
            (c.file.as_deref(), c.discarded.as_deref()),
            (None, Some(PRIVATE))
        );
        assert_eq!(c.digest, "sha256:00");
        assert_eq!(records[1].outputs["diff"].discarded.as_deref(), Some(DIFF));
        assert!(records[1].outputs["head"].file.is_some());
        assert_eq!(records[0].outputs["commented"].discarded, None);
    }

    #[test]
    fn an_output_that_carries_a_secret_is_discarded_and_one_that_does_not_stays() {
        let registry = Registry::with_builtins();
        let text = r#"pipeline "p"
secret "token" env="DEPLOY_TOKEN" {
    visible-to "notify"
}
stage "notify" uses="run" {
    command "curl" "--trace-ascii" "trace.txt" "https://x.test"
    secret-env "DEPLOY_TOKEN" "token"
    output "trace" file="trace.txt"
}
stage "plain" uses="run" {
    command "echo" "hi"
    output "said"
}
"#;
        let compiled = crate::compile(
            crate::Source::new("t.kdl", text),
            &registry,
            &Default::default(),
        )
        .expect("compiles");
        let flow = Flow::compute(&compiled.pipeline, &registry, &compiled.dag).expect("flow");
        let at_rest = AtRest::compute(&compiled.pipeline, &registry, &flow);
        assert!(
            at_rest
                .outputs
                .contains(&("notify".into(), "trace".into(), SECRET)),
            "{:?}",
            at_rest.outputs
        );
        assert!(!at_rest.outputs.iter().any(|(s, _, _)| s == "plain"));
    }

    #[test]
    fn a_failed_removal_is_said_with_its_path() {
        let e = io::Error::from(io::ErrorKind::PermissionDenied);
        let said = cannot_remove(Path::new("/r/outputs/review/conversation"), &e);
        assert!(said.contains("plaintext may remain at /r/outputs/review/conversation"));
    }

    #[test]
    fn only_the_runs_own_work_folders_are_removed_and_a_link_is_not_followed() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let outside = tempfile::tempdir().expect("tempdir");
        std::fs::write(outside.path().join("keep.txt"), "x").expect("write");
        let mine = tmp.path().join("reviewflow-R1-review-abc");
        std::fs::create_dir(&mine).expect("mkdir");
        std::fs::write(mine.join("prompt"), "plaintext").expect("write");
        let other = tmp.path().join("reviewflow-R2-review-abc");
        std::fs::create_dir(&other).expect("mkdir");
        std::os::unix::fs::symlink(outside.path(), tmp.path().join("reviewflow-R1-link"))
            .expect("link");
        let removed = remove_work_folders(tmp.path(), "R1");
        assert!(removed.failures.is_empty());
        assert_eq!(removed.removed.len(), 2);
        assert!(!mine.exists() && other.exists());
        assert!(outside.path().join("keep.txt").exists());
    }

    #[tokio::test]
    async fn a_run_lock_is_held_until_the_run_ended() {
        let dir = tempfile::tempdir().expect("tempdir");
        let lock = RunLock::hold(dir.path()).await.expect("lock");
        let other = std::fs::File::open(dir.path().join(LOCK_FILE)).expect("open");
        let busy = rustix::fs::flock(&other, rustix::fs::FlockOperation::NonBlockingLockExclusive);
        assert!(busy.is_err());
        lock.ended().await;
        assert!(dir.path().join(ENDED_FILE).is_file());
        assert!(!dir.path().join(LOCK_FILE).exists());
        rustix::fs::flock(&other, rustix::fs::FlockOperation::NonBlockingLockExclusive)
            .expect("free once the run has ended");
    }
}
