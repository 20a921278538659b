//! Information-flow labels: every value carries `secret(k)`, `private` and `untrusted` labels.
//! They are propagated once over the DAG in topological order, using each stage contract's
//! rules (propagate / add / remove); `run` stages are opaque (every output carries every input
//! label and every secret the stage holds). Only data references (children) carry labels;
//! `when` conditions decide whether a stage runs and are the fail-closed check's business.
//!
//! A folder is a value too. A stage that runs an arbitrary program may write an absolute path a
//! pipeline input names in its command line, environment or working directory (`run` grants it),
//! and every other stage that runs a program and names that input reads what it left there, in
//! whatever order they run: the folder is an output of the writer that nobody declared. What it
//! holds is unknown, so it is untrusted, and it carries every label of the writer's outputs.
//!
//! The analysis is one pass: labels are small bitsets, so 10,000 stages with 1,000 secrets cost
//! a few milliseconds. Shared folders join stages the order does not, so a pipeline with one is
//! propagated again until what the folders hold stops growing (twice, in practice; after
//! [`REFINING_PASSES`], every folder is taken to hold what any does, which only adds labels and
//! ends in as many passes as there are labels). A folder is one value, whatever the number of
//! its writers and readers, so the analysis stays linear in the file. Paths for findings are
//! rebuilt afterwards, only for what is reported.

use std::collections::HashMap;

use crate::code::{Fetched, INTERPRETERS, base_name};
use crate::contract::{Effect, LabelAdd, LabelKind, Propagate, Role, StageContract};
use crate::finding::Label;
use crate::graph::{Dag, outputs_of};
use crate::model::{InputType, Pipeline, Reference, Stage, Value};
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
    /// Set when the value is a folder another stage may write: `reference` is then
    /// `<writer>.{<input>}`, which no stage declares.
    pub folder: Option<Folder>,
    /// Set when the value is a pipeline input read from the environment whose type and pattern
    /// admit more than a name ([`crate::admits`]): `reference` is then `{<input>}` (no stage).
    pub outside: Option<Outside>,
}

/// A pipeline input read from the environment that can hold more than a name: attacker text
/// (principle 1), unless the pipeline vouches for it (`trusted "input" name=…`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outside {
    pub input: String,
    /// Where the input is declared.
    pub declared: Span,
    /// The variable it is read from.
    pub env: String,
    /// What the shape lets through, for the path's first step (`/`, a space, …).
    pub admits: String,
    /// The `trusted "input"` that vouches for it, and its reason: the label is lifted, and a
    /// finding it would have caused is shown as allowed.
    pub trusted: Option<(Span, String)>,
    /// Its variable is one the change's author writes (the forge's `authored`): no pattern and
    /// no `trusted` makes it the pipeline's.
    pub by_author: bool,
}

impl Outside {
    /// How to fix a finding it causes, with `instead` the other way out.
    pub fn fix(&self, instead: &str) -> String {
        if self.by_author {
            format!(
                "read input `{}` from a variable the pipeline's owners set (a repository variable), or write it in the file: `${}` is written by the change's author, and a name chooses whatever its pattern admits; or {instead}",
                self.input, self.env
            )
        } else {
            format!(
                "give input `{}` a `pattern` that admits only a name (a letter or digit, then letters, digits, `-`, `_`, `.`), or {instead}; if what sets `${}` is the pipeline's own, say so: `trusted \"input\" name=\"{}\" reason=\"…\"`",
                self.input, self.env, self.input
            )
        }
    }

    /// The suppression its `trusted "input"` gives a finding it would have caused, if any.
    pub fn lifted(&self) -> Option<crate::finding::Suppression> {
        self.trusted
            .as_ref()
            .map(|(span, reason)| crate::finding::Suppression {
                span: *span,
                reason: format!("trusted input `{}`: {reason}", self.input),
            })
    }
}

/// A folder named by a pipeline input, which other stages may write and the reading stage names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Folder {
    /// The pipeline input that names it.
    pub input: String,
    /// The first other stage that may write it (all of them: [`Flow::writers`]).
    pub writer: usize,
    /// Where that writer names it.
    pub granted: Span,
    /// The reading stage may write it too: the flow runs both ways.
    pub both_write: bool,
}

/// Passes over a pipeline with shared folders before every folder is taken to hold what any
/// does.
const REFINING_PASSES: usize = 4;

