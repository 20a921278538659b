//! `binding`: sealed blobs must open only in the review that sealed them. A seal and a restore
//! that share a store bind the same fields to the same values; the binding names the repository
//! and the change; no bound value can be empty (an empty field would match any review). And
//! what the binding cannot say, where the blob is found and which one is opened, keeps the same
//! promise (principle 4, coverage is a promise): a store that sealed blobs are kept in and
//! restored from names them by the change, and a restore from a store the pipeline's posts keep
//! into opens only the blob the posted review names (`require-posted-head`).

use std::collections::BTreeMap;

use super::{Check, Context};
use crate::contract::Role;
use crate::finding::{Confidence, Finding, Label, Severity};
use crate::model::{Child, InputType, Pipeline, Segment, Stage, Template, Value};
use crate::span::Span;

pub struct Binding;

/// The `bind` child of a stage, as field → (template, span).
fn binding_of<'a>(cx: &Context<'_>, stage: &'a Stage) -> Option<&'a Child> {
    let contract = cx.registry.get(&stage.uses.value)?;
    stage.children.iter().find(|c| {
        contract
            .child_spec(&c.name.value)
            .is_some_and(|s| s.role == Role::Binding)
    })
}

fn fields(child: &Child) -> BTreeMap<&str, (&Template, Span)> {
    child
        .props
        .iter()
        .filter_map(|p| match &p.value.value {
            Value::Template(t) => Some((p.name.value.as_str(), (t, p.value.span))),
            _ => None,
        })
        .collect()
}

/// The inputs that name the change under review (principle 3, an allow-list): the builtin
/// `change`, and those the forge's own setting for it is made of (`pull-request="{pr}"`).
/// An input is not the change because of its name.
fn change_inputs<'a>(cx: &Context<'a>) -> Vec<&'a str> {
    let p = cx.pipeline;
    p.forge
        .as_ref()
        .and_then(|f| Some((f, cx.registry.forge(&f.kind.value)?)))
        .map_or_else(|| vec!["change"], |(f, c)| c.change_inputs(f))
}

/// Why a bound value could be empty, if it could.
fn can_be_empty(p: &Pipeline, t: &Template) -> Option<String> {
    if t.segments.is_empty() {
        return Some("it is empty".into());
    }
    let has_literal = t
        .segments
        .iter()
        .any(|s| matches!(s, Segment::Literal { text } if !text.is_empty()));
    if has_literal {
        return None;
    }
    for s in &t.segments {
        match s {
            Segment::Reference { reference } => {
                return Some(format!(
                    "`{reference}` is absent when its stage is skipped or falls back"
                ));
            }
            // A folder's path: never empty.
            Segment::Work { .. } => {}
            Segment::Input { name, .. } => {
                let Some(input) = p.input(name) else { continue };
                // Read from nowhere but the file, it holds its default and nothing else.
                if input.env.is_none()
                    && input.default.as_ref().is_some_and(|d| !d.value.is_empty())
                {
                    continue;
                }
                if input.builtin
                    || matches!(
                        input.ty.value,
                        InputType::Int | InputType::Sha | InputType::Bool
                    )
                {
                    continue;
                }
                let safe = input
                    .pattern
                    .as_ref()
                    .and_then(|pat| crate::inputs::regex(&pat.value).ok())
                    .is_some_and(|re| !re.is_match(""));
                if !safe {
                    return Some(format!(
                        "input `{name}` may be empty (give it a `pattern` that needs at least one character)"
                    ));
                }
            }
            Segment::Literal { .. } => {}
        }
    }
    None
}

/// The child of a restoring stage that opens only the blob the posted review names.
const POSTED_HEAD: &str = "require-posted-head";

