//! The scopes of a GitHub Actions token (the workflow's `permissions:`), with what a write in
//! each can do. Only `discussions` and `issues` inform (a comment, a label on an issue); a write
//! in any other scope acts: it approves a pull request (`pull-requests`: an approval counts
//! toward a required review), passes a required check (`checks`, `statuses`), changes the
//! repository's code, runs a workflow, publishes a package or a page, deploys, or signs
//! (docs/checks.md, `fail-closed`'s steered part).

use reviewflow_engine::platform::Scope;

const fn acts(name: &'static str) -> Scope {
    Scope {
        name,
        acts: true,
        records_verdict: false,
    }
}

const fn informs(name: &'static str) -> Scope {
    Scope {
        name,
        acts: false,
        records_verdict: false,
    }
}

/// A scope whose writes record a verdict on the change: a commit status, a check run, a label,
/// a review or a merge of the pull request.
const fn records_verdict(name: &'static str) -> Scope {
    Scope {
        name,
        acts: true,
        records_verdict: true,
    }
}

pub const SCOPES: &[Scope] = &[
    acts("actions"),
    acts("attestations"),
    records_verdict("checks"),
    acts("contents"),
    acts("deployments"),
    informs("discussions"),
    acts("id-token"),
    informs("issues"),
    acts("models"),
    acts("packages"),
    acts("pages"),
    records_verdict("pull-requests"),
    acts("security-events"),
    records_verdict("statuses"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scopes_are_sorted_and_only_two_inform() {
        assert!(SCOPES.windows(2).all(|w| w[0].name < w[1].name));
        let informing: Vec<&str> = SCOPES.iter().filter(|s| !s.acts).map(|s| s.name).collect();
        assert_eq!(informing, ["discussions", "issues"]);
        assert!(SCOPES.iter().all(|s| !s.records_verdict || s.acts));
    }
}
