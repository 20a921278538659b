//! Which stages share a job, and why (`docs/export.md`, "The partition").
//!
//! Stages start as one job each. An edge whose value is private, carries a secret or is a diff
//! joins its two ends (such a value never crosses a job boundary in plaintext: it is what a run
//! discards at rest, docs/executor.md), and a stage that then
//! sits between two stages of one job joins that job too (jobs must form a DAG). Every join is
//! recorded with the edge or the stages that forced it, so the exported workflow and `check`
//! can explain it.

use std::collections::BTreeMap;

use petgraph::graph::DiGraph;

use crate::contract::OutputType;
use crate::flow::Flow;
use crate::graph::{Dag, outputs_of};
use crate::model::{Access, Pipeline};
use crate::permission::parse_permission;
use crate::registry::Registry;

/// One job: stages that run on one machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Job {
    /// The job's stages (indices into `Pipeline::stages`), in topological order.
    pub stages: Vec<usize>,
    /// Jobs this one needs (indices into [`Partition::jobs`]), ascending.
    pub needs: Vec<usize>,
    /// Secrets its stages hold (indices into `Pipeline::secrets`), ascending.
    pub secrets: Vec<usize>,
    /// Token permissions of its stages, by scope: the reads their contracts need and what they
    /// declare; `write` covers `read`.
    pub permissions: BTreeMap<String, Access>,
}

/// Why two stages share a job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reason {
    /// `producer`'s `outputs` reach `consumer` and may not leave the machine.
    Private {
        producer: usize,
        consumer: usize,
        outputs: Vec<(String, Carries)>,
    },
    /// `stage` sits downstream of one stage of a job and upstream of another (`after` →
    /// `stage` → `before`), so a job of its own would make the jobs a cycle.
    Between {
        stage: usize,
        after: usize,
        before: usize,
    },
    /// Two jobs would wait for each other though no single stage sits between two stages of
    /// one: `after` → `entry` enters the job of `entry` and `exit` (one job before the merge)
    /// from the rest of the group, and `exit` → `before` leaves it back to the group.
    Tangled {
        after: usize,
        entry: usize,
        exit: usize,
        before: usize,
    },
}

/// Why a value may not cross a job boundary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Carries {
    /// It carries the `private` label.
    Private,
    /// It carries a secret.
    Secret,
    /// It is a diff: the change as read, which may hold the credential a scan looks for.
    Diff,
}

impl Carries {
    pub fn as_str(self) -> &'static str {
        match self {
            Carries::Private => "private",
            Carries::Secret => "carries a secret",
            Carries::Diff => "a diff",
        }
    }
}

/// The jobs of a pipeline, and why stages share them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Partition {
    /// Jobs in topological order.
    pub jobs: Vec<Job>,
    /// The job of each stage.
    pub job_of: Vec<usize>,
    /// Every join, in the order it was made.
    pub reasons: Vec<Reason>,
}

