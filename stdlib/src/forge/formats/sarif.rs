//! `review.sarif`: the review's findings as one SARIF 2.1.0 run, through the engine's one SARIF
//! writer ([`crate::sarif::LogBuilder`]; the shape is in `docs/sarif.md`).
//!
//! - the run is the analysis `reviewflow/review/<pipeline>/<run id>` (category
//!   `reviewflow/review/<pipeline>`: one per pipeline, as the forge keeps one review per change
//!   and pipeline);
//! - every rule with a finding is described once, sorted by id: a built-in rule by its
//!   description, a rule a reviewer named itself by a generic text; a built-in rule that says
//!   its findings are security findings is tagged so ([`taxonomy::review_rule`]);
//! - each finding is one result in the file at its path (relative to `%SRCROOT%`), on its lines;
//!   a finding about the whole file is put on line 1 (code scanning shows no result without a
//!   line) and says so in `properties.wholeFile`;
//! - `partialFingerprints` holds the finding's identity (`reviewflow/review/v2`) when it has
//!   one, else a hash of rule, path and message (`reviewflow/review-message/v2`), numbered among
//!   equal ones;
//! - at most 25,000 results (GitHub's limit for a run), the most severe kept; the run says how
//!   many it left out;
//! - `baselineState` follows the finding's state (`new`, `unchanged`). The findings this push
//!   resolved are not results: every consumer (reviewdog, sarif-tools, code scanning) reads a
//!   result as live, so they are listed in `review.json` only;
//! - a suggested fix is the result's one `fixes` entry (SARIF 2.1.0 §3.55): one
//!   `artifactChange` of the finding's file with one `replacement` whose `deletedRegion` is the
//!   finding's lines (`startLine`, `endLine`: whole lines, without the last one's line ending,
//!   §3.30.5) and whose `insertedContent` is the new text without a final line ending. An empty
//!   fix deletes the lines, line endings included: its region runs to column 1 of the line
//!   after.

use std::collections::BTreeSet;

use serde_json::{Map, json};
use sha2::{Digest, Sha256};

use crate::sarif::fingerprint::Numbering;
use crate::sarif::log::{Fingerprint, location};
use crate::sarif::{Analysis, Level, LogBuilder, Quota, Rule, SarifResult};
use crate::sarif::{taxonomy, uri};

use super::super::LocalForgeError;
use super::super::review::{FindingState, Review, ReviewFinding};
use crate::rules::{RuleId, Severity, registry};

/// The key of a finding's identity (`ReviewFinding::fingerprint`, `docs/findings.md`).
pub const IDENTITY_KEY: &str = "reviewflow/review/v2";
/// The key of the fallback recipe, for a finding without an identity: [`fingerprint`].
pub const MESSAGE_KEY: &str = "reviewflow/review-message/v2";

/// The log of `review` by `pipeline` (the forge's folder name for it, when it has one).
pub(super) fn render(review: &Review, pipeline: Option<&str>) -> Result<Vec<u8>, LocalForgeError> {
    Ok(builder(review, pipeline).finish_text().into_bytes())
}

/// The log of `review`, as a value.
#[cfg(test)]
fn log(review: &Review) -> serde_json::Value {
    builder(review, Some("p")).finish()
}

