//! GitHub Actions as a platform: workflow commands on stdout (docs/github.md). Secrets are masked
//! with `::add-mask::` before anything else is printed; each stage's lines are one `::group::`
//! with workflow commands stopped inside it (the lines are a child's, untrusted); failures,
//! fallbacks and warnings are `::error`/`::warning` annotations; the run's summary goes to
//! `$GITHUB_STEP_SUMMARY`; `check --format github` writes findings as annotations.

pub mod commands;
pub mod events;
pub mod export;
pub mod scopes;
pub mod syntax;

use std::path::PathBuf;

use reviewflow_engine::platform::{FindingsFormat, HandOver, Level, Lookup, Platform, Words};

use commands::{escape_message, escape_property};

/// The characters `actions/upload-artifact` refuses in a path: a kept folder holding one could
/// not be handed over between the jobs of an exported workflow (docs/export.md).
const ARTIFACT_NAMES: HandOver = HandOver {
    by: "GitHub's artifact upload",
    refused: &['"', ':', '<', '>', '|', '*', '?', '\r', '\n'],
};

/// How its people speak of a change and its jobs, for `check`'s messages.
const WORDS: Words = Words {
    change: "pull request",
    configuration: "workflow",
    secrets: "the repository's secrets",
    token: "the workflow's token",
};

/// The GitHub Actions platform.
#[derive(Debug)]
pub struct GithubActions;

impl Platform for GithubActions {
    fn name(&self) -> &'static str {
        "github"
    }

    fn title(&self) -> &'static str {
        "GitHub Actions"
    }

    fn detected(&self, var: Lookup<'_>) -> bool {
        var("GITHUB_ACTIONS").is_some_and(|v| v == "true")
    }

    fn mask(&self, values: &[String]) -> String {
        let mut out = String::new();
        for v in values {
            out.push_str("::add-mask::");
            out.push_str(&escape_message(v));
            out.push('\n');
        }
        out
    }

    /// A group with workflow commands stopped around its lines: while they are stopped the
    /// runner reads `::…::` in them as text. Only `::<token>::` resumes them, and the token is
    /// drawn now, after the lines were written.
    fn block(&self, title: &str, lines: &[String]) -> String {
        group(title, lines, &reviewflow_engine::run::random_hex(16))
    }

    fn annotation(&self, level: Level, title: Option<&str>, message: &str) -> String {
        annotation(level, title, message)
    }

    fn events(&self) -> &'static [reviewflow_engine::platform::Event] {
        events::TRIGGERS
    }

    fn scopes(&self) -> &'static [reviewflow_engine::platform::Scope] {
        scopes::SCOPES
    }

    fn syntax(&self) -> Option<&'static reviewflow_engine::platform::Syntax> {
        Some(&syntax::SYNTAX)
    }

    fn words(&self) -> &'static Words {
        &WORDS
    }

    fn exporter(&self) -> Option<&dyn reviewflow_engine::export::Exporter> {
        Some(&export::WorkflowExporter)
    }

    fn hand_over(&self) -> Option<&'static HandOver> {
        Some(&ARTIFACT_NAMES)
    }

    /// The files a step writes the job's settings to (docs/github.md: workflow commands).
    fn settings_file(&self, name: &str) -> Option<&'static str> {
        match name {
            "GITHUB_ENV" => Some("the environment of every later step of the job"),
            "GITHUB_PATH" => Some("the `PATH` of every later step of the job"),
            "GITHUB_OUTPUT" => Some("outputs that later steps and jobs interpolate"),
            "GITHUB_STATE" => Some("the state the step's post-action reads"),
            _ => None,
        }
    }

    fn summary_file(&self, var: Lookup<'_>) -> Option<PathBuf> {
        var("GITHUB_STEP_SUMMARY").map(PathBuf::from)
    }

    fn temp_dir(&self, var: Lookup<'_>) -> Option<PathBuf> {
        var("RUNNER_TEMP").map(PathBuf::from)
    }

    fn step_output(&self, var: Lookup<'_>) -> Option<PathBuf> {
        var("GITHUB_OUTPUT").map(PathBuf::from)
    }

    fn public_variable(&self, name: &str) -> bool {
        PUBLIC_VARIABLES.binary_search(&name).is_ok()
    }

    fn findings(&self) -> Option<FindingsFormat> {
        Some(FindingsFormat {
            name: "github",
            help: "GitHub workflow commands (`::error file=…::`), on stdout",
            render: commands::workflow_commands,
        })
    }
}

