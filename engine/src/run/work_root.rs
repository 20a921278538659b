//! The run's work root: the folder of its stages' work folders (`private::work_root`), made by
//! the run (0700, never an existing one: another user of the temp folder may not prepare it).
//!
//! Where the process has a mount namespace of its own ([`PrivateMounts`]: `reviewflow run` makes
//! one as root, before its first thread), a tmpfs is mounted on it, seen only by
//! the run's own processes: the stages' folders are in memory, no process outside the run can
//! reach them, and they are gone when the run ends, however it ends (a run killed by SIGKILL
//! takes its mount namespace with it). It also spares a run the file system's cost of making and
//! removing a folder a stage, which on some (ext4 without a journal) grows with every folder
//! removed in the last seconds (docs/performance.md). Where the run's children share one view
//! (`exec::confine::groups`), the tmpfs's root is not root's but the owner's, mode 0711: the
//! children pass through it to their folders and may neither list nor change it.

use std::io;
use std::path::{Path, PathBuf};

use super::events::Event;
use super::reporter::Reporter;
use crate::exec::confine::groups::{self, Groups};

/// Proof that this process has a mount namespace of its own, whose mounts no other namespace
/// receives: what it mounts, only the run's processes see. Made only by [`PrivateMounts::make`].
#[derive(Clone, Copy, Debug)]
pub struct PrivateMounts(());

impl PrivateMounts {
    /// Gives the process a mount namespace of its own: `unshare(CLONE_NEWNS)`, then every mount
    /// made a slave (the host's mount events still come in, none goes out). Only while the
    /// process has one thread (a namespace is a thread's: the others would stay in the host's),
    /// and only with `CAP_SYS_ADMIN` (as root). `Err` says why not; the process is then in the
    /// host's namespace or in one whose mounts must not be used.
    pub fn make() -> Result<Self, String> {
        make_private()
    }
}

/// How many threads this process runs (`/proc/self/task`): what may be done only while it has
/// one (a fork, a new mount namespace) checks it first.
pub fn thread_count() -> Result<usize, String> {
    std::fs::read_dir("/proc/self/task")
        .map(Iterator::count)
        .map_err(|e| format!("cannot count this process's threads in /proc/self/task: {e}"))
}

/// The work root made for a run; unmounts its tmpfs when dropped.
#[derive(Debug)]
pub(crate) struct WorkRoot {
    path: PathBuf,
    in_memory: bool,
    groups: Option<Groups>,
}

impl WorkRoot {
    /// Makes the folder at `path`, and a tmpfs on it when `in_memory`. A failure is said: the
    /// folder's, after which each stage fails to make its own; the tmpfs's, after which the
    /// folders are made on disk. With `groups` (and in memory) the tmpfs is made for stages told
    /// apart by group (`exec::confine::groups`): its root owned by `OWNER`, mode 0711, with the
    /// folder a shared view's root is mounted on.
    pub(crate) async fn make(
        path: &Path,
        in_memory: bool,
        groups: Option<Groups>,
        reporter: &Reporter,
    ) -> Self {
        let at = path.to_path_buf();
        let made = tokio::task::spawn_blocking(move || {
            use std::os::unix::fs::DirBuilderExt as _;
            std::fs::DirBuilder::new().mode(0o700).create(&at)?;
            Ok::<_, io::Error>(if in_memory {
                Some(
                    mount(&at, groups.is_some())
                        .map(|()| groups.filter(|_| groups::make_pivot(&at).is_ok())),
                )
            } else {
                None
            })
        })
        .await
        .unwrap_or_else(|e| Err(io::Error::other(e.to_string())));
        let (mut in_memory, mut separated) = (false, None);
        match made {
            Err(e) => reporter.event(Event::Warning {
                stage: None,
                message: format!("cannot make the run's work folder {}: {e}", path.display()),
            }),
            Ok(Some(Err(e))) => reporter.event(Event::Warning {
                stage: None,
                message: format!(
                    "cannot keep the stages' work folders in memory ({e}): they are made on \
                     disk in {}",
                    path.display()
                ),
            }),
            Ok(Some(Ok(groups))) => (in_memory, separated) = (true, groups),
            Ok(None) => {}
        }
        Self {
            path: path.to_path_buf(),
            in_memory,
            groups: separated,
        }
    }

    /// Whether the stages' folders are in memory.
    pub(crate) fn in_memory(&self) -> bool {
        self.in_memory
    }

    /// How the stages are told apart, when by group.
    pub(crate) fn groups(&self) -> Option<Groups> {
        self.groups
    }
}

