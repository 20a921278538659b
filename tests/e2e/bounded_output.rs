//! A stage that prints a lot: the engine's memory stays bounded, the console shows the head and
//! the tail of the output and says what it cut (docs/executor.md, "A stage that prints a lot").
//! The peak resident memory of `reviewflow` is read from its parent's resource usage of its
//! children: a small Python parent, so that the figure is `reviewflow`'s alone (Linux keeps, in
//! a process's peak, the peak of the memory it was started from: the test harness's, which holds
//! every test running beside it).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// The most resident memory the engine may take, whatever a stage prints.
const MAX_RSS: u64 = 100 * 1024 * 1024;

const SECRET: &str = "s3cr3t-value-for-the-tests-0123456789";

struct Ended {
    code: i32,
    max_rss: u64,
    stdout: String,
    stderr: String,
    events: Vec<serde_json::Value>,
}

impl Ended {
    fn all(&self) -> String {
        // The console is bounded: printing it whole in a failure message is fine.
        format!(
            "exit {} (max RSS {} MB)\n--- stdout\n{}--- stderr\n{}",
            self.code,
            self.max_rss / 1_000_000,
            self.stdout,
            self.stderr
        )
    }

    fn cut_events(&self) -> Vec<String> {
        self.events
            .iter()
            .filter(|e| e["event"] == "status")
            .filter_map(|e| e["message"].as_str())
            .filter(|m| m.starts_with("… ") && m.ends_with(" cut …"))
            .map(str::to_string)
            .collect()
    }
}

/// Runs `pipeline` in a fresh checkout, stdout and stderr into files, and measures the peak RSS.
fn run(pipeline: &str, env: &[(&str, &str)]) -> Ended {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = |rel: &str| -> PathBuf { dir.path().join(rel) };
    std::fs::create_dir(path("checkout")).expect("checkout");
    std::fs::write(path("review.kdl"), pipeline).expect("pipeline");
    let binary = crate::support::command();
    let mut c = std::process::Command::new("/usr/bin/python3");
    c.arg("-c")
        .arg(MEASURE)
        .arg(path("measured"))
        .arg(binary.get_program())
        .arg("run")
        .arg(path("review.kdl"))
        .arg("--checkout")
        .arg(path("checkout"))
        .arg("--run-dir")
        .arg(path("runs"))
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .stdin(Stdio::null())
        .stdout(File::create(path("stdout")).expect("stdout file"))
        .stderr(File::create(path("stderr")).expect("stderr file"));
    for (k, v) in env {
        c.env(k, v);
    }
    let status = c.status().expect("the binary runs");
    assert!(status.success(), "the measuring parent failed: {status}");
    let measured = std::fs::read_to_string(path("measured")).expect("the measure");
    let (code, max_rss) = measured
        .split_once(' ')
        .and_then(|(c, m)| Some((c.parse::<i32>().ok()?, m.trim().parse::<u64>().ok()?)))
        .unwrap_or_else(|| panic!("not a measure: {measured:?}"));
    let read = |rel: &str| std::fs::read_to_string(path(rel)).expect("console output");
    let events = std::fs::read_dir(path("runs"))
        .expect("runs")
        .map(|e| e.expect("entry").path().join("events.jsonl"))
        .next()
        .map(|p| events(&p))
        .unwrap_or_default();
    Ended {
        code,
        // Linux reports `ru_maxrss` in KiB.
        max_rss: max_rss * 1024,
        stdout: read("stdout"),
        stderr: read("stderr"),
        events,
    }
}

/// Runs `argv[2:]` (stdin, stdout and stderr its own), then writes its exit code (-1 for a
/// signal) and its peak resident memory in KiB to `argv[1]`.
const MEASURE: &str = "import resource, subprocess, sys
r = subprocess.run(sys.argv[2:])
with open(sys.argv[1], 'w') as f:
    f.write(f'{r.returncode if r.returncode >= 0 else -1} {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}')
";

fn events(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .expect("events")
        .lines()
        .map(|l| serde_json::from_str(l).expect("event json"))
        .collect()
}

/// 202 MB of 100-byte lines (two million) between a first and a last line anyone can recognise.
const LOUD: &str = r#"
pipeline "loud"
stage "loud" uses="run" {
    command "sh" "-c" "echo the-first-line; yes 0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789 | head -c 202000000; echo the-last-line"
}
"#;

fn assert_bounded(out: &Ended, console: &str) {
    assert_eq!(out.code, 0, "{}", out.all());
    assert!(
        out.max_rss < MAX_RSS,
        "reviewflow peaked at {} MB of resident memory",
        out.max_rss / 1_000_000
    );
    assert!(
        console.len() < 8 * 1024 * 1024,
        "the console got {} bytes",
        console.len()
    );
    let cut = out.cut_events();
    assert_eq!(cut.len(), 1, "one cut said in events.jsonl: {cut:?}");
    assert!(
        console.contains(&format!("  loud: {}\n", cut[0])),
        "the cut is said on the console:\n{}",
        out.all()
    );
}

#[test]
fn a_stage_that_prints_200_mb_keeps_the_engine_small_and_says_the_cut() {
    let out = run(LOUD, &[]);
    assert_bounded(&out, &out.stderr);
    let first = out.stderr.find("loud │ the-first-line").expect("the head");
    let cut = out.stderr.find(" cut …").expect("the cut");
    let last = out.stderr.find("loud │ the-last-line").expect("the tail");
    let end = out.stderr.find("✓ loud").expect("the end line");
    assert!(first < cut && cut < last && last < end, "{}", out.all());
}

#[test]
fn a_stage_that_prints_200_mb_under_github_actions_keeps_the_engine_small() {
    let out = run(LOUD, &[("GITHUB_ACTIONS", "true")]);
    assert_bounded(&out, &out.stdout);
    let group = out.stdout.find("::group::✓ loud").expect("the group");
    let first = out.stdout.find("loud │ the-first-line").expect("the head");
    let cut = out.stdout.find(" cut …").expect("the cut");
    let last = out.stdout.find("loud │ the-last-line").expect("the tail");
    let end = out.stdout.find("::endgroup::").expect("the group's end");
    assert!(
        group < first && first < cut && cut < last && last < end,
        "{}",
        out.all()
    );
}

#[test]
fn a_single_line_of_50_mb_is_cut_too() {
    let out = run(
        r#"
pipeline "long"
stage "loud" uses="run" {
    command "sh" "-c" "head -c 50000000 /dev/zero | tr '\\0' x"
}
"#,
        &[],
    );
    assert_bounded(&out, &out.stderr);
}

#[test]
fn a_secret_across_the_cut_of_a_long_line_is_redacted_whole() {
    // The secret starts 10 bytes before the 64 KiB piece boundary of a line without newline, in
    // a line long enough to be cut in its middle as well.
    let out = run(
        r#"
pipeline "leak"
secret "token" env="TEST_TOKEN" {
    visible-to "loud"
}
stage "loud" uses="run" {
    command "sh" "-c" "head -c 65526 /dev/zero | tr '\\0' x; printf %s \"$TOKEN\"; head -c 3000000 /dev/zero | tr '\\0' y; printf %s \"$TOKEN\""
    secret-env "TOKEN" "token"
}
"#,
        &[("TEST_TOKEN", SECRET)],
    );
    assert_bounded(&out, &out.stderr);
    assert!(
        out.stderr.contains("[redacted:token]"),
        "the secret is redacted"
    );
    for part in [&SECRET[..10], &SECRET[10..]] {
        assert!(
            !out.stderr.contains(part),
            "a part of the secret escaped: {part}"
        );
    }
}
