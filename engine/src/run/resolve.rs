//! Resolving a stage's children and `when` against the run's inputs and the real outputs of the
//! stages that ended before it.

use std::collections::BTreeMap;

use super::context::{Resolved, ResolvedChild};
use super::value::{OutputValue, StageOutputs};
use crate::graph::Dag;
use crate::model::{Reference, Segment, Stage, Template, Value};

/// The outputs of every stage that ended, by stage index (`None`: not ended, or no outputs).
pub(crate) struct Values<'a> {
    pub dag: &'a Dag,
    pub outputs: &'a [Option<StageOutputs>],
    pub inputs: &'a BTreeMap<String, String>,
    /// The work folder of the stage being resolved (`{work}`); none outside a stage.
    pub work: Option<&'a std::path::Path>,
}

impl Values<'_> {
    /// The value of `stage.output`, or `None` when absent.
    pub fn get(&self, r: &Reference) -> Option<&OutputValue> {
        let i = self.dag.stage_index(&r.stage)?;
        self.outputs.get(i)?.as_ref()?.get(&r.output)
    }

    /// `when`, on real outputs: only booleans count; absent reads false (`Expr::eval`).
    pub fn when(&self, stage: &Stage) -> bool {
        match &stage.when {
            None => true,
            Some(w) => w
                .value
                .eval(&mut |r| self.get(r).and_then(OutputValue::as_bool)),
        }
    }

    pub fn render(&self, t: &Template) -> String {
        let mut out = String::new();
        for s in &t.segments {
            match s {
                Segment::Literal { text } => out.push_str(text),
                Segment::Input { name, .. } => out.push_str(
                    self.inputs
                        .get(name)
                        .map(String::as_str)
                        .unwrap_or_default(),
                ),
                Segment::Reference { reference } => {
                    if let Some(v) = self.get(reference) {
                        out.push_str(&v.render());
                    }
                }
                Segment::Work { .. } => {
                    if let Some(work) = self.work {
                        out.push_str(&work.to_string_lossy());
                    }
                }
            }
        }
        out
    }

    fn value(&self, v: &Value) -> Resolved {
        match v {
            Value::String(s) => Resolved::String(s.clone()),
            Value::Int(i) => Resolved::Int(*i),
            Value::Bool(b) => Resolved::Bool(*b),
            Value::Duration(d) => Resolved::Duration(*d),
            Value::Template(t) => Resolved::Text(self.render(t)),
            Value::Reference(r) => Resolved::Output(self.get(r).cloned()),
            Value::Secret(s) => Resolved::Secret(s.clone()),
            Value::Store(s) => Resolved::Store(s.clone()),
        }
    }

    pub fn children(&self, stage: &Stage) -> Vec<ResolvedChild> {
        stage
            .children
            .iter()
            .map(|c| ResolvedChild {
                name: c.name.value.clone(),
                args: c.args.iter().map(|a| self.value(&a.value)).collect(),
                props: c
                    .props
                    .iter()
                    .map(|p| (p.name.value.clone(), self.value(&p.value.value)))
                    .collect(),
            })
            .collect()
    }
}
