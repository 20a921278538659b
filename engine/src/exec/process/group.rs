//! The child's process group: signals to every process in it, and an exit check that leaves the
//! leader unreaped.
//!
//! While the leader is not reaped its pid stays taken, so its process group id cannot be
//! reused: signalling the group is safe exactly until the leader is reaped. [`ProcessGroup`]
//! is therefore disarmed right after the reap, and kills the group with SIGKILL if it is dropped
//! while still armed (the supervising future was dropped mid-run).

use std::io;

use libc::{c_int, pid_t};

/// The process group led by a spawned child (`process_group(0)` makes its pgid its pid).
#[derive(Debug)]
pub(super) struct ProcessGroup {
    pgid: pid_t,
    armed: bool,
}

impl ProcessGroup {
    pub(super) fn new(leader_pid: u32) -> Option<Self> {
        let pgid = pid_t::try_from(leader_pid).ok().filter(|&p| p > 0)?;
        Some(Self { pgid, armed: true })
    }

    /// Sends `signal` to every process of the group. Errors (the group is already empty) are
    /// of no interest: the caller goes on to wait either way.
    pub(super) fn signal(&self, signal: c_int) {
        if self.armed {
            // SAFETY: killpg has no memory-safety preconditions; the pgid is still reserved
            // because the leader is not reaped while `armed`.
            unsafe {
                libc::killpg(self.pgid, signal);
            }
        }
    }

    /// Whether the leader has exited, without reaping it (`WNOWAIT`), so that the group can
    /// still be signalled safely afterwards.
    pub(super) fn leader_exited(&self) -> io::Result<bool> {
        loop {
            // SAFETY: siginfo_t is plain data; all-zero is a valid value.
            let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
            // SAFETY: `info` is a valid, writable siginfo_t for the duration of the call.
            let rc = unsafe {
                libc::waitid(
                    libc::P_PID,
                    self.pgid as libc::id_t,
                    &mut info,
                    libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
                )
            };
            if rc == 0 {
                return Ok(exited_pid(&info) != 0);
            }
            let err = io::Error::last_os_error();
            match err.raw_os_error() {
                Some(libc::EINTR) => continue,
                // Not our child any more: reaped elsewhere; the wait that follows will say so.
                Some(libc::ECHILD) => return Ok(true),
                _ => return Err(err),
            }
        }
    }

    /// The leader has been reaped: from now on its pid may be reused, never signal again.
    pub(super) fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.signal(libc::SIGKILL);
    }
}

/// `si_pid` of a `waitid` result: zero when no child changed state (`WNOHANG`).
#[cfg(any(target_os = "linux", target_os = "android"))]
fn exited_pid(info: &libc::siginfo_t) -> pid_t {
    // SAFETY: waitid filled a SIGCHLD siginfo (or left it zeroed), for which si_pid is valid.
    unsafe { info.si_pid() }
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn exited_pid(info: &libc::siginfo_t) -> pid_t {
    info.si_pid
}
