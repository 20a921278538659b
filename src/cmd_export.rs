//! `reviewflow export <TARGET>`: a registered platform's exporter (docs/export.md). The checks
//! that refuse a pipeline, the forge's platform, the flow and the writing are the same for every
//! target; what is written is the exporter's.

use std::path::{Component, Path};

use reviewflow_engine::export::Request;
use reviewflow_engine::finding::Severity;
use reviewflow_engine::flow::Flow;
use reviewflow_engine::{CheckOptions, report, run_checks};

use crate::cli::{ExportArgs, FailOn};
use crate::cmd_check::fails;
use crate::output::{
    EXIT_FINDINGS, EXIT_OK, EXIT_UNUSABLE, errln, load_or_report, print_stderr, print_stdout,
    style, write_named,
};

/// Checks the pipeline as `check` does (error findings refuse it, exit 1), then writes what the
/// target's exporter makes of it to stdout or, atomically, to `--out`.
pub fn run(args: ExportArgs) -> u8 {
    let registry = reviewflow_stdlib::registry();
    let Some(platform) = registry.platforms().find(|p| p.name() == args.target) else {
        errln!("error: no platform `{}` exports", args.target);
        return EXIT_UNUSABLE;
    };
    let Some(exporter) = platform.exporter() else {
        errln!("error: no platform `{}` exports", args.target);
        return EXIT_UNUSABLE;
    };
    let style = style(args.color.color);
    // The exported jobs run the pipeline by this path, from the top of their checkout.
    let file = match repo_path(&args.file) {
        Ok(file) => file,
        Err(message) => {
            errln!("error: {}", report::terminal_text(&message));
            return EXIT_UNUSABLE;
        }
    };
    if let Err(message) = exporter.check_options(&args.options) {
        errln!("error: {}", report::terminal_text(&message));
        return EXIT_UNUSABLE;
    }
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
    // A pipeline whose forge runs elsewhere (or on no platform) cannot be this platform's jobs;
    // one that names no forge can be any platform's.
    if let Some(forge) = &compiled.pipeline.forge {
        let runs_on = registry
            .forge(&forge.kind.value)
            .and_then(|f| f.platform.as_deref());
        if runs_on != Some(platform.name()) {
            let kinds: Vec<String> = registry
                .forges()
                .filter(|f| f.platform.as_deref() == Some(platform.name()))
                .map(|f| format!("`forge \"{}\"`", f.kind))
                .collect();
            errln!(
                "error: {}: the pipeline's forge is `{}`; {} runs {}",
                report::terminal_text(compiled.source.name()),
                report::terminal_text(&forge.kind.value),
                platform.title(),
                match kinds.is_empty() {
                    true => "no forge".to_string(),
                    false => kinds.join(" or "),
                }
            );
            return EXIT_UNUSABLE;
        }
    }
    let Some(flow) = Flow::compute(&compiled.pipeline, &registry, &compiled.dag) else {
        errln!("error: the pipeline's stages form a cycle");
        return EXIT_UNUSABLE;
    };
    // Where the platform will find the file, when `--out` says it (an absolute `--out` as the
    // path below the working folder, the repository's top).
    let written = args.out.as_deref().and_then(|out| {
        let below = match out.is_absolute() {
            true => out
                .strip_prefix(std::env::current_dir().ok()?)
                .ok()?
                .to_path_buf(),
            false => out.to_path_buf(),
        };
        repo_path(&below).ok()
    });
    let text = match exporter.export(&Request {
        pipeline: &compiled.pipeline,
        registry: &registry,
        source: &compiled.source,
        dag: &compiled.dag,
        flow: &flow,
        file: &file,
        written_as: written.as_deref(),
        options: &args.options,
    }) {
        Ok(text) => text,
        Err(message) => {
            errln!(
                "error: {}: cannot export: {}",
                report::terminal_text(compiled.source.name()),
                report::terminal_text(&message)
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

/// The pipeline's path as the exported jobs name it: relative, without `..`, `/`-separated.
fn repo_path(path: &Path) -> Result<String, String> {
    let shown = path.display();
    let mut parts = Vec::new();
    for component in path.components() {
        match component {
            Component::Normal(part) => parts.push(part.to_str().ok_or_else(|| {
                format!("{shown}: the path is not UTF-8, which the exported jobs cannot name")
            })?),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(format!(
                    "{shown}: give the pipeline's path relative to the repository's top, as the \
                     jobs' checkout holds it (run `export` from the top)"
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
    fn the_path_is_the_repositorys() {
        assert_eq!(
            repo_path(Path::new("./.github/review.kdl")).as_deref(),
            Ok(".github/review.kdl")
        );
        assert!(repo_path(Path::new("/abs/review.kdl")).is_err());
        assert!(repo_path(Path::new("../review.kdl")).is_err());
        assert!(repo_path(Path::new(".")).is_err());
    }
}