impl Binding {
    /// A conversation opens only in the review that wrote it: the reviews that resume what a
    /// store's restore opens are the reviews whose conversation its seal keeps there. Another
    /// review (another lens, another reviewer or vendor) would go on from instructions and
    /// reading that were not its own, and a vendor would receive another's conversation.
    /// Followed one step each way: the stages a seal reads, the stages that read a restore.
    fn resumed_elsewhere(
        &self,
        cx: &Context<'_>,
        writers: &BTreeMap<&str, Vec<&Stage>>,
        readers: &BTreeMap<&str, Vec<&Stage>>,
        out: &mut Vec<Finding>,
    ) {
        let p = cx.pipeline;
        let is_review = |stage: &Stage| {
            cx.registry
                .get(&stage.uses.value)
                .is_some_and(super::lens::is_review)
        };
        for (store, ws) in writers {
            let Some(rs) = readers.get(store) else {
                continue;
            };
            // The reviews whose output each seal keeps, with where it reads them.
            let mut sealed: Vec<(&str, Span)> = Vec::new();
            for w in ws {
                let mut refs = Vec::new();
                for child in &w.children {
                    for v in child.values() {
                        v.value.collect_references(&mut refs);
                    }
                }
                for r in refs {
                    if p.stage(&r.stage).is_some_and(is_review)
                        && !sealed.iter().any(|(s, _)| *s == r.stage)
                    {
                        sealed.push((r.stage.as_str(), r.span));
                    }
                }
            }
            let Some(&(first, first_at)) = sealed.first() else {
                continue;
            };
            for stage in p.stages.iter().filter(|s| is_review(s)) {
                if sealed.iter().any(|(s, _)| *s == stage.name.value) {
                    continue;
                }
                let mut refs = Vec::new();
                for child in &stage.children {
                    for v in child.values() {
                        v.value.collect_references(&mut refs);
                    }
                }
                let Some(opened) = refs
                    .iter()
                    .find(|r| rs.iter().any(|restore| restore.name.value == r.stage))
                else {
                    continue;
                };
                let name = &stage.name.value;
                out.push(
                    Finding::new(
                        self.id(),
                        self.severity(),
                        format!(
                            "coverage is a promise: `{name}` resumes the conversation kept in store `{store}`, which is `{first}`'s: it goes on from another review's instructions and reading (another lens or vendor), which its program receives"
                        ),
                        Label::new(opened.span, format!("resumes `{first}`'s conversation")),
                    )
                    .related(Label::new(first_at, format!("the conversation kept in `{store}`")))
                    .help(format!(
                        "keep the conversation of the review that resumes it (`{name}`), or resume `{first}` from it; a second review that should resume needs its own store, restore and seal"
                    ))
                    .confidence(Confidence::High)
                    .stage(name),
                );
            }
        }
    }

