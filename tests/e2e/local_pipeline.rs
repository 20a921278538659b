//! The main job: `reviewflow run examples/local.kdl` on a git checkout, no network.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::root;

const KEY: &str = "0123456789abcdef0123456789abcdef-local-test";

struct Checkout {
    dir: tempfile::TempDir,
}

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Out {
    fn all(&self) -> String {
        format!("exit {}\n{}{}", self.code, self.stdout, self.stderr)
    }
}

impl Checkout {
    /// A repository on `main` with two commits and the example pipeline.
    fn new() -> Self {
        let c = Self {
            dir: tempfile::tempdir().expect("tempdir"),
        };
        c.git(&["init", "-q", "-b", "main"]);
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

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn git(&self, args: &[&str]) -> String {
        let out = Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@example.com",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .current_dir(self.path())
            .output()
            .expect("git runs");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    fn commit(&self, file: &str, text: &str, message: &str) {
        let path = self.path().join(file);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(&path, text).expect("write");
        self.git(&["add", "-A", "--", ".", ":!.reviewflow"]);
        self.git(&["commit", "-q", "-m", message]);
    }

    fn run(&self, pipeline: &str, env: &[(&str, &str)]) -> Out {
        let mut c = Command::new(env!("CARGO_BIN_EXE_reviewflow"));
        c.args(["run", pipeline])
            .current_dir(self.path())
            .env_remove("GITHUB_ACTIONS")
            .env_remove("REVIEW_CONVERSATION_KEY")
            .env("NO_COLOR", "1");
        for (k, v) in env {
            c.env(k, v);
        }
        let out = c.output().expect("the binary runs");
        Out {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    fn with_key(&self) -> Out {
        self.run("examples/local.kdl", &[("REVIEW_CONVERSATION_KEY", KEY)])
    }

    /// Store entries (metadata files) of the change, as (kind, producer head).
    fn store_entries(&self) -> Vec<serde_json::Value> {
        let mut out = Vec::new();
        let Ok(dirs) = std::fs::read_dir(self.path().join(".reviewflow/store")) else {
            return out;
        };
        for d in dirs {
            let d = d.expect("entry").path();
            for f in std::fs::read_dir(&d).expect("read") {
                let f: PathBuf = f.expect("entry").path();
                if f.extension().is_some_and(|e| e == "json") {
                    let v: serde_json::Value =
                        serde_json::from_slice(&std::fs::read(&f).expect("read")).expect("json");
                    out.push(v);
                }
            }
        }
        out.sort_by_key(|v| v["created_ns"].as_u64());
        out
    }

    fn posted(&self) -> serde_json::Value {
        let text = std::fs::read(
            self.path()
                .join(".reviewflow/forge/branch-main/posted.json"),
        )
        .expect("a posted review");
        serde_json::from_slice(&text).expect("json")
    }
}

#[test]
fn two_runs_the_second_resumes_the_first_review() {
    let c = Checkout::new();
    let first = c.with_key();
    assert_eq!(first.code, 0, "{}", first.all());
    assert!(first.all().contains("fresh review"), "{}", first.all());
    assert!(
        first.all().contains("sealed the conversation"),
        "{}",
        first.all()
    );
    let head1 = c.git(&["rev-parse", "HEAD"]);
    assert_eq!(c.posted()["head"], head1.as_str());
    for f in ["review.md", "review.json", "review.rdjsonl", "review.sarif"] {
        assert!(
            c.path()
                .join(".reviewflow/forge/branch-main")
                .join(f)
                .is_file(),
            "{f}"
        );
    }
    let entries = c.store_entries();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0]["kind"], "blob");

    c.commit("src/debug.js", "console.log('here');\n", "third");
    let second = c.with_key();
    assert_eq!(second.code, 0, "{}", second.all());
    let log = second.all();
    assert!(log.contains("restored conversation"), "{log}");
    assert!(
        log.contains(&format!("of the review of {}", &head1[..12])),
        "{log}"
    );
    assert!(log.contains("resumed"), "the log says which try ran: {log}");
    let md = std::fs::read_to_string(c.path().join(".reviewflow/forge/branch-main/review.md"))
        .expect("md");
    assert!(
        md.contains("debug-leftover"),
        "the rules reviewer found the console.log: {md}"
    );
}

#[test]
fn without_the_key_the_review_is_fresh_nothing_is_sealed_and_the_run_succeeds() {
    let c = Checkout::new();
    let out = c.run("examples/local.kdl", &[]);
    assert_eq!(out.code, 0, "{}", out.all());
    assert!(
        out.all().contains("REVIEW_CONVERSATION_KEY"),
        "the warning names the secret: {}",
        out.all()
    );
    assert!(
        c.store_entries().iter().all(|e| e["kind"] == "tombstone"),
        "nothing sealed"
    );
    assert!(
        c.path()
            .join(".reviewflow/forge/branch-main/review.md")
            .is_file(),
        "the review is still posted"
    );
}

#[test]
fn a_wrong_key_opens_nothing_and_the_review_is_fresh() {
    let c = Checkout::new();
    assert_eq!(c.with_key().code, 0);
    c.commit("b.txt", "b\n", "third");
    let out = c.run(
        "examples/local.kdl",
        &[(
            "REVIEW_CONVERSATION_KEY",
            "another key of thirty-two bytes or more",
        )],
    );
    assert_eq!(out.code, 0, "{}", out.all());
    assert!(
        out.all().contains("does not open with this key"),
        "{}",
        out.all()
    );
    assert!(out.all().contains("fresh review"), "{}", out.all());
}

/// A reviewer whose conversation holds a token: the scan is not clean, nothing is sealed, a
/// tombstone is kept, and the next review starts fresh instead of resuming an older one.
#[test]
fn a_conversation_holding_a_token_is_not_kept() {
    let c = Checkout::new();
    assert_eq!(c.with_key().code, 0, "a first review is kept");
    let script = c.path().join("leaky-reviewer.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\nset -e\nmkdir -p \"$REVIEWFLOW_CONVERSATION_OUT\"\n\
         printf 'token ghp_0123456789abcdefghijklmnopqrstuvwxyZ\\n' > \"$REVIEWFLOW_CONVERSATION_OUT/c.txt\"\n\
         printf '{\"version\":1,\"comment\":\"ok\",\"findings\":[],\"conversation\":\"c.txt\",\"resumed\":false}' > \"$REVIEWFLOW_RESULT\"\n",
    )
    .expect("write");
    Command::new("chmod")
        .arg("+x")
        .arg(&script)
        .status()
        .expect("chmod");
    let pipeline = std::fs::read_to_string(c.path().join("examples/local.kdl"))
        .expect("read")
        .replace(
            "reviewer \"rules\"",
            &format!("reviewer \"command\"\n    command \"{}\"", script.display()),
        )
        .replace("resume \"restore.conversation\"\n", "");
    std::fs::write(c.path().join("leaky.kdl"), pipeline).expect("write");
    c.commit("c.txt", "c\n", "third");
    let out = c.run("leaky.kdl", &[("REVIEW_CONVERSATION_KEY", KEY)]);
    assert_eq!(out.code, 0, "{}", out.all());
    assert!(
        out.all().contains("github"),
        "the scan names the detector: {}",
        out.all()
    );
    assert!(
        !out.all().contains("ghp_0123"),
        "never the value: {}",
        out.all()
    );
    let entries = c.store_entries();
    assert_eq!(
        entries.last().map(|e| e["kind"].clone()),
        Some("tombstone".into()),
        "{entries:#?}"
    );
    c.commit("d.txt", "d\n", "fourth");
    let next = c.with_key();
    assert_eq!(next.code, 0, "{}", next.all());
    assert!(
        next.all().contains("was not kept"),
        "the tombstone stops the search: {}",
        next.all()
    );
}

/// The head moves between gather and post: the post refuses, so a stale review is never
/// recorded as the current one.
#[test]
fn the_post_refuses_when_the_head_moved() {
    let c = Checkout::new();
    let pipeline = std::fs::read_to_string(c.path().join("examples/local.kdl"))
        .expect("read")
        .replace(
            "stage \"post\" uses=\"std/post\" {",
            // A stage writes the checkout only where an input names it: it is read-only to
            // stages otherwise (docs/isolation.md).
            "stage \"push\" uses=\"run\" {\n    needs \"gather\"\n    cwd \"{checkout-dir}\"\n    command \"/bin/sh\" \"-c\" \"git -c user.name=t -c user.email=t@example.com commit -q --allow-empty -m moved\"\n    env \"HOME\" \"/tmp\"\n}\n\nstage \"post\" uses=\"std/post\" {\n    needs \"push\"",
        )
        .replace(
            "forge \"local\"\n",
            "forge \"local\"\ninput \"checkout-dir\" env=\"CHECKOUT_DIR\"\n",
        );
    std::fs::write(c.path().join("moving.kdl"), pipeline).expect("write");
    c.commit(
        "moving.kdl",
        &std::fs::read_to_string(c.path().join("moving.kdl")).expect("read"),
        "pipeline",
    );
    let before = c.git(&["rev-parse", "HEAD"]);
    let dir = c.path().to_string_lossy().into_owned();
    let out = c.run(
        "moving.kdl",
        &[("REVIEW_CONVERSATION_KEY", KEY), ("CHECKOUT_DIR", &dir)],
    );
    assert_ne!(
        c.git(&["rev-parse", "HEAD"]),
        before,
        "the head moved: {}",
        out.all()
    );
    assert_eq!(out.code, 1, "{}", out.all());
    assert!(
        out.all().contains("moved"),
        "the status says so: {}",
        out.all()
    );
    assert!(
        !c.path()
            .join(".reviewflow/forge/branch-main/posted.json")
            .exists()
    );
}

#[test]
fn two_concurrent_runs_share_one_store() {
    let c = Checkout::new();
    let path = c.path().to_path_buf();
    let spawn = || {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_reviewflow"));
        cmd.args(["run", "examples/local.kdl"])
            .current_dir(&path)
            .env_remove("GITHUB_ACTIONS")
            .env("NO_COLOR", "1")
            .env("REVIEW_CONVERSATION_KEY", KEY)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        cmd.spawn().expect("spawn")
    };
    let (a, b) = (spawn(), spawn());
    let (a, b) = (
        a.wait_with_output().expect("a"),
        b.wait_with_output().expect("b"),
    );
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stderr));
    let entries = c.store_entries();
    assert_eq!(entries.len(), 2, "no lost blob: {entries:#?}");
    // Both blobs are whole: each verifies against its recorded digest.
    for e in &entries {
        let dir = c
            .path()
            .join(".reviewflow/store")
            .join(e["name"].as_str().expect("name"));
        let blob = std::fs::read(dir.join(format!("{}.blob", e["id"].as_str().expect("id"))))
            .expect("blob");
        assert_eq!(blob.len() as u64, e["size"].as_u64().expect("size"));
    }
}

