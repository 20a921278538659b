//! The checkout is hostile (in CI it is the pull request's own files): links where reviewflow
//! keeps its folders, FIFOs and corrupt files in its store, a git that hangs, outputs that never
//! end. Each is refused or skipped with a clear message, nothing is written outside the
//! checkout, and nothing hangs. Every child gets a generous deadline: past it the test kills it
//! and fails (a hang), it never asserts a duration.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{Repo, root};

const KEY: &str = "0123456789abcdef0123456789abcdef-local-test";
/// Far beyond what any of these runs needs: reaching it means the run hung.
const DEADLINE: Duration = Duration::from_secs(120);

const SMALL: &str = r#"
pipeline "small"
stage "one" uses="run" {
    command "sh" "-c" "pwd"
    output "said"
}
"#;

struct Checkout {
    repo: Repo,
    /// Where a link planted in the checkout points: must stay empty.
    outside: tempfile::TempDir,
    /// Files of the test itself (fake git, logs), outside the checkout.
    scratch: tempfile::TempDir,
}

struct Out {
    code: i32,
    all: String,
}

/// The repository's own methods (`path`, `git`, `commit`) on the checkout.
impl std::ops::Deref for Checkout {
    type Target = Repo;
    fn deref(&self) -> &Repo {
        &self.repo
    }
}

impl Checkout {
    fn new() -> Self {
        let c = Self {
            repo: Repo::init(),
            outside: tempfile::tempdir().expect("tempdir"),
            scratch: tempfile::tempdir().expect("tempdir"),
        };
        std::fs::write(c.path().join("small.kdl"), SMALL).expect("write");
        std::fs::create_dir_all(c.path().join("examples")).expect("mkdir");
        std::fs::copy(
            root().join("examples/local.kdl"),
            c.path().join("examples/local.kdl"),
        )
        .expect("copy");
        c.commit("README.md", "hello\n", "first");
        c.commit("src/lib.rs", "pub fn f() {}\n", "second");
        c
    }

    /// Commits a link at `at` (relative to the checkout) to the outside folder, as a pull
    /// request can.
    fn plant_link(&self, at: &str) {
        let link = self.path().join(at);
        std::fs::create_dir_all(link.parent().expect("parent")).expect("mkdir");
        symlink(self.outside.path(), &link).expect("symlink");
        self.git(&["add", "-f", "--", at]);
        self.git(&["commit", "-q", "-m", "plant a link"]);
    }

    fn outside_is_empty(&self) -> bool {
        std::fs::read_dir(self.outside.path())
            .expect("read")
            .next()
            .is_none()
    }

    fn command(&self, args: &[&str], env: &[(&str, &str)]) -> Command {
        let mut c = crate::support::command();
        c.arg("run")
            .args(args)
            .current_dir(self.path())
            .env_remove("REVIEW_CONVERSATION_KEY")
            .env_remove("REVIEWFLOW_GIT_TIMEOUT_MS");
        for (k, v) in env {
            c.env(k, v);
        }
        c
    }

    /// Starts the run with its output in files (read by [`Self::finish`]).
    fn start(&self, mut c: Command) -> Child {
        let log = |name| std::fs::File::create(self.scratch.path().join(name)).expect("log");
        c.stdin(Stdio::null())
            .stdout(log("stdout"))
            .stderr(log("stderr"))
            .spawn()
            .expect("the binary runs")
    }

    /// Waits for `child` until [`DEADLINE`]; past it, kills it and fails the test.
    fn finish(&self, mut child: Child) -> Out {
        let start = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait") {
                break status;
            }
            if start.elapsed() > DEADLINE {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "reviewflow hung: killed after {DEADLINE:?}\n{}",
                    self.logs()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        Out {
            code: status.code().unwrap_or(-1),
            all: format!("exit {}\n{}", status.code().unwrap_or(-1), self.logs()),
        }
    }