/// The result of the analysis, by stage index.
#[derive(Clone, Debug, Default)]
pub struct Flow {
    /// Secrets each stage holds (indices into `Pipeline::secrets`).
    pub held: Vec<Vec<usize>>,
    /// Of those, the secrets each stage's program holds: all but a model's credential the run
    /// keeps behind its proxy ([`LabelAdd::ProgramSecrets`]).
    pub program_held: Vec<Vec<usize>>,
    /// Every data reference of each stage, with its labels.
    pub inputs: Vec<Vec<Input>>,
    /// Labels of each output, by stage (a stage has a handful of outputs: a list beats a map).
    pub outputs: Vec<Vec<(String, LabelSet)>>,
    /// Labels each output got from the stage itself (not propagated), by stage; a folder it may
    /// write is there as `{input}`.
    added: Vec<Vec<(String, LabelSet)>>,
    /// Outputs that carry what the stage's program holds ([`LabelAdd::ProgramSecrets`]), by
    /// stage.
    program_outputs: Vec<Vec<String>>,
    /// What each stage may leave in a folder it may write: every label its outputs would carry.
    writes: Vec<LabelSet>,
    folders: Folders,
    /// What each folder may hold: what its writers may leave, by folder.
    held_in: Vec<LabelSet>,
    /// By stage: the files of the checkout it runs ([`checkout_programs`]), whether or not the
    /// pipeline vouches for the checkout.
    pub checkout_runs: Vec<Vec<CheckoutRun>>,
    /// By stage: the tree of files a reviewer's program works in ([`world_of`]).
    pub worlds: Vec<Option<World>>,
    /// By stage: it runs the pipeline's own program with `network`: what that program prints
    /// may be what it fetched, from outside the file (principle 1).
    pub fetches: Vec<bool>,
    /// By stage: the code it runs that a registry or a server chooses when it runs
    /// ([`crate::code::fetched`]), with where the file names it.
    pub fetched: Vec<Vec<(Fetched, Span)>>,
    /// The pipeline vouches for the checkout (`trusted "checkout"`): what it runs from there
    /// carries no label.
    checkout_trusted: bool,
    /// The pipeline inputs read from the environment that can hold more than a name, by name.
    outside: HashMap<String, Outside>,
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
        let folders = Folders::of(pipeline, registry);
        let mut flow = Flow {
            held: vec![Vec::new(); n],
            inputs: vec![Vec::new(); n],
            outputs: vec![Vec::new(); n],
            added: vec![Vec::new(); n],
            program_outputs: vec![Vec::new(); n],
            program_held: vec![Vec::new(); n],
            writes: vec![LabelSet::default(); n],
            held_in: vec![LabelSet::default(); folders.names.len()],
            folders,
            checkout_runs: pipeline
                .stages
                .iter()
                .map(|s| {
                    registry
                        .get(&s.uses.value)
                        .map(|c| checkout_programs(s, c))
                        .unwrap_or_default()
                })
                .collect(),
            fetches: pipeline
                .stages
                .iter()
                .map(|s| {
                    !s.network.is_empty() && registry.get(&s.uses.value).is_some_and(|c| c.opaque)
                })
                .collect(),
            fetched: pipeline
                .stages
                .iter()
                .map(|s| {
                    registry
                        .get(&s.uses.value)
                        .map(|c| fetched_code(s, c, &commit_of(pipeline, registry)))
                        .unwrap_or_default()
                })
                .collect(),
            worlds: pipeline
                .stages
                .iter()
                .map(|s| registry.get(&s.uses.value).and_then(|c| world_of(s, c)))
                .collect(),
            checkout_trusted: registry.checkout_vouched(pipeline).is_some(),
            outside: outside_inputs(pipeline, registry),
        };
        for &i in order {
            let stage = &pipeline.stages[i];
            flow.held[i] = held_secrets(
                pipeline,
                stage,
                registry.get(&stage.uses.value),
                &secret_index,
            );
        }
        // Each pass reads what the writers left in the pass before (or earlier in this one), so
        // what the folders hold only grows. Past the refining passes every folder holds the
        // union of all: each further pass then grows that union or is the last.
        let mut passes = 0;
        loop {
            let before = flow.held_in.clone();
            for &i in order {
                flow.propagate(pipeline, registry, dag, stage_outputs, i);
            }
            if flow.held_in == before {
                break;
            }
            passes += 1;
            if passes >= REFINING_PASSES {
                let mut all = LabelSet::default();
                for held in &flow.held_in {
                    all.union_with(held);
                }
                for held in &mut flow.held_in {
                    held.clone_from(&all);
                }
            }
        }
        Some(flow)
    }

    /// Computes the inputs and outputs of stage `i` from its producers' outputs and from what the
    /// writers of the folders it names may leave there.
    fn propagate(
        &mut self,
        pipeline: &Pipeline,
        registry: &Registry,
        dag: &Dag,
        stage_outputs: &[Vec<(String, crate::contract::OutputType)>],
        i: usize,
    ) {
        let stage = &pipeline.stages[i];
        let contract = registry.get(&stage.uses.value);
        let reads_folders = contract.is_some_and(runs_program);
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
                        .and_then(|p| lookup(&self.outputs[p], &r.output))
                        .cloned()
                        .unwrap_or_default();
                    inputs.push(Input {
                        child: c,
                        role,
                        reference: r.clone(),
                        interpolated,
                        span: r.span,
                        labels,
                        folder: None,
                        outside: None,
                    });
                }
                let Value::Template(template) = &value.value else {
                    continue;
                };
                for (name, span) in template.inputs() {
                    let Some(outside) = self.outside.get(name) else {
                        continue;
                    };
                    // A folder other stages may write is reported as that (below): one cause.
                    let shared = reads_folders
                        && self
                            .folders
                            .index(name)
                            .is_some_and(|f| self.folders.writers[f].iter().any(|&(w, _)| w != i));
                    if shared {
                        continue;
                    }
                    let labels = LabelSet {
                        untrusted: outside.trusted.is_none(),
                        ..LabelSet::default()
                    };
                    inputs.push(Input {
                        child: c,
                        role,
                        reference: Reference {
                            stage: String::new(),
                            output: name.to_string(),
                            span,
                        },
                        interpolated: true,
                        span,
                        labels,
                        folder: None,
                        outside: Some(outside.clone()),
                    });
                }
                if !reads_folders {
                    continue;
                }
                for (name, span) in template.inputs() {
                    let Some(f) = self.folders.index(name) else {
                        continue;
                    };
                    let writers = &self.folders.writers[f];
                    let Some(&(w, granted)) = writers.iter().find(|&&(w, _)| w != i) else {
                        continue;
                    };
                    // What the stage itself leaves there is among what the folder holds: it
                    // reads nothing new in it, and what the others leave is untrusted anyway.
                    let mut labels = self.held_in[f].clone();
                    labels.untrusted = true;
                    inputs.push(Input {
                        child: c,
                        role,
                        reference: Reference {
                            stage: pipeline.stages[w].name.value.clone(),
                            output: folder_output(name),
                            span,
                        },
                        interpolated: true,
                        span,
                        labels,
                        folder: Some(Folder {
                            input: name.to_string(),
                            writer: w,
                            granted,
                            both_write: writers.iter().any(|&(x, _)| x == i),
                        }),
                        outside: None,
                    });
                }
            }
        }
        let mut all_in = LabelSet::default();
        for input in &inputs {
            all_in.union_with(&input.labels);
        }
        let mut held_set = LabelSet::default();
        for &k in &self.held[i] {
            held_set.add_secret(k);
        }
        let mut program_set = LabelSet::default();
        self.program_held[i] = program_secrets(pipeline, stage, contract, &self.held[i]);
        for &k in &self.program_held[i] {
            program_set.add_secret(k);
        }
        self.outputs[i].clear();
        self.added[i].clear();
        let mut program_outputs = Vec::new();
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
                                LabelAdd::ProgramSecrets => {
                                    added.union_with(&program_set);
                                    program_outputs.push(name.clone());
                                }
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
            let added = self.add_checkout_label(i, contract, &name, &mut labels, added);
            if name == "ok" {
                labels = LabelSet::default();
            }
            self.added[i].push((name.clone(), added));
            self.outputs[i].push((name, labels));
        }
        self.program_outputs[i] = program_outputs;
        // What the stage may leave in a folder: what an opaque output of it would carry.
        let granted = self.folders.granted_to(i);
        if !granted.is_empty() {
            let mut leaves = all_in;
            leaves.untrusted |= self.runs_untrusted_checkout(i);
            leaves.union_with(&held_set);
            self.writes[i].union_with(&leaves);
            let mut added = held_set;
            added.untrusted = true;
            for f in granted {
                self.held_in[f].union_with(&leaves);
                self.added[i].push((folder_output(&self.folders.names[f]), added.clone()));
            }
        }
        self.inputs[i] = inputs;
    }

    /// The stages that may write the folder input `input` names, with where they name it, in
    /// file order (none when it names no shared folder).
    pub fn writers(&self, input: &str) -> &[(usize, Span)] {
        self.folders
            .index(input)
            .map_or(&[], |f| self.folders.writers[f].as_slice())
    }

    /// The pipeline input `name`, when it is read from the environment and can hold more than a
    /// name (whether or not the pipeline vouches for it).
    pub fn outside(&self, name: &str) -> Option<&Outside> {
        self.outside.get(name)
    }

    /// Whether stage `i` runs a file of the checkout and the pipeline does not vouch for it.
    pub fn runs_untrusted_checkout(&self, i: usize) -> bool {
        !self.checkout_trusted && self.checkout_runs.get(i).is_some_and(|r| !r.is_empty())
    }

    /// The tree stage `i`'s program works in, when what it reads there is untrusted: a
    /// commit's (whatever the checkout is), or the checkout the pipeline does not vouch for.
    pub fn untrusted_world(&self, i: usize) -> Option<&World> {
        self.worlds
            .get(i)?
            .as_ref()
            .filter(|w| !(self.checkout_trusted && **w == World::Checkout))
    }

    /// Principle 1: what a program from the checkout writes is the change's. Every output of
    /// stage `i` whose labels follow its inputs (an opaque stage's, a reviewer's comment) is
    /// untrusted when it runs a file of the checkout; returns the labels the stage adds.
    fn add_checkout_label(
        &self,
        i: usize,
        contract: Option<&StageContract>,
        output: &str,
        labels: &mut LabelSet,
        mut added: LabelSet,
    ) -> LabelSet {
        if !self.runs_untrusted_checkout(i)
            && self.untrusted_world(i).is_none()
            && !self.fetches.get(i).copied().unwrap_or(false)
            && self.fetched.get(i).is_none_or(Vec::is_empty)
        {
            return added;
        }
        let follows_inputs = contract.is_some_and(|k| {
            k.opaque
                || k.output_spec(output)
                    .is_some_and(|o| !matches!(o.labels.propagate, Propagate::None))
        });
        if follows_inputs {
            labels.untrusted = true;
            added.untrusted = true;
        }
        added
    }

    /// The first step of a path whose label stage `p` added by running a file of the checkout.
    fn checkout_source(&self, pipeline: &Pipeline, p: usize, kind: Kind) -> Option<String> {
        if kind != Kind::Untrusted {
            return None;
        }
        let name = &pipeline.stages[p].name.value;
        if self.runs_untrusted_checkout(p)
            && let Some(run) = self.checkout_runs[p].first()
        {
            return Some(format!(
                "`{name}` {} (untrusted: in CI, the pull request's own)",
                run.describe()
            ));
        }
        if let Some((code, _)) = self.fetched.get(p).and_then(|f| f.first()) {
            return Some(format!(
                "`{name}` {} (untrusted: from outside the file)",
                code.describe()
            ));
        }
        if self.fetches.get(p).copied().unwrap_or(false) && self.untrusted_world(p).is_none() {
            return Some(format!(
                "`{name}` runs a program with network, which may print what it fetched (untrusted: from outside the file)"
            ));
        }
        match self.untrusted_world(p)? {
            World::Checkout => Some(format!(
                "`{name}`'s reviewer works in the checkout and reads its files (untrusted: in CI, the pull request's own)"
            )),
            World::Commit(commit) => Some(format!(
                "`{name}`'s reviewer works in the tree of `{commit}` and reads its files (untrusted: a commit's files are whoever wrote them, in CI the pull request's)"
            )),
        }
    }

    /// The first stage but `reader` that may write the folder `input` names and leave `kind`
    /// there: one that holds the secret before one that only read it.
    pub fn writer_with(&self, input: &str, reader: usize, kind: Kind) -> Option<usize> {
        let mut others = self
            .writers(input)
            .iter()
            .map(|&(w, _)| w)
            .filter(|&w| w != reader);
        match kind {
            Kind::Untrusted => others.next(),
            Kind::Secret(k) => {
                let others: Vec<usize> = others.collect();
                others
                    .iter()
                    .copied()
                    .find(|&w| self.held[w].contains(&k))
                    .or_else(|| others.iter().copied().find(|&w| self.writes[w].has(kind)))
            }
            Kind::Private => others.find(|&w| self.writes[w].has(kind)),
        }
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
        self.trace(pipeline, dag, stage, input, kind).0
    }

    /// The stage that gave `input` its label `kind` (the source of [`Flow::path`]), if the walk
    /// reaches one.
    pub fn origin(
        &self,
        pipeline: &Pipeline,
        dag: &Dag,
        stage: usize,
        input: &Input,
        kind: Kind,
    ) -> Option<usize> {
        self.trace(pipeline, dag, stage, input, kind).1
    }

    fn trace(
        &self,
        pipeline: &Pipeline,
        dag: &Dag,
        stage: usize,
        input: &Input,
        kind: Kind,
    ) -> (Vec<Label>, Option<usize>) {
        let mut origin = None;
        let mut steps = Vec::new();
        let mut current = input.reference.clone();
        let mut outside = input.outside.as_ref();
        let mut consumer = stage;
        // Each hop moves to a producer strictly earlier in the DAG, so this ends.
        for _ in 0..=pipeline.stages.len() {
            let reader = &pipeline.stages[consumer].name.value;
            if let Some(o) = outside {
                steps.push(Label::new(
                    current.span,
                    format!("`{reader}` reads input `{}`", o.input),
                ));
                steps.push(Label::new(o.declared, o.source_step()));
                break;
            }
            let step = if current.output.starts_with('{') {
                format!("`{reader}` reads the folder `{}` names", current.output)
            } else {
                format!("`{reader}` reads `{current}`")
            };
            steps.push(Label::new(current.span, step));
            let producer = match current
                .output
                .strip_prefix('{')
                .and_then(|o| o.strip_suffix('}'))
            {
                // A folder: the first other writer that may have left `kind` there.
                Some(input) => self.writer_with(input, consumer, kind),
                None => dag.stage_index(&current.stage),
            };
            let Some(p) = producer else {
                break;
            };
            let added_here = lookup(&self.added[p], &current.output).is_some_and(|a| a.has(kind));
            // A reviewer that read untrusted data and works in an untrusted tree: the data is
            // the clearer path.
            let world_only = kind == Kind::Untrusted
                && !self.runs_untrusted_checkout(p)
                && self.untrusted_world(p).is_some();
            let via_input = world_only && self.inputs[p].iter().any(|i| i.labels.has(kind));
            if added_here && !via_input {
                let message = self.checkout_source(pipeline, p, kind).unwrap_or_else(|| {
                    source_message(
                        pipeline,
                        p,
                        &current.output,
                        kind,
                        self.program_outputs[p].contains(&current.output),
                    )
                });
                steps.push(Label::new(pipeline.stages[p].name.span, message));
                origin = Some(p);
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
            outside = next.outside.as_ref();
        }
        steps.reverse();
        (steps, origin)
    }
}

