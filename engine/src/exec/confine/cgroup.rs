//! A cgroup (v2) per child, so that every process a child starts is known by something it
//! cannot forge or leave: its cgroup. A confined child cannot move itself out (it
//! cannot write `cgroup.procs` anywhere: Landlock, and a read-only `/sys` in its mount
//! namespace), whatever it does with `setsid`, its process group or its environment.
//!
//! Layout, below the cgroup the engine itself runs in:
//!
//! ```text
//! <own cgroup>/reviewflow-<engine pid>/          the process's tree (ended at its exit)
//!     c<n>                                       one per child running, or empty in the pool
//! ```
//!
//! A child is born in its cgroup: `clone3` with `CLONE_INTO_CGROUP` (Linux 5.7) and the
//! descriptor of the cgroup's folder ([`ChildCgroup::dir_fd`]). Where the kernel lacks it, the
//! child joins itself, between its `clone` and its `execve`, by writing `0` to the
//! `cgroup.procs` descriptor the parent opened ([`ChildCgroup::procs_fd`]). Either way nothing
//! it runs can start outside it. Being born there is also what makes the layer cheap: moving a
//! running process between cgroups waits for an RCU grace period (milliseconds) unless the
//! host mounted cgroup2 with `favordynmods`; a birth in the cgroup does not. When the child's leader exits (or whoever supervises it gives up on it),
//! `cgroup.kill` ends everything left in it, and the engine waits until it is empty; a stage
//! therefore ends after every process it started. An emptied cgroup goes back to a pool and is
//! given to a later child: making and removing a cgroup costs the kernel about ten times more
//! than emptying one (docs/performance.md). Where cgroup v2 is
//! not mounted or not writable (a container with a read-only `/sys/fs/cgroup`, a user without a
//! delegated cgroup), the layer is reported missing and the subreaper's sweep is what remains
//! (`reaper`).

use std::io;
use std::os::fd::{AsRawFd as _, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long a kill waits for its cgroup to empty before it says so.
const EMPTY_WAIT: Duration = Duration::from_secs(5);

/// The prefix of a process's tree in the engine's own cgroup.
pub const TREE_PREFIX: &str = "reviewflow-";

/// Where cgroup v2 lets this process make cgroups, or why not.
#[derive(Debug, Clone)]
pub enum Availability {
    /// The process's tree (created).
    Held(PathBuf),
    Missing(String),
}

/// The process's tree, once made.
static TREE: OnceLock<Availability> = OnceLock::new();

/// The process's tree, made on first use. It is ended (what is in it killed, then removed) when
/// the process exits normally, whoever started it; `reviewflow run`'s watchdog ends it too when
/// the process did not exit so (a SIGKILL).
pub fn availability() -> &'static Availability {
    TREE.get_or_init(|| match own_cgroup() {
        Ok(own) => {
            let tree = own.join(format!("{TREE_PREFIX}{}", std::process::id()));
            match make_tree(&tree) {
                Ok(()) => {
                    // SAFETY: registers a plain function without arguments, run by `exit`.
                    unsafe { libc::atexit(end_tree_at_exit) };
                    Availability::Held(tree)
                }
                Err(e) => Availability::Missing(format!(
                    "cannot create a cgroup under {}: {e}",
                    own.display()
                )),
            }
        }
        Err(why) => Availability::Missing(why),
    })
}

/// Run by `exit`: nothing the process started outlives it in its tree, and no empty cgroup is
/// left behind. A child that exits without `exit` (`_exit`, `execve`) does not run it.
extern "C" fn end_tree_at_exit() {
    if let Some(Availability::Held(tree)) = TREE.get() {
        let _ = kill_and_remove(tree, true);
    }
}

