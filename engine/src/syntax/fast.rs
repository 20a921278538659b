//! A fast path for the KDL v2 that pipelines are written in.
//!
//! The kdl crate's parser spends most of its time building errors for alternatives that fail
//! (`docs/performance.md`, *Where the time goes*). This hand-written recursive-descent parser
//! accepts a strict subset of KDL v2 and builds, for it, the very document
//! `KdlDocument::parse_v2` builds: the same nodes, names, entries, values, children, formatting
//! (`repr`s, leading and trailing text, terminators) and spans. For anything outside the subset
//! it returns `None` and the caller parses with kdl, so a file this parser declines, and every
//! file with an error, gets kdl's tree or kdl's diagnostics.
//!
//! The subset (anything else declines):
//! - whitespace: ASCII space and tab; newlines `\n` and `\r\n`; `//` comments; no byte-order
//!   mark, no block comment, slash-dash, line continuation or other Unicode space or newline;
//! - names and keys: bare ASCII identifiers (not starting with a digit or `.`; a sign only
//!   before an identifier character other than a digit or `.`; never `-inf`), single-line
//!   quoted strings with the escapes `\" \\ \n \r \t \b \f \s \u{…}`, and single-line raw
//!   strings `#"…"#`;
//! - values: those strings, `#true`, `#false`, `#null`, decimal integers and decimal floats
//!   (`_` separators, `e` exponents); no type annotation, hex, octal, binary or `#inf`/`#nan`;
//! - a value or a name is followed by a space, a tab, a newline, `;`, `{`, `}`, `=`, `//` or
//!   the end (and then only by what makes a node: `key=value`, children, a terminator).
//!
//! The equivalence is tested against kdl on every `.kdl` file of the project, the many-files
//! corpus, and generated hostile documents (`engine/tests/fast_parse.rs`).

use super::lexical::{is_disallowed, is_newline, is_unicode_space, newline_at};
use kdl::{
    KdlDocument, KdlDocumentFormat, KdlEntry, KdlEntryFormat, KdlIdentifier, KdlNode,
    KdlNodeFormat, KdlValue,
};

/// Nesting deeper than this is left to kdl (and to the limits checked before it).
const MAX_DEPTH: usize = 64;

/// Parses `text` if it lies within the subset; `None` means "not handled here".
pub fn parse(text: &str) -> Option<KdlDocument> {
    let mut p = Parser {
        text,
        b: text.as_bytes(),
        pos: 0,
        depth: 0,
    };
    let doc = p.nodes()?;
    (p.pos == p.b.len()).then_some(doc)
}

struct Parser<'a> {
    text: &'a str,
    b: &'a [u8],
    pos: usize,
    depth: usize,
}

/// Not handled: the caller falls back to kdl.
struct Decline;

type R<T> = Result<T, Decline>;

fn decline<T>() -> R<T> {
    Err(Decline)
}

/// A string token: its value, and where its text ends.
struct Token {
    value: String,
    end: usize,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    fn at(&self, i: usize) -> Option<u8> {
        self.b.get(i).copied()
    }

    /// `nodes := line-space* (node (terminator node)*)? terminator? line-space*`, as kdl splits
    /// it: the leading text goes to the first node, the document's span covers first node to last.
    fn nodes(&mut self) -> Option<KdlDocument> {
        self.nodes_inner().ok()
    }

    fn nodes_inner(&mut self) -> R<KdlDocument> {
        let leading_start = self.pos;
        self.line_space()?;
        let start = self.pos;
        let mut leading = &self.text[leading_start..start];
        let mut doc = KdlDocument::new();
        let mut end = start;
        if self.node_may_start() {
            loop {
                let node_leading = if doc.nodes().is_empty() {
                    std::mem::take(&mut leading)
                } else {
                    let l = self.pos;
                    self.line_space()?;
                    &self.text[l..self.pos]
                };
                let node = self.base_node(node_leading)?;
                doc.nodes_mut().push(node);
                end = self.pos;
                // The separator, then the next node, or back to before the separator.
                if !self.terminator()? {
                    break;
                }
                let after_sep = self.pos;
                self.line_space()?;
                let more = self.node_may_start();
                self.pos = after_sep;
                if !more {
                    self.pos = end;
                    break;
                }
            }
        }
        // The last node's terminator belongs to no text of the document, only to the node.
        self.pos = end;
        self.terminator()?;
        let trailing_start = self.pos;
        self.line_space()?;
        doc.set_format(KdlDocumentFormat {
            leading: leading.to_string(),
            trailing: self.text[trailing_start..self.pos].to_string(),
        });
        doc.set_span(start..end);
        Ok(doc)
    }