impl Outside {
    /// The first step of a path from this input.
    pub fn source_step(&self) -> String {
        format!(
            "input `{}` is read from `${}`, and its type and pattern let it hold {}: attacker text (untrusted)",
            self.input, self.env, self.admits
        )
    }
}

/// Principle 1: the pipeline inputs read from the environment whose type and pattern admit more
/// than a name (a letter or digit, then letters, digits, `-`, `_`, `.`), and every one read from
/// a variable the change's author writes (the forge's `authored`: its head branch's name), whatever
/// its pattern. A builtin input is set by reviewflow in the forge's shape; an input with only a
/// `default` is written in the file.
fn outside_inputs(pipeline: &Pipeline, registry: &Registry) -> HashMap<String, Outside> {
    let mut out = HashMap::new();
    let authored = registry
        .forge_of(pipeline)
        .map_or(&[][..], |c| c.authored.as_slice());
    // A number, a boolean or a sha is no text: it names no file, word or command.
    let text = pipeline
        .inputs
        .iter()
        .filter(|i| !i.builtin && i.ty.value == InputType::String);
    for input in text {
        let Some(env) = &input.env else { continue };
        let admits = crate::admits::admits(input);
        // A name carries no code, but what the change's author writes still chooses: the
        // project reviewed, the prompt it is reviewed under (principle 1: a pattern limits what
        // a value holds, not who wrote it).
        let by_author = authored.contains(&env.value);
        if admits.only_names() && !by_author {
            continue;
        }
        // A pattern that is no regular expression is `type-mismatch`'s, and `run` refuses it
        // (asked second: a name's pattern is the common case, and compiled ones are cloned).
        if crate::inputs::compile_pattern(input).is_err() {
            continue;
        }
        out.insert(
            input.name.value.clone(),
            Outside {
                input: input.name.value.clone(),
                declared: input.name.span,
                env: env.value.clone(),
                admits: if admits.only_names() {
                    "only a name, but one the change's author chooses".to_owned()
                } else {
                    describe(&admits)
                },
                // What the change's author writes is not the pipeline's to vouch for.
                trusted: pipeline
                    .trusts_input(&input.name.value)
                    .filter(|_| !by_author)
                    .map(|t| (t.span, t.reason.value.trim().to_owned())),
                by_author,
            },
        );
    }
    out
}

/// A few characters of what `admits` lets through beyond a name, for a message.
fn describe(admits: &crate::admits::Admits) -> String {
    if admits.unknown {
        return "anything".to_owned();
    }
    let mut shown: Vec<String> = Vec::new();
    if admits.first.iter().any(|c| !c.is_ascii_alphanumeric()) {
        let c = admits
            .first
            .iter()
            .find(|c| !c.is_ascii_alphanumeric())
            .copied()
            .unwrap_or('-');
        shown.push(format!("a leading {}", show_char(c)));
    }
    for c in admits
        .anywhere
        .iter()
        .copied()
        .filter(|&c| !crate::admits::name_char(c))
        .take(3)
    {
        shown.push(show_char(c));
    }
    let more = admits
        .anywhere
        .iter()
        .filter(|&&c| !crate::admits::name_char(c))
        .count()
        .saturating_sub(3);
    if more > 0 {
        shown.push(format!("{more} more characters"));
    }
    shown.join(", ")
}

fn show_char(c: char) -> String {
    match c {
        ' ' => "a space".to_owned(),
        c if c.is_control() || !c.is_ascii() => format!("U+{:04X}", u32::from(c)),
        c => format!("`{c}`"),
    }
}

fn lookup<'a>(list: &'a [(String, LabelSet)], name: &str) -> Option<&'a LabelSet> {
    list.iter().find(|(n, _)| n == name).map(|(_, l)| l)
}

/// `program`: the output carries what the stage's program holds (a reviewer's comment), rather
/// than every secret the stage holds.
fn source_message(
    pipeline: &Pipeline,
    stage: usize,
    output: &str,
    kind: Kind,
    program: bool,
) -> String {
    let name = &pipeline.stages[stage].name.value;
    match kind {
        Kind::Untrusted if output.starts_with('{') => format!(
            "`{name}` may write the folder `{output}` names, which no stage declares (untrusted)"
        ),
        Kind::Untrusted => format!("`{name}.{output}` comes from the change (untrusted)"),
        Kind::Private => format!("`{name}.{output}` is private"),
        Kind::Secret(k) if program => format!(
            "`{name}`'s program holds secret `{}`, and a reviewer's `{output}` carries what its program holds",
            pipeline.secrets[k].name.value
        ),
        Kind::Secret(k) => format!("`{name}` holds secret `{}`", pipeline.secrets[k].name.value),
    }
}

/// The secrets a stage holds: those it names in a secret slot, and the forge token when it
/// talks to a hosted forge and may see the token.
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

