//! `forge "gitlab"`: a merge request on GitLab (GitLab.com or a self-managed instance), through
//! the REST v4 API (see `docs/gitlab.md`, "The forge").
//!
//! The review runs in a pipeline of the target project on its protected default branch and reads
//! the merge request through the API: its head, base and diff are the API's, the head pinned
//! once when the forge opens. It posts one note, found again by its marker and updated in place,
//! a commit status on the pinned head as the honest check, and threads on changed lines, each
//! naming its finding's id; the author's answers are read from the replies in those threads and
//! from notes naming an id.

use std::collections::BTreeMap;
use std::sync::Arc;

use reviewflow_engine::contract::{Bound, ForgeContract, ForgeRefusal, ValueType};
use reviewflow_engine::model::Value;
use reviewflow_engine::run::{BoxFuture, StatusSink};

use super::forge::{ChangeInfo, ForgeError, PostRequest, PostedMarker, PostedSummary, ReviewState};
use super::forge_error::Calling;
use crate::diff::cut_to_path;
use crate::forge::CommitAuthor;
use crate::forge::baseline::GITHUB_BASELINE_CHARS;
use crate::forge::github::{
    BlockOn, COMMENT_MAX_CHARS, CommentInfo, FilterMode, Marker, ReviewState as CheckState,
    comment_body, find_ours, fit, fit_line, inline,
};
use crate::forge::gitlab::{STATUS_TEXT_MAX_CHARS, commit_status, place};
use crate::gather::{GatherConfig, GatherError, Gathered, Parts, assemble, normalise_path, notes};
use crate::git::Sha;
use crate::gitlab::{
    Client, ClientConfig, DEFAULT_API_URL, DiffFile, GitlabError, MAX_DIFF_PAGES,
    MAX_DISCUSSION_PAGES, MAX_NOTE_PAGES, Note, unified_diff,
};

/// The token scopes each call needs, named when GitLab refuses one (a 403), as `permissions=`
/// names them (`docs/gitlab.md`, "Scopes").
const READ_API: &str = "read_api:read";
const WRITE_API: &str = "api:write";

/// The variable GitLab gives every job its own token in. It reads little of the API and writes
/// neither notes nor commit statuses on most instances, and it goes in `JOB-TOKEN`, not
/// `PRIVATE-TOKEN`: the forge refuses it rather than fail at the first write.
const JOB_TOKEN_VARIABLE: &str = "CI_JOB_TOKEN";

/// The longest one API call may take (`timeout`).
const TIMEOUT: Bound = Bound::millis(
    1_000,
    600_000,
    "a call that has not answered in 10 minutes will not, and past that a hung API holds the job (and its token) until the job's own limit",
);

/// How often a call is tried again (`retries`).
const RETRIES: Bound = Bound::count(
    0,
    10,
    "each retry is one more API call with the project's token, which GitLab rate-limits per user: past 10, a failing API spends the budget the post needs",
);

