//! A PID namespace per stage, where the `cgroup` layer is missing and the engine can make
//! namespaces (as root, or in its user namespace): what a stage's children start is known by
//! something it cannot forge or leave, its PID namespace, and ends with it.
//!
//! Each child of the stage enters the namespace for its children (`setns(CLONE_NEWPID)` before
//! its `execve`: the child itself stays where it is, everything it starts is inside). PID 1 there
//! is the stage's init, which the engine starts ([`builder`]'s `hold`): it reaps what is
//! re-parented to it and heeds no signal from inside, so nothing inside can end it. When the
//! stage ends (its last child exited, its timeout, a cancellation, the run's end) the engine
//! sends the init SIGTERM; the init forwards it to every process of the namespace, whatever
//! group or session it is in, so that a leftover gets its chance to clean up, and exits once
//! none is left or after the grace period; the kernel then kills everything still in the
//! namespace. The engine reaps what it adopted (a process whose parent was the stage's child,
//! outside the namespace, is adopted by the engine, a subreaper) until the init itself can be
//! reaped, and kills the init if it has not exited shortly after the grace period. Then nothing
//! of the stage is alive, whatever it forged: its environment's marker, `setsid`, a chain that
//! re-forks.
//!
//! The stage's child, outside the namespace, is ended as every child is (its process group:
//! SIGTERM, the grace period, SIGKILL); its descendants are in its group unless they left it, and
//! in the namespace whatever they did.

use std::io;
use std::os::fd::OwnedFd;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::builder::{self, HOLDER_STACK, InitGrace, Op};
use crate::exec::stack::Stack;

/// How long the end of a stage waits, past the grace period, for its PID namespace to empty.
const EMPTY_WAIT: Duration = Duration::from_secs(5);

/// A stage's PID namespace and its init.
#[derive(Debug)]
pub struct StagePids {
    ns: OwnedFd,
    /// The namespace's identity (`st_ino` of its descriptor), to find its processes in `/proc`.
    ino: u64,
    holder: libc::pid_t,
    /// What the init runs on and reads: kept until it has been reaped (forgotten otherwise).
    init: Option<(Stack, Box<InitGrace>)>,
}

impl StagePids {
    /// Makes the namespace and starts its init.
    pub fn create() -> io::Result<Self> {
        let stack = Stack::new(HOLDER_STACK)?;
        // None until a child of the stage gives its own ([`StagePids::at_least`]).
        let grace = Box::new(InitGrace::default());
        let mut ops = super::namespaces::enter_owner()?;
        ops.extend([
            Op::Unshare(libc::CLONE_NEWPID),
            Op::Holder {
                stack_top: stack.top() as usize,
                grace: std::ptr::from_ref::<InitGrace>(&grace) as usize,
            },
            // Only once its init exists can the namespace be opened.
            Op::OpenNs(c"/proc/self/ns/pid_for_children"),
        ]);
        let built = match builder::run_full(&ops) {
            Ok(built) => built,
            Err(e) => {
                // An init may have started and not been reaped: nothing it may still run on or
                // read is freed (a rare failure leaks 64 KiB).
                std::mem::forget((stack, grace));
                return Err(e);
            }
        };
        let holder = built
            .holder
            .ok_or_else(|| io::Error::other("the PID namespace's init did not start"))?;
        let ns_and_ino = built
            .fds
            .into_iter()
            .next()
            .ok_or_else(|| io::Error::other("the PID namespace was not opened"))
            .and_then(|ns| {
                let ino = rustix::fs::fstat(&ns).map_err(io::Error::from)?.st_ino;
                Ok((ns, ino))
            });
        match ns_and_ino {
            Ok((ns, ino)) => Ok(Self {
                ns,
                ino,
                holder,
                init: Some((stack, grace)),
            }),
            Err(e) => {
                if !builder::end_holder(holder) {
                    std::mem::forget((stack, grace));
                }
                Err(e)
            }
        }
    }

    /// Makes the grace period the init gives the namespace's processes at the end at least
    /// `grace` (a stage's children may have different ones: the longest holds).
    pub(crate) fn at_least(&self, grace: Duration) {
        if let Some((_, g)) = &self.init {
            g.0.fetch_max(millis(grace), Ordering::SeqCst);
        }
    }

    /// The descriptor a child passes to `setns(CLONE_NEWPID)`.
    pub(crate) fn fd(&self) -> &OwnedFd {
        &self.ns
    }