/// Partitions the stages of an acyclic pipeline; `None` when the DAG has a cycle (`check`
/// reports it).
pub fn partition(
    pipeline: &Pipeline,
    registry: &Registry,
    dag: &Dag,
    flow: &Flow,
) -> Option<Partition> {
    let order = dag.order.as_ref()?;
    let n = pipeline.stages.len();
    let mut sets = Sets::new(n);
    let mut reasons = Vec::new();
    let edges = dag.edges();
    let types: Vec<_> = pipeline
        .stages
        .iter()
        .map(|s| outputs_of(s, registry))
        .collect();
    for (producer, consumer, info) in &edges {
        // A guard's bool crosses as plainly as data does.
        let mut outputs: Vec<(String, Carries)> = info
            .data
            .iter()
            .chain(&info.guard)
            .filter_map(|name| {
                let labels = flow.output(*producer, name);
                let carries = if labels.is_some_and(|l| l.private) {
                    Carries::Private
                } else if labels.is_some_and(|l| l.secrets().next().is_some()) {
                    Carries::Secret
                } else if types[*producer]
                    .iter()
                    .any(|(n, t)| n == name && *t == OutputType::Diff)
                {
                    Carries::Diff
                } else {
                    return None;
                };
                Some((name.clone(), carries))
            })
            .collect();
        outputs.sort_unstable();
        outputs.dedup();
        if !outputs.is_empty() {
            sets.union(*producer, *consumer);
            reasons.push(Reason::Private {
                producer: *producer,
                consumer: *consumer,
                outputs,
            });
        }
    }
    // Joining can close a cycle between jobs; each stage on one joins. One pass over the
    // condensation suffices (it is acyclic), the loop is a guard.
    let position = positions(order, n);
    loop {
        let mut graph: DiGraph<usize, ()> = DiGraph::new();
        let nodes: Vec<_> = (0..n).map(|i| graph.add_node(i)).collect();
        for (p, c, _) in &edges {
            let (a, b) = (sets.find(*p), sets.find(*c));
            if a != b {
                graph.update_edge(nodes[a], nodes[b], ());
            }
        }
        let mut joined = false;
        for scc in petgraph::algo::tarjan_scc(&graph) {
            if scc.len() < 2 {
                continue;
            }
            let roots: Vec<usize> = scc.iter().map(|&ix| graph[ix]).collect();
            // The stages a `Between` of this group names: their jobs' part in it is said.
            let mut named = vec![false; n];
            for &root in &roots {
                // Name the job's stages this one is caught between: the latest upstream one
                // and the earliest downstream one, by topological position.
                for stage in sets.members(root) {
                    if let Some((after, before)) = between(stage, &roots, &mut sets, dag, &position)
                    {
                        for s in [stage, after, before] {
                            named[s] = true;
                        }
                        reasons.push(Reason::Between {
                            stage,
                            after,
                            before,
                        });
                    }
                }
            }
            // A job no `Between` names is in the cycle as a whole: name the edge that enters
            // it and the one that leaves it, once per cycle (the other side of a two-job
            // cycle names the same two edges).
            let mut tangled: Vec<[usize; 4]> = Vec::new();
            for &root in &roots {
                let members = sets.members(root);
                if members.iter().any(|&m| named[m]) {
                    continue;
                }
                if let Some(t) = crossing(&members, &roots, &mut sets, dag, &position)
                    && !tangled.iter().any(|o| [o[2], o[3], o[0], o[1]] == t)
                {
                    tangled.push(t);
                    let [after, entry, exit, before] = t;
                    reasons.push(Reason::Tangled {
                        after,
                        entry,
                        exit,
                        before,
                    });
                }
            }
            let first = roots[0];
            for &root in &roots[1..] {
                sets.union(first, root);
            }
            joined = true;
        }
        if !joined {
            break;
        }
    }
    Some(jobs_of(
        pipeline, registry, flow, order, &mut sets, &edges, reasons,
    ))
}

/// For a stage of a strongly connected group of jobs: a stage of another job of the group
/// that reaches it directly, and one it reaches directly, if both exist.
fn between(
    stage: usize,
    roots: &[usize],
    sets: &mut Sets,
    dag: &Dag,
    position: &[usize],
) -> Option<(usize, usize)> {
    let own = sets.find(stage);
    let in_group = |s: usize, sets: &mut Sets| {
        let r = sets.find(s);
        r != own && roots.contains(&r)
    };
    let after = dag
        .producers(stage)
        .map(|(p, _)| p)
        .filter(|&p| in_group(p, sets))
        .max_by_key(|&p| position[p])?;
    let before = dag
        .consumers(stage)
        .map(|(c, _)| c)
        .filter(|&c| in_group(c, sets))
        .min_by_key(|&c| position[c])?;
    Some((after, before))
}