pub fn contract() -> ForgeContract {
    ForgeContract::new(
        "gitlab",
        "a merge request on GitLab: the API from CI_API_V4_URL, the project from CI_PROJECT_ID, the merge request from CI_MERGE_REQUEST_IID",
    )
    .platform("gitlab")
    .token(
        "token",
        "the secret holding a project or group access token with the `api` scope, sent as PRIVATE-TOKEN (not CI_JOB_TOKEN, which cannot write notes or commit statuses)",
    )
    .prop(
        "api-url",
        ValueType::String,
        "the API's base URL (default: CI_API_V4_URL, else https://gitlab.com/api/v4)",
    )
    .prop(
        "project-id",
        ValueType::String,
        "the project whose merge request is reviewed, by id or full path (default: CI_PROJECT_ID, the pipeline's own)",
    )
    .prop(
        "merge-request",
        ValueType::Template,
        "the merge request's number (iid) (default: CI_MERGE_REQUEST_IID), e.g. \"{mr}\"",
    )
    .change("merge-request")
    .key("project")
    // What a merge request pipeline's runner sets from the change: its author wrote them.
    .authored("CI_MERGE_REQUEST_TITLE")
    .authored("CI_MERGE_REQUEST_DESCRIPTION")
    .authored("CI_MERGE_REQUEST_SOURCE_BRANCH_NAME")
    .authored("CI_COMMIT_REF_NAME")
    .authored("CI_COMMIT_REF_SLUG")
    .authored("CI_COMMIT_BRANCH")
    .authored("CI_COMMIT_MESSAGE")
    .authored("CI_COMMIT_TITLE")
    .authored("CI_COMMIT_DESCRIPTION")
    .prop(
        "project",
        ValueType::Template,
        "the project reviewed: one review note per merge request, pipeline and project",
    )
    .prop(
        "timeout",
        ValueType::Duration(TIMEOUT),
        "the longest one API call may take (default 30s)",
    )
    .prop(
        "retries",
        ValueType::Int(RETRIES),
        "how often a call that may pass on another try is tried again (default 3)",
    )
    .prop(
        "note-authors",
        ValueType::String,
        "the usernames whose notes may carry this pipeline's marker, space-separated (default: the account the token authenticates as)",
    )
    // The review pipeline runs the default branch's configuration and checks it out.
    .checkout_may_be_base()
    .refusals(refusals)
}

/// What the forge refuses before it opens, from the file alone: an `api-url` the client would
/// refuse (the GitHub forge's rule, the same function), a token read from `CI_JOB_TOKEN`, and
/// the revisions a `std/gather` names (the merge request is the change).
fn refusals(
    pipeline: &reviewflow_engine::model::Pipeline,
    forge: &reviewflow_engine::model::Forge,
) -> Vec<ForgeRefusal> {
    let mut out: Vec<ForgeRefusal> = forge
        .setting("api-url")
        .and_then(|v| {
            Some(ForgeRefusal {
                span: v.span,
                principle: Some("allow-lists, not deny-lists"),
                why: crate::gitlab::api_url_refusal(v.value.as_str()?)?,
                help: "write the API's https URL (`https://HOST/api/v4`), or leave `api-url` out to use CI_API_V4_URL; plain http is admitted only to this machine, for a test server",
            })
        })
        .into_iter()
        .collect();
    if let Some(token) = &forge.token
        && let Some(secret) = pipeline.secret(&token.value)
        && secret.env.value == JOB_TOKEN_VARIABLE
    {
        out.push(ForgeRefusal {
            span: secret.env.span,
            principle: None,
            why: format!(
                "the forge's token `{}` is read from {JOB_TOKEN_VARIABLE}: a job token cannot write a note or a commit status on most GitLab instances, so every post would fail",
                token.value
            ),
            help: "read a project access token with the `api` scope from a protected, environment-scoped variable instead",
        });
    }
    for stage in pipeline
        .stages
        .iter()
        .filter(|s| s.uses.value == "std/gather")
    {
        for child in stage
            .children
            .iter()
            .filter(|c| matches!(c.name.value.as_str(), "base" | "head"))
        {
            out.push(ForgeRefusal {
                span: child.name.span,
                principle: None,
                why: format!(
                    "`{}` names its `{}`, but on GitLab the merge request is the change: its base and head are the merge request's, and the setting would be ignored",
                    stage.name.value, child.name.value
                ),
                help: "remove the setting: it chooses the revisions of a change on the local forge only (`--base` and `--head` of `reviewflow run` do the same there)",
            });
        }
    }
    out
}

/// The kind, registered in [`super::FORGES`].
pub struct GitlabKind;

impl super::ForgeKind for GitlabKind {
    fn contract(&self) -> ForgeContract {
        contract()
    }

    fn open<'a>(
        &'a self,
        open: &'a super::ForgeOpen<'a>,
    ) -> BoxFuture<'a, Result<Arc<dyn super::Forge>, ForgeError>> {
        Box::pin(async move { Ok(Arc::new(Gitlab::open(open).await?) as Arc<dyn super::Forge>) })
    }
}