    /// Where a binder's blob is found and which one it opens: the store's name names the change,
    /// and a restore from a store this pipeline's posts keep into opens only the posted blob.
    fn where_found(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        let change = change_inputs(cx);
        let p = cx.pipeline;
        // Stores some stage keeps blobs in (`upload … to=`).
        let mut kept: Vec<(&str, Span)> = Vec::new();
        for stage in &p.stages {
            let Some(contract) = cx.registry.get(&stage.uses.value) else {
                continue;
            };
            for child in &stage.children {
                if contract.child_spec(&child.name.value).map(|s| s.role) != Some(Role::Keep) {
                    continue;
                }
                if let Some(v) = child.prop("to")
                    && let Value::Store(s) = &v.value
                {
                    kept.push((s.as_str(), v.span));
                }
            }
        }
        let mut named: Vec<&str> = Vec::new();
        for stage in &p.stages {
            let Some(contract) = cx.registry.get(&stage.uses.value) else {
                continue;
            };
            if binding_of(cx, stage).is_none() {
                continue;
            }
            let reads: Vec<(&str, Span)> = stage
                .children
                .iter()
                .filter(|c| contract.child_spec(&c.name.value).map(|s| s.role) == Some(Role::Data))
                .flat_map(|c| c.values())
                .filter_map(|v| match &v.value {
                    Value::Store(s) => Some((s.as_str(), v.span)),
                    _ => None,
                })
                .collect();
            let name = &stage.name.value;
            for (store_name, at) in reads {
                let Some(store) = p.store(store_name) else {
                    continue;
                };
                // The name: one finding per store.
                if let Some(t) = &store.blob_name
                    && !named.contains(&store_name)
                    && !t.value.inputs().any(|(n, _)| change.contains(&n))
                {
                    named.push(store_name);
                    out.push(
                        Finding::new(
                            self.id(),
                            self.severity(),
                            format!(
                                "coverage is a promise: store `{store_name}` names its blobs \"{}\" without the change, so every pull request's reviews keep and restore under one name: another pull request's blobs are listed first and spend `{name}`'s tries, and one that keeps enough of them turns resuming off for every other (only the binding stops one restoring another's conversation)",
                                t.value.source_text()
                            ),
                            Label::new(t.span, "names no change"),
                        )
                        .related(Label::new(at, format!("`{name}` restores from it")))
                        .help(format!(
                            "put the change in the name, as the `bind` does: `name=\"{}-{{change}}\"`",
                            t.value.source_text()
                        ))
                        .confidence(Confidence::High)
                        .stage(name),
                    );
                }
                // Which blob opens: only the posted review's, when this pipeline's posts keep it.
                let Some((_, upload)) = kept.iter().find(|(s, _)| *s == store_name) else {
                    continue;
                };
                if contract.child_spec(POSTED_HEAD).is_none()
                    || stage.children.iter().any(|c| c.name.value == POSTED_HEAD)
                {
                    continue;
                }
                out.push(
                    Finding::new(
                        self.id(),
                        self.severity(),
                        format!(
                            "coverage is a promise: `{name}` resumes the newest trusted blob of store `{store_name}` that opens, whichever review kept it: the blob of a run whose post was refused after it was kept (the head moved), or an older one of the same change, is resumed as if the posted review had written it"
                        ),
                        Label::new(stage.name.span, format!("`{name}` has no `{POSTED_HEAD}`")),
                    )
                    .related(Label::new(*upload, "the pipeline keeps its blobs here"))
                    .help(format!(
                        "write `{POSTED_HEAD}` in `{name}`: only the blob the posted review names is resumed, any other means a fresh review (the stage then reads the posted review through the forge, with its token where the forge has one)"
                    ))
                    .confidence(Confidence::High)
                    .stage(name),
                );
            }
        }
    }
}

