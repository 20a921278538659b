//! The reviewflow process itself, for `run` (docs/isolation.md, "The reviewflow process"): no
//! secret in its environment block (a re-exec hands them over through a memfd), not dumpable,
//! and a watchdog parent that ends every process of the run. Linux only; elsewhere each layer is
//! recorded as not held and the process runs as before.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt as _;
use std::sync::Arc;

use reviewflow_engine::exec::secret::SecretValue;
use reviewflow_engine::model::Pipeline;
use reviewflow_engine::run::EnvLookup;

pub const SCRUBBED_ENVIRONMENT: &str = "scrubbed-environment";
pub const NOT_DUMPABLE: &str = "not-dumpable";
pub const WATCHDOG: &str = "watchdog";

/// One layer of the process's own protection, and whether it held.
#[derive(Clone, Debug)]
pub struct ProcessLayer {
    pub name: &'static str,
    pub held: bool,
    pub detail: String,
}

/// What this process did to protect itself, and the secrets handed over to it.
#[derive(Default)]
pub struct Isolation {
    /// Started by our own re-exec (`REVIEWFLOW_SECRETS_FD` was set): never re-execute again.
    #[cfg_attr(
        not(target_os = "linux"),
        expect(dead_code, reason = "there is no re-exec outside Linux")
    )]
    reexecuted: bool,
    /// A fork of the watchdog was attempted: never again.
    forked: bool,
    /// The mount namespace of the process's own, where it could make one (run/work_root.rs in
    /// the engine): the run's work folders are then in memory.
    pub private_mounts: Option<reviewflow_engine::run::PrivateMounts>,
    /// Secret variables handed over by the process before the re-exec, by name.
    handover: Arc<BTreeMap<Vec<u8>, SecretValue>>,
    layers: Vec<ProcessLayer>,
}

impl Isolation {
    /// The first thing `main` does, before parsing anything. In a process re-executed by `run`:
    /// not dumpable, the watchdog forked (so that it never sees a secret), then the secrets read
    /// from the memfd, which is closed. `Err`: a `REVIEWFLOW_SECRETS_FD` that is not ours, or a
    /// payload that does not parse (exit 2).
    pub fn early() -> Result<Self, String> {
        #[cfg(target_os = "linux")]
        {
            linux::early()
        }
        #[cfg(not(target_os = "linux"))]
        {
            Ok(Self::default())
        }
    }

    /// PR_SET_DUMPABLE 0, once: `/proc/<pid>/{environ,mem}` and ptrace of reviewflow are refused
    /// to other processes of its user (its stage children included).
    pub fn protect(&mut self) {
        if self.layer(NOT_DUMPABLE).is_some() {
            return;
        }
        #[cfg(target_os = "linux")]
        let (held, detail) = linux::not_dumpable();
        #[cfg(not(target_os = "linux"))]
        let (held, detail) = (false, ONLY_LINUX.to_string());
        self.record(NOT_DUMPABLE, held, detail);
    }

    /// After the pipeline is checked, before any runtime thread: re-execute without the
    /// pipeline's secret variables if any is set (does not return when that works), then make
    /// the process not dumpable, fork the watchdog (returns in the child), and give the process
    /// a mount namespace of its own where it can (as root).
    pub fn before_runtime(&mut self, pipeline: &Pipeline) {
        let names: Vec<&str> = pipeline
            .secrets
            .iter()
            .map(|s| s.env.value.as_str())
            .collect();
        #[cfg(target_os = "linux")]
        linux::scrub(self, &names);
        #[cfg(not(target_os = "linux"))]
        {
            let set: Vec<&str> = names
                .iter()
                .copied()
                .filter(|n| std::env::var_os(n).is_some())
                .collect();
            let detail = if set.is_empty() {
                "no secret variable of the pipeline is set".to_string()
            } else {
                format!("{ONLY_LINUX}: {} stay in the environment", set.join(", "))
            };
            self.record(SCRUBBED_ENVIRONMENT, set.is_empty(), detail);
        }
        self.protect();
        if !self.forked {
            self.forked = true;
            #[cfg(target_os = "linux")]
            linux::watchdog(self, &mut None);
            #[cfg(not(target_os = "linux"))]
            self.record(WATCHDOG, false, ONLY_LINUX.to_string());
        }
        if self.private_mounts.is_none() {
            // Not a layer: without it the work folders are on disk, 0700, as they always were.
            self.private_mounts = reviewflow_engine::run::PrivateMounts::make().ok();
        }
    }

