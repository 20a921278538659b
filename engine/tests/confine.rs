//! Confinement of children, tried as an attacker would: a child reads only what it is granted
//! (not a sibling's folder, not `.reviewflow`, not a home folder, not its parent's environ),
//! writes only its own folder, gains nothing from setuid programs, reaches only the TCP ports its
//! stage declares, and what it leaves behind (`setsid`) is ended with its stage and its run.
//!
//! Where the kernel lacks a layer, a test prints why it is skipped and asserts that the run's
//! isolation report says the layer is missing.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reviewflow_engine::exec::confine::{
    ABI_NETWORK, ABI_SCOPES, ConfineSpec, Isolation, Layer, Level, kernel, layer,
};
use reviewflow_engine::exec::process::{
    self, ChildResult, ChildSpec, ProcessError, Stream, minimal_path,
};
use reviewflow_engine::exec::redact::Redactor;
use reviewflow_engine::run::{
    CancelReason, ConsoleMode, Implementations, Outcome, RunError, RunOptions, RunReport,
    RunStatus, cancel_pair, execute,
};
use reviewflow_engine::syntax::Limits;
use reviewflow_engine::{Registry, Source, compile};
use tempfile::TempDir;

/// Whether the kernel has Landlock ABI `abi`; when not, prints why the test is skipped and
/// checks that the isolation report says `layer` is missing.
fn kernel_has(abi: u32, layer_name: &str, test: &str) -> bool {
    let have = kernel().landlock_abi;
    if have >= abi {
        return true;
    }
    eprintln!(
        "skipped {test}: the kernel's Landlock ABI is {have}, {abi} is needed; checking the report instead"
    );
    let isolation = Isolation::assess(Level::BestEffort, &kernel(), true, true, &[]);
    let layer = isolation.layer(layer_name).expect("the layer is reported");
    assert!(!layer.held, "{layer:?}");
    assert!(!layer.detail.is_empty());
    false
}

/// A checkout with a `.reviewflow` secret, a sibling folder, a home folder with credentials,
/// and a work folder, all under one temporary folder.
struct Tree {
    dir: TempDir,
}

impl Tree {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let tree = Self { dir };
        for (path, text) in [
            ("checkout/README", "readable\n"),
            ("checkout/src/lib.rs", "fn main() {}\n"),
            (
                "checkout/.reviewflow/runs/r1/outputs/seal/key",
                "SECRET-RUN-OUTPUT\n",
            ),
            ("sibling/secret", "SECRET-SIBLING\n"),
            (
                "home/.git-credentials",
                "https://user:SECRET-HOME@example.com\n",
            ),
            ("work/.keep", ""),
        ] {
            let p = tree.path(path);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(p, text).expect("write");
        }
        tree
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// What a stage's child gets: the checkout readable without `.reviewflow`, the home
    /// hidden, its own folder.
    fn confine(&self) -> ConfineSpec {
        ConfineSpec::new()
            .read(self.path("checkout"))
            .hide(self.path("checkout/.reviewflow"))
            .hide(self.path("home"))
            .work(self.path("work"))
    }
}

type Lines = Arc<Mutex<Vec<(Stream, String)>>>;

/// Runs `sh -c script` confined by `confine`, in `cwd`.
async fn sh(
    script: &str,
    cwd: &Path,
    confine: Option<ConfineSpec>,
) -> (ChildResult, Vec<String>, Vec<String>) {
    let mut spec = ChildSpec::new("/bin/sh", cwd)
        .arg("-c")
        .arg(script)
        .env("PATH", minimal_path());
    spec.timeout = Some(Duration::from_secs(60));
    spec.grace = Duration::from_millis(200);
    spec.confine = confine;
    let lines: Lines = Arc::default();
    let sink = lines.clone();
    let redactor = Redactor::new(std::iter::empty::<(&str, &str)>()).expect("redactor");
    let result = process::run(spec, &redactor, std::future::pending(), move |s, l| {
        sink.lock()
            .expect("lock")
            .push((s, String::from_utf8_lossy(&l).into_owned()))
    })
    .await
    .expect("the child runs");
    let lines = lines.lock().expect("lock").clone();
    let of = |stream| {
        lines
            .iter()
            .filter(|(s, _)| *s == stream)
            .map(|(_, l)| l.clone())
            .collect()
    };
    (result, of(Stream::Stdout), of(Stream::Stderr))
}

