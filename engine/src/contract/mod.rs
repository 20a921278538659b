//! Stage contracts: what a stage kind accepts, what it produces, how labels flow through it,
//! what it falls back to, which secrets and permissions it may hold, and what it does to the
//! world. The engine reads contracts as data; the stdlib supplies them.

mod bound;
mod forge;
mod reviewer;
mod store;

pub use bound::{Bound, Unit};
pub use forge::{BelievedAuthors, ForgeContract, ForgeRefusal};
pub use reviewer::{COMMON_SETTINGS, ReviewerKind};
pub use store::{MAX_TRIES, RETAIN_AGE, RETAIN_COUNT, RuleFlaw, RuleJudge, StoreContract};

use schemars::JsonSchema;
use serde::Serialize;

/// The contract of one stage kind (`uses="std/seal"`).
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct StageContract {
    /// The name a stage gives in `uses=`.
    pub kind: String,
    /// One line: what the stage does.
    pub summary: String,
    /// Children the stage accepts.
    pub children: Vec<ChildSpec>,
    /// Named outputs other stages can reference as `stage.output`.
    pub outputs: Vec<OutputSpec>,
    /// When set, the stage's outputs are declared by its children of this name (`run`'s `output`).
    pub outputs_from_child: Option<String>,
    /// Output values when the stage fails under `on-error="fallback"` or is disabled.
    pub fallback: Vec<FallbackSpec>,
    /// Forge permissions the stage may need (`pull-requests:write`).
    pub permissions: Vec<String>,
    /// What the stage does outside the run.
    pub effects: Vec<Effect>,
    /// An opaque stage (an arbitrary command): every output carries every input label and
    /// every secret the stage holds.
    pub opaque: bool,
    /// A guard: this boolean output vouches for the values given to this child
    /// (`std/scan`'s `clean` vouches for its `target`s).
    pub vets: Option<Vets>,
    /// The reviewers the stage runs, named by its `reviewer` child (`std/review`); empty for
    /// a stage that runs none.
    pub reviewer_kinds: &'static [ReviewerKind],
    /// What the stage kind refuses in its settings before it runs anything, decidable from the
    /// file: the same function the stage calls when it starts, so that `check` reports it with
    /// the words `run` would use (`run-refusal`, docs/checks.md, principle 7).
    #[serde(skip)]
    #[schemars(skip)]
    pub refusals: Option<SettingsRefusals>,
}

/// A stage kind's refusals of a stage's settings: each with where it is and why.
pub type SettingsRefusals = fn(&crate::model::Stage) -> Vec<(crate::span::Span, String)>;

/// `output` vouches for what the stage reads through `child`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Vets {
    pub child: String,
    pub output: String,
    /// A setting child whose words choose what the verdict covers, all of them when it is left
    /// out (`std/scan`'s `detect`): written with fewer words, the verdict promises less than its
    /// name says (principle 4).
    pub narrowed_by: Option<String>,
}

/// The severities of a review's findings, least severe first (a lens's `ceiling`, `std/post`'s
/// `block-on`).
pub const REVIEW_SEVERITIES: [&str; 3] = ["info", "warning", "error"];

/// The rank of a review severity in [`REVIEW_SEVERITIES`] (`None` for another word).
pub fn review_severity_rank(word: &str) -> Option<usize> {
    REVIEW_SEVERITIES.iter().position(|s| *s == word)
}

/// What a child's word makes the least severe finding that fails a verdict
/// ([`ChildSpec::blocks_from`]).
#[derive(Clone, Copy, Debug, Serialize, JsonSchema)]
pub struct BlocksFrom {
    /// The word that applies when the child is left out.
    pub default: &'static str,
    /// Each word and the least severe finding (one of [`REVIEW_SEVERITIES`]) that fails the
    /// verdict under it; a word not listed fails nothing (`never`: [`ChildSpec::cannot_fail`]).
    pub from: &'static [(&'static str, &'static str)],
}

