//! Gathering a change from throw-away repositories built with git in each test: the diff cut to
//! a path, the since-last-review diff and its fallbacks, ranges, tiers and the gate, the size
//! limit.

// Test helpers unwrap as the tests do (clippy's allow-unwrap-in-tests covers only the
// `#[test]` functions themselves).
#![allow(clippy::unwrap_used)]

mod support;

use std::path::Path;

use reviewflow_stdlib::diff::{LineRange, Thresholds, Tier, parse};
use reviewflow_stdlib::forge::{LocalForge, Review};
use reviewflow_stdlib::gather::{
    Gate, GateOutcome, GatherConfig, GatherError, gather, gather_change,
};
use reviewflow_stdlib::git::Sha;

struct Repo {
    dir: tempfile::TempDir,
}

impl Repo {
    fn new() -> Self {
        let repo = Repo {
            dir: tempfile::tempdir().unwrap(),
        };
        repo.git(&["init", "-q", "-b", "main"]);
        repo
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn git(&self, args: &[&str]) -> String {
        support::git::git(self.path(), args)
    }

    fn commit(&self, file: &str, content: &str) -> String {
        let path = self.path().join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
        self.git(&["add", "-A"]);
        self.git(&[
            "commit",
            "-q",
            "-m",
            &format!("change {file}\n\nBody of {file}."),
        ]);
        self.git(&["rev-parse", "HEAD"])
    }
}

fn sha(text: &str) -> Sha {
    Sha::parse(text).unwrap()
}

/// main: c1 (two projects); feature (checked out): f1 touches project a, f2 touches project b.
fn topic_repo() -> (Repo, [String; 3]) {
    let repo = Repo::new();
    repo.commit("projects/a/lib.rs", "1\n2\n3\n");
    let c1 = repo.commit("projects/b/lib.rs", "x\n");
    repo.git(&["checkout", "-q", "-b", "feature"]);
    let f1 = repo.commit("projects/a/lib.rs", "1\ntwo\n3\nfour\n");
    let f2 = repo.commit("projects/b/lib.rs", "x\ny\n");
    (repo, [c1, f1, f2])
}

fn files_of(diff: &[u8]) -> Vec<String> {
    parse(diff)
        .files
        .iter()
        .map(|f| f.path().to_owned())
        .collect()
}

#[test]
fn the_default_gather_is_the_whole_topic_branch() {
    let (repo, [c1, _, f2]) = topic_repo();
    let g = gather(repo.path(), &GatherConfig::default(), None).unwrap();
    assert_eq!(g.base.as_str(), c1);
    assert_eq!(g.head.as_str(), f2);
    assert_eq!(g.change_id, "branch-feature");
    assert_eq!(
        files_of(&g.diff),
        ["projects/a/lib.rs", "projects/b/lib.rs"]
    );
    assert!(g.changed);
    assert_eq!((g.lines, g.files), (4, 2));
    assert_eq!(g.tier, Tier::Green);
    assert_eq!(g.gate_outcome, GateOutcome::Pass);
    assert_eq!(g.title, "change projects/b/lib.rs");
    assert_eq!(g.body, "Body of projects/b/lib.rs.");
    assert_eq!(g.branch.as_deref(), Some("feature"));
    assert_eq!(g.since_last_review, None);
    assert_eq!(g.since_note, None);
    assert!(g.problems.is_empty());
    let a = &g.ranges[0];
    assert_eq!(a.path, "projects/a/lib.rs");
    assert_eq!(
        a.changed,
        [
            LineRange { start: 2, end: 2 },
            LineRange { start: 4, end: 4 }
        ]
    );
    assert_eq!(a.hunks, [LineRange { start: 1, end: 4 }]);
}

#[test]
fn the_diff_is_cut_to_the_path() {
    let (repo, _) = topic_repo();
    for path in ["projects/a", "./projects/a/", "projects//a"] {
        let config = GatherConfig {
            path: Some(path.into()),
            ..GatherConfig::default()
        };
        let g = gather(repo.path(), &config, None).unwrap();
        assert_eq!(files_of(&g.diff), ["projects/a/lib.rs"], "{path}");
        assert_eq!(g.files, 1);
        assert_eq!(g.ranges.len(), 1);
    }
    // Glob characters are literal, a prefix is a folder boundary.
    for path in ["projects/*", "projects/a/lib", "nothing"] {
        let config = GatherConfig {
            path: Some(path.into()),
            ..GatherConfig::default()
        };
        let g = gather(repo.path(), &config, None).unwrap();
        assert!(!g.changed, "{path}");
        assert_eq!(g.tier, Tier::Green);
    }
    for bad in ["../x", "/etc", "projects/../../x", "a\nb"] {
        let config = GatherConfig {
            path: Some(bad.into()),
            ..GatherConfig::default()
        };
        assert!(
            matches!(
                gather(repo.path(), &config, None),
                Err(GatherError::BadPath { .. })
            ),
            "{bad:?}"
        );
    }
}

#[test]
fn since_last_review_starts_at_the_reviewed_head() {
    let (repo, [_, f1, _]) = topic_repo();
    let config = GatherConfig {
        since_last_review: true,
        ..GatherConfig::default()
    };
    let g = gather(repo.path(), &config, Some(&sha(&f1))).unwrap();
    assert_eq!(g.last_reviewed.as_ref().map(Sha::as_str), Some(f1.as_str()));
    assert_eq!(
        files_of(g.since_last_review.as_deref().unwrap()),
        ["projects/b/lib.rs"]
    );
    assert_eq!(g.since_note, None);
    // The main diff is still the whole change.
    assert_eq!(g.files, 2);

    // Cut to a path the reviewed commit did not touch since: empty.
    let cut = GatherConfig {
        path: Some("projects/a".into()),
        ..config.clone()
    };
    let g = gather(repo.path(), &cut, Some(&sha(&f1))).unwrap();
    assert_eq!(g.since_last_review.as_deref(), Some(&b""[..]));
    assert_eq!(files_of(&g.diff), ["projects/a/lib.rs"]);

    // The same head again: nothing new, and it says so.
    let head = g.head.clone();
    let g = gather(repo.path(), &config, Some(&head)).unwrap();
    assert_eq!(g.since_last_review.as_deref(), Some(&b""[..]));
    assert!(g.since_note.unwrap().contains("already reviewed"));
}

#[test]
fn since_last_review_falls_back_to_the_whole_diff_after_an_amend() {
    let (repo, [_, _, f2]) = topic_repo();
    std::fs::write(repo.path().join("projects/b/lib.rs"), "x\nz\n").unwrap();
    repo.git(&["commit", "-q", "-a", "--amend", "--no-edit"]);
    let config = GatherConfig {
        since_last_review: true,
        ..GatherConfig::default()
    };
    let g = gather(repo.path(), &config, Some(&sha(&f2))).unwrap();
    assert_eq!(g.since_last_review.as_deref(), Some(g.diff.as_slice()));
    let note = g.since_note.unwrap();
    assert!(note.contains("no longer an ancestor"), "{note}");
    assert!(note.contains(&f2[..12]), "{note}");
}

#[test]
fn since_last_review_without_a_review_or_with_an_unknown_head_is_the_whole_diff() {
    let (repo, _) = topic_repo();
    let config = GatherConfig {
        since_last_review: true,
        ..GatherConfig::default()
    };
    let g = gather(repo.path(), &config, None).unwrap();
    assert_eq!(g.since_last_review.as_deref(), Some(g.diff.as_slice()));
    assert!(g.since_note.unwrap().contains("no review was posted"));

    let gone = sha(&"d".repeat(40));
    let g = gather(repo.path(), &config, Some(&gone)).unwrap();
    assert_eq!(g.since_last_review.as_deref(), Some(g.diff.as_slice()));
    assert!(g.since_note.unwrap().contains("not in this repository"));
}

#[test]
fn tiers_and_the_gate() {
    let (repo, _) = topic_repo();
    // 4 lines, 2 files.
    let thresholds = Thresholds {
        lines: [1, 2, 3, 100],
        files: [10, 10, 10, 10],
    };
    let with_gate = |halt, warn| GatherConfig {
        thresholds,
        gate: Gate { halt, warn },
        ..GatherConfig::default()
    };
    let g = gather(repo.path(), &with_gate(None, None), None).unwrap();
    assert_eq!(g.tier, Tier::Red);
    assert_eq!(g.gate_outcome, GateOutcome::Pass);

    let g = gather(
        repo.path(),
        &with_gate(Some(Tier::Black), Some(Tier::Orange)),
        None,
    )
    .unwrap();
    match g.gate_outcome {
        GateOutcome::Warn(reason) => {
            assert!(
                reason.contains("size tier red (4 lines changed in 2 files)"),
                "{reason}"
            );
            assert!(reason.contains("warn tier orange"), "{reason}");
        }
        other => panic!("{other:?}"),
    }

    let g = gather(
        repo.path(),
        &with_gate(Some(Tier::Red), Some(Tier::Yellow)),
        None,
    )
    .unwrap();
    assert!(g.gate_outcome.is_halt(), "{:?}", g.gate_outcome);

    let black = GatherConfig {
        thresholds: Thresholds {
            lines: [0, 0, 0, 0],
            files: [0, 0, 0, 0],
        },
        gate: Gate {
            halt: Some(Tier::Black),
            warn: None,
        },
        ..GatherConfig::default()
    };
    let g = gather(repo.path(), &black, None).unwrap();
    assert_eq!(g.tier, Tier::Black);
    assert!(g.gate_outcome.is_halt());
}

#[test]
fn a_diff_over_max_bytes_is_an_error_with_the_sizes() {
    let (repo, _) = topic_repo();
    let full = gather(repo.path(), &GatherConfig::default(), None).unwrap();
    let size = full.diff.len() as u64;

    let exact = GatherConfig {
        max_bytes: size,
        ..GatherConfig::default()
    };
    assert_eq!(gather(repo.path(), &exact, None).unwrap().diff, full.diff);

    let small = GatherConfig {
        max_bytes: 100,
        ..GatherConfig::default()
    };
    let err = gather(repo.path(), &small, None).unwrap_err();
    let text = err.to_string();
    assert!(text.contains(&format!("is {size} bytes")), "{text}");
    assert!(text.contains("limit of 100 bytes"), "{text}");

    // Stopped early: a lower bound.
    let tiny = GatherConfig {
        max_bytes: 10,
        ..GatherConfig::default()
    };
    let text = gather(repo.path(), &tiny, None).unwrap_err().to_string();
    assert!(text.contains("more than 171 bytes"), "{text}");
}

#[test]
fn an_empty_change_is_not_changed() {
    let (repo, [_, _, f2]) = topic_repo();
    let config = GatherConfig {
        base: Some(f2.clone()),
        ..GatherConfig::default()
    };
    let g = gather(repo.path(), &config, None).unwrap();
    assert!(!g.changed);
    assert!(g.diff.is_empty());
    assert_eq!((g.lines, g.files, g.tier), (0, 0, Tier::Green));
    assert!(g.ranges.is_empty());
}

#[test]
fn the_last_posted_review_feeds_the_next_gather() {
    let (repo, _) = topic_repo();
    let forge = LocalForge::new(repo.path());
    let config = GatherConfig {
        since_last_review: true,
        ..GatherConfig::default()
    };
    // Run 1: nothing posted yet.
    let change = forge.open_change(None, None).unwrap();
    let last = forge.last_posted(&change.change_id).unwrap();
    let g = gather_change(
        repo.path(),
        &change,
        &config,
        last.as_ref().map(|p| &p.head),
    )
    .unwrap();
    let review = Review {
        comment: "ok".into(),
        findings: vec![],
        base: g.base.clone(),
        head: g.head.clone(),
        run_id: "run-1".into(),
        conversation_id: Some("conv-1".into()),
        reviewer: "rules".into(),
        resolved: Vec::new(),
    };
    forge.post(&change, &review, &g.head).unwrap();

    // Run 2: a new commit; the since-last-review diff is that commit only.
    repo.commit("projects/c/new.rs", "new\n");
    let change = forge.open_change(None, None).unwrap();
    let last = forge.last_posted(&change.change_id).unwrap().unwrap();
    assert_eq!(last.conversation_id.as_deref(), Some("conv-1"));
    let g = gather_change(repo.path(), &change, &config, Some(&last.head)).unwrap();
    assert_eq!(
        files_of(g.since_last_review.as_deref().unwrap()),
        ["projects/c/new.rs"]
    );
    assert_eq!(g.since_note, None);
    assert_eq!(g.files, 3);
}
