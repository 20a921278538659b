//! Which variables a stage may declare with `env` for its reviewer: one rule, called by each
//! reviewer when it starts and by `check` through `std/review`'s contract (`run-refusal`), so
//! that the two refuse the same names with the same words.

use super::kinds::ModelCli;

/// Why `reviewer` (`"claude"`, `"command"`, …) refuses `env "<name>"`, if it does.
pub fn refusal(reviewer: &str, name: &str) -> Option<String> {
    let reserved = || format!("the variable {name} is set by reviewflow and cannot be declared");
    if name.starts_with("REVIEWFLOW_") {
        return Some(reserved());
    }
    let cli = ModelCli::from_name(reviewer)?;
    // A model CLI's home, configuration and temp folder are the try folder reviewflow writes.
    if ["HOME", "CODEX_HOME", "TMPDIR"].contains(&name) {
        return Some(reserved());
    }
    cli.credentials()
        .contains(&name)
        .then(|| format!("{name} is a credential: declare it with `secret-env`, not `env`"))
}

/// Why `reviewer` refuses `secret-env "<var>"` given `secrets` secrets, if it does. Several
/// secrets on a line are accounts, which only the model API proxy can switch: under a variable
/// that is no model's credential the program would hold one key and never switch. A model CLI
/// takes nothing but its credential (`reviewer-credential` says so), so it is not judged here.
pub fn accounts_refusal(reviewer: &str, var: &str, secrets: usize) -> Option<String> {
    if secrets < 2 || ModelCli::from_name(reviewer).is_some() {
        return None;
    }
    let credentials: Vec<&str> = super::kinds::REVIEWER_KINDS
        .iter()
        .flat_map(|k| k.credentials.iter().copied())
        .collect();
    (!credentials.contains(&var)).then(|| {
        format!(
            "{var} is no model's credential ({}): several secrets on it are accounts only the \
             model API proxy can switch; give it one secret",
            credentials.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::{accounts_refusal, refusal};

    #[test]
    fn several_secrets_on_a_line_are_for_a_proxied_model_key_only() {
        assert!(accounts_refusal("command", "ANTHROPIC_API_KEY", 2).is_none());
        assert!(accounts_refusal("command", "OPENAI_API_KEY", 3).is_none());
        assert!(accounts_refusal("command", "LLM_API_KEY", 1).is_none());
        let why = accounts_refusal("command", "LLM_API_KEY", 2).expect("refused");
        assert!(
            why.starts_with("LLM_API_KEY is no model's credential"),
            "{why}"
        );
        // A model CLI's other variables are `reviewer-credential`'s to report.
        assert!(accounts_refusal("claude", "LLM_API_KEY", 2).is_none());
    }

    #[test]
    fn every_reviewer_refuses_the_engines_variables_and_a_cli_its_home_and_key() {
        assert!(refusal("command", "REVIEWFLOW_X").is_some());
        assert!(refusal("command", "HOME").is_none());
        assert!(refusal("claude", "HOME").is_some());
        assert!(refusal("codex", "CODEX_HOME").is_some());
        assert!(refusal("claude", "TMPDIR").is_some());
        assert!(refusal("claude", "ANTHROPIC_API_KEY").is_some());
        assert!(refusal("claude", "LANG").is_none());
    }
}
