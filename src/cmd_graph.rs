//! `reviewflow graph`.

use reviewflow_engine::render::{Drawing, GraphFormat as Format, render_graph};
use reviewflow_engine::report;
use reviewflow_engine::{CheckOptions, run_checks};

use crate::cli::{FailOn, GraphArgs, GraphFormat};
use crate::cmd_check::fails;
use crate::output::{
    EXIT_FINDINGS, EXIT_OK, EXIT_UNUSABLE, load_or_report, print_stderr, print_stdout, style,
};

/// Draws the pipeline whenever it compiles; findings at error level go to stderr and make the
/// exit code 1, so a broken pipeline can still be looked at.
pub fn run(args: GraphArgs) -> u8 {
    let registry = reviewflow_stdlib::registry();
    let style = style(args.color.color);
    let Some(compiled) = load_or_report(&args.file, &registry, style) else {
        return EXIT_UNUSABLE;
    };
    let findings = run_checks(&compiled, &registry, CheckOptions::default());
    let format = match args.format {
        GraphFormat::Mermaid => Format::Mermaid,
        GraphFormat::Dot => Format::Dot,
        GraphFormat::Text => Format::Text,
    };
    let drawing = Drawing {
        pipeline: &compiled.pipeline,
        dag: &compiled.dag,
        registry: &registry,
    };
    print_stdout(&render_graph(&drawing, format));
    if fails(&findings, FailOn::Error) {
        let errors: Vec<_> = findings
            .into_iter()
            .filter(|f| {
                f.suppressed.is_none() && f.severity == reviewflow_engine::finding::Severity::Error
            })
            .collect();
        print_stderr(&report::render_human(&compiled.source, &errors, style));
        return EXIT_FINDINGS;
    }
    EXIT_OK
}
