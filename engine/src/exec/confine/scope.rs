//! The stage a child belongs to: a task-local set by the scheduler around each stage's
//! implementation, so that every child started while a stage runs is confined and marked,
//! whichever stage kind starts it and however it builds its [`ChildSpec`].
//!
//! A task the implementation spawns itself (`tokio::spawn`) does not inherit it: children
//! started there are confined only by what their spec says.
//!
//! [`ChildSpec`]: crate::exec::process::ChildSpec

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use super::cgroup::ChildCgroup;
use super::namespaces::{StageIpc, StageNet};
use super::pidns::StagePids;
use super::spec::ConfineSpec;
use crate::exec::slot::SlotGate;

/// The variable that marks every child of a stage (and what it leaves behind) with the stage's
/// marker, read back from `/proc/<pid>/environ` to attribute orphans.
pub const STAGE_MARKER_VAR: &str = "REVIEWFLOW_STAGE_ID";

tokio::task_local! {
    static STAGE: Arc<StageScope>;
}

/// One running stage, as its children see it.
#[derive(Debug)]
pub struct StageScope {
    marker: String,
    base: Option<ConfineSpec>,
    spawned: AtomicBool,
    /// Whether a child of the stage ran without a cgroup of its own (the layer is missing).
    uncontained: AtomicBool,
    /// Whether a child's cgroup still held processes when the child's leader exited.
    left: AtomicBool,
    /// The stage's network namespace, made when first needed: its own, or one it shares with
    /// the run's other stages that have nothing to hide ([`NetSlot`]).
    net: NetSlot,
    /// The stage's IPC namespace, made when first needed: its own, or one it shares with the
    /// run's other stages that have nothing to hide ([`IpcSlot`]).
    ipc: IpcSlot,
    /// The stage's PID namespace, where the `cgroup` layer is missing: made on first use,
    /// ended when the stage ends ([`StageScope::end_pid_namespace`]).
    pids: Mutex<Option<StagePids>>,
    /// The stage's way to the run's slots ([`SlotGate`]); none outside a run's scheduling.
    slot: Option<Arc<SlotGate>>,
    /// The stage's group, where the run tells its stages apart by group (`groups.rs`).
    group: Option<u32>,
}

/// Where a stage's network namespace is kept: a stage that holds a secret or reads a private
/// value gets a slot of its own; the run's stages that hold neither share one, since none of
/// them has anything another could take (a namespace costs the kernel about 2 ms to make).
pub type NetSlot = Arc<Mutex<Option<Arc<StageNet>>>>;

/// Where a stage's IPC namespace is kept, shared as [`NetSlot`] is.
pub type IpcSlot = Arc<Mutex<Option<Arc<StageIpc>>>>;

impl StageScope {
    /// A stage marked `marker` whose children are confined by `base` (and what their spec adds);
    /// `None` turns confinement off (recorded as not held by the run).
    pub fn new(marker: String, base: Option<ConfineSpec>) -> Self {
        Self {
            marker,
            base,
            spawned: AtomicBool::new(false),
            uncontained: AtomicBool::new(false),
            left: AtomicBool::new(false),
            net: NetSlot::default(),
            ipc: IpcSlot::default(),
            pids: Mutex::new(None),
            slot: None,
            group: None,
        }
    }

    /// Gives the stage's children `group` as their only group: the group its folder is given to
    /// (`groups.rs`).
    pub fn with_group(mut self, group: Option<u32>) -> Self {
        self.group = group;
        self
    }

    /// The stage's group, if the run gave it one.
    pub(crate) fn group(&self) -> Option<u32> {
        self.group
    }

    /// Takes the run's slots through `gate`.
    pub fn with_slot(mut self, gate: Arc<SlotGate>) -> Self {
        self.slot = Some(gate);
        self
    }

    /// The gate a child of the stage takes its slot through, when the stage takes its slot
    /// around its program rather than for its whole run.
    pub fn program_slot(&self) -> Option<&Arc<SlotGate>> {
        self.slot.as_ref().filter(|g| g.per_program())
    }

    /// Keeps the stage's network namespace in `slot`, shared with the other stages given it.
    pub fn sharing_net(mut self, slot: NetSlot) -> Self {
        self.net = slot;
        self
    }

    /// Keeps the stage's IPC namespace in `slot`, shared with the other stages given it.
    pub fn sharing_ipc(mut self, slot: IpcSlot) -> Self {
        self.ipc = slot;
        self
    }

    /// The stage's IPC namespace, made on first use.
    pub(crate) fn ipc(&self) -> std::io::Result<Arc<StageIpc>> {
        let mut slot = self.ipc.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(ipc) = slot.as_ref() {
            return Ok(Arc::clone(ipc));
        }
        let ipc = Arc::new(StageIpc::create()?);
        *slot = Some(Arc::clone(&ipc));
        Ok(ipc)
    }

