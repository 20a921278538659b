//! The local forge against throw-away repositories built with git in each test: opening the
//! change, posting in four formats, reading the record back, refusing stale and hostile input,
//! and filtering findings against the diff.

// Test helpers unwrap as the tests do (clippy's allow-unwrap-in-tests covers only the
// `#[test]` functions themselves).
#![allow(clippy::unwrap_used)]

mod support;

use std::path::Path;

use reviewflow_stdlib::diff::parse;
use reviewflow_stdlib::forge::{
    Format, GITIGNORE, LocalForge, LocalForgeError, PostedReview, RECORD_FILE, Review,
    ReviewFinding, filter_findings,
};
use reviewflow_stdlib::git::{self, Basis, Sha};
use reviewflow_stdlib::rules::{Finding, RuleId, Severity};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// A repository in a temp folder named `my repo`, so the sanitised name shows. Setup commands
/// (and only those) get an identity and an isolated configuration.
struct Repo {
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
}

impl Repo {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("my repo");
        std::fs::create_dir(&path).unwrap();
        let repo = Repo { _dir: dir, path };
        repo.git(&["init", "-q", "-b", "main"]);
        repo
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn git(&self, args: &[&str]) -> String {
        support::git::git(self.path(), args)
    }

    fn write(&self, file: &str, content: &str) {
        let path = self.path().join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    /// Writes `file` and commits everything with `message`; returns the new commit's SHA.
    fn commit_msg(&self, file: &str, content: &str, message: &str) -> String {
        self.write(file, content);
        self.git(&["add", "-A", "--", file]);
        self.git(&["commit", "-q", "-m", message]);
        self.git(&["rev-parse", "HEAD"])
    }

    fn commit(&self, file: &str, content: &str) -> String {
        self.commit_msg(file, content, &format!("change {file}"))
    }

    /// A clone of this repository cut to `depth` commits (over `file://`, where `--depth` is
    /// honoured), in a folder `my repo` of its own.
    fn shallow_clone(&self, depth: &str) -> Repo {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("my repo");
        std::fs::create_dir(&path).unwrap();
        let clone = Repo { _dir: dir, path };
        let url = format!("file://{}", self.path().display());
        clone.git(&["clone", "-q", "--depth", depth, "--", &url, "."]);
        clone
    }
}

fn sha(text: &str) -> Sha {
    Sha::parse(text).unwrap()
}

/// main: c1; feature (checked out): f1 changing src/lib.rs lines 2-3 of 6.
fn topic_repo() -> (Repo, String, String) {
    let repo = Repo::new();
    let c1 = repo.commit("src/lib.rs", "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\n");
    repo.git(&["checkout", "-q", "-b", "feature"]);
    let f1 = repo.commit_msg(
        "src/lib.rs",
        "a\nB\nC\nd\ne\nf\ng\nh\ni\nj\nk\nl\n",
        "Fix the letters\n\nThey were lowercase.\n\nSee #1.",
    );
    (repo, c1, f1)
}

fn review_for(head: &Sha, base: &Sha, findings: Vec<ReviewFinding>) -> Review {
    Review {
        comment: "Looks fine.\n\n**One** thing.".to_owned(),
        findings,
        base: base.clone(),
        head: head.clone(),
        run_id: "run-0001".to_owned(),
        conversation_id: Some("0198f0c2-7a1b-7c3d-9e4f-001122334455".to_owned()),
        reviewer: "rules".to_owned(),
        resolved: Vec::new(),
    }
}

fn finding(rule: &str, path: &str, line: Option<u32>, severity: Severity) -> ReviewFinding {
    ReviewFinding {
        rule: rule.to_owned(),
        severity,
        path: path.to_owned(),
        line,
        end_line: None,
        message: format!("{rule} here"),
        fingerprint: None,
        state: None,
        dialogue: None,
        suggestion: None,
    }
}

#[test]
fn a_topic_branch_is_its_merge_base_to_head_with_title_and_body() {
    let (repo, c1, f1) = topic_repo();
    let forge = LocalForge::new(repo.path());
    let change = forge.open_change(None, None).unwrap();
    assert_eq!(change.range.basis, Basis::MergeBase);
    assert_eq!(change.base().as_str(), c1);
    assert_eq!(change.head().as_str(), f1);
    assert_eq!(change.change_id, "branch-feature");
    assert_eq!(change.repo, "my-repo");
    assert_eq!(change.title, "Fix the letters");
    assert_eq!(change.body, "They were lowercase.\n\nSee #1.");
    assert_eq!(change.branch.as_deref(), Some("feature"));
}

#[test]
fn the_default_branch_reviews_its_last_commit_and_a_root_commit_the_whole_tree() {
    let repo = Repo::new();
    let c1 = repo.commit_msg("a.txt", "a\n", "First");
    let forge = LocalForge::new(repo.path());
    let root = forge.open_change(None, None).unwrap();
    assert_eq!(root.range.basis, Basis::Root);
    assert!(root.base().is_empty_tree());
    assert_eq!(
        root.change_id, "branch-main",
        "the root commit of a branch is its first push"
    );
    assert_eq!(root.title, "First");
    assert_eq!(root.body, "");

    let c2 = repo.commit_msg("b.txt", "b\n", "Second");
    let last = forge.open_change(None, None).unwrap();
    assert_eq!(last.range.basis, Basis::LastCommit);
    assert_eq!(
        (last.base().as_str(), last.head().as_str()),
        (c1.as_str(), c2.as_str())
    );
    assert_eq!(last.change_id, "branch-main");
    assert_eq!(last.title, "Second");

    // --base/--head override.
    let explicit = forge.open_change(Some(&c1), Some(&c1)).unwrap();
    assert_eq!(explicit.range.basis, Basis::Explicit);
    assert_eq!(explicit.head().as_str(), c1);
    assert_eq!(explicit.title, "First");
}

#[test]
fn a_shallow_clone_is_refused_with_the_fix_rather_than_reviewed_whole() {
    let repo = Repo::new();
    let c1 = repo.commit_msg("a.txt", "a\n", "First");
    let c2 = repo.commit_msg("b.txt", "b\n", "Second");
    // The actions/checkout default: one commit.
    let clone = repo.shallow_clone("1");
    let forge = LocalForge::new(clone.path());
    let err = forge.open_change(None, None).unwrap_err();
    assert!(
        matches!(err, LocalForgeError::Git(git::GitError::Shallow { .. })),
        "{err}"
    );
    let text = err.to_string();
    for part in [
        "the checkout is a shallow clone",
        &format!("the parent of the head commit {} is not in it", &c2[..12]),
        "`fetch-depth: 0`",
        "`git fetch --unshallow`",
    ] {
        assert!(text.contains(part), "{part:?} not in {text:?}");
    }
    // The free function refuses the same way.
    assert!(matches!(
        reviewflow_stdlib::forge::open_change(clone.path(), None, None),
        Err(LocalForgeError::Git(git::GitError::Shallow { .. }))
    ));
    // A base the clone does not have is refused too, naming it.
    let err = forge.open_change(Some(&c1), None).unwrap_err();
    assert!(
        err.to_string()
            .contains(&format!("the base {c1:?} is not a commit of it")),
        "{err}"
    );

    // Two commits: the head's parent is there, so the change is the last commit, as in a whole
    // clone; and a base given that the clone has is used.
    let clone = repo.shallow_clone("2");
    let forge = LocalForge::new(clone.path());
    let change = forge.open_change(None, None).unwrap();
    assert_eq!(change.range.basis, Basis::LastCommit);
    assert_eq!(
        (change.base().as_str(), change.head().as_str()),
        (c1.as_str(), c2.as_str())
    );
    assert_eq!(change.change_id, "branch-main");
    assert_eq!(change.title, "Second");
    let explicit = forge.open_change(Some(&c1), None).unwrap();
    assert_eq!(explicit.range.basis, Basis::Explicit);
}

#[test]
fn post_writes_four_formats_and_a_record_that_reads_back() {
    let (repo, _, _) = topic_repo();
    let forge = LocalForge::new(repo.path());
    let change = forge.open_change(None, None).unwrap();
    assert_eq!(forge.last_posted(&change.change_id).unwrap(), None);

    let mut span = finding("debug-leftover", "src/lib.rs", Some(2), Severity::Warning);
    span.end_line = Some(3);
    let findings = vec![
        finding("conflict-marker", "src/lib.rs", Some(3), Severity::Error),
        span,
        finding("binary-file", "src/lib.rs", None, Severity::Info),
    ];
    let review = review_for(change.head(), change.base(), findings);
    let posted = forge.post(&change, &review, change.head()).unwrap();

    let dir = repo.path().join(".reviewflow/forge/branch-feature");
    assert_eq!(posted.dir, dir);
    assert_eq!(posted.location, dir.join("review.md"));
    assert_eq!(posted.files.len(), 5);
    assert_eq!(posted.files.last().unwrap(), &dir.join(RECORD_FILE));

    let md = std::fs::read_to_string(dir.join("review.md")).unwrap();
    assert!(md.contains("Looks fine."), "{md}");
    assert!(md.contains("## Findings (3)"), "{md}");
    assert!(
        md.contains("- **error** `src/lib.rs:3` `conflict-marker`: conflict-marker here"),
        "{md}"
    );
    assert!(md.contains("`src/lib.rs:2-3`"), "{md}");

    let json: Value =
        serde_json::from_slice(&std::fs::read(dir.join("review.json")).unwrap()).unwrap();
    assert_eq!(json["version"], 1);
    assert_eq!(json["change_id"], "branch-feature");
    assert_eq!(json["head"], change.head().as_str());
    assert_eq!(json["findings"].as_array().unwrap().len(), 3);
    assert_eq!(json["findings"][0]["severity"], "error");

    let rd = std::fs::read_to_string(dir.join("review.rdjsonl")).unwrap();
    let lines: Vec<Value> = rd
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    for d in &lines {
        assert!(d["message"].is_string());
        assert_eq!(d["location"]["path"], "src/lib.rs");
        assert!(matches!(
            d["severity"].as_str(),
            Some("ERROR" | "WARNING" | "INFO")
        ));
        assert_eq!(d["source"]["name"], "reviewflow");
    }
    assert_eq!(lines[0]["location"]["range"]["start"]["line"], 3);
    assert_eq!(lines[0]["code"]["value"], "conflict-marker");
    assert_eq!(lines[1]["location"]["range"]["end"]["line"], 3);
    // A finding about the whole file is on line 1, as in SARIF.
    assert_eq!(
        lines[2]["location"]["range"],
        serde_json::json!({ "start": { "line": 1 } })
    );

    let sarif: Value =
        serde_json::from_slice(&std::fs::read(dir.join("review.sarif")).unwrap()).unwrap();
    assert_eq!(sarif["version"], "2.1.0");
    let run = &sarif["runs"][0];
    assert_eq!(run["tool"]["driver"]["name"], "reviewflow");
    let rule_ids: Vec<&str> = run["tool"]["driver"]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        rule_ids,
        ["binary-file", "conflict-marker", "debug-leftover"]
    );
    let results = run["results"].as_array().unwrap();
    assert_eq!(results.len(), 3);
    assert_eq!(results[0]["ruleId"], "conflict-marker");
    assert_eq!(results[0]["level"], "error");
    assert_eq!(results[2]["level"], "note");
    let location = &results[0]["locations"][0]["physicalLocation"];
    assert_eq!(location["artifactLocation"]["uri"], "src/lib.rs");
    assert_eq!(location["region"]["startLine"], 3);
    // A finding about the whole file is on line 1: code scanning shows none without a line.
    assert_eq!(
        results[2]["locations"][0]["physicalLocation"]["region"],
        serde_json::json!({ "startLine": 1 })
    );
    assert_eq!(results[2]["properties"]["wholeFile"], true);
    // No identity computed here: the fallback recipe, numbered.
    let print = results[0]["partialFingerprints"]["reviewflow/review-message/v2"]
        .as_str()
        .unwrap();
    assert_eq!(print.len(), 34, "{print}");
    assert!(print.ends_with(":1"), "{print}");

