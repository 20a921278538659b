//! `unknown-input`: a string interpolates `{name}` and no input of that name is declared.
//!
//! One finding per name, at its first use, with every further use as a related label: a
//! misspelt name used in five places is one mistake. The name is also the root of whatever other
//! checks report because of it; [`counterfactual`] is the pipeline as it would be with the name
//! put right, which `run_checks` uses to fold those consequences into this finding.

use std::collections::BTreeMap;

use super::{Check, Context};
use crate::finding::{Finding, Label, Severity};
use crate::model::{Pipeline, Segment, Template, Value};
use crate::span::Span;
use crate::suggest::{did_you_mean, help_text};

pub const ID: &str = "unknown-input";

pub struct UnknownInput;

/// Uses of one name shown as labels; the message counts the rest.
const SHOWN_USES: usize = 10;

/// Every template of the pipeline, with the stage it belongs to (`None` outside stages).
fn templates(p: &Pipeline) -> Vec<(&Template, Option<&str>)> {
    let mut out = Vec::new();
    for stage in &p.stages {
        for child in &stage.children {
            for v in child.values() {
                if let Value::Template(t) = &v.value {
                    out.push((t, Some(stage.name.value.as_str())));
                }
            }
        }
    }
    let settings = p
        .forge
        .iter()
        .flat_map(|f| &f.settings)
        .chain(p.stores.iter().flat_map(|s| &s.settings))
        .chain(
            p.stores
                .iter()
                .flat_map(|s| &s.trust)
                .flat_map(|t| &t.props),
        );
    for setting in settings {
        if let Value::Template(t) = &setting.value.value {
            out.push((t, None));
        }
    }
    for store in &p.stores {
        if let Some(t) = &store.blob_name {
            out.push((&t.value, None));
        }
    }
    out
}

/// The same templates as [`templates`], to rewrite.
fn templates_mut(p: &mut Pipeline) -> Vec<&mut Template> {
    let mut out = Vec::new();
    for stage in &mut p.stages {
        for child in &mut stage.children {
            let values = child
                .args
                .iter_mut()
                .chain(child.props.iter_mut().map(|p| &mut p.value));
            for v in values {
                if let Value::Template(t) = &mut v.value {
                    out.push(t);
                }
            }
        }
    }
    let (forge, stores) = (&mut p.forge, &mut p.stores);
    let mut settings: Vec<&mut crate::model::Setting> =
        forge.iter_mut().flat_map(|f| &mut f.settings).collect();
    for store in stores.iter_mut() {
        settings.extend(store.settings.iter_mut());
        settings.extend(store.trust.iter_mut().flat_map(|t| &mut t.props));
        if let Some(t) = &mut store.blob_name {
            out.push(&mut t.value);
        }
    }
    for setting in settings {
        if let Value::Template(t) = &mut setting.value.value {
            out.push(t);
        }
    }
    out
}

/// An undeclared input name and every place that uses it, in file order.
pub struct Unknown<'a> {
    pub name: &'a str,
    pub uses: Vec<Span>,
    /// The stage of every use, when they are all in one stage.
    pub stage: Option<&'a str>,
    /// Likely meant names, closest first.
    pub candidates: Vec<String>,
}

/// The undeclared input names of `p`, ordered by first use.
pub fn unknowns(p: &Pipeline) -> Vec<Unknown<'_>> {
    let mut by_name: BTreeMap<&str, Vec<(Span, Option<&str>)>> = BTreeMap::new();
    for (t, stage) in templates(p) {
        for (name, span) in t.inputs() {
            if p.input(name).is_none() {
                by_name.entry(name).or_default().push((span, stage));
            }
        }
    }
    let mut out: Vec<Unknown<'_>> = by_name
        .into_iter()
        .map(|(name, mut uses)| {
            uses.sort_by_key(|(span, _)| *span);
            uses.dedup_by_key(|(span, _)| *span);
            let first_stage = uses[0].1;
            let stage = first_stage.filter(|s| uses.iter().all(|(_, u)| *u == Some(*s)));
            Unknown {
                name,
                uses: uses.into_iter().map(|(span, _)| span).collect(),
                stage,
                candidates: did_you_mean(name, p.inputs.iter().map(|i| i.name.value.as_str())),
            }
        })
        .collect();
    out.sort_by_key(|u| u.uses[0]);
    out
}

/// `p` as it would be with `unknown` put right: renamed to its closest candidate, or declared
/// when nothing is close. `None` when there is nothing to declare it from.
pub fn counterfactual(p: &Pipeline, unknown: &Unknown<'_>) -> Option<Pipeline> {
    let mut fixed = p.clone();
    match unknown.candidates.first() {
        Some(meant) => {
            for t in templates_mut(&mut fixed) {
                for s in &mut t.segments {
                    if let Segment::Input { name, .. } = s
                        && name == unknown.name
                    {
                        *name = meant.clone();
                    }
                }
            }
        }
        None => {
            // Declared like a built-in (a plain string), but by the file.
            let mut declared = p.inputs.iter().find(|i| i.builtin)?.clone();
            declared.name.value = unknown.name.to_string();
            declared.builtin = false;
            fixed.inputs.push(declared);
        }
    }
    Some(fixed)
}

impl Check for UnknownInput {
    fn principle(&self) -> super::Principle {
        super::Principle::AllowLists
    }
    fn id(&self) -> &'static str {
        ID
    }
    fn severity(&self) -> Severity {
        Severity::Error
    }
    fn summary(&self) -> &'static str {
        "every `{name}` interpolation names a declared input"
    }
    fn run(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        for u in unknowns(cx.pipeline) {
            let name = u.name;
            let message = match u.uses.len() {
                1 => format!("`{{{name}}}` interpolates an input that is not declared"),
                n if n <= SHOWN_USES => {
                    format!("`{{{name}}}` interpolates an input that is not declared ({n} uses)")
                }
                n => format!(
                    "`{{{name}}}` interpolates an input that is not declared ({n} uses, the first \
                     {SHOWN_USES} shown)"
                ),
            };
            let mut f = Finding::new(
                self.id(),
                self.severity(),
                message,
                Label::new(u.uses[0], "unknown input"),
            )
            .help(
                help_text(&u.candidates)
                    .unwrap_or_else(|| format!("declare it: `input \"{name}\" env=\"VARIABLE\"`")),
            );
            for span in u.uses.iter().take(SHOWN_USES).skip(1) {
                f = f.related(Label::new(*span, "used again here"));
            }
            if let Some(s) = u.stage {
                f = f.stage(s);
            }
            out.push(f);
        }
    }
}