    /// A cgroup for a new child of the stage; `None` when the cgroup layer is missing. It is
    /// ended when the child's leader exits, so the stage ends after everything it started.
    pub(crate) fn child_cgroup(&self) -> std::io::Result<Option<ChildCgroup>> {
        let cgroup = ChildCgroup::create()?;
        if cgroup.is_none() {
            self.uncontained.store(true, Ordering::Relaxed);
        }
        Ok(cgroup)
    }

    /// Whether the stage's end must look for what its children left (`reaper`): a child ran
    /// outside a cgroup of its own (the layer is missing), or a child's cgroup still held
    /// processes when its leader exited (they were killed, and their zombies are the engine's
    /// to reap). Otherwise every process of the stage has ended and been reaped already.
    pub fn left_something(&self) -> bool {
        self.uncontained.load(Ordering::Relaxed) || self.left.load(Ordering::Relaxed)
    }

    /// A child's cgroup held processes after its leader exited.
    pub(crate) fn mark_left(&self) {
        self.left.store(true, Ordering::Relaxed);
    }

    /// Whether the stage's children run in a network namespace of the stage's (it declares no
    /// `network=`, and the engine can make namespaces): its loopback is then theirs only.
    pub(crate) fn own_network(&self) -> bool {
        self.base.as_ref().is_some_and(|b| b.connect.is_empty())
            && super::namespaces::available().is_ok()
    }

    /// The stage's network namespace (loopback only), made on first use.
    pub(crate) fn net(&self) -> std::io::Result<Arc<StageNet>> {
        let mut slot = self.net.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(net) = slot.as_ref() {
            return Ok(Arc::clone(net));
        }
        let net = Arc::new(StageNet::create()?);
        *slot = Some(Arc::clone(&net));
        Ok(net)
    }

    /// The PID namespace the stage's children start their processes in, made on first use:
    /// only where the `cgroup` layer is missing and the engine can make namespaces. Its init
    /// gives them at least `grace` between SIGTERM and SIGKILL at the stage's end.
    pub(crate) fn pid_ns(
        &self,
        grace: std::time::Duration,
    ) -> std::io::Result<Option<std::os::fd::RawFd>> {
        use std::os::fd::AsRawFd as _;
        if !pid_namespaces() {
            return Ok(None);
        }
        let mut slot = self.pids.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_none() {
            *slot = Some(StagePids::create()?);
        }
        if let Some(pids) = slot.as_ref() {
            pids.at_least(grace);
        }
        Ok(slot.as_ref().map(|p| p.fd().as_raw_fd()))
    }

    /// Ends every process in the stage's PID namespace, if it has one: SIGTERM to each, then
    /// SIGKILL after the grace period to what is left (blocking, bounded).
    pub fn end_pid_namespace(&self) {
        let pids = self
            .pids
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        drop(pids);
    }

    /// The value of [`STAGE_MARKER_VAR`] in this stage's children.
    pub fn marker(&self) -> &str {
        &self.marker
    }

    /// The stage's confinement: what every child of it may reach, before its own folder.
    pub fn base(&self) -> Option<&ConfineSpec> {
        self.base.as_ref()
    }

    /// Whether the stage started a child (only then can it have left something behind).
    pub fn spawned(&self) -> bool {
        self.spawned.load(Ordering::Relaxed)
    }

    pub(crate) fn mark_spawned(&self) {
        self.spawned.store(true, Ordering::Relaxed);
    }

    /// Runs `future` as this stage.
    pub async fn run<F: Future>(self: Arc<Self>, future: F) -> F::Output {
        STAGE.scope(self, future).await
    }
}

/// Whether stages get a PID namespace each: the `cgroup` layer is missing, and the engine can
/// make namespaces.
pub fn pid_namespaces() -> bool {
    !matches!(
        super::cgroup::availability(),
        super::cgroup::Availability::Held(_)
    ) && super::namespaces::available().is_ok()
}

/// The stage the calling task runs, if any.
pub fn current() -> Option<Arc<StageScope>> {
    STAGE.try_with(Arc::clone).ok()
}

/// The confinement of the stage the calling task runs: what a stage kind starts a child with,
/// adding the child's own folder ([`ConfineSpec::work`]) and what the kind declares. `None`
/// outside a stage, or when the run turned confinement off.
pub fn stage_confinement() -> Option<ConfineSpec> {
    current().and_then(|s| s.base.clone())
}

/// A TCP listener on loopback (`127.0.0.1`, a free port) that the children of the calling
/// task's stage can connect to, served by the engine: in the stage's own network namespace
/// where it has one (docs/isolation.md), else in the engine's. What a model reviewer's proxy
/// listens on (its base URL names the port).
pub fn listen_loopback() -> std::io::Result<std::net::TcpListener> {
    if let Some(stage) = current()
        && stage.own_network()
    {
        return stage.net()?.listen_loopback();
    }
    let listener = std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0))?;
    listener.set_nonblocking(true)?;
    Ok(listener)
}