    // The record names the head and conversation, and its digests match the files.
    let record = forge.last_posted("branch-feature").unwrap().unwrap();
    assert_eq!(record, posted.record);
    assert_eq!(record.head, *change.head());
    assert_eq!(record.conversation_id, review.conversation_id);
    assert_eq!(record.run_id, "run-0001");
    assert_eq!(record.findings, 3);
    assert_eq!(record.files.len(), 4);
    for file in &record.files {
        let bytes = std::fs::read(dir.join(&file.name)).unwrap();
        let digest: String = Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(file.sha256, digest, "{}", file.name);
        assert_eq!(file.bytes, bytes.len() as u64);
    }
    // No staged temp file is left behind.
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names.len(), 5, "{names:?}");
    // The forge folder ignores itself, so the checkout stays clean.
    assert_eq!(
        std::fs::read_to_string(forge.dir.join(".gitignore")).unwrap(),
        GITIGNORE
    );
    assert_eq!(
        repo.git(&["status", "--porcelain", "--untracked-files=all"]),
        ""
    );
}

#[test]
fn a_later_post_with_fewer_formats_replaces_the_record_and_removes_stale_files() {
    let (repo, _, _) = topic_repo();
    let forge = LocalForge::new(repo.path());
    let change = forge.open_change(None, None).unwrap();
    forge
        .post(
            &change,
            &review_for(change.head(), change.base(), vec![]),
            change.head(),
        )
        .unwrap();
    repo.commit("src/more.rs", "more\n");
    let change = forge.open_change(None, None).unwrap();
    let mut review = review_for(change.head(), change.base(), vec![]);
    review.run_id = "run-0002".into();
    review.conversation_id = None;
    let posted = forge
        .post_formats(
            &change,
            &review,
            change.head(),
            &[Format::Sarif, Format::Json],
        )
        .unwrap();
    let dir = posted.dir;
    assert!(!dir.join("review.md").exists());
    assert!(!dir.join("review.rdjsonl").exists());
    assert!(dir.join("review.json").exists());
    assert_eq!(posted.location, dir.join("review.json"));
    let record = forge.last_posted(&change.change_id).unwrap().unwrap();
    assert_eq!(record.run_id, "run-0002");
    assert_eq!(record.head, *change.head());
    assert_eq!(record.conversation_id, None);
    let formats: Vec<Format> = record.files.iter().map(|f| f.format).collect();
    assert_eq!(formats, [Format::Json, Format::Sarif]);
}

