//! A stateful fake of the parts of GitHub's REST API reviewflow uses, for tests: two
//! `wiremock` servers (the API, and a separate "blob host" that serves artifact zips the way
//! GitHub's storage does), one router answering from shared state, a request log, counters per
//! route kind, and fault injection.
//!
//! Shapes follow GitHub's REST documentation: nullable fields are sent as `null`, listings are
//! paginated with absolute `Link` URLs on `/repositories/{id}/…` (as GitHub writes them), errors
//! are `{"message", "documentation_url"}`, an artifact download is a 302 to another host, and
//! `POST` is accepted on the comment-update route (octocrab's `update_comment` sends it).
//!
//! Depends only on wiremock, tokio, serde_json, zip and std: the root package's end-to-end tests
//! include this file too.
#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io::{Cursor, Write};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use wiremock::http::Method;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// The repository the fake serves.
pub const OWNER: &str = "octo-org";
pub const REPO: &str = "octo-repo";
pub const REPO_ID: u64 = 1_296_269;
/// A fork of it, for pull requests from outside.
pub const FORK: &str = "mallory/octo-repo";
pub const FORK_ID: u64 = 81_818_181;
/// The trusted producer of conversations in the tests: the workflow `examples/review.kdl` is
/// exported to.
pub const BUILD_WORKFLOW: &str = ".github/workflows/review.yml";
const DOCS: &str = "https://docs.github.com/rest";

/// What a request was for; faults and counters are keyed by it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RouteKind {
    PullRequest,
    PullDiff,
    Compare,
    CompareDiff,
    ListComments,
    CreateComment,
    UpdateComment,
    CreateCheckRun,
    UpdateCheckRun,
    CreateReview,
    /// `GET /repos/{o}/{r}/pulls/{n}/comments`: the review comments and their replies.
    ListReviewComments,
    ListArtifacts,
    ArtifactZip,
    WorkflowRun,
    /// `GET /repos/{o}/{r}/commits/{ref}`.
    Commit,
    /// `GET /repos/{o}/{r}`.
    Repository,
    /// A request to the blob host.
    Blob,
    Unknown,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Host {
    Api,
    Blob,
}

/// One request as the fake saw it.
#[derive(Clone, Debug)]
pub struct LoggedRequest {
    pub host: Host,
    pub method: String,
    pub path_and_query: String,
    pub kind: RouteKind,
    /// The `Authorization` header's value, as sent.
    pub authorization: Option<String>,
    pub accept: Option<String>,
}

/// A fault answered instead of the normal answer.
#[derive(Clone, Debug)]
pub enum Fault {
    /// This status with GitHub's error JSON.
    Status(u16),
    /// A primary rate limit: 403, `x-ratelimit-remaining: 0`, reset `reset_in` seconds from now
    /// (negative: in the past).
    PrimaryRateLimit { reset_in: i64 },
    /// This status with `Retry-After: secs`.
    RetryAfter { status: u16, secs: u64 },
    /// A 403 secondary rate limit with no header, only GitHub's message.
    SecondaryRateLimit,
    /// A `Link` next page pointing at the blob host (another origin).
    ForeignNextLink,
}

/// A workflow run to seed.
#[derive(Clone, Debug)]
pub struct RunSeed {
    pub id: u64,
    /// As GitHub reports it, e.g. `.github/workflows/review.yml@refs/heads/main`.
    pub path: String,
    pub event: String,
    pub head_branch: Option<String>,
    pub head_sha: String,
    /// `(full_name, id)`; `None` for a deleted fork.
    pub head_repository: Option<(String, u64)>,
}

impl RunSeed {
    /// A run of `workflow` (with GitHub's `@ref` suffix) on this repository's branch.
    pub fn new(id: u64, workflow: &str, event: &str, branch: &str, head_sha: &str) -> Self {
        Self {
            id,
            path: format!("{workflow}@refs/heads/{branch}"),
            event: event.into(),
            head_branch: Some(branch.into()),
            head_sha: head_sha.into(),
            head_repository: Some((format!("{OWNER}/{REPO}"), REPO_ID)),
        }
    }

    /// The trusted producer: `pull_request_target` of review.yml as main has it.
    pub fn trusted(id: u64, head_sha: &str) -> Self {
        Self::new(id, BUILD_WORKFLOW, "pull_request_target", "main", head_sha)
    }

    /// A fork's own `pull_request` run (it may have edited review.yml).
    pub fn fork_pull_request(id: u64, head_sha: &str) -> Self {
        Self {
            path: format!("{BUILD_WORKFLOW}@refs/pull/7/merge"),
            head_branch: Some("patch-1".into()),
            head_repository: Some((FORK.into(), FORK_ID)),
            ..Self::new(id, BUILD_WORKFLOW, "pull_request", "patch-1", head_sha)
        }
    }

    /// The review job's own `pull_request_target` run for a fork's pull request into `main`, as
    /// GitHub reports it: the base branch's workflow, the base branch as its head branch and the
    /// base's commit as its head SHA, and the fork as its head repository (the reading of
    /// actions/checkout's guard against checking out fork code).
    pub fn fork_pull_request_target(id: u64, base_sha: &str) -> Self {
        Self {
            head_repository: Some((FORK.into(), FORK_ID)),
            ..Self::trusted(id, base_sha)
        }
    }

    /// A fork's own `pull_request` run from a branch the fork named `branch`.
    pub fn fork_pull_request_from(id: u64, branch: &str, head_sha: &str) -> Self {
        Self {
            head_branch: Some(branch.into()),
            ..Self::fork_pull_request(id, head_sha)
        }
    }

    /// A same-repository branch's `pull_request` run.
    pub fn branch_pull_request(id: u64, branch: &str, head_sha: &str) -> Self {
        Self {
            path: format!("{BUILD_WORKFLOW}@refs/pull/7/merge"),
            ..Self::new(id, BUILD_WORKFLOW, "pull_request", branch, head_sha)
        }
    }
}

/// An artifact to seed.
#[derive(Clone, Debug)]
pub struct ArtifactSeed {
    pub name: String,
    /// `None`: the listing's `workflow_run` is `null`.
    pub run_id: Option<u64>,
    pub zip: Vec<u8>,
    pub created_at: Option<String>,
    pub expired: bool,
    /// The listed size when it should differ from the zip's.
    pub size_in_bytes: Option<u64>,
    /// The listed `workflow_run.repository_id` when it should differ from this repository's.
    pub repository_id: Option<u64>,
}

impl ArtifactSeed {
    pub fn new(name: &str, run_id: u64, zip: Vec<u8>, created_at: &str) -> Self {
        Self {
            name: name.into(),
            run_id: Some(run_id),
            zip,
            created_at: Some(created_at.into()),
            expired: false,
            size_in_bytes: None,
            repository_id: None,
        }
    }
}

