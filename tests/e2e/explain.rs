//! `reviewflow explain`: docs/checks.md from the binary, in step with the check registry.

use reviewflow_engine::check::ALL;
use reviewflow_stdlib::detect::DetectorId;
use reviewflow_stdlib::rules::RuleId;

use crate::support::{reviewflow, root};

/// The body of `## <id>` in docs/checks.md, as a reader of the repository sees it.
fn section(id: &str) -> String {
    let doc = std::fs::read_to_string(root().join("docs/checks.md")).expect("docs/checks.md");
    let heading = format!("## {id}");
    let mut lines = doc.lines().skip_while(|l| *l != heading).skip(1);
    let mut body = String::new();
    for line in lines.by_ref() {
        if line.starts_with("## ") {
            break;
        }
        body.push_str(line);
        body.push('\n');
    }
    body
}

#[test]
fn explain_prints_every_registered_check() {
    for check in ALL {
        let id = check.id();
        let run = reviewflow(&["explain", id]);
        assert_eq!(run.code, 0, "explain {id}:\n{}", run.transcript());
        assert!(run.stderr.is_empty(), "explain {id}:\n{}", run.transcript());
        assert!(
            run.stdout.starts_with(&format!("{id}\n")),
            "explain {id} starts with the id:\n{}",
            run.stdout
        );
        for part in [
            "Proves:",
            "Severity:",
            "Fix:",
            "Suppress:",
            &format!("Fails (`check` reports `{id}`):"),
            "Passes (`check` is clean):",
        ] {
            assert!(run.stdout.contains(part), "explain {id} lacks {part:?}");
        }
        // Every line of every example, indented, so the binary says what the docs say.
        let body = section(id);
        let mut in_code = false;
        for line in body.lines() {
            if line.trim_start().starts_with("```") {
                in_code = !in_code;
            } else if in_code && !line.is_empty() {
                assert!(
                    run.stdout.contains(&format!("    {line}\n")),
                    "explain {id} lacks the example line {line:?}"
                );
            }
        }
        assert!(!run.stdout.contains("```"), "explain {id} prints fences");
        assert!(!run.stdout.contains("<!--"), "explain {id} prints markers");
    }
}

#[test]
fn explain_one_section() {
    let run = reviewflow(&["explain", "syntax"]);
    insta::assert_snapshot!(run.transcript());
}

#[test]
fn explain_without_an_id_lists_every_check() {
    let run = reviewflow(&["explain"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    // The checks, up to the blank line before the rules.
    let lines: Vec<&str> = run
        .stdout
        .lines()
        .skip(2)
        .take_while(|l| !l.is_empty())
        .collect();
    assert_eq!(lines.len(), ALL.len(), "{}", run.stdout);
    for (line, check) in lines.iter().zip(ALL) {
        let mut words = line.split_whitespace();
        assert_eq!(words.next(), Some(check.id()), "{line}");
        assert!(line.ends_with(check.summary()), "{line}");
    }
}

#[test]
fn explain_an_unknown_id_suggests_and_exits_2() {
    let run = reviewflow(&["explain", "secret-scop"]);
    insta::assert_snapshot!(run.transcript());
    let run = reviewflow(&["explain", "nothing-like-it"]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(run.stdout.is_empty(), "{}", run.transcript());
    assert!(
        run.stderr
            .contains("no check, rule or detector is called `nothing-like-it`"),
        "{}",
        run.transcript()
    );
}

/// Every rule id the `rules` reviewer can put in a finding and every detector id a scan or the
/// `credential` rule can name: `explain` answers for each, and the list names each.
#[test]
fn explain_knows_every_rule_and_detector_a_review_can_show() {
    let list = reviewflow(&["explain"]);
    let ids = RuleId::ALL
        .iter()
        .map(|r| r.as_str())
        .chain(DetectorId::ALL.iter().map(|d| d.as_str()));
    for id in ids {
        let run = reviewflow(&["explain", id]);
        assert_eq!(run.code, 0, "explain {id}:\n{}", run.transcript());
        assert!(run.stderr.is_empty(), "explain {id}:\n{}", run.transcript());
        assert!(
            run.stdout.starts_with(&format!("{id}\n")),
            "explain {id}:\n{}",
            run.stdout
        );
        assert!(
            run.stdout.contains("Where it comes from:"),
            "{}",
            run.stdout
        );
        assert!(
            list.stdout
                .lines()
                .any(|l| l.split_whitespace().next() == Some(id)),
            "the list lacks {id}:\n{}",
            list.stdout
        );
    }
}

#[test]
fn explain_a_rule_of_the_rules_reviewer() {
    let run = reviewflow(&["explain", "todo-added"]);
    insta::assert_snapshot!(run.transcript());
}

#[test]
fn explain_the_credential_rule_and_a_lens_rule() {
    let run = reviewflow(&["explain", "credential"]);
    insta::assert_snapshot!(run.transcript());
    let run = reviewflow(&["explain", "adversarial/sql-injection"]);
    insta::assert_snapshot!(run.transcript());
}

#[test]
fn an_unknown_id_is_still_refused() {
    let run = reviewflow(&["explain", "credentail"]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(run.stderr.contains("`credential`"), "{}", run.transcript());
}