#[test]
fn post_refuses_when_the_head_moved_since_gather() {
    let (repo, _, _) = topic_repo();
    let forge = LocalForge::new(repo.path());
    let change = forge.open_change(None, None).unwrap();
    let review = review_for(change.head(), change.base(), vec![]);
    forge.post(&change, &review, change.head()).unwrap();
    let before = std::fs::read(
        forge
            .change_dir(&change.change_id)
            .unwrap()
            .join(RECORD_FILE),
    )
    .unwrap();

    // A commit lands between gather and post.
    let new_head = repo.commit("src/late.rs", "late\n");
    let mut review2 = review.clone();
    review2.run_id = "run-0002".into();
    review2.comment = "stale".into();
    let err = forge.post(&change, &review2, change.head()).unwrap_err();
    match &err {
        LocalForgeError::HeadMoved { expected, current } => {
            assert_eq!(expected, change.head());
            assert_eq!(current.as_str(), new_head);
        }
        other => panic!("{other}"),
    }
    assert!(err.to_string().contains("head moved"), "{err}");
    // The previous review stays the recorded one, its files untouched.
    let dir = forge.change_dir(&change.change_id).unwrap();
    assert_eq!(std::fs::read(dir.join(RECORD_FILE)).unwrap(), before);
    assert!(
        !std::fs::read_to_string(dir.join("review.md"))
            .unwrap()
            .contains("stale")
    );
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 5);

    // A review of another head than the one required is refused too.
    let fresh = forge.open_change(None, None).unwrap();
    let err = forge.post(&fresh, &review2, fresh.head()).unwrap_err();
    assert!(
        matches!(err, LocalForgeError::ReviewHeadMismatch { .. }),
        "{err}"
    );
}

