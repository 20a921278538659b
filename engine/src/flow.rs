//! Information-flow labels: every value carries `secret(k)`, `private` and `untrusted` labels.
//! They are propagated once over the DAG in topological order, using each stage contract's
//! rules (propagate / add / remove); `run` stages are opaque (every output carries every input
//! label and every secret the stage holds). Only data references (children) carry labels;
//! `when` conditions decide whether a stage runs and are the fail-closed check's business.
//!
//! The analysis is one pass: labels are small bitsets, so 10,000 stages with 1,000 secrets cost
//! a few milliseconds. Paths for findings are rebuilt afterwards, only for what is reported.

use std::collections::HashMap;

use crate::contract::{Effect, LabelAdd, LabelKind, Propagate, Role, StageContract};
use crate::finding::Label;
use crate::graph::{Dag, outputs_of};
use crate::model::{Pipeline, Reference, Stage, Value};
use crate::registry::Registry;
use crate::span::Span;

/// A set of labels. Secrets are bits indexed like `Pipeline::secrets`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSet {
    pub untrusted: bool,
    pub private: bool,
    secrets: Vec<u64>,
}

impl LabelSet {
    pub fn union_with(&mut self, other: &LabelSet) {
        self.untrusted |= other.untrusted;
        self.private |= other.private;
        if self.secrets.len() < other.secrets.len() {
            self.secrets.resize(other.secrets.len(), 0);
        }
        for (a, b) in self.secrets.iter_mut().zip(&other.secrets) {
            *a |= b;
        }
    }

    pub fn add_secret(&mut self, index: usize) {
        let word = index / 64;
        if self.secrets.len() <= word {
            self.secrets.resize(word + 1, 0);
        }
        self.secrets[word] |= 1 << (index % 64);
    }

    pub fn has_secret(&self, index: usize) -> bool {
        self.secrets
            .get(index / 64)
            .is_some_and(|w| w & (1 << (index % 64)) != 0)
    }

    pub fn secrets(&self) -> impl Iterator<Item = usize> + '_ {
        self.secrets.iter().enumerate().flat_map(|(w, &bits)| {
            (0..64)
                .filter(move |b| bits & (1 << b) != 0)
                .map(move |b| w * 64 + b)
        })
    }

    pub fn has(&self, label: Kind) -> bool {
        match label {
            Kind::Untrusted => self.untrusted,
            Kind::Private => self.private,
            Kind::Secret(i) => self.has_secret(i),
        }
    }

    fn remove(&mut self, kind: LabelKind) {
        match kind {
            LabelKind::Untrusted => self.untrusted = false,
            LabelKind::Private => self.private = false,
            LabelKind::Secret => self.secrets.clear(),
        }
    }
}

/// One label, for path finding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Untrusted,
    Private,
    Secret(usize),
}

/// One value a stage reads: where, through which child, and what it carries.
#[derive(Clone, Debug)]
pub struct Input {
    pub child: usize,
    pub role: Role,
    pub reference: Reference,
    /// The reference is interpolated into a string (a template), not passed whole.
    pub interpolated: bool,
    pub span: Span,
    pub labels: LabelSet,
}

/// The result of the analysis, by stage index.
#[derive(Clone, Debug, Default)]
pub struct Flow {
    /// Secrets each stage holds (indices into `Pipeline::secrets`).
    pub held: Vec<Vec<usize>>,
    /// Every data reference of each stage, with its labels.
    pub inputs: Vec<Vec<Input>>,
    /// Labels of each output, by stage (a stage has a handful of outputs: a list beats a map).
    pub outputs: Vec<Vec<(String, LabelSet)>>,
    /// Labels each output got from the stage itself (not propagated), by stage.
    added: Vec<Vec<(String, LabelSet)>>,
}

impl Flow {
    /// Propagates labels over the DAG. Needs an order (no cycles); unknown references carry
    /// nothing (they are reported elsewhere).
    pub fn compute(pipeline: &Pipeline, registry: &Registry, dag: &Dag) -> Option<Self> {
        let outputs: Vec<_> = pipeline
            .stages
            .iter()
            .map(|s| outputs_of(s, registry))
            .collect();
        Self::compute_with(pipeline, registry, dag, &outputs)
    }

