//! `forge "local"`: a git checkout stands for the forge (see `docs/local-forge.md`).

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use reviewflow_engine::contract::{ForgeContract, ValueType};
use reviewflow_engine::model::{Pipeline, Value};
use reviewflow_engine::run::{BoxFuture, StatusSink};

use super::forge::{ChangeInfo, ForgeError, PostRequest, PostedMarker, PostedSummary};
use crate::forge::{
    Change, CommitAuthor, LocalForge, RepoSource, author_name, check_identity, repo_identity,
};
use crate::gather::{GatherConfig, Gathered, gather_change};
use crate::git::Sha;
use crate::git::has_uncommitted_changes;
use crate::stages::runtime::render_inputs;

pub fn contract() -> ForgeContract {
    ForgeContract::new(
        "local",
        "a git checkout: the change is a git range, reviews are written to a folder",
    )
    .prop(
        "dir",
        ValueType::String,
        "where reviews are written: a folder inside the checkout, relative to it, reached through no symbolic link (default `.reviewflow/forge`)",
    )
    .prop(
        "repo",
        ValueType::String,
        "the repository's name, the `repo` input (default: the `origin` remote's host and path, else the checkout folder's name)",
    )
    .refusals(refusals)
}

/// The folder `dir` names: a relative path to a folder inside the checkout, reached without a
/// symbolic link. Refused: an empty path or the checkout itself, an absolute path, a `..`
/// component, a `.git` component, a control character, and a path whose existing part goes
/// through a symbolic link or a file. The part that does not exist yet is created by the first
/// post (which checks again that no folder on the way is a symbolic link). The error says why,
/// after the setting.
pub fn forge_dir(checkout: &Path, dir: &str) -> Result<PathBuf, DirError> {
    let parts = dir_parts(dir)?;
    let mut path = checkout.to_path_buf();
    for (i, part) in parts.iter().enumerate() {
        path.push(part);
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => return Err(DirError::Link(path)),
            Ok(meta) if !meta.is_dir() => return Err(DirError::File(path)),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // Created by the first post: nothing below can exist yet.
                path.extend(&parts[i + 1..]);
                return Ok(path);
            }
            Err(source) => return Err(DirError::Inspect { path, source }),
        }
    }
    Ok(path)
}