    fn logs(&self) -> String {
        let read =
            |name| std::fs::read_to_string(self.scratch.path().join(name)).unwrap_or_default();
        format!("{}{}", read("stdout"), read("stderr"))
    }

    fn run(&self, args: &[&str], env: &[(&str, &str)]) -> Out {
        let child = self.start(self.command(args, env));
        self.finish(child)
    }

    fn with_key(&self) -> Out {
        self.run(&["examples/local.kdl"], &[("REVIEW_CONVERSATION_KEY", KEY)])
    }

    /// The store folder of the change.
    fn store_dir(&self) -> PathBuf {
        self.path().join(".reviewflow/store/review-branch-main")
    }

    /// The store's files with `ext`.
    fn store_files(&self, ext: &str) -> Vec<PathBuf> {
        let Ok(read) = std::fs::read_dir(self.store_dir()) else {
            return Vec::new();
        };
        let mut out: Vec<PathBuf> = read
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|e| e == ext))
            .collect();
        out.sort();
        out
    }

    /// A `git` first on PATH that hangs on `diff-tree` (after touching the returned marker) and
    /// is the real git otherwise. Returns (PATH, marker).
    fn hanging_git(&self) -> (String, PathBuf) {
        let real = Command::new("sh")
            .args(["-c", "command -v git"])
            .output()
            .expect("sh");
        let real = String::from_utf8_lossy(&real.stdout).trim().to_string();
        assert!(!real.is_empty(), "git is on PATH");
        let bin = self.scratch.path().join("bin");
        std::fs::create_dir_all(&bin).expect("mkdir");
        let marker = self.scratch.path().join("git-hangs");
        let script = format!(
            "#!/bin/sh\nfor a in \"$@\"; do\n  if [ \"$a\" = diff-tree ]; then : > '{}'; exec sleep 600; fi\ndone\nexec '{real}' \"$@\"\n",
            marker.display()
        );
        let git = bin.join("git");
        std::fs::write(&git, script).expect("write");
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&git, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        (path, marker)
    }
}

const REFUSED_LINK: &str =
    "is a symbolic link: reviewflow never follows a link it did not create inside the checkout";

#[test]
fn a_committed_reviewflow_link_is_refused_and_nothing_is_written_outside() {
    for at in [".reviewflow", ".reviewflow/runs"] {
        let c = Checkout::new();
        c.plant_link(at);
        let out = c.run(&["small.kdl"], &[]);
        assert_eq!(out.code, 2, "{at}: {}", out.all);
        assert!(out.all.contains(REFUSED_LINK), "{at}: {}", out.all);
        assert!(
            out.all.contains(&c.path().join(at).display().to_string()),
            "the error names the link: {}",
            out.all
        );
        assert!(c.outside_is_empty(), "{at}: something was written outside");
    }
}

/// `--resume` reads the parent run's files before the new run's folder exists: a run folder,
/// a manifest or an events log committed as a link is refused, never read through.
#[test]
fn a_resume_through_a_link_is_refused() {
    let c = Checkout::new();
    let first = c.run(&["small.kdl"], &[]);
    assert_eq!(first.code, 0, "{}", first.all);
    let runs = c.path().join(".reviewflow/runs");
    let id = std::fs::read_dir(&runs)
        .expect("runs")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| !n.starts_with('.'))
        .expect("a run");
    // A copy of the run outside the checkout, and links to it in its place.
    let copy = c.outside.path().join("copy");
    std::fs::create_dir(&copy).expect("mkdir");
    for name in ["manifest.json", "events.jsonl"] {
        std::fs::copy(runs.join(&id).join(name), copy.join(name)).expect("copy");
    }
    for (what, link, target) in [
        (
            "the manifest",
            runs.join(&id).join("manifest.json"),
            copy.join("manifest.json"),
        ),
        ("the run folder", runs.join(&id), copy.clone()),
    ] {
        let kept = c.outside.path().join("kept");
        let _ = std::fs::remove_dir_all(&kept);
        std::fs::rename(&link, &kept).expect("move aside");
        symlink(&target, &link).expect("symlink");
        let out = c.run(&["small.kdl", "--resume", &id], &[]);
        assert_eq!(out.code, 2, "{what}: {}", out.all);
        assert!(out.all.contains("symbolic link"), "{what}: {}", out.all);
        std::fs::remove_file(&link).expect("unlink");
        std::fs::rename(&kept, &link).expect("move back");
    }
}

