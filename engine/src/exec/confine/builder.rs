//! The process that makes namespaces for the engine: a short-lived child that shares the
//! engine's memory and descriptor table (`clone(CLONE_VM | CLONE_VFORK | CLONE_FILES)`), runs a
//! list of system calls the parent prepared ([`Op`]), and exits.
//!
//! Why a process and not a thread: a user namespace can only be made or entered by a process of
//! a single thread (`unshare(CLONE_NEWUSER)`, `setns`), and the engine has many. Why it shares
//! the descriptor table: what it makes outlives it as descriptors the engine keeps (a namespace,
//! a listener inside one). Why it shares the memory: nothing of the engine is copied, and the
//! calling thread waits until it has exited. As the children of `exec::process::spawn`, it runs
//! only system calls on values computed before: no allocation, no lock, no panic path.

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{FromRawFd as _, OwnedFd, RawFd};
use std::sync::atomic::{AtomicI32, Ordering};

/// When an [`Op`] on a path runs: checked in the namespace being built (a path beneath a
/// folder already covered is gone there).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum When {
    Always,
    /// The path is a folder (not following a link).
    Dir,
}

/// One system call of the builder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Op {
    /// `setns(fd, CLONE_NEWUSER)`: every later step has the capabilities of the user namespace.
    EnterUser(RawFd),
    /// `setns(fd, kind)`.
    Enter(RawFd, libc::c_int),
    /// `unshare(flags)`.
    Unshare(libc::c_int),
    /// Brings `lo` up in the builder's network namespace (a new one has it down).
    LoopbackUp,
    Mount {
        source: Option<CString>,
        target: CString,
        fstype: Option<&'static CStr>,
        flags: libc::c_ulong,
        data: Option<&'static CStr>,
        when: When,
    },
    /// `mount_setattr`.
    Setattr {
        path: CString,
        recursive: bool,
        set: u64,
        clr: u64,
        when: When,
    },
    /// `mkdir(path, 0755)`; one that exists is fine.
    Mkdir(CString),
    /// Makes an empty file at `path` (a mount point for a file); one that exists is fine.
    Touch(CString),
    /// `symlink(target, link)`; one that exists is fine.
    Symlink {
        target: CString,
        link: CString,
    },
    /// `pivot_root(new, old)`: `new` becomes the root, the old root is moved to `old`.
    PivotRoot {
        new: CString,
        old: CString,
    },
    /// `umount2(path, MNT_DETACH)`.
    Detach(CString),
    /// `move_mount(from, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH)`: attaches at `target`
    /// the detached tree `from` (`open_tree(OPEN_TREE_CLONE)`, made by the engine beforehand).
    Attach {
        from: RawFd,
        target: CString,
    },
    Chdir(CString),
    /// Opens one of the builder's namespaces (`/proc/self/ns/<kind>`): the next result.
    OpenNs(&'static CStr),
    /// A TCP listener on `127.0.0.1`, a free port, non-blocking: the next result.
    Listen,
    /// Starts the init of a PID namespace the builder made (`unshare(CLONE_NEWPID)` before)
    /// ([`hold`]): on the stack whose top is `stack_top`, reading its grace period from the
    /// [`InitGrace`] at `grace`. Its pid is [`Built::holder`].
    Holder {
        stack_top: usize,
        grace: usize,
    },
}