#[test]
fn post_refuses_bad_ids() {
    let (repo, _, _) = topic_repo();
    let forge = LocalForge::new(repo.path());
    let change = forge.open_change(None, None).unwrap();
    let good = review_for(change.head(), change.base(), vec![]);
    let mut bad_run = good.clone();
    bad_run.run_id = "../../x".into();
    let mut bad_conv = good.clone();
    bad_conv.conversation_id = Some("a/b".into());
    let mut bad_reviewer = good.clone();
    bad_reviewer.reviewer = "x\n# forged".into();
    let mut bad_change = change.clone();
    bad_change.change_id = "../escape".into();
    for (change, review) in [
        (&change, &bad_run),
        (&change, &bad_conv),
        (&change, &bad_reviewer),
        (&bad_change, &good),
    ] {
        let err = forge.post(change, review, change.head()).unwrap_err();
        assert!(matches!(err, LocalForgeError::BadId { .. }), "{err}");
    }
    assert!(!repo.path().join(".reviewflow").exists());
    assert!(forge.last_posted("../x").is_err());
    assert!(forge.change_dir("..").is_err());
}

fn good_record(head: &str) -> Value {
    serde_json::json!({
        "version": 1,
        "change_id": "branch-feature",
        "base": "a".repeat(40),
        "head": head,
        "run_id": "run-1",
        "conversation_id": "conv-1",
        "reviewer": "rules",
        "posted_at": "2025-01-02T03:04:05Z",
        "findings": 0,
        "files": [{ "format": "json", "name": "review.json", "sha256": "0".repeat(64), "bytes": 2 }],
    })
}

