//! Namespaces the engine makes for its children: as root, in the host's user namespace; as
//! any other user, in a user namespace of its own ([`user_ns`]) where the kernel lets an
//! unprivileged user make one and hold capabilities in it:
//!
//! - a **network namespace per stage**, with only a loopback interface, for the children that
//!   declare no network: no UDP, no DNS, no TCP to the host's loopback services, no abstract or
//!   pathname socket of the host's network stack. The engine can still serve such a stage on
//!   loopback ([`StageNet::listen_loopback`]: the socket is made inside the namespace, and the
//!   engine serves it from outside);
//! - a **mount namespace per child**, whose view holds only what the child's grants reach
//!   (default deny): a new empty root, each granted path bound into it at its own path, the
//!   paths the child is given by name resolvable as on the host (their folders and links), the
//!   host's root detached. What no grant reaches is not there at all, wherever it is: a
//!   daemon's pathname socket (`/run/docker.sock`, an `ssh-agent`'s in the temp folder), the
//!   other stages' work folders, a home beside the checkout. The whole view is read-only (so
//!   `chmod`, `utime`, xattrs and every write fail with `EROFS` outside the child's own
//!   folders, which Landlock does not mediate) but for its own folder and its write grants, and
//!   `.reviewflow`, the runs folder and the checkout's `.git` are covered by an empty read-only
//!   folder. As root with the work folders in memory, the children of a run with the same grants
//!   share one such view, holding the whole work root, and the stages are kept out of each
//!   other's folders by group (`groups.rs`, `template::shared`).
//!
//! Each is made by a short-lived builder process (`builder.rs`: a user namespace can only be made
//! or entered by a process of one thread), kept by the engine as a descriptor, and entered by
//! the child with `setns` before its `execve` (`privileges.rs`): the user namespace first, then
//! the others, then every capability dropped. What the child cannot undo: its mounts were made
//! in a more privileged user namespace than any it can make itself, so in one it makes they are
//! locked together (no mount of the view can be unmounted or made writable there), and Landlock
//! refuses a confined process every mount call.

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsRawFd as _, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::builder::{self, Op, When};

mod template;

pub use template::PIVOT;
pub(crate) use template::{Copy, forget as forget_shared_views};

/// Whether this process can make the namespaces, probed once by making a network namespace, an
/// IPC namespace and a mount namespace the way every stage's are made: as root, or in
/// [`user_ns`].
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
            StageIpc::create()
                .map(drop)
                .map_err(|e| denied("IPC namespace", e))?;
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

/// A stage's IPC namespace: System V shared memory, semaphores and message queues, and POSIX
/// message queues, of its children only. In the host's, any child could open what another
/// stage's made (a child is uid 0, the owner of every such object a child made, or shares its
/// uid), and what a stage left there outlived the run.
#[derive(Debug)]
pub struct StageIpc {
    fd: OwnedFd,
}

impl StageIpc {
    /// Makes an empty IPC namespace.
    pub fn create() -> io::Result<Self> {
        let mut ops = enter_owner()?;
        ops.extend([
            Op::Unshare(libc::CLONE_NEWIPC),
            Op::OpenNs(c"/proc/self/ns/ipc"),
        ]);
        builder::run(&ops).and_then(one).map(|fd| Self { fd })
    }

    /// The descriptor a child passes to `setns`.
    pub(crate) fn fd(&self) -> &OwnedFd {
        &self.fd
    }
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

/// `path` as a C string; a NUL in it is `EINVAL`, as the kernel would say.
pub(crate) fn cstr(path: &Path) -> io::Result<CString> {
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

/// What one child's mount namespace shows: only what its grants reach, default deny.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct View {
    /// The child's own folder, inside `work_root`: its stage's folder is writable in the view.
    pub work: Option<PathBuf>,
    /// The folder holding every stage's work folder of the run: of it, only the stage's own
    /// folder is in the view.
    pub work_root: Option<PathBuf>,
    /// What the child's grants reach (resolved paths), each bound at its own path: read-only,
    /// or writable where `writable` says so.
    pub reached: Vec<ViewPath>,
    /// Folders inside what is bound that no path may lead beneath: covered with an empty
    /// read-only folder.
    pub cover: Vec<PathBuf>,
    /// Paths as the child is given them (its program, its working folder, its grants, its
    /// `PATH`): each resolves in the view as on the host, through the same folders and links
    /// (empty folders and the links themselves, up to what is bound).
    pub named: Vec<PathBuf>,
}

/// One path of a [`View`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewPath {
    pub path: PathBuf,
    pub writable: bool,
}