impl Op {
    /// What the step does, for an error.
    fn describe(&self) -> String {
        let s = |c: &CStr| c.to_string_lossy().into_owned();
        match self {
            Op::EnterUser(_) => "enter the user namespace".into(),
            Op::Enter(..) => "enter a namespace".into(),
            Op::Unshare(flags) => format!("unshare({})", unshare_name(*flags)),
            Op::LoopbackUp => "bring lo up".into(),
            Op::Mount {
                target,
                fstype: Some(_),
                ..
            } => format!("cover {}", s(target)),
            Op::Mount { source, target, .. } => match source {
                Some(source) if source.as_bytes() == b"." => {
                    format!("mount {} back", s(target))
                }
                Some(_) => format!("bind {}", s(target)),
                None => format!("make {} private", s(target)),
            },
            Op::Setattr { path, set, .. } if *set != 0 => format!("make {} read-only", s(path)),
            Op::Setattr { path, .. } => format!("make {} writable", s(path)),
            Op::Mkdir(path) => format!("mkdir {}", s(path)),
            Op::Touch(path) => format!("make the mount point {}", s(path)),
            Op::Symlink { link, .. } => format!("make the link {}", s(link)),
            Op::PivotRoot { new, .. } => format!("pivot_root into {}", s(new)),
            Op::Detach(path) => format!("detach {}", s(path)),
            Op::Attach { target, .. } => format!("bind {}", s(target)),
            Op::Chdir(path) => format!("open {}", s(path)),
            Op::OpenNs(path) => format!("open {}", s(path)),
            Op::Listen => "listen on 127.0.0.1".into(),
            Op::Holder { .. } => "start the PID namespace's init".into(),
        }
    }

    fn yields(&self) -> bool {
        matches!(self, Op::OpenNs(_) | Op::Listen)
    }
}

fn unshare_name(flags: libc::c_int) -> &'static str {
    match flags {
        libc::CLONE_NEWUSER => "CLONE_NEWUSER",
        libc::CLONE_NEWNET => "CLONE_NEWNET",
        libc::CLONE_NEWNS => "CLONE_NEWNS",
        libc::CLONE_NEWPID => "CLONE_NEWPID",
        _ => "namespaces",
    }
}

/// Runs `ops` in a builder process; returns the descriptors the steps that yield one opened,
/// in order. Blocking (a few system calls, no wait on anything but the builder).
pub(super) fn run(ops: &[Op]) -> io::Result<Vec<OwnedFd>> {
    run_full(ops).map(|built| built.fds)
}

/// Runs `ops` in this process (a child copying its view before its `execve`): only system
/// calls, no allocation. Steps that yield a descriptor or start an init are refused.
pub(super) fn apply_here(ops: &[Op]) -> io::Result<()> {
    linux::apply_here(ops)
}

/// What a builder made.
pub(super) struct Built {
    pub(super) fds: Vec<OwnedFd>,
    /// The pid of the holder [`Op::Holder`] started, if any.
    pub(super) holder: Option<libc::pid_t>,
}

/// [`run`], with the holder's pid.
pub(super) fn run_full(ops: &[Op]) -> io::Result<Built> {
    let slots: Vec<AtomicI32> = ops
        .iter()
        .filter(|op| op.yields())
        .map(|_| AtomicI32::new(-1))
        .collect();
    let context = Context {
        ops,
        slots: &slots,
        failed: AtomicI32::new(-1),
        errno: AtomicI32::new(0),
        holder: AtomicI32::new(0),
    };
    linux::clone_and_wait(&context)?;
    // SAFETY: each non-negative slot is a descriptor the builder opened in the table this
    // process shares with it, owned by nothing else.
    let fds: Vec<OwnedFd> = slots
        .iter()
        .map(|s| s.load(Ordering::Relaxed))
        .filter(|&fd| fd >= 0)
        .map(|fd| unsafe { OwnedFd::from_raw_fd(fd) })
        .collect();
    let holder = Some(context.holder.load(Ordering::Relaxed)).filter(|&p| p > 0);
    let failed = context.failed.load(Ordering::Relaxed);
    if failed >= 0 {
        if let Some(pid) = holder {
            linux::end(pid);
        }
        let e = io::Error::from_raw_os_error(context.errno.load(Ordering::Relaxed));
        let what = usize::try_from(failed)
            .ok()
            .and_then(|i| ops.get(i))
            .map_or_else(|| "start".into(), Op::describe);
        return Err(io::Error::new(e.kind(), format!("{what}: {e}")));
    }
    if fds.len() != slots.len() {
        return Err(io::Error::other("the namespace builder ended early"));
    }
    Ok(Built { fds, holder })
}

