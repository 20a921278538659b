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

/// The environment variables GitHub Actions' own token is usually given under: a secret read
/// from one of them writes unless its `can=` says otherwise (the job's token may write).
pub const ACTIONS_TOKEN_VARIABLES: &[&str] = &["GITHUB_TOKEN", "GH_TOKEN"];

/// What a secret can do on the forge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Capability<'a> {
    /// What its `can=` says.
    Declared(&'a [crate::span::Spanned<Permission>]),
    /// No `can=`, and a forge token (the forge's `token=`, or GitHub Actions' token by its
    /// variable): it may do anything the token was granted, writes included.
    ForgeToken,
    /// No `can=` on any other secret (a model's key, a webhook): nothing on the forge.
    Nothing,
}

impl Capability<'_> {
    /// Whether it can write anything.
    pub fn writes(self) -> bool {
        match self {
            Self::Declared(list) => list.iter().any(|p| p.value.access == Access::Write),
            Self::ForgeToken => true,
            Self::Nothing => false,
        }
    }

    /// Whether it can do `wanted` (`scope:write` also reads its scope).
    pub fn covers(self, wanted: &Permission) -> bool {
        match self {
            Self::Declared(list) => list
                .iter()
                .any(|p| p.value.scope == wanted.scope && p.value.access >= wanted.access),
            Self::ForgeToken => true,
            Self::Nothing => false,
        }
    }

    /// Its write permissions, as written (`pull-requests:write checks:write`); for a forge token
    /// without `can=`, "any".
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
            Self::Nothing => String::new(),
        }
    }
}

/// What secret `k` of `pipeline` can do on the forge.
pub fn capability(pipeline: &crate::model::Pipeline, k: usize) -> Capability<'_> {
    let secret = &pipeline.secrets[k];
    if let Some(can) = &secret.can {
        return Capability::Declared(&can.value);
    }
    let forge_token = crate::flow::forge_token(pipeline) == Some(secret.name.value.as_str());
    if forge_token || ACTIONS_TOKEN_VARIABLES.contains(&secret.env.value.as_str()) {
        Capability::ForgeToken
    } else {
        Capability::Nothing
    }
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
