//! The `github-artifacts` store: sealed blobs kept as artifacts of the repository's workflow
//! runs.
//!
//! Reading: list the artifacts of a name (newest first), judge each one's producing run against
//! the `trust` rules, download only trusted ones. Anyone who can open a pull request can make a
//! run upload an artifact of any name, so a listing is mostly attacker-controlled: the judgement
//! rests only on what GitHub itself sets (the run's workflow path, event, head branch and head
//! repository), decides from the listing whenever it can (a fork's run is refused without a
//! look-up), caches run look-ups by run id and caps them, so a flood of artifacts costs a few
//! calls and never a download.
//!
//! Writing: a `run:` step cannot upload an artifact (the upload service's token is not given to
//! it), so `keep` writes the file into `upload_dir/<name>/` and tells the workflow's
//! `actions/upload-artifact` step what to upload through `GITHUB_OUTPUT`.

use std::collections::{HashMap, HashSet};
use std::fs::OpenOptions;
use std::io::{self, Cursor, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use reviewflow_engine::run::BoxFuture;
use serde::Deserialize;

use super::{
    BlobStore, Candidate, Fetched, Judgement, Keep, Kept, Producer, StoreError, StoreName,
    atomic_write,
};
use crate::github::{Artifact, Client, GithubError, Repository, WorkflowRun};

/// The one member of a sealed-conversation artifact.
pub const SEALED_FILE: &str = "conversation.sealed";
/// The one member of a tombstone artifact.
pub const TOMBSTONE_FILE: &str = "tombstone.json";
/// The most listing pages read (100 artifacts a page).
pub const MAX_LIST_PAGES: usize = 30;

/// One `trust` rule: every field it names must equal the producing run's.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ArtifactTrust {
    /// The workflow file, e.g. `.github/workflows/build.yaml` (compared without `@ref`).
    pub workflow: Option<String>,
    /// The run's event, e.g. `pull_request_target`.
    pub event: Option<String>,
    /// The run's head branch.
    pub branch: Option<String>,
    /// The run's head repository (`owner/name`); `None` means this repository itself.
    pub repository: Option<String>,
}

#[derive(Clone, Debug)]
pub struct ArtifactsConfig {
    /// This repository's id, when known (the runner's `GITHUB_REPOSITORY_ID`); otherwise the
    /// store asks GitHub once.
    pub repository_id: Option<u64>,
    pub trust: Vec<ArtifactTrust>,
    /// The most workflow runs looked up per store.
    pub max_run_lookups: usize,
    /// Where `keep` writes files for the workflow's upload step.
    pub upload_dir: PathBuf,
    /// The `GITHUB_OUTPUT` file, when set.
    pub github_output: Option<PathBuf>,
    /// The branch the change is to be merged into (the pull request's base), when known: the
    /// branch a run of the base's workflow for it lists as its head branch.
    pub base_branch: Option<String>,
}

/// The store. One per run: it remembers its look-ups, what it judged trusted and what it kept.
pub struct GithubArtifacts {
    client: Client,
    config: ArtifactsConfig,
    runs: Mutex<RunCache>,
    /// Artifact ids judged trusted: `fetch` downloads nothing else.
    trusted: Mutex<HashSet<u64>>,
    /// Names kept in this run.
    kept: Mutex<HashSet<String>>,
    /// This repository's id: `config.repository_id`, else asked once (`None` when that failed).
    this_id: tokio::sync::OnceCell<Option<u64>>,
}

#[derive(Default)]
struct RunCache {
    lookups: usize,
    runs: HashMap<u64, Result<RunFacts, String>>,
}

/// What GitHub says of a run, as the rules compare it.
#[derive(Clone, Debug)]
struct RunFacts {
    path: String,
    event: String,
    head_branch: Option<String>,
    head_repository: Option<String>,
    repository: String,
}

impl RunFacts {
    fn of(run: &WorkflowRun) -> Self {
        Self {
            path: run.normalized_path().to_owned(),
            event: run.event.clone(),
            head_branch: run.head_branch.clone(),
            head_repository: run.head_repository.as_ref().map(|r| r.full_name.clone()),
            repository: run.repository.full_name.clone(),
        }
    }
}

