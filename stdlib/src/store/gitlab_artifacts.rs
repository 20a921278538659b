//! The `gitlab-artifacts` store: sealed blobs kept as job artifacts of the review's own
//! pipelines (see `docs/gitlab.md`, "The store").
//!
//! Reading: list the project's pipelines of branches (newest first), judge each against the
//! `trust` rules by what GitLab records of it (project, branch, source; the branch protected),
//! look its jobs up (cached, capped), and read one file of a trusted job's artifacts. GitLab
//! lists no artifact by name, so the name is in the file's path, and a job that kept another
//! name answers 404. The listing decides whenever it can: a merge request's pipeline, another
//! project's or another branch's is refused without a call.
//!
//! Writing: a job cannot upload its artifacts while it runs, so `keep` writes the file under
//! `reviewflow-store/` and GitLab uploads it when the job ends (`artifacts: paths:`).

use std::collections::{HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use reviewflow_engine::run::BoxFuture;

use super::github_artifacts::{tombstone_json, tombstone_producer};
use super::{
    BlobStore, Candidate, Fetched, Judgement, Keep, Kept, Producer, StoreError, StoreName,
    atomic_write,
};
use crate::gitlab::{Client, GitlabError, Job, PipelineFilter, PipelineInfo};

/// The folder, under the job's folder, whose files the keeping job's artifacts hold.
pub const STORE_DIR: &str = "reviewflow-store";
/// The one file kept under a name: a sealed envelope or a tombstone line.
pub const ENTRY_FILE: &str = "entry";
/// The most listing pages read (100 pipelines a page).
pub const MAX_LIST_PAGES: usize = 10;
/// The most jobs of one trusted pipeline whose file is asked for.
pub const MAX_JOBS_TRIED: usize = 4;
/// How every sealed envelope starts (docs/sealed-envelope.md): a tombstone line starts with `{`.
const ENVELOPE_MAGIC: &[u8] = b"RFSE";

/// The pipeline sources whose pipelines run the configuration of the branch they run on, as
/// its owner wrote it, and that the change cannot start: the only ones a rule may name.
pub const TRUSTED_SOURCES: &[&str] = &["schedule", "trigger", "pipeline", "web", "api"];

/// One `trust` rule: the pipeline's branch and source, and the keeping job's name when set.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PipelineTrust {
    pub git_ref: Option<String>,
    pub source: Option<String>,
    pub job: Option<String>,
}

impl PipelineTrust {
    /// A rule admits a pipeline only when it names a branch and a source; `check` reports one
    /// that does not, and the run believes nothing by it.
    fn usable(&self) -> Option<(&str, &str)> {
        Some((self.git_ref.as_deref()?, self.source.as_deref()?))
    }
}

#[derive(Clone, Debug)]
pub struct GitlabArtifactsConfig {
    /// The project's numeric id, when the client names it by number; otherwise asked once.
    pub project_id: Option<u64>,
    /// The run's own pipeline (`CI_PIPELINE_ID`): it keeps after it restores, so it is skipped.
    pub this_pipeline: Option<u64>,
    pub trust: Vec<PipelineTrust>,
    /// The most pipelines whose jobs are looked up per store.
    pub max_run_lookups: usize,
    /// Where `keep` writes: `<job folder>/reviewflow-store`.
    pub keep_dir: PathBuf,
}

/// The store. One per run: it remembers its look-ups, what it judged trusted and what it kept.
pub struct GitlabArtifacts {
    client: Client,
    config: GitlabArtifactsConfig,
    lookups: Mutex<LookupCache>,
    /// Whether each branch a rule names is protected, asked once a run.
    protected: tokio::sync::Mutex<HashMap<String, Result<bool, String>>>,
    /// The jobs of each pipeline judged trusted whose file may be read: `fetch` reads no other.
    trusted: Mutex<HashMap<u64, Vec<u64>>>,
    kept: Mutex<HashSet<String>>,
    this_id: tokio::sync::OnceCell<Option<u64>>,
}

