//! The `.gitlab-ci.yml` of a pipeline (docs/gitlab.md, "The exported pipeline"): one job per job
//! of the [partition](reviewflow_engine::export::partition), each running its stages with
//! `reviewflow run --stages` and handing its run folder to the next job as an artifact.
//!
//! The text is written directly, as the GitHub workflow is: the comments are part of the output,
//! and every value that is not a fixed word goes through [`scalar`].

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use reviewflow_engine::export::partition::{Partition, partition};
use reviewflow_engine::flow::Flow;
use reviewflow_engine::graph::Dag;
use reviewflow_engine::model::{Pipeline, Secret, Stage};
use reviewflow_engine::registry::Registry;

use super::fit::JOB_TOKEN;
use crate::platform::github::export::workflow::{
    and_list, comment_text, is_yaml_word, reads_instruction_files, reasons, scalar, shell_word,
    timeout_minutes,
};
use crate::platform::gitlab::events::TRIGGERS;
use crate::platform::gitlab::syntax::is_environment_name;
use crate::store::gitlab_artifacts::STORE_DIR;

/// Where each job keeps run folders: the ones it took over, and its own.
const RUNS: &str = "reviewflow-runs";
/// The run folders present before the job's run, so that the one it adds is known.
const BEFORE: &str = "reviewflow-before.txt";
/// The `dotenv` report that hands the run's id to the next job.
const DOTENV: &str = "reviewflow.env";
/// The variable the next job reads the run's id from.
const PARENT: &str = "REVIEWFLOW_PARENT_RUN";

/// Keys GitLab reads at the top of `.gitlab-ci.yml` as something other than a job.
const RESERVED: &[&str] = &[
    "after_script",
    "before_script",
    "cache",
    "default",
    "image",
    "include",
    "pages",
    "services",
    "stages",
    "types",
    "variables",
    "workflow",
];

/// What the pipeline file is written from.
pub struct Source<'a> {
    pub pipeline: &'a Pipeline,
    pub registry: &'a Registry,
    pub dag: &'a Dag,
    pub flow: &'a Flow,
    /// The pipeline file as the jobs name it: relative to the repository's top.
    pub file: &'a str,
    /// The image every job runs in, `IMAGE@sha256:…` ([`super::parse_image`]).
    pub image: &'a str,
}

/// The `.gitlab-ci.yml`, deterministic for a given pipeline, file name and image.
pub fn pipeline(src: &Source<'_>) -> Result<String, String> {
    let parts = partition(src.pipeline, src.registry, src.dag, src.flow)
        .ok_or("the pipeline's stages form a cycle")?;
    if parts.jobs.is_empty() {
        return Err(
            "the pipeline has no stage, and a GitLab pipeline needs at least one job".into(),
        );
    }
    let ids = job_ids(src.pipeline, &parts);
    let mut environments = Vec::with_capacity(parts.jobs.len());
    for (job, id) in parts.jobs.iter().zip(&ids) {
        let secrets: Vec<&Secret> = job
            .secrets
            .iter()
            .map(|&s| &src.pipeline.secrets[s])
            .collect();
        environments.push(environment(src.pipeline, &secrets, id)?);
    }
    check_keeping_job(src.pipeline, &parts, &ids)?;
    let mut out = String::with_capacity(4096 + 2048 * parts.jobs.len());
    header(&mut out, src, &environments);
    workflow_rules(&mut out, src.pipeline);
    out.push_str(
        "\n# One stage per job, in the order the jobs resume each other's runs.\nstages:\n",
    );
    for id in &ids {
        let _ = writeln!(out, "  - {id}");
    }
    for (j, environment) in environments.iter().enumerate() {
        job(&mut out, src, &parts, &ids, environment.as_ref(), j);
    }
    Ok(out)
}

/// Whether a stage keeps blobs in a store (`std/post`'s `upload`): its job's artifacts hold
/// the store's folder.
fn keeps(stage: &Stage) -> bool {
    stage.uses.value == "std/post" && stage.children_named("upload").next().is_some()
}

