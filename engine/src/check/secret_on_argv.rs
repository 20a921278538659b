//! `secret-on-argv`: a stage runs a shell (`sh -c`, `bash -c`, …) whose script expands a secret
//! the stage holds (`secret-env "TOKEN" "…"`, then `"$TOKEN"`) into the arguments of a program
//! it starts. A process's arguments are public on the machine (`ps`, `/proc/<pid>/cmdline`), so
//! the value is no longer in the stage's scope alone.
//!
//! The script is read the way a shell splits it, just enough to know which program a word is an
//! argument of: quotes, escapes, comments, `$(…)` and backquotes, here-documents, redirections,
//! assignments before a command, and the builtins that start no process (`printf`, `echo`,
//! `test`, `export`, …). `printf '%s' "$TOKEN" | tool --token-stdin` is how to hand a secret on,
//! and is not reported.

use super::{Check, Context};
use crate::contract::Role;
use crate::finding::{Confidence, Finding, Label, Severity};
use crate::model::{Segment, Value};
use crate::span::Span;

pub struct SecretOnArgv;

pub const ID: &str = "secret-on-argv";

/// Builtins of every shell in [`crate::code::SHELLS`] that start no process: their arguments are on no argv.
const NO_PROCESS: &[&str] = &[
    "echo", "printf", "test", "[", "export", "local", "readonly", "declare", "typeset", "read",
    ":", "true", "false", "set", "unset", "shift", "return", "exit", "cd",
];

/// Words that start a compound command, or stand before a command without being one.
const RESERVED: &[&str] = &[
    "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "{", "}", "time",
    "esac",
];

/// Compound commands whose words are no program's arguments (`for x in "$T"`, `[[ -n $T ]]`).
const NOT_A_COMMAND: &[&str] = &["for", "case", "select", "[[", "function"];

/// A secret variable expanded into the arguments of a program the script starts.
#[derive(Debug, PartialEq, Eq)]
pub struct Leak {
    pub var: String,
    /// The program, as the script names it.
    pub program: String,
    /// Where the expansion (its `$`) is in the script.
    pub offset: usize,
}

/// One word of a simple command: its text (expansions left in), and the secrets it expands.
#[derive(Default)]
struct Word {
    text: String,
    refs: Vec<(String, usize)>,
    started: bool,
}

struct Scanner<'a> {
    script: &'a str,
    bytes: &'a [u8],
    base: usize,
    /// The variables that hold a secret, each with the secret's own variable: those the stage
    /// sets, and those the script assigns from them (`AUTH="Bearer $TOKEN"`, `set -- "$TOKEN"`).
    vars: Vec<(String, String)>,
    /// Every secret a word of the script expands, arguments of builtins included: what a
    /// command substitution of this script may print (`$(printenv TOKEN)`).
    mentioned: Vec<(String, usize)>,
    /// The secrets the command before a `|` expanded: what reaches the next one's input.
    piped: Vec<(String, usize)>,
    /// The command being read ends with a `|`.
    piping: bool,
    words: Vec<Word>,
    word: Word,
    /// The next word is a redirection's target, not an argument.
    redirect: bool,
    /// The next word is a here-document's delimiter (`<<-`: leading tabs stripped).
    heredoc_next: Option<bool>,
    heredocs: Vec<(String, bool)>,
    out: Vec<Leak>,
}

