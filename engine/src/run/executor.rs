//! `execute`: from a compiled pipeline to a finished run — the checks that gate it, inputs,
//! secrets, identity, resume admission, the run directory, the scheduler, the final manifest.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use super::atomic;
use super::clock;
use super::console::{ConsoleMode, random_hex};
use super::digest::sha256;
use super::error::RunError;
use super::events::Event;
use super::identity::Identity;
use super::implementations::Implementations;
use super::manifest::{MANIFEST_FORMAT_VERSION, Manifest, PipelineInfo, StageRecord};
use super::options::RunOptions;
use super::outcome::{EXIT_FAILED, EXIT_OK, Outcome, RunStatus, exit_for_signal};
use super::partial::Partial;
use super::private::{AtRest, RunLock};
use super::reporter::Reporter;
use super::resume::{self, Admitted, Reuse, ReusedStage};
use super::scheduler::{Ended, Plan, Shared, schedule};
use super::secrets::{RunSecrets, SecretState};
use super::stage::StageImpl;
use super::work_root::WorkRoot;
use super::{mask, summary};
use crate::compile::{CheckOptions, Compiled, run_checks};
use crate::contract::StageContract;
use crate::exec::confine::reaper::{self, LiveRun, Orphans};
use crate::exec::confine::{ConfineSpec, Isolation, Level, kernel};
use crate::exec::redact::Redactor;
use crate::finding::{Finding, Label, Severity};
use crate::flow::Flow;
use crate::inputs::resolve_inputs;
use crate::model::Pipeline;
use crate::platform::HandOver;
use crate::registry::Registry;

/// How a run that started ended.
#[derive(Debug, Clone)]
pub struct RunReport {
    pub run_id: String,
    pub run_dir: PathBuf,
    pub status: RunStatus,
    pub exit_code: u8,
    pub manifest: Manifest,
}

/// Runs `compiled`. Refuses (exit 2, nothing created) a pipeline with live error findings, stage
/// kinds without an implementation, bad inputs, and a resume that is not admitted.
pub async fn execute(
    compiled: &Compiled,
    registry: &Registry,
    implementations: &Implementations,
    options: RunOptions,
) -> Result<RunReport, RunError> {
    let flow = gate(compiled, registry)?;
    let pipeline = &compiled.pipeline;
    let mut partial = select_stages(compiled, &options)?;
    // What must not outlive the run in plaintext (docs/executor.md, "Nothing private at rest").
    let at_rest = super::private::AtRest::compute(pipeline, registry, &flow);
    let kinds = implementations_of(pipeline, registry, implementations)?;
    let (level, isolation) = assess_isolation(pipeline, &options)?;

    let started = Instant::now();
    let started_at = clock::now();
    let run_id = format!(
        "{}-{}",
        clock::compact(std::time::SystemTime::now()),
        random_hex(4)
    );
    let Given {
        secrets,
        redactor,
        inputs,
        shown_inputs,
        identity,
    } = read_inputs(pipeline, &options, &run_id)?;
    let admitted = admit(&options, &identity).await?;
    let carried = check_parent(pipeline, &mut partial, admitted.as_ref())?;

    // From here on the run exists.
    let (run, lock) = Run::open(
        compiled, &options, &flow, run_id, secrets, redactor, partial,
    )
    .await?;
    let parent = admitted.as_ref().map(|a| a.id.clone());
    let mut manifest = run.first_manifest(parent, identity, shown_inputs, &isolation, started_at);
    run.announce(&manifest, &isolation).await;
    let reuse = run.reuse(admitted, &carried, &manifest).await;
    run.warn_secrets();
    let ending = match run
        .not_handed_over(&reuse, &carried, &manifest)
        .or_else(|| run.missing_secrets())
    {
        Some(refused) => refused,
        None => {
            run.run_stages(kinds, inputs, level, reuse.stages, &mut manifest)
                .await
        }
    };
    Ok(run.end(manifest, ending, at_rest, lock, started).await)
}

/// How the stages ended, as the manifest keeps it: records, status, exit code, reason.
type Ending = (Vec<StageRecord>, RunStatus, u8, Option<String>);

/// What the registry gives the stages: each stage's implementation and contract, in file order,
/// and the names the registered platforms' hand-overs refuse in a kept folder.
struct Kinds {
    impls: Vec<Arc<dyn StageImpl>>,
    contracts: Vec<Arc<StageContract>>,
    hand_over: Vec<&'static HandOver>,
}