/// A `gitlab-artifacts` rule that names a `job` must name the job that keeps: another job's
/// artifacts hold no entry, and every restore would run fresh.
fn check_keeping_job(pipeline: &Pipeline, parts: &Partition, ids: &[String]) -> Result<(), String> {
    let keeping: Vec<&str> = parts
        .jobs
        .iter()
        .zip(ids)
        .filter(|(job, _)| job.stages.iter().any(|&s| keeps(&pipeline.stages[s])))
        .map(|(_, id)| id.as_str())
        .collect();
    for store in pipeline
        .stores
        .iter()
        .filter(|s| s.kind.value == super::fit::GITLAB_ARTIFACTS)
    {
        for rule in &store.trust {
            let Some(job) = rule.setting("job").and_then(|v| v.value.as_str()) else {
                continue;
            };
            if keeping.is_empty() || keeping.contains(&job) {
                continue;
            }
            return Err(format!(
                "store `{}` trusts the artifacts of job `{job}`, but the job that keeps is `{}`:                  write `job=\"{}\"` in its trust rule",
                store.name.value,
                keeping.join("`, `"),
                keeping[0],
            ));
        }
    }
    Ok(())
}

/// A job's environment and the variables it holds there.
type Environment<'p> = (&'p str, Vec<&'p Secret>);

/// The environment a job runs in: the one its secrets name (a secret without `environment=` is
/// in the pipeline's, unless it is the job's own token). A job runs in one environment, so
/// secrets of two in one job cannot be exported.
fn environment<'p>(
    pipeline: &'p Pipeline,
    secrets: &[&'p Secret],
    job: &str,
) -> Result<Option<Environment<'p>>, String> {
    let mut found: Option<Environment<'p>> = None;
    for &secret in secrets {
        let env = match &secret.environment {
            Some(e) => e.value.as_str(),
            None if secret.env.value == JOB_TOKEN => continue,
            None => pipeline_name(pipeline),
        };
        if !is_environment_name(env) {
            return Err(format!(
                "secret `{}` would be in the GitLab environment `{}`, which GitLab cannot name \
                 safely (letters, digits, `-`, `_`, `.`, `/` and inner spaces, no `$`): give it \
                 an `environment=`",
                secret.name.value,
                env.escape_debug(),
            ));
        }
        match &mut found {
            None => found = Some((env, vec![secret])),
            Some((first, held)) if *first == env => held.push(secret),
            Some((first, held)) => {
                return Err(format!(
                    "job `{job}` would hold secrets of two environments, `{first}` (secret `{}`) \
                     and `{env}` (secret `{}`), and a job runs in one: give them one \
                     `environment=`, or keep the stages that read them apart",
                    held[0].name.value, secret.name.value
                ));
            }
        }
    }
    Ok(found)
}

fn pipeline_name(pipeline: &Pipeline) -> &str {
    pipeline
        .name
        .as_ref()
        .map_or("reviewflow", |n| n.value.as_str())
}

fn header(out: &mut String, src: &Source<'_>, environments: &[Option<Environment<'_>>]) {
    let _ = write!(
        out,
        "# Generated by `reviewflow export gitlab` from:\n\
         #   {}\n\
         # Do not edit it by hand: change the pipeline and export again (docs/gitlab.md).\n\
         #\n\
         # It runs only in pipelines of a protected ref, started by: {}.\n\
         # Every job runs the configuration of that ref, never a merge request's own.\n\
         # Each job is one trust boundary of the pipeline: it runs in at most one environment,\n\
         # and hands its run to the next job as an artifact. Every job runs in the image below,\n\
         # which must hold reviewflow and the reviewers its stages name.\n",
        comment_text(src.file),
        and_list(&sources(src.pipeline)),
    );
    // Which variables to create where: export cannot set a variable's scope.
    let mut by_environment: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (env, secrets) in environments.iter().flatten() {
        let vars = by_environment.entry(env).or_default();
        vars.extend(secrets.iter().map(|s| s.env.value.as_str()));
    }
    if !by_environment.is_empty() {
        out.push_str(
            "#\n\
             # Create each secret as a project variable (Settings > CI/CD > Variables) that is\n\
             # protected, masked and scoped to its environment, and protect each environment so\n\
             # that only the default branch runs jobs in it. A job in an environment gets every\n\
             # variable of it; reviewflow hands each secret to the stages the pipeline names alone.\n",
        );
        for (env, vars) in &by_environment {
            let vars: Vec<&str> = vars.iter().copied().collect();
            let _ = writeln!(
                out,
                "#   environment {}: {}",
                comment_text(env),
                vars.join(", ")
            );
        }
    }
}