    /// The init's pid (its namespace's PID 1), which no sweep may take for a leftover.
    pub fn holder(&self) -> i32 {
        self.holder
    }
}

impl Drop for StagePids {
    /// Ends everything in the namespace: SIGTERM to the init, which forwards it and exits after
    /// the grace period at the latest; SIGKILL if it has not by then. Blocking (bounded).
    fn drop(&mut self) {
        let grace = self.init.as_ref().map_or(Duration::ZERO, |(_, g)| {
            Duration::from_millis(g.0.load(Ordering::SeqCst))
        });
        // SAFETY: a plain system call on a child of this process not reaped yet.
        unsafe { libc::kill(self.holder, libc::SIGTERM) };
        let started = Instant::now();
        let mut killed = false;
        // The init usually exits within a fraction of a millisecond: look soon, then less often.
        let mut pause = Duration::from_micros(20);
        loop {
            let mut status = 0;
            // SAFETY: `status` is a valid out-pointer.
            let rc =
                unsafe { libc::waitpid(self.holder, &mut status, libc::WNOHANG | libc::__WALL) };
            if rc == self.holder {
                // Reaped: its stack and grace are no longer used.
                drop(self.init.take());
                return;
            }
            if rc < 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                // Not ours to wait for (the engine is no subreaper, and it was adopted by
                // another): killed, but it may still run, so its stack stays mapped.
                // SAFETY: as above.
                unsafe { libc::kill(self.holder, libc::SIGKILL) };
                std::mem::forget(self.init.take());
                return;
            }
            if !killed && started.elapsed() >= grace + STOP_SLACK {
                // SAFETY: as above.
                unsafe { libc::kill(self.holder, libc::SIGKILL) };
                killed = true;
            }
            // The kernel ends the init only once every process of its namespace has been
            // reaped: those the engine adopted are the engine's to reap (after the grace, killed
            // first).
            for pid in adopted_in(self.ino, self.holder) {
                // SAFETY: as above, for a child of this process.
                unsafe {
                    if killed {
                        libc::kill(pid, libc::SIGKILL);
                    }
                    libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG | libc::__WALL);
                }
            }
            if started.elapsed() >= grace + STOP_SLACK + EMPTY_WAIT {
                // The stack stays mapped: the init may still run on it.
                std::mem::forget(self.init.take());
                return;
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(5));
        }
    }
}

