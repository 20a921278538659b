//! Confining one child: what the parent prepares before the spawn (environment, grants, the
//! Landlock ruleset) and the steps the child runs before its `execve`.

use std::os::fd::{AsRawFd as _, OwnedFd};
use std::path::Path;
use std::sync::Arc;

use super::grants;
use super::kernel::{ABI_SCOPES, Kernel, kernel};
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
}

/// What the parent prepared for one child. Keep it until the spawn has returned: it owns the
/// ruleset descriptor the child uses before its `execve`.
#[derive(Debug, Default)]
pub(crate) struct Prepared {
    steps: Option<ChildSteps>,
    _ruleset: Option<OwnedFd>,
}

impl Prepared {
    /// The steps the child runs before its `execve` (none when confinement is off).
    pub(crate) fn steps(&self) -> Option<ChildSteps> {
        self.steps
    }
}

/// Decides how the child of `spec` starts and prepares it: the stage marker and `TMPDIR` in its
/// environment (`env`), the privilege steps, and the Landlock ruleset of `confine` (or of the
/// stage's confinement when the spec names none).
pub(crate) async fn prepare(
    env: &mut Vec<(String, String)>,
    confine: Option<&ConfineSpec>,
    program: &Path,
    stage: Option<&Arc<StageScope>>,
) -> Result<Prepared, ConfineError> {
    if let Some(stage) = stage {
        env.retain(|(name, _)| name != STAGE_MARKER_VAR);
        env.push((STAGE_MARKER_VAR.into(), stage.marker().into()));
        if stage.base().is_none() {
            // The run turned confinement off (recorded as not held in its manifest).
            return Ok(Prepared::default());
        }
    }
    let confine = confine.or_else(|| stage.and_then(|s| s.base())).cloned();
    let kernel = kernel();
    let mut prepared = Prepared {
        steps: Some(ChildSteps {
            parent: rustix::process::getpid().as_raw_nonzero().get(),
            drop_capabilities: kernel.root,
            cap_last: kernel.cap_last,
            landlock: None,
        }),
        _ruleset: None,
    };
    let Some(confine) = confine else {
        return Ok(prepared);
    };
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
    let program = program.to_path_buf();
    // Resolving and opening paths is blocking file work: off the runtime threads.
    let built = tokio::task::spawn_blocking(move || ruleset(&kernel, &confine, path_var, &program))
        .await
        .map_err(|e| ConfineError::Ruleset(e.to_string()))??;
    if let (Some(steps), Some((fd, own_proc))) = (prepared.steps.as_mut(), built) {
        steps.landlock = Some((fd.as_raw_fd(), own_proc));
        prepared._ruleset = Some(fd);
    }
    Ok(prepared)
}

#[cfg(target_os = "linux")]
fn ruleset(
    kernel: &Kernel,
    confine: &ConfineSpec,
    path_var: Option<String>,
    program: &Path,
) -> Result<Option<(OwnedFd, u64)>, ConfineError> {
    if kernel.landlock_abi == 0 {
        return Ok(None);
    }
    let grants = grants::plan(confine, path_var.as_deref(), program);
    let built = super::landlock::build(kernel, grants, &confine.connect, confine.strict)
        .map_err(|e| ConfineError::Ruleset(e.to_string()))?;
    Ok(built.map(|b| (b.fd, b.own_proc)))
}

#[cfg(not(target_os = "linux"))]
fn ruleset(
    _kernel: &Kernel,
    _confine: &ConfineSpec,
    _path_var: Option<String>,
    _program: &Path,
) -> Result<Option<(OwnedFd, u64)>, ConfineError> {
    Ok(None)
}
