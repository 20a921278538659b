//! What the running kernel offers for confinement, probed once per process (a kernel cannot
//! change under a running process).

use std::sync::OnceLock;

/// The Landlock ABI version that brought TCP rules (Linux 6.7).
pub const ABI_NETWORK: u32 = 4;
/// The Landlock ABI version that brought signal and abstract-socket scopes (Linux 6.12).
pub const ABI_SCOPES: u32 = 6;

/// What confinement the kernel offers, and what the engine runs as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kernel {
    /// The Landlock ABI version; 0 when Landlock is missing or disabled.
    pub landlock_abi: u32,
    /// Whether the engine's effective uid is 0, so children must drop their capabilities.
    pub root: bool,
    /// The highest capability number the kernel knows.
    pub cap_last: u32,
    /// Whether the no-new-privileges flag exists (Linux 3.5).
    pub no_new_privs: bool,
}

/// The probe, made on first use.
pub fn kernel() -> Kernel {
    static KERNEL: OnceLock<Kernel> = OnceLock::new();
    *KERNEL.get_or_init(probe)
}

#[cfg(target_os = "linux")]
fn probe() -> Kernel {
    Kernel {
        landlock_abi: landlock_abi(),
        root: rustix::process::geteuid().is_root(),
        cap_last: std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            // Dropping a capability the kernel does not know fails with EINVAL, which the child
            // ignores; 63 covers every possible one.
            .unwrap_or(63),
        no_new_privs: rustix::thread::no_new_privs().is_ok(),
    }
}

#[cfg(not(target_os = "linux"))]
fn probe() -> Kernel {
    Kernel {
        landlock_abi: 0,
        root: false,
        cap_last: 0,
        no_new_privs: false,
    }
}

/// `landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)`: the ABI version, or an
/// error (ENOSYS: not built; EOPNOTSUPP: disabled at boot).
#[cfg(target_os = "linux")]
fn landlock_abi() -> u32 {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute and size 0 the call reads no memory; it only returns a number.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    u32::try_from(rc).unwrap_or(0)
}
