//! Interpolated strings: `"projects/{project}/"`, `"{gather.head}"`. `{{` and `}}` stand for
//! literal braces.

use schemars::JsonSchema;
use serde::Serialize;

use super::Reference;
use crate::span::Span;

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Template {
    pub segments: Vec<Segment>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Segment {
    Literal {
        text: String,
    },
    /// `{name}`: an input.
    Input {
        name: String,
        span: Span,
    },
    /// `{stage.output}`.
    Reference {
        reference: Reference,
    },
    /// `{work}`: the stage's own work folder, a different one for each stage and each run.
    Work {
        span: Span,
    },
}

/// The name `{work}` is read as: no input may take it.
pub const WORK: &str = "work";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TemplateError {
    pub span: Span,
    pub message: String,
}

impl Template {
    pub fn literal(text: &str) -> Self {
        Self {
            segments: vec![Segment::Literal { text: text.into() }],
        }
    }

    pub fn references(&self) -> impl Iterator<Item = &Reference> {
        self.segments.iter().filter_map(|s| match s {
            Segment::Reference { reference } => Some(reference),
            _ => None,
        })
    }

    pub fn inputs(&self) -> impl Iterator<Item = (&str, Span)> {
        self.segments.iter().filter_map(|s| match s {
            Segment::Input { name, span } => Some((name.as_str(), *span)),
            _ => None,
        })
    }

    pub fn is_interpolated(&self) -> bool {
        self.segments
            .iter()
            .any(|s| !matches!(s, Segment::Literal { .. }))
    }

    /// The text with every interpolation left as `{…}`.
    pub fn source_text(&self) -> String {
        let mut out = String::new();
        for s in &self.segments {
            match s {
                Segment::Literal { text } => {
                    out.push_str(&text.replace('{', "{{").replace('}', "}}"))
                }
                Segment::Input { name, .. } => {
                    out.push('{');
                    out.push_str(name);
                    out.push('}');
                }
                Segment::Reference { reference } => {
                    out.push('{');
                    out.push_str(&reference.to_string());
                    out.push('}');
                }
                Segment::Work { .. } => out.push_str("{work}"),
            }
        }
        out
    }
}

/// Parses `text`; `base` is the offset of the text's first byte in the file (after the
/// opening quote), used for the spans of interpolations. When the string in the file has escapes
/// the offsets are approximate; spans are clamped to the string.
pub fn parse_template(text: &str, base: Span) -> Result<Template, TemplateError> {
    let mut segments = Vec::new();
    let mut literal = String::new();
    let mut chars = text.char_indices().peekable();
    let span_at = |start: usize, len: usize| {
        if start + len <= base.len {
            base.sub(start, len)
        } else {
            base
        }
    };
    while let Some((i, c)) = chars.next() {
        match c {
            '{' if chars.peek().map(|&(_, c)| c) == Some('{') => {
                chars.next();
                literal.push('{');
            }
            '}' if chars.peek().map(|&(_, c)| c) == Some('}') => {
                chars.next();
                literal.push('}');
            }
            '{' => {
                let rest = &text[i + 1..];
                let Some(close) = rest.find('}') else {
                    return Err(TemplateError {
                        span: span_at(i, 1),
                        message: "unclosed `{` in a string: write `{{` for a literal brace".into(),
                    });
                };
                let name = &rest[..close];
                let span = span_at(i, close + 2);
                let valid = !name.is_empty()
                    && name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
                if !valid {
                    return Err(TemplateError {
                        span,
                        message: format!(
                            "`{{{name}}}` is not an interpolation: write `{{input}}` or `{{stage.output}}`, or `{{{{` for a literal brace"
                        ),
                    });
                }
                if !literal.is_empty() {
                    segments.push(Segment::Literal {
                        text: std::mem::take(&mut literal),
                    });
                }
                if name.contains('.') {
                    let Some(reference) = Reference::parse(name, span) else {
                        return Err(TemplateError {
                            span,
                            message: format!("`{{{name}}}` is not a reference `stage.output`"),
                        });
                    };
                    segments.push(Segment::Reference { reference });
                } else if name == WORK {
                    segments.push(Segment::Work { span });
                } else {
                    segments.push(Segment::Input {
                        name: name.into(),
                        span,
                    });
                }
                for _ in 0..=close {
                    chars.next();
                }
            }
            '}' => {
                return Err(TemplateError {
                    span: span_at(i, 1),
                    message: "a lone `}` in a string: write `}}` for a literal brace".into(),
                });
            }
            c => literal.push(c),
        }
    }
    if !literal.is_empty() {
        segments.push(Segment::Literal { text: literal });
    }
    Ok(Template { segments })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_inputs_references_and_escapes() {
        let t = parse_template("a/{project}/{gather.head}{{x}}", Span::new(10, 30)).unwrap();
        assert_eq!(t.inputs().map(|(n, _)| n).collect::<Vec<_>>(), ["project"]);
        assert_eq!(
            t.references().map(|r| r.to_string()).collect::<Vec<_>>(),
            ["gather.head"]
        );
        assert_eq!(t.source_text(), "a/{project}/{gather.head}{{x}}");
        assert_eq!(t.inputs().next().unwrap().1, Span::new(12, 9));
    }

    #[test]
    fn rejects_unclosed_and_lone_braces() {
        assert!(parse_template("a{b", Span::new(0, 3)).is_err());
        assert!(parse_template("a}b", Span::new(0, 3)).is_err());
        assert!(parse_template("{a b}", Span::new(0, 5)).is_err());
    }
}
