//! What one file cannot show: `check DIR` (or several files) judges the pipelines together as
//! well, since they share a forge and a runner's secrets. Two pipelines under one name on one
//! forge keep one record and replace each other's reviews (`duplicate-publisher`, principle 4),
//! and a key one pipeline seals conversations with, held by another's program, opens the
//! first's conversations (`secret-scope`: a secret is read by its variable, whichever file
//! declares it). Each finding is reported in the file that makes the conflict, the later one,
//! and names the other; it cannot be allowed in one file alone (the fix is in one of the two).

use crate::contract::Effect;
use crate::finding::{Confidence, Finding, Label, Severity};
use crate::model::Pipeline;
use crate::permission::sealing_key;
use crate::registry::Registry;

/// One pipeline of the folder: its file's name as shown, and its model.
pub struct Member<'a> {
    pub file: &'a str,
    pub pipeline: &'a Pipeline,
}

/// The findings across `members`, each with the index of the member it is reported in.
pub fn findings(members: &[Member<'_>], registry: &Registry) -> Vec<(usize, Finding)> {
    let mut out = Vec::new();
    same_name(members, registry, &mut out);
    shared_keys(members, registry, &mut out);
    out
}

/// The forge kind a pipeline runs on: its `forge` node's, else the registry's default.
fn forge_kind<'a>(p: &'a Pipeline, registry: &'a Registry) -> Option<&'a str> {
    match &p.forge {
        Some(f) => Some(f.kind.value.as_str()),
        None => registry.default_forge(),
    }
}

/// The source text of the forge's key setting (`project="{project}"`), if any.
fn forge_key(p: &Pipeline, registry: &Registry) -> Option<String> {
    let forge = p.forge.as_ref()?;
    let key = registry.forge(&forge.kind.value)?.key.as_deref()?;
    crate::model::setting(&forge.settings, key).map(|v| format!("{:?}", v.value))
}

fn same_name(members: &[Member<'_>], registry: &Registry, out: &mut Vec<(usize, Finding)>) {
    for (j, later) in members.iter().enumerate() {
        let Some(name) = &later.pipeline.name else {
            continue;
        };
        let earlier = members[..j].iter().find(|m| {
            m.pipeline
                .name
                .as_ref()
                .is_some_and(|n| n.value == name.value)
                && forge_kind(m.pipeline, registry) == forge_kind(later.pipeline, registry)
                && forge_key(m.pipeline, registry) == forge_key(later.pipeline, registry)
        });
        let Some(earlier) = earlier else { continue };
        out.push((
            j,
            Finding::new(
                "duplicate-publisher",
                Severity::Error,
                format!(
                    "pipeline `{}` is also `{}`'s name, on the same forge: each replaces the other's review of a change, and one stops as \"already reviewed\" on a head only the other reviewed (principle 4)",
                    name.value, earlier.file
                ),
                Label::new(name.span, format!("also the name of `{}`", earlier.file)),
            )
            .help("give each pipeline file its own `pipeline` name")
            .confidence(Confidence::High)
            .across_files(),
        ));
    }
}

fn shared_keys(members: &[Member<'_>], registry: &Registry, out: &mut Vec<(usize, Finding)>) {
    for (j, member) in members.iter().enumerate() {
        let p = member.pipeline;
        for stage in &p.stages {
            let Some(contract) = registry.get(&stage.uses.value) else {
                continue;
            };
            if !(contract.opaque || contract.has_effect(Effect::Executes)) {
                continue;
            }
            for held in stage.secrets_named() {
                let Some(secret) = p.secret(held.value) else {
                    continue;
                };
                let var = secret.env.value.as_str();
                // Within the file, a key held by a program is `secret-scope`'s already.
                if sealing_key(registry, p, var) {
                    continue;
                }
                let Some(sealer) = members
                    .iter()
                    .enumerate()
                    .find(|(i, m)| *i != j && sealing_key(registry, m.pipeline, var))
                    .map(|(_, m)| m)
                else {
                    continue;
                };
                out.push((
                    j,
                    Finding::new(
                        "secret-scope",
                        Severity::Error,
                        format!(
                            "stage `{}` runs a program holding `{var}`, which `{}` seals its conversations with: the program can open every conversation that pipeline keeps (a secret is read by its variable, whichever file declares it)",
                            stage.name.value, sealer.file
                        ),
                        Label::new(held.span, format!("`{}`'s sealing key", sealer.file)),
                    )
                    .related(Label::new(secret.env.span, format!("read from `{var}`")))
                    .help(format!(
                        "give this stage another secret, from another variable; `{var}` is for `{}`'s seal and restore alone",
                        sealer.file
                    ))
                    .confidence(Confidence::High)
                    .stage(&stage.name.value)
                    .across_files(),
                ));
            }
        }
    }
}
