//! Lowering: a parsed KDL document → the typed [`Pipeline`], checked against the stage
//! contracts. Lowering never stops at the first problem: it records a [`Fact`] and goes on, so
//! one pass reports everything.

mod entries;
mod fact;
mod stage;
mod top;
mod trigger;

pub use fact::Fact;

use kdl::{KdlDocument, KdlNode};

use crate::model::{Input, InputType, Pipeline};
use crate::registry::Registry;
use crate::source::Source;
use crate::span::{Span, Spanned};
use crate::suggest::did_you_mean;

/// Inputs every pipeline has, set by the forge at run time.
pub const BUILTIN_INPUTS: &[(&str, &str)] = &[
    (
        "repo",
        "the repository (`owner/name` on a hosted forge, the checkout's folder name locally)",
    ),
    (
        "change",
        "the change under review (the pull request number, or the local change id)",
    ),
    ("run", "the id of this run"),
];

const TOP_LEVEL: &[&str] = &[
    "pipeline",
    "input",
    "secret",
    "forge",
    "store",
    "stage",
    "allow",
    "trusted",
    "isolation",
    "trigger",
];

pub struct Lowerer<'s> {
    source: &'s Source,
    registry: &'s Registry,
    facts: Vec<Fact>,
    pipeline: Pipeline,
    names: rustc_hash::FxHashMap<(&'static str, String), Span>,
    /// The stage being lowered's `needs`, for duplicates in one look-up each (a stage may name
    /// thousands).
    stage_needs: rustc_hash::FxHashMap<String, Span>,
}

/// Lowers `doc` (parsed from `source`) into a pipeline, with everything noticed on the way.
pub fn lower(doc: &KdlDocument, source: &Source, registry: &Registry) -> (Pipeline, Vec<Fact>) {
    let mut lowerer = Lowerer {
        source,
        registry,
        facts: Vec::new(),
        pipeline: Pipeline::default(),
        names: rustc_hash::FxHashMap::default(),
        stage_needs: rustc_hash::FxHashMap::default(),
    };
    for (name, _) in BUILTIN_INPUTS {
        lowerer.pipeline.inputs.push(Input {
            name: Spanned::new((*name).into(), Span::default()),
            env: None,
            ty: Spanned::new(InputType::String, Span::default()),
            pattern: None,
            default: None,
            builtin: true,
        });
    }
    lowerer.pipeline.stages.reserve(doc.nodes().len());
    let mut pipeline_span = None;
    for node in doc.nodes() {
        let name_span: Span = node.name().span().into();
        match node.name().value() {
            "pipeline" => {
                if let Some(first) = pipeline_span {
                    lowerer.fact(Fact::Duplicate {
                        span: name_span,
                        first,
                        what: "`pipeline` node".into(),
                        name: "pipeline".into(),
                    });
                    continue;
                }
                pipeline_span = Some(name_span);
                lowerer.lower_pipeline(node);
            }
            "input" => lowerer.lower_input(node),
            "secret" => lowerer.lower_secret(node),
            "forge" => lowerer.lower_forge(node),
            "store" => lowerer.lower_store(node),
            "stage" => lowerer.lower_stage(node),
            "isolation" => lowerer.lower_isolation(node),
            "trigger" => lowerer.lower_trigger(node),
            "allow" => {
                if let Some(allow) = lowerer.lower_allow(node) {
                    lowerer.pipeline.allows.push(allow);
                }
            }
            "trusted" => {
                if let Some(trusted) = lowerer.lower_trusted(node) {
                    lowerer.pipeline.trusted.push(trusted);
                }
            }
            other => lowerer.fact(Fact::UnknownNode {
                span: name_span,
                name: other.into(),
                context: "the top level".into(),
                candidates: did_you_mean(other, TOP_LEVEL.iter().copied()),
            }),
        }
    }
    if pipeline_span.is_none() {
        lowerer.fact(Fact::Missing {
            span: Span::new(0, 0),
            what: "a `pipeline \"name\"` node".into(),
            node: "the file".into(),
            help: Some("start the file with `pipeline \"review\"`".into()),
        });
    }
    lowerer.environment_names();
    lowerer.pipeline.index();
    (lowerer.pipeline, lowerer.facts)
}

impl<'s> Lowerer<'s> {
    pub fn fact(&mut self, fact: Fact) {
        self.facts.push(fact);
    }

    /// Registers a declared name; a second declaration of the same kind is a duplicate.
    fn declare(&mut self, kind: &'static str, name: &Spanned<String>) -> bool {
        match self.names.get(&(kind, name.value.clone())) {
            Some(&first) => {
                self.fact(Fact::Duplicate {
                    span: name.span,
                    first,
                    what: format!("{kind} `{}`", name.value),
                    name: name.value.clone(),
                });
                false
            }
            None => {
                self.names.insert((kind, name.value.clone()), name.span);
                true
            }
        }
    }

    /// The single name argument of a declaration (`stage "name"`).
    fn name_arg(
        &mut self,
        node: &KdlNode,
        args: &[&kdl::KdlEntry],
        what: &str,
    ) -> Option<Spanned<String>> {
        let node_span: Span = node.name().span().into();
        match args {
            [] => {
                self.fact(Fact::Missing {
                    span: node_span,
                    what: "a name".into(),
                    node: what.into(),
                    help: Some(format!("write `{} \"name\"`", node.name().value())),
                });
                None
            }
            [first, rest @ ..] => {
                for extra in rest {
                    self.fact(Fact::TypeMismatch {
                        span: self.value_span(extra),
                        what: what.to_string(),
                        expected: "one name argument".into(),
                        found: "another argument".into(),
                        help: Some("properties are written `key=value`".into()),
                    });
                }
                let name = self.expect_string(first, &format!("the name of {what}"))?;
                if !is_identifier(&name.value) {
                    self.fact(Fact::TypeMismatch {
                        span: name.span,
                        what: format!("the name of {what}"),
                        expected: "a name of ASCII letters, digits, `-` and `_`, starting with an ASCII letter"
                            .into(),
                        found: format!("\"{}\"", name.value),
                        help: None,
                    });
                    return None;
                }
                Some(name)
            }
        }
    }

    /// Reports every child of a node that takes none.
    fn no_children(&mut self, node: &KdlNode, context: &str) {
        if let Some(children) = node.children() {
            for child in children.nodes() {
                self.fact(Fact::UnknownNode {
                    span: child.name().span().into(),
                    name: child.name().value().into(),
                    context: context.into(),
                    candidates: Vec::new(),
                });
            }
        }
    }
}

/// Names of stages, secrets, stores and inputs: they appear in references and templates.
pub fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        && s.len() <= 64
}
