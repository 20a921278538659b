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

/// Whose configuration (the job's definition, and so the pipeline file it runs) the job an
/// event starts runs, and what it checks out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventRuns {
    /// The base branch's configuration, with the base checked out: what the change's author
    /// cannot rewrite.
    Base,
    /// The change's own configuration, with the change checked out: its author writes both.
    Change,
    /// Whatever ref the one who starts it picks, a change's branch included.
    Chosen,
}

/// One of a platform's trigger events, as `check` and lowering reason with it (principle 3: an
/// event the platform does not list is refused).
#[derive(Clone, Copy, Debug)]
pub struct Event {
    /// The name `trigger` takes.
    pub name: &'static str,
    pub runs: EventRuns,
    /// What its job checks out, in words, for a message ("the base branch").
    pub checks_out: &'static str,
    /// The activity types `types` may name; empty for an event about no change, which takes
    /// neither `types` nor `branches`.
    pub types: &'static [&'static str],
    /// The types it runs on without `types`.
    pub default_types: &'static [&'static str],
    /// The type a push to the change fires: `types` without it start no review of a push.
    pub push_type: Option<&'static str>,
    /// The type fired when a draft change is marked ready for review: `types` without it leave
    /// a draft a pipeline skipped unreviewed until the next push.
    pub ready_type: Option<&'static str>,
}

impl Event {
    /// Whether it is about a change (and takes `types` and `branches`).
    pub fn about_a_change(&self) -> bool {
        !self.types.is_empty()
    }
}

/// A scope of a platform's job token (`permissions="scope:write"`), with what a write in it
/// can do (principle 2: a capability can do anything its kind can).
#[derive(Clone, Copy, Debug)]
pub struct Scope {
    pub name: &'static str,
    /// A write in it acts (approves, passes a check, changes code, runs, publishes, deploys,
    /// signs) rather than only saying something to people (a comment, a label).
    pub acts: bool,
    /// A write in it records a verdict on the change (a status, a check, an approval).
    pub records_verdict: bool,
}

/// What a platform's configuration holds of the file's words, written there by `export`: a
/// trigger's `branches` patterns and a secret's `environment=`, each with its rule in words.
#[derive(Clone, Copy, Debug)]
pub struct Syntax {
    pub branch_pattern: fn(&str) -> bool,
    pub branch_pattern_rule: &'static str,
    /// A filter of negations only is refused, and why ("…needs one to negate from").
    pub negations_only: Option<&'static str>,
    pub environment: fn(&str) -> bool,
    pub environment_rule: &'static str,
}

/// The words a platform's people use, for messages about its events: a finding speaks of a
/// change, its configuration, its secrets and its token as the platform names them.
#[derive(Clone, Copy, Debug)]
pub struct Words {
    /// A change under review ("pull request").
    pub change: &'static str,
    /// What defines its jobs, which a change that edits it controls ("workflow").
    pub configuration: &'static str,
    /// Where the secrets a job is given are kept ("the repository's secrets").
    pub secrets: &'static str,
    /// The token every job is given ("the workflow's token").
    pub token: &'static str,
}

impl Words {
    /// For an event no platform lists.
    pub const GENERIC: Words = Words {
        change: "change",
        configuration: "CI configuration",
        secrets: "the project's secrets",
        token: "the job's own token",
    };
}

/// How a platform hands a run over between the jobs of an exported pipeline, where that refuses
/// some names: a kept folder holding one could not be handed over, so `run` refuses to keep it,
/// on any machine (a run that works locally must not fail only in the pipeline).
#[derive(Clone, Copy, Debug)]
pub struct HandOver {
    /// What refuses, for the message ("the artifact upload of …").
    pub by: &'static str,
    /// The characters it refuses anywhere in a file's or folder's name.
    pub refused: &'static [char],
}

impl HandOver {
    /// The refused characters as the message lists them: printable ones quoted, CR and LF and
    /// other controls by name.
    pub fn refused_in_words(&self) -> String {
        let printable: Vec<String> = self
            .refused
            .iter()
            .filter(|c| !c.is_control())
            .map(char::to_string)
            .collect();
        let mut parts = Vec::new();
        if !printable.is_empty() {
            parts.push(format!("`{}`", printable.join(" ")));
        }
        for c in self.refused.iter().filter(|c| c.is_control()) {
            parts.push(match c {
                '\r' => "CR".to_string(),
                '\n' => "LF".to_string(),
                other => format!("U+{:04X}", u32::from(*other)),
            });
        }
        match parts.split_last() {
            Some((last, [])) => last.clone(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => String::new(),
        }
    }
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

    /// The events a `trigger` may name on it.
    fn events(&self) -> &'static [Event] {
        &[]
    }