fn is_name_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn is_name(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The secret variables `script` expands into a program's arguments, in order.
pub fn leaks(script: &str, vars: &[&str]) -> Vec<Leak> {
    let vars = vars
        .iter()
        .map(|v| ((*v).to_owned(), (*v).to_owned()))
        .collect();
    let mut s = Scanner::new(script, 0, vars);
    s.run();
    s.out
}

impl<'a> Scanner<'a> {
    fn new(script: &'a str, base: usize, vars: Vec<(String, String)>) -> Self {
        Self {
            script,
            bytes: script.as_bytes(),
            base,
            vars,
            mentioned: Vec::new(),
            piped: Vec::new(),
            piping: false,
            words: Vec::new(),
            word: Word::default(),
            redirect: false,
            heredoc_next: None,
            heredocs: Vec::new(),
            out: Vec::new(),
        }
    }

    fn push(&mut self, text: &str) {
        self.word.text.push_str(text);
        self.word.started = true;
    }

    fn end_word(&mut self) {
        let word = std::mem::take(&mut self.word);
        if !word.started {
            return;
        }
        if let Some(strip) = self.heredoc_next.take() {
            let delimiter: String = word
                .text
                .chars()
                .filter(|c| !matches!(c, '\'' | '"' | '\\'))
                .collect();
            self.heredocs.push((delimiter, strip));
            self.redirect = false;
            return;
        }
        if std::mem::take(&mut self.redirect) {
            return;
        }
        self.words.push(word);
    }

    /// The secret variable `name` holds, if any: its own, or the one it was assigned from.
    fn origin(&self, name: &str) -> Option<String> {
        self.vars
            .iter()
            .find(|(v, _)| v == name)
            .map(|(_, o)| o.clone())
    }

    /// `name` now holds what `refs` expanded (principle 5: a label follows its value).
    fn taint(&mut self, name: &str, refs: &[(String, usize)]) {
        if let Some((origin, _)) = refs.first()
            && self.origin(name).is_none()
        {
            self.vars.push((name.to_owned(), origin.clone()));
        }
    }

    fn end_command(&mut self) {
        self.end_word();
        let piping = std::mem::take(&mut self.piping);
        let piped_in = std::mem::take(&mut self.piped);
        let words = std::mem::take(&mut self.words);
        if piping {
            self.piped = words.iter().flat_map(|w| w.refs.iter().cloned()).collect();
        }
        // Assignments standing alone set shell variables: what they expand, the variable
        // holds. Before a command they set its environment, not an argument.
        let standalone = words
            .iter()
            .all(|w| RESERVED.contains(&w.text.as_str()) || is_assignment(&w.text));
        if standalone {
            for word in &words {
                if let Some((name, _)) = word.text.split_once('=') {
                    self.taint(name, &word.refs);
                }
            }
            return;
        }
        let mut rest = words
            .iter()
            .skip_while(|w| RESERVED.contains(&w.text.as_str()) || is_assignment(&w.text));
        let Some(mut first) = rest.next() else {
            return;
        };
        let args: Vec<&Word> = rest.clone().collect();
        match first.text.as_str() {
            // They assign too.
            "export" | "local" | "readonly" | "declare" | "typeset" => {
                for word in args.iter().filter(|w| is_assignment(&w.text)) {
                    if let Some((name, _)) = word.text.split_once('=') {
                        self.taint(name, &word.refs);
                    }
                }
            }
            // `set -- "$TOKEN"`: the positional parameters hold it.
            "set" => {
                let refs: Vec<(String, usize)> =
                    args.iter().flat_map(|w| w.refs.iter().cloned()).collect();
                for name in ["@", "*", "1", "2", "3", "4", "5", "6", "7", "8", "9"] {
                    self.taint(name, &refs);
                }
            }
            // What they print, a substitution of the script holds.
            "echo" | "printf" | "print" => {
                for word in &args {
                    self.mentioned.extend(word.refs.iter().cloned());
                }
            }
            "printenv" => {
                for word in &args {
                    if let Some(origin) = self.origin(&word.text) {
                        self.mentioned.push((origin, self.base));
                    }
                }
            }
            _ => {}
        }
        // `… | xargs tool`: what the command before printed becomes `tool`'s arguments.
        if first.text == "xargs"
            && let Some((var, offset)) = piped_in.first()
        {
            let program = args
                .iter()
                .find(|w| {
                    !w.text.starts_with('-')
                        && !w.text.contains('{')
                        && !w.text.bytes().all(|b| b.is_ascii_digit())
                })
                .map_or("xargs", |w| w.text.as_str());
            self.out.push(Leak {
                var: var.clone(),
                program: program.to_owned(),
                offset: *offset,
            });
        }
        if NOT_A_COMMAND.contains(&first.text.as_str()) {
            return;
        }
        // `command printf …` and `builtin echo …` run the builtin; `exec tool …` runs `tool`.
        while matches!(first.text.as_str(), "command" | "builtin" | "exec") {
            match rest.next() {
                Some(next) if !next.text.starts_with('-') => first = next,
                _ => return,
            }
        }
        if NO_PROCESS.contains(&first.text.as_str()) || first.text == "eval" {
            return;
        }
        for word in std::iter::once(first).chain(rest) {
            for (var, offset) in &word.refs {
                self.out.push(Leak {
                    var: var.clone(),
                    program: first.text.clone(),
                    offset: *offset,
                });
            }
        }
    }

    /// The end of a `$(…)` starting after `(` at `i`: the index of its `)`.
    fn matching_paren(&self, mut i: usize) -> usize {
        let mut depth = 1;
        let mut quote: Option<u8> = None;
        while i < self.bytes.len() {
            let b = self.bytes[i];
            match (quote, b) {
                (Some(b'\''), b'\'') => quote = None,
                (Some(b'\''), _) => {}
                (_, b'\\') => i += 1,
                (Some(b'"'), b'"') => quote = None,
                (Some(_), _) => {}
                (None, b'\'' | b'"') => quote = Some(b),
                (None, b'(') => depth += 1,
                (None, b')') => {
                    depth -= 1;
                    if depth == 0 {
                        return i;
                    }
                }
                _ => {}
            }
            i += 1;
        }
        self.bytes.len()
    }

    /// Scans a nested script (`$(…)`, backquotes) on its own; the word gets a placeholder.
    fn nested(&mut self, start: usize, end: usize) {
        let inner = &self.script[start..end.min(self.script.len())];
        let mut s = Scanner::new(inner, self.base + start, self.vars.clone());
        s.run();
        self.out.extend(s.out);
        // What it prints may be the secret it read: the substitution carries it.
        self.word.refs.extend(s.mentioned);
        self.push("_");
    }

    /// A `$` at `i` (not single-quoted): records a secret it expands; returns the next index.
    fn dollar(&mut self, i: usize) -> usize {
        let b = self.bytes;
        match b.get(i + 1) {
            Some(b'(') if b.get(i + 2) == Some(&b'(') => {
                let end = self.matching_paren(i + 2);
                self.push("_");
                (end + 1).min(b.len())
            }
            Some(b'(') => {
                let end = self.matching_paren(i + 2);
                self.nested(i + 2, end);
                (end + 1).min(b.len())
            }
            Some(b'{') => {
                let mut j = i + 2;
                while j < b.len() && b[j] != b'}' {
                    j += 1;
                }
                let inner = &self.script[i + 2..j];
                // `${#T}` is the length and `${!T}` an indirection: not the value.
                let name: String = inner
                    .bytes()
                    .take_while(|&c| is_name(c))
                    .map(char::from)
                    .collect();
                if let Some(origin) = self.origin(&name).filter(|_| !name.is_empty()) {
                    self.word.refs.push((origin, self.base + i));
                }
                self.push("_");
                (j + 1).min(b.len())
            }
            Some(&c) if is_name_start(c) => {
                let mut j = i + 1;
                while j < b.len() && is_name(b[j]) {
                    j += 1;
                }
                let name = &self.script[i + 1..j];
                if let Some(origin) = self.origin(name) {
                    self.word.refs.push((origin, self.base + i));
                }
                self.push("_");
                j
            }
            // `$@`, `$*`, `$1`: the positional parameters, once `set` gave them a secret.
            Some(&c) if c == b'@' || c == b'*' || c.is_ascii_digit() => {
                let name = char::from(c).to_string();
                if let Some(origin) = self.origin(&name) {
                    self.word.refs.push((origin, self.base + i));
                }
                self.push("_");
                i + 2
            }
            _ => {
                self.push("$");
                i + 1
            }
        }
    }

    /// Skips the bodies of pending here-documents, from the line after `i`.
    fn skip_heredocs(&mut self, mut i: usize) -> usize {
        for (delimiter, strip) in std::mem::take(&mut self.heredocs) {
            while i < self.bytes.len() {
                let end = self.script[i..]
                    .find('\n')
                    .map_or(self.bytes.len(), |n| i + n);
                let line = &self.script[i..end];
                let line = if strip {
                    line.trim_start_matches('\t')
                } else {
                    line
                };
                i = (end + 1).min(self.bytes.len());
                if line == delimiter {
                    break;
                }
            }
        }
        i
    }

    fn run(&mut self) {
        let b = self.bytes;
        let script = self.script;
        let mut i = 0;
        let mut double = false;
        while i < b.len() {
            let c = b[i];
            if double {
                match c {
                    b'"' => double = false,
                    b'\\' => {
                        self.push("\\");
                        if i + 1 < b.len() {
                            self.push(char_at(script, i + 1));
                        }
                        i += 1 + char_at(script, i + 1).len();
                        continue;
                    }
                    b'$' => {
                        i = self.dollar(i);
                        continue;
                    }
                    b'`' => {
                        let end = script[i + 1..].find('`').map_or(b.len(), |n| i + 1 + n);
                        self.nested(i + 1, end);
                        i = end + 1;
                        continue;
                    }
                    _ => self.push(char_at(script, i)),
                }
                i += char_at(script, i).len().max(1);
                continue;
            }
            match c {
                b' ' | b'\t' => self.end_word(),
                b'\n' => {
                    self.end_command();
                    if !self.heredocs.is_empty() {
                        i = self.skip_heredocs(i + 1);
                        continue;
                    }
                }
                b'#' if !self.word.started => {
                    while i < b.len() && b[i] != b'\n' {
                        i += 1;
                    }
                    continue;
                }
                b'|' if b.get(i + 1) == Some(&b'|') => {
                    self.end_command();
                    i += 2;
                    continue;
                }
                b'|' => {
                    self.piping = true;
                    self.end_command();
                }
                b';' | b'(' | b')' => self.end_command(),
                b'&' if b.get(i + 1) == Some(&b'>') => {
                    self.end_word();
                    i = self.redirection(i + 1);
                    continue;
                }
                b'&' => self.end_command(),
                b'<' | b'>' => {
                    // A file descriptor before the operator (`2>`) is not an argument.
                    if self.word.started && self.word.text.bytes().all(|d| d.is_ascii_digit()) {
                        self.word = Word::default();
                    }
                    self.end_word();
                    i = self.redirection(i);
                    continue;
                }
                b'\\' => {
                    if b.get(i + 1) == Some(&b'\n') {
                        i += 2;
                        continue;
                    }
                    self.push("\\");
                    if i + 1 < b.len() {
                        self.push(char_at(script, i + 1));
                    }
                    i += 1 + char_at(script, i + 1).len();
                    continue;
                }
                b'\'' => {
                    let end = self.script[i + 1..]
                        .find('\'')
                        .map_or(b.len(), |n| i + 1 + n);
                    self.push(&script[i..(end + 1).min(b.len())]);
                    i = end + 1;
                    continue;
                }
                b'"' => {
                    double = true;
                    self.word.started = true;
                }
                b'$' => {
                    i = self.dollar(i);
                    continue;
                }
                b'`' => {
                    let end = script[i + 1..].find('`').map_or(b.len(), |n| i + 1 + n);
                    self.nested(i + 1, end);
                    i = end + 1;
                    continue;
                }
                _ => self.push(char_at(script, i)),
            }
            i += char_at(script, i).len().max(1);
        }
        self.end_command();
    }

    /// A redirection operator at `i` (`>`, `>>`, `<`, `<<`, `<<-`, `<<<`, `>&`, `<>`, `>|`):
    /// the next word is its target (or a here-document's delimiter). Returns the next index.
    fn redirection(&mut self, i: usize) -> usize {
        let b = self.bytes;
        let mut j = i;
        if b[j] == b'<' && b.get(j + 1) == Some(&b'<') && b.get(j + 2) != Some(&b'<') {
            j += 2;
            let strip = b.get(j) == Some(&b'-');
            if strip {
                j += 1;
            }
            self.heredoc_next = Some(strip);
            return j;
        }
        while j < b.len() && matches!(b[j], b'<' | b'>' | b'&' | b'|') {
            j += 1;
        }
        self.redirect = true;
        j
    }
}

/// The character at byte `i` ("" past the end).
fn char_at(s: &str, i: usize) -> &str {
    let Some(rest) = s.get(i..) else { return "" };
    let len = rest.chars().next().map_or(0, char::len_utf8);
    &rest[..len]
}

/// `NAME=value`: an assignment, which a shell does not pass as an argument.
fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && name.bytes().next().is_some_and(is_name_start)
                && name.bytes().all(is_name)
        }
        None => false,
    }
}