/// A script line that prints `name:ok` or `name:denied` for a command.
fn probe(name: &str, command: &str) -> String {
    format!("if {command} >/dev/null 2>&1; then echo {name}:ok; else echo {name}:denied; fi\n")
}

#[tokio::test]
async fn a_confined_child_reads_the_checkout_but_not_reviewflow_a_sibling_or_a_home() {
    if !kernel_has(1, layer::LANDLOCK_FILESYSTEM, "filesystem confinement") {
        return;
    }
    let tree = Tree::new();
    let checkout = tree.path("checkout");
    let script = [
        probe("readme", "cat README"),
        probe("nested", "cat src/lib.rs"),
        probe("list", "ls ."),
        probe("reviewflow", "cat .reviewflow/runs/r1/outputs/seal/key"),
        probe(
            "sibling",
            &format!("cat {}", tree.path("sibling/secret").display()),
        ),
        probe(
            "home",
            &format!("cat {}", tree.path("home/.git-credentials").display()),
        ),
        probe("tmp", "ls /tmp"),
        probe("system", "cat /etc/passwd"),
        probe("own", "echo x > \"$TMPDIR/own\" && cat \"$TMPDIR/own\""),
    ]
    .concat();
    let (result, out, _) = sh(&script, &checkout, Some(tree.confine())).await;
    assert!(result.outcome.success(), "{result:?}");
    assert_eq!(
        out,
        [
            "readme:ok",
            "nested:ok",
            "list:ok",
            "reviewflow:denied",
            "sibling:denied",
            "home:denied",
            "tmp:denied",
            "system:ok",
            "own:ok",
        ]
    );
    // The same child unconfined reads all of it: the denials above are the confinement's.
    let (_, out, _) = sh(&script, &checkout, None).await;
    assert!(out.contains(&"sibling:ok".to_string()), "{out:?}");
}

#[tokio::test]
async fn a_symlink_in_the_checkout_does_not_grant_its_target() {
    if !kernel_has(1, layer::LANDLOCK_FILESYSTEM, "filesystem confinement") {
        return;
    }
    let tree = Tree::new();
    let checkout = tree.path("checkout");
    // A change could add this link; the checkout is granted entry by entry (it holds a hidden
    // `.reviewflow`), and a link is never turned into a rule on its target.
    std::os::unix::fs::symlink(tree.path("home"), checkout.join("evil")).expect("symlink");
    let script = probe("through-link", "cat evil/.git-credentials");
    let (_, out, _) = sh(&script, &checkout, Some(tree.confine())).await;
    assert_eq!(out, ["through-link:denied"]);
}

/// Runs `program` (no shell around it) confined by `confine`, in `cwd`.
async fn exec(
    program: &Path,
    cwd: &Path,
    confine: ConfineSpec,
) -> Result<(ChildResult, Vec<String>), ProcessError> {
    let mut spec = ChildSpec::new(program, cwd).env("PATH", minimal_path());
    spec.timeout = Some(Duration::from_secs(60));
    spec.confine = Some(confine);
    let lines: Lines = Arc::default();
    let sink = lines.clone();
    let redactor = Redactor::new(std::iter::empty::<(&str, &str)>()).expect("redactor");
    let result = process::run(spec, &redactor, std::future::pending(), move |s, l| {
        sink.lock()
            .expect("lock")
            .push((s, String::from_utf8_lossy(&l).into_owned()))
    })
    .await?;
    let lines = lines
        .lock()
        .expect("lock")
        .iter()
        .map(|(_, l)| l.clone())
        .collect();
    Ok((result, lines))
}