/// A resume is admitted only for the same resolved commits: after a new commit the whole resume is
/// rejected, naming the field, before any run directory exists.
#[test]
fn a_resume_after_a_new_commit_is_rejected() {
    let c = Checkout::new();
    let first = c.with_key();
    assert_eq!(first.code, 0, "{}", first.all());
    let run_id = first
        .all()
        .lines()
        .find_map(|l| {
            l.strip_prefix("run ")
                .and_then(|r| r.split_whitespace().next())
                .map(str::to_string)
        })
        .expect("the run id is printed");
    let runs = || {
        std::fs::read_dir(c.path().join(".reviewflow/runs"))
            .expect("runs")
            .count()
    };
    let same = c.run("examples/local.kdl", &[("REVIEW_CONVERSATION_KEY", KEY)]);
    assert_eq!(same.code, 0);
    let before = runs();
    c.commit("e.txt", "e\n", "another");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_reviewflow"));
    let out = cmd
        .args(["run", "examples/local.kdl", "--resume", &run_id])
        .current_dir(c.path())
        .env("NO_COLOR", "1")
        .env("REVIEW_CONVERSATION_KEY", KEY)
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("head"),
        "the error names the field that differs: {stderr}"
    );
    assert_eq!(runs(), before, "no run directory was created");
}
