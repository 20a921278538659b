//! A review covers the change its verdict is published for: the subject of a stage that
//! reviews (the values it fences for its program, `std/review`'s `untrusted`) is not only a
//! part of the change (`std/gather`'s `since-last-review`).
//!
//! A try that resumes a conversation reads the part instead of the subject, by design (the
//! `since-last-review` slot) and knows the rest from the conversation. A fresh try (no
//! conversation: the key missing, the restore fallen back, the first review) reads the subject,
//! and when that is only what changed since the last review, it reviews the last push alone
//! while the post publishes its verdict for the whole change, every earlier finding resolved
//! (principle 4: a verdict covers what it claims). Values are followed one step: a stage that
//! renders a part into something else is not.

use super::{ID, output_type};
use crate::check::Context;
use crate::finding::{Confidence, Finding, Label, Severity};
use crate::model::{Reference, Value};

/// The subject of a stage that reviews: the references in the values it fences for its program
/// (`std/review`'s `untrusted`), but its slot for a part (`since-last-review`).
fn fenced_subject<'a>(
    stage: &'a crate::model::Stage,
    contract: &crate::contract::StageContract,
) -> Vec<&'a Reference> {
    stage
        .children
        .iter()
        .filter(|c| {
            contract
                .child_spec(&c.name.value)
                .is_some_and(|s| s.fences && !s.delta)
        })
        .flat_map(|c| c.args.iter())
        .flat_map(|a| match &a.value {
            Value::Reference(r) => vec![r],
            Value::Template(t) => t.references().collect(),
            _ => Vec::new(),
        })
        .collect()
}

pub(super) fn partial_subjects(cx: &Context<'_>, feeds_sink: &[bool], out: &mut Vec<Finding>) {
    let p = cx.pipeline;
    for (i, stage) in p.stages.iter().enumerate() {
        // A review whose verdict reaches nothing published or kept may review what it likes.
        if !feeds_sink.get(i).copied().unwrap_or(false) {
            continue;
        }
        let Some(contract) = cx.registry.get(&stage.uses.value) else {
            continue;
        };
        let subject = fenced_subject(stage, contract);
        let is_part = |r: &Reference| {
            cx.dag
                .stage_index(&r.stage)
                .and_then(|g| cx.registry.get(&p.stages[g].uses.value))
                .and_then(|c| c.output_spec(&r.output))
                .is_some_and(|o| o.part)
        };
        let Some(first) = subject.first() else {
            // A review given the diff unfenced reads the change (`untrusted-input` reports how);
            // one read by another review (an overview fenced into the one that publishes) claims
            // nothing itself: the published verdict is the other's.
            let given = stage.children.iter().any(|c| {
                contract
                    .child_spec(&c.name.value)
                    .is_some_and(|s| !s.fences)
                    && child_references(c)
                        .into_iter()
                        .any(|r| output_type(cx, r) == Some(crate::contract::OutputType::Diff))
            });
            if !given && !read_only_by_reviews(cx, &stage.name.value) {
                out.extend(no_subject(stage, contract));
            }
            continue;
        };
        if let Some(finding) = no_diff(cx, stage, &subject) {
            out.push(finding);
            continue;
        }
        if !subject.iter().all(|r| is_part(r)) {
            continue;
        }
        let name = &stage.name.value;
        let parts: Vec<String> = subject.iter().map(|r| format!("`{r}`")).collect();
        let delta_slot = contract
            .children
            .iter()
            .find(|s| s.fences && s.delta)
            .map(|s| s.name.as_str());
        let subject_slot = contract
            .children
            .iter()
            .find(|s| s.fences && !s.delta)
            .map_or("untrusted", |s| s.name.as_str());
        let help = match delta_slot {
            Some(delta) => format!(
                "review the whole change as the subject (`{subject_slot} \"{}.diff\"`) and give the part as `{delta} \"{}\"`: a resumed try reads that instead",
                first.stage,
                subject
                    .iter()
                    .map(|r| r.to_string())
                    .collect::<Vec<_>>()
                    .join("\" \"")
            ),
            None => format!(
                "review the whole change as the subject (`{subject_slot} \"{}.diff\"`)",
                first.stage
            ),
        };
        out.push(
            Finding::new(
                ID,
                Severity::Error,
                format!(
                    "`{name}` reviews only {}, a part of the change (what changed since the last review): a fresh try, with no conversation restored (the first review, a key missing, a restore fallen back), reviews the last push alone, and the verdict published for the change marks every earlier finding resolved (principle 4: a verdict covers what it claims)",
                    parts.join(", ")
                ),
                Label::new(first.span, "a part of the change"),
            )
            .help(help)
            .confidence(Confidence::High)
            .stage(name),
        );
    }
}