/// How long past the grace period the engine waits for the init to exit on its own.
const STOP_SLACK: Duration = Duration::from_millis(500);

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The engine's children in the PID namespace `ino`, but its `holder`.
fn adopted_in(ino: u64, holder: libc::pid_t) -> Vec<libc::pid_t> {
    let mut out = Vec::new();
    for task in std::fs::read_dir("/proc/self/task")
        .into_iter()
        .flatten()
        .flatten()
    {
        let Ok(text) = std::fs::read_to_string(task.path().join("children")) else {
            continue;
        };
        for pid in text
            .split_ascii_whitespace()
            .filter_map(|p| p.parse::<libc::pid_t>().ok())
        {
            if pid != holder
                && rustix::fs::stat(format!("/proc/{pid}/ns/pid")).is_ok_and(|s| s.st_ino == ino)
            {
                out.push(pid);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A process that left its group and session inside the namespace, started by a child
    /// outside it (as a stage's child starts its leftovers), is gone when the namespace ends.
    #[test]
    fn what_a_child_leaves_in_its_pid_namespace_ends_with_it() {
        if let Err(why) = super::super::namespaces::available() {
            println!("SKIPPED-LAYER pid-namespace: {why}");
            return;
        }
        super::super::reaper::become_subreaper().expect("subreaper");
        let pids = StagePids::create().expect("pid namespace");
        let fd = std::os::fd::AsRawFd::as_raw_fd(pids.fd());
        let user = super::super::namespaces::user_ns();
        let mut cmd = std::process::Command::new("sh");
        // The leftover: re-parented to the engine once `sh` exits.
        cmd.args([
            "-c",
            "setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $!",
        ]);
        // SAFETY: system calls only, in the forked child.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || {
                if let Some(user) = user
                    && libc::setns(user, libc::CLONE_NEWUSER) < 0
                {
                    return Err(io::Error::last_os_error());
                }
                if libc::setns(fd, libc::CLONE_NEWPID) < 0 {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let out = cmd.output().expect("sh runs");
        assert!(out.status.success(), "{out:?}");
        let adopted = adopted_in(pids.ino, pids.holder());
        assert_eq!(adopted.len(), 1, "the leftover is adopted: {adopted:?}");
        drop(pids);
        let alive = std::fs::read_to_string(format!("/proc/{}/stat", adopted[0]));
        assert!(alive.is_err(), "still there: {alive:?}");
    }

    /// Starts `script` under `sh` in `pids`' namespace from a child outside it, as a stage's
    /// child starts what it leaves behind.
    fn start_in(pids: &StagePids, script: &str, dir: &std::path::Path) {
        let fd = std::os::fd::AsRawFd::as_raw_fd(pids.fd());
        let user = super::super::namespaces::user_ns();
        let mut cmd = std::process::Command::new("sh");
        cmd.args(["-c", script]).env("DIR", dir);
        // SAFETY: system calls only, in the forked child.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || {
                if let Some(user) = user
                    && libc::setns(user, libc::CLONE_NEWUSER) < 0
                {
                    return Err(io::Error::last_os_error());
                }
                if libc::setns(fd, libc::CLONE_NEWPID) < 0 {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let out = cmd.output().expect("sh runs");
        assert!(out.status.success(), "{out:?}");
    }

    /// Waits until `path` exists (the leftover wrote it), for at most a minute.
    fn wait_for(path: &std::path::Path) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !path.exists() {
            assert!(
                Instant::now() < deadline,
                "{} never appeared",
                path.display()
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// A stage's PID namespace with a `grace` period, and in it a `setsid` leftover running
    /// `script` (which writes `$DIR/ready` when set up), once it is ready; `None` (and a line
    /// the harness shows) where the layer is missing.
    fn setsid_leftover(grace: Duration, script: &str) -> Option<(StagePids, tempfile::TempDir)> {
        if let Err(why) = super::super::namespaces::available() {
            println!("SKIPPED-LAYER pid-namespace: {why}");
            return None;
        }
        super::super::reaper::become_subreaper().expect("subreaper");
        let dir = tempfile::tempdir().expect("tempdir");
        let pids = StagePids::create().expect("pid namespace");
        pids.at_least(grace);
        std::fs::write(dir.path().join("leftover.sh"), script).expect("write");
        start_in(
            &pids,
            r#"setsid sh "$DIR/leftover.sh" </dev/null >/dev/null 2>&1 &"#,
            dir.path(),
        );
        wait_for(&dir.path().join("ready"));
        Some((pids, dir))
    }

    /// A leftover that left the stage's group and session gets SIGTERM from the namespace's
    /// init, and so its chance to clean up, before anything is killed; and the namespace ends
    /// as soon as it is empty, not after the whole grace period.
    #[test]
    fn a_setsid_leftover_gets_sigterm_before_its_namespace_ends() {
        // It traps SIGTERM, writes `termed` on it and exits; a SIGKILL leaves no file. It waits
        // for a child that says `ready` from a fresh shell (whose SIGTERM is the default, so
        // that no copy of the trap keeps it alive), then replaces itself with `sleep`.
        let Some((pids, dir)) = setsid_leftover(
            Duration::from_secs(30),
            "trap 'echo bye > \"$DIR/termed\"; exit 0' TERM\nsh -c 'echo > \"$DIR/ready\"; exec sleep 300' &\nwait\n",
        ) else {
            return;
        };
        let started = Instant::now();
        drop(pids);
        let took = started.elapsed();
        assert!(
            dir.path().join("termed").exists(),
            "the leftover was killed without SIGTERM"
        );
        assert!(
            took < Duration::from_secs(10),
            "the namespace ended after {took:?}: it waited for the grace period"
        );
    }

    /// A leftover that ignores SIGTERM is killed once the grace period is over.
    #[test]
    fn a_leftover_that_ignores_sigterm_is_killed_after_the_grace() {
        let Some((pids, _dir)) = setsid_leftover(
            Duration::from_millis(300),
            "trap '' TERM\necho > \"$DIR/ready\"\nwhile :; do sleep 1; done\n",
        ) else {
            return;
        };
        let ino = pids.ino;
        drop(pids);
        // Nothing of the namespace is alive.
        let left: Vec<_> = std::fs::read_dir("/proc")
            .expect("/proc")
            .flatten()
            .filter(|e| rustix::fs::stat(e.path().join("ns/pid")).is_ok_and(|s| s.st_ino == ino))
            .map(|e| e.file_name())
            .collect();
        assert!(left.is_empty(), "still alive: {left:?}");
    }
}
