//! The check corpus in tests/checks: for each check with a folder there, insecure pipelines
//! (`bad-<what>.kdl`) that it alone catches and secure twins (`good-<what>.kdl`) that no check
//! flags; and, in tests/checks/seed-000, the mistakes seed 000's review guards against, each
//! caught by the check meant for it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::{findings_json, reviewflow, root};

const SEEDS: &str = "seed-000";

fn kdl_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("readable folder")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "kdl"))
        .collect();
    files.sort();
    files
}

/// The corpus folders, one per check id, without the seed scenarios.
fn check_dirs() -> Vec<(String, PathBuf)> {
    let mut dirs: Vec<_> = std::fs::read_dir(root().join("tests/checks"))
        .expect("tests/checks exists")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_dir())
        .map(|p| {
            let name = p
                .file_name()
                .expect("a name")
                .to_string_lossy()
                .into_owned();
            (name, p)
        })
        .filter(|(name, _)| name != SEEDS)
        .collect();
    dirs.sort();
    dirs
}

fn relative(path: &Path) -> String {
    path.strip_prefix(root())
        .expect("inside the repository")
        .display()
        .to_string()
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .expect("a name")
        .to_string_lossy()
        .into_owned()
}

fn findings_of(rel: &str) -> Vec<Value> {
    let json = findings_json(rel);
    let file = &json["files"][0];
    assert_eq!(file["unusable"], false, "{rel} must compile: {json:#}");
    file["findings"].as_array().expect("findings").clone()
}

/// The findings but those a `trusted` declaration lifts (shown as allowed, with its reason): a
/// twin that reads a lens file or runs the test's own scripts says that the checkout is trusted,
/// and what that lifts is not a finding of the twin. Anything an `allow` hides still counts.
fn live_or_allowed(findings: Vec<Value>) -> Vec<Value> {
    findings
        .into_iter()
        .filter(|f| {
            !f["suppressed"]["reason"]
                .as_str()
                .is_some_and(|r| r.starts_with("trusted "))
        })
        .collect()
}

fn check_ids(findings: &[Value]) -> Vec<&str> {
    findings
        .iter()
        .map(|f| f["check"].as_str().expect("a check id"))
        .collect()
}

/// Every text a reviewer reads of a finding: message, labels, flow steps, help.
fn texts(finding: &Value) -> Vec<String> {
    let mut out = vec![finding["message"].as_str().unwrap_or_default().to_string()];
    for key in ["related", "flow"] {
        for label in finding[key].as_array().into_iter().flatten() {
            out.push(label["message"].as_str().unwrap_or_default().to_string());
        }
    }
    out.push(finding["help"].as_str().unwrap_or_default().to_string());
    out
}

#[test]
fn every_bad_pipeline_is_caught_by_its_check_alone() {
    for (check, dir) in check_dirs() {
        for path in kdl_files(&dir) {
            let name = stem(&path);
            if !name.starts_with("bad-") {
                continue;
            }
            let rel = relative(&path);
            let text = std::fs::read_to_string(&path).expect("readable");
            assert!(
                text.starts_with("// Threat: "),
                "{rel} must begin with a `// Threat: …` line"
            );
            let findings = live_or_allowed(findings_of(&rel));
            let ids = check_ids(&findings);
            assert!(!ids.is_empty(), "{rel}: `{check}` did not catch it");
            assert!(
                ids.iter().all(|id| *id == check),
                "{rel}: only `{check}` may fire, got {ids:?}:\n{findings:#?}"
            );
            let run = reviewflow(&["check", "--color", "never", &rel]);
            assert_ne!(run.code, 2, "{rel} is usable input");
            insta::assert_snapshot!(format!("{check}__{name}"), run.stderr);
        }
    }
}

#[test]
fn every_good_twin_is_clean() {
    for (_, dir) in check_dirs() {
        for path in kdl_files(&dir) {
            if !stem(&path).starts_with("good-") {
                continue;
            }
            let rel = relative(&path);
            // What a `trusted` declaration lifts is shown as allowed; anything else, `allow`ed
            // or live, makes the twin unclean. A note (info) says what a declaration gives
            // (`shared-network`'s hosts reached) and never fails a run: not a fault of the twin.
            let findings: Vec<Value> = live_or_allowed(findings_of(&rel))
                .into_iter()
                .filter(|f| f["severity"] != "info")
                .collect();
            assert!(findings.is_empty(), "{rel} must be clean:\n{findings:#?}");
            let run = reviewflow(&["check", "--fail-on", "warning", &rel]);
            assert_eq!(run.code, 0, "{rel}:\n{}", run.transcript());
        }
    }
}

