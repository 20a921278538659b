//! The pipeline as a DAG: one node per stage, an edge from a producer to each consumer,
//! labelled with the outputs it carries (references in children and `when`), plus `needs`.

use std::collections::{BTreeSet, HashMap, VecDeque};

use rustc_hash::FxHashMap;

use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::EdgeRef;

use crate::contract::{BUILTIN_OUTPUTS, OutputType};
use crate::model::{Pipeline, Stage, Value};
use crate::registry::Registry;

/// What an edge carries.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EdgeInfo {
    /// Outputs read by the consumer's children.
    pub data: Vec<String>,
    /// Outputs read by the consumer's `when`.
    pub guard: Vec<String>,
    /// An explicit `needs`.
    pub needs: bool,
}

/// Adds `name` to a sorted list of names, once.
fn add_name(list: &mut Vec<String>, name: &str) {
    if let Err(at) = list.binary_search_by(|n| n.as_str().cmp(name)) {
        list.insert(at, name.to_string());
    }
}

impl EdgeInfo {
    fn data_insert(&mut self, name: &str) {
        add_name(&mut self.data, name);
    }

    fn guard_insert(&mut self, name: &str) {
        add_name(&mut self.guard, name);
    }

    /// `diff, head` / `needs`.
    pub fn label(&self) -> String {
        let mut parts: Vec<String> = self.data.to_vec();
        for g in &self.guard {
            if !self.data.contains(g) {
                parts.push(format!("when {g}"));
            }
        }
        if parts.is_empty() && self.needs {
            parts.push("needs".into());
        }
        parts.join(", ")
    }
}

#[derive(Clone, Debug)]
pub struct Dag {
    /// Node weights are stage indices into `Pipeline::stages`.
    pub graph: DiGraph<usize, EdgeInfo>,
    pub nodes: Vec<NodeIndex>,
    /// Stage indices in topological order (file order among independent stages), or `None`
    /// when the graph has a cycle.
    pub order: Option<Vec<usize>>,
    /// Each cycle as a path of stage indices, first stage repeated at the end.
    pub cycles: Vec<Vec<usize>>,
    index: FxHashMap<String, usize>,
}

impl Dag {
    pub fn build(pipeline: &Pipeline) -> Self {
        let mut graph = DiGraph::with_capacity(pipeline.stages.len(), pipeline.stages.len() * 2);
        let nodes: Vec<NodeIndex> = (0..pipeline.stages.len())
            .map(|i| graph.add_node(i))
            .collect();
        let index: FxHashMap<String, usize> = pipeline
            .stages
            .iter()
            .enumerate()
            .map(|(i, s)| (s.name.value.clone(), i))
            .collect();
        let mut edges: FxHashMap<(usize, usize), EdgeInfo> = FxHashMap::default();
        // One buffer for every value's references: no allocation per value.
        let mut refs = Vec::new();
        for (to, stage) in pipeline.stages.iter().enumerate() {
            for child in &stage.children {
                for value in child.values() {
                    refs.clear();
                    value.value.collect_references(&mut refs);
                    for r in &refs {
                        if let Some(&from) = index.get(r.stage.as_str()) {
                            edges.entry((from, to)).or_default().data_insert(&r.output);
                        }
                    }
                }
            }
            if let Some(when) = &stage.when {
                refs.clear();
                when.value.collect_references(&mut refs);
                for r in &refs {
                    if let Some(&from) = index.get(r.stage.as_str()) {
                        edges.entry((from, to)).or_default().guard_insert(&r.output);
                    }
                }
            }
            for need in &stage.needs {
                if let Some(&from) = index.get(need.value.as_str()) {
                    edges.entry((from, to)).or_default().needs = true;
                }
            }
        }
        let mut sorted: Vec<_> = edges.into_iter().collect();
        sorted.sort_by_key(|((a, b), _)| (*b, *a));
        for ((from, to), info) in sorted {
            graph.add_edge(nodes[from], nodes[to], info);
        }
        let (order, cycles) = order_and_cycles(&graph, &nodes);
        Self {
            graph,
            nodes,
            order,
            cycles,
            index,
        }
    }

    pub fn stage_index(&self, name: &str) -> Option<usize> {
        self.index.get(name).copied()
    }

    /// Producers of stage `i`, with what each edge carries.
    pub fn producers(&self, i: usize) -> impl Iterator<Item = (usize, &EdgeInfo)> {
        self.graph
            .edges_directed(self.nodes[i], petgraph::Direction::Incoming)
            .map(|e| (self.graph[e.source()], e.weight()))
    }