/// One child node a stage accepts, e.g. `key "conversation-key"`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct ChildSpec {
    pub name: String,
    pub doc: String,
    /// Type of each positional argument; the last repeats when `max_args` allows more.
    pub args: Vec<ValueType>,
    pub min_args: usize,
    /// `None`: unbounded.
    pub max_args: Option<usize>,
    pub props: Vec<PropSpec>,
    /// When set, any other property is accepted with this type (`bind repo=… project=…`).
    pub open_props: Option<ValueType>,
    pub required: bool,
    pub repeatable: bool,
    /// Where the values end up; decides which flow checks apply.
    pub role: Role,
    /// The slot's type: the output types a reference argument may name (`upload` takes a
    /// `blob`, `std/seal`'s `input` a `conversation`); empty when any output will do.
    pub accepts: Vec<OutputType>,
    /// The stage hands these values to the program it runs fenced as data (per-run nonce
    /// markers around each), never mixed with its instructions: the one channel of a reviewer
    /// that untrusted text may take (`std/review`'s `untrusted`).
    pub fences: bool,
    /// The value is a commit whose tree the stage's program works in (`std/review`'s
    /// `workspace`): the program reads that commit's files, in CI the change's (principle 1).
    pub working_tree: bool,
    /// A fenced slot for what a resumed try reads instead of the stage's subject (`std/review`'s
    /// `since-last-review`): a part of the change is what it is for. Every other fenced slot is
    /// the subject, which a fresh try reviews whole (principle 4).
    pub delta: bool,
    /// The value narrows what the stage gathers (`std/gather`'s `path`): an input in it chooses
    /// which part of the change a run reviews, so the review a run publishes is keyed by it
    /// (principle 4, the `duplicate-publisher` check).
    pub narrows: bool,
    /// The value is all the forge keys a record by, beside the head (`std/post`'s `check-run`:
    /// a check run is found by its name): runs that write the same value on one head replace
    /// each other's record, so it holds every input that tells such runs apart (principle 4,
    /// the `duplicate-publisher` check).
    pub names_record: bool,
    /// Written (with any word but these), the stage publishes a verdict on the whole head,
    /// whatever part of the change was reviewed: `std/aggregate`'s `approve` (a pull request is
    /// approved whole; `never` approves nothing) and `std/post`'s `check-run` (a check run passes
    /// or fails the head). A review cut by `path` publishes neither as the change's (principle
    /// 4, `fail-closed`).
    pub claims_whole: Option<&'static [&'static str]>,
    /// Written with one of these words, the verdict the stage publishes cannot fail
    /// (`std/post`'s `block-on "never"`: the check run passes whatever the review found), which
    /// a check run a forge can require must not do unsaid (principle 4, `fail-closed`).
    pub cannot_fail: &'static [&'static str],
    /// Written with one of these words, the stage fails a review that did not run: it publishes
    /// an absent value of its `Publish` children as "not reviewed" with a failing verdict, and
    /// then fails the run (`std/post`'s `not-reviewed "fail"`). A producer whose absence it reads
    /// straight is then routed, as a stage that fails the run is (principle 4, `fail-closed`).
    pub fails_not_reviewed: &'static [&'static str],
    /// Written with this property, the child halts the run on a change too large to be read
    /// whole (`std/gather`'s `gate halt=`): a stage kind that offers it gathers a change of any
    /// size without it, and an approval of such a change claims more than a reviewer can have
    /// read (principle 4, `fail-closed`).
    pub halts: Option<&'static str>,
    /// The least severe finding of a review that fails the verdict the stage publishes, by the
    /// word the child is written with (`std/post`'s `block-on`: `error` when left out). Where
    /// no finding that reaches the stage can be that severe (every lens capped below it), the
    /// verdict cannot fail (principle 4, `fail-closed`).
    pub blocks_from: Option<BlocksFrom>,
    /// The stage refuses a head unless the forge says one of these wrote it (`std/post`'s
    /// `require-author`): it holds only on a forge that authenticates authors
    /// ([`ForgeContract::vouches_for_authors`]; principle 4, `fail-closed`).
    pub gates_on_author: bool,
    /// The stage reads the value itself and never hands it to the program it runs
    /// (`std/review`'s `reviewer-vendor-differs-from`). Undeclared, a value is taken to reach the
    /// program (principle 1).
    pub read_by_the_stage: bool,
}

/// A property of a child, e.g. `to="conversations"`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct PropSpec {
    pub name: String,
    pub ty: ValueType,
    pub required: bool,
    pub doc: String,
}

