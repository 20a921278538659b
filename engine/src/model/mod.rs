//! The typed pipeline: what the compiler makes of a `review.kdl`, every element with its span.

mod expr;
mod template;
mod value;

pub use expr::{Expr, ExprError, parse_expr};
pub use template::{Segment, Template, TemplateError, WORK, parse_template};
pub use value::{Reference, Value};

use schemars::JsonSchema;
use serde::Serialize;

use crate::span::{Span, Spanned};

/// The version of the model's JSON form (`reviewflow check --emit model`).
pub const MODEL_FORMAT_VERSION: u32 = 1;

/// A compiled pipeline.
#[derive(Clone, Debug, Default, Serialize, JsonSchema)]
pub struct Pipeline {
    /// The pipeline's name; absent when the file has no `pipeline` node (an error).
    pub name: Option<Spanned<String>>,
    pub inputs: Vec<Input>,
    pub secrets: Vec<Secret>,
    pub forge: Option<Forge>,
    pub stores: Vec<Store>,
    pub stages: Vec<Stage>,
    /// Pipeline-wide suppressions (`allow` at the top level).
    pub allows: Vec<Allow>,
    /// Sources from outside the file the pipeline vouches for (`trusted "checkout" reason=…`).
    pub trusted: Vec<Trusted>,
    /// `isolation "strict"`: refuse to run without every isolation layer.
    pub isolation: Option<Spanned<IsolationLevel>>,
    /// `trigger "pull_request_target" …`: the events an exported workflow runs on; none means
    /// `pull_request_target` with its default activity types.
    pub triggers: Vec<Trigger>,
    /// Name → index, for lookups in constant time (filled by [`Pipeline::index`]).
    #[serde(skip)]
    #[schemars(skip)]
    stage_index: rustc_hash::FxHashMap<String, usize>,
    #[serde(skip)]
    #[schemars(skip)]
    secret_index: rustc_hash::FxHashMap<String, usize>,
}

/// How much of the run-time isolation a pipeline requires (`docs/isolation.md`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum IsolationLevel {
    /// Every layer the platform has; what is missing is said once and recorded.
    #[default]
    BestEffort,
    /// Every layer, or the run does not start (exit 2).
    Strict,
}

/// `trigger "pull_request_target" types="opened synchronize" branches="main"`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Trigger {
    /// One of a registered platform's events (`Registry::event`), checked while lowering.
    pub event: Spanned<String>,
    /// The activity types (`opened`, `synchronize`, …), when the file says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub types: Option<Spanned<Vec<String>>>,
    /// The base-branch patterns, when the file says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branches: Option<Spanned<Vec<String>>>,
}

/// `input "pr" env="PR_NUMBER" type="int"`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Input {
    pub name: Spanned<String>,
    pub env: Option<Spanned<String>>,
    pub ty: Spanned<InputType>,
    pub pattern: Option<Spanned<String>>,
    pub default: Option<Spanned<String>>,
    /// Set by the forge (`repo`, `change`, …) rather than declared.
    pub builtin: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum InputType {
    String,
    Int,
    Bool,
    Sha,
}

/// `secret "conversation-key" env="…" min-bytes=32 on-missing="disable" { visible-to … }`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Secret {
    pub name: Spanned<String>,
    pub env: Spanned<String>,
    pub min_bytes: Option<Spanned<u64>>,
    pub on_missing: Spanned<OnMissing>,
    pub visible_to: Vec<Spanned<String>>,
    /// The `visible-to` node, for labels that point at the whole list.
    pub visible_to_span: Option<Span>,
    /// `can="pull-requests:write checks:write"`: what the secret can do on the forge, when the
    /// file says (the span is the property's value). Without it the secret can do anything on
    /// the forge, unless its kind is known to do nothing there: a model's key under its client's
    /// variable, or a key that seals and opens conversations (`permission::capability`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub can: Option<Spanned<Vec<Spanned<Permission>>>>,
    /// `environment="enroll-review"`: the platform's environment holding the secret, for
    /// `export`; `run` does not read it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub environment: Option<Spanned<String>>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum OnMissing {
    /// The run fails when the secret is not set.
    #[default]
    Fail,
    /// Stages that need it take their fallback, with a warning.
    Disable,
}

/// `forge "local"`, or a forge with its token (`token="forge-token"`): a registered forge kind.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Forge {
    /// The kind, as registered (`local`, …).
    pub kind: Spanned<String>,
    /// The secret the forge authenticates with, for kinds whose contract names a token.
    pub token: Option<Spanned<String>>,
    /// The kind's other properties (`api-url`, `dir`), typed by its contract.
    pub settings: Vec<Setting>,
}

/// One property of a forge, a store or a trust rule, typed by the kind's contract.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Setting {
    pub name: Spanned<String>,
    pub value: Spanned<Value>,
}

