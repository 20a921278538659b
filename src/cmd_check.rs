//! `reviewflow check`.

use reviewflow_engine::emit::model_document;
use reviewflow_engine::finding::{Finding, Severity};
use reviewflow_engine::report::{self, FINDINGS_FORMAT_VERSION, FindingsReport};
use reviewflow_engine::{CheckOptions, Source, github, run_checks, sarif};

use crate::cli::{CheckArgs, CheckFormat, Emit, FailOn};
use crate::output::{EXIT_FINDINGS, EXIT_OK, EXIT_UNUSABLE, Loaded, load, style};

/// One checked file.
struct Checked {
    source: Source,
    findings: Vec<Finding>,
    unusable: bool,
}

pub fn run(args: CheckArgs) -> u8 {
    let registry = reviewflow_stdlib::registry();
    let style = style(args.color.color);
    let options = CheckOptions {
        no_suppress: args.no_suppress,
    };
    let mut unreadable = false;
    let mut checked = Vec::new();
    let mut models = Vec::new();
    for path in &args.files {
        match load(path, &registry) {
            Ok(compiled) => {
                let findings = run_checks(&compiled, &registry, options);
                if args.emit == Some(Emit::Model) {
                    models
                        .push(serde_json::to_value(model_document(&compiled)).unwrap_or_default());
                }
                checked.push(Checked {
                    source: compiled.source,
                    findings,
                    unusable: false,
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
                    .iter()
                    .map(|c| report::file_findings(&c.source, &c.findings, c.unusable))
                    .collect(),
            };
            println!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
        }
        CheckFormat::Sarif => {
            let log = sarif::sarif_log(&pairs, env!("CARGO_PKG_VERSION"));
            println!("{}", serde_json::to_string_pretty(&log).unwrap_or_default());
        }
        CheckFormat::Github => print!("{}", github::workflow_commands(&pairs)),
    }
    if args.emit == Some(Emit::Model) {
        let value = match models.len() {
            1 => models.pop().unwrap_or_default(),
            _ => serde_json::Value::Array(models),
        };
        println!(
            "{}",
            serde_json::to_string_pretty(&value).unwrap_or_default()
        );
    }
    if unreadable || checked.iter().any(|c| c.unusable) {
        EXIT_UNUSABLE
    } else if checked.iter().any(|c| fails(&c.findings, args.fail_on)) {
        EXIT_FINDINGS
    } else {
        EXIT_OK
    }
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