    /// Consumers of stage `i`.
    pub fn consumers(&self, i: usize) -> impl Iterator<Item = (usize, &EdgeInfo)> {
        self.graph
            .edges_directed(self.nodes[i], petgraph::Direction::Outgoing)
            .map(|e| (self.graph[e.target()], e.weight()))
    }

    /// Every edge as (producer, consumer, info), in a stable order.
    pub fn edges(&self) -> Vec<(usize, usize, &EdgeInfo)> {
        let mut out: Vec<_> = self
            .graph
            .edge_references()
            .map(|e| (self.graph[e.source()], self.graph[e.target()], e.weight()))
            .collect();
        out.sort_by_key(|(a, b, _)| (*b, *a));
        out
    }
}

/// Kahn's algorithm, taking ready stages in file order so the order is stable; the stages left
/// over lie on or behind cycles, which strongly connected components then name.
fn order_and_cycles(
    graph: &DiGraph<usize, EdgeInfo>,
    nodes: &[NodeIndex],
) -> (Option<Vec<usize>>, Vec<Vec<usize>>) {
    let n = nodes.len();
    let mut indegree = vec![0usize; n];
    for e in graph.edge_references() {
        indegree[graph[e.target()]] += 1;
    }
    let mut ready: std::collections::BinaryHeap<std::cmp::Reverse<usize>> = (0..n)
        .filter(|&i| indegree[i] == 0)
        .map(std::cmp::Reverse)
        .collect();
    let mut order = Vec::with_capacity(n);
    while let Some(std::cmp::Reverse(i)) = ready.pop() {
        order.push(i);
        for e in graph.edges_directed(nodes[i], petgraph::Direction::Outgoing) {
            let t = graph[e.target()];
            indegree[t] -= 1;
            if indegree[t] == 0 {
                ready.push(std::cmp::Reverse(t));
            }
        }
    }
    if order.len() == n {
        return (Some(order), Vec::new());
    }
    let mut cycles = Vec::new();
    for scc in petgraph::algo::tarjan_scc(graph) {
        let members: BTreeSet<usize> = scc.iter().map(|&ni| graph[ni]).collect();
        let Some(&start) = members.iter().next() else {
            continue;
        };
        let self_loop = graph.contains_edge(nodes[start], nodes[start]);
        if members.len() == 1 && !self_loop {
            continue;
        }
        cycles.push(cycle_path(graph, nodes, start, &members));
    }
    cycles.sort();
    (None, cycles)
}

/// The shortest path from `start` back to itself inside one strongly connected component.
fn cycle_path(
    graph: &DiGraph<usize, EdgeInfo>,
    nodes: &[NodeIndex],
    start: usize,
    members: &BTreeSet<usize>,
) -> Vec<usize> {
    let mut prev: HashMap<usize, usize> = HashMap::new();
    let mut queue = VecDeque::from([start]);
    while let Some(i) = queue.pop_front() {
        let mut next: Vec<usize> = graph
            .edges_directed(nodes[i], petgraph::Direction::Outgoing)
            .map(|e| graph[e.target()])
            .filter(|t| members.contains(t))
            .collect();
        next.sort_unstable();
        for t in next {
            if t == start {
                let mut path = vec![start, i];
                let mut cur = i;
                while cur != start {
                    cur = prev[&cur];
                    path.push(cur);
                }
                // Built backwards from `start`: reversed it reads start → … → i → start.
                path.reverse();
                return path;
            }
            if let std::collections::hash_map::Entry::Vacant(e) = prev.entry(t) {
                e.insert(i);
                queue.push_back(t);
            }
        }
    }
    vec![start, start]
}

/// The outputs a stage offers: its contract's, the builtin ones, and for kinds whose outputs
/// are declared by a child (`run`'s `output "name"`), those.
pub fn outputs_of(stage: &Stage, registry: &Registry) -> Vec<(String, OutputType)> {
    let mut out: Vec<(String, OutputType)> = BUILTIN_OUTPUTS
        .iter()
        .map(|(n, t, _)| ((*n).to_string(), *t))
        .collect();
    let Some(contract) = registry.get(&stage.uses.value) else {
        return out;
    };
    out.extend(contract.outputs.iter().map(|o| (o.name.clone(), o.ty)));
    if let Some(child) = &contract.outputs_from_child {
        for c in stage.children_named(child) {
            if let Some(Value::String(name)) = c.args.first().map(|a| &a.value) {
                let ty = match c.prop("type").map(|v| &v.value) {
                    Some(Value::String(t)) => match t.as_str() {
                        "json" => OutputType::Json,
                        "bool" => OutputType::Bool,
                        "file" => OutputType::File,
                        "findings" => OutputType::Findings,
                        _ => OutputType::Text,
                    },
                    _ => OutputType::Text,
                };
                out.push((name.clone(), ty));
            }
        }
    }
    out
}
