//! A stateful fake of the parts of GitLab's REST v4 API the `gitlab` forge uses: one `wiremock`
//! server answering from shared state under `/api/v4`, a request log, counters per route kind,
//! and fault injection.
//!
//! Shapes follow GitLab's REST documentation: a merge request with `diff_refs`, `/diffs` files
//! with their hunks and no git headers, notes with their `author` and `system` (the notes listing
//! holding the threads' notes too), a discussion with its `notes` and replies (the discussions
//! listing holding each plain note as a discussion of its own), a commit status as `POST
//! …/statuses/:sha` answers it; listings paginated by both `Link` (absolute URLs) and
//! `X-Next-Page` (or only one of them, [`Paging`]); errors are
//! `{"message": "404 Not found"}`, `{"message": {"field": ["reason"]}}` and
//! `{"error": "invalid_token", "error_description": …}`; the token is read from `PRIVATE-TOKEN`.
#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde_json::{Value, json};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// The project the fake serves.
pub const PROJECT_ID: u64 = 42;
pub const PROJECT_PATH: &str = "acme/widgets";
/// The account the test token authenticates as: a project access token's bot user.
pub const BOT: &str = "project_42_bot_5f1c2a";
pub const BOT_ID: u64 = 901;

/// What a request was for; faults and counters are keyed by it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RouteKind {
    User,
    MergeRequest,
    Versions,
    Diffs,
    ListNotes,
    CreateNote,
    UpdateNote,
    ListDiscussions,
    CreateDiscussion,
    CreateStatus,
    Commit,
    MergeBase,
    Compare,
    Project,
    ListPipelines,
    PipelineJobs,
    ProtectedBranch,
    ArtifactFile,
    Unknown,
}

/// How the fake says where the next page is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Paging {
    /// Both `Link` and `X-Next-Page`, as GitLab does.
    Both,
    /// Only `Link` (keyset pagination, or a proxy that drops the `X-` headers).
    LinkOnly,
    /// Only `X-Next-Page` (a proxy that drops `Link`).
    NextPageOnly,
}

/// One request as the fake saw it.
#[derive(Clone, Debug)]
pub struct LoggedRequest {
    pub method: String,
    pub path_and_query: String,
    pub kind: RouteKind,
    pub private_token: Option<String>,
    pub authorization: Option<String>,
    pub body: Option<Value>,
}

/// A fault answered instead of the normal answer.
#[derive(Clone, Debug)]
pub enum Fault {
    /// This status with GitLab's error JSON `{"message": "<status> <reason>"}`.
    Status(u16),
    /// This status with this body, as is.
    Body(u16, Value),
    /// A 502 with an HTML page, as a proxy in front of GitLab answers.
    BadGateway,
    /// A `Link` next page on another host.
    ForeignNextLink,
    /// A 429 with `Retry-After: secs`, as GitLab's rate limit answers.
    RateLimited { secs: u64 },
}

/// A job of a seeded pipeline.
#[derive(Clone, Debug)]
pub struct JobSeed {
    pub name: String,
    pub status: String,
    /// Whether the job has the zip of its `artifacts: paths:`.
    pub archive: bool,
}

impl JobSeed {
    pub fn keeping(name: &str) -> Self {
        Self {
            name: name.into(),
            status: "success".into(),
            archive: true,
        }
    }
}

/// A pipeline to seed, with its jobs.
#[derive(Clone, Debug)]
pub struct PipelineSeed {
    pub project_id: u64,
    pub git_ref: String,
    pub source: String,
    pub tag: bool,
    pub status: String,
    pub jobs: Vec<JobSeed>,
}

impl PipelineSeed {
    /// A review's pipeline on `main`, started by a trigger, whose job `post` kept artifacts.
    pub fn review() -> Self {
        Self {
            project_id: PROJECT_ID,
            git_ref: "main".into(),
            source: "trigger".into(),
            tag: false,
            status: "success".into(),
            jobs: vec![JobSeed::keeping("restore"), JobSeed::keeping("post")],
        }
    }

    /// A merge request's own pipeline: its ref is the merge request's, its source the event.
    pub fn merge_request(iid: u64) -> Self {
        Self {
            git_ref: format!("refs/merge-requests/{iid}/head"),
            source: "merge_request_event".into(),
            jobs: vec![JobSeed::keeping("post")],
            ..Self::review()
        }
    }
}

/// A merge request to seed.
#[derive(Clone, Debug)]
pub struct MrSeed {
    pub iid: u64,
    pub title: String,
    pub description: Option<String>,
    pub source_branch: String,
    pub target_branch: String,
    pub author: String,
    pub base_sha: String,
    pub start_sha: String,
    pub head_sha: String,
    /// A draft merge request: GitLab says so in `draft` and, as before 13.2, `work_in_progress`.
    pub draft: bool,
}

impl MrSeed {
    pub fn new(iid: u64, base: &str, head: &str) -> Self {
        Self {
            iid,
            title: "Add the widget cache".into(),
            description: Some("Caches widgets.\n\nCloses #12.".into()),
            source_branch: "feature/cache".into(),
            target_branch: "main".into(),
            author: "alice".into(),
            base_sha: base.into(),
            start_sha: base.into(),
            head_sha: head.into(),
            draft: false,
        }
    }
}