/// The log of `review`, built.
fn builder(review: &Review, pipeline: Option<&str>) -> LogBuilder {
    let mut log = LogBuilder::new(
        Analysis::Review {
            pipeline,
            run_id: &review.run_id,
        },
        env!("CARGO_PKG_VERSION"),
    );
    // Rules sorted by id, so the log does not depend on which rule was found first.
    let ids: BTreeSet<&str> = review.findings.iter().map(|f| f.rule.as_str()).collect();
    for id in ids {
        log.rule(&rule(id, &review.reviewer));
    }
    // Past GitHub's limit of results a run, the most severe are kept.
    let rank = |f: &ReviewFinding| match f.severity {
        Severity::Error => 0,
        Severity::Warning => 1,
        Severity::Info => 2,
    };
    let mut quota = Quota::new(review.findings.iter().map(rank));
    for f in &review.findings {
        if quota.take(rank(f)) {
            log.result(result(f));
        }
    }
    let mut properties = Map::new();
    properties.insert("reviewer".into(), review.reviewer.as_str().into());
    properties.insert("base".into(), json!(review.base));
    properties.insert("head".into(), json!(review.head));
    properties.insert("runId".into(), review.run_id.as_str().into());
    quota.report(
        &mut log,
        &mut properties,
        "the most severe are kept (review.json lists every finding)",
    );
    log.properties(properties);
    log
}

/// A rule with its description: a built-in rule's (see [`crate::rules`]), or for a rule a
/// reviewer named itself, that it is the reviewer's. No `helpUri`: there is no page to link.
fn rule(id: &str, reviewer: &str) -> Rule {
    let builtin = id.parse::<RuleId>().ok().and_then(registry::get);
    match builtin {
        Some(r) => {
            let full = format!(
                "{}: found by reviewflow's built-in `rules` reviewer in the lines a change adds.",
                r.description()
            );
            Rule {
                id: id.to_owned(),
                short: r.description().to_owned(),
                full: full.clone(),
                help_text: format!(
                    "{full} Fix or remove what the finding points at; the finding goes away \
                     with it on the next push."
                ),
                help_markdown: None,
                help_uri: None,
                level: level(r.severity()),
                properties: taxonomy::review_rule(r.security(), level(r.severity())),
            }
        }
        None => {
            let text = format!("a finding the reviewer `{reviewer}` reported under this name");
            Rule {
                id: id.to_owned(),
                short: text.clone(),
                full: format!(
                    "{text}: the rule is the reviewer's own, and its message says what it found."
                ),
                help_text: format!(
                    "{text}. Read the finding's message: a reviewer's own rules have no \
                     description beyond it."
                ),
                help_markdown: None,
                help_uri: None,
                level: Level::Warning,
                properties: Map::new(),
            }
        }
    }
}

fn result(f: &ReviewFinding) -> SarifResult {
    let mut region = json!({ "startLine": f.line.unwrap_or(1).max(1) });
    if let (Some(start), Some(end)) = (f.line, f.end_line)
        && end > start
    {
        region["endLine"] = json!(end);
    }
    let mut extra = Map::new();
    if let Some(state) = f.state.and_then(baseline_state) {
        extra.insert("baselineState".into(), state.into());
    }
    let mut properties = Map::new();
    if f.line.is_none() {
        properties.insert("wholeFile".into(), true.into());
    }
    // The dialogue's state (docs/findings.md): an accepted finding is suppressed, as SARIF's
    // consumers read a result without a suppression as live.
    if let Some(state @ (FindingState::Refuted | FindingState::Accepted | FindingState::Upheld)) =
        f.state
    {
        properties.insert("reviewflowState".into(), state.as_str().into());
    }
    if f.state == Some(FindingState::Accepted) {
        let answer = f.dialogue.as_ref().map(|d| d.answer.as_str()).unwrap_or("");
        let mut suppression = json!({ "kind": "external", "status": "accepted" });
        if !answer.is_empty() {
            suppression["justification"] = answer.into();
        }
        extra.insert("suppressions".into(), json!([suppression]));
    }
    if !properties.is_empty() {
        extra.insert("properties".into(), properties.into());
    }
    if let (Some(text), Some(start)) = (&f.suggestion, f.line) {
        extra.insert("fixes".into(), fixes(f, text, start));
    }
    let fingerprint = match &f.fingerprint {
        Some(identity) => Fingerprint {
            key: IDENTITY_KEY,
            value: identity.clone(),
            numbering: Numbering::Repeats,
        },
        None => Fingerprint {
            key: MESSAGE_KEY,
            value: fingerprint(f),
            numbering: Numbering::Always,
        },
    };
    SarifResult {
        rule_id: f.rule.clone(),
        level: level(f.severity),
        message: f.message.clone(),
        location: location(&uri::encode(&f.path), None, region),
        fingerprint,
        extra,
    }
}

