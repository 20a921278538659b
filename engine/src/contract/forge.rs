//! Forge contracts: what a `forge "kind"` node accepts and what its token may do. The engine
//! reads them as data; the stdlib registers each forge kind with its implementation.

use schemars::JsonSchema;
use serde::Serialize;

use super::{PropSpec, ValueType};

/// The contract of one forge kind (`forge "…"`).
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct ForgeContract {
    /// The name given as the `forge` node's argument.
    pub kind: String,
    /// One line: what the forge is.
    pub summary: String,
    /// Properties of the `forge` node besides the token.
    pub props: Vec<PropSpec>,
    /// The property that names the secret the forge authenticates with (`token`): stages that
    /// read or publish through the forge hold that secret when its scope lets them.
    pub token: Option<String>,
    /// The permissions this forge's token can carry (`pull-requests:write`). Empty: a forge
    /// without permissions (a folder), where a publishing stage declares none.
    pub permissions: Vec<String>,
    /// The property that names the change under review when it is set (`pull-request`): a
    /// value names the change when it holds the builtin `{change}` or an input this
    /// property's template is made of, and nothing else does (the `binding` check).
    pub change: Option<String>,
    /// The property whose value keys the review the forge publishes, besides the change and the
    /// pipeline (`project`: one comment and check run per pull request, pipeline and project).
    pub key: Option<String>,
    /// The environment variables the forge's runner sets from what the change's author wrote
    /// (a runner's variable for the head branch's name): an input read from one is attacker
    /// text whatever the pipeline says, so a `trusted "input"` for it lifts nothing (principle 2:
    /// a declaration the forge's own facts contradict is not believed).
    pub authored: Vec<String>,
    /// The forge reports who wrote a head from an account it authenticated (a hosted forge: the
    /// login of the account that pushed), so a stage may refuse a head by its author. Left out (default
    /// deny), an author is a name anyone writes (a git commit's author), and a gate on it
    /// refuses nothing an attacker could not pass (principle 4).
    pub vouches_for_authors: bool,
    /// The job chooses what it checks out, so the checkout may hold only what the pipeline's
    /// owners wrote (a hosted job on an event that runs the base's configuration checks out the base branch),
    /// and a `trusted "checkout"` can hold. Left out (default deny), the checkout is the change
    /// itself (the local forge reviews its own working tree), and the declaration lifts nothing
    /// (principle 6: a declaration the forge's own facts contradict is not believed).
    pub checkout_may_be_base: bool,
    /// Whose records the forge believes, and who the job's own token writes as
    /// ([`BelievedAuthors`]).
    pub believed: Option<BelievedAuthors>,
    /// The platform whose jobs run a pipeline on this forge (`Platform::name`), which `export`
    /// writes for; none for a forge whose pipelines run on a person's machine.
    pub platform: Option<String>,
    /// What the forge kind refuses in its settings before it opens (`api-url`), decidable from
    /// the file: the function the run calls when it opens the forge, so that `check`
    /// (`run-refusal`) reports it with the same words (principle 7).
    #[serde(skip)]
    #[schemars(skip)]
    pub refusals: Option<ForgeRefusals>,
}

/// A forge that finds its own records again among everyone's (a comment carrying the
/// pipeline's marker) believes only those written by the accounts its property `prop` lists,
/// by default the account the job's own token writes as (`job_account`, the token read from one
/// of `job_token_env`). A forge token read from another variable writes as another account: its
/// records are found only if `prop` names that account (principle 4: what is kept must be found).
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct BelievedAuthors {
    pub prop: &'static str,
    pub job_token_env: &'static [&'static str],
    pub job_account: &'static str,
}

/// A forge kind's refusals of what a pipeline asks of it: its own settings, and the settings of
/// stages that say how the forge opens the change (a `std/gather`'s revisions), which a forge
/// that cannot honour them refuses rather than ignores.
pub type ForgeRefusals = fn(&crate::model::Pipeline, &crate::model::Forge) -> Vec<ForgeRefusal>;

/// One refusal of [`ForgeRefusals`]: where, why (the words `run` says), and the fix.
#[derive(Clone, Debug)]
pub struct ForgeRefusal {
    pub span: crate::span::Span,
    /// The principle the setting breaks, when one of `check`'s names it
    /// ("allow-lists, not deny-lists").
    pub principle: Option<&'static str>,
    pub why: String,
    pub help: &'static str,
}

impl ForgeContract {
    pub fn new(kind: &str, summary: &str) -> Self {
        Self {
            kind: kind.into(),
            summary: summary.into(),
            props: Vec::new(),
            token: None,
            permissions: Vec::new(),
            change: None,
            key: None,
            authored: Vec::new(),
            vouches_for_authors: false,
            checkout_may_be_base: false,
            believed: None,
            platform: None,
            refusals: None,
        }
    }

    /// The platform whose jobs run its pipelines ([`Self::platform`]).
    pub fn platform(mut self, name: &str) -> Self {
        self.platform = Some(name.into());
        self
    }

    /// The property that names the change under review ([`Self::change`]); declared with
    /// [`Self::prop`] as well.
    pub fn change(mut self, prop: &str) -> Self {
        self.change = Some(prop.into());
        self
    }

    /// A variable the runner sets from what the change's author wrote ([`Self::authored`]).
    pub fn authored(mut self, var: &str) -> Self {
        self.authored.push(var.into());
        self
    }

    /// The forge authenticates who wrote a head ([`Self::vouches_for_authors`]).
    pub fn vouches_for_authors(mut self) -> Self {
        self.vouches_for_authors = true;
        self
    }

    /// The job may check out something other than the change ([`Self::checkout_may_be_base`]).
    pub fn checkout_may_be_base(mut self) -> Self {
        self.checkout_may_be_base = true;
        self
    }

    /// Whose records the forge believes ([`Self::believed`]); `prop` is declared with
    /// [`Self::prop`] as well.
    pub fn believes(mut self, believed: BelievedAuthors) -> Self {
        self.believed = Some(believed);
        self
    }

    /// The property that keys the published review ([`Self::key`]); declared with
    /// [`Self::prop`] as well.
    pub fn key(mut self, prop: &str) -> Self {
        self.key = Some(prop.into());
        self
    }

    /// The inputs that name the change in `forge`'s settings: `change`, and those of the
    /// template of the property that names it, when set.
    pub fn change_inputs<'a>(&self, forge: &'a crate::model::Forge) -> Vec<&'a str> {
        let mut names = vec!["change"];
        if let Some(crate::model::Value::Template(t)) = self
            .change
            .as_deref()
            .and_then(|prop| forge.setting(prop))
            .map(|v| &v.value)
        {
            names.extend(t.inputs().map(|(n, _)| n));
        }
        names
    }

    pub fn refusals(mut self, refusals: ForgeRefusals) -> Self {
        self.refusals = Some(refusals);
        self
    }

    /// A property of the `forge` node.
    pub fn prop(mut self, name: &str, ty: ValueType, doc: &str) -> Self {
        self.props.push(PropSpec::optional(name, ty, doc));
        self
    }

    /// The property that names the forge's token secret.
    pub fn token(mut self, prop: &str, doc: &str) -> Self {
        self.token = Some(prop.into());
        self.prop(prop, ValueType::Secret, doc)
    }

    pub fn permission(mut self, permission: &str) -> Self {
        self.permissions.push(permission.into());
        self
    }

    pub fn prop_spec(&self, name: &str) -> Option<&PropSpec> {
        self.props.iter().find(|p| p.name == name)
    }
}
