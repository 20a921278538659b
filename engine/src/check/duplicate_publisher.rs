//! `duplicate-publisher`: a pipeline's review has one place per change: on a hosted forge the
//! one comment per pull request, pipeline and project (its marker records the head reviewed and the
//! conversation kept), locally the change's review files and their record. Two publishing
//! stages (`std/post`) that can both run in one run write that same place, and the one that
//! runs last silently replaces the other's review and record.
//!
//! Across runs, what tells two runs of the pipeline apart on one head (an input that cuts what a
//! run reviews, or that keys its comment: `forge … project="{project}"`) keys every record they
//! publish: a run for another value otherwise replaces the review, or a record the forge finds
//! by a name alone (a check run, `std/post`'s `check-run`).
//!
//! Keeping is publishing to a store: two stores of one kind, with the same settings, that name
//! their blobs alike keep them in one place, so a blob one keeps replaces the other's (or is
//! read back as the other's).
//!
//! Two publishers whose `when`s cannot both be true (`review.commented` and
//! `!review.commented`) publish once per run and are not reported.

use super::{Check, Context};
use crate::contract::Effect;
use crate::finding::{Confidence, Finding, Label, Severity};
use crate::model::{Expr, Stage, Value};
use crate::policy::can_be_true;

pub struct DuplicatePublisher;

/// Whether `a` and `b` can both run in one run: their `when`s can be true together.
fn both_run(a: &Stage, b: &Stage) -> bool {
    let when = |s: &Stage| {
        s.when
            .as_ref()
            .map_or(Expr::Const { value: true }, |w| w.value.clone())
    };
    let both = Expr::And {
        left: Box::new(when(a)),
        right: Box::new(when(b)),
    };
    can_be_true(&both, &|_| None).is_some()
}

/// Where a store keeps its blobs, as written: its kind, its blob name and its settings (sorted).
#[derive(PartialEq)]
struct Place<'a> {
    kind: &'a str,
    name: &'a str,
    settings: Vec<(&'a str, &'a str)>,
}

/// Where `store` keeps its blobs, with where its blob name is; `None` without a blob name (the
/// store's own name is then used).
fn store_place<'a>(
    text: &'a str,
    store: &'a crate::model::Store,
) -> Option<(Place<'a>, crate::span::Span)> {
    let written = |span: crate::span::Span| text.get(span.offset..span.end()).unwrap_or("");
    let name = store.blob_name.as_ref()?;
    let mut settings: Vec<(&str, &str)> = store
        .settings
        .iter()
        .map(|s| (s.name.value.as_str(), written(s.value.span)))
        .collect();
    settings.sort();
    let place = Place {
        kind: store.kind.value.as_str(),
        name: written(name.span),
        settings,
    };
    Some((place, name.span))
}

impl DuplicatePublisher {
    /// Two stores that keep their blobs in one place: the same kind, the same settings, and the
    /// same blob name as written.
    fn shared_store_names(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        let text = cx.source.text();
        let place = |store| store_place(text, store);
        let stores = &cx.pipeline.stores;
        for (i, later) in stores.iter().enumerate() {
            let Some((here, span)) = place(later) else {
                continue;
            };
            let Some(first) = stores[..i]
                .iter()
                .find(|a| place(a).is_some_and(|(there, _)| there == here))
            else {
                continue;
            };
            let (kind, name) = (here.kind, here.name);
            out.push(
                Finding::new(
                    self.id(),
                    self.severity(),
                    format!(
                        "stores `{}` and `{}` keep their blobs in one place ({kind}, named {name}): a blob one keeps replaces the other's, and a restore from one reads the other's (principle 4: nothing kept is overwritten)",
                        first.name.value, later.name.value
                    ),
                    Label::new(span, "the same blob name"),
                )
                .related(Label::new(first.name.span, "keeps blobs under this name too"))
                .help(format!(
                    "give each store a blob name of its own: `name=\"{}-{{change}}\"`",
                    later.name.value
                ))
                .confidence(Confidence::High),
            );
        }
    }
}