/// The checks that gate a run: its live error findings refuse it; the flow analysis, which a
/// cycle prevents, is what the run goes on with.
fn gate(compiled: &Compiled, registry: &Registry) -> Result<Flow, RunError> {
    let findings: Vec<_> = run_checks(compiled, registry, CheckOptions::default())
        .into_iter()
        .filter(|f| f.suppressed.is_none() && f.severity == Severity::Error)
        .collect();
    let flow = Flow::compute(&compiled.pipeline, registry, &compiled.dag);
    let (Some(flow), true) = (flow, findings.is_empty()) else {
        return Err(RunError::Check { findings });
    };
    Ok(flow)
}

/// `--stages`: which stages run, and which must come from the parent.
fn select_stages(compiled: &Compiled, options: &RunOptions) -> Result<Option<Partial>, RunError> {
    let Some(names) = &options.stages else {
        return Ok(None);
    };
    let only = super::partial::select(&compiled.pipeline, &compiled.dag, names)
        .map_err(|message| RunError::Stages { message })?;
    let upstream = super::partial::upstream(&compiled.dag, &only);
    Ok(Some(Partial {
        only,
        upstream: upstream.into_iter().collect(),
        ..Default::default()
    }))
}

/// Each stage's implementation and contract; every kind without an implementation refuses the
/// run, with the stages that use it.
fn implementations_of(
    pipeline: &Pipeline,
    registry: &Registry,
    implementations: &Implementations,
) -> Result<Kinds, RunError> {
    let mut unimplemented: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut impls = Vec::with_capacity(pipeline.stages.len());
    let mut contracts = Vec::with_capacity(pipeline.stages.len());
    // One copy of each kind's contract, shared by its stages.
    let mut shared: BTreeMap<&str, Arc<StageContract>> = BTreeMap::new();
    for stage in &pipeline.stages {
        let kind = stage.uses.value.as_str();
        match (implementations.get(kind), registry.get(kind)) {
            (Some(i), Some(c)) => {
                impls.push(i.clone());
                contracts.push(Arc::clone(
                    shared.entry(kind).or_insert_with(|| Arc::new(c.clone())),
                ));
            }
            _ => unimplemented
                .entry(stage.uses.value.clone())
                .or_default()
                .push(stage.name.value.clone()),
        }
    }
    if !unimplemented.is_empty() {
        return Err(RunError::Unimplemented {
            kinds: unimplemented.into_iter().collect(),
        });
    }
    // Every registered platform's rule, not only the one the run is on: a run that keeps a
    // folder locally must not be refused only once exported.
    let hand_over = registry.platforms().filter_map(|p| p.hand_over()).collect();
    Ok(Kinds {
        impls,
        contracts,
        hand_over,
    })
}

/// Isolation: what the kernel and the process offer, decided once for the run. A strict
/// pipeline refuses to run without every layer.
fn assess_isolation(
    pipeline: &Pipeline,
    options: &RunOptions,
) -> Result<(Level, Isolation), RunError> {
    let level: Level = pipeline
        .isolation
        .as_ref()
        .map(|i| i.value.into())
        .unwrap_or_default();
    let subreaper = reaper::become_subreaper().is_ok();
    let isolation = Isolation::assess(
        level,
        &kernel(),
        subreaper,
        options.confine_children,
        &options.process_layers,
    );
    if level == Level::Strict && isolation.missing().next().is_some() {
        return Err(RunError::Check {
            findings: vec![strict_refusal(pipeline, &isolation)],
        });
    }
    Ok((level, isolation))
}

/// What the run was given: its secrets, its inputs (and how every record shows them), and the
/// identity they make.
struct Given {
    secrets: RunSecrets,
    redactor: Redactor,
    inputs: BTreeMap<String, String>,
    shown_inputs: BTreeMap<String, String>,
    identity: Identity,
}

