//! A reader that stops reading (`reviewflow schema | head`) or a closed stderr ends no command
//! with a panic: the command ends as it would have, quietly.

use std::os::fd::OwnedFd;
use std::process::Stdio;

use crate::support::root;

/// A pipe whose reading end is already closed: every write to it fails with EPIPE.
fn closed_pipe() -> OwnedFd {
    let (reader, writer) = rustix::pipe::pipe().expect("pipe");
    drop(reader);
    writer
}

/// Runs the binary with stdout, stderr or both on a closed pipe; returns its exit code and what
/// it said on the stream left open.
fn run_closed(args: &[&str], stdout_closed: bool, stderr_closed: bool) -> (i32, String) {
    let mut command = crate::support::command();
    command.args(args).current_dir(root()).stdin(Stdio::null());
    command.stdout(if stdout_closed {
        Stdio::from(closed_pipe())
    } else {
        Stdio::piped()
    });
    command.stderr(if stderr_closed {
        Stdio::from(closed_pipe())
    } else {
        Stdio::piped()
    });
    let out = command.output().expect("the binary runs");
    let said = if stderr_closed {
        String::from_utf8_lossy(&out.stdout).into_owned()
    } else {
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    (out.status.code().unwrap_or(-1), said)
}

#[test]
fn no_command_panics_on_a_closed_stdout() {
    for (args, code) in [
        (&["schema"][..], 0),
        (&["graph", "examples/local.kdl"], 0),
        (&["graph", "--format", "dot", "examples/local.kdl"], 0),
        (&["graph", "--format", "text", "examples/local.kdl"], 0),
        (&["check", "--format", "json", "examples/local.kdl"], 0),
        (&["check", "--format", "sarif", "examples/local.kdl"], 0),
        (&["explain"], 0),
        (&["explain", "secret-scope"], 0),
        (&["export", "github", "examples/review.kdl"], 0),
        (&["--help"], 0),
        (&["--version"], 0),
    ] {
        let (got, stderr) = run_closed(args, true, false);
        assert_eq!(got, code, "{args:?}: {stderr}");
        assert!(stderr.is_empty(), "{args:?} said: {stderr}");
    }
}

#[test]
fn no_command_panics_on_a_closed_stderr() {
    for (args, code) in [
        (&["check", "examples/broken/cycle.kdl"][..], 1),
        (&["check", "does/not/exist.kdl"], 2),
        (&["graph", "examples/broken/cycle.kdl"], 1),
        (&["explain", "no-such-check"], 2),
        (&["schema", "--bogus"], 2),
        (&["run", "does/not/exist.kdl"], 2),
    ] {
        let (got, _) = run_closed(args, false, true);
        assert_eq!(got, code, "{args:?}");
        let (got, _) = run_closed(args, true, true);
        assert_eq!(got, code, "{args:?}, both closed");
    }
}
