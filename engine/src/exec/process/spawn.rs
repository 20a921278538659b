//! Starting the child without `fork`: on Linux `clone(CLONE_VM | CLONE_VFORK)`, as
//! `posix_spawn` does, with the confinement steps run in the child before its `execve`.
//!
//! Why not `Command::pre_exec`: it makes the standard library `fork`, which copies the page
//! tables of the whole engine and, while the child runs its steps, makes every write of the
//! engine's other threads a copy-on-write fault. That cost grows with the engine's memory and
//! was most of the price of confinement (about 1.5 ms a child in a 1,000-stage run). With
//! `CLONE_VM | CLONE_VFORK` the child borrows the parent's memory and the calling thread
//! waits until the child has called `execve` (or exited).
//!
//! The child therefore runs on its own stack, in the parent's memory, and may only make system
//! calls: no allocation, no lock, no Rust value changed except the error slot the parent reads
//! after it resumes. Every signal is blocked around the `clone`, and the child resets the
//! handlers the parent installed before it unblocks them, so that no handler of the engine runs
//! in it.

use std::io;
use std::path::Path;

use tokio::process::{ChildStderr, ChildStdin, ChildStdout};

use crate::exec::confine::ChildSteps;

/// What to start.
pub(super) struct Launch<'a> {
    pub(super) program: &'a Path,
    pub(super) args: &'a [String],
    /// `NAME=value` entries (secret ones included: zeroized once the child has started).
    pub(super) env: Vec<Vec<u8>>,
    pub(super) cwd: &'a Path,
    /// A pipe for stdin; otherwise `/dev/null`.
    pub(super) stdin_piped: bool,
    /// The confinement steps, run in the child before `execve`; `None` for none.
    pub(super) steps: Option<ChildSteps>,
}

/// A started child: its pid (leader of its own process group) and the parent's ends of its
/// pipes.
pub(super) struct Spawned {
    pub(super) pid: i32,
    pub(super) stdin: Option<ChildStdin>,
    pub(super) stdout: ChildStdout,
    pub(super) stderr: ChildStderr,
}

/// Waits for the exited child `pid` and reaps it.
pub(super) fn reap(pid: i32) -> io::Result<std::process::ExitStatus> {
    use std::os::unix::process::ExitStatusExt as _;
    loop {
        let mut status = 0;
        // SAFETY: `status` is a valid out-pointer for the call.
        let rc = unsafe { libc::waitpid(pid, &mut status, 0) };
        if rc == pid {
            return Ok(std::process::ExitStatus::from_raw(status));
        }
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EINTR) {
            return Err(err);
        }
    }
}

#[cfg(target_os = "linux")]
pub(super) use linux::spawn;

#[cfg(not(target_os = "linux"))]
pub(super) use portable::spawn;