/// Why `dir` is refused, said after the setting (`dir="…" leaves the checkout …`).
#[derive(Debug, thiserror::Error)]
pub enum DirError {
    #[error("holds a control character")]
    Control,
    #[error("is an absolute path: it must be relative to the checkout (`.reviewflow/forge`)")]
    Absolute,
    /// A root or a prefix past the first component.
    #[error("is an absolute path: it must be relative to the checkout")]
    Rooted,
    #[error("is inside `.git`: name a folder of the checkout")]
    Git,
    #[error("leaves the checkout (a `..` component): name a folder inside it")]
    Leaves,
    #[error("names the checkout itself: name a folder inside it")]
    Checkout,
    #[error(
        "goes through a symbolic link ({}): the forge folder is reached through real folders only",
        .0.display()
    )]
    Link(PathBuf),
    #[error("goes through a file ({})", .0.display())]
    File(PathBuf),
    #[error("cannot be inspected ({}): {source}", path.display())]
    Inspect {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// What the file alone says of `dir`: the folders beneath the checkout it names, or why it is
/// refused (`run` and `check` both, in the same words: [`refusals`]).
fn dir_parts(dir: &str) -> Result<Vec<&std::ffi::OsStr>, DirError> {
    if dir.chars().any(char::is_control) {
        return Err(DirError::Control);
    }
    let relative = Path::new(dir);
    if relative.has_root() {
        return Err(DirError::Absolute);
    }
    let mut parts = Vec::new();
    for part in relative.components() {
        match part {
            Component::CurDir => {}
            Component::Normal(name) if name == ".git" => return Err(DirError::Git),
            Component::Normal(name) => parts.push(name),
            Component::ParentDir => return Err(DirError::Leaves),
            Component::RootDir | Component::Prefix(_) => return Err(DirError::Rooted),
        }
    }
    if parts.is_empty() {
        return Err(DirError::Checkout);
    }
    Ok(parts)
}

/// What the forge refuses before it opens, from the file alone: a `dir` [`forge_dir`] would
/// refuse whatever the checkout holds (an absolute path such as `/tmp/reviews`, where another
/// job or user of the machine could write the review records, `..`, `.git`).
fn refusals(
    _pipeline: &Pipeline,
    forge: &reviewflow_engine::model::Forge,
) -> Vec<reviewflow_engine::contract::ForgeRefusal> {
    forge
        .setting("dir")
        .and_then(|v| {
            let dir = v.value.as_str()?;
            let why = dir_parts(dir).err()?;
            Some(reviewflow_engine::contract::ForgeRefusal {
                span: v.span,
                principle: None,
                why: format!("forge \"local\": dir=\"{dir}\" {why}"),
                help: "name a folder inside the checkout (the default `.reviewflow/forge`): a folder outside it may be written by another job or user of the machine, who would then write the review records",
            })
        })
        .into_iter()
        .collect()
}

/// The revisions the pipeline's `std/gather` stages name (`base "…"`, `head "…"`), their
/// templates rendered with the declared inputs: the local forge opens the change with them when
/// the command line gives none (`--base`, `--head` win). An empty value names nothing (the
/// default applies). Refused: a template naming a stage's output (the change is resolved before
/// any stage runs) and two gather stages naming different revisions (it is resolved once).
pub fn gather_revisions(
    pipeline: &Pipeline,
    inputs: &BTreeMap<String, String>,
) -> Result<(Option<String>, Option<String>), String> {
    let mut found: [Option<String>; 2] = [None, None];
    for stage in pipeline
        .stages
        .iter()
        .filter(|s| s.uses.value == "std/gather")
    {
        for (slot, which) in found.iter_mut().zip(["base", "head"]) {
            let Some(value) = stage
                .children
                .iter()
                .find(|c| c.name.value == which)
                .and_then(|c| c.args.first())
            else {
                continue;
            };
            let text = match &value.value {
                Value::String(s) => s.clone(),
                Value::Template(t) if t.references().next().is_some() => {
                    return Err(format!(
                        "stage `{}`: `{which}` names a stage's output, but the change under review is resolved before any stage runs: name an input or a revision",
                        stage.name.value
                    ));
                }
                Value::Template(t) => render_inputs(t, inputs),
                _ => continue,
            };
            if text.is_empty() {
                continue;
            }
            match slot {
                Some(earlier) if *earlier != text => {
                    return Err(format!(
                        "the `std/gather` stages name two {which} revisions ({earlier:?} and {text:?}): the change under review is resolved once, from one"
                    ));
                }
                _ => *slot = Some(text),
            }
        }
    }
    let [base, head] = found;
    Ok((base, head))
}

/// The kind, registered in [`super::FORGES`].
pub struct LocalKind;

impl super::ForgeKind for LocalKind {
    fn contract(&self) -> ForgeContract {
        contract()
    }

    fn open<'a>(
        &'a self,
        open: &'a super::ForgeOpen<'a>,
    ) -> BoxFuture<'a, Result<Arc<dyn super::Forge>, ForgeError>> {
        Box::pin(async move {
            let checkout = open.checkout.to_path_buf();
            let forge = match open.decl.and_then(|d| d.setting("dir")) {
                Some(setting) => {
                    let dir = setting.value.as_str().ok_or_else(|| {
                        ForgeError::Config("forge \"local\": `dir` is not a string".to_owned())
                    })?;
                    let path = forge_dir(&checkout, dir).map_err(|why| {
                        ForgeError::Config(format!("forge \"local\": dir=\"{dir}\" {why}"))
                    })?;
                    LocalForge::with_dir(&checkout, path)
                }
                None => LocalForge::new(&checkout),
            }
            // One review per change and pipeline, as on GitHub.
            .for_pipeline(open.pipeline);
            let configured = match open.decl.and_then(|d| d.setting("repo")) {
                Some(setting) => {
                    let name = setting.value.as_str().ok_or_else(|| {
                        ForgeError::Config("forge \"local\": `repo` is not a string".to_owned())
                    })?;
                    check_identity(name).map_err(|why| {
                        ForgeError::Config(format!("forge \"local\": repo={name:?} {why}"))
                    })?;
                    Some(name.to_owned())
                }
                None => None,
            };
            let (base, head) = (open.base.map(String::from), open.head.map(String::from));
            let f = forge.clone();
            let (change, (repo, source), uncommitted) = super::blocking(move || {
                let change = f
                    .open_change(base.as_deref(), head.as_deref())
                    .map_err(|e| {
                        ForgeError::from(e).doing("cannot open the change under review")
                    })?;
                let identity = repo_identity(&f.checkout, configured.as_deref(), &change.repo);
                // The review is of commits: edits not committed are not in it. A git that cannot
                // tell is not a reason to stop the run.
                let uncommitted = has_uncommitted_changes(&f.checkout).unwrap_or(false);
                Ok((change, identity, uncommitted))
            })
            .await?;
            let uncommitted = uncommitted.then(|| {
                format!(
                    "the checkout has uncommitted changes to tracked files: they are not reviewed (the review is of the commits {}..{})",
                    change.base().short(),
                    change.head().short()
                )
            });
            let repo_warning = match source {
                RepoSource::Folder(why) => Some(format!(
                    "`repo` is the folder's name {repo:?} ({why}): a clone in another folder will not resume its conversations; `forge \"local\" repo=\"…\"` sets it"
                )),
                RepoSource::Configured | RepoSource::Origin => None,
            };
            let info = ChangeInfo {
                repo,
                change_id: change.change_id.clone(),
                base: change.base().clone(),
                head: change.head().clone(),
                title: change.title.clone(),
                body: change.body.clone(),
                branch: change.branch.clone(),
                // A commit range has no drafts.
                draft: false,
            };
            Ok(Arc::new(Local {
                forge,
                change,
                info,
                repo_warning,
                uncommitted,
            }) as Arc<dyn super::Forge>)
        })
    }
}