/// The init of a PID namespace ([`Op::Holder`]): PID 1 there, so that every process a stage's
/// children start is in it and ends with it. It runs in the engine's memory (no copy of it, no
/// program to find) on a stack of its own, and does only this: it closes every descriptor it
/// was given, then reaps whatever is re-parented to it until the engine sends it SIGTERM from
/// outside the namespace (a signal from inside, whose sender has a pid there, is ignored: a
/// stage cannot end its own namespace early). Then it forwards SIGTERM to every process of
/// the namespace (`kill(-1)`: whatever group or session it is in), reaps, and exits once
/// none is left or when the grace period it reads from `arg` ([`InitGrace`]) has passed; the
/// kernel then kills whatever remains (SIGKILL to every process of a namespace whose init
/// exits). The engine may end it sooner with SIGKILL.
extern "C" fn hold(arg: *mut std::ffi::c_void) -> libc::c_int {
    // SAFETY: `arg` is the engine's `InitGrace`, kept until this process has been reaped.
    let grace = unsafe { &*(arg as *const InitGrace) };
    // SAFETY: plain system calls on values on this stack.
    unsafe {
        libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32);
        // The kernel drops every signal to a namespace's init for which it has no handler
        // (SIGKILL excepted): a handler makes SIGTERM arrive. Every signal stays blocked (they
        // were at the clone), so the handler never runs: `sigwaitinfo` takes the signal.
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = ignore_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        libc::sigaction(libc::SIGTERM, &action, std::ptr::null_mut());
        let mut waited: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut waited);
        libc::sigaddset(&mut waited, libc::SIGCHLD);
        libc::sigaddset(&mut waited, libc::SIGTERM);
        loop {
            reap_all();
            let mut info: libc::siginfo_t = std::mem::zeroed();
            // From outside the namespace the sender's pid reads as 0.
            if libc::sigwaitinfo(&waited, &mut info) == libc::SIGTERM && info.si_pid() == 0 {
                break;
            }
        }
        libc::kill(-1, libc::SIGTERM);
        let mut start: libc::timespec = std::mem::zeroed();
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut start);
        let grace_ms = grace.0.load(Ordering::SeqCst);
        let mut chld: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut chld);
        libc::sigaddset(&mut chld, libc::SIGCHLD);
        loop {
            reap_all();
            // No process left to signal (zombies count until reaped, by their parent or, for
            // those the engine adopted, by the engine).
            if libc::kill(-1, 0) < 0 {
                break;
            }
            let mut now: libc::timespec = std::mem::zeroed();
            libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now);
            let elapsed_ms =
                (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1_000_000;
            if u64::try_from(elapsed_ms).unwrap_or(0) >= grace_ms {
                break;
            }
            // Woken by an exit among its own children; the engine's adopted ones it polls for.
            let poll = libc::timespec {
                tv_sec: 0,
                tv_nsec: 5_000_000,
            };
            libc::sigtimedwait(&chld, std::ptr::null_mut(), &poll);
        }
        libc::_exit(0)
    }
}

/// Never runs (see [`hold`]).
extern "C" fn ignore_signal(_: libc::c_int) {}

/// Reaps every exited child of the calling process, without waiting.
///
/// # Safety
/// A plain system call; callable in the init.
unsafe fn reap_all() {
    // SAFETY: a null status pointer is allowed.
    while unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG | libc::__WALL) } > 0 {}
}

/// The grace period of a PID namespace's init, in milliseconds: written by the engine before it
/// sends SIGTERM, read by the init ([`hold`]) after. It lives as long as the init's stack.
#[derive(Debug, Default)]
pub(super) struct InitGrace(pub(super) std::sync::atomic::AtomicU64);

/// The size of a holder's stack ([`Op::Holder`]): a few system calls deep.
pub(super) const HOLDER_STACK: usize = 64 * 1024;