    /// kdl starts a node anywhere but at `}` and at the end; `;` and the rest this parser does
    /// not know are then declined by `base_node`.
    fn node_may_start(&self) -> bool {
        !matches!(self.peek(), None | Some(b'}'))
    }

    /// `line-space*`: spaces, tabs, newlines and `//` comments.
    fn line_space(&mut self) -> R<()> {
        loop {
            match self.peek() {
                Some(b' ' | b'\t') => self.pos += 1,
                Some(b'\n') => self.pos += 1,
                Some(b'\r') if self.at(self.pos + 1) == Some(b'\n') => self.pos += 2,
                Some(b'/') if self.at(self.pos + 1) == Some(b'/') => self.comment()?,
                // Every other newline of KDL (`lexical.rs`) is left to kdl.
                Some(b'/' | b'\\') => return decline(),
                _ if newline_at(self.b, self.pos) > 0 => return decline(),
                Some(c) if c >= 0x80 => return decline(),
                _ => return Ok(()),
            }
        }
    }

    /// `//` to the end of the line, the newline included.
    fn comment(&mut self) -> R<()> {
        self.pos += 2;
        let rest = &self.text[self.pos..];
        let b = rest.as_bytes();
        let mut i = 0;
        while let Some(&byte) = b.get(i) {
            match byte {
                b'\n' => {
                    self.pos += i + 1;
                    return Ok(());
                }
                b'\r' if b.get(i + 1) == Some(&b'\n') => {
                    self.pos += i + 2;
                    return Ok(());
                }
                // Decoded only past ASCII, as in `quoted`: the other controls are all odd.
                b'\t' | b' '..=b'~' => i += 1,
                0..=0x1f | 0x7f => return decline(),
                0x80.. => {
                    let c = rest[i..].chars().next().ok_or(Decline)?;
                    if is_odd_char(c) {
                        return decline();
                    }
                    i += c.len_utf8();
                }
            }
        }
        self.pos = self.b.len();
        Ok(())
    }

    /// `node-terminator := ';' | newline | single-line-comment`: consumed if present.
    fn terminator(&mut self) -> R<bool> {
        match self.peek() {
            Some(b';' | b'\n') => self.pos += 1,
            Some(b'\r') if self.at(self.pos + 1) == Some(b'\n') => self.pos += 2,
            Some(b'/') if self.at(self.pos + 1) == Some(b'/') => self.comment()?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn spaces(&mut self) -> &'a str {
        let start = self.pos;
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.pos += 1;
        }
        &self.text[start..self.pos]
    }

    fn base_node(&mut self, leading: &str) -> R<KdlNode> {
        let start = self.pos;
        let name = self.identifier()?.ok_or(Decline)?;
        let mut node = KdlNode::new(name);
        loop {
            let before = self.pos;
            let entry_leading = self.spaces();
            if entry_leading.is_empty() {
                break;
            }
            match self.entry(entry_leading)? {
                Some(entry) => node.entries_mut().push(entry),
                None => {
                    self.pos = before;
                    break;
                }
            }
        }
        let before_ws = self.pos;
        let ws = self.spaces();
        let mut format = KdlNodeFormat {
            leading: leading.to_string(),
            ..Default::default()
        };
        if self.peek() == Some(b'{') {
            self.pos += 1;
            self.depth += 1;
            if self.depth > MAX_DEPTH {
                return decline();
            }
            let children = self.nodes_inner()?;
            self.depth -= 1;
            if self.peek() != Some(b'}') {
                return decline();
            }
            self.pos += 1;
            format.before_children = ws.to_string();
            node.set_children(children);
            format.terminator = self.peek_terminator()?.to_string();
            self.spaces();
        } else {
            self.pos = before_ws;
            format.before_terminator = self.spaces().to_string();
            format.terminator = self.peek_terminator()?.to_string();
        }
        // What may follow a node: its terminator, the `}` of its parent, the end.
        match self.peek() {
            None | Some(b'}' | b';' | b'\n') => {}
            Some(b'\r') if self.at(self.pos + 1) == Some(b'\n') => {}
            Some(b'/') if self.at(self.pos + 1) == Some(b'/') => {}
            _ => return decline(),
        }
        node.set_format(format);
        node.set_span(start..self.pos);
        Ok(node)
    }

