//! `reviewflow check`.

use reviewflow_engine::emit::model_document;
use reviewflow_engine::finding::{Finding, Severity};
use reviewflow_engine::report::{self, FINDINGS_FORMAT_VERSION, FindingsReport};
use reviewflow_engine::{CheckOptions, run_checks};

use crate::cli::{CheckArgs, CheckFormat, Emit, FailOn};
use crate::output::{EXIT_FINDINGS, EXIT_OK, EXIT_UNUSABLE, Loaded, load, style};

pub fn run(args: CheckArgs) -> u8 {
    let registry = reviewflow_stdlib::registry();
    let style = style(args.color.color);
    let options = CheckOptions {
        no_suppress: args.no_suppress,
    };
    let mut unusable = false;
    let mut failing = false;
    let mut files = Vec::new();
    let mut models = Vec::new();
    for path in &args.files {
        let (source, findings, file_unusable) = match load(path, &registry) {
            Ok(compiled) => {
                let findings = run_checks(&compiled, &registry, options);
                if args.emit == Some(Emit::Model) {
                    models
                        .push(serde_json::to_value(model_document(&compiled)).unwrap_or_default());
                }
                (compiled.source, findings, false)
            }
            Err(Loaded::Unreadable(message)) => {
                eprintln!("error: {message}");
                unusable = true;
                continue;
            }
            Err(Loaded::Unusable(u)) => (u.source, u.findings, true),
        };
        unusable |= file_unusable;
        failing |= fails(&findings, args.fail_on);
        match args.format {
            CheckFormat::Human => {
                eprint!("{}", report::render_human(&source, &findings, style));
                if file_unusable {
                    eprintln!("{}: unusable input", source.name());
                } else {
                    eprintln!("{}: {}", source.name(), report::summary_line(&findings));
                }
            }
            CheckFormat::Json => {
                files.push(report::file_findings(&source, &findings, file_unusable))
            }
        }
    }
    if args.format == CheckFormat::Json {
        let doc = FindingsReport {
            version: FINDINGS_FORMAT_VERSION,
            files,
        };
        println!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
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
    if unusable {
        EXIT_UNUSABLE
    } else if failing {
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
