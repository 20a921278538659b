//! `reviewflow graph` in its three formats.

use crate::support::reviewflow;

#[test]
fn mermaid() {
    let run = reviewflow(&["graph", "examples/review.kdl", "--format", "mermaid"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    insta::assert_snapshot!("graph__review_mermaid", run.stdout);
}

#[test]
fn dot() {
    let run = reviewflow(&["graph", "examples/review.kdl", "--format", "dot"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    insta::assert_snapshot!("graph__review_dot", run.stdout);
}

#[test]
fn text() {
    let run = reviewflow(&["graph", "examples/review.kdl", "--format", "text"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    insta::assert_snapshot!("graph__review_text", run.stdout);
}

/// Graphviz accepts the dot output. CI installs graphviz; elsewhere the test says it skipped.
#[test]
fn graphviz_accepts_the_dot_output() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let run = reviewflow(&["graph", "examples/review.kdl", "--format", "dot"]);
    let child = Command::new("dot")
        .arg("-Tsvg")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        crate::support::skipped("graphviz's `dot` is not installed (`.ci/run` installs it)");
        return;
    };
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(run.stdout.as_bytes())
        .expect("write");
    let out = child.wait_with_output().expect("dot runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("<svg"));
}

#[test]
fn a_graph_with_errors_is_still_drawn_and_exits_1() {
    let run = reviewflow(&["graph", "examples/broken/cycle.kdl", "--format", "text"]);
    assert_eq!(run.code, 1);
    assert!(run.stdout.contains("pipeline broken: 2 stages"));
    assert!(run.stderr.contains("cycle"));
}

/// A stage's declared network shows in every format; a stage without one shows none.
#[test]
fn declared_network_is_drawn() {
    for format in ["mermaid", "dot", "text"] {
        let run = reviewflow(&[
            "graph",
            "tests/fixtures/pipelines/network.kdl",
            "--format",
            format,
        ]);
        assert_eq!(run.code, 0, "{}", run.transcript());
        assert_eq!(
            run.stdout.matches("net: 443").count(),
            1,
            "{format}: {}",
            run.stdout
        );
    }
}

/// The README draws `examples/review.kdl` as `graph --format mermaid` does.
#[test]
fn the_readme_shows_the_graph_as_it_is() {
    let run = reviewflow(&["graph", "examples/review.kdl", "--format", "mermaid"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    let readme = std::fs::read_to_string(crate::support::root().join("README.md")).expect("README");
    let start = readme.find("```mermaid\n").expect("a mermaid block") + "```mermaid\n".len();
    let end = start + readme[start..].find("```\n").expect("its end");
    assert_eq!(&readme[start..end], run.stdout);
}
