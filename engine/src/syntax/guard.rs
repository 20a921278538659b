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

use super::lexical::{
    RESERVED_WORDS, is_allowed_ascii, is_disallowed, is_identifier_char, is_unicode_space,
    line_end, line_of, newline_at,
};
use crate::span::Span;

/// The bounds a file must stay within. The defaults are far above any real pipeline.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Largest file accepted, in bytes.
    pub max_bytes: usize,
    /// Deepest nesting of children blocks.
    pub max_depth: usize,
    /// Deepest nesting of commented-out children blocks (`a /-{`, or `/-a {`: a slash-dashed
    /// node's), each of which doubles parse time.
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
    /// A code point KDL v2 forbids anywhere (controls, direction controls, a byte order mark
    /// past the start), on its 1-based line.
    Disallowed {
        span: Span,
        code_point: char,
        line: usize,
    },
    /// A bare word KDL v2 reserves (`-inf`, `nan`, …) where a string or a value is read.
    ReservedWord {
        span: Span,
        word: &'static str,
    },
    /// A slashdash after a children block that comments out something else than another
    /// children block (`a { } /-x`).
    SlashdashAfterChildren {
        span: Span,
    },
    /// A string or a block comment the parser would not read whole (never closed, a newline in
    /// a single-line string, an unknown escape, …): it resumes after such an error inside it,
    /// reading what the pre-scan skipped as code.
    Malformed {
        span: Span,
        what: Malformed,
    },
}

/// What is wrong in a string or a comment, for [`LimitError::Malformed`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Malformed {
    /// `"…` or `#"…` to the end of the file.
    String,
    /// A newline before the closing quote of a single-line string.
    StringLine,
    /// `"""` not followed by a newline.
    MultiLineOpening,
    /// `/*` to the end of the file.
    Comment,
    /// A `\` that starts no escape KDL knows.
    Escape,
    /// A line of a multi-line string that does not start with the closing line's whitespace,
    /// or a closing `"""` after something else than whitespace.
    Indent,
}

/// What the scan learnt besides the limits.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scan {
    /// Offsets of slashdashes written straight after a value (`"p"/-1`): KDL v2 accepts them,
    /// the kdl crate wants a space before each.
    pub tight_slashdashes: Vec<usize>,
    /// Tokens counted (what [`Limits::max_tokens`] bounds): no parser can read more nodes and
    /// entries than this.
    pub tokens: usize,
    /// Deepest nesting of children blocks: no parser can read a deeper tree.
    pub depth: usize,
    /// Where every string starts and ends (quotes and `#`s included).
    pub strings: Vec<(usize, usize)>,
    /// Where every comment starts and ends: a block comment from its `/*` to just past its
    /// `*/`, a line comment from its `//` to the newline that ends it (not included).
    pub comments: Vec<(usize, usize)>,
}

