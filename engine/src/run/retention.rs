//! Retention of run folders (docs/executor.md, "Run folders"): every `run` keeps the newest
//! [`DEFAULT_KEEP_RUNS`] folders of its runs folder (its own among them) and removes the older
//! ones; `reviewflow prune` does the same on demand. A folder is a run's only when its name is a
//! run id as `run` makes them (`<UTC start, 20261202T185639Z>-<hex>`), which also orders them;
//! anything else in the folder is not ours and is never touched. A run that is still going, one
//! being created, and the run being resumed are never removed, whatever their age.

use std::io;
use std::path::{Path, PathBuf};

use super::events::Event;
use super::private::{ENDED_FILE, LOCK_FILE, cannot_remove, remove_path, remove_work_folders};
use super::reporter::Reporter;
use crate::nofollow;

/// How many run folders `run` keeps when told nothing else.
pub const DEFAULT_KEEP_RUNS: usize = 20;

/// What [`prune_runs`] did.
#[derive(Debug, Default)]
pub struct Pruned {
    /// The runs removed, newest first.
    pub removed: Vec<String>,
    /// The runs left although older than the kept ones (still going, being created, resumed).
    pub spared: Vec<String>,
    /// Removals that failed: the path, and why. Plaintext may remain there.
    pub failures: Vec<(PathBuf, io::Error)>,
}

/// Whether `name` is a run id as `run` makes them: `YYYYMMDDTHHMMSSZ-<lower-case hex>`.
fn is_run_id(name: &str) -> bool {
    let b = name.as_bytes();
    b.len() > 17
        && b[..8].iter().all(u8::is_ascii_digit)
        && b[8] == b'T'
        && b[9..15].iter().all(u8::is_ascii_digit)
        && b[15] == b'Z'
        && b[16] == b'-'
        && b[17..]
            .iter()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
}

/// The run folders of `runs_dir`, newest first. Links and other entries are left out.
fn runs(runs_dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(runs_dir) else {
        return Vec::new();
    };
    let mut ids: Vec<String> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .filter(|id| is_run_id(id))
        .collect();
    ids.sort_unstable_by(|a, b| b.cmp(a));
    ids
}

/// Removes every run folder of `runs_dir` beyond the newest `keep`, with the run's work folders
/// left in `temp_dir`, but those named in `protect` and those alive. Blocking.
pub fn prune_runs(runs_dir: &Path, keep: usize, protect: &[&str], temp_dir: &Path) -> Pruned {
    let mut out = Pruned::default();
    for id in runs(runs_dir).into_iter().skip(keep) {
        if protect.contains(&id.as_str()) {
            out.spared.push(id);
            continue;
        }
        let dir = runs_dir.join(&id);
        // Held while removing, so that the run cannot come back to life meanwhile.
        let Some(_held) = take_if_dead(&dir) else {
            out.spared.push(id);
            continue;
        };
        let work = remove_work_folders(temp_dir, &id);
        out.failures.extend(work.failures);
        match remove_path(&dir) {
            Ok(()) => out.removed.push(id),
            Err(e) => out.failures.push((dir, e)),
        }
    }
    out
}

/// At the start of a run, once its own folder exists: keeps `keep` folders of `runs_dir`, its
/// own and the `resumed` one's spared. A removal that fails is a run-level warning naming the
/// path.
pub(crate) async fn prune(
    runs_dir: &Path,
    temp_dir: &Path,
    keep: usize,
    resumed: Option<&str>,
    own: &str,
    reporter: &Reporter,
) {
    let (runs_dir, temp_dir) = (runs_dir.to_path_buf(), temp_dir.to_path_buf());
    let mut protect = vec![own.to_owned()];
    protect.extend(resumed.map(str::to_owned));
    let pruned = tokio::task::spawn_blocking(move || {
        let protect: Vec<&str> = protect.iter().map(String::as_str).collect();
        prune_runs(&runs_dir, keep, &protect, &temp_dir)
    })
    .await
    .unwrap_or_default();
    for (path, e) in pruned.failures {
        reporter.event(Event::Warning {
            stage: None,
            message: cannot_remove(&path, &e),
        });
    }
}