/// The pipeline's sources, in the order GitLab's are listed, each once.
fn sources(pipeline: &Pipeline) -> Vec<&'static str> {
    TRIGGERS
        .iter()
        .map(|e| e.name)
        .filter(|name| pipeline.triggers.iter().any(|t| t.event.value == *name))
        .collect()
}

fn workflow_rules(out: &mut String, pipeline: &Pipeline) {
    out.push_str(
        "\n\
         # Only the sources the pipeline names, and only on a protected ref: the variables the\n\
         # jobs hold are protected, and no other pipeline of this file is created.\n\
         workflow:\n\
         \x20 rules:\n",
    );
    // The sources are fixed words of GitLab's list ([`sources`]).
    for source in sources(pipeline) {
        let _ = writeln!(
            out,
            "    - if: '$CI_PIPELINE_SOURCE == \"{source}\" && $CI_COMMIT_REF_PROTECTED == \"true\"'"
        );
    }
    out.push_str("    - when: never\n");
}

/// Job ids: the first stage's name, which is unique and a valid job name, except that a name
/// GitLab reads as a keyword, or YAML as a boolean or null, gets `-job` appended (and a number,
/// should that name be a stage's too).
fn job_ids(pipeline: &Pipeline, parts: &Partition) -> Vec<String> {
    let mut taken: BTreeSet<String> = pipeline
        .stages
        .iter()
        .map(|s| s.name.value.clone())
        .collect();
    parts
        .jobs
        .iter()
        .map(|j| {
            let name = &pipeline.stages[j.stages[0]].name.value;
            if !is_yaml_word(name) && !RESERVED.contains(&name.as_str()) {
                return name.clone();
            }
            let mut id = format!("{name}-job");
            let mut n = 2;
            while taken.contains(&id) {
                id = format!("{name}-job-{n}");
                n += 1;
            }
            taken.insert(id.clone());
            id
        })
        .collect()
}

/// The resource group of every job of one change's review: the pipeline's name and the variable
/// the forge's change setting (`merge-request="{mr}"`) reads its input from, which GitLab
/// expands. None when no variable names the change (every review would then share one group).
fn resource_group(src: &Source<'_>) -> Option<String> {
    let pipeline = src.pipeline;
    let forge = pipeline.forge.as_ref()?;
    let change = src.registry.forge(&forge.kind.value)?.change.as_deref()?;
    let value = reviewflow_engine::model::setting(&forge.settings, change)?;
    let reviewflow_engine::model::Value::Template(template) = &value.value else {
        return None;
    };
    let vars: Vec<&str> = template
        .inputs()
        .map(|(name, _)| {
            pipeline
                .inputs
                .iter()
                .find(|i| i.name.value == name && !i.builtin)
                .and_then(|i| i.env.as_ref())
                .map(|e| e.value.as_str())
        })
        .collect::<Option<_>>()?;
    if vars.is_empty() {
        return None;
    }
    let keys: Vec<String> = vars.iter().map(|v| format!("${v}")).collect();
    Some(format!("{}-{}", pipeline_name(pipeline), keys.join("-")))
}

