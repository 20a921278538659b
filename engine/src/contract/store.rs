//! Store contracts: what a `store "name" kind="…"` node accepts, how its `trust` rules name a
//! producer, and which caps a reader should set. The stdlib registers each store kind with its
//! implementation.

use schemars::JsonSchema;
use serde::Serialize;

use super::{PropSpec, ValueType};

/// The contract of one store kind (`kind="github-artifacts"`).
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
    /// The store can remove old entries: it takes `retain count=… age=…`.
    pub retain: bool,
    /// Producers are GitHub Actions workflow runs, and a `trust` rule names their `workflow`,
    /// `event`, `branch` and `repository`: `check` asks of each rule whether the author of a pull
    /// request could start a run it admits.
    pub workflow_runs: bool,
    /// What `run` refuses of the store's caps (`max-tries`, `max-run-lookups`) before anything
    /// runs: the function the run calls when it opens the store, so that `check` (`trust`)
    /// reports it with the same words (principle 7).
    #[serde(skip)]
    #[schemars(skip)]
    pub cap_refusals: Option<StoreRefusals>,
    /// Why `run` refuses a blob name once the name's inputs are filled in (`store`, the blob
    /// name), if it does: the function the run calls, so that `check` (`run-refusal`) reports
    /// it with the same words, tried with the most hostile values the inputs admit.
    #[serde(skip)]
    #[schemars(skip)]
    pub name_refusal: Option<NameRefusal>,
}

/// A store kind's refusals of a store's settings: each with where it is and why.
pub type StoreRefusals = fn(&crate::model::Store) -> Vec<(crate::span::Span, String)>;

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
            retain: false,
            workflow_runs: false,
            cap_refusals: None,
            name_refusal: None,
        }
    }

    pub fn cap_refusals(mut self, refusals: StoreRefusals) -> Self {
        self.cap_refusals = Some(refusals);
        self
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

    pub fn lookups(mut self) -> Self {
        self.lookups = true;
        self
    }

    pub fn retain(mut self) -> Self {
        self.retain = true;
        self
    }

    pub fn workflow_runs(mut self) -> Self {
        self.workflow_runs = true;
        self
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
