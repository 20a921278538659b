//! `unknown-input`: a string interpolates `{name}` and no input of that name is declared.

use super::{Check, Context};
use crate::finding::{Finding, Label, Severity};
use crate::model::{Template, Value};
use crate::suggest::{did_you_mean, help_text};

pub struct UnknownInput;

impl UnknownInput {
    fn template(
        &self,
        cx: &Context<'_>,
        t: &Template,
        stage: Option<&str>,
        out: &mut Vec<Finding>,
    ) {
        for (name, span) in t.inputs() {
            if cx.pipeline.input(name).is_some() {
                continue;
            }
            let names = cx.pipeline.inputs.iter().map(|i| i.name.value.as_str());
            let candidates = did_you_mean(name, names);
            let mut f = Finding::new(
                self.id(),
                self.severity(),
                format!("`{{{name}}}` interpolates an input that is not declared"),
                Label::new(span, "unknown input"),
            )
            .help(
                help_text(&candidates)
                    .unwrap_or_else(|| format!("declare it: `input \"{name}\" env=\"VARIABLE\"`")),
            );
            if let Some(s) = stage {
                f = f.stage(s);
            }
            out.push(f);
        }
    }
}

impl Check for UnknownInput {
    fn id(&self) -> &'static str {
        "unknown-input"
    }
    fn severity(&self) -> Severity {
        Severity::Error
    }
    fn summary(&self) -> &'static str {
        "every `{name}` interpolation names a declared input"
    }
    fn run(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        for stage in &cx.pipeline.stages {
            for child in &stage.children {
                for v in child.values() {
                    if let Value::Template(t) = &v.value {
                        self.template(cx, t, Some(&stage.name.value), out);
                    }
                }
            }
        }
        for store in &cx.pipeline.stores {
            if let Some(t) = &store.blob_name {
                self.template(cx, &t.value, None, out);
            }
        }
        for setting in cx.pipeline.forge.iter().flat_map(|f| &f.settings) {
            if let Value::Template(t) = &setting.value.value {
                self.template(cx, t, None, out);
            }
        }
    }
}
