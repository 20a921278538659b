//! The one rule for a key that seals or opens a conversation (at least 32 bytes; `min-bytes`
//! may raise it, never lower it), said the same way by `check`, the run's start and the stages.

use std::path::Path;

use crate::support::{git_in as git, reviewflow_in, root};

/// A checkout with two commits and `examples/local.kdl` as `review.kdl`, its key's `min-bytes`
/// replaced by `min` (`""`: none).
fn checkout(min: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let c = dir.path();
    git(c, &["init", "-q", "-b", "main"]);
    let pipeline = std::fs::read_to_string(root().join("examples/local.kdl"))
        .expect("read")
        .replace(" min-bytes=32", min);
    std::fs::write(c.join("review.kdl"), pipeline).expect("write");
    for (file, message) in [("a.txt", "first"), ("b.txt", "second")] {
        std::fs::write(c.join(file), message).expect("write");
        git(c, &["add", "-A"]);
        git(c, &["commit", "-q", "-m", message]);
    }
    dir
}

fn run(dir: &Path, key: &str) -> (i32, String) {
    let out = crate::support::command()
        .args(["run", "review.kdl"])
        .current_dir(dir)
        .env("REVIEW_CONVERSATION_KEY", key)
        .output()
        .expect("the binary runs");
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), log)
}

#[test]
fn check_refuses_a_key_whose_min_bytes_is_under_32() {
    for min in [" min-bytes=0", " min-bytes=31"] {
        let dir = checkout(min);
        let out = reviewflow_in(dir.path(), &["check", "--format", "json", "review.kdl"]);
        assert_eq!(out.code, 1, "{min}: {}", out.transcript());
        let n = min.trim().trim_start_matches("min-bytes=");
        assert!(
            out.stdout.contains(&format!(
                "secret `conversation-key` is the key of `restore` (std/restore), which needs at least 32 bytes, but its `min-bytes` is {n}"
            )),
            "{}",
            out.transcript()
        );
        assert_eq!(
            out.stdout.matches("\"key-length\"").count(),
            1,
            "one finding for the secret, though two stages use it: {}",
            out.transcript()
        );
    }
    for min in [" min-bytes=32", " min-bytes=64", ""] {
        let dir = checkout(min);
        let out = reviewflow_in(dir.path(), &["check", "--format", "json", "review.kdl"]);
        assert_eq!(out.code, 0, "{min}: {}", out.transcript());
        assert!(!out.stdout.contains("key-length"), "{}", out.transcript());
    }
}

#[test]
fn an_empty_key_is_set_but_empty() {
    let dir = checkout("");
    let (code, log) = run(dir.path(), "");
    assert_eq!(code, 0, "{log}");
    assert!(
        log.contains(
            "warning: secret `conversation-key` in $REVIEW_CONVERSATION_KEY is set but empty: the stages that hold it take their fallback; to run them, set $REVIEW_CONVERSATION_KEY to a value that is not empty"
        ),
        "{log}"
    );
    assert!(
        log.contains(
            "secret `conversation-key` is set but empty (on-missing=\"disable\"); the stage did not run"
        ),
        "{log}"
    );
    assert!(!log.contains("too short"), "{log}");
}

/// No `min-bytes`: the run starts with a 10-byte key, and both stages refuse it by the rule.
#[test]
fn a_short_key_is_refused_by_seal_and_restore_in_the_same_words() {
    let dir = checkout("");
    let (code, log) = run(dir.path(), "0123456789");
    assert_eq!(code, 0, "{log}");
    let rule = "secret `conversation-key` is 10 bytes: a key that seals or opens a conversation needs at least 32 bytes (`openssl rand -base64 48` makes one)";
    assert!(log.contains(&format!("fresh review — {rule}")), "{log}");
    assert_eq!(log.matches(rule).count(), 2, "restore and seal: {log}");
    assert!(!log.contains("0123456789"), "never the value: {log}");
}
