//! Drawing the pipeline: mermaid (forges render it in markdown), Graphviz dot, and plain text. Stages that
//! hold the same secrets are drawn in one group, titled with those secrets, so each secret's
//! scope is the union of the groups that name it (mermaid and dot groups cannot overlap).
//!
//! [`excerpt`] bounds the source excerpts of human findings (`reviewflow check`), [`escape`]
//! makes the file's text safe to print on a terminal.

mod dot;
pub mod escape;
pub(crate) mod excerpt;
mod mermaid;
mod text;

use std::collections::BTreeMap;

use crate::graph::Dag;
use crate::model::Pipeline;
use crate::registry::Registry;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GraphFormat {
    Mermaid,
    Dot,
    Text,
}

/// What a renderer needs.
pub struct Drawing<'a> {
    pub pipeline: &'a Pipeline,
    pub dag: &'a Dag,
    pub registry: &'a Registry,
}

pub fn render_graph(drawing: &Drawing<'_>, format: GraphFormat) -> String {
    match format {
        GraphFormat::Mermaid => mermaid::render(drawing),
        GraphFormat::Dot => dot::render(drawing),
        GraphFormat::Text => text::render(drawing),
    }
}

impl Drawing<'_> {
    /// `net: 443, 8443` for a stage whose child may connect to these TCP ports; `None` for a
    /// stage without network (the default).
    pub fn network_of(&self, stage: usize) -> Option<String> {
        let ports = &self.pipeline.stages[stage].network;
        (!ports.is_empty()).then(|| {
            let list: Vec<String> = ports.iter().map(|p| p.value.to_string()).collect();
            format!("net: {}", list.join(", "))
        })
    }

    /// The secrets each stage may see, by stage index.
    pub fn secrets_of(&self, stage: usize) -> Vec<&str> {
        let name = &self.pipeline.stages[stage].name.value;
        self.pipeline
            .secrets
            .iter()
            .filter(|s| s.visible_to.iter().any(|v| &v.value == name))
            .map(|s| s.name.value.as_str())
            .collect()
    }

    /// Stage indices grouped by the set of secrets they may see (empty set first), each group in
    /// file order.
    pub fn scope_groups(&self) -> Vec<(Vec<&str>, Vec<usize>)> {
        let mut groups: BTreeMap<Vec<&str>, Vec<usize>> = BTreeMap::new();
        for i in 0..self.pipeline.stages.len() {
            groups.entry(self.secrets_of(i)).or_default().push(i);
        }
        groups.into_iter().collect()
    }

    /// Stage indices in topological order, or file order when there is a cycle.
    pub fn order(&self) -> Vec<usize> {
        self.dag
            .order
            .clone()
            .unwrap_or_else(|| (0..self.pipeline.stages.len()).collect())
    }
}