    /// The text of the terminator at the current position, without consuming it.
    fn peek_terminator(&mut self) -> R<&'a str> {
        let start = self.pos;
        self.terminator()?;
        let text = &self.text[start..self.pos];
        self.pos = start;
        Ok(text)
    }

    /// One entry after its leading spaces: `Ok(None)` where kdl's entry parser backtracks (a
    /// terminator, a brace, the end).
    fn entry(&mut self, leading: &str) -> R<Option<KdlEntry>> {
        let start = self.pos;
        match self.peek() {
            None | Some(b'\n' | b';' | b'{' | b'}') => return Ok(None),
            Some(b'\r') if self.at(self.pos + 1) == Some(b'\n') => return Ok(None),
            Some(b'/') if self.at(self.pos + 1) == Some(b'/') => return Ok(None),
            _ => {}
        }
        let mut entry = if let Some(ident) = self.identifier()? {
            let after_ident = self.pos;
            let after_key = self.spaces();
            if self.peek() == Some(b'=') {
                self.pos += 1;
                let after_eq = self.spaces();
                let (value, repr) = self.value()?;
                let mut entry = KdlEntry::new(value);
                entry.set_name(Some(ident));
                entry.set_format(KdlEntryFormat {
                    value_repr: repr.to_string(),
                    leading: leading.to_string(),
                    after_key: after_key.to_string(),
                    after_eq: after_eq.to_string(),
                    ..Default::default()
                });
                entry
            } else {
                self.pos = after_ident;
                let repr = ident.repr().unwrap_or_default().to_string();
                let mut entry = KdlEntry::new(KdlValue::String(ident.value().to_string()));
                entry.set_format(KdlEntryFormat {
                    value_repr: repr,
                    leading: leading.to_string(),
                    ..Default::default()
                });
                entry
            }
        } else {
            let (value, repr) = self.value()?;
            let mut entry = KdlEntry::new(value);
            entry.set_format(KdlEntryFormat {
                value_repr: repr.to_string(),
                leading: leading.to_string(),
                ..Default::default()
            });
            entry
        };
        entry.set_span(start..self.pos);
        Ok(Some(entry))
    }

    /// `value := keyword | number | string`, with the text it was written as.
    fn value(&mut self) -> R<(KdlValue, &'a str)> {
        let start = self.pos;
        let value = match self.peek() {
            Some(b'#')
                if self.at(self.pos + 1) != Some(b'"') && self.at(self.pos + 1) != Some(b'#') =>
            {
                self.keyword()?
            }
            Some(b'0'..=b'9') => self.number()?,
            Some(b'+' | b'-') if matches!(self.at(self.pos + 1), Some(b'0'..=b'9')) => {
                self.number()?
            }
            _ => KdlValue::String(self.string()?.ok_or(Decline)?.value),
        };
        Ok((value, &self.text[start..self.pos]))
    }

    fn keyword(&mut self) -> R<KdlValue> {
        let rest = &self.b[self.pos + 1..];
        let (value, len) = if rest.starts_with(b"true") {
            (KdlValue::Bool(true), 4)
        } else if rest.starts_with(b"false") {
            (KdlValue::Bool(false), 5)
        } else if rest.starts_with(b"null") {
            (KdlValue::Null, 4)
        } else {
            return decline();
        };
        self.pos += 1 + len;
        // kdl checks nothing after a keyword; this parser asks for what ends any value.
        self.value_end()?;
        Ok(value)
    }

    /// `decimal := sign? integer ('.' integer)? (('e' | 'E') sign? integer)?`, where
    /// `integer := digit (digit | '_')*`; a float if it has a fraction or an exponent.
    fn number(&mut self) -> R<KdlValue> {
        let start = self.pos;
        if matches!(self.peek(), Some(b'+' | b'-')) {
            self.pos += 1;
        }
        self.digits()?;
        let mut float = false;
        if self.peek() == Some(b'.') {
            self.pos += 1;
            self.digits()?;
            float = true;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.pos += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            self.digits()?;
            float = true;
        }
        self.value_end()?;
        let text = self.text[start..self.pos].replace('_', "");
        if float {
            text.parse::<f64>()
                .map(KdlValue::Float)
                .map_err(|_| Decline)
        } else {
            text.parse::<i128>()
                .map(KdlValue::Integer)
                .map_err(|_| Decline)
        }
    }

    /// `digit (digit | '_')*`, at most 38 digits: every such group fits kdl's `i128`s.
    fn digits(&mut self) -> R<()> {
        if !matches!(self.peek(), Some(b'0'..=b'9')) {
            return decline();
        }
        let mut count = 0;
        while let Some(c) = self.peek() {
            match c {
                b'0'..=b'9' => count += 1,
                b'_' => {}
                _ => break,
            }
            self.pos += 1;
        }
        if count > 38 { decline() } else { Ok(()) }
    }

    /// After a value or a name: what kdl's value-terminator check accepts, less what this
    /// parser leaves to kdl.
    fn value_end(&self) -> R<()> {
        match self.peek() {
            None | Some(b' ' | b'\t' | b'\n' | b';' | b'}' | b'{' | b'=') => Ok(()),
            Some(b'\r') if self.at(self.pos + 1) == Some(b'\n') => Ok(()),
            Some(b'/') if self.at(self.pos + 1) == Some(b'/') => Ok(()),
            _ => decline(),
        }
    }

    /// A name or a key: any string, with its `repr` and span. `Ok(None)` where kdl's
    /// identifier parser backtracks (the text does not start a string: a number, `#true`).
    fn identifier(&mut self) -> R<Option<KdlIdentifier>> {
        let start = self.pos;
        let Some(token) = self.string()? else {
            return Ok(None);
        };
        let mut ident = KdlIdentifier::from(token.value);
        ident.set_repr(&self.text[start..token.end]);
        ident.set_span(start..token.end);
        Ok(Some(ident))
    }

    /// `string := identifier-string | raw-string | quoted-string`. `Ok(None)`: not a string
    /// (a number, a keyword); declines what kdl would reject or this parser does not know.
    fn string(&mut self) -> R<Option<Token>> {
        let token = match self.peek() {
            Some(b'"') => self.quoted()?,
            Some(b'#') => {
                let hashes = self.b[self.pos..]
                    .iter()
                    .take_while(|&&c| c == b'#')
                    .count();
                if self.at(self.pos + hashes) != Some(b'"') {
                    // `#true` and the other keywords; `##x` is an error kdl reports.
                    return if hashes == 1 { Ok(None) } else { decline() };
                }
                self.raw(hashes)?
            }
            Some(b'0'..=b'9') => return Ok(None),
            Some(b'+' | b'-') => match self.at(self.pos + 1) {
                Some(b'0'..=b'9') => return Ok(None),
                Some(c) if is_ident_byte(c) && c != b'.' => self.bare()?,
                _ => return decline(),
            },
            Some(c) if is_ident_byte(c) && c != b'.' => self.bare()?,
            _ => return decline(),
        };
        self.value_end()?;
        Ok(Some(token))
    }

    /// A bare identifier: ASCII identifier characters, not a bare keyword.
    fn bare(&mut self) -> R<Token> {
        let start = self.pos;
        while matches!(self.peek(), Some(c) if is_ident_byte(c)) {
            self.pos += 1;
        }
        let text = &self.text[start..self.pos];
        if matches!(text, "true" | "false" | "null" | "inf" | "-inf" | "nan") {
            return decline();
        }
        Ok(Token {
            value: text.to_string(),
            end: self.pos,
        })
    }

    /// `"…"` on one line.
    fn quoted(&mut self) -> R<Token> {
        self.pos += 1;
        if self.b[self.pos..].starts_with(b"\"\"") {
            // `"""`: a multi-line string.
            return decline();
        }
        let mut value = String::new();
        let mut run = self.pos;
        loop {
            let Some(c) = self.peek() else {
                return decline();
            };
            match c {
                b'"' => {
                    value.push_str(&self.text[run..self.pos]);
                    self.pos += 1;
                    break;
                }
                b'\\' => {
                    value.push_str(&self.text[run..self.pos]);
                    self.escape(&mut value)?;
                    run = self.pos;
                }
                b'\t' => self.pos += 1,
                0..=0x1f | 0x7f => return decline(),
                0x80.. => {
                    let c = self.text[self.pos..].chars().next().ok_or(Decline)?;
                    if is_odd_char(c) {
                        return decline();
                    }
                    self.pos += c.len_utf8();
                }
                _ => self.pos += 1,
            }
        }
        Ok(Token {
            value,
            end: self.pos,
        })
    }

    /// `\` and one of `"\bfnrts` or `u{hex}`; whitespace escapes are left to kdl.
    fn escape(&mut self, out: &mut String) -> R<()> {
        self.pos += 1;
        let c = match self.peek() {
            Some(b'"') => '"',
            Some(b'\\') => '\\',
            Some(b'b') => '\u{8}',
            Some(b'f') => '\u{c}',
            Some(b'n') => '\n',
            Some(b'r') => '\r',
            Some(b't') => '\t',
            Some(b's') => ' ',
            Some(b'u') if self.at(self.pos + 1) == Some(b'{') => {
                let digits_start = self.pos + 2;
                let n = self.b[digits_start..]
                    .iter()
                    .take_while(|c| c.is_ascii_hexdigit())
                    .count();
                if !(1..=6).contains(&n) || self.at(digits_start + n) != Some(b'}') {
                    return decline();
                }
                let hex = &self.text[digits_start..digits_start + n];
                let code = u32::from_str_radix(hex, 16).map_err(|_| Decline)?;
                let c = char::from_u32(code).ok_or(Decline)?;
                out.push(c);
                self.pos = digits_start + n + 1;
                return Ok(());
            }
            _ => return decline(),
        };
        out.push(c);
        self.pos += 1;
        Ok(())
    }

    /// `#"…"#` on one line, any number of `#`s.
    fn raw(&mut self, hashes: usize) -> R<Token> {
        let body_start = self.pos + hashes + 1;
        if self.at(body_start) == Some(b'"') {
            // `#"""`, `#""#`-like openings: multi-line or special-cased by kdl.
            return decline();
        }
        let mut i = body_start;
        loop {
            let Some(c) = self.at(i) else {
                return decline();
            };
            match c {
                b'"' if self.b[i + 1..].len() >= hashes
                    && self.b[i + 1..i + 1 + hashes].iter().all(|&h| h == b'#') =>
                {
                    break;
                }
                b'\t' => i += 1,
                0..=0x1f | 0x7f => return decline(),
                0x80.. => {
                    let c = self.text[i..].chars().next().ok_or(Decline)?;
                    if is_odd_char(c) {
                        return decline();
                    }
                    i += c.len_utf8();
                }
                _ => i += 1,
            }
        }
        let value = self.text[body_start..i].to_string();
        self.pos = i + 1 + hashes;
        Ok(Token {
            value,
            end: self.pos,
        })
    }
}