/// The GitLab forge opened for one run: the client, the merge request resolved once.
pub struct Gitlab {
    pub client: Client,
    iid: u64,
    info: ChangeInfo,
    /// `diff_refs.start_sha`: a thread's position names it.
    start: Sha,
    web_url: String,
    /// Where the status links to: the job, else the pipeline (`CI_JOB_URL`, `CI_PIPELINE_URL`).
    target_url: Option<String>,
    pipeline: String,
    project: Option<String>,
    authors: Vec<String>,
    /// The merge request's author's username: whose answers to a review are read.
    mr_author: Option<String>,
    /// The marker as first read, once even when gather and restore ask at the same time.
    last: tokio::sync::OnceCell<Option<PostedMarker>>,
    /// This run among the merge request's: `CI_PIPELINE_ID`, then `CI_JOB_ID` (a retried job
    /// gets a new, larger id); `None` outside a pipeline.
    order: Option<crate::forge::RunOrder>,
}

impl Gitlab {
    async fn open(open: &super::ForgeOpen<'_>) -> Result<Gitlab, ForgeError> {
        let env = |name: &str| (open.env)(name).filter(|v| !v.trim().is_empty());
        let setting = |name: &str| {
            open.decl
                .and_then(|d| d.setting(name))
                .map(|v| render_setting(&v.value, open.inputs))
        };
        let iid = match setting("merge-request").or_else(|| env("CI_MERGE_REQUEST_IID")) {
            Some(text) => text.trim().parse::<u64>().map_err(|_| {
                ForgeError::Config(format!(
                    "the merge request is not a number: {:?}",
                    crate::github::error::quote(&text)
                ))
            })?,
            None => {
                return Err(ForgeError::Config("no merge request: CI_MERGE_REQUEST_IID is not set; set `merge-request=\"{…}\"` on the forge".into()));
            }
        };
        let project_id = setting("project-id")
            .or_else(|| env("CI_PROJECT_ID"))
            .ok_or_else(|| {
                ForgeError::Config(
                    "no project: CI_PROJECT_ID is not set; set `project-id` on the forge".into(),
                )
            })?;
        let repo = match setting("project-id") {
            Some(p) => p,
            None => env("CI_PROJECT_PATH").unwrap_or_else(|| project_id.clone()),
        };
        let project = setting("project").filter(|p| !p.is_empty());
        let api_url = setting("api-url")
            .or_else(|| env("CI_API_V4_URL"))
            .unwrap_or_else(|| DEFAULT_API_URL.to_owned());
        let token = open.token.clone().ok_or_else(|| {
            ForgeError::Config(
                "the gitlab forge needs a token: `forge \"gitlab\" token=\"<secret>\"`".into(),
            )
        })?;
        let mut config = ClientConfig::new(api_url, Some(token), project_id);
        let decl_value = |name: &str| open.decl.and_then(|d| d.setting(name)).map(|v| &v.value);
        if let Some(Value::Duration(ms)) = decl_value("timeout") {
            config.timeout = std::time::Duration::from_millis((*ms).max(1));
        }
        if let Some(Value::Int(n)) = decl_value("retries") {
            config.retry.max_attempts = u32::try_from(*n).unwrap_or(u32::MAX).saturating_add(1);
        }
        let client =
            Client::new(config).calling(READ_API, || "cannot reach the GitLab API".into())?;
        let authors = match setting("note-authors")
            .map(|a| a.split_whitespace().map(str::to_string).collect::<Vec<_>>())
            .filter(|a| !a.is_empty())
        {
            Some(a) => a,
            // The account that writes the note is the one that finds it again.
            None => vec![
                client
                    .current_user()
                    .await
                    .calling(READ_API, || {
                        "cannot read the account the GitLab token writes as (set `note-authors` to skip this)".into()
                    })?
                    .username,
            ],
        };
        let mr = client
            .merge_request(iid)
            .await
            .calling(READ_API, || format!("cannot read merge request !{iid}"))?;
        let refs = mr.diff_refs.as_ref().ok_or_else(|| {
            ForgeError::Unusable(format!("merge request !{iid} has no diff yet (GitLab has not computed its diff_refs); run again when it has"))
        })?;
        let sha = |what: &str, text: &str| {
            Sha::parse(text).map_err(|e| {
                ForgeError::Unusable(format!("the merge request's {what} is not a commit: {e}"))
            })
        };
        let info = ChangeInfo {
            repo,
            change_id: iid.to_string(),
            base: sha("base", &refs.base_sha)?,
            head: sha("head", &refs.head_sha)?,
            title: mr.title.clone(),
            body: mr.description.clone().unwrap_or_default(),
            branch: Some(mr.source_branch.clone()),
            draft: mr.is_draft(),
        };
        // Both or none: a pipeline id alone cannot tell a retried job from the first.
        let number = |name: &str| env(name).and_then(|v| v.trim().parse::<u64>().ok());
        let order = number("CI_PIPELINE_ID")
            .zip(number("CI_JOB_ID"))
            .map(|(run, attempt)| crate::forge::RunOrder { run, attempt });
        let target_url = env("CI_JOB_URL")
            .or_else(|| env("CI_PIPELINE_URL"))
            .filter(|u| u.starts_with("https://"));
        Ok(Gitlab {
            start: sha("start", &refs.start_sha)?,
            client,
            iid,
            info,
            web_url: mr.web_url.clone(),
            target_url,
            pipeline: open.pipeline.to_string(),
            project,
            authors,
            mr_author: mr.author.as_ref().map(|a| a.username.clone()),
            last: tokio::sync::OnceCell::new(),
            order,
        })
    }

