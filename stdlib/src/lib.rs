//! reviewflow's standard library: the `std/*` stages, the local forge and store, the sealed
//! envelope, the credential detectors, the built-in `rules` reviewer and the platforms.
//!
//! The engine knows none of this: it reads the stage contracts that [`registry`] hands it.

pub mod aggregate;
pub mod conversation;
pub mod detect;
pub mod diff;
pub mod envelope;
pub mod forge;
pub mod gather;
pub mod git;
pub mod github;
pub mod gitlab;
pub mod kinds;
pub mod lens;
pub mod platform;
pub mod reviewer;
pub mod rules;
pub mod sarif;
pub mod stages;
pub mod store;

use reviewflow_engine::Registry;

/// The contracts of the engine's builtin kinds plus every `std/*` stage, forge and store.
pub fn registry() -> Registry {
    let mut registry = Registry::with_builtins();
    stages::register(&mut registry);
    kinds::register(&mut registry);
    detect::register(&mut registry);
    lens::register(&mut registry);
    platform::register(&mut registry);
    registry
}

/// The implementations of the engine's builtin kinds plus every `std/*` stage.
pub fn implementations() -> reviewflow_engine::run::Implementations {
    let mut implementations = reviewflow_engine::run::Implementations::with_builtins();
    stages::register_implementations(&mut implementations);
    implementations
}