/// Of the secrets `held` by `stage`, those its program holds: all but a credential of one of the
/// contract's reviewer kinds given under that credential's own variable (`secret-env
/// "ANTHROPIC_API_KEY" "anthropic-key"`), which the run keeps behind its proxy.
fn program_secrets(
    pipeline: &Pipeline,
    stage: &Stage,
    contract: Option<&StageContract>,
    held: &[usize],
) -> Vec<usize> {
    use crate::model::Value;
    // Only a kind that runs reviewers has credentials a proxy keeps.
    let kinds = contract.map(|c| c.reviewers()).unwrap_or_default();
    if held.is_empty() || kinds.iter().all(|k| k.credentials.is_empty()) {
        return held.to_vec();
    }
    let credentials: Vec<&str> = kinds
        .iter()
        .flat_map(|k| k.credentials.iter().copied())
        .collect();
    // A secret is behind the proxy only if every slot that names it does so under a credential.
    let proxied = |name: &str| {
        let mut slots = stage.children.iter().filter(|c| {
            contract
                .and_then(|k| k.child_spec(&c.name.value))
                .is_some_and(|s| s.role == crate::contract::Role::SecretSlot)
                && c.args
                    .iter()
                    .any(|a| matches!(&a.value, Value::Secret(s) if s == name))
        });
        let mut any = false;
        let all = slots.all(|c| {
            any = true;
            c.args.iter().any(|a| {
                a.value
                    .as_str()
                    .is_some_and(|var| credentials.contains(&var))
            })
        });
        any && all
    };
    held.iter()
        .copied()
        .filter(|&k| !proxied(&pipeline.secrets[k].name.value))
        .collect()
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

/// The name under which a folder named by input `input` is a writer's output: `{input}`, which
/// no declared output can be.
fn folder_output(input: &str) -> String {
    format!("{{{input}}}")
}

/// A stage whose kind runs a program: an arbitrary command (opaque), or a reviewer. Such a
/// program may open any path it is handed.
pub fn runs_program(contract: &StageContract) -> bool {
    contract.opaque || contract.has_effect(Effect::Executes)
}

/// The pipeline inputs, with where they are named, that stage `stage` may write at run time: an
/// arbitrary command (an opaque stage) is granted an absolute path that an input it interpolates
/// in an argument of its command line, environment or working directory names.
pub fn granted_inputs<'a>(stage: &'a Stage, contract: &StageContract) -> Vec<(&'a str, Span)> {
    if !contract.opaque {
        return Vec::new();
    }
    let mut out = Vec::new();
    for child in &stage.children {
        let role = contract
            .child_spec(&child.name.value)
            .map_or(Role::Data, |s| s.role);
        if !matches!(role, Role::CommandLine | Role::Environment | Role::Path) {
            continue;
        }
        for arg in &child.args {
            if let Value::Template(t) = &arg.value {
                out.extend(t.inputs());
            }
        }
    }
    out
}

/// The tree of files a reviewer's program works in, and so reads at will.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum World {
    /// The checkout (in CI, the pull request's files unless the job checks out the base).
    Checkout,
    /// The tree of the commit this reference names (`std/review`'s `workspace "gather.head"`):
    /// no `trusted "checkout"` vouches for it.
    Commit(String),
}

impl World {
    /// "the checkout", "the tree of `gather.head`".
    pub fn describe(&self) -> String {
        match self {
            World::Checkout => "the checkout".to_owned(),
            World::Commit(commit) => format!("the tree of `{commit}`"),
        }
    }
}

/// Principle 1: the tree a stage that runs a reviewer works in: the commit its contract's
/// working-tree child names ([`crate::contract::ChildSpec::working_tree`]), or else the
/// checkout.
pub fn world_of(stage: &Stage, contract: &StageContract) -> Option<World> {
    if contract.reviewer_kinds.is_empty() {
        return None;
    }
    let commit = stage.children.iter().find_map(|child| {
        let marked = contract
            .child_spec(&child.name.value)
            .is_some_and(|s| s.working_tree);
        marked.then(|| child.args.first()).flatten()
    });
    Some(match commit {
        Some(value) => World::Commit(match &value.value {
            Value::Reference(r) => r.to_string(),
            Value::String(s) => s.clone(),
            Value::Template(t) => t.source_text(),
            _ => "a commit".to_owned(),
        }),
        None => World::Checkout,
    })
}

/// A file of the checkout that a stage runs: its program, or the script its interpreter runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckoutRun {
    /// The path as the file writes it (`scripts/lint.sh`, `./tools/x`).
    pub path: String,
    /// Where the file names it.
    pub span: Span,
    /// How it is run.
    pub how: CheckoutHow,
}

/// How a stage runs a file of the checkout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CheckoutHow {
    /// It is the program, named by a relative path.
    Program,
    /// A bare program name, found first in this relative `PATH` entry.
    PathEntry(String),
    /// This interpreter runs it.
    Interpreter(String),
    /// This interpreter, given no script file (`-m`, `-c`, `-e`, or none), looks its modules
    /// up in its working folder first.
    Modules(String),
    /// A relative path in the value of this environment variable (`PYTHONPATH`,
    /// `NODE_OPTIONS`, …): whatever the program takes from it is the checkout's.
    Environment(String),
    /// The program (`path`) works in the checkout, and reads its folder's files by itself as
    /// most tools do (`npm` its `package.json` scripts and `.npmrc`, `make` its `Makefile`):
    /// which ones is the program's business, so every one is counted.
    WorkingFolder,
}

impl CheckoutRun {
    /// "runs `scripts/lint.sh` with `sh`, a file of the checkout".
    pub fn describe(&self) -> String {
        match &self.how {
            CheckoutHow::Program => format!("runs `{}`, a file of the checkout", self.path),
            CheckoutHow::PathEntry(entry) => format!(
                "runs `{}`, found through the relative `PATH` entry `{entry}`, a file of the checkout",
                self.path
            ),
            CheckoutHow::Interpreter(i) => {
                format!("runs `{}` with `{i}`, a file of the checkout", self.path)
            }
            CheckoutHow::Modules(_) => format!(
                "runs `{}`, which looks its modules up in its working folder, the checkout, first",
                self.path
            ),
            CheckoutHow::Environment(var) => {
                format!("takes `{}` from the checkout through `${var}`", self.path)
            }
            CheckoutHow::WorkingFolder => format!(
                "runs `{}` with the checkout as its working folder, where a program reads files by itself (its configuration, its build files, its modules)",
                self.path
            ),
        }
    }

    /// The first way out, for a help.
    pub fn fix(&self, stage: &str) -> String {
        match &self.how {
            CheckoutHow::Modules(i) if i.starts_with("python") || i.starts_with("pypy") => {
                format!(
                    "start `{i}` with `-I` (isolated: neither its working folder nor `PYTHONPATH` is on its module path) or `-P`, or run an installed script by its absolute path"
                )
            }
            CheckoutHow::Modules(i) => format!(
                "give `{i}` an installed script by its absolute path instead of code on its command line or input"
            ),
            CheckoutHow::Environment(var) => format!(
                "point `${var}` at an installed folder (an absolute path), or leave it out of `{stage}`"
            ),
            CheckoutHow::WorkingFolder => format!(
                "give `{stage}` a working folder the change did not write: `cwd \"{{work}}\"` (the stage's own folder) or an installed one (an absolute path)"
            ),
            _ => format!(
                "run a program installed outside the checkout (an absolute path, or a name found on `PATH`) in `{stage}`"
            ),
        }
    }

    /// What follows when the checkout is the change's.
    pub fn consequence(&self) -> &'static str {
        match &self.how {
            CheckoutHow::Environment(var) if var == "PATH" => {
                "every program the stage runs by name may be one its author wrote"
            }
            CheckoutHow::Environment(_) => {
                "a program may load its author's code from the path (as `PYTHONPATH` makes Python do)"
            }
            CheckoutHow::WorkingFolder => {
                "its author writes what the program reads there (a `.npmrc` whose `registry=` receives the token, a `Makefile`, a `package.json` script)"
            }
            _ => "its author's code runs with it",
        }
    }

    /// What the span it names is, for a label.
    pub fn label(&self) -> &'static str {
        match &self.how {
            CheckoutHow::Modules(_) => "modules looked up in the checkout, run as code",
            CheckoutHow::Environment(_) => "a path into the checkout",
            CheckoutHow::WorkingFolder => "a program that works in the checkout",
            _ => "a file of the checkout, run as code",
        }
    }
}