#[test]
fn a_corrupt_or_hostile_record_is_rejected() {
    let (repo, _, _) = topic_repo();
    let forge = LocalForge::new(repo.path());
    let dir = forge.change_dir("branch-feature").unwrap();
    std::fs::create_dir_all(&dir).unwrap();
    let record = dir.join(RECORD_FILE);

    // A well-formed record is read back.
    std::fs::write(&record, good_record(&"b".repeat(40)).to_string()).unwrap();
    let read: PostedReview = forge.last_posted("branch-feature").unwrap().unwrap();
    assert_eq!(read.head.as_str(), "b".repeat(40));
    assert_eq!(read.conversation_id.as_deref(), Some("conv-1"));

    let hostile: Vec<(&str, Value)> = vec![
        ("short sha", good_record("bbbb")),
        ("uppercase sha", good_record(&"B".repeat(40))),
        ("option as sha", good_record("--output=x")),
        ("traversal run id", {
            let mut v = good_record(&"b".repeat(40));
            v["run_id"] = "../../etc".into();
            v
        }),
        ("traversal conversation id", {
            let mut v = good_record(&"b".repeat(40));
            v["conversation_id"] = "../x".into();
            v
        }),
        ("other change", {
            let mut v = good_record(&"b".repeat(40));
            v["change_id"] = "branch-other".into();
            v
        }),
        ("traversal change id", {
            let mut v = good_record(&"b".repeat(40));
            v["change_id"] = "../branch-feature".into();
            v
        }),
        ("traversal file name", {
            let mut v = good_record(&"b".repeat(40));
            v["files"][0]["name"] = "../../.bashrc".into();
            v
        }),
        ("bad digest", {
            let mut v = good_record(&"b".repeat(40));
            v["files"][0]["sha256"] = "zz".into();
            v
        }),
        ("unknown field", {
            let mut v = good_record(&"b".repeat(40));
            v["marker"] = "x".into();
            v
        }),
        ("future version", {
            let mut v = good_record(&"b".repeat(40));
            v["version"] = 2.into();
            v
        }),
        ("bad time", {
            let mut v = good_record(&"b".repeat(40));
            v["posted_at"] = "yesterday".into();
            v
        }),
        ("control reviewer", {
            let mut v = good_record(&"b".repeat(40));
            v["reviewer"] = "a\u{1b}[2J".into();
            v
        }),
    ];
    for (what, value) in hostile {
        std::fs::write(&record, value.to_string()).unwrap();
        let err = forge.last_posted("branch-feature").unwrap_err();
        assert!(
            matches!(err, LocalForgeError::BadRecord { .. }),
            "{what}: {err}"
        );
    }
    for raw in [&b"not json"[..], b"", b"{}", &vec![b' '; 70 * 1024]] {
        std::fs::write(&record, raw).unwrap();
        assert!(forge.last_posted("branch-feature").is_err());
    }
}

