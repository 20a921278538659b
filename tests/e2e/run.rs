//! `reviewflow run`: the executor end to end, with `run` stages that are small scripts.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::support::{files_under, root};

const SECRET: &str = "s3cr3t-value-for-the-tests-0123456789";

/// A checkout with a pipeline, and the runs folder beside it.
struct Case {
    dir: tempfile::TempDir,
}

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Out {
    fn all(&self) -> String {
        format!(
            "exit {}\n--- stdout\n{}--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

fn scripts() -> String {
    root()
        .join("engine/tests/fixtures/run")
        .to_string_lossy()
        .into_owned()
}

impl Case {
    fn new(pipeline: &str) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join("checkout")).expect("checkout");
        std::fs::create_dir(dir.path().join("out")).expect("out");
        let case = Self { dir };
        case.write_pipeline(pipeline);
        case
    }

    fn write_pipeline(&self, text: &str) {
        // An `allow` in a case names the findings it hides by id (principle 6).
        let text = if text.contains("allow \"") {
            crate::support::with_allow_ids(text)
        } else {
            text.to_owned()
        };
        std::fs::write(self.path("review.kdl"), text).expect("write pipeline");
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn command(&self, extra: &[&str], env: &[(&str, &str)]) -> Command {
        let mut c = crate::support::command();
        c.arg("run")
            .arg(self.path("review.kdl"))
            .arg("--checkout")
            .arg(self.path("checkout"))
            .arg("--run-dir")
            .arg(self.path("runs"))
            .args(["--grace", "300ms"])
            .args(extra)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("SCRIPTS", scripts())
            // Beside the checkout, not holding it: a write grant of a folder that holds the
            // checkout's `.reviewflow` is refused (docs/executor.md).
            .env("OUT", self.path("out"));
        for (k, v) in env {
            c.env(k, v);
        }
        c
    }

    fn run(&self, extra: &[&str], env: &[(&str, &str)]) -> Out {
        let out = self
            .command(extra, env)
            .stdin(Stdio::null())
            .output()
            .expect("the binary runs");
        Out {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    fn runs(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(self.path("runs"))
            .map(|d| {
                d.map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }

    /// The run that started last (ids of runs within one second do not sort by time).
    fn last_run(&self) -> String {
        self.runs()
            .into_iter()
            .max_by_key(|r| {
                self.manifest(r)["started_at"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string()
            })
            .expect("a run directory")
    }

    fn manifest(&self, run: &str) -> serde_json::Value {
        let text = std::fs::read_to_string(self.path(&format!("runs/{run}/manifest.json")))
            .expect("manifest");
        serde_json::from_str(&text).expect("manifest json")
    }

    fn events(&self, run: &str) -> Vec<serde_json::Value> {
        std::fs::read_to_string(self.path(&format!("runs/{run}/events.jsonl")))
            .expect("events")
            .lines()
            .map(|l| serde_json::from_str(l).expect("event json"))
            .collect()
    }
}

fn outcome(m: &serde_json::Value, stage: &str) -> String {
    m["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .find(|s| s["name"] == stage)
        .map(|s| s["outcome"].as_str().unwrap_or_default().to_string())
        .unwrap_or_default()
}

fn kinds(events: &[serde_json::Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            format!(
                "{} {}",
                e["event"].as_str().unwrap_or_default(),
                e["stage"].as_str().unwrap_or_default()
            )
        })
        .collect()
}

fn validate(schema: &str, value: &serde_json::Value) {
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("schema").join(schema)).expect("schema"),
    )
    .expect("schema json");
    let validator = jsonschema::validator_for(&schema).expect("a valid schema");
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

/// Each of `one` and `two` waits for the other to have started (a file, not a time): they end
/// only if they ran together, and fail after 30 s if not.
const PARALLEL: &str = r#"
pipeline "parallel"
input "out" env="OUT"
trusted "input" name="out" reason="the test sets it"
stage "one" uses="run" {
    command "sh" "-c" "touch {out}/one; i=0; until [ -e {out}/two ]; do i=$((i+1)); [ $i -gt 3000 ] && exit 1; sleep 0.01; done"
}
stage "two" uses="run" {
    command "sh" "-c" "touch {out}/two; i=0; until [ -e {out}/one ]; do i=$((i+1)); [ $i -gt 3000 ] && exit 1; sleep 0.01; done"
}
stage "three" uses="run" {
    command "sh" "-c" "echo {one.ok} {two.ok}"
    output "both"
}
"#;

#[test]
fn independent_stages_run_together() {
    let case = Case::new(PARALLEL);
    let out = case.run(&["--jobs", "2"], &[]);
    assert_eq!(out.code, 0, "{}", out.all());
    let run = case.last_run();
    let events = case.events(&run);
    let k = kinds(&events);
    // Both sleeps started before either ended: they overlapped.
    let first_end = k
        .iter()
        .position(|e| e.starts_with("stage_end"))
        .expect("an end");
    assert!(
        k[..first_end].contains(&"stage_start one".to_string()),
        "{k:?}"
    );
    assert!(
        k[..first_end].contains(&"stage_start two".to_string()),
        "{k:?}"
    );
    let m = case.manifest(&run);
    assert_eq!(m["status"], "succeeded");
    assert_eq!(m["final"], true);
    let both = std::fs::read_to_string(case.path(&format!("runs/{run}/outputs/three/both")))
        .expect("kept output");
    assert_eq!(both, "true true");
    validate("manifest.schema.json", &m);
    for e in &events {
        validate("events.schema.json", e);
    }
}

const ONE_AT_A_TIME: &str = r#"
pipeline "serial"
stage "one" uses="run" {
    command "sh" "-c" "echo begin; sleep 0.3; echo finish"
}
stage "two" uses="run" {
    command "sh" "-c" "echo begin; sleep 0.3; echo finish"
}
stage "three" uses="run" {
    command "sh" "-c" "echo begin; sleep 0.3; echo finish"
}
"#;

/// `--jobs 1`: one program at a time. A stage may be prepared while another's program runs
/// (docs/executor.md, "Scheduling"), but no program begins before the one before it finished.
#[test]
fn jobs_one_runs_one_program_at_a_time() {
    let case = Case::new(ONE_AT_A_TIME);
    let out = case.run(&["--jobs", "1"], &[]);
    assert_eq!(out.code, 0, "{}", out.all());
    let said: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.ends_with("│ begin") || l.ends_with("│ finish"))
        .collect();
    assert_eq!(said.len(), 6, "{}", out.all());
    for pair in said.chunks(2) {
        let stage = |l: &str| l.split('│').next().unwrap_or_default().trim().to_owned();
        assert!(
            pair[0].ends_with("begin")
                && pair[1].ends_with("finish")
                && stage(pair[0]) == stage(pair[1]),
            "{}",
            out.all()
        );
    }
}

const SCOPE: &str = r#"
pipeline "scope"
input "scripts" env="SCRIPTS"
input "out" env="OUT"
secret "token" env="TEST_TOKEN" min-bytes=16 {
    visible-to "holder"
}
stage "holder" uses="run" {
    command "sh" "{scripts}/spy.sh" "first-arg"
    env "REPORT" "{out}/holder.txt"
    secret-env "TOKEN" "token"
    allow "untrusted-input" reason="the test's own scripts and report folder, shared on purpose"
}
stage "other" uses="run" {
    command "sh" "{scripts}/spy.sh"
    env "REPORT" "{out}/other.txt"
}
"#;

#[test]
fn a_secret_reaches_only_the_stages_in_its_scope() {
    let case = Case::new(SCOPE);
    let out = case.run(&[], &[("TEST_TOKEN", SECRET), ("HOME", "/root")]);
    assert_eq!(out.code, 0, "{}", out.all());
    let holder = std::fs::read_to_string(case.path("out/holder.txt")).expect("holder report");
    let other = std::fs::read_to_string(case.path("out/other.txt")).expect("other report");
    assert!(
        holder.contains(&format!("environ:TOKEN={SECRET}")),
        "{holder}"
    );
    assert!(holder.contains(&format!("env:TOKEN={SECRET}")), "{holder}");
    for line in holder.lines().filter(|l| l.starts_with("arg:")) {
        assert!(!line.contains(SECRET), "a secret in argv: {line}");
    }
    assert!(!other.contains(SECRET), "{other}");
    // A cleared environment: only what the stage declares (and PATH, REVIEWFLOW_WORK_DIR).
    for report in [&holder, &other] {
        let names: Vec<&str> = report
            .lines()
            .filter_map(|l| l.strip_prefix("environ:"))
            .filter_map(|l| l.split_once('=').map(|(n, _)| n))
            .collect();
        for n in &names {
            assert!(
                [
                    "PATH",
                    "REPORT",
                    "TOKEN",
                    "REVIEWFLOW_WORK_DIR",
                    "PWD",
                    // The work folder is the child's temp folder; the marker attributes what it
                    // leaves behind (docs/isolation.md).
                    "TMPDIR",
                    "TMP",
                    "TEMP",
                    "REVIEWFLOW_STAGE_ID",
                ]
                .contains(n),
                "unexpected variable {n} in {names:?}"
            );
        }
        assert!(!names.contains(&"HOME") && !names.contains(&"TEST_TOKEN"));
    }
    assert!(!out.stderr.contains(SECRET) && !out.stdout.contains(SECRET));
}

const LEAK: &str = r#"
pipeline "leak"
input "scripts" env="SCRIPTS"
trusted "input" name="scripts" reason="the test sets it"
secret "token" env="TEST_TOKEN" {
    visible-to "leak"
}
stage "leak" uses="run" {
    command "sh" "{scripts}/leak.sh"
    secret-env "TOKEN" "token"
    output "said"
    output "file" file="out.txt"
}
"#;

#[test]
fn a_secret_echoed_by_a_child_is_redacted_everywhere() {
    let case = Case::new(LEAK);
    let out = case.run(&[], &[("TEST_TOKEN", SECRET)]);
    assert_eq!(out.code, 0, "{}", out.all());
    assert!(out.stderr.contains("[redacted:token]"), "{}", out.all());
    let b64 = "czNjcjN0LXZhbHVlLWZvci10aGUtdGVzdHMtMDEyMzQ1Njc4OQ";
    let run = case.last_run();
    let mut kept = out.all();
    for entry in files_under(&case.path(&format!("runs/{run}"))) {
        kept.push_str(&String::from_utf8_lossy(
            &std::fs::read(entry).expect("read"),
        ));
    }
    assert!(!kept.contains(SECRET), "{kept}");
    assert!(!kept.contains(b64), "{kept}");
    // What `leak` said carries the secret, so it does not outlive the run (a stage that reads
    // it while the run goes on reads it redacted: `engine/tests/run_outputs.rs`).
    assert!(!case.path(&format!("runs/{run}/outputs/leak/said")).exists());
    assert!(kept.contains("\"discarded\": \"secret\""), "{kept}");
}

fn policy_pipeline(on_error: &str) -> String {
    format!(
        r#"
pipeline "policy"
stage "bad" uses="run" on-error="{on_error}" {{
    command "sh" "-c" "echo about to fail; exit 3"
    output "said"
}}
stage "after" uses="run" {{
    command "sh" "-c" "echo [{{bad.said}}] ok={{bad.ok}}"
    output "seen"
}}
stage "guarded" uses="run" when="bad.ok" {{
    command "true"
}}
stage "independent" uses="run" {{
    command "true"
}}
"#
    )
}

#[test]
fn on_error_fail_stops_the_run_with_exit_1() {
    let case = Case::new(&policy_pipeline("fail"));
    let out = case.run(&["--jobs", "1"], &[]);
    assert_eq!(out.code, 1, "{}", out.all());
    assert!(
        out.stderr
            .contains("✗ bad: failed — the command exited with code 3"),
        "{}",
        out.all()
    );
    let m = case.manifest(&case.last_run());
    assert_eq!(m["status"], "failed");
    assert_eq!(outcome(&m, "bad"), "failed");
    assert_eq!(outcome(&m, "after"), "not-run");
    assert_eq!(outcome(&m, "guarded"), "not-run");
}

#[test]
fn on_error_fallback_goes_on_with_the_fallback_values() {
    let case = Case::new(&policy_pipeline("fallback"));
    let out = case.run(&[], &[]);
    assert_eq!(out.code, 0, "{}", out.all());
    assert!(
        out.stderr
            .contains("⚠ bad: fell back — the command exited with code 3"),
        "{}",
        out.all()
    );
    assert!(
        out.stderr
            .contains("↷ guarded: skipped — `when` bad.ok is false"),
        "{}",
        out.all()
    );
    let run = case.last_run();
    let m = case.manifest(&run);
    assert_eq!(outcome(&m, "bad"), "fell-back");
    assert_eq!(outcome(&m, "after"), "succeeded");
    assert_eq!(outcome(&m, "guarded"), "skipped");
    assert_eq!(outcome(&m, "independent"), "succeeded");
    let seen = std::fs::read_to_string(case.path(&format!("runs/{run}/outputs/after/seen")))
        .expect("seen");
    assert_eq!(
        seen, "[] ok=false",
        "an absent output renders empty; ok is false"
    );
    let k = kinds(&case.events(&run));
    assert!(k.contains(&"fallback bad".to_string()) && k.contains(&"skip guarded".to_string()));
}

#[test]
fn on_error_skip_skips_the_stages_that_read_it() {
    let case = Case::new(&policy_pipeline("skip"));
    let out = case.run(&[], &[]);
    assert_eq!(out.code, 0, "{}", out.all());
    let m = case.manifest(&case.last_run());
    assert_eq!(outcome(&m, "bad"), "skipped");
    assert_eq!(outcome(&m, "after"), "skipped");
    assert_eq!(outcome(&m, "guarded"), "skipped");
    assert_eq!(outcome(&m, "independent"), "succeeded");
    assert!(
        out.stderr.contains("↷ after: skipped — `bad` was skipped"),
        "{}",
        out.all()
    );
}

fn missing_secret_pipeline(on_missing: &str) -> String {
    format!(
        r#"
pipeline "missing"
secret "key" env="TEST_KEY" min-bytes=32 on-missing="{on_missing}" {{
    visible-to "holder"
}}
stage "holder" uses="run" on-error="fallback" {{
    command "sh" "-c" "echo ran"
    secret-env "KEY" "key"
}}
stage "free" uses="run" {{
    command "true"
}}
"#
    )
}

#[test]
fn a_missing_secret_under_on_missing_fail_fails_the_run_before_any_stage() {
    let case = Case::new(&missing_secret_pipeline("fail"));
    let out = case.run(&[], &[]);
    assert_eq!(out.code, 1, "{}", out.all());
    assert!(
        out.stderr
            .contains("error: secret `key` is not set (set $TEST_KEY"),
        "{}",
        out.all()
    );
    let run = case.last_run();
    let m = case.manifest(&run);
    assert_eq!(m["status"], "failed");
    assert_eq!(outcome(&m, "free"), "not-run");
    assert!(
        !kinds(&case.events(&run))
            .iter()
            .any(|k| k.starts_with("stage_start"))
    );
}

#[test]
fn a_short_secret_under_on_missing_disable_disables_its_stages() {
    let case = Case::new(&missing_secret_pipeline("disable"));
    let out = case.run(&[], &[("TEST_KEY", "too-short")]);
    assert_eq!(out.code, 0, "{}", out.all());
    assert!(
        out.stderr
            .contains("warning: secret `key` in $TEST_KEY is too short"),
        "{}",
        out.all()
    );
    assert!(
        out.stderr
            .contains("⚠ holder: fell back — secret `key` is too short"),
        "{}",
        out.all()
    );
    assert!(
        !out.stderr.contains("holder │ ran"),
        "the stage must not run"
    );
    let m = case.manifest(&case.last_run());
    assert_eq!(outcome(&m, "holder"), "fell-back");
    assert_eq!(outcome(&m, "free"), "succeeded");
    assert_eq!(m["secrets"]["key"], "too-short");
}

fn gone(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // A zombie waiting for its reaper is dead too.
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|r| r.trim_start().starts_with('Z')),
    }
}

const STUBBORN: &str = r#"
pipeline "stubborn"
input "scripts" env="SCRIPTS"
trusted "input" name="scripts" reason="the test sets it"
input "out" env="OUT"
trusted "input" name="out" reason="the test sets it"
// The timeout leaves a loaded machine time to start the script and set its trap: a SIGTERM
// before the trap would end it at once, and the grace would go untested.
stage "stubborn" uses="run" timeout="3s" {
    command "sh" "{scripts}/stubborn.sh"
    env "PIDS" "{out}/pids"
}
"#;

#[test]
fn a_timed_out_child_that_ignores_sigterm_is_killed_after_the_grace() {
    let case = Case::new(STUBBORN);
    let out = case.run(&[], &[]);
    assert_eq!(out.code, 1, "{}", out.all());
    assert!(
        out.stderr
            .contains("✗ stubborn: failed — timed out after 3.0 s"),
        "{}",
        out.all()
    );
    assert!(
        out.stderr.contains("killed after the grace period"),
        "{}",
        out.all()
    );
    let pids = std::fs::read_to_string(case.path("out/pids")).expect("pids");
    for pid in pids.split_whitespace() {
        assert!(gone(pid), "process {pid} outlived the run");
    }
    // The run's work folders live in `<temp>/reviewflow-<run id>/` (docs/executor.md): named by
    // the run's id, found through its run directory.
    let run_ids: Vec<String> = std::fs::read_dir(case.path("runs"))
        .expect("runs")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(run_ids.len(), 1, "{run_ids:?}");
    let leftovers: Vec<_> = std::fs::read_dir(std::env::temp_dir())
        .expect("tmp")
        .filter_map(|e| e.ok())
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_prefix("reviewflow-")
                .is_some_and(|rest| rest.starts_with(run_ids[0].as_str()))
        })
        .collect();
    assert!(
        leftovers.is_empty(),
        "work folders left behind: {leftovers:?}"
    );
}

const LONG: &str = r#"
pipeline "long"
input "scripts" env="SCRIPTS"
trusted "input" name="scripts" reason="the test sets it"
input "out" env="OUT"
trusted "input" name="out" reason="the test sets it"
stage "long" uses="run" {
    command "sh" "{scripts}/stubborn.sh"
    env "PIDS" "{out}/pids"
}
stage "later" uses="run" {
    command "echo" "{long.ok}"
}
"#;

#[test]
fn sigterm_to_reviewflow_ends_the_run_with_143_and_no_orphan() {
    let case = Case::new(LONG);
    let child = case
        .command(&[], &[])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    // Wait until the stage's child has started (it writes its pids), however long that takes.
    for _ in 0..600 {
        if std::fs::read_to_string(case.path("out/pids")).is_ok_and(|p| p.lines().count() == 2) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let out = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(143), "{stderr}");
    assert!(stderr.contains("received SIGTERM"), "{stderr}");
    let run = case.last_run();
    let m = case.manifest(&run);
    assert_eq!(m["status"], "cancelled");
    assert_eq!(m["exit_code"], 143);
    assert_eq!(outcome(&m, "long"), "cancelled");
    assert_eq!(outcome(&m, "later"), "not-run");
    assert!(kinds(&case.events(&run)).contains(&"cancel ".to_string()));
    let pids = std::fs::read_to_string(case.path("out/pids")).expect("pids");
    for pid in pids.split_whitespace() {
        assert!(gone(pid), "process {pid} outlived the run");
    }
}

const RESUMABLE: &str = r#"
pipeline "resumable"
input "project" env="PROJECT" default="alpha"
input "out" env="OUT"
trusted "input" name="out" reason="the test sets it"
stage "first" uses="run" {
    command "sh" "-c" "echo x >> {out}/first-ran; echo value-{project}"
    output "value"
}
stage "second" uses="run" {
    command "sh" "-c" "test -f {out}/allow && echo got-{first.value}"
    output "seen"
}
"#;

/// A failed run whose `first` completed; returns its id.
fn failed_parent(case: &Case, env: &[(&str, &str)]) -> String {
    let out = case.run(&[], env);
    assert_eq!(out.code, 1, "{}", out.all());
    case.last_run()
}

#[test]
fn resume_reuses_completed_stages_and_runs_the_rest() {
    let case = Case::new(RESUMABLE);
    let parent = failed_parent(&case, &[]);
    std::fs::write(case.path("out/allow"), "").expect("allow");
    let out = case.run(&["--resume", &parent], &[]);
    assert_eq!(out.code, 0, "{}", out.all());
    assert!(
        out.stderr
            .contains(&format!("resuming run {parent}: reusing first")),
        "{}",
        out.all()
    );
    let ran = std::fs::read_to_string(case.path("out/first-ran")).expect("first-ran");
    assert_eq!(ran.lines().count(), 1, "`first` ran again");
    let run = case.last_run();
    assert_ne!(run, parent);
    let m = case.manifest(&run);
    assert_eq!(m["parent"], parent.as_str());
    assert_eq!(outcome(&m, "first"), "reused");
    assert_eq!(outcome(&m, "second"), "succeeded");
    let seen = std::fs::read_to_string(case.path(&format!("runs/{run}/outputs/second/seen")))
        .expect("seen");
    assert_eq!(seen, "got-value-alpha");
    assert!(kinds(&case.events(&run)).contains(&"resume_lineage ".to_string()));
}

#[test]
fn resume_tolerates_a_corrupt_events_line_in_the_parent() {
    let case = Case::new(RESUMABLE);
    let parent = failed_parent(&case, &[]);
    let events = case.path(&format!("runs/{parent}/events.jsonl"));
    let mut text = std::fs::read_to_string(&events).expect("events");
    text.insert_str(0, "{\"v\":1,\"seq\":0,\"truncat\n");
    std::fs::write(&events, text).expect("corrupt");
    std::fs::write(case.path("out/allow"), "").expect("allow");
    let out = case.run(&["--resume", &parent], &[]);
    assert_eq!(out.code, 0, "{}", out.all());
    assert!(
        out.stderr.contains("1 unreadable line(s) (line 1)"),
        "{}",
        out.all()
    );
    assert_eq!(outcome(&case.manifest(&case.last_run()), "first"), "reused");
}

/// A parent whose log is mostly corrupt lines: one warning names the first few and counts the
/// rest, on stderr and in the new run's log alike, whatever their number.
#[test]
fn resume_of_a_parent_with_many_corrupt_event_lines_warns_in_one_bounded_line() {
    let case = Case::new(RESUMABLE);
    let parent = failed_parent(&case, &[]);
    let events = case.path(&format!("runs/{parent}/events.jsonl"));
    let mut text = std::fs::read_to_string(&events).expect("events");
    text.insert_str(0, &"{\"v\":1,\"seq\":0,\"truncat\n".repeat(50_000));
    std::fs::write(&events, text).expect("corrupt");
    std::fs::write(case.path("out/allow"), "").expect("allow");
    let out = case.run(&["--resume", &parent], &[]);
    assert_eq!(out.code, 0, "{}", out.all());
    let said = "50000 unreadable line(s) (line 1, line 2, line 3, line 4, line 5, and 49995 more)";
    assert!(out.stderr.contains(said), "{}", out.all());
    assert!(
        out.stderr.len() < 16 << 10,
        "{} bytes on stderr",
        out.stderr.len()
    );
    let logged =
        std::fs::read_to_string(case.path(&format!("runs/{}/events.jsonl", case.last_run())))
            .expect("events");
    let warning = logged
        .lines()
        .find(|l| l.contains("unreadable line(s)"))
        .expect("the warning is logged");
    assert!(warning.contains(said) && warning.len() < 1024, "{warning}");
}

#[test]
fn resume_does_not_reuse_an_output_whose_digest_changed() {
    let case = Case::new(RESUMABLE);
    let parent = failed_parent(&case, &[]);
    std::fs::write(
        case.path(&format!("runs/{parent}/outputs/first/value")),
        "tampered",
    )
    .expect("tamper");
    std::fs::write(case.path("out/allow"), "").expect("allow");
    let out = case.run(&["--resume", &parent], &[]);
    assert_eq!(out.code, 0, "{}", out.all());
    assert!(
        out.stderr.contains("no longer matches its digest"),
        "{}",
        out.all()
    );
    assert_eq!(
        outcome(&case.manifest(&case.last_run()), "first"),
        "succeeded"
    );
}

/// Runs a resume that must be rejected; checks nothing was created and the error names `field`.
fn rejected(case: &Case, parent: &str, env: &[(&str, &str)], field: &str) -> Out {
    let before = case.runs();
    let out = case.run(&["--resume", parent], env);
    assert_eq!(out.code, 2, "{}", out.all());
    assert!(
        out.stderr.contains(field),
        "expected `{field}` in:\n{}",
        out.all()
    );
    assert_eq!(
        case.runs(),
        before,
        "a rejected resume created a run directory"
    );
    out
}

#[test]
fn resume_is_rejected_when_an_input_differs() {
    let case = Case::new(RESUMABLE);
    let parent = failed_parent(&case, &[]);
    rejected(
        &case,
        &parent,
        &[("PROJECT", "beta")],
        "inputs.project: alpha → beta",
    );
}

#[test]
fn resume_is_rejected_when_the_pipeline_differs() {
    let case = Case::new(RESUMABLE);
    let parent = failed_parent(&case, &[]);
    case.write_pipeline(&RESUMABLE.replace("echo value-", "echo other-"));
    rejected(&case, &parent, &[], "pipeline: sha256:");
}

#[test]
fn resume_ignores_comments_and_layout() {
    let case = Case::new(RESUMABLE);
    let parent = failed_parent(&case, &[]);
    case.write_pipeline(&format!("// a comment\n\n{RESUMABLE}"));
    std::fs::write(case.path("out/allow"), "").expect("allow");
    let out = case.run(&["--resume", &parent], &[]);
    assert_eq!(out.code, 0, "{}", out.all());
    // The same pipeline: `first` is reused, not run again, and `second` reads its value.
    let run = case.last_run();
    let m = case.manifest(&run);
    assert_eq!(m["parent"], parent.as_str());
    assert_eq!(outcome(&m, "first"), "reused");
    let ran = std::fs::read_to_string(case.path("out/first-ran")).expect("first-ran");
    assert_eq!(ran.lines().count(), 1, "`first` ran again");
    let seen = std::fs::read_to_string(case.path(&format!("runs/{run}/outputs/second/seen")))
        .expect("seen");
    assert_eq!(seen, "got-value-alpha");
}

#[test]
fn resume_is_rejected_when_the_repository_differs() {
    let case = Case::new(RESUMABLE);
    let parent = failed_parent(&case, &[]);
    std::fs::rename(case.path("checkout"), case.path("elsewhere")).expect("rename");
    let out = crate::support::command()
        .arg("run")
        .arg(case.path("review.kdl"))
        .arg("--checkout")
        .arg(case.path("elsewhere"))
        .arg("--run-dir")
        .arg(case.path("runs"))
        .args(["--resume", &parent])
        .env_clear()
        .env("OUT", case.dir.path())
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("repository: checkout → elsewhere"),
        "{stderr}"
    );
}

