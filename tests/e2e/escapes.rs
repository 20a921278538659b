//! Text from outside (arguments, file names, names and values from a pipeline, a child's
//! output) never reaches the terminal as control characters: it is escaped (`\u{1b}`) in human
//! output, whatever the command.

use std::process::Stdio;

use crate::support::{Run, reviewflow, reviewflow_in};

/// An escape sequence that retitles the terminal, rings its bell and turns it red.
const HOSTILE: &str = "\u{1b}]0;pwn\u{7}\u{1b}[31mX";

/// Control characters the terminal would act on (newline and tab are text).
fn raw_controls(text: &str) -> Vec<char> {
    text.chars()
        .filter(|c| c.is_control() && *c != '\n' && *c != '\t')
        .collect()
}

fn assert_escaped(what: &str, run: &Run) {
    for (stream, text) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
        assert!(
            raw_controls(text).is_empty(),
            "{what}: raw control characters on {stream}: {text:?}"
        );
    }
}

#[test]
fn explain_escapes_an_unknown_check_id() {
    let run = reviewflow(&["explain", HOSTILE]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert_escaped("explain", &run);
    assert!(
        run.stderr
            .contains("no check, rule or detector is called `\\u{1b}]0;pwn\\u{7}\\u{1b}[31mX`"),
        "{}",
        run.stderr
    );
    // A long argument is cut, not repeated whole.
    let long = "x".repeat(100_000);
    let run = reviewflow(&["explain", &long]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(run.stderr.len() < 1024, "{} bytes", run.stderr.len());
}

/// A file name with control characters, in the message of every command that reads one.
#[test]
fn every_command_escapes_a_file_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    let name = format!("{HOSTILE}.kdl");
    for args in [
        vec!["check", name.as_str()],
        vec!["check", "--format", "json", name.as_str()],
        vec!["graph", name.as_str()],
        vec!["run", name.as_str()],
        vec!["export", "github", name.as_str()],
    ] {
        let run = reviewflow_in(dir.path(), &args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.transcript());
        assert_escaped(&format!("{args:?}"), &run);
        assert!(
            run.stderr.contains("\\u{1b}]0;pwn"),
            "{args:?}: {}",
            run.stderr
        );
    }
    std::fs::write(
        dir.path().join("x.kdl"),
        "pipeline \"x\"\nstage \"a\" uses=\"run\" {\n    command \"true\"\n}\n",
    )
    .expect("write");
    let run = reviewflow_in(dir.path(), &["run", "x.kdl", "--grace", HOSTILE]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert_escaped("run --grace", &run);
}

/// What a child prints, and the reason its stage failed, are shown escaped on the console.
#[test]
fn a_childs_output_is_escaped_on_the_console() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("checkout")).expect("checkout");
    let pipeline = dir.path().join("review.kdl");
    std::fs::write(
        &pipeline,
        "pipeline \"p\"\nstage \"loud\" uses=\"run\" {\n    command \"sh\" \"-c\" \"printf \
         '\\\\033]0;pwn\\\\007\\\\033[2Jpainted\\\\n'; exit 3\"\n}\n",
    )
    .expect("write");
    let out = crate::support::command()
        .arg("run")
        .arg(&pipeline)
        .arg("--checkout")
        .arg(dir.path().join("checkout"))
        .arg("--run-dir")
        .arg(dir.path().join("runs"))
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .stdin(Stdio::null())
        .output()
        .expect("the binary runs");
    let run = Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    assert_eq!(run.code, 1, "{}", run.transcript());
    assert_escaped("run", &run);
    assert!(
        run.stderr
            .contains("loud │ \\u{1b}]0;pwn\\u{7}\\u{1b}[2Jpainted"),
        "{}",
        run.stderr
    );
}