#[derive(Default)]
struct State {
    /// A push that lands while a run is under way: after this many more reads of the pull
    /// request, its head becomes the given commit.
    push_after: HashMap<u64, (usize, String)>,
    /// A comment another run writes while this one is under way: after this many more reads of
    /// the pull request's comments, it is there (body, login, user type).
    comment_after: HashMap<u64, (usize, String, String, String)>,
    api_base: String,
    blob_base: String,
    token: Option<String>,
    log: Vec<LoggedRequest>,
    counts: BTreeMap<RouteKind, usize>,
    faults: HashMap<RouteKind, VecDeque<Fault>>,
    garbage: HashMap<RouteKind, bool>,
    delays: HashMap<RouteKind, Duration>,
    redirect_loop: bool,
    truncated: HashMap<u64, bool>,
    pulls: BTreeMap<u64, Value>,
    pull_diffs: HashMap<u64, String>,
    compares: HashMap<(String, String), String>,
    compare_diffs: HashMap<(String, String), String>,
    comments: BTreeMap<u64, Vec<Value>>,
    next_id: u64,
    check_runs: BTreeMap<u64, Value>,
    reviews: Vec<Value>,
    /// Review (inline) comments and replies by pull request, oldest first.
    review_comments: BTreeMap<u64, Vec<Value>>,
    runs: BTreeMap<u64, RunSeed>,
    artifacts: BTreeMap<u64, (ArtifactSeed, Value)>,
    /// Commits by SHA, as `GET …/commits/{sha}` answers them.
    commits: HashMap<String, Value>,
}

/// The fake. Dropping it stops both servers.
pub struct FakeGithub {
    pub api: MockServer,
    pub blobs: MockServer,
    state: Arc<Mutex<State>>,
}

impl FakeGithub {
    pub async fn start() -> Self {
        let api = MockServer::start().await;
        let blobs = MockServer::start().await;
        let state = Arc::new(Mutex::new(State {
            api_base: api.uri(),
            blob_base: blobs.uri(),
            next_id: 1000,
            ..State::default()
        }));
        for (server, host) in [(&api, Host::Api), (&blobs, Host::Blob)] {
            Mock::given(wiremock::matchers::any())
                .respond_with(Router {
                    state: state.clone(),
                    host,
                })
                .mount(server)
                .await;
        }
        Self { api, blobs, state }
    }

    pub fn api_url(&self) -> String {
        self.api.uri()
    }

    pub fn blob_url(&self) -> String {
        self.blobs.uri()
    }

    pub fn repository() -> String {
        format!("{OWNER}/{REPO}")
    }

    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    // --- seeding ---------------------------------------------------------------------------

    /// API requests must then carry `Authorization: Bearer <token>` (else 401).
    pub fn require_token(&self, token: &str) {
        self.state().token = Some(token.into());
    }

    pub fn add_pull_request(&self, number: u64, head_sha: &str, base_sha: &str) {
        let mut s = self.state();
        let pr = pull_json(&s.api_base, number, head_sha, base_sha);
        s.pulls.insert(number, pr);
    }

    /// A new head for the pull request (a push).
    pub fn set_head(&self, number: u64, head_sha: &str) {
        if let Some(pr) = self.state().pulls.get_mut(&number) {
            pr["head"]["sha"] = json!(head_sha);
        }
    }

    /// The pull request's `draft` flag: a draft, or marked ready for review.
    pub fn set_draft(&self, number: u64, draft: bool) {
        if let Some(pr) = self.state().pulls.get_mut(&number) {
            pr["draft"] = json!(draft);
        }
    }

    /// The ids of the artifacts named `name`, oldest first.
    pub fn artifact_ids(&self, name: &str) -> Vec<u64> {
        self.state()
            .artifacts
            .iter()
            .filter(|(_, (seed, _))| seed.name == name)
            .map(|(id, _)| *id)
            .collect()
    }

    /// The zip of the newest artifact named `name`, as uploaded.
    pub fn artifact_zip_bytes(&self, name: &str) -> Option<Vec<u8>> {
        let s = self.state();
        s.artifacts
            .values()
            .filter(|(seed, _)| seed.name == name)
            .map(|(seed, _)| seed.zip.clone())
            .next_back()
    }

    /// A push during a run: the pull request reads `reads` more times as it is, then its head
    /// is `head_sha`.
    pub fn push_after(&self, number: u64, reads: usize, head_sha: &str) {
        self.state()
            .push_after
            .insert(number, (reads, head_sha.into()));
    }

    /// Another run's comment during a run: the pull request's comments read `reads` more times
    /// as they are, then the comment `body` by `login` (of `user_type`) is there too.
    pub fn comment_after(
        &self,
        number: u64,
        reads: usize,
        body: &str,
        login: &str,
        user_type: &str,
    ) {
        self.state()
            .comment_after
            .insert(number, (reads, body.into(), login.into(), user_type.into()));
    }

    /// The pull request's head repository: a fork's full name, or `None` for a deleted fork.
    pub fn set_head_repo(&self, number: u64, full_name: Option<&str>) {
        if let Some(pr) = self.state().pulls.get_mut(&number) {
            pr["head"]["repo"] = match full_name {
                Some(name) => repo_json(name, FORK_ID),
                None => Value::Null,
            };
            pr["head"]["label"] = json!(format!(
                "{}:{}",
                full_name
                    .and_then(|n| n.split('/').next())
                    .unwrap_or("unknown"),
                pr["head"]["ref"].as_str().unwrap_or("")
            ));
        }
    }

    /// The commit `sha` as `GET …/commits/{sha}` shows it: authored by the account `login` of
    /// `user_type` (`User`, `Bot`), or, with `None`, by an email that maps to no account
    /// (GitHub's top-level `author: null`). An unseeded SHA answers GitHub's 422.
    pub fn set_commit_author(&self, sha: &str, login: Option<&str>, user_type: &str) {
        let mut s = self.state();
        let commit = commit_json(&s.api_base, sha, login, user_type);
        s.commits.insert(sha.into(), commit);
    }

    pub fn set_pull_diff(&self, number: u64, diff: &str) {
        self.state().pull_diffs.insert(number, diff.into());
    }

    /// The compare API's `status` of `head` against `base`.
    pub fn set_compare(&self, base: &str, head: &str, status: &str) {
        self.state()
            .compares
            .insert((base.into(), head.into()), status.into());
    }

    pub fn set_compare_diff(&self, base: &str, head: &str, diff: &str) {
        self.state()
            .compare_diffs
            .insert((base.into(), head.into()), diff.into());
    }

