//! End-to-end tests of the `reviewflow` binary.

mod bad_input;
mod check;
mod graph;
mod run;
mod schema;
mod support;
