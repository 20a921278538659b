//! `std/restore`: the last review's sealed conversation. Lists sealed blobs newest first,
//! trusts only producers a `trust` rule names, opens with the key and the binding, and with
//! `require-posted-head` accepts only the blob the posted review names by its digest. Any error is the fallback: no
//! conversation, a fresh review, and the reason in one status line.

use reviewflow_engine::contract::{
    Bound, ChildSpec, Effect, FallbackValue, LabelAdd, LabelRule, OutputType, Role, StageContract,
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
        .child(ChildSpec::new("max-bytes", Role::Config, "the largest blob opened, in bytes").arg(ValueType::Int(MAX_BYTES)))
        .output(
            "conversation",
            OutputType::Conversation,
            "the restored conversation: private, and untrusted (it read the change)",
            LabelRule::none().adding(LabelAdd::Private).adding(LabelAdd::Untrusted),
        )
        .output("restored", OutputType::Bool, "a conversation was restored", LabelRule::none())
        .output("head", OutputType::Sha, "the head of the review the conversation belongs to", LabelRule::none())
        .change_commit("head")
        .fallback("conversation", FallbackValue::Absent)
        .fallback("restored", FallbackValue::Bool(false))
        .fallback("head", FallbackValue::Absent)
        .permission("actions:read")
        .effect(Effect::Reads)
}

/// The implementation: see the module docs. Every problem is the fresh-review fallback, said in
/// one status line; the stage fails only when it cannot even look.
pub struct Restore;

super::runtime::stage_impl!(Restore, run);

/// The largest conversation restored by default: 64 MiB and the envelope's overhead.
/// The largest blob a restore may be told to open (`max-bytes`).
const MAX_BYTES: Bound = Bound::bytes(
    1,
    256 << 20,
    "each of up to `max-tries` tries fetches a blob this large and opens it in memory: past 256 MiB a flood of planted blobs costs gigabytes per review",
);

pub const DEFAULT_MAX_BYTES: u64 = (64 << 20) + (64 << 10);

async fn run(
    cx: reviewflow_engine::run::StageCx<'_>,
) -> Result<reviewflow_engine::run::StageOutputs, reviewflow_engine::run::StageError> {
    use reviewflow_engine::run::{OutputValue, Resolved, StageError, StageOutputs};

    use super::runtime::{arg, flag, text_props};
    use crate::conversation::{
        MIN_KEY_BYTES, Packing, RestoreOutcome, RestoreRequest, restore, short_key, unpack_folder,
    };
    use crate::envelope::Binding;
    use crate::kinds::Services;

    let services = Services::of(&cx)?;
    let Some(Resolved::Store(store)) = arg(&cx, "from") else {
        return Err(StageError::failed("`from` names no store"));
    };
    let (opened, name) = services.store(&cx, store)?;
    let Some(Resolved::Secret(key_name)) = arg(&cx, "key") else {
        return Err(StageError::failed("`key` names no secret"));
    };
    let Some(key) = cx.secrets.get(key_name) else {
        return Err(StageError::failed(format!(
            "secret `{key_name}` is not in this stage's scope"
        )));
    };
    let key = zeroize::Zeroizing::new(key.expose_secret().to_vec());
    if key.len() < MIN_KEY_BYTES {
        cx.status
            .status(format!("fresh review — {}", short_key(key_name, key.len())));
        let mut out = StageOutputs::new();
        out.insert("restored".into(), OutputValue::Bool(false));
        return Ok(out);
    }
    let bind = cx
        .children
        .iter()
        .find(|c| c.name == "bind")
        .map(text_props)
        .unwrap_or_default();
    let binding = Binding::from_pairs(bind.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .map_err(|e| StageError::failed(format!("the binding is not usable: {e}")))?;
    let max_bytes = match arg(&cx, "max-bytes") {
        Some(Resolved::Int(n)) => u64::try_from(*n).unwrap_or(0),
        _ => DEFAULT_MAX_BYTES,
    };
    let require_posted_head = flag(&cx, "require-posted-head");
    let max_tries = opened
        .decl
        .max_tries
        .as_ref()
        .map_or(10, |t| t.value as usize);
    let work = cx.work_dir().await?.to_path_buf();
    let posted = if require_posted_head {
        let forge = services.forge(&cx)?;
        forge.last_posted().await?
    } else {
        None
    };
    // A marker with no head is of no posted review: no head, so no conversation to resume.
    let posted_head = posted
        .as_ref()
        .and_then(|p| p.head.as_ref())
        .map(ToString::to_string);
    let posted_conversation = posted.as_ref().and_then(|p| p.conversation.clone());
    let req = RestoreRequest {
        secret: &key,
        min_bytes: MIN_KEY_BYTES,
        binding: &binding,
        max_bytes,
        max_tries,
        posted_head: posted_head.as_deref(),
        posted_conversation: posted_conversation.as_deref(),
        require_posted_head,
    };
    let status = cx.status.clone();
    let outcome = restore(opened.store.as_ref(), &name, &req, &mut |l| {
        status.status(l)
    })
    .await;
    let mut out = StageOutputs::new();
    match outcome {
        RestoreOutcome::Restored {
            header,
            conversation,
            entry,
        } => {
            let path = work.join(&header.file_name);
            let packing = header.packing;
            let target = path.clone();
            // The plaintext is written (or unpacked) into the stage's private work folder, then
            // zeroized in memory.
            let written = super::runtime::blocking(move || {
                let mut conversation = zeroize::Zeroizing::new(conversation);
                let result = match packing {
                    Packing::File => std::fs::OpenOptions::new()
                        .write(true)
                        .create_new(true)
                        .open(&target)
                        .and_then(|mut f| std::io::Write::write_all(&mut f, &conversation))
                        .map_err(|e| e.to_string()),
                    Packing::Folder => {
                        let unpacked = unpack_folder(&conversation, &target);
                        if unpacked.is_err() {
                            let _ = std::fs::remove_dir_all(&target);
                        }
                        unpacked.map_err(|e| e.to_string())
                    }
                };
                zeroize::Zeroize::zeroize(&mut *conversation);
                Ok(result)
            })
            .await?;
            if let Err(e) = written {
                cx.status.status(format!(
                    "fresh review — the conversation of {entry} cannot be restored: {e}"
                ));
                out.insert("restored".into(), OutputValue::Bool(false));
                return Ok(out);
            }
            cx.status.status(format!(
                "restored conversation {} of the review of {}, from {entry}",
                header.conversation_id,
                header.head.get(..12).unwrap_or(&header.head)
            ));
            out.insert("conversation".into(), cx.output_file(&path).await?);
            out.insert("restored".into(), OutputValue::Bool(true));
            out.insert("head".into(), OutputValue::Text(header.head));
        }
        RestoreOutcome::Fresh { reason } => {
            cx.status.status(format!("fresh review — {reason}"));
            out.insert("restored".into(), OutputValue::Bool(false));
        }
    }
    Ok(out)
}