    /// A reply by `login` in the thread of review comment `to`; returns its id.
    pub fn add_review_reply(&self, number: u64, to: u64, body: &str, login: &str) -> u64 {
        let mut s = self.state();
        let id = s.next_id();
        let parent = s
            .review_comments
            .get(&number)
            .and_then(|all| all.iter().find(|c| c["id"] == to))
            .cloned()
            .unwrap_or(json!({}));
        let reply = json!({ "path": parent["path"], "line": parent["line"], "body": body });
        let review = parent["pull_request_review_id"].as_u64().unwrap_or(0);
        let comment = review_comment_json(
            &s.api_base,
            number,
            id,
            review,
            &reply,
            (login, "User"),
            Some(to),
        );
        s.review_comments.entry(number).or_default().push(comment);
        id
    }

    /// The review comments of a pull request, oldest first.
    pub fn review_comments(&self, number: u64) -> Vec<Value> {
        self.state()
            .review_comments
            .get(&number)
            .cloned()
            .unwrap_or_default()
    }

    /// A comment already on the issue or pull request; returns its id.
    pub fn add_issue_comment(&self, number: u64, body: &str, login: &str, user_type: &str) -> u64 {
        let mut s = self.state();
        let id = s.next_id();
        let comment = comment_json(&s.api_base, number, id, body, login, user_type);
        s.comments.entry(number).or_default().push(comment);
        id
    }

    pub fn add_workflow_run(&self, run: RunSeed) {
        self.state().runs.insert(run.id, run);
    }

    /// An artifact of the run `run_id` (seed the run first to fill the listing's
    /// `workflow_run`); returns its id.
    pub fn add_artifact(&self, name: &str, run_id: u64, zip: Vec<u8>, created_at: &str) -> u64 {
        self.add_artifact_with(ArtifactSeed::new(name, run_id, zip, created_at))
    }

    pub fn add_artifact_with(&self, seed: ArtifactSeed) -> u64 {
        let mut s = self.state();
        let id = s.next_id();
        let json = artifact_json(&s, id, &seed);
        s.artifacts.insert(id, (seed, json));
        id
    }

    // --- faults ----------------------------------------------------------------------------

    /// The next `n` requests of `kind` get `status` with GitHub's error JSON.
    pub fn fail_next(&self, kind: RouteKind, n: usize, status: u16) {
        self.fault_next(kind, n, Fault::Status(status));
    }

    pub fn fault_next(&self, kind: RouteKind, n: usize, fault: Fault) {
        let mut s = self.state();
        let queue = s.faults.entry(kind).or_default();
        queue.extend(std::iter::repeat_n(fault, n));
    }

    /// Every answer of `kind` becomes a 200 with a body that is not JSON.
    pub fn garbage_json(&self, kind: RouteKind, on: bool) {
        self.state().garbage.insert(kind, on);
    }

    /// Every answer of `kind` waits this long.
    pub fn delay(&self, kind: RouteKind, delay: Duration) {
        self.state().delays.insert(kind, delay);
    }

    /// Artifact downloads redirect forever (on the blob host).
    pub fn redirect_loop(&self, on: bool) {
        self.state().redirect_loop = on;
    }

    /// The blob host serves only the first half of this artifact's zip.
    pub fn truncate_zip(&self, artifact_id: u64) {
        self.state().truncated.insert(artifact_id, true);
    }

    // --- observation -----------------------------------------------------------------------

    pub fn requests(&self) -> Vec<LoggedRequest> {
        self.state().log.clone()
    }

    pub fn count(&self, kind: RouteKind) -> usize {
        self.state().counts.get(&kind).copied().unwrap_or(0)
    }

    /// Requests to the API host.
    pub fn api_calls(&self) -> usize {
        self.state()
            .log
            .iter()
            .filter(|r| r.host == Host::Api)
            .count()
    }

    pub fn blob_requests(&self) -> Vec<LoggedRequest> {
        self.state()
            .log
            .iter()
            .filter(|r| r.host == Host::Blob)
            .cloned()
            .collect()
    }

    /// Blob-host requests for this artifact's zip.
    pub fn downloads_of(&self, artifact_id: u64) -> usize {
        let prefix = format!("/blob/{artifact_id}");
        let looping = format!("/loop/{artifact_id}/");
        self.blob_requests()
            .iter()
            .filter(|r| {
                r.path_and_query.starts_with(&format!("{prefix}?"))
                    || r.path_and_query == prefix
                    || r.path_and_query.starts_with(&looping)
            })
            .count()
    }

    /// Whether any request anywhere carried this text in its `Authorization` header, by host.
    pub fn authorization_seen(&self, host: Host) -> bool {
        self.state()
            .log
            .iter()
            .any(|r| r.host == host && r.authorization.is_some())
    }

    pub fn comments(&self, number: u64) -> Vec<Value> {
        self.state()
            .comments
            .get(&number)
            .cloned()
            .unwrap_or_default()
    }

    /// Requests to the API that could change something (anything but `GET` and `HEAD`).
    pub fn writes(&self) -> Vec<LoggedRequest> {
        self.state()
            .log
            .iter()
            .filter(|r| r.host == Host::Api && r.method != "GET" && r.method != "HEAD")
            .cloned()
            .collect()
    }

    pub fn check_runs(&self) -> Vec<Value> {
        self.state().check_runs.values().cloned().collect()
    }

    pub fn reviews(&self) -> Vec<Value> {
        self.state().reviews.clone()
    }
}

/// A zip as actions/upload-artifact v4 builds it for one file: the file at the root, deflated.
pub fn zip_of(file_name: &str, bytes: &[u8]) -> Vec<u8> {
    zip_with(&[(file_name, bytes)])
}

/// A zip of several files at the root, deflated.
pub fn zip_with(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut writer = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (name, bytes) in files {
        writer
            .start_file(*name, options)
            .expect("start a zip member");
        writer.write_all(bytes).expect("write a zip member");
    }
    writer.finish().expect("finish the zip").into_inner()
}

/// `2026-10-26T09:MM:SSZ`-style timestamps, `seconds` after 2026-10-26T00:00:00Z.
pub fn timestamp(seconds: u64) -> String {
    let h = seconds / 3600;
    let m = seconds % 3600 / 60;
    let s = seconds % 60;
    let day = 26 + h / 24;
    format!("2026-10-{day:02}T{:02}:{m:02}:{s:02}Z", h % 24)
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|p| p.into_inner())
}

fn now_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

impl State {
    fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }
}

struct Router {
    state: Arc<Mutex<State>>,
    host: Host,
}