    /// The run's `env`: the handed-over secrets first, then the process environment.
    pub fn env_lookup(&self) -> EnvLookup {
        let handover = Arc::clone(&self.handover);
        Arc::new(move |name: &str| {
            handover
                .get(name.as_bytes())
                .map(|v| OsString::from_vec(v.expose_secret().to_vec()))
                .or_else(|| std::env::var_os(name))
        })
    }

    /// The layers as (name, held, detail), in a fixed order, for the run's record.
    pub fn process_layers(&self) -> Vec<(String, bool, String)> {
        [SCRUBBED_ENVIRONMENT, NOT_DUMPABLE, WATCHDOG]
            .iter()
            .map(|name| match self.layer(name) {
                Some(l) => (l.name.to_string(), l.held, l.detail.clone()),
                None => (name.to_string(), false, "not set up".to_string()),
            })
            .collect()
    }

    fn layer(&self, name: &str) -> Option<&ProcessLayer> {
        self.layers.iter().find(|l| l.name == name)
    }

    fn record(&mut self, name: &'static str, held: bool, detail: String) {
        self.layers.retain(|l| l.name != name);
        self.layers.push(ProcessLayer { name, held, detail });
    }
}

#[cfg(not(target_os = "linux"))]
const ONLY_LINUX: &str = "only on Linux";

#[cfg(target_os = "linux")]
mod linux {
    use super::{Isolation, SCRUBBED_ENVIRONMENT, WATCHDOG};
    use crate::output::errln;
    use crate::reexec::{self, SECRETS_FD_VAR};
    use crate::watchdog;
    use rustix::process::DumpableBehavior;
    use std::os::fd::OwnedFd;
    use std::os::unix::ffi::OsStrExt as _;
    use std::sync::Arc;

    pub fn early() -> Result<Isolation, String> {
        let Some(value) = std::env::var_os(SECRETS_FD_VAR) else {
            return Ok(Isolation::default());
        };
        let mut this = Isolation {
            reexecuted: true,
            forked: true,
            ..Isolation::default()
        };
        this.protect();
        restore_name();
        let mut fd = Some(reexec::claim_fd(&value)?);
        watchdog(&mut this, &mut fd);
        let fd = fd.ok_or_else(|| format!("{SECRETS_FD_VAR}: lost before it was read"))?;
        let handover = reexec::read_handover(fd)?;
        // SAFETY: single-threaded: nothing has started a thread yet (the watchdog checked it
        // before forking, and a forked child has one thread).
        unsafe { std::env::remove_var(SECRETS_FD_VAR) };
        let count = handover.len();
        this.record(
            SCRUBBED_ENVIRONMENT,
            true,
            format!(
                "{count} secret variable{} moved out of the environment by a re-exec and handed \
                 over through a sealed memfd: the /proc/<pid>/environ of reviewflow and of its \
                 watchdog hold none",
                if count == 1 { "" } else { "s" }
            ),
        );
        this.handover = Arc::new(handover);
        Ok(this)
    }

    /// Exec of `/proc/self/exe` names the process `exe`: give it back the name `ps`, `pgrep`
    /// and `kill` users know, taken from argv[0] as the first exec took it from the path.
    fn restore_name() {
        let Some(arg0) = std::env::args_os().next() else {
            return;
        };
        let path = std::path::Path::new(&arg0);
        let Some(base) = path.file_name() else {
            return;
        };
        // The kernel keeps 15 bytes of it.
        let bytes: Vec<u8> = base.as_bytes().iter().copied().take(15).collect();
        if let Ok(name) = std::ffi::CString::new(bytes) {
            let _ = rustix::thread::set_name(&name);
        }
    }