#[test]
fn the_corpus_covers_every_security_check_with_twins() {
    let mut bad_per_check: BTreeMap<String, usize> = BTreeMap::new();
    for (check, dir) in check_dirs() {
        assert!(
            reviewflow_engine::check::by_id(&check).is_some(),
            "tests/checks/{check} is not a registered check id"
        );
        for path in kdl_files(&dir) {
            let name = stem(&path);
            let rel = relative(&path);
            let twin = match (name.strip_prefix("bad-"), name.strip_prefix("good-")) {
                (Some(what), _) => {
                    *bad_per_check.entry(check.clone()).or_default() += 1;
                    format!("good-{what}.kdl")
                }
                (_, Some(what)) => format!("bad-{what}.kdl"),
                _ => panic!("{rel}: corpus files are named bad-<what>.kdl or good-<what>.kdl"),
            };
            assert!(dir.join(&twin).is_file(), "{rel} has no twin {twin}");
        }
    }
    let total: usize = bad_per_check.values().sum();
    assert!(total >= 40, "the corpus has {total} insecure pipelines");
    for (id, n) in &bad_per_check {
        assert!(
            *n >= 3,
            "`{id}` has {n} insecure pipelines, at least 3 wanted"
        );
    }
    // Every registered check is shown failing somewhere: a corpus folder, or the examples of its
    // section in docs/checks.md (which docs_checks.rs runs). The list is the registry's, so a new
    // check cannot be left out by forgetting a list.
    let docs = std::fs::read_to_string(root().join("docs/checks.md")).expect("docs/checks.md");
    for check in reviewflow_engine::check::ALL {
        let id = check.id();
        assert!(
            bad_per_check.contains_key(id) || docs.contains(&format!("<!-- expect: {id} -->")),
            "`{id}` has neither a corpus folder (tests/checks/{id}) nor an example in docs/checks.md"
        );
    }
}

/// Each seed 000 scenario: its file, the check that must catch it, and texts the finding must
/// show (its message, labels, flow path or help) for a reviewer to accept it.
const SEED_SCENARIOS: &[(&str, &str, &[&str])] = &[
    (
        "key-in-review-env",
        "secret-scope",
        &[
            "stage `review` names secret `conversation-key`, which it may not see",
            "`conversation-key` is visible only to restore, seal",
        ],
    ),
    (
        "conversation-uploaded-unsealed",
        "private-egress",
        &[
            "private `review.conversation` is kept in a store by `post` unsealed",
            "`review.conversation` is private",
            "`post` reads `review.conversation`",
        ],
    ),
    (
        "seal-when-scan-errored",
        "fail-closed",
        &[
            "`seal` runs even when `scan` finds a credential (or fails)",
            "review.commented=true",
            "the guard `scan`",
        ],
    ),
    (
        "restore-without-trust",
        "trust",
        &[
            "store `conversations` is read with no `trust` rule",
            "`restore` reads it here",
        ],
    ),
    (
        "scan-fallback-reads-clean",
        "fail-closed",
        &[
            "if `scan` fails (on-error=\"fallback\"), `seal` still runs: `scan.clean` reads true",
            "a failed guard must read as failed",
        ],
    ),
    (
        "run-holds-key-interpolates-title",
        "untrusted-input",
        &[
            "untrusted `gather.title` reaches the command line of `tag`, which holds secret `conversation-key`",
            "`gather.title` comes from the change (untrusted)",
            "`tag` reads `gather.title`",
        ],
    ),
    (
        "post-holds-key",
        "secret-scope",
        &[
            "secret `conversation-key` is visible to `post`, which never uses it",
            "`post` does not name `conversation-key`",
        ],
    ),
];

#[test]
fn seed_000_scenarios_are_caught_by_the_intended_check() {
    let dir = root().join("tests/checks").join(SEEDS);
    let files: Vec<String> = kdl_files(&dir).iter().map(|p| stem(p)).collect();
    let listed: Vec<String> = SEED_SCENARIOS
        .iter()
        .map(|(n, _, _)| (*n).to_string())
        .collect();
    let mut sorted = listed.clone();
    sorted.sort();
    assert_eq!(
        files, sorted,
        "every seed scenario file is listed, and only those"
    );
    for (name, check, wanted) in SEED_SCENARIOS {
        let rel = format!("tests/checks/{SEEDS}/{name}.kdl");
        let findings = findings_of(&rel);
        let caught: Vec<&Value> = findings.iter().filter(|f| f["check"] == *check).collect();
        assert!(
            !caught.is_empty(),
            "{rel}: `{check}` did not catch it: {:?}",
            check_ids(&findings)
        );
        let all: Vec<String> = caught.iter().flat_map(|f| texts(f)).collect();
        for text in *wanted {
            assert!(
                all.iter().any(|t| t.contains(text)),
                "{rel}: no `{check}` finding shows {text:?}:\n{caught:#?}"
            );
        }
        let run = reviewflow(&["check", "--color", "never", &rel]);
        assert_eq!(run.code, 1, "{rel} must fail:\n{}", run.transcript());
        insta::assert_snapshot!(format!("seed_000__{name}"), run.stderr);
    }
}
