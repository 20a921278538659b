//! Which paths a confined child may reach: the rule of `docs/executor.md` ("What a child can
//! reach"), turned into open file descriptors (`O_PATH`) ready for Landlock rules.
//!
//! Every path is resolved before it is compared or opened, so a symbolic link cannot smuggle
//! a grant elsewhere. When a grant contains a hidden path (the checkout contains `.reviewflow`),
//! its entries are granted one by one instead, and entries that are symbolic links are skipped:
//! a link the reviewed change adds (`evil -> /root`) must not turn into a rule on its target.

use std::ffi::OsStr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::namespaces::{same, under};
use super::spec::ConfineSpec;

/// The system's program, library and configuration folders: readable by every confined child.
const SYSTEM_DIRS: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc", "/opt",
];

/// Device files every program may use. Not all of `/dev`: as uid 0 without capabilities a
/// child still owns `/dev/sd*`, and raw disk access would read any file.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
];

/// The resolver's configuration, read by a child that may use the host's network.
const RESOLVER: &str = "/etc/resolv.conf";

/// The folders of an installation prefix that programs read (`<prefix>/bin/python3` reads
/// `<prefix>/lib/python3.x`). Not the prefix itself: `~/.cargo` holds `credentials.toml`
/// beside `bin/`.
const PREFIX_DIRS: &[&str] = &["bin", "sbin", "lib", "lib32", "lib64", "libexec", "share"];

/// What a rule allows; the Landlock rights follow from it and the kernel's ABI.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// Read files, list folders, execute.
    Read,
    /// Everything: read, write, create, remove, truncate.
    Write,
    /// Read and write an existing device file.
    Device,
    /// List the folder only (a narrowed [`Kind::Read`]).
    List,
    /// List, create and write files, no reading (a narrowed [`Kind::Write`]).
    ListCreate,
}

impl Kind {
    /// What a grant that contains a hidden path keeps for itself.
    fn narrowed(self) -> Self {
        match self {
            Kind::Read | Kind::List => Kind::List,
            Kind::Write | Kind::ListCreate => Kind::ListCreate,
            Kind::Device => Kind::Device,
        }
    }
}

/// One rule: an opened path and what it allows.
#[derive(Debug)]
pub(super) struct Grant {
    pub(super) fd: GrantFd,
    pub(super) dir: bool,
    pub(super) kind: Kind,
}

/// The path's descriptor: opened for this child, or one of the system folders' and devices',
/// opened once for the process (they do not move).
#[derive(Debug)]
pub(super) enum GrantFd {
    Owned(OwnedFd),
    Shared(BorrowedFd<'static>),
}

impl AsFd for GrantFd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            GrantFd::Owned(fd) => fd.as_fd(),
            GrantFd::Shared(fd) => *fd,
        }
    }
}

/// A path a child's grants reach, resolved: what its mount namespace's view binds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Reached {
    pub(super) path: PathBuf,
    pub(super) kind: Kind,
}

/// What a child's view binds of what its grants reach: every path, writable where it is a write
/// grant; not `/dev`, which is listed only (its device files are granted one by one).
pub(super) fn view_paths(reached: Vec<Reached>) -> Vec<super::namespaces::ViewPath> {
    reached
        .into_iter()
        .filter(|r| r.kind != Kind::List)
        .map(|r| super::namespaces::ViewPath {
            writable: r.kind == Kind::Write,
            path: r.path,
        })
        .collect()
}