/// The script of a shell's `-c` in a command line, and the shell's name: wherever the command
/// line runs one ([`crate::code::code_words`]: also behind `env`, `sudo`, `busybox`).
fn shell_script(words: &[String]) -> Option<(usize, &'static str)> {
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    crate::code::code_words(&words)
        .into_iter()
        .find_map(|c| match c.how {
            crate::code::CodeHow::Inline(i) => crate::code::SHELLS
                .iter()
                .find(|s| **s == i)
                .map(|s| (c.index, *s)),
            _ => None,
        })
}

/// The literal text of a template, an interpolation standing as `_`.
fn text_of(value: &Value) -> Option<String> {
    match value {
        Value::Template(t) => Some(
            t.segments
                .iter()
                .map(|s| match s {
                    Segment::Literal { text } => text.as_str(),
                    _ => "_",
                })
                .collect(),
        ),
        Value::String(s) => Some(s.clone()),
        _ => None,
    }
}

/// Offsets of every `$NAME` and `${NAME…` in `text` (also `${{NAME…`: a template's source
/// writes a literal brace twice).
fn expansions(text: &str, var: &str) -> Vec<usize> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    for (i, _) in text.match_indices('$') {
        let rest = &text[i + 1..];
        let braces = rest.bytes().take(2).take_while(|&c| c == b'{').count();
        let name_at = i + 1 + braces;
        let Some(tail) = text.get(name_at..) else {
            continue;
        };
        if tail.starts_with(var) && !b.get(name_at + var.len()).is_some_and(|&c| is_name(c)) {
            out.push(i);
        }
    }
    out
}