#[cfg(target_os = "linux")]
mod linux {
    use std::convert::Infallible;
    use std::ffi::{CString, c_void};
    use std::io;
    use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd, RawFd};
    use std::os::unix::ffi::OsStrExt as _;
    use std::sync::atomic::{AtomicI32, Ordering};

    use tokio::process::{ChildStderr, ChildStdin, ChildStdout};
    use zeroize::Zeroize as _;

    use super::{Launch, Spawned};
    use crate::exec::confine::{ChildSteps, keyring};
    use crate::exec::stack::{Reused, Stack};

    /// The child's stack: it runs little more than a few system calls.
    const STACK: usize = 256 * 1024;
    /// The highest signal number (`SIGRTMAX` on Linux).
    const MAX_SIGNAL: libc::c_int = 64;

    /// Everything the child reads, prepared by the parent; `error` is the one thing it writes.
    struct Context {
        program: *const libc::c_char,
        argv: *const *const libc::c_char,
        envp: *const *const libc::c_char,
        cwd: *const libc::c_char,
        /// The child's ends of stdin, stdout and stderr.
        stdio: [RawFd; 3],
        steps: Option<ChildSteps>,
        /// The kernel reset the signal handlers at the `clone3` (`CLONE_CLEAR_SIGHAND`): the
        /// child has only SIGPIPE, which the engine ignores, to reset itself.
        handlers_cleared: bool,
        /// errno of the step that failed; 0 when the child reached `execve`.
        error: AtomicI32,
    }

    fn c_string(bytes: &[u8]) -> io::Result<CString> {
        CString::new(bytes).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
    }

    /// A pipe with both ends close-on-exec: (read, write).
    fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
        let mut fds = [0; 2];
        // SAFETY: `fds` is a valid array of two descriptors to fill.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: pipe2 returned two new descriptors that nothing else owns.
        Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
    }

    fn dev_null() -> io::Result<OwnedFd> {
        // SAFETY: a NUL-terminated literal.
        let fd = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a new descriptor that nothing else owns.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    pub(in crate::exec::process) fn spawn(launch: Launch<'_>) -> io::Result<Spawned> {
        let program = c_string(launch.program.as_os_str().as_bytes())?;
        let args = launch
            .args
            .iter()
            .map(|a| c_string(a.as_bytes()))
            .collect::<io::Result<Vec<_>>>()?;
        let mut env = Vec::with_capacity(launch.env.len());
        for entry in launch.env {
            env.push(c_string(&entry)?);
        }
        let cwd = c_string(launch.cwd.as_os_str().as_bytes())?;
        let argv: Vec<*const libc::c_char> = std::iter::once(program.as_ptr())
            .chain(args.iter().map(|a| a.as_ptr()))
            .chain(std::iter::once(std::ptr::null()))
            .collect();
        let envp: Vec<*const libc::c_char> = env
            .iter()
            .map(|e| e.as_ptr())
            .chain(std::iter::once(std::ptr::null()))
            .collect();

        let (stdin_child, stdin_parent) = if launch.stdin_piped {
            let (read, write) = pipe()?;
            (read, Some(write))
        } else {
            (dev_null()?, None)
        };
        let (stdout_parent, stdout_child) = pipe()?;
        let (stderr_parent, stderr_child) = pipe()?;
        // As root, the keyring filter is attached once to this thread and inherited by every
        // child it starts, instead of attached by each child.
        let steps = launch.steps.map(|steps| {
            if steps.attaches_filter() && keyring::held_by_this_thread() {
                steps.filter_inherited()
            } else {
                steps
            }
        });
        let context = Context {
            program: program.as_ptr(),
            argv: argv.as_ptr(),
            envp: envp.as_ptr(),
            cwd: cwd.as_ptr(),
            stdio: [
                stdin_child.as_raw_fd(),
                stdout_child.as_raw_fd(),
                stderr_child.as_raw_fd(),
            ],
            steps,
            handlers_cleared: false,
            error: AtomicI32::new(0),
        };
        let mut context = context;
        let stack = Reused::take(STACK)?;
        let started = with_signals_blocked(|| {
            // Born in its cgroup where the kernel can (no migration afterwards, no window
            // outside it); otherwise the child joins it by writing `cgroup.procs`.
            if let (Some(born), Some(cgroup)) = (steps, steps.and_then(|s| s.cgroup_dir()))
                && clone3::works(cgroup)
            {
                context.steps = Some(born.born_in_cgroup());
                context.handlers_cleared = true;
                // SAFETY: as for `clone` below; `clone3` runs `child_main` on the same stack.
                match unsafe { clone3::vfork_into_cgroup(&stack, cgroup, &context) } {
                    Err(e) if clone3::unsupported(&e) => {
                        context.steps = steps;
                        context.handlers_cleared = false;
                    }
                    done => return done,
                }
            }
            // SAFETY: CLONE_VM | CLONE_VFORK: the child runs `child_main` on `stack` in this
            // memory while this thread waits; `context` and everything it points to outlive
            // the wait (the child has exec'd or exited when clone returns).
            let pid = unsafe {
                libc::clone(
                    child_main,
                    stack.top(),
                    libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
                    (&raw const context).cast_mut().cast(),
                )
            };
            if pid < 0 {
                Err(io::Error::last_os_error())
            } else {
                Ok(pid)
            }
        });
        drop(stack);
        // The secrets are in the child now; the parent's copies go.
        for entry in env {
            entry.into_bytes_with_nul().zeroize();
        }
        let pid = started?;
        let error = context.error.load(Ordering::Relaxed);
        if error != 0 {
            // It exited without exec: reap it and say why.
            let _ = super::reap(pid);
            return Err(io::Error::from_raw_os_error(error));
        }
        drop((stdin_child, stdout_child, stderr_child));
        Ok(Spawned {
            pid,
            stdin: stdin_parent
                .map(|fd| ChildStdin::from_std(std::process::ChildStdin::from(fd)))
                .transpose()?,
            stdout: ChildStdout::from_std(std::process::ChildStdout::from(stdout_parent))?,
            stderr: ChildStderr::from_std(std::process::ChildStderr::from(stderr_parent))?,
        })
    }

    /// `clone3(CLONE_VM | CLONE_VFORK | CLONE_INTO_CGROUP)`: the C library has no wrapper for a
    /// `clone3` whose child runs on a new stack in the same memory, so the system call and the
    /// child's first steps are a few instructions of assembly, as in the C library's `clone`.
    mod clone3 {
        use std::io;
        use std::os::fd::RawFd;

        use super::{Context, Stack, child_main};

        /// `struct clone_args` up to `cgroup` (`CLONE_ARGS_SIZE_VER2`, Linux 5.7).
        #[repr(C)]
        struct CloneArgs {
            flags: u64,
            pidfd: u64,
            child_tid: u64,
            parent_tid: u64,
            exit_signal: u64,
            stack: u64,
            stack_size: u64,
            tls: u64,
            set_tid: u64,
            set_tid_size: u64,
            cgroup: u64,
        }

        const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;
        /// Every handled signal back to its default in the child (Linux 5.5, before
        /// `CLONE_INTO_CGROUP`): no handler of the engine can run there.
        const CLONE_CLEAR_SIGHAND: u64 = 0x1_0000_0000;

        impl CloneArgs {
            /// A child of `flags` born in the cgroup whose folder is open at `cgroup`, reporting
            /// its exit with SIGCHLD, on `stack` (none: 0, 0).
            fn into_cgroup(flags: u64, cgroup: u64, stack: u64, stack_size: u64) -> Self {
                Self {
                    flags: flags | CLONE_INTO_CGROUP,
                    pidfd: 0,
                    child_tid: 0,
                    parent_tid: 0,
                    exit_signal: libc::SIGCHLD as u64,
                    stack,
                    stack_size,
                    tls: 0,
                    set_tid: 0,
                    set_tid_size: 0,
                    cgroup,
                }
            }
        }

        /// A kernel that cannot do it (no `clone3`, or one without `CLONE_INTO_CGROUP`): the
        /// caller falls back to `clone`. Any other error is the spawn's.
        pub(super) fn unsupported(e: &io::Error) -> bool {
            matches!(
                e.raw_os_error(),
                Some(libc::ENOSYS | libc::E2BIG | libc::EINVAL)
            )
        }

        /// Whether a child born in a cgroup lives, tried once for the process with a child that
        /// exits at once. Linux (at least to 6.18) compares the kill count (`cgroup.kill`) of
        /// the cgroup a `CLONE_INTO_CGROUP` child is born in with that of its parent's own
        /// cgroup, and kills the child at birth when they differ: where the engine runs in a
        /// cgroup that was killed before (a service restarted in the same cgroup), every child
        /// would die. Then children join by writing `cgroup.procs`, as on an older kernel.
        pub(super) fn works(cgroup: RawFd) -> bool {
            static WORKS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
            *WORKS.get_or_init(|| probe(cgroup))
        }

        fn probe(cgroup: RawFd) -> bool {
            let Ok(cgroup) = u64::try_from(cgroup) else {
                return false;
            };
            let args = CloneArgs::into_cgroup(0, cgroup, 0, 0);
            // SAFETY: a fork (no CLONE_VM: the child has a copy of this memory) whose child
            // makes no call but `_exit`; the caller has every signal blocked.
            let pid = unsafe {
                libc::syscall(
                    libc::SYS_clone3,
                    &raw const args,
                    std::mem::size_of::<CloneArgs>(),
                )
            };
            if pid == 0 {
                // SAFETY: ends the forked child at once, running nothing of the parent's.
                unsafe { libc::_exit(0) };
            }
            let Ok(pid) = libc::pid_t::try_from(pid) else {
                return false;
            };
            if pid < 0 {
                return false;
            }
            matches!(super::super::reap(pid), Ok(status) if status.success())
        }

        /// Starts the child in the cgroup whose folder `cgroup` is open; returns its pid.
        ///
        /// # Safety
        /// As `clone(CLONE_VM | CLONE_VFORK)`: `context` and everything it points to outlive
        /// the call (this thread waits until the child has exec'd or exited).
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        pub(super) unsafe fn vfork_into_cgroup(
            stack: &Stack,
            cgroup: RawFd,
            context: &Context,
        ) -> io::Result<i32> {
            let args = CloneArgs::into_cgroup(
                (libc::CLONE_VM | libc::CLONE_VFORK) as u64 | CLONE_CLEAR_SIGHAND,
                u64::try_from(cgroup).map_err(|_| io::Error::from_raw_os_error(libc::EBADF))?,
                stack.base() as u64,
                stack.size() as u64,
            );
            let entry = child_main as extern "C" fn(*mut libc::c_void) -> libc::c_int;
            let arg = std::ptr::from_ref(context);
            let ret: i64;
            // SAFETY: the child (return value 0) runs on the new stack, calls `child_main`,
            // which execs or `_exit`s, and exits with its value should it ever return; it never
            // comes back to this frame. The parent only tests the return value.
            #[cfg(target_arch = "x86_64")]
            unsafe {
                std::arch::asm!(
                    "syscall",
                    "test rax, rax",
                    "jnz 2f",
                    "mov rdi, r13",
                    "call r12",
                    "mov edi, eax",
                    "mov eax, 60",
                    "syscall",
                    "ud2",
                    "2:",
                    inlateout("rax") libc::SYS_clone3 => ret,
                    in("rdi") &raw const args,
                    in("rsi") std::mem::size_of::<CloneArgs>(),
                    in("r12") entry,
                    in("r13") arg,
                    lateout("rcx") _,
                    lateout("r11") _,
                    options(nostack),
                );
            }
            #[cfg(target_arch = "aarch64")]
            unsafe {
                std::arch::asm!(
                    "svc #0",
                    "cbnz x0, 2f",
                    "mov x0, x21",
                    "blr x20",
                    "mov x8, #93",
                    "svc #0",
                    "brk #0",
                    "2:",
                    inlateout("x0") &raw const args => ret,
                    in("x1") std::mem::size_of::<CloneArgs>(),
                    in("x8") libc::SYS_clone3,
                    in("x20") entry,
                    in("x21") arg,
                    options(nostack),
                );
            }
            if ret < 0 {
                Err(io::Error::from_raw_os_error(
                    i32::try_from(-ret).unwrap_or(libc::EINVAL),
                ))
            } else {
                i32::try_from(ret).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
            }
        }

        /// Elsewhere: always the fallback.
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        pub(super) unsafe fn vfork_into_cgroup(
            _stack: &Stack,
            _cgroup: RawFd,
            _context: &Context,
        ) -> io::Result<i32> {
            Err(io::Error::from_raw_os_error(libc::ENOSYS))
        }
    }

    /// Runs `f` with every signal blocked in this thread, then restores the mask.
    fn with_signals_blocked<T>(f: impl FnOnce() -> T) -> T {
        // SAFETY: sigset_t is plain data, filled by sigfillset; the masks are valid pointers.
        unsafe {
            let mut all: libc::sigset_t = std::mem::zeroed();
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::sigfillset(&mut all);
            libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
            let out = f();
            libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
            out
        }
    }

    /// `close_range(first, ~0, CLOSE_RANGE_CLOEXEC)` (Linux 5.11); on an older kernel every
    /// descriptor up to the soft `RLIMIT_NOFILE` is marked one by one.
    ///
    /// # Safety
    /// Only system calls: callable in the `CLONE_VM` child.
    unsafe fn mark_cloexec_from(first: libc::c_uint) -> io::Result<()> {
        const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
        // SAFETY: plain system calls on descriptor numbers.
        unsafe {
            let rc = libc::syscall(
                libc::SYS_close_range,
                first,
                libc::c_uint::MAX,
                CLOSE_RANGE_CLOEXEC,
            );
            if rc == 0 {
                return Ok(());
            }
            let mut limit: libc::rlimit = std::mem::zeroed();
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
                return Err(io::Error::last_os_error());
            }
            let last = limit.rlim_cur.min(1 << 20) as libc::c_int;
            for fd in first as libc::c_int..last {
                let flags = libc::fcntl(fd, libc::F_GETFD);
                if flags >= 0 && flags & libc::FD_CLOEXEC == 0 {
                    libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
                }
            }
        }
        Ok(())
    }

    /// The child: reports the errno of the step that failed and exits 127.
    extern "C" fn child_main(arg: *mut c_void) -> libc::c_int {
        // SAFETY: `arg` is the parent's `Context`, alive until this child execs or exits.
        let context = unsafe { &*(arg as *const Context) };
        let Err(e) = child_setup(context);
        context
            .error
            .store(e.raw_os_error().unwrap_or(libc::EINVAL), Ordering::Relaxed);
        // SAFETY: _exit ends this child without running anything of the parent's.
        unsafe { libc::_exit(127) }
    }

    /// In the child, in this order: default signal handlers, its own process group, its stdio,
    /// its working folder, the confinement steps, an empty signal mask, `execve`.
    fn child_setup(context: &Context) -> Result<Infallible, io::Error> {
        let check = |rc: libc::c_int| {
            if rc < 0 {
                Err(io::Error::last_os_error())
            } else {
                Ok(())
            }
        };
        // SAFETY: plain system calls on values the parent prepared; none allocates.
        unsafe {
            // A handler of the engine must never run here; SIGPIPE, which the Rust runtime
            // ignores, is the default again for the program (as `Command` does).
            let default_action = |signal| {
                let mut default: libc::sigaction = std::mem::zeroed();
                default.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(signal, &default, std::ptr::null_mut());
            };
            if context.handlers_cleared {
                // The kernel reset every handler; ignored signals stay ignored.
                default_action(libc::SIGPIPE);
            } else {
                for signal in 1..=MAX_SIGNAL {
                    if signal == libc::SIGKILL || signal == libc::SIGSTOP {
                        continue;
                    }
                    let mut action: libc::sigaction = std::mem::zeroed();
                    if libc::sigaction(signal, std::ptr::null(), &mut action) != 0 {
                        continue;
                    }
                    if action.sa_sigaction != libc::SIG_IGN && action.sa_sigaction != libc::SIG_DFL
                        || signal == libc::SIGPIPE
                    {
                        default_action(signal);
                    }
                }
            }
            check(libc::setpgid(0, 0))?;
            for (target, &fd) in context.stdio.iter().enumerate() {
                let target = target as libc::c_int;
                if fd == target {
                    // dup2 onto itself would keep close-on-exec: clear it instead.
                    check(libc::fcntl(fd, libc::F_SETFD, 0))?;
                } else {
                    check(libc::dup2(fd, target))?;
                }
            }
            // Every descriptor but stdio is closed at `execve`, whatever the caller of reviewflow
            // left open (a descriptor on a credential is a way around every rule on paths).
            // Marked, not closed: the steps below still use the parent's descriptors.
            mark_cloexec_from(3)?;
            if let Some(steps) = &context.steps {
                steps.enter()?;
            }
            check(libc::chdir(context.cwd))?;
            if let Some(steps) = &context.steps {
                steps.apply()?;
            }
            let mut empty: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut empty);
            libc::pthread_sigmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
            libc::execve(context.program, context.argv, context.envp);
        }
        Err(io::Error::last_os_error())
    }
}

