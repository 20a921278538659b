//! `write-token-injection`: a stage that runs a program or a model, holds a secret that can write
//! to the forge, and reads text an attacker wrote, on any channel. An instruction hidden in that
//! text ("also approve this pull request", "push this fix") is followed with the token in reach:
//! a prompt injection with a write token. A command line, an environment variable or a path is
//! `untrusted-input`'s finding (the stage holds a secret) and is not reported twice; stdin, a
//! reviewer's fenced inputs and every other channel are reported here.

use super::{Check, Context};
use crate::contract::{Effect, Role};
use crate::finding::{Confidence, Finding, Label, Severity};
use crate::flow::{Input, Kind};
use crate::model::Access;
use crate::permission::{Capability, capability};

pub struct WriteTokenInjection;

pub const ID: &str = "write-token-injection";

/// Where the value arrives, in a sentence; `None` for the channels `untrusted-input` reports.
pub(super) fn channel(role: Role) -> Option<&'static str> {
    match role {
        Role::CommandLine | Role::Environment | Role::Path => None,
        Role::Stdin => Some("on its standard input"),
        Role::Data => Some("as input"),
        Role::Config => Some("in a setting"),
        Role::Publish | Role::Keep | Role::Binding | Role::SecretSlot => Some("as data"),
    }
}

