//! reviewflow as a child subreaper: what a stage leaves behind (a double fork, a `setsid`
//! daemon) is re-parented to the engine instead of init, found through
//! `/proc/self/task/*/children`, attributed to its stage by the marker every child carries in
//! its environment ([`STAGE_MARKER_VAR`]), and ended with SIGKILL (its descendants and its
//! process group too), then reaped.
//!
//! What is never touched: a child the engine is running ([`process::run`]'s leaders, registered
//! while they live), a helper the engine runs itself in a process group of its own (git, for its
//! timeout: registered the same way through [`spawn_registered`]), and one in the engine's own
//! process group and session without a marker. An orphan without a readable marker of a run going on (it
//! cleared its environment or forged the variable, or the engine may not read it) cannot be
//! attributed: any stage's end ends it.
//!
//! [`process::run`]: crate::exec::process::run
//! [`STAGE_MARKER_VAR`]: super::scope::STAGE_MARKER_VAR

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Pids of the children [`process::run`](crate::exec::process::run) is supervising.
static LEADERS: Mutex<Vec<i32>> = Mutex::new(Vec::new());

fn leaders() -> MutexGuard<'static, Vec<i32>> {
    LEADERS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Held while a child is spawned, so that a sweep never sees it between its start and its
/// registration (before its exec it even carries the engine's environment).
pub(crate) struct Spawning(MutexGuard<'static, Vec<i32>>);

/// Takes the registry for one spawn.
pub(crate) fn spawning() -> Spawning {
    Spawning(leaders())
}

impl Spawning {
    /// Registers the spawned child until the returned guard drops (after it is reaped).
    pub(crate) fn register(mut self, pid: u32) -> Registered {
        let pid = i32::try_from(pid).unwrap_or(0);
        self.0.push(pid);
        Registered(pid)
    }
}

/// A registered child; unregistered on drop.
#[derive(Debug)]
pub struct Registered(i32);

/// Spawns a helper the engine runs itself (git) so that no stage's sweep takes it for an
/// orphan, whatever process group it leads: it is registered like a stage's child until the
/// returned guard drops. Keep the guard until the child has been waited for.
pub fn spawn_registered(
    cmd: &mut std::process::Command,
) -> std::io::Result<(std::process::Child, Registered)> {
    let spawning = spawning();
    let child = cmd.spawn()?;
    let registered = spawning.register(child.id());
    Ok((child, registered))
}

impl Drop for Registered {
    fn drop(&mut self) {
        let mut leaders = leaders();
        if let Some(at) = leaders.iter().position(|&p| p == self.0) {
            leaders.swap_remove(at);
        }
    }
}

/// Marker prefixes of the runs going on in this process: an orphan whose marker matches none
/// (it forged one) counts as unattributed.
static RUNS: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn runs() -> MutexGuard<'static, Vec<String>> {
    RUNS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A run whose stages mark their children with `prefix…`; forgotten on drop.
#[derive(Debug)]
pub struct LiveRun(String);

impl LiveRun {
    /// Records the run marked by `prefix` as going on.
    pub fn start(prefix: impl Into<String>) -> Self {
        let prefix = prefix.into();
        runs().push(prefix.clone());
        Self(prefix)
    }

    pub fn prefix(&self) -> &str {
        &self.0
    }
}

impl Drop for LiveRun {
    fn drop(&mut self) {
        let mut runs = runs();
        if let Some(at) = runs.iter().position(|p| *p == self.0) {
            runs.swap_remove(at);
        }
    }
}

/// Makes the engine the reaper of its descendants' orphans (`PR_SET_CHILD_SUBREAPER`). It stays
/// one for the rest of the process: the flag is per process and harmless after the run.
#[cfg(target_os = "linux")]
pub fn become_subreaper() -> std::io::Result<()> {
    rustix::process::set_child_subreaper(Some(rustix::process::getpid()))
        .map_err(std::io::Error::from)
}

#[cfg(not(target_os = "linux"))]
pub fn become_subreaper() -> std::io::Result<()> {
    Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
}

/// Whose orphans to end.
#[derive(Clone, Copy, Debug)]
pub enum Orphans<'a> {
    /// Those marked with this stage's marker (and the unattributed).
    OfStage(&'a str),
    /// Those whose marker starts with this run's prefix (and the unattributed).
    OfRun(&'a str),
}

impl Orphans<'_> {
    fn owns(&self, marker: &str) -> bool {
        match self {
            Orphans::OfStage(m) => marker == *m,
            Orphans::OfRun(prefix) => marker.starts_with(prefix),
        }
    }
}

/// What a sweep did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Swept {
    /// Live orphans it ended (descendants and process-group members not counted).
    pub ended: usize,
    /// Of those, the ones without a readable marker.
    pub unattributed: usize,
    /// Zombies it reaped (the ended ones included).
    pub reaped: usize,
}

/// Ends `which` orphans and reaps every leftover zombie. Blocking (it reads `/proc` and waits
/// for the killed): call it from `spawn_blocking`.
#[cfg(target_os = "linux")]
pub fn end_orphans(which: Orphans<'_>) -> Swept {
    linux::sweep(which)
}

#[cfg(not(target_os = "linux"))]
pub fn end_orphans(_which: Orphans<'_>) -> Swept {
    Swept::default()
}

#[cfg(target_os = "linux")]
mod linux {
    use std::time::{Duration, Instant};

    use rustix::process::{Pid, Signal, WaitOptions};

    use super::{Orphans, Swept, leaders};
    use crate::exec::confine::scope::STAGE_MARKER_VAR;