/// Ends a holder (and with it everything in its PID namespace) and reaps it. Blocking: the
/// kernel ends the namespace's processes before the holder is reaped. Returns whether it was
/// reaped (its stack may then be unmapped).
pub(super) fn end_holder(pid: libc::pid_t) -> bool {
    linux::end(pid)
}

/// A new user namespace with `uid` and `gid` mapped to themselves and nothing else, `setgroups`
/// denied. Blocking.
///
/// Its maps are written by this process from outside (its uid made the namespace, so it may
/// map that uid): a process may write its own maps only while it is dumpable, and the engine
/// is not (`PR_SET_DUMPABLE 0`, which the builder shares with its memory). So the namespace is
/// made by a child that then `execve`s `/proc/self/exe` under `PTRACE_TRACEME`: the exec gives
/// it a memory of its own, dumpable, and the kernel stops it before its first instruction. The
/// engine writes its maps, keeps its namespace by a descriptor, and kills it. It never runs a
/// line of the program, and every descriptor but 0, 1 and 2 is closed at its exec.
pub(super) fn user_namespace(uid: u32, gid: u32) -> io::Result<OwnedFd> {
    let made = Made {
        errno: AtomicI32::new(0),
    };
    // SAFETY: `made_main` makes only system calls; `made` outlives the call.
    let pid = unsafe { linux::vfork(0, made_main, std::ptr::from_ref(&made).cast_mut().cast())? };
    let status = linux::wait(pid, libc::WUNTRACED)?;
    let errno = made.errno.load(Ordering::Relaxed);
    if !libc::WIFSTOPPED(status) {
        let e = if errno != 0 {
            io::Error::from_raw_os_error(errno)
        } else {
            io::Error::other(format!(
                "the child ended (status {status:#x}) before it stopped"
            ))
        };
        return Err(io::Error::new(
            e.kind(),
            format!("make a user namespace: {e}"),
        ));
    }
    let result = (|| {
        let proc = format!("/proc/{pid}");
        let ns = std::fs::File::open(format!("{proc}/ns/user"))?;
        for (file, text) in [
            ("uid_map", format!("{uid} {uid} 1\n")),
            ("setgroups", "deny".to_string()),
            ("gid_map", format!("{gid} {gid} 1\n")),
        ] {
            std::fs::write(format!("{proc}/{file}"), text)
                .map_err(|e| io::Error::new(e.kind(), format!("write {file}: {e}")))?;
        }
        Ok(OwnedFd::from(ns))
    })();
    // SAFETY: a plain system call on a child this thread has not reaped yet.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let _ = linux::wait(pid, 0);
    result
}

/// What the user namespace's child reports: the errno of the step that failed before `execve`.
struct Made {
    errno: AtomicI32,
}

extern "C" fn made_main(arg: *mut std::ffi::c_void) -> libc::c_int {
    // SAFETY: `arg` is the parent's `Made`, alive until this child execs or exits.
    let made = unsafe { &*(arg as *const Made) };
    const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
    let argv = [c"reviewflow-user-namespace".as_ptr(), std::ptr::null()];
    let envp = [std::ptr::null::<libc::c_char>()];
    // SAFETY: plain system calls; the child has a descriptor table and signal handlers of its
    // own (no CLONE_FILES, no CLONE_SIGHAND), so what it changes touches none of the engine's.
    unsafe {
        // The stop after `execve` is a SIGTRAP: it must not be blocked, nor handled.
        let mut trap: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut trap);
        libc::sigaddset(&mut trap, libc::SIGTRAP);
        let mut default: libc::sigaction = std::mem::zeroed();
        default.sa_sigaction = libc::SIG_DFL;
        libc::sigaction(libc::SIGTRAP, &default, std::ptr::null_mut());
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &trap, std::ptr::null_mut());
        if libc::unshare(libc::CLONE_NEWUSER) == 0
            && libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, CLOSE_RANGE_CLOEXEC) == 0
            && libc::ptrace(libc::PTRACE_TRACEME, 0, 0, 0) == 0
        {
            libc::execve(c"/proc/self/exe".as_ptr(), argv.as_ptr(), envp.as_ptr());
        }
        made.errno.store(
            io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EINVAL),
            Ordering::Relaxed,
        );
        libc::_exit(127)
    }
}