impl Drop for WorkRoot {
    /// The tmpfs goes, and all it still holds: what a stage left behind is not kept. The folder
    /// itself is removed with the run's other work folders (`private::remove_work_folders`).
    fn drop(&mut self) {
        if self.groups.is_some() {
            // The views shared by the run's children hold the tmpfs too.
            crate::exec::confine::namespaces::forget_shared_views(&self.path);
        }
        if self.in_memory {
            let _ = unmount(&self.path);
        }
    }
}

#[cfg(target_os = "linux")]
fn make_private() -> Result<PrivateMounts, String> {
    // The one thread the engine may have started by now (a large document freed on a thread of
    // its own) is waited for.
    crate::compile::settle();
    let threads = thread_count()?;
    if threads != 1 {
        return Err(format!(
            "the process already runs {threads} threads: a new mount namespace would be the \
             calling thread's only"
        ));
    }
    if !rustix::process::geteuid().is_root() {
        return Err("not root".into());
    }
    // SAFETY: NEWNS only: no descriptor table is unshared.
    unsafe { rustix::thread::unshare_unsafe(rustix::thread::UnshareFlags::NEWNS) }
        .map_err(|e| format!("unshare(CLONE_NEWNS): {e}"))?;
    // SAFETY: valid NUL-terminated strings; the other pointers may be null for a change of
    // propagation.
    let rc = unsafe {
        libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_SLAVE,
            std::ptr::null(),
        )
    };
    if rc != 0 {
        // The new namespace's mounts are still peers of the host's: nothing may be mounted.
        return Err(format!(
            "cannot make the mounts slaves: {}",
            io::Error::last_os_error()
        ));
    }
    Ok(PrivateMounts(()))
}

#[cfg(not(target_os = "linux"))]
fn make_private() -> Result<PrivateMounts, String> {
    Err("only on Linux".into())
}

#[cfg(target_os = "linux")]
fn mount(path: &Path, separated: bool) -> io::Result<()> {
    let target = crate::exec::confine::namespaces::cstr(path)?;
    // No device files, no set-user-ID programs, and executable only where the folder on disk
    // was (a temp folder mounted `noexec` stays so): the tmpfs allows no more than the disk did.
    // The size is the kernel's default for a tmpfs (half the memory); where the memory
    // controller is on, each page is charged to the cgroup of the stage that wrote it.
    let mut flags = libc::MS_NOSUID | libc::MS_NODEV;
    if rustix::fs::statvfs(path)
        .map_err(io::Error::from)?
        .f_flag
        .contains(rustix::fs::StatVfsMountFlags::NOEXEC)
    {
        flags |= libc::MS_NOEXEC;
    }
    // Told apart by group, the children pass through the root to their own folders, and may
    // neither list it nor change it: it is not theirs.
    let data = if separated {
        std::ffi::CString::new(format!(
            "mode=0711,uid={owner},gid={owner}",
            owner = groups::OWNER
        ))?
    } else {
        c"mode=0700".into()
    };
    // SAFETY: valid NUL-terminated strings.
    let rc = unsafe {
        libc::mount(
            c"reviewflow".as_ptr(),
            target.as_ptr(),
            c"tmpfs".as_ptr(),
            flags,
            data.as_ptr().cast(),
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(target_os = "linux")]
fn unmount(path: &Path) -> io::Result<()> {
    let target = crate::exec::confine::namespaces::cstr(path)?;
    // SAFETY: a valid NUL-terminated string.
    let rc = unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(not(target_os = "linux"))]
fn mount(_path: &Path, _separated: bool) -> io::Result<()> {
    Err(io::Error::new(io::ErrorKind::Unsupported, "only on Linux"))
}

#[cfg(not(target_os = "linux"))]
fn unmount(_path: &Path) -> io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A namespace is a thread's: with a second thread alive the process gets none (the test
    /// harness runs each test on a thread of its own).
    #[test]
    fn a_process_with_threads_gets_no_mount_namespace() {
        let err = PrivateMounts::make().expect_err("the test process has threads");
        if cfg!(target_os = "linux") {
            assert!(err.contains("threads"), "{err}");
        }
    }

    /// Without a mount namespace of the process's own, the work root is a plain folder, 0700.
    #[tokio::test]
    async fn without_private_mounts_the_work_root_is_on_disk() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("reviewflow-R1");
        let reporter = Reporter::start(
            None,
            crate::run::ConsoleMode::Plain,
            None,
            false,
            crate::exec::redact::Redactor::empty(),
        )
        .expect("a reporter");
        let root = WorkRoot::make(&path, false, None, &reporter).await;
        assert!(!root.in_memory());
        let mode = std::fs::metadata(&path).expect("made").permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        // Never an existing folder: another user of the temp folder may have prepared it.
        let again = WorkRoot::make(&path, false, None, &reporter).await;
        assert!(!again.in_memory());
    }
}
