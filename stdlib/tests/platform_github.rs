//! GitHub workflow commands: one escaped line per live finding, at most ten per level; and what
//! `reviewflow run` prints under GitHub Actions (a group per stage, annotations, escaping).

// Test helpers unwrap as the tests do (clippy's allow-unwrap-in-tests covers only the
// `#[test]` functions themselves).
#![allow(clippy::unwrap_used)]

use std::io::Write as _;
use std::sync::Arc;

use reviewflow_engine::Source;
use reviewflow_engine::finding::{Finding, Label, Severity, Suppression};
use reviewflow_engine::span::Span;
use reviewflow_stdlib::platform::github::commands::{
    ANNOTATIONS_PER_LEVEL, escape_message, escape_property, workflow_commands,
};

const PIPELINE: &str = r#"secret "api-key" env="API_KEY" {
    visible-to "review"
}
stage "review" kind="std/review" {
    input "diff" from="gather.dif"
    note "café {résumé}"
}
stage "post" kind="std/post" {
    input "body" from="review.text"
    allow "secret-flow" reason="redacted upstream"
}
"#;

fn at(needle: &str) -> Span {
    let offset = PIPELINE
        .find(needle)
        .unwrap_or_else(|| panic!("{needle:?} not in the text"));
    Span::new(offset, needle.len())
}

fn findings() -> Vec<Finding> {
    let unknown = Finding::new(
        "unknown-reference",
        Severity::Error,
        "`gather.dif` names no stage output",
        Label::new(at("\"gather.dif\""), "referenced here"),
    )
    .related(Label::new(at("stage \"review\""), "in this stage"))
    .help("declare a stage `gather`, or fix the name");
    let input = Finding::new(
        "unknown-input",
        Severity::Warning,
        "`{résumé}` names no input of `review`",
        Label::new(at("{résumé}"), "interpolated here"),
    );
    let flow = Finding::new(
        "secret-flow",
        Severity::Error,
        "secret `api-key` reaches `post`",
        Label::new(at("\"review.text\""), "read here"),
    )
    .flow(vec![
        Label::new(at("secret \"api-key\""), "secret"),
        Label::new(at("\"review.text\""), "sink"),
    ]);
    let mut allowed = Finding::new(
        "secret-flow",
        Severity::Error,
        "allowed, so not annotated",
        Label::new(at("input \"body\""), "here"),
    );
    allowed.suppressed = Some(Suppression {
        span: at("allow \"secret-flow\""),
        reason: "redacted upstream".into(),
    });
    let info = Finding::new(
        "unreachable-stage",
        Severity::Info,
        "`post` runs last",
        // Spans two lines.
        Label::new(at("stage \"post\" kind=\"std/post\" {\n    input"), "here"),
    );
    vec![unknown, input, flow, allowed, info]
}

#[test]
fn commands_snapshot() {
    let source = Source::new("pipeline.kdl", PIPELINE);
    let found = findings();
    insta::assert_snapshot!(workflow_commands(&[(&source, &found)]));
}

#[test]
fn one_line_per_live_finding() {
    let source = Source::new("pipeline.kdl", PIPELINE);
    let found = findings();
    let out = workflow_commands(&[(&source, &found)]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 4, "{out}");
    assert!(
        !out.contains("allowed"),
        "suppressed findings are not printed"
    );
    assert_eq!(
        lines[0],
        "::error file=pipeline.kdl,line=5,endLine=5,col=23,endColumn=35,\
         title=reviewflow(unknown-reference)::`gather.dif` names no stage output%0A\
         declare a stage `gather`, or fix the name"
    );
    // Columns count characters: `é` is one.
    assert!(
        lines[1].starts_with(
            "::warning file=pipeline.kdl,line=6,endLine=6,col=16,endColumn=24,title=reviewflow(unknown-input)::"
        ),
        "{}",
        lines[1]
    );
    assert!(lines[2].starts_with("::error "));
    // A span over two lines gets no columns.
    assert_eq!(
        lines[3],
        "::notice file=pipeline.kdl,line=8,endLine=9,title=reviewflow(unreachable-stage)::`post` runs last"
    );
}