impl GithubArtifacts {
    pub fn new(client: Client, config: ArtifactsConfig) -> Self {
        Self {
            client,
            config,
            runs: Mutex::default(),
            trusted: Mutex::default(),
            kept: Mutex::default(),
            this_id: tokio::sync::OnceCell::new(),
        }
    }

    /// This repository's id: the runner's `GITHUB_REPOSITORY_ID`, else one
    /// `GET /repos/{owner}/{repo}` for the whole run. Known, a listed run of another
    /// repository is refused without a look-up; unknown (the request failed), the listing's own
    /// `repository_id` is all there is, and the look-up decides.
    async fn this_repository_id(&self) -> Option<u64> {
        if let Some(id) = self.config.repository_id {
            return Some(id);
        }
        *self
            .this_id
            .get_or_init(|| async { self.client.repository_id().await.ok() })
            .await
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Workflow runs looked up so far.
    pub fn run_lookups(&self) -> usize {
        lock(&self.runs).lookups
    }

    async fn list_candidates(&self, name: &StoreName) -> Result<Vec<Candidate>, StoreError> {
        let artifacts = self
            .client
            .list_artifacts(name.as_str(), MAX_LIST_PAGES)
            .await
            .map_err(remote)?;
        Ok(artifacts
            .into_iter()
            .filter(|a| !a.expired && a.name == name.as_str())
            .map(candidate)
            .collect())
    }

    async fn judge_candidate(&self, candidate: &Candidate) -> Judgement {
        let Some(artifact) = artifact_id(candidate) else {
            return Judgement::Untrusted(format!("{} is not an artifact", shown(&candidate.id)));
        };
        let p = &candidate.producer;
        let Some(run) = p.get("run").and_then(|r| r.parse::<u64>().ok()) else {
            return Judgement::Untrusted(format!("artifact {artifact} names no workflow run"));
        };
        let repo = self.client.repository();
        let known = self.this_repository_id().await;
        // Listed as a run of another repository: no run of this one, refused for free.
        let listed: Option<u64> = p.get("repository_id").and_then(|v| v.parse().ok());
        if let (Some(this), Some(listed)) = (known, listed)
            && this != listed
        {
            return Judgement::Untrusted(format!(
                "run {run} ran in another repository (id {listed}), not in {repo} (id {this})"
            ));
        }
        let this_id = known.or(listed);
        let rules = self.rules_fitting_listing(p, repo, this_id);
        if rules.is_empty() {
            return Judgement::Untrusted(self.listing_reason(run, p, this_id));
        }
        let facts = match self.look_up(run).await {
            Lookup::Found(facts) => facts,
            Lookup::Failed(reason) => return Judgement::Unknown(reason),
            Lookup::CapReached => {
                return Judgement::CapReached(format!(
                    "the cap of {} workflow run look-ups is spent",
                    self.config.max_run_lookups
                ));
            }
        };
        if !repo.is(&facts.repository) {
            return Judgement::Untrusted(format!(
                "run {run} belongs to {}, not to {repo}",
                shown(&facts.repository)
            ));
        }
        if rules.iter().any(|rule| rule_admits(rule, &facts, repo)) {
            lock(&self.trusted).insert(artifact);
            Judgement::Trusted
        } else {
            Judgement::Untrusted(format!(
                "run {run} ({} of {} on {} from {}) matches no trust rule",
                shown(&facts.event),
                shown(&facts.path),
                facts
                    .head_branch
                    .as_deref()
                    .map_or("no branch".into(), shown),
                facts
                    .head_repository
                    .as_deref()
                    .map_or("a deleted repository".into(), shown),
            ))
        }
    }

    /// The rules the listing alone does not rule out: a rule naming a branch needs the listed
    /// head branch; a head repository other than this one (by id) needs a rule naming another
    /// repository, or a rule that may admit a run of the base's workflow
    /// ([`BASE_WORKFLOW_EVENTS`], or no `event`), which GitHub lists with the pull request's head
    /// repository (a fork) and the base branch as its head branch; this one needs a rule that
    /// names no other.
    fn rules_fitting_listing(
        &self,
        p: &Producer,
        repo: &Repository,
        this_id: Option<u64>,
    ) -> Vec<&ArtifactTrust> {
        let listed_branch = p.get("head_branch");
        let head_id: Option<u64> = p.get("head_repository_id").and_then(|v| v.parse().ok());
        let foreign_head = match (this_id, head_id) {
            (Some(this), Some(head)) => Some(this != head),
            _ => None,
        };
        self.config
            .trust
            .iter()
            .filter(|rule| match (&rule.branch, listed_branch) {
                (Some(want), Some(listed)) => want == listed,
                _ => true,
            })
            .filter(|rule| {
                let names_foreign = rule.repository.as_deref().is_some_and(|r| !repo.is(r));
                // A fork's pull request's run of the base's workflow lists the base branch as
                // its head branch; another branch is a run of the fork's own workflow.
                let base_run = rule.repository.is_none()
                    && rule
                        .event
                        .as_deref()
                        .is_none_or(|e| BASE_WORKFLOW_EVENTS.contains(&e))
                    && match (&self.config.base_branch, listed_branch) {
                        (Some(base), Some(listed)) => base == listed,
                        _ => true,
                    };
                match foreign_head {
                    Some(true) => names_foreign || base_run,
                    Some(false) => !names_foreign,
                    None => true,
                }
            })
            .collect()
    }

    fn listing_reason(&self, run: u64, p: &Producer, this_id: Option<u64>) -> String {
        if self.config.trust.is_empty() {
            return "no trust rule names any producer".into();
        }
        match (this_id, p.get("head_repository_id")) {
            (Some(this), Some(head)) if head.parse() != Ok(this) => format!(
                "run {run} is from another repository (a fork, id {}) and no trust rule names one",
                shown(head)
            ),
            _ => format!(
                "run {run} is on branch {}, which no trust rule names",
                p.get("head_branch").map_or("?".into(), |b| shown(b))
            ),
        }
    }

    async fn look_up(&self, run: u64) -> Lookup {
        {
            let mut cache = lock(&self.runs);
            if let Some(known) = cache.runs.get(&run) {
                return match known {
                    Ok(facts) => Lookup::Found(facts.clone()),
                    Err(reason) => Lookup::Failed(reason.clone()),
                };
            }
            if cache.lookups >= self.config.max_run_lookups {
                return Lookup::CapReached;
            }
            cache.lookups += 1;
        }
        let result = self
            .client
            .workflow_run(run)
            .await
            .map(|r| RunFacts::of(&r))
            .map_err(|e| format!("cannot look up run {run}: {e}"));
        // A failure is cached too: a flood must not buy a look-up per artifact by failing.
        lock(&self.runs).runs.insert(run, result.clone());
        match result {
            Ok(facts) => Lookup::Found(facts),
            Err(reason) => Lookup::Failed(reason),
        }
    }

    async fn fetch_candidate(
        &self,
        candidate: &Candidate,
        max_bytes: u64,
    ) -> Result<Fetched, StoreError> {
        let id = artifact_id(candidate).ok_or_else(|| {
            StoreError::Remote(format!("{} is not an artifact", shown(&candidate.id)))
        })?;
        if candidate.size > max_bytes {
            return Err(StoreError::TooLarge {
                name: candidate.producer.get("name").cloned().unwrap_or_default(),
                id: candidate.id.clone(),
                size: candidate.size,
                max_bytes,
            });
        }
        if !lock(&self.trusted).contains(&id) {
            return Err(StoreError::Remote(format!(
                "artifact {id} was not judged trusted: not downloaded"
            )));
        }
        let zip = self
            .client
            .download_artifact(id, max_bytes)
            .await
            .map_err(remote)?;
        unpack(&zip, max_bytes)
            .map_err(|reason| StoreError::Remote(format!("artifact {id}: {reason}")))
    }

    fn keep_item(
        &self,
        name: &StoreName,
        item: Keep<'_>,
        producer: &Producer,
    ) -> Result<Kept, StoreError> {
        let mut kept = lock(&self.kept);
        let dir = self.config.upload_dir.join(name.as_str());
        let refuse = |path: &Path| {
            StoreError::io(
                "keep",
                path,
                io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    "something is already kept under this name in this run",
                ),
            )
        };
        if kept.contains(name.as_str()) {
            return Err(refuse(&dir));
        }
        std::fs::create_dir_all(&dir).map_err(|e| StoreError::io("create", &dir, e))?;
        for existing in [SEALED_FILE, TOMBSTONE_FILE] {
            let path = dir.join(existing);
            if path.symlink_metadata().is_ok() {
                return Err(refuse(&path));
            }
        }
        let path = match item {
            Keep::Blob(bytes) => {
                let path = dir.join(SEALED_FILE);
                atomic_write(&path, bytes)?;
                path
            }
            Keep::Tombstone => {
                let path = dir.join(TOMBSTONE_FILE);
                atomic_write(&path, &tombstone_json(producer))?;
                path
            }
        };
        kept.insert(name.as_str().to_owned());
        if let Some(output) = &self.config.github_output {
            let shown_path = path.to_str().ok_or_else(|| {
                StoreError::io(
                    "name in GITHUB_OUTPUT",
                    &path,
                    io::Error::new(io::ErrorKind::InvalidData, "the path is not UTF-8"),
                )
            })?;
            append_outputs(
                output,
                &[
                    ("artifact-name", name.as_str()),
                    ("artifact-path", shown_path),
                ],
            )?;
        }
        Ok(Kept {
            id: None,
            description: format!(
                "wrote {} for the workflow's upload-artifact step as artifact {name}",
                path.display()
            ),
        })
    }
}

