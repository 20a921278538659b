//! The SARIF log: valid against the SARIF 2.1.0 schema, rules for every check, locations in
//! UTF-16 columns, flows, suppressions and fingerprints that survive line moves.

use reviewflow_engine::Source;
use reviewflow_engine::check;
use reviewflow_engine::finding::{Confidence, Finding, Label, Severity, Suppression};
use reviewflow_engine::span::Span;
use reviewflow_stdlib::sarif::{FINGERPRINT_KEY, help_uri, sarif_log};
use serde_json::{Value, json};

const PIPELINE: &str = r#"secret "api-key" env="API_KEY" {
    visible-to "review"
}
stage "gather" kind="std/diff"
stage "review" kind="std/review" {
    input "diff" from="gather.dif"
    note "café ☕ 𝄞 {résumé}"
}
stage "post" kind="std/post" {
    input "body" from="review.text"
    allow "secret-flow" reason="the body is redacted by review"
}
"#;

/// The span of the `nth` (0-based) occurrence of `needle` in `text`.
fn span_of(text: &str, needle: &str, nth: usize) -> Span {
    let (offset, _) = text
        .match_indices(needle)
        .nth(nth)
        .unwrap_or_else(|| panic!("{needle:?} #{nth} not in the text"));
    Span::new(offset, needle.len())
}

/// One finding of every shape, against `text` (a variant of [`PIPELINE`]).
fn findings(text: &str) -> Vec<Finding> {
    let at = |needle: &str| span_of(text, needle, 0);
    let unknown = Finding::new(
        "unknown-reference",
        Severity::Error,
        "`gather.dif` names no output of `gather`",
        Label::new(at("\"gather.dif\""), "referenced here"),
    )
    .related(Label::new(at("stage \"gather\""), "`gather` declared here"))
    .help("did you mean `gather.diff`?")
    .stage("review")
    .confidence(Confidence::High);
    let input = Finding::new(
        "unknown-input",
        Severity::Warning,
        "`{résumé}` names no input of `review`",
        Label::new(at("{résumé}"), "interpolated here"),
    )
    .stage("review");
    let flow = Finding::new(
        "secret-flow",
        Severity::Error,
        "a value derived from secret `api-key` reaches `post`, outside its scope",
        Label::new(at("\"review.text\""), "`post` reads it here"),
    )
    .related(Label::new(
        at("secret \"api-key\""),
        "`api-key` declared here",
    ))
    .related(Label::new(
        at("visible-to \"review\""),
        "visible only to `review`",
    ))
    .flow(vec![
        Label::new(at("secret \"api-key\""), "secret `api-key`"),
        Label::new(at("stage \"review\""), "held by `review`"),
        Label::new(at("\"review.text\""), "read by `post`"),
    ])
    .stage("post")
    .confidence(Confidence::Medium);
    let mut allowed = Finding::new(
        "secret-flow",
        Severity::Error,
        "`review.text` carries secret `api-key` into `post`",
        Label::new(at("input \"body\""), "here"),
    )
    .stage("post");
    allowed.suppressed = Some(Suppression {
        span: at("allow \"secret-flow\" reason=\"the body is redacted by review\""),
        reason: "the body is redacted by review".into(),
    });
    let info = Finding::new(
        "unreachable-stage",
        Severity::Info,
        "`gather` has no dependents",
        Label::new(at("stage \"gather\""), "declared here"),
    );
    vec![unknown, input, flow, allowed, info]
}

fn log_of(text: &str) -> Value {
    let source = Source::new("pipeline.kdl", text);
    let found = findings(text);
    sarif_log(&[(&source, &found)], "0.0.0-test")
}

fn schema_validator() -> jsonschema::Validator {
    let schema: Value =
        serde_json::from_str(include_str!("fixtures/sarif-2.1.0.json")).expect("schema is JSON");
    jsonschema::draft4::new(&schema).expect("schema compiles")
}

