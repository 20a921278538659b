//! The child's process group: signals to every process in it, and an exit check that leaves the
//! leader unreaped.
//!
//! While the leader is not reaped its pid stays taken, so its process group id cannot be
//! reused: signalling the group is safe exactly until the leader is reaped. [`ProcessGroup`]
//! is therefore disarmed right after the reap, and kills the group with SIGKILL if it is dropped
//! while still armed (the supervising future was dropped mid-run).

use std::io;

use crate::exec::confine::cgroup::ChildCgroup;
use rustix::io::Errno;
use rustix::process::{Pid, Signal, WaitId, WaitIdOptions, kill_process_group, waitid};

/// The process group led by a spawned child (`process_group(0)` makes its pgid its pid).
#[derive(Debug)]
pub(super) struct ProcessGroup {
    pgid: Pid,
    armed: bool,
    /// The child's cgroup, where the layer holds: every process the child started, whatever
    /// group or session it moved to, gets the group's signals too.
    cgroup: Option<ChildCgroup>,
}

impl ProcessGroup {
    pub(super) fn new(leader_pid: u32, cgroup: Option<ChildCgroup>) -> Option<Self> {
        let pgid = Pid::from_raw(i32::try_from(leader_pid).ok()?)?;
        Some(Self {
            pgid,
            armed: true,
            cgroup,
        })
    }

    /// Sends `signal` to every process of the group, and of the child's cgroup. Errors (the
    /// group is already empty) are of no interest: the caller goes on to wait either way. The
    /// pgid is still reserved while `armed`, because the leader is not reaped.
    pub(super) fn signal(&self, signal: Signal) {
        if self.armed {
            let _ = kill_process_group(self.pgid, signal);
        }
        if let Some(cgroup) = &self.cgroup {
            cgroup.signal(signal);
        }
    }

    /// The child's cgroup, to end and remove once the leader is reaped.
    pub(super) fn take_cgroup(&mut self) -> Option<ChildCgroup> {
        self.cgroup.take()
    }

    /// Whether the leader has exited, without reaping it (`WNOWAIT`), so that the group can
    /// still be signalled safely afterwards.
    pub(super) fn leader_exited(&self) -> io::Result<bool> {
        let options = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
        loop {
            match waitid(WaitId::Pid(self.pgid), options) {
                // `None`: no state change yet (`WNOHANG`).
                Ok(status) => return Ok(status.is_some()),
                Err(Errno::INTR) => continue,
                // Not our child any more: reaped elsewhere; the wait that follows will say so.
                Err(Errno::CHILD) => return Ok(true),
                Err(e) => return Err(e.into()),
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
        self.signal(Signal::KILL);
    }
}
