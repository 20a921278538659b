//! `forge "github"`: a pull request on GitHub or GitHub Enterprise, through the REST API (see
//! `docs/github.md`).

use std::collections::BTreeMap;
use std::sync::Arc;

/// The variables GitHub Actions' own token is usually given under (`GITHUB_TOKEN`, and `GH_TOKEN`
/// for the `gh` CLI): a secret read from one writes unless its `can=` says otherwise.
const ACTIONS_TOKEN_VARIABLES: &[&str] = &["GITHUB_TOKEN", "GH_TOKEN"];

use reviewflow_engine::contract::{BelievedAuthors, Bound, ForgeContract, ForgeRefusal, ValueType};
use reviewflow_engine::model::Value;
use reviewflow_engine::run::{BoxFuture, StatusSink};

use super::forge::{ChangeInfo, ForgeError, PostRequest, PostedMarker, PostedSummary, ReviewState};
use super::forge_error::Calling;
use crate::diff::cut_to_path;
use crate::forge::CommitAuthor;
use crate::forge::baseline::GITHUB_BASELINE_CHARS;
use crate::forge::github::{
    BlockOn, CHECK_TEXT_MAX_CHARS, CHECK_TITLE_MAX_CHARS, COMMENT_MAX_CHARS, CommentInfo,
    FilterMode, MAX_ANNOTATIONS_PER_REQUEST, Marker, ReviewRequest, ReviewState as GhState,
    annotations, batches, comment_body, conclude, default_trusted_authors, find_ours, fit,
    fit_line, inline,
};
use crate::gather::{GatherConfig, GatherError, Gathered, Parts, assemble, normalise_path, notes};
use crate::git::Sha;
use crate::github::{ActionsEnv, Client, ClientConfig, GithubError};

/// The token permissions each call needs, named when GitHub refuses one (a 403).
const READ_PULLS: &str = "pull-requests:read";
const WRITE_PULLS: &str = "pull-requests:write";
const READ_CONTENTS: &str = "contents:read";
const WRITE_CHECKS: &str = "checks:write";

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
    "each retry is one more API call with the run's token, whose budget in GitHub Actions is 1,000 calls an hour per repository: past 10, a failing API spends the budget the post needs",
);

pub fn contract() -> ForgeContract {
    ForgeContract::new(
        "github",
        "a pull request on GitHub: the API from GITHUB_API_URL, the repository from GITHUB_REPOSITORY",
    )
    .platform("github")
    .token(
        "token",
        "the secret holding the API token (`GITHUB_TOKEN`)",
    )
    .prop(
        "api-url",
        ValueType::String,
        "the API's base URL (default: GITHUB_API_URL, else https://api.github.com)",
    )
    .prop(
        "pull-request",
        ValueType::Template,
        "the pull request's number (default: the event payload at GITHUB_EVENT_PATH), e.g. \"{pr}\"",
    )
    .change("pull-request")
    .key("project")
    // The pull request's head branch: its author names it.
    .authored("GITHUB_HEAD_REF")
    // The runner writes the path, but the file it names is the event's payload: the pull
    // request's title, body and branch as its author wrote them.
    .authored("GITHUB_EVENT_PATH")
    .prop(
        "project",
        ValueType::Template,
        "the project reviewed: one review comment per pull request, pipeline and project",
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
        "comment-authors",
        ValueType::String,
        "the logins whose comments may carry this pipeline's marker, space-separated (default `github-actions[bot]`)",
    )
    .believes(BelievedAuthors {
        prop: "comment-authors",
        job_token_env: ACTIONS_TOKEN_VARIABLES,
        job_account: crate::forge::github::DEFAULT_TRUSTED_AUTHORS[0],
    })
    // A head's author is the login of the account GitHub authenticated.
    .vouches_for_authors()
    // The workflow decides what the job checks out: the base branch on `pull_request_target`.
    .checkout_may_be_base()
    .permission("contents:read")
    .permission("pull-requests:read")
    .permission("pull-requests:write")
    .permission("issues:write")
    .permission("checks:write")
    .permission("actions:read")
    .refusals(refusals)
}

