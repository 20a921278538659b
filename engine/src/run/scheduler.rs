//! The scheduler: starts each stage as soon as the stages it depends on have ended, at most
//! `jobs` at a time, decides fallbacks and skips with the policy's functions, and stops starting
//! stages after a failure, an interruption, or a stage's request to stop the run.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::task::JoinSet;

use super::cancel::{CancelReason, CancelSignal, cancel_pair};
use super::clock;
use super::context::{InputFile, ResolvedChild, StageCx, Unfinished, WorkDir};
use super::events::{Event, signal_name};
use super::extensions::Extensions;
use super::facts::StageFacts;
use super::keep::{bool_record, keep};
use super::manifest::{OutputRecord, StageRecord};
use super::outcome::Outcome;
use super::reporter::{Reporter, StatusSink};
use super::resolve::Values;
use super::resume::ReusedStage;
use super::secrets::{RunSecrets, StageSecrets};
use super::stage::StageImpl;
use super::stage_error::StageError;
use super::stop::StopRequest;
use super::value::{OutputValue, StageOutputs};
use crate::contract::StageContract;
use crate::exec::confine::reaper::{self, Orphans};
use crate::exec::confine::{ConfineSpec, StageScope};
use crate::exec::redact::Redactor;
use crate::exec::slot::{SlotGate, Slots};
use crate::flow::Flow;
use crate::graph::Dag;
use crate::model::{OnError, Pipeline};
use crate::policy::fallback_outputs;

/// How long an implementation may take to stop, beyond the grace period, before it is dropped.
const STOP_SLACK: Duration = Duration::from_secs(5);

/// What every stage task shares.
pub(crate) struct Shared {
    pub pipeline: Pipeline,
    pub contracts: Vec<Arc<StageContract>>,
    pub impls: Vec<Arc<dyn StageImpl>>,
    pub inputs: BTreeMap<String, String>,
    pub redactor: Redactor,
    pub run_id: String,
    pub run_dir: PathBuf,
    pub checkout: PathBuf,
    /// The folder of the stages' work folders (`private::work_root`), made by the run.
    pub work_root: PathBuf,
    /// Whether that folder is a tmpfs (run/work_root.rs).
    pub work_in_memory: bool,
    /// How the stages are told apart in a shared view, when by group (`exec::confine::groups`).
    pub groups: Option<crate::exec::confine::groups::Groups>,
    pub grace: Duration,
    pub extensions: Arc<Extensions>,
    /// What every stage's children may reach (before its ports and its folder); `None` when
    /// the run turned confinement off.
    pub confine: Option<ConfineSpec>,
    /// Per stage: whether it holds a secret or reads a private value (it then gets a network
    /// namespace of its own; the others share `common_net`).
    pub sensitive: Vec<bool>,
    pub common_net: crate::exec::confine::NetSlot,
    /// The IPC namespace the stages that are not sensitive share, as `common_net`.
    pub common_ipc: crate::exec::confine::IpcSlot,
    /// The start of every stage marker of this run.
    pub marker_prefix: String,
    /// `--force`: stages' requests to stop the run are refused.
    pub force: bool,
    /// The names the registered platforms' hand-overs refuse in a kept folder.
    pub hand_over: Vec<&'static crate::platform::HandOver>,
    /// The run's `--jobs` slots (exec/slot.rs).
    pub slots: Slots,
}

/// What the scheduler was told.
pub(crate) struct Plan<'a> {
    pub shared: Arc<Shared>,
    pub dag: &'a Dag,
    pub flow: &'a Flow,
    pub secrets: &'a RunSecrets,
    pub jobs: usize,
    pub cancel: CancelSignal,
    pub reporter: &'a Reporter,
    /// Stages reused from the parent.
    pub reused: BTreeMap<usize, ReusedStage>,
    pub parent: Option<String>,
    /// `--stages`: what runs, and what is taken from the parent.
    pub partial: Option<super::partial::Partial>,
}

/// How the stages ended.
pub(crate) struct Ended {
    pub records: Vec<StageRecord>,
    pub interrupted: Option<i32>,
    /// The first stage that failed under `on-error="fail"`, and why.
    pub failed: Option<(String, String)>,
    /// The stage that stopped the run (nothing left to do), and why (redacted).
    pub stopped: Option<(String, String)>,
}

/// An outcome decided without running the stage: outcome, values, records, reason, facts.
type Decision = (
    Outcome,
    Option<StageOutputs>,
    BTreeMap<String, OutputRecord>,
    Option<String>,
    BTreeMap<String, String>,
);

/// How a stage that ran ended: outcome, values, records, reason.
type Settled = (
    Outcome,
    Option<StageOutputs>,
    BTreeMap<String, OutputRecord>,
    Option<String>,
);

struct TaskEnd {
    index: usize,
    result: Result<(StageOutputs, BTreeMap<String, OutputRecord>), StageError>,
    timed_out: Option<Duration>,
    duration: Duration,
    /// The stage asked the run to stop, with this reason.
    stop: Option<String>,
}

/// Runs the plan's stages to their end: decide what is ready, start what may run, wait for a
/// stage to end or the run to be cancelled, until nothing runs and nothing more may start.
pub(crate) async fn schedule(plan: Plan<'_>) -> Ended {
    let mut s = Scheduling::new(plan);
    loop {
        s.decide_ready();
        s.start_waiting();
        if s.running.is_empty() && (s.ready.is_empty() || s.stopping()) {
            break;
        }
        // A cancellation is seen before a stage's end that raced with it: a child killed by the
        // same SIGTERM must count as cancelled, not failed.
        let woke = tokio::select! {
            biased;
            reason = s.plan.cancel.cancelled(), if s.interrupted.is_none() => Woke::Cancelled(reason),
            joined = s.set.join_next_with_id() => Woke::Joined(joined),
        };
        match woke {
            Woke::Cancelled(reason) => s.interrupt(reason),
            Woke::Joined(Some(joined)) => s.stage_ended(joined),
            Woke::Joined(None) => {}
        }
    }
    s.ended()
}