fn job(
    out: &mut String,
    src: &Source<'_>,
    parts: &Partition,
    ids: &[String],
    environment: Option<&Environment<'_>>,
    j: usize,
) {
    let pipeline = src.pipeline;
    let stages: Vec<&Stage> = parts.jobs[j]
        .stages
        .iter()
        .map(|&s| &pipeline.stages[s])
        .collect();
    let names: Vec<&str> = stages.iter().map(|s| s.name.value.as_str()).collect();
    let id = &ids[j];
    out.push('\n');
    // The partition's comments are indented for GitHub's `jobs:`; jobs are top-level here.
    let mut why = String::new();
    reasons(&mut why, (pipeline, src.flow), parts, j, &names);
    for line in why.lines() {
        let _ = writeln!(out, "{}", line.strip_prefix("  ").unwrap_or(line));
    }
    let _ = writeln!(out, "{id}:");
    let _ = writeln!(out, "  stage: {id}");
    let _ = writeln!(out, "  image: {}", scalar(src.image));
    // A run resumes one parent, the job before it, whose artifact holds every earlier run: it
    // is the one job needed, and the one whose dotenv report names the run to resume.
    let parent = j.checked_sub(1);
    match parent {
        None => out.push_str("  needs: []\n"),
        Some(p) => {
            let _ = write!(
                out,
                "  needs:\n\
                 \x20   - job: {}\n\
                 \x20     artifacts: true\n",
                ids[p]
            );
        }
    }
    if let Some((env, secrets)) = environment {
        let vars: Vec<&str> = secrets.iter().map(|s| s.env.value.as_str()).collect();
        let _ = write!(
            out,
            "  # The environment whose variables hold {}; `access` reads them and deploys nothing.\n\
             \x20 environment:\n\
             \x20   name: {}\n\
             \x20   action: access\n",
            and_list(&vars),
            scalar(env),
        );
    }
    if let Some(group) = resource_group(src) {
        let _ = write!(
            out,
            "  # One job of a merge request's review at a time, across its pipelines: the\n\
             \x20 # other pipelines' jobs wait (two posts never race for its note).\n\
             \x20 resource_group: {}\n",
            scalar(&group)
        );
    }
    let _ = writeln!(out, "  timeout: {} minutes", timeout_minutes(&stages));
    // A lens or prompt file is read from the merge request's base commit (docs/lenses.md),
    // which a shallow clone lacks once the base branch has moved on.
    if stages.iter().any(|s| reads_instruction_files(s)) {
        out.push_str(
            "  variables:\n\
             \x20   # The base commit the lens and prompt files are read from (docs/lenses.md).\n\
             \x20   GIT_DEPTH: \"0\"\n",
        );
    }
    let last = j + 1 == parts.jobs.len();
    out.push_str("  script:\n");
    if !last {
        let _ = writeln!(
            out,
            "    - {}",
            scalar(&format!("mkdir -p {RUNS} && ls -1 {RUNS} > {BEFORE}"))
        );
    }
    let mut command = format!(
        "reviewflow run {} --stages {} --run-dir {RUNS}",
        shell_word(src.file),
        names.join(","),
    );
    if parent.is_some() {
        let _ = write!(command, " --resume \"${PARENT}\"");
    }
    let _ = writeln!(out, "    - {}", scalar(&command));
    if !last {
        // The run's folder is the one it added; its name is the run's id.
        let _ = writeln!(
            out,
            "    - {}",
            scalar(&format!(
                "echo \"{PARENT}=$(ls -1 {RUNS} | grep -vxFf {BEFORE})\" > {DOTENV}"
            ))
        );
    }
    // The runs whatever the outcome, to read; a run's private work folders are left out
    // should a killed run have left them (a run removes them itself). The job that keeps adds
    // the store's folder, which later pipelines read back through the API: GitLab keeps one
    // expiry per job, so its runs are kept as long.
    let keeping = stages.iter().any(|s| keeps(s));
    if keeping {
        out.push_str(
            "  # The store's folder: what std/post kept, read back by later pipelines (docs/gitlab.md).\n",
        );
    }
    let _ = write!(
        out,
        "  artifacts:\n\
         \x20   paths:\n\
         \x20     - {RUNS}/\n"
    );
    if keeping {
        let _ = writeln!(out, "      - {STORE_DIR}/");
    }
    let _ = write!(
        out,
        "  \x20 exclude:\n\
         \x20     - {RUNS}/reviewflow-*/**/*\n\
         \x20   expire_in: {}\n\
         \x20   when: always\n",
        if keeping { "30 days" } else { "1 day" }
    );
    if !last {
        let _ = write!(
            out,
            "    reports:\n\
             \x20     dotenv: {DOTENV}\n"
        );
    }
}