enum Lookup {
    Found(RunFacts),
    Failed(String),
    CapReached,
}

impl BlobStore for GithubArtifacts {
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

/// The events whose run takes its workflow file (and everything it runs) from the base
/// repository's branch, whatever the pull request's head: GitHub lists such a run of a fork's
/// pull request with the fork as its head repository, and what makes it trusted is its event
/// and its workflow file, both checked by the rule, not where the change came from. Every
/// other event runs the workflow file of its head, so its head repository must be this one
/// (or the one a rule names).
pub const BASE_WORKFLOW_EVENTS: &[&str] = &["pull_request_target", "workflow_run"];

/// A rule against a run's facts; `None` as the rule's repository means this repository, or,
/// for a run of the base's workflow ([`BASE_WORKFLOW_EVENTS`]), any head repository.
fn rule_admits(rule: &ArtifactTrust, facts: &RunFacts, repo: &Repository) -> bool {
    let same = |want: &Option<String>, have: &str| want.as_deref().is_none_or(|w| w == have);
    let base_run = BASE_WORKFLOW_EVENTS.contains(&facts.event.as_str());
    let head_ok = match (&rule.repository, &facts.head_repository) {
        (None, _) if base_run => true,
        (_, None) => false,
        (None, Some(head)) => repo.is(head),
        (Some(want), Some(head)) => want.eq_ignore_ascii_case(head),
    };
    same(&rule.workflow, &facts.path)
        && same(&rule.event, &facts.event)
        && rule
            .branch
            .as_deref()
            .is_none_or(|b| facts.head_branch.as_deref() == Some(b))
        && head_ok
}

/// A listed artifact as a candidate; its producer is what the listing says (GitHub sets it).
fn candidate(a: Artifact) -> Candidate {
    let mut producer = Producer::new();
    producer.insert("artifact".into(), a.id.to_string());
    producer.insert("name".into(), a.name.clone());
    if let Some(created) = &a.created_at {
        producer.insert("created_at".into(), created.clone());
    }
    if let Some(run) = &a.workflow_run {
        let mut put = |key: &str, value: Option<String>| {
            if let Some(v) = value {
                producer.insert(key.into(), v);
            }
        };
        put("run", run.id.map(|v| v.to_string()));
        put("head_sha", run.head_sha.clone());
        put("head_branch", run.head_branch.clone());
        put("repository_id", run.repository_id.map(|v| v.to_string()));
        put(
            "head_repository_id",
            run.head_repository_id.map(|v| v.to_string()),
        );
    }
    Candidate {
        id: format!("artifact {}", a.id),
        size: a.size_in_bytes,
        kind: None,
        producer,
    }
}

fn artifact_id(candidate: &Candidate) -> Option<u64> {
    candidate.id.strip_prefix("artifact ")?.parse().ok()
}

/// The artifact's zip: exactly one regular, unencrypted member, `conversation.sealed` or
/// `tombstone.json`, no larger than `max_bytes` as declared and as unpacked.
fn unpack(zip: &[u8], max_bytes: u64) -> Result<Fetched, String> {
    let mut archive = zip::ZipArchive::new(Cursor::new(zip))
        .map_err(|e| format!("not a readable zip ({})", short(&e.to_string())))?;
    if archive.len() != 1 {
        return Err(format!("it holds {} files, not exactly one", archive.len()));
    }
    let mut file = archive
        .by_index(0)
        .map_err(|e| format!("its member cannot be read ({})", short(&e.to_string())))?;
    let member = file
        .name()
        .map_err(|_| "its member's name is not UTF-8".to_owned())?
        .into_owned();
    if !file.is_file() || file.encrypted() {
        return Err(format!("its member {} is not a plain file", shown(&member)));
    }
    if member != SEALED_FILE && member != TOMBSTONE_FILE {
        return Err(format!(
            "it holds {}, neither {SEALED_FILE} nor {TOMBSTONE_FILE}",
            shown(&member)
        ));
    }
    let declared = file.size();
    if declared > max_bytes {
        return Err(format!(
            "{member} declares {declared} bytes, over the limit of {max_bytes}"
        ));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(declared).unwrap_or(0));
    // The declared size may lie: read one byte past the limit at most.
    file.by_ref()
        .take(max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{member} cannot be unpacked ({})", short(&e.to_string())))?;
    if bytes.len() as u64 > max_bytes {
        return Err(format!("{member} unpacks to more than {max_bytes} bytes"));
    }
    if bytes.len() as u64 != declared {
        return Err(format!(
            "{member} declares {declared} bytes but unpacks to {}",
            bytes.len()
        ));
    }
    if member == SEALED_FILE {
        Ok(Fetched::Blob(bytes))
    } else {
        tombstone_producer(&bytes).map(Fetched::Tombstone)
    }
}

/// `tombstone.json`: `{"format": 1, "head": "<sha>", "run": "<id>"}`.
#[derive(Deserialize)]
struct TombstoneFile {
    format: u32,
    #[serde(default)]
    head: Option<String>,
    #[serde(default)]
    run: Option<serde_json::Value>,
}

pub(super) fn tombstone_producer(bytes: &[u8]) -> Result<Producer, String> {
    let t: TombstoneFile = serde_json::from_slice(bytes).map_err(|e| {
        format!(
            "{TOMBSTONE_FILE} is not a tombstone ({})",
            short(&e.to_string())
        )
    })?;
    if t.format != 1 {
        return Err(format!("{TOMBSTONE_FILE} has format {}, not 1", t.format));
    }
    let mut producer = Producer::new();
    if let Some(head) = t.head {
        producer.insert("head".into(), head);
    }
    match t.run {
        Some(serde_json::Value::String(run)) => {
            producer.insert("run".into(), run);
        }
        Some(serde_json::Value::Number(run)) => {
            producer.insert("run".into(), run.to_string());
        }
        _ => {}
    }
    Ok(producer)
}

pub(super) fn tombstone_json(producer: &Producer) -> Vec<u8> {
    let body = serde_json::json!({
        "format": 1,
        "head": producer.get("head"),
        "run": producer.get("run"),
    });
    let mut bytes = body.to_string().into_bytes();
    bytes.push(b'\n');
    bytes
}

/// Appends `name<<DELIM\nvalue\nDELIM` lines, with a random delimiter found in no value, in one
/// write (GitHub's multi-line form, safe whatever the value holds).
fn append_outputs(output: &Path, pairs: &[(&str, &str)]) -> Result<(), StoreError> {
    let delimiter = loop {
        let candidate = format!("ghadelimiter_{}", random_hex());
        if pairs.iter().all(|(_, v)| !v.contains(&candidate)) {
            break candidate;
        }
    };
    let mut text = String::new();
    for (name, value) in pairs {
        text.push_str(&format!("{name}<<{delimiter}\n{value}\n{delimiter}\n"));
    }
    OpenOptions::new()
        .append(true)
        .create(true)
        .open(output)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|e| StoreError::io("append to", output, e))
}

fn random_hex() -> String {
    let mut bytes = [0u8; 16];
    match getrandom::fill(&mut bytes) {
        Ok(()) => reviewflow_engine::hex::encode(&bytes),
        // Still unique, if guessable: the values written are our own paths, not input.
        Err(_) => reviewflow_engine::unique::token().replace('-', ""),
    }
}

fn remote(e: GithubError) -> StoreError {
    StoreError::Remote(e.to_string())
}

/// Text from a listing or a run (a fork's branch name) for a status line: bounded and escaped.
fn shown(text: &str) -> String {
    let bounded: String = text.chars().take(100).collect();
    format!("{bounded:?}")
}

fn short(text: &str) -> String {
    text.chars()
        .take(200)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
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

    fn facts(path: &str, event: &str, branch: &str, head: &str) -> RunFacts {
        RunFacts {
            path: path.into(),
            event: event.into(),
            head_branch: Some(branch.into()),
            head_repository: Some(head.into()),
            repository: "o/r".into(),
        }
    }

    fn rule(workflow: &str, event: &str) -> ArtifactTrust {
        ArtifactTrust {
            workflow: Some(workflow.into()),
            event: Some(event.into()),
            ..ArtifactTrust::default()
        }
    }

    #[test]
    fn rules_compare_every_named_field() {
        let repo: Repository = "o/r".parse().unwrap();
        let build = ".github/workflows/build.yaml";
        let r = rule(build, "pull_request_target");
        assert!(rule_admits(
            &r,
            &facts(build, "pull_request_target", "main", "O/R"),
            &repo
        ));
        assert!(!rule_admits(
            &r,
            &facts(build, "pull_request", "main", "o/r"),
            &repo
        ));
        assert!(!rule_admits(
            &r,
            &facts(
                ".github/workflows/x.yaml",
                "pull_request_target",
                "main",
                "o/r"
            ),
            &repo
        ));
        // No repository named: a run of the base's workflow admits any head repository (a
        // fork's pull request); a run of its head's workflow needs this repository.
        assert!(rule_admits(
            &r,
            &facts(build, "pull_request_target", "main", "fork/r"),
            &repo
        ));
        let on_push = ArtifactTrust {
            branch: Some("main".into()),
            ..rule(build, "push")
        };
        assert!(!rule_admits(
            &on_push,
            &facts(build, "push", "main", "fork/r"),
            &repo
        ));
        let forks = ArtifactTrust {
            repository: Some("fork/r".into()),
            ..r.clone()
        };
        assert!(rule_admits(
            &forks,
            &facts(build, "pull_request_target", "main", "fork/r"),
            &repo
        ));
        let on_main = ArtifactTrust {
            branch: Some("main".into()),
            ..rule(build, "workflow_dispatch")
        };
        assert!(rule_admits(
            &on_main,
            &facts(build, "workflow_dispatch", "main", "o/r"),
            &repo
        ));
        assert!(!rule_admits(
            &on_main,
            &facts(build, "workflow_dispatch", "dev", "o/r"),
            &repo
        ));
        let mut deleted = facts(build, "push", "main", "o/r");
        deleted.head_repository = None;
        assert!(!rule_admits(&on_push, &deleted, &repo));
    }

    #[test]
    fn tombstones_round_trip() {
        let producer = Producer::from([
            ("head".to_owned(), "a".repeat(40)),
            ("run".to_owned(), "77".to_owned()),
        ]);
        let json = tombstone_json(&producer);
        assert_eq!(tombstone_producer(&json).unwrap(), producer);
        assert!(tombstone_producer(br#"{"format":2}"#).is_err());
        assert_eq!(
            tombstone_producer(br#"{"format":1,"run":5}"#).unwrap()["run"],
            "5"
        );
    }
}
