//! `reviewer "claude"` and `reviewer "codex"` through the binary, on a local checkout, with the
//! fake CLIs of tests/fakes/: pushes that resume the conversation (and what that saves), a
//! conversation holding a token, the vendor policy at run time, what reaches the CLI, and a
//! cancel during the review.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{git_in, root};

const KEY: &str = "0123456789abcdef0123456789abcdef-model-test";
const API_KEY: &str = "sk-ant-api03-fake-model-pipeline-0123456789";

fn fakes() -> PathBuf {
    root().join("tests/fakes")
}

/// The local example with a model reviewer; `extra` goes into the review stage.
fn pipeline(reviewer: &str, extra: &str) -> String {
    let (secret, var) = match reviewer {
        "codex" => ("openai-key", "OPENAI_API_KEY"),
        _ => ("anthropic-key", "ANTHROPIC_API_KEY"),
    };
    format!(
        r#"pipeline "model-review"

forge "local"
// The fake CLIs are told files of the checkout (`FAKE_FINDING_PATH`, `FAKE_READ_FILE`), and
// the test writes the checkout: on the local forge the checkout is the change, so the findings
// that say so are allowed, by id (`Checkout::new` names them).
allow "untrusted-input" reason="the test writes the checkout"

store "conversations" kind="local" name="review-{{change}}" {{
    trust local=#true
}}

input "fake-mode" env="FAKE_MODE" default="ok"
trusted "input" name="fake-mode" reason="the test sets it"
input "spy" env="FAKE_SPY_FILE" default="stderr:FAKE-SPY"
trusted "input" name="spy" reason="the test sets it"
input "prompt-log" env="FAKE_PROMPT_LOG" default="stderr:FAKE-PROMPT"
trusted "input" name="prompt-log" reason="the test sets it"

secret "conversation-key" env="REVIEW_CONVERSATION_KEY" min-bytes=32 on-missing="disable" {{
    visible-to "restore" "seal"
}}
secret "{secret}" env="{var}" {{
    visible-to "review"
}}

stage "gather" uses="std/gather" {{
    since-last-review
}}

stage "restore" uses="std/restore" on-error="fallback" {{
    from "conversations"
    key "conversation-key"
    bind repo="{{repo}}" change="{{change}}"
    require-posted-head
}}

stage "review" uses="std/review" timeout="2m" {{
    reviewer "{reviewer}"
    secret-env "{var}" "{secret}"
    resume "restore.conversation"
    untrusted "gather.diff"
    since-last-review "gather.since-last-review"
    env "FAKE_MODE" "{{fake-mode}}"
    env "FAKE_SPY_FILE" "{{spy}}"
    env "FAKE_PROMPT_LOG" "{{prompt-log}}"
    env "FAKE_FINDING_PATH" "src/lib.rs"
    env "FAKE_FINDING_LINE" "1"
{extra}
}}

stage "scan" uses="std/scan" on-error="fallback" {{
    target "review.conversation"
}}

stage "seal" uses="std/seal" when="scan.clean && review.commented" on-error="fallback" {{
    key "conversation-key"
    input "review.conversation"
    bind repo="{{repo}}" change="{{change}}"
}}

stage "post" uses="std/post" {{
    comment "review.comment"
    findings "review.findings"
    ranges "gather.ranges"
    require-head "gather.head"
    upload "seal.blob" to="conversations"
}}
"#
    )
}

struct Checkout {
    dir: tempfile::TempDir,
}

struct Out {
    code: i32,
    log: String,
}

