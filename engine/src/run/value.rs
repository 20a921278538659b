//! Output values of stages (their digests: `digest.rs`).

use super::file_output::FileOutput;

/// The value of one output. A `File` lies in the stage's own folder until the stage has ended,
/// then in the run directory with the digest it was kept with.
#[derive(Clone, Debug, PartialEq)]
pub enum OutputValue {
    Bool(bool),
    Text(String),
    Bytes(Vec<u8>),
    Json(serde_json::Value),
    File(FileOutput),
}

/// The outputs a stage produced, by name. An output that is not in the map is absent.
pub type StageOutputs = std::collections::BTreeMap<String, OutputValue>;

impl OutputValue {
    /// The type tag kept in the manifest.
    pub fn type_name(&self) -> &'static str {
        match self {
            Self::Bool(_) => "bool",
            Self::Text(_) => "text",
            Self::Bytes(_) => "bytes",
            Self::Json(_) => "json",
            Self::File(_) => "file",
        }
    }

    /// The value as a condition reads it: only booleans are booleans.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Self::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// The value as a template renders it.
    pub fn render(&self) -> String {
        match self {
            Self::Bool(b) => b.to_string(),
            Self::Text(t) => t.clone(),
            Self::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
            Self::Json(v) => v.to_string(),
            Self::File(f) => f.path().display().to_string(),
        }
    }

    /// The bytes the digest covers and the run directory keeps (a file's are read by the caller).
    pub fn bytes(&self) -> Option<Vec<u8>> {
        match self {
            Self::Bool(b) => Some(if *b {
                b"true".to_vec()
            } else {
                b"false".to_vec()
            }),
            Self::Text(t) => Some(t.as_bytes().to_vec()),
            Self::Bytes(b) => Some(b.clone()),
            Self::Json(v) => Some(v.to_string().into_bytes()),
            Self::File(_) => None,
        }
    }

    /// Rebuilds a value of type `type_name` from kept bytes (`file` is `file`'s, not rebuilt
    /// from bytes).
    pub fn from_kept(type_name: &str, bytes: Vec<u8>, file: Option<FileOutput>) -> Option<Self> {
        Some(match type_name {
            "bool" => match bytes.as_slice() {
                b"true" => Self::Bool(true),
                b"false" => Self::Bool(false),
                _ => return None,
            },
            "text" => Self::Text(String::from_utf8(bytes).ok()?),
            "bytes" => Self::Bytes(bytes),
            "json" => Self::Json(serde_json::from_slice(&bytes).ok()?),
            "file" => Self::File(file?),
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_values_round_trip() {
        for v in [
            OutputValue::Bool(true),
            OutputValue::Text("a".into()),
            OutputValue::Json(serde_json::json!({"a": 1})),
        ] {
            let back = OutputValue::from_kept(v.type_name(), v.bytes().unwrap(), None);
            assert_eq!(back, Some(v));
        }
    }
}
