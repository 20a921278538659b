//! Confining one child: what the parent prepares before the spawn (environment, grants, the
//! Landlock ruleset) and the steps the child runs before its `execve`.

use std::os::fd::{AsRawFd as _, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::cgroup::ChildCgroup;
use super::grants;
use super::kernel::{ABI_SCOPES, Kernel, kernel};
use super::namespaces::{self, ChildView, StageIpc, StageNet, View};
use super::privileges::ChildSteps;
use super::scope::{STAGE_MARKER_VAR, StageScope};
use super::spec::ConfineSpec;

/// Why a child could not be confined.
#[derive(Debug, thiserror::Error)]
pub enum ConfineError {
    /// The spec is strict and the kernel lacks part of Landlock.
    #[error(
        "strict confinement needs Landlock ABI {ABI_SCOPES} or later (Linux 6.12); this kernel has {}",
        if *abi == 0 { "none".to_string() } else { format!("ABI {abi}") }
    )]
    Unavailable { abi: u32 },
    /// The ruleset could not be built.
    #[error("cannot build the Landlock ruleset: {0}")]
    Ruleset(String),
    /// A layer the run holds could not be made for this child (fail closed).
    #[error("cannot {what}: {source}")]
    Layer {
        what: &'static str,
        source: std::io::Error,
    },
}

/// What the parent prepared for one child. Keep it until the spawn has returned: it owns the
/// descriptors the child uses before its `execve` (the ruleset, the namespaces, its cgroup's
/// `cgroup.procs`).
#[derive(Debug, Default)]
pub(crate) struct Prepared {
    steps: Option<ChildSteps>,
    _ruleset: Option<OwnedFd>,
    mnt: Option<OwnedFd>,
    /// The steps the child runs to copy its view: kept until the spawn has returned.
    copy: Option<namespaces::Copy>,
    _net: Option<Arc<StageNet>>,
    _ipc: Option<Arc<StageIpc>>,
    /// The run's shared view the child enters: kept until the spawn has returned (the run's
    /// templates keep it after).
    _shared: Option<Arc<OwnedFd>>,
    cgroup: Option<ChildCgroup>,
}

impl Prepared {
    /// The steps the child runs before its `execve` (none when confinement is off).
    pub(crate) fn steps(&self) -> Option<ChildSteps> {
        self.steps
    }

    /// The child's cgroup: whoever supervises the child ends it when the child has exited.
    pub(crate) fn take_cgroup(&mut self) -> Option<ChildCgroup> {
        self.cgroup.take()
    }

    /// The mount namespace of the child `pid`, which has exec'd: whoever supervises the child
    /// keeps it until the child has exited, then hands it to [`namespaces::release`]
    /// ([`MountView`]). A view the child copied itself is opened through `/proc/<pid>` (a
    /// child that already exited has none left to hold).
    pub(crate) fn take_view(&mut self, pid: i32) -> MountView {
        if self.copy.take().is_some() {
            let path = format!("/proc/{pid}/ns/mnt");
            return MountView(
                rustix::fs::open(
                    path.as_str(),
                    rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC,
                    rustix::fs::Mode::empty(),
                )
                .ok(),
            );
        }
        MountView(self.mnt.take())
    }
}

/// A child's mount namespace, held by the engine until the child has exited.
///
/// Why: the last reference to a mount namespace tears it down (every mount in it unmounted, and
/// the kernel waits for an RCU grace period before it frees them). Dropped by the child's exit,
/// that happens before its parent is told of the exit, so every stage would wait for it; held
/// here, it is released on a thread of its own, off the stage's path.
#[derive(Debug, Default)]
pub(crate) struct MountView(Option<OwnedFd>);

impl Drop for MountView {
    fn drop(&mut self) {
        if let Some(fd) = self.0.take() {
            namespaces::release(fd);
        }
    }
}

/// The child's program: its path, or the search that finds it (in the `PATH` it is given: a
/// stat an entry, blocking work), run in the same hand-off as the rest of the preparation.
pub(crate) enum Program {
    Known(PathBuf),
    Search(Box<dyn FnOnce() -> Option<PathBuf> + Send>),
}

impl Program {
    /// The program's path, found here (blocking), or `None` where no search found it.
    fn find(self) -> Option<PathBuf> {
        match self {
            Self::Known(path) => Some(path),
            Self::Search(search) => search(),
        }
    }