#[test]
fn resume_is_rejected_when_the_mode_differs() {
    let case = Case::new(RESUMABLE);
    let parent = failed_parent(&case, &[]);
    let out = rejected(
        &case,
        &parent,
        &[("GITHUB_ACTIONS", "true")],
        "mode: local → ci",
    );
    assert!(out.stderr.contains("start a new run"));
}

#[test]
fn resume_of_a_run_without_manifest_is_rejected() {
    let case = Case::new(RESUMABLE);
    let parent = failed_parent(&case, &[]);
    std::fs::remove_file(case.path(&format!("runs/{parent}/manifest.json"))).expect("rm");
    rejected(&case, &parent, &[], "has no manifest");
}

#[test]
fn resume_of_an_interrupted_run_is_rejected() {
    let case = Case::new(RESUMABLE);
    let parent = failed_parent(&case, &[]);
    let path = case.path(&format!("runs/{parent}/manifest.json"));
    let text = std::fs::read_to_string(&path).expect("manifest");
    std::fs::write(&path, text.replace("\"final\": true", "\"final\": false")).expect("write");
    rejected(&case, &parent, &[], "never ended");
}

#[test]
fn resume_of_an_unknown_or_unsafe_run_id_is_rejected() {
    let case = Case::new(RESUMABLE);
    failed_parent(&case, &[]);
    rejected(&case, "nope", &[], "there is no run `nope`");
    rejected(&case, "../runs", &[], "is not a run id");
}