impl Respond for Router {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let mut s = lock(&self.state);
        let kind = match self.host {
            Host::Api => classify(&request.method, request.url.path(), accept(request)),
            Host::Blob => RouteKind::Blob,
        };
        let path_and_query = match request.url.query() {
            Some(q) => format!("{}?{q}", request.url.path()),
            None => request.url.path().to_owned(),
        };
        let authorization = header(request, "authorization");
        s.log.push(LoggedRequest {
            host: self.host,
            method: request.method.to_string(),
            path_and_query,
            kind,
            authorization: authorization.clone(),
            accept: accept(request).map(str::to_owned),
        });
        *s.counts.entry(kind).or_default() += 1;
        let used = s.log.iter().filter(|r| r.host == Host::Api).count();
        let fault = s.faults.get_mut(&kind).and_then(VecDeque::pop_front);
        let answer = match fault {
            Some(Fault::PrimaryRateLimit { reset_in }) => error(
                403,
                "API rate limit exceeded for installation ID 1. If you reach out to GitHub Support for help, please include the request ID.",
            )
            .insert_header("x-ratelimit-limit", "5000")
            .insert_header("x-ratelimit-remaining", "0")
            .insert_header("x-ratelimit-used", "5000")
            .insert_header("x-ratelimit-reset", &*(now_secs() + reset_in).to_string())
            .insert_header("x-ratelimit-resource", "core"),
            fault => {
                let answer = answer(&mut s, self.host, kind, request, authorization.as_deref(), fault);
                if self.host == Host::Api {
                    with_rate_headers(answer, used)
                } else {
                    answer
                }
            }
        };
        match s.delays.get(&kind) {
            Some(delay) => answer.set_delay(*delay),
            None => answer,
        }
    }
}

