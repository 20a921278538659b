//! GitLab CI as a platform (docs/gitlab.md): detected by `GITLAB_CI=true`. Each stage's lines are
//! one collapsed log section, with every control character of the lines written as text so that
//! none can end the section ([`console`]); warnings and failures are plain lines, GitLab having
//! no annotations; `check --format gitlab` writes a Code Quality report ([`code_quality`]).
//!
//! What GitLab does not have, the platform does not pretend to:
//! - no masking at run time: GitLab masks only the variables the project marks masked, before
//!   the job starts, and no job can add one; reviewflow's own redaction of every secret's value
//!   is the filter ([`Platform::mask`] writes nothing);
//! - no job summary file, and no file a step writes for the jobs after it that the runner names
//!   in a variable: values cross jobs as artifacts the job's configuration names (a `dotenv`
//!   report), so there is no summary file and no step output;
//! - no settings files: a job's later steps read no file an earlier step wrote (a `dotenv`
//!   report reaches later jobs, as an artifact, and is the exporter's to name);
//! - no folder for a job's temporary files that the runner empties after the job.

pub mod code_quality;
pub mod console;
pub mod events;
pub mod export;
pub mod scopes;
pub mod syntax;

use reviewflow_engine::platform::{
    Event, FindingsFormat, Level, Lookup, Platform, Scope, Syntax, Words,
};

/// How its people speak of a change and its jobs, for `check`'s messages.
const WORDS: Words = Words {
    change: "merge request",
    configuration: "CI configuration",
    secrets: "the project's CI/CD variables",
    token: "the job's token",
};

/// The GitLab CI platform.
#[derive(Debug)]
pub struct GitlabCi;

impl Platform for GitlabCi {
    fn name(&self) -> &'static str {
        "gitlab"
    }

    fn title(&self) -> &'static str {
        "GitLab CI"
    }

    fn detected(&self, var: Lookup<'_>) -> bool {
        var("GITLAB_CI").is_some_and(|v| v == "true")
    }

    /// GitLab cannot mask a value at run time: nothing is written.
    fn mask(&self, values: &[String]) -> String {
        let _ = values;
        String::new()
    }

    /// A collapsed section whose name is drawn now, after the lines were written.
    fn block(&self, title: &str, lines: &[String]) -> String {
        let name = format!(
            "{}{}",
            console::SECTION_PREFIX,
            reviewflow_engine::run::random_hex(16)
        );
        console::section(title, lines, &name, console::now())
    }

    fn annotation(&self, level: Level, title: Option<&str>, message: &str) -> String {
        console::annotation(level, title, message)
    }

    /// A run-level line, with its control characters written as text.
    fn line(&self, line: &str) -> String {
        format!("{}\n", console::neutral(line))
    }

    fn public_variable(&self, name: &str) -> bool {
        PUBLIC_VARIABLES.binary_search(&name).is_ok()
    }

    fn findings(&self) -> Option<FindingsFormat> {
        Some(FindingsFormat {
            name: "gitlab",
            help: "A GitLab Code Quality report (JSON), on stdout",
            render: code_quality::report,
        })
    }

    fn events(&self) -> &'static [Event] {
        events::TRIGGERS
    }

    fn scopes(&self) -> &'static [Scope] {
        scopes::SCOPES
    }

    fn syntax(&self) -> Option<&'static Syntax> {
        Some(&syntax::SYNTAX)
    }

    /// `export gitlab`: a `.gitlab-ci.yml` (docs/gitlab.md, "The exported pipeline").
    fn words(&self) -> &'static Words {
        &WORDS
    }

    fn exporter(&self) -> Option<&dyn reviewflow_engine::export::Exporter> {
        Some(&export::PipelineExporter)
    }
}