#[tokio::test]
async fn a_program_reads_its_installation_but_not_through_a_link_in_the_checkout() {
    if !kernel_has(1, layer::LANDLOCK_FILESYSTEM, "filesystem confinement") {
        return;
    }
    let tree = Tree::new();
    // An installation outside every granted folder, like ~/.pyenv/versions/3.12.1.
    let tool = tree.path("inst/bin/tool");
    std::fs::create_dir_all(tree.path("inst/bin")).expect("mkdir");
    std::fs::create_dir_all(tree.path("inst/share")).expect("mkdir");
    std::fs::write(tree.path("inst/share/data"), "INSTALLED-DATA\n").expect("write");
    std::fs::write(
        &tool,
        format!(
            "#!/bin/sh\ncat {}\n",
            tree.path("inst/share/data").display()
        ),
    )
    .expect("write");
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let checkout = tree.path("checkout");
    let (result, out) = exec(&tool, &checkout, tree.confine())
        .await
        .expect("it starts");
    assert!(result.outcome.success(), "{result:?} {out:?}");
    assert_eq!(out, ["INSTALLED-DATA"]);
    // The same program reached through a link the change could add is not granted at all: the
    // kernel refuses to execute it.
    std::os::unix::fs::symlink(&tool, checkout.join("tool")).expect("symlink");
    let refused = exec(&checkout.join("tool"), &checkout, tree.confine()).await;
    assert!(
        matches!(&refused, Err(ProcessError::Spawn { source, .. })
            if source.kind() == std::io::ErrorKind::PermissionDenied),
        "{refused:?}"
    );
}

#[tokio::test]
async fn a_write_outside_its_folder_fails_with_the_kernels_error_in_its_output() {
    if !kernel_has(1, layer::LANDLOCK_FILESYSTEM, "filesystem confinement") {
        return;
    }
    let tree = Tree::new();
    let checkout = tree.path("checkout");
    let (result, _, err) = sh("echo x > planted.txt", &checkout, Some(tree.confine())).await;
    assert!(!result.outcome.success());
    assert!(
        err.iter().any(|l| l.contains("Permission denied")),
        "the program's own error says why: {err:?}"
    );
    assert!(!checkout.join("planted.txt").exists());
    // Its own folder is writable, and is its TMPDIR.
    let (result, out, _) = sh(
        "f=$(mktemp) && echo y > \"$f\" && echo \"$TMPDIR\"",
        &checkout,
        Some(tree.confine()),
    )
    .await;
    assert!(result.outcome.success(), "{result:?}");
    assert!(
        out.iter()
            .any(|l| l.starts_with(tree.path("work").to_str().expect("utf-8"))),
        "{out:?}"
    );
}

#[tokio::test]
async fn a_child_cannot_read_its_parents_environ_even_with_proc_allowed() {
    if !kernel_has(1, layer::LANDLOCK_FILESYSTEM, "filesystem confinement") {
        return;
    }
    let tree = Tree::new();
    let checkout = tree.path("checkout");
    let script = [
        probe("parent-environ", "cat /proc/$PPID/environ"),
        probe("parent-mem", "head -c1 /proc/$PPID/mem"),
        probe("own-status", "cat /proc/$$/status"),
    ]
    .concat();
    let (_, out, _) = sh(&script, &checkout, Some(tree.confine())).await;
    assert_eq!(
        out,
        [
            "parent-environ:denied",
            "parent-mem:denied",
            "own-status:ok"
        ]
    );
    // With all of /proc readable, Landlock's ptrace rule still keeps the parent's entries shut:
    // the parent is outside the child's sandbox.
    let mut with_proc = tree.confine();
    with_proc.proc = true;
    let (_, out, _) = sh(&script, &checkout, Some(with_proc)).await;
    assert_eq!(
        out,
        [
            "parent-environ:denied",
            "parent-mem:denied",
            "own-status:ok"
        ]
    );
}

/// A field of `/proc/self/status` as the child printed it.
fn status_field<'a>(lines: &'a [String], name: &str) -> Option<&'a str> {
    lines
        .iter()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .map(str::trim)
}

