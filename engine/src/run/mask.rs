//! What a platform is asked to mask in its log (docs/platforms.md): every form of a secret a
//! log line could hold whole. reviewflow redacts every secret from what it prints first; a
//! platform's mask is a second filter, for what a child writes that the redactor cannot see.

use base64::Engine as _;

use crate::exec::secret::SecretValue;

/// The strings a platform is asked to mask for these values: each value, each of its non-empty lines
/// (a mask applies to one line), its trimmed form and its standard base64 encoding.
pub fn mask_lines<'a>(values: impl IntoIterator<Item = &'a SecretValue>) -> Vec<String> {
    let mut out = Vec::new();
    for v in values {
        let bytes = v.expose_secret();
        if let Ok(text) = std::str::from_utf8(bytes) {
            for line in text.lines() {
                let t = line.trim();
                if !t.is_empty() {
                    out.push(t.to_string());
                }
            }
        }
        out.push(base64::engine::general_purpose::STANDARD.encode(bytes));
        let trimmed = bytes.trim_ascii();
        if trimmed.len() != bytes.len() && !trimmed.is_empty() {
            out.push(base64::engine::general_purpose::STANDARD.encode(trimmed));
        }
    }
    out.sort();
    out.dedup();
    out
}