/// The grants of one child (`spec`, the system folders, its `PATH` (`path_var`) and its
/// `program`), with the resolved paths they reach. `resolver`: the child may use the host's
/// network, so it reads the resolver's configuration too (`/etc/resolv.conf` is often a link
/// out of `/etc`, into `/run`).
pub(super) fn plan_with_paths(
    spec: &ConfineSpec,
    path_var: Option<&str>,
    program: &Path,
    resolver: bool,
) -> (Vec<Grant>, Vec<Reached>) {
    let mut planner = Planner {
        hidden: Vec::new(),
        roots: Vec::new(),
        done: Vec::new(),
        out: Vec::new(),
        resolved: Vec::new(),
    };
    planner.hidden = spec.hidden.iter().map(|h| planner.resolve(h)).collect();
    planner.roots = spec
        .read
        .iter()
        .filter_map(|r| {
            let named = std::path::absolute(r).ok()?;
            let real = planner.canonical(r)?;
            Some((named, real))
        })
        .collect();
    let fixed = fixed();
    if planner.hidden.iter().any(|h| {
        fixed
            .iter()
            .any(|(path, _, _)| h.starts_with(path) || path.starts_with(h))
    }) {
        // A hidden path among the system folders (unusual): plan them like any other grant.
        for (path, _, kind) in fixed {
            planner.place(path.clone(), *kind);
        }
    } else {
        for (path, grant, kind) in fixed {
            planner.out.push(Grant {
                fd: GrantFd::Shared(grant.fd.as_fd()),
                dir: grant.dir,
                kind: *kind,
            });
            planner.done.push((path.clone(), *kind));
        }
    }
    for dir in path_var.iter().flat_map(|p| p.split(':')).map(Path::new) {
        // Relative entries are never searched (the spec's lookup skips them too).
        if dir.is_absolute() {
            planner.grant(dir, Kind::Read);
            planner.prefix(dir);
        }
    }
    planner.program(program);
    for path in &spec.read {
        planner.grant(path, Kind::Read);
    }
    for path in spec.write.iter().chain(&spec.work) {
        planner.grant(path, Kind::Write);
    }
    if spec.proc {
        planner.grant(Path::new("/proc"), Kind::Read);
    }
    if resolver {
        planner.grant(Path::new(RESOLVER), Kind::Read);
    }
    let reached = planner
        .done
        .into_iter()
        .map(|(path, kind)| Reached { path, kind })
        .collect();
    (planner.out, reached)
}

/// The grants every child gets whatever its spec (the system folders, `/dev` to list, the
/// device files), resolved and opened once for the process.
fn fixed() -> &'static [(PathBuf, FixedFd, Kind)] {
    static FIXED: OnceLock<Vec<(PathBuf, FixedFd, Kind)>> = OnceLock::new();
    FIXED.get_or_init(|| {
        let mut out = Vec::new();
        let wanted = system_dirs()
            .iter()
            .map(|d| (d.clone(), Kind::Read))
            .chain(std::iter::once((PathBuf::from("/dev"), Kind::List)))
            .chain(DEVICES.iter().map(|d| (PathBuf::from(d), Kind::Device)));
        for (path, kind) in wanted {
            let Ok(real) = std::fs::canonicalize(&path) else {
                continue;
            };
            if let Some(Grant {
                fd: GrantFd::Owned(fd),
                dir,
                ..
            }) = open(&real, kind)
            {
                out.push((real, FixedFd { fd, dir }, kind));
            }
        }
        out
    })
}

/// A descriptor kept open for the life of the process.
#[derive(Debug)]
struct FixedFd {
    fd: OwnedFd,
    dir: bool,
}

/// The system folders that exist, resolved once.
fn system_dirs() -> &'static [PathBuf] {
    static DIRS: OnceLock<Vec<PathBuf>> = OnceLock::new();
    DIRS.get_or_init(|| {
        let mut dirs: Vec<PathBuf> = Vec::new();
        for dir in SYSTEM_DIRS {
            // `/bin` is often a link to `/usr/bin`: one rule is enough.
            if let Ok(real) = std::fs::canonicalize(dir)
                && !dirs.iter().any(|d| real.starts_with(d))
            {
                dirs.push(real);
            }
        }
        dirs
    })
}

struct Planner {
    hidden: Vec<PathBuf>,
    /// The readable roots (the checkout), as named and resolved.
    roots: Vec<(PathBuf, PathBuf)>,
    done: Vec<(PathBuf, Kind)>,
    out: Vec<Grant>,
    /// The paths this plan resolved, as named: the same folder is named by several grants (a
    /// `PATH` entry, the program's folder, a prefix), and one plan resolves it once.
    resolved: Vec<(PathBuf, Option<PathBuf>)>,
}

impl Planner {
    /// `path` resolved; for a path that does not exist (yet), its longest existing ancestor
    /// resolved and the rest appended, so that hiding `.reviewflow` works before it is created.
    fn resolve(&mut self, path: &Path) -> PathBuf {
        let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        if let Some(real) = self.canonical(&path) {
            return real;
        }
        match (path.parent(), path.file_name()) {
            (Some(parent), Some(name)) => self.resolve(parent).join(name),
            _ => path,
        }
    }