const MOUNT_ATTR_RDONLY: u64 = 0x1;
const MOUNT_ATTR_NOSUID: u64 = 0x2;

/// Where the host's root is, in the view being built (detached before the view is done).
const OLD_ROOT: &str = "/.host";
/// The empty folder every cover is a bind of.
const COVER: &str = "/.cover";

/// The device files every child may use (`grants::DEVICES`, bound one by one), and the links
/// programs expect beside them.
const DEV_LINKS: &[(&CStr, &CStr)] = &[
    (c"/proc/self/fd", c"/dev/fd"),
    (c"/proc/self/fd/0", c"/dev/stdin"),
    (c"/proc/self/fd/1", c"/dev/stdout"),
    (c"/proc/self/fd/2", c"/dev/stderr"),
];

/// Whether `path` is `dir` or beneath it, compared as bytes: the paths of a view are absolute
/// and made of normal components, and a view compares thousands of them a child (`Path`'s own
/// comparison parses every component each time).
pub(super) fn under(path: &Path, dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt as _;
    let (p, d) = (path.as_os_str().as_bytes(), dir.as_os_str().as_bytes());
    p.starts_with(d) && (p.len() == d.len() || d.ends_with(b"/") || p[d.len()] == b'/')
}

/// Whether `a` and `b` are the same path, as bytes (see [`under`]).
pub(super) fn same(a: &Path, b: &Path) -> bool {
    a.as_os_str() == b.as_os_str()
}

/// Whether `path` is a folder, not following a link.
fn is_dir(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir())
}

/// The links at the top of the root file system (`/bin -> usr/bin` where `/usr` is merged):
/// each with what it says and where it leads, read once for the process. Every `#!/bin/sh` and
/// every program's loader (`/lib64/ld-linux-x86-64.so.2`) names one.
fn root_links() -> &'static [(PathBuf, PathBuf, PathBuf)] {
    static LINKS: OnceLock<Vec<(PathBuf, PathBuf, PathBuf)>> = OnceLock::new();
    LINKS.get_or_init(|| {
        let Ok(entries) = std::fs::read_dir("/") else {
            return Vec::new();
        };
        let mut links: Vec<_> = entries
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_symlink()))
            .filter_map(|e| {
                let says = std::fs::read_link(e.path()).ok()?;
                let leads = std::fs::canonicalize(e.path()).ok()?;
                Some((e.path(), says, leads))
            })
            .collect();
        links.sort();
        links
    })
}

/// Makes the mount namespace of one child and returns its descriptor. Blocking.
///
/// As root, a view that is its run's common part plus the stage's own folder is copied from
/// that common part, made once ([`template`]); any other view is made from nothing.
pub fn build_view(view: &View) -> io::Result<OwnedFd> {
    if let Some(fd) = template::build(view)? {
        return Ok(fd);
    }
    build_view_from_nothing(view)
}

/// The view a child of a run that tells its stages apart by group enters (the run's shared
/// view: `template::shared`), entered by a builder process; `None` where there is none (not
/// root, no pivot folder in the work root). For the layers bench.
#[doc(hidden)]
pub fn enter_shared_view(view: &View) -> io::Result<Option<OwnedFd>> {
    template::enter_shared(view)
}

/// A child's mount namespace as the engine prepares it: made (a descriptor the child enters),
/// or, as root where its run's template gives it, steps the child runs itself to copy it.
#[derive(Debug)]
pub(crate) enum ChildView {
    Made(OwnedFd),
    Copied(template::Copy),
    /// The view the run's children with the same grants share (`template::shared`).
    Shared(std::sync::Arc<OwnedFd>),
}

