//! The lens file: a `---` header of `key: value` lines (`ceiling`, `verdict`, each exactly once),
//! a closing `---`, then the prompt. Strict: a misspelt key must fail, not read as a default.

use super::{Lens, LensMeta, VerdictMode};
use crate::rules::Severity;

/// Largest lens file, in bytes.
pub const MAX_LENS_BYTES: u64 = 64 * 1024;

/// Why a lens file's text is refused.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum LensFormatError {
    #[error("it does not start with a `---` header line")]
    NoHeader,
    #[error("its header is not closed by a `---` line")]
    Unclosed,
    #[error("header line {line}: not `key: value`")]
    NotKeyValue { line: usize },
    #[error("header line {line}: unknown key `{key}` (keys: ceiling, verdict)")]
    UnknownKey { line: usize, key: String },
    #[error("header line {line}: `{key}` is given twice")]
    Repeated { line: usize, key: String },
    #[error("header line {line}: `ceiling: {value}` is not info, warning or error")]
    Ceiling { line: usize, value: String },
    #[error("header line {line}: `verdict: {value}` is not findings-only or included")]
    Verdict { line: usize, value: String },
    #[error("its header lacks `{0}`")]
    Missing(&'static str),
    #[error("its prompt is empty")]
    EmptyPrompt,
}

/// Parses the text of the lens `name`.
pub fn parse(name: &str, text: &str) -> Result<Lens, LensFormatError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    if lines.next().map(str::trim_end) != Some("---") {
        return Err(LensFormatError::NoHeader);
    }
    let (mut ceiling, mut verdict) = (None, None);
    let mut consumed = text.len() - lines.clone().map(str::len).sum::<usize>();
    let mut closed = false;
    for (i, raw) in lines.by_ref().enumerate() {
        consumed += raw.len();
        let line_no = i + 2;
        let line = raw.trim();
        if line == "---" {
            closed = true;
            break;
        }
        if line.is_empty() {
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            return Err(LensFormatError::NotKeyValue { line: line_no });
        };
        let (key, value) = (key.trim(), value.trim());
        let repeated = || LensFormatError::Repeated {
            line: line_no,
            key: key.to_owned(),
        };
        match key {
            "ceiling" => {
                if ceiling.is_some() {
                    return Err(repeated());
                }
                ceiling = Some(match value {
                    "info" => Severity::Info,
                    "warning" => Severity::Warning,
                    "error" => Severity::Error,
                    _ => {
                        return Err(LensFormatError::Ceiling {
                            line: line_no,
                            value: value.chars().take(40).collect(),
                        });
                    }
                });
            }
            "verdict" => {
                if verdict.is_some() {
                    return Err(repeated());
                }
                verdict = Some(match value {
                    "findings-only" => VerdictMode::FindingsOnly,
                    "included" => VerdictMode::Included,
                    _ => {
                        return Err(LensFormatError::Verdict {
                            line: line_no,
                            value: value.chars().take(40).collect(),
                        });
                    }
                });
            }
            _ => {
                return Err(LensFormatError::UnknownKey {
                    line: line_no,
                    key: key.chars().take(40).collect(),
                });
            }
        }
    }
    if !closed {
        return Err(LensFormatError::Unclosed);
    }
    let prompt = text.get(consumed..).unwrap_or_default().trim();
    if prompt.is_empty() {
        return Err(LensFormatError::EmptyPrompt);
    }
    Ok(Lens {
        meta: LensMeta {
            name: name.to_owned(),
            ceiling: ceiling.ok_or(LensFormatError::Missing("ceiling"))?,
            verdict: verdict.ok_or(LensFormatError::Missing("verdict"))?,
        },
        prompt: prompt.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lens_parses() {
        let lens = parse(
            "sec",
            "---\nceiling: warning\nverdict: included\n---\nLook for bugs.\n",
        )
        .unwrap();
        assert_eq!(lens.meta.ceiling, Severity::Warning);
        assert_eq!(lens.meta.verdict, VerdictMode::Included);
        assert_eq!(lens.prompt, "Look for bugs.");
    }

    #[test]
    fn bad_headers_are_refused() {
        let cases = [
            ("Look.\n", LensFormatError::NoHeader),
            ("---\nceiling: error\n", LensFormatError::Unclosed),
            (
                "---\nceiling: error\nverdict: included\nceiling: info\n---\nx\n",
                LensFormatError::Repeated {
                    line: 4,
                    key: "ceiling".into(),
                },
            ),
            (
                "---\nceiling: error\ndisabled: true\n---\nx\n",
                LensFormatError::UnknownKey {
                    line: 3,
                    key: "disabled".into(),
                },
            ),
            (
                "---\nceiling: fatal\nverdict: included\n---\nx\n",
                LensFormatError::Ceiling {
                    line: 2,
                    value: "fatal".into(),
                },
            ),
            (
                "---\nverdict: included\n---\nx\n",
                LensFormatError::Missing("ceiling"),
            ),
            (
                "---\nceiling: info\nverdict: included\n---\n  \n",
                LensFormatError::EmptyPrompt,
            ),
            (
                "---\nceiling info\n---\nx\n",
                LensFormatError::NotKeyValue { line: 2 },
            ),
        ];
        for (text, want) in cases {
            assert_eq!(parse("x", text).unwrap_err(), want, "{text:?}");
        }
    }
}
