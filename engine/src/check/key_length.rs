//! `key-length`: a secret used as the key of a stage that seals or opens a conversation
//! (`std/seal`, `std/restore`: a stage whose contract binds a sealed blob) does not declare a
//! `min-bytes` below the 32 bytes such a key must have. The key rule is one: at least 32 bytes;
//! `min-bytes` may raise it, never lower it. A lower `min-bytes` lets a short value through the
//! run's start, only for the stage to refuse it later, and reads as if a short key were enough.

use super::{Check, Context};
use crate::contract::Role;
use crate::finding::{Confidence, Finding, Label, Severity};
use crate::model::Value;

/// The fewest bytes a key that seals or opens a conversation has (docs/sealed-envelope.md).
pub const MIN_KEY_BYTES: u64 = 32;

pub struct KeyLength;

impl Check for KeyLength {
    fn principle(&self) -> super::Principle {
        super::Principle::Coverage
    }
    fn id(&self) -> &'static str {
        "key-length"
    }
    fn severity(&self) -> Severity {
        Severity::Error
    }
    fn summary(&self) -> &'static str {
        "a key that seals or opens a conversation is never allowed below 32 bytes"
    }
    fn run(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        let p = cx.pipeline;
        let mut reported = vec![false; p.secrets.len()];
        for stage in &p.stages {
            let Some(contract) = cx.registry.get(&stage.uses.value) else {
                continue;
            };
            // A stage that binds a blob (its AAD) seals or opens one: its secret slot is the key.
            if !contract.children.iter().any(|c| c.role == Role::Binding) {
                continue;
            }
            let keys = stage
                .children
                .iter()
                .filter(|c| {
                    contract.child_spec(&c.name.value).map(|s| s.role) == Some(Role::SecretSlot)
                })
                .flat_map(|c| c.values());
            for used in keys {
                let Value::Secret(name) = &used.value else {
                    continue;
                };
                let Some(k) = p.secret_position(name) else {
                    continue;
                };
                let secret = &p.secrets[k];
                let Some(min) = secret.min_bytes.as_ref() else {
                    continue;
                };
                if min.value >= MIN_KEY_BYTES || reported[k] {
                    continue;
                }
                reported[k] = true;
                out.push(
                    Finding::new(
                        self.id(),
                        self.severity(),
                        format!(
                            "secret `{name}` is the key of `{}` ({}), which needs at least {MIN_KEY_BYTES} bytes, but its `min-bytes` is {}",
                            stage.name.value, contract.kind, min.value
                        ),
                        Label::new(min.span, format!("allows a {}-byte key", min.value)),
                    )
                    .related(Label::new(
                        used.span,
                        format!("`{}` seals or opens with `{name}` here", stage.name.value),
                    ))
                    .help(format!(
                        "write `min-bytes={MIN_KEY_BYTES}` (or more) on `{name}`, and give it a random value of that length (`openssl rand -base64 48`): a shorter key is refused when the stage runs whatever `min-bytes` says"
                    ))
                    .confidence(Confidence::High)
                    .stage(&stage.name.value),
                );
            }
        }
    }
}
