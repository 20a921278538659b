//! Limits checked before the KDL parser sees a file.
//!
//! A pipeline file can come from a pull request, so the parser's known pathologies are a
//! security property: deep nesting overflows its stack, and every nested slash-dashed children
//! block (`a /-{ … }`) doubles its running time, so a 150-byte file would never finish. This
//! lexer-aware pre-scan (strings, raw strings and comments are skipped, so braces inside them do
//! not count) rejects such files with a diagnostic that points at the offending byte. Block
//! comments nest in KDL, and the parser recurses per level of them too, so their depth is
//! bounded like that of children blocks.
//!
//! The number of tokens (names, values, strings, braces, type annotations) is bounded too: the
//! parser, the model and every output spend memory and time per token, and a file of a hundred
//! thousand `}` or `""` would otherwise cost gigabytes before its first error could be said.

use crate::span::Span;

/// The bounds a file must stay within. The defaults are far above any real pipeline.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Largest file accepted, in bytes.
    pub max_bytes: usize,
    /// Deepest nesting of children blocks.
    pub max_depth: usize,
    /// Deepest nesting of slash-dashed children blocks (`/-{`), each of which doubles parse time.
    pub max_slashdash_depth: usize,
    /// Longest string literal, in bytes.
    pub max_string_bytes: usize,
    /// Deepest nesting of block comments (`/* /* */ */`).
    pub max_comment_depth: usize,
    /// Most tokens in a file: bare words and numbers, strings, `#` keywords, braces and type
    /// annotations, counted outside comments.
    pub max_tokens: usize,
}

/// The default token bound. A stage of the example pipelines takes 20 to 30 tokens, so this
/// leaves room for well over a thousand stages, while the parser's and model's cost per token
/// (about 1 KB) stays far under 200 MB.
pub const MAX_TOKENS: usize = 40_000;

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_bytes: 8 << 20,
            max_depth: 32,
            max_slashdash_depth: 3,
            max_string_bytes: 256 << 10,
            max_comment_depth: 32,
            max_tokens: MAX_TOKENS,
        }
    }
}

/// Why a file was refused before parsing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LimitError {
    TooLarge {
        bytes: usize,
        max: usize,
    },
    TooDeep {
        span: Span,
        max: usize,
    },
    SlashdashTooDeep {
        span: Span,
        max: usize,
    },
    /// Block comments (`/* /* … */ */`) nested past the bound.
    CommentTooDeep {
        span: Span,
        max: usize,
    },
    /// Slashdashes in a row (`/- /- /- a`), each of which the parser recurses into.
    SlashdashRunTooLong {
        span: Span,
        max: usize,
    },
    StringTooLong {
        span: Span,
        bytes: usize,
        max: usize,
    },
    /// More tokens than [`Limits::max_tokens`]; the span is the first token past the bound.
    TooManyTokens {
        span: Span,
        max: usize,
    },
}

/// Scans `text` once and reports the first limit it breaks.
pub fn check_limits(text: &str, limits: &Limits) -> Result<(), LimitError> {
    if text.len() > limits.max_bytes {
        return Err(LimitError::TooLarge {
            bytes: text.len(),
            max: limits.max_bytes,
        });
    }
    let b = text.as_bytes();
    let mut i = 0;
    // One entry per open children block: whether it was slash-dashed.
    let mut stack: Vec<bool> = Vec::new();
    let mut slashdashed_open = 0usize;
    let mut pending_slashdash = false;
    let mut slashdash_run = 0usize;
    let mut tokens = 0usize;
    // Whether the byte before `i` was part of a bare word (a name, number or keyword).
    let mut in_word = false;
    while i < b.len() {
        let word_before = std::mem::take(&mut in_word);
        // Every token but the rest of a bare word counts, where it starts.
        let starts_token = match b[i] {
            b'"' | b'{' | b'}' | b'(' => true,
            b'#' => true,
            b'/' => !matches!(b.get(i + 1), Some(b'/' | b'*' | b'-')) && !word_before,
            c => !word_before && is_word_byte(c),
        };
        if starts_token {
            tokens += 1;
            if tokens > limits.max_tokens {
                return Err(LimitError::TooManyTokens {
                    span: Span::new(i, 1),
                    max: limits.max_tokens,
                });
            }
        }
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                // The span points at the `/*` that goes too deep.
                i = skip_block_comment(b, i, limits.max_comment_depth).map_err(|at| {
                    LimitError::CommentTooDeep {
                        span: Span::new(at, 2),
                        max: limits.max_comment_depth,
                    }
                })?;
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'-') => {
                // `/- /- /- …` nests too: the parser recurses once per slashdash in a row.
                slashdash_run = if pending_slashdash {
                    slashdash_run + 1
                } else {
                    1
                };
                if slashdash_run > limits.max_depth {
                    return Err(LimitError::SlashdashRunTooLong {
                        span: Span::new(i, 2),
                        max: limits.max_depth,
                    });
                }
                pending_slashdash = true;
                i += 2;
                continue;
            }
            b'"' => {
                let start = i;
                i = skip_string(b, i, 0);
                check_string(start, i, limits)?;
                pending_slashdash = false;
                continue;
            }
            b'#' => {
                let mut hashes = 0;
                while b.get(i + hashes) == Some(&b'#') {
                    hashes += 1;
                }
                if b.get(i + hashes) == Some(&b'"') {
                    let start = i;
                    i = skip_string(b, i + hashes, hashes);
                    check_string(start, i, limits)?;
                } else {
                    i += hashes;
                    // `#true`, `#inf`: the keyword after the `#` is the same token.
                    in_word = true;
                }
                pending_slashdash = false;
                continue;
            }
            b'{' => {
                let slashdashed = pending_slashdash;
                stack.push(slashdashed);
                if slashdashed {
                    slashdashed_open += 1;
                    if slashdashed_open > limits.max_slashdash_depth {
                        return Err(LimitError::SlashdashTooDeep {
                            span: Span::new(i, 1),
                            max: limits.max_slashdash_depth,
                        });
                    }
                }
                if stack.len() > limits.max_depth {
                    return Err(LimitError::TooDeep {
                        span: Span::new(i, 1),
                        max: limits.max_depth,
                    });
                }
            }
            b'}' if stack.pop() == Some(true) => {
                slashdashed_open -= 1;
            }
            c if c.is_ascii_whitespace() || c == b'\\' => {
                // Whitespace and line continuations keep a pending slashdash alive.
                i += 1;
                continue;
            }
            c => in_word = is_word_byte(c),
        }
        pending_slashdash = false;
        i += 1;
    }
    Ok(())
}

