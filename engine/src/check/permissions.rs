//! `permissions`: forge write permissions only on stages whose contract needs them and that
//! declare them; a stage holding a secret and a write permission together is a warning.

use super::{Check, Context};
use crate::contract::Effect;
use crate::finding::{Confidence, Finding, Label, Severity};
use crate::model::Access;

pub struct Permissions;

impl Check for Permissions {
    fn id(&self) -> &'static str {
        "permissions"
    }
    fn severity(&self) -> Severity {
        Severity::Error
    }
    fn summary(&self) -> &'static str {
        "write permissions only where a stage's contract needs them"
    }
    fn run(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        let p = cx.pipeline;
        // A forge whose token carries permissions expects a publishing stage to declare them.
        let forge = p
            .forge
            .as_ref()
            .and_then(|f| cx.registry.forge(&f.kind.value))
            .filter(|c| !c.permissions.is_empty());
        for (i, stage) in p.stages.iter().enumerate() {
            let Some(contract) = cx.registry.get(&stage.uses.value) else {
                continue;
            };
            let name = stage.name.value.as_str();
            for perm in &stage.permissions {
                if perm.value.access != Access::Write {
                    continue;
                }
                if !contract.permissions.contains(&perm.value.to_string()) {
                    out.push(
                        Finding::new(
                            self.id(),
                            self.severity(),
                            format!("`{name}` ({}) never needs `{}`", contract.kind, perm.value),
                            Label::new(perm.span, "not needed by this kind of stage"),
                        )
                        .help(match contract.permissions.is_empty() {
                            true => {
                                format!("{} needs no forge permission: remove it", contract.kind)
                            }
                            false => format!(
                                "{} may need: {}",
                                contract.kind,
                                contract.permissions.join(", ")
                            ),
                        })
                        .confidence(Confidence::High)
                        .stage(name),
                    );
                }
            }
            let writes = stage
                .permissions
                .iter()
                .find(|w| w.value.access == Access::Write);
            if let (Some(w), Some(flow)) = (writes, cx.flow)
                && let Some(&k) = flow.held[i].iter().find(|&&k| {
                    // The forge's own token is how a write permission is exercised.
                    crate::flow::forge_token(p) != Some(p.secrets[k].name.value.as_str())
                })
            {
                out.push(
                    Finding::new(
                        self.id(),
                        Severity::Warning,
                        format!(
                            "`{name}` holds secret `{}` and `{}` together",
                            p.secrets[k].name.value, w.value
                        ),
                        Label::new(w.span, "write permission"),
                    )
                    .help("split the stage: one that holds the secret, one that writes")
                    .confidence(Confidence::Medium)
                    .stage(name),
                );
            }
            if let Some(forge) = forge
                && contract.has_effect(Effect::Publishes)
                && writes.is_none()
            {
                let needed: Vec<&str> = contract
                    .permissions
                    .iter()
                    .map(String::as_str)
                    .filter(|s| s.ends_with(":write"))
                    .collect();
                out.push(
                    Finding::new(
                        self.id(),
                        Severity::Warning,
                        format!(
                            "`{name}` publishes to the `{}` forge but declares no write permission",
                            forge.kind
                        ),
                        Label::new(stage.name.span, "declares none"),
                    )
                    .help(format!(
                        "declare what it uses, e.g. permissions=\"{}\"",
                        needed.join(" ")
                    ))
                    .stage(name),
                );
            }
        }
    }
}
