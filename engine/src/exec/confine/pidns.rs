//! A PID namespace per stage, where the `cgroup` layer is missing and the engine can make
//! namespaces (as root, or in its user namespace): what a stage's children start is known by
//! something it cannot forge or leave, its PID namespace, and ends with it.
//!
//! Each child of the stage enters the namespace for its children (`setns(CLONE_NEWPID)` before
//! its `execve`: the child itself stays where it is, everything it starts is inside). PID 1 there
//! is a holder the engine starts ([`builder`]'s `hold`): it reaps what is re-parented to it and
//! handles no signal, so nothing inside can end it. When the stage ends the engine kills it,
//! and the kernel kills everything in the namespace with it; the engine reaps what it had
//! adopted (a process whose parent was the stage's child, outside the namespace, is adopted by
//! the engine, a subreaper) until the holder itself can be reaped. Then nothing of the stage is
//! alive, whatever it forged: its environment's marker, `setsid`, a chain that re-forks.
//!
//! The stage's child, outside the namespace, is ended as every child is (its process group:
//! SIGTERM, the grace period, SIGKILL); its descendants are in its group unless they left it, and
//! in the namespace whatever they did.

use std::io;
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use super::builder::{self, HolderStack, Op};

/// How long the end of a stage waits for its PID namespace to empty.
const EMPTY_WAIT: Duration = Duration::from_secs(5);

/// A stage's PID namespace and its holder.
#[derive(Debug)]
pub struct StagePids {
    ns: OwnedFd,
    /// The namespace's identity (`st_ino` of its descriptor), to find its processes in `/proc`.
    ino: u64,
    holder: libc::pid_t,
    stack: Option<HolderStack>,
}

impl StagePids {
    /// Makes the namespace and starts its holder.
    pub fn create() -> io::Result<Self> {
        let stack = HolderStack::new()?;
        let mut ops = super::namespaces::enter_owner()?;
        ops.extend([
            Op::Unshare(libc::CLONE_NEWPID),
            Op::Holder(stack.top()),
            // Only once its init exists can the namespace be opened.
            Op::OpenNs(c"/proc/self/ns/pid_for_children"),
        ]);
        let built = builder::run_full(&ops)?;
        let holder = built
            .holder
            .ok_or_else(|| io::Error::other("the PID namespace's init did not start"))?;
        let Some(ns) = built.fds.into_iter().next() else {
            builder::end_holder(holder);
            return Err(io::Error::other("the PID namespace was not opened"));
        };
        let ino = rustix::fs::fstat(&ns).map_err(io::Error::from)?.st_ino;
        Ok(Self {
            ns,
            ino,
            holder,
            stack: Some(stack),
        })
    }

    /// The descriptor a child passes to `setns(CLONE_NEWPID)`.
    pub(crate) fn fd(&self) -> &OwnedFd {
        &self.ns
    }

    /// The holder's pid (its namespace's PID 1), which no sweep may take for a leftover.
    pub fn holder(&self) -> i32 {
        self.holder
    }
}

impl Drop for StagePids {
    /// Ends everything in the namespace. Blocking (bounded).
    fn drop(&mut self) {
        // SAFETY: a plain system call on a child of this process not reaped yet.
        unsafe { libc::kill(self.holder, libc::SIGKILL) };
        let deadline = Instant::now() + EMPTY_WAIT;
        loop {
            let mut status = 0;
            // SAFETY: `status` is a valid out-pointer.
            let rc =
                unsafe { libc::waitpid(self.holder, &mut status, libc::WNOHANG | libc::__WALL) };
            if rc == self.holder {
                // Reaped: its stack is no longer used.
                drop(self.stack.take());
                return;
            }
            if rc < 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                // Not ours to wait for (the engine is no subreaper, and it was adopted by
                // another): killed, but it may still run, so its stack stays mapped.
                std::mem::forget(self.stack.take());
                return;
            }
            // The kernel ends the holder only once every process of its namespace has been
            // reaped: those the engine adopted are the engine's to reap.
            for pid in adopted_in(self.ino, self.holder) {
                // SAFETY: as above, for a child of this process.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                    libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG | libc::__WALL);
                }
            }
            if Instant::now() >= deadline {
                // The stack stays mapped: the holder may still run on it.
                std::mem::forget(self.stack.take());
                return;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }
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
}