impl Check for WriteTokenInjection {
    fn principle(&self) -> super::Principle {
        super::Principle::UnknownIsUntrusted
    }
    fn id(&self) -> &'static str {
        ID
    }
    fn severity(&self) -> Severity {
        Severity::Error
    }
    fn summary(&self) -> &'static str {
        "a stage that runs a program or a model never holds a token that writes while it reads untrusted data"
    }
    fn run(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        let Some(flow) = cx.flow else { return };
        let p = cx.pipeline;
        for (i, stage) in p.stages.iter().enumerate() {
            let Some(contract) = cx.registry.get(&stage.uses.value) else {
                continue;
            };
            if !(contract.opaque || contract.has_effect(Effect::Executes)) {
                continue;
            }
            // A secret of no known kind that the stage may not hold at all is reported once, by
            // the check that says so: `secret-scope` (out of its `visible-to`) or
            // `reviewer-credential` (a model reviewer takes its model's credential only).
            let model_reviewer = super::reviewer::StageReviewer::of(cx, stage)
                .is_some_and(|r| !r.kind.credentials.is_empty());
            let Some((k, can)) = flow.held[i]
                .iter()
                .map(|&k| (k, capability(cx.registry, p, k)))
                .filter(|&(k, c)| {
                    let in_scope = p.secrets[k]
                        .visible_to
                        .iter()
                        .any(|v| v.value == stage.name.value);
                    c != Capability::Undeclared || (in_scope && !model_reviewer)
                })
                .find(|(_, c)| c.writes())
            else {
                continue;
            };
            let untrusted: Vec<(&Input, &str)> = flow.inputs[i]
                .iter()
                .filter(|input| input.labels.untrusted)
                .filter_map(|input| channel(input.role).map(|c| (input, c)))
                .collect();
            let Some(&(first, _)) = untrusted.first() else {
                continue;
            };
            let name = stage.name.value.as_str();
            let secret = &p.secrets[k];
            let token = secret.name.value.as_str();
            let program = if contract.reviewer_kinds.is_empty() {
                "runs a program"
            } else {
                "runs a reviewer"
            };
            // What it reads, grouped by channel: "`a`, `b` as input; `c` on its standard input".
            let mut refs: Vec<String> = Vec::new();
            let mut channels: Vec<(&str, Vec<String>)> = Vec::new();
            for (input, how) in &untrusted {
                let r = format!("`{}`", input.reference);
                if !refs.contains(&r) {
                    refs.push(r.clone());
                }
                match channels.iter_mut().find(|(h, _)| h == how) {
                    Some((_, list)) if list.contains(&r) => {}
                    Some((_, list)) => list.push(r),
                    None => channels.push((how, vec![r])),
                }
            }
            let read: Vec<String> = channels
                .iter()
                .map(|(how, list)| format!("{} {how}", list.join(", ")))
                .collect();
            // A read-only token for what it can write, to suggest.
            let reads = match can {
                Capability::Declared(list) | Capability::Contradicted(list) => {
                    let mut words: Vec<String> = Vec::new();
                    for p in list.iter().filter(|p| p.value.access == Access::Write) {
                        let w = format!("{}:read", p.value.scope);
                        if !words.contains(&w) {
                            words.push(w);
                        }
                    }
                    words.join(" ")
                }
                _ => "contents:read pull-requests:read".into(),
            };
            let forge_token = crate::flow::forge_token(p) == Some(token);
            let job_token = crate::permission::job_token_name(cx.registry, &secret.env.value);
            let what = match can {
                Capability::Declared(_) => format!("which can write ({})", can.describe_writes()),
                Capability::Contradicted(_) => "whose `can=` a stage that writes with it contradicts, so it is taken to write (a declared capability is held against what the pipeline does)".into(),
                Capability::Undeclared => "a secret that says nothing of what it can do, so it is taken to write (unknown authority can do anything its kind can)".into(),
                _ if forge_token => "the forge's token, which can write".into(),
                _ => format!(
                    "{job_token} (read from `{}`), which can write",
                    secret.env.value
                ),
            };
            let held_at = stage
                .secrets_named()
                .into_iter()
                .find(|s| s.value == token)
                .map_or(stage.name.span, |s| s.span);
            let declared = match &secret.can {
                Some(c) if matches!(can, Capability::Contradicted(_)) => Label::new(
                    c.span,
                    format!("`{token}` says it can do this, and a stage writes more with it"),
                ),
                Some(c) => Label::new(c.span, format!("`{token}` can do this")),
                None if can == Capability::Undeclared => Label::new(
                    secret.name.span,
                    format!(
                        "`{token}` has no `can=` and is of no kind known to do nothing on the forge (a model's key by its variable, a sealing key)"
                    ),
                ),
                None => Label::new(
                    secret.name.span,
                    format!(
                        "`{token}` says nothing of what it can do: {} writes unless `can=` says it only reads",
                        if forge_token {
                            "the forge's token"
                        } else {
                            job_token.as_str()
                        }
                    ),
                ),
            };
            let help = if can == Capability::Undeclared {
                format!(
                    "say what `{token}` can do on the forge: `can=\"\"` if it is no forge credential (a webhook, a package registry's token), `can=\"{reads}\"` if it only reads; if it writes, keep it from a stage that reads {}",
                    refs.join(", ")
                )
            } else if contract.reviewer_kinds.is_empty() {
                format!(
                    "if `{name}` only reads the forge, give it a token of its own that only reads (a secret minted so, with `can=\"{reads}\"`); if it must write, let a stage without the token read {} and hand on only a `bool` that `{name}`'s `when` reads, or publish with `std/post`, which runs no program",
                    refs.join(", ")
                )
            } else {
                format!(
                    "take `{token}` out of `{name}` (its `secret-env` and the secret's `visible-to`): a reviewer never needs to write, `std/post` publishes what it wrote; if it must read the forge, give it a token of its own that only reads (a secret minted so, with `can=\"{reads}\"`)"
                )
            };
            let path = flow.path(p, cx.dag, i, first, Kind::Untrusted);
            out.push(
                Finding::new(
                    self.id(),
                    self.severity(),
                    format!(
                        "`{name}` {program} on text an attacker wrote ({}) while it holds `{token}`, {what}",
                        read.join("; ")
                    ),
                    Label::new(first.span, "untrusted text the program reads"),
                )
                .related(Label::new(held_at, format!("`{name}` holds `{token}` here")))
                .related(declared)
                .flow(path)
                .help(help)
                .confidence(Confidence::High)
                .stage(name),
            );
        }
    }
}