/// The variables GitHub Actions sets in every job (its documented default variables, sorted),
/// none of them secret: the job's token is `GITHUB_TOKEN`, given only where the workflow passes
/// it, and is not among them.
const PUBLIC_VARIABLES: &[&str] = &[
    "CI",
    "GITHUB_ACTION",
    "GITHUB_ACTIONS",
    "GITHUB_ACTION_PATH",
    "GITHUB_ACTION_REPOSITORY",
    "GITHUB_ACTOR",
    "GITHUB_ACTOR_ID",
    "GITHUB_API_URL",
    "GITHUB_BASE_REF",
    "GITHUB_ENV",
    "GITHUB_EVENT_NAME",
    "GITHUB_EVENT_PATH",
    "GITHUB_GRAPHQL_URL",
    "GITHUB_HEAD_REF",
    "GITHUB_JOB",
    "GITHUB_OUTPUT",
    "GITHUB_PATH",
    "GITHUB_REF",
    "GITHUB_REF_NAME",
    "GITHUB_REF_PROTECTED",
    "GITHUB_REF_TYPE",
    "GITHUB_REPOSITORY",
    "GITHUB_REPOSITORY_ID",
    "GITHUB_REPOSITORY_OWNER",
    "GITHUB_REPOSITORY_OWNER_ID",
    "GITHUB_RETENTION_DAYS",
    "GITHUB_RUN_ATTEMPT",
    "GITHUB_RUN_ID",
    "GITHUB_RUN_NUMBER",
    "GITHUB_SERVER_URL",
    "GITHUB_SHA",
    "GITHUB_STEP_SUMMARY",
    "GITHUB_TRIGGERING_ACTOR",
    "GITHUB_WORKFLOW",
    "GITHUB_WORKFLOW_REF",
    "GITHUB_WORKFLOW_SHA",
    "GITHUB_WORKSPACE",
    "RUNNER_ARCH",
    "RUNNER_DEBUG",
    "RUNNER_ENVIRONMENT",
    "RUNNER_NAME",
    "RUNNER_OS",
    "RUNNER_TEMP",
    "RUNNER_TOOL_CACHE",
];

/// One annotation line: `::error title=<title>::<message>` (`::warning …`), or without the
/// title. The title is escaped as a property (`%`, CR, LF, `:`, `,`), the message as a message
/// (`%`, CR, LF), so neither can end the command or start another.
pub fn annotation(level: Level, title: Option<&str>, message: &str) -> String {
    let level = match level {
        Level::Error => "error",
        Level::Warning => "warning",
    };
    match title {
        Some(t) => format!(
            "::{level} title={}::{}\n",
            escape_property(t),
            escape_message(message)
        ),
        None => format!("::{level}::{}\n", escape_message(message)),
    }
}

/// A group titled `title` holding `lines`, with workflow commands stopped by `token` around them.
pub fn group(title: &str, lines: &[String], token: &str) -> String {
    let mut out = format!(
        "::group::{}\n::stop-commands::{token}\n",
        escape_message(title)
    );
    for l in lines {
        out.push_str(l);
        out.push('\n');
    }
    out.push_str(&format!("::{token}::\n::endgroup::\n"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_public_variables_are_sorted_and_hold_no_token() {
        assert!(PUBLIC_VARIABLES.windows(2).all(|w| w[0] < w[1]));
        assert!(!GithubActions.public_variable("GITHUB_TOKEN"));
        assert!(GithubActions.public_variable("GITHUB_WORKFLOW_REF"));
        assert!(!GithubActions.public_variable("REVIEW_CONVERSATION_KEY"));
    }
}