/// What the forge refuses before it opens, from the file alone: an `api-url` the client would
/// refuse ([`crate::github::api_url_refusal`], the same function), and the revisions a
/// `std/gather` names: the pull request is the change, so they would be ignored.
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
                why: crate::github::api_url_refusal(v.value.as_str()?)?,
                help: "write the API's https URL (GitHub Enterprise Server: `https://HOST/api/v3`), or leave `api-url` out to use GITHUB_API_URL; plain http is admitted only to this machine, for a test server",
            })
        })
        .into_iter()
        .collect();
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
                    "`{}` names its `{}`, but on GitHub the pull request is the change: its base and head are the pull request's, and the setting would be ignored",
                    stage.name.value, child.name.value
                ),
                help: "remove the setting: it chooses the revisions of a change on the local forge only (`--base` and `--head` of `reviewflow run` do the same there)",
            });
        }
    }
    out
}

/// The kind, registered in [`super::FORGES`].
pub struct GithubKind;

/// What a too-large diff is called in the error.
const DIFF_WHAT: &str = "diff";

impl super::ForgeKind for GithubKind {
    fn contract(&self) -> ForgeContract {
        contract()
    }

    fn open<'a>(
        &'a self,
        open: &'a super::ForgeOpen<'a>,
    ) -> BoxFuture<'a, Result<Arc<dyn super::Forge>, ForgeError>> {
        Box::pin(async move { Ok(Arc::new(Github::open(open).await?) as Arc<dyn super::Forge>) })
    }
}

/// The GitHub forge opened for one run: the client, the pull request resolved once.
pub struct Github {
    pub client: Client,
    pub actions: ActionsEnv,
    number: u64,
    info: ChangeInfo,
    /// The branch the pull request is to be merged into (`base.ref`).
    base_branch: String,
    pipeline: String,
    project: Option<String>,
    authors: Vec<String>,
    /// The pull request's author's login: whose answers to a review are read.
    pr_author: String,
    /// The marker as first read: gather and restore see the same last review, read once even
    /// when both ask at the same time (a second reader waits for the first read).
    last: tokio::sync::OnceCell<Option<PostedMarker>>,
    /// The comments as first read, and ours among them: the author's answers are read from
    /// the same listing the marker was (one call, and the same comments).
    first_read: tokio::sync::OnceCell<(Vec<CommentInfo>, Option<usize>)>,
}

impl Github {
    /// The branch the pull request is to be merged into.
    pub fn base_branch(&self) -> &str {
        &self.base_branch
    }

