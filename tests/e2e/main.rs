//! End-to-end tests of the `reviewflow` binary.

mod bad_input;
mod check;
mod docs_language;
mod formats;
mod graph;
mod lowering;
mod schema;
mod support;
