//! `export github`: the GitHub Actions workflow of a pipeline (`docs/export.md`), written from
//! the engine's partition of its stages into jobs.

pub mod fit;
pub mod workflow;

use reviewflow_engine::export::target::option;
use reviewflow_engine::export::{ExportOption, Exporter, Request};

use workflow::{Action, Source, parse_action, workflow};

/// The GitHub platform's exporter: a workflow file.
#[derive(Debug)]
pub struct WorkflowExporter;

const ACTION: &str = "action";

impl WorkflowExporter {
    fn action(options: &[(&'static str, String)]) -> Result<Action, String> {
        match option(options, ACTION) {
            None => Ok(Action::default()),
            Some(text) => parse_action(text).map_err(|message| format!("--action {message}")),
        }
    }
}

impl Exporter for WorkflowExporter {
    fn about(&self) -> &'static str {
        "A GitHub Actions workflow: one job per group of stages that must share a machine"
    }

    fn options(&self) -> &'static [ExportOption] {
        &[ExportOption {
            name: ACTION,
            value_name: "OWNER/REPO@COMMIT",
            help: "The action every job installs reviewflow with, as OWNER/REPO@COMMIT (a full \
                   commit id; default: reviewflow's own repository at the commit this build \
                   names, docs/install.md)",
        }]
    }

    fn check_options(&self, options: &[(&'static str, String)]) -> Result<(), String> {
        Self::action(options).map(|_| ())
    }

    fn export(&self, request: &Request<'_>) -> Result<String, String> {
        let action = Self::action(request.options)?;
        let installed_as = fit::judge(
            request.pipeline,
            request.registry,
            request.source,
            &fit::Destination {
                workflow_file: request.written_as.and_then(fit::workflow_file),
            },
        )
        .map_err(|e| e.to_string())?;
        workflow(&Source {
            pipeline: request.pipeline,
            registry: request.registry,
            dag: request.dag,
            flow: request.flow,
            file: request.file,
            action: &action,
            installed_as: installed_as.as_deref(),
        })
        .map_err(|e| e.to_string())
    }
}
