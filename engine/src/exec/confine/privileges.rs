//! What a child does to itself between its start (`clone`) and its `execve`, in this order:
//!
//! 0. before its working folder is set ([`ChildSteps::enter`]): it joins its cgroup, unless it
//!    was born in it (`clone3` with `CLONE_INTO_CGROUP`, `exec::process::spawn`), so that
//!    nothing it ever starts is outside it; then, when the engine does not run as root, the
//!    engine's user namespace (which gives it, there only, the capabilities the next two
//!    `setns` need); then, where the cgroup layer is missing, its stage's PID namespace (for
//!    what it starts: `pidns.rs`); then its stage's network and IPC namespaces and its mount namespace
//!    (`namespaces.rs`: entered, or, as root, copied by the child from its run's template;
//!    entering a mount namespace resets the working folder, hence before it is set);
//! 1. where its stage has a group of its own (`groups.rs`), that group as its only one (before
//!    the next step: a change of group clears the parent-death signal);
//! 2. a parent-death signal (SIGKILL), then a check that the parent has not already died (it
//!    could have between the `clone` and the `prctl`, and the signal would never come);
//! 3. no new privileges: `sudo` and every setuid or file-capability program gain nothing;
//! 4. as root, or in the engine's user namespace, every capability dropped: the bounding set
//!    first (so that an `execve` as uid 0 cannot grant them back), then the ambient set, then
//!    effective, permitted and inheritable;
//! 5. the seccomp filter that takes the kernel keyring away (`keyring.rs`), unless it inherited
//!    the filter from the engine's thread that started it (as root);
//! 6. the Landlock ruleset built by the parent, plus a rule for the child's own `/proc/<pid>`.
//!
//! This runs in the child between its `clone` and its `execve`, in the parent's memory
//! (`exec::process::spawn`): only system calls, no allocation, no lock. Everything it needs was
//! computed before.

use std::io;
use std::os::fd::RawFd;

/// The child's steps, computed in the parent.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ChildSteps {
    /// The parent's pid, to notice that it died before the parent-death signal was armed.
    pub(super) parent: i32,
    /// Drop every capability (the engine runs as root, or the child enters `user_ns`).
    pub(super) drop_capabilities: bool,
    /// The highest capability number to drop from the bounding set.
    pub(super) cap_last: u32,
    /// The ruleset to restrict to, and the rights of the child's own `/proc/<pid>` rule.
    pub(super) landlock: Option<(RawFd, u64)>,
    /// The `cgroup.procs` of the child's cgroup, to write `0` to (`None` once it was born in it).
    pub(super) cgroup_procs: Option<RawFd>,
    /// The folder of the child's cgroup, to be born in (`CLONE_INTO_CGROUP`).
    pub(super) cgroup_dir: Option<RawFd>,
    /// The user namespace to enter before the others (the engine does not run as root).
    pub(super) user_ns: Option<RawFd>,
    /// The PID namespace to start every process in (not the child itself: its children).
    pub(super) pid_ns: Option<RawFd>,
    /// The network namespace to enter.
    pub(super) net_ns: Option<RawFd>,
    /// The IPC namespace to enter.
    pub(super) ipc_ns: Option<RawFd>,
    /// The mount namespace to enter.
    pub(super) mnt_ns: Option<RawFd>,
    /// Or the steps that copy the child's view from its run's template (`namespaces::template`),
    /// run by the child itself: their address and count, in the parent's memory, which the
    /// child shares until its `execve` and the parent keeps until the spawn has returned.
    pub(super) mnt_copy: Option<(usize, usize)>,
    /// The seccomp filter that takes the kernel keyring away (`keyring.rs`): the address and
    /// count of its instructions, a static of the engine's.
    pub(super) seccomp: Option<(usize, usize)>,
    /// The stage's group, its only one (`groups.rs`): what lets it into its own folder, and
    /// no other stage's, in a view the run's children share.
    pub(super) group: Option<u32>,
}

/// Exit code of a child whose parent died before it could arm its parent-death signal.
const ORPHANED_AT_BIRTH: i32 = 126;

impl ChildSteps {
    /// The cgroup folder a child may be born in.
    pub(crate) fn cgroup_dir(&self) -> Option<RawFd> {
        self.cgroup_dir
    }

    /// The same steps for a child started from a thread that holds the keyring filter
    /// (`keyring::held_by_this_thread`): it inherits the filter at its `clone`.
    #[must_use]
    pub(crate) fn filter_inherited(self) -> Self {
        Self {
            seccomp: None,
            ..self
        }
    }

    /// Whether the child is to attach the keyring filter itself.
    pub(crate) fn attaches_filter(&self) -> bool {
        self.seccomp.is_some()
    }

    /// The same steps for a child born in its cgroup: nothing left to join.
    #[must_use]
    pub(crate) fn born_in_cgroup(self) -> Self {
        Self {
            cgroup_procs: None,
            ..self
        }
    }
}

