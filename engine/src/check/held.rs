//! A secret held against a rule. Where a stage holds a secret it may not hold at all, the finding
//! is about the holding, made once by the check whose rule it breaks; what flows from it (the
//! stage's outputs carrying the secret) is the same root cause and is not reported again
//! (docs/checks.md: one root cause gives one error).

use super::Context;
use super::reviewer::StageReviewer;
use crate::contract::Effect;
use crate::flow::Flow;
use crate::permission::{capability, sealing_key};

/// The check that reports stage `i` holding secret `k`, if one does: `secret-scope` (out of its
/// `visible-to`, or a key held by a program), `secret-alias` (a second name for a key, held by a
/// program), `reviewer-credential` (a model reviewer given anything but its model's credential
/// under its own variable), or `write-token-injection` (a program that reads untrusted data
/// while it holds a secret that writes).
pub fn reported_holding(cx: &Context<'_>, flow: &Flow, i: usize, k: usize) -> Option<&'static str> {
    let p = cx.pipeline;
    let stage = &p.stages[i];
    let secret = &p.secrets[k];
    if !secret
        .visible_to
        .iter()
        .any(|v| v.value == stage.name.value)
    {
        return Some("secret-scope");
    }
    let contract = cx.registry.get(&stage.uses.value)?;
    let runs_program = contract.opaque || contract.has_effect(Effect::Executes);
    if runs_program && sealing_key(cx.registry, p, &secret.env.value) {
        return Some("secret-scope");
    }
    // A model reviewer's program holds only what no proxy keeps for it: its credentials under
    // their own variables are not held (`Flow::program_held`), anything else is.
    if StageReviewer::of(cx, stage).is_some_and(|r| !r.kind.credentials.is_empty())
        && flow.program_held[i].contains(&k)
    {
        return Some("reviewer-credential");
    }
    // Read as `write-token-injection` reads it (data, a setting, standard input), whose fix takes
    // the token out of the stage. Untrusted text on its command line, in its environment or as a
    // path is `untrusted-input`'s, whose fix keeps the text out and leaves the secret where it
    // is: what the stage then hands out of the scope is a root of its own (`secret-flow`).
    let reads_untrusted = flow.inputs.get(i).is_some_and(|inputs| {
        inputs.iter().any(|input| {
            input.labels.untrusted && super::write_token_injection::channel(input.role).is_some()
        })
    });
    if runs_program && reads_untrusted && capability(cx.registry, p, k).writes() {
        return Some("write-token-injection");
    }
    None
}
