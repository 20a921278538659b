//! The one place a git command is built. Every call to git goes through [`git_command`], so the
//! hardening below holds everywhere:
//!
//! - Global options: `--no-pager`; `--no-optional-locks` (read-only commands never rewrite the
//!   index, so concurrent runs and the user's own git do not collide); `--no-replace-objects`
//!   (a `refs/replace/` entry cannot make a commit look like another); `-c core.quotepath=off`
//!   (non-ASCII paths in diffs stay readable; special characters are still quoted);
//!   `-c core.fsmonitor=false` (never start a monitor program); `-c color.ui=never`.
//! - Diff-producing subcommands also get `--no-ext-diff --no-textconv --no-color`, so neither a
//!   `diff.external` setting nor a `.gitattributes` driver from the reviewed change runs code.
//! - Environment: every inherited `GIT_*` variable is removed, so `GIT_DIR`/`GIT_WORK_TREE` cannot
//!   redirect `-C`, and `GIT_CONFIG_PARAMETERS`/`GIT_CONFIG_COUNT` (how `git -c` reaches child
//!   processes) cannot inject settings; we never pass a caller's `-c` values. Then
//!   `GIT_TERMINAL_PROMPT=0` (never wait for a password), `GIT_PAGER=cat`, `PAGER=cat` and
//!   `LC_ALL=C` (stable messages). Standard input is closed.
//! - The system and global config files are still read (`GIT_CONFIG_NOSYSTEM` is not set): CI
//!   images put `safe.directory` there, without which git refuses checkouts owned by another
//!   user. What they could change in our output is pinned instead: we use plumbing (`rev-parse`,
//!   `merge-base`, `diff-tree`, `symbolic-ref`), which ignores UI settings such as
//!   `diff.noprefix`, aliases cannot shadow built-in commands, and the settings above win over
//!   config files.
//! - Callers put revisions after `--end-of-options` and paths after `--`, so a ref named
//!   `--output=x` is a ref, not an option.
//! - Every call is bounded ([`spawn_bounded`]): in time ([`timeout`]), after which git's process
//!   group is killed; in stdout ([`MAX_STDOUT`] unless the caller says less) and stderr
//!   ([`MAX_STDERR_READ`] kept, the rest drained). git runs in its own process group, with
//!   `PR_SET_PDEATHSIG`, so neither a hung git nor its children outlive the call or the process.

use std::ffi::OsStr;
use std::io::{self, Read};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::GitError;
use super::error::tidy_stderr;

/// Subcommands that can print a diff and so get the diff hardening.
const DIFF_SUBCOMMANDS: &[&str] = &[
    "diff",
    "diff-tree",
    "diff-index",
    "diff-files",
    "show",
    "log",
    "format-patch",
];

/// A hardened `git -C <repo> … <subcommand>` with nothing after the subcommand's own fixed
/// options: append arguments, putting revisions after `--end-of-options` and paths after `--`.
pub fn git_command(repo: &Path, subcommand: &str) -> Command {
    let mut cmd = Command::new("git");
    cmd.arg("-C").arg(repo);
    cmd.args(["--no-pager", "--no-optional-locks", "--no-replace-objects"]);
    cmd.args([
        "-c",
        "core.quotepath=off",
        "-c",
        "core.fsmonitor=false",
        "-c",
        "color.ui=never",
    ]);
    cmd.arg(subcommand);
    if DIFF_SUBCOMMANDS.contains(&subcommand) {
        cmd.args(["--no-ext-diff", "--no-textconv", "--no-color"]);
    }
    for (key, _) in std::env::vars_os() {
        if key.as_encoded_bytes().starts_with(b"GIT_") {
            cmd.env_remove(key);
        }
    }
    cmd.env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_PAGER", "cat")
        .env("PAGER", "cat")
        .env("LC_ALL", "C")
        .stdin(Stdio::null());
    cmd
}

/// Runs `git <subcommand> <args>` in `repo` and returns its output, whatever its exit status.
/// Bounded: see [`spawn_bounded`].
pub(crate) fn run<I, S>(repo: &Path, subcommand: &str, args: I) -> Result<Output, GitError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut cmd = git_command(repo, subcommand);
    cmd.args(args);
    output(cmd, subcommand)
}

/// [`spawn_bounded`] with the default bounds; more stdout than [`MAX_STDOUT`] is an error.
pub(crate) fn output(cmd: Command, subcommand: &str) -> Result<Output, GitError> {
    let ran = spawn_bounded(cmd, subcommand, MAX_STDOUT, 0)?;
    if ran.overflow.is_some() {
        return Err(GitError::TooLarge {
            subcommand: subcommand.to_owned(),
            limit: MAX_STDOUT,
        });
    }
    Ok(Output {
        status: ran.status,
        stdout: ran.stdout,
        stderr: ran.stderr,
    })
}