/// What woke the scheduler: the run's cancellation, or a stage task's end.
enum Woke {
    Cancelled(CancelReason),
    Joined(Option<Result<(tokio::task::Id, TaskEnd), tokio::task::JoinError>>),
}

/// The state of one run's scheduling: every stage's outputs and record so far, the queues, the
/// running tasks, and why the run stops starting stages, if it does.
struct Scheduling<'a> {
    plan: Plan<'a>,
    shared: Arc<Shared>,
    outputs: Vec<Option<StageOutputs>>,
    records: Vec<Option<StageRecord>>,
    /// Stages skipped because their own `when` was false: their outputs are absent, and their
    /// consumers still run (a post writes a tombstone when the seal did not run). Only a skip
    /// under `on-error="skip"` (and what it skips in turn) skips the stages that need it.
    gated: Vec<bool>,
    started_at: Vec<Option<String>>,
    /// Per stage, how many of its producers have not ended.
    remaining: Vec<usize>,
    /// Stages whose producers have all ended, to decide.
    ready: BinaryHeap<Reverse<usize>>,
    /// Stages decided to run, waiting for a slot.
    waiting: BinaryHeap<Reverse<usize>>,
    set: JoinSet<TaskEnd>,
    task_ids: HashMap<tokio::task::Id, usize>,
    /// Held here, not only by the task, so that a stage whose implementation panicked keeps
    /// what it recorded.
    facts_of: HashMap<usize, Arc<StageFacts>>,
    running: BTreeMap<usize, Instant>,
    reused: BTreeMap<usize, ReusedStage>,
    interrupted: Option<i32>,
    failed: Option<(String, String)>,
    stopped: Option<(String, String)>,
    jobs: usize,
}

impl<'a> Scheduling<'a> {
    fn new(mut plan: Plan<'a>) -> Self {
        let shared = plan.shared.clone();
        let n = shared.pipeline.stages.len();
        let remaining: Vec<usize> = (0..n).map(|i| plan.dag.producers(i).count()).collect();
        let ready = (0..n).filter(|&i| remaining[i] == 0).map(Reverse).collect();
        let reused = std::mem::take(&mut plan.reused);
        // Twice the slots: a stage is prepared while another's program runs (exec/slot.rs).
        let jobs = plan.jobs.max(1) * 2;
        Scheduling {
            plan,
            shared,
            outputs: vec![None; n],
            records: vec![None; n],
            gated: vec![false; n],
            started_at: vec![None; n],
            remaining,
            ready,
            waiting: BinaryHeap::new(),
            set: JoinSet::new(),
            task_ids: HashMap::new(),
            facts_of: HashMap::new(),
            running: BTreeMap::new(),
            reused,
            interrupted: None,
            failed: None,
            stopped: None,
            jobs,
        }
    }

    /// An interruption, a failure or a stop: no more stage is decided or started.
    fn stopping(&self) -> bool {
        self.interrupted.is_some() || self.failed.is_some() || self.stopped.is_some()
    }

    /// Decides every ready stage that needs no slot; queues the rest.
    fn decide_ready(&mut self) {
        while let Some(Reverse(i)) = self.ready.pop() {
            // After a stop nothing more is decided either: no fallback, skip or reuse.
            if self.stopping() {
                continue;
            }
            match self.decide(i) {
                Some((outcome, values, recs, reason, facts)) => {
                    finish(
                        &self.plan,
                        i,
                        outcome,
                        values,
                        recs,
                        reason,
                        facts,
                        Duration::ZERO,
                        None,
                        &mut self.outputs,
                        &mut self.records,
                        &mut self.remaining,
                        &mut self.ready,
                    );
                }
                None => self.waiting.push(Reverse(i)),
            }
        }
    }

    /// The outcome of ready stage `i` when it is decided without running it: reused, outside a
    /// partial run, skipped, fallen back as in the parent, or disabled by a missing secret.
    fn decide(&mut self, i: usize) -> Option<Decision> {
        let plan = &self.plan;
        let stage = &self.shared.pipeline.stages[i];
        if let Some(r) = self.reused.remove(&i) {
            return Some(self.reuse(i, r));
        }
        if plan.partial.as_ref().is_some_and(|p| p.outside(i)) {
            return Some((
                Outcome::NotRun,
                None,
                BTreeMap::new(),
                Some(super::partial::NOT_SELECTED.into()),
                BTreeMap::new(),
            ));
        }
        if let Some(p) = skipped_producer(plan, &self.records, &self.gated, i) {
            return Some((
                Outcome::Skipped,
                None,
                BTreeMap::new(),
                Some(format!("`{p}` was skipped")),
                BTreeMap::new(),
            ));
        }
        let when = Values {
            dag: plan.dag,
            outputs: &self.outputs,
            inputs: &self.shared.inputs,
            work: None,
        }
        .when(stage);
        if !when {
            let expr = stage
                .when
                .as_ref()
                .map(|w| w.value.to_string())
                .unwrap_or_default();
            self.gated[i] = true;
            return Some((
                Outcome::Skipped,
                None,
                BTreeMap::new(),
                Some(format!("`when` {expr} is false")),
                BTreeMap::new(),
            ));
        }
        if let Some(p) = plan.partial.as_ref().filter(|p| p.upstream.contains(&i)) {
            // Upstream and neither reused nor skipped: it fell back in the parent (the
            // executor let nothing else through), and falls back here the same way.
            let (values, recs) = fallback(stage, &self.shared.contracts[i]);
            let (outcome, values, why) = if p.fell_back.contains(&i) {
                (Outcome::FellBack, Some(values), "it fell back there")
            } else {
                (Outcome::NotRun, None, "it was skipped there, not here")
            };
            return Some((
                outcome,
                values,
                if outcome == Outcome::FellBack {
                    recs
                } else {
                    BTreeMap::new()
                },
                Some(format!("from run {}: {why}", p.parent)),
                BTreeMap::new(),
            ));
        }
        self.missing_secret(i)
    }

