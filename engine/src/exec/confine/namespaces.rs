//! Namespaces the engine makes for its children: as root, in the host's user namespace; as
//! any other user, in a user namespace of its own ([`user_ns`]) where the kernel lets an
//! unprivileged user make one and hold capabilities in it:
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
//! Each is made by a short-lived builder process (`builder.rs`: a user namespace can only be made
//! or entered by a process of one thread), kept by the engine as a descriptor, and entered by
//! the child with `setns` before its `execve` (`privileges.rs`): the user namespace first, then
//! the others, then every capability dropped. What the child cannot undo: its mounts were made
//! in a more privileged user namespace than any it can make itself, so in one it makes they are
//! locked together (no mount of the view can be unmounted or made writable there), and Landlock
//! refuses a confined process every mount call.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd as _, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::builder::{self, Op, When};

/// Whether this process can make the namespaces, probed once by making a network namespace and
/// a mount namespace the way every stage's are made: as root, or in [`user_ns`].
pub fn available() -> Result<(), String> {
    static PROBE: OnceLock<Result<(), String>> = OnceLock::new();
    PROBE
        .get_or_init(|| {
            if !cfg!(target_os = "linux") {
                return Err("not available outside Linux".into());
            }
            let within = if super::kernel().root {
                ""
            } else {
                owner()?;
                " in its user namespace"
            };
            let denied = |what: &str, e: io::Error| {
                if super::kernel().root {
                    format!("cannot make a {what}: {e}")
                } else {
                    format!(
                        "reviewflow does not run as root and cannot make a {what}{within}: {e} (the kernel or a security module denies capabilities in unprivileged user namespaces, as Ubuntu 24.04's AppArmor does; run it with sudo, see docs/isolation.md)"
                    )
                }
            };
            StageNet::create()
                .map(drop)
                .map_err(|e| denied("network namespace", e))?;
            build_view(&View::default())
                .map(drop)
                .map_err(|e| denied("mount namespace", e))
        })
        .clone()
}

/// How the namespaces are made, for the run's report: what [`available`] found.
pub fn made_by() -> &'static str {
    if super::kernel().root {
        "as root"
    } else {
        "in a user namespace of reviewflow's own (only its uid and gid mapped, setgroups denied), since it does not run as root"
    }
}

/// The user namespace every namespace of the process is made in when it does not run as root:
/// its own uid and gid mapped to themselves, nothing else, `setgroups` denied. `None` as root
/// (the namespaces are the host's user namespace's). A child enters it before the others, so
/// that it may enter them; it then drops every capability it holds there.
pub(crate) fn user_ns() -> Option<RawFd> {
    owner().ok().flatten()
}

fn owner() -> Result<Option<RawFd>, String> {
    static USER: OnceLock<Result<Option<OwnedFd>, String>> = OnceLock::new();
    USER.get_or_init(|| {
        if super::kernel().root {
            return Ok(None);
        }
        let uid = rustix::process::geteuid().as_raw();
        let gid = rustix::process::getegid().as_raw();
        builder::user_namespace(uid, gid)
            .map(Some)
            .map_err(|e| {
                format!(
                    "reviewflow does not run as root and cannot make a user namespace: {e} (run it with sudo; see docs/isolation.md)"
                )
            })
    })
    .as_ref()
    .map(|fd| fd.as_ref().map(|fd| fd.as_raw_fd()))
    .map_err(Clone::clone)
}

/// The first step of every build: into the process's user namespace, when it has one.
pub(super) fn enter_owner() -> io::Result<Vec<Op>> {
    match owner() {
        Ok(Some(fd)) => Ok(vec![Op::EnterUser(fd)]),
        Ok(None) => Ok(Vec::new()),
        Err(e) => Err(io::Error::new(io::ErrorKind::PermissionDenied, e)),
    }
}

/// The one descriptor a build yields.
fn one(fds: Vec<OwnedFd>) -> io::Result<OwnedFd> {
    fds.into_iter()
        .next()
        .ok_or_else(|| io::Error::other("the namespace builder yielded nothing"))
}

/// A stage's network namespace: loopback only.
#[derive(Debug)]
pub struct StageNet {
    fd: OwnedFd,
}

impl StageNet {
    /// Makes a namespace with only `lo`, up.
    pub fn create() -> io::Result<Self> {
        let mut ops = enter_owner()?;
        ops.extend([
            Op::Unshare(libc::CLONE_NEWNET),
            Op::LoopbackUp,
            Op::OpenNs(c"/proc/self/ns/net"),
        ]);
        builder::run(&ops).and_then(one).map(|fd| Self { fd })
    }

    /// The descriptor a child passes to `setns`.
    pub(crate) fn fd(&self) -> &OwnedFd {
        &self.fd
    }

