//! The main job: `reviewflow run examples/local.kdl` on a git checkout, no network.

use std::path::PathBuf;
use std::process::Command;

use crate::support::Repo;

const KEY: &str = "0123456789abcdef0123456789abcdef-local-test";

struct Checkout {
    repo: Repo,
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

/// The repository's own methods (`path`, `git`, `commit`) on the checkout.
impl std::ops::Deref for Checkout {
    type Target = Repo;
    fn deref(&self) -> &Repo {
        &self.repo
    }
}

impl Checkout {
    /// A repository on `main` with two commits and the example pipeline.
    fn new() -> Self {
        Self {
            repo: Repo::local_example(),
        }
    }

    fn run(&self, pipeline: &str, env: &[(&str, &str)]) -> Out {
        let mut c = crate::support::command();
        c.args(["run", pipeline])
            .current_dir(self.path())
            .env_remove("REVIEW_CONVERSATION_KEY");
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
                .join(".reviewflow/forge/branch-main/local-review/posted.json"),
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
                .join(".reviewflow/forge/branch-main/local-review")
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
    let md = std::fs::read_to_string(
        c.path()
            .join(".reviewflow/forge/branch-main/local-review/review.md"),
    )
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
            .join(".reviewflow/forge/branch-main/local-review/review.md")
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
        next.all()
            .contains("the posted review kept no conversation"),
        "the posted review names no blob (it kept a tombstone): {}",
        next.all()
    );
}

/// The head moves between gather and post: the post refuses, so a stale review is never
/// recorded as the current one. A stage never writes the checkout's `.git` (docs/isolation.md),
/// so the head is moved from outside while a stage between gather and post waits for it.
#[test]
fn the_post_refuses_when_the_head_moved() {
    let c = Checkout::new();
    let sync = tempfile::tempdir().expect("tempdir");
    let pipeline = std::fs::read_to_string(c.path().join("examples/local.kdl"))
        .expect("read")
        .replace(
            "stage \"post\" uses=\"std/post\" {",
            "stage \"push\" uses=\"run\" {\n    needs \"gather\"\n    command \"/bin/sh\" \"-c\" \"touch {sync}/ready; while [ ! -e {sync}/moved ]; do sleep 0.01; done\"\n}\n\nstage \"post\" uses=\"std/post\" {\n    needs \"push\"",
        )
        .replace(
            "forge \"local\"\n",
            "forge \"local\"\ninput \"sync\" env=\"SYNC\"\n",
        );
    std::fs::write(c.path().join("moving.kdl"), pipeline).expect("write");
    c.commit(
        "moving.kdl",
        &std::fs::read_to_string(c.path().join("moving.kdl")).expect("read"),
        "pipeline",
    );
    let before = c.git(&["rev-parse", "HEAD"]);
    let child = crate::support::command()
        .args(["run", "moving.kdl"])
        .current_dir(c.path())
        .env("REVIEW_CONVERSATION_KEY", KEY)
        .env("SYNC", sync.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !sync.path().join("ready").exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the push stage never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    c.git(&["commit", "-q", "--allow-empty", "-m", "moved"]);
    std::fs::write(sync.path().join("moved"), "").expect("signal");
    let out = child.wait_with_output().expect("it ends");
    let out = Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
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
            .join(".reviewflow/forge/branch-main/local-review/posted.json")
            .exists()
    );
}

#[test]
fn two_concurrent_runs_share_one_store() {
    let c = Checkout::new();
    let path = c.path().to_path_buf();
    let spawn = || {
        let mut cmd = crate::support::command();
        // Forced: the second would otherwise stop if the first had posted before it gathered.
        cmd.args(["run", "examples/local.kdl", "--force"])
            .current_dir(&path)
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
    let mut cmd = crate::support::command();
    let out = cmd
        .args(["run", "examples/local.kdl", "--resume", &run_id])
        .current_dir(c.path())
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

impl Checkout {
    /// `review.md` of the change `branch-main` under `dir`, with the SHAs and the run id
    /// replaced by placeholders, for a snapshot.
    fn review_md_in(&self, dir: &str) -> String {
        let folder = self.path().join(dir).join("branch-main/local-review");
        let md = std::fs::read_to_string(folder.join("review.md")).expect("review.md");
        let posted: serde_json::Value =
            serde_json::from_slice(&std::fs::read(folder.join("posted.json")).expect("posted"))
                .expect("json");
        let field = |name: &str| posted[name].as_str().expect(name).to_string();
        md.replace(&field("base")[..12], "<base>")
            .replace(&field("head")[..12], "<head>")
            .replace(&field("run_id"), "<run>")
    }

    /// `examples/local.kdl` with the `command` reviewer `script` (a shell script) in place of
    /// the rules, written as `name`.
    fn with_command_reviewer(&self, name: &str, script: &str) {
        let path = self.path().join(format!("{name}.sh"));
        std::fs::write(&path, script).expect("write");
        Command::new("chmod")
            .arg("+x")
            .arg(&path)
            .status()
            .expect("chmod");
        let pipeline = std::fs::read_to_string(self.path().join("examples/local.kdl"))
            .expect("read")
            .replace(
                "reviewer \"rules\"",
                &format!("reviewer \"command\"\n    command \"{}\"", path.display()),
            )
            .replace("resume \"restore.conversation\"\n", "");
        std::fs::write(self.path().join(format!("{name}.kdl")), pipeline).expect("write");
    }
}

/// The rules reviewer's comment has a findings table for forges that post only the comment;
/// `review.md` lists each finding once (the list), and a message's code spans render as code.
#[test]
fn review_md_lists_each_finding_once() {
    let c = Checkout::new();
    c.commit(
        "src/app.js",
        "// TODO: remove\nconsole.log('here');\n",
        "third",
    );
    let out = c.run("examples/local.kdl", &[]);
    assert_eq!(out.code, 0, "{}", out.all());
    let md = c.review_md_in(".reviewflow/forge");
    assert!(!md.contains("| severity |"), "no table: {md}");
    assert!(!md.contains("\\`"), "no escaped backtick: {md}");
    insta::assert_snapshot!("review_md__rules", md);
}

/// Findings whose text holds backticks, pipes, markdown and HTML: code spans render as code,
/// pipes and emphasis stay as they are, and no link, image, heading or raw HTML comes out.
#[test]
fn review_md_keeps_hostile_finding_text_as_text() {
    let c = Checkout::new();
    c.commit("src/app.rs", "fn a() {}\nfn b() {}\nfn c() {}\n", "third");
    let result = serde_json::json!({
        "version": 1,
        "comment": "Looks fine apart from `unwrap`.\n\n| file | note |\n|---|---|\n| `src/app.rs` | a | b |\n",
        "findings": [
            {
                "path": "src/app.rs", "line": 1, "severity": "error", "rule": "no-unwrap",
                "message": "`unwrap()` on `Option<T>` | panics: use `?`, not <script>alert(1)</script>"
            },
            {
                "path": "src/app.rs", "line": 2, "end_line": 3, "severity": "warning",
                "rule": "style/pipes",
                "message": "a | b || c, **bold**, [link](https://evil.invalid), ![img](x), # not a heading, \\`escaped\\` and C:\\dir"
            },
            {
                "path": "src/app.rs", "line": null, "severity": "info",
                "message": "# not a heading <b>bold</b> & `<i>code</i>` ``a`b`` <https://evil.invalid>"
            }
        ],
        "conversation": null,
        "resumed": false
    });
    std::fs::write(c.path().join("result.json"), result.to_string()).expect("write");
    c.with_command_reviewer(
        "hostile",
        &format!(
            "#!/bin/sh\nset -e\ncat '{}' > \"$REVIEWFLOW_RESULT\"\n",
            c.path().join("result.json").display()
        ),
    );
    let out = c.run("hostile.kdl", &[]);
    assert_eq!(out.code, 0, "{}", out.all());
    let md = c.review_md_in(".reviewflow/forge");
    let findings = md.split("## Findings").nth(1).expect("findings");
    assert!(
        findings.contains("`unwrap()` on `Option<T>` | panics"),
        "code spans and pipes as written: {findings}"
    );
    assert!(
        findings.contains("not \\<script>alert(1)\\</script>"),
        "no raw HTML: {findings}"
    );
    for line in findings.lines() {
        assert!(!line.starts_with('#'), "no heading from a finding: {line}");
    }
    insta::assert_snapshot!("review_md__hostile_findings", md);
}

/// The scan's log names what it scanned: the reviewer's conversation, not the diff the
/// reviewer found a credential in.
#[test]
fn the_scan_log_names_its_target() {
    let c = Checkout::new();
    c.commit(
        "src/config.rs",
        "const T: &str = \"ghp_0123456789abcdefghijklmnopqrstuvwxyZ\";\n",
        "third",
    );
    let out = c.run("examples/local.kdl", &[("REVIEW_CONVERSATION_KEY", KEY)]);
    assert_eq!(out.code, 0, "{}", out.all());
    let log = out.all();
    assert!(
        c.review_md_in(".reviewflow/forge").contains("credential"),
        "the reviewer found the token in the diff"
    );
    assert!(
        log.lines()
            .any(|l| l.trim() == "scan: review.conversation: clean"),
        "{log}"
    );
    assert!(!log.lines().any(|l| l.trim() == "scan: clean"), "{log}");

    c.with_command_reviewer(
        "leaky",
        "#!/bin/sh\nset -e\nmkdir -p \"$REVIEWFLOW_CONVERSATION_OUT\"\n\
         printf 'token ghp_0123456789abcdefghijklmnopqrstuvwxyZ\\n' > \"$REVIEWFLOW_CONVERSATION_OUT/c.txt\"\n\
         printf '{\"version\":1,\"comment\":\"ok\",\"findings\":[],\"conversation\":\"c.txt\",\"resumed\":false}' > \"$REVIEWFLOW_RESULT\"\n",
    );
    c.commit("d.txt", "d\n", "fourth");
    let out = c.run("leaky.kdl", &[("REVIEW_CONVERSATION_KEY", KEY)]);
    assert_eq!(out.code, 0, "{}", out.all());
    let log = out.all();
    assert!(
        log.lines()
            .any(|l| l.trim() == "scan: github: review.conversation:1:7"),
        "{log}"
    );
    assert!(
        log.lines()
            .any(|l| l.trim() == "scan: review.conversation: 1 hit: not clean"),
        "{log}"
    );
}

/// `forge "local" dir="…"`: the review is written there, relative to the checkout; a folder
/// that leaves the checkout, is absolute or goes through a symbolic link is refused (exit 2)
/// before anything runs.
#[test]
fn the_local_forge_writes_to_the_folder_it_names() {
    let c = Checkout::new();
    let pipeline = |dir: &str| {
        std::fs::read_to_string(c.path().join("examples/local.kdl"))
            .expect("read")
            .replace(
                "forge \"local\"\n",
                &format!("forge \"local\" dir=\"{dir}\"\n"),
            )
    };
    std::fs::write(c.path().join("dir.kdl"), pipeline("reviews/local")).expect("write");
    let out = c.run("dir.kdl", &[]);
    assert_eq!(out.code, 0, "{}", out.all());
    let folder = c.path().join("reviews/local");
    assert!(
        folder.join("branch-main/local-review/review.md").is_file(),
        "{}",
        out.all()
    );
    assert!(
        folder
            .join("branch-main/local-review/posted.json")
            .is_file()
    );
    assert!(folder.join(".gitignore").is_file());
    assert!(
        !c.path().join(".reviewflow/forge").exists(),
        "{}",
        out.all()
    );
    assert!(
        out.all()
            .contains("reviews/local/branch-main/local-review/review.md")
    );
    // The next run reads the record back from the same folder.
    let again = c.run("dir.kdl", &[]);
    assert_eq!(again.code, 0, "{}", again.all());
    assert!(
        !again
            .all()
            .contains("no review was posted for this change before"),
        "{}",
        again.all()
    );

    let outside = tempfile::tempdir().expect("tempdir");
    std::os::unix::fs::symlink(outside.path(), c.path().join("linked")).expect("symlink");
    for (dir, why) in [
        ("../reviews", "leaves the checkout"),
        ("/tmp/reviews", "is an absolute path"),
        ("linked/reviews", "goes through a symbolic link"),
        (".", "names the checkout itself"),
    ] {
        std::fs::write(c.path().join("bad.kdl"), pipeline(dir)).expect("write");
        let out = c.run("bad.kdl", &[]);
        assert_eq!(out.code, 2, "{dir}: {}", out.all());
        assert!(
            out.all()
                .contains(&format!("forge \"local\": dir=\"{dir}\" {why}")),
            "{dir}: {}",
            out.all()
        );
    }
    assert_eq!(
        std::fs::read_dir(outside.path()).expect("read").count(),
        0,
        "nothing written through the link"
    );
}

/// A `vendor=` that the stage's own model key contradicts is not believed at run time either
/// (principle 2, as `check` reads it): given only Anthropic's key, a `command` reviewer that says
/// `vendor="openai"` is Anthropic's, so it never reviews work Anthropic's model wrote.
#[test]
fn a_declared_vendor_the_reviewers_key_contradicts_is_not_believed_at_run_time() {
    let c = Checkout::new();
    c.with_command_reviewer(
        "vendor",
        "#!/bin/sh\nset -e\nmkdir -p \"$REVIEWFLOW_CONVERSATION_OUT\"\n\
         printf 'reviewed\\n' > \"$REVIEWFLOW_CONVERSATION_OUT/c.txt\"\n\
         printf '{\"version\":1,\"comment\":\"ok\",\"findings\":[],\"conversation\":\"c.txt\",\"resumed\":false}' > \"$REVIEWFLOW_RESULT\"\n",
    );
    let path = c.path().join("vendor.kdl");
    let pipeline = std::fs::read_to_string(&path)
        .expect("read")
        .replace(
            "stage \"review\"",
            "input \"author\" env=\"AUTHOR_VENDOR\" pattern=\"^[a-z]+$\"\n\
             secret \"model-key\" env=\"ANTHROPIC_API_KEY\" {\n    visible-to \"review\"\n}\n\
             stage \"review\"",
        )
        .replace(
            "reviewer \"command\"",
            "reviewer \"command\" vendor=\"openai\"\n    \
             reviewer-vendor-differs-from \"{author}\"\n    \
             secret-env \"ANTHROPIC_API_KEY\" \"model-key\"",
        );
    std::fs::write(&path, pipeline).expect("write");
    let key = (
        "ANTHROPIC_API_KEY",
        "sk-ant-api03-fake-key-for-the-vendor-test-0123456789",
    );
    let same = c.run(
        "vendor.kdl",
        &[
            ("AUTHOR_VENDOR", "anthropic"),
            key,
            ("REVIEW_CONVERSATION_KEY", KEY),
        ],
    );
    assert!(
        same.all().contains(
            "the work was written by anthropic's model and the `command` reviewer runs anthropic's"
        ),
        "{}",
        same.all()
    );
    assert_ne!(same.code, 0, "{}", same.all());
    assert!(
        !same.all().contains("try 1"),
        "no try started: {}",
        same.all()
    );
    let other = c.run(
        "vendor.kdl",
        &[
            ("AUTHOR_VENDOR", "openai"),
            key,
            ("REVIEW_CONVERSATION_KEY", KEY),
        ],
    );
    assert_eq!(other.code, 0, "openai's work is reviewed: {}", other.all());
}
