//! Views copied from a template: a child's view is its run's common part (the system folders,
//! the checkout, the devices, the covers, the links) plus its stage's own folder. As root, the
//! common part is made once, as a mount namespace of its own kept by a descriptor, and each
//! child's view is a copy of it (`setns` into it, then `unshare(CLONE_NEWNS)`) with a new empty
//! tmpfs over the run's work root and the stage's folder attached in it. That is 9 system calls
//! a child instead of about 50 (a new root, every bind, device file and link made again, the
//! host's root detached), and about two thirds of the time (docs/performance.md).
//!
//! What a copy shows is what [`super::view_ops`] would have made for the same view, with one
//! difference that only narrows it: of the run's work root, nothing but the stage's own folder
//! is there (a path a child is given inside another folder of the work root is not made). A
//! template is used only when it is what the view would have been made of now: its key is the
//! steps that make it (which hold every path, link and cover, read at this child's start), the
//! identity (device and inode) of every path it binds, and which folders to cover are there, so
//! a file or folder replaced or made since the template was made gives a new template, never a
//! stale view. The key is kept and compared whole, not as a digest: no two views can share a
//! template by a collision, whatever the checkout's names. The run's folders cannot be
//! changed by a child between the key and the copy: the work root is the engine's.
//!
//! Not as any other user: attaching a copy of the stage's folder made in the host's mount
//! namespace needs `CAP_SYS_ADMIN` there. Nor when a path the view binds holds the work root,
//! or a cover lies in it: such a view is made from nothing, as before.

use std::io;
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::{
    MOUNT_ATTR_NOSUID, MOUNT_ATTR_RDONLY, View, ViewPath, binds, cstr, is_dir, one, under,
};
use crate::exec::confine::builder::{self, Op, When};

/// Templates kept by the process: a run needs one per distinct set of grants of its children
/// (most share one); older ones are released first.
const KEPT: usize = 8;

static TEMPLATES: Mutex<Vec<(Key, Arc<OwnedFd>)>> = Mutex::new(Vec::new());
static COPIES: AtomicU64 = AtomicU64::new(0);
static SHARED: AtomicU64 = AtomicU64::new(0);

/// The shared views made over each run's work root: released when the run ends ([`forget`]),
/// so that none keeps the run's tmpfs, and what is left in it, beyond the run.
static SHARED_OVER: Mutex<Vec<(PathBuf, Arc<OwnedFd>)>> = Mutex::new(Vec::new());

/// Releases the shared views over the work root `root`: its run has ended.
pub(crate) fn forget(root: &Path) {
    let gone: Vec<Arc<OwnedFd>> = match SHARED_OVER.lock() {
        Ok(mut over) => {
            let (gone, kept) = over.drain(..).partition(|(r, _)| r == root);
            *over = kept;
            gone.into_iter().map(|(_, fd)| fd).collect()
        }
        Err(_) => return,
    };
    if let Ok(mut kept) = TEMPLATES.lock() {
        kept.retain(|(_, fd)| !gone.iter().any(|g| Arc::ptr_eq(g, fd)));
    }
}

/// How many shared views this process has planned (for the tests: the path is taken).
#[cfg(test)]
pub(crate) fn shared_views() -> u64 {
    SHARED.load(Ordering::Relaxed)
}

/// How many views this process has planned to copy from a template (for the tests: the path
/// is taken).
#[cfg(test)]
pub(crate) fn copies() -> u64 {
    COPIES.load(Ordering::Relaxed)
}

/// The steps that copy a child's view from its template, run by the child itself between its
/// `clone` and its `execve` (`privileges.rs`), as root: no builder process a child. Holds the
/// template and the stage's folder's detached tree, which the steps name by descriptor: keep it
/// until the child has exec'd.
#[derive(Debug)]
pub(crate) struct Copy {
    _template: Arc<OwnedFd>,
    _tree: OwnedFd,
    ops: Vec<Op>,
}

impl Copy {
    /// The steps, in order.
    pub(in crate::exec::confine) fn ops(&self) -> &[Op] {
        &self.ops
    }
}