#[derive(Default)]
struct State {
    api_base: String,
    token: Option<String>,
    paging: Option<Paging>,
    mrs: BTreeMap<u64, MrSeed>,
    /// Each merge request's diff versions, oldest first: one per head it had.
    versions: BTreeMap<u64, Vec<Value>>,
    /// After this many more reads of the merge request, its head becomes the given commit.
    push_after: HashMap<u64, (usize, String)>,
    /// The heads the next reads of a page of the diff push, one each.
    push_during_diff: HashMap<u64, VecDeque<String>>,
    diffs: BTreeMap<u64, Vec<Value>>,
    notes: BTreeMap<u64, Vec<Value>>,
    discussions: BTreeMap<u64, Vec<Value>>,
    statuses: Vec<Value>,
    commits: BTreeMap<String, String>,
    merge_bases: BTreeMap<(String, String), String>,
    compares: BTreeMap<(String, String), Vec<Value>>,
    next_id: u64,
    /// Pipelines, oldest first, with whether each ran for a tag.
    pipelines: Vec<(Value, bool)>,
    jobs: BTreeMap<u64, Vec<Value>>,
    artifact_files: HashMap<(u64, String), Vec<u8>>,
    protected: Vec<String>,
    /// The pipelines listing ignores `ref` and `source`, as a proxy or an older GitLab might.
    ignore_pipeline_filters: bool,
    /// The pipelines listing and the jobs' pipelines leave `source` out (before GitLab 14).
    omit_source: bool,
    faults: HashMap<RouteKind, VecDeque<Fault>>,
    log: Vec<LoggedRequest>,
}

/// The fake GitLab.
pub struct FakeGitlab {
    server: MockServer,
    state: Arc<Mutex<State>>,
}

