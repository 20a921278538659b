//! Confinement of child processes and the isolation report of a run (docs/executor.md, "What a
//! child can reach").
//!
//! Every child [`process::run`](crate::exec::process::run) starts gets, between its start and
//! its `execve`: its own process group, a parent-death signal, no new privileges, no capabilities
//! (as root, or in the engine's user namespace), its stage's namespaces where the engine can make
//! them ([`namespaces`], [`pidns`]), and when its spec or its stage asks for it a Landlock ruleset
//! built by the parent ([`ConfineSpec`]). The engine is a child subreaper: what a stage leaves
//! behind is ended when the stage ends ([`reaper`]). What held is reported once per run
//! ([`Isolation`]).

mod builder;
pub mod cgroup;
mod child;
mod grants;
pub mod groups;
mod kernel;
pub mod keyring;
#[cfg(target_os = "linux")]
mod landlock;
pub mod namespaces;
pub mod pidns;
mod privileges;
pub mod reaper;
mod report;
mod scope;
mod spec;

pub use child::ConfineError;
pub(crate) use child::{Program, prepare};
pub use kernel::{ABI_NETWORK, ABI_SCOPES, Kernel, kernel};
pub(crate) use privileges::ChildSteps;
pub use report::{Isolation, Layer, Level, describe, layer};
pub use scope::{
    IpcSlot, NetSlot, STAGE_MARKER_VAR, StageScope, current, listen_loopback, stage_confinement,
};
pub use spec::ConfineSpec;
