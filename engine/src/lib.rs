//! reviewflow engine: `syntax → lower → model → check → (plan → run)`.
//!
//! The engine knows stage contracts and runs stage implementations through one trait; it knows
//! nothing of git or cryptography, and platforms, forges and stores are registered kinds
//! (docs/platforms.md). `check` and `graph` are pure.

pub mod admits;
pub mod atomic;
pub mod beneath;
pub mod bounded;
pub mod builtin;
mod cascade;
pub mod check;
pub mod code;
pub mod compile;
pub mod contract;
pub mod date;
pub mod duration;
pub mod emit;
pub mod exec;
pub mod export;
pub mod finding;
pub mod flow;
pub mod graph;
pub mod hex;
pub(crate) mod inputs;
pub mod lower;
pub mod model;
pub mod nofollow;
pub mod permission;
pub mod platform;
pub mod policy;
pub mod registry;
pub mod render;
pub mod report;
pub mod run;
pub mod source;
pub mod span;
pub mod suggest;
pub mod syntax;
pub mod transport;
pub mod unique;

pub use compile::{CheckOptions, Compiled, Unusable, compile, decode, run_checks};
pub use registry::Registry;
pub use source::Source;