#[tokio::test]
async fn setuid_programs_and_sudo_gain_nothing() {
    let tree = Tree::new();
    let checkout = tree.path("checkout");
    // Without Landlock the privilege steps still apply.
    let confine = (kernel().landlock_abi > 0).then(|| tree.confine());
    // `exec`: the program the stage starts reads its own /proc entry (its children do not).
    let (_, out, _) = sh("exec cat /proc/self/status", &checkout, confine.clone()).await;
    assert_eq!(status_field(&out, "NoNewPrivs"), Some("1"), "{out:?}");
    assert_eq!(status_field(&out, "CapEff"), Some("0000000000000000"));
    assert_eq!(status_field(&out, "CapPrm"), Some("0000000000000000"));
    assert_eq!(status_field(&out, "CapAmb"), Some("0000000000000000"));
    if kernel().root {
        // As root, the bounding set is empty too: no exec can grant a capability back.
        assert_eq!(status_field(&out, "CapBnd"), Some("0000000000000000"));
        // A setuid-root program (a copy of cat, in the child's own folder) gains nothing.
        let cat = tree.path("work/suid-cat");
        std::fs::copy("/bin/cat", &cat).expect("copy cat");
        std::fs::set_permissions(&cat, std::fs::Permissions::from_mode(0o4755)).expect("chmod");
        let (_, out, _) = sh(
            &format!("exec {} /proc/self/status", cat.display()),
            &checkout,
            confine.clone(),
        )
        .await;
        assert_eq!(status_field(&out, "NoNewPrivs"), Some("1"), "{out:?}");
        assert_eq!(status_field(&out, "CapEff"), Some("0000000000000000"));
    } else {
        eprintln!("not root: the setuid-root part of this test needs root to create the program");
    }
    let sudo = ["/usr/bin/sudo", "/bin/sudo"]
        .into_iter()
        .find(|p| Path::new(p).exists());
    match sudo {
        Some(sudo) => {
            let (_, out, _) = sh(
                &format!("{sudo} -n cat /proc/$$/status || echo sudo:refused"),
                &checkout,
                confine,
            )
            .await;
            // Either sudo refuses (it cannot become root under no-new-privileges) or, already
            // root, it runs without a single capability.
            assert!(
                out.contains(&"sudo:refused".to_string())
                    || status_field(&out, "CapEff") == Some("0000000000000000"),
                "{out:?}"
            );
        }
        None => eprintln!("sudo is not installed: its part of this test is skipped"),
    }
}

/// Connects to `port` with bash's `/dev/tcp` (no program to find, no file to open).
fn connect(port: u16) -> String {
    probe(
        &format!("connect-{port}"),
        &format!("bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port}'"),
    )
}

#[tokio::test]
async fn only_declared_tcp_ports_can_be_reached() {
    if !kernel_has(ABI_NETWORK, layer::LANDLOCK_NETWORK, "TCP rules") {
        return;
    }
    let declared = TcpListener::bind("127.0.0.1:0").expect("listen");
    let other = TcpListener::bind("127.0.0.1:0").expect("listen");
    let (declared_port, other_port) = (
        declared.local_addr().expect("addr").port(),
        other.local_addr().expect("addr").port(),
    );
    let tree = Tree::new();
    let script = [
        connect(declared_port),
        connect(other_port),
        probe(
            "listen",
            "python3 -c 'import socket; socket.socket().bind((\"127.0.0.1\", 0))'",
        ),
    ]
    .concat();
    let confine = tree.confine().connect(declared_port);
    let (_, out, _) = sh(&script, &tree.path("checkout"), Some(confine)).await;
    assert_eq!(
        out,
        [
            format!("connect-{declared_port}:ok"),
            format!("connect-{other_port}:denied"),
            "listen:denied".to_string(),
        ]
    );
    // Nothing declared: no connection at all.
    let (_, out, _) = sh(
        &connect(declared_port),
        &tree.path("checkout"),
        Some(tree.confine()),
    )
    .await;
    assert_eq!(out, [format!("connect-{declared_port}:denied")]);
}

