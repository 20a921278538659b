//! The rules reviewer on a diff git wrote (tests/fixtures/diffs/rules.diff) and on edge cases.
//! Every token in the fixtures is synthetic.

use reviewflow_stdlib::detect::{DetectorId, NamedSecret};
use reviewflow_stdlib::diff::parse;
use reviewflow_stdlib::rules::{Finding, RuleId, RulesConfig, Severity, review};

const RULES_DIFF: &[u8] = include_bytes!("fixtures/diffs/rules.diff");

fn run(diff: &[u8], secrets: &[NamedSecret], config: &RulesConfig) -> Vec<Finding> {
    let d = parse(diff);
    assert!(d.is_clean(), "{:?}", d.problems);
    review(&d, secrets, config)
}

fn table(findings: &[Finding]) -> Vec<String> {
    findings
        .iter()
        .map(|f| {
            let line = f.line.map_or("-".to_owned(), |l| l.to_string());
            format!(
                "{} {}:{} {} {}",
                f.severity, f.path, line, f.rule, f.message
            )
        })
        .collect()
}

#[test]
fn every_rule_on_the_fixture() {
    let got = table(&run(RULES_DIFF, &[], &RulesConfig::default()));
    let want = [
        "info docs/notes.md:5 todo-added `FIXME` added",
        "warning py/tool.py:1 debug-leftover debugging leftover `import pdb`",
        "warning py/tool.py:3 debug-leftover debugging leftover `breakpoint()`",
        "warning py/tool.py:4 debug-leftover debugging leftover `pdb.set_trace(`",
        "warning rb/thing.rb:2 debug-leftover debugging leftover `binding.pry`",
        "error src/config.rs:1 credential added line holds what looks like a GitHub token (detector `github`)",
        "error src/config.rs:2 credential added line holds what looks like an AWS access key (detector `aws`)",
        "info src/config.rs:3 todo-added `TODO` added",
        "warning src/config.rs:5 debug-leftover debugging leftover `dbg!(`",
        "info src/config.rs:6 trailing-whitespace trailing whitespace",
        "error src/config.rs:8 conflict-marker merge conflict marker",
        "error src/config.rs:10 conflict-marker merge conflict marker",
        "error src/config.rs:12 conflict-marker merge conflict marker",
        "error src/key.pem:1 credential added line holds what looks like a private key (detector `private-key`)",
        "warning web/app.js:2 debug-leftover debugging leftover `console.log(`",
        "warning web/app.js:3 debug-leftover debugging leftover `debugger;`",
        "warning web/logo.png:- binary-file binary file added",
    ];
    assert_eq!(got, want);
}

#[test]
fn findings_never_repeat_a_credential() {
    let json = serde_json::to_string(&run(RULES_DIFF, &[], &RulesConfig::default())).unwrap();
    for token in ["ghp_0123456789", "AKIAFAKE", "FAKEKEYFAKEKEY"] {
        assert!(!json.contains(token), "{token}");
    }
}

#[test]
fn findings_serialise_with_stable_names() {
    let f = &run(RULES_DIFF, &[], &RulesConfig::default())[0];
    let v = serde_json::to_value(f).unwrap();
    assert_eq!(v["rule"], "todo-added");
    assert_eq!(v["severity"], "info");
    assert_eq!(v["path"], "docs/notes.md");
    assert_eq!(v["line"], 5);
}

#[test]
fn output_is_deterministic_and_sorted() {
    let a = run(RULES_DIFF, &[], &RulesConfig::default());
    let b = run(RULES_DIFF, &[], &RulesConfig::default());
    assert_eq!(a, b);
    let keys: Vec<_> = a.iter().map(|f| (&f.path, f.line, f.rule)).collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
}

#[test]
fn only_added_lines_count() {
    // Line continuations would eat the leading space of the context line: concat! keeps it.
    let diff = concat!(
        "diff --git a/x.rs b/x.rs\n--- a/x.rs\n+++ b/x.rs\n@@ -1,3 +1,2 @@\n",
        "-const T: &str = \"ghp_0123456789abcdefghijklmnopqrstuvwxyz\";\n",
        "- dbg!(x); // TODO  \n",
        " <<<<<<< context\n",
        "+fn clean() {}\n",
    )
    .as_bytes();
    assert!(run(diff, &[], &RulesConfig::default()).is_empty());
}

#[test]
fn secret_values_and_their_base64_are_found() {
    let secret = NamedSecret::new(
        "conversation-key",
        b"FAKE-conversation-key-0123456789".to_vec(),
    );
    // base64 of the value, as a careless test might embed it.
    let diff = b"--- /dev/null\n+++ b/t.txt\n@@ -0,0 +1,3 @@\n+one\n\
+RkFLRS1jb252ZXJzYXRpb24ta2V5LTAxMjM0NTY3ODk=\n+key FAKE-conversation-key-0123456789\n";
    let got = table(&run(diff, &[secret], &RulesConfig::default()));
    assert_eq!(
        got,
        [
            "error t.txt:2 credential added line holds the value of secret `conversation-key`",
            "error t.txt:3 credential added line holds the value of secret `conversation-key`",
        ]
    );
}