/// How to copy the child's view from its template (made first if need be), or `None` when the
/// view is not one a template can give: then it is made from nothing. An error of the
/// template's own making also gives `None`: the view made from nothing says what fails.
pub(super) fn plan(view: &View) -> io::Result<Option<Copy>> {
    if !cfg!(target_os = "linux") || !crate::exec::confine::kernel().root {
        return Ok(None);
    }
    let Some((common, bound, root, stage)) = split(view) else {
        return Ok(None);
    };
    let ops = super::view_ops_of(&common, &bound, Some(&root))?;
    let key = key(ops, &bound, &common.cover);
    let Some(template) = template(key) else {
        return Ok(None);
    };
    let Ok(tree) = open_tree(&stage) else {
        return Ok(None);
    };
    let ops = vec![
        Op::Enter(template.as_raw_fd(), libc::CLONE_NEWNS),
        Op::Unshare(libc::CLONE_NEWNS),
        // The work root, empty but for the stage's folder: the template's holds nothing.
        Op::Mount {
            source: Some(c"none".into()),
            target: cstr(&root)?,
            fstype: Some(c"tmpfs"),
            flags: libc::MS_NOSUID | libc::MS_NODEV,
            data: Some(c"size=64k,nr_inodes=4096,mode=0755"),
            when: When::Always,
        },
        Op::Mkdir(cstr(&stage)?),
        Op::Attach {
            from: tree.as_raw_fd(),
            target: cstr(&stage)?,
        },
        // A copy of a shared mount of the host's is its peer: made private, as every mount of
        // a view made from nothing is, so that no mount event passes either way.
        Op::Mount {
            source: None,
            target: cstr(&stage)?,
            fstype: None,
            flags: libc::MS_REC | libc::MS_PRIVATE,
            data: None,
            when: When::Always,
        },
        Op::Setattr {
            path: cstr(&root)?,
            recursive: true,
            set: MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID,
            clr: 0,
            when: When::Always,
        },
        // Not recursive, as a view made from nothing: what is mounted beneath stays read-only.
        Op::Setattr {
            path: cstr(&stage)?,
            recursive: false,
            set: 0,
            clr: MOUNT_ATTR_RDONLY,
            when: When::Always,
        },
    ];
    COPIES.fetch_add(1, Ordering::Relaxed);
    Ok(Some(Copy {
        _template: template,
        _tree: tree,
        ops,
    }))
}

/// The folder of the run's work root on which a shared view's new root is mounted before its
/// `pivot_root`: not the work root itself, which must stay whole to be bound in the view. The
/// run makes it when it tells its stages apart by group (`run/work_root.rs`).
pub const PIVOT: &str = ".view";

/// The view every child of the run whose grants are these enters as it is, without a copy of
/// its own: the template of a view holding the run's whole work root, writable, in place of the
/// stage's own folder. Only for a run that tells its stages apart by group (`groups.rs`): the
/// file system's permissions, not the view, keep each stage out of the others' folders. `None`
/// where such a view cannot be made ([`split`]'s cases, or no [`PIVOT`] folder): the child's
/// view is then copied.
pub(super) fn shared(view: &View) -> io::Result<Option<Arc<OwnedFd>>> {
    if !cfg!(target_os = "linux") || !crate::exec::confine::kernel().root {
        return Ok(None);
    }
    let Some((mut common, _, root, _)) = split(view) else {
        return Ok(None);
    };
    let pivot = root.join(PIVOT);
    if !is_dir(&pivot) {
        return Ok(None);
    }
    common.reached.push(ViewPath {
        path: root.clone(),
        writable: true,
    });
    // The new root goes on the pivot folder (`view_ops_of` mounts it on the view's work root).
    common.work_root = Some(pivot);
    SHARED.fetch_add(1, Ordering::Relaxed);
    let Some(view) = shared_template(common)? else {
        return Ok(None);
    };
    if let Ok(mut over) = SHARED_OVER.lock()
        && !over.iter().any(|(_, fd)| Arc::ptr_eq(fd, &view))
    {
        over.push((root, Arc::clone(&view)));
    }
    Ok(Some(view))
}