#[test]
fn a_span_ending_with_its_newline_stays_on_its_line() {
    let text = "stage \"a\"\nstage \"b\"\n";
    let source = Source::new("p.kdl", text);
    let found = [Finding::new(
        "cycle",
        Severity::Error,
        "m",
        Label::new(Span::new(0, 10), "l"),
    )];
    assert_eq!(
        workflow_commands(&[(&source, &found)]),
        "::error file=p.kdl,line=1,endLine=1,col=1,endColumn=10,title=reviewflow(cycle)::m\n"
    );
}

#[test]
fn messages_and_properties_are_escaped() {
    assert_eq!(
        escape_message("100% done\r\nnext: a, b"),
        "100%25 done%0D%0Anext: a, b"
    );
    assert_eq!(
        escape_property("100% done\r\nnext: a, b"),
        "100%25 done%0D%0Anext%3A a%2C b"
    );
    // `%` first: an escape is never escaped twice.
    assert_eq!(escape_message("%0A"), "%250A");

    let text = "x";
    let source = Source::new(r"c:\ci\a,b.kdl", text);
    let found = [Finding::new(
        "syntax",
        Severity::Error,
        "bad: 50%\n::error::injected",
        Label::new(Span::new(0, 1), "l"),
    )
    .help("a, b\r\nc")];
    let out = workflow_commands(&[(&source, &found)]);
    assert_eq!(
        out,
        "::error file=c%3A/ci/a%2Cb.kdl,line=1,endLine=1,col=1,endColumn=2,\
         title=reviewflow(syntax)::bad: 50%25%0A::error::injected%0Aa, b%0D%0Ac\n"
    );
    assert_eq!(out.lines().count(), 1, "text cannot start a command");
}

fn many(severity: Severity, n: usize) -> Vec<Finding> {
    (0..n)
        .map(|i| {
            Finding::new(
                "syntax",
                severity,
                format!("{} {i}", severity.name()),
                Label::new(Span::new(0, 1), "l"),
            )
        })
        .collect()
}

fn count(out: &str, prefix: &str) -> usize {
    out.lines().filter(|l| l.starts_with(prefix)).count()
}

#[test]
fn at_most_ten_per_level_then_one_notice() {
    let source = Source::new("p.kdl", "x");
    let mut found = many(Severity::Error, 13);
    found.extend(many(Severity::Warning, 11));
    found.extend(many(Severity::Info, 2));
    let out = workflow_commands(&[(&source, &found)]);
    assert_eq!(count(&out, "::error "), ANNOTATIONS_PER_LEVEL);
    assert_eq!(count(&out, "::warning "), ANNOTATIONS_PER_LEVEL);
    assert_eq!(count(&out, "::notice "), 2);
    assert!(out.contains(
        "::error file=p.kdl,line=1,endLine=1,col=1,endColumn=2,title=reviewflow(syntax)::error 9\n"
    ));
    assert!(!out.contains("::error 10"));
    assert!(!out.contains("error 10\n"));
    assert!(out.ends_with(
        "::notice::3 more errors not annotated (GitHub shows at most 10 errors per step)\n\
         ::notice::1 more warning not annotated (GitHub shows at most 10 warnings per step)\n"
    ));
}

#[test]
fn exactly_ten_needs_no_notice() {
    let source = Source::new("p.kdl", "x");
    let found = many(Severity::Error, 10);
    let out = workflow_commands(&[(&source, &found)]);
    assert_eq!(out.lines().count(), 10);
    assert!(!out.contains("::notice"));
}