/// The most stdout any git call returns unless its caller bounds it lower.
pub const MAX_STDOUT: u64 = 64 << 20;
/// The most stderr kept from a git call (the rest is drained, so git never blocks on it).
pub const MAX_STDERR_READ: u64 = 16 << 10;
/// The time bound of a git call when `REVIEWFLOW_GIT_TIMEOUT_MS` does not set it.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// The time bound of every git call: [`DEFAULT_TIMEOUT`], or `REVIEWFLOW_GIT_TIMEOUT_MS`
/// milliseconds (read once; it exists so that tests can use a small bound).
pub fn timeout() -> Duration {
    static TIMEOUT: OnceLock<Duration> = OnceLock::new();
    *TIMEOUT.get_or_init(|| {
        std::env::var("REVIEWFLOW_GIT_TIMEOUT_MS")
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .filter(|&ms| ms > 0)
            .map_or(DEFAULT_TIMEOUT, Duration::from_millis)
    })
}

/// What a bounded git call returned.
pub(crate) struct Ran {
    pub status: ExitStatus,
    /// At most the bound.
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// When stdout passed the bound: the size seen (the bound plus up to `measure` more bytes)
    /// and whether that is all of it. git was killed.
    pub overflow: Option<(u64, bool)>,
}

/// Runs `cmd` (a [`git_command`]) with its stdout and stderr piped, in its own process group:
/// stdout is read up to `max_stdout` bytes (past it, up to `measure` more bytes are counted and
/// git is killed); the call fails with [`GitError::TimedOut`] after [`timeout`], git's whole
/// process group killed.
pub(crate) fn spawn_bounded(
    cmd: Command,
    subcommand: &str,
    max_stdout: u64,
    measure: u64,
) -> Result<Ran, GitError> {
    spawn_within(cmd, subcommand, max_stdout, measure, timeout())
}

/// [`spawn_bounded`] with the time bound given.
fn spawn_within(
    mut cmd: Command,
    subcommand: &str,
    max_stdout: u64,
    measure: u64,
    limit: Duration,
) -> Result<Ran, GitError> {
    use std::os::unix::process::CommandExt as _;
    let deadline = Instant::now() + limit;
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    // SAFETY: the closure runs in the child between fork and exec and only makes a raw prctl
    // system call (async-signal-safe, no allocation).
    unsafe {
        cmd.pre_exec(|| {
            rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))
                .map_err(io::Error::from)
        });
    }
    let spawn_err = |source| GitError::Spawn {
        subcommand: subcommand.to_owned(),
        source,
    };
    // Registered until this function returns (after the wait): a stage ending meanwhile sweeps
    // the engine's unattributed children, and git leads a process group of its own.
    let (mut child, _registered) =
        reviewflow_engine::exec::confine::reaper::spawn_registered(&mut cmd).map_err(spawn_err)?;
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        end(&mut child);
        return Err(spawn_err(io::Error::other("no pipe to git")));
    };
    let (out_tx, out_rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut stdout = stdout;
        let mut buf = Vec::new();
        let read = stdout
            .by_ref()
            .take(max_stdout.saturating_add(1))
            .read_to_end(&mut buf);
        let mut overflow = None;
        if read.is_ok() && buf.len() as u64 > max_stdout {
            let more = io::copy(&mut stdout.by_ref().take(measure), &mut io::sink()).unwrap_or(0);
            let exact = matches!(stdout.read(&mut [0u8; 1]), Ok(0));
            overflow = Some(((buf.len() as u64).saturating_add(more), exact));
            buf.truncate(usize::try_from(max_stdout).unwrap_or(usize::MAX));
        }
        let _ = out_tx.send((buf, overflow, read.err()));
    });
    let (err_tx, err_rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut stderr = stderr;
        let mut buf = Vec::new();
        let _ = stderr.by_ref().take(MAX_STDERR_READ).read_to_end(&mut buf);
        let _ = io::copy(&mut stderr, &mut io::sink());
        let _ = err_tx.send(buf);
    });
    let timed_out = |child: &mut Child| {
        end(child);
        GitError::TimedOut {
            subcommand: subcommand.to_owned(),
            limit,
        }
    };
    let left = || deadline.saturating_duration_since(Instant::now());
    let (stdout, overflow, read_err) = match out_rx.recv_timeout(left()) {
        Ok(got) => got,
        Err(_) => return Err(timed_out(&mut child)),
    };
    if let Some(e) = read_err {
        end(&mut child);
        return Err(spawn_err(e));
    }
    if overflow.is_some() {
        end(&mut child);
        let stderr = err_rx
            .recv_timeout(Duration::from_secs(1))
            .unwrap_or_default();
        let status = child.wait().map_err(spawn_err)?;
        return Ok(Ran {
            status,
            stdout,
            stderr,
            overflow,
        });
    }
    let stderr = match err_rx.recv_timeout(left()) {
        Ok(buf) => buf,
        Err(_) => return Err(timed_out(&mut child)),
    };
    // Both pipes are closed: git has exited or is about to.
    let mut pause = Duration::from_millis(1);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if left().is_zero() => return Err(timed_out(&mut child)),
            Ok(None) => {
                std::thread::sleep(pause.min(left()));
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            Err(e) => {
                end(&mut child);
                return Err(spawn_err(e));
            }
        }
    };
    Ok(Ran {
        status,
        stdout,
        stderr,
        overflow: None,
    })
}