#[test]
fn a_pipeline_that_fails_check_never_runs() {
    let case = Case::new(
        r#"
pipeline "broken"
stage "a" uses="run" {
    command "sh" "-c" "echo {nowhere.value}"
}
"#,
    );
    let out = case.run(&[], &[]);
    assert_eq!(out.code, 2, "{}", out.all());
    assert!(
        out.stderr
            .contains("not running a pipeline that fails check"),
        "{}",
        out.all()
    );
    assert!(case.runs().is_empty());
}

#[test]
fn std_stages_outside_a_git_checkout_refuse_the_run() {
    let case = Case::new("");
    std::fs::copy(root().join("examples/local.kdl"), case.path("review.kdl")).expect("copy");
    let out = case.run(&[], &[]);
    assert_eq!(out.code, 2, "{}", out.all());
    assert!(
        out.stderr.contains("cannot open the change under review"),
        "{}",
        out.all()
    );
    assert!(case.runs().is_empty());
}

#[test]
fn a_bad_input_is_unusable_input() {
    let case = Case::new(
        r#"
pipeline "inputs"
input "project" env="PROJECT" pattern="^[a-z]+$"
input "count" env="COUNT" type="int" default="3"
stage "a" uses="run" {
    command "echo" "{project}" "{count}"
}
"#,
    );
    let out = case.run(&[], &[("PROJECT", "Bad Name"), ("COUNT", "x")]);
    assert_eq!(out.code, 2, "{}", out.all());
    assert!(
        out.stderr
            .contains("input `project` (from $PROJECT) does not match"),
        "{}",
        out.all()
    );
    assert!(
        out.stderr
            .contains("input `count` (from $COUNT) is not an integer"),
        "{}",
        out.all()
    );
    let out = case.run(&[], &[]);
    assert!(
        out.stderr
            .contains("input `project` is not set: set the environment variable PROJECT")
    );
    assert!(case.runs().is_empty());
}

