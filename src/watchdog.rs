//! The watchdog: a small parent of the real reviewflow, so that no process of the run outlives
//! it (Linux only).
//!
//! `start` forks while the process is still single-threaded. The parent becomes the watchdog: a
//! child subreaper (orphans of the run, `setsid` ones included, are re-parented to it) that passes
//! SIGINT, SIGTERM and SIGHUP on to the child, waits for it, then kills whatever of the run is
//! left and exits with the child's code. The child carries on as reviewflow, with
//! PR_SET_PDEATHSIG = SIGTERM: if the watchdog is killed, the run is cancelled the way SIGTERM
//! cancels it (children ended with SIGTERM, a grace, SIGKILL; exit 143).

use std::io::Write as _;
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use rustix::io::Errno;
use rustix::process::{Pid, Signal, WaitOptions};

use crate::output::errln;

/// Passed on to the child as they come.
const FORWARDED: [(i32, Signal); 3] = [
    (libc::SIGINT, Signal::INT),
    (libc::SIGTERM, Signal::TERM),
    (libc::SIGHUP, Signal::HUP),
];
/// How long the watchdog keeps killing leftovers before it gives up on them.
const SWEEP_LIMIT: Duration = Duration::from_secs(5);

/// In the child: who watches it, and whether it dies with it.
pub struct Watched {
    pub watchdog: Pid,
    /// Why PR_SET_PDEATHSIG could not be set, if it could not.
    pub death_signal_error: Option<String>,
}

/// Forks the watchdog. Returns in the child only; `Err` when no fork happened (the caller goes
/// on unwatched). `close_in_watchdog` is closed in the watchdog, which must hold no secret.
pub fn start(close_in_watchdog: &mut Option<OwnedFd>) -> Result<Watched, String> {
    // fork copies only the calling thread: another thread's locks (the allocator's) could be
    // held forever in the copy. The one thread the engine may have started by now (a large
    // document freed on a thread of its own) is waited for.
    reviewflow_engine::compile::settle();
    let threads = reviewflow_engine::run::thread_count()?;
    if threads != 1 {
        return Err(format!(
            "this process already runs {threads} threads; forking it is unsafe"
        ));
    }
    // Both processes would write out what is buffered.
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    let watchdog = rustix::process::getpid();
    // Set before the fork, so that no orphan of the child can ever miss it (it is not inherited).
    rustix::process::set_child_subreaper(Some(watchdog))
        .map_err(|e| format!("PR_SET_CHILD_SUBREAPER: {e}"))?;
    let set = signal_set();
    let mut previous = MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: plain libc calls on valid pointers. SIGCHLD must not be ignored (an inherited
    // SIG_IGN would reap the child behind our back); blocking the signals before the fork means
    // none is lost between the fork and the watchdog's first sigwaitinfo.
    let blocked = unsafe {
        libc::signal(libc::SIGCHLD, libc::SIG_DFL);
        libc::sigprocmask(libc::SIG_BLOCK, &set, previous.as_mut_ptr())
    };
    if blocked != 0 {
        let e = std::io::Error::last_os_error();
        let _ = rustix::process::set_child_subreaper(None);
        return Err(format!("sigprocmask: {e}"));
    }
    // SAFETY: sigprocmask succeeded, so it filled the old mask.
    let previous = unsafe { previous.assume_init() };
    // SAFETY: the process is single-threaded (checked above), so the child is a complete copy
    // and may go on running ordinary Rust code.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        let e = std::io::Error::last_os_error();
        restore_mask(&previous);
        let _ = rustix::process::set_child_subreaper(None);
        return Err(format!("fork: {e}"));
    }
    if pid == 0 {
        // The stage children must not inherit blocked signals; tokio installs its handlers later.
        restore_mask(&previous);
        let death_signal_error =
            rustix::process::set_parent_process_death_signal(Some(Signal::TERM))
                .err()
                .map(|e| format!("PR_SET_PDEATHSIG: {e}"));
        if death_signal_error.is_none() && rustix::process::getppid() != Some(watchdog) {
            // The watchdog died before the signal was armed: do what the signal would have done
            // (nothing of the run has started yet).
            std::process::exit(128 + libc::SIGTERM);
        }
        return Ok(Watched {
            watchdog,
            death_signal_error,
        });
    }
    drop(close_in_watchdog.take());
    match Pid::from_raw(pid) {
        Some(child) => watch(child, &set),
        // fork returned a positive pid; this arm cannot be taken.
        None => std::process::exit(1),
    }
}

/// The watchdog's whole life: forward signals until the child ends, sweep, exit like it.
fn watch(child: Pid, set: &libc::sigset_t) -> ! {
    let code = loop {
        // SAFETY: `set` is a valid, initialised signal set; siginfo is optional.
        let signal = unsafe { libc::sigwaitinfo(set, std::ptr::null_mut()) };
        if let Some((_, forward)) = FORWARDED.iter().find(|(n, _)| *n == signal) {
            // ESRCH: the child is already gone; SIGCHLD will say so.
            let _ = rustix::process::kill_process(child, *forward);
            continue;
        }
        // SIGCHLD, or an interrupted wait: see who ended.
        match reap(child) {
            Ok(Some(code)) => break code,
            Ok(None) => {}
            // No child at all any more: nothing to report but a failure.
            Err(_) => break 1,
        }
    };
    // The run's cgroups first: they hold every process of the run's stages, wherever it was
    // re-parented and whatever it forged; then the subreaper's sweep for the rest.
    end_cgroups(child);
    sweep();
    std::process::exit(code)
}