/// Extensions of a file an interpreter runs, for a script named without a folder (`lint.sh`).
const SCRIPT_EXTENSIONS: &[&str] = &[
    "sh", "bash", "zsh", "py", "js", "mjs", "cjs", "ts", "pl", "rb", "php", "lua", "r", "ps1",
    "tcl",
];

/// The files of the checkout that `stage` runs, in file order: the program of its command line
/// when that is a relative path, or a bare name found through a relative `PATH` entry; the script
/// an interpreter (`sh`, `python3`, …, through `env`) is given when that is a relative path. A `run` stage's working folder is the checkout
/// (or a relative `cwd` in it), and a reviewer's is the checkout: a relative path is the change's
/// own file there. What the program then reads by itself (`make` and its `Makefile`) is not seen.
pub fn checkout_programs(stage: &Stage, contract: &StageContract) -> Vec<CheckoutRun> {
    if !runs_program(contract) {
        return Vec::new();
    }
    let role_of = |name: &str| contract.child_spec(name).map(|s| s.role);
    // The working folder is the checkout unless it is shown to be elsewhere: an absolute path
    // written in the file, or the stage's own folder (`{work}`). A relative or interpolated one
    // may be the checkout (an input can name it: a runner's workspace variable).
    let in_checkout = !stage
        .children
        .iter()
        .filter(|c| c.name.value == "cwd" && role_of("cwd") == Some(Role::Path))
        .filter_map(|c| c.args.first())
        .any(|v| outside_the_checkout(&v.value));
    if !in_checkout {
        return Vec::new();
    }
    // An empty entry is the working folder too.
    let relative_path = stage
        .children
        .iter()
        .filter(|c| role_of(&c.name.value) == Some(Role::Environment))
        .filter(|c| {
            c.args
                .first()
                .is_some_and(|n| leading_literal(&n.value) == Some("PATH"))
        })
        .filter_map(|c| c.args.get(1))
        .find_map(|v| {
            let entry = leading_literal(&v.value)?
                .split(':')
                .find(|e| !e.starts_with('/') && !e.starts_with('{'))?;
            Some((if entry.is_empty() { "." } else { entry }, v.span))
        });
    let relative_path_entry = relative_path.map(|(entry, _)| entry);
    let mut out = Vec::new();
    // A relative path in any other variable's value: the program (or what it loads, such as
    // Python through `PYTHONPATH`, Node through `NODE_OPTIONS=--require ./x`) takes it from the
    // checkout. Which variables load code is the program's business: every one is counted.
    for child in stage
        .children
        .iter()
        .filter(|c| role_of(&c.name.value) == Some(Role::Environment))
    {
        let (Some(name), Some(value)) = (child.args.first(), child.args.get(1)) else {
            continue;
        };
        let Some(name) = leading_literal(&name.value) else {
            continue;
        };
        if name == "PATH" {
            continue;
        }
        let Some(text) = leading_literal(&value.value) else {
            continue;
        };
        if let Some(path) = relative_paths(text).next() {
            out.push(CheckoutRun {
                path: path.to_string(),
                span: value.span,
                how: CheckoutHow::Environment(name.to_string()),
            });
        }
    }
    for child in stage
        .children
        .iter()
        .filter(|c| role_of(&c.name.value) == Some(Role::CommandLine))
    {
        let words: Vec<(&str, Span)> = child
            .args
            .iter()
            .map(|a| (leading_literal(&a.value).unwrap_or(""), a.span))
            .collect();
        if let Some(run) = checkout_program(&words, relative_path_entry) {
            out.push(run);
        } else if contract.opaque
            && let rest = past_env(&words)
            && let Some((_, span)) = rest.first()
        {
            // The pipeline's own program, in the checkout: what it reads there by itself is the
            // change's too (principle 1). A reviewer's working tree is `World`'s.
            let path = match child.args.get(words.len() - rest.len()).map(|a| &a.value) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Template(t)) => t.source_text(),
                _ => "…".to_string(),
            };
            out.push(CheckoutRun {
                path,
                span: *span,
                how: CheckoutHow::WorkingFolder,
            });
        }
    }
    // Whatever the stage's program runs by name (a shell's commands, a model CLI's `git` and
    // `rg`, a build tool's compilers) is looked up on `PATH` too: a relative entry makes each of
    // them the checkout's, whether or not the file names one.
    if let Some((entry, span)) = relative_path
        && !out
            .iter()
            .any(|r| matches!(r.how, CheckoutHow::PathEntry(_)))
    {
        out.push(CheckoutRun {
            path: entry.to_string(),
            span,
            how: CheckoutHow::Environment("PATH".into()),
        });
    }
    out
}

/// The code `stage` runs that a registry or a server chooses when it runs (principle 1: from
/// outside the file), on any command line of a stage that runs a program.
pub fn fetched_code(
    stage: &Stage,
    contract: &StageContract,
    commit: &dyn Fn(&crate::model::Reference) -> Option<Commit>,
) -> Vec<(Fetched, Span)> {
    if !runs_program(contract) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for child in contract.children_in(stage, Role::CommandLine) {
        let owned = code_text(child, commit);
        let words: Vec<&str> = owned.iter().map(String::as_str).collect();
        for code in crate::code::fetched(&words) {
            if let Some(arg) = child.args.get(code.index) {
                out.push((code, arg.span));
            }
        }
        if let Some((index, found)) = crate::transport::unverified_words(&words)
            && let Some(arg) = child.args.get(index)
        {
            out.push((unverified(index, found), arg.span));
        }
    }
    // A variable of the program's environment is one of its settings. A reviewer's are judged
    // by what its client is known to read (`reviewer-credential`, `run-refusal`).
    let settings = if contract.reviewers().is_empty() {
        contract.children_in(stage, Role::Environment).collect()
    } else {
        Vec::new()
    };
    for child in settings {
        let (Some(name), Some(value)) = (child.args.first(), child.args.get(1)) else {
            continue;
        };
        let (Some(name), Some(text)) =
            (leading_literal(&name.value), leading_literal(&value.value))
        else {
            continue;
        };
        if let Some(does) = crate::transport::unverified_setting(name, text) {
            let found = crate::transport::Unverified {
                text: format!("{name}={text}"),
                does,
            };
            out.push((unverified(1, found), value.span));
        }
    }
    out
}

fn unverified(index: usize, found: crate::transport::Unverified) -> Fetched {
    Fetched {
        index,
        text: found.text,
        how: crate::code::FetchHow::Unverified(found.does),
    }
}

/// Which commit an output of kind `sha` names, for the code fetched at it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Commit {
    /// A commit of the change (`gather.head`): its tree is the change author's.
    Change,
    /// Another commit the stage's kind resolved (`gather.base`): a full commit id.
    Other,
}

/// The commit a reference names, where its output is a commit id a built-in kind resolves.
pub fn commit_of(
    pipeline: &Pipeline,
    registry: &Registry,
) -> impl Fn(&crate::model::Reference) -> Option<Commit> {
    move |r| {
        let stage = pipeline.stages.iter().find(|s| s.name.value == r.stage)?;
        let spec = registry.get(&stage.uses.value)?.output_spec(&r.output)?;
        (spec.ty == crate::contract::OutputType::Sha).then_some(if spec.change_commit {
            Commit::Change
        } else {
            Commit::Other
        })
    }
}

/// A command line's words as [`command_words`] reads them, with a reference to a commit written
/// as a full commit id ([`crate::code::CHANGE_COMMIT`] for the change's): a package pinned to a
/// commit is pinned, and code fetched at the change's commit is the change's.
fn code_text(
    child: &crate::model::Child,
    commit: &dyn Fn(&crate::model::Reference) -> Option<Commit>,
) -> Vec<String> {
    let render = |r: &crate::model::Reference| {
        commit(r).map(|c| match c {
            Commit::Change => crate::code::CHANGE_COMMIT,
            Commit::Other => crate::code::OTHER_COMMIT,
        })
    };
    child
        .args
        .iter()
        .map(|a| match &a.value {
            Value::String(s) => s.clone(),
            Value::Reference(r) => render(r).unwrap_or("").to_owned(),
            Value::Template(t) => {
                let mut text = String::new();
                for segment in &t.segments {
                    match segment {
                        crate::model::Segment::Literal { text: l } => text.push_str(l),
                        crate::model::Segment::Reference { reference } => match render(reference) {
                            Some(c) => text.push_str(c),
                            None => break,
                        },
                        _ => break,
                    }
                }
                text
            }
            _ => String::new(),
        })
        .collect()
}