    /// `path` resolved (`std::fs::canonicalize`), once per plan.
    fn canonical(&mut self, path: &Path) -> Option<PathBuf> {
        if let Some((_, real)) = self.resolved.iter().find(|(p, _)| same(p, path)) {
            return real.clone();
        }
        let real = std::fs::canonicalize(path).ok();
        self.resolved.push((path.to_path_buf(), real.clone()));
        real
    }

    /// Grants `path` (resolved first); a path that does not exist grants nothing. A path named
    /// inside a readable root that resolves outside it went through a link the reviewed change
    /// may have added (`tools -> ~/.local`): it grants nothing either.
    fn grant(&mut self, path: &Path, kind: Kind) {
        let Some(real) = self.canonical(path) else {
            return;
        };
        if !self.escapes(path, &real) {
            self.place(real, kind);
        }
    }

    /// Whether `path`, named inside a readable root, resolves (`real`) outside it.
    fn escapes(&self, path: &Path, real: &Path) -> bool {
        let named = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        self.roots.iter().any(|(root_named, root_real)| {
            (named.starts_with(root_named) || named.starts_with(root_real))
                && !real.starts_with(root_real)
        })
    }

    /// Grants the program and the installation it comes from, unless it is reached through a
    /// link out of a readable root.
    fn program(&mut self, program: &Path) {
        let Some(real) = self.canonical(program) else {
            return;
        };
        if self.escapes(program, &real) {
            return;
        }
        self.place(real.clone(), Kind::Read);
        if let Some(dir) = real.parent() {
            self.prefix(dir);
        }
    }

    /// Grants the folders of the installation `dir` belongs to, when `dir` is a `bin` folder
    /// outside the system folders (those are granted whole already).
    fn prefix(&mut self, dir: &Path) {
        let Some(real) = self.canonical(dir) else {
            return;
        };
        if self.escapes(dir, &real) {
            return;
        }
        if !matches!(
            real.file_name().and_then(OsStr::to_str),
            Some("bin" | "sbin")
        ) {
            return;
        }
        let Some(root) = real.parent() else { return };
        if root.parent().is_none() || system_dirs().iter().any(|d| root.starts_with(d)) {
            return;
        }
        for sub in PREFIX_DIRS {
            self.grant(&root.join(sub), Kind::Read);
        }
    }

    /// Grants a resolved path, narrowed around hidden paths.
    ///
    /// Paths here are resolved (absolute, no `.`, `..` or doubled separator), so they are
    /// compared as bytes: `Path`'s own comparison parses every component each time, and a
    /// checkout narrowed around `.git` places each of its entries against every one before.
    fn place(&mut self, path: PathBuf, kind: Kind) {
        if self.hidden.iter().any(|h| same(h, &path))
            || self.done.iter().any(|(p, k)| same(p, &path) && *k == kind)
        {
            return;
        }
        let contains_hidden = self.hidden.iter().any(|h| under(h, &path));
        let own = if contains_hidden {
            kind.narrowed()
        } else {
            kind
        };
        let Some(grant) = open(&path, own) else {
            return;
        };
        let dir = grant.dir;
        self.out.push(grant);
        self.done.push((path.clone(), kind));
        if !(contains_hidden && dir) {
            return;
        }
        let Ok(entries) = std::fs::read_dir(&path) else {
            return;
        };
        for entry in entries.flatten() {
            // `file_type` does not follow links: a link is skipped, never granted.
            if entry.file_type().is_ok_and(|t| !t.is_symlink()) {
                self.place(entry.path(), kind);
            }
        }
    }
}

/// Opens `path` for a rule without following a final link (a link opened so would be the link
/// itself, which is skipped).
#[cfg(target_os = "linux")]
fn open(path: &Path, kind: Kind) -> Option<Grant> {
    use rustix::fs::{FileType, Mode, OFlags};
    let fd = rustix::fs::open(
        path,
        OFlags::PATH | OFlags::CLOEXEC | OFlags::NOFOLLOW,
        Mode::empty(),
    )
    .ok()?;
    let file_type = FileType::from_raw_mode(rustix::fs::fstat(&fd).ok()?.st_mode);
    match file_type {
        FileType::Symlink => None,
        FileType::Directory => Some(Grant {
            fd: GrantFd::Owned(fd),
            dir: true,
            kind,
        }),
        _ => Some(Grant {
            fd: GrantFd::Owned(fd),
            dir: false,
            kind,
        }),
    }
}

#[cfg(not(target_os = "linux"))]
fn open(_path: &Path, _kind: Kind) -> Option<Grant> {
    None
}
