//! `run-refusal`: what `run` would refuse before anything runs, for a reason the file alone
//! decides, reported by `check` with `run`'s own words (principle 7: one source of truth). It
//! calls the functions `run` calls: an input's `default` against its `type` and `pattern`
//! (`inputs::validate`), and each stage kind's refusals of its settings, which the kind
//! registers with its contract ([`crate::contract::StageContract::refusals`]) and calls itself
//! when it starts; the forge kind's refusals of its settings
//! ([`crate::contract::ForgeContract::refusals`]: an `api-url` that is not https); and the store
//! kind's rule on a blob name once its inputs are filled in
//! ([`crate::contract::StoreContract::name_refusal`]), tried with the most hostile value each
//! input admits (a list of likely ones, and one value for each character the input's pattern
//! admits, read from the pattern's automaton: [`crate::admits`]). A refusal that depends on the environment (a variable that is not set, a key's
//! length, the kernel's layers) is `run`'s alone (docs/checks.md).

use super::{Check, Context};
use crate::finding::{Confidence, Finding, Label, Severity};
use crate::model::{Input, Pipeline, Segment, Store, Template, Value};
use crate::span::Span;

/// The shape a builtin input has in every forge: `repo` is `owner/name` (or a remote's host and
/// path), so it always holds a `/`; the ids are `[A-Za-z0-9][A-Za-z0-9._-]*`.
const BUILTIN_SHAPES: &[(&str, &str)] = &[("repo", "owner/name"), ("change", "1"), ("run", "1")];

/// Values a name rule is most likely to refuse, each tried where the input's type and pattern
/// admit it (principle 1: an input is attacker text up to what its pattern excludes): a
/// separator, a leading dot, dash or underscore, a space, a non-ASCII letter, nothing, a
/// negative number, and a value longer than any name.
fn probes() -> Vec<String> {
    let mut out: Vec<String> = [
        "a/b", "a\\b", "..", ".a", "-a", "_a", "a b", "\u{e9}", "", "-1",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    out.push("x".repeat(200));
    out
}

/// `t` with each input filled in: `hostile` for `(name, value)`, builtins by their shape, and a
/// plain `x` for the others.
fn fill(t: &Template, hostile: Option<(&str, &str)>) -> String {
    // Written into one string of the right size: it is filled once per value tried.
    let mut out = String::with_capacity(
        t.segments
            .iter()
            .map(|s| segment_text(s, hostile).len())
            .sum(),
    );
    for s in &t.segments {
        out.push_str(segment_text(s, hostile));
    }
    out
}

/// What [`fill`] writes for segment `s`.
fn segment_text<'a>(s: &'a Segment, hostile: Option<(&'a str, &'a str)>) -> &'a str {
    match s {
        Segment::Literal { text } => text,
        Segment::Input { name, .. } => match hostile {
            Some((h, v)) if h == name => v,
            _ => BUILTIN_SHAPES
                .iter()
                .find(|(b, _)| b == name)
                .map_or("x", |(_, shape)| shape),
        },
        Segment::Reference { .. } => "",
        // The shape of a work folder's path, as `run` fills it in.
        Segment::Work { .. } => "/tmp/reviewflow-run/stage-0123abcd",
    }
}

/// Whether a stage names store `name` (in a child's arguments or properties).
fn used(p: &Pipeline, name: &str) -> bool {
    p.stages.iter().any(|s| {
        s.children.iter().any(|c| {
            c.args
                .iter()
                .chain(c.props.iter().map(|p| &p.value))
                .any(|v| matches!(&v.value, Value::Store(n) if n == name))
        })
    })
}

