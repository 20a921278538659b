//! Store contracts: what a `store "name" kind="…"` node accepts, how its `trust` rules name a
//! producer, and which caps a reader should set. The stdlib registers each store kind with its
//! implementation.

use schemars::JsonSchema;
use serde::Serialize;

use super::{Bound, PropSpec, ValueType};
use crate::model::TrustRule;
use crate::span::Span;

/// The most trusted blobs a restore may be told to try (`max-tries`), of every store kind.
pub const MAX_TRIES: Bound = Bound::count(
    0,
    20,
    "each try fetches a blob a trusted producer kept, up to restore's `max-bytes`, and opens it: at 20 a flood costs at most 20 fetches per review, twice the default of 10",
);

/// How many entries a store's `retain` keeps: pruning has no upper end to keep.
pub const RETAIN_COUNT: Bound = Bound::count(
    1,
    u64::MAX,
    "a store that keeps no entry keeps nothing a later review could resume",
);

/// How old an entry a store's `retain` keeps may be.
pub const RETAIN_AGE: Bound = Bound::millis(
    1_000,
    u64::MAX,
    "a store that keeps no entry a second old keeps nothing a later review could resume",
);

/// The contract of one store kind (`kind="…"`).
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct StoreContract {
    /// The name given in `kind=`.
    pub kind: String,
    /// One line: where blobs are kept.
    pub summary: String,
    /// Properties of the `store` node besides `kind` and `name`.
    pub props: Vec<PropSpec>,
    /// Properties of a `trust` rule: each names one fact about a producer.
    pub trust: Vec<PropSpec>,
    /// A `trust` rule to suggest when a read store has none.
    pub trust_example: String,
    /// Producers are looked up one by one: the store takes `max-run-lookups`, and a reader
    /// should set it.
    pub lookups: bool,
    /// The most look-ups `max-run-lookups` may ask for, and why: each costs the run's token a
    /// call of its budget, which is the kind's to know.
    pub lookup_bound: Option<Bound>,
    /// The store can remove old entries: it takes `retain count=… age=…`.
    pub retain: bool,
    /// The platform keeps its blobs beyond the job that kept them (an exported pipeline's jobs
    /// may hand them on here); otherwise they stay on the machine that ran the job.
    pub outlives_the_job: bool,
    /// The kind's judgement of its `trust` rules beyond "there is one": the rules a producer
    /// the change's author can start satisfies, if the kind can tell (`trust` reports each).
    #[serde(skip)]
    #[schemars(skip)]
    pub rule_judge: Option<RuleJudge>,
    /// Why `run` refuses a blob name once the name's inputs are filled in (`store`, the blob
    /// name), if it does: the function the run calls, so that `check` (`run-refusal`) reports
    /// it with the same words, tried with the most hostile values the inputs admit.
    #[serde(skip)]
    #[schemars(skip)]
    pub name_refusal: Option<NameRefusal>,
    /// The forge kind the store is kept through (its API, with its token), if any: `run`
    /// refuses to open it in a pipeline on another forge ([`StoreContract::forge_refusal`]).
    #[serde(skip)]
    #[schemars(skip)]
    pub kept_by: Option<KeptBy>,
}

/// The forge a store kind is kept through, and what the store keeps there, in words.
#[derive(Clone, Copy, Debug)]
pub struct KeptBy {
    pub forge: &'static str,
    /// What the store keeps there, in words ("artifacts of … runs").
    pub what: &'static str,
}

/// A store kind's judgement of store `store`'s `trust` rules: one flaw for each rule a producer
/// the change's author can start satisfies (principle 1: such a producer vouches for nothing).
pub type RuleJudge = fn(store: &str, rules: &[TrustRule]) -> Vec<RuleFlaw>;

/// Why a `trust` rule admits a producer the change's author can start, as `check` reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleFlaw {
    /// The fact of the rule that admits it (or the rule, when a fact is missing).
    pub span: Span,
    pub message: String,
    /// The label at `span`.
    pub label: String,
    /// The rule that would admit only the kind's own producers.
    pub help: String,
}

/// A store kind's refusal of a filled-in blob name of store `store`: why, if it is refused.
pub type NameRefusal = fn(store: &str, name: &str) -> Option<String>;

impl StoreContract {
    pub fn new(kind: &str, summary: &str) -> Self {
        Self {
            kind: kind.into(),
            summary: summary.into(),
            props: Vec::new(),
            trust: Vec::new(),
            trust_example: String::new(),
            lookups: false,
            lookup_bound: None,
            retain: false,
            outlives_the_job: false,
            rule_judge: None,
            name_refusal: None,
            kept_by: None,
        }
    }

    pub fn name_refusal(mut self, refusal: NameRefusal) -> Self {
        self.name_refusal = Some(refusal);
        self
    }

    /// A property of the `store` node.
    pub fn prop(mut self, name: &str, ty: ValueType, doc: &str) -> Self {
        self.props.push(PropSpec::optional(name, ty, doc));
        self
    }

    /// A property of its `trust` rules.
    pub fn trust(mut self, name: &str, ty: ValueType, doc: &str) -> Self {
        self.trust.push(PropSpec::optional(name, ty, doc));
        self
    }

    pub fn trust_example(mut self, example: &str) -> Self {
        self.trust_example = example.into();
        self
    }

    /// Producers are looked up one by one, at most `bound` times a read ([`Self::lookups`]).
    pub fn lookups(mut self, bound: Bound) -> Self {
        self.lookups = true;
        self.lookup_bound = Some(bound);
        self
    }

    pub fn retain(mut self) -> Self {
        self.retain = true;
        self
    }

    pub fn rule_judge(mut self, judge: RuleJudge) -> Self {
        self.rule_judge = Some(judge);
        self
    }

    pub fn outlives_the_job(mut self) -> Self {
        self.outlives_the_job = true;
        self
    }

    /// The store is kept through forge kind `forge` ([`StoreContract::kept_by`]).
    pub fn kept_by(mut self, forge: &'static str, what: &'static str) -> Self {
        self.kept_by = Some(KeptBy { forge, what });
        self
    }

    /// Why `run` refuses to open store `name` of this kind in a pipeline on forge kind `forge`,
    /// if it does: the words `run` says and `check` reports (`run-refusal`).
    pub fn forge_refusal(&self, name: &str, forge: &str) -> Option<String> {
        let kept = self.kept_by?;
        (kept.forge != forge).then(|| {
            format!(
                "store `{name}` keeps {}: it needs `forge \"{}\"`, not `{forge}`",
                kept.what, kept.forge
            )
        })
    }

    /// The children a `store` node of this kind accepts.
    pub fn children(&self) -> Vec<&'static str> {
        let mut c = vec!["trust", "max-tries"];
        if self.lookups {
            c.push("max-run-lookups");
        }
        if self.retain {
            c.push("retain");
        }
        c
    }

    pub fn prop_spec(&self, name: &str) -> Option<&PropSpec> {
        self.props.iter().find(|p| p.name == name)
    }

    pub fn trust_spec(&self, name: &str) -> Option<&PropSpec> {
        self.trust.iter().find(|p| p.name == name)
    }
}
