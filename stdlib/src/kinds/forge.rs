//! The one interface every forge kind implements at run time, so `std/gather`, `std/restore` and
//! `std/post` are the same code on a folder and on GitHub.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use reviewflow_engine::contract::ForgeContract;
use reviewflow_engine::model::Forge as ForgeDecl;
use reviewflow_engine::run::{BoxFuture, StatusSink};
use zeroize::Zeroizing;

use crate::forge::{Baseline, CommitAuthor, FileRanges, Format, Review, check_author};
use crate::gather::{GatherConfig, Gathered, Parts};
use crate::git::Sha;

pub use super::forge_error::ForgeError;

/// The change under review, resolved once when the forge is opened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChangeInfo {
    /// `owner/name` on GitHub; locally `forge "local" repo=…`, else the `origin` remote's host
    /// and path, else the checkout folder's name.
    pub repo: String,
    /// The change's stable id: the pull request's number, the local change id.
    pub change_id: String,
    pub base: Sha,
    /// Resolved once, at the start: what a post must still find.
    pub head: Sha,
    /// Untrusted.
    pub title: String,
    /// Untrusted.
    pub body: String,
    /// Untrusted (the author chose the name).
    pub branch: Option<String>,
    /// The forge marks the change a draft (a GitHub draft pull request, a GitLab draft merge
    /// request) when it opened; never on the local forge.
    pub draft: bool,
}

// Every remote forge gathers the change it resolved when it was opened.
impl From<&ChangeInfo> for Parts {
    fn from(info: &ChangeInfo) -> Self {
        Parts {
            change_id: info.change_id.clone(),
            repo: info.repo.clone(),
            base: info.base.clone(),
            head: info.head.clone(),
            title: info.title.clone(),
            body: info.body.clone(),
            branch: info.branch.clone(),
        }
    }
}

/// What the forge shows as the last posted review of the change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PostedMarker {
    /// The head that review was of; `None` when no review was posted yet (a marker that only
    /// keeps the change's total spent, written by a run whose review did not run).
    pub head: Option<Sha>,
    pub run: Option<String>,
    pub conversation: Option<String>,
    /// The fingerprints of that review's findings (`docs/findings.md`); `None` when it kept none
    /// (written before baselines were kept) or it could not be read.
    pub baseline: Option<Baseline>,
    /// What that review published, by severity: a re-run on the same head is judged by it
    /// (`--fail-on`); `None` when the record or marker keeps no counts.
    pub published: Option<crate::forge::PublishedCounts>,
    /// The CI run that posted it (`docs/github.md`, "Only the newest run posts"); `None` when
    /// the marker names none (written before orders were kept, by a run outside CI, or locally).
    pub order: Option<crate::forge::RunOrder>,
    /// The change's running total of what its reviews spent, this one included (`docs/github.md`,
    /// "Costs and budgets"); `None` when the record or marker keeps none (written before costs
    /// were kept).
    pub spent: Option<crate::reviewer::usage::Usage>,
}

impl PostedMarker {
    /// The marker of our posted review, read from its body (a comment, a note: `what`, for the
    /// error). Trusted as the body is: ours, by an author the forge believes.
    pub fn from_body(body: &str, what: &str) -> Result<Self, ForgeError> {
        let m = crate::forge::github::Marker::parse_body(body).ok_or_else(|| {
            ForgeError::Unusable(format!("the review {what}'s marker does not parse"))
        })?;
        Ok(PostedMarker {
            head: m
                .head()
                .map(|h| {
                    Sha::parse(h).map_err(|e| {
                        ForgeError::Unusable(format!("the review {what} names no commit: {e}"))
                    })
                })
                .transpose()?,
            run: Some(m.run().to_string()),
            conversation: m.conversation().map(str::to_string),
            baseline: crate::forge::github::baseline_of_body(body),
            published: m.published(),
            order: m.order(),
            spent: m.spent(),
        })
    }
}

/// Whether the review ran, for an honest check-run conclusion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReviewState {
    Reviewed,
    /// The review fell back, was skipped or gated out: the reason.
    NotReviewed(String),
}