/// Whether every value of `name` that another stage reads is read by a review (and at least
/// one is): fenced, or not (that is `untrusted-input`'s).
fn read_only_by_reviews(cx: &Context<'_>, name: &str) -> bool {
    let mut read = false;
    for other in &cx.pipeline.stages {
        let Some(contract) = cx.registry.get(&other.uses.value) else {
            continue;
        };
        for child in &other.children {
            if !child_references(child).iter().any(|r| r.stage == name) {
                continue;
            }
            if contract.reviewers().is_empty() {
                return false;
            }
            read = true;
        }
    }
    read
}

/// The references `child` reads, directly or interpolated.
fn child_references(child: &crate::model::Child) -> Vec<&Reference> {
    let mut out = Vec::new();
    for value in child.values() {
        value.value.collect_references(&mut out);
    }
    out
}

/// A review given no subject at all: its kind takes the change as a fenced value (the diff) and
/// the stage gives it none, so it reads only what it finds by itself (a `workspace` tree, its
/// instructions), without knowing what changed, and its verdict is published for the change
/// (principle 4).
fn no_subject(
    stage: &crate::model::Stage,
    contract: &crate::contract::StageContract,
) -> Option<Finding> {
    let slot = contract.children.iter().find(|s| s.fences && !s.delta)?;
    if contract.reviewers().is_empty() {
        return None;
    }
    let name = &stage.name.value;
    Some(
        Finding::new(
            ID,
            Severity::Error,
            format!(
                "`{name}` is given none of the change to review (no `{}`): it reads what it finds without knowing what changed, and the verdict it publishes for the change covers a diff no reviewer read (principle 4: a verdict covers what it claims)",
                slot.name
            ),
            Label::new(stage.name.span, "reviews no subject"),
        )
        .help(format!(
            "give `{name}` the diff as its subject (`{} \"gather.diff\"`, from the stage that gathers the change)",
            slot.name
        ))
        .confidence(Confidence::High)
        .stage(name),
    )
}

/// A review whose subject holds none of the change's code: every value it fences is an output of
/// a known stage kind that reviews nothing itself, and none is a diff (`untrusted "gather.title" "gather.body"`). Its verdict
/// is published for the change, and covers a diff no reviewer read (principle 4). A value of a
/// `run` stage may hold what its program made of the diff: that is [`opaque_subject`]'s.
fn no_diff(
    cx: &Context<'_>,
    stage: &crate::model::Stage,
    subject: &[&Reference],
) -> Option<Finding> {
    use crate::contract::OutputType;
    let p = cx.pipeline;
    let mut types = Vec::new();
    for r in subject {
        let g = cx.dag.stage_index(&r.stage)?;
        let producer = &p.stages[g];
        let kind = cx.registry.get(&producer.uses.value)?;
        // A `run` stage's value may hold what its program made of the diff (`opaque_subject`);
        // a reviewer's, what it made of what it read: a review of a review.
        if kind.opaque || !kind.reviewers().is_empty() {
            return None;
        }
        types.push(output_type(cx, r)?);
    }
    if types.contains(&OutputType::Diff) {
        return None;
    }
    let first = subject.first()?;
    let read: Vec<String> = subject.iter().map(|r| format!("`{r}`")).collect();
    let name = &stage.name.value;
    Some(
        Finding::new(
            ID,
            Severity::Error,
            format!(
                "`{name}` reviews only {}, none of it the change's code: the verdict it publishes for the change covers a diff no reviewer read (principle 4: a verdict covers what it claims)",
                read.join(", ")
            ),
            Label::new(first.span, "not the change's code"),
        )
        .help(format!(
            "give `{name}` the diff as its subject (`untrusted \"{}.diff\"`) beside what it reads now; a review meant to judge the description alone says so with `allow \"fail-closed\" reason=\"…\"`, and its check run's name says what it covers",
            first.stage
        ))
        .confidence(Confidence::High)
        .stage(name),
    )
}