fn make_tree(tree: &Path) -> io::Result<()> {
    match std::fs::create_dir(tree) {
        Ok(()) => {}
        // A tree of a process whose pid this one reuses: empty it first.
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            kill_and_remove(tree, false)?;
        }
        Err(e) => return Err(e),
    }
    // `cgroup.kill` (Linux 5.14) is what makes the layer: without it nothing ends a group whole.
    if !tree.join("cgroup.kill").exists() {
        let _ = std::fs::remove_dir(tree);
        return Err(io::Error::other(
            "the kernel has no cgroup.kill (Linux 5.14)",
        ));
    }
    Ok(())
}

/// The path of the cgroup this process runs in, in the cgroup v2 hierarchy as mounted here.
fn own_cgroup() -> Result<PathBuf, String> {
    let cgroup = std::fs::read_to_string("/proc/self/cgroup")
        .map_err(|e| format!("cannot read /proc/self/cgroup: {e}"))?;
    let own = cgroup
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .ok_or("this process is in no cgroup v2 hierarchy")?;
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| format!("cannot read /proc/self/mountinfo: {e}"))?;
    for line in mountinfo.lines() {
        // `id parent major:minor root mount-point options [optional…] - fstype source super`
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        if right.split_whitespace().next() != Some("cgroup2") {
            continue;
        }
        let fields: Vec<&str> = left.split_whitespace().collect();
        let (Some(root), Some(point)) = (fields.get(3), fields.get(4)) else {
            continue;
        };
        if fields
            .get(5)
            .is_some_and(|o| o.split(',').any(|o| o == "ro"))
        {
            return Err(format!("cgroup v2 is mounted read-only at {point}"));
        }
        // The mount shows the hierarchy from `root`: the own cgroup must lie beneath it.
        let Some(rel) = Path::new(own).strip_prefix(unescape(root)).ok() else {
            continue;
        };
        return Ok(Path::new(&unescape(point)).join(rel));
    }
    Err("cgroup v2 is not mounted (looked for it in /proc/self/mountinfo, also at /sys/fs/cgroup/unified)".into())
}