/// What the builder reads, and the slots it writes.
struct Context<'a> {
    ops: &'a [Op],
    slots: &'a [AtomicI32],
    /// The index of the step that failed; -1 when none did.
    failed: AtomicI32,
    errno: AtomicI32,
    /// The holder's pid ([`Op::Holder`]).
    holder: AtomicI32,
}

mod linux {
    use std::ffi::c_void;
    use std::io;
    use std::os::fd::{FromRawFd as _, OwnedFd};
    use std::sync::atomic::Ordering;

    use super::{Context, Op, When};
    use crate::exec::stack::Reused;

    /// The builder's stack: a few system calls deep.
    const STACK: usize = 64 * 1024;

    /// SIGKILL to the holder `pid`, then reaps it: whether it was reaped.
    pub(super) fn end(pid: libc::pid_t) -> bool {
        // SAFETY: a plain system call on a child of this process not reaped yet.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        wait(pid, 0).is_ok()
    }

    pub(super) fn clone_and_wait(context: &Context<'_>) -> io::Result<()> {
        // SAFETY: `main` reads `context`, which outlives the wait.
        let pid = unsafe {
            vfork(
                libc::CLONE_FILES,
                main,
                std::ptr::from_ref(context).cast_mut().cast(),
            )?
        };
        // It has exited (CLONE_VFORK): reap it.
        wait(pid, 0).map(drop)
    }