    async fn open(open: &super::ForgeOpen<'_>) -> Result<Github, ForgeError> {
        let actions = ActionsEnv::from_vars(|name| (open.env)(name)).map_err(|e| {
            ForgeError::Config(format!(
                "the github forge reads GitHub Actions' environment: {e}"
            ))
        })?;
        let setting = |name: &str| {
            open.decl
                .and_then(|d| d.setting(name))
                .map(|v| render_setting(&v.value, open.inputs))
        };
        let number = match setting("pull-request") {
            Some(text) => text.trim().parse::<u64>().map_err(|_| {
                ForgeError::Config(format!(
                    "`pull-request` of the forge is not a pull request number: {text:?}"
                ))
            })?,
            None => actions.pull_request.ok_or_else(|| {
                ForgeError::Config("no pull request: the event payload at GITHUB_EVENT_PATH names none; set `pull-request=\"{…}\"` on the forge".to_string())
            })?,
        };
        let project = setting("project").filter(|p| !p.is_empty());
        let authors = setting("comment-authors")
            .map(|a| a.split_whitespace().map(str::to_string).collect::<Vec<_>>())
            .filter(|a| !a.is_empty())
            .unwrap_or_else(default_trusted_authors);
        let api_url = setting("api-url").unwrap_or_else(|| actions.api_url.clone());
        let token = open.token.clone().ok_or_else(|| {
            ForgeError::Config(
                "the github forge needs a token: `forge \"github\" token=\"<secret>\"`".into(),
            )
        })?;
        let mut config = ClientConfig::new(api_url, Some(token), actions.repository.clone());
        let decl_value = |name: &str| open.decl.and_then(|d| d.setting(name)).map(|v| &v.value);
        if let Some(Value::Duration(ms)) = decl_value("timeout") {
            config.timeout = std::time::Duration::from_millis((*ms).max(1));
        }
        if let Some(Value::Int(n)) = decl_value("retries") {
            config.retry.max_attempts = u32::try_from(*n).unwrap_or(u32::MAX).saturating_add(1);
        }
        let client =
            Client::new(config).calling(READ_PULLS, || "cannot reach the GitHub API".into())?;
        let pr = client
            .pull_request(number)
            .await
            .calling(READ_PULLS, || format!("cannot read pull request #{number}"))?;
        let sha = |what: &str, text: &str| {
            Sha::parse(text).map_err(|e| {
                ForgeError::Unusable(format!("the pull request's {what} is not a commit: {e}"))
            })
        };
        let info = ChangeInfo {
            repo: actions.repository.to_string(),
            change_id: number.to_string(),
            base: sha("base", &pr.base.sha)?,
            head: sha("head", &pr.head.sha)?,
            title: pr.title.clone(),
            body: pr.body.clone().unwrap_or_default(),
            branch: Some(pr.head.git_ref.clone()),
            draft: pr.draft,
        };
        let base_branch = pr.base.git_ref.clone();
        Ok(Github {
            pr_author: pr.user.login.clone(),
            base_branch,
            client,
            actions,
            number,
            info,
            pipeline: open.pipeline.to_string(),
            project,
            authors,
            last: tokio::sync::OnceCell::new(),
            first_read: tokio::sync::OnceCell::new(),
        })
    }

    /// The answers to the last review (docs/github.md, "Answering a finding"), oldest first:
    /// replies in the threads of our inline comments (a thread's first comment by an author we
    /// trust, naming its finding's id), and comments on the pull request, each by the pull
    /// request's author or a login of `from` (GitHub's logins ignore letter case).
    async fn read_responses(
        &self,
        from: &[String],
    ) -> Result<Vec<crate::forge::Response>, ForgeError> {
        use crate::forge::response::parse;
        let allowed = |login: &str| {
            login.eq_ignore_ascii_case(&self.pr_author)
                || from.iter().any(|f| f.eq_ignore_ascii_case(login))
        };
        let trusted = |login: &str| self.authors.iter().any(|a| a.eq_ignore_ascii_case(login));
        let inline = self
            .client
            .review_comments(self.number)
            .await
            .calling(READ_PULLS, || {
                "cannot list the pull request's review comments".into()
            })?;
        // The finding each of our threads is about: the id its first comment names.
        let threads: BTreeMap<u64, String> = inline
            .iter()
            .filter(|c| c.in_reply_to_id.is_none())
            .filter(|c| c.user.as_ref().is_some_and(|u| trusted(&u.login)))
            .filter_map(|c| {
                Some((
                    c.id,
                    crate::forge::github::thread_finding(c.body.as_deref()?)?,
                ))
            })
            .collect();
        let mut written: Vec<(String, Vec<crate::forge::Response>)> = Vec::new();
        for c in &inline {
            let (Some(to), Some(user), Some(body)) = (c.in_reply_to_id, &c.user, &c.body) else {
                continue;
            };
            if let Some(id) = threads.get(&to).filter(|_| allowed(&user.login)) {
                let when = c.created_at.clone().unwrap_or_default();
                written.push((when, parse(body, &user.login, Some(id))));
            }
        }
        let (comments, ours) = self.first_read().await?;
        for (i, c) in comments.iter().enumerate() {
            if Some(i) == *ours || !allowed(&c.author_login) {
                continue;
            }
            let when = c.created_at.clone().unwrap_or_default();
            written.push((when, parse(&c.body, &c.author_login, None)));
        }
        // GitHub's timestamps are UTC and of one form, so their text orders them.
        written.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(written.into_iter().flat_map(|(_, r)| r).collect())
    }

