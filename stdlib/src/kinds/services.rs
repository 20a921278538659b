//! What a run's std/* stages share: the forge, opened once with the change resolved, and the
//! stores the pipeline declares, opened through their kinds. A stage reaches the forge, or a
//! store kept by it, only when it holds the forge's token: the scope `check` proves is the scope
//! the code enforces.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use reviewflow_engine::model::{Pipeline, Store as StoreDecl};
use reviewflow_engine::run::{StageCx, StageError, resolve_inputs};
use zeroize::Zeroizing;

use super::forge::{Forge, ForgeOpen};
use super::store::StoreOpen;
use crate::store::{BlobStore, StoreName};

/// A declared store, opened.
pub struct OpenedStore {
    pub decl: StoreDecl,
    pub store: Arc<dyn BlobStore>,
    /// Reached through the forge: only stages holding its token may use it.
    pub through_forge: bool,
}

/// The services of one run, handed to the stages through the executor's extensions.
pub struct Services {
    pub checkout: PathBuf,
    pub forge: Arc<dyn Forge>,
    pub forge_kind: String,
    /// The secret the forge authenticates with, if its kind has one.
    pub forge_token: Option<String>,
    pub stores: BTreeMap<String, OpenedStore>,
    /// The pipeline's name, for the posted review's marker.
    pub pipeline: String,
}

impl std::fmt::Debug for Services {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Services")
            .field("checkout", &self.checkout)
            .field("forge", &self.forge_kind)
            .field("stores", &self.stores.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// What [`prepare`] gives the command line: the services, and the builtin inputs (`repo`,
/// `change`) and commits (`base`, `head`) the run records as its identity.
pub struct Prepared {
    pub services: Services,
    pub inputs: BTreeMap<String, String>,
    pub commits: BTreeMap<String, String>,
    /// What the run should warn about before it starts (the forge's, when the pipeline seals or
    /// restores a conversation).
    pub warnings: Vec<String>,
}

/// Options of [`prepare`] from the command line.
pub struct PrepareOptions<'a> {
    pub checkout: &'a std::path::Path,
    pub base: Option<&'a str>,
    pub head: Option<&'a str>,
    pub env: &'a (dyn Fn(&str) -> Option<String> + Sync),
    /// Where files for later workflow steps go.
    pub temp_dir: PathBuf,
}

/// Opens the pipeline's forge (the change resolved once) and its stores.
pub async fn prepare(pipeline: &Pipeline, options: PrepareOptions<'_>) -> Result<Prepared, String> {
    // What the file alone decides of the forge is refused before it is opened, in the words
    // `check` reports (`run-refusal`): one function for both. A store's caps are bounded by the
    // compiler (`limit`), before this.
    let mut refused: Vec<String> = Vec::new();
    if let Some(refusals) = pipeline
        .forge
        .as_ref()
        .and_then(|f| super::forge_kind(&f.kind.value).map(|k| (f, k)))
        .and_then(|(f, k)| k.contract().refusals.map(|r| r(pipeline, f)))
    {
        refused.extend(refusals.into_iter().map(|r| r.why));
    }
    if !refused.is_empty() {
        return Err(refused.join("; "));
    }
    let decl = pipeline.forge.as_ref();
    let kind_name = decl.map_or(super::DEFAULT_FORGE, |f| f.kind.value.as_str());
    let kind = super::forge_kind(kind_name)
        .ok_or_else(|| format!("no implementation of the `{kind_name}` forge"))?;
    let forge_token = decl.and_then(|f| f.token.as_ref()).map(|t| t.value.clone());
    let token = match &forge_token {
        None => None,
        Some(name) => {
            let secret = pipeline
                .secret(name)
                .ok_or_else(|| format!("the forge's token names no secret `{name}`"))?;
            let value = (options.env)(&secret.env.value).ok_or_else(|| {
                format!(
                    "the forge's token `{name}` is not set (the variable {})",
                    secret.env.value
                )
            })?;
            Some(Zeroizing::new(value))
        }
    };
    let pipeline_name = pipeline
        .name
        .as_ref()
        .map(|n| n.value.clone())
        .unwrap_or_default();
    // The forge's templates (`pull-request="{pr}"`) take the declared inputs; the executor
    // resolves them again, with the builtin ones, and reports what is wrong with them.
    let lookup = |name: &str| (options.env)(name).map(std::ffi::OsString::from);
    let inputs = resolve_inputs(pipeline, &BTreeMap::new(), &lookup).map_err(|errors| {
        errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ")
    })?;
    // The local forge opens the change with the revisions `std/gather` names (the command
    // line's win); a hosted forge's change is its pull request.
    let (gather_base, gather_head) = if kind_name == "local" {
        super::forge_local::gather_revisions(pipeline, &inputs)?
    } else {
        // Refused rather than ignored, like a `std/gather`'s own `base` (the forge's refusals).
        if let Some(flag) = [("--base", options.base), ("--head", options.head)]
            .into_iter()
            .find_map(|(flag, v)| v.map(|_| flag))
        {
            return Err(format!(
                "`{flag}` chooses the revisions of a change on the local forge; on the `{kind_name}` forge the change is given by the forge (a pull request's base and head): run without it"
            ));
        }
        (None, None)
    };
    let open = ForgeOpen {
        decl,
        pipeline: &pipeline_name,
        inputs: &inputs,
        checkout: options.checkout,
        token,
        env: options.env,
        base: options.base.or(gather_base.as_deref()),
        head: options.head.or(gather_head.as_deref()),
        temp_dir: options.temp_dir.clone(),
        notes: BTreeMap::new(),
    };
    let forge = kind.open(&open).await.map_err(|e| e.to_string())?;
    let mut stores = BTreeMap::new();
    for decl in &pipeline.stores {
        let store_kind = super::store_kind(&decl.kind.value)
            .ok_or_else(|| format!("no implementation of the `{}` store", decl.kind.value))?;
        let opened = store_kind
            .open(&StoreOpen {
                decl,
                checkout: options.checkout,
                forge: &forge,
                forge_kind: kind_name,
                temp_dir: &options.temp_dir,
                env: options.env,
            })
            .map_err(|e| e.to_string())?;
        stores.insert(
            decl.name.value.clone(),
            OpenedStore {
                decl: decl.clone(),
                store: opened,
                through_forge: store_kind.through_forge(),
            },
        );
    }
    // How `repo` was found matters only to a pipeline that keeps conversations between runs.
    let resumes = pipeline
        .stages
        .iter()
        .any(|s| matches!(s.uses.value.as_str(), "std/seal" | "std/restore"));
    let warnings = forge.warnings(resumes);
    let change = forge.change();
    let mut inputs = BTreeMap::new();
    inputs.insert("repo".to_string(), change.repo.clone());
    inputs.insert("change".to_string(), change.change_id.clone());
    let mut commits = BTreeMap::new();
    commits.insert("base".to_string(), change.base.to_string());
    commits.insert("head".to_string(), change.head.to_string());
    Ok(Prepared {
        services: Services {
            checkout: options.checkout.to_path_buf(),
            forge,
            forge_kind: kind_name.to_string(),
            forge_token,
            stores,
            pipeline: pipeline
                .name
                .as_ref()
                .map(|n| n.value.clone())
                .unwrap_or_default(),
        },
        inputs,
        commits,
        warnings,
    })
}

impl Services {
    /// The run's services, or a clear failure when the run opened none.
    pub fn of<'a>(cx: &'a StageCx<'_>) -> Result<&'a Services, StageError> {
        cx.extensions.get::<Services>().ok_or_else(|| {
            StageError::failed("this stage needs a forge, which this run has not opened")
        })
    }