    /// The id of the newest diff version, refused unless it is of the pinned head.
    async fn pinned_version(&self) -> Result<u64, ForgeError> {
        let version = self.versions().await?;
        let head = &self.info.head;
        if !version.head_commit_sha.eq_ignore_ascii_case(head.as_str()) {
            let now = crate::github::error::quote(&version.head_commit_sha);
            return Err(ForgeError::DiffMoved {
                pinned: head.clone(),
                newest: now.get(..12).unwrap_or(&now).to_owned(),
            });
        }
        Ok(version.id)
    }

    /// The newest diff version of the merge request.
    async fn versions(&self) -> Result<crate::gitlab::DiffVersion, ForgeError> {
        self.client
            .latest_version(self.iid)
            .await
            .calling(READ_API, || {
                format!(
                    "cannot read the diff versions of merge request !{}",
                    self.iid
                )
            })
    }

    /// Whether `note` is ours: not GitLab's own, by a believed author, with this pipeline's
    /// marker.
    fn is_ours(&self, note: &Note) -> bool {
        !note.system
            && self
                .authors
                .iter()
                .any(|a| a.eq_ignore_ascii_case(&note.author.username))
            && Marker::parse_body(&note.body)
                .is_some_and(|m| m.matches(&self.pipeline, self.project.as_deref()))
    }

    /// The answers to the last review (docs/gitlab.md, "Answering a finding"), oldest first:
    /// replies in the threads of our inline comments (a thread whose first note is by a believed
    /// author and names its finding's id), and notes on the merge request naming an id, each by
    /// the merge request's author or a username of `from` (GitLab's usernames ignore letter
    /// case). One listing holds both: `/discussions` lists every note, a plain note as a
    /// discussion of its own.
    async fn read_responses(
        &self,
        from: &[String],
    ) -> Result<Vec<crate::forge::Response>, ForgeError> {
        use crate::forge::response::parse;
        let allowed = |username: &str| {
            self.mr_author
                .as_deref()
                .is_some_and(|a| a.eq_ignore_ascii_case(username))
                || from.iter().any(|f| f.eq_ignore_ascii_case(username))
        };
        let trusted = |username: &str| {
            self.authors
                .iter()
                .any(|a| a.eq_ignore_ascii_case(username))
        };
        let discussions = self
            .client
            .discussions(self.iid, MAX_DISCUSSION_PAGES)
            .await
            .calling(READ_API, || {
                format!("cannot list the discussions of merge request !{}", self.iid)
            })?;
        let mut written: Vec<(u64, Vec<crate::forge::Response>)> = Vec::new();
        for d in &discussions {
            let mut notes = d.notes.iter().filter(|n| !n.system);
            // A thread of ours: its first note names the finding its replies answer.
            let thread = match d.notes.first() {
                Some(first)
                    if !d.individual_note && !first.system && trusted(&first.author.username) =>
                {
                    crate::forge::github::thread_finding(&first.body)
                }
                _ => None,
            };
            if thread.is_some() {
                notes.next();
            }
            for n in notes {
                // Our review note is no answer, though it names every finding.
                if self.is_ours(n) || !allowed(&n.author.username) {
                    continue;
                }
                written.push((n.id, parse(&n.body, &n.author.username, thread.as_deref())));
            }
        }
        // GitLab numbers notes as they are written; `created_at` is text whose offset an
        // instance may write in its own time zone, which does not order across a change of it.
        written.sort_by_key(|(id, _)| *id);
        Ok(written.into_iter().flat_map(|(_, r)| r).collect())
    }

