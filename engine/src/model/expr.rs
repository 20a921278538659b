//! `when` conditions: references to boolean outputs combined with `&&`, `||`, `!` and
//! parentheses; `true` and `false` are constants.

use schemars::JsonSchema;
use serde::Serialize;

use super::Reference;
use crate::span::Span;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case", tag = "op")]
pub enum Expr {
    Const { value: bool },
    Ref { reference: Reference },
    Not { expr: Box<Expr> },
    And { left: Box<Expr>, right: Box<Expr> },
    Or { left: Box<Expr>, right: Box<Expr> },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExprError {
    pub span: Span,
    pub message: String,
}

impl Expr {
    pub fn collect_references<'a>(&'a self, out: &mut Vec<&'a Reference>) {
        match self {
            Self::Const { .. } => {}
            Self::Ref { reference } => out.push(reference),
            Self::Not { expr } => expr.collect_references(out),
            Self::And { left, right } | Self::Or { left, right } => {
                left.collect_references(out);
                right.collect_references(out);
            }
        }
    }

    /// Evaluates with `lookup` giving each reference's value; `None` (absent: the stage was
    /// skipped or its output is missing) makes the reference false, so a missing guard never
    /// opens a gate.
    pub fn eval(&self, lookup: &mut impl FnMut(&Reference) -> Option<bool>) -> bool {
        match self {
            Self::Const { value } => *value,
            Self::Ref { reference } => lookup(reference).unwrap_or(false),
            Self::Not { expr } => !expr.eval(lookup),
            Self::And { left, right } => left.eval(lookup) && right.eval(lookup),
            Self::Or { left, right } => left.eval(lookup) || right.eval(lookup),
        }
    }
}

impl Expr {
    /// Binding strength: `||` 1, `&&` 2, the rest 3.
    fn precedence(&self) -> u8 {
        match self {
            Self::Or { .. } => 1,
            Self::And { .. } => 2,
            _ => 3,
        }
    }

    fn fmt_in(&self, f: &mut std::fmt::Formatter<'_>, outer: u8) -> std::fmt::Result {
        let paren = self.precedence() < outer;
        if paren {
            f.write_str("(")?;
        }
        match self {
            Self::Const { value } => write!(f, "{value}")?,
            Self::Ref { reference } => write!(f, "{reference}")?,
            Self::Not { expr } => {
                f.write_str("!")?;
                expr.fmt_in(f, 3)?;
            }
            Self::And { left, right } => {
                left.fmt_in(f, 2)?;
                f.write_str(" && ")?;
                right.fmt_in(f, 3)?;
            }
            Self::Or { left, right } => {
                left.fmt_in(f, 1)?;
                f.write_str(" || ")?;
                right.fmt_in(f, 2)?;
            }
        }
        if paren {
            f.write_str(")")?;
        }
        Ok(())
    }
}

/// Minimal parentheses: `a.x || b.y && !c.z`.
impl std::fmt::Display for Expr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.fmt_in(f, 0)
    }
}

/// Parses `text`; `base` is the span of the text in the file (inside the quotes).
pub fn parse_expr(text: &str, base: Span) -> Result<Expr, ExprError> {
    let tokens = lex(text, base)?;
    let mut parser = Parser {
        tokens,
        pos: 0,
        end: base.sub(text.len().min(base.len), 0),
        depth: 0,
    };
    let expr = parser.or()?;
    match parser.tokens.get(parser.pos) {
        None => Ok(expr),
        Some((_, span)) => Err(ExprError {
            span: *span,
            message: "expected `&&`, `||` or the end of the condition".into(),
        }),
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    And,
    Or,
    Not,
    Open,
    Close,
    Word(String),
}

fn lex(text: &str, base: Span) -> Result<Vec<(Tok, Span)>, ExprError> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let span = |start: usize, len: usize| {
        if start + len <= base.len {
            base.sub(start, len)
        } else {
            base
        }
    };
    while i < b.len() {
        let c = b[i];
        let (tok, len) = match c {
            b' ' | b'\t' | b'\n' | b'\r' => {
                i += 1;
                continue;
            }
            b'&' if b.get(i + 1) == Some(&b'&') => (Tok::And, 2),
            b'|' if b.get(i + 1) == Some(&b'|') => (Tok::Or, 2),
            b'!' => (Tok::Not, 1),
            b'(' => (Tok::Open, 1),
            b')' => (Tok::Close, 1),
            c if c.is_ascii_alphanumeric() || c == b'_' || c == b'-' || c == b'.' => {
                let start = i;
                while i < b.len()
                    && (b[i].is_ascii_alphanumeric() || matches!(b[i], b'_' | b'-' | b'.'))
                {
                    i += 1;
                }
                out.push((Tok::Word(text[start..i].into()), span(start, i - start)));
                continue;
            }
            _ => {
                let ch = text[i..].chars().next().unwrap_or('?');
                return Err(ExprError {
                    span: span(i, ch.len_utf8()),
                    message: format!(
                        "unexpected `{ch}` in a condition: use `stage.output`, `&&`, `||`, `!` and parentheses"
                    ),
                });
            }
        };
        out.push((tok, span(i, len)));
        i += len;
    }
    Ok(out)
}

