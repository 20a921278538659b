//! Stage kinds the engine itself provides.

pub mod run;
pub mod run_impl;