#[test]
fn the_cap_counts_across_files_and_skips_suppressed() {
    let a = Source::new("a.kdl", "x");
    let b = Source::new("b.kdl", "x");
    let mut in_a = many(Severity::Warning, 6);
    for f in &mut in_a[..2] {
        f.suppressed = Some(Suppression {
            span: Span::new(0, 1),
            reason: "r".into(),
        });
    }
    let in_b = many(Severity::Warning, 7);
    let out = workflow_commands(&[(&a, &in_a), (&b, &in_b)]);
    assert_eq!(count(&out, "::warning file=a.kdl"), 4);
    assert_eq!(count(&out, "::warning file=b.kdl"), 6);
    assert!(out.ends_with(
        "::notice::1 more warning not annotated (GitHub shows at most 10 warnings per step)\n"
    ));
}

#[test]
fn closing_notices_fit_within_the_notice_limit() {
    let source = Source::new("p.kdl", "x");
    let mut found = many(Severity::Error, 12);
    found.extend(many(Severity::Warning, 12));
    found.extend(many(Severity::Info, 15));
    let out = workflow_commands(&[(&source, &found)]);
    assert_eq!(count(&out, "::notice"), ANNOTATIONS_PER_LEVEL);
    assert_eq!(count(&out, "::notice file="), 7);
    assert!(out.ends_with(
        "::notice::2 more errors not annotated (GitHub shows at most 10 errors per step)\n\
         ::notice::2 more warnings not annotated (GitHub shows at most 10 warnings per step)\n\
         ::notice::8 more notices not annotated (GitHub shows at most 10 notices per step)\n"
    ));

    // Eleven errors need one closing notice, so ten notices do not fit: eight are shown, and a
    // closing line for the other two.
    let mut found = many(Severity::Error, 11);
    found.extend(many(Severity::Info, 10));
    let out = workflow_commands(&[(&source, &found)]);
    assert_eq!(count(&out, "::notice"), ANNOTATIONS_PER_LEVEL);
    assert_eq!(count(&out, "::notice file="), 8);
    assert!(out.ends_with(
        "::notice::2 more notices not annotated (GitHub shows at most 10 notices per step)\n"
    ));

    // Nine notices and one closing notice fit exactly.
    let mut found = many(Severity::Error, 11);
    found.extend(many(Severity::Info, 9));
    let out = workflow_commands(&[(&source, &found)]);
    assert_eq!(count(&out, "::notice file="), 9);
    assert_eq!(count(&out, "::notice"), ANNOTATIONS_PER_LEVEL);
}

#[test]
fn no_findings_no_output() {
    let source = Source::new("p.kdl", "x");
    assert_eq!(workflow_commands(&[(&source, &[])]), "");
    assert_eq!(workflow_commands(&[]), "");
}

// ---------------------------------------------------------------------------------------------
// `reviewflow run` under GitHub Actions.
//
// The executor writes workflow commands to the process's stdout, so each case runs in a child
// process of this test binary: the parent starts it with `ACTIONS_CASE` naming the case and the
// test `actions_case` (which does nothing otherwise) runs it between two marker lines.
// ---------------------------------------------------------------------------------------------

use reviewflow_engine::contract::{ChildSpec, Role, StageContract, ValueType};
use reviewflow_engine::exec::process::Stream;
use reviewflow_engine::run::{
    BoxFuture, ConsoleMode, Implementations, Resolved, RunOptions, StageCx, StageError, StageImpl,
    StageOutputs, execute,
};
use reviewflow_engine::syntax::Limits;
use reviewflow_engine::{Registry, compile};

const CASE_VAR: &str = "REVIEWFLOW_TEST_ACTIONS_CASE";
const BEGIN: &str = "--- actions console begin ---";
const END: &str = "--- actions console end ---";

/// `test/talk`: does what its children say, in order: `say` a status line, `print` a line of
/// child output, `meet` another stage at a barrier, `fail`. `key` holds a secret.
struct Talk {
    barrier: Arc<tokio::sync::Barrier>,
}