/// The first value of `input` its type and pattern admit that `refused` refuses.
fn hostile_value(
    input: &Input,
    refused: &dyn Fn(&str) -> Option<String>,
) -> Option<(String, String)> {
    // An input read from nowhere but the file is the file's constant: its default is all it
    // can hold (principle 1 is about values from outside the file).
    if input.env.is_none() {
        let value = input.default.as_ref()?.value.clone();
        return refused(&value).map(|why| (value, why));
    }
    // Compiled once for every probe: a pattern costs more to compile than to match.
    let pattern = crate::inputs::compile_pattern(input).ok()?;
    // The values a name rule is most likely to refuse, then one the pattern admits for each
    // character it admits (principle 3: a value nobody listed is tried too).
    let mut values = probes();
    values.extend(crate::admits::admits(input).witnesses.iter().cloned());
    values.into_iter().find_map(|v| {
        crate::inputs::validate_compiled(input, pattern.as_ref(), &v, String::new()).ok()?;
        refused(&v).map(|why| (v, why))
    })
}

pub struct RunRefusal;

impl Check for RunRefusal {
    fn principle(&self) -> super::Principle {
        super::Principle::OneSourceOfTruth
    }
    fn id(&self) -> &'static str {
        "run-refusal"
    }
    fn severity(&self) -> Severity {
        Severity::Error
    }
    fn summary(&self) -> &'static str {
        "nothing `run` refuses for a reason written in the file passes `check`"
    }
    fn run(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        let p = cx.pipeline;
        for input in p.inputs.iter().filter(|i| !i.builtin) {
            let Some(default) = &input.default else {
                continue;
            };
            // A pattern that is no regular expression is `type-mismatch`'s: one cause, one error.
            if crate::inputs::compile_pattern(input).is_err() {
                continue;
            }
            if let Err(e) = crate::inputs::validate(input, &default.value, "its default".to_owned())
            {
                out.push(
                    Finding::new(
                        self.id(),
                        self.severity(),
                        format!("`run` refuses to start: {e}"),
                        Label::new(default.span, "the default"),
                    )
                    .help(
                        "give the input a default its `type` and `pattern` accept, or no default (then the environment must set it)",
                    )
                    .confidence(Confidence::High),
                );
            }
        }
        for stage in &p.stages {
            let Some(refusals) = cx.registry.get(&stage.uses.value).and_then(|c| c.refusals) else {
                continue;
            };
            for (span, why) in refusals(stage) {
                out.push(
                    Finding::new(
                        self.id(),
                        self.severity(),
                        format!(
                            "`{}` refuses its settings when it starts: {why}",
                            stage.name.value
                        ),
                        Label::new(span, "refused"),
                    )
                    .help("remove or change this setting: the stage would fail before running anything")
                    .confidence(Confidence::High)
                    .stage(&stage.name.value),
                );
            }
        }
        self.forge(cx, out);
        for store in &p.stores {
            self.store_forge(cx, store, out);
            self.blob_name(cx, store, out);
        }
    }
}

impl RunRefusal {
    /// What the forge kind refuses of its settings (principle 3 for a URL: an allow-list).
    fn forge(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        let Some(forge) = &cx.pipeline.forge else {
            return;
        };
        let Some(refusals) = cx
            .registry
            .forge(&forge.kind.value)
            .and_then(|c| c.refusals)
        else {
            return;
        };
        for refusal in refusals(cx.pipeline, forge) {
            let principle = refusal
                .principle
                .map_or_else(String::new, |p| format!("{p}: "));
            out.push(
                Finding::new(
                    self.id(),
                    self.severity(),
                    format!(
                        "{principle}`run` refuses to open the forge: {}",
                        refusal.why
                    ),
                    Label::new(refusal.span, "refused"),
                )
                .help(refusal.help)
                .confidence(Confidence::High),
            );
        }
    }