impl PropSpec {
    /// A property that may be left out.
    pub fn optional(name: &str, ty: ValueType, doc: &str) -> Self {
        Self {
            name: name.into(),
            ty,
            required: false,
            doc: doc.into(),
        }
    }
}

/// What a child's values are used for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// Data the stage reads (a diff, a conversation).
    Data,
    /// Settings (a path, a model name).
    Config,
    /// Words of a command line.
    CommandLine,
    /// Environment variables of a child process.
    Environment,
    /// The standard input of a child process.
    Stdin,
    /// A path the stage reads or writes (a working directory, an output file).
    Path,
    /// Names a secret the stage holds.
    SecretSlot,
    /// The fields a sealed blob is bound to (its AAD).
    Binding,
    /// Data the stage publishes (a comment, findings).
    Publish,
    /// Data the stage writes to a store.
    Keep,
}

/// The type of one argument or property value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case", tag = "type", content = "of")]
pub enum ValueType {
    String,
    /// A non-negative integer within its bound: every integer a stage, forge or store takes is a
    /// count or a size, and a limit (principle 4).
    Int(Bound),
    Bool,
    /// `"45m"`, `"10s"`, `"1h30m"`, within its bound (in milliseconds).
    Duration(Bound),
    /// A string that may interpolate `{input}` and `{stage.output}`.
    Template,
    /// `"stage.output"`.
    Reference,
    /// The name of a declared secret.
    Secret,
    /// The name of a declared store.
    Store,
    /// One of the listed words.
    Enum(Vec<String>),
}

impl ValueType {
    pub fn describe(&self) -> String {
        match self {
            Self::String => "a string".into(),
            Self::Int(bound) => format!("an integer {}", bound.range()),
            Self::Bool => "#true or #false".into(),
            Self::Duration(bound) => format!("a duration {}", bound.range()),
            Self::Template => "a string".into(),
            Self::Reference => "a reference \"stage.output\"".into(),
            Self::Secret => "the name of a secret".into(),
            Self::Store => "the name of a store".into(),
            Self::Enum(words) => format!("one of {}", quote_list(words)),
        }
    }
}

/// `"a", "b" or "c"`.
pub fn quote_list(words: &[String]) -> String {
    let quoted: Vec<String> = words.iter().map(|w| format!("\"{w}\"")).collect();
    match quoted.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

/// A named output.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct OutputSpec {
    pub name: String,
    pub ty: OutputType,
    pub doc: String,
    pub labels: LabelRule,
    /// It holds only a part of what the stage gathered (`std/gather`'s `since-last-review`:
    /// what changed since the last review): a review of it alone is not a review of the change.
    pub part: bool,
    /// It is the stage's verdict on what it read (`std/review`'s `clean`): a program that read
    /// the change chose it, and a stage that publishes the review must publish every verdict.
    pub verdict: bool,
    /// It names a commit of the change (`std/gather`'s `head`): its text is a commit id, but
    /// the tree at that commit is the change author's, so code fetched or built at it is theirs.
    pub change_commit: bool,
    /// A stage gated off by it (`when="!stage.output"`) is a skip the stage kinds that publish
    /// through the forge report as "not reviewed", naming the cause (`std/gather`'s `draft`):
    /// the gate routes that outcome, and `fail-closed` does not report it.
    pub skip_reported: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum OutputType {
    Bool,
    Int,
    Text,
    Sha,
    Diff,
    Ranges,
    Findings,
    Conversation,
    Blob,
    File,
    Json,
}

impl OutputType {
    pub fn name(self) -> &'static str {
        match self {
            Self::Bool => "bool",
            Self::Int => "int",
            Self::Text => "text",
            Self::Sha => "sha",
            Self::Diff => "diff",
            Self::Ranges => "ranges",
            Self::Findings => "findings",
            Self::Conversation => "conversation",
            Self::Blob => "blob",
            Self::File => "file",
            Self::Json => "json",
        }
    }

    /// The type in a sentence: "a blob", "text", "findings".
    pub fn describe(self) -> &'static str {
        match self {
            Self::Bool => "a bool",
            Self::Int => "an int",
            Self::Text => "text",
            Self::Sha => "a sha",
            Self::Diff => "a diff",
            Self::Ranges => "ranges",
            Self::Findings => "findings",
            Self::Conversation => "a conversation",
            Self::Blob => "a blob",
            Self::File => "a file",
            Self::Json => "json",
        }
    }
}