    pub fn not_dumpable() -> (bool, String) {
        let set = rustix::process::set_dumpable_behavior(DumpableBehavior::NotDumpable)
            .and_then(|()| rustix::process::dumpable_behavior());
        match set {
            Ok(DumpableBehavior::NotDumpable) => (
                true,
                "PR_SET_DUMPABLE 0: /proc/<pid>/mem, /proc/<pid>/environ and ptrace of reviewflow \
                 and its watchdog are refused to unprivileged processes of its user, stage \
                 children included"
                    .to_string(),
            ),
            Ok(other) => (false, format!("PR_SET_DUMPABLE 0 did not hold: {other:?}")),
            Err(e) => (false, format!("PR_SET_DUMPABLE 0 failed: {e}")),
        }
    }

    /// Re-executes when a secret variable is set (and this is not already the re-executed
    /// process); records what the environment block holds.
    pub fn scrub(this: &mut Isolation, names: &[&str]) {
        let set = reexec::set_variables(names.iter().copied());
        let listed = || {
            set.iter()
                .map(|(n, _)| n.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        if set.is_empty() {
            if !this.reexecuted {
                this.record(
                    SCRUBBED_ENVIRONMENT,
                    true,
                    "no secret variable of the pipeline is set".to_string(),
                );
            }
        } else if this.reexecuted {
            // Only when the file changed between the two loads: not worth a second re-exec.
            this.record(
                SCRUBBED_ENVIRONMENT,
                false,
                format!("{} set after the re-exec", listed()),
            );
        } else {
            let error = reexec::reexec(&set);
            let pid = rustix::process::getpid().as_raw_pid();
            errln!(
                "warning: cannot re-execute reviewflow to take the secrets out of its \
                 environment: {error}; /proc/{pid}/environ keeps {}",
                listed()
            );
            this.record(
                SCRUBBED_ENVIRONMENT,
                false,
                format!("the re-exec failed ({error}): {} stay", listed()),
            );
        }
    }

    pub fn watchdog(this: &mut Isolation, close_in_watchdog: &mut Option<OwnedFd>) {
        let (held, detail) = match watchdog::start(close_in_watchdog) {
            Ok(w) => match w.death_signal_error {
                None => (
                    true,
                    format!(
                        "watchdog pid {} is a child subreaper that ends every process of the \
                         run when reviewflow exits; reviewflow gets SIGTERM if the watchdog dies",
                        w.watchdog.as_raw_pid()
                    ),
                ),
                Some(e) => (
                    false,
                    format!(
                        "watchdog pid {} is a child subreaper, but reviewflow outlives it: {e}",
                        w.watchdog.as_raw_pid()
                    ),
                ),
            },
            Err(e) => (false, format!("no watchdog: {e}")),
        };
        this.record(WATCHDOG, held, detail);
    }

    #[cfg(test)]
    mod tests {
        use super::super::*;

        #[test]
        fn the_handed_over_values_are_found_first() {
            let mut handover = BTreeMap::new();
            handover.insert(b"PATH".to_vec(), SecretValue::from("from-the-memfd"));
            let isolation = Isolation {
                handover: Arc::new(handover),
                ..Isolation::default()
            };
            let env = isolation.env_lookup();
            assert_eq!(env("PATH"), Some(OsString::from("from-the-memfd")));
            assert_eq!(env("HOME"), std::env::var_os("HOME"));
        }

        #[test]
        fn layers_come_in_a_fixed_order() {
            let mut isolation = Isolation::default();
            isolation.record(WATCHDOG, true, "w".into());
            isolation.record(SCRUBBED_ENVIRONMENT, false, "s".into());
            let layers = isolation.process_layers();
            let names: Vec<&str> = layers.iter().map(|(n, _, _)| n.as_str()).collect();
            assert_eq!(names, [SCRUBBED_ENVIRONMENT, NOT_DUMPABLE, WATCHDOG]);
            assert!(!layers[1].1);
        }
    }
}
