//! The GitHub Actions workflow of a pipeline (`docs/export.md`, "The workflow"): one job per job
//! of the [partition](reviewflow_engine::export::partition), each running its stages with `reviewflow run --stages`
//! and handing its run directory to the next job as an artifact.
//!
//! The text is written directly rather than through a YAML serializer: the comments (why stages
//! share a job, why each permission is there) are part of the output, and every value that is
//! not a fixed word goes through [`scalar`].

use std::collections::BTreeMap;
use std::fmt::Write as _;

use reviewflow_engine::flow::Flow;
use reviewflow_engine::graph::Dag;
use reviewflow_engine::model::{Access, Pipeline, Stage};

use crate::platform::github::events::{DEFAULT_TYPES, TRIGGERS};
use reviewflow_engine::permission::parse_permission;
use reviewflow_engine::registry::Registry;

use reviewflow_engine::export::partition::{Carries, Partition, Reason, partition};

/// Actions, pinned by commit with the release the commit is.
pub const CHECKOUT: &str = "actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683 # v4.2.2";
pub const UPLOAD_ARTIFACT: &str =
    "actions/upload-artifact@ea165f8d65b6e75b540449e92b4886f43607fa02 # v4.6.2";
pub const DOWNLOAD_ARTIFACT: &str =
    "actions/download-artifact@d3f86a106a0bac45b974a628896c90dbdf5c8093 # v4.3.0";

/// Model reviewers a job installs before its run: the `reviewer` argument, the step's name, the
/// variable holding the version, the version, and the npm package.
const REVIEWERS: &[(&str, &str, &str, &str, &str)] = &[
    (
        "claude",
        "Install Claude Code",
        "CLAUDE_CODE_VERSION",
        "2.1.197",
        "@anthropic-ai/claude-code",
    ),
    (
        "codex",
        "Install Codex",
        "CODEX_VERSION",
        "0.171.0",
        "@openai/codex",
    ),
];

/// Where each job keeps run directories: the parent's, downloaded, and its own.
const RUNS: &str = "reviewflow-runs";

/// Why a pipeline cannot be written as a workflow.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ExportError {
    /// `check` reports it.
    #[error("the pipeline's stages form a cycle")]
    Cycle,
    #[error("{0}")]
    Unexportable(String),
}

/// What the workflow is written from.
pub struct Source<'a> {
    pub pipeline: &'a Pipeline,
    pub registry: &'a Registry,
    pub dag: &'a Dag,
    pub flow: &'a Flow,
    /// The pipeline file as the workflow names it: relative to the repository's top.
    pub file: &'a str,
    /// The action that installs reviewflow, `OWNER/REPO@COMMIT` ([`parse_action`]).
    pub action: &'a Action,
    /// The file the workflow must be installed as, when the store's trust rules name it
    /// ([`super::fit::judge`]).
    pub installed_as: Option<&'a str>,
}

/// The repository of reviewflow's action when `--action` names none (`docs/install.md`).
pub const DEFAULT_ACTION_REPO: &str = "reviewflow/reviewflow";
/// The commit of it this build's exports install when `--action` names none: a commit that has
/// `action.yml`, set by the release step (`docs/install.md`, "Releasing").
pub const DEFAULT_ACTION_REV: &str = "8b3b5fa02f26c9e6415457ca27aec99f70e7cc51";

/// The action a workflow's jobs install reviewflow with: a repository and a commit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Action {
    pub repo: String,
    pub rev: String,
}

impl Default for Action {
    fn default() -> Self {
        Self {
            repo: DEFAULT_ACTION_REPO.into(),
            rev: DEFAULT_ACTION_REV.into(),
        }
    }
}

impl std::fmt::Display for Action {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}@{}", self.repo, self.rev)
    }
}