/// Reads the secrets and resolves the inputs (builtin ones included); bad inputs refuse the run.
fn read_inputs(pipeline: &Pipeline, options: &RunOptions, run_id: &str) -> Result<Given, RunError> {
    let mut builtins = BTreeMap::from([
        ("repo".to_string(), folder_name(&options.checkout)),
        ("change".to_string(), "local".to_string()),
    ]);
    builtins.extend(options.builtin_inputs.clone());
    builtins.insert("run".into(), run_id.to_owned());
    // Secrets first: an input that carries a secret's value is shown redacted in every record
    // (an input error, the identity, the manifest); only the stages get the real value.
    let secrets = RunSecrets::read(pipeline, options.env.as_ref());
    let redactor = secrets.redactor()?;
    let inputs = resolve_inputs(pipeline, &builtins, options.env.as_ref()).map_err(|errors| {
        let show =
            |input: &str, value: &str| secrets.shown_input(pipeline, &redactor, input, value);
        RunError::Inputs {
            errors: errors.into_iter().map(|e| e.redacted(show)).collect(),
        }
    })?;
    let shown_inputs = secrets.shown_inputs(pipeline, &redactor, &inputs);
    let identity = Identity::new(
        pipeline,
        &shown_inputs,
        options.commits.clone(),
        &options.mode,
    );
    Ok(Given {
        secrets,
        redactor,
        inputs,
        shown_inputs,
        identity,
    })
}

/// `--resume`: the parent run, admitted for this identity, or the refusal.
async fn admit(options: &RunOptions, identity: &Identity) -> Result<Option<Admitted>, RunError> {
    let Some(parent) = &options.resume else {
        return Ok(None);
    };
    let runs_dir = options.runs_dir.clone();
    let checkout = options.checkout.clone();
    let parent = parent.clone();
    let id = identity.clone();
    let allow = options.allow_model_change;
    let admitted = tokio::task::spawn_blocking(move || {
        // The parent is read through the runs folder: no link on the way to it.
        crate::nofollow::ensure_dir_in_checkout(&checkout, &runs_dir, 0o700).map_err(|e| {
            resume::ResumeError::Unsafe {
                message: e.to_string(),
            }
        })?;
        resume::admit(&runs_dir, &parent, &id, allow)
    })
    .await
    .map_err(|e| RunError::RunDir {
        path: options.runs_dir.clone(),
        source: std::io::Error::other(e),
    })??;
    Ok(Some(admitted))
}

/// A partial run refuses, before anything exists, when the parent lacks what it needs. Returns
/// the stages it carries from the parent as the parent decided them, and notes in `partial`
/// which of them fell back there.
fn check_parent(
    pipeline: &Pipeline,
    partial: &mut Option<Partial>,
    admitted: Option<&Admitted>,
) -> Result<BTreeSet<usize>, RunError> {
    let mut carried = BTreeSet::new();
    if let Some(p) = partial {
        let upstream: Vec<usize> = p.upstream.iter().copied().collect();
        super::partial::check_parent(
            pipeline,
            &upstream,
            admitted.map(|a| (a.id.as_str(), &a.manifest)),
        )
        .map_err(|message| RunError::Stages { message })?;
        if let Some(a) = admitted {
            carried = p.carried(pipeline, &a.manifest);
            p.fell_back = carried
                .iter()
                .copied()
                .filter(|&i| {
                    a.manifest
                        .stage(&pipeline.stages[i].name.value)
                        .is_some_and(|r| r.outcome == Outcome::FellBack)
                })
                .collect();
            p.parent = a.id.clone();
        }
    }
    Ok(carried)
}

/// A run that exists: its folder and its events log, and what its later phases read.
struct Run<'a> {
    compiled: &'a Compiled,
    options: &'a RunOptions,
    flow: &'a Flow,
    run_id: String,
    run_dir: PathBuf,
    reporter: Reporter,
    secrets: RunSecrets,
    redactor: Redactor,
    partial: Option<Partial>,
}

impl<'a> Run<'a> {
    /// Creates the run's folder, holds its lock for the run's life, and starts its log.
    async fn open(
        compiled: &'a Compiled,
        options: &'a RunOptions,
        flow: &'a Flow,
        run_id: String,
        secrets: RunSecrets,
        redactor: Redactor,
        partial: Option<Partial>,
    ) -> Result<(Self, RunLock), RunError> {
        let run_dir = options.runs_dir.join(&run_id);
        create_run_dir(&options.checkout, &options.runs_dir, &run_dir)
            .await
            .map_err(|source| RunError::RunDir {
                path: run_dir.clone(),
                source,
            })?;
        // Held for the run's life: a run whose lock can be taken is not alive (leftovers.rs).
        let lock = RunLock::hold(&run_dir)
            .await
            .map_err(|source| RunError::RunDir {
                path: run_dir.clone(),
                source,
            })?;
        let reporter = Reporter::start(
            Some(run_dir.join("events.jsonl")),
            options.console,
            options.platform.clone(),
            options.exit_decided_after,
            redactor.clone(),
        )
        .map_err(|source| RunError::RunDir {
            path: run_dir.clone(),
            source,
        })?;
        if options.console == ConsoleMode::Platform {
            reporter.mask(mask::mask_lines(secrets.values()));
        }
        let run = Run {
            compiled,
            options,
            flow,
            run_id,
            run_dir,
            reporter,
            secrets,
            redactor,
            partial,
        };
        Ok((run, lock))
    }

