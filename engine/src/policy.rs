//! Outcomes of a stage and what its outputs read under each: the one definition of failure
//! semantics, used by `check` (fail-closed) and by the executor alike.
//!
//! - success: the stage's real outputs;
//! - failure under `on-error="fail"`: the run stops, nothing downstream runs;
//! - failure under `on-error="fallback"`, or a secret it holds missing under
//!   `on-missing="disable"`: the contract's fallback values, with the stage's `fallback`
//!   overrides; `ok` is false;
//! - failure under `on-error="skip"`, or its `when` false: every output absent.
//!
//! An absent output reads as false in a condition, so a missing guard never opens a gate.

use std::collections::HashMap;

use crate::contract::{FallbackValue, StageContract};
use crate::model::{Expr, OnError, OnMissing, Pipeline, Reference, Stage};

/// The value of an output: `Some(b)` for a boolean that is set, `None` when absent (or not a
/// boolean).
pub type Outputs = HashMap<String, Option<bool>>;

/// The outputs of a stage that fell back.
pub fn fallback_outputs(stage: &Stage, contract: &StageContract) -> Outputs {
    let mut out: Outputs = contract
        .fallback
        .iter()
        .map(|f| {
            let v = match f.value {
                FallbackValue::Bool(b) => Some(b),
                FallbackValue::Absent => None,
            };
            (f.output.clone(), v)
        })
        .collect();
    for o in &stage.fallback {
        out.insert(o.output.value.clone(), Some(o.value.value));
    }
    out.insert("ok".into(), Some(false));
    out
}

/// A way a stage can end other than success, and what its outputs read then.
#[derive(Clone, Debug)]
pub struct BadOutcome {
    /// "fails (on-error=\"fallback\")", …: completes "if `scan` …".
    pub description: String,
    pub outputs: Outputs,
}

/// Every outcome of `stage` other than success under which the run goes on.
pub fn bad_outcomes(
    pipeline: &Pipeline,
    stage: &Stage,
    contract: &StageContract,
) -> Vec<BadOutcome> {
    let mut out = Vec::new();
    match stage.on_error.value {
        OnError::Fail => {}
        OnError::Fallback => out.push(BadOutcome {
            description: "fails (on-error=\"fallback\")".into(),
            outputs: fallback_outputs(stage, contract),
        }),
        OnError::Skip => out.push(BadOutcome {
            description: "fails (on-error=\"skip\")".into(),
            outputs: Outputs::new(),
        }),
    }
    if stage
        .when
        .as_ref()
        .is_some_and(|w| !w.value.eq(&Expr::Const { value: true }))
    {
        out.push(BadOutcome {
            description: "is skipped (its `when` is false)".into(),
            outputs: Outputs::new(),
        });
    }
    for name in stage.secrets_named() {
        let Some(secret) = pipeline.secret(name.value) else {
            continue;
        };
        if secret.on_missing.value == OnMissing::Disable {
            out.push(BadOutcome {
                description: format!(
                    "is disabled because secret `{}` is missing (on-missing=\"disable\")",
                    secret.name.value
                ),
                outputs: fallback_outputs(stage, contract),
            });
        }
    }
    out
}

/// Whether `expr` can be true when the references `fixed` answers for have those values and
/// every other reference is free. Returns a witness assignment of the free references.
/// Enumerates up to 16 free references; beyond that it answers conservatively (true).
pub fn can_be_true(
    expr: &Expr,
    fixed: &dyn Fn(&Reference) -> Option<Option<bool>>,
) -> Option<Vec<(String, bool)>> {
    let mut refs = Vec::new();
    expr.collect_references(&mut refs);
    let mut free: Vec<String> = refs
        .iter()
        .filter(|r| fixed(r).is_none())
        .map(|r| r.to_string())
        .collect();
    free.sort();
    free.dedup();
    if free.len() > 16 {
        return Some(Vec::new());
    }
    for bits in 0u32..(1 << free.len()) {
        let value = expr.eval(&mut |r| match fixed(r) {
            Some(v) => v,
            None => {
                let i = free.iter().position(|n| *n == r.to_string())?;
                Some(bits & (1 << i) != 0)
            }
        });
        if value {
            return Some(
                free.iter()
                    .enumerate()
                    .map(|(i, n)| (n.clone(), bits & (1 << i) != 0))
                    .collect(),
            );
        }
    }
    None
}

/// Whether `stage` runs only when `guard.output` is true: its `when` is false whenever that
/// output is false or absent, whatever else holds.
pub fn requires(stage: &Stage, guard: &str, output: &str) -> bool {
    let Some(when) = &stage.when else {
        return false;
    };
    let fixed = |r: &Reference| (r.stage == guard && r.output == output).then_some(Some(false));
    can_be_true(&when.value, &fixed).is_none()
}