#[tokio::test]
async fn a_confined_child_cannot_signal_a_process_outside_its_sandbox() {
    if !kernel_has(ABI_SCOPES, layer::LANDLOCK_SCOPES, "signal scopes") {
        return;
    }
    let mut bystander = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .expect("sleep");
    let tree = Tree::new();
    let script = probe("kill", &format!("kill -TERM {}", bystander.id()));
    let (_, out, _) = sh(&script, &tree.path("checkout"), Some(tree.confine())).await;
    assert_eq!(out, ["kill:denied"]);
    assert!(
        bystander.try_wait().expect("wait").is_none(),
        "the bystander survived"
    );
    let _ = bystander.kill();
    let _ = bystander.wait();
}

// ---------------------------------------------------------------------------------------------
// Through the executor: `run` stages in a real run.

struct Run {
    dir: TempDir,
}

impl Run {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("checkout")).expect("checkout");
        std::fs::create_dir_all(dir.path().join("out")).expect("out");
        std::fs::create_dir_all(dir.path().join("temp")).expect("temp");
        Self { dir }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn options(&self) -> RunOptions {
        let mut o = RunOptions::new(self.path("checkout"));
        o.console = ConsoleMode::Quiet;
        o.grace = Duration::from_millis(300);
        o.jobs = 4;
        o.temp_dir = self.path("temp");
        let env: BTreeMap<String, String> = [
            ("OUT", self.path("out")),
            ("HOME", self.path("home")),
            ("RUNS", self.path("checkout/.reviewflow/runs")),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string_lossy().into_owned()))
        .collect();
        o.env = Arc::new(move |name| env.get(name).map(Into::into));
        o
    }

    async fn execute(&self, pipeline: &str, options: RunOptions) -> Result<RunReport, RunError> {
        let registry = Registry::with_builtins();
        let compiled = compile(
            Source::new("confine.kdl", pipeline.to_string()),
            &registry,
            &Limits::default(),
        )
        .unwrap_or_else(|_| panic!("the pipeline compiles:\n{pipeline}"));
        execute(
            &compiled,
            &registry,
            &Implementations::with_builtins(),
            options,
        )
        .await
    }

    async fn run(&self, pipeline: &str) -> RunReport {
        self.execute(pipeline, self.options())
            .await
            .expect("the run starts")
    }

    fn out(&self, name: &str) -> String {
        std::fs::read_to_string(self.path("out").join(name)).unwrap_or_default()
    }
}

/// The text of a stage's output, as kept.
fn output(report: &RunReport, stage: &str, name: &str) -> String {
    let record = report.manifest.stage(stage).expect("stage");
    let file = record.outputs[name].file.as_ref().expect("a kept file");
    std::fs::read_to_string(report.run_dir.join(file)).expect("kept output")
}

/// Whether `pid` still exists (as a process or an unreaped zombie).
fn exists(pid: &str) -> bool {
    Path::new(&format!("/proc/{}", pid.trim())).exists()
}

