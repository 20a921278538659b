//! The stage a child belongs to: a task-local set by the scheduler around each stage's
//! implementation, so that every child started while a stage runs is confined and marked,
//! whichever stage kind starts it and however it builds its [`ChildSpec`].
//!
//! A task the implementation spawns itself (`tokio::spawn`) does not inherit it: children
//! started there are confined only by what their spec says.
//!
//! [`ChildSpec`]: crate::exec::process::ChildSpec

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::spec::ConfineSpec;

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
}

impl StageScope {
    /// A stage marked `marker` whose children are confined by `base` (and what their spec adds);
    /// `None` turns confinement off (recorded as not held by the run).
    pub fn new(marker: String, base: Option<ConfineSpec>) -> Self {
        Self {
            marker,
            base,
            spawned: AtomicBool::new(false),
        }
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
    let listener = std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0))?;
    listener.set_nonblocking(true)?;
    Ok(listener)
}