    /// A store that a stage uses, kept through a forge the pipeline is not on: `run` refuses
    /// to open it (`StoreContract::forge_refusal`, the words `run` says).
    fn store_forge(&self, cx: &Context<'_>, store: &Store, out: &mut Vec<Finding>) {
        let p = cx.pipeline;
        if !used(p, &store.name.value) {
            return;
        }
        let forge = p
            .forge
            .as_ref()
            .map(|f| f.kind.value.as_str())
            .or(cx.registry.default_forge())
            .unwrap_or_default();
        let Some(why) = cx
            .registry
            .store(&store.kind.value)
            .and_then(|c| c.forge_refusal(&store.name.value, forge))
        else {
            return;
        };
        let mut finding = Finding::new(
            self.id(),
            self.severity(),
            format!("`run` refuses to open the store: {why}"),
            Label::new(store.kind.span, "kept through another forge"),
        )
        .help("declare the forge the store is kept through (`forge \"…\"`), or keep the store with a kind this forge keeps")
        .confidence(Confidence::High);
        if let Some(f) = &p.forge {
            finding = finding.related(Label::new(f.kind.span, "the pipeline's forge"));
        }
        out.push(finding);
    }

    /// The blob name of a store that a stage uses, filled in as `run` fills it in: builtins by
    /// their shape, each declared input by the most hostile value its type and pattern admit.
    fn blob_name(&self, cx: &Context<'_>, store: &Store, out: &mut Vec<Finding>) {
        let p = cx.pipeline;
        let (Some(template), Some(refusal)) = (
            &store.blob_name,
            cx.registry
                .store(&store.kind.value)
                .and_then(|k| k.name_refusal),
        ) else {
            return;
        };
        if !used(p, &store.name.value) {
            return;
        }
        let name = &store.name.value;
        let refused =
            |hostile: Option<(&str, &str)>| refusal(name, &fill(&template.value, hostile));
        let push = |out: &mut Vec<Finding>,
                    span: Span,
                    label: String,
                    why: String,
                    help: String| {
            out.push(
                Finding::new(
                    self.id(),
                    self.severity(),
                    format!("check and run have one source of truth: `run` refuses store `{name}` when a stage keeps or restores a blob: {why}"),
                    Label::new(span, label),
                )
                .help(help)
                .confidence(Confidence::High),
            );
        };
        let builtins: Vec<String> = template
            .value
            .inputs()
            .filter_map(|(n, _)| {
                BUILTIN_SHAPES
                    .iter()
                    .find(|(b, _)| *b == n)
                    .map(|(b, shape)| format!("`{{{b}}}` is `{shape}`"))
            })
            .collect();
        if let Some(why) = refused(None) {
            let when = if builtins.is_empty() {
                String::new()
            } else {
                format!(" ({})", builtins.join(", "))
            };
            push(
                out,
                template.span,
                format!("refused whatever the inputs hold{when}"),
                why,
                "name blobs with letters, digits, '.', '_' and '-' only, starting with a letter or digit: `name=\"review-{change}\"` (a `{repo}` holds a `/`: leave it out, the binding names the repository)".into(),
            );
            return;
        }
        let mut seen: Vec<&str> = Vec::new();
        for (input_name, span) in template.value.inputs() {
            if seen.contains(&input_name) {
                continue;
            }
            seen.push(input_name);
            let Some(input) = p.input(input_name).filter(|i| !i.builtin) else {
                continue;
            };
            let Some((value, why)) = hostile_value(input, &|v| refused(Some((input_name, v))))
            else {
                continue;
            };
            if input.env.is_none() {
                push(
                    out,
                    span,
                    format!("input `{input_name}` is {value:?}"),
                    format!(
                        "input `{input_name}` is {value:?} (its default, the only value it holds): {why}"
                    ),
                    format!(
                        "give input `{input_name}` a default that is a name: letters, digits, `.`, `_` and `-`, starting with a letter or digit"
                    ),
                );
                continue;
            }
            push(
                out,
                span,
                format!("input `{input_name}` may be {value:?}"),
                format!(
                    "input `{input_name}` may be {value:?} (its type and pattern admit it): {why}"
                ),
                format!(
                    "give input `{input_name}` a `pattern` that admits only what a name may hold, e.g. `pattern=\"^[a-z0-9][a-z0-9-]{{0,63}}$\"`"
                ),
            );
        }
    }
}
