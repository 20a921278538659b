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

#[cfg(test)]
mod tests {
    use super::refusal;

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