#[cfg(unix)]
#[test]
fn records_through_symbolic_links_are_not_followed() {
    let (repo, _, _) = topic_repo();
    let forge = LocalForge::new(repo.path());
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::write(
        elsewhere.path().join(RECORD_FILE),
        good_record(&"b".repeat(40)).to_string(),
    )
    .unwrap();

    // The record itself is a link.
    let dir = forge.change_dir("branch-feature").unwrap();
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(elsewhere.path().join(RECORD_FILE), dir.join(RECORD_FILE)).unwrap();
    assert!(matches!(
        forge.last_posted("branch-feature"),
        Err(LocalForgeError::BadRecord { .. })
    ));

    // The change's folder is a link: neither read nor written through.
    std::fs::remove_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), &dir).unwrap();
    assert!(matches!(
        forge.last_posted("branch-feature"),
        Err(LocalForgeError::NotAFolder { .. })
    ));
    let change = forge.open_change(None, None).unwrap();
    let review = review_for(change.head(), change.base(), vec![]);
    assert!(matches!(
        forge.post(&change, &review, change.head()),
        Err(LocalForgeError::NotAFolder { .. })
    ));
    assert!(!elsewhere.path().join("review.md").exists());
}

#[test]
fn a_record_that_came_with_the_change_is_refused() {
    let (repo, _, _) = topic_repo();
    // The change itself commits a record claiming its head was reviewed already.
    let head = repo.git(&["rev-parse", "HEAD"]);
    let mut record = good_record(&head);
    record["base"] = head.clone().into();
    repo.commit(
        ".reviewflow/forge/branch-feature/posted.json",
        &record.to_string(),
    );
    let forge = LocalForge::new(repo.path());
    let err = forge.last_posted("branch-feature").unwrap_err();
    assert!(err.to_string().contains("tracks"), "{err}");
    // The same folder named through another spelling of the path.
    let other = LocalForge::with_dir(
        repo.path().join("."),
        repo.path().join("src/../.reviewflow/forge"),
    );
    assert!(matches!(
        other.last_posted("branch-feature"),
        Err(LocalForgeError::BadRecord { .. })
    ));
}

#[test]
fn a_forge_folder_outside_the_checkout_works_the_same() {
    let (repo, _, _) = topic_repo();
    let out = tempfile::tempdir().unwrap();
    let forge = LocalForge::with_dir(repo.path(), out.path().join("forge"));
    let change = forge.open_change(None, None).unwrap();
    let review = review_for(change.head(), change.base(), vec![]);
    let posted = forge.post(&change, &review, change.head()).unwrap();
    assert!(posted.dir.starts_with(out.path()));
    assert_eq!(
        forge.last_posted(&change.change_id).unwrap().unwrap().head,
        *change.head()
    );
    assert!(!repo.path().join(".reviewflow").exists());
}

#[test]
fn hostile_finding_text_stays_text_in_markdown() {
    let (repo, _, _) = topic_repo();
    let forge = LocalForge::new(repo.path());
    let change = forge.open_change(None, None).unwrap();
    let mut f = finding("x", "src/lib.rs", Some(2), Severity::Info);
    f.message = "click [here](https://evil.invalid) <script>\n# Approved".into();
    f.path = "src/`lib`.rs".into();
    let review = review_for(change.head(), change.base(), vec![f]);
    let posted = forge.post(&change, &review, change.head()).unwrap();
    let md = std::fs::read_to_string(posted.location).unwrap();
    let item = md.lines().find(|l| l.starts_with("- ")).unwrap();
    assert!(
        item.contains("click \\[here](https://evil.invalid) \\<script> # Approved"),
        "{item}"
    );
    assert!(item.contains("``src/`lib`.rs:2``"), "{item}");
    assert!(!md.lines().any(|l| l.starts_with("# Approved")));
}

#[test]
fn findings_are_filtered_against_the_diff() {
    let (repo, c1, f1) = topic_repo();
    let diff = parse(&git::diff(repo.path(), &sha(&c1), &sha(&f1), None).unwrap());
    // The hunk covers lines 1-6 (changes at 2-3, three lines of context); line 12 is outside.
    let mut spanning = finding("r", "src/lib.rs", Some(2), Severity::Error);
    spanning.end_line = Some(40);
    let findings = vec![
        finding("r", "src/lib.rs", Some(3), Severity::Error),
        finding("r", "src/lib.rs", Some(6), Severity::Error),
        finding("r", "src/lib.rs", Some(12), Severity::Error),
        finding("r", "src/lib.rs", None, Severity::Error),
        finding("r", "src/forged.rs", Some(1), Severity::Error),
        finding("r", "./src/lib.rs", Some(2), Severity::Error),
        spanning,
    ];
    let out = filter_findings(findings, &diff);
    assert_eq!(out.dropped, 2);
    assert_eq!(out.demoted, 1);
    let lines: Vec<(Option<u32>, Option<u32>)> =
        out.kept.iter().map(|f| (f.line, f.end_line)).collect();
    assert_eq!(
        lines,
        [
            (Some(3), None),
            (Some(6), None),
            (None, None),
            (None, None),
            (Some(2), None)
        ]
    );
    assert!(out.kept.iter().all(|f| f.path == "src/lib.rs"));
}