/// Kills git's process group (its children with it) and reaps git.
fn end(child: &mut Child) {
    if let Some(pid) = rustix::process::Pid::from_raw(child.id() as i32) {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Like [`run`], but a non-zero exit is an error; returns stdout.
pub(crate) fn run_ok<I, S>(repo: &Path, subcommand: &str, args: I) -> Result<Vec<u8>, GitError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let output = run(repo, subcommand, args)?;
    if output.status.success() {
        Ok(output.stdout)
    } else {
        Err(failed(subcommand, &output))
    }
}

pub(crate) fn failed(subcommand: &str, output: &Output) -> GitError {
    GitError::Failed {
        subcommand: subcommand.to_owned(),
        code: output.status.code(),
        stderr: tidy_stderr(&output.stderr),
    }
}

/// stdout as one trimmed line of UTF-8.
pub(crate) fn one_line(subcommand: &str, stdout: &[u8]) -> Result<String, GitError> {
    let text = std::str::from_utf8(stdout).map_err(|_| GitError::BadOutput {
        subcommand: subcommand.to_owned(),
        output: super::error::echo(&String::from_utf8_lossy(stdout)),
    })?;
    Ok(text.trim_end_matches(['\n', '\r']).to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", script]);
        cmd
    }

    #[test]
    fn a_hung_command_and_its_children_are_killed_at_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        // A child of the command that would outlive it, holding the pipes open.
        let script = format!("sleep 600 & echo $! > {}; wait", pid_file.display());
        // The bound leaves a loaded machine time to start the shell and write the pid file.
        let err = spawn_within(sh(&script), "hang", 1024, 0, Duration::from_secs(2))
            .err()
            .unwrap();
        assert!(matches!(err, GitError::TimedOut { .. }), "{err}");
        assert!(
            err.to_string()
                .starts_with("`git hang` did not finish within 2 s: it was killed"),
            "{err}"
        );
        let pid = std::fs::read_to_string(&pid_file).unwrap();
        let pid: i32 = pid.trim().parse().unwrap();
        // The group was killed: the grandchild goes (reaped by init, or a zombie of it). SIGKILL
        // is delivered, not awaited: watch for its end rather than sleep a while.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let stat = loop {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            if stat.is_empty() || stat.contains(") Z ") || std::time::Instant::now() > deadline {
                break stat;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        assert!(
            stat.is_empty() || stat.contains(") Z "),
            "the grandchild is still running: {stat}"
        );
    }

    #[test]
    fn output_past_the_bound_is_cut_and_measured() {
        let ran = spawn_within(
            sh("head -c 5000 /dev/zero"),
            "big",
            1000,
            2000,
            Duration::from_secs(60),
        )
        .unwrap();
        assert_eq!(ran.stdout.len(), 1000);
        assert_eq!(ran.overflow, Some((3001, false)));
        let ran = spawn_within(
            sh("head -c 1500 /dev/zero"),
            "big",
            1000,
            2000,
            Duration::from_secs(60),
        )
        .unwrap();
        assert_eq!(ran.overflow, Some((1500, true)));
        let ran = spawn_within(
            sh("head -c 1000 /dev/zero; echo oops >&2; exit 3"),
            "fits",
            1000,
            0,
            Duration::from_secs(60),
        )
        .unwrap();
        assert_eq!(ran.stdout.len(), 1000);
        assert_eq!(ran.overflow, None);
        assert_eq!(ran.status.code(), Some(3));
        assert_eq!(ran.stderr, b"oops\n");
    }

    #[test]
    fn endless_output_never_fills_memory() {
        // `yes` never ends: the bound, not the end of the output, stops the read.
        let ran =
            spawn_within(sh("yes"), "yes", 1 << 16, 1 << 16, Duration::from_secs(60)).unwrap();
        assert_eq!(ran.stdout.len(), 1 << 16);
        assert!(matches!(ran.overflow, Some((n, false)) if n == 1 << 17 | 1));
    }
}
