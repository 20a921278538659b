//! End-to-end tests of the `reviewflow` binary.

mod bad_input;
mod check;
mod console;
mod corpus;
mod docs_checks;
mod docs_language;
mod explain;
mod formats;
mod github_pipeline;
mod github_workflow;
mod graph;
mod init;
mod isolation_process;
mod isolation_spy;
mod local_pipeline;
mod lowering;
mod model_pipeline;
mod run;
mod schema;
mod support;