/// The predefined variables GitLab sets in every job (sorted), none of them secret: whoever can
/// read the job's log or the project knows them. The job's token (`CI_JOB_TOKEN`), the
/// registry's and the dependency proxy's passwords, the deploy token (`CI_DEPLOY_PASSWORD`), ID
/// tokens and `CI_REPOSITORY_URL` (which holds the job's token) are not among them; nor are the
/// variables of some pipelines only (`CI_MERGE_REQUEST_*`, `CI_COMMIT_TAG`, …).
const PUBLIC_VARIABLES: &[&str] = &[
    "CI",
    "CI_API_GRAPHQL_URL",
    "CI_API_V4_URL",
    "CI_BUILDS_DIR",
    "CI_COMMIT_AUTHOR",
    "CI_COMMIT_BEFORE_SHA",
    "CI_COMMIT_DESCRIPTION",
    "CI_COMMIT_MESSAGE",
    "CI_COMMIT_REF_NAME",
    "CI_COMMIT_REF_PROTECTED",
    "CI_COMMIT_REF_SLUG",
    "CI_COMMIT_SHA",
    "CI_COMMIT_SHORT_SHA",
    "CI_COMMIT_TIMESTAMP",
    "CI_COMMIT_TITLE",
    "CI_CONCURRENT_ID",
    "CI_CONCURRENT_PROJECT_ID",
    "CI_CONFIG_PATH",
    "CI_DEFAULT_BRANCH",
    "CI_JOB_ID",
    "CI_JOB_NAME",
    "CI_JOB_NAME_SLUG",
    "CI_JOB_STAGE",
    "CI_JOB_STARTED_AT",
    "CI_JOB_TIMEOUT",
    "CI_JOB_URL",
    "CI_NODE_TOTAL",
    "CI_PIPELINE_CREATED_AT",
    "CI_PIPELINE_ID",
    "CI_PIPELINE_IID",
    "CI_PIPELINE_SOURCE",
    "CI_PIPELINE_URL",
    "CI_PROJECT_DIR",
    "CI_PROJECT_ID",
    "CI_PROJECT_NAME",
    "CI_PROJECT_NAMESPACE",
    "CI_PROJECT_NAMESPACE_ID",
    "CI_PROJECT_PATH",
    "CI_PROJECT_PATH_SLUG",
    "CI_PROJECT_ROOT_NAMESPACE",
    "CI_PROJECT_TITLE",
    "CI_PROJECT_URL",
    "CI_PROJECT_VISIBILITY",
    "CI_RUNNER_DESCRIPTION",
    "CI_RUNNER_ID",
    "CI_RUNNER_REVISION",
    "CI_RUNNER_SHORT_TOKEN",
    "CI_RUNNER_TAGS",
    "CI_RUNNER_VERSION",
    "CI_SERVER",
    "CI_SERVER_FQDN",
    "CI_SERVER_HOST",
    "CI_SERVER_NAME",
    "CI_SERVER_PORT",
    "CI_SERVER_PROTOCOL",
    "CI_SERVER_REVISION",
    "CI_SERVER_URL",
    "CI_SERVER_VERSION",
    "CI_SERVER_VERSION_MAJOR",
    "CI_SERVER_VERSION_MINOR",
    "CI_SERVER_VERSION_PATCH",
    "GITLAB_CI",
    "GITLAB_FEATURES",
    "GITLAB_USER_EMAIL",
    "GITLAB_USER_ID",
    "GITLAB_USER_LOGIN",
    "GITLAB_USER_NAME",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detected_by_gitlab_ci_true_only() {
        let with = |value: Option<&'static str>| {
            move |name: &str| {
                (name == "GITLAB_CI")
                    .then_some(value)
                    .flatten()
                    .map(str::to_owned)
            }
        };
        assert!(GitlabCi.detected(&with(Some("true"))));
        assert!(!GitlabCi.detected(&with(Some("false"))));
        assert!(!GitlabCi.detected(&with(Some(""))));
        assert!(!GitlabCi.detected(&with(None)));
        let github = |name: &str| (name == "GITHUB_ACTIONS").then(|| "true".to_owned());
        assert!(!GitlabCi.detected(&github));
    }

    #[test]
    fn the_public_variables_are_sorted_and_hold_no_token() {
        assert!(PUBLIC_VARIABLES.windows(2).all(|w| w[0] < w[1]));
        for secret in [
            "CI_JOB_TOKEN",
            "CI_JOB_JWT",
            "CI_REGISTRY_PASSWORD",
            "CI_DEPENDENCY_PROXY_PASSWORD",
            "CI_DEPLOY_PASSWORD",
            "CI_REPOSITORY_URL",
            "REVIEW_CONVERSATION_KEY",
        ] {
            assert!(!GitlabCi.public_variable(secret), "{secret}");
        }
        assert!(GitlabCi.public_variable("CI_PROJECT_ID"));
        assert!(GitlabCi.public_variable("CI_COMMIT_SHA"));
    }

    #[test]
    fn nothing_is_masked_and_there_is_no_summary_output_or_temp_folder() {
        let all = |_: &str| Some("/somewhere".to_owned());
        assert_eq!(GitlabCi.mask(&["a secret value".into()]), "");
        assert!(GitlabCi.summary_file(&all).is_none());
        assert!(GitlabCi.step_output(&all).is_none());
        assert!(GitlabCi.temp_dir(&all).is_none());
        assert!(GitlabCi.settings_file("GITLAB_ENV").is_none());
    }

    #[test]
    fn a_run_level_line_is_one_line_of_text() {
        assert_eq!(
            GitlabCi.line("run \x1b[0Ksection_end:1:x\r\x1b[0K\nok"),
            "run \\u{1b}[0Ksection_end:1:x\\u{d}\\u{1b}[0K\\u{a}ok\n"
        );
    }

    #[test]
    fn each_block_is_its_own_section() {
        let a = GitlabCi.block("t", &["x".into()]);
        let b = GitlabCi.block("t", &["x".into()]);
        assert_ne!(a, b, "a fresh name each time");
        let name = |s: &str| {
            s.split(':')
                .nth(2)
                .and_then(|n| n.split('[').next())
                .map(str::to_owned)
        };
        let first = name(&a).unwrap_or_default();
        assert!(first.starts_with(console::SECTION_PREFIX));
        assert_eq!(first.len(), console::SECTION_PREFIX.len() + 32);
        assert!(a.contains(&format!(":{first}\r\x1b[0K\n")), "{a:?}");
    }
}