fn header(request: &Request, name: &str) -> Option<String> {
    request
        .headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

fn accept(request: &Request) -> Option<&str> {
    request.headers.get("accept").and_then(|v| v.to_str().ok())
}

fn wants_diff(accept: Option<&str>) -> bool {
    accept.is_some_and(|a| {
        a.contains("application/vnd.github.diff") || a.contains("application/vnd.github.v3.diff")
    })
}

/// The route's segments after `/repos/{owner}/{repo}/` or `/repositories/{id}/`.
fn repo_segments(path: &str) -> Option<Vec<&str>> {
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match segments.as_slice() {
        ["repos", owner, repo, rest @ ..]
            if owner.eq_ignore_ascii_case(OWNER) && repo.eq_ignore_ascii_case(REPO) =>
        {
            Some(rest.to_vec())
        }
        ["repositories", id, rest @ ..] if *id == REPO_ID.to_string() => Some(rest.to_vec()),
        _ => None,
    }
}

fn classify(method: &Method, path: &str, accept: Option<&str>) -> RouteKind {
    let Some(rest) = repo_segments(path) else {
        return RouteKind::Unknown;
    };
    let m = method.as_str();
    match (m, rest.as_slice()) {
        ("GET", ["pulls", _]) if wants_diff(accept) => RouteKind::PullDiff,
        ("GET", ["pulls", _]) => RouteKind::PullRequest,
        ("POST", ["pulls", _, "reviews"]) => RouteKind::CreateReview,
        ("GET", ["pulls", _, "comments"]) => RouteKind::ListReviewComments,
        ("GET", ["compare", _]) if wants_diff(accept) => RouteKind::CompareDiff,
        ("GET", ["compare", _]) => RouteKind::Compare,
        ("GET", ["issues", _, "comments"]) => RouteKind::ListComments,
        ("POST", ["issues", _, "comments"]) => RouteKind::CreateComment,
        ("PATCH" | "POST", ["issues", "comments", _]) => RouteKind::UpdateComment,
        ("POST", ["check-runs"]) => RouteKind::CreateCheckRun,
        ("PATCH", ["check-runs", _]) => RouteKind::UpdateCheckRun,
        ("GET", ["actions", "artifacts"]) => RouteKind::ListArtifacts,
        ("GET", ["actions", "artifacts", _, "zip"]) => RouteKind::ArtifactZip,
        ("GET", ["actions", "runs", _]) => RouteKind::WorkflowRun,
        ("GET", ["commits", _]) => RouteKind::Commit,
        ("GET", []) => RouteKind::Repository,
        _ => RouteKind::Unknown,
    }
}

fn error(status: u16, message: &str) -> ResponseTemplate {
    ResponseTemplate::new(status).set_body_raw(
        json!({ "message": message, "documentation_url": DOCS, "status": status.to_string() })
            .to_string(),
        "application/json; charset=utf-8",
    )
}

fn ok_json(status: u16, body: &Value) -> ResponseTemplate {
    ResponseTemplate::new(status).set_body_raw(body.to_string(), "application/json; charset=utf-8")
}

fn with_rate_headers(answer: ResponseTemplate, used: usize) -> ResponseTemplate {
    answer
        .insert_header("x-ratelimit-limit", "5000")
        .insert_header(
            "x-ratelimit-remaining",
            &*5000usize.saturating_sub(used).to_string(),
        )
        .insert_header("x-ratelimit-used", &*used.to_string())
        .insert_header("x-ratelimit-reset", &*(now_secs() + 3600).to_string())
        .insert_header("x-ratelimit-resource", "core")
        .insert_header("x-github-api-version-selected", "2022-11-28")
}

fn answer(
    s: &mut State,
    host: Host,
    kind: RouteKind,
    request: &Request,
    authorization: Option<&str>,
    fault: Option<Fault>,
) -> ResponseTemplate {
    if let (Host::Api, Some(token)) = (host, &s.token) {
        let good = authorization
            .is_some_and(|a| a == format!("Bearer {token}") || a == format!("token {token}"));
        if !good {
            return error(401, "Bad credentials");
        }
    }
    let mut foreign_link = false;
    match fault {
        Some(Fault::Status(status)) => return error(status, reason(status)),
        // Answered by the router, with its own rate headers.
        Some(Fault::PrimaryRateLimit { .. }) => return error(403, "API rate limit exceeded"),
        Some(Fault::RetryAfter { status, secs }) => {
            return error(status, reason(status)).insert_header("retry-after", &*secs.to_string());
        }
        Some(Fault::SecondaryRateLimit) => {
            return error(
                403,
                "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID.",
            );
        }
        Some(Fault::ForeignNextLink) => foreign_link = true,
        None => {}
    }
    if s.garbage.get(&kind).copied().unwrap_or(false) {
        return ResponseTemplate::new(200).set_body_raw(
            "{\"id\": 1, \"name\": <html>oops",
            "application/json; charset=utf-8",
        );
    }
    let path = request.url.path().to_owned();
    if host == Host::Blob {
        return blob(s, &path);
    }
    let query = query_map(request);
    let rest: Vec<String> = repo_segments(&path)
        .map(|v| v.into_iter().map(str::to_owned).collect())
        .unwrap_or_default();
    let number = |i: usize| rest.get(i).and_then(|v| v.parse::<u64>().ok());
    let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
    match kind {
        RouteKind::PullRequest => {
            let n = number(1);
            if let Some(n) = n
                && let Some((left, sha)) = s.push_after.get_mut(&n)
            {
                if *left == 0 {
                    let sha = sha.clone();
                    s.push_after.remove(&n);
                    if let Some(pr) = s.pulls.get_mut(&n) {
                        pr["head"]["sha"] = json!(sha);
                    }
                } else {
                    *left -= 1;
                }
            }
            match n.and_then(|n| s.pulls.get(&n)) {
                Some(pr) => ok_json(200, pr),
                None => error(404, "Not Found"),
            }
        }
        RouteKind::PullDiff => match number(1).filter(|n| s.pulls.contains_key(n)) {
            Some(n) => diff(
                s.pull_diffs
                    .get(&n)
                    .cloned()
                    .unwrap_or_else(|| sample_diff("src/lib.rs")),
            ),
            None => error(404, "Not Found"),
        },
        RouteKind::Compare | RouteKind::CompareDiff => {
            let spec = rest.get(1).cloned().unwrap_or_default();
            let Some((base, head)) = spec.split_once("...") else {
                return error(404, "Not Found");
            };
            let key = (base.to_owned(), head.to_owned());
            let Some(status) = s.compares.get(&key).cloned() else {
                return error(404, &format!("No commit found for SHA: {head}"));
            };
            if kind == RouteKind::CompareDiff {
                return diff(
                    s.compare_diffs
                        .get(&key)
                        .cloned()
                        .unwrap_or_else(|| sample_diff("src/main.rs")),
                );
            }
            ok_json(200, &compare_json(&s.api_base, base, head, &status))
        }
        RouteKind::ListComments => {
            let n = number(1).unwrap_or(0);
            if let Some((left, ..)) = s.comment_after.get_mut(&n) {
                if *left == 0 {
                    if let Some((_, body, login, kind)) = s.comment_after.remove(&n) {
                        let id = s.next_id();
                        let comment = comment_json(&s.api_base, n, id, &body, &login, &kind);
                        s.comments.entry(n).or_default().push(comment);
                    }
                } else {
                    *left -= 1;
                }
            }
            let all = s.comments.get(&n).cloned().unwrap_or_default();
            let link_path = format!(
                "{}/repositories/{REPO_ID}/issues/{n}/comments",
                s.link_base(foreign_link)
            );
            page(&all, &query, &link_path, &[], |items, _| {
                Value::Array(items)
            })
        }
        RouteKind::ListReviewComments => {
            let n = number(1).unwrap_or(0);
            let all = s.review_comments.get(&n).cloned().unwrap_or_default();
            let link_path = format!(
                "{}/repositories/{REPO_ID}/pulls/{n}/comments",
                s.link_base(foreign_link)
            );
            page(&all, &query, &link_path, &[], |items, _| {
                Value::Array(items)
            })
        }
        RouteKind::CreateComment => {
            let n = number(1).unwrap_or(0);
            if !s.pulls.contains_key(&n) {
                return error(404, "Not Found");
            }
            match comment_body(&body) {
                Err(message) => validation_failed("IssueComment", message),
                Ok(text) => {
                    let id = s.next_id();
                    let c = comment_json(&s.api_base, n, id, &text, "github-actions[bot]", "Bot");
                    s.comments.entry(n).or_default().push(c.clone());
                    ok_json(201, &c)
                }
            }
        }
        RouteKind::UpdateComment => {
            let id = number(2).unwrap_or(0);
            let text = match comment_body(&body) {
                Err(message) => return validation_failed("IssueComment", message),
                Ok(text) => text,
            };
            for list in s.comments.values_mut() {
                if let Some(c) = list.iter_mut().find(|c| c["id"] == json!(id)) {
                    c["body"] = json!(text);
                    c["updated_at"] = json!(timestamp(7200));
                    return ok_json(200, c);
                }
            }
            error(404, "Not Found")
        }
        RouteKind::CreateCheckRun => {
            if body.get("name").and_then(Value::as_str).is_none()
                || body.get("head_sha").and_then(Value::as_str).is_none()
            {
                return validation_failed("CheckRun", "name and head_sha are required");
            }
            if let Some(answer) = check_output(&body) {
                return answer;
            }
            let id = s.next_id();
            let run = check_run_json(id, &body);
            s.check_runs.insert(id, run.clone());
            ok_json(201, &run)
        }
        RouteKind::UpdateCheckRun => {
            let id = number(1).unwrap_or(0);
            if let Some(answer) = check_output(&body) {
                return answer;
            }
            match s.check_runs.get_mut(&id) {
                Some(run) => {
                    merge_check_run(run, &body);
                    ok_json(200, run)
                }
                None => error(404, "Not Found"),
            }
        }
        RouteKind::CreateReview => {
            let n = number(1).unwrap_or(0);
            let Some(pr) = s.pulls.get(&n).cloned() else {
                return error(404, "Not Found");
            };
            let id = s.next_id();
            let state = match body.get("event").and_then(Value::as_str) {
                Some("APPROVE") => "APPROVED",
                Some("REQUEST_CHANGES") => "CHANGES_REQUESTED",
                Some("COMMENT") => "COMMENTED",
                _ => "PENDING",
            };
            let review = json!({
                "id": id,
                "node_id": format!("PRR_kwDO{id}"),
                "user": user_json("github-actions[bot]", "Bot"),
                "body": body.get("body").cloned().unwrap_or(json!("")),
                "state": state,
                "html_url": format!("https://github.com/{OWNER}/{REPO}/pull/{n}#pullrequestreview-{id}"),
                "pull_request_url": format!("{}/repos/{OWNER}/{REPO}/pulls/{n}", s.api_base),
                "commit_id": body.get("commit_id").cloned().unwrap_or_else(|| pr["head"]["sha"].clone()),
                "submitted_at": if state == "PENDING" { Value::Null } else { json!(timestamp(3600)) },
                "author_association": "NONE",
                "comments": body.get("comments").cloned().unwrap_or(json!([])),
            });
            // Each inline comment becomes a review comment of its own, as GitHub lists them.
            let inline: Vec<Value> = body
                .get("comments")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            for c in inline {
                let cid = s.next_id();
                let comment = review_comment_json(
                    &s.api_base,
                    n,
                    cid,
                    id,
                    &c,
                    ("github-actions[bot]", "Bot"),
                    None,
                );
                s.review_comments.entry(n).or_default().push(comment);
            }
            s.reviews.push(review.clone());
            ok_json(200, &review)
        }
        RouteKind::ListArtifacts => {
            let name = query.get("name").cloned();
            let mut listed: Vec<&(ArtifactSeed, Value)> = s
                .artifacts
                .values()
                .filter(|(seed, _)| name.as_ref().is_none_or(|n| *n == seed.name))
                .collect();
            // Newest first, as GitHub lists them.
            listed.sort_by(|(a, aj), (b, bj)| {
                b.created_at
                    .cmp(&a.created_at)
                    .then(bj["id"].as_u64().cmp(&aj["id"].as_u64()))
            });
            let items: Vec<Value> = listed.into_iter().map(|(_, j)| j.clone()).collect();
            let link_path = format!(
                "{}/repositories/{REPO_ID}/actions/artifacts",
                s.link_base(foreign_link)
            );
            let keep: Vec<(&str, String)> = name.iter().map(|n| ("name", n.clone())).collect();
            page(
                &items,
                &query,
                &link_path,
                &keep,
                |items, total| json!({ "total_count": total, "artifacts": items }),
            )
        }
        RouteKind::ArtifactZip => {
            let id = number(2).unwrap_or(0);
            match s.artifacts.get(&id) {
                None => error(404, "Not Found"),
                Some((seed, _)) if seed.expired => error(410, "Artifact has expired"),
                Some(_) => {
                    let target = if s.redirect_loop {
                        format!("{}/loop/{id}/0", s.blob_base)
                    } else {
                        format!(
                            "{}/blob/{id}?sv=2025-01-05&spr=https&se=2026-10-26T10%3A00%3A00Z&sr=b&sp=r&sig=c2lnbmF0dXJl",
                            s.blob_base
                        )
                    };
                    ResponseTemplate::new(302).insert_header("location", &*target)
                }
            }
        }
        // The fields of GitHub's repository object that a client may read.
        RouteKind::Repository => ok_json(
            200,
            &json!({
                "id": REPO_ID,
                "node_id": "MDEwOlJlcG9zaXRvcnkxMjk2MjY5",
                "name": REPO,
                "full_name": format!("{OWNER}/{REPO}"),
                "private": false,
                "owner": { "login": OWNER, "id": 1, "type": "User" },
                "default_branch": "main",
            }),
        ),
        RouteKind::WorkflowRun => match number(2).and_then(|id| s.runs.get(&id)) {
            Some(run) => ok_json(200, &run_json(&s.api_base, run)),
            None => error(404, "Not Found"),
        },
        RouteKind::Commit => {
            let sha = rest.get(1).cloned().unwrap_or_default();
            match s.commits.get(&sha) {
                Some(commit) => ok_json(200, commit),
                // What GitHub answers for a SHA the repository does not have.
                None => ResponseTemplate::new(422).set_body_raw(
                    json!({
                        "message": format!("No commit found for SHA: {sha}"),
                        "documentation_url": "https://docs.github.com/rest/commits/commits#get-a-commit",
                        "status": "422",
                    })
                    .to_string(),
                    "application/json; charset=utf-8",
                ),
            }
        }
        RouteKind::Blob | RouteKind::Unknown => error(404, "Not Found"),
    }
}

impl State {
    /// Where `Link` URLs point: the API, or (a fault) the blob host.
    fn link_base(&self, foreign: bool) -> String {
        if foreign {
            self.blob_base.clone()
        } else {
            self.api_base.clone()
        }
    }
}

fn blob(s: &State, path: &str) -> ResponseTemplate {
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match segments.as_slice() {
        ["loop", id, hop] => {
            let next = hop.parse::<u64>().unwrap_or(0) + 1;
            ResponseTemplate::new(302).insert_header("location", &*format!("{}/loop/{id}/{next}", s.blob_base))
        }
        ["blob", id] => match id.parse::<u64>().ok().and_then(|id| s.artifacts.get(&id).map(|a| (id, a))) {
            Some((id, (seed, _))) => {
                let mut bytes = seed.zip.clone();
                if s.truncated.get(&id).copied().unwrap_or(false) {
                    bytes.truncate(bytes.len() / 2);
                }
                ResponseTemplate::new(200).set_body_raw(bytes, "application/zip")
            }
            None => ResponseTemplate::new(404).set_body_raw(
                "<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>BlobNotFound</Code></Error>",
                "application/xml",
            ),
        },
        _ => ResponseTemplate::new(400).set_body_raw(
            "<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>InvalidUri</Code></Error>",
            "application/xml",
        ),
    }
}

fn query_map(request: &Request) -> HashMap<String, String> {
    request
        .url
        .query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

/// One page of `items` by `per_page` (default 30, at most 100) and `page` (default 1), with
/// GitHub's `Link` header of absolute URLs (`keep` are the query parameters carried over).
fn page(
    items: &[Value],
    query: &HashMap<String, String>,
    link_path: &str,
    keep: &[(&str, String)],
    shape: impl Fn(Vec<Value>, usize) -> Value,
) -> ResponseTemplate {
    let per_page = query
        .get("per_page")
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(30)
        .clamp(1, 100);
    let page_no = query
        .get("page")
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(1)
        .max(1);
    let last = items.len().div_ceil(per_page).max(1);
    let start = (page_no - 1).saturating_mul(per_page).min(items.len());
    let end = (start + per_page).min(items.len());
    let body = shape(items[start..end].to_vec(), items.len());
    let url = |p: usize| {
        let mut q: Vec<String> = keep
            .iter()
            .map(|(k, v)| format!("{k}={}", encode(v)))
            .collect();
        q.push(format!("per_page={per_page}"));
        q.push(format!("page={p}"));
        format!("<{link_path}?{}>", q.join("&"))
    };
    let mut links = Vec::new();
    if page_no > 1 {
        links.push(format!("{}; rel=\"prev\"", url(page_no - 1)));
    }
    if page_no < last {
        links.push(format!("{}; rel=\"next\"", url(page_no + 1)));
        links.push(format!("{}; rel=\"last\"", url(last)));
    }
    if page_no > 1 {
        links.push(format!("{}; rel=\"first\"", url(1)));
    }
    let answer = ok_json(200, &body);
    if links.is_empty() {
        answer
    } else {
        answer.insert_header("link", &*links.join(", "))
    }
}

fn encode(value: &str) -> String {
    value
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn reason(status: u16) -> &'static str {
    match status {
        400 => "Problems parsing JSON",
        401 => "Bad credentials",
        403 => "Resource not accessible by integration",
        404 => "Not Found",
        409 => "Conflict",
        410 => "Gone",
        422 => "Validation Failed",
        429 => "Too many requests",
        500 => "Server Error",
        502 => "Server Error",
        503 => "Service Unavailable",
        _ => "Error",
    }
}

fn validation_failed(resource: &str, message: &str) -> ResponseTemplate {
    ResponseTemplate::new(422).set_body_raw(
        json!({
            "message": "Validation Failed",
            "errors": [{ "resource": resource, "code": "custom", "message": message }],
            "documentation_url": DOCS,
            "status": "422",
        })
        .to_string(),
        "application/json; charset=utf-8",
    )
}

/// The comment's body, or GitHub's validation message.
fn comment_body(body: &Value) -> Result<String, &'static str> {
    let Some(text) = body.get("body").and_then(Value::as_str) else {
        return Err("body is missing");
    };
    if text.chars().count() > 65_536 {
        return Err("body is too long (maximum is 65536 characters)");
    }
    Ok(text.to_owned())
}

fn check_output(body: &Value) -> Option<ResponseTemplate> {
    let output = body.get("output")?;
    for field in ["summary", "text"] {
        if output
            .get(field)
            .and_then(Value::as_str)
            .is_some_and(|t| t.chars().count() > 65_535)
        {
            return Some(validation_failed(
                "CheckRun",
                &format!("output.{field} is too long"),
            ));
        }
    }
    if output
        .get("annotations")
        .and_then(Value::as_array)
        .is_some_and(|a| a.len() > 50)
    {
        return Some(validation_failed(
            "CheckRun",
            "only 50 annotations are allowed per request",
        ));
    }
    None
}

fn diff(text: String) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(text, "text/plain; charset=utf-8")
}

