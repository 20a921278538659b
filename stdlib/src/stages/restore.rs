//! `std/restore`: the last review's sealed conversation. Lists sealed blobs newest first,
//! trusts only producers a `trust` rule names, opens with the key and the binding, and accepts
//! only the conversation of the review the posted comment names. Any error is the fallback: no
//! conversation, a fresh review, and the reason in one status line.

use reviewflow_engine::contract::{
    ChildSpec, Effect, FallbackValue, LabelAdd, LabelRule, OutputType, Role, StageContract,
    ValueType,
};

pub fn contract() -> StageContract {
    StageContract::new("std/restore", "opens the last review's sealed conversation")
        .child(ChildSpec::new("from", Role::Data, "the store the sealed blobs are in").arg(ValueType::Store).required())
        .child(ChildSpec::new("key", Role::SecretSlot, "the secret the blobs are sealed with").arg(ValueType::Secret).required())
        .child(
            ChildSpec::new("bind", Role::Binding, "the fields a blob is bound to (the AAD): `bind repo=\"{repo}\" change=\"{change}\"`")
                .open_props(ValueType::Template)
                .required(),
        )
        .child(ChildSpec::new(
            "require-posted-head",
            Role::Config,
            "accept only the conversation of the review the posted comment names",
        ))
        .child(ChildSpec::new("max-bytes", Role::Config, "the largest blob opened, in bytes").arg(ValueType::Int))
        .output(
            "conversation",
            OutputType::Conversation,
            "the restored conversation: private, and untrusted (it read the change)",
            LabelRule::none().adding(LabelAdd::Private).adding(LabelAdd::Untrusted),
        )
        .output("restored", OutputType::Bool, "a conversation was restored", LabelRule::none())
        .output("head", OutputType::Sha, "the head of the review the conversation belongs to", LabelRule::none())
        .fallback("conversation", FallbackValue::Absent)
        .fallback("restored", FallbackValue::Bool(false))
        .fallback("head", FallbackValue::Absent)
        .permission("actions:read")
        .effect(Effect::Reads)
}
