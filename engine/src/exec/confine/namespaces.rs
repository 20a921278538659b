//! Namespaces the engine makes for its children, where it may (root, or `CAP_SYS_ADMIN`):
//!
//! - a **network namespace per stage**, with only a loopback interface, for the children that
//!   declare no network: no UDP, no DNS, no TCP to the host's loopback services, no abstract or
//!   pathname socket of the host's network stack. The engine can still serve such a stage on
//!   loopback ([`StageNet::listen_loopback`]: the socket is made inside the namespace, and the
//!   engine serves it from outside);
//! - a **mount namespace per child**: the whole file system read-only (so `chmod`, `utime`,
//!   xattrs and every write fail with `EROFS` outside the child's own folders, which Landlock
//!   does not mediate), its own folder and its declared write grants writable, and empty,
//!   read-only folders mounted over the places no stage may reach at all: the other stages' work
//!   folders (the run's whole work folder is covered, the child's own folder mounted back),
//!   `.reviewflow`, the runs folder and the checkout's `.git`. What is covered is unreachable, not
//!   only unreadable: no path leads to a socket or a file beneath it.
//!
//! Both are built in a thread of their own (namespaces belong to a thread; the thread ends once
//! the namespace is made, and the engine keeps it by a descriptor), and the child enters them
//! with `setns` before its `execve` (`privileges.rs`).

use std::io;
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Whether this process can make the namespaces, probed once by making a network namespace.
pub fn available() -> Result<(), String> {
    static PROBE: OnceLock<Result<(), String>> = OnceLock::new();
    PROBE
        .get_or_init(|| {
            if !cfg!(target_os = "linux") {
                return Err("not available outside Linux".into());
            }
            if !super::kernel().root {
                return Err(
                    "reviewflow does not run as root: it cannot make namespaces (run it with sudo; see docs/isolation.md)"
                        .into(),
                );
            }
            StageNet::create()
                .map(drop)
                .map_err(|e| format!("cannot make a network namespace: {e}"))
        })
        .clone()
}

/// A stage's network namespace: loopback only.
#[derive(Debug)]
pub struct StageNet {
    fd: OwnedFd,
}

impl StageNet {
    /// Makes a namespace with only `lo`, up.
    pub fn create() -> io::Result<Self> {
        in_thread(|| {
            check(unsafe { libc::unshare(libc::CLONE_NEWNET) })?;
            loopback_up()?;
            open_own_ns("net")
        })
        .map(|fd| Self { fd })
    }

    /// The descriptor a child passes to `setns`.
    pub(crate) fn fd(&self) -> &OwnedFd {
        &self.fd
    }

    /// A listener on `127.0.0.1` (a free port) inside the namespace, non-blocking: the children
    /// reach it, the engine serves it.
    pub fn listen_loopback(&self) -> io::Result<std::net::TcpListener> {
        let fd = self.fd.as_raw_fd();
        in_thread(move || {
            // SAFETY: a plain system call on a descriptor this value owns.
            check(unsafe { libc::setns(fd, libc::CLONE_NEWNET) })?;
            let listener = std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0))?;
            listener.set_nonblocking(true)?;
            Ok(listener)
        })
    }
}

/// Runs `f` in a new thread and waits for it: what `f` does to its thread's namespaces dies
/// with the thread, never reaching a runtime thread that would be reused.
fn in_thread<T: Send>(f: impl FnOnce() -> io::Result<T> + Send) -> io::Result<T> {
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .name("reviewflow-ns".into())
            .spawn_scoped(s, f)?
            .join()
            .map_err(|_| io::Error::other("the namespace thread panicked"))?
    })
}

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

