//! `reviewflow export github`.

use std::path::{Component, Path};

use reviewflow_engine::finding::Severity;
use reviewflow_engine::flow::Flow;
use reviewflow_engine::{CheckOptions, report, run_checks};
use reviewflow_stdlib::platform::github::export::fit::{self, Destination};
use reviewflow_stdlib::platform::github::export::workflow::{
    Action, Source, parse_action, workflow,
};

use crate::cli::{ExportArgs, ExportGithubArgs, ExportTarget, FailOn};
use crate::cmd_check::fails;
use crate::output::{
    EXIT_FINDINGS, EXIT_OK, EXIT_UNUSABLE, errln, load_or_report, print_stderr, print_stdout,
    style, write_named,
};

pub fn run(args: ExportArgs) -> u8 {
    match args.target {
        ExportTarget::Github(a) => github(a),
    }
}

/// Checks the pipeline as `check` does (error findings refuse it, exit 1), then writes the
/// workflow to stdout or, atomically, to `--out`.
fn github(args: ExportGithubArgs) -> u8 {
    let registry = reviewflow_stdlib::registry();
    let style = style(args.color.color);
    // The workflow runs the pipeline by this path, from the top of its checkout.
    let file = match workflow_path(&args.file) {
        Ok(file) => file,
        Err(message) => {
            errln!("error: {}", report::terminal_text(&message));
            return EXIT_UNUSABLE;
        }
    };
    let action = match args.action.as_deref().map(parse_action) {
        None => Action::default(),
        Some(Ok(action)) => action,
        Some(Err(message)) => {
            errln!("error: --action {}", report::terminal_text(&message));
            return EXIT_UNUSABLE;
        }
    };
    let Some(compiled) = load_or_report(&args.file, &registry, style) else {
        return EXIT_UNUSABLE;
    };
    let findings = run_checks(&compiled, &registry, CheckOptions::default());
    if fails(&findings, FailOn::Error) {
        let errors: Vec<_> = findings
            .into_iter()
            .filter(|f| f.suppressed.is_none() && f.severity == Severity::Error)
            .collect();
        print_stderr(&report::render_human(&compiled.source, &errors, style));
        errln!(
            "{}: not exported: the pipeline fails `reviewflow check`",
            report::terminal_text(compiled.source.name())
        );
        return EXIT_FINDINGS;
    }
    if let Some(forge) = &compiled.pipeline.forge
        && forge.kind.value != "github"
    {
        errln!(
            "error: {}: the pipeline's forge is `{}`; a GitHub workflow runs `forge \"github\"`",
            report::terminal_text(compiled.source.name()),
            report::terminal_text(&forge.kind.value)
        );
        return EXIT_UNUSABLE;
    }
    let Some(flow) = Flow::compute(&compiled.pipeline, &registry, &compiled.dag) else {
        errln!("error: the pipeline's stages form a cycle");
        return EXIT_UNUSABLE;
    };
    // Where GitHub will run the workflow from, when `--out` says it (an absolute `--out` as the
    // path below the working folder, the repository's top).
    let written = args.out.as_deref().and_then(|out| {
        let below = match out.is_absolute() {
            true => out
                .strip_prefix(std::env::current_dir().ok()?)
                .ok()?
                .to_path_buf(),
            false => out.to_path_buf(),
        };
        workflow_path(&below).ok()
    });
    let judged = fit::judge(
        &compiled.pipeline,
        &registry,
        &compiled.source,
        &Destination {
            workflow_file: written.as_deref().and_then(fit::workflow_file),
        },
    );
    let text = match judged.and_then(|installed_as| {
        workflow(&Source {
            pipeline: &compiled.pipeline,
            registry: &registry,
            dag: &compiled.dag,
            flow: &flow,
            file: &file,
            action: &action,
            installed_as: installed_as.as_deref(),
        })
    }) {
        Ok(text) => text,
        Err(e) => {
            errln!(
                "error: {}: cannot export: {}",
                report::terminal_text(compiled.source.name()),
                report::terminal_text(&e.to_string())
            );
            return EXIT_UNUSABLE;
        }
    };
    match args.out {
        None => {
            print_stdout(&text);
            EXIT_OK
        }
        Some(out) => match write_named(&out, text.as_bytes()) {
            Ok(()) => {
                errln!(
                    "wrote {}",
                    report::terminal_text(&out.display().to_string())
                );
                EXIT_OK
            }
            Err(message) => {
                errln!("error: {}", report::terminal_text(&message));
                EXIT_UNUSABLE
            }
        },
    }
}

/// The pipeline's path as the workflow names it: relative, without `..`, `/`-separated.
fn workflow_path(path: &Path) -> Result<String, String> {
    let shown = path.display();
    let mut parts = Vec::new();
    for component in path.components() {
        match component {
            Component::Normal(part) => parts.push(part.to_str().ok_or_else(|| {
                format!("{shown}: the path is not UTF-8, which a workflow cannot name")
            })?),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(format!(
                    "{shown}: give the pipeline's path relative to the repository's top, as the \
                     workflow's checkout holds it (run `export` from the top)"
                ));
            }
        }
    }
    if parts.is_empty() {
        return Err(format!("{shown}: not a file"));
    }
    Ok(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_path_is_the_workflows() {
        assert_eq!(
            workflow_path(Path::new("./.github/review.kdl")).as_deref(),
            Ok(".github/review.kdl")
        );
        assert!(workflow_path(Path::new("/abs/review.kdl")).is_err());
        assert!(workflow_path(Path::new("../review.kdl")).is_err());
        assert!(workflow_path(Path::new(".")).is_err());
    }
}
