//! What runs that never ended left (docs/executor.md, "Nothing private at rest"): a run killed
//! with SIGKILL or by a power loss removed none of its plaintext. The next run in the checkout
//! removes the kept outputs and work folders of every run that is not final and not alive.

use std::io;
use std::path::{Path, PathBuf};

use super::events::Event;
use super::private::{ENDED_FILE, LOCK_FILE, cannot_remove, remove_path, remove_work_folders};
use super::reporter::Reporter;
use super::resume::valid_id;
use crate::nofollow;

/// The most of a manifest read to learn whether it is final.
const MANIFEST_LIMIT: u64 = 64 << 20;

/// What one leftover run had removed, or could not.
#[derive(Debug, Default)]
struct Cleaned {
    run: String,
    removed: Vec<PathBuf>,
    failures: Vec<(PathBuf, io::Error)>,
}

/// Cleans the leftovers of dead runs in `runs_dir` (all but `own`) and says what it removed.
pub(crate) async fn clean(runs_dir: &Path, own: &str, temp_dir: &Path, reporter: &Reporter) {
    let (runs_dir, own, temp_dir) = (
        runs_dir.to_path_buf(),
        own.to_string(),
        temp_dir.to_path_buf(),
    );
    let cleaned = tokio::task::spawn_blocking(move || clean_blocking(&runs_dir, &own, &temp_dir))
        .await
        .unwrap_or_default();
    for c in cleaned {
        if !c.removed.is_empty() {
            reporter.event(Event::Warning {
                stage: None,
                message: format!(
                    "run {} never ended (it was killed): removed its kept outputs at {}, which may have held plaintext",
                    c.run,
                    c.removed
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            });
        }
        for (path, e) in c.failures {
            reporter.event(Event::Warning {
                stage: None,
                message: format!("run {} never ended: {}", c.run, cannot_remove(&path, &e)),
            });
        }
    }
}

fn clean_blocking(runs_dir: &Path, own: &str, temp_dir: &Path) -> Vec<Cleaned> {
    let Ok(entries) = std::fs::read_dir(runs_dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let Some(id) = entry.file_name().to_str().map(str::to_string) else {
            continue;
        };
        // A link is never a run of ours.
        if id == own || !valid_id(&id) || !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        if let Some(c) = clean_run(&entry.path(), &id, temp_dir) {
            out.push(c);
        }
    }
    out.sort_by(|a, b| a.run.cmp(&b.run));
    out
}

/// Whether the run in `dir` is dead and unfinished; if so, removes its leftovers while holding
/// its lock, so that it cannot come back to life meanwhile.
fn clean_run(dir: &Path, id: &str, temp_dir: &Path) -> Option<Cleaned> {
    // Ended, its plaintext removed: the common case, told by one look.
    if std::fs::symlink_metadata(dir.join(ENDED_FILE)).is_ok() {
        return None;
    }
    let _held = match nofollow::open_regular(&dir.join(LOCK_FILE)) {
        Ok(file) => {
            // Busy: the run is alive.
            rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive).ok()?;
            Some(file)
        }
        // A run of a version without locks: only its manifest can say.
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(_) => return None,
    };
    // No manifest yet: a run being created (it writes its manifest after taking its lock).
    let manifest = nofollow::open_regular(&dir.join("manifest.json")).ok()?;
    let bytes = crate::bounded::read_bounded(manifest, MANIFEST_LIMIT).unwrap_or_default();
    let is_final = serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .and_then(|v| v.get("final").and_then(serde_json::Value::as_bool))
        .unwrap_or(false);
    if is_final {
        return None;
    }
    let mut cleaned = Cleaned {
        run: id.to_string(),
        ..Cleaned::default()
    };
    // The whole of `outputs/`: a run that never ended cannot be resumed, nothing of it is of use.
    let outputs = dir.join("outputs");
    if std::fs::symlink_metadata(&outputs).is_ok() {
        match remove_path(&outputs) {
            Ok(()) => cleaned.removed.push(outputs),
            Err(e) => cleaned.failures.push((outputs, e)),
        }
    }
    let work = remove_work_folders(temp_dir, id);
    cleaned.removed.extend(work.removed);
    cleaned.failures.extend(work.failures);
    Some(cleaned)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(runs: &Path, id: &str, manifest: Option<&str>, lock: bool) -> PathBuf {
        let dir = runs.join(id);
        std::fs::create_dir_all(dir.join("outputs/review")).expect("mkdir");
        std::fs::write(dir.join("outputs/review/conversation"), "plaintext").expect("write");
        if let Some(m) = manifest {
            std::fs::write(dir.join("manifest.json"), m).expect("write");
        }
        if lock {
            std::fs::write(dir.join(LOCK_FILE), "").expect("write");
        }
        dir
    }

    #[test]
    fn only_dead_unfinished_runs_are_cleaned() {
        let runs = tempfile::tempdir().expect("tempdir");
        let tmp = tempfile::tempdir().expect("tempdir");
        let r = runs.path();
        let dead = run(r, "dead", Some(r#"{"final":false}"#), true);
        let old = run(r, "old-no-lock", Some(r#"{"final":false}"#), false);
        let corrupt = run(r, "corrupt", Some("{not json"), true);
        let done = run(r, "done", Some(r#"{"final":true}"#), true);
        // Ended, though its final manifest could not be written.
        let ended = run(r, "ended", Some(r#"{"final":false}"#), false);
        std::fs::write(ended.join(ENDED_FILE), "").expect("write");
        let starting = run(r, "starting", None, true);
        let live = run(r, "live", Some(r#"{"final":false}"#), true);
        let own = run(r, "own", Some(r#"{"final":false}"#), true);
        let holder = std::fs::File::open(live.join(LOCK_FILE)).expect("open");
        rustix::fs::flock(&holder, rustix::fs::FlockOperation::LockExclusive).expect("lock");
        std::fs::create_dir(tmp.path().join("reviewflow-dead-review-x")).expect("mkdir");

        let cleaned = clean_blocking(r, "own", tmp.path());
        let names: Vec<&str> = cleaned.iter().map(|c| c.run.as_str()).collect();
        assert_eq!(names, ["corrupt", "dead", "old-no-lock"]);
        for d in [&dead, &old, &corrupt] {
            assert!(!d.join("outputs").exists(), "{}", d.display());
            assert!(d.join("manifest.json").exists());
        }
        for d in [&done, &ended, &starting, &live, &own] {
            assert!(d.join("outputs").exists(), "{}", d.display());
        }
        assert!(!tmp.path().join("reviewflow-dead-review-x").exists());
        let dead_c = cleaned.iter().find(|c| c.run == "dead").expect("dead");
        assert_eq!(dead_c.removed.len(), 2);
        // Cleaned once: the next run finds nothing more to say.
        let again = clean_blocking(r, "own", tmp.path());
        assert!(again.iter().all(|c| c.removed.is_empty()));
    }
}