#[cfg(target_os = "linux")]
impl ChildSteps {
    /// Step 0, before the working folder is set: the cgroup, then the namespaces (entering
    /// them needs the capabilities the later steps drop).
    pub(crate) fn enter(&self) -> io::Result<()> {
        let check = |rc: libc::c_int| {
            if rc < 0 {
                Err(io::Error::last_os_error())
            } else {
                Ok(())
            }
        };
        // SAFETY: plain system calls on descriptors the parent keeps open until the
        // spawn returns.
        unsafe {
            if let Some(procs) = self.cgroup_procs {
                let written = libc::write(procs, b"0".as_ptr().cast(), 1);
                if written != 1 {
                    return Err(io::Error::last_os_error());
                }
            }
            if let Some(user) = self.user_ns {
                check(libc::setns(user, libc::CLONE_NEWUSER))?;
            }
            if let Some(pid) = self.pid_ns {
                check(libc::setns(pid, libc::CLONE_NEWPID))?;
            }
            if let Some(net) = self.net_ns {
                check(libc::setns(net, libc::CLONE_NEWNET))?;
            }
            if let Some(ipc) = self.ipc_ns {
                check(libc::setns(ipc, libc::CLONE_NEWIPC))?;
            }
            if let Some(mnt) = self.mnt_ns {
                check(libc::setns(mnt, libc::CLONE_NEWNS))?;
            }
            if let Some((ops, count)) = self.mnt_copy {
                // SAFETY: the steps `Prepared` keeps alive until the spawn has returned.
                let ops = std::slice::from_raw_parts(ops as *const super::builder::Op, count);
                super::builder::apply_here(ops)?;
            }
        }
        Ok(())
    }

    /// Runs the steps in the child. An error aborts the spawn: the parent sees it as the
    /// spawn's error (fail closed).
    pub(crate) fn apply(&self) -> io::Result<()> {
        use rustix::process::{Signal, getppid, set_parent_process_death_signal};
        use rustix::thread::{
            CapabilitySet, CapabilitySets, clear_ambient_capability_set,
            remove_capability_from_bounding_set, set_capabilities, set_no_new_privs,
        };

        if let Some(group) = self.group {
            // First: a change of the effective or file-system group clears the parent-death signal,
            // and it needs the capabilities (CAP_SETGID) dropped below. The uid stays 0. The system calls
            // themselves, not the C library's wrappers: in a threaded process those make every
            // thread of it change too, and this child shares the engine's memory.
            let gid = group as libc::gid_t;
            // SAFETY: plain system calls; `gid` outlives them.
            unsafe {
                if libc::syscall(libc::SYS_setgroups, 1, &raw const gid) != 0
                    || libc::syscall(libc::SYS_setresgid, gid, gid, gid) != 0
                {
                    return Err(io::Error::last_os_error());
                }
            }
        }
        set_parent_process_death_signal(Some(Signal::KILL)).map_err(io::Error::from)?;
        if rustix::process::Pid::as_raw(getppid()) != self.parent {
            // SAFETY: _exit ends this child immediately, running nothing of the parent's.
            unsafe { libc::_exit(ORPHANED_AT_BIRTH) };
        }
        set_no_new_privs(true).map_err(io::Error::from)?;
        if self.drop_capabilities {
            for cap in 0..=self.cap_last.min(63) {
                match remove_capability_from_bounding_set(CapabilitySet::from_bits_retain(1 << cap))
                {
                    // EINVAL: a capability this kernel does not know.
                    Ok(()) | Err(rustix::io::Errno::INVAL) => {}
                    Err(e) => return Err(e.into()),
                }
            }
        }
        match clear_ambient_capability_set() {
            // EINVAL: a kernel without ambient capabilities (before 4.3): nothing to clear.
            Ok(()) | Err(rustix::io::Errno::INVAL) => {}
            Err(e) => return Err(e.into()),
        }
        // Lowering capabilities is always allowed; a process without any loses nothing.
        set_capabilities(
            None,
            CapabilitySets {
                effective: CapabilitySet::empty(),
                permitted: CapabilitySet::empty(),
                inheritable: CapabilitySet::empty(),
            },
        )
        .map_err(io::Error::from)?;
        if let Some((filter, count)) = self.seccomp {
            // SAFETY: the engine's static filter (`keyring::filter`), built before the spawn.
            let filter =
                unsafe { std::slice::from_raw_parts(filter as *const libc::sock_filter, count) };
            // SAFETY: system calls only.
            unsafe { super::keyring::install(filter)? };
        }
        if let Some((ruleset, own_proc)) = self.landlock {
            add_own_proc_rule(ruleset, own_proc);
            restrict_self(ruleset)?;
        }
        Ok(())
    }
}

#[cfg(not(target_os = "linux"))]
impl ChildSteps {
    pub(crate) fn enter(&self) -> io::Result<()> {
        Ok(())
    }

    pub(crate) fn apply(&self) -> io::Result<()> {
        Ok(())
    }
}

/// `struct landlock_path_beneath_attr` (packed, as the kernel declares it).
#[cfg(target_os = "linux")]
#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// Lets the child read its own `/proc/<pid>` (what `/proc/self` is for the program it runs):
/// `/proc/self/exe`, `status`, `fd/`. Best effort: without `/proc` there is nothing to allow.
#[cfg(target_os = "linux")]
fn add_own_proc_rule(ruleset: RawFd, access: u64) {
    const LANDLOCK_RULE_PATH_BENEATH: libc::c_int = 1;
    let path = c"/proc/self";
    // SAFETY: a NUL-terminated literal; open and close are async-signal-safe.
    let fd = unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return;
    }
    let attr = PathBeneathAttr {
        allowed_access: access,
        parent_fd: fd,
    };
    // SAFETY: `attr` is a valid path-beneath attribute for the duration of the call.
    unsafe {
        libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset,
            LANDLOCK_RULE_PATH_BENEATH,
            &raw const attr,
            0u32,
        );
        libc::close(fd);
    }
}

/// `landlock_restrict_self(ruleset, 0)`: from here on, and in everything this child runs.
#[cfg(target_os = "linux")]
fn restrict_self(ruleset: RawFd) -> io::Result<()> {
    // SAFETY: a plain system call on a descriptor the parent keeps open until the spawn returns.
    let rc = unsafe { libc::syscall(libc::SYS_landlock_restrict_self, ruleset, 0u32) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