/// The run in `dir` is over: its lock (`lock`, or `ended` once it ended) can be taken, and it
/// has a manifest (a run writes it only once it holds its lock: without one, it is being
/// created). Returns the lock held, or `Some(None)` for a run of a version without locks.
fn take_if_dead(dir: &Path) -> Option<Option<std::fs::File>> {
    let mut held = None;
    for name in [LOCK_FILE, ENDED_FILE] {
        match nofollow::open_regular(&dir.join(name)) {
            Ok(file) => {
                // Busy: the run is alive.
                rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive)
                    .ok()?;
                held = Some(file);
                break;
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            // A lock that is not a regular file: not ours to judge.
            Err(_) => return None,
        }
    }
    std::fs::symlink_metadata(dir.join("manifest.json"))
        .is_ok_and(|m| m.is_file())
        .then_some(held)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(runs: &Path, id: &str, lock: Option<&str>, manifest: bool) -> PathBuf {
        let dir = runs.join(id);
        std::fs::create_dir_all(dir.join("outputs/review")).expect("mkdir");
        std::fs::write(dir.join("outputs/review/conversation"), "plaintext").expect("write");
        if manifest {
            std::fs::write(dir.join("manifest.json"), r#"{"final":true}"#).expect("write");
        }
        if let Some(name) = lock {
            std::fs::write(dir.join(name), "").expect("write");
        }
        dir
    }

    #[test]
    fn run_ids_are_recognised() {
        assert!(is_run_id("20261202T185639Z-0a1b2c3d"));
        for id in [
            "20261202T185639Z-",
            "20261202T185639Z-0A1B",
            "2026120T185639Z-0a1b",
            "20261202-185639Z-0a1b",
            "notes",
            "latest",
        ] {
            assert!(!is_run_id(id), "{id}");
        }
    }

    #[test]
    fn the_newest_are_kept_and_the_living_spared() {
        let runs = tempfile::tempdir().expect("tempdir");
        let tmp = tempfile::tempdir().expect("tempdir");
        let r = runs.path();
        let newest = run(r, "20261202T120000Z-000000aa", Some(ENDED_FILE), true);
        let second = run(r, "20261202T110000Z-000000aa", Some(ENDED_FILE), true);
        let ended = run(r, "20261202T100000Z-000000aa", Some(ENDED_FILE), true);
        let killed = run(r, "20261202T090000Z-000000aa", Some(LOCK_FILE), true);
        let unlocked = run(r, "20261202T080000Z-000000aa", None, true);
        let creating = run(r, "20261202T070000Z-000000aa", Some(LOCK_FILE), false);
        let living = run(r, "20261202T060000Z-000000aa", Some(LOCK_FILE), true);
        let resumed = run(r, "20261202T050000Z-000000aa", Some(ENDED_FILE), true);
        let other = run(r, "my-notes", None, true);
        let holder = std::fs::File::open(living.join(LOCK_FILE)).expect("open");
        rustix::fs::flock(&holder, rustix::fs::FlockOperation::LockExclusive).expect("lock");
        let work = tmp.path().join("reviewflow-20261202T090000Z-000000aa");
        std::fs::create_dir(&work).expect("mkdir");
        std::os::unix::fs::symlink(&newest, r.join("20261202T130000Z-000000aa")).expect("link");

        let pruned = prune_runs(r, 2, &["20261202T050000Z-000000aa"], tmp.path());
        assert_eq!(
            pruned.removed,
            [
                "20261202T100000Z-000000aa",
                "20261202T090000Z-000000aa",
                "20261202T080000Z-000000aa"
            ]
        );
        assert_eq!(
            pruned.spared,
            [
                "20261202T070000Z-000000aa",
                "20261202T060000Z-000000aa",
                "20261202T050000Z-000000aa"
            ]
        );
        assert!(pruned.failures.is_empty(), "{:?}", pruned.failures);
        for d in [&ended, &killed, &unlocked, &work] {
            assert!(!d.exists(), "{}", d.display());
        }
        for d in [&newest, &second, &creating, &living, &resumed, &other] {
            assert!(
                d.join("outputs/review/conversation").exists(),
                "{}",
                d.display()
            );
        }
        // A link is not a run: neither counted nor followed.
        assert!(r.join("20261202T130000Z-000000aa").exists());
    }

    #[test]
    fn keep_zero_removes_every_finished_run() {
        let runs = tempfile::tempdir().expect("tempdir");
        let tmp = tempfile::tempdir().expect("tempdir");
        run(runs.path(), "20261202T120000Z-01", Some(ENDED_FILE), true);
        let pruned = prune_runs(runs.path(), 0, &[], tmp.path());
        assert_eq!(pruned.removed, ["20261202T120000Z-01"]);
        assert!(
            prune_runs(runs.path(), 0, &[], tmp.path())
                .removed
                .is_empty()
        );
    }
}
