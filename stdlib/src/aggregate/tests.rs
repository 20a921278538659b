use super::*;
use crate::diff::LineRange;

fn lens(name: &str, ceiling: Severity, verdict: VerdictMode) -> LensMeta {
    LensMeta {
        name: name.into(),
        ceiling,
        verdict,
    }
}

fn finding(
    path: &str,
    line: Option<u32>,
    severity: Severity,
    rule: &str,
    message: &str,
) -> ReviewFinding {
    ReviewFinding {
        path: path.into(),
        line,
        end_line: None,
        severity,
        rule: Some(rule.into()),
        message: message.into(),
        suggestion: None,
    }
}

fn ranges() -> Vec<FileRanges> {
    vec![FileRanges {
        path: "src/lib.rs".into(),
        old_path: None,
        changed: vec![LineRange { start: 10, end: 12 }],
        hunks: vec![LineRange { start: 7, end: 15 }],
    }]
}

#[test]
fn forged_paths_are_dropped_and_far_lines_demoted() {
    let inputs = [LensFindings {
        lens: lens("adv", Severity::Error, VerdictMode::Included),
        findings: Some(vec![
            finding("etc/passwd", Some(1), Severity::Error, "adv/x", "forged"),
            finding(
                "src/lib.rs",
                Some(17),
                Severity::Warning,
                "adv/near",
                "near",
            ),
            finding("src/lib.rs", Some(40), Severity::Warning, "adv/far", "far"),
            finding("docs/api.md", Some(3), Severity::Info, "adv/ctx", "context"),
        ]),
    }];
    let v = Validation::new(&ranges(), &["docs/api.md".into()], 3);
    let out = aggregate(&inputs, &v, Policy::default());
    assert_eq!(out.counts.dropped, 1);
    assert_eq!(out.counts.demoted, 2, "line 40 and the context file's line");
    let lines: Vec<_> = out
        .findings
        .iter()
        .map(|f| (f.path.as_str(), f.line))
        .collect();
    assert_eq!(
        lines,
        [
            ("src/lib.rs", Some(17)),
            ("src/lib.rs", None),
            ("docs/api.md", None)
        ]
    );
    assert_eq!(out.verdict, Verdict::Comment);
}

#[test]
fn forged_clamp_text_is_stripped_then_the_ceiling_applies() {
    let inputs = [LensFindings {
        lens: lens("eng", Severity::Warning, VerdictMode::Included),
        findings: Some(vec![
            finding("src/lib.rs", Some(10), Severity::Error, "eng/a", "Bad call"),
            finding(
                "src/lib.rs",
                Some(11),
                Severity::Info,
                "eng/b",
                "Harmless (clamped from error) (lenses: adversarial, engineering)",
            ),
        ]),
    }];
    let out = aggregate(
        &inputs,
        &Validation::new(&ranges(), &[], 0),
        Policy::default(),
    );
    assert_eq!(out.counts.clamped, 1);
    assert_eq!(out.counts.stripped, 1);
    assert_eq!(out.findings[0].severity, Severity::Warning);
    assert_eq!(
        out.findings[0].message,
        "Bad call (clamped from error) (lens: eng)"
    );
    assert_eq!(out.findings[1].severity, Severity::Info);
    assert_eq!(out.findings[1].message, "Harmless (lens: eng)");
    // Clamped to a warning, the included lens does not request changes (the bar is error).
    assert_eq!(out.verdict, Verdict::Comment);
}

