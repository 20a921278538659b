//! `permissions`: forge write permissions only on stages whose contract needs them and that
//! declare them; a `run` stage (whose contract cannot know) only with a secret that can use
//! them; a stage holding a secret and a write permission together is a warning.

use super::{Check, Context};
use crate::contract::Effect;
use crate::finding::{Confidence, Finding, Label, Severity};
use crate::model::{Access, Permission};
use crate::permission::capability;
use crate::span::Spanned;

pub struct Permissions;

impl Check for Permissions {
    fn principle(&self) -> super::Principle {
        super::Principle::UnknownAuthority
    }
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
        let forge = cx
            .registry
            .forge_of(p)
            .filter(|c| !c.permissions.is_empty());
        for k in 0..p.secrets.len() {
            if let Some((i, w)) = crate::permission::contradicting_write(cx.registry, p, k) {
                out.push(self.contradicted(cx, k, i, w));
            }
        }
        for (i, stage) in p.stages.iter().enumerate() {
            let Some(contract) = cx.registry.get(&stage.uses.value) else {
                continue;
            };
            let name = stage.name.value.as_str();
            let held = cx.flow.map_or(&[][..], |f| f.held[i].as_slice());
            let mut unbacked = false;
            for perm in &stage.permissions {
                if perm.value.access != Access::Write {
                    continue;
                }
                if contract.opaque {
                    // An arbitrary command: no contract can say what it needs, so it declares
                    // what it uses, and a secret it holds must be able to do it.
                    if cx.flow.is_some()
                        && !held
                            .iter()
                            .any(|&k| capability(cx.registry, p, k).covers(&perm.value))
                    {
                        out.push(self.unbacked(cx, i, perm));
                        unbacked = true;
                    }
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
            // A `run` stage's write no secret backs is reported above, with what to do.
            if let (Some(w), Some(flow), false) = (writes, cx.flow, unbacked)
                && let Some(&k) = flow.held[i].iter().find(|&&k| {
                    // The forge's own token, or a token that can do the write, is how a write
                    // permission is exercised.
                    crate::flow::forge_token(p) != Some(p.secrets[k].name.value.as_str())
                        && !capability(cx.registry, p, k).covers(&w.value)
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

impl Permissions {
    /// Principle 2: secret `k`'s `can=` says less than stage `i` does with it (`w`).
    fn contradicted(
        &self,
        cx: &Context<'_>,
        k: usize,
        i: usize,
        w: &Spanned<Permission>,
    ) -> Finding {
        let p = cx.pipeline;
        let secret = &p.secrets[k];
        let token = secret.name.value.as_str();
        let name = p.stages[i].name.value.as_str();
        let can: Vec<String> = secret
            .can
            .iter()
            .flat_map(|c| c.value.iter().map(|p| p.value.to_string()))
            .collect();
        let mut finding = Finding::new(
            self.id(),
            self.severity(),
            format!(
                "`{name}` writes `{}` with the forge's token `{token}`, whose `can=` says only `{}`: the declaration is contradicted, so `{token}` is taken to do anything its kind can",
                w.value,
                can.join(" ")
            ),
            Label::new(w.span, "written with the forge's token"),
        );
        if let Some(c) = &secret.can {
            finding = finding.related(Label::new(
                c.span,
                format!("`{token}` says it can do only this"),
            ));
        }
        finding
            .help(format!(
                "a declared capability is held against what the pipeline does with the credential (principle 2): if `{token}` can do it, add `{}` to its `can=`; a stage that should only read gets a token of its own, minted read-only",
                w.value
            ))
            .confidence(Confidence::High)
            .stage(name)
    }

    /// A `run` stage declares a write permission that no secret it holds can use.
    fn unbacked(&self, cx: &Context<'_>, i: usize, perm: &Spanned<Permission>) -> Finding {
        let p = cx.pipeline;
        let stage = &p.stages[i];
        let name = stage.name.value.as_str();
        let token = crate::flow::forge_token(p);
        let held = cx.flow.map_or(&[][..], |f| f.held[i].as_slice());
        let mut finding = Finding::new(
            self.id(),
            self.severity(),
            format!(
                "`{name}` ({}) declares `{}`, but holds no secret that can use it",
                stage.uses.value, perm.value
            ),
            Label::new(perm.span, "no token of the stage grants this"),
        );
        for &k in held {
            let secret = &p.secrets[k];
            if let Some(can) = &secret.can {
                finding = finding.related(Label::new(
                    can.span,
                    format!("`{}` can only do this", secret.name.value),
                ));
            }
        }
        let undeclared = held
            .iter()
            .map(|&k| &p.secrets[k])
            .find(|s| s.can.is_none() && token != Some(s.name.value.as_str()));
        let help = match (undeclared, token) {
            (Some(s), _) => format!(
                "if `{}` is the token the command writes with, say what it can do: `can=\"{}\"` on `secret \"{}\"`; otherwise remove `{}`",
                s.name.value, perm.value, s.name.value, perm.value
            ),
            (None, _) if !held.is_empty() => format!(
                "remove `{}`, or give the command a token that can do it",
                perm.value
            ),
            (None, Some(t)) => format!(
                "if the command writes through the forge, give it the token (`secret-env \"GH_TOKEN\" \"{t}\"`, with \"{name}\" in its `visible-to`); otherwise remove `{}`: without a token the command cannot use it",
                perm.value
            ),
            (None, None) => format!(
                "if the command writes through the forge, give it the token it writes with (`secret-env`, and `can=` on the secret); otherwise remove `{}`: without a token the command cannot use it",
                perm.value
            ),
        };
        finding.help(help).confidence(Confidence::High).stage(name)
    }
}