/// A command line's words as the file writes them up to their first interpolation (empty for a
/// word that starts with a reference or an input).
pub fn command_words(child: &crate::model::Child) -> Vec<&str> {
    child
        .args
        .iter()
        .map(|a| leading_literal(&a.value).unwrap_or(""))
        .collect()
}

/// Whether a working folder is shown to be outside the checkout: an absolute path written in
/// the file, the stage's own folder, or a folder another stage made.
fn outside_the_checkout(value: &Value) -> bool {
    match value {
        Value::String(s) => s.starts_with('/'),
        Value::Template(t) => match t.segments.first() {
            Some(crate::model::Segment::Literal { text }) => text.starts_with('/'),
            Some(crate::model::Segment::Work { .. }) => true,
            // A folder another stage made, kept in the run's folder: what it holds is judged by
            // that output's labels (`untrusted-input`), not as the checkout.
            Some(crate::model::Segment::Reference { .. }) => true,
            _ => false,
        },
        _ => false,
    }
}

/// A command line from the program it runs: past `env [-i] [NAME=value]…` and every other
/// wrapper that runs the word it is given (`timeout 60`, `sudo -u ci`, `busybox`).
fn past_env<'a, 'b>(words: &'b [(&'a str, Span)]) -> &'b [(&'a str, Span)] {
    let texts: Vec<&str> = words.iter().map(|(w, _)| *w).collect();
    let program = crate::code::code_words(&texts)
        .into_iter()
        .rfind(|c| c.how == crate::code::CodeHow::Program)
        .map_or(0, |c| c.index);
    &words[program.min(words.len())..]
}

/// The file of the checkout one command line runs, if any (see [`checkout_programs`]).
fn checkout_program(
    words: &[(&str, Span)],
    relative_path_entry: Option<&str>,
) -> Option<CheckoutRun> {
    let ((program, span), args) = past_env(words).split_first()?;
    if is_relative_file(program) {
        return Some(CheckoutRun {
            path: (*program).to_string(),
            span: *span,
            how: CheckoutHow::Program,
        });
    }
    if let Some(entry) = relative_path_entry
        && !program.is_empty()
        && !program.contains('/')
    {
        return Some(CheckoutRun {
            path: (*program).to_string(),
            span: *span,
            how: CheckoutHow::PathEntry(entry.to_string()),
        });
    }
    let name = base_name(program);
    if crate::code::is_python(name) {
        return python_program(name, *span, args);
    }
    if !INTERPRETERS.contains(&name) {
        return None;
    }
    // Node resolves what code given on its command line `require`s from its working folder.
    let modules_from_cwd = matches!(name, "node" | "nodejs");
    let mut script_given = false;
    for (word, span) in args {
        // Code written in the pipeline file itself, not a file.
        if matches!(
            *word,
            "-c" | "-e" | "--eval" | "-p" | "--print" | "-Command"
        ) {
            return modules_from_cwd.then(|| CheckoutRun {
                path: format!("{name} {word} …"),
                span: *span,
                how: CheckoutHow::Modules(name.to_string()),
            });
        }
        if !word.starts_with('-') {
            script_given = true;
        }
        if is_script(word) {
            return Some(CheckoutRun {
                path: (*word).to_string(),
                span: *span,
                how: CheckoutHow::Interpreter(name.to_string()),
            });
        }
    }
    // Node given no script reads its code from its input, and resolves as above.
    (modules_from_cwd && !script_given).then(|| CheckoutRun {
        path: name.to_string(),
        span: *span,
        how: CheckoutHow::Modules(name.to_string()),
    })
}

/// A word an interpreter runs as a file of the checkout: a relative path, or a bare name with a
/// script's extension.
fn is_script(word: &str) -> bool {
    !word.starts_with('-')
        && (is_relative_file(word)
            || word.rsplit_once('.').is_some_and(|(stem, ext)| {
                !stem.is_empty()
                    && !stem.contains('/')
                    && SCRIPT_EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str())
            }))
}

/// What Python runs from the checkout. Given a script, its folder comes first on the module
/// path; given `-m`, `-c` or no script (its input), its working folder does: the checkout,
/// unless `-I` (isolated) or `-P` keeps it off. `-I` also ignores `PYTHONPATH`.
fn python_program(name: &str, program_span: Span, args: &[(&str, Span)]) -> Option<CheckoutRun> {
    let mut guarded = false;
    let mut words = args.iter();
    while let Some((word, span)) = words.next() {
        if *word == "--" || !word.starts_with('-') || *word == "-" {
            if *word == "--" || *word == "-" {
                break;
            }
            if is_script(word) {
                return Some(CheckoutRun {
                    path: (*word).to_string(),
                    span: *span,
                    how: CheckoutHow::Interpreter(name.to_string()),
                });
            }
            // An installed script: its own folder comes first, not the checkout.
            return None;
        }
        if word.starts_with("--") {
            continue;
        }
        // A cluster of one-letter options (`-Im`, `-uc`): `m` and `c` take the rest or the next
        // word; `W` and `X` take an argument too.
        for (k, c) in word.char_indices().skip(1) {
            match c {
                'I' | 'P' => guarded = true,
                'm' | 'c' => {
                    if guarded {
                        return None;
                    }
                    let rest = &word[k + 1..];
                    let what = if rest.is_empty() {
                        words.next().map(|(w, _)| *w).unwrap_or("")
                    } else {
                        rest
                    };
                    let path = if c == 'm' {
                        format!("{name} -m {what}")
                    } else {
                        format!("{name} -c …")
                    };
                    return Some(CheckoutRun {
                        path,
                        span: *span,
                        how: CheckoutHow::Modules(name.to_string()),
                    });
                }
                'W' | 'X' => {
                    if k + 1 == word.len() {
                        words.next();
                    }
                    break;
                }
                _ => {}
            }
        }
    }
    // No script: Python reads its code from its input.
    (!guarded).then(|| CheckoutRun {
        path: name.to_string(),
        span: program_span,
        how: CheckoutHow::Modules(name.to_string()),
    })
}

/// The relative paths in an environment variable's value: its words and list entries (split at
/// `:`, `;`, `,`, `=` and white space) that are `.`, `..`, or a relative path.
fn relative_paths(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| matches!(c, ';' | ',' | '=') || c.is_whitespace())
        // A URL's `:` separates no list entries.
        .filter(|w| !w.contains("://"))
        .flat_map(|w| w.split(':'))
        .filter(|w| matches!(*w, "." | "..") || is_relative_file(w))
        // A path is written in a path's characters: a word of JSON or quoted text is data.
        .filter(|w| {
            w.bytes().all(|b| {
                b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'/' | b'+' | b'@')
            })
        })
}

/// A path relative to the working folder: it has a `/` and does not start with one, nor is it
/// a URL, an option or an assignment.
fn is_relative_file(word: &str) -> bool {
    word.contains('/')
        && !word.starts_with('/')
        && !word.starts_with('-')
        && !word.starts_with('~')
        && !word.contains("://")
        && !word.contains('=')
}

/// The text a value starts with, up to its first interpolation: all of a plain string, `None`
/// when it starts with a reference or an input (a copy's path, or a folder an input names).
fn leading_literal(value: &Value) -> Option<&str> {
    match value {
        Value::String(s) => Some(s),
        Value::Template(t) => match t.segments.first() {
            Some(crate::model::Segment::Literal { text }) => Some(text),
            None => Some(""),
            _ => None,
        },
        _ => None,
    }
}

/// The folders of a pipeline: the inputs that may name one, with the stages that may write it.
#[derive(Clone, Debug, Default)]
struct Folders {
    /// The inputs, in the order their first writer names them.
    names: Vec<String>,
    index: HashMap<String, usize>,
    /// By folder: (writer, where it names the input), in file order.
    writers: Vec<Vec<(usize, Span)>>,
    /// By stage: the folders it may write.
    granted: Vec<Vec<usize>>,
}