/// Everything `std/post` asks a forge to publish.
#[derive(Clone, Debug)]
pub struct PostRequest {
    pub review: Review,
    pub state: ReviewState,
    /// Refuse when the change's head is no longer this.
    pub expected_head: Sha,
    /// The changed-line ranges, for inline comments.
    pub ranges: Vec<FileRanges>,
    /// The pipeline's name: one comment per pipeline (and the forge's project).
    pub pipeline: String,
    /// Local forge: the files to write.
    pub formats: Vec<Format>,
    /// Hosted forges: also record a check run of this name.
    pub check_run: Option<String>,
    /// Hosted forges: inline comments with this filter (`added`, `diff-context`, `file`,
    /// `nofilter`); none when absent.
    pub inline: Option<String>,
    /// Which findings make the check run fail (`any`, `error`, `warning`, `never`).
    pub block_on: String,
    /// A review that failed fails the check run too (`not-reviewed "fail"`): a `neutral` one
    /// does not block a merge.
    pub fail_not_reviewed: bool,
    /// What the forge keeps with the posted review for the next one to compare with: the
    /// fingerprints of `review.findings`, or the last baseline again when the review did not run.
    pub baseline: Option<Baseline>,
    /// The change's running total of what its reviews spent, this run included, for the forge to
    /// keep with the posted review (the marker, the record); `None` keeps none. A review that
    /// did not run keeps it too, the posted review otherwise as it was (GitHub and GitLab: the
    /// marker alone, or a first comment that names no head; locally: the record's `spent`, when
    /// there is a record).
    pub spent: Option<crate::reviewer::usage::Usage>,
    /// What this run's review cost, for the comment's footer; `None` when the pipeline gives
    /// `std/post` no cost (then no footer is written).
    pub cost: Option<crate::reviewer::usage::Usage>,
}

/// What a post did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PostedSummary {
    /// Where a person reads the review.
    pub location: String,
    /// Whether the review was recorded. The local forge records no review that did not run (its
    /// last record stays what the next run compares with, only its total spent may change);
    /// GitHub records the check run that says so.
    pub recorded: bool,
}

/// A forge, opened for one run.
pub trait Forge: Send + Sync {
    /// The change under review, resolved when the forge was opened.
    fn change(&self) -> &ChangeInfo;

    /// The forge itself, for a store kept by it (artifacts of a GitHub run) to reach its client.
    fn as_any(&self) -> &dyn std::any::Any;

    /// What the run should warn about how the forge was opened (none by default). `resumes`: the
    /// pipeline keeps conversations between runs, so how the repository was named matters.
    fn warnings(&self, resumes: bool) -> Vec<String> {
        let _ = resumes;
        Vec::new()
    }

    /// Where this run stands among the change's runs (its CI run and attempt), to refuse
    /// replacing a review a newer run posted; `None` (the default) orders nothing.
    fn run_order(&self) -> Option<crate::forge::RunOrder> {
        None
    }

    /// The last posted review of the change, as the forge shows it (a comment's marker, a
    /// record file).
    fn last_posted(&self) -> BoxFuture<'_, Result<Option<PostedMarker>, ForgeError>>;

    /// The author's responses to the findings of the last posted review (`last`), in the order
    /// they were written (`docs/findings.md`, "Answering a finding"): only the change's
    /// author's, or those of a name in `from`. A forge that cannot read them says so: no
    /// responses read is never taken for none written.
    fn responses<'a>(
        &'a self,
        last: &'a PostedMarker,
        from: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<crate::forge::Response>, ForgeError>> {
        let _ = (last, from);
        Box::pin(async {
            Err(ForgeError::Unusable(
                "this forge does not read the author's responses to a review".into(),
            ))
        })
    }