    /// Our note (the oldest carrying the marker) and the ids of newer ones that carry it too.
    /// Notes are read oldest first, and reading stops at the page that holds ours: a second push
    /// reads one page. Past [`MAX_NOTE_PAGES`] pages they are read newest first, as many again:
    /// a flood of notes before ours or after it cannot hide it, and costs at most twice that
    /// many calls. A flood on both sides hides it: the run then reviews as if first (the whole
    /// change, no conversation) and writes a new note, which is safe, only slower.
    async fn our_note(&self) -> Result<(Option<CommentInfo>, Vec<u64>), ForgeError> {
        let listed = || "cannot list the merge request's notes".to_owned();
        let (mut notes, paging) = self
            .client
            .notes_until(self.iid, MAX_NOTE_PAGES, false, |n| self.is_ours(n))
            .await
            .calling(READ_API, listed)?;
        if !paging.complete && !notes.iter().any(|n| self.is_ours(n)) {
            let (newest, _) = self
                .client
                .notes_until(self.iid, MAX_NOTE_PAGES, true, |n| self.is_ours(n))
                .await
                .calling(READ_API, listed)?;
            notes.extend(newest);
            // The two ends overlap on a listing of fewer than twice the pages.
            notes.sort_by_key(|n| n.id);
            notes.dedup_by_key(|n| n.id);
        }
        let comments: Vec<CommentInfo> = notes
            .into_iter()
            .filter(|n| !n.system)
            .map(|n| CommentInfo {
                id: n.id,
                body: n.body,
                author_login: n.author.username,
                author_type: "User".into(),
                created_at: n.created_at,
            })
            .collect();
        Ok(
            match find_ours(
                &comments,
                &self.pipeline,
                self.project.as_deref(),
                &self.authors,
            ) {
                Some(o) => (Some(o.ours.clone()), o.duplicates),
                None => (None, Vec::new()),
            },
        )
    }

    fn diff_of(
        &self,
        files: &[DiffFile],
        path: Option<&str>,
        max_bytes: u64,
    ) -> Result<Vec<u8>, ForgeError> {
        let diff = unified_diff(files).map_err(ForgeError::Unusable)?;
        let diff = match path {
            Some(p) => cut_to_path(&diff, p),
            None => diff,
        };
        if diff.len() as u64 > max_bytes {
            return Err(GatherError::TooLarge {
                what: "diff",
                limit: max_bytes,
                size: diff.len() as u64,
                exact: true,
            }
            .into());
        }
        Ok(diff)
    }

    /// The since-last-review diff and, when it is not the plain one, why.
    async fn since(
        &self,
        last: Option<&Sha>,
        path: Option<&str>,
        max_bytes: u64,
        whole: &[u8],
    ) -> Result<(Vec<u8>, Option<String>), ForgeError> {
        let head = &self.info.head;
        let Some(last) = last else {
            return Ok((whole.to_vec(), Some(notes::no_review_before())));
        };
        if last == head {
            return Ok((Vec::new(), Some(notes::already_reviewed(head))));
        }
        match self
            .client
            .is_ancestor(last.as_str(), head.as_str())
            .await
            .calling(READ_API, || {
                format!("cannot compare {} with the head", last.short())
            })? {
            Some(true) => {
                let comparison = self
                    .client
                    .compare(last.as_str(), head.as_str())
                    .await
                    .calling(READ_API, || {
                        format!("cannot read the diff {}..{}", last.short(), head.short())
                    })?;
                Ok((self.diff_of(&comparison.diffs, path, max_bytes)?, None))
            }
            Some(false) => Ok((whole.to_vec(), Some(notes::not_an_ancestor(last)))),
            None => Ok((whole.to_vec(), Some(notes::last_head_gone(last)))),
        }
    }