#[test]
fn rule_findings_convert() {
    let f = ReviewFinding::from(Finding {
        rule: RuleId::TodoAdded,
        severity: Severity::Info,
        path: "a.rs".into(),
        line: Some(4),
        message: "TODO added".into(),
        suggestion: None,
    });
    assert_eq!(f.rule, "todo-added");
    assert_eq!((f.line, f.end_line), (Some(4), None));
}

#[test]
fn each_pipeline_has_its_own_folder_in_a_change() {
    use reviewflow_stdlib::forge::pipeline_component;
    assert_eq!(pipeline_component("local-review"), "local-review");
    let (a, b) = ("x".repeat(100), format!("{}y", "x".repeat(100)));
    let (fa, fb) = (pipeline_component(&a), pipeline_component(&b));
    assert_ne!(fa, fb, "two long names never share a folder");
    assert!(fa.len() <= 64 && fa.starts_with("xxxx"), "{fa}");
    assert_eq!(pipeline_component("a b"), pipeline_component("a b"));
    assert_ne!(pipeline_component("a b"), pipeline_component("a_b"));
    let forge = LocalForge::new("/checkout").for_pipeline("local-review");
    assert_eq!(
        forge.change_dir("branch-main").expect("a change id"),
        std::path::Path::new("/checkout/.reviewflow/forge/branch-main/local-review")
    );
}

#[test]
fn a_review_that_did_not_run_keeps_only_the_total_in_the_record() {
    use reviewflow_stdlib::forge::{Kept, TotalKept};
    use reviewflow_stdlib::reviewer::usage::{Usage, Usd};
    let usage = |tokens: u64| Usage {
        input_tokens: tokens,
        output_tokens: 7,
        cached_tokens: 0,
        cost_usd: Some(Usd(tokens)),
    };
    let (repo, _, _) = topic_repo();
    let forge = LocalForge::new(repo.path());
    let change = forge.open_change(None, None).unwrap();
    let id = change.change_id.as_str();
    // No review posted: no record to keep a total in, and none is created.
    assert_eq!(
        forge.keep_total(id, usage(10)).unwrap(),
        TotalKept::NoRecord
    );
    assert_eq!(forge.last_posted(id).unwrap(), None);

    let review = review_for(change.head(), change.base(), vec![]);
    let kept = Kept {
        baseline: None,
        spent: Some(usage(100)),
        footer: None,
    };
    let posted = forge
        .post_recorded(&change, &review, change.head(), &[Format::Json], &kept)
        .unwrap();
    let path = posted.dir.join(RECORD_FILE);
    let before: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let files = std::fs::read(posted.dir.join(Format::Json.file_name())).unwrap();

    assert_eq!(
        forge.keep_total(id, usage(250)).unwrap(),
        TotalKept::Written
    );
    let after: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let mut expected = before.clone();
    expected["spent"] = serde_json::to_value(usage(250)).unwrap();
    assert_eq!(after, expected);
    assert_ne!(after, before);
    assert_eq!(
        std::fs::read(posted.dir.join(Format::Json.file_name())).unwrap(),
        files
    );
    let last = forge.last_posted(id).unwrap().unwrap();
    assert_eq!((last.spent, &last.head), (Some(usage(250)), change.head()));

    // The same total again writes nothing.
    let written = std::fs::metadata(&path).unwrap().modified().unwrap();
    assert_eq!(
        forge.keep_total(id, usage(250)).unwrap(),
        TotalKept::Unchanged
    );
    assert_eq!(
        std::fs::metadata(&path).unwrap().modified().unwrap(),
        written
    );
}
