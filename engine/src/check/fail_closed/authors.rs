//! Who the forge says wrote what. A gate on a head's author holds only where the forge
//! authenticates authors; a record the pipeline keeps on the forge (the comment carrying its
//! marker) is found again only among the records of accounts the forge believes. Both are facts
//! of the forge's contract (`ForgeContract::vouches_for_authors`, `ForgeContract::believed`):
//! principle 4, a limit that does not limit is none, and what is kept must be found.

use super::ID;
use crate::check::Context;
use crate::contract::ForgeContract;
use crate::finding::{Confidence, Finding, Label, Severity};
use crate::model::Value;

/// The forge the pipeline runs on: its `forge` node's kind, else the registry's default.
fn forge<'a>(cx: &Context<'a>) -> Option<&'a ForgeContract> {
    match &cx.pipeline.forge {
        Some(f) => cx.registry.forge(&f.kind.value),
        None => cx.registry.forge(cx.registry.default_forge()?),
    }
}

/// A gate on the head's author (`require-author`) on a forge whose authors are names anyone
/// writes (the local forge's commit authors): it refuses nothing an attacker could not pass.
pub(super) fn unvouched_authors(cx: &Context<'_>, out: &mut Vec<Finding>) {
    let Some(forge) = forge(cx) else { return };
    if forge.vouches_for_authors {
        return;
    }
    for stage in &cx.pipeline.stages {
        let Some(contract) = cx.registry.get(&stage.uses.value) else {
            continue;
        };
        for child in &stage.children {
            if !contract
                .child_spec(&child.name.value)
                .is_some_and(|s| s.gates_on_author)
            {
                continue;
            }
            let name = &stage.name.value;
            let what = &child.name.value;
            let kind = &forge.kind;
            // A registered forge that does authenticate them, for the fix.
            let such = cx
                .registry
                .forges()
                .find(|f| f.vouches_for_authors)
                .map(|f| format!(" (`forge \"{}\"`)", f.kind))
                .unwrap_or_default();
            let mut finding = Finding::new(
                ID,
                Severity::Warning,
                format!(
                    "`{name}`'s `{what}` refuses a head by its author, but on the `{kind}` forge an author is a name anyone writes (a commit's author): it refuses nothing an attacker could not pass (principle 4: a limit that does not limit is none)"
                ),
                Label::new(child.name.span, "an author the forge does not authenticate"),
            )
            .help(format!(
                "run the pipeline on a forge that authenticates who wrote a head{such}, or remove `{what}` and check the head another way (a signed commit, the runner's own checkout)"
            ))
            .confidence(Confidence::High)
            .stage(name);
            if let Some(f) = &cx.pipeline.forge {
                finding = finding.related(Label::new(f.kind.span, "authors are not authenticated"));
            }
            out.push(finding);
        }
    }
}

/// A forge token that is not the job's own (read from another variable: an App's or a
/// person's) with the accounts the forge believes left at the job token's account: the records
/// the pipeline writes are by another account, so the next run never finds its own comment
/// (no last review: every push is reviewed whole, and no conversation is resumed).
pub(super) fn unbelieved_records(cx: &Context<'_>, out: &mut Vec<Finding>) {
    let p = cx.pipeline;
    let Some(node) = &p.forge else { return };
    let Some(forge) = cx.registry.forge(&node.kind.value) else {
        return;
    };
    let Some(believed) = &forge.believed else {
        return;
    };
    let Some(secret) = node.token.as_ref().and_then(|t| p.secret(&t.value)) else {
        return;
    };
    if believed.job_token_env.contains(&secret.env.value.as_str()) {
        return;
    }
    let set = crate::model::setting(&node.settings, believed.prop);
    let accounts: Vec<&str> = match set.map(|v| &v.value) {
        Some(Value::String(s)) => s.split_whitespace().collect(),
        Some(_) => return,
        None => vec![believed.job_account],
    };
    if accounts.iter().any(|a| *a != believed.job_account) {
        return;
    }
    let (prop, job) = (believed.prop, believed.job_account);
    let at = set.map_or(node.kind.span, |v| v.span);
    out.push(
        Finding::new(
            ID,
            Severity::Warning,
            format!(
                "the forge writes with the token in `{}`, not the job's, while `{prop}` believes only `{job}`: the next run never finds the comment this one writes, so every push is reviewed as the first (principle 4: what is kept must be found)",
                secret.env.value
            ),
            Label::new(at, format!("believes only `{job}`")),
        )
        .related(Label::new(secret.env.span, "another account's token"))
        .help(format!(
            "name the account the token writes as: `{prop}=\"<app-slug>[bot]\"` (an App's installation token) or the login of the token's owner"
        ))
        .confidence(Confidence::High),
    );
}
