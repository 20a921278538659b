//! `reviewflow check`.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use reviewflow_engine::emit::model_document;
use reviewflow_engine::finding::{Finding, Severity};
use reviewflow_engine::report::{self, FINDINGS_FORMAT_VERSION, FindingsReport};
use reviewflow_engine::run::beneath::{self, Bounds, Entry, Folder, Why};
use reviewflow_engine::{CheckOptions, Registry, Source, run_checks};
use reviewflow_stdlib::sarif;

use crate::cli::{CheckArgs, CheckFormat, Emit, FailOn};
use crate::output::{
    EXIT_FINDINGS, EXIT_OK, EXIT_UNUSABLE, Loaded, errln, load_beneath, print_stderr, print_stdout,
    style,
};

/// One checked file.
struct Checked {
    source: Source,
    findings: Vec<Finding>,
    unusable: bool,
    /// With `--emit model`, the compiled model (none for an unusable file).
    model: Option<serde_json::Value>,
    /// The pipeline, for what is judged across files (none for an unusable file).
    pipeline: Option<reviewflow_engine::model::Pipeline>,
}

pub fn run(args: CheckArgs) -> u8 {
    // stdout holds one document. `--format json` carries the model in it; SARIF and workflow
    // commands have no place for it.
    if args.emit == Some(Emit::Model)
        && let Some(format) = match args.format {
            CheckFormat::Sarif | CheckFormat::Platform(_) => Some(args.format.name()),
            CheckFormat::Human | CheckFormat::Json => None,
        }
    {
        errln!(
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
    let mut skipped = Skipped::default();
    let listed = pipeline_paths(&args.files, &mut skipped);
    if let Some(warning) = skipped.warning() {
        errln!("{warning}");
    }
    let paths = match listed {
        Ok(paths) => paths,
        Err(message) => {
            errln!("error: {message}");
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
                // The message names the path, which may hold control characters (escaped).
                errln!("error: {message}");
                unreadable = true;
            }
        }
    }
    across_files(&mut checked, &registry);
    let pairs: Vec<(&Source, &[Finding])> = checked
        .iter()
        .map(|c| (&c.source, c.findings.as_slice()))
        .collect();
    match args.format {
        CheckFormat::Human => {
            for c in &checked {
                print_stderr(&report::render_human(&c.source, &c.findings, style));
                let name = report::terminal_text(c.source.name());
                if c.unusable {
                    errln!("{name}: unusable input");
                } else {
                    errln!("{name}: {}", report::summary_line(&c.findings));
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
            // The log says it too; stderr is where a person running the command looks.
            let left_out = sarif::results_left_out(&pairs);
            if left_out > 0 {
                errln!(
                    "warning: {left_out} results left out of the SARIF log: code scanning accepts at most {} in a run; the most severe are kept",
                    sarif::MAX_RESULTS
                );
            }
            print_stdout(&sarif::sarif_text_at(
                &pairs,
                &root,
                env!("CARGO_PKG_VERSION"),
            ));
        }
        CheckFormat::Platform(format) => print_stdout(&(format.render)(&pairs)),
    }
    // With `--format human` the diagnostics went to stderr: stdout is the model's alone.
    if matches!(args.format, CheckFormat::Human) && args.emit == Some(Emit::Model) {
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

/// What the files checked together show and none shows alone (`check::folder`): each finding
/// joins the others of its file, in order of position.
fn across_files(checked: &mut [Checked], registry: &Registry) {
    use reviewflow_engine::check::folder::{Member, findings};
    let names: Vec<String> = checked
        .iter()
        .map(|c| report::terminal_text(c.source.name()))
        .collect();
    let members: Vec<(usize, Member<'_>)> = checked
        .iter()
        .zip(&names)
        .enumerate()
        // A file with an error of its own is fixed first: what it shares with others is judged
        // once it stands alone.
        .filter(|(_, (c, _))| !has_live_error(&c.findings))
        .filter_map(|(i, (c, file))| {
            c.pipeline
                .as_ref()
                .map(|pipeline| (i, Member { file, pipeline }))
        })
        .collect();
    if members.len() < 2 {
        return;
    }
    let index: Vec<usize> = members.iter().map(|(i, _)| *i).collect();
    let members: Vec<Member<'_>> = members.into_iter().map(|(_, m)| m).collect();
    let found = findings(&members, registry);
    drop(members);
    for (m, finding) in found {
        if let Some(c) = index.get(m).and_then(|&i| checked.get_mut(i)) {
            c.findings.push(finding);
        }
    }
    for c in checked {
        c.findings.sort_by_key(|f| f.primary.span.offset);
    }
}

/// Whether a file has a live error of its own.
fn has_live_error(findings: &[Finding]) -> bool {
    findings.iter().any(|f| {
        f.suppressed.is_none() && f.severity == reviewflow_engine::finding::Severity::Error
    })
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

/// The bounds of listing a folder to check: entries in all, and levels of folders (each an open
/// descriptor while it is listed).
const FOLDER_BOUNDS: Bounds = Bounds {
    entries: 1_000_000,
    bytes: 0,
    depth: 128,
};

/// A file to check: the folder it is read beneath, its path below it, and its name in messages.
struct Target {
    base: Arc<Folder>,
    rel: PathBuf,
    name: PathBuf,
}

impl Target {
    /// A file a person named: read by the reader's rule for named paths.
    fn named(path: &Path) -> Result<Self, String> {
        let (base, rel) = Folder::named(path)
            .map_err(|e| format!("{}: cannot read the file: {e}", path.display()))?;
        Ok(Self {
            base: Arc::new(base),
            rel,
            name: path.to_path_buf(),
        })
    }
}

/// The entries the listing of folders skipped: how many, and the first few by name.
#[derive(Default)]
struct Skipped {
    count: usize,
    named: Vec<(PathBuf, Why)>,
}

impl Skipped {
    fn add(&mut self, under: &Path, found: beneath::Found) {
        self.count += found.skipped_count;
        for (rel, why) in found.skipped {
            if self.named.len() < beneath::Found::NAMED {
                self.named.push((under.join(rel), why));
            }
        }
    }

    /// One warning, whatever the number of entries (bounded), or nothing.
    fn warning(&self) -> Option<String> {
        if self.count == 0 {
            return None;
        }
        let named: Vec<String> = self
            .named
            .iter()
            .map(|(path, why)| {
                let what = match why {
                    Why::Link => "a symbolic link",
                    Why::Changed => "changed while it was listed",
                    _ => "a FIFO, socket or device",
                };
                format!("{} ({what})", path.display())
            })
            .collect();
        let more = self.count - self.named.len();
        Some(format!(
            "warning: {} {} below the folders checked {} skipped, neither a regular file nor a \
             folder (a symbolic link is never followed): {}{}",
            self.count,
            if self.count == 1 { "entry" } else { "entries" },
            if self.count == 1 { "was" } else { "were" },
            named.join(", "),
            if more > 0 {
                format!(", and {more} more")
            } else {
                String::new()
            }
        ))
    }
}

/// The files to check, in output order: each argument in the order given, a folder's `.kdl`
/// files (recursively, no link followed) sorted by path in its place. With no argument,
/// `review.kdl` then the files under `.github/reviewflow/`. Nothing to check is an error. What
/// the folders held that is neither a regular file nor a folder is counted in `skipped`.
fn pipeline_paths(args: &[PathBuf], skipped: &mut Skipped) -> Result<Vec<Target>, String> {
    if args.is_empty() {
        let mut targets = Vec::new();
        // Whatever is there is read, and refused when it is not a regular file.
        if std::fs::symlink_metadata(DEFAULT_FILE).is_ok() {
            targets.push(Target::named(Path::new(DEFAULT_FILE))?);
        }
        let folder = Path::new(DEFAULT_FOLDER);
        if std::fs::symlink_metadata(folder).is_ok() {
            targets.extend(kdl_files_under(folder, skipped)?);
        }
        if targets.is_empty() {
            return Err(format!(
                "no pipeline to check: neither `{DEFAULT_FILE}` nor any `.kdl` file under \
                 `{DEFAULT_FOLDER}/` in this folder\n  hint: name the files or folders to check: \
                 `reviewflow check path/to/review.kdl`"
            ));
        }
        return Ok(targets);
    }
    let mut targets = Vec::new();
    for arg in args {
        let target = Target::named(arg)?;
        if let Ok(Entry::Folder(_)) = target.base.entry(&target.rel) {
            let found = kdl_files_under(arg, skipped)?;
            if found.is_empty() {
                return Err(format!(
                    "{}: no `.kdl` file in this folder (nor below it)",
                    arg.display()
                ));
            }
            targets.extend(found);
        } else {
            // A file, or what `load` reports as unreadable.
            targets.push(target);
        }
    }
    Ok(targets)
}

/// Every `.kdl` file under `root`, sorted by path, listed by descriptors: no symbolic link below
/// `root` is followed (a linked folder is not entered, a linked file not checked), and every
/// entry skipped is counted in `skipped`. A link at `root` itself is one of them.
fn kdl_files_under(root: &Path, skipped: &mut Skipped) -> Result<Vec<Target>, String> {
    let cannot =
        |e: &dyn std::fmt::Display| format!("{}: cannot read the folder: {e}", root.display());
    let (base, rel) = Folder::named(root).map_err(|e| cannot(&e))?;
    let folder = match base.folder(&rel) {
        Ok(folder) => folder,
        Err(e) => match beneath::refused(&e) {
            Some(r) if r.why != Why::NotFolder => {
                skipped.count += 1;
                if skipped.named.len() < beneath::Found::NAMED {
                    skipped.named.push((root.to_path_buf(), r.why));
                }
                return Ok(Vec::new());
            }
            _ => return Err(cannot(&e)),
        },
    };
    let is_kdl = |name: &OsStr| Path::new(name).extension().is_some_and(|e| e == "kdl");
    let mut found = beneath::find(&folder, FOLDER_BOUNDS, &is_kdl).map_err(|e| cannot(&e))?;
    let files = std::mem::take(&mut found.files);
    skipped.add(root, found);
    let folder = Arc::new(folder);
    Ok(files
        .into_iter()
        .map(|rel| Target {
            base: folder.clone(),
            name: root.join(&rel),
            rel,
        })
        .collect())
}

/// Checks every file, on as many threads as there are cores available to the process (and
/// files), and returns the outcomes in the order of `paths`: a file checked, or the message of
/// an unreadable one.
fn check_all(
    paths: &[Target],
    registry: &Registry,
    options: CheckOptions,
    emit_model: bool,
) -> Vec<Result<Checked, String>> {
    // The pipelines are kept for what is judged across files only when there are several.
    let together = paths.len() > 1;
    let check = |target: &Target| check_one(target, registry, options, emit_model, together);
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(paths.len());
    if threads <= 1 {
        return paths.iter().map(check).collect();
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
    target: &Target,
    registry: &Registry,
    options: CheckOptions,
    emit_model: bool,
    together: bool,
) -> Result<Checked, String> {
    let name = target.name.display().to_string();
    match load_beneath(&target.base, &target.rel, &name, registry) {
        Ok(compiled) => {
            let findings = run_checks(&compiled, registry, options);
            let model = emit_model
                .then(|| serde_json::to_value(model_document(&compiled)).unwrap_or_default());
            Ok(Checked {
                source: compiled.source,
                findings,
                unusable: false,
                model,
                pipeline: together.then_some(compiled.pipeline),
            })
        }
        Err(Loaded::Unreadable(message)) => Err(message),
        Err(Loaded::Unusable(u)) => Ok(Checked {
            source: u.source,
            findings: u.findings,
            unusable: true,
            model: None,
            pipeline: None,
        }),
    }
}
