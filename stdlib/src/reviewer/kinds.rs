//! The reviewers of `std/review`, in one table: the stage's contract gives it to `check`, and
//! the model CLIs ([`ModelCli`]), their drivers and the proxy read their vendors and credentials
//! from it.

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

/// Never used: every CLI has its entry in `REVIEWER_KINDS` (a unit test says so).
const MISSING: ReviewerKind = ReviewerKind {
    name: "",
    vendor: None,
    credentials: &[],
    api_url: None,
    settings: None,
};

/// Which CLI.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelCli {
    Claude,
    Codex,
}

impl ModelCli {
    /// The kind's name in a pipeline (`reviewer "claude"`) and the program looked up in PATH.
    pub fn name(self) -> &'static str {
        match self {
            ModelCli::Claude => "claude",
            ModelCli::Codex => "codex",
        }
    }

    /// Its entry in the contract of `std/review`: the one table of vendors and credentials.
    fn kind(self) -> &'static ReviewerKind {
        REVIEWER_KINDS
            .iter()
            .find(|k| k.name == self.name())
            .unwrap_or(&MISSING)
    }

    /// The company whose models it runs.
    pub fn vendor(self) -> &'static str {
        self.kind().vendor.unwrap_or("unknown")
    }

    /// The variables that may carry its credential: nothing else secret reaches the CLI.
    pub fn credentials(self) -> &'static [&'static str] {
        self.kind().credentials
    }

    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "claude" => Some(ModelCli::Claude),
            "codex" => Some(ModelCli::Codex),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_cli_has_its_vendor_and_credentials_in_the_contract() {
        assert_eq!(ModelCli::Claude.vendor(), "anthropic");
        assert_eq!(ModelCli::Codex.vendor(), "openai");
        for cli in [ModelCli::Claude, ModelCli::Codex] {
            assert!(!cli.credentials().is_empty());
            assert_eq!(ModelCli::from_name(cli.name()), Some(cli));
        }
    }
}
