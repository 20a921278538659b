//! reviewflow's standard library: the `std/*` stages, the local forge and store, the sealed
//! envelope, the credential detectors and the built-in `rules` reviewer.
//!
//! The engine knows none of this: it reads the stage contracts that [`register`] hands it.

pub mod detect;
pub mod diff;
pub mod envelope;
pub mod git;
pub mod rules;
pub mod store;
