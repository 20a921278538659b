//! GitHub workflow commands: one escaped line per live finding, at most ten per level.

use reviewflow_engine::Source;
use reviewflow_engine::finding::{Finding, Label, Severity, Suppression};
use reviewflow_engine::github::{
    ANNOTATIONS_PER_LEVEL, escape_message, escape_property, workflow_commands,
};
use reviewflow_engine::span::Span;

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
