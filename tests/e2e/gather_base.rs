//! `std/gather`'s `base` on the local forge: the change under review is opened from it (the
//! command line's `--base` wins), and a revision that does not resolve is refused before any
//! stage runs.

use std::path::Path;

use crate::support::{git_in as git, root};

/// A checkout of three commits on `main` with `examples/local.kdl` as `review.kdl`, its gather
/// stage given `base`.
fn checkout(base: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let c = dir.path();
    git(c, &["init", "-q", "-b", "main"]);
    let pipeline = std::fs::read_to_string(root().join("examples/local.kdl"))
        .expect("read")
        .replace(
            "stage \"gather\" uses=\"std/gather\" {\n",
            &format!("stage \"gather\" uses=\"std/gather\" {{\n    base \"{base}\"\n"),
        );
    assert!(pipeline.contains(&format!("base \"{base}\"")));
    std::fs::write(c.join("review.kdl"), pipeline).expect("write");
    for (file, message) in [("a.txt", "first"), ("b.txt", "second"), ("c.txt", "third")] {
        std::fs::write(c.join(file), message).expect("write");
        git(c, &["add", "-A"]);
        git(c, &["commit", "-q", "-m", message]);
    }
    dir
}

fn run(dir: &Path, extra: &[&str]) -> (i32, String) {
    let out = crate::support::command()
        .args(["run", "review.kdl"])
        .args(extra)
        .current_dir(dir)
        .env_remove("REVIEW_CONVERSATION_KEY")
        .output()
        .expect("the binary runs");
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), log)
}

fn posted_base(dir: &Path) -> String {
    let text = std::fs::read(dir.join(".reviewflow/forge/branch-main/local-review/posted.json"))
        .expect("a posted review");
    let v: serde_json::Value = serde_json::from_slice(&text).expect("json");
    v["base"].as_str().expect("a base").to_string()
}

#[test]
fn a_base_that_does_not_resolve_is_refused_before_any_stage() {
    let dir = checkout("no-such-ref");
    let (code, log) = run(dir.path(), &[]);
    assert_eq!(code, 2, "{log}");
    assert!(
        log.contains(
            "error: cannot open the change under review: unknown revision \"no-such-ref\""
        ),
        "{log}"
    );
    assert!(!dir.path().join(".reviewflow/runs").exists(), "{log}");
}

#[test]
fn the_gather_base_is_the_base_under_review_unless_the_command_line_says() {
    let dir = checkout("HEAD~2");
    let c = dir.path();
    let (code, log) = run(c, &[]);
    assert_eq!(code, 0, "{log}");
    let two_back = git(c, &["rev-parse", "HEAD~2"]);
    assert_eq!(posted_base(c), two_back, "{log}");
    assert!(log.contains(&format!("{}..", &two_back[..12])), "{log}");
    assert!(log.contains("2 files"), "{log}");

    let (code, log) = run(c, &["--base", "HEAD~1", "--force"]);
    assert_eq!(code, 0, "{log}");
    assert_eq!(posted_base(c), git(c, &["rev-parse", "HEAD~1"]), "{log}");
}