impl Check for DuplicatePublisher {
    fn principle(&self) -> super::Principle {
        super::Principle::Coverage
    }
    fn id(&self) -> &'static str {
        "duplicate-publisher"
    }
    fn severity(&self) -> Severity {
        Severity::Error
    }
    fn summary(&self) -> &'static str {
        "at most one stage publishes the review in a run"
    }
    fn run(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        let publishers: Vec<&Stage> = cx
            .pipeline
            .stages
            .iter()
            .filter(|s| {
                cx.registry
                    .get(&s.uses.value)
                    .is_some_and(|c| c.has_effect(Effect::Publishes))
            })
            .collect();
        if let Some(first) = publishers.first() {
            self.unkeyed_narrowing(cx, first, out);
        }
        self.unkeyed_records(cx, &publishers, out);
        self.shared_store_names(cx, out);
        for (i, later) in publishers.iter().enumerate() {
            let Some(first) = publishers[..i].iter().find(|a| both_run(a, later)) else {
                continue;
            };
            out.push(
                Finding::new(
                    self.id(),
                    self.severity(),
                    format!(
                        "`{}` and `{}` both publish this pipeline's review, which has one place per change: the one that posts last replaces the other's comment and its record of the head reviewed and the conversation kept",
                        first.name.value, later.name.value
                    ),
                    Label::new(later.name.span, "publishes the review again"),
                )
                .related(Label::new(first.name.span, "publishes the review"))
                .help(format!(
                    "publish once per run: give `{}` what `{}` publishes (one `std/post` takes a comment, findings, a check run and uploads), make their `when`s exclusive (`review.commented` and `!review.commented`), or publish the other review from a pipeline of its own (the comment is keyed by pipeline and project)",
                    first.name.value, later.name.value
                ))
                .confidence(Confidence::High)
                .stage(&later.name.value),
            );
        }
    }
}

