//! `reviewflow check`.

use reviewflow_engine::emit::model_document;
use reviewflow_engine::finding::{Finding, Severity};
use reviewflow_engine::report::{self, FINDINGS_FORMAT_VERSION, FindingsReport};
use reviewflow_engine::{CheckOptions, Source, github, run_checks, sarif};

use crate::cli::{CheckArgs, CheckFormat, Emit, FailOn};
use crate::output::{EXIT_FINDINGS, EXIT_OK, EXIT_UNUSABLE, Loaded, load, print_stdout, style};

/// One checked file.
struct Checked {
    source: Source,
    findings: Vec<Finding>,
    unusable: bool,
    /// With `--emit model`, the compiled model (none for an unusable file).
    model: Option<serde_json::Value>,
}

pub fn run(args: CheckArgs) -> u8 {
    // stdout holds one document. `--format json` carries the model in it; SARIF and workflow
    // commands have no place for it.
    if args.emit == Some(Emit::Model)
        && let Some(format) = match args.format {
            CheckFormat::Sarif => Some("sarif"),
            CheckFormat::Github => Some("github"),
            CheckFormat::Human | CheckFormat::Json => None,
        }
    {
        eprintln!(
            "error: `--emit model` cannot be combined with `--format {format}`: both would be \
             written to stdout\n  hint: `--format json --emit model` writes the findings and \
             the model in one document"
        );
        return EXIT_UNUSABLE;
    }
    let registry = reviewflow_stdlib::registry();
    let style = style(args.color.color);
    let options = CheckOptions {
        no_suppress: args.no_suppress,
    };
    let mut unreadable = false;
    let mut checked = Vec::new();
    for path in &args.files {
        match load(path, &registry) {
            Ok(compiled) => {
                let findings = run_checks(&compiled, &registry, options);
                let model = (args.emit == Some(Emit::Model))
                    .then(|| serde_json::to_value(model_document(&compiled)).unwrap_or_default());
                checked.push(Checked {
                    source: compiled.source,
                    findings,
                    unusable: false,
                    model,
                });
            }
            Err(Loaded::Unreadable(message)) => {
                eprintln!("error: {message}");
                unreadable = true;
            }
            Err(Loaded::Unusable(u)) => checked.push(Checked {
                source: u.source,
                findings: u.findings,
                unusable: true,
                model: None,
            }),
        }
    }
    let pairs: Vec<(&Source, &[Finding])> = checked
        .iter()
        .map(|c| (&c.source, c.findings.as_slice()))
        .collect();
    match args.format {
        CheckFormat::Human => {
            for c in &checked {
                eprint!("{}", report::render_human(&c.source, &c.findings, style));
                if c.unusable {
                    eprintln!("{}: unusable input", c.source.name());
                } else {
                    eprintln!("{}: {}", c.source.name(), report::summary_line(&c.findings));
                }
            }
        }
        CheckFormat::Json => {
            let doc = FindingsReport {
                version: FINDINGS_FORMAT_VERSION,
                files: checked
                    .iter_mut()
                    .map(|c| report::FileFindings {
                        model: c.model.take(),
                        ..report::file_findings(&c.source, &c.findings, c.unusable)
                    })
                    .collect(),
            };
            print_stdout(&json(serde_json::to_string_pretty(&doc)));
        }
        CheckFormat::Sarif => {
            let log = sarif::sarif_log(&pairs, env!("CARGO_PKG_VERSION"));
            print_stdout(&json(serde_json::to_string_pretty(&log)));
        }
        CheckFormat::Github => print_stdout(&github::workflow_commands(&pairs)),
    }
    // With `--format human` the diagnostics went to stderr: stdout is the model's alone.
    if args.format == CheckFormat::Human && args.emit == Some(Emit::Model) {
        let mut models: Vec<serde_json::Value> =
            checked.iter_mut().filter_map(|c| c.model.take()).collect();
        let value = match models.len() {
            1 => models.pop().unwrap_or_default(),
            _ => serde_json::Value::Array(models),
        };
        print_stdout(&json(serde_json::to_string_pretty(&value)));
    }
    if unreadable || checked.iter().any(|c| c.unusable) {
        EXIT_UNUSABLE
    } else if checked.iter().any(|c| fails(&c.findings, args.fail_on)) {
        EXIT_FINDINGS
    } else {
        EXIT_OK
    }
}

/// A document as printed, with its newline.
fn json(text: serde_json::Result<String>) -> String {
    format!("{}\n", text.unwrap_or_default())
}

/// One rule for every format: live findings at or above `fail_on` fail the check.
pub fn fails(findings: &[Finding], fail_on: FailOn) -> bool {
    let threshold = match fail_on {
        FailOn::Error => Severity::Error,
        FailOn::Warning => Severity::Warning,
        FailOn::Never => return false,
    };
    findings
        .iter()
        .any(|f| f.suppressed.is_none() && f.severity >= threshold)
}