    /// The comments as first read, and ours among them: read once per run.
    async fn first_read(&self) -> Result<&(Vec<CommentInfo>, Option<usize>), ForgeError> {
        self.first_read
            .get_or_try_init(|| async {
                let (comments, ours, _) = self.our_comment().await?;
                Ok((comments, ours))
            })
            .await
    }

    /// The pull request's comments, and ours among them (by its marker and a trusted author).
    async fn our_comment(&self) -> Result<(Vec<CommentInfo>, Option<usize>, Vec<u64>), ForgeError> {
        let comments: Vec<CommentInfo> = self
            .client
            .issue_comments(self.number)
            .await
            .calling(READ_PULLS, || {
                "cannot list the pull request's comments".into()
            })?
            .into_iter()
            .map(|c| CommentInfo {
                id: c.id,
                body: c.body.unwrap_or_default(),
                author_login: c.user.as_ref().map(|u| u.login.clone()).unwrap_or_default(),
                author_type: c.user.map(|u| u.kind).unwrap_or_default(),
                created_at: c.created_at,
            })
            .collect();
        let found = find_ours(
            &comments,
            &self.pipeline,
            self.project.as_deref(),
            &self.authors,
        )
        .map(|o| (o.ours.id, o.duplicates));
        let (index, duplicates) = match found {
            Some((id, dups)) => (comments.iter().position(|c| c.id == id), dups),
            None => (None, Vec::new()),
        };
        Ok((comments, index, duplicates))
    }

    async fn diff(
        &self,
        base: &Sha,
        head: &Sha,
        path: Option<&str>,
        max_bytes: u64,
    ) -> Result<Vec<u8>, ForgeError> {
        let diff = self
            .client
            .compare_diff(base.as_str(), head.as_str(), max_bytes)
            .await
            .map_err(|e| match e {
                // Over `max-bytes`: refused as gather refuses a local diff.
                GithubError::TooLarge { .. } => ForgeError::Gather(GatherError::TooLarge {
                    what: DIFF_WHAT,
                    limit: max_bytes,
                    size: max_bytes.saturating_add(1),
                    exact: false,
                }),
                e => ForgeError::from(e).needs(READ_CONTENTS).doing(format!(
                    "cannot read the diff {}..{}",
                    base.short(),
                    head.short()
                )),
            })?;
        Ok(match path {
            Some(p) => cut_to_path(&diff, p),
            None => diff,
        })
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
            .commit_is_ancestor(last.as_str(), head.as_str())
            .await
            .calling(READ_CONTENTS, || {
                format!("cannot compare {} with the head", last.short())
            })? {
            Some(true) => Ok((self.diff(last, head, path, max_bytes).await?, None)),
            Some(false) => Ok((whole.to_vec(), Some(notes::not_an_ancestor(last)))),
            None => Ok((whole.to_vec(), Some(notes::last_head_gone(last)))),
        }
    }

    /// A review that did not run keeps the pull request's total spent (`docs/github.md`, "Costs
    /// and budgets"): in our comment's marker, the rest of it as it was; in a first comment that
    /// names no head and says why, when no review was posted yet. The comment's address when one
    /// was written.
    async fn keep_total(
        &self,
        request: &PostRequest,
        reason: &str,
        total: crate::reviewer::usage::Usage,
        status: &StatusSink,
    ) -> Result<Option<String>, ForgeError> {
        use crate::forge::spent::{Place, Write, first_body, plan};
        const PLACE: Place = Place {
            record: "review comment",
            change: "pull request",
            newer: |o| format!("run (run {} attempt {})", o.run, o.attempt),
        };
        // Read again right before writing, as a posted review is.
        let (comments, ours, _) = self.our_comment().await?;
        let existing = ours.and_then(|i| comments.get(i));
        let order = super::Forge::run_order(self);
        // This run's body, for a first comment or one that holds no review yet.
        let first = first_body(
            &self.pipeline,
            self.project.as_deref(),
            &request.review.run_id,
            order,
            total,
            request.cost,
            reason,
            PLACE.change,
        )?;
        let plan = plan(
            existing.map(|c| c.body.as_str()),
            total,
            order,
            first,
            &PLACE,
        );
        let posted = match (plan.write, existing) {
            (Write::Update(body), Some(c)) => Some(
                self.client
                    .update_issue_comment(c.id, &body)
                    .await
                    .calling(WRITE_PULLS, || {
                        "cannot keep the total spent in the review comment".into()
                    })?,
            ),
            (Write::Create(body), _) => Some(
                self.client
                    .create_issue_comment(self.number, &body)
                    .await
                    .calling(WRITE_PULLS, || {
                        "cannot create the review comment that keeps the total spent".into()
                    })?,
            ),
            _ => None,
        };
        status.status(plan.say);
        Ok(posted
            .filter(|p| !p.html_url.is_empty())
            .map(|p| p.html_url))
    }

