//! Permissions of a platform's job token: `scope:read` or `scope:write`. The scopes, and what a
//! write in each can do, are the platform's (`Platform::scopes`).

use crate::model::{Access, Permission};

/// Whether `p` is a write that acts: one in a scope the platform does not list as only
/// informing (principle 2: a scope no platform describes can do anything).
pub fn acts(registry: &crate::registry::Registry, p: &Permission) -> bool {
    p.access == Access::Write && registry.scope(&p.scope).is_none_or(|s| s.acts)
}

/// Whether `p` is a write that records a verdict on the change (a status, a check, an
/// approval), as its platform describes the scope.
pub fn records_verdict(registry: &crate::registry::Registry, p: &Permission) -> bool {
    p.access == Access::Write && registry.scope(&p.scope).is_some_and(|s| s.records_verdict)
}

/// `word` as a permission of a scope a registered platform lists (default deny).
pub fn parse_scoped(
    registry: &crate::registry::Registry,
    word: &str,
) -> Result<Permission, String> {
    let p = parse_permission(word)?;
    if registry.scope(&p.scope).is_none() {
        let names: Vec<&str> = registry.scopes().map(|s| s.name).collect();
        let names_empty = names.is_empty();
        let hint = crate::suggest::help_text(&crate::suggest::did_you_mean(&p.scope, names))
            .map(|h| format!(" ({h})"))
            .unwrap_or_default();
        let none = if names_empty {
            " (no platform is registered)"
        } else {
            ""
        };
        return Err(format!(
            "`{}` is not a permission scope{hint}{none}",
            p.scope
        ));
    }
    Ok(p)
}

/// `scope:read` or `scope:write`, whatever the scope.
pub fn parse_permission(word: &str) -> Result<Permission, String> {
    let Some((scope, access)) = word.split_once(':') else {
        return Err(format!(
            "`{word}` is not a permission: write `scope:read` or `scope:write`"
        ));
    };
    if scope.is_empty() {
        return Err(format!(
            "`{word}` names no scope: write `scope:read` or `scope:write`"
        ));
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
/// What to call the job token read from `variable`, for a message: the title of the platform
/// whose forge names the variable ("<title>' token"), or "a job's token".
pub fn job_token_name(registry: &crate::registry::Registry, variable: &str) -> String {
    let title = registry
        .forges()
        .filter(|f| {
            f.believed
                .as_ref()
                .is_some_and(|b| b.job_token_env.contains(&variable))
        })
        .find_map(|f| {
            let name = f.platform.as_deref()?;
            registry.platforms().find(|p| p.name() == name)
        })
        .map(|p| p.title());
    match title {
        Some(t) if t.ends_with('s') => format!("{t}' token"),
        Some(t) => format!("{t}'s token"),
        None => "a job's token".into(),
    }
}

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
    fn a_write_acts_unless_its_platform_says_it_only_informs() {
        let mut registry = crate::registry::Registry::with_builtins();
        registry.register_platform(std::sync::Arc::new(crate::platform::testing::TestPlatform));
        let p = |w: &str| parse_permission(w).expect("a permission");
        assert!(!acts(&registry, &p("notes:write")));
        assert!(acts(&registry, &p("code:write")));
        assert!(
            acts(&registry, &p("verdicts:write"))
                && records_verdict(&registry, &p("verdicts:write"))
        );
        assert!(!records_verdict(&registry, &p("code:write")));
        // A scope no platform describes can do anything; a read never acts.
        assert!(acts(&registry, &p("unheard-of:write")));
        assert!(!acts(&registry, &p("code:read")));
        // Lowering takes only a listed scope.
        assert!(parse_scoped(&registry, "code:write").is_ok());
        let refused = parse_scoped(&registry, "cod:write").expect_err("unknown");
        assert!(refused.contains("did you mean `code`?"), "{refused}");
        let bare = crate::registry::Registry::with_builtins();
        assert!(parse_scoped(&bare, "code:write").is_err());
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