fn schema_errors(log: &Value) -> Vec<String> {
    schema_validator()
        .iter_errors(log)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

fn results(log: &Value) -> &Vec<Value> {
    log["runs"][0]["results"].as_array().expect("results")
}

fn fingerprint(result: &Value) -> &str {
    result["partialFingerprints"][FINGERPRINT_KEY]
        .as_str()
        .expect("fingerprint")
}

#[test]
fn log_snapshot() {
    let mut log = log_of(PIPELINE);
    // The rule list and rule indices follow the check registry, which grows; they are checked
    // against it in `rules_are_every_registered_check_in_order`.
    log["runs"][0]["tool"]["driver"]["rules"] = json!("[every check in check::ALL]");
    for result in log["runs"][0]["results"].as_array_mut().expect("results") {
        if let Some(map) = result.as_object_mut() {
            map.remove("ruleIndex");
        }
    }
    insta::assert_json_snapshot!(log);
}

#[test]
fn log_is_valid_sarif() {
    let errors = schema_errors(&log_of(PIPELINE));
    assert!(errors.is_empty(), "{errors:#?}");
}

#[test]
fn clean_log_is_valid_sarif_with_empty_results() {
    let source = Source::new("pipeline.kdl", PIPELINE);
    let log = sarif_log(&[(&source, &[])], "0.0.0-test");
    assert_eq!(log["runs"][0]["results"], json!([]));
    assert_eq!(
        log["runs"][0]["artifacts"],
        json!([{
            "location": { "uri": "pipeline.kdl", "uriBaseId": "%SRCROOT%" },
            "roles": ["analysisTarget"],
        }])
    );
    let errors = schema_errors(&log);
    assert!(errors.is_empty(), "{errors:#?}");
}

/// Guards the validation itself: a validator that accepted everything would pass the tests
/// above.
#[test]
fn broken_logs_fail_validation() {
    let validator = schema_validator();
    let good = log_of(PIPELINE);
    assert!(validator.is_valid(&good));

    let mut no_version = good.clone();
    no_version
        .as_object_mut()
        .expect("object")
        .remove("version");
    assert!(!validator.is_valid(&no_version), "a log needs `version`");

    let mut bad_level = good.clone();
    bad_level["runs"][0]["results"][0]["level"] = json!("fatal");
    assert!(!validator.is_valid(&bad_level), "`fatal` is no level");

    let mut bad_line = good.clone();
    bad_line["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] =
        json!(0);
    assert!(!validator.is_valid(&bad_line), "lines are 1-based");

    let mut unknown_property = good;
    unknown_property["runs"][0]["results"][0]["severity"] = json!("error");
    assert!(
        !validator.is_valid(&unknown_property),
        "results take no unknown properties"
    );
}

#[test]
fn rules_are_every_registered_check_in_order() {
    let log = log_of(PIPELINE);
    let driver = &log["runs"][0]["tool"]["driver"];
    assert_eq!(driver["name"], "reviewflow");
    assert_eq!(driver["version"], "0.0.0-test");
    let rules = driver["rules"].as_array().expect("rules");
    assert_eq!(rules.len(), check::ALL.len());
    for (rule, check) in rules.iter().zip(check::ALL) {
        assert_eq!(rule["id"], check.id());
        assert_eq!(rule["shortDescription"]["text"], check.summary());
        let full = rule["fullDescription"]["text"]
            .as_str()
            .expect("fullDescription");
        assert!(
            !full.is_empty() && !full.contains("**"),
            "{}: {full}",
            check.id()
        );
        let help = rule["help"]["text"].as_str().expect("help.text");
        assert!(
            help.contains(full) && help.contains("Severity:") && help.contains("Fix:"),
            "{}: the help is the doc section's proves, severity and fix: {help}",
            check.id()
        );
        assert!(
            rule["help"]["markdown"]
                .as_str()
                .is_some_and(|m| m.contains("**Proves:**"))
        );
        match help_uri(check.id()) {
            Some(uri) => {
                assert_eq!(rule["helpUri"], uri.as_str());
                assert!(uri.ends_with(&format!("/checks.md#{}", check.id())));
            }
            None => assert!(rule.get("helpUri").is_none(), "no made-up link: {rule}"),
        }
        assert!(!rule.to_string().contains("example.invalid"), "{rule}");
        let level = match check.severity() {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "note",
        };
        assert_eq!(rule["defaultConfiguration"]["level"], level);
    }
}

#[test]
fn rule_index_points_at_the_rule_even_for_unregistered_checks() {
    let log = log_of(PIPELINE);
    let rules = log["runs"][0]["tool"]["driver"]["rules"]
        .as_array()
        .expect("rules");
    for result in results(&log) {
        let id = result["ruleId"].as_str().expect("ruleId");
        let index = result["ruleIndex"].as_u64().expect("ruleIndex") as usize;
        assert_eq!(rules[index]["id"], id);
        if check::by_id(id).is_none() {
            // Described generically, after the registered checks.
            assert!(index >= check::ALL.len(), "{id} is not registered");
            assert!(rules[index]["fullDescription"]["text"].is_string());
        }
    }
}

#[test]
fn levels_messages_and_properties() {
    let log = log_of(PIPELINE);
    let results = results(&log);
    let levels: Vec<&str> = results
        .iter()
        .map(|r| r["level"].as_str().expect("level"))
        .collect();
    assert_eq!(levels, ["error", "warning", "error", "error", "note"]);
    assert_eq!(
        results[0]["message"]["text"],
        "`gather.dif` names no output of `gather`\nhelp: did you mean `gather.diff`?"
    );
    // Every result carries the id an `allow` names to hide exactly it.
    let ids: Vec<String> = findings(PIPELINE).iter().map(Finding::id).collect();
    assert_eq!(
        results[0]["properties"],
        json!({ "confidence": "high", "id": ids[0], "stage": "review" })
    );
    assert_eq!(results[4]["properties"], json!({ "id": ids[4] }));
}

#[test]
fn regions_are_one_based_with_exclusive_ends() {
    let log = log_of(PIPELINE);
    let region = &results(&log)[0]["locations"][0]["physicalLocation"]["region"];
    let offset = PIPELINE.find("\"gather.dif\"").expect("in text");
    assert_eq!(
        *region,
        json!({
            "startLine": 6, "startColumn": 23, "endLine": 6, "endColumn": 35,
            "charOffset": offset, "charLength": 12,
        })
    );
    assert_eq!(
        results(&log)[0]["locations"][0]["physicalLocation"]["artifactLocation"],
        json!({ "uri": "pipeline.kdl", "uriBaseId": "%SRCROOT%", "index": 0 })
    );
}

#[test]
fn columns_count_utf16_code_units() {
    let log = log_of(PIPELINE);
    let region = &results(&log)[1]["locations"][0]["physicalLocation"]["region"];
    // `    note "café ☕ 𝄞 ` is 19 characters but 20 UTF-16 units (𝄞 is a surrogate pair).
    let line = PIPELINE.lines().nth(6).expect("line 7");
    let prefix = &line[..line.find('{').expect("brace")];
    assert_eq!(prefix.chars().count(), 19);
    assert_eq!(prefix.encode_utf16().count(), 20);
    assert_eq!(region["startLine"], 7);
    assert_eq!(region["startColumn"], 21);
    assert_eq!(region["endColumn"], 21 + "{résumé}".encode_utf16().count());
    let before = &PIPELINE[..PIPELINE.find("{résumé}").expect("in text")];
    assert_eq!(region["charOffset"], before.encode_utf16().count());
    assert_eq!(region["charLength"], 8);
}

#[test]
fn spans_off_character_boundaries_or_past_the_end_are_clamped() {
    let text = "a = \"é\"\n";
    let source = Source::new("x.kdl", text);
    let inside_e = Finding::new(
        "syntax",
        Severity::Error,
        "m",
        Label::new(Span::new(6, 1), "l"),
    );
    let past_end = Finding::new(
        "syntax",
        Severity::Error,
        "m",
        Label::new(Span::new(100, 5), "l"),
    );
    let found = [inside_e, past_end];
    let log = sarif_log(&[(&source, &found)], "0");
    let region = |i: usize| &results(&log)[i]["locations"][0]["physicalLocation"]["region"];
    // The second byte of `é` widens to the whole character.
    assert_eq!(region(0)["startColumn"], 6);
    assert_eq!(region(0)["endColumn"], 7);
    assert_eq!(region(1)["startLine"], 2);
    assert_eq!(region(1)["charLength"], 0);
    let errors = schema_errors(&log);
    assert!(errors.is_empty(), "{errors:#?}");
}

#[test]
fn related_locations_have_ids_and_messages() {
    let log = log_of(PIPELINE);
    let related = &results(&log)[2]["relatedLocations"];
    assert_eq!(related[0]["id"], 1);
    assert_eq!(related[0]["message"]["text"], "`api-key` declared here");
    assert_eq!(related[1]["id"], 2);
    assert_eq!(related[1]["physicalLocation"]["region"]["startLine"], 2);
    assert!(results(&log)[1].get("relatedLocations").is_none());
}

#[test]
fn a_flow_is_one_thread_flow_source_first() {
    let log = log_of(PIPELINE);
    let flows = results(&log)[2]["codeFlows"].as_array().expect("codeFlows");
    assert_eq!(flows.len(), 1);
    let steps = flows[0]["threadFlows"][0]["locations"]
        .as_array()
        .expect("locations");
    let messages: Vec<&str> = steps
        .iter()
        .map(|s| s["location"]["message"]["text"].as_str().expect("text"))
        .collect();
    assert_eq!(
        messages,
        ["secret `api-key`", "held by `review`", "read by `post`"]
    );
    let lines: Vec<u64> = steps
        .iter()
        .map(|s| {
            s["location"]["physicalLocation"]["region"]["startLine"]
                .as_u64()
                .expect("line")
        })
        .collect();
    assert_eq!(lines, [1, 5, 10]);
    for (i, result) in results(&log).iter().enumerate() {
        if i != 2 {
            assert!(result.get("codeFlows").is_none(), "result {i} has no flow");
        }
    }
}

#[test]
fn suppressed_findings_are_kept_with_their_justification() {
    let log = log_of(PIPELINE);
    let results = results(&log);
    assert_eq!(results.len(), 5, "allowed findings are not dropped");
    let suppressions = results[3]["suppressions"].as_array().expect("suppressions");
    assert_eq!(suppressions.len(), 1);
    assert_eq!(suppressions[0]["kind"], "inSource");
    assert_eq!(
        suppressions[0]["justification"],
        "the body is redacted by review"
    );
    assert_eq!(
        suppressions[0]["location"]["physicalLocation"]["region"]["startLine"],
        11
    );
    for (i, result) in results.iter().enumerate() {
        if i != 3 {
            assert!(result.get("suppressions").is_none(), "result {i} is live");
        }
    }
}

#[test]
fn fingerprints_survive_lines_moving() {
    let moved = format!("// a comment\n// and another\n{PIPELINE}");
    let before = log_of(PIPELINE);
    let after = log_of(&moved);
    for (a, b) in results(&before).iter().zip(results(&after)) {
        let line = |r: &Value| {
            r["locations"][0]["physicalLocation"]["region"]["startLine"]
                .as_u64()
                .expect("line")
        };
        assert_eq!(line(b), line(a) + 2, "the finding moved down two lines");
        assert_eq!(fingerprint(a), fingerprint(b));
    }
}

#[test]
fn fingerprints_change_with_what_the_finding_says() {
    let source = Source::new("pipeline.kdl", PIPELINE);
    let base = findings(PIPELINE).remove(0);
    let variants = {
        let mut message = base.clone();
        message.message = "`gather.dif` is not an output".into();
        let mut check = base.clone();
        check.check = "unknown-input";
        let stage = base.clone().stage("gather");
        let mut span = base.clone();
        span.primary.span = span_of(PIPELINE, "\"review.text\"", 0);
        [message, check, stage, span]
    };
    let print = |f: &Finding| {
        let found = [f.clone()];
        let log = sarif_log(&[(&source, &found)], "0");
        fingerprint(&results(&log)[0]).to_string()
    };
    let original = print(&base);
    assert!(original.ends_with(":1"));
    assert_eq!(original.len(), 64 + 2, "hex SHA-256 and the occurrence");
    for variant in &variants {
        assert_ne!(print(variant), original, "{variant:?}");
    }
    // The label's message and the help are presentation: rewording them keeps the alert.
    let mut reworded = base.clone();
    reworded.primary.message = "used here".into();
    reworded.help = None;
    assert_eq!(print(&reworded), original);
    // Another file is another alert.
    let other = Source::new("other/pipeline.kdl", PIPELINE);
    let found = [base];
    let log = sarif_log(&[(&other, &found)], "0");
    assert_ne!(fingerprint(&results(&log)[0]), original);
}

#[test]
fn identical_findings_in_one_file_stay_distinct() {
    let source = Source::new("pipeline.kdl", PIPELINE);
    let one = findings(PIPELINE).remove(0);
    let found = [one.clone(), one];
    let log = sarif_log(&[(&source, &found)], "0");
    let (a, b) = (
        fingerprint(&results(&log)[0]),
        fingerprint(&results(&log)[1]),
    );
    assert_eq!(a[..64], b[..64]);
    assert!(a.ends_with(":1") && b.ends_with(":2"));
}

#[test]
fn several_files_are_several_artifacts() {
    let a = Source::new(r"ci\review.kdl", PIPELINE);
    let b = Source::new("projects/web app/review.kdl", PIPELINE);
    let found = findings(PIPELINE);
    let log = sarif_log(&[(&a, &found[..1]), (&b, &found[1..2])], "0");
    assert_eq!(
        log["runs"][0]["artifacts"],
        json!([
            {
                "location": { "uri": "ci/review.kdl", "uriBaseId": "%SRCROOT%" },
                "roles": ["analysisTarget"],
            },
            {
                "location": { "uri": "projects/web%20app/review.kdl", "uriBaseId": "%SRCROOT%" },
                "roles": ["analysisTarget"],
            },
        ])
    );
    let artifact =
        |i: usize| &results(&log)[i]["locations"][0]["physicalLocation"]["artifactLocation"];
    assert_eq!(
        *artifact(0),
        json!({ "uri": "ci/review.kdl", "uriBaseId": "%SRCROOT%", "index": 0 })
    );
    assert_eq!(
        *artifact(1),
        json!({ "uri": "projects/web%20app/review.kdl", "uriBaseId": "%SRCROOT%", "index": 1 })
    );
    let errors = schema_errors(&log);
    assert!(errors.is_empty(), "{errors:#?}");
}

/// The rule of `id` in `log`.
fn rule<'a>(log: &'a Value, id: &str) -> &'a Value {
    log["runs"][0]["tool"]["driver"]["rules"]
        .as_array()
        .expect("rules")
        .iter()
        .find(|r| r["id"] == id)
        .unwrap_or_else(|| panic!("no rule {id}"))
}

