//! Reading a KDL node's entries: arguments, properties (each at most once), and their spans.

use kdl::{KdlEntry, KdlNode, KdlValue};

use super::{Fact, Lowerer};
use crate::span::{Span, Spanned};
use crate::suggest::did_you_mean;

/// The entries of one node, split and checked against the properties it accepts.
pub struct Entries<'a> {
    pub args: Vec<&'a KdlEntry>,
    pub props: Vec<(&'a str, &'a KdlEntry)>,
}

impl<'a> Entries<'a> {
    pub fn prop(&self, name: &str) -> Option<&'a KdlEntry> {
        self.props.iter().find(|(n, _)| *n == name).map(|(_, e)| *e)
    }
}

impl Lowerer<'_> {
    /// Splits `node`'s entries, reporting unknown properties (with a did-you-mean over `known`)
    /// and properties given twice. Only the first of a duplicated property is kept.
    /// `what` names the node in findings; it is formatted only when there is one.
    pub fn entries<'a>(
        &mut self,
        node: &'a KdlNode,
        what: &dyn std::fmt::Display,
        known: &[&str],
    ) -> Entries<'a> {
        let mut args = Vec::new();
        let mut props: Vec<(&'a str, &'a KdlEntry)> = Vec::new();
        for entry in node.entries() {
            match entry.name() {
                None => args.push(entry),
                Some(name) => {
                    let key = name.value();
                    if let Some((_, first)) = props.iter().find(|(n, _)| *n == key) {
                        self.fact(Fact::Duplicate {
                            span: name.span().into(),
                            first: first.span().into(),
                            what: format!("property `{key}` of {what}"),
                            name: key.into(),
                        });
                        continue;
                    }
                    if !known.contains(&key) {
                        self.fact(Fact::UnknownProperty {
                            span: name.span().into(),
                            name: key.into(),
                            node: what.to_string(),
                            candidates: did_you_mean(key, known.iter().copied()),
                        });
                        continue;
                    }
                    props.push((key, entry));
                }
            }
        }
        Entries { args, props }
    }

    /// The span of an entry's value (a property's span without `key=`).
    pub fn value_span(&self, entry: &KdlEntry) -> Span {
        let span: Span = entry.span().into();
        if entry.name().is_none() {
            return span;
        }
        let text = self.source.slice(span);
        match text.find('=') {
            Some(eq) => {
                let rest = &text[eq + 1..];
                let skip = rest.len() - rest.trim_start().len();
                Span::new(span.offset + eq + 1 + skip, span.len - eq - 1 - skip)
            }
            None => span,
        }
    }

    /// The span of a string value's contents (inside the quotes), for spans of interpolations.
    pub fn string_content_span(&self, entry: &KdlEntry) -> Span {
        let span = self.value_span(entry);
        let text = self.source.slice(span);
        let hashes = text.bytes().take_while(|&b| b == b'#').count();
        let quotes = if text[hashes..].starts_with("\"\"\"") {
            3
        } else if text[hashes..].starts_with('"') {
            1
        } else {
            0
        };
        let open = hashes + quotes;
        if span.len >= 2 * open {
            Span::new(span.offset + open, span.len - 2 * open)
        } else {
            span
        }
    }

    pub fn expect_string(&mut self, entry: &KdlEntry, what: &str) -> Option<Spanned<String>> {
        let span = self.value_span(entry);
        match entry.value() {
            KdlValue::String(s) => Some(Spanned::new(s.clone(), span)),
            other => {
                self.type_mismatch(span, what, "a string", other);
                None
            }
        }
    }

    pub fn expect_int(&mut self, entry: &KdlEntry, what: &str) -> Option<Spanned<i64>> {
        let span = self.value_span(entry);
        match entry.value() {
            KdlValue::Integer(i) => match i64::try_from(*i) {
                Ok(i) => Some(Spanned::new(i, span)),
                Err(_) => {
                    self.fact(Fact::TypeMismatch {
                        span,
                        what: what.into(),
                        expected: "an integer that fits in 64 bits".into(),
                        found: "a larger integer".into(),
                        help: None,
                    });
                    None
                }
            },
            other => {
                self.type_mismatch(span, what, "an integer", other);
                None
            }
        }
    }

    pub fn expect_count(&mut self, entry: &KdlEntry, what: &str) -> Option<Spanned<u64>> {
        let value = self.expect_int(entry, what)?;
        match u64::try_from(value.value) {
            Ok(v) => Some(Spanned::new(v, value.span)),
            Err(_) => {
                self.fact(Fact::TypeMismatch {
                    span: value.span,
                    what: what.into(),
                    expected: "a non-negative integer".into(),
                    found: value.value.to_string(),
                    help: None,
                });
                None
            }
        }
    }

    pub fn expect_bool(&mut self, entry: &KdlEntry, what: &str) -> Option<Spanned<bool>> {
        let span = self.value_span(entry);
        match entry.value() {
            KdlValue::Bool(b) => Some(Spanned::new(*b, span)),
            other => {
                self.type_mismatch(span, what, "#true or #false", other);
                None
            }
        }
    }

    pub fn type_mismatch(&mut self, span: Span, what: &str, expected: &str, found: &KdlValue) {
        let help = match found {
            KdlValue::String(s) if s == "true" || s == "false" => {
                Some(format!("KDL v2 writes booleans as #{s}"))
            }
            KdlValue::String(s) if expected.contains("integer") && s.parse::<i64>().is_ok() => {
                Some(format!("write the number without quotes: {s}"))
            }
            _ => None,
        };
        self.fact(Fact::TypeMismatch {
            span,
            what: what.into(),
            expected: expected.into(),
            found: describe_value(found),
            help,
        });
    }
}

pub fn describe_value(value: &KdlValue) -> String {
    match value {
        KdlValue::String(s) => format!("the string \"{}\"", truncate(s, 40)),
        KdlValue::Integer(i) => format!("the integer {i}"),
        KdlValue::Float(f) => format!("the number {f}"),
        KdlValue::Bool(b) => format!("#{b}"),
        KdlValue::Null => "#null".into(),
    }
}

pub(super) fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.into()
    } else {
        let cut: String = s.chars().take(max).collect();
        format!("{cut}…")
    }
}
