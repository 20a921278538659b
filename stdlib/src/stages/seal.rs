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
                .accepts(&[OutputType::Conversation])
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

/// The implementation: the conversation file sealed in place into a blob file.
pub struct Seal;

super::runtime::stage_impl!(Seal, run);

/// The largest conversation sealed.
pub const MAX_CONVERSATION_BYTES: u64 = 64 << 20;

async fn run(
    cx: reviewflow_engine::run::StageCx<'_>,
) -> Result<reviewflow_engine::run::StageOutputs, reviewflow_engine::run::StageError> {
    use reviewflow_engine::run::{OutputValue, Resolved, StageError, StageOutputs};

    use super::runtime::{arg, blocking, kept_copy, text_props};
    use crate::conversation::{
        BUNDLE_VERSION, BundleHeader, MIN_KEY_BYTES, SealRequest, conversation_id,
        read_conversation, seal_bytes, short_key,
    };
    use crate::envelope::Binding;
    use crate::kinds::Services;

    let services = Services::of(&cx)?;
    let mut out = StageOutputs::new();
    let input = match arg(&cx, "input") {
        Some(Resolved::Output(Some(OutputValue::File(f)))) => f.clone(),
        Some(Resolved::Output(Some(_))) => return Err(StageError::failed("`input` is not a file")),
        _ => {
            cx.status
                .status("nothing to seal: the conversation is absent");
            out.insert("sealed".into(), OutputValue::Bool(false));
            return Ok(out);
        }
    };
    let Some(Resolved::Secret(key_name)) = arg(&cx, "key") else {
        return Err(StageError::failed("`key` names no secret"));
    };
    let key = cx
        .secrets
        .get(key_name)
        .ok_or_else(|| {
            StageError::failed(format!("secret `{key_name}` is not in this stage's scope"))
        })?
        .expose_secret()
        .to_vec();
    if key.len() < MIN_KEY_BYTES {
        let len = key.len();
        zeroize::Zeroize::zeroize(&mut { key });
        return Err(StageError::failed(short_key(key_name, len)));
    }
    let bind = cx
        .children
        .iter()
        .find(|c| c.name == "bind")
        .map(text_props)
        .unwrap_or_default();
    let binding = Binding::from_pairs(bind.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .map_err(|e| StageError::failed(format!("the binding is not usable: {e}")))?;
    let file_name = input
        .path()
        .file_name()
        .and_then(|n| n.to_str())
        .filter(|n| !n.starts_with('.'))
        .unwrap_or("conversation")
        .to_string();
    let head = services.forge.change().head.to_string();
    // What is sealed is a verified copy in the stage's own folder: the kept conversation may
    // have changed since it was kept.
    let input = kept_copy(&cx, &input, "sealing").await?;
    let work = cx.work_dir().await?.to_path_buf();
    let blob = work.join("sealed.blob");
    let run_id = cx.run_id.to_string();
    let blob_out = blob.clone();
    let (size, conversation_id) = blocking(move || {
        let (bytes, packing) = read_conversation(&input, MAX_CONVERSATION_BYTES)
            .map_err(|e| StageError::failed(e.to_string()))?;
        let conversation_id = conversation_id(&bytes);
        let req = SealRequest {
            secret: &key,
            min_bytes: MIN_KEY_BYTES,
            binding: &binding,
            header: BundleHeader {
                version: BUNDLE_VERSION,
                conversation_id: conversation_id.clone(),
                head,
                run_id,
                file_name,
                packing,
            },
            max_bytes: MAX_CONVERSATION_BYTES,
        };
        let size = seal_bytes(&req, &req.header, bytes, &blob_out)
            .map_err(|e| StageError::failed(e.to_string()))?;
        let mut key = key;
        zeroize::Zeroize::zeroize(&mut key);
        Ok((size, conversation_id))
    })
    .await?;
    cx.status.status(format!(
        "sealed the conversation {conversation_id} of the review of {} ({size} bytes)",
        services.forge.change().head.short()
    ));
    out.insert("blob".into(), cx.output_file(&blob).await?);
    out.insert("sealed".into(), OutputValue::Bool(true));
    Ok(out)
}
