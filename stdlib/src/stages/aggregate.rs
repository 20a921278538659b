//! `std/aggregate`: several reviews' findings, each through its lens, into one set, a verdict and
//! counts (docs/lenses.md). Forged notes are stripped and each lens's ceiling applied; findings
//! outside the change are dropped and those outside its hunks demoted; lenses that agree are one
//! finding. The computation is [`crate::aggregate`]; this reads the children and writes outputs.

use reviewflow_engine::contract::{
    Bound, ChildSpec, FallbackValue, LabelKind, LabelRule, OutputType, Role, StageContract,
    ValueType,
};

use super::words;

/// `request-changes-on`: the least severity of an included finding that requests changes.
pub const REQUEST_CHANGES_ON: &[&str] = &["error", "warning", "never"];
/// `approve`: when the verdict may be `approve`.
pub const APPROVE: &[&str] = &["never", "clean"];
/// Lines around each hunk a finding's line may fall in, by default.
pub const DEFAULT_TOLERANCE: u32 = 3;
/// Lines around a hunk a finding may fall in (`tolerance`): a finding further from every hunk
/// names code the change never touched.
pub const TOLERANCE: Bound = Bound::count(
    0,
    20,
    "a finding further from every hunk names code the change never touched, and a larger tolerance would keep its line as if it were in the change",
);
/// Most findings the comment lists; the findings output has them all.
const COMMENT_FINDINGS: usize = 100;
/// Longest message the comment shows, in characters.
const COMMENT_MESSAGE_CHARS: usize = 400;

pub fn contract() -> StageContract {
    StageContract::new(
        "std/aggregate",
        "several reviews' findings, through their lenses, into one set and a verdict",
    )
    .child(
        ChildSpec::new(
            "from",
            Role::Data,
            "a review's findings, and with `lens=` its lens (e.g. `from \"adv.findings\" lens=\"adv.lens\"`)",
        )
        .arg(ValueType::Reference)
        .accepts(&[OutputType::Findings])
        .prop(
            "lens",
            ValueType::Reference,
            false,
            "the same review's `lens` output",
        )
        .required()
        .repeatable(),
    )
    .child(
        ChildSpec::new(
            "ranges",
            Role::Data,
            "changed-line ranges: findings outside the change are dropped, outside its hunks demoted",
        )
        .arg(ValueType::Reference)
        .accepts(&[OutputType::Ranges])
        .required(),
    )
    .child(
        ChildSpec::new(
            "context",
            Role::Config,
            "files outside the change a finding may name (kept at file level)",
        )
        .many(ValueType::String),
    )
    .child(
        ChildSpec::new(
            "tolerance",
            Role::Config,
            "lines around each hunk a finding's line may fall in (default 3)",
        )
        .arg(ValueType::Int(TOLERANCE)),
    )
    .child(
        ChildSpec::new(
            "tier",
            Role::Data,
            "the size tier (gather.tier), for the comment's size line",
        )
        .arg(ValueType::Reference)
        .accepts(&[OutputType::Text]),
    )
    .child(
        ChildSpec::new(
            "request-changes-on",
            Role::Config,
            "an included lens's finding at or above this requests changes (default `error`)",
        )
        .arg(words(REQUEST_CHANGES_ON)),
    )
    .child(
        ChildSpec::new(
            "approve",
            Role::Config,
            "`clean`: approve when no finding remains (default `never`)",
        )
        .arg(words(APPROVE))
        .claims_whole(&["never"]),
    )
    .output(
        "findings",
        OutputType::Findings,
        "the findings, cross-validated, clamped and deduplicated",
        LabelRule::all().removing(LabelKind::Private),
    )
    .output(
        "comment",
        OutputType::Text,
        "the verdict, the findings and the counts (markdown)",
        LabelRule::all().removing(LabelKind::Private),
    )
    .output(
        "verdict",
        OutputType::Text,
        "comment, request-changes or approve",
        LabelRule::none(),
    )
    .output(
        "counts",
        OutputType::Json,
        "findings received, kept, dropped, demoted, clamped, stripped, merged",
        LabelRule::none(),
    )
    .output(
        "clean",
        OutputType::Bool,
        "no finding remains and every lens ran",
        LabelRule::none(),
    )
    .verdict("verdict")
    .verdict("clean")
    .fallback("findings", FallbackValue::Absent)
    .fallback("comment", FallbackValue::Absent)
    .fallback("verdict", FallbackValue::Absent)
    .fallback("counts", FallbackValue::Absent)
    .fallback("clean", FallbackValue::Bool(false))
}

/// The implementation.
pub struct Aggregate;

super::runtime::stage_impl!(Aggregate, run);