/// A verdict on the whole head (an approval, a check run: [`ChildSpec::claims_whole`]) is
/// published only by a review of the whole change: a pipeline that cuts what it gathers
/// (`std/gather`'s `path "src/"`) reviews a part, and the approval it gives, or the check run it
/// passes, covers files no reviewer read (principle 4). An approval is of the whole pull request
/// whatever its name, so it is an error. A check run is a warning, and none when its name holds
/// every input the cut is made of (`check-run "review-{project}"` beside `path
/// "projects/{project}/"`, or, for an input without `env`, its value: `check-run "review-web"`):
/// its name then says which part it passes, one check run per part.
///
/// [`ChildSpec::claims_whole`]: crate::contract::ChildSpec::claims_whole
pub(super) fn cut_verdicts(cx: &Context<'_>, feeds_sink: &[bool], out: &mut Vec<Finding>) {
    let p = cx.pipeline;
    // The first cut, and the inputs cuts are made of.
    let mut cut: Option<(&str, crate::span::Span)> = None;
    let mut by: Vec<&str> = Vec::new();
    for (stage, arg) in cx.narrowings() {
        cut.get_or_insert((stage.name.value.as_str(), arg.span));
        if let Value::Template(t) = &arg.value {
            by.extend(t.inputs().map(|(n, _)| n));
        }
    }
    // Principle 3: a subject is the whole change only where a stage's contract says so. What a
    // program made of it (a `run` stage that filters the diff) may leave any part out, whatever
    // cut is also made and however the check run is named: no name says what a program left out.
    let remade = opaque_subject(cx, feeds_sink);
    if let Some((_, maker, span)) = remade {
        cut = Some((maker, span));
        by.clear();
    }
    let Some((cutter, cut_span)) = cut else {
        return;
    };
    let cuts = match remade {
        Some((reviewer, _, _)) => format!(
            "`{reviewer}` reviews what `{cutter}`, a program the file does not show, made of the change, which may leave any part of it out"
        ),
        None => format!("`{cutter}` cuts what the run reviews"),
    };
    for (stage, child, spec, arg) in whole_head_claims(cx) {
        let named: Vec<&str> = match &arg.value {
            Value::Template(t) => t.inputs().map(|(n, _)| n).collect(),
            _ => Vec::new(),
        };
        let record = spec.names_record;
        // The name holds an input as `{input}`, or, for the file's own constant, its value.
        let literal: String = match &arg.value {
            Value::Template(t) => t
                .segments
                .iter()
                .filter_map(|s| match s {
                    crate::model::Segment::Literal { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect(),
            _ => String::new(),
        };
        let holds = |i: &str| {
            named.contains(&i)
                || p.input(i).is_some_and(|input| {
                    input.env.is_none()
                        && input
                            .default
                            .as_ref()
                            .is_some_and(|d| !d.value.is_empty() && literal.contains(&d.value))
                })
        };
        if record && !by.is_empty() && by.iter().all(|i| holds(i)) {
            continue;
        }
        // A name without an input that tells runs apart is `duplicate-publisher`'s finding,
        // and naming it by that input is this one's fix too: one root cause, one finding.
        let varies = |i: &str| p.input(i).is_some_and(|i| i.env.is_some() && !i.builtin);
        if record && by.iter().any(|i| varies(i) && !named.contains(i)) {
            continue;
        }
        let name = &stage.name.value;
        let what = &child.name.value;
        let (severity, confidence, claim) = if record {
            (
                Severity::Warning,
                Confidence::Medium,
                "a check run passes or fails the head, the files outside the cut included, unless its name says which part it covers",
            )
        } else {
            (
                Severity::Error,
                Confidence::High,
                "an approval is of the whole pull request",
            )
        };
        out.push(
                Finding::new(
                    ID,
                    severity,
                    format!(
                        "`{name}`'s `{what}` publishes a verdict on the whole head, but {cuts}: {claim}, and no reviewer read the rest (principle 4: a verdict covers what it claims)"
                    ),
                    Label::new(arg.span, "a verdict on the whole head"),
                )
                .related(Label::new(cut_span, "reviews a part of the change"))
                .help(if let Some((reviewer, _, _)) = remade {
                    format!(
                        "give `{reviewer}` the whole change as its subject (the gathered diff), with what `{cutter}` makes beside it if it helps; or name the check run for the part it covers"
                    )
                } else if record {
                    format!(
                        "review the whole change, or name the check run for the part it covers from the inputs the cut is made of (`path \"projects/{{project}}/\"`, `{what} \"review-{{project}}\"`) and require each part's check run"
                    )
                } else {
                    format!("review the whole change, or do not approve (`{what} \"never\"`)")
                })
                .confidence(confidence)
                .stage(name),
            );
    }
}

/// The first review whose verdict reaches what is published or kept and whose subject (the
/// values it fences for its program) holds no whole change, only what opaque stages made: the
/// review, the maker and where the review names it. A whole change is an output of type `diff`
/// of a stage whose contract is known (not opaque) and that is not a part
/// ([`crate::contract::OutputSpec::part`]); a review of only a part is
/// [`partial_subjects`]'s.
fn opaque_subject<'a>(
    cx: &Context<'a>,
    feeds_sink: &[bool],
) -> Option<(&'a str, &'a str, crate::span::Span)> {
    let p = cx.pipeline;
    p.stages.iter().enumerate().find_map(|(i, stage)| {
        if !feeds_sink.get(i).copied().unwrap_or(false) {
            return None;
        }
        let contract = cx.registry.get(&stage.uses.value)?;
        let subject = fenced_subject(stage, contract);
        let producer = |r: &Reference| {
            let g = cx.dag.stage_index(&r.stage)?;
            let maker = &p.stages[g];
            Some((maker, cx.registry.get(&maker.uses.value)?))
        };
        let whole = |r: &&Reference| {
            producer(r).is_some_and(|(_, c)| {
                !c.opaque
                    && c.output_spec(&r.output)
                        .is_some_and(|o| !o.part && o.ty == crate::contract::OutputType::Diff)
            })
        };
        let part = |r: &&Reference| {
            producer(r).is_some_and(|(_, c)| c.output_spec(&r.output).is_some_and(|o| o.part))
        };
        // A part beside what a program made is no whole change either: the program may have
        // left out what the part does not show.
        if subject.is_empty() || subject.iter().any(whole) || subject.iter().all(part) {
            return None;
        }
        let made = subject
            .iter()
            .find(|r| producer(r).is_some_and(|(_, c)| c.opaque))?;
        let (maker, _) = producer(made)?;
        Some((
            stage.name.value.as_str(),
            maker.name.value.as_str(),
            made.span,
        ))
    })
}

/// An approval says every line of the change was read. A stage kind that can halt a change too
/// large to be read whole ([`ChildSpec::halts`]: `std/gather`'s `gate halt="…"`), written without
/// that halt, gathers a change of any size (up to its `max-bytes`, 16 MiB by default), and a
/// clean review of what no reviewer could read whole would approve all of it (principle 4: a
/// verdict covers what it claims). A warning: a reviewer may have read it all; the halt is how
/// the pipeline says so. A check run is not held to this: it is a record of the review, and the
/// size line of the comment says what it covered.
///
/// [`ChildSpec::halts`]: crate::contract::ChildSpec::halts
pub(super) fn unbounded_approvals(cx: &Context<'_>, out: &mut Vec<Finding>) {
    let p = cx.pipeline;
    let Some((gatherer, gate, prop)) = p.stages.iter().find_map(|stage| {
        let contract = cx.registry.get(&stage.uses.value)?;
        let spec = contract.children.iter().find(|s| s.halts.is_some())?;
        let prop = spec.halts?;
        let gate = stage.children.iter().find(|c| c.name.value == spec.name);
        if gate.is_some_and(|c| c.prop(prop).is_some()) {
            return None;
        }
        Some((stage, gate, (spec.name.as_str(), prop)))
    }) else {
        return;
    };
    for (stage, child, spec, arg) in whole_head_claims(cx) {
        // Only an approval: a check run names a record of the review (see above).
        if spec.names_record {
            continue;
        }
        let name = &stage.name.value;
        let what = &child.name.value;
        let (gate_name, prop) = prop;
        let related = match gate {
            Some(c) => Label::new(c.name.span, "warns, but halts no change"),
            None => Label::new(gatherer.name.span, "gathers a change of any size"),
        };
        out.push(
                Finding::new(
                    ID,
                    Severity::Warning,
                    format!(
                        "`{name}`'s `{what}` approves the change whatever its size: `{}` halts no change too large to be read whole, so a clean review of a change no reviewer could read approves all of it (principle 4: a verdict covers what it claims)",
                        gatherer.name.value
                    ),
                    Label::new(arg.span, "an approval of the whole change"),
                )
                .related(related)
                .help(format!(
                    "halt the run on a change too large to approve (`{gate_name} {prop}=\"black\"` on `{}`), or do not approve (`{what} \"never\"`)",
                    gatherer.name.value
                ))
                .confidence(Confidence::Medium)
                .stage(name),
            );
    }
}

/// Every setting that publishes a verdict on the whole head ([`ChildSpec::claims_whole`],
/// written with a word that does not turn it off): its stage, the child, its spec and its value.
///
/// [`ChildSpec::claims_whole`]: crate::contract::ChildSpec::claims_whole
pub(in crate::check) fn whole_head_claims<'a>(
    cx: &Context<'a>,
) -> Vec<(
    &'a crate::model::Stage,
    &'a crate::model::Child,
    &'a crate::contract::ChildSpec,
    &'a crate::span::Spanned<Value>,
)> {
    let mut out = Vec::new();
    for stage in &cx.pipeline.stages {
        let Some(contract) = cx.registry.get(&stage.uses.value) else {
            continue;
        };
        for child in &stage.children {
            let Some(spec) = contract.child_spec(&child.name.value) else {
                continue;
            };
            let Some(off) = spec.claims_whole else {
                continue;
            };
            let Some(arg) = child.args.first() else {
                continue;
            };
            if matches!(&arg.value, Value::String(s) if off.contains(&s.as_str())) {
                continue;
            }
            out.push((stage, child, spec, arg));
        }
    }
    out
}

/// A filter covers what it filters: the changed-line ranges a publisher keeps a review's
/// findings by come from a stage whose diff that review read. Ranges of another gather (one cut
/// to `docs/`, or of another change) drop every finding outside them as "outside the change",
/// and the verdict published then claims a review of what was dropped (principle 4).
pub(super) fn mismatched_ranges(cx: &Context<'_>, out: &mut Vec<Finding>) {
    use crate::contract::OutputType;
    let p = cx.pipeline;
    let type_of = |r: &Reference| output_type(cx, r);
    let references = |v: &'_ crate::model::Value| -> Vec<Reference> {
        match v {
            Value::Reference(r) => vec![r.clone()],
            Value::Template(t) => t.references().cloned().collect(),
            _ => Vec::new(),
        }
    };
    for stage in &p.stages {
        let values = || {
            stage
                .children
                .iter()
                .flat_map(|c| c.args.iter())
                .flat_map(move |a| references(&a.value).into_iter().map(move |r| (r, a.span)))
        };
        let ranges: Vec<(Reference, crate::span::Span)> = values()
            .filter(|(r, _)| type_of(r) == Some(OutputType::Ranges))
            .collect();
        if ranges.is_empty() {
            continue;
        }
        for (findings, _) in values().filter(|(r, _)| type_of(r) == Some(OutputType::Findings)) {
            let Some(g) = cx.dag.stage_index(&findings.stage) else {
                continue;
            };
            let reviewer = &p.stages[g];
            let Some(contract) = cx.registry.get(&reviewer.uses.value) else {
                continue;
            };
            // The stages whose diff the review read (its fenced subject).
            let read: Vec<&str> = fenced_subject(reviewer, contract)
                .into_iter()
                .filter(|r| type_of(r) == Some(OutputType::Diff))
                .map(|r| r.stage.as_str())
                .collect();
            if read.is_empty() {
                continue;
            }
            for (range, span) in &ranges {
                if read.contains(&range.stage.as_str()) {
                    continue;
                }
                out.push(
                    Finding::new(
                        ID,
                        Severity::Error,
                        format!(
                            "`{}` keeps the findings of `{}` only where they fall in `{range}`, but `{}` reviewed the diff of `{}`: findings on what `{}` did not gather are dropped as outside the change, and the published verdict claims a review of them (principle 4, coverage is a promise)",
                            stage.name.value,
                            reviewer.name.value,
                            reviewer.name.value,
                            read.join("`, `"),
                            range.stage
                        ),
                        Label::new(*span, "ranges of another stage's diff"),
                    )
                    .related(Label::new(
                        reviewer.name.span,
                        format!("`{}` reviews the diff of `{}`", reviewer.name.value, read.join("`, `")),
                    ))
                    .help(format!(
                        "give `{}` the ranges of the stage whose diff `{}` reviewed (`{}.ranges`)",
                        stage.name.value, reviewer.name.value, read[0]
                    ))
                    .confidence(Confidence::High)
                    .stage(&stage.name.value),
                );
            }
        }
    }
}