impl Folders {
    fn of(pipeline: &Pipeline, registry: &Registry) -> Self {
        let mut folders = Folders {
            granted: vec![Vec::new(); pipeline.stages.len()],
            ..Folders::default()
        };
        let mut may: HashMap<&str, bool> = HashMap::new();
        for (i, stage) in pipeline.stages.iter().enumerate() {
            let Some(contract) = registry.get(&stage.uses.value) else {
                continue;
            };
            for (name, span) in granted_inputs(stage, contract) {
                let folder = *may.entry(name).or_insert_with(|| {
                    pipeline
                        .inputs
                        .iter()
                        .find(|x| x.name.value == name)
                        .is_some_and(may_name_folder)
                });
                if !folder {
                    continue;
                }
                let f = match folders.index.get(name) {
                    Some(&f) => f,
                    None => {
                        folders.index.insert(name.to_string(), folders.names.len());
                        folders.names.push(name.to_string());
                        folders.writers.push(Vec::new());
                        folders.names.len() - 1
                    }
                };
                if !folders.granted[i].contains(&f) {
                    folders.granted[i].push(f);
                    folders.writers[f].push((i, span));
                }
            }
        }
        folders
    }

    fn index(&self, input: &str) -> Option<usize> {
        self.index.get(input).copied()
    }

    /// The folders `stage` may write.
    fn granted_to(&self, stage: usize) -> Vec<usize> {
        self.granted.get(stage).cloned().unwrap_or_default()
    }
}