/// An ASCII identifier character of KDL v2 (`.` included; the callers exclude it first).
fn is_ident_byte(c: u8) -> bool {
    matches!(c, 0x21..=0x7e)
        && !matches!(
            c,
            b'\\' | b'/' | b'(' | b')' | b'{' | b'}' | b'[' | b']' | b';' | b'"' | b'#' | b'='
        )
}

/// Characters this parser leaves to kdl wherever they appear: KDL's newlines and spaces other
/// than those it reads itself (they end a comment, a line or a word), the code points KDL
/// forbids (the pre-scan refuses them before), and, to stay within what has been compared with
/// kdl, the other C1 controls and the zero-width spaces.
fn is_odd_char(c: char) -> bool {
    let lexical = is_newline(c) || is_unicode_space(c) || is_disallowed(c);
    (lexical && !matches!(c, ' ' | '\t'))
        || matches!(c, '\u{80}'..='\u{9f}' | '\u{200b}'..='\u{200d}')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Accepted, and equal to kdl's document in everything, spans included (kdl's own equality
    /// leaves spans out, so they are compared here as a list).
    fn same(text: &str) {
        let fast = parse(text).unwrap_or_else(|| panic!("declined {text:?}"));
        let slow = KdlDocument::parse_v2(text).unwrap_or_else(|e| panic!("kdl: {e:?}"));
        assert_eq!(fast, slow, "{text:?}");
        assert_eq!(spans(&fast), spans(&slow), "{text:?}");
    }

    fn spans(doc: &KdlDocument) -> Vec<(usize, usize)> {
        let mut out = vec![(doc.span().offset(), doc.span().len())];
        for n in doc.nodes() {
            out.push((n.span().offset(), n.span().len()));
            out.push((n.name().span().offset(), n.name().span().len()));
            for e in n.entries() {
                out.push((e.span().offset(), e.span().len()));
                if let Some(k) = e.name() {
                    out.push((k.span().offset(), k.span().len()));
                }
            }
            if let Some(c) = n.children() {
                out.extend(spans(c));
            }
        }
        out
    }

    fn declined(text: &str) {
        assert!(parse(text).is_none(), "accepted {text:?}");
    }

    #[test]
    fn pipelines_as_written() {
        same("");
        same("\n\n// only a comment");
        same("pipeline \"p\"\n\nstage \"a\" uses=\"run\" {\n    command \"make\" \"x\"\n}\n");
        same("stage \"a\" {\r\n    needs \"b\" // why\r\n}\r\n");
        same("a; b;c\n");
        same("a{}\nb {\n}\nc { d; e }  \n");
        same("a {\n  b {\n    c 1\n  }\n}// end");
        same("node k=v k2 = \"v\"\tk3= #true k4 =#null x");
        same("n \"quoted key\"=1 #\"raw key\"#=2 ##\"r\"#\"##");
        same("trailing spaces   \nand-tabs\t\t\n  ");
        same("a {  }  // c\nb");
    }

    #[test]
    fn numbers_as_kdl_reads_them() {
        same("n 0 -1 +7 1_000 007 1_ 12345678901234567890123456789012345678");
        // kdl reads every digit group as an i128: 39 digits are left to it.
        declined("n 170141183460469231731687303715884105727");
        same("n 1.5 -0.0 1e3 1E+3 2.5e-3 1.5_5 1e400");
    }

    #[test]
    fn strings_and_escapes() {
        same(r#"n "a\"b" "\\ \n \r \t \b \f \s" "\u{41}\u{10FFFF}\u{0}" "é 中文 😀" "tab	in""#);
        same("n #\"\\n stays\"# ##\"a\"#b\"## -x --flag +inf");
    }

    #[test]
    fn what_is_left_to_kdl() {
        // Valid KDL outside the subset.
        for text in [
            "\u{feff}a",
            "/- a\nb",
            "a /-1 2",
            "a /* c */ 1",
            "(t)a",
            "a (t)1",
            "a \\\n  1",
            "a \"\"\"\n  x\n  \"\"\"",
            "a 0x1F 0o7 0b1",
            "a #inf",
            "a\u{a0}1",
            "a\u{2028}b",
            "a\rb",
            "a \"ws \\  escape\"",
            "a #\"\"#",
            "a .5x",
            "é",
            "a -inf",
            "a \"del\u{7f}\"",
        ] {
            declined(text);
        }
        // Invalid KDL: always kdl's diagnostics.
        for text in [
            "a true",
            "a=1",
            "a \"unterminated",
            "a \"bad \\q\"",
            "a \"\\u{D800}\"",
            "a \"\\u{1234567}\"",
            "a 1.",
            "a 1.e3",
            "a 1a",
            "a \"s\"x",
            "}",
            "a {",
            "a { b",
            ";;",
            "a 1 = 2",
            "a #truex",
            "a \"nl\nx\"",
            "a b=",
            "a 170141183460469231731687303715884105728",
        ] {
            declined(text);
            assert!(KdlDocument::parse_v2(text).is_err(), "{text:?}");
        }
    }
}
