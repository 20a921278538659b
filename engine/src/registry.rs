//! The kinds a pipeline may use, by name: stage kinds (`uses=`), forge kinds (`forge "…"`) and
//! store kinds (`kind=`), and the platforms a run may happen on (docs/platforms.md). The engine registers `run`; the stdlib adds `std/*`, its forges and its
//! stores, and says which forge and store a pipeline gets when it names none. The stdlib also
//! registers its credential detectors, which `check` runs on the values written in the file (an
//! input's `default`): the engine has none of its own.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::contract::{ForgeContract, StageContract, StoreContract};
use crate::model::{CheckoutContradiction, Pipeline, Trusted, TrustedSource};
use crate::platform::{Event, EventRuns, FindingsFormat, Lookup, Platform, Scope, Syntax, Words};

/// Recognises a credential in a text. The stdlib registers `std/scan`'s pattern detectors
/// (forge, cloud and model vendors' tokens, JWTs, private keys), so that `check` and `std/scan`
/// agree on what a credential looks like.
pub trait CredentialDetector: Send + Sync {
    /// The detector's id, as `detect "…"` names it (`jwt`).
    fn id(&self) -> &str;
    /// What a match is, for messages: "a JSON Web Token".
    fn label(&self) -> &str;
    /// Whether `text` holds such a credential.
    fn detects(&self, text: &[u8]) -> bool;
}

/// The registered detectors, in registration order.
#[derive(Clone, Default)]
struct Detectors(Vec<Arc<dyn CredentialDetector>>);

impl std::fmt::Debug for Detectors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|d| d.id()))
            .finish()
    }
}

/// The registered platforms.
#[derive(Clone, Debug, Default)]
struct Platforms(Vec<Arc<dyn Platform>>);

#[derive(Clone, Debug, Default)]
pub struct Registry {
    contracts: BTreeMap<String, StageContract>,
    forges: BTreeMap<String, ForgeContract>,
    stores: BTreeMap<String, StoreContract>,
    default_forge: Option<String>,
    default_store: Option<String>,
    detectors: Detectors,
    /// In registration order: the first one detected gives a run its console.
    platforms: Platforms,
    /// The ceiling of a built-in lens by its name (one of
    /// [`crate::contract::REVIEW_SEVERITIES`]): compiled in, so `check` knows the most severe
    /// finding each lets through. A function, asked only when a check needs it.
    lens_ceilings: Option<fn(&str) -> Option<&'static str>>,
    /// The ceiling a lens file's text declares, read by the same parser `run` uses: `None` for
    /// a file that is no lens.
    lens_file_ceiling: Option<fn(&str) -> Option<&'static str>>,
}

impl Registry {
    /// An empty registry (no kinds at all).
    pub fn empty() -> Self {
        Self::default()
    }

    /// The engine's own kinds: `run`.
    pub fn with_builtins() -> Self {
        let mut r = Self::empty();
        r.register(crate::builtin::run::contract());
        r
    }

    /// Adds or replaces a stage kind.
    pub fn register(&mut self, contract: StageContract) {
        self.contracts.insert(contract.kind.clone(), contract);
    }

    /// Adds or replaces a forge kind.
    pub fn register_forge(&mut self, contract: ForgeContract) {
        self.forges.insert(contract.kind.clone(), contract);
    }

    /// Adds or replaces a store kind.
    pub fn register_store(&mut self, contract: StoreContract) {
        self.stores.insert(contract.kind.clone(), contract);
    }

    /// Adds a credential detector (one with the same id is replaced).
    pub fn register_detector(&mut self, detector: Arc<dyn CredentialDetector>) {
        let detectors = &mut self.detectors.0;
        match detectors.iter().position(|d| d.id() == detector.id()) {
            Some(i) => detectors[i] = detector,
            None => detectors.push(detector),
        }
    }

    /// Adds a platform (one with the same name is replaced).
    pub fn register_platform(&mut self, platform: Arc<dyn Platform>) {
        let platforms = &mut self.platforms.0;
        match platforms.iter().position(|p| p.name() == platform.name()) {
            Some(i) => platforms[i] = platform,
            None => platforms.push(platform),
        }
    }

    /// The registered platforms, in registration order.
    pub fn platforms(&self) -> impl Iterator<Item = &Arc<dyn Platform>> {
        self.platforms.0.iter()
    }

