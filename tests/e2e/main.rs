//! End-to-end tests of the `reviewflow` binary.

mod bad_input;
mod check;
mod corpus;
mod docs_checks;
mod graph;
mod schema;
mod support;
