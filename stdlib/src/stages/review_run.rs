//! How `std/review` runs: reads its children, picks the reviewer, and turns its outcome into
//! the stage's outputs. The contract is in `review.rs`.

/// Runs the stage.
pub(super) async fn run(
    cx: reviewflow_engine::run::StageCx<'_>,
) -> Result<reviewflow_engine::run::StageOutputs, reviewflow_engine::run::StageError> {
    use reviewflow_engine::run::{OutputValue, Resolved, StageError, StageOutputs};

    use super::runtime::{arg, value_bytes};
    use crate::reviewer::{
        CommandReviewer, Conversation, ReviewEvent, ReviewInput, RulesReviewer,
        run_command_reviewer, run_rules_reviewer,
    };

    let reviewer = arg(&cx, "reviewer")
        .and_then(Resolved::text)
        .unwrap_or_default();
    let mut inputs = Vec::new();
    for (child, untrusted) in [("untrusted", true), ("input", false)] {
        for c in cx.children.iter().filter(|c| c.name == child) {
            for (i, a) in c.args.iter().enumerate() {
                if let Resolved::Output(Some(v)) = a {
                    let name = cx
                        .stage
                        .children_named(child)
                        .flat_map(|c| c.args.iter())
                        .nth(i)
                        .and_then(|v| match &v.value {
                            reviewflow_engine::model::Value::Reference(r) => Some(r.to_string()),
                            _ => None,
                        })
                        .unwrap_or_else(|| format!("{child}-{i}"));
                    let bytes = value_bytes(v).await?;
                    inputs.push(if untrusted {
                        ReviewInput::untrusted(name, bytes)
                    } else {
                        ReviewInput::trusted(name, bytes)
                    });
                }
            }
        }
    }
    let resume = match arg(&cx, "resume") {
        Some(Resolved::Output(Some(OutputValue::File(p)))) => Some(Conversation::new(p.clone())),
        _ => None,
    };
    let tries = match arg(&cx, "tries") {
        Some(Resolved::Int(n)) => u32::try_from(*n).unwrap_or(2),
        _ => 2,
    };
    let work = cx.work_dir().await?.to_path_buf();
    let status = cx.status.clone();
    let on_event = move |e: ReviewEvent| match e {
        ReviewEvent::Status(s) => status.status(s),
        ReviewEvent::Output { stream, line, .. } => status.line(stream, line.as_bytes()),
    };
    let outcome = match reviewer.as_str() {
        "rules" => {
            // The rules read the diff: the first input from the change.
            let diff = inputs
                .iter()
                .find(|i| i.untrusted)
                .map(|i| i.bytes.clone())
                .unwrap_or_default();
            let spec = RulesReviewer {
                tries,
                ..RulesReviewer::default()
            };
            let work = work.clone();
            tokio::task::spawn_blocking(move || {
                run_rules_reviewer(&spec, &diff, &[], resume, &work, on_event)
            })
            .await
            .map_err(|e| StageError::failed(format!("the reviewer thread failed: {e}")))?
        }
        "command" => {
            let args: Vec<String> = cx
                .children
                .iter()
                .filter(|c| c.name == "command")
                .flat_map(|c| c.args.iter().filter_map(Resolved::text))
                .collect();
            if args.is_empty() {
                return Err(StageError::failed(
                    "a `command` reviewer needs a `command` child",
                ));
            }
            let mut spec = CommandReviewer::new(args, cx.checkout.to_path_buf());
            spec.tries = tries;
            spec.grace = cx.grace;
            spec.timeout = cx.stage.timeout();
            for c in cx.children.iter().filter(|c| c.name == "env") {
                if let (Some(k), Some(v)) = (
                    c.args.first().and_then(Resolved::text),
                    c.args.get(1).and_then(Resolved::text),
                ) {
                    spec.env.push((k, v));
                }
            }
            for c in cx.children.iter().filter(|c| c.name == "secret-env") {
                if let (Some(k), Some(Resolved::Secret(s))) =
                    (c.args.first().and_then(Resolved::text), c.args.get(1))
                    && let Some(v) = cx.secrets.get(s)
                {
                    spec.secret_env.push((k, v.clone()));
                }
            }
            if let Some(p) = arg(&cx, "prompt").and_then(Resolved::text) {
                let path = cx.checkout.join(&p);
                spec.instructions = tokio::fs::read_to_string(&path).await.map_err(|e| {
                    StageError::io(format!("read the prompt {}", path.display()), e)
                })?;
            }
            let cancel = cx.cancel.clone();
            run_command_reviewer(
                &spec,
                &inputs,
                resume,
                &work,
                cx.redactor,
                async move {
                    cancel.cancelled().await;
                },
                on_event,
            )
            .await
        }
        other => {
            return Err(StageError::failed(format!(
                "the `{other}` reviewer is not available in this build (use \"rules\" or \"command\")"
            )));
        }
    };
    let outcome = outcome.map_err(|e| StageError::failed(e.to_string()))?;
    let mut out = StageOutputs::new();
    out.insert("comment".into(), OutputValue::Text(outcome.comment));
    let findings = serde_json::to_value(&outcome.findings)
        .map_err(|e| StageError::failed(format!("cannot encode the findings: {e}")))?;
    out.insert("findings".into(), OutputValue::Json(findings));
    if let Some(c) = outcome.conversation {
        out.insert("conversation".into(), OutputValue::File(c));
    }
    out.insert("commented".into(), OutputValue::Bool(outcome.commented));
    out.insert("resumed".into(), OutputValue::Bool(outcome.resumed));
    out.insert("clean".into(), OutputValue::Bool(outcome.clean));
    Ok(out)
}