/// For a job of a strongly connected group of jobs, its members `members`: the edge that enters
/// it from another job of the group (the latest producer) and the one that leaves it to
/// another (the earliest consumer), as `[after, entry, exit, before]`.
fn crossing(
    members: &[usize],
    roots: &[usize],
    sets: &mut Sets,
    dag: &Dag,
    position: &[usize],
) -> Option<[usize; 4]> {
    let own = sets.find(*members.first()?);
    let mut into: Option<(usize, usize)> = None;
    let mut out: Option<(usize, usize)> = None;
    for &m in members {
        for (p, _) in dag.producers(m) {
            let r = sets.find(p);
            if r != own && roots.contains(&r) && into.is_none_or(|(a, _)| position[p] > position[a])
            {
                into = Some((p, m));
            }
        }
        for (c, _) in dag.consumers(m) {
            let r = sets.find(c);
            if r != own && roots.contains(&r) && out.is_none_or(|(_, b)| position[c] < position[b])
            {
                out = Some((m, c));
            }
        }
    }
    let ((after, entry), (exit, before)) = (into?, out?);
    Some([after, entry, exit, before])
}

fn positions(order: &[usize], n: usize) -> Vec<usize> {
    let mut position = vec![0; n];
    for (at, &stage) in order.iter().enumerate() {
        position[stage] = at;
    }
    position
}

fn jobs_of(
    pipeline: &Pipeline,
    registry: &Registry,
    flow: &Flow,
    order: &[usize],
    sets: &mut Sets,
    edges: &[(usize, usize, &crate::graph::EdgeInfo)],
    reasons: Vec<Reason>,
) -> Partition {
    let n = pipeline.stages.len();
    // Jobs are numbered by their first stage in topological order.
    let mut job_of_root: BTreeMap<usize, usize> = BTreeMap::new();
    let mut jobs: Vec<Job> = Vec::new();
    let mut job_of = vec![0; n];
    for &stage in order {
        let root = sets.find(stage);
        let job = *job_of_root.entry(root).or_insert_with(|| {
            jobs.push(Job {
                stages: Vec::new(),
                needs: Vec::new(),
                secrets: Vec::new(),
                permissions: BTreeMap::new(),
            });
            jobs.len() - 1
        });
        job_of[stage] = job;
        let j = &mut jobs[job];
        j.stages.push(stage);
        j.secrets
            .extend(flow.held.get(stage).into_iter().flatten().copied());
        // What the stage's contract reads with (a stage cannot work without it), and what it
        // declares; `check` has made sure a write is both needed and declared.
        let contract_reads = registry
            .get(&pipeline.stages[stage].uses.value)
            .into_iter()
            .flat_map(|c| c.permissions.iter())
            .filter_map(|p| parse_permission(p).ok())
            .filter(|p| p.access == Access::Read);
        let declared = pipeline.stages[stage]
            .permissions
            .iter()
            .map(|p| p.value.clone());
        for p in contract_reads.chain(declared) {
            let access = j.permissions.entry(p.scope).or_insert(p.access);
            *access = (*access).max(p.access);
        }
    }
    for (p, c, _) in edges {
        let (a, b) = (job_of[*p], job_of[*c]);
        if a != b {
            jobs[b].needs.push(a);
        }
    }
    for job in &mut jobs {
        job.needs.sort_unstable();
        job.needs.dedup();
        job.secrets.sort_unstable();
        job.secrets.dedup();
    }
    Partition {
        jobs,
        job_of,
        reasons,
    }
}

/// Union-find over stage indices, with path halving.
struct Sets {
    parent: Vec<usize>,
}

impl Sets {
    fn new(n: usize) -> Self {
        Sets {
            parent: (0..n).collect(),
        }
    }

    fn find(&mut self, mut i: usize) -> usize {
        while self.parent[i] != i {
            self.parent[i] = self.parent[self.parent[i]];
            i = self.parent[i];
        }
        i
    }

    fn union(&mut self, a: usize, b: usize) {
        let (a, b) = (self.find(a), self.find(b));
        // The smaller index stays the root, so roots do not depend on the order of joins.
        if a != b {
            let (keep, join) = (a.min(b), a.max(b));
            self.parent[join] = keep;
        }
    }

    fn members(&mut self, root: usize) -> Vec<usize> {
        let root = self.find(root);
        (0..self.parent.len())
            .filter(|&i| self.find(i) == root)
            .collect()
    }
}
