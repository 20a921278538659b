//! `std/seal`: the declassifier. Encrypts a private value into the sealed envelope (AES-256-GCM,
//! key by HKDF-SHA256, AAD = the binding), so the blob may leave the run.

use reviewflow_engine::contract::{
    ChildSpec, FallbackValue, LabelKind, LabelRule, OutputType, Role, StageContract, ValueType,
};

pub fn contract() -> StageContract {
    StageContract::new("std/seal", "encrypts a private value so it may be kept")
        .child(
            ChildSpec::new("key", Role::SecretSlot, "the secret to seal with")
                .arg(ValueType::Secret)
                .required(),
        )
        .child(
            ChildSpec::new("input", Role::Data, "the value to seal")
                .arg(ValueType::Reference)
                .required(),
        )
        .child(
            ChildSpec::new(
                "bind",
                Role::Binding,
                "the fields the blob is bound to (the AAD)",
            )
            .open_props(ValueType::Template)
            .required(),
        )
        .output(
            "blob",
            OutputType::Blob,
            "the sealed envelope: ciphertext, no longer private",
            LabelRule::from_children(&["input"]).removing(LabelKind::Private),
        )
        .output(
            "sealed",
            OutputType::Bool,
            "a blob was sealed",
            LabelRule::none(),
        )
        .fallback("blob", FallbackValue::Absent)
        .fallback("sealed", FallbackValue::Bool(false))
}