#[test]
fn github_actions_masks_first_groups_stages_and_writes_a_summary() {
    let case = Case::new(LEAK);
    let summary = case.path("summary.md");
    let out = case.run(
        &[],
        &[
            ("TEST_TOKEN", SECRET),
            ("GITHUB_ACTIONS", "true"),
            ("GITHUB_STEP_SUMMARY", summary.to_str().expect("utf-8")),
        ],
    );
    assert_eq!(out.code, 0, "{}", out.all());
    let first = out.stdout.lines().next().unwrap_or_default();
    assert!(first.starts_with("::add-mask::"), "{}", out.all());
    assert!(out.stdout.contains(&format!("::add-mask::{SECRET}")));
    // After the masks, the value never appears again.
    let after: String = out
        .stdout
        .lines()
        .filter(|l| !l.starts_with("::add-mask::"))
        .collect();
    assert!(!after.contains(SECRET), "{}", out.all());
    assert!(out.stdout.contains("::group::✓ leak"), "{}", out.all());
    assert!(out.stdout.contains("::stop-commands::"), "{}", out.all());
    assert!(out.stdout.contains("::endgroup::"), "{}", out.all());
    let text = std::fs::read_to_string(summary).expect("summary");
    assert!(
        text.contains("```mermaid") && text.contains(":::succeeded"),
        "{text}"
    );
    assert!(text.contains("| leak | succeeded |"), "{text}");
}