/// How information-flow labels pass from a stage's inputs to one output.
#[derive(Clone, Debug, Default, Serialize, JsonSchema)]
pub struct LabelRule {
    /// Which input labels reach this output.
    pub propagate: Propagate,
    /// Labels this output always carries.
    pub adding: Vec<LabelAdd>,
    /// Label kinds this output never carries (a declassifier removes `private`).
    pub removing: Vec<LabelKind>,
}

#[derive(Clone, Debug, Default, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case", tag = "from", content = "children")]
pub enum Propagate {
    /// Labels of every input of the stage.
    #[default]
    All,
    /// No input label (a fresh value, e.g. a boolean verdict).
    None,
    /// Labels of the values given to these children only.
    Children(Vec<String>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum LabelAdd {
    Untrusted,
    Private,
    /// `secret(k)` for every secret the stage holds.
    HeldSecrets,
    /// `secret(k)` for every secret the stage's program holds: every secret it holds but a
    /// credential of one of the contract's reviewer kinds given under that credential's own
    /// variable, which the run keeps behind its model API proxy (the program gets a stand-in).
    /// A reviewer's comment carries these: a prompt injection can make the program write one
    /// reversed or encoded, which no redactor recognises (docs/checks.md, principle 5).
    ProgramSecrets,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum LabelKind {
    Untrusted,
    Private,
    Secret,
}

/// The value an output takes when the stage falls back.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct FallbackSpec {
    pub output: String,
    pub value: FallbackValue,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "value")]
pub enum FallbackValue {
    Bool(bool),
    /// No value: consumers see the output as absent.
    Absent,
}

/// What a stage does outside the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Effect {
    /// Writes to a store (kept beyond the run).
    Keeps,
    /// Publishes to the forge (a comment, a check run).
    Publishes,
    /// Runs an arbitrary command.
    Executes,
    /// Reads from the forge or a store.
    Reads,
}

/// The outputs every stage has, whatever its kind.
pub const BUILTIN_OUTPUTS: &[(&str, OutputType, &str)] = &[(
    "ok",
    OutputType::Bool,
    "#true when the stage ran and succeeded (not skipped, not fallen back)",
)];

impl StageContract {
    pub fn new(kind: &str, summary: &str) -> Self {
        Self {
            kind: kind.into(),
            summary: summary.into(),
            children: Vec::new(),
            outputs: Vec::new(),
            outputs_from_child: None,
            fallback: Vec::new(),
            permissions: Vec::new(),
            effects: Vec::new(),
            opaque: false,
            vets: None,
            reviewer_kinds: &[],
            refusals: None,
        }
    }

    /// Registers what the kind refuses in a stage's settings (see [`Self::refusals`]).
    pub fn refusals(mut self, refusals: SettingsRefusals) -> Self {
        self.refusals = Some(refusals);
        self
    }

    pub fn child(mut self, child: ChildSpec) -> Self {
        self.children.push(child);
        self
    }

    pub fn output(mut self, name: &str, ty: OutputType, doc: &str, labels: LabelRule) -> Self {
        self.outputs.push(OutputSpec {
            name: name.into(),
            ty,
            doc: doc.into(),
            labels,
            part: false,
            verdict: false,
            change_commit: false,
            skip_reported: false,
        });
        self
    }

    /// Marks `output` as a gate whose skip is reported (see [`OutputSpec::skip_reported`]).
    pub fn skip_reported(mut self, output: &str) -> Self {
        if let Some(o) = self.outputs.iter_mut().find(|o| o.name == output) {
            o.skip_reported = true;
        }
        self
    }

    /// Marks `output` as a part of what the stage gathered (see [`OutputSpec::part`]).
    pub fn part(mut self, output: &str) -> Self {
        if let Some(o) = self.outputs.iter_mut().find(|o| o.name == output) {
            o.part = true;
        }
        self
    }

    /// Marks `output` as naming a commit of the change (see [`OutputSpec::change_commit`]).
    pub fn change_commit(mut self, output: &str) -> Self {
        if let Some(o) = self.outputs.iter_mut().find(|o| o.name == output) {
            o.change_commit = true;
        }
        self
    }