    /// Stage `i` reused from the parent, said in the log.
    fn reuse(&self, i: usize, r: ReusedStage) -> Decision {
        let parent = self.plan.parent.clone().unwrap_or_default();
        self.plan.reporter.event(Event::Reuse {
            stage: self.shared.pipeline.stages[i].name.value.clone(),
            parent: parent.clone(),
        });
        // The parent's facts pass this run's limits and redactor too.
        let facts = StageFacts::new(self.shared.redactor.clone());
        facts.absorb(&r.facts);
        (
            Outcome::Reused,
            Some(r.values),
            r.records,
            Some(format!("from run {parent}")),
            facts.take(),
        )
    }

    /// Stage `i` falls back when a secret it holds is missing (`on-missing="disable"`).
    fn missing_secret(&self, i: usize) -> Option<Decision> {
        let plan = &self.plan;
        let pipeline = &self.shared.pipeline;
        let (_, missing) = plan.secrets.for_stage(pipeline, plan.flow, i);
        let k = missing.first()?;
        let (values, recs) = fallback(&pipeline.stages[i], &self.shared.contracts[i]);
        // Say which: a key that is set but too short is not "missing".
        let why = plan
            .secrets
            .states
            .get(k.as_str())
            .map_or("is not set", |s| s.says());
        Some((
            Outcome::FellBack,
            Some(values),
            recs,
            Some(format!(
                "secret `{k}` {why} (on-missing=\"disable\"); the stage did not run"
            )),
            BTreeMap::new(),
        ))
    }

    /// Starts waiting stages while a slot is free and nothing stops the run.
    fn start_waiting(&mut self) {
        while self.running.len() < self.jobs && !self.stopping() {
            let Some(Reverse(i)) = self.waiting.pop() else {
                break;
            };
            self.start(i);
        }
    }

    /// Starts stage `i` as a task.
    fn start(&mut self, i: usize) {
        let plan = &self.plan;
        let shared = &self.shared;
        let pipeline = &shared.pipeline;
        // In the run's work root, so that the run's end (and the next run, after a kill)
        // finds it.
        let work = WorkDir::new(
            &shared.work_root,
            &format!(
                "{}-",
                super::keep::component(&pipeline.stages[i].name.value)
            ),
            shared.work_in_memory,
            shared.groups.and_then(|g| g.of_stage(i)),
        );
        let children = Values {
            dag: plan.dag,
            outputs: &self.outputs,
            inputs: &shared.inputs,
            work: Some(work.path()),
        }
        .children(&pipeline.stages[i]);
        let (secrets, _) = plan.secrets.for_stage(pipeline, plan.flow, i);
        let input_files = input_files(plan, &self.outputs, i);
        let unfinished = unfinished(plan, &self.records, i);
        let name = pipeline.stages[i].name.value.clone();
        self.started_at[i] = Some(clock::now());
        plan.reporter.event(Event::StageStart {
            stage: name.clone(),
        });
        let facts = Arc::new(StageFacts::new(shared.redactor.clone()));
        self.facts_of.insert(i, facts.clone());
        // In line for a slot from now: slots go in the order stages are started.
        let gate = Arc::new(shared.slots.gate(shared.impls[i].slot_per_program()));
        let handle = self.set.spawn(run_stage(
            shared.clone(),
            i,
            gate,
            work,
            children,
            secrets,
            input_files,
            unfinished,
            facts,
            plan.reporter.sink(&name),
            plan.cancel.clone(),
        ));
        self.task_ids.insert(handle.id(), i);
        self.running.insert(i, Instant::now());
    }

    /// The run was cancelled: by a signal, or by the run's timeout (as SIGTERM).
    fn interrupt(&mut self, reason: CancelReason) {
        let sig = match reason {
            CancelReason::Interrupted(s) => s,
            CancelReason::Timeout => libc::SIGTERM,
        };
        self.interrupted = Some(sig);
        let pipeline = &self.shared.pipeline;
        self.plan.reporter.event(Event::Cancel {
            signal: signal_name(sig),
            running: self
                .running
                .keys()
                .map(|&i| pipeline.stages[i].name.value.clone())
                .collect(),
        });
    }

    /// A stage task ended (or panicked): its outcome, its record, and the run's stop it asked.
    fn stage_ended(&mut self, joined: Result<(tokio::task::Id, TaskEnd), tokio::task::JoinError>) {
        let end = match joined {
            Ok((_, end)) => end,
            Err(e) => {
                let Some(&index) = self.task_ids.get(&e.id()) else {
                    return;
                };
                TaskEnd {
                    index,
                    result: Err(StageError::failed("the stage's implementation panicked")),
                    timed_out: None,
                    duration: self
                        .running
                        .get(&index)
                        .map(Instant::elapsed)
                        .unwrap_or_default(),
                    stop: None,
                }
            }
        };
        let i = end.index;
        self.running.remove(&i);
        let facts = self
            .facts_of
            .remove(&i)
            .map(|f| f.take())
            .unwrap_or_default();
        let name = self.shared.pipeline.stages[i].name.value.clone();
        let (outcome, values, recs, reason) = self.outcome(i, &name, end.result, end.timed_out);
        // A stop counts only for a stage that succeeded, and only the first; a failure or an
        // interruption wins over it.
        let stop = end
            .stop
            .filter(|_| outcome == Outcome::Succeeded && !self.stopping());
        finish(
            &self.plan,
            i,
            outcome,
            values,
            recs,
            reason,
            facts,
            end.duration,
            self.started_at[i].take(),
            &mut self.outputs,
            &mut self.records,
            &mut self.remaining,
            &mut self.ready,
        );
        if let Some(why) = stop {
            let why = redact(&self.shared.redactor, &why);
            self.plan.reporter.event(Event::Stop {
                stage: name.clone(),
                reason: why.clone(),
            });
            self.stopped = Some((name, why));
        }
    }