struct Parser {
    tokens: Vec<(Tok, Span)>,
    pos: usize,
    end: Span,
    depth: usize,
}

/// Conditions nest at most this deep, so a hostile file cannot overflow the stack.
const MAX_DEPTH: usize = 64;

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.tokens.get(self.pos).map(|(t, _)| t)
    }

    fn or(&mut self) -> Result<Expr, ExprError> {
        let mut left = self.and()?;
        while self.peek() == Some(&Tok::Or) {
            self.pos += 1;
            let right = self.and()?;
            left = Expr::Or {
                left: Box::new(left),
                right: Box::new(right),
            };
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<Expr, ExprError> {
        let mut left = self.unary()?;
        while self.peek() == Some(&Tok::And) {
            self.pos += 1;
            let right = self.unary()?;
            left = Expr::And {
                left: Box::new(left),
                right: Box::new(right),
            };
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<Expr, ExprError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            let span = self.tokens.get(self.pos).map_or(self.end, |(_, s)| *s);
            return Err(ExprError {
                span,
                message: format!("condition nested deeper than {MAX_DEPTH} levels"),
            });
        }
        let result = self.atom();
        self.depth -= 1;
        result
    }

    fn atom(&mut self) -> Result<Expr, ExprError> {
        let Some((tok, span)) = self.tokens.get(self.pos).cloned() else {
            return Err(ExprError {
                span: self.end,
                message: "the condition ends where a reference `stage.output` was expected".into(),
            });
        };
        self.pos += 1;
        match tok {
            Tok::Not => Ok(Expr::Not {
                expr: Box::new(self.unary()?),
            }),
            Tok::Open => {
                let inner = self.or()?;
                if self.peek() != Some(&Tok::Close) {
                    let span = self.tokens.get(self.pos).map_or(self.end, |(_, s)| *s);
                    return Err(ExprError {
                        span,
                        message: "expected `)`".into(),
                    });
                }
                self.pos += 1;
                Ok(inner)
            }
            Tok::Word(w) if w == "true" => Ok(Expr::Const { value: true }),
            Tok::Word(w) if w == "false" => Ok(Expr::Const { value: false }),
            Tok::Word(w) => match Reference::parse(&w, span) {
                Some(reference) => Ok(Expr::Ref { reference }),
                None => Err(ExprError {
                    span,
                    message: format!("`{w}` is not a reference: write `stage.output`"),
                }),
            },
            Tok::And | Tok::Or | Tok::Close => Err(ExprError {
                span,
                message: "expected a reference `stage.output`, `!` or `(`".into(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Expr, ExprError> {
        parse_expr(s, Span::new(0, s.len()))
    }

    #[test]
    fn precedence_and_grouping() {
        let e = parse("a.x || b.y && !c.z").unwrap();
        assert_eq!(e.to_string(), "a.x || b.y && !c.z");
        let e = parse("(a.x || b.y) && true").unwrap();
        assert_eq!(e.to_string(), "(a.x || b.y) && true");
        let e = parse("!(a.x && b.y)").unwrap();
        assert_eq!(e.to_string(), "!(a.x && b.y)");
    }

    #[test]
    fn errors_point_at_the_token() {
        let err = parse("a.x && && b.y").unwrap_err();
        assert_eq!(err.span, Span::new(7, 2));
        assert!(parse("a.x &").is_err());
        assert!(parse("a.x (").is_err());
        assert!(parse("").is_err());
        assert!(parse("word").is_err());
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let text = format!("{}a.b", "!".repeat(100_000));
        assert!(parse(&text).is_err());
    }

    #[test]
    fn absent_references_are_false() {
        let e = parse("!a.x").unwrap();
        assert!(e.eval(&mut |_| None));
        let e = parse("a.x").unwrap();
        assert!(!e.eval(&mut |_| None));
    }
}