/// The template of the shared view of `common` ([`template`]). Its steps walk every path the
/// child is given by name (its `PATH`, its program, its grants: a `readlink` and an `lstat` a
/// component), the same for every child of the run: they are worked out again only when the
/// view asked for differs from the last one, or when what the last one binds or covers is not
/// what it was (the identities and covers are read for each child, as for a copied view), or
/// when its template is no longer kept. Between two such children, a link on the way to a
/// bound path changed to another link to the same place is the only change the view does not
/// show; one that leads elsewhere changes what is bound.
fn shared_template(common: View) -> io::Result<Option<Arc<OwnedFd>>> {
    struct Last {
        view: View,
        bound: Vec<ViewPath>,
        key: Key,
        /// Not a hold on it: the run's end lets go of its views ([`forget`]).
        made: std::sync::Weak<OwnedFd>,
    }
    static LAST: Mutex<Vec<Last>> = Mutex::new(Vec::new());
    let known = LAST.lock().ok().and_then(|last| {
        last.iter()
            .find(|l| l.view == common)
            .map(|l| l.bound.clone())
    });
    if let Some(bound) = known {
        // The stats, outside the lock.
        let (now_bound, now_covered) = (identities(&bound), covered(&common.cover));
        let same = LAST.lock().ok().and_then(|last| {
            last.iter()
                .find(|l| {
                    l.view == common && l.key.bound == now_bound && l.key.covered == now_covered
                })
                .and_then(|l| l.made.upgrade())
        });
        if let Some(made) = same
            && TEMPLATES
                .lock()
                .is_ok_and(|kept| kept.iter().any(|(_, fd)| Arc::ptr_eq(fd, &made)))
        {
            return Ok(Some(made));
        }
    }
    let bound = binds(&common);
    let ops = super::view_ops_of(&common, &bound, None)?;
    let key = key(ops, &bound, &common.cover);
    let Some(made) = template(key.clone()) else {
        return Ok(None);
    };
    if let Ok(mut last) = LAST.lock() {
        last.retain(|l| l.view != common);
        last.push(Last {
            view: common,
            bound,
            key,
            made: Arc::downgrade(&made),
        });
        while last.len() > KEPT {
            last.remove(0);
        }
    }
    Ok(Some(made))
}

/// The shared view entered by a builder process, as a descriptor (the layers bench: what a
/// child pays for its view in a run that shares one, [`shared`]), or `None` as for [`shared`].
pub(super) fn enter_shared(view: &View) -> io::Result<Option<OwnedFd>> {
    let Some(template) = shared(view)? else {
        return Ok(None);
    };
    let ops = [
        Op::Enter(template.as_raw_fd(), libc::CLONE_NEWNS),
        Op::OpenNs(c"/proc/self/ns/mnt"),
    ];
    Ok(builder::run(&ops).and_then(one).ok())
}

/// The child's view copied from its template by a builder process, as a descriptor (the tests
/// and the layers bench; a child copies its own, [`plan`]), or `None` as for [`plan`].
pub(super) fn build(view: &View) -> io::Result<Option<OwnedFd>> {
    let Some(mut copy) = plan(view)? else {
        return Ok(None);
    };
    copy.ops.push(Op::OpenNs(c"/proc/self/ns/mnt"));
    Ok(builder::run(&copy.ops).and_then(one).ok())
}

/// The view without the stage's folder, the paths it binds, the work root, and the stage's
/// folder; `None` when the view has no stage folder or a template could not show it as a view
/// made from nothing would.
fn split(view: &View) -> Option<(View, Vec<ViewPath>, PathBuf, PathBuf)> {
    let (work, root) = (view.work.as_ref()?, view.work_root.as_ref()?);
    let first = work.strip_prefix(root).ok()?.components().next()?;
    let stage = root.join(first);
    if !is_dir(&stage) || !is_dir(root) || view.cover.iter().any(|c| under(c, root)) {
        return None;
    }
    let common = View {
        work: None,
        work_root: Some(root.clone()),
        reached: view
            .reached
            .iter()
            .filter(|p| !under(&p.path, root))
            .cloned()
            .collect(),
        cover: view.cover.clone(),
        named: view
            .named
            .iter()
            .filter(|p| !under(p, root))
            .cloned()
            .collect(),
    };
    // A bound folder holding the work root would show every stage's folder in the template.
    let bound = binds(&common);
    if bound.iter().any(|b| under(root, &b.path)) {
        return None;
    }
    Some((common, bound, root.clone(), stage))
}