impl FakeGitlab {
    pub async fn start() -> Self {
        let server = MockServer::start().await;
        let state = Arc::new(Mutex::new(State {
            api_base: format!("{}/api/v4", server.uri()),
            next_id: 1000,
            ..State::default()
        }));
        Mock::given(wiremock::matchers::any())
            .respond_with(Router {
                state: state.clone(),
            })
            .mount(&server)
            .await;
        Self { server, state }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `http://127.0.0.1:PORT/api/v4`, as `CI_API_V4_URL` names it.
    pub fn api_url(&self) -> String {
        self.state().api_base.clone()
    }

    pub fn require_token(&self, token: &str) {
        self.state().token = Some(token.into());
    }

    pub fn paging(&self, paging: Paging) {
        self.state().paging = Some(paging);
    }

    /// A merge request, or a push to one: a new head is a new diff version.
    pub fn add_merge_request(&self, mr: MrSeed) {
        let mut s = self.state();
        s.commits.insert(mr.head_sha.clone(), mr.author.clone());
        add_version(&mut s, &mr);
        s.mrs.insert(mr.iid, mr);
    }

    /// Pushes during a read of the diff: each read of a page of it makes the next of `heads`
    /// the head (a new version), in order.
    /// Marks merge request `iid` a draft, or ready.
    pub fn set_draft(&self, iid: u64, draft: bool) {
        if let Some(mr) = self.state().mrs.get_mut(&iid) {
            mr.draft = draft;
        }
    }

    pub fn push_during_diff(&self, iid: u64, heads: &[&str]) {
        self.state()
            .push_during_diff
            .insert(iid, heads.iter().map(|h| (*h).to_owned()).collect());
    }

    /// The head moves to `sha` after `reads` more reads of the merge request.
    pub fn push_after(&self, iid: u64, reads: usize, sha: &str) {
        self.state().push_after.insert(iid, (reads, sha.into()));
    }

    /// A file of the merge request's diff, as `/diffs` lists it.
    pub fn add_diff(&self, iid: u64, old_path: &str, new_path: &str, diff: &str) {
        let file = diff_file(old_path, new_path, diff);
        self.state().diffs.entry(iid).or_default().push(file);
    }

    pub fn add_diff_value(&self, iid: u64, file: Value) {
        self.state().diffs.entry(iid).or_default().push(file);
    }

    /// A note by `username` (a `bot` user or a person).
    pub fn add_note(&self, iid: u64, body: &str, username: &str) -> u64 {
        let mut s = self.state();
        let id = s.next_id;
        s.next_id += 1;
        let note = note_json(id, iid, body, username, false);
        s.notes.entry(iid).or_default().push(note);
        id
    }

    /// `count` notes by `username`, bodies `prefix 0`, `prefix 1`, …
    pub fn flood_notes(&self, iid: u64, count: usize, prefix: &str, username: &str) {
        for i in 0..count {
            self.add_note(iid, &format!("{prefix} {i}"), username);
        }
    }

    /// A reply by `username` in the discussion `discussion` (its `id`), as GitLab adds one to
    /// a thread on the diff (`POST …/discussions/:id/notes`); the reply's id.
    pub fn add_reply(&self, iid: u64, discussion: &str, body: &str, username: &str) -> u64 {
        let mut s = self.state();
        let id = s.next_id;
        s.next_id += 1;
        let mut note = note_json(id, iid, body, username, false);
        let found = s
            .discussions
            .entry(iid)
            .or_default()
            .iter_mut()
            .find(|d| d["id"] == json!(discussion));
        let Some(d) = found else {
            panic!("no discussion {discussion} on merge request !{iid}");
        };
        // A reply in a thread on the diff is a `DiffNote` with the thread's position.
        note["type"] = d["notes"][0]["type"].clone();
        note["position"] = d["notes"][0]["position"].clone();
        note["resolvable"] = json!(true);
        note["resolved"] = json!(false);
        if let Some(notes) = d["notes"].as_array_mut() {
            notes.push(note);
        }
        id
    }

    /// A thread `username` opens on the merge request (not on the diff), as `POST
    /// …/discussions` without a `position` opens one; the discussion's id.
    pub fn add_discussion(&self, iid: u64, body: &str, username: &str) -> String {
        let mut s = self.state();
        let id = s.next_id;
        s.next_id += 1;
        let mut note = note_json(id, iid, body, username, false);
        note["type"] = json!("DiscussionNote");
        note["resolvable"] = json!(true);
        note["resolved"] = json!(false);
        let discussion_id = format!("{id:040x}");
        s.discussions.entry(iid).or_default().push(json!({
            "id": discussion_id,
            "individual_note": false,
            "notes": [note],
        }));
        discussion_id
    }

    /// A note of GitLab's own (`system`), as a push adds ("added 1 commit").
    pub fn add_system_note(&self, iid: u64, body: &str, username: &str) -> u64 {
        let mut s = self.state();
        let id = s.next_id;
        s.next_id += 1;
        let note = note_json(id, iid, body, username, true);
        s.notes.entry(iid).or_default().push(note);
        id
    }

    pub fn notes(&self, iid: u64) -> Vec<Value> {
        self.state().notes.get(&iid).cloned().unwrap_or_default()
    }

    pub fn discussions(&self, iid: u64) -> Vec<Value> {
        self.state()
            .discussions
            .get(&iid)
            .cloned()
            .unwrap_or_default()
    }

    pub fn statuses(&self) -> Vec<Value> {
        self.state().statuses.clone()
    }

    pub fn add_commit(&self, sha: &str, author_name: &str) {
        self.state().commits.insert(sha.into(), author_name.into());
    }

    /// `merge_base` of `a` and `b` answers `base`.
    pub fn set_merge_base(&self, a: &str, b: &str, base: &str) {
        self.state()
            .merge_bases
            .insert((a.into(), b.into()), base.into());
    }

    /// `compare?from=…&to=…` answers these diffs.
    pub fn set_compare(&self, from: &str, to: &str, diffs: Vec<Value>) {
        self.state()
            .compares
            .insert((from.into(), to.into()), diffs);
    }

    /// A pipeline and its jobs; returns its id and its jobs' ids, in order.
    pub fn add_pipeline(&self, seed: PipelineSeed) -> (u64, Vec<u64>) {
        let mut s = self.state();
        let id = s.next_id;
        s.next_id += 1;
        let pipeline = json!({
            "id": id,
            "iid": id - 900,
            "project_id": seed.project_id,
            "sha": "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678",
            "ref": seed.git_ref,
            "status": seed.status,
            "source": seed.source,
            "created_at": "2026-12-03T10:00:00.000Z",
            "updated_at": "2026-12-03T10:05:00.000Z",
            "web_url": format!("https://gitlab.example.com/{PROJECT_PATH}/-/pipelines/{id}"),
        });
        s.pipelines.push((pipeline.clone(), seed.tag));
        let mut ids = Vec::new();
        for job in &seed.jobs {
            let job_id = s.next_id;
            s.next_id += 1;
            ids.push(job_id);
            let artifacts = if job.archive {
                json!([
                    {"file_type": "archive", "size": 1024, "filename": "artifacts.zip", "file_format": "zip"},
                    {"file_type": "metadata", "size": 186, "filename": "metadata.gz", "file_format": "gzip"},
                    {"file_type": "trace", "size": 1500, "filename": "job.log", "file_format": null},
                ])
            } else {
                json!([{"file_type": "trace", "size": 1500, "filename": "job.log", "file_format": null}])
            };
            let value = json!({
                "id": job_id,
                "status": job.status,
                "stage": job.name,
                "name": job.name,
                "ref": seed.git_ref,
                "tag": seed.tag,
                "coverage": null,
                "allow_failure": false,
                "created_at": "2026-12-03T10:00:00.000Z",
                "started_at": "2026-12-03T10:00:01.000Z",
                "finished_at": "2026-12-03T10:01:00.000Z",
                "erased_at": null,
                "duration": 59.0,
                "queued_duration": 0.5,
                "user": user_json(BOT_ID, BOT),
                "commit": commit_json("a1b2c3d4e5f60718293a4b5c6d7e8f9012345678", "maintainer"),
                "pipeline": pipeline,
                "web_url": format!("https://gitlab.example.com/{PROJECT_PATH}/-/jobs/{job_id}"),
                "project": {"ci_job_token_scope_enabled": false},
                "artifacts": artifacts,
                "runner": null,
                "artifacts_expire_at": "2027-01-02T10:01:00.000Z",
                "archived": false,
                "tag_list": [],
            });
            s.jobs.entry(id).or_default().push(value);
        }
        (id, ids)
    }

    /// The pipeline and every job of it end well, as when its last job succeeds.
    pub fn finish_pipeline(&self, pipeline: u64) {
        let mut s = self.state();
        for (p, _) in s
            .pipelines
            .iter_mut()
            .filter(|(p, _)| p["id"] == json!(pipeline))
        {
            p["status"] = json!("success");
        }
        for job in s.jobs.entry(pipeline).or_default() {
            job["status"] = json!("success");
            job["pipeline"]["status"] = json!("success");
        }
    }

    /// A file in a job's artifacts, at its path inside the archive.
    pub fn put_artifact_file(&self, job: u64, path: &str, bytes: &[u8]) {
        self.state()
            .artifact_files
            .insert((job, path.to_owned()), bytes.to_vec());
    }

    pub fn protect_branch(&self, name: &str) {
        self.state().protected.push(name.into());
    }

    pub fn ignore_pipeline_filters(&self) {
        self.state().ignore_pipeline_filters = true;
    }

    pub fn omit_source(&self) {
        self.state().omit_source = true;
    }

    pub fn fault(&self, kind: RouteKind, fault: Fault) {
        self.state()
            .faults
            .entry(kind)
            .or_default()
            .push_back(fault);
    }

    pub fn requests(&self) -> Vec<LoggedRequest> {
        self.state().log.clone()
    }

    pub fn clear_log(&self) {
        self.state().log.clear();
    }

    pub fn count(&self, kind: RouteKind) -> usize {
        self.state().log.iter().filter(|r| r.kind == kind).count()
    }

    /// Every request that was not a read.
    pub fn writes(&self) -> Vec<LoggedRequest> {
        self.state()
            .log
            .iter()
            .filter(|r| r.method != "GET")
            .cloned()
            .collect()
    }
}

/// One file of `/diffs`, as GitLab lists it.
pub fn diff_file(old_path: &str, new_path: &str, diff: &str) -> Value {
    json!({
        "old_path": old_path,
        "new_path": new_path,
        "a_mode": "100644",
        "b_mode": "100644",
        "diff": diff,
        "new_file": false,
        "renamed_file": old_path != new_path,
        "deleted_file": false,
        "generated_file": false,
        "too_large": false,
        "collapsed": false,
    })
}

fn user_json(id: u64, username: &str) -> Value {
    json!({
        "id": id,
        "username": username,
        "public_email": null,
        "name": if username == BOT { "review bot" } else { username },
        "state": "active",
        "locked": false,
        "avatar_url": format!("https://secure.gravatar.com/avatar/{id}?s=80&d=identicon"),
        "web_url": format!("https://gitlab.example.com/{username}"),
    })
}

fn user_id(username: &str) -> u64 {
    if username == BOT {
        BOT_ID
    } else {
        username.bytes().map(u64::from).sum::<u64>() + 10
    }
}

fn note_json(id: u64, iid: u64, body: &str, username: &str, system: bool) -> Value {
    // A second apart, in the order they were made, as notes written one by one are.
    let at = id.saturating_sub(1000);
    let created = format!(
        "2026-12-03T{:02}:{:02}:{:02}.000Z",
        (10 + at / 3600) % 24,
        (at / 60) % 60,
        at % 60
    );
    json!({
        "id": id,
        "type": null,
        "body": body,
        "attachment": null,
        "author": user_json(user_id(username), username),
        "created_at": created,
        "updated_at": created,
        "system": system,
        "noteable_id": 5000 + iid,
        "noteable_type": "MergeRequest",
        "project_id": PROJECT_ID,
        "resolvable": false,
        "confidential": false,
        "internal": false,
        "imported": false,
        "imported_from": "none",
        "noteable_iid": iid,
        "commands_changes": {},
    })
}

fn commit_json(sha: &str, author: &str) -> Value {
    json!({
        "id": sha,
        "short_id": &sha[..8.min(sha.len())],
        "created_at": "2026-12-03T09:00:00.000+00:00",
        "parent_ids": [],
        "title": "A commit",
        "message": "A commit\n",
        "author_name": author,
        "author_email": format!("{author}@example.com"),
        "authored_date": "2026-12-03T09:00:00.000+00:00",
        "committer_name": author,
        "committer_email": format!("{author}@example.com"),
        "committed_date": "2026-12-03T09:00:00.000+00:00",
        "trailers": {},
        "extended_trailers": {},
        "web_url": format!("https://gitlab.example.com/{PROJECT_PATH}/-/commit/{sha}"),
    })
}

fn reason(status: u16) -> &'static str {
    match status {
        400 => "Bad request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not found",
        409 => "Conflict",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Error",
    }
}