/// `OWNER/REPO@COMMIT`: a GitHub repository and a full commit id. A tag or a branch can be moved
/// to other code after the workflow was reviewed, so only a commit is taken.
pub fn parse_action(text: &str) -> Result<Action, String> {
    let (repo, rev) = text
        .split_once('@')
        .ok_or_else(|| format!("`{text}`: give the action as OWNER/REPO@COMMIT"))?;
    let name_ok = |part: &str| {
        !part.is_empty()
            && !part.starts_with('.')
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    };
    let parts: Vec<&str> = repo.split('/').collect();
    if parts.len() != 2 || !parts.iter().all(|p| name_ok(p)) {
        return Err(format!(
            "`{repo}`: the action's repository is OWNER/REPO (letters, digits, `-`, `_`, `.`)"
        ));
    }
    if rev.len() != 40
        || !rev
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    {
        return Err(format!(
            "`{rev}`: the action's revision must be a full commit id (40 lowercase hex digits): \
             a tag or a branch can be moved to other code after the workflow was reviewed"
        ));
    }
    Ok(Action {
        repo: repo.to_owned(),
        rev: rev.to_owned(),
    })
}

/// The workflow, deterministic for a given pipeline and file name.
pub fn workflow(src: &Source<'_>) -> Result<String, ExportError> {
    let parts =
        partition(src.pipeline, src.registry, src.dag, src.flow).ok_or(ExportError::Cycle)?;
    validate(src.pipeline)?;
    // Which events run the review is the pipeline's to say: none is assumed (the widest one,
    // `pull_request_target` into any branch, would hand the secrets to every branch's workflow).
    if src.pipeline.triggers.is_empty() {
        return Err(ExportError::Unexportable(
            "the pipeline names no trigger, and a workflow runs only on the events it is given: \
             write the events the review runs on, e.g. `trigger \"pull_request_target\" \
             branches=\"main\"` (the branches whose workflow was reviewed)"
                .into(),
        ));
    }
    if parts.jobs.is_empty() {
        return Err(ExportError::Unexportable(
            "the pipeline has no stage, and a workflow needs at least one job".into(),
        ));
    }
    let mut out = String::with_capacity(4096 + 2048 * parts.jobs.len());
    header(&mut out, src);
    let ids = job_ids(src.pipeline, &parts);
    for j in 0..parts.jobs.len() {
        job(&mut out, src, &parts, &ids, j)?;
    }
    Ok(out)
}

/// The token and permission scope of one stage: the reads its kind's contract needs, and what
/// it declares (as the partition counts them).
pub fn stage_permissions(
    pipeline: &Pipeline,
    registry: &Registry,
    stage: usize,
) -> BTreeMap<String, Access> {
    let s = &pipeline.stages[stage];
    let reads = registry
        .get(&s.uses.value)
        .into_iter()
        .flat_map(|c| c.permissions.iter())
        .filter_map(|p| parse_permission(p).ok())
        .filter(|p| p.access == Access::Read);
    let declared = s.permissions.iter().map(|p| p.value.clone());
    let mut out = BTreeMap::new();
    for p in reads.chain(declared) {
        let access = out.entry(p.scope).or_insert(p.access);
        *access = (*access).max(p.access);
    }
    out
}

/// What every job's checkout of the base branch needs: on a private repository the job's token
/// fetches it.
pub const CHECKOUT_PERMISSION: (&str, Access) = ("contents", Access::Read);

/// Names GitHub cannot hold: a secret's `env=` is the name of the repository or environment
/// secret it is read from.
fn validate(pipeline: &Pipeline) -> Result<(), ExportError> {
    for secret in &pipeline.secrets {
        let env = secret.env.value.as_str();
        if !is_env_name(env) || (env.starts_with("GITHUB_") && env != "GITHUB_TOKEN") {
            return Err(ExportError::Unexportable(format!(
                "secret `{}`: env=\"{}\" cannot name a GitHub secret (letters, digits and `_`, \
                 not starting with a digit or `GITHUB_` other than `GITHUB_TOKEN`)",
                secret.name.value,
                env.escape_debug()
            )));
        }
    }
    for input in pipeline.inputs.iter().filter(|i| !i.builtin) {
        if let Some(env) = &input.env
            && !is_env_name(&env.value)
        {
            return Err(ExportError::Unexportable(format!(
                "input `{}`: env=\"{}\" cannot name a GitHub variable",
                input.name.value,
                env.value.escape_debug()
            )));
        }
    }
    Ok(())
}