/// mountinfo escapes space, tab, newline and backslash as `\ooo`.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && let Some(oct) = bytes.get(i + 1..i + 4)
            && let Ok(s) = std::str::from_utf8(oct)
            && let Ok(v) = u8::from_str_radix(s, 8)
        {
            out.push(v);
            i += 4;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Makes `dir` in the process's `tree`, and the tree when it is missing: it is removed whenever
/// no run of the process is going on ([`remove_idle_tree`]), possibly between the two `mkdir`s.
fn make_in_tree(tree: &Path, dir: &Path) -> io::Result<()> {
    let mut tries = 0;
    loop {
        match std::fs::create_dir(tree) {
            Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(e),
            _ => {}
        }
        match std::fs::create_dir(dir) {
            Err(e) if e.kind() == io::ErrorKind::NotFound && tries < 8 => tries += 1,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Ok(()),
            other => return other,
        }
    }
}

/// One child's cgroup: the child joins it before its `execve`.
#[derive(Debug)]
pub struct ChildCgroup {
    dir: PathBuf,
    /// Taken when the cgroup goes back to the pool.
    fds: Option<Fds>,
    /// Whether `cgroup.kill` was written: such a cgroup is not pooled (below).
    killed: AtomicBool,
}

/// The cgroup's folder (for `CLONE_INTO_CGROUP`), its `cgroup.procs` (to join by writing), and
/// its `cgroup.events` and `cgroup.stat`, read again at offset 0 whenever the engine asks
/// whether anything is left in it: opened once, for as long as the cgroup is pooled, since
/// each look by path costs a walk of the cgroup file system and four system calls more.
#[derive(Debug)]
struct Fds {
    dir: OwnedFd,
    procs: OwnedFd,
    events: OwnedFd,
    stat: OwnedFd,
}

impl Fds {
    fn open(dir: &Path) -> io::Result<Self> {
        use rustix::fs::{Mode, OFlags, open};
        let read = |name: &str| {
            open(
                dir.join(name),
                OFlags::RDONLY | OFlags::CLOEXEC,
                Mode::empty(),
            )
        };
        Ok(Self {
            dir: open(
                dir,
                OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )?,
            procs: open(
                dir.join("cgroup.procs"),
                OFlags::WRONLY | OFlags::CLOEXEC,
                Mode::empty(),
            )?,
            events: read("cgroup.events")?,
            stat: read("cgroup.stat")?,
        })
    }

    /// Whether the cgroup or one beneath it holds a process: as [`populated`], by descriptor
    /// (unknown is taken to hold one). A cgroup removed since (`ENODEV`) holds nothing.
    fn populated(&self) -> bool {
        match has_line(&self.events, "populated 1") {
            Ok(populated) => populated,
            Err(rustix::io::Errno::NODEV) => false,
            Err(_) => true,
        }
    }

    /// Whether a cgroup was made beneath (a child cannot: its view has no `/sys/fs/cgroup`; the
    /// fast way back to the pool checks anyway). Unknown is taken to have one.
    fn has_descendants(&self) -> bool {
        match has_line(&self.stat, "nr_descendants 0") {
            Ok(none) => !none,
            Err(rustix::io::Errno::NODEV) => false,
            Err(_) => true,
        }
    }

    /// Whether the cgroup still exists.
    fn alive(&self) -> bool {
        has_line(&self.events, "").is_ok()
    }
}

/// Whether the file open at `fd` (a cgroup's `cgroup.events` or `cgroup.stat`, read from its
/// start: both are a few short lines) has the line `line`.
fn has_line(fd: &OwnedFd, line: &str) -> rustix::io::Result<bool> {
    let mut buf = [0u8; 1024];
    let n = rustix::io::pread(fd, &mut buf, 0)?;
    Ok(buf
        .get(..n)
        .unwrap_or_default()
        .split(|b| *b == b'\n')
        .any(|l| l == line.as_bytes()))
}

impl ChildCgroup {
    /// A cgroup for a new child: an empty one from the pool, or a new one in the process's
    /// tree. `None` when the layer is missing.
    pub fn create() -> io::Result<Option<Self>> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let Availability::Held(tree) = availability() else {
            return Ok(None);
        };
        while let Some((dir, fds)) = pool().pop() {
            // Emptied before it was pooled; a tree removed meanwhile took it along.
            if fds.alive() {
                return Ok(Some(Self::new(dir, fds)));
            }
        }
        let dir = tree.join(format!("c{}", NEXT.fetch_add(1, Ordering::Relaxed)));
        make_in_tree(tree, &dir)?;
        match Fds::open(&dir) {
            Ok(fds) => Ok(Some(Self::new(dir, fds))),
            Err(e) => {
                let _ = std::fs::remove_dir(&dir);
                Err(e)
            }
        }
    }

    fn new(dir: PathBuf, fds: Fds) -> Self {
        Self {
            dir,
            fds: Some(fds),
            killed: AtomicBool::new(false),
        }
    }

    /// The cgroup's folder, for `clone3`'s `CLONE_INTO_CGROUP`.
    pub(crate) fn dir_fd(&self) -> RawFd {
        self.fds.as_ref().map_or(-1, |f| f.dir.as_raw_fd())
    }

    /// The descriptor the child writes `0` to, to join, where it could not be born inside.
    pub(crate) fn procs_fd(&self) -> RawFd {
        self.fds.as_ref().map_or(-1, |f| f.procs.as_raw_fd())
    }

    /// Whether a process is left in the cgroup or beneath it.
    fn populated(&self) -> bool {
        self.fds
            .as_ref()
            .map_or_else(|| populated(&self.dir), Fds::populated)
    }

    /// Sends `signal` to every process in the cgroup (SIGKILL: `cgroup.kill`, which no process
    /// can dodge by forking).
    pub(crate) fn signal(&self, signal: rustix::process::Signal) {
        if signal == rustix::process::Signal::KILL {
            if self.populated() {
                self.killed.store(true, Ordering::Relaxed);
                let _ = std::fs::write(self.dir.join("cgroup.kill"), "1");
            }
            return;
        }
        for pid in pids(&self.dir) {
            if let Some(pid) = rustix::process::Pid::from_raw(pid) {
                let _ = rustix::process::kill_process(pid, signal);
            }
        }
    }

    /// Ends everything left in the cgroup and gives it back to the pool (removes it, when it
    /// would not empty). Blocking.
    pub(crate) fn end(self) {
        drop(self);
    }

    /// [`Self::end`] at once when nothing is left in the cgroup (the usual case: a few system
    /// calls, no wait); otherwise the cgroup back, to end where blocking is allowed.
    pub(crate) fn end_if_empty(self) -> Option<Self> {
        if self.killed.load(Ordering::Relaxed) || self.populated() {
            Some(self)
        } else {
            drop(self);
            None
        }
    }
}