fn error(status: u16) -> ResponseTemplate {
    ResponseTemplate::new(status)
        .set_body_json(json!({ "message": format!("{status} {}", reason(status)) }))
}

struct Router {
    state: Arc<Mutex<State>>,
}

impl Respond for Router {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let path = request.url.path().to_owned();
        let query: Vec<(String, String)> = request
            .url
            .query_pairs()
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        let q = |name: &str| {
            query
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        };
        let method = request.method.to_string();
        let body: Option<Value> = serde_json::from_slice(&request.body).ok();
        let header = |name: &str| {
            request
                .headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let rest = path.strip_prefix("/api/v4").unwrap_or("");
        let segments: Vec<&str> = rest.split('/').filter(|p| !p.is_empty()).collect();
        let project_ok = |p: &str| p == PROJECT_ID.to_string() || p == "acme%2Fwidgets";
        let kind = match (method.as_str(), segments.as_slice()) {
            ("GET", ["user"]) => RouteKind::User,
            ("GET", ["projects", p, "merge_requests", _]) if project_ok(p) => {
                RouteKind::MergeRequest
            }
            ("GET", ["projects", p, "merge_requests", _, "versions"]) if project_ok(p) => {
                RouteKind::Versions
            }
            ("GET", ["projects", p, "merge_requests", _, "diffs"]) if project_ok(p) => {
                RouteKind::Diffs
            }
            ("GET", ["projects", p, "merge_requests", _, "notes"]) if project_ok(p) => {
                RouteKind::ListNotes
            }
            ("POST", ["projects", p, "merge_requests", _, "notes"]) if project_ok(p) => {
                RouteKind::CreateNote
            }
            ("PUT", ["projects", p, "merge_requests", _, "notes", _]) if project_ok(p) => {
                RouteKind::UpdateNote
            }
            ("GET", ["projects", p, "merge_requests", _, "discussions"]) if project_ok(p) => {
                RouteKind::ListDiscussions
            }
            ("POST", ["projects", p, "merge_requests", _, "discussions"]) if project_ok(p) => {
                RouteKind::CreateDiscussion
            }
            ("POST", ["projects", p, "statuses", _]) if project_ok(p) => RouteKind::CreateStatus,
            ("GET", ["projects", p, "repository", "commits", _]) if project_ok(p) => {
                RouteKind::Commit
            }
            ("GET", ["projects", p, "repository", "merge_base"]) if project_ok(p) => {
                RouteKind::MergeBase
            }
            ("GET", ["projects", p, "repository", "compare"]) if project_ok(p) => {
                RouteKind::Compare
            }
            ("GET", ["projects", p]) if project_ok(p) => RouteKind::Project,
            ("GET", ["projects", p, "pipelines"]) if project_ok(p) => RouteKind::ListPipelines,
            ("GET", ["projects", p, "pipelines", _, "jobs"]) if project_ok(p) => {
                RouteKind::PipelineJobs
            }
            ("GET", ["projects", p, "protected_branches", _]) if project_ok(p) => {
                RouteKind::ProtectedBranch
            }
            ("GET", ["projects", p, "jobs", _, "artifacts", _, ..]) if project_ok(p) => {
                RouteKind::ArtifactFile
            }
            _ => RouteKind::Unknown,
        };
        let path_and_query = match request.url.query() {
            Some(q) => format!("{path}?{q}"),
            None => path.clone(),
        };
        s.log.push(LoggedRequest {
            method: method.clone(),
            path_and_query,
            kind,
            private_token: header("private-token"),
            authorization: header("authorization"),
            body: body.clone(),
        });
        if let Some(token) = &s.token
            && header("private-token").as_deref() != Some(token.as_str())
        {
            return ResponseTemplate::new(401)
                .set_body_json(json!({"message": "401 Unauthorized"}));
        }
        if let Some(fault) = s.faults.get_mut(&kind).and_then(VecDeque::pop_front) {
            match fault {
                Fault::Status(status) => return error(status),
                Fault::Body(status, body) => {
                    return ResponseTemplate::new(status).set_body_json(body);
                }
                Fault::BadGateway => {
                    return ResponseTemplate::new(502)
                        .insert_header("content-type", "text/html")
                        .set_body_string("<html><body><h1>502 Bad Gateway</h1></body></html>");
                }
                Fault::RateLimited { secs } => {
                    return ResponseTemplate::new(429)
                        .insert_header("retry-after", secs.to_string().as_str())
                        .insert_header("ratelimit-remaining", "0")
                        .set_body_string("Retry later\n");
                }
                Fault::ForeignNextLink => {
                    return ResponseTemplate::new(200)
                        .insert_header(
                            "link",
                            "<https://elsewhere.example/api/v4/x?page=2>; rel=\"next\"",
                        )
                        .set_body_json(json!([]));
                }
            }
        }
        let iid = |i: usize| {
            segments
                .get(i)
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0)
        };
        match kind {
            RouteKind::User => ResponseTemplate::new(200).set_body_json(json!({
                "id": BOT_ID,
                "username": BOT,
                "name": "review bot",
                "state": "active",
                "locked": false,
                "avatar_url": null,
                "web_url": format!("https://gitlab.example.com/{BOT}"),
                "created_at": "2026-11-01T00:00:00.000Z",
                "bio": "",
                "bot": true,
                "public_email": null,
            })),
            RouteKind::MergeRequest => {
                let iid = iid(3);
                if let Some((reads, sha)) = s.push_after.get(&iid).cloned() {
                    if reads == 0 {
                        if let Some(mr) = s.mrs.get_mut(&iid) {
                            mr.head_sha = sha;
                        }
                        if let Some(mr) = s.mrs.get(&iid).cloned() {
                            add_version(&mut s, &mr);
                        }
                        s.push_after.remove(&iid);
                    } else {
                        s.push_after.insert(iid, (reads - 1, sha));
                    }
                }
                match s.mrs.get(&iid) {
                    Some(mr) => ResponseTemplate::new(200).set_body_json(mr_json(mr)),
                    None => error(404),
                }
            }
            RouteKind::Versions => {
                let mut all = s.versions.get(&iid(3)).cloned().unwrap_or_default();
                all.reverse();
                page(&s, &request.url, all, q("page"), q("per_page"))
            }
            RouteKind::Diffs => {
                let iid_now = iid(3);
                let pushed = s
                    .push_during_diff
                    .get_mut(&iid_now)
                    .and_then(VecDeque::pop_front);
                if let Some(sha) = pushed {
                    if let Some(mr) = s.mrs.get_mut(&iid_now) {
                        mr.head_sha = sha;
                    }
                    if let Some(mr) = s.mrs.get(&iid_now).cloned() {
                        add_version(&mut s, &mr);
                    }
                }
                let all = s.diffs.get(&iid(3)).cloned().unwrap_or_default();
                page(&s, &request.url, all, q("page"), q("per_page"))
            }
            RouteKind::ListNotes => {
                // Every note of the merge request, those of its threads too, by creation.
                let mut all = s.notes.get(&iid(3)).cloned().unwrap_or_default();
                for d in s.discussions.get(&iid(3)).into_iter().flatten() {
                    all.extend(d["notes"].as_array().cloned().unwrap_or_default());
                }
                all.sort_by_key(|n| n["id"].as_u64());
                if q("sort").as_deref() == Some("desc") {
                    all.reverse();
                }
                page(&s, &request.url, all, q("page"), q("per_page"))
            }
            RouteKind::ListDiscussions => {
                // Threads, and each plain note as a discussion of its own, by creation.
                let mut all: Vec<Value> = s
                    .notes
                    .get(&iid(3))
                    .into_iter()
                    .flatten()
                    .map(|n| {
                        json!({
                            "id": format!("{:040x}", n["id"].as_u64().unwrap_or(0)),
                            "individual_note": true,
                            "notes": [n],
                        })
                    })
                    .collect();
                all.extend(s.discussions.get(&iid(3)).cloned().unwrap_or_default());
                all.sort_by_key(|d| d["notes"][0]["id"].as_u64());
                page(&s, &request.url, all, q("page"), q("per_page"))
            }
            RouteKind::CreateNote | RouteKind::UpdateNote => {
                let Some(text) = body
                    .as_ref()
                    .and_then(|b| b.get("body"))
                    .and_then(Value::as_str)
                else {
                    return ResponseTemplate::new(400)
                        .set_body_json(json!({"error": "body is missing"}));
                };
                if text.is_empty() {
                    return ResponseTemplate::new(400)
                        .set_body_json(json!({"message": {"note": ["can't be blank"]}}));
                }
                let iid = iid(3);
                if kind == RouteKind::CreateNote {
                    let id = s.next_id;
                    s.next_id += 1;
                    let note = note_json(id, iid, text, BOT, false);
                    s.notes.entry(iid).or_default().push(note.clone());
                    ResponseTemplate::new(201).set_body_json(note)
                } else {
                    let id = iid_of(&segments, 5);
                    let notes = s.notes.entry(iid).or_default();
                    match notes.iter_mut().find(|n| n["id"] == json!(id)) {
                        Some(n) if n["author"]["username"] == json!(BOT) => {
                            n["body"] = json!(text);
                            n["updated_at"] = json!("2026-12-03T11:00:00.000Z");
                            ResponseTemplate::new(200).set_body_json(n.clone())
                        }
                        Some(_) => error(403),
                        None => error(404),
                    }
                }
            }
            RouteKind::CreateDiscussion => {
                let iid = iid(3);
                let b = body.unwrap_or_default();
                let Some(mr) = s.mrs.get(&iid).cloned() else {
                    return error(404);
                };
                let position = b.get("position").cloned().unwrap_or(Value::Null);
                if position.get("head_sha") != Some(&json!(mr.head_sha))
                    || position.get("base_sha") != Some(&json!(mr.base_sha))
                    || position.get("start_sha") != Some(&json!(mr.start_sha))
                {
                    return ResponseTemplate::new(400).set_body_json(json!({
                        "message": "400 Bad request - Note {:line_code=>[\"can't be blank\", \"must be a valid line code\"]}"
                    }));
                }
                let id = s.next_id;
                s.next_id += 1;
                let mut note = note_json(id, iid, b["body"].as_str().unwrap_or(""), BOT, false);
                note["type"] = json!("DiffNote");
                note["position"] = position;
                note["resolvable"] = json!(true);
                note["resolved"] = json!(false);
                let discussion = json!({
                    "id": format!("{:040x}", id),
                    "individual_note": false,
                    "notes": [note],
                });
                s.discussions
                    .entry(iid)
                    .or_default()
                    .push(discussion.clone());
                ResponseTemplate::new(201).set_body_json(discussion)
            }
            RouteKind::CreateStatus => {
                let sha = segments.get(3).copied().unwrap_or_default().to_owned();
                if !s.commits.contains_key(&sha) {
                    return ResponseTemplate::new(404)
                        .set_body_json(json!({"message": "404 References for commit Not Found"}));
                }
                let b = body.unwrap_or_default();
                let state = b["state"].as_str().unwrap_or_default().to_owned();
                if ![
                    "pending", "running", "success", "failed", "canceled", "skipped",
                ]
                .contains(&state.as_str())
                {
                    return ResponseTemplate::new(400)
                        .set_body_json(json!({"error": "state does not have a valid value"}));
                }
                let id = s.next_id;
                s.next_id += 1;
                let status = json!({
                    "id": id,
                    "sha": sha,
                    "ref": null,
                    "status": state,
                    "name": b.get("name").cloned().unwrap_or(json!("default")),
                    "target_url": b.get("target_url").cloned().unwrap_or(Value::Null),
                    "description": b.get("description").cloned().unwrap_or(Value::Null),
                    "created_at": "2026-12-03T11:00:00.000Z",
                    "started_at": null,
                    "finished_at": "2026-12-03T11:00:00.000Z",
                    "allow_failure": false,
                    "coverage": null,
                    "pipeline_id": null,
                    "author": user_json(BOT_ID, BOT),
                });
                s.statuses.push(status.clone());
                ResponseTemplate::new(201).set_body_json(status)
            }
            RouteKind::Commit => {
                let sha = segments.get(4).copied().unwrap_or_default();
                match s.commits.get(sha) {
                    Some(author) => {
                        ResponseTemplate::new(200).set_body_json(commit_json(sha, author))
                    }
                    None => ResponseTemplate::new(404)
                        .set_body_json(json!({"message": "404 Commit Not Found"})),
                }
            }
            RouteKind::MergeBase => {
                let refs: Vec<String> = query
                    .iter()
                    .filter(|(k, _)| k == "refs[]")
                    .map(|(_, v)| v.clone())
                    .collect();
                let key = (
                    refs.first().cloned().unwrap_or_default(),
                    refs.get(1).cloned().unwrap_or_default(),
                );
                match s.merge_bases.get(&key) {
                    Some(base) => {
                        ResponseTemplate::new(200).set_body_json(commit_json(base, "someone"))
                    }
                    None => ResponseTemplate::new(404)
                        .set_body_json(json!({"message": "404 Commit Not Found"})),
                }
            }
            RouteKind::Compare => {
                let key = (q("from").unwrap_or_default(), q("to").unwrap_or_default());
                match s.compares.get(&key) {
                    Some(diffs) => ResponseTemplate::new(200).set_body_json(json!({
                        "commit": commit_json(&key.1, "alice"),
                        "commits": [commit_json(&key.1, "alice")],
                        "diffs": diffs,
                        "compare_timeout": false,
                        "compare_same_ref": false,
                        "web_url": format!("https://gitlab.example.com/{PROJECT_PATH}/-/compare/{}...{}", key.0, key.1),
                    })),
                    None => error(404),
                }
            }
            RouteKind::Project => ResponseTemplate::new(200).set_body_json(json!({
                "id": PROJECT_ID,
                "path_with_namespace": PROJECT_PATH,
                "default_branch": "main",
            })),
            RouteKind::ListPipelines => {
                let filters = !s.ignore_pipeline_filters;
                let mut all: Vec<Value> = s
                    .pipelines
                    .iter()
                    .filter(|(p, tag)| {
                        let keep = |field: &str, name: &str| {
                            !filters || q(name).is_none_or(|want| p[field] == json!(want))
                        };
                        let scope_ok = !filters
                            || match q("scope").as_deref() {
                                Some("branches") => !tag,
                                Some("tags") => *tag,
                                _ => true,
                            };
                        // A project lists its own pipelines only.
                        let ours = !filters || p["project_id"] == json!(PROJECT_ID);
                        ours && scope_ok && keep("ref", "ref") && keep("source", "source")
                    })
                    .map(|(p, _)| without_source(p.clone(), s.omit_source))
                    .collect();
                all.reverse();
                page(&s, &request.url, all, q("page"), q("per_page"))
            }
            RouteKind::PipelineJobs => {
                let scope: Vec<String> = query
                    .iter()
                    .filter(|(k, _)| k == "scope[]" || k == "scope")
                    .map(|(_, v)| v.clone())
                    .collect();
                match s.jobs.get(&iid(3)) {
                    Some(jobs) => {
                        let mut listed: Vec<Value> = jobs
                            .iter()
                            .filter(|j| {
                                scope.is_empty()
                                    || scope.iter().any(|want| j["status"] == json!(want))
                            })
                            .map(|j| {
                                let mut j = j.clone();
                                j["pipeline"] =
                                    without_source(j["pipeline"].clone(), s.omit_source);
                                j
                            })
                            .collect();
                        listed.reverse();
                        page(&s, &request.url, listed, q("page"), q("per_page"))
                    }
                    None => ResponseTemplate::new(404)
                        .set_body_json(json!({"message": "404 Not found"})),
                }
            }
            RouteKind::ProtectedBranch => {
                let name = segments
                    .get(3)
                    .copied()
                    .unwrap_or_default()
                    .replace("%2F", "/");
                if s.protected.contains(&name) {
                    ResponseTemplate::new(200).set_body_json(json!({
                        "id": 1,
                        "name": name,
                        "push_access_levels": [{"access_level": 40, "access_level_description": "Maintainers"}],
                        "merge_access_levels": [{"access_level": 40, "access_level_description": "Maintainers"}],
                        "allow_force_push": false,
                        "code_owner_approval_required": false,
                    }))
                } else {
                    ResponseTemplate::new(404).set_body_json(json!({"message": "404 Not found"}))
                }
            }
            RouteKind::ArtifactFile => {
                let job = iid(3);
                let file = segments[5..].join("/");
                match s.artifact_files.get(&(job, file)) {
                    Some(bytes) => ResponseTemplate::new(200)
                        .insert_header("content-type", "application/octet-stream")
                        .set_body_bytes(bytes.clone()),
                    None => ResponseTemplate::new(404)
                        .set_body_json(json!({"message": "404 Not Found"})),
                }
            }
            RouteKind::Unknown => error(404),
        }
    }
}