/// What identifies a template: its steps, what each path it binds is now, and which of its
/// covers would be made now (a cover is made only over a folder that is there: a `.git` made
/// since the template was needs a template that covers it).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Key {
    ops: Vec<Op>,
    bound: Vec<Identity>,
    covered: Vec<bool>,
}

/// What a bound path is now.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Identity {
    Inode { dev: u64, ino: u64 },
    Unreadable(io::ErrorKind),
}

fn key(ops: Vec<Op>, bound: &[ViewPath], cover: &[PathBuf]) -> Key {
    Key {
        ops,
        bound: identities(bound),
        covered: covered(cover),
    }
}

/// What each path of `bound` is now.
fn identities(bound: &[ViewPath]) -> Vec<Identity> {
    use std::os::unix::fs::MetadataExt as _;
    bound
        .iter()
        .map(|bind| match std::fs::metadata(&bind.path) {
            Ok(meta) => Identity::Inode {
                dev: meta.dev(),
                ino: meta.ino(),
            },
            Err(e) => Identity::Unreadable(e.kind()),
        })
        .collect()
}

/// Which of the folders to cover are there now.
fn covered(cover: &[PathBuf]) -> Vec<bool> {
    cover.iter().map(|c| is_dir(c)).collect()
}

/// The template of `key`, made by its steps if the process has none yet.
fn template(key: Key) -> Option<Arc<OwnedFd>> {
    if let Ok(kept) = TEMPLATES.lock()
        && let Some((_, fd)) = kept.iter().find(|(k, _)| *k == key)
    {
        return Some(Arc::clone(fd));
    }
    let fd = Arc::new(builder::run(&key.ops).and_then(one).ok()?);
    if let Ok(mut kept) = TEMPLATES.lock() {
        if !kept.iter().any(|(k, _)| *k == key) {
            kept.push((key, Arc::clone(&fd)));
        }
        while kept.len() > KEPT {
            kept.remove(0);
        }
    }
    Some(fd)
}