/// The value of the setting `name`, if set.
pub fn setting<'a>(settings: &'a [Setting], name: &str) -> Option<&'a Spanned<Value>> {
    settings
        .iter()
        .find(|s| s.name.value == name)
        .map(|s| &s.value)
}

impl Forge {
    pub fn setting(&self, name: &str) -> Option<&Spanned<Value>> {
        setting(&self.settings, name)
    }
}

/// `store "conversations" kind="local" { trust …; max-tries 10 }`: a registered store kind.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Store {
    pub name: Spanned<String>,
    /// The kind, as registered (`local`, …).
    pub kind: Spanned<String>,
    /// The blob name template (`name="review-{change}-{project}"`).
    pub blob_name: Option<Spanned<Template>>,
    /// The kind's other properties (`path`), typed by its contract.
    pub settings: Vec<Setting>,
    pub trust: Vec<TrustRule>,
    pub max_tries: Option<Spanned<u64>>,
    pub max_run_lookups: Option<Spanned<u64>>,
    pub retain_count: Option<Spanned<u64>>,
    pub retain_age: Option<Spanned<u64>>,
}

impl Store {
    pub fn setting(&self, name: &str) -> Option<&Spanned<Value>> {
        setting(&self.settings, name)
    }
}

/// A store's `trust` rule (`trust local=#true`, or the facts of a run: its configuration file,
/// event and branch): every fact it names must hold of a producer. Which facts a rule may name is the store kind's.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct TrustRule {
    pub span: Span,
    pub props: Vec<Setting>,
}

impl TrustRule {
    pub fn setting(&self, name: &str) -> Option<&Spanned<Value>> {
        setting(&self.props, name)
    }
}

/// `trusted "checkout" reason="…"`, `trusted "input" name="…" reason="…"`: a source from outside
/// the pipeline file that the pipeline vouches for, and why (principle 1, unknown is untrusted:
/// this is the only way to lift it).
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Trusted {
    pub span: Span,
    pub source: Spanned<TrustedSource>,
    /// The input vouched for (`name=`), for [`TrustedSource::Input`].
    pub input: Option<Spanned<String>>,
    pub reason: Spanned<String>,
}

/// What a `trusted` declaration names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum TrustedSource {
    /// The checkout's files: what the job checked out is the pipeline's own code (the base
    /// branch), not the change's.
    Checkout,
    /// One input read from the environment: what sets the variable is the pipeline's own.
    Input,
}

impl TrustedSource {
    pub fn name(self) -> &'static str {
        match self {
            Self::Checkout => "checkout",
            Self::Input => "input",
        }
    }
}

/// What makes a `trusted "checkout"` false (`Registry::checkout_contradiction`).
#[derive(Clone, Debug)]
pub enum CheckoutContradiction<'a> {
    /// A trigger whose job checks out the change.
    Trigger(&'a Trigger),
    /// A forge whose checkout is the change: its kind, and where the file names it (`None`:
    /// the default forge, named nowhere).
    Forge { kind: String, span: Option<Span> },
}

impl Pipeline {
    /// Whether a stage keeps blobs in the store `name` (`upload … to="name"`).
    pub fn keeps_in(&self, name: &str) -> bool {
        self.stages.iter().any(|s| {
            s.children.iter().any(|c| {
                c.props.iter().any(|prop| {
                    prop.name.value == "to"
                        && matches!(&prop.value.value, Value::Store(n) if n == name)
                })
            })
        })
    }

    /// The declaration that vouches for `source`, if any.
    pub fn trusts(&self, source: TrustedSource) -> Option<&Trusted> {
        self.trusted.iter().find(|t| t.source.value == source)
    }

    /// The declaration that vouches for input `name`, if any.
    pub fn trusts_input(&self, name: &str) -> Option<&Trusted> {
        self.trusted.iter().find(|t| {
            t.source.value == TrustedSource::Input
                && t.input.as_ref().is_some_and(|i| i.value == name)
        })
    }
}

/// `allow "check-id" finding="…" reason="…"`: the suppression of one finding, named by its id
/// ([`crate::finding::Finding::id`]).
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Allow {
    pub span: Span,
    pub check: Spanned<String>,
    pub finding: Option<Spanned<String>>,
    pub reason: Option<Spanned<String>>,
}