    /// A listener on `127.0.0.1` (a free port) inside the namespace, non-blocking: the children
    /// reach it, the engine serves it.
    pub fn listen_loopback(&self) -> io::Result<std::net::TcpListener> {
        let mut ops = enter_owner()?;
        ops.extend([
            Op::Enter(self.fd.as_raw_fd(), libc::CLONE_NEWNET),
            Op::Listen,
        ]);
        builder::run(&ops)
            .and_then(one)
            .map(std::net::TcpListener::from)
    }
}

fn cstr(path: &Path) -> io::Result<CString> {
    use std::os::unix::ffi::OsStrExt as _;
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

/// Closes `fd`, a namespace's descriptor, on a thread of its own: when it is the last
/// reference, the kernel's teardown of the namespace (for a mount namespace: unmounting every
/// mount, then an RCU grace period) keeps no stage waiting. Inline where no thread can start.
pub(crate) fn release(fd: OwnedFd) {
    use std::sync::Mutex;
    use std::sync::mpsc::{Sender, channel};
    static RELEASER: OnceLock<Option<Mutex<Sender<OwnedFd>>>> = OnceLock::new();
    let sender = RELEASER.get_or_init(|| {
        let (tx, rx) = channel::<OwnedFd>();
        std::thread::Builder::new()
            .name("reviewflow-ns-release".into())
            .spawn(move || rx.into_iter().for_each(drop))
            .ok()
            .map(|_| Mutex::new(tx))
    });
    let fd = match sender {
        Some(tx) => match tx.lock() {
            Ok(tx) => match tx.send(fd) {
                Ok(()) => return,
                Err(back) => back.0,
            },
            Err(_) => fd,
        },
        None => fd,
    };
    drop(fd);
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

const MOUNT_ATTR_RDONLY: u64 = 0x1;
const MOUNT_ATTR_NOSUID: u64 = 0x2;

/// Whether `path` is a folder, not following a link.
fn is_dir(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir())
}

/// Makes the mount namespace of one child and returns its descriptor. Blocking.
pub fn build_view(view: &View) -> io::Result<OwnedFd> {
    builder::run(&view_ops(view)?).and_then(one)
}

/// The steps that make `view`, in order.
fn view_ops(view: &View) -> io::Result<Vec<Op>> {
    let mut ops = enter_owner()?;
    ops.push(Op::Unshare(libc::CLONE_NEWNS));
    // Nothing done here may reach the host's mounts.
    ops.push(Op::Mount {
        source: None,
        target: c"/".into(),
        fstype: None,
        flags: libc::MS_REC | libc::MS_PRIVATE,
        data: None,
        when: When::Always,
    });
    let bind = |path: &Path, source: CString, when: When| -> io::Result<Op> {
        Ok(Op::Mount {
            source: Some(source),
            target: cstr(path)?,
            fstype: None,
            flags: libc::MS_BIND | libc::MS_REC,
            data: None,
            when,
        })
    };
    // (path, when): made writable again once the whole view is read-only, if bound.
    let mut writable: Vec<(CString, When)> = Vec::new();
    let mut cover_source: Option<CString> = None;
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
        && work.strip_prefix(root).is_ok()
        && is_dir(root)
    {
        // Held as the builder's working folder while the run's work folder is covered, then
        // mounted back from it.
        ops.push(Op::Chdir(cstr(work)?));
        ops.push(Op::Mount {
            source: Some(c"none".into()),
            target: cstr(root)?,
            fstype: Some(c"tmpfs"),
            flags: libc::MS_NOSUID | libc::MS_NODEV,
            data: Some(c"size=64k,mode=0755"),
            when: When::Always,
        });
        ops.push(Op::Mkdir(cstr(work)?));
        ops.push(bind(work, c".".into(), When::Always)?);
        writable.push((cstr(work)?, When::Always));
        // An empty folder beside it that every cover below is a bind of: a bind costs less
        // than a new tmpfs each (a view may cover a dozen folders).
        let empty = root.join(".cover");
        ops.push(Op::Mkdir(cstr(&empty)?));
        cover_source = Some(cstr(&empty)?);
    } else if let Some(work) = &view.work {
        ops.push(bind(work, cstr(work)?, When::Always)?);
        writable.push((cstr(work)?, When::Always));
    }
    for path in &view.write {
        // Checked in the view: a grant beneath the covered work folder is gone there.
        ops.push(bind(path, cstr(path)?, When::Exists)?);
        writable.push((cstr(path)?, When::Exists));
    }
    for path in &view.cover {
        // Checked in the view: a path beneath one already covered is gone.
        ops.push(match &cover_source {
            // Read-only with the rest of the view, below.
            Some(empty) => Op::Mount {
                source: Some(empty.clone()),
                target: cstr(path)?,
                fstype: None,
                flags: libc::MS_BIND,
                data: None,
                when: When::Dir,
            },
            None => Op::Mount {
                source: Some(c"none".into()),
                target: cstr(path)?,
                fstype: Some(c"tmpfs"),
                flags: libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC | libc::MS_RDONLY,
                data: Some(c"size=4k,nr_inodes=1,mode=0555"),
                when: When::Dir,
            },
        });
    }
    ops.push(Op::Setattr {
        path: c"/".into(),
        recursive: true,
        set: MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID,
        clr: 0,
        when: When::Always,
    });
    for (path, when) in writable {
        // Not recursive: what is covered beneath a writable folder stays read-only.
        ops.push(Op::Setattr {
            path,
            recursive: false,
            set: 0,
            clr: MOUNT_ATTR_RDONLY,
            when,
        });
    }
    ops.push(Op::OpenNs(c"/proc/self/ns/mnt"));
    Ok(ops)
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::CommandExt as _;

    use super::*;
    use crate::exec::confine::privileges::ChildSteps;

    /// Makes a user namespace and a mount namespace of its own (where it holds every
    /// capability), then tries to undo the view: unmount a covered folder, remount the
    /// read-only view writable, bind the checkout without what covers its `.git`.
    const UNDO: &str = r#"
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
def err():
    return os.strerror(ctypes.get_errno())
checkout = sys.argv[1]
git = os.path.join(checkout, ".git")
r = libc.unshare(0x10000000 | 0x00020000)
print("unshare", "made" if r == 0 else "refused: " + err())
for target in [git, checkout, "/"]:
    print("umount", target, "UNDONE" if libc.umount2(target.encode(), 2) == 0 else err())
    print("remount", target, "UNDONE" if libc.mount(None, target.encode(), None, 32 | 4096, None) == 0 else err())
print("bind", "UNDONE" if libc.mount(checkout.encode(), b"/tmp", None, 4096, None) == 0 else err())
for path in [os.path.join(git, "config"), os.path.join("/tmp", ".git", "config")]:
    try:
        print("READ", open(path).read())
    except OSError as e:
        print("read", path, e.strerror)
try:
    open(os.path.join(checkout, "pwned"), "w").write("x")
    print("WROTE")
except OSError as e:
    print("write", e.strerror)
"#;

    /// Without Landlock (which refuses a confined child every mount call): what holds the view
    /// is that its mounts were made in a more privileged user namespace than any the child can
    /// make, so they are locked together in the one it makes.
    #[test]
    fn a_child_cannot_undo_its_view_from_a_user_namespace_of_its_own() {
        if let Err(why) = available() {
            println!("SKIPPED-LAYER mount-namespace: {why}");
            return;
        }
        if std::process::Command::new("python3")
            .arg("-c")
            .arg("import ctypes")
            .status()
            .map_or(true, |s| !s.success())
        {
            println!("SKIPPED python3 is missing");
            return;
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let checkout = dir.path().join("checkout");
        let root = dir.path().join("run");
        let work = root.join("stage");
        std::fs::create_dir_all(checkout.join(".git")).expect("mkdir");
        std::fs::create_dir_all(&work).expect("mkdir");
        std::fs::write(checkout.join(".git/config"), "extraheader = secret\n").expect("write");
        let view = View {
            work: Some(work),
            work_root: Some(root),
            write: Vec::new(),
            cover: vec![checkout.join(".git")],
        };
        let mnt = build_view(&view).expect("view");
        let steps = ChildSteps {
            parent: rustix::process::getpid().as_raw_nonzero().get(),
            drop_capabilities: true,
            cap_last: super::super::kernel().cap_last,
            landlock: None,
            cgroup_procs: None,
            cgroup_dir: None,
            user_ns: user_ns(),
            pid_ns: None,
            net_ns: None,
            mnt_ns: Some(mnt.as_raw_fd()),
        };
        let mut cmd = std::process::Command::new("python3");
        cmd.arg("-c").arg(UNDO).arg(&checkout);
        // SAFETY: the same steps a stage's child runs before its exec: system calls only.
        unsafe {
            cmd.pre_exec(move || {
                steps.enter()?;
                steps.apply()
            });
        }
        let out = cmd.output().expect("python3 runs");
        let log = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            log.contains("unshare made"),
            "the attack needs its own namespaces:\n{log}"
        );
        for said in ["UNDONE", "READ", "WROTE", "secret"] {
            assert!(!log.contains(said), "{said}:\n{log}");
        }
        assert!(!checkout.join("pwned").exists(), "{log}");
    }
}