    /// The scopes of its job token that `permissions=` may name.
    fn scopes(&self) -> &'static [Scope] {
        &[]
    }

    /// The words its configuration holds (`branches`, `environment=`); none: it holds none.
    fn syntax(&self) -> Option<&'static Syntax> {
        None
    }

    /// What the runner reads back from the file variable `name` names, if it is one of the
    /// job's settings files ("the environment of every later step of the job"): a step that
    /// writes there sets what later steps run with.
    fn settings_file(&self, name: &str) -> Option<&'static str> {
        let _ = name;
        None
    }

    /// What `export <name>` writes for it, if it exports.
    fn exporter(&self) -> Option<&dyn crate::export::Exporter> {
        None
    }

    /// The words its people use for a change, a job's configuration, its secrets and its token.
    fn words(&self) -> &'static Words {
        &Words::GENERIC
    }

    /// The names its hand-over of a run between jobs refuses, if it refuses any.
    fn hand_over(&self) -> Option<&'static HandOver> {
        None
    }
}

/// A made-up platform for the engine's own tests: its events and nothing else, so that no test
/// of the engine depends on a real platform's names.
#[cfg(test)]
pub(crate) mod testing {
    use super::{Event, EventRuns, Level, Lookup, Platform, Scope, Syntax};

    const TYPES: &[&str] = &["opened", "pushed", "closed"];

    /// `change-base` runs the base's configuration, `change-own` the change's, `by-hand` any
    /// ref.
    const EVENTS: &[Event] = &[
        Event {
            name: "change-base",
            runs: EventRuns::Base,
            checks_out: "the base",
            types: TYPES,
            default_types: &["opened", "pushed"],
            push_type: Some("pushed"),
            ready_type: None,
        },
        Event {
            name: "change-own",
            runs: EventRuns::Change,
            checks_out: "the change",
            types: TYPES,
            default_types: &["opened", "pushed"],
            push_type: Some("pushed"),
            ready_type: None,
        },
        Event {
            name: "by-hand",
            runs: EventRuns::Chosen,
            checks_out: "any ref",
            types: &[],
            default_types: &[],
            push_type: None,
            ready_type: None,
        },
    ];

    #[derive(Debug)]
    pub(crate) struct TestPlatform;

    impl Platform for TestPlatform {
        fn name(&self) -> &'static str {
            "test"
        }
        fn title(&self) -> &'static str {
            "a test platform"
        }
        fn detected(&self, _var: Lookup<'_>) -> bool {
            false
        }
        fn mask(&self, _values: &[String]) -> String {
            String::new()
        }
        fn block(&self, title: &str, lines: &[String]) -> String {
            format!("{title}\n{}", lines.join("\n"))
        }
        fn annotation(&self, _level: Level, _title: Option<&str>, message: &str) -> String {
            message.to_owned()
        }
        fn events(&self) -> &'static [Event] {
            EVENTS
        }
        fn scopes(&self) -> &'static [Scope] {
            SCOPES
        }
        fn syntax(&self) -> Option<&'static Syntax> {
            Some(&SYNTAX)
        }
    }

    /// Lower-case words; environments of letters alone.
    const SYNTAX: Syntax = Syntax {
        branch_pattern: |w| {
            let body = w.strip_prefix('!').unwrap_or(w);
            !body.is_empty() && body.bytes().all(|b| b.is_ascii_lowercase() || b == b'*')
        },
        branch_pattern_rule: "lower-case letters and `*`, `!` first",
        negations_only: Some("a filter needs a pattern to negate from"),
        environment: |n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_alphabetic()),
        environment_rule: "letters",
    };

    /// `notes` only informs, `verdicts` records a verdict, `code` acts.
    const SCOPES: &[Scope] = &[
        Scope {
            name: "notes",
            acts: false,
            records_verdict: false,
        },
        Scope {
            name: "verdicts",
            acts: true,
            records_verdict: true,
        },
        Scope {
            name: "code",
            acts: true,
            records_verdict: false,
        },
    ];
}