#[derive(Default)]
struct LookupCache {
    count: usize,
    jobs: HashMap<u64, Result<Vec<Job>, String>>,
}

enum Lookup {
    Found(Vec<Job>),
    Failed(String),
    CapReached,
}

impl GitlabArtifacts {
    pub fn new(client: Client, config: GitlabArtifactsConfig) -> Self {
        Self {
            client,
            config,
            lookups: Mutex::default(),
            protected: tokio::sync::Mutex::default(),
            trusted: Mutex::default(),
            kept: Mutex::default(),
            this_id: tokio::sync::OnceCell::new(),
        }
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Pipelines whose jobs were looked up so far.
    pub fn run_lookups(&self) -> usize {
        lock(&self.lookups).count
    }

    /// The path `keep` writes for `name`, relative to the job's folder.
    pub fn entry_path(name: &StoreName) -> String {
        format!("{STORE_DIR}/{}/{ENTRY_FILE}", name.as_str())
    }

    async fn this_project(&self) -> Option<u64> {
        if let Some(id) = self.config.project_id {
            return Some(id);
        }
        *self
            .this_id
            .get_or_init(|| async { self.client.project_numeric_id().await.ok() })
            .await
    }

    /// What GitLab can filter the listing by: a branch or a source every rule names.
    fn filter(&self) -> PipelineFilter {
        let same = |get: fn(&PipelineTrust) -> Option<&String>| {
            let mut values = self.config.trust.iter().map(get);
            let first = values.next().flatten()?;
            values.all(|v| v == Some(first)).then(|| first.to_owned())
        };
        PipelineFilter {
            git_ref: same(|r| r.git_ref.as_ref()),
            source: same(|r| r.source.as_ref()),
        }
    }

    async fn list_candidates(&self, name: &StoreName) -> Result<Vec<Candidate>, StoreError> {
        let (pipelines, _) = self
            .client
            .branch_pipelines(&self.filter(), MAX_LIST_PAGES)
            .await
            .map_err(remote)?;
        Ok(pipelines
            .into_iter()
            .filter(|p| Some(p.id) != self.config.this_pipeline)
            .map(|p| candidate(p, name))
            .collect())
    }

    async fn judge_candidate(&self, candidate: &Candidate) -> Judgement {
        let Some(pipeline) = pipeline_id(candidate) else {
            return Judgement::Untrusted(format!("{} is not a pipeline", shown(&candidate.id)));
        };
        let p = &candidate.producer;
        let Some(this) = self.this_project().await else {
            return Judgement::Unknown(
                "this project's id is not known (CI_PROJECT_ID is not set and GET /projects/:id failed)"
                    .into(),
            );
        };
        // Listed as another project's: refused for free.
        if let Some(listed) = p.get("project_id")
            && listed.parse::<u64>() != Ok(this)
        {
            return Judgement::Untrusted(format!(
                "pipeline {pipeline} is of another project (id {}), not of {this}",
                shown(listed)
            ));
        }
        let listed_ref = p.get("ref").map(String::as_str);
        let listed_source = p.get("source").map(String::as_str);
        let rules: Vec<&PipelineTrust> = self
            .config
            .trust
            .iter()
            .filter(|rule| {
                rule.usable().is_some_and(|(r, s)| {
                    listed_ref == Some(r) && listed_source.is_none_or(|l| l == s)
                })
            })
            .collect();
        if rules.is_empty() {
            return Judgement::Untrusted(format!(
                "pipeline {pipeline} ({} on {}) matches no trust rule",
                listed_source.map_or("no source listed".into(), shown),
                listed_ref.map_or("no branch".into(), shown),
            ));
        }
        // Every fitting rule names the listed branch: one question about its protection.
        let Some(branch) = listed_ref else {
            return Judgement::Untrusted(format!("pipeline {pipeline} names no branch"));
        };
        match self.protected(branch).await {
            Ok(true) => {}
            Ok(false) => {
                return Judgement::Untrusted(format!(
                    "pipeline {pipeline} ran on {}, which is not a protected branch",
                    shown(branch)
                ));
            }
            Err(reason) => return Judgement::Unknown(reason),
        }
        let jobs = match self.look_up(pipeline).await {
            Lookup::Found(jobs) => jobs,
            Lookup::Failed(reason) => return Judgement::Unknown(reason),
            Lookup::CapReached => {
                return Judgement::CapReached(format!(
                    "the cap of {} pipeline look-ups is spent",
                    self.config.max_run_lookups
                ));
            }
        };
        let facts_admitted: Vec<&Job> = jobs
            .iter()
            .filter(|job| {
                rules
                    .iter()
                    .any(|rule| facts_admit(rule, job, pipeline, this, listed_source))
            })
            .collect();
        if facts_admitted.is_empty() && !jobs.is_empty() {
            let job = &jobs[0];
            return Judgement::Untrusted(format!(
                "pipeline {pipeline} ({} on {}{}, project {}) matches no trust rule",
                job.pipeline
                    .source
                    .as_deref()
                    .or(listed_source)
                    .map_or("no source".into(), shown),
                job.pipeline
                    .git_ref
                    .as_deref()
                    .map_or("no branch".into(), shown),
                if job.tag { ", a tag" } else { "" },
                job.pipeline
                    .project_id
                    .map_or("unknown".into(), |id| id.to_string()),
            ));
        }
        let mut keeping: Vec<u64> = facts_admitted
            .iter()
            .filter(|job| {
                job.has_archive()
                    && rules.iter().any(|rule| {
                        facts_admit(rule, job, pipeline, this, listed_source)
                            && rule.job.as_deref().is_none_or(|n| n == job.name)
                    })
            })
            .map(|job| job.id)
            .collect();
        keeping.sort_unstable_by(|a, b| b.cmp(a));
        keeping.truncate(MAX_JOBS_TRIED);
        lock(&self.trusted).insert(pipeline, keeping);
        Judgement::Trusted
    }

    async fn protected(&self, branch: &str) -> Result<bool, String> {
        let mut known = self.protected.lock().await;
        if let Some(answer) = known.get(branch) {
            return answer.clone();
        }
        let answer = self
            .client
            .is_protected_branch(branch)
            .await
            .map_err(|e| format!("cannot tell whether {} is protected: {e}", shown(branch)));
        known.insert(branch.to_owned(), answer.clone());
        answer
    }

    async fn look_up(&self, pipeline: u64) -> Lookup {
        {
            let mut cache = lock(&self.lookups);
            if let Some(known) = cache.jobs.get(&pipeline) {
                return match known {
                    Ok(jobs) => Lookup::Found(jobs.clone()),
                    Err(reason) => Lookup::Failed(reason.clone()),
                };
            }
            if cache.count >= self.config.max_run_lookups {
                return Lookup::CapReached;
            }
            cache.count += 1;
        }
        let result = self
            .client
            .successful_jobs(pipeline)
            .await
            .map_err(|e| format!("cannot look up the jobs of pipeline {pipeline}: {e}"));
        // A failure is cached too: a flood must not buy a look-up per pipeline by failing.
        lock(&self.lookups).jobs.insert(pipeline, result.clone());
        match result {
            Ok(jobs) => Lookup::Found(jobs),
            Err(reason) => Lookup::Failed(reason),
        }
    }

    async fn fetch_candidate(
        &self,
        candidate: &Candidate,
        max_bytes: u64,
    ) -> Result<Fetched, StoreError> {
        let pipeline = pipeline_id(candidate).ok_or_else(|| {
            StoreError::Remote(format!("{} is not a pipeline", shown(&candidate.id)))
        })?;
        let name = candidate.producer.get("name").cloned().unwrap_or_default();
        let store_name = StoreName::new(&name)?;
        let Some(jobs) = lock(&self.trusted).get(&pipeline).cloned() else {
            return Err(StoreError::Remote(format!(
                "pipeline {pipeline} was not judged trusted: nothing read"
            )));
        };
        let path = Self::entry_path(&store_name);
        for job in &jobs {
            let bytes = match self.client.job_artifact_file(*job, &path, max_bytes).await {
                Ok(Some(bytes)) => bytes,
                Ok(None) => continue,
                // Its declared length, or what was read of it: the size itself is not known.
                Err(GitlabError::TooLarge { .. }) => {
                    return Err(StoreError::Remote(format!(
                        "job {job}'s {path} is over the limit of {max_bytes} bytes: not read past it"
                    )));
                }
                Err(e) => return Err(remote(e)),
            };
            return entry(&bytes)
                .map_err(|reason| StoreError::Remote(format!("job {job}'s {path}: {reason}")));
        }
        Err(StoreError::Remote(format!(
            "pipeline {pipeline} kept nothing under {name} ({} of its jobs asked)",
            jobs.len()
        )))
    }

    fn keep_item(
        &self,
        name: &StoreName,
        item: Keep<'_>,
        producer: &Producer,
    ) -> Result<Kept, StoreError> {
        let mut kept = lock(&self.kept);
        let dir = self.config.keep_dir.join(name.as_str());
        let path = dir.join(ENTRY_FILE);
        let refuse = |path: &Path| {
            StoreError::io(
                "keep",
                path,
                io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    "something is already kept under this name in this job",
                ),
            )
        };
        if kept.contains(name.as_str()) || path.symlink_metadata().is_ok() {
            return Err(refuse(&path));
        }
        std::fs::create_dir_all(&dir).map_err(|e| StoreError::io("create", &dir, e))?;
        match item {
            Keep::Blob(bytes) => atomic_write(&path, bytes)?,
            Keep::Tombstone => atomic_write(&path, &tombstone_json(producer))?,
        }
        kept.insert(name.as_str().to_owned());
        Ok(Kept {
            id: None,
            description: format!(
                "wrote {} for the job's artifacts (GitLab uploads {STORE_DIR}/ when the job ends)",
                path.display()
            ),
        })
    }
}