/// A detached copy of the folder at `path` and what is mounted beneath it, not following a
/// link: the stage's folder, to attach in a copy of the template.
fn open_tree(path: &Path) -> io::Result<OwnedFd> {
    const OPEN_TREE_CLONE: libc::c_uint = 1;
    const AT_RECURSIVE: libc::c_uint = 0x8000;
    let path = cstr(path)?;
    // SAFETY: a plain system call on a NUL-terminated path; the descriptor it returns is owned
    // by nothing else.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_open_tree,
            libc::AT_FDCWD,
            path.as_ptr(),
            OPEN_TREE_CLONE
                | AT_RECURSIVE
                | libc::AT_SYMLINK_NOFOLLOW as libc::c_uint
                | libc::O_CLOEXEC as libc::c_uint,
        )
    };
    let fd = libc::c_int::try_from(fd).map_err(|_| io::Error::other("open_tree"))?;
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by the kernel and is owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::CommandExt as _;

    use super::super::{ViewPath, available, build_view, build_view_from_nothing};
    use super::*;
    use crate::exec::confine::privileges::ChildSteps;

    /// Runs `script` with `sh` in the mount namespace `mnt`, every capability dropped.
    fn inside(mnt: &OwnedFd, script: &str) -> String {
        run_sh(Some(mnt.as_raw_fd()), None, None, script)
    }

    /// Runs `script` with `sh` in the shared view `mnt` as a child of the stage of `group`.
    fn inside_as(mnt: &OwnedFd, group: u32, script: &str) -> String {
        run_sh(Some(mnt.as_raw_fd()), None, Some(group), script)
    }

    /// Runs `script` with `sh` in the view it copies itself by `copy`'s steps before its exec,
    /// as a stage's child does, every capability dropped.
    fn inside_copy(copy: &Copy, script: &str) -> String {
        let ops = copy.ops();
        run_sh(None, Some((ops.as_ptr() as usize, ops.len())), None, script)
    }

    fn run_sh(
        mnt: Option<std::os::fd::RawFd>,
        mnt_copy: Option<(usize, usize)>,
        group: Option<u32>,
        script: &str,
    ) -> String {
        let steps = ChildSteps {
            parent: rustix::process::getpid().as_raw_nonzero().get(),
            drop_capabilities: true,
            cap_last: crate::exec::confine::kernel().cap_last,
            landlock: None,
            cgroup_procs: None,
            cgroup_dir: None,
            user_ns: None,
            pid_ns: None,
            net_ns: None,
            ipc_ns: None,
            seccomp: None,
            mnt_ns: mnt,
            mnt_copy,
            group,
        };
        let mut cmd = std::process::Command::new("/bin/sh");
        cmd.arg("-c").arg(script);
        // SAFETY: the steps a stage's child runs before its exec: system calls only.
        unsafe {
            cmd.pre_exec(move || {
                steps.enter()?;
                steps.apply()
            });
        }
        let out = cmd.output().expect("sh runs");
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    }

    /// A checkout with a `.git`, a run's work root with two stages' folders, and the view of a
    /// child of the first that reads the checkout.
    struct Fixture {
        _dir: tempfile::TempDir,
        checkout: PathBuf,
        root: PathBuf,
        stage: PathBuf,
        other: PathBuf,
    }

    impl Fixture {
        fn new() -> Self {
            let dir = tempfile::tempdir().expect("tempdir");
            let checkout = dir.path().join("checkout");
            let root = dir.path().join("run");
            let (stage, other) = (root.join("s0-aa"), root.join("s1-bb"));
            for d in [checkout.join(".git"), stage.join("try"), other.clone()] {
                std::fs::create_dir_all(d).expect("mkdir");
            }
            std::fs::write(checkout.join(".git/config"), "secret\n").expect("write");
            std::fs::write(checkout.join("file"), "first\n").expect("write");
            std::fs::write(other.join("theirs"), "theirs\n").expect("write");
            Self {
                _dir: dir,
                checkout,
                root,
                stage,
                other,
            }
        }

        fn view(&self, work: &Path) -> View {
            let system = ["/usr", "/etc", "/dev/null"]
                .iter()
                .map(PathBuf::from)
                .filter(|p| p.exists());
            View {
                work: Some(work.to_path_buf()),
                work_root: Some(self.root.clone()),
                reached: system
                    .chain([self.checkout.clone()])
                    .map(|path| ViewPath {
                        path,
                        writable: false,
                    })
                    .collect(),
                cover: vec![self.checkout.join(".git")],
                named: vec![PathBuf::from("/bin/sh"), self.checkout.clone(), work.into()],
            }
        }

        /// What a child sees and may do, from the root down.
        fn probe(&self) -> String {
            let (c, r, s, o) = (
                self.checkout.display(),
                self.root.display(),
                self.stage.display(),
                self.other.display(),
            );
            format!(
                "ls -a / | sort; echo --; ls -a {r}; echo --; ls -a {s}; echo --; cat {c}/file; \
                 ls -a {c}/.git; cat {c}/.git/config; ls {o}; \
                 echo w > {s}/try/out && echo wrote-own; echo w > {c}/planted || echo checkout-read-only; \
                 mkdir {r}/new || echo root-read-only; chmod 777 {c} || echo chmod-refused"
            )
        }
    }

    fn root_with_namespaces() -> bool {
        if let Err(why) = available() {
            println!("SKIPPED-LAYER mount-namespace: {why}");
            return false;
        }
        if !crate::exec::confine::kernel().root {
            println!("SKIPPED-LAYER view-template: views are copied from a template as root only");
            return false;
        }
        true
    }

    #[test]
    fn a_copied_view_shows_what_a_view_made_from_nothing_shows() {
        if !root_with_namespaces() {
            return;
        }
        let fx = Fixture::new();
        let view = fx.view(&fx.stage.join("try"));
        let before = copies();
        let copied = build_view(&view).expect("copied view");
        assert!(copies() > before, "the view was not copied from a template");
        let made = build_view_from_nothing(&view).expect("view made from nothing");
        let (seen_copied, seen_made) = (inside(&copied, &fx.probe()), inside(&made, &fx.probe()));
        assert_eq!(seen_copied, seen_made);
        assert_a_stages_view(&fx, &seen_copied);
    }

    /// What a child of the fixture's first stage must see and may do, its view copied or made
    /// from nothing: its own folder writable and the rest read-only, the checkout's `.git`
    /// covered, no other stage's folder.
    fn assert_a_stages_view(fx: &Fixture, seen: &str) {
        for said in [
            "wrote-own",
            "checkout-read-only",
            "root-read-only",
            "chmod-refused",
            "first",
        ] {
            assert!(seen.contains(said), "{said}:\n{seen}");
        }
        assert!(seen.contains("--\n.\n..\ns0-aa\n--"), "{seen}");
        for never in ["secret", "theirs"] {
            assert!(!seen.contains(never), "{never}:\n{seen}");
        }
        assert!(!fx.checkout.join("planted").exists());
        assert_eq!(
            std::fs::read_to_string(fx.stage.join("try/out")).expect("kept"),
            "w\n"
        );
    }

    /// What a stage's child runs: the copy made by the child itself, between its `clone` and
    /// its `execve`, with no builder process.
    #[test]
    fn a_view_the_child_copies_itself_shows_what_a_view_made_from_nothing_shows() {
        if !root_with_namespaces() {
            return;
        }
        let fx = Fixture::new();
        let view = fx.view(&fx.stage.join("try"));
        let Some(copy) = plan(&view).expect("a plan") else {
            panic!("the view cannot be copied from a template");
        };
        let made = build_view_from_nothing(&view).expect("view made from nothing");
        let (seen_copied, seen_made) =
            (inside_copy(&copy, &fx.probe()), inside(&made, &fx.probe()));
        assert_eq!(seen_copied, seen_made);
        assert_a_stages_view(&fx, &seen_copied);
        // The copy is the child's own: the engine's mount namespace is as it was.
        assert!(fx.root.join("s1-bb/theirs").exists());
    }

    #[test]
    fn the_next_child_gets_its_own_folder_from_the_same_template() {
        if !root_with_namespaces() {
            return;
        }
        let fx = Fixture::new();
        let first = build_view(&fx.view(&fx.stage)).expect("first view");
        let kept = TEMPLATES.lock().expect("lock").len();
        let second = build_view(&fx.view(&fx.other)).expect("second view");
        assert_eq!(
            TEMPLATES.lock().expect("lock").len(),
            kept,
            "the second view made a template of its own"
        );
        let script = format!("ls -a {}", fx.root.display());
        assert_eq!(inside(&first, &script), ".\n..\ns0-aa\n");
        assert_eq!(inside(&second, &script), ".\n..\ns1-bb\n");
        let theirs = format!("cat {}/theirs", fx.other.display());
        assert_eq!(inside(&second, &theirs), "theirs\n");
        assert!(!inside(&first, &theirs).contains("theirs\n"));
    }

    /// The fixture's work root and folders as a run that tells its stages apart by group makes
    /// them (`run/work_root.rs`, `groups.rs`); the groups of the two stages.
    fn separate(fx: &Fixture) -> (u32, u32) {
        use crate::exec::confine::groups::{Groups, OWNER};
        use std::os::unix::fs::PermissionsExt as _;
        let groups = Groups::available().expect("stages told apart by group");
        let (first, second) = (
            groups.of_stage(0).expect("a group"),
            groups.of_stage(1).expect("a group"),
        );
        std::os::unix::fs::chown(&fx.root, Some(OWNER), Some(OWNER)).expect("chown");
        std::fs::set_permissions(&fx.root, std::fs::Permissions::from_mode(0o711)).expect("chmod");
        crate::exec::confine::groups::make_pivot(&fx.root).expect("the pivot folder");
        Groups::give_folder(&fx.stage, first).expect("give");
        Groups::give_folder(&fx.other, second).expect("give");
        (first, second)
    }

    /// One view for the run's children, no copy each: what keeps a stage out of another's
    /// folder is then its group (no capability overrides a permission), and the rest of the
    /// view is what a copied view shows.
    #[test]
    fn a_shared_view_keeps_each_stage_out_of_the_others_folders() {
        if !root_with_namespaces() {
            return;
        }
        let fx = Fixture::new();
        let (first, second) = separate(&fx);
        let before = shared_views();
        let view = shared(&fx.view(&fx.stage.join("try")))
            .expect("a plan")
            .expect("a shared view");
        assert!(shared_views() > before, "the shared view was not planned");
        let (c, r, s, o) = (
            fx.checkout.display(),
            fx.root.display(),
            fx.stage.display(),
            fx.other.display(),
        );
        let probe = format!(
            "echo w > {s}/try/out && echo wrote-own; ls {r} || echo root-unlisted; \
             ls {o} || echo other-unreachable; cat {o}/theirs || echo theirs-unread; \
             chmod 777 {o} || echo other-chmod-refused; chmod 777 {r} || echo root-chmod-refused; \
             touch {o} || echo other-touch-refused; mkdir {r}/new || echo root-read-only; \
             echo w > {c}/planted || echo checkout-read-only; \
             cat {c}/.git/config || echo git-covered; chmod 777 {c} || echo chmod-refused; \
             cat {c}/file"
        );
        let seen = inside_as(&view, first, &probe);
        for said in [
            "wrote-own",
            "root-unlisted",
            "other-unreachable",
            "theirs-unread",
            "other-chmod-refused",
            "root-chmod-refused",
            "other-touch-refused",
            "root-read-only",
            "checkout-read-only",
            "git-covered",
            "chmod-refused",
            "first\n",
        ] {
            assert!(seen.contains(said), "{said}:\n{seen}");
        }
        for never in ["secret", "theirs\n"] {
            assert!(!seen.contains(never), "{never}:\n{seen}");
        }
        assert!(!fx.checkout.join("planted").exists());
        assert!(!fx.root.join("new").exists());
        assert_eq!(
            std::fs::read_to_string(fx.stage.join("try/out")).expect("kept"),
            "w\n"
        );
        // The second stage enters the same view, and only its own folder is open to it.
        let next = shared(&fx.view(&fx.other))
            .expect("a plan")
            .expect("a shared view");
        assert!(
            Arc::ptr_eq(&view, &next),
            "the second stage got a view of its own"
        );
        let theirs = format!("cat {o}/theirs; cat {s}/try/out || echo first-unread");
        let seen = inside_as(&next, second, &theirs);
        assert!(
            seen.contains("theirs\n") && seen.contains("first-unread"),
            "{seen}"
        );
        assert!(!seen.contains("w\n"), "{seen}");
    }

    /// The steps of a shared view are not walked again for each child, but what it binds and
    /// covers is read each time: a file replaced, or a `.git` made, since the view was made gives
    /// a new view.
    #[test]
    fn a_shared_view_shows_a_file_replaced_or_a_folder_to_cover_made_since() {
        if !root_with_namespaces() {
            return;
        }
        let fx = Fixture::new();
        let (first, _) = separate(&fx);
        std::fs::remove_dir_all(fx.checkout.join(".git")).expect("rm");
        let file = fx.checkout.join("file");
        let mut view = fx.view(&fx.stage);
        view.reached.push(ViewPath {
            path: file.clone(),
            writable: false,
        });
        view.reached.retain(|p| p.path != fx.checkout);
        view.reached.push(ViewPath {
            path: fx.checkout.clone(),
            writable: false,
        });
        let script = format!(
            "cat {}; cat {c}/.git/config || echo no-config",
            file.display(),
            c = fx.checkout.display()
        );
        let before = shared(&view).expect("a plan").expect("a shared view");
        let seen = inside_as(&before, first, &script);
        assert!(
            seen.starts_with("first\n") && seen.contains("no-config"),
            "{seen}"
        );
        let again = shared(&view).expect("a plan").expect("a shared view");
        assert!(Arc::ptr_eq(&before, &again), "the same view was made again");
        std::fs::write(fx.checkout.join("file.new"), "second\n").expect("write");
        std::fs::rename(fx.checkout.join("file.new"), &file).expect("rename");
        let replaced = shared(&view).expect("a plan").expect("a shared view");
        assert!(inside_as(&replaced, first, &script).starts_with("second\n"));
        // A stage that may write the checkout runs `git init` in it.
        std::fs::create_dir(fx.checkout.join(".git")).expect("mkdir");
        std::fs::write(fx.checkout.join(".git/config"), "secret\n").expect("write");
        let covered = shared(&view).expect("a plan").expect("a shared view");
        let seen = inside_as(&covered, first, &script);
        assert!(
            !seen.contains("secret") && seen.contains("no-config"),
            "{seen}"
        );
    }

    #[test]
    fn the_shared_view_goes_with_its_run() {
        if !root_with_namespaces() {
            return;
        }
        let fx = Fixture::new();
        separate(&fx);
        let view = shared(&fx.view(&fx.stage))
            .expect("a plan")
            .expect("a shared view");
        let kept = |v: &Arc<OwnedFd>| {
            TEMPLATES
                .lock()
                .expect("lock")
                .iter()
                .any(|(_, fd)| Arc::ptr_eq(fd, v))
        };
        assert!(kept(&view));
        forget(&fx.root);
        assert!(!kept(&view), "the run's shared view outlived it");
        assert_eq!(Arc::strong_count(&view), 1);
    }

    #[test]
    fn a_file_replaced_since_the_template_was_made_is_seen_as_it_is_now() {
        if !root_with_namespaces() {
            return;
        }
        let fx = Fixture::new();
        let file = fx.checkout.join("file");
        let mut view = fx.view(&fx.stage);
        view.reached.push(ViewPath {
            path: file.clone(),
            writable: false,
        });
        view.reached.retain(|p| p.path != fx.checkout);
        let script = format!("cat {}", file.display());
        let before = build_view(&view).expect("view");
        assert_eq!(inside(&before, &script), "first\n");
        // Replaced as an atomic write does: a new file renamed over the old one.
        std::fs::write(fx.checkout.join("file.new"), "second\n").expect("write");
        std::fs::rename(fx.checkout.join("file.new"), &file).expect("rename");
        let after = build_view(&view).expect("view");
        assert_eq!(inside(&after, &script), "second\n");
    }

    #[test]
    fn a_folder_to_cover_made_since_the_template_was_made_is_covered() {
        if !root_with_namespaces() {
            return;
        }
        let fx = Fixture::new();
        std::fs::remove_dir_all(fx.checkout.join(".git")).expect("rm");
        let view = fx.view(&fx.stage);
        let script = format!("cat {}/.git/config", fx.checkout.display());
        let before = build_view(&view).expect("view");
        assert!(inside(&before, &script).contains("No such file"));
        // A stage that may write the checkout runs `git init` in it.
        std::fs::create_dir(fx.checkout.join(".git")).expect("mkdir");
        std::fs::write(fx.checkout.join(".git/config"), "secret\n").expect("write");
        let after = build_view(&view).expect("view");
        let seen = inside(&after, &script);
        assert!(!seen.contains("secret"), "{seen}");
    }

    #[test]
    fn a_view_whose_grant_holds_the_work_root_is_made_from_nothing() {
        let fx = Fixture::new();
        let mut view = fx.view(&fx.stage);
        view.reached.push(ViewPath {
            path: fx.root.parent().expect("parent").to_path_buf(),
            writable: false,
        });
        assert!(split(&view).is_none());
        assert!(split(&fx.view(&fx.stage)).is_some());
        let mut no_stage = fx.view(&fx.stage);
        no_stage.work = None;
        assert!(split(&no_stage).is_none());
    }
}
