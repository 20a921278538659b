//! What `reviewflow run` prints: the run's lines as a person reads them.

use std::path::Path;
use std::process::Stdio;

use crate::support::Run;

/// Runs `pipeline` in a fresh checkout with `args`, and returns what it printed.
fn run(pipeline: &str, args: &[&str], env: &[(&str, &str)]) -> (tempfile::TempDir, Run) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("checkout")).expect("checkout");
    std::fs::write(dir.path().join("review.kdl"), pipeline).expect("pipeline");
    let mut c = crate::support::command();
    c.arg("run")
        .arg(dir.path().join("review.kdl"))
        .arg("--checkout")
        .arg(dir.path().join("checkout"))
        .arg("--run-dir")
        .arg(dir.path().join("runs"))
        .args(args)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .stdin(Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().expect("the binary runs");
    let run = Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    (dir, run)
}

/// The transcript with what changes from run to run replaced: the temp folder, run ids,
/// durations, and the isolation warnings this machine's kernel causes.
fn stable(dir: &Path, run: &Run) -> String {
    let text = run
        .transcript()
        .replace(&dir.display().to_string(), "[tmp]");
    text.lines()
        .filter(|l| !l.starts_with("warning: isolation:"))
        .map(|l| {
            // Which layers hold is the machine's (docs/isolation.md): the line is kept, its list
            // is not.
            if l.starts_with("isolation held: ") {
                return "isolation held: [layers]".to_string();
            }
            let mut out = String::new();
            for (i, word) in l.split(' ').enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                out.push_str(&stable_word(word));
            }
            out
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn stable_word(word: &str) -> String {
    // A run id: 20261130T195340Z-1a2b3c4d.
    if word.len() >= 25 && word.as_bytes().get(8) == Some(&b'T') && word.contains("Z-") {
        let id_end = word.find("Z-").map(|i| i + 11).unwrap_or(word.len());
        return format!("[run-id]{}", &word[id_end.min(word.len())..]);
    }
    if let Some(rest) = word.strip_prefix("[tmp]/runs/") {
        return format!("[tmp]/runs/{}", stable_word(rest));
    }
    // A duration's number: `(12` before `ms)` or `s)`.
    if let Some(n) = word.strip_prefix('(')
        && !n.is_empty()
        && n.chars().all(|c| c.is_ascii_digit() || c == '.')
    {
        return "(N".into();
    }
    word.to_string()
}

const STOPS: &str = r#"
pipeline "stops"
stage "bad" uses="run" {
    command "sh" "-c" "exit 3"
}
stage "after" uses="run" {
    command "true"
    needs "bad"
}
stage "last" uses="run" {
    command "true"
    needs "after"
}
"#;

#[test]
fn stages_that_never_started_are_listed_at_the_end() {
    let (dir, out) = run(STOPS, &["--jobs", "1"], &[]);
    assert_eq!(out.code, 1, "{}", out.transcript());
    insta::assert_snapshot!(stable(dir.path(), &out));
}

#[test]
fn jobs_zero_is_refused_with_exit_2() {
    let (_dir, out) = run(STOPS, &["--jobs", "0"], &[]);
    assert_eq!(out.code, 2, "{}", out.transcript());
    insta::assert_snapshot!(out.transcript());
    let (_dir, out) = run(STOPS, &["--jobs", "many"], &[]);
    assert_eq!(out.code, 2, "{}", out.transcript());
    assert!(
        out.stderr.contains("not a whole number of stages"),
        "{}",
        out.transcript()
    );
}

const ONE: &str = r#"
pipeline "one"
stage "fine" uses="run" {
    command "true"
}
"#;

#[test]
fn color_always_colours_the_run_even_with_no_color_set() {
    let (_dir, out) = run(ONE, &["--color", "always"], &[("NO_COLOR", "1")]);
    assert_eq!(out.code, 0, "{}", out.transcript());
    assert!(
        out.stderr.contains("\x1b[32m✓ fine ("),
        "{}",
        out.transcript()
    );
    assert!(
        out.stderr
            .contains("\x1b[1;32mrun succeeded (exit 0)\x1b[0m"),
        "{}",
        out.transcript()
    );
    // `auto` on a pipe, and `never`: no colour.
    for args in [&["--color", "auto"][..], &["--color", "never"][..]] {
        let (_dir, out) = run(ONE, args, &[]);
        assert_eq!(out.code, 0, "{}", out.transcript());
        assert!(!out.stderr.contains('\x1b'), "{}", out.transcript());
    }
}

const ONE_SECRET: &str = r#"
pipeline "secrets"
secret "k" env="RF_TEST_KEY" min-bytes=32 {
    visible-to "a"
}
stage "a" uses="run" {
    command "true"
    secret-env "RF_TEST_KEY" "k"
}
"#;

/// A required secret that is not set fails the run: said as an error, once, with what to set.
#[test]
fn a_missing_required_secret_is_an_error_that_says_what_to_set() {
    let (_dir, out) = run(ONE_SECRET, &[], &[]);
    assert_eq!(out.code, 1, "{}", out.transcript());
    let all = format!("{}{}", out.stdout, out.stderr);
    assert!(
        all.contains(
            "error: secret `k` is not set (set $RF_TEST_KEY; on-missing=\"fail\"): nothing ran"
        ),
        "{all}"
    );
    assert!(!all.contains("warning: secret `k`"), "{all}");
}

/// A key that is too short is called too short, with the length it needs.
#[test]
fn a_too_short_required_secret_says_it_is_too_short() {
    let (_dir, out) = run(ONE_SECRET, &[], &[("RF_TEST_KEY", "short")]);
    assert_eq!(out.code, 1, "{}", out.transcript());
    let all = format!("{}{}", out.stdout, out.stderr);
    assert!(
        all.contains("error: secret `k` in $RF_TEST_KEY is too short (it needs at least 32 bytes"),
        "{all}"
    );
    assert!(!all.contains("is missing"), "{all}");
}

/// A secret that may be missing says how to turn its stages on.
#[test]
fn a_disabled_secret_says_how_to_turn_its_stages_on() {
    let text = ONE_SECRET.replace("min-bytes=32 {", "min-bytes=32 on-missing=\"disable\" {");
    let (_dir, out) = run(&text, &[], &[]);
    assert_eq!(out.code, 0, "{}", out.transcript());
    let all = format!("{}{}", out.stdout, out.stderr);
    assert!(
        all.contains(
            "the stages that hold it take their fallback; to run them, set $RF_TEST_KEY to at least 32 bytes (e.g. `openssl rand -base64 32`)"
        ),
        "{all}"
    );
}