/// Code scanning shows a result as a security alert when its rule is tagged `security` and has
/// a `security-severity`; it sorts by `precision`.
#[test]
fn rules_say_what_code_scanning_files_them_under() {
    let log = log_of(PIPELINE);
    // secret-flow applies principle 5 (labels never vanish): a security rule, at its severity.
    let flow = &rule(&log, "secret-flow")["properties"];
    assert_eq!(
        flow["tags"],
        json!(["security", "labels-never-vanish-silently"])
    );
    assert_eq!(flow["security-severity"], "8.0");
    // Its findings here: one of medium confidence, one allowed that states none: no precision
    // is claimed that a finding does not declare.
    assert!(flow.get("precision").is_none(), "{flow}");
    // unknown-reference (principle 3) found with high confidence.
    let reference = &rule(&log, "unknown-reference")["properties"];
    assert_eq!(
        reference["tags"],
        json!(["security", "allow-lists-not-deny-lists"])
    );
    assert_eq!(reference["precision"], "high");
    // syntax (principle 7) is about what the file means: no security alert.
    let syntax = &rule(&log, "syntax")["properties"];
    assert_eq!(
        syntax["tags"],
        json!(["correctness", "check-and-run-have-one-source-of-truth"])
    );
    assert!(syntax.get("security-severity").is_none(), "{syntax}");
    assert!(
        syntax.get("precision").is_none(),
        "no finding, no precision"
    );
    for r in log["runs"][0]["tool"]["driver"]["rules"]
        .as_array()
        .expect("rules")
    {
        let p = &r["properties"];
        let security = p["tags"]
            .as_array()
            .is_some_and(|t| t.contains(&json!("security")));
        let level = r["defaultConfiguration"]["level"].as_str();
        let expected = match (security, level) {
            (false, _) => None,
            (true, Some("error")) => Some("8.0"),
            (true, Some("warning")) => Some("5.0"),
            (true, _) => Some("2.0"),
        };
        assert_eq!(p["security-severity"].as_str(), expected, "{r}");
    }
    assert!(schema_errors(&log).is_empty());
}

