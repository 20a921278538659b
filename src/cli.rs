//! The command line, defined once: help text comes from here.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

// Help is wrapped to the terminal's width (`COLUMNS` when the output is not a terminal), at most
// 100 columns: wider lines are harder to read.
/// Declarative, statically checked code-review pipelines.
#[derive(Debug, Parser)]
#[command(
    name = "reviewflow",
    version,
    about,
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

// Each subcommand's arguments are built only when it is the one parsed (its name and summary
// are still there for the top-level help): `check` runs on every push, and building the
// arguments of all eight commands was a measurable part of its cost (docs/performance.md).
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum Command {
    /// Check pipelines: structure, references, types (exit 0 clean, 1 findings, 2 unusable input)
    Check(CheckArgs),
    /// Draw a pipeline's DAG, with each secret's scope as a group
    Graph(GraphArgs),
    /// Write the JSON Schemas of reviewflow's machine-readable formats
    Schema(SchemaArgs),
    /// Run a pipeline that passes check (exit 0 success, 1 a stage failed, 2 unusable input, 3 findings at --fail-on, 4 not reviewed under --fail-on, 130/143 interrupted)
    Run(RunArgs),
    /// Explain an id an output shows: a check (what it proves, a failing and a passing example), a
    /// review's rule or a credential detector (no id: list them all)
    Explain(ExplainArgs),
    /// Write a starting review.kdl for this checkout (exit 1 if one exists: it is kept)
    Init,
    /// Write a pipeline as a CI workflow whose jobs are its trust boundaries (exit 0 written, 1
    /// the pipeline has error findings, 2 unusable input or cannot write)
    Export(ExportArgs),
    /// Remove the run folders older than the newest N, as every run does at its start (exit 0
    /// done, 1 a folder could not be removed, 2 no runs folder)
    Prune(PruneArgs),
}

/// `export <TARGET>`: one subcommand per registered platform that exports (docs/platforms.md),
/// built from the registry, so that a platform registered later is a target without a change
/// here. Each takes the pipeline file, `--out`, `--color` and its exporter's own options.
#[derive(Debug)]
pub struct ExportArgs {
    /// The platform's name.
    pub target: &'static str,
    /// The pipeline file, relative to the repository's top.
    pub file: PathBuf,
    pub out: Option<PathBuf>,
    /// The exporter's options that were given, by name.
    pub options: Vec<(&'static str, String)>,
    pub color: ColorArg,
}

impl ExportArgs {
    /// The platforms alone: building every stage contract would cost each `export --help`.
    pub fn platforms() -> reviewflow_engine::Registry {
        let mut registry = reviewflow_engine::Registry::empty();
        reviewflow_stdlib::platform::register(&mut registry);
        registry
    }