impl Drop for ChildCgroup {
    fn drop(&mut self) {
        // A killed cgroup is not given to another child: the kernel (at least to 6.18) compares
        // a `CLONE_INTO_CGROUP` child's kill count with its parent's cgroup's, and kills it at
        // birth when they differ. Nothing is killed when nothing is left, the usual case: then
        // two reads by descriptor decide, and the cgroup goes back to the pool.
        let killed = self.killed.load(Ordering::Relaxed);
        let Some(fds) = self.fds.take() else {
            return;
        };
        if !killed && !fds.populated() && !fds.has_descendants() {
            pool().push((std::mem::take(&mut self.dir), fds));
            return;
        }
        if let Ok(false) = kill_and_remove(&self.dir, false)
            && !killed
        {
            pool().push((std::mem::take(&mut self.dir), fds));
            return;
        }
        drop(fds);
        let _ = kill_and_remove(&self.dir, true);
    }
}

/// Empty cgroups (and their `cgroup.procs`), ready for the next child.
fn pool() -> std::sync::MutexGuard<'static, Vec<(PathBuf, Fds)>> {
    static POOL: std::sync::Mutex<Vec<(PathBuf, Fds)>> = std::sync::Mutex::new(Vec::new());
    POOL.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The pids in `dir` (its own `cgroup.procs`, not its descendants').
fn pids(dir: &Path) -> Vec<i32> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .split_ascii_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// How many processes `dir` and its descendants hold.
fn count(dir: &Path) -> usize {
    let mut n = pids(dir).len();
    for sub in subgroups(dir) {
        n += count(&sub);
    }
    n
}

fn subgroups(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect()
}

/// Whether `dir`'s `cgroup.events` says no process is left in it or beneath.
/// Whether `dir` or a cgroup beneath it holds a process. A `cgroup.events` that cannot be read
/// (no descriptor left, a kernel that refuses) says nothing, and is taken to hold one: what is
/// not known to have ended is killed and waited for, never pooled or left (default deny).
fn populated(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join("cgroup.events"))
        .map_or(true, |t| t.lines().any(|l| l == "populated 1"))
}