/// GitHub accepts at most 25,000 results in a run: the most severe are kept, live before
/// allowed, and the log says how many were left out.
#[test]
fn a_run_holds_at_most_25000_results() {
    let source = Source::new("pipeline.kdl", PIPELINE);
    let at = span_of(PIPELINE, "stage \"gather\"", 0);
    let make = |severity: Severity| {
        Finding::new(
            "unreachable-stage",
            severity,
            "`gather` has no dependents",
            Label::new(at, "declared here"),
        )
    };
    let mut found = vec![make(Severity::Info), make(Severity::Info)];
    found.extend((0..24_999).map(|_| make(Severity::Warning)));
    found.push(make(Severity::Error));
    assert_eq!(
        reviewflow_stdlib::sarif::results_left_out(&[(&source, &found)]),
        2
    );
    let log = sarif_log(&[(&source, &found)], "0");
    let run = &log["runs"][0];
    let kept = results(&log);
    assert_eq!(kept.len(), 25_000);
    assert!(
        kept.iter().all(|r| r["level"] != "note"),
        "the notes go first"
    );
    assert_eq!(kept[24_999]["level"], "error");
    assert_eq!(run["properties"]["resultsLeftOut"], 2);
    let note = &run["invocations"][0]["toolExecutionNotifications"][0];
    assert_eq!(note["level"], "warning");
    assert!(
        note["message"]["text"]
            .as_str()
            .is_some_and(|t| t.contains("2 results left out")),
        "{note}"
    );
    assert!(schema_errors(&log).is_empty());

    // Under the cap, nothing is said.
    let log = log_of(PIPELINE);
    assert!(log["runs"][0].get("invocations").is_none());
    assert!(log["runs"][0].get("properties").is_none());
}
