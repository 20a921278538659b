//! `forge "local"`: a git checkout stands for the forge (see `docs/local-forge.md`).

use std::sync::Arc;

use reviewflow_engine::contract::{ForgeContract, ValueType};
use reviewflow_engine::run::{BoxFuture, StatusSink};

use super::forge::{ChangeInfo, PostRequest, PostedMarker, PostedSummary};
use crate::forge::{Change, CommitAuthor, LocalForge, author_name};
use crate::gather::{GatherConfig, Gathered, gather_change};
use crate::git::Sha;

pub fn contract() -> ForgeContract {
    ForgeContract::new(
        "local",
        "a git checkout: the change is a git range, reviews are written to a folder",
    )
    .prop(
        "dir",
        ValueType::String,
        "where reviews are written, relative to the checkout (default `.reviewflow/forge`)",
    )
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
    ) -> BoxFuture<'a, Result<Arc<dyn super::Forge>, String>> {
        Box::pin(async move {
            let checkout = open.checkout.to_path_buf();
            let forge = match open
                .decl
                .and_then(|d| d.setting("dir"))
                .and_then(|v| v.value.as_str())
            {
                Some(dir) => LocalForge::with_dir(&checkout, checkout.join(dir)),
                None => LocalForge::new(&checkout),
            };
            let (base, head) = (open.base.map(String::from), open.head.map(String::from));
            let f = forge.clone();
            let change = super::blocking(move || {
                f.open_change(base.as_deref(), head.as_deref())
                    .map_err(|e| format!("cannot open the change under review: {e}"))
            })
            .await?;
            let info = ChangeInfo {
                repo: change.repo.clone(),
                change_id: change.change_id.clone(),
                base: change.base().clone(),
                head: change.head().clone(),
                title: change.title.clone(),
                body: change.body.clone(),
                branch: change.branch.clone(),
            };
            Ok(Arc::new(Local {
                forge,
                change,
                info,
            }) as Arc<dyn super::Forge>)
        })
    }
}

/// The local forge opened for one run.
pub struct Local {
    pub forge: LocalForge,
    pub change: Change,
    info: ChangeInfo,
}

impl super::Forge for Local {
    fn change(&self) -> &ChangeInfo {
        &self.info
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn last_posted(&self) -> BoxFuture<'_, Result<Option<PostedMarker>, String>> {
        let forge = self.forge.clone();
        let id = self.change.change_id.clone();
        Box::pin(super::blocking(move || {
            let posted = forge
                .last_posted(&id)
                .map_err(|e| format!("cannot read the last posted review: {e}"))?;
            Ok(posted.map(|p| PostedMarker {
                head: p.head,
                run: Some(p.run_id),
                conversation: p.conversation_id,
            }))
        }))
    }

    fn gather<'a>(
        &'a self,
        config: &'a GatherConfig,
        last: Option<&'a Sha>,
    ) -> BoxFuture<'a, Result<Gathered, String>> {
        let checkout = self.forge.checkout.clone();
        let change = self.change.clone();
        let config = config.clone();
        let last = last.cloned();
        Box::pin(super::blocking(move || {
            gather_change(&checkout, &change, &config, last.as_ref()).map_err(|e| e.to_string())
        }))
    }

    fn current_head(&self) -> BoxFuture<'_, Result<Sha, String>> {
        let checkout = self.forge.checkout.clone();
        let head_ref = self.change.range.head_ref.clone();
        Box::pin(super::blocking(move || {
            crate::git::resolve(&checkout, &head_ref)
                .map_err(|e| format!("cannot resolve the head again: {e}"))
        }))
    }

    fn head_author<'a>(&'a self, sha: &'a Sha) -> BoxFuture<'a, Result<CommitAuthor, String>> {
        let checkout = self.forge.checkout.clone();
        let sha = sha.clone();
        Box::pin(super::blocking(move || {
            let name = author_name(&checkout, &sha).map_err(|e| e.to_string())?;
            Ok(CommitAuthor::Git { name })
        }))
    }

    fn post<'a>(
        &'a self,
        request: &'a PostRequest,
        _status: &'a StatusSink,
    ) -> BoxFuture<'a, Result<PostedSummary, String>> {
        let forge = self.forge.clone();
        let change = self.change.clone();
        let review = request.review.clone();
        let expected = request.expected_head.clone();
        let formats = request.formats.clone();
        Box::pin(super::blocking(move || {
            let posted = forge
                .post_formats(&change, &review, &expected, &formats)
                .map_err(|e| e.to_string())?;
            Ok(PostedSummary {
                location: posted.location.display().to_string(),
            })
        }))
    }
}