/// The local forge opened for one run.
pub struct Local {
    pub forge: LocalForge,
    pub change: Change,
    info: ChangeInfo,
    /// What the run should say about how `repo` was found (from the folder's name).
    repo_warning: Option<String>,
    /// What the run should say about edits the review does not hold (uncommitted ones).
    uncommitted: Option<String>,
}

impl super::Forge for Local {
    fn change(&self) -> &ChangeInfo {
        &self.info
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn warnings(&self, resumes: bool) -> Vec<String> {
        // How `repo` was found matters only to a pipeline that keeps conversations between runs.
        let repo = self.repo_warning.as_ref().filter(|_| resumes);
        repo.into_iter().chain(&self.uncommitted).cloned().collect()
    }

    fn last_posted(&self) -> BoxFuture<'_, Result<Option<PostedMarker>, ForgeError>> {
        let forge = self.forge.clone();
        let id = self.change.change_id.clone();
        Box::pin(super::blocking(move || {
            let posted = forge
                .last_posted(&id)
                .map_err(|e| ForgeError::from(e).doing("cannot read the last posted review"))?;
            Ok(posted.map(|p| PostedMarker {
                head: Some(p.head),
                run: Some(p.run_id),
                conversation: p.conversation_id,
                baseline: p.baseline,
                published: p.published,
                spent: p.spent,
                // Runs of a checkout are not ordered: the head rule alone applies.
                order: None,
            }))
        }))
    }

    fn responses<'a>(
        &'a self,
        _last: &'a PostedMarker,
        _from: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<crate::forge::Response>, ForgeError>> {
        // The file's writer is whoever runs reviewflow here: names do not apply.
        let forge = self.forge.clone();
        let id = self.change.change_id.clone();
        Box::pin(super::blocking(move || {
            forge
                .responses(&id)
                .map_err(|e| ForgeError::from(e).doing("cannot read the responses file"))
        }))
    }

