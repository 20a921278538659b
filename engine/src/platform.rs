//! Platforms: where a run happens when it is not on a person's machine (docs/platforms.md). A
//! platform is a registered kind, like a forge or a store: the engine asks it how to write what
//! a run prints (a block of a stage's lines, an annotation, the secrets to mask), where the
//! run's summary goes, and how `check` writes its findings for it. The engine names none.

use std::path::PathBuf;

use crate::finding::Finding;
use crate::source::Source;

/// How grave an annotation is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Error,
    Warning,
}

/// How a variable of the run's environment is read (`None`: not set).
pub type Lookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The findings of several files, each with its source.
pub type FileFindings<'a> = [(&'a Source, &'a [Finding])];

/// Findings as a platform shows them (`check --format <name>`).
#[derive(Clone, Copy, Debug)]
pub struct FindingsFormat {
    /// The value of `--format`.
    pub name: &'static str,
    /// What it writes, for `--help`.
    pub help: &'static str,
    /// The findings of every file, as the platform reads them. Allowed findings are the
    /// format's to keep or leave out.
    pub render: fn(&FileFindings<'_>) -> String,
}

/// A platform's console and findings format.
pub trait Platform: Send + Sync + std::fmt::Debug {
    /// The platform's kind, as `check --format` and `export` name it.
    fn name(&self) -> &'static str;

    /// Its name for people.
    fn title(&self) -> &'static str;

    /// Whether the run happens on it, from the environment.
    fn detected(&self, var: Lookup<'_>) -> bool;

    /// What to print before anything else so that each of `values` is hidden in the log from
    /// then on; empty where the platform cannot mask at run time.
    fn mask(&self, values: &[String]) -> String;

    /// A stage's lines as one block titled `title`. The lines are untrusted (a child's output):
    /// nothing in them may be read by the platform as a command.
    fn block(&self, title: &str, lines: &[String]) -> String;

    /// An annotation of the run: `title` (a stage's name) and `message` are untrusted text.
    fn annotation(&self, level: Level, title: Option<&str>, message: &str) -> String;

    /// A run-level line (fixed words and names from the pipeline file).
    fn line(&self, line: &str) -> String {
        format!("{}\n", line.replace(['\r', '\n'], " "))
    }

    /// The file the run's summary (markdown) is appended to, if the platform keeps one.
    fn summary_file(&self, var: Lookup<'_>) -> Option<PathBuf> {
        let _ = var;
        None
    }

    /// The folder the platform keeps for a job's temporary files, emptied after the job.
    fn temp_dir(&self, var: Lookup<'_>) -> Option<PathBuf> {
        let _ = var;
        None
    }

    /// The file a step's outputs are written to (`name=value` lines), which the platform hands
    /// to the jobs after it: where `run` writes its run's id for the next job to resume.
    fn step_output(&self, var: Lookup<'_>) -> Option<PathBuf> {
        let _ = var;
        None
    }

    /// Whether the platform sets the variable `name` itself in every job, where whoever reads
    /// the job's configuration or log can know its value: no secret can be read from it.
    fn public_variable(&self, name: &str) -> bool {
        let _ = name;
        false
    }

    /// How `check` writes findings for it, if it reads them.
    fn findings(&self) -> Option<FindingsFormat> {
        None
    }
}
