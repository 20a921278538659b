//! The scopes of a GitLab project or group access token, and those a deploy token adds
//! (`read_package_registry`, `write_package_registry`), as `permissions=` names them
//! (`api:write`), with what a write in each can do (docs/gitlab.md, Scopes).
//!
//! A GitLab scope says its access itself (`read_api`, `write_repository`): a `read_*` scope
//! grants no write, so a write declared in one can do nothing and is taken not to act. `api`
//! writes everything the token's role may, commit statuses, approvals and merges of a merge
//! request among them: it records a verdict. Every other scope that writes acts: it pushes code
//! (`write_repository`), publishes an image or a package (`write_registry`,
//! `write_package_registry`), registers or changes a runner, which then runs jobs
//! (`create_runner`, `manage_runner`), reaches a cluster (`k8s_proxy`), renews its own token
//! (`self_rotate`), or calls GitLab Duo on the project (`ai_features`, taken to act for want of
//! a narrower description: principle 2).

use reviewflow_engine::platform::Scope;

const fn acts(name: &'static str) -> Scope {
    Scope {
        name,
        acts: true,
        records_verdict: false,
    }
}

/// A scope that grants reads alone.
const fn reads(name: &'static str) -> Scope {
    Scope {
        name,
        acts: false,
        records_verdict: false,
    }
}

/// The scope whose writes record a verdict on the change: a commit status, an approval, a merge.
const fn records_verdict(name: &'static str) -> Scope {
    Scope {
        name,
        acts: true,
        records_verdict: true,
    }
}

pub const SCOPES: &[Scope] = &[
    acts("ai_features"),
    records_verdict("api"),
    acts("create_runner"),
    acts("k8s_proxy"),
    acts("manage_runner"),
    reads("read_api"),
    reads("read_package_registry"),
    reads("read_registry"),
    reads("read_repository"),
    acts("self_rotate"),
    acts("write_package_registry"),
    acts("write_registry"),
    acts("write_repository"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scopes_are_sorted_and_only_reads_do_not_act() {
        assert!(SCOPES.windows(2).all(|w| w[0].name < w[1].name));
        for s in SCOPES {
            assert_eq!(s.acts, !s.name.starts_with("read_"), "{}", s.name);
            assert!(!s.records_verdict || s.acts);
        }
        let verdicts: Vec<&str> = SCOPES
            .iter()
            .filter(|s| s.records_verdict)
            .map(|s| s.name)
            .collect();
        assert_eq!(verdicts, ["api"]);
    }

    #[test]
    fn no_scope_shares_a_name_with_another_platforms() {
        for s in SCOPES {
            assert!(
                crate::platform::github::scopes::SCOPES
                    .iter()
                    .all(|g| g.name != s.name),
                "{}",
                s.name
            );
        }
    }
}