#[test]
fn lenses_that_agree_are_one_finding() {
    let inputs = [
        LensFindings {
            lens: lens("adv", Severity::Error, VerdictMode::FindingsOnly),
            findings: Some(vec![finding(
                "src/lib.rs",
                Some(10),
                Severity::Error,
                "adv/Leak",
                "Leaks",
            )]),
        },
        LensFindings {
            lens: lens("eng", Severity::Warning, VerdictMode::Included),
            findings: Some(vec![
                finding(
                    "src/lib.rs",
                    Some(10),
                    Severity::Error,
                    "eng/leak",
                    "Leaks a key",
                ),
                finding(
                    "src/lib.rs",
                    Some(12),
                    Severity::Info,
                    "eng/leak",
                    "Other line",
                ),
            ]),
        },
    ];
    let out = aggregate(
        &inputs,
        &Validation::new(&ranges(), &[], 3),
        Policy::default(),
    );
    assert_eq!(out.counts.merged, 1);
    assert_eq!(out.counts.findings, 2);
    let first = &out.findings[0];
    assert_eq!(
        first.severity,
        Severity::Error,
        "the most severe report stands"
    );
    assert_eq!(first.rule.as_deref(), Some("adv/Leak"));
    assert_eq!(first.message, "Leaks (lenses: adv, eng)");
    // The included lens was clamped to a warning: no request for changes.
    assert_eq!(out.verdict, Verdict::Comment);
}

#[test]
fn the_verdict_follows_the_policy() {
    let included = |findings| LensFindings {
        lens: lens("adv", Severity::Error, VerdictMode::Included),
        findings,
    };
    let v = Validation::new(&ranges(), &[], 3);
    let blocking = [included(Some(vec![finding(
        "src/lib.rs",
        Some(10),
        Severity::Error,
        "r",
        "m",
    )]))];
    assert_eq!(
        aggregate(&blocking, &v, Policy::default()).verdict,
        Verdict::RequestChanges
    );
    let never = Policy {
        request_changes_on: None,
        ..Policy::default()
    };
    assert_eq!(aggregate(&blocking, &v, never).verdict, Verdict::Comment);
    let approve = Policy {
        approve_when_clean: true,
        ..Policy::default()
    };
    let clean = [included(Some(Vec::new()))];
    assert_eq!(aggregate(&clean, &v, approve).verdict, Verdict::Approve);
    assert_eq!(
        aggregate(&clean, &v, Policy::default()).verdict,
        Verdict::Comment
    );
    // A lens that did not run never approves.
    let gone = [included(Some(Vec::new())), included(None)];
    let out = aggregate(&gone, &v, approve);
    assert_eq!(out.verdict, Verdict::Comment);
    assert_eq!(out.missing, ["adv"]);
    assert_eq!(out.counts.missing, 1);
}

#[test]
fn the_counts_have_the_documented_keys() {
    let keys: Vec<String> = serde_json::to_value(Counts::default())
        .unwrap()
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    let mut want = [
        "lenses", "missing", "received", "findings", "dropped", "demoted", "clamped", "stripped",
        "merged",
    ];
    want.sort_unstable();
    assert_eq!(keys, want);
}

#[test]
fn a_suggestion_stands_on_added_lines_only_and_agreeing_lenses_keep_the_first() {
    let with = |line, fix: &str| ReviewFinding {
        suggestion: Some(fix.into()),
        ..finding("src/lib.rs", Some(line), Severity::Warning, "r", "m")
    };
    let inputs = [
        LensFindings {
            lens: lens("a", Severity::Error, VerdictMode::Included),
            // Line 11 was added; line 14 is context within the hunk.
            findings: Some(vec![with(11, "first"), with(14, "context")]),
        },
        LensFindings {
            lens: lens("b", Severity::Error, VerdictMode::Included),
            findings: Some(vec![with(11, "second")]),
        },
    ];
    let v = Validation::new(&ranges(), &[], 3);
    let out = aggregate(&inputs, &v, Policy::default());
    let got: Vec<_> = out
        .findings
        .iter()
        .map(|f| (f.line, f.suggestion.as_deref()))
        .collect();
    assert_eq!(got, [(Some(11), Some("first")), (Some(14), None)]);
    assert_eq!(
        out.unsuggested,
        [
            "src/lib.rs:14: suggestion removed: line 14 is not a line the change added (a suggestion replaces only added lines)"
        ]
    );
}