    /// A review that did not run keeps the merge request's total spent (`docs/gitlab.md`): in
    /// our note's marker, the rest of it as it was; in a first note that names no head and says
    /// why, when no review was posted yet. The note's id when one was written.
    async fn keep_total(
        &self,
        request: &PostRequest,
        reason: &str,
        total: crate::reviewer::usage::Usage,
        say: &(dyn Fn(String) + Send + Sync),
    ) -> Result<Option<u64>, ForgeError> {
        use crate::forge::spent::{Place, Write, first_body, plan};
        const PLACE: Place = Place {
            record: "review note",
            change: "merge request",
            newer: |o| format!("pipeline (pipeline {} job {})", o.run, o.attempt),
        };
        // Read again right before writing, as a posted review is.
        let (ours, _) = self.our_note().await?;
        // This run's body, for a first note or one that holds no review yet.
        let first = first_body(
            &self.pipeline,
            self.project.as_deref(),
            &request.review.run_id,
            self.order,
            total,
            request.cost,
            reason,
            PLACE.change,
        )?;
        let plan = plan(
            ours.as_ref().map(|c| c.body.as_str()),
            total,
            self.order,
            first,
            &PLACE,
        );
        let posted = match (plan.write, &ours) {
            (Write::Update(body), Some(c)) => Some(
                self.client
                    .update_note(self.iid, c.id, &body)
                    .await
                    .calling(WRITE_API, || {
                        "cannot keep the total spent in the review note".into()
                    })?,
            ),
            (Write::Create(body), _) => Some(
                self.client
                    .create_note(self.iid, &body)
                    .await
                    .calling(WRITE_API, || {
                        "cannot create the review note that keeps the total spent".into()
                    })?,
            ),
            _ => None,
        };
        say(plan.say);
        Ok(posted.map(|p| p.id))
    }