    fn gather<'a>(
        &'a self,
        config: &'a GatherConfig,
        last: Option<&'a Sha>,
    ) -> BoxFuture<'a, Result<Gathered, ForgeError>> {
        let checkout = self.forge.checkout.clone();
        let change = self.change.clone();
        let config = config.clone();
        let last = last.cloned();
        Box::pin(super::blocking(move || {
            Ok(gather_change(&checkout, &change, &config, last.as_ref())?)
        }))
    }

    fn current_head(&self) -> BoxFuture<'_, Result<Sha, ForgeError>> {
        let checkout = self.forge.checkout.clone();
        let head_ref = self.change.range.head_ref.clone();
        Box::pin(super::blocking(move || {
            crate::git::resolve(&checkout, &head_ref)
                .map_err(|e| ForgeError::from(e).doing("cannot resolve the head again"))
        }))
    }

    fn head_author<'a>(&'a self, sha: &'a Sha) -> BoxFuture<'a, Result<CommitAuthor, ForgeError>> {
        let checkout = self.forge.checkout.clone();
        let sha = sha.clone();
        Box::pin(super::blocking(move || {
            let name = author_name(&checkout, &sha)?;
            Ok(CommitAuthor::Git { name })
        }))
    }

    fn post<'a>(
        &'a self,
        request: &'a PostRequest,
        status: &'a StatusSink,
    ) -> BoxFuture<'a, Result<PostedSummary, ForgeError>> {
        let forge = self.forge.clone();
        let change = self.change.clone();
        let review = request.review.clone();
        let expected = request.expected_head.clone();
        let formats = request.formats.clone();
        let kept = crate::forge::Kept {
            baseline: request.baseline.clone(),
            spent: request.spent,
            footer: crate::forge::spent::footer_of(request.cost, request.spent, "change"),
        };
        let reviewed = matches!(request.state, super::ReviewState::Reviewed);
        let status = status.clone();
        Box::pin(super::blocking(move || {
            // A review that did not run writes no review: no file reads as "no findings", and
            // the record keeps naming the head last reviewed, so the next run reviews this one.
            // Only the change's total spent is kept in the record, so that reviews that keep
            // failing are counted too; with no record there is nothing to keep it in.
            if !reviewed {
                if let Some(total) = kept.spent {
                    use crate::forge::TotalKept;
                    let kept = forge
                        .keep_total(change.change_id.as_str(), total)
                        .map_err(|e| ForgeError::from(e).doing("cannot keep the total spent"))?;
                    let said = match kept {
                        TotalKept::Written => "keeps",
                        TotalKept::Unchanged => "already keeps",
                        TotalKept::NoRecord => "",
                    };
                    if !said.is_empty() {
                        status.status(format!(
                            "the review did not run: the record of the last posted review {said} the change's total spent, {}",
                            total.say()
                        ));
                    }
                }
                return Ok(PostedSummary {
                    location: forge
                        .change_dir(change.change_id.as_str())?
                        .display()
                        .to_string(),
                    recorded: false,
                });
            }
            let posted = forge.post_recorded(&change, &review, &expected, &formats, &kept)?;
            Ok(PostedSummary {
                location: posted.location.display().to_string(),
                recorded: true,
            })
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::{DirError, forge_dir};

    #[test]
    fn dir_is_a_folder_inside_the_checkout() {
        let checkout = tempfile::tempdir().unwrap();
        let c = checkout.path();
        assert_eq!(forge_dir(c, "reviews").unwrap(), c.join("reviews"));
        assert_eq!(
            forge_dir(c, "./out/reviews/").unwrap(),
            c.join("out/reviews")
        );
        std::fs::create_dir_all(c.join("out")).unwrap();
        assert_eq!(forge_dir(c, "out/a/b").unwrap(), c.join("out/a/b"));
        assert_eq!(
            forge_dir(c, ".reviewflow/forge").unwrap(),
            c.join(".reviewflow/forge")
        );
    }

    #[test]
    fn dir_that_leaves_the_checkout_is_refused() {
        let checkout = tempfile::tempdir().unwrap();
        let c = checkout.path();
        let why = |dir: &str| forge_dir(c, dir).unwrap_err().to_string();
        assert!(why("../out").contains("leaves the checkout"));
        assert!(why("a/../../out").contains("leaves the checkout"));
        assert!(why("a/../b").contains("leaves the checkout"));
        assert!(why("/tmp/reviews").contains("absolute"));
        assert!(why("").contains("the checkout itself"));
        assert!(why(".").contains("the checkout itself"));
        assert!(why(".git/reviews").contains("`.git`"));
        assert!(why("a\nb").contains("control character"));
    }

    #[test]
    fn dir_through_a_symbolic_link_or_a_file_is_refused() {
        let checkout = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let c = checkout.path();
        std::os::unix::fs::symlink(elsewhere.path(), c.join("link")).unwrap();
        let err = forge_dir(c, "link/reviews").unwrap_err();
        assert!(
            matches!(&err, DirError::Link(p) if *p == c.join("link")),
            "{err}"
        );
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert!(matches!(forge_dir(c, "link"), Err(DirError::Link(_))));
        std::fs::write(c.join("file"), "x").unwrap();
        let err = forge_dir(c, "file/reviews").unwrap_err();
        assert!(matches!(err, DirError::File(_)), "{err}");
        assert!(err.to_string().contains("a file"), "{err}");
    }
}