    /// Rounds of "kill what is there, reap it, look again": the descendants of a killed orphan
    /// are re-parented to the engine and found by the next round.
    const MAX_ROUNDS: usize = 64;
    /// How long one round waits for the processes it killed to die.
    const REAP_WAIT: Duration = Duration::from_secs(2);

    struct Stat {
        state: u8,
        ppid: i32,
        pgrp: i32,
        session: i32,
    }

    pub(super) fn sweep(which: Orphans<'_>) -> Swept {
        let me = rustix::process::getpid().as_raw_nonzero().get();
        // From /proc, not getpgrp/getsid: in a PID namespace whose session leader is outside
        // (a CI container), the kernel reports 0, which rustix's `Pid` cannot hold; the
        // children's stat lines report the same 0, so comparing like with like still works.
        let (our_pgrp, our_session) = stat(me).map_or((-1, -1), |s| (s.pgrp, s.session));
        let mut swept = Swept::default();
        for _ in 0..MAX_ROUNDS {
            let mut to_reap = Vec::new();
            {
                let live = super::runs().clone();
                let leaders = leaders();
                for pid in children(me) {
                    if leaders.contains(&pid) {
                        continue;
                    }
                    let Some(stat) = stat(pid) else { continue };
                    if stat.ppid != me {
                        continue;
                    }
                    let helper = stat.pgrp == our_pgrp && stat.session == our_session;
                    if stat.state == b'Z' {
                        // A leftover that ended by itself; an exited helper is its owner's to
                        // wait for.
                        if !helper {
                            to_reap.push(pid);
                        }
                        continue;
                    }
                    match marker(pid) {
                        Some(m) if which.owns(&m) => {}
                        // Another stage's, or another run's in this process: theirs to end.
                        Some(m) if live.iter().any(|p| m.starts_with(p.as_str())) => continue,
                        None if helper => continue,
                        // No marker, or a forged one.
                        _ => swept.unattributed += 1,
                    }
                    kill_tree(pid, &leaders, our_pgrp);
                    swept.ended += 1;
                    to_reap.push(pid);
                }
            }
            if to_reap.is_empty() {
                break;
            }
            swept.reaped += reap(&to_reap);
        }
        swept
    }

    /// Every child of `pid` (all its threads'), or of the engine when `pid` is ours.
    fn children(pid: i32) -> Vec<i32> {
        let mut out = Vec::new();
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            return out;
        };
        let mut listed = false;
        for task in tasks.flatten() {
            if let Ok(text) = std::fs::read_to_string(task.path().join("children")) {
                listed = true;
                out.extend(
                    text.split_ascii_whitespace()
                        .filter_map(|p| p.parse::<i32>().ok()),
                );
            }
        }
        if !listed {
            // A kernel without CONFIG_PROC_CHILDREN: look at every process's parent.
            out = scan_for_parent(pid);
        }
        out
    }

    fn scan_for_parent(parent: i32) -> Vec<i32> {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .filter(|&pid| stat(pid).is_some_and(|s| s.ppid == parent))
            .collect()
    }

    /// `/proc/<pid>/stat`: state, parent, process group, session (after the last `)`, since
    /// the command name may hold anything).
    fn stat(pid: i32) -> Option<Stat> {
        let bytes = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
        let close = bytes.iter().rposition(|&b| b == b')')?;
        let rest = std::str::from_utf8(&bytes[close + 1..]).ok()?;
        let mut fields = rest.split_ascii_whitespace();
        let state = *fields.next()?.as_bytes().first()?;
        let ppid = fields.next()?.parse().ok()?;
        let pgrp = fields.next()?.parse().ok()?;
        let session = fields.next()?.parse().ok()?;
        Some(Stat {
            state,
            ppid,
            pgrp,
            session,
        })
    }

    /// The stage marker in `pid`'s environment (the block it was started with).
    fn marker(pid: i32) -> Option<String> {
        let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
        let prefix = format!("{STAGE_MARKER_VAR}=");
        environ
            .split(|&b| b == 0)
            .find_map(|entry| entry.strip_prefix(prefix.as_bytes()))
            .and_then(|v| std::str::from_utf8(v).ok())
            .map(str::to_owned)
    }

    /// SIGKILL to `pid`, its descendants (deepest first) and its process group, unless that
    /// group is the engine's or a running stage's.
    fn kill_tree(pid: i32, leaders: &[i32], our_pgrp: i32) {
        for child in children(pid) {
            kill_tree(child, leaders, our_pgrp);
        }
        if let Some(stat) = stat(pid)
            && stat.pgrp != our_pgrp
            && !leaders.contains(&stat.pgrp)
            && let Some(group) = Pid::from_raw(stat.pgrp)
        {
            let _ = rustix::process::kill_process_group(group, Signal::KILL);
        }
        if let Some(p) = Pid::from_raw(pid) {
            let _ = rustix::process::kill_process(p, Signal::KILL);
        }
    }

    /// Waits (bounded) for each of `pids` to die and reaps it; returns how many were reaped.
    fn reap(pids: &[i32]) -> usize {
        let deadline = Instant::now() + REAP_WAIT;
        let mut reaped = 0;
        let mut pending: Vec<Pid> = pids.iter().filter_map(|&p| Pid::from_raw(p)).collect();
        while !pending.is_empty() {
            pending.retain(
                |&pid| match rustix::process::waitpid(Some(pid), WaitOptions::NOHANG) {
                    Ok(Some(_)) => {
                        reaped += 1;
                        false
                    }
                    Ok(None) => true,
                    // ECHILD: not (or no longer) ours to wait for.
                    Err(_) => false,
                },
            );
            if pending.is_empty() || Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        reaped
    }
}