/// Prepares the mount namespace of one child ([`ChildView`]): the run's shared view when its
/// stages are told apart by group (`shared`), else a copy of a template, else a view made from
/// nothing. Blocking.
pub(crate) fn child_view(view: &View, shared: bool) -> io::Result<ChildView> {
    if shared && let Some(fd) = template::shared(view)? {
        return Ok(ChildView::Shared(fd));
    }
    match template::plan(view)? {
        Some(copy) => Ok(ChildView::Copied(copy)),
        None => build_view_from_nothing(view).map(ChildView::Made),
    }
}

/// [`build_view`] from nothing, never copied from a template (the layers bench compares them).
#[doc(hidden)]
pub fn build_view_from_nothing(view: &View) -> io::Result<OwnedFd> {
    builder::run(&view_ops(view)?).and_then(one)
}

/// The paths of `view` to bind, in order (a folder before what is beneath it): another stage's
/// folder dropped, a path beneath one already bound dropped unless it is writable and the one
/// above is not, duplicates merged.
fn binds(view: &View) -> Vec<ViewPath> {
    // The stage's whole folder (the child's own may be a folder in it: a reviewer's try folder
    // beside the workspace it reads); Landlock narrows what the child writes there.
    let stage_work = match (&view.work, &view.work_root) {
        (Some(work), Some(root)) => work
            .strip_prefix(root)
            .ok()
            .and_then(|rel| rel.components().next())
            .map(|first| root.join(first)),
        _ => None,
    };
    let mut all: Vec<ViewPath> = view
        .reached
        .iter()
        // A grant of the root itself would be the whole host: never in a view.
        .filter(|p| p.path.parent().is_some())
        .filter(|p| match (&view.work_root, &stage_work) {
            (Some(root), Some(own)) => !under(&p.path, root) || under(&p.path, own),
            (Some(root), None) => !under(&p.path, root),
            _ => true,
        })
        .cloned()
        .chain(
            stage_work
                .clone()
                .or_else(|| view.work.clone())
                .map(|path| ViewPath {
                    path,
                    writable: true,
                }),
        )
        .collect();
    // As bytes (see [`under`]): a folder still sorts before what is beneath it.
    all.sort_by(|a, b| {
        (a.path.as_os_str().as_encoded_bytes())
            .cmp(b.path.as_os_str().as_encoded_bytes())
            .then(b.writable.cmp(&a.writable))
    });
    all.dedup_by(|later, first| same(&later.path, &first.path));
    let mut kept: Vec<ViewPath> = Vec::with_capacity(all.len());
    for p in all {
        let under = kept
            .iter()
            .rev()
            .find(|k| under(&p.path, &k.path) && !same(&p.path, &k.path));
        if under.is_some_and(|k| k.writable || !p.writable) {
            continue;
        }
        kept.push(p);
    }
    kept
}