    /// The same, off the runtime's thread where it has to search.
    async fn found(self) -> Option<PathBuf> {
        match self {
            Self::Known(path) => Some(path),
            search => tokio::task::spawn_blocking(move || search.find())
                .await
                .ok()
                .flatten(),
        }
    }
}

/// Decides how the child of `spec` starts and prepares it: the stage marker and `TMPDIR` in its
/// environment (`env`), the privilege steps, and the Landlock ruleset of `confine` (or of the
/// stage's confinement when the spec names none). `grace` is the child's grace period, which
/// its stage's PID namespace gives its processes at the stage's end too. `program` and `cwd` are
/// as the child names them: its view resolves them as the host does. Returns the program's
/// path with the preparation, or `None` where the search found no program (nothing is
/// prepared then).
pub(crate) async fn prepare(
    env: &mut Vec<(String, String)>,
    confine: Option<&ConfineSpec>,
    program: Program,
    cwd: &Path,
    stage: Option<&Arc<StageScope>>,
    grace: std::time::Duration,
) -> Result<Option<(Prepared, PathBuf)>, ConfineError> {
    if let Some(stage) = stage {
        env.retain(|(name, _)| name != STAGE_MARKER_VAR);
        env.push((STAGE_MARKER_VAR.into(), stage.marker().into()));
        if stage.base().is_none() {
            // The run turned confinement off (recorded as not held in its manifest).
            return Ok(program.found().await.map(|p| (Prepared::default(), p)));
        }
    }
    let confine = confine.or_else(|| stage.and_then(|s| s.base())).cloned();
    let kernel = kernel();
    let cgroup = match stage {
        Some(stage) => stage.child_cgroup(),
        None => ChildCgroup::create(),
    }
    .map_err(|source| ConfineError::Layer {
        what: "make the child's cgroup",
        source,
    })?;
    let mut prepared = Prepared {
        steps: Some(ChildSteps {
            parent: rustix::process::getpid().as_raw_nonzero().get(),
            drop_capabilities: kernel.root,
            cap_last: kernel.cap_last,
            landlock: None,
            cgroup_procs: cgroup.as_ref().map(ChildCgroup::procs_fd),
            cgroup_dir: cgroup.as_ref().map(ChildCgroup::dir_fd),
            user_ns: None,
            pid_ns: None,
            net_ns: None,
            ipc_ns: None,
            seccomp: super::keyring::filter().map(|f| (f.as_ptr() as usize, f.len())),
            mnt_ns: None,
            mnt_copy: None,
            // Only as root: the stage's group is given only where every gid is the engine's.
            group: stage.and_then(|s| s.group()).filter(|_| kernel.root),
        }),
        cgroup,
        ..Prepared::default()
    };
    let Some(confine) = confine else {
        return Ok(program.found().await.map(|p| (prepared, p)));
    };
    let mut view = None;
    if let Some(stage) = stage
        && namespaces::available().is_ok()
    {
        // The stage's declaration decides, not the child's spec: a child may add a port of
        // the stage's own loopback (a reviewer's proxy), which is in the stage's namespace.
        if stage.own_network() {
            let net = stage.net().map_err(|source| ConfineError::Layer {
                what: "make the stage's network namespace",
                source,
            })?;
            if let Some(steps) = prepared.steps.as_mut() {
                steps.net_ns = Some(net.fd().as_raw_fd());
            }
            prepared._net = Some(net);
        }
        // Every stage's: no System V or POSIX IPC object of another stage's, or of the host's.
        let ipc = stage.ipc().map_err(|source| ConfineError::Layer {
            what: "make the stage's IPC namespace",
            source,
        })?;
        if let Some(steps) = prepared.steps.as_mut() {
            steps.ipc_ns = Some(ipc.fd().as_raw_fd());
        }
        prepared._ipc = Some(ipc);
        view = Some(View {
            work: confine.work.clone(),
            work_root: confine.work_root.clone(),
            reached: Vec::new(),
            cover: confine.cover.clone(),
            named: Vec::new(),
        });
        if let Some(steps) = prepared.steps.as_mut() {
            // Kept by the process for its whole life: nothing to hold here.
            steps.user_ns = namespaces::user_ns();
            steps.drop_capabilities |= steps.user_ns.is_some();
        }
        if prepared.cgroup.is_none() {
            let pid = stage.pid_ns(grace).map_err(|source| ConfineError::Layer {
                what: "make the stage's PID namespace",
                source,
            })?;
            if let Some(steps) = prepared.steps.as_mut() {
                steps.pid_ns = pid;
            }
        }
    }
    if confine.strict && kernel.landlock_abi < ABI_SCOPES {
        return Err(ConfineError::Unavailable {
            abi: kernel.landlock_abi,
        });
    }
    if let Some(work) = &confine.work {
        for name in ["TMPDIR", "TMP", "TEMP"] {
            if !env.iter().any(|(n, _)| n == name) {
                env.push((name.into(), work.to_string_lossy().into_owned()));
            }
        }
    }
    let path_var = env
        .iter()
        .find(|(name, _)| name == "PATH")
        .map(|(_, v)| v.clone());
    let cwd = cwd.to_path_buf();
    // A child that may connect anywhere on a port reads the resolver's configuration.
    let resolver = !confine.connect.is_empty();
    let shared = prepared.steps.is_some_and(|s| s.group.is_some());
    // Making the mount namespace and resolving and opening paths is blocking work: off the
    // runtime threads, in one hand-off.
    let made = tokio::task::spawn_blocking(move || {
        let Some(program) = program.find() else {
            return Ok(None);
        };
        let (grants, reached) =
            grants::plan_with_paths(&confine, path_var.as_deref(), &program, resolver);
        let mnt = view
            .map(|mut view| {
                // Default deny: what no grant reaches is not in the view at all.
                view.reached = grants::view_paths(reached);
                // Under the names the child is given for them.
                view.named = std::iter::once(program.clone())
                    .chain(std::iter::once(cwd))
                    .chain(confine.read.iter().cloned())
                    .chain(confine.write.iter().cloned())
                    .chain(confine.work.iter().cloned())
                    .chain(
                        path_var
                            .iter()
                            .flat_map(|p| p.split(':'))
                            .map(PathBuf::from)
                            .filter(|p| p.is_absolute()),
                    )
                    .collect();
                namespaces::child_view(&view, shared)
            })
            .transpose()
            .map_err(|source| ConfineError::Layer {
                what: "make the child's mount namespace",
                source,
            })?;
        ruleset(&kernel, &confine, grants).map(|built| Some((mnt, built, program)))
    })
    .await
    .map_err(|e| ConfineError::Ruleset(e.to_string()))??;
    let Some((mnt, built, program)) = made else {
        return Ok(None);
    };
    match mnt {
        Some(ChildView::Made(fd)) => {
            if let Some(steps) = prepared.steps.as_mut() {
                steps.mnt_ns = Some(fd.as_raw_fd());
            }
            prepared.mnt = Some(fd);
        }
        Some(ChildView::Shared(fd)) => {
            if let Some(steps) = prepared.steps.as_mut() {
                steps.mnt_ns = Some(fd.as_raw_fd());
            }
            prepared._shared = Some(fd);
        }
        Some(ChildView::Copied(copy)) => {
            if let Some(steps) = prepared.steps.as_mut() {
                let ops = copy.ops();
                steps.mnt_copy = Some((ops.as_ptr() as usize, ops.len()));
            }
            prepared.copy = Some(copy);
        }
        None => {}
    }
    if let (Some(steps), Some((fd, own_proc))) = (prepared.steps.as_mut(), built) {
        steps.landlock = Some((fd.as_raw_fd(), own_proc));
        prepared._ruleset = Some(fd);
    }
    Ok(Some((prepared, program)))
}

#[cfg(target_os = "linux")]
fn ruleset(
    kernel: &Kernel,
    confine: &ConfineSpec,
    grants: Vec<grants::Grant>,
) -> Result<Option<(OwnedFd, u64)>, ConfineError> {
    if kernel.landlock_abi == 0 {
        return Ok(None);
    }
    let built = super::landlock::build(kernel, grants, &confine.connect, confine.strict)
        .map_err(|e| ConfineError::Ruleset(e.to_string()))?;
    Ok(built.map(|b| (b.fd, b.own_proc)))
}

#[cfg(not(target_os = "linux"))]
fn ruleset(
    _kernel: &Kernel,
    _confine: &ConfineSpec,
    _grants: Vec<grants::Grant>,
) -> Result<Option<(OwnedFd, u64)>, ConfineError> {
    Ok(None)
}