    /// The trigger event of that name, from the platform that lists it first.
    pub fn event(&self, name: &str) -> Option<&'static Event> {
        self.platforms()
            .flat_map(|p| p.events().iter())
            .find(|e| e.name == name)
    }

    /// The words of the platform that lists event `name` first ([`Words::GENERIC`] for an event
    /// none lists): what a message about that event speaks of.
    pub fn words_of(&self, event: &str) -> &'static Words {
        self.platforms()
            .find(|p| p.events().iter().any(|e| e.name == event))
            .map_or(&Words::GENERIC, |p| p.words())
    }

    /// Every trigger event the registered platforms list.
    pub fn events(&self) -> impl Iterator<Item = &'static Event> + '_ {
        self.platforms().flat_map(|p| p.events().iter())
    }

    /// The event a review of a change with secrets runs on: the first about a change whose job
    /// runs the base's configuration. Without a `trigger`, `check` reasons as if the pipeline
    /// ran on it.
    pub fn change_event(&self) -> Option<&'static Event> {
        self.events()
            .find(|e| e.about_a_change() && e.runs == EventRuns::Base)
    }

    /// The event a review with secrets runs on beside event `name`, on the platform that lists
    /// it: that platform's first event whose job runs the base's configuration, one about a
    /// change first; none if it has none. For an event no platform lists,
    /// [`Registry::change_event`]. What a fix names, so that it names an event of the platform
    /// the pipeline's trigger is on.
    pub fn base_event_beside(&self, name: &str) -> Option<&'static Event> {
        let Some(platform) = self
            .platforms()
            .find(|p| p.events().iter().any(|e| e.name == name))
        else {
            return self.change_event();
        };
        let events = platform.events();
        events
            .iter()
            .find(|e| e.about_a_change() && e.runs == EventRuns::Base)
            .or_else(|| events.iter().find(|e| e.runs == EventRuns::Base))
    }

    /// The syntax of the platform that lists event `name` ([`Platform::syntax`]).
    pub fn event_syntax(&self, name: &str) -> Option<&'static Syntax> {
        self.platforms()
            .find(|p| p.events().iter().any(|e| e.name == name))
            .and_then(|p| p.syntax())
    }

    /// The syntax of the first registered platform that has one: where a secret's
    /// `environment=` is written.
    pub fn syntax(&self) -> Option<&'static Syntax> {
        self.platforms().find_map(|p| p.syntax())
    }

    /// The job token's scope of that name, from the platform that lists it first.
    pub fn scope(&self, name: &str) -> Option<&'static Scope> {
        self.scopes().find(|s| s.name == name)
    }

    /// Every scope of a job token the registered platforms list.
    pub fn scopes(&self) -> impl Iterator<Item = &'static Scope> + '_ {
        self.platforms().flat_map(|p| p.scopes().iter())
    }

    /// The platform whose jobs run `pipeline`, which `export` writes for: its forge's, or, for a
    /// pipeline that names no forge, the first registered platform (what `export` takes it to
    /// run on). `None` for a forge that names no platform (a person's machine).
    pub fn platform_of(&self, pipeline: &Pipeline) -> Option<&Arc<dyn Platform>> {
        let Some(forge) = &pipeline.forge else {
            return self.platforms().next();
        };
        let name = self.forge(&forge.kind.value)?.platform.as_deref()?;
        self.platforms().find(|p| p.name() == name)
    }

    /// The `trusted "checkout"` that holds: none when something the pipeline runs on says the
    /// checkout is the change itself ([`Registry::checkout_contradiction`]), which the
    /// declaration cannot vouch for.
    pub fn checkout_vouched<'p>(&self, pipeline: &'p Pipeline) -> Option<&'p Trusted> {
        pipeline
            .trusts(TrustedSource::Checkout)
            .filter(|_| self.checkout_contradiction(pipeline).is_none())
    }

    /// Why the checkout is the change itself, whatever a `trusted "checkout"` says: a declared
    /// trigger whose job does not check out the base (its platform's
    /// [`crate::platform::EventRuns`]: the change's own, or any ref; an unknown event is
    /// neither),
    /// or a forge that does not say its job may check out something else
    /// ([`crate::contract::ForgeContract::checkout_may_be_base`]; an unknown forge says nothing).
    pub fn checkout_contradiction<'p>(
        &self,
        pipeline: &'p Pipeline,
    ) -> Option<CheckoutContradiction<'p>> {
        if let Some(trigger) = pipeline.triggers.iter().find(|t| {
            self.event(&t.event.value)
                .is_none_or(|e| e.runs != crate::platform::EventRuns::Base)
        }) {
            return Some(CheckoutContradiction::Trigger(trigger));
        }
        let kind = match &pipeline.forge {
            Some(f) => f.kind.value.clone(),
            None => self.default_forge().unwrap_or_default().to_owned(),
        };
        let holds = self.forge(&kind).is_some_and(|f| f.checkout_may_be_base);
        (!holds).then(|| CheckoutContradiction::Forge {
            kind,
            span: pipeline.forge.as_ref().map(|f| f.kind.span),
        })
    }

    /// What a registered platform's runner reads back from the file variable `name` names, if
    /// it is one of a job's settings files.
    pub fn settings_file(&self, name: &str) -> Option<&'static str> {
        self.platforms().find_map(|p| p.settings_file(name))
    }

    /// The platform the environment says the run is on, if any.
    pub fn detect_platform(&self, var: Lookup<'_>) -> Option<Arc<dyn Platform>> {
        self.platforms().find(|p| p.detected(var)).cloned()
    }

    /// The findings formats of the registered platforms (`check --format <name>`).
    pub fn findings_formats(&self) -> impl Iterator<Item = FindingsFormat> + '_ {
        self.platforms().filter_map(|p| p.findings())
    }

    /// The credential detectors, in registration order (none in an engine-only registry).
    pub fn detectors(&self) -> impl Iterator<Item = &dyn CredentialDetector> {
        self.detectors.0.iter().map(|d| d.as_ref())
    }

    /// The first detector that finds a credential in `text`.
    pub fn detect(&self, text: &[u8]) -> Option<&dyn CredentialDetector> {
        self.detectors().find(|d| d.detects(text))
    }

    /// The forge kind of a pipeline without a `forge` node.
    /// Registers where the built-in lenses' ceilings are read.
    pub fn register_lens_ceilings(&mut self, ceilings: fn(&str) -> Option<&'static str>) {
        self.lens_ceilings = Some(ceilings);
    }

    /// The ceiling of the built-in lens `name`.
    pub fn lens_ceiling(&self, name: &str) -> Option<&'static str> {
        self.lens_ceilings.and_then(|f| f(name))
    }

    /// Registers how a lens file's ceiling is read from its text (principle 7: `run`'s parser).
    pub fn register_lens_file_ceiling(&mut self, ceiling: fn(&str) -> Option<&'static str>) {
        self.lens_file_ceiling = Some(ceiling);
    }

    /// The ceiling the lens file `text` declares, if it is a lens.
    pub fn lens_file_ceiling(&self, text: &str) -> Option<&'static str> {
        self.lens_file_ceiling.and_then(|f| f(text))
    }

    pub fn set_default_forge(&mut self, kind: &str) {
        self.default_forge = Some(kind.into());
    }

    /// The store kind of a `store` node without `kind=`.
    pub fn set_default_store(&mut self, kind: &str) {
        self.default_store = Some(kind.into());
    }

    pub fn get(&self, kind: &str) -> Option<&StageContract> {
        self.contracts.get(kind)
    }

    pub fn kinds(&self) -> impl Iterator<Item = &str> {
        self.contracts.keys().map(String::as_str)
    }

    pub fn contracts(&self) -> impl Iterator<Item = &StageContract> {
        self.contracts.values()
    }

    pub fn forge(&self, kind: &str) -> Option<&ForgeContract> {
        self.forges.get(kind)
    }

    /// The contract of the forge `pipeline` names, if it names a registered one.
    pub fn forge_of(&self, pipeline: &Pipeline) -> Option<&ForgeContract> {
        self.forge(&pipeline.forge.as_ref()?.kind.value)
    }

    pub fn forges(&self) -> impl Iterator<Item = &ForgeContract> {
        self.forges.values()
    }

    pub fn store(&self, kind: &str) -> Option<&StoreContract> {
        self.stores.get(kind)
    }

    pub fn stores(&self) -> impl Iterator<Item = &StoreContract> {
        self.stores.values()
    }

    pub fn default_forge(&self) -> Option<&str> {
        self.default_forge.as_deref()
    }

    pub fn default_store(&self) -> Option<&str> {
        self.default_store.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_base_event_is_the_one_of_the_triggers_platform() {
        let mut registry = Registry::with_builtins();
        assert!(registry.base_event_beside("by-hand").is_none());
        registry.register_platform(Arc::new(crate::platform::testing::TestPlatform));
        for name in ["by-hand", "change-own", "change-base", "unlisted"] {
            assert_eq!(
                registry.base_event_beside(name).map(|e| e.name),
                Some("change-base"),
                "{name}"
            );
        }
    }
}