/// Makes `named` resolve in the view as it does on the host: walks it as the kernel would,
/// making each folder on the way (empty) and each link (the same link) until it reaches a bound
/// path; what lies beyond a bound path is the host's, reached through the bind. A path through
/// `..` (`<repo>/stdlib/../tests/fakes/claude`) or a link (`/home/u/.cargo -> /data/cargo`)
/// then names the same file in the view. Nothing but the path's own folders and links appears.
fn mirror(
    ops: &mut Vec<Op>,
    named: &Path,
    bound: &[&Path],
    made: &mut Vec<PathBuf>,
    linked: &mut Vec<PathBuf>,
) -> io::Result<()> {
    use std::collections::VecDeque;
    use std::path::Component;
    /// As the kernel's limit on links followed in one lookup.
    const MAX_LINKS: usize = 40;
    let Ok(named) = std::path::absolute(named) else {
        return Ok(());
    };
    let mut rest: VecDeque<std::ffi::OsString> = VecDeque::new();
    let push = |rest: &mut VecDeque<std::ffi::OsString>, path: &Path, front: bool| {
        let parts: Vec<std::ffi::OsString> = path
            .components()
            .filter_map(|c| match c {
                Component::Normal(n) => Some(n.to_os_string()),
                Component::ParentDir => Some("..".into()),
                _ => None,
            })
            .collect();
        if front {
            for part in parts.into_iter().rev() {
                rest.push_front(part);
            }
        } else {
            rest.extend(parts);
        }
    };
    push(&mut rest, &named, false);
    let mut current = PathBuf::from("/");
    let mut links = 0;
    while let Some(part) = rest.pop_front() {
        if part == ".." {
            current.pop();
            continue;
        }
        let next = current.join(&part);
        if bound.iter().any(|b| under(&next, b)) {
            return Ok(());
        }
        let Ok(meta) = std::fs::symlink_metadata(&next) else {
            return Ok(());
        };
        if meta.is_dir() {
            if !made.iter().any(|m| same(m, &next)) {
                ops.push(Op::Mkdir(cstr(&next)?));
                made.push(next.clone());
            }
            current = next;
        } else if meta.is_symlink() {
            links += 1;
            let Ok(says) = std::fs::read_link(&next) else {
                return Ok(());
            };
            if links > MAX_LINKS {
                return Ok(());
            }
            if !linked.iter().any(|l| same(l, &next)) {
                ops.push(Op::Symlink {
                    target: cstr(&says)?,
                    link: cstr(&next)?,
                });
                linked.push(next.clone());
            }
            if says.is_absolute() {
                current = PathBuf::from("/");
            }
            push(&mut rest, &says, true);
        } else {
            return Ok(());
        }
    }
    Ok(())
}

/// Makes `path` and the folders above it that are not made yet in the new root.
fn mkdirs(ops: &mut Vec<Op>, path: &Path, made: &mut Vec<PathBuf>) -> io::Result<()> {
    let mut missing: Vec<&Path> = path
        .ancestors()
        .take_while(|a| a.parent().is_some() && !made.iter().any(|m| same(m, a)))
        .collect();
    missing.reverse();
    for dir in missing {
        ops.push(Op::Mkdir(cstr(dir)?));
        made.push(dir.to_path_buf());
    }
    Ok(())
}

/// The steps that make `view`, in order: a new empty root, the host's root beneath it, every
/// path of the view bound from there, the host's root detached, the whole made read-only but
/// for the writable paths.
fn view_ops(view: &View) -> io::Result<Vec<Op>> {
    view_ops_with(view, None)
}

/// [`view_ops`], with `mount_point` made as an empty folder in the new root (a template's
/// mount point for what each copy of it adds: [`template`]).
fn view_ops_with(view: &View, mount_point: Option<&Path>) -> io::Result<Vec<Op>> {
    view_ops_of(view, &binds(view), mount_point)
}