    /// What the end of stage `i` (`name`) makes of it: its outputs with `ok`, or what its
    /// `on-error` says; the first failure under `on-error="fail"` fails the run.
    fn outcome(
        &mut self,
        i: usize,
        name: &str,
        result: Result<(StageOutputs, BTreeMap<String, OutputRecord>), StageError>,
        timed_out: Option<Duration>,
    ) -> Settled {
        let stage = &self.shared.pipeline.stages[i];
        match result {
            Ok((mut values, mut recs)) => {
                values.insert("ok".into(), OutputValue::Bool(true));
                recs.insert("ok".into(), bool_record(true));
                (Outcome::Succeeded, Some(values), recs, None)
            }
            Err(e) => {
                let why = match timed_out {
                    Some(t) => format!("timed out after {}", super::console::human(t)),
                    None => redact(&self.shared.redactor, &e.to_string()),
                };
                if self.interrupted.is_some() && timed_out.is_none() {
                    return (Outcome::Cancelled, None, BTreeMap::new(), Some(why));
                }
                match stage.on_error.value {
                    OnError::Fail => {
                        if self.failed.is_none() {
                            self.failed = Some((name.to_owned(), why.clone()));
                        }
                        (Outcome::Failed, None, BTreeMap::new(), Some(why))
                    }
                    OnError::Fallback => {
                        let (values, recs) = fallback(stage, &self.shared.contracts[i]);
                        (Outcome::FellBack, Some(values), recs, Some(why))
                    }
                    OnError::Skip => (Outcome::Skipped, None, BTreeMap::new(), Some(why)),
                }
            }
        }
    }

    /// How the stages ended: a stage never decided did not run, and says why.
    fn ended(self) -> Ended {
        let pipeline = &self.shared.pipeline;
        let why_not = match (&self.interrupted, &self.failed, &self.stopped) {
            (Some(sig), _, _) => format!("the run was interrupted ({})", signal_name(*sig)),
            (None, Some((s, _)), _) => format!("stage `{s}` failed"),
            (None, None, Some((s, _))) => format!("`{s}` stopped the run"),
            (None, None, None) => "the run stopped".into(),
        };
        let records = self
            .records
            .into_iter()
            .enumerate()
            .map(|(i, r)| {
                r.unwrap_or_else(|| StageRecord {
                    name: pipeline.stages[i].name.value.clone(),
                    kind: pipeline.stages[i].uses.value.clone(),
                    outcome: Outcome::NotRun,
                    started_at: None,
                    duration_ms: 0,
                    reason: Some(why_not.clone()),
                    outputs: BTreeMap::new(),
                    reused_from: None,
                    facts: BTreeMap::new(),
                })
            })
            .collect();
        let interrupted = self.interrupted;
        let failed = self.failed;
        Ended {
            records,
            interrupted,
            // A failure that came after the stop (a stage that was running) still fails the run.
            stopped: self
                .stopped
                .filter(|_| interrupted.is_none() && failed.is_none()),
            failed,
        }
    }
}

/// The stage `i` reads data from (or `needs`) a skipped producer: its name.
fn skipped_producer(
    plan: &Plan<'_>,
    records: &[Option<StageRecord>],
    gated: &[bool],
    i: usize,
) -> Option<String> {
    plan.dag.producers(i).find_map(|(p, info)| {
        let skipped = !gated[p]
            && records[p]
                .as_ref()
                .is_some_and(|r| r.outcome == Outcome::Skipped);
        (skipped && (!info.data.is_empty() || info.needs)).then(|| {
            records[p]
                .as_ref()
                .map(|r| r.name.clone())
                .unwrap_or_default()
        })
    })
}

/// The producers stage `i` reads data from that did not complete, with their reasons.
fn unfinished(plan: &Plan<'_>, records: &[Option<StageRecord>], i: usize) -> Vec<Unfinished> {
    plan.dag
        .producers(i)
        .filter(|(_, info)| !info.data.is_empty())
        .filter_map(|(p, _)| records[p].as_ref())
        .filter(|r| !r.outcome.completed())
        .map(|r| Unfinished {
            stage: r.name.clone(),
            outcome: r.outcome,
            reason: r.reason.clone(),
            facts: r.facts.clone(),
        })
        .collect()
}

/// The kept files (`file` outputs) of the producers stage `i` reads.
fn input_files(plan: &Plan<'_>, outputs: &[Option<StageOutputs>], i: usize) -> Vec<InputFile> {
    let mut files = Vec::new();
    for (p, info) in plan.dag.producers(i) {
        let Some(values) = outputs[p].as_ref() else {
            continue;
        };
        for name in &info.data {
            if let Some(OutputValue::File(path)) = values.get(name) {
                files.push(InputFile {
                    producer: plan.shared.pipeline.stages[p].name.value.clone(),
                    output: name.clone(),
                    path: path.clone(),
                });
            }
        }
    }
    files
}

/// The policy's fallback outputs as values and records (absent ones left out).
fn fallback(
    stage: &crate::model::Stage,
    contract: &StageContract,
) -> (StageOutputs, BTreeMap<String, OutputRecord>) {
    let mut values = StageOutputs::new();
    let mut recs = BTreeMap::new();
    for (name, v) in fallback_outputs(stage, contract) {
        if let Some(b) = v {
            values.insert(name.clone(), OutputValue::Bool(b));
            recs.insert(name, bool_record(b));
        }
    }
    (values, recs)
}

fn redact(r: &Redactor, s: &str) -> String {
    String::from_utf8_lossy(&r.redact(s.as_bytes())).into_owned()
}