/// The `fixes` of a finding whose suggestion replaces lines `start` to its end line.
fn fixes(f: &ReviewFinding, text: &str, start: u32) -> serde_json::Value {
    let end = f.end_line.unwrap_or(start).max(start);
    let text = text.strip_suffix('\n').unwrap_or(text);
    let deleted = if text.is_empty() {
        json!({ "startLine": start, "startColumn": 1, "endLine": end.saturating_add(1), "endColumn": 1 })
    } else {
        json!({ "startLine": start, "endLine": end })
    };
    let mut artifact = location(&uri::encode(&f.path), None, json!({}));
    let artifact_location = artifact["physicalLocation"]["artifactLocation"].take();
    json!([{
        "description": { "text": "The reviewer's suggested fix; reviewflow does not apply it." },
        "artifactChanges": [{
            "artifactLocation": artifact_location,
            "replacements": [{
                "deletedRegion": deleted,
                "insertedContent": { "text": text },
            }],
        }],
    }])
}

/// A live finding's `baselineState`; a resolved one is not a result.
fn baseline_state(state: FindingState) -> Option<&'static str> {
    match state {
        FindingState::New => Some("new"),
        FindingState::Persisting
        | FindingState::Refuted
        | FindingState::Accepted
        | FindingState::Upheld => Some("unchanged"),
        FindingState::Resolved => None,
    }
}

fn level(s: Severity) -> Level {
    match s {
        Severity::Error => Level::Error,
        Severity::Warning => Level::Warning,
        Severity::Info => Level::Note,
    }
}