/// A byte that can continue a bare word: anything but whitespace and KDL's punctuation. A `#`
/// inside a word does not start a keyword, and multi-byte characters count once per word.
fn is_word_byte(c: u8) -> bool {
    !c.is_ascii_whitespace()
        && !matches!(
            c,
            b'(' | b')' | b'{' | b'}' | b'[' | b']' | b'"' | b'=' | b';' | b'\\' | b'#'
        )
}

/// The children blocks around a `}` at `at`: the block open there (the innermost), and the last
/// block closed before it. Offsets are those of the `{` and the `}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Braces {
    pub open: Option<usize>,
    pub last_closed: Option<(usize, usize)>,
}

/// Scans `text` up to `at` (strings and comments skipped, as [`check_limits`] does) and says which
/// blocks are open and which closed last; None when `at` is not a `}` outside strings and
/// comments.
pub fn braces_before(text: &str, at: usize) -> Option<Braces> {
    let b = text.as_bytes();
    if b.get(at) != Some(&b'}') {
        return None;
    }
    let mut stack: Vec<usize> = Vec::new();
    let mut last_closed = None;
    let mut i = 0;
    while i < at {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                // A comment too deep to skip: `at` is not a brace the parser saw.
                i = skip_block_comment(b, i, usize::MAX).ok()?;
                continue;
            }
            b'"' => {
                i = skip_string(b, i, 0);
                continue;
            }
            b'#' => {
                let mut hashes = 0;
                while b.get(i + hashes) == Some(&b'#') {
                    hashes += 1;
                }
                i = if b.get(i + hashes) == Some(&b'"') {
                    skip_string(b, i + hashes, hashes)
                } else {
                    i + hashes
                };
                continue;
            }
            b'{' => stack.push(i),
            b'}' => {
                if let Some(open) = stack.pop() {
                    last_closed = Some((open, i));
                }
            }
            _ => {}
        }
        i += 1;
    }
    // `at` fell inside a string or a comment.
    (i == at).then(|| Braces {
        open: stack.last().copied(),
        last_closed,
    })
}

fn check_string(start: usize, end: usize, limits: &Limits) -> Result<(), LimitError> {
    let bytes = end - start;
    if bytes > limits.max_string_bytes {
        return Err(LimitError::StringTooLong {
            span: Span::new(start, bytes.min(1)),
            bytes,
            max: limits.max_string_bytes,
        });
    }
    Ok(())
}

/// Skips a string starting at the quote at `i` (`hashes` > 0 for a raw string), returning the
/// offset just past its end (or the end of the text when it is unterminated: the parser then
/// reports it).
fn skip_string(b: &[u8], i: usize, hashes: usize) -> usize {
    // A multi-line string opens with `"""` and a newline; `""""` is empty strings in a row.
    let multi = b[i..].starts_with(b"\"\"\"") && matches!(b.get(i + 3), Some(b'\n' | b'\r'));
    let quotes = if multi { 3 } else { 1 };
    let mut j = i + quotes;
    while j < b.len() {
        if hashes == 0 && b[j] == b'\\' {
            j += 2;
            continue;
        }
        if b[j..].starts_with(&b"\"\"\""[..quotes])
            && b.get(j + quotes..j + quotes + hashes)
                .is_some_and(|h| h.iter().all(|&c| c == b'#'))
        {
            return j + quotes + hashes;
        }
        j += 1;
    }
    b.len()
}