/// Polls for a file written by a stage.
async fn wait_for(path: &Path) -> String {
    for _ in 0..200 {
        if let Ok(text) = std::fs::read_to_string(path)
            && text.ends_with('\n')
        {
            return text;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("{} never appeared", path.display());
}

const SIBLINGS: &str = r#"
pipeline "siblings"
input "out" env="OUT"
stage "holder" uses="run" {
    command "sh" "-c" "echo HOLDER-SECRET > \"$TMPDIR/secret\"; echo \"$TMPDIR\" > {out}/holder-dir; i=0; while [ ! -f {out}/prober-done ] && [ $i -lt 400 ]; do sleep 0.025; i=$((i+1)); done"
}
stage "prober" uses="run" {
    command "sh" "-c" "i=0; while [ ! -s {out}/holder-dir ] && [ $i -lt 400 ]; do sleep 0.025; i=$((i+1)); done; d=$(cat {out}/holder-dir); cat \"$d/secret\" > {out}/prober-saw 2>&1; ls \"$d\" >> {out}/prober-saw 2>&1; touch {out}/prober-done"
}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stage_cannot_read_a_running_siblings_work_folder() {
    if !kernel_has(1, layer::LANDLOCK_FILESYSTEM, "filesystem confinement") {
        return;
    }
    let run = Run::new();
    let report = run.run(SIBLINGS).await;
    assert_eq!(report.status, RunStatus::Succeeded, "{:?}", report.manifest);
    let saw = run.out("prober-saw");
    assert!(!run.out("holder-dir").is_empty(), "the holder ran");
    assert!(!saw.contains("HOLDER-SECRET"), "{saw}");
    // With a mount namespace the sibling's folder is not there at all (unreachable, so no
    // socket in it is either); with Landlock alone it is there and unreadable.
    let unreachable = report
        .manifest
        .isolation
        .as_ref()
        .and_then(|i| i.layer(layer::MOUNT_NAMESPACE))
        .is_some_and(|l| l.held);
    let expected = if unreachable {
        "No such file or directory"
    } else {
        "Permission denied"
    };
    assert!(saw.contains(expected), "{saw}");
}

const KEPT: &str = r#"
pipeline "kept"
input "runs" env="RUNS"
stage "maker" uses="run" {
    command "sh" "-c" "echo KEPT-VALUE > \"$REVIEWFLOW_WORK_DIR/f.txt\""
    output "f" file="f.txt" type="file"
}
stage "reader" uses="run" {
    command "sh" "-c" "echo copy=$(cat {maker.f}) path={maker.f}; cat {runs}/*/outputs/maker/f 2>&1 || echo direct:denied"
    output "seen"
}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_output_reaches_its_consumer_as_a_copy_and_the_run_directory_stays_shut() {
    if !kernel_has(1, layer::LANDLOCK_FILESYSTEM, "filesystem confinement") {
        return;
    }
    let run = Run::new();
    let report = run.run(KEPT).await;
    assert_eq!(report.status, RunStatus::Succeeded, "{:?}", report.manifest);
    let seen = output(&report, "reader", "seen");
    assert!(seen.contains("copy=KEPT-VALUE"), "{seen}");
    let path = seen
        .lines()
        .find_map(|l| l.split_once(" path=").map(|(_, p)| p.to_string()))
        .expect("the path it was given");
    assert!(
        path.starts_with(run.path("temp").to_str().expect("utf-8"))
            && path.ends_with("inputs/maker/f"),
        "a copy in its own folder, not the run directory: {path}"
    );
    assert!(seen.contains("direct:denied"), "{seen}");
    assert!(!seen.lines().any(|l| l == "KEPT-VALUE"), "{seen}");
}

const LEAVER: &str = r#"
pipeline "leaver"
input "out" env="OUT"
stage "leaver" uses="run" {
    command "sh" "-c" "setsid sleep 1000 >/dev/null 2>&1 </dev/null & echo $! > {out}/daemon; env -i setsid sleep 1001 >/dev/null 2>&1 </dev/null & echo $! > {out}/scrubbed"
}
stage "after" uses="run" {
    command "sh" "-c" "for f in daemon scrubbed; do p=$(cat {out}/$f); if [ -d /proc/$p ]; then echo $f:alive; else echo $f:gone; fi; done # {leaver.ok}"
    output "seen"
}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_stage_leaves_behind_with_setsid_is_gone_when_it_ends() {
    let run = Run::new();
    let report = run.run(LEAVER).await;
    assert_eq!(report.status, RunStatus::Succeeded, "{:?}", report.manifest);
    let daemon = run.out("daemon");
    let scrubbed = run.out("scrubbed");
    assert!(!daemon.trim().is_empty() && !scrubbed.trim().is_empty());
    // Seen from the next stage: both gone (the marked one and the one that cleared its
    // environment, which no stage can be sure of and any stage's end ends).
    assert_eq!(
        output(&report, "after", "seen"),
        "daemon:gone\nscrubbed:gone"
    );
    assert!(
        !exists(&daemon) && !exists(&scrubbed),
        "reaped, not zombies"
    );
    let layer = report
        .manifest
        .isolation
        .as_ref()
        .and_then(|i| i.layer(layer::SUBREAPER))
        .expect("the subreaper layer");
    assert!(layer.held, "{layer:?}");
}

const CANCELLED: &str = r#"
pipeline "cancelled"
input "out" env="OUT"
stage "long" uses="run" {
    command "sh" "-c" "setsid sleep 1000 >/dev/null 2>&1 </dev/null & echo $! > {out}/daemon; sleep 1000"
}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_is_left_behind_is_gone_when_the_run_is_cancelled() {
    let run = Run::new();
    let (canceller, cancel) = cancel_pair();
    let mut options = run.options();
    options.cancel = cancel;
    let daemon_file = run.path("out/daemon");
    let waiter = async {
        let daemon = wait_for(&daemon_file).await;
        canceller.cancel(CancelReason::Interrupted(libc::SIGTERM));
        daemon
    };
    let (report, daemon) = tokio::join!(run.execute(CANCELLED, options), waiter);
    let report = report.expect("the run starts");
    assert_eq!(report.status, RunStatus::Cancelled);
    assert_eq!(
        report.manifest.stage("long").map(|s| s.outcome),
        Some(Outcome::Cancelled)
    );
    assert!(
        !exists(&daemon),
        "process {} outlived the run",
        daemon.trim()
    );
}

const WRITER: &str = r#"
pipeline "writer"
stage "writer" uses="run" {
    command "sh" "-c" "echo x > planted.txt"
}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stage_that_writes_outside_its_folder_fails_and_its_reason_says_it_is_confined() {
    if !kernel_has(1, layer::LANDLOCK_FILESYSTEM, "filesystem confinement") {
        return;
    }
    let run = Run::new();
    let report = run.run(WRITER).await;
    assert_eq!(report.status, RunStatus::Failed);
    assert!(!run.path("checkout/planted.txt").exists());
    let reason = report
        .manifest
        .stage("writer")
        .and_then(|s| s.reason.clone())
        .unwrap_or_default();
    assert_eq!(
        reason,
        "the command exited with code 2 (confined: reads the checkout and system folders, \
         writes only its work folder; network: none)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_manifest_records_which_layers_held() {
    let run = Run::new();
    let mut options = run.options();
    options.process_layers = vec![Layer::held("not-dumpable", "set by the test")];
    let report = run.execute(WRITER, options).await.expect("the run starts");
    let isolation = report.manifest.isolation.expect("recorded");
    assert_eq!(isolation.level, Level::BestEffort);
    assert_eq!(isolation.landlock_abi, kernel().landlock_abi);
    let names: Vec<&str> = isolation.layers.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(
        names,
        [
            layer::NO_NEW_PRIVILEGES,
            layer::CAPABILITIES_DROPPED,
            layer::PARENT_DEATH_SIGNAL,
            layer::SUBREAPER,
            layer::LANDLOCK_FILESYSTEM,
            layer::LANDLOCK_NETWORK,
            layer::LANDLOCK_SCOPES,
            layer::INHERITED_DESCRIPTORS,
            layer::NO_KEYRING,
            layer::CGROUP,
            layer::NETWORK_NAMESPACE,
            layer::IPC_NAMESPACE,
            layer::MOUNT_NAMESPACE,
            layer::PID_NAMESPACE,
            "not-dumpable",
        ]
    );
    let abi = kernel().landlock_abi;
    let held = |name: &str| isolation.layers.iter().any(|l| l.name == name && l.held);
    assert_eq!(held(layer::LANDLOCK_FILESYSTEM), abi >= 1);
    assert_eq!(held(layer::LANDLOCK_NETWORK), abi >= ABI_NETWORK);
    assert_eq!(held(layer::LANDLOCK_SCOPES), abi >= ABI_SCOPES);
    assert_eq!(
        held(layer::NO_KEYRING),
        cfg!(any(target_arch = "x86_64", target_arch = "aarch64"))
    );
    // Each missing layer is one run-level warning.
    let events = std::fs::read_to_string(report.run_dir.join("events.jsonl")).expect("events");
    for layer in isolation.layers.iter().filter(|l| !l.held) {
        assert_eq!(events.matches(&layer.warning()).count(), 1, "{events}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turning_confinement_off_is_recorded_and_warned() {
    let run = Run::new();
    let mut options = run.options();
    options.confine_children = false;
    let report = run.execute(WRITER, options).await.expect("the run starts");
    // Unconfined, the write succeeds: that is what "off" means.
    assert_eq!(report.status, RunStatus::Succeeded);
    let isolation = report.manifest.isolation.expect("recorded");
    for name in [
        layer::NO_NEW_PRIVILEGES,
        layer::CAPABILITIES_DROPPED,
        layer::SUBREAPER,
        layer::LANDLOCK_FILESYSTEM,
    ] {
        let l = isolation.layer(name).expect("reported");
        assert!(!l.held && l.detail.contains("turned off"), "{l:?}");
    }
    let events = std::fs::read_to_string(report.run_dir.join("events.jsonl")).expect("events");
    assert!(
        events.contains("isolation: landlock-filesystem is not held"),
        "{events}"
    );
}

const STRICT: &str = r#"
pipeline "strict"
isolation "strict"
stage "one" uses="run" {
    command "true"
}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_strict_pipeline_refuses_to_start_without_every_layer() {
    let run = Run::new();
    let mut options = run.options();
    options.process_layers = vec![Layer::missing("watchdog", "no watchdog in this test")];
    let err = run.execute(STRICT, options).await.expect_err("refused");
    let RunError::Check { findings } = err else {
        panic!("a refusal with the reason: {err:?}");
    };
    assert_eq!(findings.len(), 1);
    assert_eq!(findings[0].check, "isolation");
    assert!(
        findings[0]
            .message
            .contains("lacks 1 (watchdog) — watchdog: no watchdog in this test"),
        "{}",
        findings[0].message
    );
    assert!(
        !run.path("checkout/.reviewflow/runs").exists(),
        "nothing created"
    );

    // With every layer the platform has, it runs (or, on a kernel that lacks one, it is refused
    // with that layer named).
    let isolation = Isolation::assess(Level::Strict, &kernel(), true, true, &[]);
    let missing: Vec<String> = isolation.missing().map(|l| l.name.clone()).collect();
    match run.execute(STRICT, run.options()).await {
        Ok(report) => {
            assert!(missing.is_empty(), "{missing:?}");
            assert_eq!(report.status, RunStatus::Succeeded, "{:?}", report.manifest);
            assert_eq!(
                report.manifest.isolation.map(|i| i.level),
                Some(Level::Strict)
            );
        }
        Err(RunError::Check { findings }) => {
            eprintln!("this platform lacks {missing:?}: the strict run is refused");
            assert!(!missing.is_empty());
            for name in missing {
                assert!(findings[0].message.contains(&name));
            }
        }
        Err(e) => panic!("{e}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_strict_pipeline_refuses_to_start_with_confinement_turned_off() {
    let run = Run::new();
    let mut options = run.options();
    options.confine_children = false;
    let err = run.execute(STRICT, options).await.expect_err("refused");
    assert!(
        matches!(&err, RunError::Check { findings } if findings[0].message.contains("turned off")),
        "{err:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stage_reaches_only_the_ports_it_declares() {
    if !kernel_has(ABI_NETWORK, layer::LANDLOCK_NETWORK, "TCP rules") {
        return;
    }
    let declared = TcpListener::bind("127.0.0.1:0").expect("listen");
    let other = TcpListener::bind("127.0.0.1:0").expect("listen");
    let (d, o) = (
        declared.local_addr().expect("addr").port(),
        other.local_addr().expect("addr").port(),
    );
    let pipeline = format!(
        r#"
pipeline "ports"
stage "net" uses="run" network="{d}" {{
    command "sh" "-c" "for p in {d} {o}; do if bash -c \"exec 3<>/dev/tcp/127.0.0.1/$p\" 2>/dev/null; then echo $p:ok; else echo $p:denied; fi; done"
    output "seen"
}}
"#
    );
    let run = Run::new();
    let report = run.run(&pipeline).await;
    assert_eq!(report.status, RunStatus::Succeeded, "{:?}", report.manifest);
    assert_eq!(
        output(&report, "net", "seen"),
        format!("{d}:ok\n{o}:denied")
    );
    // The declared listener got the connection.
    declared.set_nonblocking(true).expect("nonblocking");
    let mut accepted = declared.accept().expect("a connection came");
    let mut buf = Vec::new();
    let _ = accepted.0.read_to_end(&mut buf);
}
