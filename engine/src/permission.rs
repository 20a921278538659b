//! Forge permissions as GitHub names them: `scope:read` or `scope:write`.

use crate::model::{Access, Permission};

/// The scopes of a GitHub Actions token.
pub const SCOPES: &[&str] = &[
    "actions",
    "attestations",
    "checks",
    "contents",
    "deployments",
    "discussions",
    "id-token",
    "issues",
    "models",
    "packages",
    "pages",
    "pull-requests",
    "security-events",
    "statuses",
];

/// The scopes whose writes only say something about the change, to people: a comment, a label.
/// A write in any other scope acts (principle 2: a capability can do anything its kind can): it
/// approves a pull request (`pull-requests`: an approval counts toward a required review),
/// passes a required check (`checks`, `statuses`), changes the repository's code, runs a
/// workflow, publishes a package or a page, deploys, or signs (docs/checks.md, `fail-closed`'s
/// steered part). A scope not listed here acts.
pub const INFORMING: &[&str] = &["discussions", "issues"];

/// Whether `p` is a write that acts (see [`INFORMING`]).
pub fn acts(p: &Permission) -> bool {
    p.access == Access::Write && !INFORMING.contains(&p.scope.as_str())
}

pub fn parse_permission(word: &str) -> Result<Permission, String> {
    let Some((scope, access)) = word.split_once(':') else {
        return Err(format!(
            "`{word}` is not a permission: write `scope:read` or `scope:write`"
        ));
    };
    if !SCOPES.contains(&scope) {
        let hint =
            crate::suggest::help_text(&crate::suggest::did_you_mean(scope, SCOPES.iter().copied()))
                .map(|h| format!(" ({h})"))
                .unwrap_or_default();
        return Err(format!("`{scope}` is not a permission scope{hint}"));
    }
    let access = match access {
        "read" => Access::Read,
        "write" => Access::Write,
        other => {
            return Err(format!(
                "`{other}` is not an access level: write `read` or `write`"
            ));
        }
    };
    Ok(Permission {
        scope: scope.into(),
        access,
    })
}

/// What a secret can do on the forge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Capability<'a> {
    /// What its `can=` says.
    Declared(&'a [crate::span::Spanned<Permission>]),
    /// A `can=` that a stage writing with the secret contradicts ([`contradicting_write`]): a
    /// declared capability is held against what the pipeline does, so it may do anything.
    Contradicted(&'a [crate::span::Spanned<Permission>]),
    /// No `can=`, and a forge token (the forge's `token=`, or a job's own token by a variable a
    /// registered forge names, [`job_token`]): it may do anything the token was granted, writes
    /// included.
    ForgeToken,
    /// No `can=`, and a secret of no known kind (a deploy token, a webhook, a model's key under
    /// a variable no model's client reads): unknown authority can do anything its kind can
    /// (docs/checks.md, principle 2), so it is taken to write.
    Undeclared,
    /// No `can=`, and of a kind known to do nothing on the forge: a model's key, known by the
    /// variable a model's client reads it from, or a key that only seals and opens
    /// conversations.
    Nothing,
}

impl Capability<'_> {
    /// Whether it can write anything.
    pub fn writes(self) -> bool {
        match self {
            Self::Declared(list) => list.iter().any(|p| p.value.access == Access::Write),
            Self::ForgeToken | Self::Undeclared | Self::Contradicted(_) => true,
            Self::Nothing => false,
        }
    }

    /// Whether it can do `wanted` (`scope:write` also reads its scope).
    pub fn covers(self, wanted: &Permission) -> bool {
        match self {
            Self::Declared(list) => list
                .iter()
                .any(|p| p.value.scope == wanted.scope && p.value.access >= wanted.access),
            Self::ForgeToken | Self::Undeclared | Self::Contradicted(_) => true,
            Self::Nothing => false,
        }
    }

    /// Its write permissions, as written (`pull-requests:write checks:write`); for a forge token
    /// without `can=`, "any"; for a secret of no known kind, why it counts as writing.
    pub fn describe_writes(self) -> String {
        match self {
            Self::Declared(list) => {
                let words: Vec<String> = list
                    .iter()
                    .filter(|p| p.value.access == Access::Write)
                    .map(|p| p.value.to_string())
                    .collect();
                words.join(" ")
            }
            Self::ForgeToken => "whatever the token was granted".into(),
            Self::Contradicted(_) => {
                "more than its `can=` says: a stage that holds it writes with it".into()
            }
            Self::Undeclared => {
                "anything: it has no `can=`, and unknown authority can do anything its kind can"
                    .into()
            }
            Self::Nothing => String::new(),
        }
    }
}

/// Whether a secret read from `variable` is a registered forge's job token (its power is the
/// job's permissions: what a forge contract names in `believed.job_token_env`).
pub fn job_token(registry: &crate::registry::Registry, variable: &str) -> bool {
    registry
        .forges()
        .filter_map(|f| f.believed.as_ref())
        .any(|b| b.job_token_env.contains(&variable))
}