    /// Publishes the review: what [`super::Forge::post`] does, with its status lines handed to
    /// `say` (a test reads them; the run sends them to the stage's status sink).
    pub async fn publish(
        &self,
        request: &PostRequest,
        say: &(dyn Fn(String) + Send + Sync),
    ) -> Result<PostedSummary, ForgeError> {
        let review = &request.review;
        let mut location = self.web_url.clone();
        if let ReviewState::Reviewed = request.state {
            let marker = Marker::new(
                &self.pipeline,
                self.project.as_deref(),
                review.head.as_str(),
                &review.run_id,
                review.conversation_id.as_deref(),
            )?
            .with_published(crate::forge::PublishedCounts::of(&review.findings))
            .with_spent(request.spent)
            .with_order(self.order);
            let baseline = request
                .baseline
                .as_ref()
                .map(|b| b.fit(GITHUB_BASELINE_CHARS));
            let footer =
                crate::forge::spent::footer_of(request.cost, request.spent, "merge request");
            let body = comment_body(
                &marker.render(),
                baseline.as_ref(),
                review,
                footer.as_deref(),
            );
            let body = fit(&body, COMMENT_MAX_CHARS);
            // Read again right before writing: another run may have created ours meanwhile.
            let (ours, duplicates) = self.our_note().await?;
            // A newer pipeline may have posted since the preconditions were read: it stands.
            if let Some(c) = &ours {
                let posted = PostedMarker::from_body(&c.body, "note")?;
                super::forge::newest_speaks(self, &review.head, &posted)?;
            }
            let posted = match ours {
                Some(c) => self
                    .client
                    .update_note(self.iid, c.id, &body)
                    .await
                    .calling(WRITE_API, || "cannot update the review note".into())?,
                None => self
                    .client
                    .create_note(self.iid, &body)
                    .await
                    .calling(WRITE_API, || "cannot create the review note".into())?,
            };
            if !duplicates.is_empty() {
                say(format!(
                    "{} newer notes carry this pipeline's marker too (a race of two runs); the oldest was updated",
                    duplicates.len()
                ));
            }
            if !self.web_url.is_empty() {
                location = format!("{}#note_{}", self.web_url, posted.id);
            }
        } else if let (ReviewState::NotReviewed(reason), Some(total)) =
            (&request.state, request.spent)
        {
            if let Some(id) = self.keep_total(request, reason, total, say).await?
                && !self.web_url.is_empty()
            {
                location = format!("{}#note_{id}", self.web_url);
            }
        } else {
            say("the review did not run: the review note is left as it was".into());
        }

        if let Some(mode) = &request.inline
            && let ReviewState::Reviewed = request.state
        {
            let mode: FilterMode = mode.parse().map_err(ForgeError::Config)?;
            let inline = inline(&review.findings, &request.ranges, mode);
            let (threads, left) = place(
                &inline.comments,
                &request.ranges,
                self.info.base.as_str(),
                self.start.as_str(),
                review.head.as_str(),
            );
            for thread in &threads {
                self.client
                    .create_discussion(self.iid, &thread.body, &thread.position)
                    .await
                    .calling(WRITE_API, || {
                        "cannot open a thread on the changed lines".into()
                    })?;
            }
            say(format!(
                "{} threads on changed lines ({left} findings stay in the note only)",
                threads.len()
            ));
        }

        if let Some(name) = &request.check_run {
            let block_on: BlockOn = request.block_on.parse().map_err(ForgeError::Config)?;
            let state = match &request.state {
                ReviewState::Reviewed => CheckState::reviewed(&review.findings, block_on),
                ReviewState::NotReviewed(reason) => CheckState::NotReviewed {
                    reason: reason.clone(),
                },
            };
            let (state, description) = commit_status(&state, block_on);
            self.client
                .set_commit_status(
                    review.head.as_str(),
                    state.as_str(),
                    &fit_line(name, STATUS_TEXT_MAX_CHARS),
                    &description,
                    self.target_url.as_deref(),
                )
                .await
                .calling(WRITE_API, || {
                    "the review note is posted, but the commit status is not".into()
                })?;
            say(format!("commit status `{name}`: {}", state.as_str()));
        }
        Ok(PostedSummary {
            location,
            recorded: true,
        })
    }
}

/// A forge setting as text: a template is rendered with the run's declared inputs.
fn render_setting(value: &Value, inputs: &BTreeMap<String, String>) -> String {
    match value {
        Value::Template(t) => crate::stages::runtime::render_inputs(t, inputs),
        other => other.as_str().unwrap_or_default().to_string(),
    }
}

impl super::Forge for Gitlab {
    fn change(&self) -> &ChangeInfo {
        &self.info
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn run_order(&self) -> Option<crate::forge::RunOrder> {
        self.order
    }

    fn last_posted(&self) -> BoxFuture<'_, Result<Option<PostedMarker>, ForgeError>> {
        Box::pin(async move {
            self.last
                .get_or_try_init(|| async {
                    let (ours, _) = self.our_note().await?;
                    ours.map(|c| PostedMarker::from_body(&c.body, "note"))
                        .transpose()
                })
                .await
                .cloned()
        })
    }

    fn responses<'a>(
        &'a self,
        last: &'a PostedMarker,
        from: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<crate::forge::Response>, ForgeError>> {
        Box::pin(async move {
            // A marker with no head is of no posted review: there is nothing to answer.
            if last.head.is_none() {
                return Ok(Vec::new());
            }
            self.read_responses(from).await
        })
    }