impl BlobStore for GitlabArtifacts {
    fn list<'a>(
        &'a self,
        name: &'a StoreName,
    ) -> BoxFuture<'a, Result<Vec<Candidate>, StoreError>> {
        Box::pin(self.list_candidates(name))
    }

    fn judge<'a>(&'a self, candidate: &'a Candidate) -> BoxFuture<'a, Judgement> {
        Box::pin(self.judge_candidate(candidate))
    }

    fn fetch<'a>(
        &'a self,
        candidate: &'a Candidate,
        max_bytes: u64,
    ) -> BoxFuture<'a, Result<Fetched, StoreError>> {
        Box::pin(self.fetch_candidate(candidate, max_bytes))
    }

    fn keep<'a>(
        &'a self,
        name: &'a StoreName,
        item: Keep<'a>,
        producer: Producer,
    ) -> BoxFuture<'a, Result<Kept, StoreError>> {
        Box::pin(async move { self.keep_item(name, item, &producer) })
    }
}

/// What GitLab recorded of a job against a rule: of this pipeline and project, on the rule's
/// branch and not a tag, succeeded, from the rule's source (the job's record of it, else the
/// listing's; a source told by neither admits nothing).
fn facts_admit(
    rule: &PipelineTrust,
    job: &Job,
    pipeline: u64,
    this: u64,
    listed_source: Option<&str>,
) -> bool {
    let Some((git_ref, source)) = rule.usable() else {
        return false;
    };
    let recorded_source = job.pipeline.source.as_deref().or(listed_source);
    job.pipeline.id == pipeline
        && job.pipeline.project_id == Some(this)
        && job.pipeline.git_ref.as_deref() == Some(git_ref)
        && job.git_ref.as_deref().is_none_or(|r| r == git_ref)
        && !job.tag
        && job.status == "success"
        && recorded_source == Some(source)
}

