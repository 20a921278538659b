//! What a review costs, and the budget that stops it (docs/reviewers.md, "Costs and budgets"):
//! the fake Claude Code reports its usage and cost as the real one does, and takes its turns
//! through reviewflow's proxy to the fake model API, which reports 10 tokens in and 20 out an
//! answer.

use crate::model_proxy::{Checkout, FakeApi, fake_env, holds_key, pipeline};

/// A review with `budget` and `more` lines, its try settings given.
fn review(api: &FakeApi, tries: u32, budget: &str, more: &[(&str, &str)], mode: &str) -> String {
    pipeline(
        "claude",
        &api.url,
        &format!("{}\n    {budget}", fake_env(mode, more)),
    )
    .replace("    tries 1\n", &format!("    tries {tries}\n"))
}

fn usage(facts: &serde_json::Value, key: &str) -> String {
    facts[key]
        .as_str()
        .unwrap_or_else(|| panic!("no fact {key}: {facts}"))
        .to_owned()
}

/// A try's usage and cost are kept per try and in total, as the CLI reported them.
#[test]
fn each_try_and_the_run_keep_what_they_spent() {
    let dir = tempfile::tempdir().expect("tempdir");
    let api = FakeApi::start(dir.path());
    let c = Checkout::new(&review(&api, 1, "budget run-tokens=1000000", &[], "ok"));
    c.repo.commit("src/lib.rs", "pub fn f() {}\n", "one");
    let out = c.run(None);
    assert_eq!(out.code, 0, "{}", out.log);
    let facts = c.review_facts();
    let try1 = usage(&facts, "try.1.usage");
    // The fake CLI reports $0.0123 a review, as Claude Code's `total_cost_usd`.
    assert!(try1.ends_with(" usd=0.0123"), "{try1}");
    assert_eq!(usage(&facts, "cost.run"), try1);
    assert_eq!(usage(&facts, "cost.change"), try1);
    assert!(
        out.log.contains("try 1 spent ") && out.log.contains("$0.0123"),
        "{}",
        out.log
    );
}

/// A try that ends without a review still spent: once the run's budget is spent the next try
/// does not start, and the review says so instead of retrying.
#[test]
fn a_try_over_the_budget_does_not_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let api = FakeApi::start(dir.path());
    let c = Checkout::new(&review(
        &api,
        2,
        "budget run-tokens=10",
        &[],
        "error-result",
    ));
    c.repo.commit("src/lib.rs", "pub fn f() {}\n", "one");
    let out = c.run(None);
    assert_ne!(out.code, 0, "{}", out.log);
    assert!(
        out.log
            .contains("not reviewed: budget spent: this run spent"),
        "{}",
        out.log
    );
    assert!(out.log.contains("of its budget of 10"), "{}", out.log);
    assert_eq!(api.credentials().len(), 1, "try 2 never reached the API");
    let facts = c.review_facts();
    assert!(facts["try.1.usage"].is_string(), "{facts}");
    assert!(facts.get("try.2.usage").is_none(), "{facts}");
    assert!(!holds_key(&out.log), "{}", out.log);
}

/// The proxy counts what each answer reports: once a try reaches the tokens its budget left,
/// nothing more is forwarded and the try is stopped with that reason.
#[test]
fn the_proxy_stops_forwarding_once_the_budget_is_spent() {
    let dir = tempfile::tempdir().expect("tempdir");
    let api = FakeApi::start(dir.path());
    let c = Checkout::new(&review(
        &api,
        2,
        "budget run-tokens=50",
        &[("FAKE_API_TURNS", "5")],
        "ok",
    ));
    c.repo.commit("src/lib.rs", "pub fn f() {}\n", "one");
    let out = c.run(None);
    assert_ne!(out.code, 0, "{}", out.log);
    // 30 tokens an answer: the second reaches 50, the third is refused.
    assert_eq!(api.credentials().len(), 2, "{}", out.log);
    assert!(
        out.log
            .contains("stopped: the try reached the tokens its budget left"),
        "{}",
        out.log
    );
    assert!(
        out.log
            .contains("not reviewed: budget spent: this run spent 60 tokens of its budget of 50"),
        "{}",
        out.log
    );
    let facts = c.review_facts();
    // Counted by the proxy: the CLI was stopped before it reported, so the cost is unknown.
    assert_eq!(
        usage(&facts, "try.1.usage"),
        "in=20 out=40 cached=0 usd=?",
        "{facts}"
    );
}