    fn gather<'a>(
        &'a self,
        config: &'a GatherConfig,
        last: Option<&'a Sha>,
    ) -> BoxFuture<'a, Result<Gathered, ForgeError>> {
        Box::pin(async move {
            let path = config
                .path
                .as_deref()
                .map(normalise_path)
                .transpose()?
                .flatten();
            // `/diffs` lists the newest diff version: it is the pinned head's only if the newest
            // version is of the pinned head before the read and is the same version after it
            // (a push, even one that puts the head back, makes a new version).
            let version = self.pinned_version().await?;
            // The pages' JSON is bounded too: at most four bytes of it for each byte of diff
            // (an escaped character is longer than itself), and room for the file records.
            let json_budget = config.max_bytes.saturating_mul(4).saturating_add(1 << 20);
            let (files, _) = self
                .client
                .merge_request_diffs(self.iid, MAX_DIFF_PAGES, json_budget)
                .await
                .map_err(|e| match e {
                    // Over `max-bytes`: refused as gather refuses a local diff.
                    GitlabError::TooLarge { .. } => ForgeError::Gather(GatherError::TooLarge {
                        what: "diff",
                        limit: config.max_bytes,
                        size: config.max_bytes.saturating_add(1),
                        exact: false,
                    }),
                    e => ForgeError::from(e).needs(READ_API).doing(format!(
                        "cannot read the diff of merge request !{}",
                        self.iid
                    )),
                })?;
            let after = self.versions().await?;
            if after.id != version {
                return Err(ForgeError::PushedDuringRead {
                    change: self.iid,
                    before: version,
                    after: after.id,
                });
            }
            let diff = self.diff_of(&files, path.as_deref(), config.max_bytes)?;
            let (since, note) = if config.since_last_review {
                let (since, note) = self
                    .since(last, path.as_deref(), config.max_bytes, &diff)
                    .await?;
                (Some(since), note)
            } else {
                (None, None)
            };
            Ok(assemble(
                Parts::from(&self.info),
                config,
                last,
                diff,
                since,
                note,
            ))
        })
    }

    fn current_head(&self) -> BoxFuture<'_, Result<Sha, ForgeError>> {
        Box::pin(async move {
            let mr = self
                .client
                .merge_request(self.iid)
                .await
                .calling(READ_API, || {
                    format!("cannot read merge request !{}", self.iid)
                })?;
            let head =
                mr.diff_refs.map(|r| r.head_sha).or(mr.sha).ok_or_else(|| {
                    ForgeError::Unusable("the merge request names no head".into())
                })?;
            Sha::parse(&head).map_err(|e| {
                ForgeError::Unusable(format!("the merge request's head is not a commit: {e}"))
            })
        })
    }

    fn head_author<'a>(&'a self, sha: &'a Sha) -> BoxFuture<'a, Result<CommitAuthor, ForgeError>> {
        Box::pin(async move {
            let commit = self
                .client
                .commit(sha.as_str())
                .await
                .calling(READ_API, String::new)?;
            // GitLab maps no account to a commit: the name is what the commit says.
            Ok(CommitAuthor::NoAccount {
                name: commit.author_name.unwrap_or_default(),
            })
        })
    }

    fn post<'a>(
        &'a self,
        request: &'a PostRequest,
        status: &'a StatusSink,
    ) -> BoxFuture<'a, Result<PostedSummary, ForgeError>> {
        Box::pin(async move {
            let say = |message: String| status.status(message);
            self.publish(request, &say).await
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn one_registration_names_the_platform_and_the_change() {
        let kind = super::super::forge_kind("gitlab").map(|k| k.contract());
        let c = kind.unwrap();
        assert_eq!(c.platform.as_deref(), Some("gitlab"));
        assert_eq!(c.token.as_deref(), Some("token"));
        assert_eq!(c.change.as_deref(), Some("merge-request"));
        assert_eq!(c.key.as_deref(), Some("project"));
        // A commit's author on GitLab is a name, not an account.
        assert!(!c.vouches_for_authors);
        // No job token writes as a fixed account: the note's author is the token's.
        assert!(c.believed.is_none());
        assert!(c.permissions.is_empty());
        for prop in [
            "api-url",
            "project-id",
            "merge-request",
            "project",
            "timeout",
            "retries",
            "note-authors",
        ] {
            assert!(c.prop_spec(prop).is_some(), "{prop}");
        }
    }
}
