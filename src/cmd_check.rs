//! `reviewflow check`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use reviewflow_engine::emit::model_document;
use reviewflow_engine::finding::{Finding, Severity};
use reviewflow_engine::report::{self, FINDINGS_FORMAT_VERSION, FindingsReport};
use reviewflow_engine::{CheckOptions, Registry, Source, github, run_checks, sarif};

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
    let paths = match pipeline_paths(&args.files) {
        Ok(paths) => paths,
        Err(message) => {
            eprintln!("error: {message}");
            return EXIT_UNUSABLE;
        }
    };
    let emit_model = args.emit == Some(Emit::Model);
    let mut unreadable = false;
    let mut checked = Vec::new();
    for outcome in check_all(&paths, &registry, options, emit_model) {
        match outcome {
            Ok(c) => checked.push(c),
            Err(message) => {
                // The message names the path, which may hold control characters.
                eprintln!("error: {}", report::terminal_text(&message));
                unreadable = true;
            }
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
                let name = report::terminal_text(c.source.name());
                if c.unusable {
                    eprintln!("{name}: unusable input");
                } else {
                    eprintln!("{name}: {}", report::summary_line(&c.findings));
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
            // URIs are relative to the repository's top, whatever folder the names are from.
            let root = sarif::SrcRoot::current();
            print_stdout(&sarif::sarif_text_at(
                &pairs,
                &root,
                env!("CARGO_PKG_VERSION"),
            ));
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

/// Where `reviewflow check` with no argument looks, from the current folder: the repository's
/// pipeline, and every `.kdl` file under the folder of further pipelines (recursively).
pub const DEFAULT_FILE: &str = "review.kdl";
pub const DEFAULT_FOLDER: &str = ".github/reviewflow";

/// The files to check, in output order: each argument in the order given, a folder's `.kdl`
/// files (recursively, symlinks not followed) sorted by path in its place. With no argument,
/// `review.kdl` then the files under `.github/reviewflow/`. Nothing to check is an error.
fn pipeline_paths(args: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    if args.is_empty() {
        let mut paths = Vec::new();
        let file = Path::new(DEFAULT_FILE);
        if file.is_file() {
            paths.push(file.to_path_buf());
        }
        let folder = Path::new(DEFAULT_FOLDER);
        if std::fs::symlink_metadata(folder).is_ok_and(|m| m.is_dir()) {
            paths.extend(kdl_files_under(folder)?);
        }
        if paths.is_empty() {
            return Err(format!(
                "no pipeline to check: neither `{DEFAULT_FILE}` nor any `.kdl` file under \
                 `{DEFAULT_FOLDER}/` in this folder\n  hint: name the files or folders to check: \
                 `reviewflow check path/to/review.kdl`"
            ));
        }
        return Ok(paths);
    }
    let mut paths = Vec::new();
    for arg in args {
        if std::fs::metadata(arg).is_ok_and(|m| m.is_dir()) {
            let found = kdl_files_under(arg)?;
            if found.is_empty() {
                return Err(format!(
                    "{}: no `.kdl` file in this folder (nor below it)",
                    arg.display()
                ));
            }
            paths.extend(found);
        } else {
            // A file, or what `load` reports as unreadable.
            paths.push(arg.clone());
        }
    }
    Ok(paths)
}

/// Every `.kdl` file under `root`, sorted by path. Symbolic links below `root` are never
/// followed: a linked folder is not entered, and a linked file is checked only when it resolves
/// to a file inside `root`.
fn kdl_files_under(root: &Path) -> Result<Vec<PathBuf>, String> {
    let inside = std::fs::canonicalize(root)
        .map_err(|e| format!("{}: cannot read the folder: {e}", root.display()))?;
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir)
            .map_err(|e| format!("{}: cannot read the folder: {e}", dir.display()))?;
        for entry in entries {
            let entry =
                entry.map_err(|e| format!("{}: cannot read the folder: {e}", dir.display()))?;
            let path = entry.path();
            // The entry's own type: a symbolic link is reported as one, not as its target.
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let is_kdl = path.extension().is_some_and(|e| e == "kdl");
            // A linked file counts only when it resolves to a file inside the folder.
            let linked_inside = || {
                std::fs::canonicalize(&path)
                    .is_ok_and(|target| target.starts_with(&inside) && target.is_file())
            };
            if kind.is_dir() {
                stack.push(path);
            } else if is_kdl && (kind.is_file() || (kind.is_symlink() && linked_inside())) {
                out.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Checks every file, on as many threads as there are cores available to the process (and
/// files), and returns the outcomes in the order of `paths`: a file checked, or the message of
/// an unreadable one.
fn check_all(
    paths: &[PathBuf],
    registry: &Registry,
    options: CheckOptions,
    emit_model: bool,
) -> Vec<Result<Checked, String>> {
    let check = |path: &Path| check_one(path, registry, options, emit_model);
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(paths.len());
    if threads <= 1 {
        return paths.iter().map(|p| check(p)).collect();
    }
    // Each worker takes the next file; the outcomes are put back in order afterwards.
    let next = AtomicUsize::new(0);
    let mut outcomes: Vec<(usize, Result<Checked, String>)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(path) = paths.get(i) else {
                            break mine;
                        };
                        mine.push((i, check(path)));
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| match w.join() {
                Ok(mine) => mine,
                Err(panic) => std::panic::resume_unwind(panic),
            })
            .collect()
    });
    outcomes.sort_by_key(|(i, _)| *i);
    outcomes.into_iter().map(|(_, o)| o).collect()
}

fn check_one(
    path: &Path,
    registry: &Registry,
    options: CheckOptions,
    emit_model: bool,
) -> Result<Checked, String> {
    match load(path, registry) {
        Ok(compiled) => {
            let findings = run_checks(&compiled, registry, options);
            let model = emit_model
                .then(|| serde_json::to_value(model_document(&compiled)).unwrap_or_default());
            Ok(Checked {
                source: compiled.source,
                findings,
                unusable: false,
                model,
            })
        }
        Err(Loaded::Unreadable(message)) => Err(message),
        Err(Loaded::Unusable(u)) => Ok(Checked {
            source: u.source,
            findings: u.findings,
            unusable: true,
            model: None,
        }),
    }
}