/// A line-independent identity of a finding without one: 32 hex digits of SHA-256 over rule,
/// path and message, each NUL-terminated so that no two triples hash alike. The log numbers
/// equal ones (`<hash>:<n>`).
pub fn fingerprint(f: &ReviewFinding) -> String {
    let mut hasher = Sha256::new();
    for part in [&f.rule, &f.path, &f.message] {
        hasher.update(part.as_bytes());
        hasher.update([0]);
    }
    reviewflow_engine::hex::encode(&hasher.finalize()[..16])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::Sha;
    use serde_json::Value;

    fn finding(rule: &str, path: &str, line: Option<u32>, message: &str) -> ReviewFinding {
        ReviewFinding {
            rule: rule.into(),
            severity: Severity::Error,
            path: path.into(),
            line,
            end_line: None,
            message: message.into(),
            fingerprint: None,
            state: None,
            dialogue: None,
            suggestion: None,
        }
    }

    fn review(findings: Vec<ReviewFinding>, resolved: Vec<ReviewFinding>) -> Review {
        let sha = Sha::parse(&"a".repeat(40)).expect("sha");
        Review {
            comment: String::new(),
            findings,
            base: sha.clone(),
            head: sha,
            run_id: "run-1".into(),
            conversation_id: None,
            reviewer: "rules".into(),
            resolved,
        }
    }

    fn results(log: &Value) -> &Vec<Value> {
        log["runs"][0]["results"].as_array().expect("results")
    }

    #[test]
    fn every_rule_is_described_and_links_nowhere() {
        for r in registry::RULES {
            let rule = rule(r.id().as_str(), "rules");
            assert_eq!(rule.short, r.description());
            assert!(rule.full.starts_with(r.description()));
            assert!(rule.help_text.starts_with(&rule.full));
            assert!(rule.help_uri.is_none());
        }
        let own = rule("missing-test", "claude");
        assert_eq!(
            own.short,
            "a finding the reviewer `claude` reported under this name"
        );
        assert_eq!(own.level, Level::Warning);
    }

    /// A rule that declares itself a security rule (`credential`: what the secret detectors
    /// find) is filed by code scanning as a security alert; the others are not.
    #[test]
    fn a_credential_is_a_security_alert() {
        let log = log(&review(
            vec![
                finding("credential", "a.rs", Some(1), "a key"),
                finding("todo-added", "a.rs", Some(2), "TODO"),
                finding("missing-test", "a.rs", Some(3), "no test"),
            ],
            vec![],
        ));
        let rules = log["runs"][0]["tool"]["driver"]["rules"]
            .as_array()
            .expect("rules");
        let props = |id: &str| {
            rules
                .iter()
                .find(|r| r["id"] == id)
                .map(|r| r["properties"].clone())
                .expect("rule")
        };
        assert_eq!(props("credential")["tags"], json!(["security"]));
        assert_eq!(props("credential")["security-severity"], "8.0");
        assert!(props("credential").get("precision").is_none());
        for other in ["todo-added", "missing-test"] {
            assert_eq!(props(other), Value::Null, "{other}");
        }
    }

    #[test]
    fn three_identical_findings_have_three_fingerprints() {
        let f = finding(
            "conflict-marker",
            "src/c.rs",
            Some(2),
            "merge conflict marker",
        );
        let log = log(&review(vec![f.clone(), f.clone(), f], vec![]));
        let prints: Vec<&str> = results(&log)
            .iter()
            .map(|r| {
                r["partialFingerprints"][MESSAGE_KEY]
                    .as_str()
                    .expect("print")
            })
            .collect();
        assert_eq!(prints[0][..32], prints[2][..32]);
        assert!(
            prints[0].ends_with(":1") && prints[1].ends_with(":2") && prints[2].ends_with(":3")
        );
    }

    #[test]
    fn identities_and_states_are_written_and_resolved_findings_are_not() {
        let mut new = finding("todo-added", "a.rs", Some(3), "TODO");
        new.fingerprint = Some("f".repeat(32));
        new.state = Some(FindingState::New);
        let mut kept = finding("todo-added", "a.rs", Some(9), "TODO");
        kept.fingerprint = Some("e".repeat(32));
        kept.state = Some(FindingState::Persisting);
        let mut gone = finding("credential", "b.rs", Some(4), "a key");
        gone.fingerprint = Some("d".repeat(32));
        gone.state = Some(FindingState::Resolved);
        let log = log(&review(vec![new, kept], vec![gone]));
        let r = results(&log);
        // A consumer reads every result as live: a resolved finding is not one (review.json
        // lists it).
        assert_eq!(r.len(), 2, "{log:#}");
        let states: Vec<&Value> = r.iter().map(|r| &r["baselineState"]).collect();
        assert_eq!(states, [&json!("new"), &json!("unchanged")]);
        assert_eq!(r[0]["partialFingerprints"][IDENTITY_KEY], "f".repeat(32));
        assert!(!log.to_string().contains(&"d".repeat(32)), "{log:#}");
        let rules = log["runs"][0]["tool"]["driver"]["rules"]
            .as_array()
            .expect("rules");
        assert_eq!(
            rules.len(),
            1,
            "the resolved finding's rule is not described"
        );
    }

    #[test]
    fn a_whole_file_finding_is_on_line_1() {
        let log = log(&review(
            vec![finding("binary-file", "a.bin", None, "m")],
            vec![],
        ));
        let r = &results(&log)[0];
        assert_eq!(r["properties"]["wholeFile"], true);
        assert_eq!(
            r["locations"][0]["physicalLocation"]["region"],
            json!({ "startLine": 1 })
        );
    }

    #[test]
    fn each_pipeline_has_its_own_category() {
        let r = review(vec![finding("x", "a", Some(1), "m")], vec![]);
        let id = |pipeline: Option<&str>| {
            let log: Value =
                serde_json::from_slice(&render(&r, pipeline).expect("renders")).expect("JSON");
            log["runs"][0]["automationDetails"]["id"].clone()
        };
        assert_eq!(
            id(Some("local-review")),
            "reviewflow/review/local-review/run-1"
        );
        assert_eq!(id(Some("security")), "reviewflow/review/security/run-1");
        assert_eq!(id(None), "reviewflow/review/run-1");
    }

    #[test]
    fn no_state_no_baseline_state() {
        let log = log(&review(vec![finding("x", "a", Some(1), "m")], vec![]));
        assert!(results(&log)[0].get("baselineState").is_none());
    }

    /// GitHub refuses a run of more than 25,000 results: a review past it keeps the most
    /// severe and says how many it left out.
    #[test]
    fn a_review_past_github_s_limit_is_capped_and_says_so() {
        let mut findings = vec![finding("todo-added", "a.rs", Some(1), "m")];
        findings[0].severity = Severity::Info;
        findings.extend((0..25_001).map(|i| {
            let mut f = finding("x", "a.rs", Some(i + 2), "m");
            f.severity = Severity::Warning;
            f
        }));
        let log = log(&review(findings, vec![]));
        let r = results(&log);
        assert_eq!(r.len(), 25_000);
        assert!(
            r.iter().all(|r| r["level"] == "warning"),
            "the note goes first"
        );
        assert_eq!(log["runs"][0]["properties"]["resultsLeftOut"], 2);
        assert_eq!(
            log["runs"][0]["invocations"][0]["toolExecutionNotifications"][0]["level"],
            "warning"
        );
    }

    #[test]
    fn paths_are_encoded_relative_references() {
        let log = log(&review(
            vec![
                finding("x", "src/a b#?.rs", Some(1), "m"),
                finding("x", "/etc/passwd", Some(1), "m"),
            ],
            vec![],
        ));
        let uri = |i: usize| {
            results(&log)[i]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].clone()
        };
        assert_eq!(uri(0), "src/a%20b%23%3F.rs");
        assert_eq!(uri(1), "%2Fetc/passwd");
    }

    #[test]
    fn a_suggestion_is_a_fix_replacing_the_finding_s_lines() {
        let mut two = finding("r", "src/a b.rs", Some(7), "m");
        two.end_line = Some(8);
        two.suggestion = Some("let a = 1;\nlet b = 2;\n".into());
        let mut gone = finding("r", "src/a.rs", Some(3), "m");
        gone.suggestion = Some(String::new());
        let plain = finding("r", "src/a.rs", Some(4), "m");
        let log = log(&review(vec![two, gone, plain], Vec::new()));
        let results = results(&log);
        assert_eq!(
            results[0]["fixes"],
            json!([{
                "description": { "text": "The reviewer's suggested fix; reviewflow does not apply it." },
                "artifactChanges": [{
                    "artifactLocation": { "uri": "src/a%20b.rs", "uriBaseId": "%SRCROOT%" },
                    "replacements": [{
                        "deletedRegion": { "startLine": 7, "endLine": 8 },
                        "insertedContent": { "text": "let a = 1;\nlet b = 2;" }
                    }]
                }]
            }])
        );
        assert_eq!(
            results[1]["fixes"][0]["artifactChanges"][0]["replacements"][0]["deletedRegion"],
            json!({ "startLine": 3, "startColumn": 1, "endLine": 4, "endColumn": 1 })
        );
        assert!(results[2].get("fixes").is_none());
        // Valid SARIF 2.1.0, by the schema the engine's own log is tested against.
        let schema: Value =
            serde_json::from_str(include_str!("../../../tests/fixtures/sarif-2.1.0.json"))
                .expect("schema");
        let validator = jsonschema::draft4::new(&schema).expect("schema compiles");
        let errors: Vec<String> = validator.iter_errors(&log).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:?}");
    }
}