/// A pipeline as an older GitLab lists it, without `source`, when `omit` holds.
fn without_source(mut pipeline: Value, omit: bool) -> Value {
    if omit && let Some(o) = pipeline.as_object_mut() {
        o.remove("source");
    }
    pipeline
}

/// A new diff version when `mr`'s head is not its last version's, as a push makes one.
fn add_version(s: &mut State, mr: &MrSeed) {
    let id = s.next_id;
    let versions = s.versions.entry(mr.iid).or_default();
    if versions.last().map(|v| &v["head_commit_sha"]) == Some(&json!(mr.head_sha)) {
        return;
    }
    versions.push(json!({
        "id": id,
        "head_commit_sha": mr.head_sha,
        "base_commit_sha": mr.base_sha,
        "start_commit_sha": mr.start_sha,
        "created_at": "2026-12-03T10:00:00.000Z",
        "merge_request_id": 5000 + mr.iid,
        "state": "collected",
        "real_size": "1",
        "patch_id_sha": "d504412d5b6e6739647e752aff8e468dde093f2f",
    }));
    s.next_id += 1;
}

fn iid_of(segments: &[&str], i: usize) -> u64 {
    segments.get(i).and_then(|v| v.parse().ok()).unwrap_or(0)
}

fn mr_json(mr: &MrSeed) -> Value {
    // Two objects joined: one `json!` this long is past the macro recursion limit.
    let mut mr_value = json!({
        "id": 5000 + mr.iid,
        "iid": mr.iid,
        "project_id": PROJECT_ID,
        "title": mr.title,
        "description": mr.description,
        "state": "opened",
        "created_at": "2026-12-01T10:00:00.000Z",
        "updated_at": "2026-12-03T10:00:00.000Z",
        "merged_by": null,
        "merge_user": null,
        "merged_at": null,
        "closed_by": null,
        "closed_at": null,
        "target_branch": mr.target_branch,
        "source_branch": mr.source_branch,
        "user_notes_count": 0,
        "upvotes": 0,
        "downvotes": 0,
        "author": user_json(user_id(&mr.author), &mr.author),
        "assignees": [],
        "assignee": null,
        "reviewers": [],
        "source_project_id": PROJECT_ID,
        "target_project_id": PROJECT_ID,
        "labels": [],
        "draft": mr.draft,
        "work_in_progress": mr.draft,
        "milestone": null,
        "merge_when_pipeline_succeeds": false,
        "merge_status": "can_be_merged",
        "detailed_merge_status": "mergeable",
        "sha": mr.head_sha,
        "merge_commit_sha": null,
        "squash_commit_sha": null,
        "discussion_locked": null,
        "should_remove_source_branch": null,
        "force_remove_source_branch": true,
    });
    let rest = json!({
        "reference": format!("!{}", mr.iid),
        "references": {"short": format!("!{}", mr.iid), "relative": format!("!{}", mr.iid), "full": format!("{PROJECT_PATH}!{}", mr.iid)},
        "web_url": format!("https://gitlab.example.com/{PROJECT_PATH}/-/merge_requests/{}", mr.iid),
        "time_stats": {"time_estimate": 0, "total_time_spent": 0, "human_time_estimate": null, "human_total_time_spent": null},
        "squash": false,
        "task_completion_status": {"count": 0, "completed_count": 0},
        "has_conflicts": false,
        "blocking_discussions_resolved": true,
        "diff_refs": {
            "base_sha": mr.base_sha,
            "head_sha": mr.head_sha,
            "start_sha": mr.start_sha,
        },
        "merge_error": null,
        "first_contribution": false,
        "user": {"can_merge": true},
    });
    if let (Value::Object(a), Value::Object(b)) = (&mut mr_value, rest) {
        a.extend(b);
    }
    mr_value
}

