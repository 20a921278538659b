//! No kernel keyring for a child: a seccomp filter, installed by the child before its `execve`
//! (after `no_new_privs`, which lets a process without capabilities install one), makes
//! `add_key`, `request_key` and `keyctl` fail with `EPERM`, in every system call ABI the
//! process could use (a 64-bit x86 program can make 32-bit calls too).
//!
//! Why: keyrings belong to a uid, not to a namespace the engine can give a stage. Every child is
//! uid 0 (or the engine's own uid), so a key one stage added to its user keyring was found and
//! read by the next stage, and stayed in the kernel after the run; a stage could also read what
//! another process of the same user keeps there. No stage needs a keyring.

/// The filter's instructions (`struct sock_filter`), or `None` on an architecture it does not
/// know (the layer is then reported missing).
pub fn filter() -> Option<&'static [libc::sock_filter]> {
    FILTER.as_deref()
}

#[cfg(target_os = "linux")]
static FILTER: std::sync::LazyLock<Option<Vec<libc::sock_filter>>> =
    std::sync::LazyLock::new(build);

#[cfg(not(target_os = "linux"))]
static FILTER: std::sync::LazyLock<Option<Vec<libc::sock_filter>>> =
    std::sync::LazyLock::new(|| None);

/// One ABI: its `AUDIT_ARCH_*` value and its numbers of `add_key`, `request_key`, `keyctl`.
#[cfg(target_os = "linux")]
struct Abi {
    arch: u32,
    calls: [u32; 3],
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
const ABIS: &[Abi] = &[
    // x86-64 (and x32, whose numbers carry bit 30: refused whole below).
    Abi {
        arch: 0xC000_003E,
        calls: [248, 249, 250],
    },
    // i386, through `int 0x80`.
    Abi {
        arch: 0x4000_0003,
        calls: [286, 287, 288],
    },
];

#[cfg(all(target_os = "linux", target_arch = "aarch64"))]
const ABIS: &[Abi] = &[
    Abi {
        arch: 0xC000_00B7,
        calls: [217, 218, 219],
    },
    // 32-bit ARM.
    Abi {
        arch: 0x4000_0028,
        calls: [309, 310, 311],
    },
];

#[cfg(all(
    target_os = "linux",
    not(any(target_arch = "x86_64", target_arch = "aarch64"))
))]
const ABIS: &[Abi] = &[];

#[cfg(target_os = "linux")]
fn build() -> Option<Vec<libc::sock_filter>> {
    const LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
    const JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
    const JGE_K: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
    const RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
    /// `offsetof(struct seccomp_data, nr)` and `arch`.
    const NR: u32 = 0;
    const ARCH: u32 = 4;
    const X32_BIT: u32 = 0x4000_0000;
    let stmt = |code: u16, k: u32| libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    };
    let jump = |code: u16, k: u32, jt: u8, jf: u8| libc::sock_filter { code, jt, jf, k };
    if ABIS.is_empty() {
        return None;
    }
    let deny = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
    let mut prog = vec![stmt(LD_W_ABS, ARCH)];
    // Per ABI: [JEQ arch, else skip the block] LD nr; (x86-64: JGE x32 bit → deny;) JEQ each
    // call → deny; ALLOW. A block's length is fixed, so the jumps are known.
    for (i, abi) in ABIS.iter().enumerate() {
        let x32 = cfg!(target_arch = "x86_64") && i == 0;
        let calls = abi.calls.len();
        // After the JEQ on the arch: LD, [JGE], JEQ × calls, RET ALLOW, RET DENY.
        let block = 1 + usize::from(x32) + calls + 2;
        prog.push(jump(JEQ_K, abi.arch, 0, u8::try_from(block).ok()?));
        prog.push(stmt(LD_W_ABS, NR));
        // Each JEQ jumps to the DENY at the end of the block.
        let mut to_deny = calls + 1;
        if x32 {
            prog.push(jump(JGE_K, X32_BIT, u8::try_from(to_deny).ok()?, 0));
        }
        for &call in &abi.calls {
            to_deny -= 1;
            prog.push(jump(JEQ_K, call, u8::try_from(to_deny).ok()?, 0));
        }
        prog.push(stmt(RET_K, libc::SECCOMP_RET_ALLOW));
        prog.push(stmt(RET_K, deny));
        // The next block compares the arch again: load it back.
        prog.push(stmt(LD_W_ABS, ARCH));
    }
    // An ABI the filter does not know: nothing of it is allowed.
    prog.push(stmt(RET_K, deny));
    Some(prog)
}