/// Skips a block comment starting at the `/*` at `i`, returning the offset just past its end (or
/// the end of the text when it is unterminated: the parser then reports it), or the offset of
/// the `/*` nested deeper than `max_depth`.
fn skip_block_comment(b: &[u8], i: usize, max_depth: usize) -> Result<usize, usize> {
    let mut depth = 0usize;
    let mut j = i;
    while j + 1 < b.len() {
        if b[j] == b'/' && b[j + 1] == b'*' {
            depth += 1;
            if depth > max_depth {
                return Err(j);
            }
            j += 2;
        } else if b[j] == b'*' && b[j + 1] == b'/' {
            depth -= 1;
            j += 2;
            if depth == 0 {
                return Ok(j);
            }
        } else {
            j += 1;
        }
    }
    Ok(b.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits::default()
    }

    #[test]
    fn braces_before_a_closing_brace() {
        let text = "a {\n  b \"}\" {\n  }\n}\n}\n";
        let last = text.rfind('}').unwrap();
        let braces = braces_before(text, last).unwrap();
        assert_eq!(braces.open, None);
        assert_eq!(braces.last_closed, Some((2, last - 2)));
        let inner = text.find("  }").unwrap() + 2;
        let braces = braces_before(text, inner).unwrap();
        assert_eq!(braces.open, Some(text.find("\" {").unwrap() + 2));
        assert_eq!(braces_before(text, text.find("\"}").unwrap() + 1), None);
    }

    #[test]
    fn ordinary_files_pass() {
        let text = "pipeline \"p\"\nstage \"a\" uses=\"run\" {\n  command \"x{\" #\"}}\"#\n}\n";
        assert_eq!(check_limits(text, &limits()), Ok(()));
    }

    #[test]
    fn deep_nesting_is_refused() {
        let text = format!("{}{}", "a {".repeat(100_000), "}".repeat(100_000));
        assert!(matches!(
            check_limits(&text, &limits()),
            Err(LimitError::TooDeep { .. })
        ));
    }

    #[test]
    fn nested_slashdash_children_are_refused() {
        let text = format!("{}{}", "a /-{ ".repeat(20), "}".repeat(20));
        assert!(matches!(
            check_limits(&text, &limits()),
            Err(LimitError::SlashdashTooDeep { .. })
        ));
    }

    #[test]
    fn braces_in_strings_and_comments_do_not_count() {
        let inner = "{".repeat(100);
        let text = format!(
            "a \"{inner}\" /* {inner} /* nested */ */ // {inner}\nb #\"{inner}\"# \"\"\"\n{inner}\n\"\"\"\n"
        );
        assert_eq!(check_limits(&text, &limits()), Ok(()));
    }

    #[test]
    fn deeply_nested_comments_are_refused() {
        let open = format!("pipeline \"x\"\n{}", "/*".repeat(3_800));
        let Err(LimitError::CommentTooDeep { span, max }) = check_limits(&open, &limits()) else {
            panic!("open comments pass");
        };
        assert_eq!((span, max), (Span::new(13 + 2 * 32, 2), 32));
        let closed = format!("{}{}", "/*".repeat(100_000), "*/".repeat(100_000));
        assert!(matches!(
            check_limits(&closed, &limits()),
            Err(LimitError::CommentTooDeep { .. })
        ));
        let fine = format!("a {}{} b", "/*".repeat(32), "*/".repeat(32));
        assert_eq!(check_limits(&fine, &limits()), Ok(()));
    }

    #[test]
    fn slashdashes_in_a_row_are_refused() {
        let text = format!("pipeline \"x\"\n{}a\n", "/- ".repeat(100_000));
        assert!(matches!(
            check_limits(&text, &limits()),
            Err(LimitError::SlashdashRunTooLong { .. })
        ));
        assert_eq!(check_limits("/- a\n/- b\n/- /- c\n", &limits()), Ok(()));
    }

    #[test]
    fn tokens_are_counted_outside_comments() {
        let small = Limits {
            max_tokens: 7,
            ..limits()
        };
        // stage, "a", uses, "run", {, #true, } and nothing in comments or inside words.
        let seven = "stage \"a\" uses=\"run\" { // x y z\n /* p q */ #true }";
        assert_eq!(check_limits(seven, &small), Ok(()));
        let eight = format!("{seven} (t)");
        let Err(LimitError::TooManyTokens { span, max }) = check_limits(&eight, &small) else {
            panic!("eight tokens pass");
        };
        assert_eq!((span.offset, max), (seven.len() + 1, 7));
        for hostile in ["}\n", "\"\"", "(t)", "bogus 1\n", " 1"] {
            let text = hostile.repeat(100_000);
            assert!(
                matches!(
                    check_limits(&text, &limits()),
                    Err(LimitError::TooManyTokens { .. })
                ),
                "{hostile:?}"
            );
        }
    }

    #[test]
    fn long_strings_are_refused() {
        let text = format!("a \"{}\"", "x".repeat(300_000));
        assert!(matches!(
            check_limits(&text, &limits()),
            Err(LimitError::StringTooLong { .. })
        ));
    }
}