#[test]
fn a_committed_store_or_forge_link_is_refused_and_nothing_is_written_outside() {
    for at in [
        ".reviewflow/store",
        ".reviewflow/store/review-branch-main",
        ".reviewflow/forge",
    ] {
        let c = Checkout::new();
        c.plant_link(at);
        let out = c.with_key();
        assert_ne!(out.code, 0, "{at}: {}", out.all);
        assert!(out.all.contains("symbolic link"), "{at}: {}", out.all);
        assert!(c.outside_is_empty(), "{at}: something was written outside");
    }
}

#[test]
fn a_fifo_as_a_store_blob_is_refused_at_once() {
    let c = Checkout::new();
    let first = c.with_key();
    assert_eq!(first.code, 0, "{}", first.all);
    let blobs = c.store_files("blob");
    assert_eq!(blobs.len(), 1, "{}", first.all);
    std::fs::remove_file(&blobs[0]).expect("rm");
    let made = Command::new("mkfifo")
        .arg(&blobs[0])
        .status()
        .expect("mkfifo");
    assert!(made.success());
    c.commit("src/more.rs", "pub fn g() {}\n", "third");
    let second = c.with_key();
    assert_eq!(second.code, 0, "{}", second.all);
    assert!(
        second.all.contains("is not a regular file"),
        "restore names the FIFO: {}",
        second.all
    );
    assert!(second.all.contains("fresh review"), "{}", second.all);
}

#[test]
fn a_corrupt_sidecar_is_skipped_with_a_warning_and_post_works() {
    let c = Checkout::new();
    let first = c.with_key();
    assert_eq!(first.code, 0, "{}", first.all);
    let sidecars = c.store_files("json");
    assert_eq!(sidecars.len(), 1);
    std::fs::write(&sidecars[0], b"{ not json").expect("write");
    for n in 0..2 {
        c.commit(&format!("src/m{n}.rs"), "pub fn h() {}\n", "more");
        let out = c.with_key();
        assert_eq!(out.code, 0, "run {n}: {}", out.all);
        assert!(
            out.all.contains("unreadable"),
            "run {n} warns about the sidecar: {}",
            out.all
        );
        let posted: serde_json::Value = serde_json::from_slice(
            &std::fs::read(
                c.path()
                    .join(".reviewflow/forge/branch-main/local-review/posted.json"),
            )
            .expect("posted"),
        )
        .expect("json");
        assert_eq!(posted["head"], c.git(&["rev-parse", "HEAD"]).as_str());
    }
    assert!(sidecars[0].exists(), "the unreadable file is left alone");
    assert_eq!(
        c.store_files("json").len(),
        3,
        "both later runs kept an entry"
    );
}

#[test]
fn a_hung_git_is_killed_at_the_bound() {
    let c = Checkout::new();
    let (path, marker) = c.hanging_git();
    // The bound is over every git call of the run, the real ones too: it leaves a loaded
    // machine's git time to answer.
    let out = c.run(
        &["examples/local.kdl"],
        &[("PATH", &path), ("REVIEWFLOW_GIT_TIMEOUT_MS", "4000")],
    );
    assert!(marker.exists(), "the fake git ran: {}", out.all);
    assert_eq!(out.code, 1, "{}", out.all);
    assert!(
        out.all
            .contains("`git diff-tree` did not finish within 4 s: it was killed"),
        "{}",
        out.all
    );
}