/// A listed pipeline as a candidate; its producer is what the listing says (GitLab sets it).
fn candidate(p: PipelineInfo, name: &StoreName) -> Candidate {
    let mut producer = Producer::new();
    producer.insert("pipeline".into(), p.id.to_string());
    producer.insert("name".into(), name.as_str().to_owned());
    let mut put = |key: &str, value: Option<String>| {
        if let Some(v) = value {
            producer.insert(key.into(), v);
        }
    };
    put("project_id", p.project_id.map(|v| v.to_string()));
    put("ref", p.git_ref);
    put("source", p.source);
    put("head_sha", p.sha);
    put("status", p.status);
    put("created_at", p.created_at);
    Candidate {
        id: format!("pipeline {}", p.id),
        size: 0,
        kind: None,
        producer,
    }
}

fn pipeline_id(candidate: &Candidate) -> Option<u64> {
    candidate.id.strip_prefix("pipeline ")?.parse().ok()
}

/// The kept file: an envelope as sealed, or a tombstone line.
fn entry(bytes: &[u8]) -> Result<Fetched, String> {
    if bytes.starts_with(ENVELOPE_MAGIC) {
        Ok(Fetched::Blob(bytes.to_vec()))
    } else if bytes.first() == Some(&b'{') {
        tombstone_producer(bytes).map(Fetched::Tombstone)
    } else {
        Err("neither a sealed envelope nor a tombstone".into())
    }
}