/// Whether the calling thread holds the filter, attaching it first where the thread may without
/// `no_new_privs`: it holds `CAP_SYS_ADMIN` (reviewflow runs as root). A child started from
/// such a thread inherits the filter (with the thread's other threads and processes started
/// after it, none of which uses a keyring) and attaches none of its own: attaching one cost a
/// child about 0.06 ms (the kernel compiles it and works out its verdict for every system call
/// of every ABI), inheriting it costs nothing. Elsewhere each child attaches it after its own
/// `no_new_privs`, as the engine's thread cannot without setting `no_new_privs` on itself.
#[cfg(target_os = "linux")]
pub(crate) fn held_by_this_thread() -> bool {
    use rustix::thread::{CapabilitySet, capabilities};
    thread_local! {
        static HELD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }
    HELD.with(|held| {
        if held.get() {
            return true;
        }
        let Some(filter) = filter() else {
            return false;
        };
        let admin =
            capabilities(None).is_ok_and(|sets| sets.effective.contains(CapabilitySet::SYS_ADMIN));
        // SAFETY: the engine's static filter, on this thread; a failure leaves the thread as
        // it was, and each child attaches the filter itself.
        if admin && unsafe { install(filter) }.is_ok() {
            held.set(true);
        }
        held.get()
    })
}

/// Installs the filter on the calling process (the child, after `no_new_privs`).
///
/// # Safety
/// Only system calls: callable in the `CLONE_VM` child.
#[cfg(target_os = "linux")]
pub unsafe fn install(filter: &[libc::sock_filter]) -> std::io::Result<()> {
    let prog = libc::sock_fprog {
        len: u16::try_from(filter.len())
            .map_err(|_| std::io::Error::from_raw_os_error(libc::E2BIG))?,
        filter: filter.as_ptr().cast_mut(),
    };
    // SAFETY: `prog` points at instructions that outlive the call (a static).
    let rc = unsafe {
        libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER,
            &raw const prog,
            0,
            0,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::os::unix::process::CommandExt as _;

    use super::*;

    /// Runs `python3 -c script` with the filter installed (after `no_new_privs`), as a child.
    fn filtered(script: &str) -> String {
        let prog = filter().expect("a filter for this architecture");
        let mut cmd = std::process::Command::new("python3");
        cmd.arg("-c").arg(script);
        // SAFETY: system calls only, before exec.
        unsafe {
            cmd.pre_exec(move || {
                rustix::thread::set_no_new_privs(true)?;
                install(prog)
            });
        }
        let out = cmd.output().expect("python3 runs");
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    }

    #[test]
    fn a_filtered_child_has_no_keyring_and_every_other_call() {
        if std::process::Command::new("python3")
            .arg("-c")
            .arg("")
            .status()
            .is_err()
        {
            println!("SKIPPED-LAYER kernel-keyring: no python3 to make the calls");
            return;
        }
        let seen = filtered(
            "import ctypes, os\n\
             libc = ctypes.CDLL(None, use_errno=True)\n\
             import platform\n\
             nrs = {'x86_64': (248, 249, 250), 'aarch64': (217, 218, 219)}[platform.machine()]\n\
             r = libc.syscall(nrs[0], b'user', b'rf-filter-test', b'v', 1, ctypes.c_int(-4))\n\
             print('add_key', r, ctypes.get_errno())\n\
             r = libc.syscall(nrs[2], 0, ctypes.c_int(-4), 0)\n\
             print('keyctl', r, ctypes.get_errno())\n\
             print('pid', os.getpid() > 0)\n",
        );
        assert!(
            seen.contains(&format!("add_key -1 {}", libc::EPERM)),
            "{seen}"
        );
        assert!(
            seen.contains(&format!("keyctl -1 {}", libc::EPERM)),
            "{seen}"
        );
        assert!(seen.contains("pid True"), "{seen}");
    }

    /// The thread's own seccomp mode (`/proc/thread-self/status`): 0 none, 2 a filter.
    fn seccomp_mode() -> String {
        std::fs::read_to_string("/proc/thread-self/status")
            .expect("status")
            .lines()
            .find_map(|l| l.strip_prefix("Seccomp:"))
            .map(|v| v.trim().to_owned())
            .expect("a Seccomp line")
    }

    #[test]
    fn as_root_the_thread_that_starts_children_holds_the_filter_and_they_inherit_it() {
        // A thread of its own: the filter stays on the thread it is attached to (and those it
        // starts).
        std::thread::spawn(|| {
            let root = rustix::process::geteuid().is_root();
            assert_eq!(held_by_this_thread(), root);
            if !root {
                println!("SKIPPED-LAYER kernel-keyring: not root, each child attaches the filter");
                return;
            }
            assert_eq!(seccomp_mode(), "2");
            // Attached once: asked again, nothing more is stacked.
            assert!(held_by_this_thread());
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg("grep '^Seccomp:' /proc/self/status")
                .output()
                .expect("sh runs");
            assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "Seccomp:\t2");
        })
        .join()
        .expect("the thread ends");
    }
}