    async fn publish(
        &self,
        request: &PostRequest,
        status: &StatusSink,
    ) -> Result<PostedSummary, ForgeError> {
        let review = &request.review;
        let mut location = format!(
            "{}/{}/pull/{}",
            self.actions.server_url.trim_end_matches('/'),
            self.actions.repository,
            self.number
        );
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
            .with_order(super::Forge::run_order(self));
            // The baseline the next push compares with, fitted to its share of the comment.
            let baseline = request
                .baseline
                .as_ref()
                .map(|b| b.fit(GITHUB_BASELINE_CHARS));
            let footer =
                crate::forge::spent::footer_of(request.cost, request.spent, "pull request");
            let body = comment_body(
                &marker.render(),
                baseline.as_ref(),
                review,
                footer.as_deref(),
            );
            let body = fit(&body, COMMENT_MAX_CHARS);
            // Read again right before writing: another run may have created ours meanwhile.
            let (comments, ours, duplicates) = self.our_comment().await?;
            // A newer run may have posted since the preconditions were read: it stands.
            if let Some(c) = ours.and_then(|i| comments.get(i)) {
                let posted = PostedMarker::from_body(&c.body, "comment")?;
                super::forge::newest_speaks(self, &review.head, &posted)?;
            }
            let posted = match ours.and_then(|i| comments.get(i)) {
                Some(c) => self
                    .client
                    .update_issue_comment(c.id, &body)
                    .await
                    .calling(WRITE_PULLS, || "cannot update the review comment".into())?,
                None => self
                    .client
                    .create_issue_comment(self.number, &body)
                    .await
                    .calling(WRITE_PULLS, || "cannot create the review comment".into())?,
            };
            if !duplicates.is_empty() {
                status.status(format!(
                    "{} newer comments carry this pipeline's marker too (a race of two runs); the oldest was updated",
                    duplicates.len()
                ));
            }
            if !posted.html_url.is_empty() {
                location = posted.html_url.clone();
            }
        } else if let (ReviewState::NotReviewed(reason), Some(total)) =
            (&request.state, request.spent)
        {
            if let Some(url) = self.keep_total(request, reason, total, status).await? {
                location = url;
            }
        } else {
            status.status("the review did not run: the review comment is left as it was");
        }

        if let Some(mode) = &request.inline
            && let ReviewState::Reviewed = request.state
        {
            let mode: FilterMode = mode.parse().map_err(ForgeError::Config)?;
            let inline = inline(&review.findings, &request.ranges, mode);
            let summary = format!("{} findings on the changed lines", inline.comments.len());
            if let Some(req) = ReviewRequest::comment(&review.head, &summary, &inline.comments) {
                let body = serde_json::to_value(&req).map_err(|source| ForgeError::Encode {
                    what: "inline comments",
                    source,
                })?;
                self.client
                    .create_review(self.number, &body)
                    .await
                    .calling(WRITE_PULLS, || "cannot post the inline comments".into())?;
                status.status(format!("{} inline comments", inline.comments.len()));
            }
        }