impl StageImpl for Talk {
    fn run<'a>(&'a self, cx: StageCx<'a>) -> BoxFuture<'a, Result<StageOutputs, StageError>> {
        Box::pin(async move {
            for child in cx.children {
                let text = child.args.first().and_then(Resolved::text);
                match (child.name.as_str(), child.args.first()) {
                    ("say", _) => cx.status.status(text.unwrap_or_default()),
                    ("print", _) => cx
                        .status
                        .line(Stream::Stdout, text.unwrap_or_default().as_bytes()),
                    ("meet", _) => {
                        self.barrier.wait().await;
                    }
                    ("fail", _) => return Err(StageError::failed(text.unwrap_or_default())),
                    _ => {}
                }
            }
            Ok(StageOutputs::new())
        })
    }
}

fn talk_registry() -> Registry {
    let mut r = Registry::with_builtins();
    let text = |name: &str| {
        ChildSpec::new(name, Role::Config, "text")
            .arg(ValueType::String)
            .repeatable()
    };
    r.register(
        StageContract::new("test/talk", "a scripted stage for tests")
            .child(text("say"))
            .child(text("print"))
            .child(text("fail"))
            .child(ChildSpec::new("meet", Role::Config, "wait for the others").repeatable())
            .child(ChildSpec::new("key", Role::SecretSlot, "a secret").arg(ValueType::Secret)),
    );
    r
}

/// The pipeline of each case.
fn case_pipeline(case: &str) -> &'static str {
    match case {
        // Two stages that run at once and talk in turns: `b` speaks before `a` has finished,
        // and `a` ends first: `b` ends only after meeting `c`, which starts once `a` has ended
        // (an event of the run, not a time). `c` says nothing; its group is not compared.
        "parallel" => {
            r#"
pipeline "parallel"
stage "a" uses="test/talk" {
    say "a one"
    print "a out"
    meet
    say "warning: a is slow"
}
stage "b" uses="test/talk" {
    say "b one"
    meet
    print "::error::injected by b"
    say "b two"
    meet
}
stage "c" uses="test/talk" {
    needs "a"
    meet
}
"#
        }
        // One at a time, in file order: a fallback for a missing secret, a fallback for an
        // error, a real child, and a failure whose reason needs escaping. (Stage names are
        // letters, digits, `-` and `_`: the title, escaped as a property, has nothing to escape.)
        "failing" => {
            r#"
pipeline "failing"
secret "k" env="TALK_KEY" on-missing="disable" {
    visible-to "locked"
}
stage "locked" uses="test/talk" {
    key "k"
}
stage "flaky" uses="test/talk" on-error="fallback" {
    fail "50% of a, b\nnext: line"
}
stage "child" uses="run" {
    command "sh" "-c" "echo '::warning::from the child'; echo '::endgroup::'"
}
stage "broken" uses="test/talk" {
    say "about to fail"
    fail "100% broken: a, b\r\n::error::injected"
}
"#
        }
        other => panic!("no case {other}"),
    }
}

/// In the child process a test starts (`actions_output`), runs its case and returns true; in
/// the test itself, false. The child is the test run again, so no test exists only to be a
/// child (the count stays honest).
fn actions_case() -> bool {
    let Ok(case) = std::env::var(CASE_VAR) else {
        return false;
    };
    let registry = talk_registry();
    let compiled = compile(
        Source::new("actions.kdl", case_pipeline(&case)),
        &registry,
        &Limits::default(),
    )
    .map_err(|_| "compile")
    .unwrap();
    let mut impls = Implementations::with_builtins();
    impls.register(
        "test/talk",
        Arc::new(Talk {
            barrier: Arc::new(tokio::sync::Barrier::new(2)),
        }),
    );
    let dir = tempfile::tempdir().unwrap();
    let mut options = RunOptions::new(dir.path());
    options.console = ConsoleMode::Platform;
    options.platform = Some(Arc::new(reviewflow_stdlib::platform::github::GithubActions));
    options.jobs = if case == "parallel" { 2 } else { 1 };
    options.env = Arc::new(|_| None);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut out = std::io::stdout().lock();
    writeln!(out, "{BEGIN}").unwrap();
    out.flush().unwrap();
    drop(out);
    let report = runtime
        .block_on(execute(&compiled, &registry, &impls, options))
        .unwrap_or_else(|e| panic!("{e}: {e:?}"));
    let mut out = std::io::stdout().lock();
    writeln!(out, "{END} exit {}", report.exit_code).unwrap();
    out.flush().unwrap();
    true
}