    fn pipeline(&self) -> &'a Pipeline {
        &self.compiled.pipeline
    }

    /// The manifest of the run while it goes on.
    fn first_manifest(
        &self,
        parent: Option<String>,
        identity: Identity,
        shown_inputs: BTreeMap<String, String>,
        isolation: &Isolation,
        started_at: String,
    ) -> Manifest {
        let source_digest = sha256(self.compiled.source.text().as_bytes());
        Manifest {
            version: MANIFEST_FORMAT_VERSION,
            run_id: self.run_id.clone(),
            parent,
            is_final: false,
            status: RunStatus::Running,
            exit_code: None,
            reason: None,
            stopped: None,
            pipeline: PipelineInfo {
                name: self.pipeline().name.as_ref().map(|n| n.value.clone()),
                file: self.compiled.source.name().to_string(),
                source_digest,
            },
            identity_digest: identity.digest(),
            identity,
            inputs: shown_inputs,
            secrets: self.secrets.states.clone(),
            isolation: Some(isolation.clone()),
            started_at,
            ended_at: None,
            duration_ms: None,
            stages: Vec::new(),
        }
    }

    /// Says the run started and writes its first manifest, then tends the runs folder (what
    /// earlier runs left, the oldest runs) and warns of what the run cannot prevent.
    async fn announce(&self, manifest: &Manifest, isolation: &Isolation) {
        let options = self.options;
        let reporter = &self.reporter;
        reporter.event(Event::RunStart {
            run_id: self.run_id.clone(),
            pipeline: manifest.pipeline.name.clone(),
            identity: manifest.identity_digest.clone(),
            parent: manifest.parent.clone(),
            isolation: isolation
                .layers
                .iter()
                .filter(|l| l.held)
                .map(|l| l.name.clone())
                .collect(),
        });
        write_manifest(&self.run_dir, manifest, reporter).await;
        for warning in &options.warnings {
            reporter.event(Event::Warning {
                stage: None,
                message: warning.clone(),
            });
        }
        super::leftovers::clean(&options.runs_dir, &self.run_id, &options.temp_dir, reporter).await;
        super::retention::prune(
            &options.runs_dir,
            &options.temp_dir,
            options.keep_runs,
            options.resume.as_deref(),
            &self.run_id,
            reporter,
        )
        .await;
        // No stage reaches the checkout's `.git`, but every other step of the job does.
        let checkout = options.checkout.clone();
        if let Ok(Some(warning)) = tokio::task::spawn_blocking(move || {
            super::git_credentials::git_config_credentials(&checkout)
        })
        .await
        {
            reporter.event(Event::Warning {
                stage: None,
                message: warning,
            });
        }
        for layer in isolation.missing() {
            reporter.event(Event::Warning {
                stage: None,
                message: layer.warning(),
            });
        }
    }

    /// What the admitted parent hands over: the stages that still verify. What is not reused,
    /// and why, is said.
    async fn reuse(
        &self,
        admitted: Option<Admitted>,
        carried: &BTreeSet<usize>,
        manifest: &Manifest,
    ) -> Reuse {
        let Some(a) = admitted else {
            return Reuse::default();
        };
        let pipeline = self.pipeline();
        let reporter = &self.reporter;
        let pipeline_c = pipeline.clone();
        let dag = self.compiled.dag.clone();
        let dir = self.run_dir.clone();
        // What this run decides without running: a partial run's carried and outside stages.
        let mut idle = carried.clone();
        if let Some(p) = &self.partial {
            idle.extend((0..pipeline.stages.len()).filter(|&i| p.outside(i)));
        }
        let (a, reuse) = tokio::task::spawn_blocking(move || {
            let r = resume::reuse_guarded(&a, &pipeline_c, &dag, &dir, &idle);
            (a, r)
        })
        .await
        .unwrap_or_else(|e| {
            // A panic in reuse is a bug; run everything rather than trust half a reuse.
            let _ = e;
            (
                Admitted {
                    id: manifest.parent.clone().unwrap_or_default(),
                    dir: PathBuf::new(),
                    manifest: manifest.clone(),
                    model_changes: Vec::new(),
                },
                Reuse::default(),
            )
        });
        if let Some(why) = &reuse.failed {
            reporter.event(Event::Warning {
                stage: None,
                message: format!(
                    "reusing the stages of run {} failed (a bug: {why}): every stage runs again",
                    a.id
                ),
            });
        }
        // One bounded line however many there are: the first few are named, the rest counted.
        if reuse.dropped_event_lines.count > 0 {
            reporter.event(Event::Warning {
                stage: None,
                message: format!(
                    "the events log of run {} has {} unreadable line(s) ({}); ignored: the manifest decides what is reused",
                    a.id,
                    reuse.dropped_event_lines.count,
                    reuse.dropped_event_lines.lines_text()
                ),
            });
        }
        for (stage, why) in &reuse.not_reused {
            reporter.event(Event::Warning {
                stage: Some(stage.clone()),
                message: format!("not reused: {why}"),
            });
        }
        reporter.event(Event::ResumeLineage {
            parent: a.id.clone(),
            parent_identity: a.manifest.identity_digest.clone(),
            reused: reuse
                .stages
                .keys()
                .map(|&i| pipeline.stages[i].name.value.clone())
                .collect(),
            model_changes: a.model_changes.iter().map(ToString::to_string).collect(),
        });
        reuse
    }

    /// Warns of secrets too short to be redacted, and of each secret whose absence disables
    /// the stages that hold it.
    fn warn_secrets(&self) {
        let pipeline = self.pipeline();
        let secrets = &self.secrets;
        for name in self.redactor.skipped() {
            self.reporter.event(Event::Warning {
                stage: None,
                message: format!("secret `{name}` is too short to be redacted from output"),
            });
        }
        for (k, s) in pipeline.secrets.iter().enumerate() {
            // A partial run says nothing of another job's secrets.
            if self
                .partial
                .as_ref()
                .is_some_and(|p| !p.holds(self.flow, k))
            {
                continue;
            }
            let state = secrets.states.get(&s.name.value).copied();
            if state != Some(SecretState::Present)
                && s.on_missing.value == crate::model::OnMissing::Disable
            {
                let what = match state {
                    Some(SecretState::TooShort | SecretState::Empty) => {
                        format!(
                            "in ${} {}",
                            s.env.value,
                            state.map_or("", SecretState::says)
                        )
                    }
                    _ => format!("is not set (${})", s.env.value),
                };
                // Say how to turn the stages on, not only that they are off.
                let how = match s.min_bytes.as_ref().map(|m| m.value).filter(|&m| m > 0) {
                    Some(min) => format!(
                        "set ${} to at least {min} bytes (e.g. `openssl rand -base64 {}`)",
                        s.env.value,
                        min.max(32)
                    ),
                    None if state == Some(SecretState::Empty) => {
                        format!("set ${} to a value that is not empty", s.env.value)
                    }
                    None => format!("set ${}", s.env.value),
                };
                self.reporter.event(Event::Warning {
                    stage: None,
                    message: format!(
                        "secret `{}` {what}: the stages that hold it take their fallback; to run them, {how}",
                        s.name.value
                    ),
                });
            }
        }
    }

    /// A partial run's refusal when a stage upstream was not handed over: every one must be
    /// reused, or decided again as the parent decided it.
    fn not_handed_over(
        &self,
        reuse: &Reuse,
        carried: &BTreeSet<usize>,
        manifest: &Manifest,
    ) -> Option<Ending> {
        let pipeline = self.pipeline();
        let unhanded: Vec<String> = self
            .partial
            .as_ref()
            .map(|p| {
                p.upstream
                    .iter()
                    .filter(|i| !reuse.stages.contains_key(i) && !carried.contains(i))
                    .map(|&i| pipeline.stages[i].name.value.clone())
                    .collect()
            })
            .unwrap_or_default();
        if unhanded.is_empty() {
            return None;
        }
        let reason = format!(
            "--stages needs {} from run {}, which did not verify or must run again: nothing ran",
            unhanded
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", "),
            manifest.parent.clone().unwrap_or_default()
        );
        self.reporter.event(Event::Error {
            stage: None,
            message: reason.clone(),
        });
        Some((
            nothing_ran(pipeline, "the stages --stages needs were not handed over"),
            RunStatus::Failed,
            EXIT_FAILED,
            Some(reason),
        ))
    }

    /// The refusal when a required secret is missing. A partial run requires only its own
    /// stages' secrets: the others are another job's.
    fn missing_secrets(&self) -> Option<Ending> {
        let pipeline = self.pipeline();
        let secrets = &self.secrets;
        let mut missing = secrets.missing_required(pipeline);
        if let Some(p) = &self.partial {
            missing.retain(|k| {
                pipeline
                    .secret_position(k)
                    .is_some_and(|x| p.holds(self.flow, x))
            });
        }
        if missing.is_empty() {
            return None;
        }
        let reason = missing
            .iter()
            .map(|k| {
                let env = pipeline
                    .secret(k)
                    .map(|s| s.env.value.clone())
                    .unwrap_or_default();
                let state = secrets.states.get(k.as_str()).copied();
                if state == Some(SecretState::Empty) {
                    format!(
                        "secret `{k}` in ${env} is set but empty (on-missing=\"fail\"): nothing ran"
                    )
                } else if state == Some(SecretState::TooShort) {
                    let min = pipeline
                        .secret(k)
                        .and_then(|s| s.min_bytes.as_ref())
                        .map_or(0, |m| m.value);
                    format!(
                        "secret `{k}` in ${env} is too short (it needs at least {min} bytes; on-missing=\"fail\"): nothing ran"
                    )
                } else {
                    format!("secret `{k}` is not set (set ${env}; on-missing=\"fail\"): nothing ran")
                }
            })
            .collect::<Vec<_>>()
            .join("; ");
        self.reporter.event(Event::Error {
            stage: None,
            message: reason.clone(),
        });
        Some((
            nothing_ran(pipeline, "a required secret is not set or is too short"),
            RunStatus::Failed,
            EXIT_FAILED,
            Some(reason),
        ))
    }

    /// Runs the stages with the scheduler, then ends what they left behind. A stage that
    /// stopped the run is noted in `manifest`.
    async fn run_stages(
        &self,
        kinds: Kinds,
        inputs: BTreeMap<String, String>,
        level: Level,
        reused: BTreeMap<usize, ReusedStage>,
        manifest: &mut Manifest,
    ) -> Ending {
        let options = self.options;
        let (run_id, reporter) = (&self.run_id, &self.reporter);
        let live = LiveRun::start(format!("{run_id}."));
        let work_root = super::private::work_root(&options.temp_dir, run_id);
        // As root, the stages' children share a view and are told apart by group (docs/executor.md).
        let groups = options
            .confine_children
            .then(crate::exec::confine::groups::Groups::available)
            .and_then(Result::ok);
        let work_root_made = WorkRoot::make(
            &work_root,
            options.private_mounts.is_some(),
            groups,
            reporter,
        )
        .await;
        let shared = self.shared(
            kinds,
            inputs,
            level,
            (
                &work_root,
                work_root_made.in_memory(),
                work_root_made.groups(),
            ),
            live.prefix(),
        );
        let ended = schedule(Plan {
            shared,
            dag: &self.compiled.dag,
            flow: self.flow,
            secrets: &self.secrets,
            jobs: options.jobs,
            cancel: options.cancel.clone(),
            reporter,
            reused,
            parent: manifest.parent.clone(),
            partial: self.partial.clone(),
        })
        .await;
        // Whatever the stages left behind and no stage end caught, the run's end does.
        let prefix = live.prefix().to_string();
        let swept =
            tokio::task::spawn_blocking(move || reaper::end_orphans(Orphans::OfRun(&prefix)))
                .await
                .unwrap_or_default();
        drop(live);
        // No process of the run is left to use its folders: a tmpfs goes now, with all it holds.
        drop(work_root_made);
        crate::exec::confine::cgroup::remove_idle_tree();
        if swept.ended > 0 {
            reporter.event(Event::Warning {
                stage: None,
                message: format!(
                    "ended {} process(es) left behind by the run's stages",
                    swept.ended
                ),
            });
        }
        ending(ended, manifest)
    }

    /// What every stage task shares. A stage that holds a secret or reads a private value is
    /// sensitive: it gets a network namespace of its own.
    fn shared(
        &self,
        Kinds {
            impls,
            contracts,
            hand_over,
        }: Kinds,
        inputs: BTreeMap<String, String>,
        level: Level,
        (work_root, work_in_memory, groups): (
            &Path,
            bool,
            Option<crate::exec::confine::groups::Groups>,
        ),
        marker_prefix: &str,
    ) -> Arc<Shared> {
        let pipeline = self.pipeline();
        let options = self.options;
        let (run_id, flow) = (&self.run_id, self.flow);
        Arc::new(Shared {
            pipeline: pipeline.clone(),
            contracts,
            impls,
            inputs,
            redactor: self.redactor.clone(),
            run_id: run_id.clone(),
            run_dir: self.run_dir.clone(),
            checkout: options.checkout.clone(),
            work_root: super::private::work_root(&options.temp_dir, run_id),
            work_in_memory,
            groups,
            grace: options.grace,
            extensions: options.extensions.clone(),
            confine: options
                .confine_children
                .then(|| stage_confinement(options, level, work_root)),
            sensitive: (0..pipeline.stages.len())
                .map(|i| {
                    flow.held.get(i).is_none_or(|h| !h.is_empty())
                        || flow.inputs.get(i).is_none_or(|inputs| {
                            inputs
                                .iter()
                                .any(|x| x.labels.private || x.labels.secrets().next().is_some())
                        })
                })
                .collect(),
            common_net: Default::default(),
            common_ipc: Default::default(),
            marker_prefix: marker_prefix.to_owned(),
            force: options.force,
            hand_over,
            slots: crate::exec::slot::Slots::new(options.jobs),
        })
    }

    /// Ends the run: what must not stay at rest goes, the final manifest is written, the lock
    /// says the run ended, and the step summary is appended.
    async fn end(
        self,
        mut manifest: Manifest,
        (records, status, exit_code, reason): Ending,
        at_rest: AtRest,
        lock: RunLock,
        started: Instant,
    ) -> RunReport {
        let options = self.options;
        let (run_dir, reporter, redactor) = (&self.run_dir, &self.reporter, &self.redactor);
        manifest.stages = records;
        at_rest
            .discard(
                run_dir,
                &options.temp_dir,
                &self.run_id,
                &mut manifest.stages,
                reporter,
            )
            .await;
        manifest.status = status;
        manifest.exit_code = Some(exit_code);
        manifest.reason =
            reason.map(|r| String::from_utf8_lossy(&redactor.redact(r.as_bytes())).into_owned());
        manifest.ended_at = Some(clock::now());
        manifest.duration_ms = Some(started.elapsed().as_millis() as u64);
        manifest.is_final = true;
        reporter.event(Event::RunEnd { status, exit_code });
        reporter.flush().await;
        write_manifest(run_dir, &manifest, reporter).await;
        // Its plaintext is gone: later runs need not look at it again (leftovers.rs).
        lock.ended().await;
        if let Some(path) = options.step_summary.clone() {
            let text = summary::markdown(&manifest, &self.compiled.dag);
            let text = String::from_utf8_lossy(&redactor.redact(text.as_bytes())).into_owned();
            let shown = path.display().to_string();
            let result =
                tokio::task::spawn_blocking(move || summary::append_summary(path, text)).await;
            if !matches!(result, Ok(Ok(()))) {
                reporter.event(Event::Warning {
                    stage: None,
                    message: format!("cannot append the run summary to {shown}"),
                });
            }
        }
        self.reporter.close().await;
        RunReport {
            run_id: self.run_id,
            run_dir: self.run_dir,
            status,
            exit_code,
            manifest,
        }
    }
}

