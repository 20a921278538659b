//! The reviewers of `std/review`, in one table: the stage's contract gives it to `check`, and
//! the model CLIs' drivers and the proxy read their vendors and credentials from it.

use reviewflow_engine::contract::ReviewerKind;

/// The reviewers: whose model each runs, and the credentials its CLI reads. A vendor's aliases
/// are the reviewers whose vendor it is (`"claude"` means `anthropic`).
pub const REVIEWER_KINDS: &[ReviewerKind] = &[
    ReviewerKind {
        name: "rules",
        vendor: None,
        credentials: &[],
        api_url: None,
        settings: None,
    },
    ReviewerKind {
        name: "command",
        vendor: None,
        credentials: &[],
        api_url: None,
        settings: None,
    },
    ReviewerKind {
        name: "claude",
        vendor: Some("anthropic"),
        credentials: &["ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"],
        api_url: Some("ANTHROPIC_BASE_URL"),
        // Claude Code's settings of its model, its limits and its reporting home.
        settings: Some(&[
            "ANTHROPIC_MODEL",
            "ANTHROPIC_SMALL_FAST_MODEL",
            "CLAUDE_CODE_MAX_OUTPUT_TOKENS",
            "MAX_THINKING_TOKENS",
            "BASH_DEFAULT_TIMEOUT_MS",
            "BASH_MAX_TIMEOUT_MS",
            "DISABLE_TELEMETRY",
            "DISABLE_ERROR_REPORTING",
            "DISABLE_AUTOUPDATER",
            "DISABLE_BUG_COMMAND",
            "DISABLE_COST_WARNINGS",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
        ]),
    },
    ReviewerKind {
        name: "codex",
        vendor: Some("openai"),
        credentials: &["OPENAI_API_KEY", "CODEX_API_KEY"],
        api_url: Some("OPENAI_BASE_URL"),
        // Codex takes its settings from the `config.toml` reviewflow writes, not its environment.
        settings: Some(&[]),
    },
];

/// The reviewers' names, in order.
pub const REVIEWERS: &[&str] = &ReviewerKind::names::<{ REVIEWER_KINDS.len() }>(REVIEWER_KINDS);