    /// Marks `output` as the stage's verdict (see [`OutputSpec::verdict`]).
    pub fn verdict(mut self, output: &str) -> Self {
        if let Some(o) = self.outputs.iter_mut().find(|o| o.name == output) {
            o.verdict = true;
        }
        self
    }

    pub fn fallback(mut self, output: &str, value: FallbackValue) -> Self {
        self.fallback.push(FallbackSpec {
            output: output.into(),
            value,
        });
        self
    }

    pub fn permission(mut self, permission: &str) -> Self {
        self.permissions.push(permission.into());
        self
    }

    pub fn effect(mut self, effect: Effect) -> Self {
        self.effects.push(effect);
        self
    }

    pub fn opaque(mut self) -> Self {
        self.opaque = true;
        self
    }

    pub fn vets(mut self, child: &str, output: &str) -> Self {
        self.vets = Some(Vets {
            child: child.into(),
            output: output.into(),
            narrowed_by: None,
        });
        self
    }

    /// The setting child whose words choose what the verdict covers, all of them by default.
    pub fn vets_narrowed_by(mut self, child: &str) -> Self {
        if let Some(v) = &mut self.vets {
            v.narrowed_by = Some(child.into());
        }
        self
    }

    pub fn outputs_from(mut self, child: &str) -> Self {
        self.outputs_from_child = Some(child.into());
        self
    }

    pub fn child_spec(&self, name: &str) -> Option<&ChildSpec> {
        self.children.iter().find(|c| c.name == name)
    }

    /// The children of `stage` whose slot plays `role` in this contract, in file order.
    pub fn children_in<'a>(
        &'a self,
        stage: &'a crate::model::Stage,
        role: Role,
    ) -> impl Iterator<Item = &'a crate::model::Child> + 'a {
        stage.children.iter().filter(move |c| {
            self.child_spec(&c.name.value)
                .is_some_and(|s| s.role == role)
        })
    }

    pub fn output_spec(&self, name: &str) -> Option<&OutputSpec> {
        self.outputs.iter().find(|o| o.name == name)
    }

    pub fn has_effect(&self, effect: Effect) -> bool {
        self.effects.contains(&effect)
    }
}

impl ChildSpec {
    pub fn new(name: &str, role: Role, doc: &str) -> Self {
        Self {
            name: name.into(),
            doc: doc.into(),
            args: Vec::new(),
            min_args: 0,
            max_args: Some(0),
            props: Vec::new(),
            open_props: None,
            required: false,
            repeatable: false,
            role,
            accepts: Vec::new(),
            fences: false,
            working_tree: false,
            delta: false,
            narrows: false,
            names_record: false,
            claims_whole: None,
            cannot_fail: &[],
            fails_not_reviewed: &[],
            halts: None,
            blocks_from: None,
            gates_on_author: false,
            read_by_the_stage: false,
        }
    }

    /// The stage reads the value itself (see [`ChildSpec::read_by_the_stage`]).
    pub fn read_by_the_stage(mut self) -> Self {
        self.read_by_the_stage = true;
        self
    }

    /// The value narrows what the stage gathers (see [`ChildSpec::narrows`]).
    pub fn narrows(mut self) -> Self {
        self.narrows = true;
        self
    }

    /// The value names a record the forge keys by it alone (see [`ChildSpec::names_record`]).
    pub fn names_record(mut self) -> Self {
        self.names_record = true;
        self
    }