fn sample_diff(path: &str) -> String {
    format!(
        "diff --git a/{path} b/{path}\nindex 1111111..2222222 100644\n--- a/{path}\n+++ b/{path}\n@@ -1,2 +1,3 @@\n fn main() {{\n+    println!(\"hello\");\n }}\n"
    )
}

fn user_json(login: &str, kind: &str) -> Value {
    json!({
        "login": login,
        "id": 41_898_282,
        "node_id": "MDM6Qm90NDE4OTgyODI=",
        "avatar_url": "https://avatars.githubusercontent.com/in/15368?v=4",
        "url": format!("https://api.github.com/users/{login}"),
        "html_url": format!("https://github.com/{login}"),
        "type": kind,
        "site_admin": false,
    })
}

/// `GET /repos/{o}/{r}/commits/{sha}`: the git author in `commit.author`, the account GitHub
/// maps its email to in the top-level `author` (`null` when none).
fn commit_json(api: &str, sha: &str, login: Option<&str>, kind: &str) -> Value {
    let full = format!("{OWNER}/{REPO}");
    let (name, email) = match login {
        Some(login) => (
            login.to_owned(),
            format!("41898282+{login}@users.noreply.github.com"),
        ),
        None => ("Mona Lisa".to_owned(), "mona@laptop.invalid".to_owned()),
    };
    let person = json!({ "name": name, "email": email, "date": timestamp(30) });
    let account = login.map_or(Value::Null, |l| user_json(l, kind));
    json!({
        "url": format!("{api}/repos/{full}/commits/{sha}"),
        "sha": sha,
        "node_id": format!("C_kwDO{}", &sha[..sha.len().min(12)]),
        "html_url": format!("https://github.com/{full}/commit/{sha}"),
        "comments_url": format!("{api}/repos/{full}/commits/{sha}/comments"),
        "commit": {
            "url": format!("{api}/repos/{full}/git/commits/{sha}"),
            "author": person,
            "committer": { "name": "GitHub", "email": "noreply@github.com", "date": timestamp(30) },
            "message": "Publish the generated head",
            "tree": { "url": format!("{api}/repos/{full}/git/trees/{sha}"), "sha": sha },
            "comment_count": 0,
            "verification": { "verified": false, "reason": "unsigned", "signature": Value::Null, "payload": Value::Null, "verified_at": Value::Null },
        },
        "author": account,
        "committer": user_json("web-flow", "User"),
        "parents": [],
        "stats": { "total": 1, "additions": 1, "deletions": 0 },
        "files": [],
    })
}