#[test]
fn sigterm_during_a_blocked_git_ends_the_run() {
    let c = Checkout::new();
    let (path, marker) = c.hanging_git();
    let child = c.start(c.command(&["--grace", "1s", "examples/local.kdl"], &[("PATH", &path)]));
    let start = Instant::now();
    while !marker.exists() {
        assert!(start.elapsed() < DEADLINE, "git never ran: {}", c.logs());
        std::thread::sleep(Duration::from_millis(50));
    }
    let sent = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(sent.success());
    let out = c.finish(child);
    assert_eq!(out.code, 143, "{}", out.all);
}

#[test]
fn run_outputs_that_are_huge_links_or_fifos_are_refused() {
    let cases = [
        (
            "head -c 9000000 /dev/zero > big",
            "text",
            "output `o`: `big`: it is larger than 8 MiB, the most an output reads",
        ),
        (
            "mkfifo p",
            "text",
            "output `o`: `p`: it is not a regular file",
        ),
        (
            "ln -s /etc/passwd l",
            "text",
            "output `o`: `l`: it is a symbolic link",
        ),
        (
            "mkdir d && ln -s /etc d/up",
            "text",
            "output `o`: `d/up/passwd`: it is a symbolic link",
        ),
        (
            "ln -s /etc/passwd l",
            "file",
            "output `o`: `l`: it is a symbolic link",
        ),
        ("truncate -s 65M f", "file", "cannot keep output `o`:"),
        ("mkfifo p", "file", "is not a regular file"),
    ];
    for (script, ty, expected) in cases {
        let c = Checkout::new();
        let file = match script {
            s if s.contains("d/up") => "d/up/passwd",
            s if s.contains("> big") => "big",
            s if s.contains("mkfifo") => "p",
            s if s.contains("truncate") => "f",
            _ => "l",
        };
        let pipeline = format!(
            "pipeline \"outputs\"\nstage \"s\" uses=\"run\" {{\n    command \"sh\" \"-c\" \"cd \\\"$REVIEWFLOW_WORK_DIR\\\" && {script}\"\n    output \"o\" type=\"{ty}\" file=\"{file}\"\n}}\n"
        );
        std::fs::write(c.path().join("outputs.kdl"), pipeline).expect("write");
        let out = c.run(&["outputs.kdl"], &[]);
        assert_eq!(out.code, 1, "{script}: {}", out.all);
        assert!(out.all.contains(expected), "{script}: {}", out.all);
        if script.starts_with("truncate") {
            assert!(out.all.contains("is larger than 64 MiB"), "{}", out.all);
        }
    }
}

#[test]
fn the_reviewflow_folder_is_ignored_by_git_and_lives_at_the_top_level() {
    let c = Checkout::new();
    std::fs::create_dir_all(c.path().join("sub/deeper")).expect("mkdir");
    let mut cmd = c.command(&["../../small.kdl"], &[]);
    cmd.current_dir(c.path().join("sub/deeper"));
    let out = c.finish(c.start(cmd));
    assert_eq!(out.code, 0, "{}", out.all);
    assert!(c.path().join(".reviewflow/runs").is_dir(), "{}", out.all);
    assert!(!c.path().join("sub/deeper/.reviewflow").exists());
    // Its `run` stages start at the top level too.
    let runs: Vec<PathBuf> = std::fs::read_dir(c.path().join(".reviewflow/runs"))
        .expect("runs")
        .map(|e| e.expect("entry").path())
        .collect();
    assert_eq!(runs.len(), 1);
    let said = std::fs::read_to_string(runs[0].join("outputs/one/said")).expect("output");
    assert_eq!(
        Path::new(said.trim()).canonicalize().expect("canonical"),
        c.path().canonicalize().expect("canonical")
    );
    let ignore = std::fs::read_to_string(c.path().join(".reviewflow/.gitignore")).expect("read");
    assert!(ignore.lines().any(|l| l == "*"), "{ignore}");
    // `git add -A` leaves it out.
    c.git(&["add", "-A"]);
    assert_eq!(c.git(&["status", "--porcelain", "--", ".reviewflow"]), "");
}