impl Checkout {
    fn new(pipeline_text: &str) -> Self {
        let c = Self {
            dir: tempfile::tempdir().expect("tempdir"),
        };
        std::fs::create_dir_all(c.path().join("tmp")).expect("mkdir");
        c.git(&["init", "-q", "-b", "main"]);
        std::fs::write(
            c.path().join("review.kdl"),
            crate::support::with_allow_ids(pipeline_text),
        )
        .expect("write");
        c.commit("README.md", "hello\n", "first");
        // The change is a topic branch: its base is the merge base with `main`.
        c.git(&["checkout", "-q", "-b", "feature"]);
        c
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn git(&self, args: &[&str]) -> String {
        git_in(self.path(), args)
    }

    fn commit(&self, file: &str, text: &str, message: &str) {
        let path = self.path().join(file);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(&path, text).expect("write");
        self.git(&["add", "-A", "--", ".", ":!.reviewflow", ":!tmp"]);
        self.git(&["commit", "-q", "-m", message]);
    }

    fn command(&self, dir: &Path, env: &[(&str, &str)]) -> Command {
        let mut c = crate::support::command();
        let path = format!(
            "{}:{}",
            fakes().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        c.args(["run", "review.kdl"])
            .current_dir(dir)
            .env("PATH", path)
            .env("TMPDIR", self.path().join("tmp"))
            .env("REVIEW_CONVERSATION_KEY", KEY)
            .env("ANTHROPIC_API_KEY", API_KEY)
            .env("OPENAI_API_KEY", API_KEY)
            // A secret of the job the reviewer must never see.
            .env("GITHUB_TOKEN", "ghs_jobtokenjobtokenjobtokenjobtoken0000");
        for (k, v) in env {
            c.env(k, v);
        }
        c
    }

    fn run_in(&self, dir: &Path, env: &[(&str, &str)]) -> Out {
        let out = self.command(dir, env).output().expect("the binary runs");
        Out {
            code: out.status.code().unwrap_or(-1),
            log: format!(
                "exit {}\n{}{}",
                out.status.code().unwrap_or(-1),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        }
    }

    fn run(&self, env: &[(&str, &str)]) -> Out {
        self.run_in(self.path(), env)
    }

    fn review_md(&self) -> String {
        std::fs::read_to_string(
            self.path()
                .join(".reviewflow/forge/branch-feature/model-review/review.md"),
        )
        .expect("a posted review")
    }

    fn store_kinds(&self) -> Vec<String> {
        let mut out = Vec::new();
        for d in std::fs::read_dir(self.path().join(".reviewflow/store"))
            .into_iter()
            .flatten()
        {
            for f in std::fs::read_dir(d.expect("entry").path())
                .into_iter()
                .flatten()
            {
                let f = f.expect("entry").path();
                if f.extension().is_some_and(|e| e == "json") {
                    let v: serde_json::Value =
                        serde_json::from_slice(&std::fs::read(&f).expect("read")).expect("json");
                    out.push((
                        v["created_ns"].as_u64(),
                        v["kind"].as_str().map(str::to_owned),
                    ));
                }
            }
        }
        out.sort();
        out.into_iter().filter_map(|(_, k)| k).collect()
    }
}

/// The JSON of every line the fake CLI printed with `tag` (its `stderr:<tag>` logs: a confined
/// CLI writes only in its own folder, so it reports on stderr, which the run shows).
fn tagged(log: &str, tag: &str) -> Vec<serde_json::Value> {
    let tag = format!("{tag} ");
    log.lines()
        .filter_map(|l| l.find(&tag).map(|i| &l[i + tag.len()..]))
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect()
}

/// A source file of `n` numbered functions.
fn source(n: usize, tag: &str) -> String {
    (0..n)
        .map(|i| format!("pub fn {tag}_{i}(x: u32) -> u32 {{\n    x.wrapping_mul({i}) + 1\n}}\n"))
        .collect()
}

fn copy_dir(from: &Path, to: &Path) {
    let status = Command::new("cp")
        .args(["-a"])
        .arg(from)
        .arg(to)
        .status()
        .expect("cp runs");
    assert!(status.success());
}

/// Five pushes of one change: the first adds a feature, the others fix it. Each later push is
/// reviewed by resuming the conversation; a copy of the checkout at the same moment is reviewed
/// fresh (its resume refused), and the fake CLI records the bytes of prompt each sent.
#[test]
fn five_pushes_a_resumed_review_sends_a_fraction_of_a_fresh_one() {
    let c = Checkout::new(&pipeline("claude", ""));
    // Each push: the files it writes (path, functions, tag).
    let pushes: [&[(&str, usize, &str)]; 5] = [
        &[("src/lib.rs", 60, "core"), ("src/io.rs", 40, "io")],
        &[("src/fix1.rs", 3, "fix_a")],
        &[("src/fix2.rs", 4, "fix_b")],
        &[("src/fix3.rs", 2, "fix_c")],
        &[("src/fix4.rs", 5, "fix_d")],
    ];
    let mut report = Vec::new();
    for (n, push) in pushes.iter().enumerate() {
        for (file, functions, tag) in *push {
            c.commit(
                file,
                &source(*functions, tag),
                &format!("push {}: {tag}", n + 1),
            );
        }
        // The fresh review of the same head, in a copy (so the real chain is untouched).
        let copy = c.path().join("tmp").join(format!("fresh-{n}"));
        std::fs::create_dir_all(&copy).expect("mkdir");
        let entries: Vec<_> = std::fs::read_dir(c.path())
            .expect("read")
            .flatten()
            .filter(|e| e.file_name() != "tmp")
            .collect();
        for e in entries {
            copy_dir(&e.path(), &copy.join(e.file_name()));
        }
        let fresh = c.run_in(&copy, &[("FAKE_FAIL_RESUME", "1")]);
        assert_eq!(fresh.code, 0, "{}", fresh.log);

        let out = c.run(&[]);
        assert_eq!(out.code, 0, "{}", out.log);
        let turn = tagged(&out.log, "FAKE-PROMPT").pop().expect("a turn");
        let fresh_turn = tagged(&fresh.log, "FAKE-PROMPT")
            .pop()
            .expect("a fresh turn");
        assert_eq!(fresh_turn["resumed"], false);
        if n == 0 {
            assert_eq!(turn["resumed"], false, "{}", out.log);
            continue;
        }
        assert_eq!(turn["resumed"], true, "push {}: {}", n + 1, out.log);
        let (sent, full) = (
            turn["prompt_bytes"].as_u64().expect("bytes"),
            fresh_turn["prompt_bytes"].as_u64().expect("bytes"),
        );
        report.push((n + 1, sent, full));
    }
    eprintln!("push  resumed bytes  fresh bytes  ratio");
    for (push, sent, full) in &report {
        eprintln!(
            "{push:>4}  {sent:>13}  {full:>11}  {:>4.1} %",
            *sent as f64 * 100.0 / *full as f64
        );
    }
    for (push, sent, full) in &report {
        assert!(
            *sent * 4 <= *full,
            "push {push}: a resumed review sent {sent} bytes, a fresh one {full}: more than 25 %"
        );
    }
}

#[test]
fn a_conversation_holding_a_token_is_not_kept_and_the_next_push_is_fresh() {
    let c = Checkout::new(&pipeline("claude", ""));
    c.commit("src/lib.rs", &source(3, "a"), "one");
    let leak = c.run(&[("FAKE_MODE", "leak-token")]);
    assert_eq!(leak.code, 0, "{}", leak.log);
    assert_eq!(c.store_kinds(), ["tombstone"], "{}", leak.log);
    assert!(
        !c.review_md().contains("ghp_AAAA"),
        "the token is not published"
    );
    c.commit("src/more.rs", &source(2, "b"), "two");
    let next = c.run(&[]);
    assert_eq!(next.code, 0, "{}", next.log);
    assert!(next.log.contains("fresh"), "{}", next.log);
    assert!(c.review_md().contains("fresh review"), "{}", c.review_md());
}

#[test]
fn the_vendor_policy_holds_at_run_time() {
    let extra = r#"    reviewer-vendor-differs-from "{author}""#;
    let text = pipeline("claude", extra).replace(
        "input \"fake-mode\"",
        "input \"author\" env=\"AUTHOR_VENDOR\"\ntrusted \"input\" name=\"author\" reason=\"the job sets it\"\ninput \"fake-mode\"",
    );
    let c = Checkout::new(&text);
    c.commit("src/lib.rs", &source(3, "a"), "one");
    let same = c.run(&[("AUTHOR_VENDOR", "anthropic")]);
    assert_ne!(same.code, 0, "{}", same.log);
    assert!(
        same.log.contains("written by anthropic's model"),
        "{}",
        same.log
    );
    assert!(
        tagged(&same.log, "FAKE-SPY").is_empty(),
        "the CLI never ran"
    );
    let other = c.run(&[("AUTHOR_VENDOR", "openai")]);
    assert_eq!(other.code, 0, "{}", other.log);
    assert_eq!(tagged(&other.log, "FAKE-SPY").len(), 1, "{}", other.log);
    // A new head: the one just reviewed would stop the run before the review.
    c.commit("src/lib.rs", &source(4, "b"), "two");
    let typo = c.run(&[("AUTHOR_VENDOR", "antropic")]);
    assert_ne!(typo.code, 0, "an unknown vendor refuses: {}", typo.log);
}

/// `run` holds a reviewer behind a gateway to the rule `check` proves (principle 7): its API
/// moved by `env "OPENAI_BASE_URL"`, `codex` is of the vendor its `vendor=` names, and of none
/// without it. `check`'s finding is allowed here, so that `run`'s own refusal is what is seen.
#[test]
fn a_reviewer_behind_a_gateway_is_held_to_its_declared_vendor_at_run_time() {
    let extra = "    reviewer-vendor-differs-from \"{author}\"\n    env \"OPENAI_BASE_URL\" \"http://127.0.0.1:9/v1\"";
    let text = pipeline("codex", extra).replace(
        "input \"fake-mode\"",
        "input \"author\" env=\"AUTHOR_VENDOR\"\ntrusted \"input\" name=\"author\" reason=\"the job sets it\"\ninput \"fake-mode\"",
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("p.kdl");
    std::fs::write(&file, &text).expect("written");
    let json = crate::support::findings_json(file.to_str().expect("utf-8"));
    let ids: Vec<String> = json["files"][0]["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["check"] == "reviewer-vendor")
        .filter_map(|f| f["id"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(ids.len(), 1, "check reports the gateway: {json:#}");
    let allowed = text.replace(
        extra,
        &format!(
            "{extra}\n    allow \"reviewer-vendor\" finding=\"{}\" reason=\"the test drives run's own refusal\"",
            ids[0]
        ),
    );
    let c = Checkout::new(&allowed);
    c.commit("src/lib.rs", &source(3, "a"), "one");
    let out = c.run(&[("AUTHOR_VENDOR", "anthropic")]);
    assert_ne!(out.code, 0, "{}", out.log);
    assert!(
        out.log
            .contains("the vendor of the `codex` reviewer is unknown"),
        "{}",
        out.log
    );
    assert!(tagged(&out.log, "FAKE-SPY").is_empty(), "the CLI never ran");
}

#[test]
fn the_cli_gets_its_credential_and_nothing_else_of_the_jobs() {
    for reviewer in ["claude", "codex"] {
        let c = Checkout::new(&pipeline(reviewer, ""));
        c.commit("src/lib.rs", &source(3, "a"), "one");
        let out = c.run(&[]);
        assert_eq!(out.code, 0, "{}", out.log);
        let calls = tagged(&out.log, "FAKE-SPY");
        assert_eq!(calls.len(), 1, "one review: {}", out.log);
        let credential = if reviewer == "codex" {
            "OPENAI_API_KEY"
        } else {
            "ANTHROPIC_API_KEY"
        };
        for call in calls {
            let env = call["env"].as_object().expect("env");
            let names: BTreeSet<&str> = env.keys().map(String::as_str).collect();
            let allowed: BTreeSet<&str> = [
                "PATH",
                "HOME",
                "LANG",
                "TMPDIR",
                "TMP",
                "TEMP",
                "CODEX_HOME",
                "REVIEWFLOW_STAGE_ID",
                credential,
                "ANTHROPIC_BASE_URL",
                "FAKE_MODE",
                "FAKE_SPY_FILE",
                "FAKE_PROMPT_LOG",
                "FAKE_FINDING_PATH",
                "FAKE_FINDING_LINE",
            ]
            .into();
            assert!(names.is_subset(&allowed), "{reviewer}: {names:?}");
            let text = call.to_string();
            assert!(!text.contains(KEY), "the conversation key reached the CLI");
            assert!(
                !text.contains("ghs_jobtoken"),
                "the job's token reached the CLI"
            );
            // Present, as a stand-in for the key: the key stays with the model API proxy.
            let stand_in = env[credential].as_str().expect("a credential");
            assert!(stand_in.starts_with("reviewflow-"), "{stand_in}");
            assert!(!text.contains(API_KEY), "the model key reached the CLI");
            assert!(
                !text.contains(&format!("[redacted:{}]", secret_name(reviewer))),
                "the model key reached the CLI"
            );
        }
        let manifest = newest_manifest(c.path());
        let review = manifest["stages"]
            .as_array()
            .expect("stages")
            .iter()
            .find(|s| s["name"] == "review")
            .expect("the review stage")
            .clone();
        assert_eq!(review["facts"]["reviewer.cli"], reviewer, "{review}");
        assert!(review["facts"]["reviewer.model"].is_string(), "{review}");
        assert!(
            review["facts"]["reviewer.cli-version"].is_string(),
            "{review}"
        );
    }
}

fn secret_name(reviewer: &str) -> &'static str {
    if reviewer == "codex" {
        "openai-key"
    } else {
        "anthropic-key"
    }
}

fn newest_manifest(dir: &Path) -> serde_json::Value {
    let runs = dir.join(".reviewflow/runs");
    let mut manifests: Vec<PathBuf> = std::fs::read_dir(&runs)
        .expect("runs")
        .flatten()
        .map(|e| e.path().join("manifest.json"))
        .filter(|p| p.is_file())
        .collect();
    manifests.sort_by_key(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok());
    let last = manifests.last().expect("a manifest");
    serde_json::from_slice(&std::fs::read(last).expect("read")).expect("json")
}

#[test]
fn a_cancel_during_the_review_leaves_no_process_and_no_folder() {
    use std::io::Read as _;
    use std::sync::{Arc, Mutex};

    let c = Checkout::new(&pipeline("claude", ""));
    c.commit("src/lib.rs", &source(3, "a"), "one");
    // A tag no other test uses: it marks this CLI's environment.
    let tag = format!("FAKE-SPY-{}", std::process::id());
    let spy = format!("stderr:{tag}");
    let mut child = c
        .command(c.path(), &[("FAKE_MODE", "hang"), ("FAKE_SPY_FILE", &spy)])
        .args(["--grace", "1s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let log = Arc::new(Mutex::new(String::new()));
    let readers: Vec<_> = [
        Box::new(child.stdout.take().expect("stdout")) as Box<dyn std::io::Read + Send>,
        Box::new(child.stderr.take().expect("stderr")),
    ]
    .into_iter()
    .map(|mut pipe| {
        let log = Arc::clone(&log);
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                log.lock()
                    .expect("lock")
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        })
    })
    .collect();
    // Wait until the CLI itself runs and ignores SIGTERM (its line, shown in the run's log).
    let deadline = Instant::now() + Duration::from_secs(60);
    while !(log.lock().expect("lock").contains(&tag)
        && log.lock().expect("lock").contains("SIGTERM ignored"))
    {
        assert!(Instant::now() < deadline, "the CLI never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    let pid = rustix::process::Pid::from_raw(child.id() as i32).expect("pid");
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).expect("signal");
    let status = child.wait().expect("it ends");
    for r in readers {
        r.join().expect("reader");
    }
    let log = log.lock().expect("lock").clone();
    assert_ne!(status.code(), Some(0), "{log}");
    assert!(log.contains("cancelled"), "{log}");
    // Nothing of the CLI runs any more.
    for entry in std::fs::read_dir("/proc").expect("proc").flatten() {
        if let Ok(env) = std::fs::read(entry.path().join("environ")) {
            assert!(
                !String::from_utf8_lossy(&env).contains(&spy),
                "a fake CLI is still running: {:?}",
                entry.path()
            );
        }
    }
    // The stage's work folder (the CLI's home and session) is gone.
    let left: Vec<_> = std::fs::read_dir(c.path().join("tmp"))
        .expect("tmp")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("reviewflow-"))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}\n{log}");
}

#[test]
fn the_reviewer_reads_the_head_not_the_checkouts_edits() {
    let extra = "    workspace \"gather.head\"\n    env \"FAKE_READ_FILE\" \"src/lib.rs\"";
    let c = Checkout::new(&pipeline("claude", extra));
    c.commit("src/lib.rs", "pub fn committed() {}\n", "one");
    // An edit the head does not have.
    std::fs::write(c.path().join("src/lib.rs"), "pub fn uncommitted() {}\n").expect("write");
    let out = c.run(&[]);
    assert_eq!(out.code, 0, "{}", out.log);
    let call = tagged(&out.log, "FAKE-SPY").pop().expect("a review");
    assert_eq!(call["read"], "pub fn committed() {}\n", "{call}");
    let cwd = call["cwd"].as_str().expect("cwd");
    assert!(cwd.ends_with("/workspace"), "{cwd}");
    assert!(!Path::new(cwd).exists(), "removed with the stage");
}

#[test]
fn when_both_tries_fail_the_stage_fails_and_nothing_is_posted() {
    let c = Checkout::new(&pipeline("claude", ""));
    c.commit("src/lib.rs", &source(3, "a"), "one");
    let out = c.run(&[("FAKE_MODE", "crash")]);
    assert_eq!(out.code, 1, "{}", out.log);
    assert!(out.log.contains("no review after 2 tries"), "{}", out.log);
    assert!(out.log.contains("exited with status 101"), "{}", out.log);
    assert!(
        !c.path()
            .join(".reviewflow/forge/branch-feature/model-review/review.md")
            .exists(),
        "nothing posted"
    );
    // What the CLI printed is shown on the console and written nowhere: the reasons kept in the
    // manifest and the events log name the failure in reviewflow's words only.
    assert!(out.log.contains("Cannot read properties"), "{}", out.log);
    let mut kept = Vec::new();
    let mut dirs = vec![c.path().join(".reviewflow/runs")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("run folder").flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                kept.push(path);
            }
        }
    }
    assert!(
        kept.iter().any(|p| p.ends_with("manifest.json")),
        "{kept:?}"
    );
    for path in kept {
        let text = String::from_utf8_lossy(&std::fs::read(&path).expect("read")).into_owned();
        assert!(
            !text.contains("Cannot read properties"),
            "{} keeps the CLI's output:\n{text}",
            path.display()
        );
    }
}

#[test]
fn a_process_the_cli_leaves_behind_does_not_outlive_the_stage() {
    let c = Checkout::new(&pipeline("claude", ""));
    c.commit("src/lib.rs", &source(3, "a"), "one");
    let tag = format!("FAKE-SPY-orphan-{}", std::process::id());
    let spy = format!("stderr:{tag}");
    let out = c.run(&[("FAKE_MODE", "orphan"), ("FAKE_SPY_FILE", &spy)]);
    assert_eq!(out.code, 0, "{}", out.log);
    assert!(out.log.contains(&tag), "the CLI ran: {}", out.log);
    for entry in std::fs::read_dir("/proc").expect("proc").flatten() {
        if let Ok(env) = std::fs::read(entry.path().join("environ")) {
            assert!(
                !String::from_utf8_lossy(&env).contains(&spy),
                "the CLI's `setsid` child is still running: {:?}\n{}",
                entry.path(),
                out.log
            );
        }
    }
}

/// The tries share the stage's timeout: a first try that hangs runs out of its share and says
/// "timed out", and the second try still has time to review (docs/reviewers.md, "Two tries").
#[test]
fn a_try_that_hangs_times_out_and_the_next_try_reviews_within_the_stage_timeout() {
    let text = pipeline("claude", "").replace(r#"timeout="2m""#, r#"timeout="10s""#);
    let c = Checkout::new(&text);
    c.commit("src/lib.rs", &source(3, "a"), "one");
    let started = std::time::Instant::now();
    let out = c
        .command(c.path(), &[("FAKE_MODE", "hang-first")])
        .args(["--grace", "1s"])
        .output()
        .expect("the binary runs");
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0), "{log}");
    // 10 s shared by the 2 tries left, less the 1 s grace: 4 s for the first, less half of what
    // the stage took before it (the CLI's version).
    let after = log
        .split("the fresh review ended without a review (timed out after ")
        .nth(1)
        .and_then(|rest| rest.split_once("s): another fresh review"))
        .and_then(|(seconds, _)| seconds.parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no try timed out: {log}"));
    assert!((3.0..=4.0).contains(&after), "{after}: {log}");
    assert!(log.contains("reviewed (try 2, fresh)"), "{log}");
    assert!(!log.contains("cancelled"), "{log}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "{log}"
    );
    assert!(
        c.review_md().contains("## Findings (1)"),
        "{}",
        c.review_md()
    );
}