/// What the stage would refuse of a budget, `check` refuses from the file: a budget on the
/// `rules` reviewer, which spends nothing, and a dollar amount that is not one.
#[test]
fn check_refuses_a_budget_the_stage_would_refuse() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (reviewer, budget, says) in [
        (
            "rules",
            "budget run-tokens=1000",
            "the `rules` reviewer calls no model and spends nothing",
        ),
        (
            "claude",
            "budget change-usd=\"ten\"",
            "`change-usd` is not an amount of dollars",
        ),
    ] {
        let secret = if reviewer == "claude" {
            "secret \"k\" env=\"ANTHROPIC_API_KEY\" {\n    visible-to \"review\"\n}\n"
        } else {
            ""
        };
        let key = if reviewer == "claude" {
            "    secret-env \"ANTHROPIC_API_KEY\" \"k\"\n"
        } else {
            ""
        };
        let text = format!(
            "pipeline \"p\"\nforge \"local\"\n{secret}stage \"gather\" uses=\"std/gather\"\n\
             stage \"review\" uses=\"std/review\" {{\n    reviewer \"{reviewer}\"\n{key}    untrusted \"gather.diff\"\n    {budget}\n}}\n"
        );
        let path = dir.path().join(format!("{reviewer}.kdl"));
        std::fs::write(&path, &text).expect("write");
        let json = crate::support::findings_json(path.to_str().expect("utf-8"));
        let refused = json["files"][0]["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .any(|f| {
                f["check"] == "run-refusal"
                    && f["message"].as_str().is_some_and(|m| m.contains(says))
            });
        assert!(refused, "{text}\n{json:#}");
    }
}

/// A `command` reviewer that says its vendor but is given no model key: `check` warns that it is
/// unbudgeted and says to give it the key first, since a budget on it is refused, from the file
/// as when it starts; given the key under its model's variable, the budget holds.
#[test]
fn a_command_reviewer_is_budgeted_through_its_model_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = |name: &str, key: bool, budget: bool| {
        let secret = if key {
            "secret \"k\" env=\"ANTHROPIC_API_KEY\" {\n    visible-to \"review\"\n}\n"
        } else {
            ""
        };
        let text = format!(
            "pipeline \"p\"\nforge \"local\"\n{secret}stage \"gather\" uses=\"std/gather\"\n\
             stage \"review\" uses=\"std/review\" {{\n    reviewer \"command\" vendor=\"anthropic\"\n    command \"review-bot\"\n{}{}    untrusted \"gather.diff\"\n}}\n",
            if key {
                "    secret-env \"ANTHROPIC_API_KEY\" \"k\"\n"
            } else {
                ""
            },
            if budget {
                "    budget run-tokens=1000\n"
            } else {
                ""
            },
        );
        let path = dir.path().join(name);
        std::fs::write(&path, &text).expect("write");
        let json = crate::support::findings_json(path.to_str().expect("utf-8"));
        json["files"][0]["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .map(|f| {
                (
                    f["check"].as_str().unwrap_or_default().to_owned(),
                    format!("{} {}", f["message"], f["help"]),
                )
            })
            .collect::<Vec<_>>()
    };
    let unbudgeted = file("no-key.kdl", false, false);
    assert!(
        unbudgeted
            .iter()
            .any(|(check, text)| check == "unbudgeted-reviewer"
                && text
                    .contains("give it the key under its model's variable (`secret-env`) first")),
        "{unbudgeted:?}"
    );
    let refused = file("no-key-budget.kdl", false, true);
    assert!(
        refused.iter().any(|(check, text)| check == "run-refusal"
            && text.contains("this `command` reviewer is given no model key")),
        "{refused:?}"
    );
    let held = file("key-budget.kdl", true, true);
    assert!(
        !held
            .iter()
            .any(|(check, _)| check == "run-refusal" || check == "unbudgeted-reviewer"),
        "{held:?}"
    );
    // The key alone makes it a model reviewer, whatever it says of its vendor.
    let keyed = file("key.kdl", true, false);
    assert!(
        keyed
            .iter()
            .any(|(check, _)| check == "unbudgeted-reviewer"),
        "{keyed:?}"
    );
}