/// How the run ends after its stages did: interrupted, failed by a stage, or succeeded (a stage
/// that stopped the run is noted in `manifest`).
fn ending(ended: Ended, manifest: &mut Manifest) -> Ending {
    match (ended.interrupted, ended.failed) {
        (Some(sig), _) => (
            ended.records,
            RunStatus::Cancelled,
            exit_for_signal(sig),
            Some(format!(
                "interrupted by {}",
                super::events::signal_name(sig)
            )),
        ),
        (None, Some((stage, why))) => (
            ended.records,
            RunStatus::Failed,
            EXIT_FAILED,
            Some(format!("stage `{stage}` failed: {why}")),
        ),
        // A stage stopped the run: it succeeded, but the manifest says it is not complete.
        (None, None) => {
            let reason = ended
                .stopped
                .as_ref()
                .map(|(stage, why)| format!("`{stage}` stopped the run: {why}"));
            manifest.stopped = ended
                .stopped
                .map(|(stage, reason)| super::manifest::RunStop { stage, reason });
            (ended.records, RunStatus::Succeeded, EXIT_OK, reason)
        }
    }
}

/// What every stage's children may reach: the checkout (not `.reviewflow`, the run
/// directories, the stages' folders, the user's home), the system folders, their own folder.
fn stage_confinement(options: &RunOptions, level: Level, work_root: &Path) -> ConfineSpec {
    // Unreachable, not only unreadable: reviewflow's own folder, the runs, and git's folder,
    // whose `config` holds the job's token after `actions/checkout` (a stage sees the
    // checkout's files, never its repository).
    let mut spec = ConfineSpec::new()
        .read(&options.checkout)
        .cover(options.checkout.join(".reviewflow"))
        .cover(&options.runs_dir)
        .cover(options.checkout.join(".git"))
        .hide(&options.temp_dir);
    spec.work_root = Some(work_root.to_path_buf());
    if let Some(home) = (options.env)("HOME").map(PathBuf::from)
        && home.is_absolute()
    {
        spec = spec.hide(home);
    }
    spec.strict = level == Level::Strict;
    spec
}