fn remote(e: GitlabError) -> StoreError {
    StoreError::Remote(e.to_string())
}

/// Text from a listing (a branch name) for a status line: bounded and escaped.
fn shown(text: &str) -> String {
    let bounded: String = text.chars().take(100).collect();
    format!("{bounded:?}")
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic elsewhere while holding the lock leaves plain data behind: keep using it.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(source: Option<&str>, git_ref: &str, tag: bool, project: u64) -> Job {
        Job {
            id: 9,
            name: "post".into(),
            status: "success".into(),
            git_ref: Some(git_ref.into()),
            tag,
            pipeline: PipelineInfo {
                id: 5,
                project_id: Some(project),
                git_ref: Some(git_ref.into()),
                sha: None,
                status: Some("success".into()),
                source: source.map(str::to_owned),
                created_at: None,
            },
            artifacts: Vec::new(),
            artifacts_expire_at: None,
        }
    }

    fn rule() -> PipelineTrust {
        PipelineTrust {
            git_ref: Some("main".into()),
            source: Some("trigger".into()),
            job: None,
        }
    }

    #[test]
    fn every_recorded_fact_must_match() {
        let r = rule();
        assert!(facts_admit(
            &r,
            &job(Some("trigger"), "main", false, 42),
            5,
            42,
            None
        ));
        assert!(!facts_admit(
            &r,
            &job(Some("merge_request_event"), "main", false, 42),
            5,
            42,
            Some("trigger")
        ));
        assert!(!facts_admit(
            &r,
            &job(Some("trigger"), "main", true, 42),
            5,
            42,
            None
        ));
        assert!(!facts_admit(
            &r,
            &job(Some("trigger"), "main", false, 43),
            5,
            42,
            None
        ));
        assert!(!facts_admit(
            &r,
            &job(Some("trigger"), "dev", false, 42),
            5,
            42,
            None
        ));
        // An older GitLab leaves `source` out of the job: the listing's says it, or nothing.
        assert!(facts_admit(
            &r,
            &job(None, "main", false, 42),
            5,
            42,
            Some("trigger")
        ));
        assert!(!facts_admit(&r, &job(None, "main", false, 42), 5, 42, None));
        // A rule without a branch or a source admits nothing.
        let no_ref = PipelineTrust {
            git_ref: None,
            ..rule()
        };
        assert!(!facts_admit(
            &no_ref,
            &job(Some("trigger"), "main", false, 42),
            5,
            42,
            None
        ));
    }

    #[test]
    fn an_entry_is_an_envelope_or_a_tombstone() {
        assert!(matches!(entry(b"RFSE\x01rest"), Ok(Fetched::Blob(_))));
        let t = tombstone_json(&Producer::from([("run".to_owned(), "r1".to_owned())]));
        assert!(matches!(entry(&t), Ok(Fetched::Tombstone(p)) if p["run"] == "r1"));
        assert!(entry(b"PK\x03\x04").is_err());
        assert!(entry(b"{not json").is_err());
    }
}