fn repo_json(full_name: &str, id: u64) -> Value {
    let (owner, name) = full_name.split_once('/').unwrap_or((full_name, ""));
    json!({
        "id": id,
        "node_id": "MDEwOlJlcG9zaXRvcnkxMjk2MjY5",
        "name": name,
        "full_name": full_name,
        "private": false,
        "owner": user_json(owner, "Organization"),
        "html_url": format!("https://github.com/{full_name}"),
        "fork": full_name != format!("{OWNER}/{REPO}"),
        "url": format!("https://api.github.com/repos/{full_name}"),
    })
}

fn pull_json(api: &str, number: u64, head_sha: &str, base_sha: &str) -> Value {
    let full = format!("{OWNER}/{REPO}");
    json!({
        "url": format!("{api}/repos/{full}/pulls/{number}"),
        "id": 1_000_000 + number,
        "node_id": format!("PR_kwDO{number}"),
        "html_url": format!("https://github.com/{full}/pull/{number}"),
        "diff_url": format!("https://github.com/{full}/pull/{number}.diff"),
        "number": number,
        "state": "open",
        "locked": false,
        "title": format!("Change number {number}"),
        "user": user_json("octocat", "User"),
        "body": Value::Null,
        "labels": [],
        "milestone": Value::Null,
        "created_at": timestamp(0),
        "updated_at": timestamp(60),
        "closed_at": Value::Null,
        "merged_at": Value::Null,
        "merge_commit_sha": Value::Null,
        "draft": false,
        "head": {
            "label": format!("{OWNER}:feature-{number}"),
            "ref": format!("feature-{number}"),
            "sha": head_sha,
            "user": user_json(OWNER, "Organization"),
            "repo": repo_json(&full, REPO_ID),
        },
        "base": {
            "label": format!("{OWNER}:main"),
            "ref": "main",
            "sha": base_sha,
            "user": user_json(OWNER, "Organization"),
            "repo": repo_json(&full, REPO_ID),
        },
        "author_association": "CONTRIBUTOR",
        "auto_merge": Value::Null,
    })
}

/// A review comment as `GET …/pulls/{n}/comments` lists it, from the comment `c` a review
/// request carried (`path`, `line`, `body`, …).
fn review_comment_json(
    api: &str,
    number: u64,
    id: u64,
    review: u64,
    c: &Value,
    (login, kind): (&str, &str),
    in_reply_to: Option<u64>,
) -> Value {
    let mut comment = json!({
        "url": format!("{api}/repos/{OWNER}/{REPO}/pulls/comments/{id}"),
        "pull_request_review_id": review,
        "id": id,
        "node_id": format!("PRRC_kwDO{id}"),
        "diff_hunk": "@@ -1 +1 @@",
        "path": c["path"],
        "commit_id": "",
        "original_commit_id": "",
        "user": user_json(login, kind),
        "body": c["body"],
        "created_at": timestamp(id % 3600),
        "updated_at": timestamp(id % 3600),
        "html_url": format!("https://github.com/{OWNER}/{REPO}/pull/{number}#discussion_r{id}"),
        "pull_request_url": format!("{api}/repos/{OWNER}/{REPO}/pulls/{number}"),
        "author_association": "NONE",
        "line": c["line"],
        "side": "RIGHT",
        "start_line": c.get("start_line").cloned().unwrap_or(Value::Null),
        "subject_type": "line",
    });
    if let Some(to) = in_reply_to {
        comment["in_reply_to_id"] = json!(to);
    }
    comment
}