/// One page of `all`, with GitLab's pagination headers.
fn page(
    s: &State,
    url: &wiremock::http::Url,
    all: Vec<Value>,
    page: Option<String>,
    per_page: Option<String>,
) -> ResponseTemplate {
    let per_page = per_page
        .and_then(|p| p.parse::<usize>().ok())
        .unwrap_or(20)
        .clamp(1, 100);
    let page = page
        .and_then(|p| p.parse::<usize>().ok())
        .unwrap_or(1)
        .max(1);
    let total_pages = all.len().div_ceil(per_page).max(1);
    let items: Vec<Value> = all
        .into_iter()
        .skip((page - 1) * per_page)
        .take(per_page)
        .collect();
    let with_page = |n: usize| {
        let mut u = url.clone();
        let kept: Vec<(String, String)> = u
            .query_pairs()
            .filter(|(k, _)| k != "page")
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        u.query_pairs_mut().clear();
        for (k, v) in kept {
            u.query_pairs_mut().append_pair(&k, &v);
        }
        u.query_pairs_mut().append_pair("page", &n.to_string());
        // Absolute, on the API's own origin, as GitLab writes it (wiremock's URL names no port).
        let origin = s.api_base.trim_end_matches("/api/v4");
        format!("{origin}{}?{}", u.path(), u.query().unwrap_or_default())
    };
    let paging = s.paging.unwrap_or(Paging::Both);
    let next = (page < total_pages).then_some(page + 1);
    let mut response = ResponseTemplate::new(200).set_body_json(Value::Array(items));
    if paging != Paging::NextPageOnly {
        let mut links = Vec::new();
        if let Some(n) = next {
            links.push(format!("<{}>; rel=\"next\"", with_page(n)));
        }
        links.push(format!("<{}>; rel=\"first\"", with_page(1)));
        links.push(format!("<{}>; rel=\"last\"", with_page(total_pages)));
        response = response.insert_header("link", links.join(", ").as_str());
    }
    if paging != Paging::LinkOnly {
        response = response
            .insert_header("x-page", page.to_string().as_str())
            .insert_header("x-per-page", per_page.to_string().as_str())
            .insert_header(
                "x-next-page",
                next.map(|n| n.to_string()).unwrap_or_default().as_str(),
            )
            .insert_header(
                "x-prev-page",
                if page > 1 {
                    (page - 1).to_string()
                } else {
                    String::new()
                }
                .as_str(),
            )
            .insert_header("x-total-pages", total_pages.to_string().as_str());
    }
    response
}