fn is_env_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn pipeline_name(pipeline: &Pipeline) -> &str {
    pipeline
        .name
        .as_ref()
        .map_or("reviewflow", |n| n.value.as_str())
}

fn header(out: &mut String, src: &Source<'_>) {
    let name = pipeline_name(src.pipeline);
    let file = comment_text(src.file);
    let events = triggers(src.pipeline);
    let _ = write!(
        out,
        "# Generated by `reviewflow export github` from:\n\
         #   {file}\n\
         # Do not edit it by hand: change the pipeline and export again (docs/export.md).\n"
    );
    if let Some(installed_as) = src.installed_as {
        let _ = writeln!(
            out,
            "# Install it as {}: the file the store's trust rules name.",
            comment_text(installed_as)
        );
    }
    out.push_str("#\n");
    for t in &events {
        out.push_str(match t.event {
            "pull_request_target" => {
                "# It runs on pull_request_target: the workflow and the pipeline come from the base branch,\n\
                 # never from the pull request, and nothing of the pull request is checked out or run.\n"
            }
            "pull_request" => {
                "# It runs on pull_request: the workflow and the pipeline are the pull request's own. A\n\
                 # fork's run gets no secret; a branch's run uses what the branch's author wrote.\n"
            }
            "workflow_dispatch" => {
                "# It runs on workflow_dispatch: someone with write access names a pull request to review,\n\
                 # and the workflow and the pipeline come from the branch the run was started on.\n"
            }
            // Lowering admits only the events of [`TRIGGERS`], each written above.
            _ => "",
        });
    }
    let _ = write!(
        out,
        "# Each job is one trust boundary of the pipeline: it holds only its stages' secrets and\n\
         # token permissions, and hands its run to the next job as an artifact.\n\
         name: {}\n\
         \n\
         on:\n",
        scalar(name),
    );
    for t in &events {
        match t.event {
            "pull_request_target" => out.push_str(
                "  pull_request_target: # zizmor: ignore[dangerous-triggers] no code of the pull request runs\n",
            ),
            "workflow_dispatch" => {
                out.push_str(
                    "  workflow_dispatch:\n\
                     \x20   inputs:\n\
                     \x20     pull-request:\n\
                     \x20       description: The number of the pull request to review\n\
                     \x20       required: true\n\
                     \x20       type: number\n",
                );
                continue;
            }
            other => {
                let _ = writeln!(out, "  {other}:");
            }
        }
        let _ = writeln!(out, "    types: [{}]", t.types.join(", "));
        if let Some(branches) = &t.branches {
            let quoted: Vec<String> = branches.iter().map(|b| format!("'{b}'")).collect();
            let _ = writeln!(out, "    branches: [{}]", quoted.join(", "));
        }
    }
    // A dispatched run is about the pull request it names, and waits for (or cancels) that pull
    // request's review like a push does.
    let number = if events.iter().any(|t| t.event == "workflow_dispatch") {
        "github.event.pull_request.number || inputs.pull-request"
    } else {
        "github.event.pull_request.number"
    };
    let _ = write!(
        out,
        "\n\
         # Nothing at the workflow level; each job asks for what its stages use.\n\
         permissions: {{}}\n\
         \n\
         # One review of a pull request at a time; a newer push cancels the older review.\n\
         concurrency:\n\
         \x20 group: {}\n\
         \x20 cancel-in-progress: true\n\
         \n\
         jobs:\n",
        scalar(&format!("{name}-${{{{ {number} }}}}")),
    );
}

/// One event of the workflow, with what its `on:` entry says.
struct On<'a> {
    event: &'a str,
    types: Vec<&'a str>,
    branches: Option<&'a [String]>,
}