fn cstr(path: &Path) -> io::Result<std::ffi::CString> {
    use std::os::unix::ffi::OsStrExt as _;
    std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

/// `/proc/thread-self/ns/<kind>`, opened.
fn open_own_ns(kind: &str) -> io::Result<OwnedFd> {
    let path = cstr(Path::new(&format!("/proc/thread-self/ns/{kind}")))?;
    // SAFETY: a NUL-terminated path; the descriptor returned is new and owned here.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a new descriptor nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Brings `lo` up in the calling thread's network namespace (a new one has it down).
fn loopback_up() -> io::Result<()> {
    // SAFETY: plain system calls on a socket made and closed here; `ifreq` is plain data.
    unsafe {
        let sock = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if sock < 0 {
            return Err(io::Error::last_os_error());
        }
        let sock = OwnedFd::from_raw_fd(sock);
        let mut req: libc::ifreq = std::mem::zeroed();
        for (d, s) in req.ifr_name.iter_mut().zip(b"lo\0") {
            *d = *s as libc::c_char;
        }
        check(libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFFLAGS, &mut req))?;
        req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
        check(libc::ioctl(sock.as_raw_fd(), libc::SIOCSIFFLAGS, &req))?;
    }
    Ok(())
}

/// What one child's mount namespace shows.
#[derive(Debug, Clone, Default)]
pub struct View {
    /// The child's own folder, inside `work_root`: its stage's folder is writable in the view.
    pub work: Option<PathBuf>,
    /// The folder holding every stage's work folder of the run: covered, but for `work`.
    pub work_root: Option<PathBuf>,
    /// Declared write grants (writable).
    pub write: Vec<PathBuf>,
    /// Folders covered with an empty read-only folder.
    pub cover: Vec<PathBuf>,
}

/// `struct mount_attr`.
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

const MOUNT_ATTR_RDONLY: u64 = 0x1;
const MOUNT_ATTR_NOSUID: u64 = 0x2;
const AT_RECURSIVE: libc::c_uint = 0x8000;

fn mount_setattr(path: &Path, recursive: bool, set: u64, clr: u64) -> io::Result<()> {
    let c = cstr(path)?;
    let attr = MountAttr {
        attr_set: set,
        attr_clr: clr,
        propagation: 0,
        userns_fd: 0,
    };
    let flags = if recursive { AT_RECURSIVE } else { 0 };
    // SAFETY: a NUL-terminated path and a valid `mount_attr` for the duration of the call.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            c.as_ptr(),
            flags,
            &raw const attr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

fn mount(
    source: Option<&Path>,
    target: &Path,
    fstype: Option<&str>,
    flags: libc::c_ulong,
    data: Option<&str>,
) -> io::Result<()> {
    let source = source.map(cstr).transpose()?;
    let target = cstr(target)?;
    let fstype = fstype.map(std::ffi::CString::new).transpose()?;
    let data = data.map(std::ffi::CString::new).transpose()?;
    // SAFETY: NUL-terminated strings (or null) alive for the duration of the call.
    let rc = unsafe {
        libc::mount(
            source.as_ref().map_or(std::ptr::null(), |s| s.as_ptr()),
            target.as_ptr(),
            fstype.as_ref().map_or(std::ptr::null(), |s| s.as_ptr()),
            flags,
            data.as_ref()
                .map_or(std::ptr::null(), |s| s.as_ptr().cast()),
        )
    };
    check(rc)
}

/// Whether `path` is a folder, not following a link.
fn is_dir(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir())
}

/// An empty, read-only folder over `path`.
fn cover(path: &Path) -> io::Result<()> {
    mount(
        Some(Path::new("none")),
        path,
        Some("tmpfs"),
        libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC | libc::MS_RDONLY,
        Some("size=4k,nr_inodes=1,mode=0555"),
    )
}

/// Makes the mount namespace of one child and returns its descriptor. Blocking.
pub fn build_view(view: &View) -> io::Result<OwnedFd> {
    in_thread(|| {
        // SAFETY: a plain system call; only this thread's namespaces change.
        check(unsafe { libc::unshare(libc::CLONE_NEWNS) })?;
        // Nothing done here may reach the host's mounts.
        mount(
            None,
            Path::new("/"),
            None,
            libc::MS_REC | libc::MS_PRIVATE,
            None,
        )
        .map_err(|e| io::Error::new(e.kind(), format!("make / private: {e}")))?;
        let mut writable = Vec::new();
        // The stage's whole folder (the child's own may be a folder in it: a reviewer's try
        // folder beside the workspace it reads); Landlock narrows what the child writes there.
        let stage_work = match (&view.work, &view.work_root) {
            (Some(work), Some(root)) => work
                .strip_prefix(root)
                .ok()
                .and_then(|rel| rel.components().next())
                .map(|first| root.join(first)),
            _ => None,
        };
        if let (Some(work), Some(root)) = (&stage_work, &view.work_root)
            && let Ok(rel) = work.strip_prefix(root)
            && is_dir(root)
        {
            // Held by a descriptor while the run's work folder is covered, then mounted back.
            let own = std::fs::File::open(work)
                .map_err(|e| io::Error::new(e.kind(), format!("open {}: {e}", work.display())))?;
            mount(
                Some(Path::new("none")),
                root,
                Some("tmpfs"),
                libc::MS_NOSUID | libc::MS_NODEV,
                Some("size=64k,mode=0755"),
            )
            .map_err(|e| io::Error::new(e.kind(), format!("cover {}: {e}", root.display())))?;
            std::fs::create_dir_all(root.join(rel))?;
            let source = PathBuf::from(format!("/proc/thread-self/fd/{}", own.as_raw_fd()));
            mount(
                Some(&source),
                work,
                None,
                libc::MS_BIND | libc::MS_REC,
                None,
            )
            .map_err(|e| io::Error::new(e.kind(), format!("mount {} back: {e}", work.display())))?;
            writable.push(work.clone());
        } else if let Some(work) = &view.work {
            bind_self(work)?;
            writable.push(work.clone());
        }
        for path in &view.write {
            if std::fs::metadata(path).is_ok() {
                bind_self(path)?;
                writable.push(path.clone());
            }
        }
        for path in &view.cover {
            // Checked in this view: a path beneath one already covered is gone.
            if is_dir(path) {
                cover(path).map_err(|e| {
                    io::Error::new(e.kind(), format!("cover {}: {e}", path.display()))
                })?;
            }
        }
        mount_setattr(
            Path::new("/"),
            true,
            MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID,
            0,
        )
        .map_err(|e| io::Error::new(e.kind(), format!("make / read-only: {e}")))?;
        for path in &writable {
            // Not recursive: what is covered beneath a writable folder stays read-only.
            mount_setattr(path, false, 0, MOUNT_ATTR_RDONLY).map_err(|e| {
                io::Error::new(e.kind(), format!("make {} writable: {e}", path.display()))
            })?;
        }
        open_own_ns("mnt")
    })
}

/// `path` bound onto itself: a mount of its own, whose flags can differ from its parent's.
fn bind_self(path: &Path) -> io::Result<()> {
    mount(Some(path), path, None, libc::MS_BIND | libc::MS_REC, None)
        .map_err(|e| io::Error::new(e.kind(), format!("bind {}: {e}", path.display())))
}
