//! Nothing private at rest (docs/executor.md): after a run, whatever its end, no plaintext of the
//! conversation or the diff remains under `.reviewflow/` or in the temp folder the run used.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{Repo, files_under, root};

const KEY: &str = "0123456789abcdef0123456789abcdef-local-test";
/// In the change (a committed file): reaches the diff and, through the reviewer, the conversation.
const DIFF_MARKER: &str = "zebra-quokka-7351";
/// Written by the reviewer into its conversation only.
const CONV_MARKER: &str = "CONVERSATION-OKAPI-2209";
const TOKEN: &str = "ghp_0123456789abcdefghijklmnopqrstuvwxyZ";

struct Checkout {
    repo: Repo,
    /// The temp folder of the runs (`TMPDIR`), walked like `.reviewflow/`.
    tmp: tempfile::TempDir,
}

struct Out {
    code: i32,
    all: String,
}

/// The repository's own methods (`path`, `git`, `commit_file`) on the checkout.
impl std::ops::Deref for Checkout {
    type Target = Repo;
    fn deref(&self) -> &Repo {
        &self.repo
    }
}

impl Checkout {
    /// A repository whose last commit adds the diff marker, a command reviewer that copies what
    /// it was given into its conversation (with `leak`, a token too), and `p.kdl`: the local
    /// example with that reviewer and a `boom` stage (it reads the diff, and fails unless the
    /// file `go-on` exists, or with `slow` sleeps) that `post` waits for.
    fn new(leak: bool, boom: &str) -> Self {
        let c = Self {
            repo: Repo::init(),
            tmp: tempfile::tempdir().expect("tempdir"),
        };
        c.commit_file("README.md", "hello\n", "first");
        c.commit_file(
            "src/marker.txt",
            &format!("a line with {DIFF_MARKER}\n"),
            "second",
        );
        // Untracked: not in the diff.
        let script = c.path().join("reviewer.sh");
        let leak_line = if leak {
            format!("echo 'token {TOKEN}'\n")
        } else {
            String::new()
        };
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\nset -e\nmkdir -p \"$REVIEWFLOW_CONVERSATION_OUT\"\n\
                 {{\necho {CONV_MARKER}\n{leak_line}cat \"$REVIEWFLOW_PROMPT\"\n\
                 find \"$REVIEWFLOW_INPUTS\" -type f | sort | while read -r f; do cat \"$f\"; done\n\
                 }} > \"$REVIEWFLOW_CONVERSATION_OUT/c.txt\"\n\
                 printf '{{\"version\":1,\"comment\":\"ok\",\"findings\":[],\"conversation\":\"c.txt\",\"resumed\":false}}' > \"$REVIEWFLOW_RESULT\"\n"
            ),
        )
        .expect("write");
        Command::new("chmod")
            .arg("+x")
            .arg(&script)
            .status()
            .expect("chmod");
        let pipeline = std::fs::read_to_string(root().join("examples/local.kdl"))
            .expect("read")
            .replace(
                "reviewer \"rules\"",
                &format!("reviewer \"command\"\n    command \"{}\"", script.display()),
            )
            .replace(
                "stage \"post\" uses=\"std/post\" {",
                &format!(
                    "stage \"boom\" uses=\"run\" {{\n    env \"D\" \"{{gather.diff}}\"\n    command \"sh\" \"-c\" \"{boom}\"\n}}\n\n\
                     stage \"post\" uses=\"std/post\" {{\n    needs \"boom\""
                ),
            );
        std::fs::write(c.path().join("p.kdl"), pipeline).expect("write");
        c
    }

    fn command(&self, extra: &[&str]) -> Command {
        let mut c = crate::support::command();
        c.args(["run", "p.kdl"])
            .args(extra)
            .current_dir(self.path())
            .env("REVIEW_CONVERSATION_KEY", KEY)
            .env("TMPDIR", self.tmp.path());
        c
    }

    fn run(&self, extra: &[&str]) -> Out {
        let out = self.command(extra).output().expect("the binary runs");
        Out {
            code: out.status.code().unwrap_or(-1),
            all: format!(
                "exit {:?}\n{}{}",
                out.status.code(),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        }
    }

    fn runs(&self) -> PathBuf {
        self.path().join(".reviewflow/runs")
    }

    /// The manifest of the only run, or of run `id`.
    fn manifest(&self, id: &str) -> serde_json::Value {
        let text = std::fs::read(self.runs().join(id).join("manifest.json")).expect("manifest");
        serde_json::from_slice(&text).expect("json")
    }

    fn run_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = std::fs::read_dir(self.runs())
            .expect("runs")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        ids.sort();
        ids
    }

    /// Every file under `.reviewflow/` and the runs' temp folder holding one of `needles`.
    fn plaintext(&self, needles: &[&str]) -> Vec<(PathBuf, String)> {
        let mut found = Vec::new();
        for dir in [
            self.path().join(".reviewflow"),
            self.tmp.path().to_path_buf(),
        ] {
            for f in files_under(&dir) {
                let Ok(bytes) = std::fs::read(&f) else {
                    continue;
                };
                let text = String::from_utf8_lossy(&bytes);
                for n in needles {
                    if text.contains(n) {
                        found.push((f.clone(), (*n).to_string()));
                    }
                }
            }
        }
        found
    }

    fn assert_no_plaintext(&self, out: &Out) {
        let found = self.plaintext(&[DIFF_MARKER, CONV_MARKER, TOKEN]);
        assert!(
            found.is_empty(),
            "plaintext at rest: {found:#?}\n{}",
            out.all
        );
    }
}