/// The pipeline's triggers in a fixed order (a pipeline without one is not exported).
fn triggers(pipeline: &Pipeline) -> Vec<On<'_>> {
    let mut out: Vec<On<'_>> = pipeline
        .triggers
        .iter()
        .map(|t| On {
            event: t.event.value.as_str(),
            types: t.types.as_ref().map_or_else(
                || DEFAULT_TYPES.to_vec(),
                |ty| ty.value.iter().map(String::as_str).collect(),
            ),
            branches: t.branches.as_ref().map(|b| b.value.as_slice()),
        })
        .collect();
    // In the order GitHub's events are listed (the one a review with secrets needs first).
    out.sort_by_key(|t| {
        TRIGGERS
            .iter()
            .position(|e| e.name == t.event)
            .unwrap_or(TRIGGERS.len())
    });
    out
}

/// The environment a job runs in: the one its secrets name (a secret without `environment=` is
/// in the pipeline's, unless it is the workflow's own token). A job holds one environment, so
/// secrets of two in one job cannot be exported.
fn environment<'p>(
    pipeline: &'p Pipeline,
    secrets: &[&'p reviewflow_engine::model::Secret],
    job: &str,
) -> Result<Option<(&'p str, Vec<&'p str>)>, ExportError> {
    let mut found: Option<(&str, Vec<&str>)> = None;
    for secret in secrets {
        let env = match &secret.environment {
            Some(e) => e.value.as_str(),
            None if secret.env.value == "GITHUB_TOKEN" => continue,
            None => pipeline_name(pipeline),
        };
        match &mut found {
            None => found = Some((env, vec![secret.name.value.as_str()])),
            Some((first, names)) if *first == env => names.push(secret.name.value.as_str()),
            Some((first, names)) => {
                return Err(ExportError::Unexportable(format!(
                    "job `{job}` would hold secrets of two environments, `{first}` (secret `{}`) and \
                     `{env}` (secret `{}`), and a job runs in one: give them one `environment=`, \
                     or keep the stages that read them apart",
                    names[0], secret.name.value
                )));
            }
        }
    }
    Ok(found)
}

