//! `reviewflow init`: a starting `review.kdl` for the checkout in the current folder.

use std::io::Write;
use std::path::Path;

use crate::output::{EXIT_FINDINGS, EXIT_OK, EXIT_UNUSABLE, errln, print_stdout};

/// The file `init` writes, in the current folder.
pub const FILE: &str = "review.kdl";

/// The pipeline `init` writes: examples/local.kdl, commented for a first reader.
pub const TEMPLATE: &str = r#"// A review of this checkout's latest change, written by `reviewflow init`.
// `reviewflow check review.kdl` proves what it promises; `reviewflow run review.kdl` runs it.
// docs/language.md (in the reviewflow repository) has every node and property.
pipeline "review"

// The change is a git range of this checkout (default: the merge base with the default branch,
// or the parent of HEAD, up to HEAD; `run --base REV --head REV` picks another); the review is
// written to .reviewflow/forge/<change>/<pipeline>/ as markdown, JSON, rdjsonl and SARIF.
forge "local"

// Sealed conversations are kept in .reviewflow/store/, so the next review resumes this one.
store "conversations" kind="local" name="review-{change}" {
    trust local=#true
    max-tries 10
    retain count=20
}

// The key that seals and opens the conversation: only `restore` and `seal` ever see it.
// Without it every review is fresh, with a warning.
secret "conversation-key" env="REVIEW_CONVERSATION_KEY" min-bytes=32 on-missing="disable" {
    visible-to "restore" "seal"
}

stage "gather" uses="std/gather" {
    since-last-review
    gate warn="red"    // a large change is reviewed anyway, with a warning
}

stage "restore" uses="std/restore" on-error="fallback" {
    from "conversations"
    key "conversation-key"
    bind repo="{repo}" change="{change}"
    require-posted-head
}

// The built-in `rules` reviewer needs no model and no network; `reviewer "claude"` or
// `reviewer "codex"` drives a model (docs/reviewers.md).
stage "review" uses="std/review" timeout="10m" {
    reviewer "rules"
    resume "restore.conversation"
    untrusted "gather.diff" "gather.since-last-review"
}

// A conversation that holds a credential is never kept.
stage "scan" uses="std/scan" on-error="fallback" {
    target "review.conversation"
}

stage "seal" uses="std/seal" when="scan.clean && review.commented" on-error="fallback" {
    key "conversation-key"
    input "review.conversation"
    bind repo="{repo}" change="{change}"
}

stage "post" uses="std/post" {
    comment "review.comment"
    findings "review.findings"
    ranges "gather.ranges"
    require-head "gather.head"
    upload "seal.blob" to="conversations"
}
"#;

/// What to do next, printed after the file is written.
const NEXT: &str = "\
Next:
  reviewflow check review.kdl   # prove what the pipeline promises (exit 0: clean)
  reviewflow run review.kdl     # review the latest change: .reviewflow/forge/<change>/<pipeline>/
  reviewflow explain <check>    # what a finding's check proves, with examples

To resume each review's conversation after the next commit, give it a key of at least 32 bytes,
the same one every run, kept like a password:
  export REVIEW_CONVERSATION_KEY=\"$(openssl rand -base64 32)\"
Without it every review is fresh, with a warning.
";

pub fn run() -> u8 {
    let path = Path::new(FILE);
    // `create_new`: an existing file (or a link by that name) is never opened, let alone
    // truncated, even if it appears between a check and the write.
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path);
    let mut file = match file {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            errln!(
                "error: {FILE} already exists; init leaves it as it is (move it away to start over)"
            );
            return EXIT_FINDINGS;
        }
        Err(e) => {
            errln!("error: cannot create {FILE}: {e}");
            return EXIT_UNUSABLE;
        }
    };
    if let Err(e) = file
        .write_all(TEMPLATE.as_bytes())
        .and_then(|()| file.sync_all())
    {
        errln!("error: cannot write {FILE}: {e}");
        // Half a pipeline is worse than none: the next `init` would refuse to replace it.
        drop(file);
        let _ = std::fs::remove_file(path);
        return EXIT_UNUSABLE;
    }
    let mut out = format!(
        "wrote {FILE}: a review of this checkout's latest change by the built-in `rules` reviewer\n\n"
    );
    if !in_git_checkout() {
        out.push_str(
            "note: this folder is not in a git checkout; `run` reviews a git change, so run \
             `git init` and commit first\n\n",
        );
    }
    out.push_str(NEXT);
    print_stdout(&out);
    EXIT_OK
}

/// Whether the current folder or one above it holds `.git`.
fn in_git_checkout() -> bool {
    let Ok(dir) = std::env::current_dir() else {
        return false;
    };
    dir.ancestors().any(|d| d.join(".git").exists())
}
