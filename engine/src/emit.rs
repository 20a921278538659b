//! The compiled model as JSON (`reviewflow check --emit model`), and the JSON Schemas of every
//! machine-readable format (`reviewflow schema`).

use schemars::JsonSchema;
use serde::Serialize;

use crate::compile::Compiled;
use crate::model::{MODEL_FORMAT_VERSION, Pipeline};
use crate::report::FindingsReport;

/// `reviewflow check --emit model`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct ModelDocument<'a> {
    /// Format version; bumped on any incompatible change.
    pub version: u32,
    pub file: String,
    pub pipeline: &'a Pipeline,
    /// Stage names in the order they can run; absent when the stages form a cycle.
    pub order: Option<Vec<String>>,
    pub edges: Vec<EdgeJson>,
}

/// A DAG edge.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct EdgeJson {
    pub from: String,
    pub to: String,
    /// Outputs the consumer's children read.
    pub data: Vec<String>,
    /// Outputs the consumer's `when` reads.
    pub guard: Vec<String>,
    pub needs: bool,
}

pub fn model_document(compiled: &Compiled) -> ModelDocument<'_> {
    let stages = &compiled.pipeline.stages;
    let name = |i: usize| stages[i].name.value.clone();
    ModelDocument {
        version: MODEL_FORMAT_VERSION,
        file: compiled.source.name().to_string(),
        pipeline: &compiled.pipeline,
        order: compiled
            .dag
            .order
            .as_ref()
            .map(|o| o.iter().map(|&i| name(i)).collect()),
        edges: compiled
            .dag
            .edges()
            .into_iter()
            .map(|(from, to, info)| EdgeJson {
                from: name(from),
                to: name(to),
                data: info.data.to_vec(),
                guard: info.guard.to_vec(),
                needs: info.needs,
            })
            .collect(),
    }
}

/// Every schema `reviewflow schema` writes: (file name, schema).
pub fn schemas() -> Vec<(&'static str, serde_json::Value)> {
    let mut out = vec![
        ("model.schema.json", schema_of::<ModelDocument<'static>>()),
        ("findings.schema.json", schema_of::<FindingsReport>()),
    ];
    out.extend(crate::exec::schemas());
    out
}

fn schema_of<T: JsonSchema>() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(T)).unwrap_or_default()
}