#[allow(clippy::too_many_arguments)]
fn finish(
    plan: &Plan<'_>,
    i: usize,
    outcome: Outcome,
    values: Option<StageOutputs>,
    recs: BTreeMap<String, OutputRecord>,
    reason: Option<String>,
    facts: BTreeMap<String, String>,
    duration: Duration,
    started: Option<String>,
    outputs: &mut [Option<StageOutputs>],
    records: &mut [Option<StageRecord>],
    remaining: &mut [usize],
    ready: &mut BinaryHeap<Reverse<usize>>,
) {
    let stage = &plan.shared.pipeline.stages[i];
    let name = stage.name.value.clone();
    let reason = reason.map(|r| redact(&plan.shared.redactor, &r));
    match (outcome, &reason) {
        (Outcome::FellBack, Some(r)) => plan.reporter.event(Event::Fallback {
            stage: name.clone(),
            reason: r.clone(),
        }),
        (Outcome::Skipped, Some(r)) => plan.reporter.event(Event::Skip {
            stage: name.clone(),
            reason: r.clone(),
        }),
        _ => {}
    }
    plan.reporter.event(Event::StageEnd {
        stage: name.clone(),
        outcome,
        duration_ms: duration.as_millis() as u64,
        reason: reason.clone(),
    });
    outputs[i] = values;
    records[i] = Some(StageRecord {
        name,
        kind: stage.uses.value.clone(),
        outcome,
        started_at: started,
        duration_ms: duration.as_millis() as u64,
        reason: if outcome == Outcome::Reused {
            None
        } else {
            reason
        },
        outputs: recs,
        reused_from: (outcome == Outcome::Reused).then(|| plan.parent.clone().unwrap_or_default()),
        // Already redacted and bounded by `StageFacts`.
        facts,
    });
    for (c, _) in plan.dag.consumers(i) {
        remaining[c] -= 1;
        if remaining[c] == 0 {
            ready.push(Reverse(c));
        }
    }
}

/// One stage, as a task: run the implementation under its timeout and the run's cancellation,
/// keep its outputs, remove its work folder once everything it started has ended.
#[allow(clippy::too_many_arguments)]
async fn run_stage(
    shared: Arc<Shared>,
    i: usize,
    gate: Arc<SlotGate>,
    work: WorkDir,
    children: Vec<ResolvedChild>,
    secrets: StageSecrets,
    input_files: Vec<InputFile>,
    unfinished: Vec<Unfinished>,
    facts: Arc<StageFacts>,
    status: StatusSink,
    run_cancel: CancelSignal,
) -> TaskEnd {
    let started = Instant::now();
    let stage = &shared.pipeline.stages[i];
    let name = &stage.name.value;
    let scope = stage_scope(&shared, i, Arc::clone(&gate));
    let end_status = status.clone();
    let stop = StopRequest::new(shared.force);
    let (canceller, cancel) = cancel_pair();
    let waiting = cancel.clone();
    let cx = StageCx {
        run_id: &shared.run_id,
        stage,
        contract: &shared.contracts[i],
        children: &children,
        inputs: &shared.inputs,
        secrets: &secrets,
        redactor: &shared.redactor,
        run_dir: &shared.run_dir,
        checkout: &shared.checkout,
        grace: shared.grace,
        cancel,
        status,
        extensions: &shared.extensions,
        input_files: &input_files,
        unfinished: &unfinished,
        facts: &facts,
        stop: &stop,
        work: &work,
        scope: &scope,
    };
    let limits = Limits {
        timeout: stage.timeout(),
        grace: shared.grace,
        canceller,
        run_cancel,
        gate: Arc::clone(&gate),
    };
    let task = async {
        // A stage that does work of its own holds a slot for its whole run.
        let _slot = if gate.per_program() {
            None
        } else {
            tokio::select! {
                slot = gate.take() => slot,
                _ = waiting.cancelled() => return Err(StageError::Cancelled),
            }
        };
        shared.impls[i].run(cx).await
    };
    let (result, timed_out) = limits.run(scope.clone().run(task)).await;
    end_leftovers(&scope, &end_status).await;
    let result = match result {
        Ok(values) => {
            keep(
                &shared.run_dir,
                name,
                values,
                &shared.redactor,
                &shared.hand_over,
            )
            .await
        }
        Err(e) => Err(e),
    };
    work.remove_or_say(&end_status).await;
    TaskEnd {
        index: i,
        result,
        timed_out,
        duration: started.elapsed(),
        stop: stop.take(),
    }
}

/// The scope every child of stage `i` runs in: its marker and its confinement (the run's, plus
/// the TCP ports the stage declares), and a network namespace of its own when it is sensitive.
fn stage_scope(shared: &Shared, i: usize, gate: Arc<SlotGate>) -> Arc<StageScope> {
    let stage = &shared.pipeline.stages[i];
    let scope = StageScope::new(
        format!("{}{}", shared.marker_prefix, super::console::random_hex(8)),
        shared.confine.as_ref().map(|base| {
            stage
                .network
                .iter()
                .filter(|e| e.value.host.is_none())
                .fold(base.clone(), |c, e| c.connect(e.value.port))
        }),
    );
    let scope = scope
        .with_slot(gate)
        .with_group(shared.groups.and_then(|g| g.of_stage(i)));
    Arc::new(if shared.sensitive.get(i).copied().unwrap_or(true) {
        scope
    } else {
        scope
            .sharing_net(Arc::clone(&shared.common_net))
            .sharing_ipc(Arc::clone(&shared.common_ipc))
    })
}

/// What bounds a stage's run: its `timeout`, the run's cancellation, and the grace it is given
/// to stop once told to.
struct Limits {
    timeout: Option<Duration>,
    grace: Duration,
    canceller: super::cancel::Canceller,
    run_cancel: CancelSignal,
    /// The stage's `timeout` counts from when it took its slot.
    gate: Arc<SlotGate>,
}