/// [`view_ops_with`], given the view's [`binds`] (a template works them out for its key too).
fn view_ops_of(view: &View, binds: &[ViewPath], mount_point: Option<&Path>) -> io::Result<Vec<Op>> {
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
    // The new root is a tmpfs mounted on a folder of the run (or the temp folder): after
    // `pivot_root` the host's root, and that folder in it, are whole beneath `OLD_ROOT`.
    let base = [view.work_root.clone(), view.work.clone()]
        .into_iter()
        .flatten()
        .find(|p| is_dir(p))
        .unwrap_or_else(std::env::temp_dir);
    ops.push(Op::Mount {
        source: Some(c"none".into()),
        target: cstr(&base)?,
        fstype: Some(c"tmpfs"),
        flags: libc::MS_NOSUID | libc::MS_NODEV,
        data: Some(c"size=64k,nr_inodes=4096,mode=0755"),
        when: When::Always,
    });
    ops.push(Op::Mkdir(cstr(&base.join(&OLD_ROOT[1..]))?));
    ops.push(Op::PivotRoot {
        new: cstr(&base)?,
        old: cstr(&base.join(&OLD_ROOT[1..]))?,
    });
    ops.push(Op::Chdir(c"/".into()));
    let mut made: Vec<PathBuf> = Vec::new();
    let mut bound: Vec<&ViewPath> = Vec::with_capacity(binds.len());
    let mut writable: Vec<CString> = Vec::new();
    for p in binds {
        let inside = bound.iter().any(|b| under(&p.path, &b.path));
        let host = Path::new(OLD_ROOT).join(p.path.strip_prefix("/").unwrap_or(&p.path));
        if !inside {
            // Its mount point, made in the new root (beneath a bound path it exists already).
            if is_dir(&p.path) {
                mkdirs(&mut ops, &p.path, &mut made)?;
            } else {
                if let Some(parent) = p.path.parent() {
                    mkdirs(&mut ops, parent, &mut made)?;
                }
                ops.push(Op::Touch(cstr(&p.path)?));
            }
        }
        ops.push(Op::Mount {
            source: Some(cstr(&host)?),
            target: cstr(&p.path)?,
            fstype: None,
            flags: libc::MS_BIND | libc::MS_REC,
            data: None,
            when: When::Always,
        });
        if p.writable {
            writable.push(cstr(&p.path)?);
        }
        bound.push(p);
    }
    // `/proc` whole (Landlock decides what of it the child reads; it opens its own
    // `/proc/self` before it restricts itself); `/dev` only as the device files and links.
    if !bound.iter().any(|b| b.path == Path::new("/proc")) {
        mkdirs(&mut ops, Path::new("/proc"), &mut made)?;
        ops.push(Op::Mount {
            source: Some(cstr(&Path::new(OLD_ROOT).join("proc"))?),
            target: c"/proc".into(),
            fstype: None,
            flags: libc::MS_BIND | libc::MS_REC,
            data: None,
            when: When::Always,
        });
    }
    mkdirs(&mut ops, Path::new("/dev"), &mut made)?;
    for (target, link) in DEV_LINKS {
        ops.push(Op::Symlink {
            target: (*target).into(),
            link: (*link).into(),
        });
    }
    for (link, says, leads) in root_links() {
        if bound.iter().any(|b| under(leads, &b.path)) && !made.iter().any(|m| same(m, link)) {
            ops.push(Op::Symlink {
                target: cstr(says)?,
                link: cstr(link)?,
            });
        }
    }
    if let Some(point) = mount_point {
        mkdirs(&mut ops, point, &mut made)?;
    }
    let bound_paths: Vec<&Path> = bound.iter().map(|b| b.path.as_path()).collect();
    let mut linked: Vec<PathBuf> = Vec::new();
    for named in &view.named {
        mirror(&mut ops, named, &bound_paths, &mut made, &mut linked)?;
    }
    let covers: Vec<&PathBuf> = view
        .cover
        .iter()
        .filter(|c| bound.iter().any(|b| under(c, &b.path)))
        .collect();
    if !covers.is_empty() {
        ops.push(Op::Mkdir(cstr(Path::new(COVER))?));
    }
    for path in covers {
        // Checked in the view: a path beneath one already covered is gone.
        ops.push(Op::Mount {
            source: Some(cstr(Path::new(COVER))?),
            target: cstr(path)?,
            fstype: None,
            flags: libc::MS_BIND,
            data: None,
            when: When::Dir,
        });
    }
    ops.push(Op::Detach(cstr(Path::new(OLD_ROOT))?));
    ops.push(Op::Setattr {
        path: c"/".into(),
        recursive: true,
        set: MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID,
        clr: 0,
        when: When::Always,
    });
    for path in writable {
        // Not recursive: what is covered beneath a writable folder stays read-only.
        ops.push(Op::Setattr {
            path,
            recursive: false,
            set: 0,
            clr: MOUNT_ATTR_RDONLY,
            when: When::Always,
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
        // What a stage's child that reads the checkout reaches.
        let spec = super::super::ConfineSpec::new()
            .read(&checkout)
            .work(&work)
            .cover(checkout.join(".git"));
        let python = std::path::PathBuf::from("/usr/bin/python3");
        let (_, reached) = super::super::grants::plan_with_paths(
            &spec,
            std::env::var("PATH").ok().as_deref(),
            &python,
            false,
        );
        let view = View {
            work: Some(work),
            work_root: Some(root),
            reached: super::super::grants::view_paths(reached),
            cover: spec.cover.clone(),
            named: Vec::new(),
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
            ipc_ns: None,
            seccomp: None,
            mnt_ns: Some(mnt.as_raw_fd()),
            mnt_copy: None,
            group: None,
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