async fn run(
    cx: reviewflow_engine::run::StageCx<'_>,
) -> Result<reviewflow_engine::run::StageOutputs, reviewflow_engine::run::StageError> {
    use reviewflow_engine::run::{OutputValue, Resolved, StageError, StageOutputs};

    use super::runtime::arg;
    use crate::aggregate::{LensFindings, Policy, Validation, aggregate};
    use crate::lens::{LensMeta, VerdictMode};
    use crate::rules::Severity;

    let invalid = |what: &str, e: serde_json::Error| StageError::failed(format!("{what}: {e}"));
    let mut inputs = Vec::new();
    let declared = cx.stage.children_named("from");
    let resolved = cx.children.iter().filter(|c| c.name == "from");
    for (decl, child) in declared.zip(resolved) {
        let stage = decl
            .args
            .first()
            .and_then(|a| match &a.value {
                reviewflow_engine::model::Value::Reference(r) => Some(r.stage.clone()),
                _ => None,
            })
            .unwrap_or_else(|| "review".into());
        let lens = match child.prop("lens") {
            Some(Resolved::Output(Some(OutputValue::Json(v)))) => {
                serde_json::from_value::<LensMeta>(v.clone())
                    .map_err(|e| invalid(&format!("the lens of `{stage}`"), e))?
            }
            // No lens (a review without one, or one that did not run): named after its stage,
            // no ceiling, counted towards the verdict.
            _ => LensMeta {
                name: stage.clone(),
                ceiling: Severity::Error,
                verdict: VerdictMode::Included,
            },
        };
        let findings = match child.args.first() {
            Some(Resolved::Output(Some(OutputValue::Json(v)))) => Some(
                serde_json::from_value(v.clone())
                    .map_err(|e| invalid(&format!("the findings of `{stage}`"), e))?,
            ),
            _ => None,
        };
        inputs.push(LensFindings { lens, findings });
    }
    let ranges: Vec<crate::forge::FileRanges> = match arg(&cx, "ranges") {
        Some(Resolved::Output(Some(OutputValue::Json(v)))) => {
            serde_json::from_value(v.clone()).map_err(|e| invalid("the ranges", e))?
        }
        _ => {
            return Err(StageError::failed(
                "the ranges are absent: nothing to validate the findings against",
            ));
        }
    };
    let context: Vec<String> = cx
        .children
        .iter()
        .filter(|c| c.name == "context")
        .flat_map(|c| c.args.iter().filter_map(Resolved::text))
        .collect();
    let tolerance = match arg(&cx, "tolerance") {
        Some(Resolved::Int(n)) => u32::try_from(*n).unwrap_or(u32::MAX),
        _ => DEFAULT_TOLERANCE,
    };
    let text = |name: &str| arg(&cx, name).and_then(Resolved::text);
    let policy = Policy {
        request_changes_on: match text("request-changes-on").as_deref() {
            Some("warning") => Some(Severity::Warning),
            Some("never") => None,
            _ => Some(Severity::Error),
        },
        approve_when_clean: text("approve").as_deref() == Some("clean"),
    };
    let tier = match arg(&cx, "tier") {
        Some(Resolved::Output(Some(v))) => Some(v.render()),
        _ => None,
    };

    let validation = Validation::new(&ranges, &context, tolerance);
    let out = aggregate(&inputs, &validation, policy);
    let c = out.counts;
    cx.status.status(status_line(&out));
    for why in &out.unsuggested {
        cx.status.status(format!("{why} (the finding is kept)"));
    }
    let comment = comment(&inputs, &out, tier.as_deref());
    let findings = serde_json::to_value(&out.findings)
        .map_err(|e| StageError::failed(format!("cannot encode the findings: {e}")))?;
    let counts = serde_json::to_value(c)
        .map_err(|e| StageError::failed(format!("cannot encode the counts: {e}")))?;
    let mut outputs = StageOutputs::new();
    outputs.insert("findings".into(), OutputValue::Json(findings));
    outputs.insert("comment".into(), OutputValue::Text(comment));
    outputs.insert(
        "verdict".into(),
        OutputValue::Text(out.verdict.as_str().into()),
    );
    outputs.insert("counts".into(), OutputValue::Json(counts));
    outputs.insert(
        "clean".into(),
        OutputValue::Bool(out.findings.is_empty() && out.missing.is_empty()),
    );
    Ok(outputs)
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The one status line: counts, never a finding.
fn status_line(out: &crate::aggregate::Aggregated) -> String {
    let c = out.counts;
    let mut line = format!(
        "{} from {}: verdict {}",
        plural(c.findings, "finding", "findings"),
        plural(c.lenses.saturating_sub(c.missing), "lens", "lenses"),
        out.verdict.as_str()
    );
    let parts = [
        (
            c.dropped,
            format!("{} dropped (outside the change)", c.dropped),
        ),
        (
            c.demoted,
            format!("{} demoted (outside its hunks)", c.demoted),
        ),
        (c.clamped, format!("{} clamped", c.clamped)),
        (
            c.stripped,
            format!(
                "{} stripped",
                plural(c.stripped, "forged note", "forged notes")
            ),
        ),
        (c.merged, format!("{} merged", c.merged)),
    ];
    let said: Vec<String> = parts
        .into_iter()
        .filter(|(n, _)| *n > 0)
        .map(|(_, text)| text)
        .collect();
    if !said.is_empty() {
        line.push_str("; ");
        line.push_str(&said.join(", "));
    }
    if !out.missing.is_empty() {
        line.push_str(&format!("; not reviewed by {}", out.missing.join(", ")));
    }
    line
}

/// The lines around the aggregate's list of findings in its comment (invisible where markdown is
/// rendered): `crate::forge::formats` leaves the list out where it lists the findings itself.
pub const FINDINGS_LIST_START: &str = "<!-- reviewflow:findings -->";
/// See [`FINDINGS_LIST_START`].
pub const FINDINGS_LIST_END: &str = "<!-- /reviewflow:findings -->";

/// The size line for a tier.
fn size_line(tier: &str) -> String {
    let mut name = tier.trim().to_owned();
    if let Some(first) = name.get(..1) {
        name = first.to_ascii_uppercase() + name.get(1..).unwrap_or_default();
    }
    match tier.trim() {
        "red" => "Size: Red — diff is large; lens coverage may have gaps.".into(),
        "black" => "Size: Black — proceeding under optional gate; coverage gaps likely.".into(),
        _ => format!("Size: {name} — proceeding."),
    }
}

/// The comment: the size line, the verdict, the findings (at most [`COMMENT_FINDINGS`]) and
/// the counts.
fn comment(
    inputs: &[crate::aggregate::LensFindings],
    out: &crate::aggregate::Aggregated,
    tier: Option<&str>,
) -> String {
    use std::fmt::Write as _;

    let mut s = String::new();
    if let Some(tier) = tier {
        let _ = writeln!(s, "{}\n", size_line(tier));
    }
    let names: Vec<&str> = inputs.iter().map(|l| l.lens.name.as_str()).collect();
    let _ = writeln!(
        s,
        "**Verdict: {}** ({}: {})\n",
        out.verdict.as_str(),
        plural(names.len(), "lens", "lenses"),
        names.join(", ")
    );
    if !out.missing.is_empty() {
        let _ = writeln!(
            s,
            "Not reviewed by {}: its review did not run.\n",
            out.missing.join(", ")
        );
    }
    if out.findings.is_empty() {
        let _ = writeln!(s, "No findings.\n");
    }
    // The list is marked, whole lines that no finding's line can be, so that a forge that lists
    // the findings beside the comment (the local forge's review.md) shows each finding once.
    if !out.findings.is_empty() {
        let _ = writeln!(s, "{FINDINGS_LIST_START}");
    }
    for f in out.findings.iter().take(COMMENT_FINDINGS) {
        let at = match (f.line, f.end_line) {
            (Some(l), Some(e)) => format!("{}:{l}-{e}", f.path),
            (Some(l), None) => format!("{}:{l}", f.path),
            _ => f.path.clone(),
        };
        let rule = f
            .rule
            .as_deref()
            .map(|r| format!(" `{r}`"))
            .unwrap_or_default();
        // One line each, of a bounded length: a message's own line breaks would start markdown
        // of its own, and the findings files have the whole text.
        let mut message = f.message.split_whitespace().collect::<Vec<_>>().join(" ");
        if let Some((cut, _)) = message.char_indices().nth(COMMENT_MESSAGE_CHARS) {
            message.truncate(cut);
            message.push('…');
        }
        let _ = writeln!(s, "- **{}** `{at}`{rule}: {message}", f.severity);
    }
    if out.findings.len() > COMMENT_FINDINGS {
        let _ = writeln!(
            s,
            "- … and {} more in the findings files",
            out.findings.len() - COMMENT_FINDINGS
        );
    }
    if !out.findings.is_empty() {
        let _ = writeln!(s, "{FINDINGS_LIST_END}");
    }
    let c = out.counts;
    let _ = write!(
        s,
        "\n{} received; {} dropped (outside the change), {} demoted (outside its hunks), {} clamped, {} stripped, {} merged.\n",
        plural(c.received, "finding", "findings"),
        c.dropped,
        c.demoted,
        c.clamped,
        plural(c.stripped, "forged note", "forged notes"),
        c.merged
    );
    s
}

#[cfg(test)]
mod tests {
    use super::size_line;

    #[test]
    fn size_lines_are_seed_004s() {
        assert_eq!(size_line("green"), "Size: Green — proceeding.");
        assert_eq!(
            size_line("red"),
            "Size: Red — diff is large; lens coverage may have gaps."
        );
    }
}