impl DuplicatePublisher {
    /// Across runs: an input that narrows what a run reviews (`std/gather`'s `path
    /// "projects/{project}/"`) keys the review the forge publishes (`forge … project=
    /// "{project}"`), or a run for another value replaces the review, its record and its check
    /// run with a review of another part of the change. Judged where the forge kind can key its
    /// review by a setting of its own (a hosted forge's `project`).
    fn unkeyed_narrowing(&self, cx: &Context<'_>, publisher: &Stage, out: &mut Vec<Finding>) {
        let p = cx.pipeline;
        let Some(forge) = &p.forge else { return };
        let Some(prop) = cx
            .registry
            .forge(&forge.kind.value)
            .and_then(|c| c.key.as_deref())
        else {
            return;
        };
        let keyed: Vec<&str> = match forge.setting(prop).map(|v| &v.value) {
            Some(Value::Template(t)) => t.inputs().map(|(n, _)| n).collect(),
            _ => Vec::new(),
        };
        let mut reported: Vec<&str> = Vec::new();
        for (stage, arg) in cx.narrowings() {
            let Value::Template(t) = &arg.value else {
                continue;
            };
            for (input, span) in t.inputs() {
                // The change and the repository key every review already.
                if matches!(input, "change" | "repo")
                    || keyed.contains(&input)
                    || reported.contains(&input)
                {
                    continue;
                }
                reported.push(input);
                let by = if keyed.is_empty() {
                    "the change and the pipeline alone".to_string()
                } else {
                    format!(
                        "the change, the pipeline and {}",
                        keyed
                            .iter()
                            .map(|k| format!("`{{{k}}}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                };
                out.push(
                    Finding::new(
                        self.id(),
                        self.severity(),
                        format!(
                            "`{}` cuts what a run reviews by `{{{input}}}`, but the forge keys the review `{}` publishes by {by}: a run for another `{input}` replaces this review, its record and its check run with a review of another part of the change (principle 4: a verdict covers what it claims)",
                            stage.name.value, publisher.name.value
                        ),
                        Label::new(span, "chooses what a run reviews"),
                    )
                    .related(Label::new(forge.kind.span, format!("keys the review by {by}")))
                    .help(format!(
                        "key the review by it too: `forge \"{}\" … {prop}=\"{}\"`",
                        forge.kind.value,
                        keyed
                            .iter()
                            .map(|k| format!("{{{k}}}"))
                            .chain(std::iter::once(format!("{{{input}}}")))
                            .collect::<Vec<_>>()
                            .join("-")
                    ))
                    .confidence(Confidence::High)
                    .stage(&stage.name.value),
                );
            }
        }
    }
}

impl DuplicatePublisher {
    /// A record the forge finds by a name alone (a check run: [`ChildSpec::names_record`]) holds
    /// every input that tells two runs apart on one head: those that cut what a run reviews and
    /// those the forge keys the comment by. An input without `env` is the file's own constant and
    /// tells no runs apart; the change and the repository key every record already.
    ///
    /// [`ChildSpec::names_record`]: crate::contract::ChildSpec::names_record
    fn unkeyed_records(&self, cx: &Context<'_>, publishers: &[&Stage], out: &mut Vec<Finding>) {
        let p = cx.pipeline;
        let varies = |input: &str| {
            p.input(input)
                .is_some_and(|i| i.env.is_some() && !i.builtin)
        };
        // Each input that tells runs apart, with what makes it do so.
        let mut apart: Vec<(&str, String)> = Vec::new();
        if let Some(forge) = &p.forge
            && let Some(prop) = cx
                .registry
                .forge(&forge.kind.value)
                .and_then(|c| c.key.as_deref())
            && let Some(Value::Template(t)) = forge.setting(prop).map(|v| &v.value)
        {
            for (input, _) in t.inputs() {
                if varies(input) && !apart.iter().any(|(n, _)| *n == input) {
                    apart.push((
                        input,
                        format!("the forge keys the review's comment by `{{{input}}}`"),
                    ));
                }
            }
        }
        for (stage, arg) in cx.narrowings() {
            let Value::Template(t) = &arg.value else {
                continue;
            };
            for (input, _) in t.inputs() {
                if varies(input) && !apart.iter().any(|(n, _)| *n == input) {
                    apart.push((
                        input,
                        format!(
                            "`{}` cuts what a run reviews by `{{{input}}}`",
                            stage.name.value
                        ),
                    ));
                }
            }
        }
        for publisher in publishers {
            let Some(contract) = cx.registry.get(&publisher.uses.value) else {
                continue;
            };
            for child in &publisher.children {
                if !contract
                    .child_spec(&child.name.value)
                    .is_some_and(|s| s.names_record)
                {
                    continue;
                }
                let Some(arg) = child.args.first() else {
                    continue;
                };
                let named: Vec<&str> = match &arg.value {
                    Value::Template(t) => t.inputs().map(|(n, _)| n).collect(),
                    _ => Vec::new(),
                };
                // A name made of inputs alone is whatever sets them says: a required check's
                // name included (principle 1: a value from outside the file is attacker text).
                if let Value::Template(t) = &arg.value
                    && t.segments.iter().all(|s| match s {
                        crate::model::Segment::Literal { text } => text.trim().is_empty(),
                        _ => true,
                    })
                    && let Some(input) = named.iter().find(|i| varies(i))
                {
                    let env = p
                        .input(input)
                        .and_then(|i| i.env.as_ref())
                        .map_or(String::new(), |e| format!("`${}`", e.value));
                    out.push(
                        Finding::new(
                            self.id(),
                            self.severity(),
                            format!(
                                "`{}`'s `{}` is named by `{{{input}}}` alone: whatever sets {env} chooses which record the review writes, the name of a check another workflow reports (a required `build`) included (principle 1: a value from outside the file is attacker text)",
                                publisher.name.value, child.name.value
                            ),
                            Label::new(arg.span, "named from outside the file"),
                        )
                        .help(format!(
                            "give the name a fixed part that no other check has, and the input a `pattern`: `{} \"review-{{{input}}}\"`",
                            child.name.value
                        ))
                        .confidence(Confidence::High)
                        .stage(&publisher.name.value),
                    );
                    continue;
                }
                let missing: Vec<&(&str, String)> =
                    apart.iter().filter(|(n, _)| !named.contains(n)).collect();
                let Some((first, why)) = missing.first() else {
                    continue;
                };
                let record = &child.name.value;
                let inputs: Vec<String> =
                    missing.iter().map(|(n, _)| format!("`{{{n}}}`")).collect();
                out.push(
                    Finding::new(
                        self.id(),
                        self.severity(),
                        format!(
                            "`{}`'s `{record}` is named without {}, which tells runs of this pipeline apart ({why}): runs for two values record the same `{record}` on one head, and the last replaces the other's verdict (principle 4: a verdict covers what it claims)",
                            publisher.name.value,
                            inputs.join(", "),
                        ),
                        Label::new(arg.span, format!("the same for every `{first}`")),
                    )
                    .help(format!(
                        "name it by {} too: `{record} \"…-{}\"`",
                        inputs.join(", "),
                        missing.iter().map(|(n, _)| format!("{{{n}}}")).collect::<Vec<_>>().join("-"),
                    ))
                    .confidence(Confidence::High)
                    .stage(&publisher.name.value),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::contract::ValueType;
    use crate::contract::{ChildSpec, Effect, LabelRule, OutputType, Role, StageContract};
    use crate::registry::Registry;
    use crate::{CheckOptions, Source, compile, run_checks};

    fn findings(stages: &str) -> Vec<(String, Option<String>)> {
        let mut registry = Registry::with_builtins();
        registry.register(StageContract::new("x/review", "reviews").output(
            "done",
            OutputType::Bool,
            "wrote one",
            LabelRule::none(),
        ));
        registry.register(
            StageContract::new("x/post", "publishes")
                .child(ChildSpec::new("name", Role::Config, "a name").arg(ValueType::String))
                .effect(Effect::Publishes),
        );
        let text = format!("pipeline \"p\"\nstage \"review\" uses=\"x/review\"\n{stages}");
        let compiled =
            compile(Source::new("t.kdl", text), &registry, &Default::default()).expect("compiles");
        run_checks(&compiled, &registry, CheckOptions::default())
            .into_iter()
            .filter(|f| f.check == "duplicate-publisher")
            .map(|f| (f.message, f.stage))
            .collect()
    }

    #[test]
    fn one_publisher_is_fine() {
        assert!(findings("stage \"post\" uses=\"x/post\"\n").is_empty());
    }

    #[test]
    fn a_second_publisher_is_reported_on_itself() {
        let f = findings(
            "stage \"post\" uses=\"x/post\"\nstage \"again\" uses=\"x/post\" {\n    name \"other\"\n}\n",
        );
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].0.starts_with("`post` and `again` both publish"),
            "{f:?}"
        );
        assert_eq!(f[0].1.as_deref(), Some("again"));
    }

    #[test]
    fn three_publishers_give_two_findings() {
        let f = findings(
            "stage \"a\" uses=\"x/post\"\nstage \"b\" uses=\"x/post\"\nstage \"c\" uses=\"x/post\"\n",
        );
        assert_eq!(f.len(), 2, "{f:?}");
    }

    #[test]
    fn exclusive_conditions_publish_once() {
        let f = findings(
            "stage \"a\" uses=\"x/post\" when=\"review.done\"\nstage \"b\" uses=\"x/post\" when=\"!review.done\"\n",
        );
        assert!(f.is_empty(), "{f:?}");
        let f = findings(
            "stage \"a\" uses=\"x/post\" when=\"review.done\"\nstage \"b\" uses=\"x/post\" when=\"review.ok\"\n",
        );
        assert_eq!(f.len(), 1, "{f:?}");
    }

    #[test]
    fn an_allow_on_the_second_publisher_covers_it() {
        let mut registry = Registry::with_builtins();
        registry.register(StageContract::new("x/post", "publishes").effect(Effect::Publishes));
        let bare = "pipeline \"p\"\nstage \"a\" uses=\"x/post\"\nstage \"b\" uses=\"x/post\"\n";
        let compiled =
            compile(Source::new("t.kdl", bare), &registry, &Default::default()).expect("compiles");
        let id = run_checks(&compiled, &registry, CheckOptions::default())
            .iter()
            .find(|f| f.check == "duplicate-publisher")
            .map(|f| f.id())
            .expect("a finding");
        let text = format!(
            "pipeline \"p\"\nstage \"a\" uses=\"x/post\"\nstage \"b\" uses=\"x/post\" {{\n    allow \"duplicate-publisher\" finding=\"{id}\" reason=\"b posts to a forge of its own\"\n}}\n"
        );
        let text = text.as_str();
        let compiled =
            compile(Source::new("t.kdl", text), &registry, &Default::default()).expect("compiles");
        let f: Vec<_> = run_checks(&compiled, &registry, CheckOptions::default())
            .into_iter()
            .filter(|f| f.check == "duplicate-publisher")
            .collect();
        assert_eq!(f.len(), 1);
        assert!(f[0].suppressed.is_some());
    }
}