        if let Some(name) = &request.check_run {
            let block_on: BlockOn = request.block_on.parse().map_err(ForgeError::Config)?;
            let state = match &request.state {
                ReviewState::Reviewed => GhState::reviewed(&review.findings, block_on),
                ReviewState::NotReviewed(reason) => GhState::NotReviewed {
                    reason: reason.clone(),
                },
            };
            let conclusion = match conclude(&state, block_on) {
                c if request.fail_not_reviewed => c.failing_not_reviewed(),
                c => c,
            };
            let all = annotations(&review.findings);
            let batches = batches(&all, MAX_ANNOTATIONS_PER_REQUEST);
            let details_url = self.actions.run_id.map(|id| {
                format!(
                    "{}/{}/actions/runs/{id}",
                    self.actions.server_url.trim_end_matches('/'),
                    self.actions.repository
                )
            });
            let text = fit(&review.comment, CHECK_TEXT_MAX_CHARS);
            let mut body = serde_json::json!({
                "name": fit_line(name, CHECK_TITLE_MAX_CHARS),
                "head_sha": review.head.as_str(),
                "status": "completed",
                "conclusion": conclusion.conclusion.as_str(),
                "external_id": review.run_id,
                "output": {
                    "title": fit_line(&conclusion.title, CHECK_TITLE_MAX_CHARS),
                    "summary": fit(&conclusion.summary, CHECK_TEXT_MAX_CHARS),
                    "text": text,
                    "annotations": batches.create,
                },
            });
            if let Some(url) = details_url {
                body["details_url"] = serde_json::Value::String(url);
            }
            let run = self
                .client
                .create_check_run(&body)
                .await
                .calling(WRITE_CHECKS, || {
                    "the review comment is posted, but the check run is not".into()
                })?;
            for batch in &batches.updates {
                let patch = serde_json::json!({
                    "output": {
                        "title": fit_line(&conclusion.title, CHECK_TITLE_MAX_CHARS),
                        "summary": fit(&conclusion.summary, CHECK_TEXT_MAX_CHARS),
                        "annotations": batch,
                    }
                });
                self.client
                    .update_check_run(run.id, &patch)
                    .await
                    .calling(WRITE_CHECKS, || {
                        "the check run is posted, but not all its annotations".into()
                    })?;
            }
            status.status(format!(
                "check run `{name}`: {} ({} annotations)",
                conclusion.conclusion.as_str(),
                all.len()
            ));
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

impl super::Forge for Github {
    fn change(&self) -> &ChangeInfo {
        &self.info
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn run_order(&self) -> Option<crate::forge::RunOrder> {
        crate::forge::RunOrder::of_github(self.actions.run_id, self.actions.run_attempt)
    }

    fn last_posted(&self) -> BoxFuture<'_, Result<Option<PostedMarker>, ForgeError>> {
        Box::pin(async move {
            self.last
                .get_or_try_init(|| async {
                    let (comments, ours) = self.first_read().await?;
                    ours.and_then(|i| comments.get(i))
                        .map(|c| PostedMarker::from_body(&c.body, "comment"))
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
            let (base, head) = (&self.info.base, &self.info.head);
            let diff = self
                .diff(base, head, path.as_deref(), config.max_bytes)
                .await?;
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
            let pr = self
                .client
                .pull_request(self.number)
                .await
                .calling(READ_PULLS, || {
                    format!("cannot read pull request #{}", self.number)
                })?;
            Sha::parse(&pr.head.sha).map_err(|e| {
                ForgeError::Unusable(format!("the pull request's head is not a commit: {e}"))
            })
        })
    }

    fn head_author<'a>(&'a self, sha: &'a Sha) -> BoxFuture<'a, Result<CommitAuthor, ForgeError>> {
        Box::pin(async move {
            let commit = self
                .client
                .commit(sha.as_str())
                .await
                .calling(READ_CONTENTS, String::new)?;
            let name = commit
                .commit
                .author
                .and_then(|a| a.name)
                .unwrap_or_default();
            Ok(match commit.author {
                Some(user) => CommitAuthor::Account {
                    is_bot: user.kind == "Bot",
                    login: user.login,
                    name,
                },
                None => CommitAuthor::NoAccount { name },
            })
        })
    }

    fn post<'a>(
        &'a self,
        request: &'a PostRequest,
        status: &'a StatusSink,
    ) -> BoxFuture<'a, Result<PostedSummary, ForgeError>> {
        Box::pin(self.publish(request, status))
    }
}