    /// The value publishes a verdict on the whole head unless it is one of `off` (see
    /// [`ChildSpec::claims_whole`]).
    pub fn claims_whole(mut self, off: &'static [&'static str]) -> Self {
        self.claims_whole = Some(off);
        self
    }

    /// With one of `words`, the stage's published verdict cannot fail (see
    /// [`ChildSpec::cannot_fail`]).
    pub fn cannot_fail(mut self, words: &'static [&'static str]) -> Self {
        self.cannot_fail = words;
        self
    }

    /// With one of `words`, the stage fails a review that did not run (see
    /// [`ChildSpec::fails_not_reviewed`]).
    pub fn fails_not_reviewed(mut self, words: &'static [&'static str]) -> Self {
        self.fails_not_reviewed = words;
        self
    }

    /// Written with the property `prop`, the child halts a change too large to read whole (see
    /// [`ChildSpec::halts`]).
    pub fn halts(mut self, prop: &'static str) -> Self {
        self.halts = Some(prop);
        self
    }

    /// The word the child is written with sets the least severe finding that fails the
    /// stage's verdict (see [`ChildSpec::blocks_from`]).
    pub fn blocks_from(mut self, blocks: BlocksFrom) -> Self {
        self.blocks_from = Some(blocks);
        self
    }

    /// The stage refuses a head by who the forge says wrote it (see
    /// [`ChildSpec::gates_on_author`]).
    pub fn gates_on_author(mut self) -> Self {
        self.gates_on_author = true;
        self
    }

    /// A fenced slot for a part of the change (see [`ChildSpec::delta`]).
    pub fn delta(mut self) -> Self {
        self.delta = true;
        self
    }

    /// The value names the commit whose tree the program works in (see
    /// [`ChildSpec::working_tree`]).
    pub fn working_tree(mut self) -> Self {
        self.working_tree = true;
        self
    }

    /// The stage fences what it reads through this child (see [`ChildSpec::fences`]).
    pub fn fenced(mut self) -> Self {
        self.fences = true;
        self
    }

    /// Exactly one argument of this type.
    pub fn arg(mut self, ty: ValueType) -> Self {
        self.args = vec![ty];
        self.min_args = 1;
        self.max_args = Some(1);
        self
    }

    /// Positional arguments of these types, in order, all required.
    pub fn args(mut self, types: Vec<ValueType>) -> Self {
        self.min_args = types.len();
        self.max_args = Some(types.len());
        self.args = types;
        self
    }

    /// The last argument may be given again, any number of times (`secret-env "VAR" "a" "b"`).
    pub fn last_repeats(mut self) -> Self {
        self.max_args = None;
        self
    }

    /// One or more arguments of this type.
    pub fn many(mut self, ty: ValueType) -> Self {
        self.args = vec![ty];
        self.min_args = 1;
        self.max_args = None;
        self
    }

    /// Any number of arguments of this type, none included.
    pub fn any(mut self, ty: ValueType) -> Self {
        self = self.many(ty);
        self.min_args = 0;
        self
    }

    pub fn prop(mut self, name: &str, ty: ValueType, required: bool, doc: &str) -> Self {
        self.props.push(PropSpec {
            name: name.into(),
            ty,
            required,
            doc: doc.into(),
        });
        self
    }

    /// Accepts any property, with values of this type.
    pub fn open_props(mut self, ty: ValueType) -> Self {
        self.open_props = Some(ty);
        self
    }

    pub fn required(mut self) -> Self {
        self.required = true;
        self
    }

    pub fn repeatable(mut self) -> Self {
        self.repeatable = true;
        self
    }

    /// The output types its reference arguments may name: the slot's type.
    pub fn accepts(mut self, types: &[OutputType]) -> Self {
        self.accepts = types.to_vec();
        self
    }

    /// Whether a reference argument may name an output of type `ty`.
    pub fn takes(&self, ty: OutputType) -> bool {
        self.accepts.is_empty() || self.accepts.contains(&ty)
    }

    /// The type of the argument at `index`, the last one repeating.
    pub fn arg_type(&self, index: usize) -> Option<&ValueType> {
        self.args.get(index).or_else(|| {
            if self.max_args.is_none_or(|m| index < m) {
                self.args.last()
            } else {
                None
            }
        })
    }

    pub fn prop_spec(&self, name: &str) -> Option<&PropSpec> {
        self.props.iter().find(|p| p.name == name)
    }
}

impl LabelRule {
    pub fn all() -> Self {
        Self::default()
    }

    pub fn none() -> Self {
        Self {
            propagate: Propagate::None,
            ..Self::default()
        }
    }

    pub fn from_children(children: &[&str]) -> Self {
        Self {
            propagate: Propagate::Children(children.iter().map(|c| (*c).into()).collect()),
            ..Self::default()
        }
    }

    pub fn adding(mut self, label: LabelAdd) -> Self {
        self.adding.push(label);
        self
    }

    pub fn removing(mut self, kind: LabelKind) -> Self {
        self.removing.push(kind);
        self
    }
}