/// Whether a pipeline input may name a folder: a declared text input that admits a value
/// starting with `/`, as its pattern's automaton says ([`crate::admits`]). The forge's inputs
/// (`repo`, `change`, `run`) never do.
pub fn may_name_folder(input: &crate::model::Input) -> bool {
    if input.builtin || input.ty.value != InputType::String {
        return false;
    }
    let admits = crate::admits::admits(input);
    admits.unknown || admits.first.contains(&'/')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CheckOptions, Source, compile, run_checks};

    /// The findings of `body` (after a `pipeline` node and a secret `k` visible to `holder`):
    /// (check, stage, message).
    fn findings(body: &str) -> Vec<(&'static str, String, String)> {
        let registry = Registry::with_builtins();
        let text = format!(
            "pipeline \"p\"\nsecret \"k\" env=\"K\" {{\n    visible-to \"holder\"\n}}\n{body}"
        );
        let compiled =
            compile(Source::new("t.kdl", text), &registry, &Default::default()).expect("compiles");
        run_checks(&compiled, &registry, CheckOptions::default())
            .into_iter()
            .filter(|f| f.suppressed.is_none())
            .map(|f| (f.check, f.stage.unwrap_or_default(), f.message))
            .collect()
    }

    fn checks(body: &str) -> Vec<(&'static str, String)> {
        findings(body).into_iter().map(|(c, s, _)| (c, s)).collect()
    }

    const HOLDER_RUNS_FROM_DIR: &str = "stage \"holder\" uses=\"run\" {\n    cwd \"{work}\"\n    command \"{dir}/deploy.sh\"\n    secret-env \"K\" \"k\"\n}\n";

    /// The writer is declared after the holder and neither waits for the other: a folder joins
    /// stages whatever order they run in.
    #[test]
    fn a_folder_written_by_any_stage_reaches_the_holder_in_any_order() {
        let body = format!(
            "input \"dir\" env=\"DIR\"\n{HOLDER_RUNS_FROM_DIR}stage \"writer\" uses=\"run\" {{\n    command \"make\" \"-C\" \"{{dir}}\"\n}}\n"
        );
        assert_eq!(checks(&body), [("untrusted-input", "holder".to_string())]);
    }

    #[test]
    fn a_folder_only_the_holder_names_or_that_cannot_be_one_is_nothing() {
        let alone = format!(
            "input \"dir\" env=\"DIR\"\ntrusted \"input\" name=\"dir\" reason=\"the job sets it\"\n{HOLDER_RUNS_FROM_DIR}"
        );
        assert!(checks(&alone).is_empty());
        for input in [
            "input \"dir\" env=\"DIR\" pattern=\"^[a-z][a-z0-9-]*$\"",
            "input \"dir\" env=\"DIR\" type=\"int\"",
        ] {
            let body = format!(
                "{input}\n{HOLDER_RUNS_FROM_DIR}stage \"writer\" uses=\"run\" {{\n    command \"make\" \"-C\" \"{{dir}}\"\n}}\n"
            );
            assert!(checks(&body).is_empty(), "{input}");
        }
        // Stdin hands the program the path, not a grant: the holder runs nothing another stage
        // wrote, but the reader may read what the holder left.
        let body = format!(
            "input \"dir\" env=\"DIR\"\ntrusted \"input\" name=\"dir\" reason=\"the job sets it\"\n{HOLDER_RUNS_FROM_DIR}stage \"reader\" uses=\"run\" {{\n    command \"cat\"\n    stdin \"{{dir}}\"\n}}\n"
        );
        assert_eq!(checks(&body), [("secret-flow", "reader".to_string())]);
    }

    /// What a stage runs from a shared folder steers its outputs: a holder that reads them is
    /// reached through the reader, and the writer's own secret reaches a reader out of scope.
    #[test]
    fn what_a_folder_holds_flows_on_and_carries_the_writers_labels() {
        let body = "input \"dir\" env=\"DIR\"\nstage \"writer\" uses=\"run\" {\n    command \"fetch\" \"--into\" \"{dir}\"\n}\nstage \"reader\" uses=\"run\" {\n    command \"cat\"\n    stdin \"{dir}\"\n    env \"TOOLS\" \"{dir}\"\n    output \"text\"\n}\nstage \"holder\" uses=\"run\" {\n    cwd \"{work}\"\n    command \"publish\" \"{reader.text}\"\n    secret-env \"K\" \"k\"\n}\n";
        let found = findings(body);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].0, "untrusted-input");
        assert!(found[0].2.contains("reader.text"), "{found:?}");

        let body = "input \"dir\" env=\"DIR\"\ntrusted \"input\" name=\"dir\" reason=\"the job sets it\"\nstage \"holder\" uses=\"run\" {\n    cwd \"{work}\"\n    command \"sign\" \"--out\" \"{dir}\"\n    secret-env \"K\" \"k\"\n}\nstage \"reader\" uses=\"run\" {\n    command \"cat\"\n    stdin \"{dir}/SUMS\"\n    output \"text\"\n}\nstage \"after\" uses=\"run\" {\n    command \"wc\"\n    stdin \"{reader.text}\"\n}\n";
        let found = findings(body);
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!((found[0].0, found[0].1.as_str()), ("secret-flow", "reader"));
        assert!(
            found[0].2.contains(
                "`{dir}` names a folder that `holder` may write while holding secret `k`"
            ),
            "{found:?}"
        );
        assert_eq!((found[1].0, found[1].1.as_str()), ("secret-flow", "after"));
    }

    /// Two stages that may both write a folder: one finding, on the one that holds the secret,
    /// saying the flow runs both ways; `secret-flow` leaves that way to it.
    #[test]
    fn a_folder_both_may_write_is_one_finding_on_the_holder() {
        let body = format!(
            "input \"dir\" env=\"DIR\"\nstage \"writer\" uses=\"run\" {{\n    cwd \"{{dir}}\"\n    command \"make\"\n}}\n{HOLDER_RUNS_FROM_DIR}"
        );
        let found = findings(&body);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(
            (found[0].0, found[0].1.as_str()),
            ("untrusted-input", "holder")
        );
        assert!(
            found[0]
                .2
                .contains("`holder` may write it too, and `writer` reads what it leaves"),
            "{found:?}"
        );
    }

    #[test]
    fn a_pattern_keeps_an_input_from_naming_a_folder_exactly_when_no_value_starts_with_a_slash() {
        for (pattern, names) in [
            ("^[a-z0-9][a-z0-9-]{0,63}$", false),
            ("^[0-9]+$", false),
            ("^v[0-9.]+$", false),
            (r"^\d+$", false),
            (r"^\w[\w.-]*$", false),
            (r"^\p{L}+$", false),
            ("^[[:alpha:]]+$", false),
            ("^[a-z]+(/[a-z]+)*$", false),
            // Read from the automaton: skippable, bounded or alternated without a `/` first.
            ("^[a-z]*$", false),
            ("^[a-z]{0,3}$", false),
            ("^(main|dev)$", false),
            // Unanchored, a `/` after a skippable atom, alternated, any character, a class
            // with `/`, a negated class, a path, nothing.
            ("[a-z]+", true),
            ("^[a-z]?/tmp$", true),
            ("^main|/.*$", true),
            ("^.+$", true),
            ("^[/a-z]+$", true),
            ("^[^a-z]+$", true),
            (r"^\S+$", true),
            ("^/srv/[a-z]+$", true),
            ("", true),
        ] {
            let text = format!("input \"dir\" env=\"DIR\" pattern={pattern:?}\n");
            let registry = Registry::with_builtins();
            let compiled = compile(
                Source::new("t.kdl", format!("pipeline \"p\"\n{text}")),
                &registry,
                &Default::default(),
            )
            .expect("compiles");
            let input = compiled
                .pipeline
                .inputs
                .iter()
                .find(|i| i.name.value == "dir")
                .expect("dir");
            assert_eq!(may_name_folder(input), names, "{pattern:?}");
        }
    }

    /// The file of the checkout a command line runs: `(words, relative PATH entry) → path`.
    #[test]
    fn a_word_of_json_in_an_environment_variable_is_no_path() {
        let paths: Vec<&str> =
            relative_paths(r#"[{"path":"etc/passwd"}] ./hooks/x.js ci/pylib:."#).collect();
        assert_eq!(paths, ["./hooks/x.js", "ci/pylib", "."]);
    }

    #[test]
    fn a_relative_program_or_an_interpreters_relative_script_is_a_file_of_the_checkout() {
        for (words, relative_path, found) in [
            (
                &["sh", "scripts/lint.sh"][..],
                None,
                Some("scripts/lint.sh"),
            ),
            (&["./tools/x", "--fast"], None, Some("./tools/x")),
            (&["tools/x"], None, Some("tools/x")),
            (
                &["bash", "-o", "pipefail", "ci/run.sh"],
                None,
                Some("ci/run.sh"),
            ),
            (&["python3.12", "lint.py"], None, Some("lint.py")),
            (
                &["/usr/bin/env", "A=1", "-i", "node", "ci/review.js"],
                None,
                Some("ci/review.js"),
            ),
            (&["eslint", "."], Some("node_modules/.bin"), Some("eslint")),
            // Installed programs, code written in the file, data files, URLs, options.
            (&["eslint", "."], None, None),
            (&["/usr/local/bin/lint", "scripts/lint.sh"], None, None),
            (&["sh", "-c", "./x"], None, None),
            // Python given a module, code or nothing looks its modules up in the checkout
            // first, unless `-I` or `-P` keeps its working folder off its path.
            (
                &["python3", "-m", "ci.upload"],
                None,
                Some("python3 -m ci.upload"),
            ),
            (&["python3", "-um", "pip"], None, Some("python3 -m pip")),
            (
                &["python3", "-c", "print(1)", "a/b.py"],
                None,
                Some("python3 -c …"),
            ),
            (&["python3"], None, Some("python3")),
            (&["python3", "-I", "-m", "ci.upload"], None, None),
            (&["python3", "-Pc", "import x"], None, None),
            (&["python3", "-X", "dev", "/opt/x.py"], None, None),
            (&["python3", "/opt/x.py", "-m", "y"], None, None),
            // Node resolves what `-e` code requires from its working folder.
            (&["node", "-e", "require('x')"], None, Some("node -e …")),
            (&["perl", "-e", "print 1"], None, None),
            (&["node", "/opt/x.js"], None, None),
            (&["cat", "scripts/lint.sh"], None, None),
            (&["sh", "https://example.com/x.sh"], None, None),
            (&["sh", "--posix"], None, None),
            (&["git", "log", "origin/main"], None, None),
            (&[], None, None),
        ] {
            let spanned: Vec<(&str, Span)> = words.iter().map(|w| (*w, Span::new(0, 0))).collect();
            assert_eq!(
                checkout_program(&spanned, relative_path).map(|r| r.path),
                found.map(str::to_string),
                "{words:?}"
            );
        }
    }

    const HOLDER_RUNS_LINT: &str = "stage \"holder\" uses=\"run\" {\n    command \"sh\" \"scripts/lint.sh\"\n    secret-env \"K\" \"k\"\n}\n";

    /// Principle 1: the checkout is the change's, so a holder that runs a script from it runs
    /// the change's code; a `trusted "checkout"` with a reason lifts it and shows as allowed.
    #[test]
    fn a_holder_running_a_checkout_script_is_reported_unless_the_checkout_is_trusted() {
        let found = findings(HOLDER_RUNS_LINT);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(
            (found[0].0, found[0].1.as_str()),
            ("untrusted-input", "holder")
        );
        assert!(
            found[0]
                .2
                .contains("runs `scripts/lint.sh` with `sh`, a file of the checkout"),
            "{found:?}"
        );
        assert!(found[0].2.contains("principle 1"), "{found:?}");

        // A forge whose job chooses what it checks out: there the declaration can hold.
        let mut registry = Registry::with_builtins();
        registry.register_forge(
            crate::contract::ForgeContract::new("hosted", "a job that checks out what it says")
                .checkout_may_be_base(),
        );
        registry.set_default_forge("hosted");
        let text = format!(
            "pipeline \"p\"\ntrusted \"checkout\" reason=\"the job checks out the base branch\"\nsecret \"k\" env=\"K\" {{\n    visible-to \"holder\"\n}}\n{HOLDER_RUNS_LINT}"
        );
        let compiled =
            compile(Source::new("t.kdl", text), &registry, &Default::default()).expect("compiles");
        let all = run_checks(&compiled, &registry, CheckOptions::default());
        assert_eq!(all.len(), 1, "{all:?}");
        let allowed = all[0].suppressed.as_ref().expect("shown as allowed");
        assert!(
            allowed
                .reason
                .contains("the job checks out the base branch"),
            "{allowed:?}"
        );
        let audit = run_checks(&compiled, &registry, CheckOptions { no_suppress: true });
        assert!(audit[0].suppressed.is_none(), "--no-suppress shows it live");

        // No reason, or a blank one: it vouches for nothing, and says so.
        for trusted in [
            "trusted \"checkout\"",
            "trusted \"checkout\" reason=\" \"",
            "trusted \"the-repo\" reason=\"ours\"",
        ] {
            let text = format!(
                "pipeline \"p\"\n{trusted}\nsecret \"k\" env=\"K\" {{\n    visible-to \"holder\"\n}}\n{HOLDER_RUNS_LINT}"
            );
            let compiled = compile(Source::new("t.kdl", text), &registry, &Default::default())
                .expect("compiles");
            let all = run_checks(&compiled, &registry, CheckOptions::default());
            assert!(
                all.iter()
                    .any(|f| f.check == "untrusted-input" && f.suppressed.is_none()),
                "{trusted}: {all:?}"
            );
            assert!(
                all.len() >= 2,
                "{trusted}: the declaration is reported too: {all:?}"
            );
        }
    }

    /// A program that works in the checkout reads its files by itself (principle 1): a holder
    /// there is reported, as a warning; in its own folder or an absolute one it is not, and a
    /// relative working folder is still the checkout.
    #[test]
    fn a_holder_working_in_the_checkout_is_reported_unless_shown_elsewhere() {
        for (cwd, reported) in [
            ("", true),
            ("    cwd \"packages/app\"\n", true),
            ("    cwd \"{work}\"\n", false),
            ("    cwd \"{work}/out\"\n", false),
            ("    cwd \"/opt/tool\"\n", false),
        ] {
            let body = format!(
                "stage \"holder\" uses=\"run\" {{\n{cwd}    command \"env\" \"CI=1\" \"npm\" \"ci\"\n    secret-env \"K\" \"k\"\n}}\n"
            );
            let found = findings(&body);
            let working = found.iter().any(|(check, stage, message)| {
                *check == "untrusted-input"
                    && stage == "holder"
                    && message.contains("runs `npm` with the checkout as its working folder")
            });
            assert_eq!(working, reported, "{cwd}: {found:?}");
        }
    }

    /// What a program from the checkout writes is the change's: it reaches a holder's command
    /// line as untrusted, the path starting at the stage that ran it.
    #[test]
    fn the_outputs_of_a_stage_that_runs_a_checkout_file_are_untrusted() {
        let body = "stage \"gen\" uses=\"run\" {\n    command \"./gen-version\"\n    output \"version\"\n}\nstage \"holder\" uses=\"run\" {\n    cwd \"{work}\"\n    command \"tag\" \"{gen.version}\"\n    secret-env \"K\" \"k\"\n}\n";
        let found = findings(body);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(
            (found[0].0, found[0].1.as_str()),
            ("untrusted-input", "holder")
        );
        assert!(found[0].2.contains("untrusted `gen.version`"), "{found:?}");
    }
}