/// On GitLab CI each stage is one collapsed section, and a child that prints GitLab's own
/// section markers (an end marker naming a section, a start marker) neither ends the stage's
/// section nor opens one: its escape characters and carriage returns reach the log as text. No
/// mask is printed (GitLab cannot add one at run time); the secret is redacted all the same.
#[test]
fn gitlab_ci_puts_each_stage_in_a_section_a_child_cannot_close() {
    let case = Case::new(
        r#"
pipeline "hostile"
secret "token" env="TEST_TOKEN" {
    visible-to "loud"
}
stage "loud" uses="run" {
    command "sh" "-c" "printf 'a\\033[0Ksection_end:1:reviewflow_0\\r\\033[0Kout\\n\\033[0Ksection_start:1:evil\\r\\033[0Kfake\\n'; echo \"$TOKEN\""
    secret-env "TOKEN" "token"
}
"#,
    );
    let out = case.run(&[], &[("TEST_TOKEN", SECRET), ("GITLAB_CI", "true")]);
    assert_eq!(out.code, 0, "{}", out.all());
    assert!(!out.stdout.contains(SECRET), "{}", out.all());
    assert!(!out.stdout.contains("::add-mask::"), "{}", out.all());
    let starts: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| l.starts_with("\x1b[0Ksection_start:"))
        .collect();
    let ends: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| l.starts_with("\x1b[0Ksection_end:"))
        .collect();
    assert_eq!(starts.len(), 1, "{}", out.all());
    assert_eq!(ends.len(), 1, "{}", out.all());
    // `section_start:<time>:<name>[collapsed=true]\r\e[0K✓ loud…`, ended by the same name.
    let name = starts[0]
        .split(':')
        .nth(2)
        .and_then(|n| n.split('[').next());
    let name = name.expect("a section name");
    assert!(name.starts_with("reviewflow_") && name.len() > 20, "{name}");
    assert!(
        starts[0].contains("[collapsed=true]\r\x1b[0K✓ loud"),
        "{:?}",
        starts[0]
    );
    assert!(
        ends[0].ends_with(&format!(":{name}\r\x1b[0K")),
        "{:?}",
        ends[0]
    );
    // Every other line is text: no escape character, no carriage return.
    for line in out.stdout.lines() {
        if line == starts[0] || line == ends[0] {
            continue;
        }
        assert!(!line.contains(['\x1b', '\r']), "{line:?}\n{}", out.all());
    }
    assert!(
        out.stdout
            .contains("a\\u{1b}[0Ksection_end:1:reviewflow_0\\u{d}\\u{1b}[0Kout"),
        "{}",
        out.all()
    );
}

/// `{work}` is the stage's own folder: `cwd "{work}"` starts the program there (outside the
/// checkout), and what it writes by a relative name is the `file=` output of the same name.
#[test]
fn work_names_the_stages_own_folder_as_its_working_folder() {
    let case = Case::new(
        "pipeline \"work\"\nstage \"here\" uses=\"run\" {\n    cwd \"{work}\"\n    command \"sh\" \"-c\" \"[ \\\"$1\\\" = \\\"$REVIEWFLOW_WORK_DIR\\\" ] && [ \\\"$(pwd -P)\\\" = \\\"$(cd \\\"$1\\\" && pwd -P)\\\" ] && echo same > same.txt\" \"sh\" \"{work}\"\n    output \"same\" file=\"same.txt\"\n}\n",
    );
    let out = case.run(&[], &[]);
    assert_eq!(out.code, 0, "{}", out.all());
    let run = case.last_run();
    let same = std::fs::read_to_string(case.path(&format!("runs/{run}/outputs/here/same")))
        .expect("kept output");
    assert_eq!(same.trim(), "same");
}