fn comment_json(api: &str, number: u64, id: u64, body: &str, login: &str, kind: &str) -> Value {
    json!({
        "url": format!("{api}/repos/{OWNER}/{REPO}/issues/comments/{id}"),
        "html_url": format!("https://github.com/{OWNER}/{REPO}/pull/{number}#issuecomment-{id}"),
        "issue_url": format!("{api}/repos/{OWNER}/{REPO}/issues/{number}"),
        "id": id,
        "node_id": format!("IC_kwDO{id}"),
        "user": user_json(login, kind),
        "created_at": timestamp(id % 3600),
        "updated_at": timestamp(id % 3600),
        "author_association": "NONE",
        "body": body,
        "performed_via_github_app": Value::Null,
    })
}

fn compare_json(api: &str, base: &str, head: &str, status: &str) -> Value {
    let (ahead, behind) = match status {
        "ahead" => (1, 0),
        "behind" => (0, 1),
        "diverged" => (1, 1),
        _ => (0, 0),
    };
    json!({
        "url": format!("{api}/repos/{OWNER}/{REPO}/compare/{base}...{head}"),
        "html_url": format!("https://github.com/{OWNER}/{REPO}/compare/{base}...{head}"),
        "base_commit": { "sha": base },
        "merge_base_commit": { "sha": base },
        "status": status,
        "ahead_by": ahead,
        "behind_by": behind,
        "total_commits": ahead,
        "commits": [],
        "files": [],
    })
}

fn check_run_json(id: u64, body: &Value) -> Value {
    let output = body.get("output").cloned().unwrap_or(json!({}));
    let annotations = output
        .get("annotations")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    json!({
        "id": id,
        "head_sha": body["head_sha"],
        "node_id": format!("CR_kwDO{id}"),
        "external_id": body.get("external_id").cloned().unwrap_or(json!("")),
        "url": format!("https://api.github.com/repos/{OWNER}/{REPO}/check-runs/{id}"),
        "html_url": format!("https://github.com/{OWNER}/{REPO}/runs/{id}"),
        "details_url": body.get("details_url").cloned().unwrap_or(Value::Null),
        "status": body.get("status").cloned().unwrap_or(json!("queued")),
        "conclusion": body.get("conclusion").cloned().unwrap_or(Value::Null),
        "started_at": timestamp(100),
        "completed_at": if body.get("conclusion").is_some() { json!(timestamp(200)) } else { Value::Null },
        "output": {
            "title": output.get("title").cloned().unwrap_or(Value::Null),
            "summary": output.get("summary").cloned().unwrap_or(Value::Null),
            "text": output.get("text").cloned().unwrap_or(Value::Null),
            "annotations_count": annotations,
        },
        "name": body["name"],
        "check_suite": { "id": 5 },
        "app": { "id": 15368, "slug": "github-actions", "name": "GitHub Actions" },
        "pull_requests": [],
    })
}

/// A PATCH: fields replace, annotations add up (GitHub appends them).
fn merge_check_run(run: &mut Value, body: &Value) {
    for field in ["name", "status", "conclusion", "details_url", "external_id"] {
        if let Some(v) = body.get(field) {
            run[field] = v.clone();
        }
    }
    if let Some(output) = body.get("output") {
        for field in ["title", "summary", "text"] {
            if let Some(v) = output.get(field) {
                run["output"][field] = v.clone();
            }
        }
        let added = output
            .get("annotations")
            .and_then(Value::as_array)
            .map_or(0, Vec::len) as u64;
        let before = run["output"]["annotations_count"].as_u64().unwrap_or(0);
        run["output"]["annotations_count"] = json!(before + added);
    }
}

fn artifact_json(s: &State, id: u64, seed: &ArtifactSeed) -> Value {
    let workflow_run = match seed.run_id {
        None => Value::Null,
        Some(run_id) => match s.runs.get(&run_id) {
            Some(run) => json!({
                "id": run_id,
                "repository_id": seed.repository_id.unwrap_or(REPO_ID),
                "head_repository_id": run.head_repository.as_ref().map(|(_, id)| *id),
                "head_branch": run.head_branch,
                "head_sha": run.head_sha,
            }),
            None => json!({
                "id": run_id,
                "repository_id": seed.repository_id.unwrap_or(REPO_ID),
                "head_repository_id": Value::Null,
                "head_branch": Value::Null,
                "head_sha": Value::Null,
            }),
        },
    };
    json!({
        "id": id,
        "node_id": format!("MDg6QXJ0aWZhY3Q{id}"),
        "name": seed.name,
        "size_in_bytes": seed.size_in_bytes.unwrap_or(seed.zip.len() as u64),
        "url": format!("{}/repos/{OWNER}/{REPO}/actions/artifacts/{id}", s.api_base),
        "archive_download_url": format!("{}/repos/{OWNER}/{REPO}/actions/artifacts/{id}/zip", s.api_base),
        "expired": seed.expired,
        "created_at": seed.created_at,
        "updated_at": seed.created_at,
        "expires_at": seed.created_at.as_ref().map(|c| c.replacen("2026-10", "2027-01", 1)),
        "digest": Value::Null,
        "workflow_run": workflow_run,
    })
}

fn run_json(api: &str, run: &RunSeed) -> Value {
    let full = format!("{OWNER}/{REPO}");
    json!({
        "id": run.id,
        "name": "build",
        "node_id": format!("WFR_kwLO{}", run.id),
        "head_branch": run.head_branch,
        "head_sha": run.head_sha,
        "path": run.path,
        "display_title": "build",
        "run_number": run.id % 1000,
        "event": run.event,
        "status": "completed",
        "conclusion": "success",
        "workflow_id": 161_335,
        "check_suite_id": 42,
        "url": format!("{api}/repos/{full}/actions/runs/{}", run.id),
        "html_url": format!("https://github.com/{full}/actions/runs/{}", run.id),
        "pull_requests": [],
        "created_at": timestamp(10),
        "updated_at": timestamp(20),
        "actor": user_json("octocat", "User"),
        "run_attempt": 1,
        "referenced_workflows": [],
        "run_started_at": timestamp(10),
        "triggering_actor": user_json("octocat", "User"),
        "jobs_url": format!("{api}/repos/{full}/actions/runs/{}/jobs", run.id),
        "artifacts_url": format!("{api}/repos/{full}/actions/runs/{}/artifacts", run.id),
        "head_commit": { "id": run.head_sha, "tree_id": run.head_sha, "message": "change", "timestamp": timestamp(5) },
        "repository": repo_json(&full, REPO_ID),
        "head_repository": run.head_repository.as_ref().map(|(name, id)| repo_json(name, *id)),
    })
}