#[test]
fn configuration_selects_rules_detectors_and_size() {
    let only_size = RulesConfig {
        rules: vec![RuleId::OversizedFile],
        max_added_lines: 4,
        ..RulesConfig::default()
    };
    let got = table(&run(RULES_DIFF, &[], &only_size));
    assert_eq!(
        got,
        [
            "warning docs/notes.md:- oversized-file 5 lines added, more than 4",
            "warning py/tool.py:- oversized-file 5 lines added, more than 4",
            "warning src/config.rs:- oversized-file 12 lines added, more than 4",
            "warning web/app.js:- oversized-file 6 lines added, more than 4",
        ]
    );
    let only_aws = RulesConfig {
        rules: vec![RuleId::Credential],
        detectors: vec![DetectorId::Aws],
        ..RulesConfig::default()
    };
    let got = run(RULES_DIFF, &[], &only_aws);
    assert_eq!(got.len(), 1);
    assert_eq!((got[0].line, got[0].severity), (Some(2), Severity::Error));
    let none = RulesConfig {
        rules: vec![],
        ..RulesConfig::default()
    };
    assert!(run(RULES_DIFF, &[], &none).is_empty());
}

#[test]
fn default_size_limit_is_1000() {
    assert_eq!(RulesConfig::default().max_added_lines, 1000);
    let mut diff = b"--- /dev/null\n+++ b/big.txt\n@@ -0,0 +1,1001 @@\n".to_vec();
    for i in 0..1001 {
        diff.extend_from_slice(format!("+line {i}\n").as_bytes());
    }
    let got = table(&run(&diff, &[], &RulesConfig::default()));
    assert_eq!(
        got,
        ["warning big.txt:- oversized-file 1001 lines added, more than 1000"]
    );
}

#[test]
fn crlf_line_endings_are_not_trailing_whitespace() {
    let diff = include_bytes!("fixtures/diffs/crlf.diff");
    let got = table(&run(diff, &[], &RulesConfig::default()));
    assert_eq!(
        got,
        ["info crlf.txt:4 trailing-whitespace trailing whitespace"]
    );
}

/// The trailing-whitespace rule knows its fix: the line without its trailing spaces and tabs.
/// None for a line of whitespace alone (an empty suggestion would delete it) nor for a line
/// holding a credential (the fix would repeat it).
#[test]
fn trailing_whitespace_suggests_the_trimmed_line() {
    let token = format!("ghp_{}", "a1B2".repeat(9));
    let diff = format!(
        "--- /dev/null\n+++ b/a.rs\n@@ -0,0 +1,4 @@\n+let x = 1; \t \n+   \n+let t = \"{token}\"; \n+fn é() {{}}\t\n"
    );
    let found = run(diff.as_bytes(), &[], &RulesConfig::default());
    let fixes: Vec<_> = found
        .iter()
        .filter(|f| f.rule == RuleId::TrailingWhitespace)
        .map(|f| (f.line, f.suggestion.as_deref()))
        .collect();
    assert_eq!(
        fixes,
        [
            (Some(1), Some("let x = 1;")),
            (Some(2), None),
            (Some(3), None),
            (Some(4), Some("fn é() {}")),
        ]
    );
    let json = serde_json::to_string(&found).unwrap();
    assert!(!json.contains(&token), "{json}");
}

#[test]
fn markdown_underline_is_not_a_conflict() {
    let diff = b"--- /dev/null\n+++ b/README.md\n@@ -0,0 +1,2 @@\n+Title\n+=======\n";
    assert!(run(diff, &[], &RulesConfig::default()).is_empty());
}

#[test]
fn config_reads_from_json_with_defaults() {
    let c: RulesConfig = serde_json::from_str(r#"{"max-added-lines": 50}"#).unwrap();
    assert_eq!(c.max_added_lines, 50);
    assert_eq!(c.rules, RulesConfig::default().rules);
    assert!(serde_json::from_str::<RulesConfig>(r#"{"rules": ["no-such-rule"]}"#).is_err());
}

#[test]
fn mutated_diffs_never_panic() {
    // Flip, drop and duplicate bytes of a real diff; parse and review whatever is left.
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let secret = [NamedSecret::new("k", b"FAKEKEYFAKEKEY".to_vec())];
    for _ in 0..120 {
        let mut text = RULES_DIFF.to_vec();
        for _ in 0..(next() % 20) {
            let at = (next() as usize) % text.len().max(1);
            match next() % 3 {
                0 => text[at] = next() as u8,
                1 => {
                    text.remove(at);
                }
                _ => text.insert(at, text[at]),
            }
        }
        let d = parse(&text);
        let _ = review(&d, &secret, &RulesConfig::default());
    }
}