impl Limits {
    /// Runs the stage's future within the limits: its result, and the timeout when that ended it.
    async fn run(
        self,
        fut: impl std::future::Future<Output = Result<StageOutputs, StageError>>,
    ) -> (Result<StageOutputs, StageError>, Option<Duration>) {
        let mut fut = std::pin::pin!(fut);
        let limit = self.timeout.unwrap_or(Duration::from_secs(86_400));
        let gate = Arc::clone(&self.gate);
        let deadline = async move {
            gate.taken().await;
            tokio::time::sleep(limit).await;
        };
        tokio::pin!(deadline);
        let mut timed_out = None;
        // The run's cancellation first: it reaches every stage before any of them is polled
        // again. Polled after its implementation, a stage waiting for a slot could take the one
        // a cancelled stage just gave back, and start its program, before it was told.
        let early = tokio::select! {
            biased;
            reason = self.run_cancel.cancelled() => {
                self.canceller.cancel(reason);
                None
            }
            r = &mut fut => Some(r),
            () = &mut deadline, if self.timeout.is_some() => {
                self.canceller.cancel(CancelReason::Timeout);
                timed_out = self.timeout;
                None
            }
        };
        let result = match early {
            Some(r) => r,
            // Cancelled: the implementation ends its children (SIGTERM, grace, SIGKILL). One
            // that does not stop in time is dropped, which kills any group it still holds.
            None => match tokio::time::timeout(self.grace + STOP_SLACK, &mut fut).await {
                Ok(r) => r,
                Err(_) => Err(StageError::failed(
                    "the stage did not stop within its grace period and was abandoned",
                )),
            },
        };
        (result, timed_out)
    }
}

/// Nothing of the stage may still run while its outputs are read and kept: a leftover could
/// swap a file for a link between a check and a copy. With confinement off (measurements only)
/// what is left waits for the run's end. Where every child ran in a cgroup of its own that was
/// empty when its leader exited, nothing of the stage is left to look for.
async fn end_leftovers(scope: &Arc<StageScope>, status: &StatusSink) {
    if scope.spawned() && scope.base().is_some() && scope.left_something() {
        // Its PID namespace first, where it has one: that ends everything in it, whatever
        // it forged; the sweep then finds nothing of it.
        let pids = Arc::clone(scope);
        let _ = tokio::task::spawn_blocking(move || pids.end_pid_namespace()).await;
        end_orphans_of(scope, status).await;
    }
}