/// Kills every process in `dir` and beneath (`cgroup.kill`), waits until none is left (a killed
/// process leaves its cgroup when it exits, before it is reaped) and removes the cgroups beneath
/// it, the deepest first, and `dir` itself when `remove_top`.
/// Returns whether it had to kill.
pub fn kill_and_remove(dir: &Path, remove_top: bool) -> io::Result<bool> {
    if !dir.exists() {
        return Ok(false);
    }
    let killed = populated(dir);
    if killed {
        std::fs::write(dir.join("cgroup.kill"), "1")?;
    }
    let deadline = Instant::now() + EMPTY_WAIT;
    // A cgroup removed meanwhile (the watchdog ends the run's) holds nothing.
    while dir.exists() && populated(dir) {
        if Instant::now() >= deadline {
            return Err(io::Error::other(format!(
                "{} process(es) in {} did not end after SIGKILL",
                count(dir),
                dir.display()
            )));
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    remove_below(dir)?;
    if remove_top {
        match std::fs::remove_dir(dir) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    Ok(killed)
}

fn remove_below(dir: &Path) -> io::Result<()> {
    for sub in subgroups(dir) {
        remove_below(&sub)?;
        match std::fs::remove_dir(&sub) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    Ok(())
}

/// Removes the process's tree when it holds nothing (no stage of any run is going on): a
/// process that ends without a watchdog leaves no empty cgroup behind.
pub fn remove_idle_tree() {
    if let Availability::Held(tree) = availability() {
        // The pooled cgroups are empty: removed with the tree when nothing else is in it.
        let busy = std::fs::read_dir(tree)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .count();
        let mut pool = pool();
        if busy > pool.len() {
            return;
        }
        for (dir, _fds) in pool.drain(..) {
            let _ = std::fs::remove_dir(&dir);
        }
        // EBUSY while a stage's group is in it: that stage's run removes it later.
        let _ = std::fs::remove_dir(tree);
    }
}

/// The tree of the reviewflow process `pid` below this process's own cgroup, if there is one:
/// what the watchdog ends when its child has exited.
pub fn tree_of(pid: u32) -> Option<PathBuf> {
    let tree = own_cgroup().ok()?.join(format!("{TREE_PREFIX}{pid}"));
    tree.is_dir().then_some(tree)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_fields_are_unescaped() {
        assert_eq!(unescape(r"/sys/fs/a\040b"), "/sys/fs/a b");
        assert_eq!(unescape(r"/x\\"), r"/x\\");
        assert_eq!(unescape("/plain"), "/plain");
    }

    #[test]
    fn a_cgroup_whose_events_cannot_be_read_is_taken_to_hold_a_process() {
        let dir = tempfile::tempdir().expect("a folder");
        assert!(
            populated(dir.path()),
            "no cgroup.events: unknown, so populated"
        );
        std::fs::write(dir.path().join("cgroup.events"), "populated 0\nfrozen 0\n").expect("write");
        assert!(!populated(dir.path()));
        std::fs::write(dir.path().join("cgroup.events"), "populated 1\nfrozen 0\n").expect("write");
        assert!(populated(dir.path()));
    }

    /// The process's tree; `None` (said, and a failure under `CI=true`, where the layer is
    /// there) when the layer is missing.
    fn tree() -> Option<&'static Path> {
        match availability() {
            Availability::Held(tree) => Some(tree),
            Availability::Missing(why) => {
                assert!(
                    std::env::var_os("CI").is_none(),
                    "the cgroup layer is missing on CI: {why}"
                );
                println!("SKIPPED-LAYER cgroup: {why}");
                None
            }
        }
    }

    /// Run in a process of its own by the test below: makes the tree, pools a child's cgroup
    /// with a process left in it, and returns (the process exits as a test binary does).
    #[test]
    #[ignore = "run by a_process_that_exits_leaves_no_cgroup_behind"]
    fn make_a_tree_and_exit() {
        if std::env::var_os(EXIT_CHILD).is_none() || tree().is_none() {
            return;
        }
        let Ok(Some(child)) = ChildCgroup::create() else {
            panic!("no cgroup for a child, though the layer holds");
        };
        // Not holding the test's output open: the parent test reads it to its end.
        #[expect(
            clippy::zombie_processes,
            reason = "left on purpose: the process's exit must end it"
        )]
        let sleeper = std::process::Command::new("setsid")
            .args(["sleep", "300"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn");
        std::fs::write(child.dir.join("cgroup.procs"), sleeper.id().to_string()).expect("join");
        // Neither ended nor pooled: the process leaves both as they are.
        std::mem::forget(child);
        println!("LEFT {}", sleeper.id());
    }

    const EXIT_CHILD: &str = "REVIEWFLOW_TEST_EXIT_CHILD";

    /// A process of the engine that exits (a test binary, a program built on the engine) takes
    /// its tree with it, and what was still in it: the watchdog of `reviewflow run` is not the
    /// only one that ends it.
    #[test]
    fn a_process_that_exits_leaves_no_cgroup_behind() {
        let Some(own) = tree().and_then(Path::parent).map(Path::to_path_buf) else {
            return;
        };
        let out = std::process::Command::new(std::env::current_exe().expect("this test binary"))
            .args([
                "--exact",
                "exec::confine::cgroup::tests::make_a_tree_and_exit",
            ])
            .args(["--ignored", "--nocapture", "--test-threads=1"])
            .env(EXIT_CHILD, "1")
            .output()
            .expect("run the child test");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{text}");
        let left: u32 = text
            .lines()
            .find_map(|l| l.split("LEFT ").nth(1))
            .and_then(|p| p.trim().parse().ok())
            .unwrap_or_else(|| panic!("the child test did not run: {text}"));
        // Whichever tree below the own cgroup still holds it (the child process's is named for
        // its pid, which this test does not know).
        let tree = std::fs::read_dir(&own)
            .expect("own cgroup")
            .flatten()
            .map(|e| e.path())
            .find(|p| {
                std::fs::read_to_string(p.join("cgroup.procs"))
                    .is_ok_and(|t| t.lines().any(|l| l.trim() == left.to_string()))
                    || subgroups(p).iter().any(|s| {
                        std::fs::read_to_string(s.join("cgroup.procs"))
                            .is_ok_and(|t| t.lines().any(|l| l.trim() == left.to_string()))
                    })
            });
        assert_eq!(tree, None, "a tree is left holding the process {left}");
        assert!(
            !Path::new(&format!("/proc/{left}")).exists()
                || std::fs::read_to_string(format!("/proc/{left}/stat"))
                    .is_ok_and(|s| s.contains(") Z ")),
            "the process {left} it held outlived the process that made it"
        );
    }

    #[test]
    fn a_childs_cgroup_ends_what_left_its_process_group() {
        if tree().is_none() {
            return;
        }
        let Ok(Some(child)) = ChildCgroup::create() else {
            panic!("no cgroup for a child, though the layer holds");
        };
        let dir = child.dir.clone();
        // A process that leaves its session and group, placed in the child's cgroup.
        let mut sleeper = std::process::Command::new("setsid")
            .args(["sleep", "300"])
            .spawn()
            .expect("spawn");
        std::fs::write(dir.join("cgroup.procs"), sleeper.id().to_string()).expect("join");
        assert_eq!(count(&dir), 1);
        child.end();
        let status = sleeper.wait().expect("wait");
        assert!(!status.success());
        assert_eq!(count(&dir), 0, "emptied, and pooled");
    }

    /// What the pool's fast path reads by descriptor says what the cgroup holds now: a process
    /// in it, a cgroup beneath it, and nothing once it was removed (`ENODEV`).
    #[test]
    fn a_cgroups_descriptors_say_what_it_holds_now() {
        let Some(tree) = tree() else {
            return;
        };
        let dir = tree.join(format!("t{}", std::process::id()));
        let _ = kill_and_remove(&dir, true);
        make_in_tree(tree, &dir).expect("a cgroup");
        let fds = Fds::open(&dir).expect("its descriptors");
        assert!(fds.alive() && !fds.populated() && !fds.has_descendants());

        std::fs::create_dir(dir.join("sub")).expect("a cgroup beneath");
        assert!(fds.has_descendants(), "a cgroup beneath is seen");
        std::fs::remove_dir(dir.join("sub")).expect("removed");
        assert!(!fds.has_descendants());

        let mut sleeper = std::process::Command::new("sleep")
            .arg("300")
            .spawn()
            .expect("spawn");
        std::fs::write(dir.join("cgroup.procs"), sleeper.id().to_string()).expect("join");
        assert!(fds.populated(), "a process in it is seen");
        assert!(
            kill_and_remove(&dir, false).expect("killed"),
            "it had to kill"
        );
        let _ = sleeper.wait();
        assert!(!fds.populated(), "emptied");

        std::fs::remove_dir(&dir).expect("removed");
        assert!(!fds.alive(), "a removed cgroup is not alive");
        assert!(
            !fds.populated() && !fds.has_descendants(),
            "and holds nothing"
        );
    }
}