    /// The change's diffs, cut to `config.path`, with the since-last-review diff from `last`.
    fn gather<'a>(
        &'a self,
        config: &'a GatherConfig,
        last: Option<&'a Sha>,
    ) -> BoxFuture<'a, Result<Gathered, ForgeError>>;

    /// The change's head now (to refuse a post when it moved since gather).
    fn current_head(&self) -> BoxFuture<'_, Result<Sha, ForgeError>>;

    /// Who authored commit `sha` (to refuse a post of a head nobody it trusts authored): the
    /// account GitHub maps it to, or none; the git author name locally.
    fn head_author<'a>(&'a self, sha: &'a Sha) -> BoxFuture<'a, Result<CommitAuthor, ForgeError>>;

    /// Publishes the review; refuses, publishing nothing, when the head moved.
    fn post<'a>(
        &'a self,
        request: &'a PostRequest,
        status: &'a StatusSink,
    ) -> BoxFuture<'a, Result<PostedSummary, ForgeError>>;
}

/// What must hold before `std/post` writes anything (keeps a blob, posts a comment, records a
/// check run, comments inline, writes a file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Preconditions {
    /// `require-head`: the change's head must still be this (default: the head resolved when
    /// the forge was opened).
    pub head: Sha,
    /// `require-author`: the head must be authored by one of these; empty: by anyone.
    pub authors: Vec<String>,
}

/// Checks `preconditions` against the forge, reading only: the head first, then that no newer
/// run posted a review of it, then its author. The error names the precondition, what was
/// found, and that nothing was published.
pub async fn check_preconditions(
    forge: &dyn Forge,
    preconditions: &Preconditions,
) -> Result<(), ForgeError> {
    let expected = &preconditions.head;
    let current = forge.current_head().await?;
    if &current != expected {
        return Err(ForgeError::HeadMoved {
            expected: expected.clone(),
            current,
        });
    }
    // The last review as the run read it: a newer run that posted since is caught again when
    // the forge reads its review right before writing. A run with no order compares nothing,
    // and reads nothing for it.
    if forge.run_order().is_some()
        && let Some(last) = forge.last_posted().await?
    {
        newest_speaks(forge, expected, &last)?;
    }
    if preconditions.authors.is_empty() {
        return Ok(());
    }
    let author = forge
        .head_author(expected)
        .await
        .map_err(|e| ForgeError::AuthorUnreadable {
            head: expected.short().to_owned(),
            source: Box::new(e),
        })?;
    check_author(expected.short(), &author, &preconditions.authors)?;
    Ok(())
}

/// Refuses a post by this run when `posted`, the review the forge holds, is of `head` by a newer
/// run or a newer attempt of this one ([`crate::forge::order`]): only the newest speaks.
pub fn newest_speaks(
    forge: &dyn Forge,
    head: &Sha,
    posted: &PostedMarker,
) -> Result<(), ForgeError> {
    // A marker with no head is of no review: it is never the same head, so it refuses nothing.
    let Some(posted_head) = &posted.head else {
        return Ok(());
    };
    crate::forge::order::may_replace(head, forge.run_order(), posted_head, posted.order)
        .map_err(ForgeError::Superseded)
}

/// What opening a forge may use.
pub struct ForgeOpen<'a> {
    /// The `forge` node (`None`: the default forge, no settings).
    pub decl: Option<&'a ForgeDecl>,
    pub checkout: &'a Path,
    /// The forge's token, read from the secret its `token` names.
    pub token: Option<Zeroizing<String>>,
    /// The pipeline's name: one review comment per pipeline.
    pub pipeline: &'a str,
    /// The pipeline's declared inputs, resolved: the forge's templates interpolate them.
    pub inputs: &'a BTreeMap<String, String>,
    /// The process environment (GitHub Actions variables).
    pub env: &'a (dyn Fn(&str) -> Option<String> + Sync),
    /// `--base` / `--head` of the command line.
    pub base: Option<&'a str>,
    pub head: Option<&'a str>,
    /// Where the run writes files for later workflow steps (`RUNNER_TEMP` in Actions).
    pub temp_dir: PathBuf,
    /// Forge-specific values the run records (`pull_request`), filled by `open`.
    pub notes: BTreeMap<String, String>,
}

/// A registered forge kind: its contract and how to open it.
pub trait ForgeKind: Send + Sync {
    fn contract(&self) -> ForgeContract;

    fn open<'a>(
        &'a self,
        open: &'a ForgeOpen<'a>,
    ) -> BoxFuture<'a, Result<Arc<dyn Forge>, ForgeError>>;
}