/// The refusal of an `isolation "strict"` pipeline on a platform that lacks a layer.
fn strict_refusal(pipeline: &Pipeline, isolation: &Isolation) -> Finding {
    let names: Vec<&str> = isolation.missing().map(|l| l.name.as_str()).collect();
    let details: Vec<String> = isolation
        .missing()
        .map(|l| format!("{}: {}", l.name, l.detail))
        .collect();
    let span = pipeline
        .isolation
        .as_ref()
        .map(|i| i.span)
        .unwrap_or_default();
    Finding::new(
        "isolation",
        Severity::Error,
        format!(
            "isolation \"strict\" requires every isolation layer, and this platform lacks {} ({}) — {}",
            names.len(),
            names.join(", "),
            details.join("; ")
        ),
        Label::new(span, "every layer required here"),
    )
    .help(
        "run as root (`sudo -E reviewflow run …`) on Linux 6.12 or later (Landlock ABI 6) with cgroup v2 writable, or declare `isolation \"best-effort\"` to run with what holds (each missing layer is then a warning); docs/isolation.md says which layer holds where",
    )
}

fn folder_name(p: &Path) -> String {
    std::fs::canonicalize(p)
        .ok()
        .as_deref()
        .unwrap_or(p)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Creates the runs folder (inside the checkout: one component at a time, no link followed,
/// `.reviewflow` with its `.gitignore`) and the run's own folder in it.
async fn create_run_dir(checkout: &Path, runs_dir: &Path, run_dir: &Path) -> std::io::Result<()> {
    let checkout = checkout.to_path_buf();
    let runs_dir = runs_dir.to_path_buf();
    let run_dir = run_dir.to_path_buf();
    tokio::task::spawn_blocking(move || {
        use std::os::unix::fs::DirBuilderExt as _;
        crate::nofollow::ensure_dir_in_checkout(&checkout, &runs_dir, 0o700)?;
        // Not recursive: an existing folder of that name is an error, never shared.
        std::fs::DirBuilder::new().mode(0o700).create(&run_dir)
    })
    .await
    .map_err(std::io::Error::other)?
}

/// Writes the manifest atomically; a failure is reported, not fatal (the events log remains).
async fn write_manifest(run_dir: &Path, manifest: &Manifest, reporter: &Reporter) {
    let mut json = serde_json::to_vec_pretty(manifest).unwrap_or_default();
    json.push(b'\n');
    if let Err(e) = atomic::write(run_dir.join("manifest.json"), json).await {
        reporter.event(Event::Warning {
            stage: None,
            message: format!("cannot write manifest.json: {e}"),
        });
    }
}

/// Every stage's record when the run ends before any starts: not run, and why.
fn nothing_ran(pipeline: &Pipeline, why: &str) -> Vec<StageRecord> {
    pipeline
        .stages
        .iter()
        .map(|s| StageRecord {
            name: s.name.value.clone(),
            kind: s.uses.value.clone(),
            outcome: Outcome::NotRun,
            started_at: None,
            duration_ms: 0,
            reason: Some(why.into()),
            outputs: BTreeMap::new(),
            reused_from: None,
            facts: BTreeMap::new(),
        })
        .collect()
}