/// What secret `k` of `pipeline` can do on the forge. The kinds a secret is known by are the
/// registry's: the credential variables of its reviewers, and the key slot of a stage that binds
/// a blob.
pub fn capability<'p>(
    registry: &crate::registry::Registry,
    pipeline: &'p crate::model::Pipeline,
    k: usize,
) -> Capability<'p> {
    let secret = &pipeline.secrets[k];
    if let Some(can) = &secret.can {
        if contradicting_write(registry, pipeline, k).is_some() {
            return Capability::Contradicted(&can.value);
        }
        return Capability::Declared(&can.value);
    }
    let forge_token = crate::flow::forge_token(pipeline) == Some(secret.name.value.as_str());
    if forge_token || job_token(registry, &secret.env.value) {
        return Capability::ForgeToken;
    }
    let model_key = registry
        .contracts()
        .flat_map(|c| c.reviewers())
        .any(|kind| kind.credentials.contains(&secret.env.value.as_str()));
    if model_key || sealing_key(registry, pipeline, &secret.env.value) {
        Capability::Nothing
    } else {
        Capability::Undeclared
    }
}

/// A write that a stage does with secret `k` and its `can=` does not cover: (stage, permission).
/// A stage whose contract knows what it does (`std/post`, not a `run` stage) writes with the
/// forge's token when it holds it; a `run` stage's writes are `permissions`' own finding.
pub fn contradicting_write<'p>(
    registry: &crate::registry::Registry,
    pipeline: &'p crate::model::Pipeline,
    k: usize,
) -> Option<(usize, &'p crate::span::Spanned<Permission>)> {
    let secret = &pipeline.secrets[k];
    let can = &secret.can.as_ref()?.value;
    if crate::flow::forge_token(pipeline) != Some(secret.name.value.as_str()) {
        return None;
    }
    let declared = Capability::Declared(can);
    pipeline.stages.iter().enumerate().find_map(|(i, stage)| {
        let holds = secret
            .visible_to
            .iter()
            .any(|v| v.value == stage.name.value);
        let known = registry
            .get(&stage.uses.value)
            .is_some_and(|c| !c.opaque && crate::flow::uses_forge(c));
        if !(holds && known) {
            return None;
        }
        stage
            .permissions
            .iter()
            .find(|w| w.value.access == Access::Write && !declared.covers(&w.value))
            .map(|w| (i, w))
    })
}

/// Whether a secret read from `var` seals or opens conversations: some secret read from it is
/// the key slot of a stage that binds a blob (a `std/seal` or `std/restore` key). A key is known
/// by that use even where it is also held elsewhere (`secret-scope`'s finding) or aliased
/// (`secret-alias`'s).
pub fn sealing_key(
    registry: &crate::registry::Registry,
    pipeline: &crate::model::Pipeline,
    var: &str,
) -> bool {
    use crate::contract::Role;
    use crate::model::Value;
    let names: Vec<&str> = pipeline
        .secrets
        .iter()
        .filter(|s| s.env.value == var)
        .map(|s| s.name.value.as_str())
        .collect();
    pipeline.stages.iter().any(|stage| {
        let Some(contract) = registry.get(&stage.uses.value) else {
            return false;
        };
        if !contract.children.iter().any(|s| s.role == Role::Binding) {
            return false;
        }
        stage.children.iter().any(|child| {
            contract.child_spec(&child.name.value).map(|s| s.role) == Some(Role::SecretSlot)
                && child
                    .values()
                    .any(|v| matches!(&v.value, Value::Secret(s) if names.contains(&s.as_str())))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::span::{Span, Spanned};

    fn list(words: &[&str]) -> Vec<Spanned<Permission>> {
        words
            .iter()
            .map(|w| Spanned::new(parse_permission(w).expect("a permission"), Span::default()))
            .collect()
    }

    #[test]
    fn a_write_acts_unless_it_only_says_something() {
        let acting: Vec<&str> = SCOPES
            .iter()
            .copied()
            .filter(|scope| acts(&parse_permission(&format!("{scope}:write")).expect("a scope")))
            .collect();
        // Every scope is judged; the informing ones are the exceptions, written down.
        assert_eq!(acting.len() + INFORMING.len(), SCOPES.len());
        assert!(acting.contains(&"contents") && acting.contains(&"id-token"));
        assert!(acting.contains(&"pull-requests") && acting.contains(&"checks"));
        assert!(!acting.contains(&"issues"));
        // A read never acts.
        assert!(!acts(
            &parse_permission("contents:read").expect("a permission")
        ));
    }

    #[test]
    fn a_write_covers_the_read_of_its_scope_only() {
        let can = list(&["pull-requests:write", "contents:read"]);
        let c = Capability::Declared(&can);
        let p = |w: &str| parse_permission(w).expect("a permission");
        assert!(c.writes());
        assert!(c.covers(&p("pull-requests:write")));
        assert!(c.covers(&p("pull-requests:read")));
        assert!(c.covers(&p("contents:read")));
        assert!(!c.covers(&p("contents:write")));
        assert!(!c.covers(&p("checks:write")));
        assert_eq!(c.describe_writes(), "pull-requests:write");
    }

    #[test]
    fn only_reads_and_nothing_do_not_write() {
        let reads = list(&["contents:read", "issues:read"]);
        assert!(!Capability::Declared(&reads).writes());
        assert!(!Capability::Declared(&[]).writes());
        assert!(!Capability::Nothing.writes());
        assert!(Capability::ForgeToken.writes());
    }
}