/// What the executor printed for `case`, run in a child that is `test` run again, with the run
/// id, durations and stop-commands tokens replaced by `<run>`, `(<d>)` and `<token>`; and the
/// exit code.
fn actions_output(test: &str, case: &str) -> (Vec<String>, u8) {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(CASE_VAR, case)
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let begin = stdout.find(BEGIN).expect("begin marker") + BEGIN.len() + 1;
    let end = stdout.find(END).expect("end marker");
    let code: u8 = stdout[end + END.len()..]
        .lines()
        .next()
        .and_then(|l| l.trim().strip_prefix("exit "))
        .and_then(|c| c.parse().ok())
        .expect("exit code");
    let durations = regex::Regex::new(r"\((\d+ ms|\d+\.\d s)\)").unwrap();
    let run_id = regex::Regex::new(r"^run \d{8}T\d{6}Z-[0-9a-f]{8} ").unwrap();
    let mut tokens: Vec<String> = Vec::new();
    let lines = stdout[begin..end]
        .split('\n')
        .filter(|l| !l.is_empty())
        .map(|l| {
            let mut l = durations.replace_all(l, "(<d>)").into_owned();
            l = run_id.replace(&l, "run <run> ").into_owned();
            // Which layers hold is the machine's: the list is not part of the layout.
            if let Some(at) = l.find(" isolation held: ") {
                l.truncate(at);
            }
            if let Some(token) = l.strip_prefix("::stop-commands::") {
                assert!(
                    token.len() == 32 && token.bytes().all(|b| b.is_ascii_hexdigit()),
                    "{token}"
                );
                assert!(
                    !tokens.iter().any(|t| t == token),
                    "a token is never reused"
                );
                tokens.push(token.to_string());
                return "::stop-commands::<token>".to_string();
            }
            if tokens.last().is_some_and(|t| l == format!("::{t}::")) {
                return "::<token>::".to_string();
            }
            l
        })
        .collect();
    (lines, code)
}

#[test]
fn parallel_stages_print_each_group_whole_and_in_the_order_they_end() {
    if actions_case() {
        return;
    }
    let (mut lines, code) = actions_output(
        "parallel_stages_print_each_group_whole_and_in_the_order_they_end",
        "parallel",
    );
    assert_eq!(code, 0, "{lines:#?}");
    // `c` only orders the ends of `a` and `b`; it ends before or after `b`.
    let c = lines
        .iter()
        .position(|l| l == "::group::✓ c (<d>)")
        .expect("c's group");
    let end = c + lines[c..]
        .iter()
        .position(|l| l == "::endgroup::")
        .expect("its end");
    lines.drain(c..=end);
    assert_eq!(
        lines,
        [
            "run <run> of pipeline `parallel`",
            "::group::✓ a (<d>)",
            "::stop-commands::<token>",
            "▶ a",
            "  a: a one",
            "a │ a out",
            "  a: warning: a is slow",
            "✓ a (<d>)",
            "::<token>::",
            "::endgroup::",
            "::warning title=a::a is slow",
            "::group::✓ b (<d>)",
            "::stop-commands::<token>",
            "▶ b",
            "  b: b one",
            "b │ ::error::injected by b",
            "  b: b two",
            "✓ b (<d>)",
            "::<token>::",
            "::endgroup::",
            "run succeeded (exit 0)",
        ]
    );
}