    /// The forge, when the stage holds its token.
    pub fn forge(&self, cx: &StageCx<'_>) -> Result<&dyn Forge, StageError> {
        self.check_token(cx, "the forge")?;
        Ok(self.forge.as_ref())
    }

    /// The store `name` and the blob name its template gives for this run.
    pub fn store(
        &self,
        cx: &StageCx<'_>,
        name: &str,
    ) -> Result<(&OpenedStore, StoreName), StageError> {
        let opened = self
            .stores
            .get(name)
            .ok_or_else(|| StageError::failed(format!("store `{name}` is not declared")))?;
        if opened.through_forge {
            self.check_token(cx, &format!("store `{name}`"))?;
        }
        let blob = match &opened.decl.blob_name {
            Some(t) => crate::stages::runtime::render_inputs(&t.value, cx.inputs),
            None => format!("review-{}", self.forge.change().change_id),
        };
        let blob_name = crate::store::blob_name(name, &blob).map_err(StageError::failed)?;
        Ok((opened, blob_name))
    }

    fn check_token(&self, cx: &StageCx<'_>, what: &str) -> Result<(), StageError> {
        match &self.forge_token {
            Some(token) if cx.secrets.get(token).is_none() => Err(StageError::failed(format!(
                "{what} needs the forge's token `{token}`, which is not in this stage's scope"
            ))),
            _ => Ok(()),
        }
    }
}