impl Check for Binding {
    fn principle(&self) -> super::Principle {
        super::Principle::Coverage
    }
    fn id(&self) -> &'static str {
        "binding"
    }
    fn severity(&self) -> Severity {
        Severity::Error
    }
    fn summary(&self) -> &'static str {
        "sealed blobs are bound to exactly one review"
    }
    fn run(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        let p = cx.pipeline;
        let change = change_inputs(cx);
        // Each binder's own binding.
        for stage in &p.stages {
            let Some(bind) = binding_of(cx, stage) else {
                continue;
            };
            let f = fields(bind);
            let inputs: Vec<&str> = f
                .values()
                .flat_map(|(t, _)| t.inputs().map(|(n, _)| n))
                .collect();
            let names_repo = inputs.contains(&"repo");
            let names_change = inputs.iter().any(|n| change.contains(n));
            if !names_repo || !names_change {
                let missing = match (names_repo, names_change) {
                    (false, false) => "the repository or the change",
                    (false, true) => "the repository",
                    _ => "the change",
                };
                // An input in the `change` field that is not the forge's change: say why.
                let unrelated: Vec<&str> = f
                    .get("change")
                    .map(|(t, _)| t.inputs().map(|(n, _)| n).collect())
                    .unwrap_or_default();
                let why = match unrelated.first() {
                    Some(input) if !names_change => format!(
                        " (`{{{input}}}` is not the change the forge reviews: the forge does not read its change from `{input}`, so nothing ties its value to this review; principle 3: what names the change is an allow-list)"
                    ),
                    _ => String::new(),
                };
                let prop = cx.registry.forge_of(p).and_then(|c| c.change.as_deref());
                let help = match (unrelated.first(), prop) {
                    (Some(input), Some(prop)) if !names_change => format!(
                        "bind change=\"{{change}}\", or have the forge review the change that input names: `forge … {prop}=\"{{{input}}}\"`"
                    ),
                    _ => "bind repo=\"{repo}\" change=\"{change}\" (and the project, if reviews are per project)".to_string(),
                };
                out.push(
                    Finding::new(
                        self.id(),
                        self.severity(),
                        format!("the binding of `{}` does not name {missing}{why}: a blob could be replayed into another review", stage.name.value),
                        Label::new(bind.name.span, "binds too little"),
                    )
                    .help(help)
                    .confidence(Confidence::High)
                    .stage(&stage.name.value),
                );
            }
            for (field, (t, span)) in &f {
                if let Some(why) = can_be_empty(p, t) {
                    out.push(
                        Finding::new(
                            self.id(),
                            self.severity(),
                            format!("bound field `{field}` of `{}` can be empty: {why}", stage.name.value),
                            Label::new(*span, "can be empty"),
                        )
                        .help("an empty field matches every review that leaves it empty; bind values that are always set")
                        .confidence(Confidence::Medium)
                        .stage(&stage.name.value),
                    );
                }
            }
        }
        self.where_found(cx, out);
        // Readers and writers of each store must bind alike.
        let mut readers: BTreeMap<&str, Vec<&Stage>> = BTreeMap::new();
        let mut writers: BTreeMap<&str, Vec<&Stage>> = BTreeMap::new();
        for stage in &p.stages {
            let Some(contract) = cx.registry.get(&stage.uses.value) else {
                continue;
            };
            for child in &stage.children {
                let role = contract.child_spec(&child.name.value).map(|s| s.role);
                match role {
                    Some(Role::Data) if binding_of(cx, stage).is_some() => {
                        for v in child.values() {
                            if let Value::Store(s) = &v.value {
                                readers.entry(s.as_str()).or_default().push(stage);
                            }
                        }
                    }
                    Some(Role::Keep) => {
                        let Some(Value::Store(s)) = child.prop("to").map(|v| &v.value) else {
                            continue;
                        };
                        for v in child.args.iter() {
                            let mut refs = Vec::new();
                            v.value.collect_references(&mut refs);
                            for r in refs {
                                if let Some(w) = p.stage(&r.stage)
                                    && binding_of(cx, w).is_some()
                                {
                                    writers.entry(s.as_str()).or_default().push(w);
                                }
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        self.resumed_elsewhere(cx, &writers, &readers, out);
        for (store, ws) in &writers {
            for w in ws {
                for r in readers.get(store).into_iter().flatten() {
                    let (Some(wb), Some(rb)) = (binding_of(cx, w), binding_of(cx, r)) else {
                        continue;
                    };
                    let (wf, rf) = (fields(wb), fields(rb));
                    let mut differences = Vec::new();
                    for (k, (t, _)) in &wf {
                        match rf.get(k) {
                            None => differences
                                .push(format!("`{k}` is bound by `{}` only", w.name.value)),
                            Some((rt, _)) if rt.source_text() != t.source_text() => differences
                                .push(format!(
                                    "`{k}` is \"{}\" in `{}` but \"{}\" in `{}`",
                                    t.source_text(),
                                    w.name.value,
                                    rt.source_text(),
                                    r.name.value
                                )),
                            Some(_) => {}
                        }
                    }
                    for k in rf.keys() {
                        if !wf.contains_key(k) {
                            differences.push(format!("`{k}` is bound by `{}` only", r.name.value));
                        }
                    }
                    if !differences.is_empty() {
                        out.push(
                            Finding::new(
                                self.id(),
                                self.severity(),
                                format!(
                                    "`{}` and `{}` share store `{store}` but bind differently: {}",
                                    w.name.value,
                                    r.name.value,
                                    differences.join("; ")
                                ),
                                Label::new(wb.name.span, "sealed with this binding"),
                            )
                            .related(Label::new(rb.name.span, "opened with this one"))
                            .help("bind the same fields to the same values in both, or no blob will ever open")
                            .confidence(Confidence::High)
                            .stage(&w.name.value),
                        );
                    }
                }
            }
        }
    }
}