/// Job ids: the first stage's name, which is unique and already a valid id (letters, digits,
/// `-`, `_`, starting with a letter), except that a name YAML reads as a boolean or null (`on`,
/// `yes`) gets `-job` appended (and a number, should that name be a stage's too).
fn job_ids(pipeline: &Pipeline, parts: &Partition) -> Vec<String> {
    let mut taken: std::collections::BTreeSet<String> = pipeline
        .stages
        .iter()
        .map(|s| s.name.value.clone())
        .collect();
    parts
        .jobs
        .iter()
        .map(|j| {
            let name = &pipeline.stages[j.stages[0]].name.value;
            if !is_yaml_word(name) {
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

/// A plain scalar YAML 1.1 reads as a boolean or null.
pub(crate) fn is_yaml_word(s: &str) -> bool {
    matches!(
        s.to_ascii_lowercase().as_str(),
        "true" | "false" | "null" | "yes" | "no" | "on" | "off" | "y" | "n"
    )
}

fn job(
    out: &mut String,
    src: &Source<'_>,
    parts: &Partition,
    ids: &[String],
    j: usize,
) -> Result<(), ExportError> {
    let pipeline = src.pipeline;
    let the_job = &parts.jobs[j];
    let stages: Vec<&Stage> = the_job
        .stages
        .iter()
        .map(|&s| &pipeline.stages[s])
        .collect();
    let names: Vec<&str> = stages.iter().map(|s| s.name.value.as_str()).collect();
    if j > 0 {
        out.push('\n');
    }
    reasons(out, (src.pipeline, src.flow), parts, j, &names);
    // A run resumes one parent, so each job resumes the one before it (whose run holds every
    // earlier stage, reused) and therefore needs it.
    let parent = j.checked_sub(1);
    let mut needs: Vec<usize> = the_job.needs.clone();
    if let Some(p) = parent
        && !needs.contains(&p)
    {
        let _ = writeln!(
            out,
            "  # It needs {} too: that job's run is the one this job resumes.",
            ids[p]
        );
        needs.push(p);
        needs.sort_unstable();
    }
    let id = &ids[j];
    let _ = writeln!(out, "  {id}:");
    let _ = writeln!(out, "    name: {}", scalar(&names.join(", ")));
    if !needs.is_empty() {
        let list: Vec<&str> = needs.iter().map(|&n| ids[n].as_str()).collect();
        let _ = writeln!(out, "    needs: [{}]", list.join(", "));
    }
    let _ = writeln!(out, "    runs-on: ubuntu-latest");
    let _ = writeln!(out, "    timeout-minutes: {}", timeout_minutes(&stages));
    let secrets: Vec<&reviewflow_engine::model::Secret> = the_job
        .secrets
        .iter()
        .map(|&s| &pipeline.secrets[s])
        .collect();
    if let Some((env, held)) = environment(pipeline, &secrets, id)? {
        let held: Vec<&str> = held.iter().map(|n| &n[..]).collect();
        let _ = writeln!(
            out,
            "    # The environment holding {}; its protection rules gate this job.",
            and_list(&held)
        );
        let _ = writeln!(out, "    environment: {}", scalar(env));
    }
    permissions(out, src, the_job, &names);
    if j + 1 < parts.jobs.len() {
        let _ = writeln!(out, "    outputs:");
        let _ = writeln!(out, "      run-id: ${{{{ steps.run.outputs.run-id }}}}");
    }
    let _ = writeln!(out, "    steps:");
    // The checkout is the commit the workflow itself comes from (GitHub's default for each
    // event): the base branch on pull_request_target, so nothing of the pull request runs.
    let checkout = if triggers(pipeline)
        .iter()
        .all(|t| t.event == "pull_request_target")
    {
        "Check out the base branch"
    } else {
        "Check out the workflow's own commit"
    };
    // A lens or prompt file is read from the pull request's base commit (docs/lenses.md),
    // which a clone of one commit lacks once the base branch has moved on.
    let depth = if stages.iter().any(|s| reads_instruction_files(s)) {
        "\x20         # The base commit the lens and prompt files are read from (docs/lenses.md).\n\
         \x20         fetch-depth: 0\n"
    } else {
        ""
    };
    let _ = write!(
        out,
        "      - name: {checkout}\n\
         \x20       uses: {CHECKOUT}\n\
         \x20       with:\n\
         \x20         persist-credentials: false\n\
         {depth}\
         \n\
         \x20     # reviewflow, from the action's own commit (docs/install.md).\n\
         \x20     - name: Install reviewflow\n\
         \x20       uses: {}\n",
        src.action,
    );
    for (reviewer, step, var, version, package) in REVIEWERS {
        if stages.iter().any(|s| reviews_with(s, reviewer)) {
            let _ = write!(
                out,
                "\n\
                 \x20     # The reviewer, pinned. reviewflow finds it on the job's PATH.\n\
                 \x20     - name: {step}\n\
                 \x20       run: npm install --global \"{package}@${var}\" # zizmor: ignore[adhoc-packages] one pinned version\n\
                 \x20       env:\n\
                 \x20         {var}: {version}\n"
            );
        }
    }
    if let Some(p) = parent {
        let _ = write!(
            out,
            "\n\
             \x20     - name: Take over the run of {}\n\
             \x20       uses: {DOWNLOAD_ARTIFACT}\n\
             \x20       with:\n\
             \x20         name: {}\n\
             \x20         path: ${{{{ runner.temp }}}}/{RUNS}/${{{{ needs.{}.outputs.run-id }}}}\n",
            ids[p],
            artifact(&ids[p]),
            ids[p],
        );
    }
    run_step(out, src, &names, &secrets, parent.map(|p| ids[p].as_str()));
    // What root wrote goes back to the job's user, whatever the run's outcome, before the
    // uploads read it.
    let _ = write!(
        out,
        "\n\
         \x20     - name: Give the run directory back to the job's user\n\
         \x20       if: always()\n\
         \x20       run: {}\n",
        scalar(&format!(
            "sudo chown -R \"$(id -u):$(id -g)\" \"$RUNNER_TEMP/{RUNS}\""
        )),
    );
    if stages
        .iter()
        .any(|s| s.uses.value == "std/post" && s.children_named("upload").next().is_some())
    {
        let _ = write!(
            out,
            "\n\
             \x20     # std/post names what it kept for the store in the step's outputs; a run step\n\
             \x20     # cannot upload an artifact itself. Whatever the run's exit: a comment posted\n\
             \x20     # before a failure already names what was kept.\n\
             \x20     - name: Keep the sealed conversation\n\
             \x20       if: always() && steps.run.outputs.artifact-name != ''\n\
             \x20       uses: {UPLOAD_ARTIFACT}\n\
             \x20       with:\n\
             \x20         name: ${{{{ steps.run.outputs.artifact-name }}}}\n\
             \x20         path: ${{{{ steps.run.outputs.artifact-path }}}}\n\
             \x20         if-no-files-found: error\n\
             \x20         retention-days: 30\n\
             \x20         overwrite: true\n"
        );
    }
    if j + 1 < parts.jobs.len() {
        let _ = write!(
            out,
            "\n\
             \x20     # Hidden files too: a folder output is kept whole, and its digest checked on resume.\n\
             \x20     - name: Hand the run over to the next job\n\
             \x20       uses: {UPLOAD_ARTIFACT}\n\
             \x20       with:\n\
             \x20         name: {}\n\
             \x20         path: ${{{{ runner.temp }}}}/{RUNS}/${{{{ steps.run.outputs.run-id }}}}\n\
             \x20         if-no-files-found: error\n\
             \x20         include-hidden-files: true\n\
             \x20         retention-days: 1\n\
             \x20         overwrite: true\n",
            artifact(id),
        );
    }
    Ok(())
}

fn artifact(job: &str) -> String {
    format!("reviewflow-run-{job}")
}

/// One comment line per join the partition made in this job.
pub(crate) fn reasons(
    out: &mut String,
    src: (&Pipeline, &Flow),
    parts: &Partition,
    j: usize,
    names: &[&str],
) {
    let (pipeline, flow) = src;
    if names.len() < 2 {
        return;
    }
    let stage = |i: usize| pipeline.stages[i].name.value.as_str();
    let _ = writeln!(out, "  # {} share this job:", and_list(names));
    for reason in &parts.reasons {
        match reason {
            Reason::Private {
                producer,
                consumer,
                outputs,
            } if parts.job_of[*producer] == j => {
                for (output, carries) in outputs {
                    let why = match carries {
                        Carries::Private => "is private".to_owned(),
                        Carries::Diff => "is a diff".to_owned(),
                        Carries::Secret => {
                            let secrets: Vec<&str> = flow
                                .output(*producer, output)
                                .into_iter()
                                .flat_map(|l| l.secrets())
                                .filter_map(|s| pipeline.secrets.get(s))
                                .map(|s| s.name.value.as_str())
                                .collect();
                            format!("carries the secret {}", and_list(&secrets))
                        }
                    };
                    let _ = writeln!(
                        out,
                        "  # - {} → {}: {}.{output} {why}, and never crosses a job boundary.",
                        stage(*producer),
                        stage(*consumer),
                        stage(*producer),
                    );
                }
            }
            Reason::Between {
                stage: s,
                after,
                before,
            } if parts.job_of[*s] == j => {
                let _ = writeln!(
                    out,
                    "  # - {} → {} → {}: {} sits between two stages of this job; in a job of its \
                     own\n  #   it would make the jobs a cycle.",
                    stage(*after),
                    stage(*s),
                    stage(*before),
                    stage(*s),
                );
            }
            Reason::Tangled {
                after,
                entry,
                exit,
                before,
            } if parts.job_of[*entry] == j => {
                let _ = writeln!(
                    out,
                    "  # - {} → {} and {} → {}: apart, the job of {} would wait for the job of {},\n  #   and the job of {} for it.",
                    stage(*after),
                    stage(*entry),
                    stage(*exit),
                    stage(*before),
                    stage(*entry),
                    stage(*after),
                    stage(*before),
                );
            }
            _ => {}
        }
    }
}

/// `a`, `a and b`, `a, b and c`.
pub(crate) fn and_list(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// The job's permissions, each with the stages that need it: the union over its stages, and the
/// checkout's `contents: read`.
fn permissions(
    out: &mut String,
    src: &Source<'_>,
    the_job: &reviewflow_engine::export::Job,
    names: &[&str],
) {
    let mut why: BTreeMap<String, (Access, Vec<&str>)> = BTreeMap::new();
    for (&s, name) in the_job.stages.iter().zip(names) {
        for (scope, access) in stage_permissions(src.pipeline, src.registry, s) {
            let entry = why.entry(scope).or_insert((access, Vec::new()));
            entry.0 = entry.0.max(access);
            entry.1.push(name);
        }
    }
    let (scope, access) = CHECKOUT_PERMISSION;
    let checkout = why.entry(scope.to_owned()).or_insert((access, Vec::new()));
    checkout.0 = checkout.0.max(access);
    let _ = writeln!(out, "    permissions:");
    for (scope, (access, stages)) in &why {
        let access = match access {
            Access::Read => "read",
            Access::Write => "write",
        };
        let by = if stages.is_empty() {
            "the checkout".to_owned()
        } else {
            and_list(stages)
        };
        let _ = writeln!(out, "      {scope}: {access} # {by}");
    }
}

fn run_step(
    out: &mut String,
    src: &Source<'_>,
    names: &[&str],
    secrets: &[&reviewflow_engine::model::Secret],
    parent: Option<&str>,
) {
    // As root (docs/isolation.md, "Where users run it"): on GitHub's hosted runners the job's
    // user cannot make cgroups or namespaces, so without root three layers would not hold.
    // `-E` keeps the job's environment (reviewflow scrubs the secrets from its own at once) and
    // PATH names the runner's installation, which sudo's secure_path would not.
    let mut command = format!(
        "sudo -E env \"PATH=$PATH\" reviewflow run {} --stages {} --run-dir \"$RUNNER_TEMP/{RUNS}\"",
        shell_word(src.file),
        names.join(","),
    );
    if parent.is_some() {
        command.push_str(" --resume \"$REVIEWFLOW_PARENT_RUN\"");
    }
    let _ = write!(
        out,
        "\n\
         \x20     - name: {}\n\
         \x20       id: run\n\
         \x20       run: {}\n\
         \x20       env:\n",
        scalar(&format!("Run {}", and_list(names))),
        scalar(&command),
    );
    // Secrets: those of this job's stages, each from the secret its `env=` names.
    for secret in secrets {
        let env = &secret.env.value;
        let _ = writeln!(out, "          {env}: ${{{{ secrets.{env} }}}}");
    }
    // Inputs: every job reads the same values (they are part of the run's identity). One with a
    // default is left to it; the runner sets GITHUB_* and RUNNER_* itself.
    for input in src.pipeline.inputs.iter().filter(|i| !i.builtin) {
        if input.default.is_some() {
            continue;
        }
        if let Some(env) = &input.env {
            let env = &env.value;
            if env.starts_with("GITHUB_") || env.starts_with("RUNNER_") {
                continue;
            }
            let _ = writeln!(out, "          {env}: ${{{{ vars.{env} }}}}");
        }
    }
    if let Some(p) = parent {
        let _ = writeln!(
            out,
            "          REVIEWFLOW_PARENT_RUN: ${{{{ needs.{p}.outputs.run-id }}}}"
        );
    }
}

fn reviews_with(stage: &Stage, reviewer: &str) -> bool {
    stage.uses.value == "std/review"
        && stage
            .children_named("reviewer")
            .any(|c| c.args.first().and_then(|a| a.value.as_str()) == Some(reviewer))
}

/// A review stage with a lens or prompt file, which it reads from the change's base commit.
pub(crate) fn reads_instruction_files(stage: &Stage) -> bool {
    stage.uses.value == "std/review"
        && stage.children.iter().any(|c| match c.name.value.as_str() {
            "prompt" | "later-prompt" => true,
            "lens" => !c
                .args
                .first()
                .and_then(|a| a.value.as_str())
                .is_some_and(|v| v.starts_with("builtin:")),
            _ => false,
        })
}

/// The stages' declared timeouts and a quarter of an hour for the set-up, at least an hour.
pub(crate) fn timeout_minutes(stages: &[&Stage]) -> u64 {
    let ms: u64 = stages
        .iter()
        .filter_map(|s| s.timeout_ms.as_ref())
        .map(|t| t.value)
        .fold(0u64, u64::saturating_add);
    (ms.div_ceil(60_000).saturating_add(15)).max(60)
}

/// A word the shell reads as itself: bare when it is plainly safe, else single-quoted.
pub(crate) fn shell_word(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_./-".contains(c))
    {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// A YAML scalar for `s`: plain when it cannot be read as anything else, else double-quoted
/// (a JSON string is a valid YAML double-quoted scalar).
pub fn scalar(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && !s.ends_with(' ')
        && !s.contains(": ")
        && !s.contains(" #")
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || " _./,-$\"=@{}".contains(c))
        && !is_yaml_word(s);
    if plain {
        s.to_owned()
    } else {
        serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned())
    }
}

/// Text for a one-line comment: control characters become spaces.
pub(crate) fn comment_text(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_are_plain_only_when_unambiguous() {
        assert_eq!(scalar("gather"), "gather");
        assert_eq!(scalar("on"), "\"on\"");
        assert_eq!(scalar("a: b"), "\"a: b\"");
        assert_eq!(scalar("x #y"), "\"x #y\"");
        assert_eq!(scalar("9lives"), "\"9lives\"");
        assert_eq!(scalar("line\nbreak"), "\"line\\nbreak\"");
    }

    #[test]
    fn shell_words_are_quoted_when_needed() {
        assert_eq!(shell_word(".github/review.kdl"), ".github/review.kdl");
        assert_eq!(shell_word("my file's.kdl"), r"'my file'\''s.kdl'");
    }

    #[test]
    fn an_action_is_a_repository_at_a_full_commit() {
        let rev = "0123456789abcdef0123456789abcdef01234567";
        assert_eq!(
            parse_action(&format!("my-org/review.flow@{rev}")),
            Ok(Action {
                repo: "my-org/review.flow".into(),
                rev: rev.into(),
            })
        );
        for bad in [
            "my-org/reviewflow@v1".to_owned(),
            "my-org/reviewflow@main".to_owned(),
            format!("my-org/reviewflow@{}", rev.to_uppercase()),
            format!("my-org/reviewflow@{}", &rev[..39]),
            format!("reviewflow@{rev}"),
            format!("a/b/c@{rev}"),
            format!("../x@{rev}"),
            format!("my org/x@{rev}"),
            "my-org/reviewflow".to_owned(),
        ] {
            assert!(parse_action(&bad).is_err(), "{bad}");
        }
        assert_eq!(
            Action::default().to_string(),
            format!("{DEFAULT_ACTION_REPO}@{DEFAULT_ACTION_REV}")
        );
        assert!(parse_action(&Action::default().to_string()).is_ok());
    }

    #[test]
    fn lists_read_as_prose() {
        assert_eq!(and_list(&["a"]), "a");
        assert_eq!(and_list(&["a", "b"]), "a and b");
        assert_eq!(and_list(&["a", "b", "c"]), "a, b and c");
    }
}
