//! Stage kinds the engine itself provides.

pub mod run;