impl Check for SecretOnArgv {
    fn principle(&self) -> super::Principle {
        super::Principle::Labels
    }
    fn id(&self) -> &'static str {
        ID
    }
    fn severity(&self) -> Severity {
        Severity::Warning
    }
    fn summary(&self) -> &'static str {
        "a shell script never expands a secret into the arguments of a program it runs"
    }
    fn run(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        let p = cx.pipeline;
        for stage in &p.stages {
            let Some(contract) = cx.registry.get(&stage.uses.value) else {
                continue;
            };
            let role = |name: &str| contract.child_spec(name).map(|c| c.role);
            // `secret-env "TOKEN" "secret"`: the variables that hold a secret.
            let mut vars: Vec<(&str, &str, Span)> = Vec::new();
            for child in &stage.children {
                if role(&child.name.value) != Some(Role::SecretSlot) {
                    continue;
                }
                // `secret-env "VAR" "a" "b"`: each secret of the line (a reviewer's accounts)
                // is held under the one variable.
                if let [var, secrets @ ..] = child.args.as_slice()
                    && let Value::String(name) = &var.value
                {
                    for secret in secrets {
                        if let Value::Secret(secret) = &secret.value {
                            vars.push((name, secret, var.span));
                        }
                    }
                }
            }
            if vars.is_empty() {
                continue;
            }
            let names: Vec<&str> = vars.iter().map(|(v, _, _)| *v).collect();
            for child in &stage.children {
                if role(&child.name.value) != Some(Role::CommandLine) {
                    continue;
                }
                let words: Vec<String> = child
                    .args
                    .iter()
                    .map(|a| text_of(&a.value).unwrap_or_default())
                    .collect();
                let Some((at, shell)) = shell_script(&words) else {
                    continue;
                };
                let script = &words[at];
                let value = &child.args[at];
                let mut reported: Vec<&str> = Vec::new();
                for leak in leaks(script, &names) {
                    let Some(&(var, secret, var_span)) =
                        vars.iter().find(|(v, _, _)| *v == leak.var)
                    else {
                        continue;
                    };
                    if reported.contains(&var) {
                        continue;
                    }
                    reported.push(var);
                    let span = expansion_span(cx, value.span, script, var, leak.offset);
                    let program = leak.program.rsplit('/').next().unwrap_or(&leak.program);
                    let name = stage.name.value.as_str();
                    out.push(
                        Finding::new(
                            self.id(),
                            self.severity(),
                            format!(
                                "`{name}` puts secret `{secret}` on the command line of `{program}`: its `{shell} -c` script expands `${var}` into `{program}`'s arguments, which every process on the machine can read"
                            ),
                            Label::new(span, format!("an argument of `{program}`")),
                        )
                        .related(Label::new(var_span, format!("`{var}` holds secret `{secret}`")))
                        .help(format!(
                            "let `{program}` read `{var}` itself (from its environment, a config file or a credential helper), or pipe the value in on stdin with the `printf` builtin, which starts no process: `printf '%s' \"${var}\" | {program} …` with the option that reads it from stdin"
                        ))
                        .confidence(Confidence::Medium)
                        .stage(name),
                    );
                }
            }
        }
    }
}