    fn target(
        name: &'static str,
        exporter: &dyn reviewflow_engine::export::Exporter,
    ) -> clap::Command {
        let mut cmd = clap::Command::new(name)
            .about(exporter.about())
            .arg(
                clap::Arg::new("file")
                    .value_name("FILE")
                    .required(true)
                    .value_parser(clap::value_parser!(PathBuf))
                    .help("The pipeline file, relative to the repository's top: the jobs run it by this path"),
            )
            .arg(
                clap::Arg::new("out")
                    .long("out")
                    .value_name("FILE")
                    .value_parser(clap::value_parser!(PathBuf))
                    .help(
                        "Write the result to this file, atomically; a link on the way or at the \
                         file, or a file that is not a regular one, is refused (default: stdout)",
                    ),
            );
        for option in exporter.options() {
            cmd = cmd.arg(
                clap::Arg::new(option.name)
                    .long(option.name)
                    .value_name(option.value_name)
                    .help(option.help),
            );
        }
        ColorArg::augment_args(cmd)
    }
}

impl clap::FromArgMatches for ExportArgs {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let Some((name, sub)) = matches.subcommand() else {
            return Err(clap::Error::new(clap::error::ErrorKind::MissingSubcommand));
        };
        let registry = Self::platforms();
        let Some((target, exporter)) = registry
            .platforms()
            .find(|p| p.name() == name)
            .and_then(|p| Some((p.name(), p.exporter()?)))
        else {
            return Err(clap::Error::new(clap::error::ErrorKind::InvalidSubcommand));
        };
        let file = sub
            .get_one::<PathBuf>("file")
            .cloned()
            .ok_or_else(|| clap::Error::new(clap::error::ErrorKind::MissingRequiredArgument))?;
        let options = exporter
            .options()
            .iter()
            .filter_map(|o| Some((o.name, sub.get_one::<String>(o.name)?.clone())))
            .collect();
        Ok(ExportArgs {
            target,
            file,
            out: sub.get_one::<PathBuf>("out").cloned(),
            options,
            color: ColorArg::from_arg_matches(sub)?,
        })
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

impl Args for ExportArgs {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        let registry = Self::platforms();
        let mut cmd = cmd.subcommand_required(true);
        for platform in registry.platforms() {
            if let Some(exporter) = platform.exporter() {
                cmd = cmd.subcommand(Self::target(platform.name(), exporter));
            }
        }
        cmd
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// A check's id, as `check` reports it (e.g. `secret-scope`), or a rule or detector a review
    /// or a scan shows (e.g. `todo-added`, `aws`, `adversarial/…`)
    #[arg(value_name = "ID")]
    pub check: Option<String>,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The pipeline file (as for `check`, the current folder's `review.kdl` when none is given)
    #[arg(value_name = "FILE", default_value = "review.kdl")]
    pub file: PathBuf,
    /// At most this many stages at work at once, 1 or more (default: the number of cores)
    #[arg(long, value_name = "N", value_parser = parse_jobs)]
    pub jobs: Option<usize>,
    /// Time a child gets between SIGTERM and SIGKILL
    #[arg(long, value_name = "DURATION", default_value = "10s")]
    pub grace: String,
    /// Resume this run: reuse the stages it completed, if it reviewed the same thing
    #[arg(long, value_name = "RUN_ID")]
    pub resume: Option<String>,
    /// Admit a resume whose reviewer provider or model changed
    #[arg(long, requires = "resume")]
    pub allow_model_change: bool,
    /// Run only these stages (comma-separated); what they read comes from the --resume run
    #[arg(long, value_name = "NAME,…", value_delimiter = ',')]
    pub stages: Option<Vec<String>>,
    /// Review even when there is nothing new (the head was already reviewed): no stage may stop
    /// the run early
    #[arg(long)]
    pub force: bool,
    /// The folder holding run directories (default: CHECKOUT/.reviewflow/runs)
    #[arg(long, value_name = "DIR")]
    pub run_dir: Option<PathBuf>,
    /// Keep the newest N run folders, this run's among them: older ones are removed at the start
    /// (1 or more; `reviewflow prune` removes them on demand)
    #[arg(long, value_name = "N", default_value_t = reviewflow_engine::run::DEFAULT_KEEP_RUNS, value_parser = parse_keep_runs)]
    pub keep_runs: usize,
    /// The checkout under review (default: the current folder)
    #[arg(long, value_name = "DIR")]
    pub checkout: Option<PathBuf>,
    /// Local forge: the base of the change (default: the merge base with the default branch,
    /// or the parent of HEAD on the default branch)
    #[arg(long, value_name = "REV")]
    pub base: Option<String>,
    /// Local forge: the head of the change (default: HEAD)
    #[arg(long, value_name = "REV")]
    pub head: Option<String>,
    /// Fail on the findings `std/post` published: exit 3 on one at or above this severity, 4
    /// when the review did not run (default: never; error with --fail-on-new)
    #[arg(long, value_enum, value_name = "LEVEL")]
    pub fail_on: Option<FailOn>,
    /// Count only new findings for --fail-on: not those that persist from the last posted review
    #[arg(long)]
    pub fail_on_new: bool,
    #[command(flatten)]
    pub color: ColorArg,
}

/// `--jobs`: a whole number of stages, at least 1 (0 would run nothing).
fn parse_jobs(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(0) => Err("0 stages at once would run nothing; give 1 or more".into()),
        Ok(n) => Ok(n),
        Err(_) => Err("not a whole number of stages (1 or more)".into()),
    }
}

/// `--keep-runs`: a whole number of run folders, at least 1 (the run's own).
fn parse_keep_runs(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(0) => Err("the run's own folder is always kept; give 1 or more".into()),
        Ok(n) => Ok(n),
        Err(_) => Err("not a whole number of run folders (1 or more)".into()),
    }
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Pipeline files, or folders whose `.kdl` files are checked (recursively). None: the
    /// current folder's `review.kdl` and the `.kdl` files under `.github/reviewflow/`
    #[arg(value_name = "PATH")]
    pub files: Vec<PathBuf>,
    /// Output format of the findings (each registered platform adds its own)
    #[arg(long, value_parser = CheckFormatParser, default_value = "human", value_name = "FORMAT")]
    pub format: CheckFormat,
    /// Print the compiled model as JSON on stdout: alone with `--format human`, in each file of
    /// the findings document with `--format json` (not with sarif or a platform's format)
    #[arg(long, value_enum, value_name = "WHAT")]
    pub emit: Option<Emit>,
    /// The lowest severity that makes the exit code 1
    #[arg(long, value_enum, default_value_t = FailOn::Error)]
    pub fail_on: FailOn,
    /// Report findings allowed by `allow` as live
    #[arg(long)]
    pub no_suppress: bool,
    #[command(flatten)]
    pub color: ColorArg,
}

#[derive(Debug, Args)]
pub struct PruneArgs {
    /// Keep the newest N run folders (0: remove every run that is over)
    #[arg(long, value_name = "N", default_value_t = reviewflow_engine::run::DEFAULT_KEEP_RUNS)]
    pub keep: usize,
    /// The folder holding run directories (default: CHECKOUT/.reviewflow/runs)
    #[arg(long, value_name = "DIR")]
    pub run_dir: Option<PathBuf>,
    /// The checkout (default: the current folder)
    #[arg(long, value_name = "DIR")]
    pub checkout: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct GraphArgs {
    /// The pipeline file (as for `check`, the current folder's `review.kdl` when none is given)
    #[arg(value_name = "FILE", default_value = "review.kdl")]
    pub file: PathBuf,
    #[arg(long, value_enum, default_value_t = GraphFormat::Mermaid)]
    pub format: GraphFormat,
    #[command(flatten)]
    pub color: ColorArg,
}

#[derive(Debug, Args)]
pub struct SchemaArgs {
    /// Write one file per schema into this folder, made where missing; a link on the way is
    /// refused (default: print them as one JSON object)
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ColorArg {
    /// Colour in terminal output (`auto`: only on a terminal, and never with NO_COLOR set;
    /// `always` wins over NO_COLOR)
    #[arg(long, value_enum, default_value_t = Color::Auto, global = true)]
    pub color: Color,
}

#[derive(Clone, Copy, Debug)]
pub enum CheckFormat {
    /// Diagnostics with source excerpts, on stderr
    Human,
    /// The findings JSON (schema/findings.schema.json), on stdout
    Json,
    /// SARIF 2.1.0, for code scanning, on stdout
    Sarif,
    /// A registered platform's format (docs/platforms.md), on stdout
    Platform(reviewflow_engine::platform::FindingsFormat),
}

impl CheckFormat {
    /// The value `--format` takes for it.
    pub fn name(&self) -> &'static str {
        match self {
            CheckFormat::Human => "human",
            CheckFormat::Json => "json",
            CheckFormat::Sarif => "sarif",
            CheckFormat::Platform(f) => f.name,
        }
    }
}

/// `--format`: the built-in formats, then each registered platform's, so that a platform
/// registered later is a value without a change here.
#[derive(Clone, Copy, Debug)]
pub struct CheckFormatParser;

impl CheckFormatParser {
    /// The built-in formats: matched without building the registry (`human` is every run's
    /// default, parsed each time).
    const BUILT_IN: [(CheckFormat, &'static str); 3] = [
        (
            CheckFormat::Human,
            "Diagnostics with source excerpts, on stderr",
        ),
        (
            CheckFormat::Json,
            "The findings JSON (schema/findings.schema.json), on stdout",
        ),
        (
            CheckFormat::Sarif,
            "SARIF 2.1.0, for code scanning, on stdout",
        ),
    ];

    fn all() -> Vec<(CheckFormat, &'static str)> {
        let mut all = Self::BUILT_IN.to_vec();
        // Only the platforms are registered here: clap asks for the values whenever it builds
        // the command, and the stage kinds' contracts would cost every invocation.
        let mut registry = reviewflow_engine::Registry::empty();
        reviewflow_stdlib::platform::register(&mut registry);
        all.extend(
            registry
                .findings_formats()
                .map(|f| (CheckFormat::Platform(f), f.help)),
        );
        all
    }
}

impl clap::builder::TypedValueParser for CheckFormatParser {
    type Value = CheckFormat;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<CheckFormat, clap::Error> {
        let wanted = value.to_str().unwrap_or_default();
        if let Some((format, _)) = Self::BUILT_IN.into_iter().find(|(f, _)| f.name() == wanted) {
            return Ok(format);
        }
        if let Some((format, _)) = Self::all().into_iter().find(|(f, _)| f.name() == wanted) {
            return Ok(format);
        }
        let names: Vec<String> = Self::all()
            .iter()
            .map(|(f, _)| f.name().to_string())
            .collect();
        let mut err = clap::Error::new(clap::error::ErrorKind::InvalidValue).with_cmd(cmd);
        use clap::error::{ContextKind, ContextValue};
        if let Some(arg) = arg {
            err.insert(
                ContextKind::InvalidArg,
                ContextValue::String(arg.to_string()),
            );
        }
        err.insert(
            ContextKind::InvalidValue,
            ContextValue::String(wanted.to_string()),
        );
        err.insert(ContextKind::ValidValue, ContextValue::Strings(names));
        Err(err)
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(Self::all().into_iter().map(|(f, help)| {
            clap::builder::PossibleValue::new(f.name()).help(help)
        })))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Emit {
    /// The compiled model (schema/model.schema.json)
    Model,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    Error,
    Warning,
    Never,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum GraphFormat {
    Mermaid,
    Dot,
    Text,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Color {
    Auto,
    Always,
    Never,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// Deferred subcommands are built only when parsed: build them all here, so that clap's
    /// checks of every argument still run.
    #[test]
    fn every_command_builds() {
        super::Cli::command().debug_assert();
    }
}