/// Kills and removes the cgroups the child made (`reviewflow-<child pid>` beside the watchdog's
/// own cgroup), if it made any.
fn end_cgroups(child: Pid) {
    let pid = child.as_raw_pid().unsigned_abs();
    if let Some(tree) = reviewflow_engine::exec::confine::cgroup::tree_of(pid)
        && let Err(e) = reviewflow_engine::exec::confine::cgroup::kill_and_remove(&tree, true)
    {
        errln!("reviewflow: watchdog: {e}");
    }
}

/// Reaps every ended child (`wait`, not `waitpid(None)`: that is only our process group, and
/// `setsid` leftovers are not in it); the main child's exit code when it is one of them.
fn reap(child: Pid) -> Result<Option<i32>, Errno> {
    let mut code = None;
    loop {
        match rustix::process::wait(WaitOptions::NOHANG) {
            Ok(Some((pid, status))) if pid == child => {
                code = Some(exit_code(status.exit_status(), status.terminating_signal()));
            }
            Ok(Some(_)) => {}
            Ok(None) => return Ok(code),
            Err(Errno::INTR) => {}
            Err(Errno::CHILD) if code.is_some() => return Ok(code),
            Err(e) => return Err(e),
        }
    }
}

/// What a shell would report: the exit code, or 128 + the signal that killed it.
fn exit_code(exited: Option<i32>, killed_by: Option<i32>) -> i32 {
    match (exited, killed_by) {
        (Some(code), _) => code,
        (None, Some(signal)) => 128 + signal,
        (None, None) => 1,
    }
}

/// Kills every remaining descendant. Only direct children are signalled: their pids cannot be
/// reused before we reap them, so no stranger is ever hit. Killing one re-parents its children
/// to us (we are a subreaper), and the next round gets them.
fn sweep() {
    let me = rustix::process::getpid();
    let deadline = Instant::now() + SWEEP_LIMIT;
    loop {
        let _ = reap_any();
        let children = direct_children(me);
        if children.is_empty() {
            return;
        }
        if Instant::now() >= deadline {
            errln!(
                "reviewflow: watchdog: {} processes of the run did not end after SIGKILL",
                children.len()
            );
            return;
        }
        for pid in children {
            let _ = rustix::process::kill_process(pid, Signal::KILL);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn reap_any() -> Result<(), Errno> {
    loop {
        match rustix::process::wait(WaitOptions::NOHANG) {
            Ok(Some(_)) | Err(Errno::INTR) => {}
            Ok(None) | Err(Errno::CHILD) => return Ok(()),
            Err(e) => return Err(e),
        }
    }
}

/// The children of `me`: from `/proc/<me>/task/*/children`, or where the kernel lacks that
/// file (CONFIG_PROC_CHILDREN), from the parent pid of every `/proc/<pid>/stat`.
fn direct_children(me: Pid) -> Vec<Pid> {
    let me = me.as_raw_pid();
    if let Some(children) = children_files(me) {
        return children;
    }
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|stat| parent_of(&stat))
                == Some(me)
        })
        .filter_map(Pid::from_raw)
        .collect()
}

fn children_files(me: i32) -> Option<Vec<Pid>> {
    let tasks = std::fs::read_dir(format!("/proc/{me}/task")).ok()?;
    let mut out = Vec::new();
    for task in tasks.filter_map(Result::ok) {
        let text = std::fs::read_to_string(task.path().join("children")).ok()?;
        out.extend(
            text.split_whitespace()
                .filter_map(|p| p.parse::<i32>().ok())
                .filter_map(Pid::from_raw),
        );
    }
    Some(out)
}

/// The parent pid in `/proc/<pid>/stat`: the fourth field, after the command name in
/// parentheses (which may itself hold spaces and parentheses).
fn parent_of(stat: &str) -> Option<i32> {
    let (_, after) = stat.rsplit_once(')')?;
    after.split_whitespace().nth(1)?.parse().ok()
}

fn signal_set() -> libc::sigset_t {
    let mut set = MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: sigemptyset initialises the set; sigaddset takes valid signal numbers.
    unsafe {
        libc::sigemptyset(set.as_mut_ptr());
        for (signal, _) in FORWARDED {
            libc::sigaddset(set.as_mut_ptr(), signal);
        }
        libc::sigaddset(set.as_mut_ptr(), libc::SIGCHLD);
        set.assume_init()
    }
}

fn restore_mask(previous: &libc::sigset_t) {
    // SAFETY: `previous` is the mask sigprocmask returned.
    unsafe {
        libc::sigprocmask(libc::SIG_SETMASK, previous, std::ptr::null_mut());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parent_pid_is_read_past_an_odd_command_name() {
        assert_eq!(parent_of("42 (sh) S 7 42 42 0"), Some(7));
        assert_eq!(parent_of("42 (a) b (c)) R 9 1"), Some(9));
        assert_eq!(parent_of("42 (unterminated"), None);
    }

    #[test]
    fn exit_codes_are_what_a_shell_reports() {
        assert_eq!(exit_code(Some(3), None), 3);
        assert_eq!(exit_code(Some(143), None), 143);
        assert_eq!(exit_code(None, Some(libc::SIGKILL)), 137);
        assert_eq!(exit_code(None, Some(libc::SIGTERM)), 143);
    }

    #[test]
    fn this_test_process_is_found_among_its_parents_children() {
        let me = rustix::process::getpid();
        let parent = rustix::process::getppid().expect("a parent");
        let stat = std::fs::read_to_string("/proc/self/stat").expect("stat");
        assert_eq!(parent_of(&stat), Some(parent.as_raw_pid()));
        assert!(direct_children(parent).contains(&me));
    }
}
