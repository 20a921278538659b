//! Hits: where a detector matched. A hit never holds the matched bytes.

use std::ops::Range;

use serde::Serialize;

use super::{DetectorId, Found, NamedSecret};

/// One match. Position only: printing a hit cannot leak what it found.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Hit {
    pub detector: DetectorId,
    /// 1-based line of the match's first byte.
    pub line: usize,
    /// 1-based byte column of the match's first byte.
    pub column: usize,
    /// Byte range of the match in the scanned text.
    pub byte_range: Range<usize>,
    /// For `secret-value`: the name of the secret found.
    pub secret_name: Option<String>,
}

impl std::fmt::Display for Hit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} at {}:{}", self.detector, self.line, self.column)?;
        if let Some(name) = &self.secret_name {
            write!(f, " (secret `{name}`)")?;
        }
        Ok(())
    }
}

/// Turns matches sorted by start into hits with line and column, in one walk over the text.
pub(crate) fn locate(
    text: &[u8],
    found: Vec<(DetectorId, Found)>,
    secrets: &[NamedSecret],
) -> Vec<Hit> {
    let mut line = 1;
    let mut line_start = 0;
    let mut pos = 0;
    found
        .into_iter()
        .map(|(detector, f)| {
            let start = f.range.start.min(text.len());
            for (i, &b) in text[pos.min(start)..start].iter().enumerate() {
                if b == b'\n' {
                    line += 1;
                    line_start = pos + i + 1;
                }
            }
            pos = pos.max(start);
            Hit {
                detector,
                line,
                column: start - line_start + 1,
                byte_range: f.range,
                secret_name: f
                    .secret
                    .and_then(|i| secrets.get(i))
                    .map(|s| s.name().to_owned()),
            }
        })
        .collect()
}