/// A review reads its subject as the change made it: a program between the diff and a review
/// that reads it (a `run` stage whose output the review fences) and that also reads what the
/// change chose (the files of the checkout it works in, such as a `.reviewignore`; a program of
/// the checkout; another untrusted value; what it fetched) lets the change choose what its
/// review reads, and the review's verdict is published for all of it (principles 1 and 4), with
/// a check run or without one. What the program reads of the diff it filters is the subject
/// itself, and no finding: a program that reads only the diff is [`opaque_subject`]'s, where a
/// verdict claims the whole head. A review that also reads the whole change is not steered so.
pub(super) fn steered_subjects(cx: &Context<'_>, feeds_sink: &[bool], out: &mut Vec<Finding>) {
    use crate::contract::OutputType;
    let Some(flow) = cx.flow else { return };
    let p = cx.pipeline;
    let type_of = |r: &Reference| output_type(cx, r);
    let mut reported = Vec::new();
    for (i, stage) in p.stages.iter().enumerate() {
        if !feeds_sink.get(i).copied().unwrap_or(false) {
            continue;
        }
        let Some(contract) = cx.registry.get(&stage.uses.value) else {
            continue;
        };
        let subject = fenced_subject(stage, contract);
        // A review that reads the whole change beside what a program made of it reads what
        // the program left out too.
        let whole = |r: &&Reference| {
            cx.dag.stage_index(&r.stage).is_some_and(|g| {
                cx.registry.get(&p.stages[g].uses.value).is_some_and(|c| {
                    !c.opaque
                        && c.output_spec(&r.output)
                            .is_some_and(|o| !o.part && o.ty == OutputType::Diff)
                })
            })
        };
        if subject.iter().any(whole) {
            continue;
        }
        for r in subject {
            let Some(g) = cx.dag.stage_index(&r.stage) else {
                continue;
            };
            let maker = &p.stages[g];
            if reported.contains(&g)
                || !cx.registry.get(&maker.uses.value).is_some_and(|c| c.opaque)
                || !flow.inputs[g]
                    .iter()
                    .any(|x| type_of(&x.reference) == Some(OutputType::Diff))
            {
                continue;
            }
            let read = super::chooser::chooser_read_but(cx, flow, g, &|x| {
                type_of(&x.reference) == Some(OutputType::Diff)
            });
            let Some(read) = read else { continue };
            reported.push(g);
            out.push(
                Finding::new(
                    ID,
                    Severity::Error,
                    format!(
                        "`{}` reviews what `{}` made of the change (`{r}`), and what `{}`'s program leaves in depends on {read}: the change chooses what its review reads, and the verdict is published for all of it (principle 1, unknown is untrusted; principle 4, coverage is a promise)",
                        stage.name.value, maker.name.value, maker.name.value
                    ),
                    Label::new(maker.name.span, format!("depends on {read}")),
                )
                .related(Label::new(r.span, "the review's subject"))
                .help(format!(
                    "let `{}` read only the diff and files the change cannot write (an absolute path outside the checkout, `cwd \"{{work}}\"`), or give `{}` the gathered diff itself",
                    maker.name.value, stage.name.value
                ))
                .confidence(Confidence::High)
                .stage(&maker.name.value),
            );
        }
    }
}