    /// `waitpid(pid, flags | __WALL)`, again on EINTR: the status.
    pub(super) fn wait(pid: libc::pid_t, flags: libc::c_int) -> io::Result<libc::c_int> {
        loop {
            let mut status = 0;
            // SAFETY: `status` is a valid out-pointer.
            let rc = unsafe { libc::waitpid(pid, &mut status, flags | libc::__WALL) };
            if rc == pid {
                return Ok(status);
            }
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINTR) {
                return Err(e);
            }
        }
    }

    /// `clone(CLONE_VM | CLONE_VFORK | flags)` running `entry(arg)` on a stack of its own, with
    /// every signal blocked (it never unblocks them, so no handler of the engine runs in it).
    /// Returns once the child has exec'd or exited.
    ///
    /// # Safety
    /// `entry` makes only system calls, and `arg` outlives the call.
    pub(super) unsafe fn vfork(
        flags: libc::c_int,
        entry: extern "C" fn(*mut c_void) -> libc::c_int,
        arg: *mut c_void,
    ) -> io::Result<libc::pid_t> {
        let stack = Reused::take(STACK)?;
        // SAFETY: CLONE_VM | CLONE_VFORK: the child runs `entry` on the new stack in this memory
        // while this thread waits; `arg` outlives the wait, and so does `stack` (dropped after).
        unsafe {
            let mut all: libc::sigset_t = std::mem::zeroed();
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::sigfillset(&mut all);
            libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
            let pid = libc::clone(
                entry,
                stack.top(),
                libc::CLONE_VM | libc::CLONE_VFORK | flags | libc::SIGCHLD,
                arg,
            );
            let err = io::Error::last_os_error();
            libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
            drop(stack);
            if pid < 0 {
                return Err(err);
            }
            Ok(pid)
        }
    }

    extern "C" fn main(arg: *mut c_void) -> libc::c_int {
        // SAFETY: `arg` is the parent's `Context`, alive until this process exits.
        let context = unsafe { &*(arg as *const Context<'_>) };
        let mut slot = 0;
        for (i, op) in context.ops.iter().enumerate() {
            if let Op::Holder { stack_top, grace } = op {
                // Its own descriptor table and signal handlers (a copy: it closes the one and
                // blocks every signal), the engine's memory. Its parent, this builder, exits at
                // once: the engine, a subreaper, adopts it.
                // SAFETY: `hold` makes only system calls, on the stack the parent mapped for it
                // and reading the grace the parent keeps, both until it has reaped it.
                let pid = unsafe {
                    libc::clone(
                        super::hold,
                        *stack_top as *mut c_void,
                        libc::CLONE_VM | libc::SIGCHLD,
                        *grace as *mut c_void,
                    )
                };
                if pid > 0 {
                    context.holder.store(pid, Ordering::Relaxed);
                    continue;
                }
            }
            match step(op) {
                Ok(fd) => {
                    if let Some(fd) = fd
                        && let Some(s) = context.slots.get(slot)
                    {
                        s.store(fd, Ordering::Relaxed);
                        slot += 1;
                    }
                }
                Err(errno) => {
                    context.errno.store(errno, Ordering::Relaxed);
                    context
                        .failed
                        .store(i32::try_from(i).unwrap_or(i32::MAX), Ordering::Relaxed);
                    // SAFETY: ends this process without running anything of the parent's.
                    unsafe { libc::_exit(1) };
                }
            }
        }
        // SAFETY: as above.
        unsafe { libc::_exit(0) }
    }

    /// Runs `ops` in this process, in order: a child copying its view between its `clone` and
    /// its `execve` (`privileges.rs`). Only system calls, no allocation; no step may yield a
    /// descriptor or start an init.
    pub(super) fn apply_here(ops: &[Op]) -> io::Result<()> {
        for op in ops {
            if op.yields() || matches!(op, Op::Holder { .. }) {
                return Err(io::Error::from_raw_os_error(libc::EINVAL));
            }
            step(op).map_err(io::Error::from_raw_os_error)?;
        }
        Ok(())
    }

    fn errno() -> libc::c_int {
        io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EINVAL)
    }

    fn check(rc: libc::c_int) -> Result<(), libc::c_int> {
        if rc < 0 { Err(errno()) } else { Ok(()) }
    }

    /// Whether `path` passes `when`, looked at now.
    fn holds(path: &std::ffi::CStr, when: When) -> bool {
        // SAFETY: `st` is plain data the calls fill; `path` is NUL-terminated.
        unsafe {
            let mut st: libc::stat = std::mem::zeroed();
            match when {
                When::Always => true,
                When::Dir => {
                    libc::lstat(path.as_ptr(), &mut st) == 0
                        && st.st_mode & libc::S_IFMT == libc::S_IFDIR
                }
            }
        }
    }

    /// `struct mount_attr`.
    #[repr(C)]
    struct MountAttr {
        attr_set: u64,
        attr_clr: u64,
        propagation: u64,
        userns_fd: u64,
    }

    const AT_RECURSIVE: libc::c_uint = 0x8000;

    /// One step; a descriptor for the steps that yield one.
    fn step(op: &Op) -> Result<Option<libc::c_int>, libc::c_int> {
        let opt =
            |c: &Option<std::ffi::CString>| c.as_ref().map_or(std::ptr::null(), |c| c.as_ptr());
        // SAFETY: plain system calls on NUL-terminated strings and descriptors the
        // parent keeps open until the builder has exited.
        unsafe {
            match op {
                Op::EnterUser(fd) => check(libc::setns(*fd, libc::CLONE_NEWUSER))?,
                Op::Enter(fd, kind) => check(libc::setns(*fd, *kind))?,
                Op::Unshare(flags) => check(libc::unshare(*flags))?,
                Op::LoopbackUp => {
                    let sock =
                        libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
                    check(sock)?;
                    let sock = OwnedFd::from_raw_fd(sock);
                    let fd = std::os::fd::AsRawFd::as_raw_fd(&sock);
                    let mut req: libc::ifreq = std::mem::zeroed();
                    req.ifr_name[0] = b'l' as libc::c_char;
                    req.ifr_name[1] = b'o' as libc::c_char;
                    check(libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut req))?;
                    req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
                    check(libc::ioctl(fd, libc::SIOCSIFFLAGS, &req))?;
                }
                Op::Mount {
                    source,
                    target,
                    fstype,
                    flags,
                    data,
                    when,
                } => {
                    if holds(target, *when) {
                        check(libc::mount(
                            opt(source),
                            target.as_ptr(),
                            fstype.map_or(std::ptr::null(), |f| f.as_ptr()),
                            *flags,
                            data.map_or(std::ptr::null(), |d| d.as_ptr().cast()),
                        ))?;
                    }
                }
                Op::Setattr {
                    path,
                    recursive,
                    set,
                    clr,
                    when,
                } => {
                    if holds(path, *when) {
                        let attr = MountAttr {
                            attr_set: *set,
                            attr_clr: *clr,
                            propagation: 0,
                            userns_fd: 0,
                        };
                        let rc = libc::syscall(
                            libc::SYS_mount_setattr,
                            libc::AT_FDCWD,
                            path.as_ptr(),
                            if *recursive { AT_RECURSIVE } else { 0 },
                            &raw const attr,
                            std::mem::size_of::<MountAttr>(),
                        );
                        if rc < 0 {
                            return Err(errno());
                        }
                    }
                }
                Op::Mkdir(path) => {
                    if libc::mkdir(path.as_ptr(), 0o755) < 0 && errno() != libc::EEXIST {
                        return Err(errno());
                    }
                }
                Op::Touch(path) => {
                    // Made, never opened: an open file would count as a writer of the mount
                    // until every copy of the descriptor table closed it, and the view could
                    // not be made read-only while another thread's child held one.
                    if libc::mknod(path.as_ptr(), libc::S_IFREG | 0o644, 0) < 0
                        && errno() != libc::EEXIST
                    {
                        return Err(errno());
                    }
                }
                Op::Symlink { target, link } => {
                    if libc::symlink(target.as_ptr(), link.as_ptr()) < 0 && errno() != libc::EEXIST
                    {
                        return Err(errno());
                    }
                }
                Op::PivotRoot { new, old } => {
                    let rc = libc::syscall(libc::SYS_pivot_root, new.as_ptr(), old.as_ptr());
                    if rc < 0 {
                        return Err(errno());
                    }
                }
                Op::Detach(path) => check(libc::umount2(path.as_ptr(), libc::MNT_DETACH))?,
                Op::Attach { from, target } => {
                    const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;
                    let rc = libc::syscall(
                        libc::SYS_move_mount,
                        *from,
                        c"".as_ptr(),
                        libc::AT_FDCWD,
                        target.as_ptr(),
                        MOVE_MOUNT_F_EMPTY_PATH,
                    );
                    if rc < 0 {
                        return Err(errno());
                    }
                }
                Op::Chdir(path) => check(libc::chdir(path.as_ptr()))?,
                Op::OpenNs(path) => {
                    let fd = libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
                    check(fd)?;
                    return Ok(Some(fd));
                }
                // Started by `main`; here only when `clone` failed.
                Op::Holder { .. } => return Err(errno()),
                Op::Listen => {
                    let fd = libc::socket(
                        libc::AF_INET,
                        libc::SOCK_STREAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
                        0,
                    );
                    check(fd)?;
                    let mut addr: libc::sockaddr_in = std::mem::zeroed();
                    addr.sin_family = libc::AF_INET as libc::sa_family_t;
                    addr.sin_addr.s_addr = u32::from(std::net::Ipv4Addr::LOCALHOST).to_be();
                    let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
                    if libc::bind(fd, (&raw const addr).cast(), len) < 0
                        || libc::listen(fd, 128) < 0
                    {
                        let e = errno();
                        libc::close(fd);
                        return Err(e);
                    }
                    return Ok(Some(fd));
                }
            }
        }
        Ok(None)
    }
}
