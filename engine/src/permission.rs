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