/// `stage "name" uses="std/…" { … }`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Stage {
    pub name: Spanned<String>,
    /// The span of the whole `stage` node's head (for findings about the stage).
    pub span: Span,
    pub uses: Spanned<String>,
    pub needs: Vec<Spanned<String>>,
    pub when: Option<Spanned<Expr>>,
    pub on_error: Spanned<OnError>,
    /// Milliseconds.
    pub timeout_ms: Option<Spanned<u64>>,
    pub permissions: Vec<Spanned<Permission>>,
    /// Where the stage's child may connect (`network="443"`, `network="api.example.com:443"`);
    /// none by default.
    pub network: Vec<Spanned<NetEntry>>,
    /// Overrides of the contract's fallback values (`fallback clean=#true`).
    pub fallback: Vec<FallbackOverride>,
    pub allows: Vec<Allow>,
    /// Contract-defined children, in file order.
    pub children: Vec<Child>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum OnError {
    /// The run fails.
    #[default]
    Fail,
    /// The contract's fallback outputs stand in; the run goes on and says why.
    Fallback,
    /// The stage counts as skipped; stages that need it are skipped too.
    Skip,
}

/// `fallback clean=#false`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct FallbackOverride {
    pub output: Spanned<String>,
    pub value: Spanned<bool>,
}

/// A forge permission, `pull-requests:write`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Permission {
    pub scope: String,
    pub access: Access,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Access {
    Read,
    Write,
}

impl std::fmt::Display for Permission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let access = match self.access {
            Access::Read => "read",
            Access::Write => "write",
        };
        write!(f, "{}:{access}", self.scope)
    }
}

/// One child of a stage, typed by the stage's contract.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Child {
    pub name: Spanned<String>,
    pub args: Vec<Spanned<Value>>,
    pub props: Vec<Prop>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Prop {
    pub name: Spanned<String>,
    pub value: Spanned<Value>,
}

impl Child {
    pub fn prop(&self, name: &str) -> Option<&Spanned<Value>> {
        self.props
            .iter()
            .find(|p| p.name.value == name)
            .map(|p| &p.value)
    }

    /// Every value of the child: arguments, then properties.
    pub fn values(&self) -> impl Iterator<Item = &Spanned<Value>> {
        self.args.iter().chain(self.props.iter().map(|p| &p.value))
    }
}

impl Stage {
    pub fn children_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Child> {
        self.children.iter().filter(move |c| c.name.value == name)
    }

    /// Every reference the stage reads: in its children (directly or interpolated) and in `when`.
    pub fn references(&self) -> Vec<&Reference> {
        let mut out = Vec::new();
        for child in &self.children {
            for value in child.values() {
                value.value.collect_references(&mut out);
            }
        }
        if let Some(when) = &self.when {
            when.value.collect_references(&mut out);
        }
        out
    }

    /// Every secret the stage names, with the span where it names it.
    pub fn secrets_named(&self) -> Vec<Spanned<&str>> {
        let mut out = Vec::new();
        for child in &self.children {
            for value in child.values() {
                if let Value::Secret(name) = &value.value {
                    out.push(Spanned::new(name.as_str(), value.span));
                }
            }
        }
        out
    }

    pub fn timeout(&self) -> Option<std::time::Duration> {
        self.timeout_ms
            .as_ref()
            .map(|t| std::time::Duration::from_millis(t.value))
    }
}

impl Pipeline {
    /// Builds the name indexes; call after the stages and secrets are final.
    pub fn index(&mut self) {
        self.stage_index = self
            .stages
            .iter()
            .enumerate()
            .map(|(i, s)| (s.name.value.clone(), i))
            .collect();
        self.secret_index = self
            .secrets
            .iter()
            .enumerate()
            .map(|(i, s)| (s.name.value.clone(), i))
            .collect();
    }

    pub fn stage(&self, name: &str) -> Option<&Stage> {
        self.stage_index.get(name).map(|&i| &self.stages[i])
    }

    pub fn secret_position(&self, name: &str) -> Option<usize> {
        self.secret_index.get(name).copied()
    }

    pub fn secret(&self, name: &str) -> Option<&Secret> {
        self.secret_position(name).map(|i| &self.secrets[i])
    }

    pub fn store(&self, name: &str) -> Option<&Store> {
        self.stores.iter().find(|s| s.name.value == name)
    }

    pub fn input(&self, name: &str) -> Option<&Input> {
        self.inputs.iter().find(|s| s.name.value == name)
    }
}

/// One entry of a stage's `network`: a TCP port to any host, in the host's network (`443`), or a
/// host and port reached through reviewflow's egress proxy (`api.example.com:443`,
/// docs/egress.md).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct NetEntry {
    pub host: Option<String>,
    pub port: u16,
}

impl std::fmt::Display for NetEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.host {
            Some(host) if host.contains(':') => write!(f, "[{host}]:{}", self.port),
            Some(host) => write!(f, "{host}:{}", self.port),
            None => write!(f, "{}", self.port),
        }
    }
}

impl Stage {
    /// Whether the stage's children share the host's network (a bare port in `network`), as
    /// opposed to reaching only declared hosts through the egress proxy, or nothing.
    pub fn host_network(&self) -> bool {
        self.network.iter().any(|e| e.value.host.is_none())
    }
}