/// Scans `text` once and reports the first limit it breaks.
pub fn check_limits(text: &str, limits: &Limits) -> Result<Scan, LimitError> {
    if text.len() > limits.max_bytes {
        return Err(LimitError::TooLarge {
            bytes: text.len(),
            max: limits.max_bytes,
        });
    }
    check_code_points(text)?;
    let b = text.as_bytes();
    let mut scan = Scan::default();
    // A byte order mark opens the document and is nothing else.
    let mut i = if text.starts_with('\u{feff}') { 3 } else { 0 };
    // One entry per open children block: whether it was slash-dashed.
    let mut stack: Vec<bool> = Vec::new();
    let mut slashdashed_open = 0usize;
    let mut pending_slashdash = false;
    let mut slashdash_run = 0usize;
    let mut tokens = 0usize;
    // Whether the character before `i` was part of a bare word (a name, number or keyword).
    let mut in_word = false;
    // The start of the bare word `i` is in, to check it whole once it ends.
    let mut word_start = 0usize;
    // Whether that word follows a `#` (a keyword, `#-inf`), which is no bare word.
    let mut keyword = false;
    // Where the last value (word, string, keyword) or children block ended.
    let mut value_end = usize::MAX;
    // A children block just closed, on this node: only `/-{` may follow it.
    let mut after_children = false;
    // Whether the next token starts a node, and whether the node being read is slash-dashed:
    // the parser's time doubles with every commented-out block it is inside, whether the block
    // was commented out itself (`a /-{`) or with its node (`/-a {`).
    let mut node_start = true;
    let mut node_slashdashed = false;
    // A line continuation (`\`) is open: the next newline does not end the node.
    let mut continued = false;
    // The `/-` after a children block that must comment out a block.
    let mut needs_block: Option<usize> = None;
    while i < b.len() {
        let word_before = std::mem::take(&mut in_word);
        if word_before {
            value_end = i;
        }
        let (c, len) = char_at(text, i);
        if word_before && !keyword && !is_identifier_char(c) {
            check_word(&text[word_start..i], word_start)?;
        }
        let newline = newline_at(b, i);
        if newline > 0 || is_unicode_space(c) {
            // Whitespace and newlines keep a pending slashdash alive; a newline ends the node.
            if newline > 0 {
                after_children = false;
                node_start |= !std::mem::take(&mut continued);
            }
            i += newline.max(len);
            continue;
        }
        // Every token but the rest of a bare word counts, where it starts.
        let starts_token = match c {
            '"' | '{' | '}' | '(' | '#' => true,
            '/' => !matches!(b.get(i + 1), Some(b'/' | b'*' | b'-')) && !word_before,
            c => !word_before && is_identifier_char(c),
        };
        if starts_token {
            tokens += 1;
            if tokens > limits.max_tokens {
                return Err(LimitError::TooManyTokens {
                    span: Span::new(i, 1),
                    max: limits.max_tokens,
                });
            }
            if let Some(at) = needs_block.take()
                && c != '{'
            {
                return Err(LimitError::SlashdashAfterChildren {
                    span: Span::new(at, 2),
                });
            }
            after_children = false;
            continued = false;
            if std::mem::take(&mut node_start) {
                node_slashdashed = pending_slashdash;
            }
        }
        match c {
            '/' if b.get(i + 1) == Some(&b'/') => {
                after_children = false;
                let start = i;
                i = line_end(b, i);
                scan.comments.push((start, i));
                continue;
            }
            '/' if b.get(i + 1) == Some(&b'*') => {
                let start = i;
                i = skip_block_comment(b, i, limits.max_comment_depth)?;
                scan.comments.push((start, i));
                continue;
            }
            '/' if b.get(i + 1) == Some(&b'-') => {
                if value_end == i {
                    scan.tight_slashdashes.push(i);
                }
                if std::mem::take(&mut after_children) {
                    needs_block = Some(i);
                }
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
            '"' => {
                let start = i;
                i = skip_string(b, i, 0)?;
                check_string(start, i, limits)?;
                scan.strings.push((start, i));
                pending_slashdash = false;
                value_end = i;
                continue;
            }
            '#' => {
                let mut hashes = 0;
                while b.get(i + hashes) == Some(&b'#') {
                    hashes += 1;
                }
                if b.get(i + hashes) == Some(&b'"') {
                    let start = i;
                    i = skip_string(b, i + hashes, hashes)?;
                    check_string(start, i, limits)?;
                    scan.strings.push((start, i));
                    value_end = i;
                } else {
                    i += hashes;
                    // `#true`, `#inf`: the keyword after the `#` is the same token.
                    in_word = true;
                    word_start = i;
                    keyword = true;
                }
                pending_slashdash = false;
                continue;
            }
            '{' => {
                let slashdashed = pending_slashdash || node_slashdashed;
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
                scan.depth = scan.depth.max(stack.len());
                // The block's first node is still to come.
                node_start = true;
                if stack.len() > limits.max_depth {
                    return Err(LimitError::TooDeep {
                        span: Span::new(i, 1),
                        max: limits.max_depth,
                    });
                }
            }
            '}' => {
                // Back on the node that owns the block, slash-dashed if the block counted so.
                node_slashdashed = stack.pop() == Some(true);
                if node_slashdashed {
                    slashdashed_open -= 1;
                }
                node_start = false;
                after_children = true;
                value_end = i + 1;
                pending_slashdash = false;
                i += 1;
                continue;
            }
            // A line continuation keeps a pending slashdash alive.
            '\\' => {
                continued = true;
                i += 1;
                continue;
            }
            ';' => {
                after_children = false;
                node_start = true;
            }
            c if is_identifier_char(c) => {
                if !word_before {
                    word_start = i;
                    keyword = false;
                }
                in_word = true;
                // The rest of an ASCII word changes nothing until the word ends.
                i += len;
                while b
                    .get(i)
                    .is_some_and(|&x| x.is_ascii() && is_identifier_char(char::from(x)))
                {
                    i += 1;
                }
                pending_slashdash = false;
                continue;
            }
            _ => {}
        }
        pending_slashdash = false;
        i += len;
    }
    if in_word && !keyword {
        check_word(&text[word_start..], word_start)?;
    }
    if let Some(at) = needs_block {
        return Err(LimitError::SlashdashAfterChildren {
            span: Span::new(at, 2),
        });
    }
    scan.tokens = tokens;
    Ok(scan)
}

/// The first code point KDL v2 forbids, wherever it is (a comment is no hiding place: a
/// direction control there reorders the code around it on screen).
fn check_code_points(text: &str) -> Result<(), LimitError> {
    // ASCII, most of a file, is looked at byte by byte; only the rest is decoded.
    let b = text.as_bytes();
    let mut i = 0;
    let mut found = None;
    while i < b.len() {
        // Sixteen at a time, without an early exit, which the compiler turns into vector code.
        if let Some(chunk) = b.get(i..i + 16)
            && chunk.iter().fold(true, |all, x| all & is_allowed_ascii(*x))
        {
            i += 16;
            continue;
        }
        if is_allowed_ascii(b[i]) {
            i += 1;
            continue;
        }
        let (c, len) = char_at(text, i);
        if is_disallowed(c) && !(i == 0 && c == '\u{feff}') {
            found = Some((i, c));
            break;
        }
        i += len;
    }
    match found {
        Some((i, c)) => Err(LimitError::Disallowed {
            span: Span::new(i, c.len_utf8()),
            code_point: c,
            line: line_of(text, i),
        }),
        None => Ok(()),
    }
}

/// A bare word KDL v2 reserves, which the parser would take for a string.
fn check_word(word: &str, at: usize) -> Result<(), LimitError> {
    match RESERVED_WORDS.iter().find(|&&w| w == word) {
        // kdl refuses the others itself, with its own hint about `#`.
        Some(&w) if matches!(w, "-inf") => Err(LimitError::ReservedWord {
            span: Span::new(at, word.len()),
            word: w,
        }),
        _ => Ok(()),
    }
}

/// The character at byte `i` and its length (a NUL past the end, which the caller never asks).
fn char_at(text: &str, i: usize) -> (char, usize) {
    if let Some(&b) = text.as_bytes().get(i)
        && b.is_ascii()
    {
        return (char::from(b), 1);
    }
    let c = text
        .get(i..)
        .and_then(|rest| rest.chars().next())
        .unwrap_or('\0');
    (c, c.len_utf8())
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
                while i < b.len() && newline_at(b, i) == 0 {
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
                i = skip_string(b, i, 0).ok()?;
                continue;
            }
            b'#' => {
                let mut hashes = 0;
                while b.get(i + hashes) == Some(&b'#') {
                    hashes += 1;
                }
                i = if b.get(i + hashes) == Some(&b'"') {
                    skip_string(b, i + hashes, hashes).ok()?
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
/// offset just past its end. A string the parser would not read whole is refused (never closed,
/// a newline in a single-line one, `"""` without its newline, an unknown escape, a line of a
/// multi-line string outside its indentation): the parser resumes after such an error inside
/// the string and would read what this scan skipped as code.
fn skip_string(b: &[u8], i: usize, hashes: usize) -> Result<usize, LimitError> {
    let start = i - hashes;
    let bad = |at: usize, len: usize, what| LimitError::Malformed {
        span: Span::new(at, len),
        what,
    };
    // A multi-line string opens with `"""` and a newline; a raw one may also be `#"""#`-like.
    let triple = b[i..].starts_with(b"\"\"\"");
    let multi = triple && newline_at(b, i + 3) > 0;
    // Raw strings too: `#"""one line"""#` is no single-line raw string of `""one line""`.
    if triple && !multi {
        return Err(bad(start, 1, Malformed::MultiLineOpening));
    }
    let quotes = if multi { 3 } else { 1 };
    // A multi-line body starts after the opening newline, which is no line of it.
    let mut j = i + quotes + if multi { newline_at(b, i + quotes) } else { 0 };
    // Where each line of a multi-line string starts (an escaped newline starts none).
    let mut lines = if multi { vec![j] } else { Vec::new() };
    while j < b.len() {
        // Printable ASCII but a quote or a backslash: nothing to look at.
        if (b' '..=b'~').contains(&b[j]) && !matches!(b[j], b'"' | b'\\') {
            j += 1;
            continue;
        }
        if hashes == 0 && b[j] == b'\\' {
            j = skip_escape(b, j).ok_or_else(|| bad(j, 1, Malformed::Escape))?;
            continue;
        }
        let newline = newline_at(b, j);
        if newline > 0 {
            if !multi {
                return Err(bad(j, 1, Malformed::StringLine));
            }
            j += newline;
            lines.push(j);
            continue;
        }
        if b[j..].starts_with(&b"\"\"\""[..quotes])
            && b.get(j + quotes..j + quotes + hashes)
                .is_some_and(|h| h.iter().all(|&c| c == b'#'))
        {
            if multi {
                check_indent(b, &lines, j, hashes == 0)?;
            }
            return Ok(j + quotes + hashes);
        }
        j += 1;
    }
    Err(bad(start, 1, Malformed::String))
}

/// Past the escape at the `\` at `j`, or None for one KDL does not know: `\` and one of
/// `"\bfnrts`, `u{` one to six hex digits of a scalar value `}`, or a run of whitespace and
/// newlines.
fn skip_escape(b: &[u8], j: usize) -> Option<usize> {
    let space = |k: usize| newline_at(b, k).max(unicode_space_at(b, k));
    match b.get(j + 1)? {
        b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't' | b's' => Some(j + 2),
        b'u' if b.get(j + 2) == Some(&b'{') => {
            let digits = b[j + 3..]
                .iter()
                .take_while(|c| c.is_ascii_hexdigit())
                .count();
            let hex = std::str::from_utf8(&b[j + 3..j + 3 + digits]).ok()?;
            let scalar = u32::from_str_radix(hex, 16).ok().and_then(char::from_u32);
            ((1..=6).contains(&digits) && scalar.is_some() && b.get(j + 3 + digits) == Some(&b'}'))
                .then_some(j + 4 + digits)
        }
        _ if space(j + 1) > 0 => {
            let mut k = j + 1;
            while space(k) > 0 {
                k += space(k);
            }
            Some(k)
        }
        _ => None,
    }
}

/// A multi-line string's closing `"""` at `close` stands on its own line after whitespace only,
/// and every line before it (`lines` are their starts, the closing one last) is blank or starts
/// with that same whitespace. In a quoted string (`escapes`), escaped whitespace counts for
/// nothing, as the parser reads it.
fn check_indent(b: &[u8], lines: &[usize], close: usize, escapes: bool) -> Result<(), LimitError> {
    let bad = |at: usize| LimitError::Malformed {
        span: Span::new(at, 1),
        what: Malformed::Indent,
    };
    let Some((&last, body)) = lines.split_last() else {
        return Err(bad(close));
    };
    let Some(prefix) = blank(b, last, close, escapes) else {
        return Err(bad(close));
    };
    for (n, &line) in body.iter().enumerate() {
        let end = lines.get(n + 1).copied().unwrap_or(last);
        let end = end - trailing_newline(b, line, end);
        if blank(b, line, end, escapes).is_none() && !b[line..end].starts_with(&prefix) {
            return Err(bad(line));
        }
    }
    Ok(())
}

/// The whitespace of `b[from..to]` when it holds nothing else (escaped whitespace, in a quoted
/// string, left out); None when it holds anything else.
fn blank(b: &[u8], from: usize, to: usize, escapes: bool) -> Option<Vec<u8>> {
    let space = |k: usize| newline_at(b, k).max(unicode_space_at(b, k));
    let mut out = Vec::new();
    let mut k = from;
    while k < to {
        let n = unicode_space_at(b, k);
        if n > 0 {
            out.extend_from_slice(&b[k..k + n]);
            k += n;
        } else if escapes && b[k] == b'\\' && space(k + 1) > 0 {
            k += 1;
            while k < to && space(k) > 0 {
                k += space(k);
            }
        } else {
            return None;
        }
    }
    Some(out)
}

/// The length of the newline that ends `b[from..to]`, or 0. The longest is looked for first:
/// the `\n` of a `\r\n` ends the line too, but the `\r` before it is no part of the line.
fn trailing_newline(b: &[u8], from: usize, to: usize) -> usize {
    (to.saturating_sub(3).max(from)..to)
        .find(|&k| newline_at(b, k) == to - k)
        .map_or(0, |k| to - k)
}

/// The length of the unicode space at `i`, or 0.
fn unicode_space_at(b: &[u8], i: usize) -> usize {
    let Some(&first) = b.get(i) else { return 0 };
    let len = match first {
        0..0x80 => 1,
        0xc0..0xe0 => 2,
        0xe0..0xf0 => 3,
        _ => 4,
    };
    b.get(i..i + len)
        .and_then(|s| std::str::from_utf8(s).ok())
        .and_then(|s| s.chars().next())
        .filter(|&c| is_unicode_space(c))
        .map_or(0, char::len_utf8)
}

/// Skips a block comment starting at the `/*` at `i`, returning the offset just past its end;
/// refused when it nests deeper than `max_depth` (pointing at that `/*`) or is never closed.
fn skip_block_comment(b: &[u8], i: usize, max_depth: usize) -> Result<usize, LimitError> {
    let mut depth = 0usize;
    let mut j = i;
    while j + 1 < b.len() {
        if b[j] == b'/' && b[j + 1] == b'*' {
            depth += 1;
            if depth > max_depth {
                return Err(LimitError::CommentTooDeep {
                    span: Span::new(j, 2),
                    max: max_depth,
                });
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
    Err(LimitError::Malformed {
        span: Span::new(i, 2),
        what: Malformed::Comment,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::syntax::lexical::NEWLINES;

    fn limits() -> Limits {
        Limits::default()
    }

    /// Code after `//` and any newline is code: the attacks of a comment ended by a carriage
    /// return (a stack overflow, an exponential parse, a million lines past the token bound),
    /// with every newline of KDL.
    #[test]
    fn every_newline_ends_a_comment() {
        for nl in NEWLINES {
            let nested = format!(
                "pipeline \"p\"\n//{nl}{}{}",
                "a {".repeat(1_400),
                "}".repeat(1_400)
            );
            assert!(
                matches!(
                    check_limits(&nested, &limits()),
                    Err(LimitError::TooDeep { .. })
                ),
                "{nl:?}: nesting"
            );
            let slashdashed = format!("//{nl}{}{}", "a /-{ ".repeat(20), "}".repeat(20));
            assert!(
                matches!(
                    check_limits(&slashdashed, &limits()),
                    Err(LimitError::SlashdashTooDeep { .. })
                ),
                "{nl:?}: slashdash"
            );
            let lines = format!("//{nl}{}", format!("a 1{nl}").repeat(1_000_000));
            assert!(
                matches!(
                    check_limits(&lines, &limits()),
                    Err(LimitError::TooManyTokens { .. })
                ),
                "{nl:?}: tokens"
            );
            // And a block of them keeps slashdash pending, as whitespace does.
            let pending = format!("{}{}", format!("a /-{nl}{{ ").repeat(20), "}".repeat(20));
            assert!(
                matches!(
                    check_limits(&pending, &limits()),
                    Err(LimitError::SlashdashTooDeep { .. })
                ),
                "{nl:?}: pending slashdash"
            );
        }
    }

    /// Every space of KDL separates tokens and keeps a slashdash pending; every other
    /// character continues a word.
    #[test]
    fn every_space_separates_tokens() {
        let spaces = ('\0'..='\u{3000}').filter(|&c| super::is_unicode_space(c));
        for sp in spaces {
            let text = format!("a{}", format!("{sp}x").repeat(50_000));
            assert!(
                matches!(
                    check_limits(&text, &limits()),
                    Err(LimitError::TooManyTokens { .. })
                ),
                "{sp:?}"
            );
            let slashdashed = format!("{}{}", format!("a /-{sp}{{ ").repeat(20), "}".repeat(20));
            assert!(
                matches!(
                    check_limits(&slashdashed, &limits()),
                    Err(LimitError::SlashdashTooDeep { .. })
                ),
                "{sp:?}"
            );
        }
        let word = format!("a {}", "x\u{e9}".repeat(50_000));
        assert!(check_limits(&word, &limits()).is_ok());
    }

    #[test]
    fn forbidden_code_points_are_refused_with_their_line() {
        for c in [
            '\u{202e}', '\u{2066}', '\u{200e}', '\0', '\u{8}', '\u{7f}', '\u{1b}', '\u{feff}',
        ] {
            for text in [
                format!("pipeline \"p\"\r\n// a {c} comment\n"),
                format!("pipeline \"p\"\r\n/* {c} */\n"),
                format!("pipeline \"p\"\r\nstage \"a{c}\"\n"),
                format!("pipeline \"p\"\r\nstage a{c}\n"),
            ] {
                let at = text.find(c).unwrap_or_default();
                assert_eq!(
                    check_limits(&text, &limits()),
                    Err(LimitError::Disallowed {
                        span: Span::new(at, c.len_utf8()),
                        code_point: c,
                        line: 2,
                    }),
                    "{text:?}"
                );
            }
        }
        // A byte order mark may open the file, and an escape may name any code point.
        assert!(check_limits("\u{feff}pipeline \"p\" \"\\u{202e}\"", &limits()).is_ok());
    }

    #[test]
    fn reserved_words_and_slashdash_after_children() {
        let refused = |text: &str| check_limits(text, &limits()).err();
        assert_eq!(
            refused("a -inf"),
            Some(LimitError::ReservedWord {
                span: Span::new(2, 4),
                word: "-inf"
            })
        );
        assert!(refused("a k=-inf").is_some());
        for fine in [
            "a #-inf",
            "a \"-inf\"",
            "a -infinity",
            "a -in",
            "a {}\n/-x",
            "a { } /-{ }",
        ] {
            assert_eq!(refused(fine), None, "{fine:?}");
        }
        for after in [
            "a { } /-x",
            "a {}/-k=1",
            "a { } /-\n x",
            "a { b { } /-c }",
            "a {} /-",
        ] {
            assert!(
                matches!(
                    refused(after),
                    Some(LimitError::SlashdashAfterChildren { .. })
                ),
                "{after:?}"
            );
        }
    }

    #[test]
    fn slashdashes_straight_after_a_value_are_found() {
        let text = "node \"s\"/-1 x/-y {}/-{} #true/-1 \"/-\" a /-b";
        let at: Vec<usize> = ["\"/-", "x/-", "}/-", "e/-"]
            .iter()
            .map(|s| text.find(s).unwrap_or_default() + s.len() - 2)
            .collect();
        let scan = check_limits(text, &limits());
        assert_eq!(scan.map(|s| s.tight_slashdashes), Ok(at));
    }

    /// A string or comment the parser would end elsewhere than the pre-scan is refused: the
    /// parser resumes after such an error and would read what the pre-scan skipped as code.
    #[test]
    fn strings_and_comments_left_open_are_refused() {
        let braces = "a { ".repeat(1_400);
        for (text, what) in [
            (format!("a \"x {braces}"), Malformed::String),
            (format!("a #\"x {braces}"), Malformed::String),
            (format!("a \"x\n{braces}\""), Malformed::StringLine),
            (format!("a \"x\u{2028}{braces}\""), Malformed::StringLine),
            (format!("a #\"x\r{braces}\"#"), Malformed::StringLine),
            (
                format!("a \"\"\"x {braces}\"\"\""),
                Malformed::MultiLineOpening,
            ),
            (format!("a /* {braces}"), Malformed::Comment),
            (
                format!("a #\"\"\"x {braces}\"#"),
                Malformed::MultiLineOpening,
            ),
            (format!("a \"\\q {braces}\""), Malformed::Escape),
            (format!("a \"\\u{{d800}} {braces}\""), Malformed::Escape),
            (
                format!("a \"\"\"\n  x\n y {braces}\n  \"\"\""),
                Malformed::Indent,
            ),
            (
                format!("a \"\"\"\n  x {braces}\n  y\"\"\""),
                Malformed::Indent,
            ),
        ] {
            let got = check_limits(&text, &limits());
            assert!(
                matches!(got, Err(LimitError::Malformed { what: w, .. }) if w == what),
                "{text:.20?}: {got:?}"
            );
        }
        // Escaped newlines and multi-line strings are whole strings.
        for fine in [
            "a \"x\\\n   y\"",
            "a \"x\\\u{2028}\u{3000}y\"",
            "a \"\"\"\u{85}  x\u{85}  \"\"\"",
            "a #\"\"\"\n\"\"\"#",
        ] {
            assert!(check_limits(fine, &limits()).is_ok(), "{fine:?}");
        }
    }

    /// A blank line of a multi-line string is blank whatever newline ends it: the `\r` of a
    /// `\r\n` is no part of the line (found by `prescan_parser`: a Windows file with an empty
    /// line in an indented multi-line string was refused where kdl reads it).
    #[test]
    fn blank_lines_of_a_multi_line_string_end_with_any_newline() {
        for nl in NEWLINES {
            let text = format!("a \"\"\"{nl}  x{nl}{nl}  y{nl}  \"\"\"{nl}");
            assert!(check_limits(&text, &limits()).is_ok(), "{text:?}");
            assert!(kdl::KdlDocument::parse_v2(&text).is_ok(), "{text:?}");
        }
        assert_eq!(trailing_newline(b"x\r\n", 0, 3), 2);
        assert_eq!(trailing_newline(b"\r\n", 0, 2), 2);
        assert_eq!(trailing_newline(b"x\n", 0, 2), 1);
        assert_eq!(trailing_newline(b"x", 0, 1), 0);
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
        assert!(check_limits(text, &limits()).is_ok());
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

    /// A slash-dashed node's children block is commented out as `/-{` is, and each level of
    /// them doubled kdl's time (a 528-byte fuzzed file took 11 s): it counts the same.
    #[test]
    fn nested_slashdashed_nodes_are_refused() {
        for text in [
            format!("{}{}", "/-a {\n b\n".repeat(20), "}\n".repeat(20)),
            format!("{}{}", "/-a { b;".repeat(20), "}".repeat(20)),
            format!("{}{}", "/-(t)\"a\" 1 {\n b\n".repeat(20), "}\n".repeat(20)),
            format!("{}{}", "/-\na {\n b\n".repeat(20), "}\n".repeat(20)),
            format!(
                "{}{}",
                "/-a \\ // continued\n 1 {\n b\n".repeat(20),
                "}\n".repeat(20)
            ),
            format!("{}{}", "a /-{ b }\n/-c {\n".repeat(20), "}\n".repeat(20)),
            "/-a {\n b`\n".repeat(12),
        ] {
            assert!(
                matches!(
                    check_limits(&text, &limits()),
                    Err(LimitError::SlashdashTooDeep { max: 3, .. })
                ),
                "{text:.40?}"
            );
        }
        // Three levels pass, and a slash-dashed node's closed block leaves the next node plain.
        let three = format!("{}{}", "/-a {\n b\n".repeat(3), "}\n".repeat(3));
        assert!(check_limits(&three, &limits()).is_ok());
        let siblings = format!("{}{}", "/-a { }\nb {\n".repeat(20), "}\n".repeat(20));
        assert!(check_limits(&siblings, &limits()).is_ok());
        let argument = format!("{}{}", "a /-x {\n b\n".repeat(20), "}\n".repeat(20));
        assert!(check_limits(&argument, &limits()).is_ok());
    }

    #[test]
    fn braces_in_strings_and_comments_do_not_count() {
        let inner = "{".repeat(100);
        let text = format!(
            "a \"{inner}\" /* {inner} /* nested */ */ // {inner}\nb #\"{inner}\"# \"\"\"\n{inner}\n\"\"\"\n"
        );
        assert!(check_limits(&text, &limits()).is_ok());
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
        assert!(check_limits(&fine, &limits()).is_ok());
    }

    #[test]
    fn slashdashes_in_a_row_are_refused() {
        let text = format!("pipeline \"x\"\n{}a\n", "/- ".repeat(100_000));
        assert!(matches!(
            check_limits(&text, &limits()),
            Err(LimitError::SlashdashRunTooLong { .. })
        ));
        assert!(check_limits("/- a\n/- b\n/- /- c\n", &limits()).is_ok());
    }

    #[test]
    fn tokens_are_counted_outside_comments() {
        let small = Limits {
            max_tokens: 7,
            ..limits()
        };
        // stage, "a", uses, "run", {, #true, } and nothing in comments or inside words.
        let seven = "stage \"a\" uses=\"run\" { // x y z\n /* p q */ #true }";
        assert!(check_limits(seven, &small).is_ok());
        let eight = format!("{seven} (t)");
        let Err(LimitError::TooManyTokens { span, max }) = check_limits(&eight, &small) else {
            panic!("eight tokens pass");
        };
        assert_eq!((span.offset, max), (seven.len() + 1, 7));
        for hostile in ["}\n", "\"\" ", "(t)", "bogus 1\n", " 1"] {
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