    /// [`Flow::compute`] with each stage's outputs already known.
    pub fn compute_with(
        pipeline: &Pipeline,
        registry: &Registry,
        dag: &Dag,
        stage_outputs: &[Vec<(String, crate::contract::OutputType)>],
    ) -> Option<Self> {
        let order = dag.order.as_ref()?;
        let n = pipeline.stages.len();
        let secret_index: HashMap<&str, usize> = pipeline
            .secrets
            .iter()
            .enumerate()
            .map(|(i, s)| (s.name.value.as_str(), i))
            .collect();
        let mut flow = Flow {
            held: vec![Vec::new(); n],
            inputs: vec![Vec::new(); n],
            outputs: vec![Vec::new(); n],
            added: vec![Vec::new(); n],
        };
        for &i in order {
            let stage = &pipeline.stages[i];
            let contract = registry.get(&stage.uses.value);
            flow.held[i] = held_secrets(pipeline, stage, contract, &secret_index);
            let mut inputs = Vec::new();
            for (c, child) in stage.children.iter().enumerate() {
                let role = contract
                    .and_then(|k| k.child_spec(&child.name.value))
                    .map_or(Role::Data, |s| s.role);
                for value in child.values() {
                    let mut refs = Vec::new();
                    value.value.collect_references(&mut refs);
                    let interpolated = matches!(value.value, Value::Template(_));
                    for r in refs {
                        let labels = dag
                            .stage_index(&r.stage)
                            .and_then(|p| lookup(&flow.outputs[p], &r.output))
                            .cloned()
                            .unwrap_or_default();
                        inputs.push(Input {
                            child: c,
                            role,
                            reference: r.clone(),
                            interpolated,
                            span: r.span,
                            labels,
                        });
                    }
                }
            }
            let mut all_in = LabelSet::default();
            for input in &inputs {
                all_in.union_with(&input.labels);
            }
            let mut held_set = LabelSet::default();
            for &k in &flow.held[i] {
                held_set.add_secret(k);
            }
            for (name, _) in stage_outputs[i].iter().cloned() {
                let (mut labels, added) = match contract {
                    None => (LabelSet::default(), LabelSet::default()),
                    Some(k) if k.opaque => {
                        let mut l = all_in.clone();
                        l.union_with(&held_set);
                        (l, held_set.clone())
                    }
                    Some(k) => match k.output_spec(&name) {
                        None => (LabelSet::default(), LabelSet::default()),
                        Some(spec) => {
                            let mut l = match &spec.labels.propagate {
                                Propagate::All => all_in.clone(),
                                Propagate::None => LabelSet::default(),
                                Propagate::Children(names) => {
                                    let mut l = LabelSet::default();
                                    for input in &inputs {
                                        if names.contains(&stage.children[input.child].name.value) {
                                            l.union_with(&input.labels);
                                        }
                                    }
                                    l
                                }
                            };
                            let mut added = LabelSet::default();
                            for a in &spec.labels.adding {
                                match a {
                                    LabelAdd::Untrusted => added.untrusted = true,
                                    LabelAdd::Private => added.private = true,
                                    LabelAdd::HeldSecrets => added.union_with(&held_set),
                                }
                            }
                            l.union_with(&added);
                            for &kind in &spec.labels.removing {
                                l.remove(kind);
                            }
                            (l, added)
                        }
                    },
                };
                if name == "ok" {
                    labels = LabelSet::default();
                }
                flow.added[i].push((name.clone(), added));
                flow.outputs[i].push((name, labels));
            }
            flow.inputs[i] = inputs;
        }
        Some(flow)
    }

    /// The labels of output `output` of stage `stage`.
    pub fn output(&self, stage: usize, output: &str) -> Option<&LabelSet> {
        lookup(&self.outputs[stage], output)
    }

    /// The path by which `kind` reaches input `input` of stage `stage`: source first, the
    /// consuming reference last. Each step is a label pointing into the file.
    pub fn path(
        &self,
        pipeline: &Pipeline,
        dag: &Dag,
        stage: usize,
        input: &Input,
        kind: Kind,
    ) -> Vec<Label> {
        let mut steps = Vec::new();
        let mut current = input.reference.clone();
        let mut consumer = stage;
        // Each hop moves to a producer strictly earlier in the DAG, so this ends.
        for _ in 0..=pipeline.stages.len() {
            steps.push(Label::new(
                current.span,
                format!(
                    "`{}` reads `{current}`",
                    pipeline.stages[consumer].name.value
                ),
            ));
            let Some(p) = dag.stage_index(&current.stage) else {
                break;
            };
            let added_here = lookup(&self.added[p], &current.output).is_some_and(|a| a.has(kind));
            if added_here {
                steps.push(Label::new(
                    pipeline.stages[p].name.span,
                    source_message(pipeline, p, &current.output, kind),
                ));
                break;
            }
            let Some(next) = self.inputs[p].iter().find(|i| i.labels.has(kind)) else {
                steps.push(Label::new(
                    pipeline.stages[p].name.span,
                    format!("`{}` produces `{current}`", pipeline.stages[p].name.value),
                ));
                break;
            };
            consumer = p;
            current = next.reference.clone();
        }
        steps.reverse();
        steps
    }
}

fn lookup<'a>(list: &'a [(String, LabelSet)], name: &str) -> Option<&'a LabelSet> {
    list.iter().find(|(n, _)| n == name).map(|(_, l)| l)
}

fn source_message(pipeline: &Pipeline, stage: usize, output: &str, kind: Kind) -> String {
    let name = &pipeline.stages[stage].name.value;
    match kind {
        Kind::Untrusted => format!("`{name}.{output}` comes from the change (untrusted)"),
        Kind::Private => format!("`{name}.{output}` is private"),
        Kind::Secret(k) => format!("`{name}` holds secret `{}`", pipeline.secrets[k].name.value),
    }
}

/// The secrets a stage holds: those it names in a secret slot, and the forge token when it
/// talks to a GitHub forge and may see the token.
fn held_secrets(
    pipeline: &Pipeline,
    stage: &Stage,
    contract: Option<&StageContract>,
    index: &HashMap<&str, usize>,
) -> Vec<usize> {
    let mut held: Vec<usize> = stage
        .secrets_named()
        .iter()
        .filter_map(|s| index.get(s.value).copied())
        .collect();
    if let (Some(token), Some(c)) = (forge_token(pipeline), contract)
        && uses_forge(c)
        && let Some(&k) = index.get(token)
    {
        let visible = pipeline.secrets[k]
            .visible_to
            .iter()
            .any(|v| v.value == stage.name.value);
        if visible {
            held.push(k);
        }
    }
    held.sort_unstable();
    held.dedup();
    held
}

/// The forge's token secret, if its kind takes one and the pipeline names it.
pub fn forge_token(pipeline: &Pipeline) -> Option<&str> {
    let forge = pipeline.forge.as_ref()?;
    forge.token.as_ref().map(|t| t.value.as_str())
}

/// Stages that read from or write to the forge or a store need the forge's token.
pub fn uses_forge(contract: &StageContract) -> bool {
    contract.has_effect(Effect::Reads) || contract.has_effect(Effect::Publishes)
}