#[test]
fn failures_and_fallbacks_are_annotated_after_their_group_and_escaped() {
    if actions_case() {
        return;
    }
    let (lines, code) = actions_output(
        "failures_and_fallbacks_are_annotated_after_their_group_and_escaped",
        "failing",
    );
    assert_eq!(code, 1, "{lines:#?}");
    let missing = "secret `k` is not set (on-missing=\"disable\"); the stage did not run";
    assert_eq!(
        lines,
        [
            "run <run> of pipeline `failing`".to_string(),
            // A run-level warning.
            "::warning::secret `k` is not set ($TALK_KEY): the stages that hold it take their \
             fallback; to run them, set $TALK_KEY"
                .into(),
            // A stage that never ran still has its group.
            format!("::group::⚠ locked: fell back — {missing} (<d>)"),
            "::stop-commands::<token>".into(),
            format!("⚠ locked: fell back — {missing} (<d>)"),
            "::<token>::".into(),
            "::endgroup::".into(),
            format!("::warning title=locked::{missing}"),
            // The message escapes `%`, CR and LF, and keeps `:` and `,`; inside the group the
            // text is as it was, commands stopped.
            "::group::⚠ flaky: fell back — 50%25 of a, b%0Anext: line (<d>)".into(),
            "::stop-commands::<token>".into(),
            "▶ flaky".into(),
            "⚠ flaky: fell back — 50% of a, b".into(),
            "next: line (<d>)".into(),
            "::<token>::".into(),
            "::endgroup::".into(),
            "::warning title=flaky::50%25 of a, b%0Anext: line".into(),
            // A real child's output cannot issue commands, nor close the group.
            "::group::✓ child (<d>)".into(),
            "::stop-commands::<token>".into(),
            "▶ child".into(),
            "child │ ::warning::from the child".into(),
            "child │ ::endgroup::".into(),
            "✓ child (<d>)".into(),
            "::<token>::".into(),
            "::endgroup::".into(),
            "::group::✗ broken: failed — 100%25 broken: a, b\\u{d}%0A::error::injected (<d>)"
                .into(),
            "::stop-commands::<token>".into(),
            "▶ broken".into(),
            "  broken: about to fail".into(),
            "✗ broken: failed — 100% broken: a, b\\u{d}".into(),
            "::error::injected (<d>)".into(),
            "::<token>::".into(),
            "::endgroup::".into(),
            "::error title=broken::100%25 broken: a, b\\u{d}%0A::error::injected".into(),
            "run failed (exit 1)".into(),
        ]
    );
    // Every annotation and group title is one line: nothing outside a group starts a command
    // that the executor did not write.
    let mut stopped = false;
    for l in &lines {
        match l.as_str() {
            "::stop-commands::<token>" => stopped = true,
            "::<token>::" => stopped = false,
            _ if !stopped && l.starts_with("::") => assert!(
                ["::group::", "::endgroup::", "::warning", "::error title="]
                    .iter()
                    .any(|p| l.starts_with(p)),
                "{l}"
            ),
            _ => {}
        }
    }
}

/// What the GitHub platform registers for `check` to reason with: its events, its token's
/// scopes and its settings files, found through the registry as the engine finds them.
#[test]
fn the_registry_knows_githubs_events_scopes_and_settings_files() {
    let registry = reviewflow_stdlib::registry();
    let change = registry.change_event().expect("an event a review runs on");
    assert_eq!(change.name, "pull_request_target");
    assert_eq!(
        registry.event("pull_request").map(|e| e.runs),
        Some(reviewflow_engine::platform::EventRuns::Change)
    );
    assert!(registry.event("issues").is_none());
    assert!(registry.scope("issues").is_some_and(|s| !s.acts));
    assert!(
        registry
            .scope("statuses")
            .is_some_and(|s| s.acts && s.records_verdict)
    );
    assert!(registry.settings_file("GITHUB_ENV").is_some());
    assert!(registry.settings_file("HOME").is_none());
}