fn discarded(manifest: &serde_json::Value, stage: &str, output: &str) -> Option<String> {
    let s = manifest["stages"]
        .as_array()?
        .iter()
        .find(|s| s["name"] == stage)?;
    let o = &s["outputs"][output];
    assert!(
        o["file"].is_null(),
        "{stage}.{output} names no file: {manifest:#}"
    );
    assert!(o["digest"].is_string(), "its digest stays");
    o["discarded"].as_str().map(str::to_string)
}

#[test]
fn a_review_leaves_no_plaintext_and_the_manifest_says_what_it_discarded() {
    let c = Checkout::new(false, "test -n \\\"$D\\\"");
    let out = c.run(&[]);
    assert_eq!(out.code, 0, "{}", out.all);
    assert!(out.all.contains("sealed the conversation"), "{}", out.all);
    c.assert_no_plaintext(&out);
    let ids = c.run_ids();
    let run_dir = c.runs().join(&ids[0]);
    assert!(
        run_dir.join("ended").is_file() && !run_dir.join("lock").exists(),
        "the lock says the run ended"
    );
    let m = c.manifest(&ids[0]);
    assert_eq!(
        discarded(&m, "review", "conversation").as_deref(),
        Some("private")
    );
    assert_eq!(discarded(&m, "gather", "diff").as_deref(), Some("diff"));
    // What is published or sealed is kept.
    let comment = &m["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .find(|s| s["name"] == "review")
        .expect("review")["outputs"]["comment"];
    assert!(comment["file"].is_string(), "{m:#}");
    assert!(comment["discarded"].is_null());
    let events =
        std::fs::read_to_string(c.runs().join(&ids[0]).join("events.jsonl")).expect("events");
    assert!(!events.contains(CONV_MARKER) && !events.contains(DIFF_MARKER));
}

#[test]
fn a_conversation_with_a_credential_is_not_sealed_and_not_kept() {
    let c = Checkout::new(true, "test -n \\\"$D\\\"");
    let out = c.run(&[]);
    assert_eq!(out.code, 0, "{}", out.all);
    assert!(out.all.contains("github"), "the scan found it: {}", out.all);
    assert!(!out.all.contains("sealed the conversation"), "{}", out.all);
    c.assert_no_plaintext(&out);
}

#[test]
fn a_failed_run_keeps_nothing_and_its_resume_runs_the_private_producers_again() {
    let c = Checkout::new(false, "test -f go-on && test -n \\\"$D\\\"");
    let first = c.run(&[]);
    assert_eq!(first.code, 1, "{}", first.all);
    c.assert_no_plaintext(&first);
    let parent = c.run_ids().remove(0);

    std::fs::write(c.path().join("go-on"), "").expect("write");
    let second = c.run(&["--resume", &parent]);
    assert_eq!(second.code, 0, "{}", second.all);
    // `boom` reads the discarded diff: gather runs again, and everything after it.
    assert!(
        second
            .all
            .contains(&format!("was discarded at the end of run {parent}")),
        "{}",
        second.all
    );
    c.assert_no_plaintext(&second);
    let child = c
        .run_ids()
        .into_iter()
        .find(|id| *id != parent)
        .expect("a second run");
    let (p, n) = (c.manifest(&parent), c.manifest(&child));
    let record = |m: &serde_json::Value, stage: &str| -> serde_json::Value {
        m["stages"]
            .as_array()
            .expect("stages")
            .iter()
            .find(|s| s["name"] == stage)
            .expect("stage")
            .clone()
    };
    for stage in ["gather", "review"] {
        assert_eq!(record(&n, stage)["outcome"], "succeeded", "{n:#}");
    }
    // The same result: the same diff, comment and findings (the conversation holds the try's
    // own prompt, which names the run).
    for (stage, output) in [
        ("gather", "diff"),
        ("review", "comment"),
        ("review", "findings"),
    ] {
        assert_eq!(
            record(&p, stage)["outputs"][output]["digest"],
            record(&n, stage)["outputs"][output]["digest"],
            "{stage}.{output}"
        );
    }
}

#[test]
fn a_cancelled_run_keeps_nothing() {
    let c = Checkout::new(false, "test -n \\\"$D\\\" && sleep 30");
    let child = c
        .command(&[])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    // Wait until the conversation is kept (the plaintext exists), then cancel.
    let deadline = Instant::now() + Duration::from_secs(60);
    let conversation = loop {
        let kept = std::fs::read_dir(c.runs()).ok().and_then(|mut d| {
            let run = d.next()?.ok()?.path();
            // A folder, or its one file.
            let p = run.join("outputs/review/conversation");
            p.exists().then_some(p)
        });
        if let Some(p) = kept {
            break p;
        }
        assert!(
            Instant::now() < deadline,
            "the review never kept its conversation"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let text: String = if conversation.is_dir() {
        files_under(&conversation)
            .iter()
            .map(|f| std::fs::read_to_string(f).unwrap_or_default())
            .collect()
    } else {
        std::fs::read_to_string(&conversation).expect("read")
    };
    assert!(
        text.contains(CONV_MARKER) && text.contains(DIFF_MARKER),
        "{text}"
    );
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    let out = child.wait_with_output().expect("wait");
    let out = Out {
        code: out.status.code().unwrap_or(-1),
        all: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    assert_eq!(out.code, 143, "{}", out.all);
    c.assert_no_plaintext(&out);
}

#[test]
fn what_a_killed_run_left_is_removed_by_the_next_run_and_said() {
    let c = Checkout::new(false, "test -n \\\"$D\\\"");
    let first = c.run(&[]);
    assert_eq!(first.code, 0, "{}", first.all);
    // A run killed mid-way: a manifest that never became final, plaintext outputs, a work
    // folder in the temp folder, and a lock nobody holds.
    let dead = "20000101T000000Z-dead0001";
    let dir = c.runs().join(dead);
    std::fs::create_dir_all(dir.join("outputs/review/conversation")).expect("mkdir");
    std::fs::create_dir_all(dir.join("outputs/gather")).expect("mkdir");
    std::fs::write(
        dir.join("manifest.json"),
        format!("{{\"version\":1,\"run_id\":\"{dead}\",\"final\":false}}"),
    )
    .expect("write");
    std::fs::write(dir.join("lock"), "").expect("write");
    std::fs::write(dir.join("outputs/review/conversation/c.txt"), CONV_MARKER).expect("write");
    std::fs::write(dir.join("outputs/gather/diff"), DIFF_MARKER).expect("write");
    let work = c
        .tmp
        .path()
        .join(format!("reviewflow-{dead}-review-abc123"));
    std::fs::create_dir_all(&work).expect("mkdir");
    std::fs::write(work.join("prompt.md"), CONV_MARKER).expect("write");
    // A run that is alive (its lock is held) is left alone.
    let live = "20000101T000001Z-live0001";
    let live_dir = c.runs().join(live);
    std::fs::create_dir_all(live_dir.join("outputs/review")).expect("mkdir");
    std::fs::write(
        live_dir.join("manifest.json"),
        format!("{{\"version\":1,\"run_id\":\"{live}\",\"final\":false}}"),
    )
    .expect("write");
    std::fs::write(live_dir.join("lock"), "").expect("write");
    std::fs::write(live_dir.join("outputs/review/conversation"), "live").expect("write");
    // The holder says when it holds the lock: the run starts after that line, not after a time.
    let mut holder = Command::new("flock")
        .arg(live_dir.join("lock"))
        .args(["sh", "-c", "echo locked; exec sleep 60"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("flock");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(holder.stdout.take().expect("stdout")),
        &mut line,
    )
    .expect("the holder's line");
    assert_eq!(line, "locked\n");

    let out = c.run(&[]);
    let _ = holder.kill();
    let _ = holder.wait();
    assert_eq!(out.code, 0, "{}", out.all);
    assert!(
        out.all.contains(&format!("run {dead} never ended")),
        "{}",
        out.all
    );
    assert!(out.all.contains("may have held plaintext"), "{}", out.all);
    c.assert_no_plaintext(&out);
    assert!(dir.join("manifest.json").is_file(), "its record stays");
    assert!(
        live_dir.join("outputs/review/conversation").is_file(),
        "a live run is not touched"
    );
    assert!(!out.all.contains(live), "{}", out.all);
}

/// An output written by a program that holds a secret carries it in a form the redactor may not
/// know (here reversed): it is discarded when the run ends, and the manifest says why.
#[test]
fn an_output_of_a_program_that_holds_a_secret_does_not_outlive_the_run() {
    let repo = Repo::init();
    repo.commit_file("README.md", "hello\n", "first");
    let tmp = tempfile::tempdir().expect("tempdir");
    let secret = "s3cr3t-walrus-0123456789-abcdefghij";
    let reversed: String = secret.chars().rev().collect();
    std::fs::write(
        repo.path().join("p.kdl"),
        r#"pipeline "trace"
forge "local"
secret "deploy-token" env="DEPLOY_TOKEN" can="" {
    visible-to "notify"
}
stage "notify" uses="run" {
    cwd "{work}"
    command "sh" "-c" "printf '%s' \"$DEPLOY_TOKEN\" | rev > trace.txt"
    secret-env "DEPLOY_TOKEN" "deploy-token"
    output "trace" file="trace.txt"
}
"#,
    )
    .expect("write");
    let out = crate::support::command()
        .args(["run", "p.kdl"])
        .current_dir(repo.path())
        .env("DEPLOY_TOKEN", secret)
        .env("TMPDIR", tmp.path())
        .output()
        .expect("the binary runs");
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0), "{all}");
    for dir in [repo.path().join(".reviewflow"), tmp.path().to_path_buf()] {
        for f in files_under(&dir) {
            let text = String::from_utf8_lossy(&std::fs::read(&f).unwrap_or_default()).into_owned();
            assert!(
                !text.contains(&reversed),
                "{} holds the secret reversed",
                f.display()
            );
        }
    }
    let runs = repo.path().join(".reviewflow/runs");
    let id = std::fs::read_dir(&runs)
        .expect("runs")
        .next()
        .expect("a run")
        .expect("entry")
        .file_name();
    let m: serde_json::Value = serde_json::from_slice(
        &std::fs::read(runs.join(id).join("manifest.json")).expect("manifest"),
    )
    .expect("json");
    assert_eq!(discarded(&m, "notify", "trace").as_deref(), Some("secret"));
}