/// The span of the expansion of `var` at `offset` in `script`, found in the file: the n-th
/// expansion of `var` in the script is the n-th in the source text. The whole value otherwise.
fn expansion_span(cx: &Context<'_>, value: Span, script: &str, var: &str, offset: usize) -> Span {
    let nth = expansions(script, var).iter().position(|&o| o == offset);
    let source = cx.source.slice(value);
    let found = nth.and_then(|n| expansions(source, var).get(n).copied());
    match found {
        Some(at) => {
            let close = match &source[at + 1..] {
                rest if rest.starts_with("{{") => Some("}}"),
                rest if rest.starts_with('{') => Some("}"),
                _ => None,
            };
            let len = match close {
                Some(close) => source[at..]
                    .find(close)
                    .map_or(var.len() + 1, |e| e + close.len()),
                None => var.len() + 1,
            };
            value.sub(at, len)
        }
        None => value,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn programs(script: &str) -> Vec<(String, String)> {
        leaks(script, &["TOKEN", "KEY"])
            .into_iter()
            .map(|l| (l.var, l.program))
            .collect()
    }

    fn pair(var: &str, program: &str) -> (String, String) {
        (var.into(), program.into())
    }

    #[test]
    fn a_secret_carried_by_a_variable_a_substitution_or_a_pipe_is_a_leak() {
        assert_eq!(
            programs(r#"AUTH="Authorization: Bearer $TOKEN"; curl -H "$AUTH" https://x"#),
            vec![pair("TOKEN", "curl")]
        );
        assert_eq!(
            programs(r#"export AUTH="Bearer ${TOKEN}"; curl -H "$AUTH" https://x"#),
            vec![pair("TOKEN", "curl")]
        );
        assert_eq!(
            programs(r#"curl -H "Authorization: Bearer $(printenv TOKEN)" https://x"#),
            vec![pair("TOKEN", "curl")]
        );
        assert_eq!(
            programs(r#"curl -H "Authorization: $(printf '%s' "$KEY")" https://x"#),
            vec![pair("KEY", "curl")]
        );
        assert_eq!(
            programs(r#"printf %s "$TOKEN" | xargs -I{} curl -H "Bearer {}" https://x"#),
            vec![pair("TOKEN", "curl")]
        );
        assert_eq!(
            programs(r#"set -- "$TOKEN"; curl -u "me:$1" https://x"#),
            vec![pair("TOKEN", "curl")]
        );
        // Handed on by the environment or on stdin, it is on no argument list.
        assert!(programs(r#"AUTH="$TOKEN" tool; printf %s "$TOKEN" | tool --stdin"#).is_empty());
        assert!(programs(r#"OUT=$(curl -s https://x); tool "$OUT" || true"#).is_empty());
        assert!(programs(r#"printf %s "$TOKEN" | tool --token-stdin"#).is_empty());
    }

    #[test]
    fn an_argument_is_a_leak() {
        assert_eq!(
            programs(r#"curl -H "Authorization: Bearer $TOKEN" https://x"#),
            vec![pair("TOKEN", "curl")]
        );
        assert_eq!(
            programs("git push https://x:${TOKEN}@git.example.com/o/r"),
            vec![pair("TOKEN", "git")]
        );
        assert_eq!(
            programs("set -e; exec deploy --key=$KEY"),
            vec![pair("KEY", "deploy")]
        );
        assert_eq!(
            programs("env A=\"$TOKEN\" tool"),
            vec![pair("TOKEN", "env")]
        );
        assert_eq!(
            programs("X=$(curl -s -u me:$TOKEN https://x)"),
            vec![pair("TOKEN", "curl")]
        );
        assert_eq!(
            programs("if tool \"$TOKEN\"; then :; fi"),
            vec![pair("TOKEN", "tool")]
        );
        assert_eq!(
            programs("echo ok && `tool $KEY`"),
            vec![pair("KEY", "tool")]
        );
        assert_eq!(
            programs("tool 2>&1 \"$TOKEN\""),
            vec![pair("TOKEN", "tool")]
        );
        assert_eq!(
            programs("tool &>/dev/null --key=$KEY"),
            vec![pair("KEY", "tool")]
        );
        assert_eq!(
            programs("printf ok | /usr/bin/tool \"${TOKEN:-none}\""),
            vec![pair("TOKEN", "/usr/bin/tool")]
        );
    }

    #[test]
    fn builtins_redirections_and_quotes_are_not() {
        for script in [
            r#"printf '%s' "$TOKEN" | gh auth login --with-token"#,
            r#"echo "$TOKEN" | tool --stdin"#,
            "curl -H 'Authorization: Bearer $TOKEN' https://x",
            r#"test -n "$TOKEN" || exit 1"#,
            r#"[ -z "${TOKEN}" ] && exit 1"#,
            r#"[[ -n $TOKEN ]]"#,
            "export GH_TOKEN=\"$TOKEN\"; gh pr view",
            "GH_TOKEN=$TOKEN gh pr view",
            "tool --stdin <<<\"$TOKEN\"",
            "tool --stdin <<EOF\n$TOKEN\nEOF\ntrue",
            "tool --stdin <<-'EOF'\n\t$TOKEN\n\tEOF",
            "# tool $TOKEN\ntrue",
            "tool --length ${#TOKEN}",
            "tool \\$TOKEN",
            "for t in $TOKEN; do :; done",
            "tool \"$TOKENS\" $KEYRING",
            "command printf '%s' \"$KEY\" | tool",
            "tool >\"$TOKEN.log\"",
            "n=$((1 + 2)); tool $n",
            "tool 'a \"$TOKEN\" b'",
            "tool \"it's \\$TOKEN\"",
        ] {
            assert_eq!(programs(script), vec![], "{script}");
        }
    }

    #[test]
    fn the_script_is_the_argument_of_c() {
        let w = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(shell_script(&w(&["sh", "-c", "x"])), Some((2, "sh")));
        assert_eq!(
            shell_script(&w(&["/bin/bash", "-euc", "x"])),
            Some((2, "bash"))
        );
        assert_eq!(
            shell_script(&w(&["bash", "--noprofile", "-o", "pipefail", "-c", "x"])),
            Some((5, "bash"))
        );
        assert_eq!(shell_script(&w(&["sh", "script.sh"])), None);
        assert_eq!(shell_script(&w(&["python3", "-c", "x"])), None);
    }
}