#[cfg(not(target_os = "linux"))]
mod portable {
    use std::io;
    use std::os::unix::ffi::OsStrExt as _;
    use std::os::unix::process::CommandExt as _;
    use std::process::Stdio;

    use tokio::process::{ChildStderr, ChildStdin, ChildStdout};

    use super::{Launch, Spawned};

    /// Without Linux there are no confinement steps: the standard library's spawn.
    pub(in crate::exec::process) fn spawn(launch: Launch<'_>) -> io::Result<Spawned> {
        let mut command = std::process::Command::new(launch.program);
        command
            .args(launch.args)
            .current_dir(launch.cwd)
            .env_clear()
            .process_group(0)
            .stdin(if launch.stdin_piped {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for entry in &launch.env {
            let at = entry.iter().position(|&b| b == b'=').unwrap_or(entry.len());
            let (name, value) = entry.split_at(at);
            command.env(
                std::ffi::OsStr::from_bytes(name),
                std::ffi::OsStr::from_bytes(value.get(1..).unwrap_or_default()),
            );
        }
        let mut child = command.spawn()?;
        let pid = i32::try_from(child.id()).map_err(io::Error::other)?;
        let missing = || io::Error::other("a pipe of the child is missing");
        Ok(Spawned {
            pid,
            stdin: child.stdin.take().map(ChildStdin::from_std).transpose()?,
            stdout: ChildStdout::from_std(child.stdout.take().ok_or_else(missing)?)?,
            stderr: ChildStderr::from_std(child.stderr.take().ok_or_else(missing)?)?,
        })
    }
}