/// Ends what the stage's children left behind (double forks, `setsid` daemons), before its
/// folder is removed, and says so when there was something.
async fn end_orphans_of(scope: &Arc<StageScope>, status: &StatusSink) {
    let stage = Arc::clone(scope);
    let swept =
        tokio::task::spawn_blocking(move || reaper::end_orphans(Orphans::OfStage(stage.marker())))
            .await
            .unwrap_or_default();
    if swept.ended > 0 {
        status.status(format!(
            "ended {} process(es) the stage left behind{}",
            swept.ended,
            match swept.unattributed {
                0 => String::new(),
                n => format!(" ({n} of unknown stage)"),
            }
        ));
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use crate::contract::StageContract;
    use crate::run::{
        BoxFuture, ConsoleMode, Event, Implementations, Outcome, RunOptions, RunReport, RunStatus,
        StageCx, StageError, StageImpl, StageOutputs, execute, read_tolerant,
    };
    use crate::syntax::Limits;
    use crate::{Registry, Source, compile};

    /// `test/stop`: asks the run to stop, then succeeds (or fails, when told to).
    struct Stop {
        fail: bool,
    }

    impl StageImpl for Stop {
        fn run<'a>(&'a self, cx: StageCx<'a>) -> BoxFuture<'a, Result<StageOutputs, StageError>> {
            Box::pin(async move {
                cx.request_stop("the head abc1234 was already reviewed: nothing new since");
                if self.fail {
                    return Err(StageError::failed("broke after asking"));
                }
                Ok(StageOutputs::new())
            })
        }
    }

    /// `test/slow`: running when the stop arrives.
    struct Slow;

    impl StageImpl for Slow {
        fn run<'a>(&'a self, _cx: StageCx<'a>) -> BoxFuture<'a, Result<StageOutputs, StageError>> {
            Box::pin(async move {
                tokio::time::sleep(Duration::from_millis(300)).await;
                Ok(StageOutputs::new())
            })
        }
    }

    /// The gate a test stage takes its slot through, as a program of a `run` stage does.
    fn program_gate() -> Result<Arc<crate::exec::slot::SlotGate>, StageError> {
        crate::exec::confine::current()
            .and_then(|s| s.program_slot().cloned())
            .ok_or_else(|| StageError::failed("no slot gate"))
    }

    /// Runs `text` with `jobs` slots and the quiet console; `tweak` sets the rest.
    async fn run_slots(
        text: String,
        registry: &Registry,
        impls: &Implementations,
        dir: &std::path::Path,
        tweak: impl FnOnce(&mut RunOptions),
    ) -> RunReport {
        let compiled = compile(Source::new("t.kdl", text), registry, &Limits::default())
            .map_err(|_| "compile")
            .unwrap();
        let mut options = RunOptions::new(dir);
        options.console = ConsoleMode::Quiet;
        options.jobs = 1;
        options.env = Arc::new(|_| None);
        tweak(&mut options);
        execute(&compiled, registry, impls, options).await.unwrap()
    }

    /// `test/hold`: takes its slot as a program would, says so, and keeps it a second.
    struct Hold(Arc<tokio::sync::Notify>);

    impl StageImpl for Hold {
        fn run<'a>(&'a self, _cx: StageCx<'a>) -> BoxFuture<'a, Result<StageOutputs, StageError>> {
            Box::pin(async move {
                let gate = program_gate()?;
                let _slot = gate.take().await;
                self.0.notify_one();
                tokio::time::sleep(Duration::from_secs(1)).await;
                Ok(StageOutputs::new())
            })
        }
        fn slot_per_program(&self) -> bool {
            true
        }
    }

    /// `test/after-hold`: once `test/hold` holds the only slot, waits for a slot of its own.
    struct AfterHold(Arc<tokio::sync::Notify>);

    impl StageImpl for AfterHold {
        fn run<'a>(&'a self, _cx: StageCx<'a>) -> BoxFuture<'a, Result<StageOutputs, StageError>> {
            Box::pin(async move {
                self.0.notified().await;
                let gate = program_gate()?;
                let _slot = gate.take().await;
                Ok(StageOutputs::new())
            })
        }
        fn slot_per_program(&self) -> bool {
            true
        }
    }

    /// A stage's `timeout` counts from when it took its slot: `quick` waits a second for the
    /// only slot, which `hold` holds, and its 300 ms are not spent.
    #[tokio::test]
    async fn waiting_for_a_slot_is_not_a_stages_time() {
        let mut registry = Registry::with_builtins();
        registry.register(StageContract::new("test/hold", "holds the slot"));
        registry.register(StageContract::new("test/after-hold", "waits for it"));
        let held = Arc::new(tokio::sync::Notify::new());
        let mut impls = Implementations::with_builtins();
        impls.register("test/hold", Arc::new(Hold(Arc::clone(&held))));
        impls.register("test/after-hold", Arc::new(AfterHold(held)));
        let text = "pipeline \"slots\"\nstage \"hold\" uses=\"test/hold\"\nstage \"quick\" uses=\"test/after-hold\" timeout=\"300ms\"\n";
        let dir = tempfile::tempdir().unwrap();
        let r = run_slots(text.into(), &registry, &impls, dir.path(), |_| {}).await;
        assert_eq!(outcome(&r, "hold"), (Outcome::Succeeded, None));
        assert_eq!(outcome(&r, "quick"), (Outcome::Succeeded, None));
        assert_eq!((r.status, r.exit_code), (RunStatus::Succeeded, 0));
    }

    /// `test/hold-until-cancelled`: takes its slot as a program would, says so, and keeps it
    /// until the stage is cancelled.
    /// `test/hold`: takes the slot, says whether it was first to (the waiting stage's marker not
    /// yet written), and holds it until the run is cancelled.
    struct HoldUntilCancelled {
        held: Arc<tokio::sync::Notify>,
        marker: std::path::PathBuf,
        first: Arc<std::sync::atomic::AtomicBool>,
    }

    impl StageImpl for HoldUntilCancelled {
        fn run<'a>(&'a self, cx: StageCx<'a>) -> BoxFuture<'a, Result<StageOutputs, StageError>> {
            Box::pin(async move {
                let gate = program_gate()?;
                let _slot = gate.take().await;
                self.first
                    .store(!self.marker.exists(), std::sync::atomic::Ordering::SeqCst);
                self.held.notify_one();
                cx.cancel.cancelled().await;
                Err(StageError::Cancelled)
            })
        }
        fn slot_per_program(&self) -> bool {
            true
        }
    }

    /// A `run` stage cancelled while it waits for a slot starts nothing and ends at once, not
    /// after the grace it would give a program. Both stages start together, so the `run` stage
    /// may take the slot first (then it runs, and there is nothing to see): tried until the
    /// holding stage is first.
    #[tokio::test]
    async fn a_stage_cancelled_while_it_waits_for_a_slot_starts_nothing() {
        for _ in 0..50 {
            let mut registry = Registry::with_builtins();
            registry.register(StageContract::new("test/hold", "holds the slot"));
            let held = Arc::new(tokio::sync::Notify::new());
            let first = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let dir = tempfile::tempdir().unwrap();
            let marker = dir.path().join("ran");
            let mut impls = Implementations::with_builtins();
            impls.register(
                "test/hold",
                Arc::new(HoldUntilCancelled {
                    held: Arc::clone(&held),
                    marker: marker.clone(),
                    first: Arc::clone(&first),
                }),
            );
            let text = format!(
                "pipeline \"slots\"\nstage \"hold\" uses=\"test/hold\"\nstage \"waits\" uses=\"run\" {{\n    command \"touch\" \"{}\"\n}}\n",
                marker.display()
            );
            let (canceller, cancel) = crate::run::cancel_pair();
            tokio::spawn(async move {
                held.notified().await;
                canceller.cancel(crate::run::CancelReason::Interrupted(libc::SIGINT));
            });
            let r = run_slots(text, &registry, &impls, dir.path(), |options| {
                options.confine_children = false;
                options.cancel = cancel;
            })
            .await;
            assert_eq!(r.status, RunStatus::Cancelled);
            if !first.load(std::sync::atomic::Ordering::SeqCst) {
                continue;
            }
            assert_eq!(outcome(&r, "waits").0, Outcome::Cancelled);
            assert!(!marker.exists(), "the waiting stage's command ran");
            return;
        }
        panic!("the holding stage never took the slot first");
    }

    /// `test/count`: counts the stages started at once, and takes its slot as a program would.
    #[derive(Default)]
    struct Count {
        now: std::sync::atomic::AtomicUsize,
        most: std::sync::atomic::AtomicUsize,
    }

    impl StageImpl for Count {
        fn run<'a>(&'a self, _cx: StageCx<'a>) -> BoxFuture<'a, Result<StageOutputs, StageError>> {
            use std::sync::atomic::Ordering::SeqCst;
            Box::pin(async move {
                let now = self.now.fetch_add(1, SeqCst) + 1;
                self.most.fetch_max(now, SeqCst);
                let gate = program_gate()?;
                let slot = gate.take().await;
                tokio::time::sleep(Duration::from_millis(30)).await;
                drop(slot);
                self.now.fetch_sub(1, SeqCst);
                Ok(StageOutputs::new())
            })
        }
        fn slot_per_program(&self) -> bool {
            true
        }
    }

    /// With `--jobs 1`, one stage is at work and one more is prepared: two started at once.
    #[tokio::test]
    async fn at_most_twice_the_slots_stages_are_started() {
        let mut registry = Registry::with_builtins();
        registry.register(StageContract::new("test/count", "counts"));
        let count = Arc::new(Count::default());
        let mut impls = Implementations::with_builtins();
        impls.register("test/count", Arc::clone(&count) as Arc<dyn StageImpl>);
        let mut text = String::from("pipeline \"count\"\n");
        for i in 0..6 {
            text.push_str(&format!("stage \"s{i}\" uses=\"test/count\"\n"));
        }
        let dir = tempfile::tempdir().unwrap();
        let r = run_slots(text, &registry, &impls, dir.path(), |_| {}).await;
        assert_eq!((r.status, r.exit_code), (RunStatus::Succeeded, 0));
        assert_eq!(count.most.load(std::sync::atomic::Ordering::SeqCst), 2);
    }

    /// `first` stops the run while `other` (independent) runs; `after` and `last` follow `first`.
    const PIPELINE: &str = r#"
pipeline "stop"
stage "first" uses="test/stop"
stage "other" uses="test/slow"
stage "after" uses="run" {
    needs "first"
    command "true"
}
stage "last" uses="run" {
    needs "after"
    command "true"
}
"#;

    /// The run's report, and its checkout (holding the run directory) kept for the caller.
    async fn run(fail: bool, force: bool) -> (RunReport, tempfile::TempDir) {
        let mut registry = Registry::with_builtins();
        registry.register(StageContract::new("test/stop", "asks the run to stop"));
        registry.register(StageContract::new("test/slow", "takes a while"));
        let mut impls = Implementations::with_builtins();
        impls.register("test/stop", Arc::new(Stop { fail }));
        impls.register("test/slow", Arc::new(Slow));
        let compiled = compile(
            Source::new("t.kdl", PIPELINE.to_string()),
            &registry,
            &Limits::default(),
        )
        .map_err(|_| "compile")
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let mut options = RunOptions::new(dir.path());
        options.console = ConsoleMode::Quiet;
        options.jobs = 2;
        options.force = force;
        options.env = Arc::new(|_| None);
        let report = execute(&compiled, &registry, &impls, options)
            .await
            .unwrap();
        (report, dir)
    }

    fn events(r: &RunReport) -> Vec<Event> {
        read_tolerant(&r.run_dir.join("events.jsonl"))
            .unwrap()
            .events
            .into_iter()
            .map(|l| l.event)
            .collect()
    }

    fn outcome(r: &RunReport, stage: &str) -> (Outcome, Option<String>) {
        let s = r.manifest.stage(stage).unwrap();
        (s.outcome, s.reason.clone())
    }

    #[tokio::test]
    async fn a_stop_ends_the_run_cleanly() {
        let (r, _dir) = run(false, false).await;
        assert_eq!((r.status, r.exit_code), (RunStatus::Succeeded, 0));
        assert_eq!(outcome(&r, "first"), (Outcome::Succeeded, None));
        // Already running when the stop arrived: it finishes.
        assert_eq!(outcome(&r, "other"), (Outcome::Succeeded, None));
        let why = Some("`first` stopped the run".to_string());
        assert_eq!(outcome(&r, "after"), (Outcome::NotRun, why.clone()));
        assert_eq!(outcome(&r, "last"), (Outcome::NotRun, why));
        let stopped = r.manifest.stopped.clone().unwrap();
        assert_eq!(stopped.stage, "first");
        assert_eq!(
            stopped.reason,
            "the head abc1234 was already reviewed: nothing new since"
        );
        assert_eq!(
            r.manifest.reason.as_deref(),
            Some(
                "`first` stopped the run: the head abc1234 was already reviewed: nothing new since"
            )
        );
        let events = events(&r);
        let end = events
            .iter()
            .position(|e| matches!(e, Event::StageEnd { stage, .. } if stage == "first"))
            .unwrap();
        let stops: Vec<usize> = (0..events.len())
            .filter(|&i| matches!(&events[i], Event::Stop { stage, .. } if stage == "first"))
            .collect();
        assert_eq!(stops.len(), 1, "{events:#?}");
        assert!(stops[0] > end, "the stop follows the stage's end");
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, Event::StageStart { stage } if stage == "after")),
            "{events:#?}"
        );
    }

    #[tokio::test]
    async fn force_refuses_the_stop() {
        let (r, _dir) = run(false, true).await;
        assert_eq!((r.status, r.exit_code), (RunStatus::Succeeded, 0));
        for s in ["first", "other", "after", "last"] {
            assert_eq!(outcome(&r, s), (Outcome::Succeeded, None), "{s}");
        }
        assert_eq!(r.manifest.stopped, None);
        assert_eq!(r.manifest.reason, None);
        let events = events(&r);
        assert!(!events.iter().any(|e| matches!(e, Event::Stop { .. })));
        assert!(
            events.iter().any(|e| matches!(e, Event::Status { stage, message }
                if stage == "first" && message.ends_with("nothing new since; --force: the run goes on"))),
            "{events:#?}"
        );
    }

    #[tokio::test]
    async fn a_stage_that_fails_after_asking_fails_the_run() {
        let (r, _dir) = run(true, false).await;
        assert_eq!((r.status, r.exit_code), (RunStatus::Failed, 1));
        assert_eq!(r.manifest.stopped, None);
        assert_eq!(outcome(&r, "first").0, Outcome::Failed);
        assert_eq!(
            outcome(&r, "after"),
            (Outcome::NotRun, Some("stage `first` failed".into()))
        );
        assert!(!events(&r).iter().any(|e| matches!(e, Event::Stop { .. })));
    }
}
