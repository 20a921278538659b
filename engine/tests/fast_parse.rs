//! The fast KDL path (`engine/src/syntax/fast.rs`) against kdl's own parser: wherever the fast
//! parser accepts a text, kdl accepts it too and builds the same document (names, `repr`s,
//! values, entries, children, formatting and every span), and compiling and checking it gives
//! the same findings; wherever kdl rejects a text, the fast parser declines it.

use std::path::{Path, PathBuf};

use kdl::{KdlDocument, KdlEntry, KdlIdentifier, KdlNode, KdlValue};
use reviewflow_engine::graph::Dag;
use reviewflow_engine::lower::lower;
use reviewflow_engine::syntax::{Limits, parse_fast};
use reviewflow_engine::{CheckOptions, Compiled, Registry, Source, compile, run_checks};

#[allow(dead_code)]
#[path = "../benches/support/many_corpus.rs"]
mod corpus;

// ---------------------------------------------------------------- structural comparison

fn span(s: miette::SourceSpan) -> (usize, usize) {
    (s.offset(), s.len())
}

fn ident(path: &str, a: &KdlIdentifier, b: &KdlIdentifier) -> Result<(), String> {
    if a.value() != b.value() || a.repr() != b.repr() || span(a.span()) != span(b.span()) {
        return Err(format!(
            "{path}: identifier {:?} {:?} {:?} ≠ kdl's {:?} {:?} {:?}",
            a.value(),
            a.repr(),
            span(a.span()),
            b.value(),
            b.repr(),
            span(b.span())
        ));
    }
    Ok(())
}

fn opt_ident(
    path: &str,
    a: Option<&KdlIdentifier>,
    b: Option<&KdlIdentifier>,
) -> Result<(), String> {
    match (a, b) {
        (None, None) => Ok(()),
        (Some(a), Some(b)) => ident(path, a, b),
        _ => Err(format!("{path}: {a:?} ≠ kdl's {b:?}")),
    }
}

/// Values, exactly: floats by their bits (kdl's own equality normalises them).
fn value(path: &str, a: &KdlValue, b: &KdlValue) -> Result<(), String> {
    let same = match (a, b) {
        (KdlValue::String(x), KdlValue::String(y)) => x == y,
        (KdlValue::Integer(x), KdlValue::Integer(y)) => x == y,
        (KdlValue::Float(x), KdlValue::Float(y)) => x.to_bits() == y.to_bits(),
        (KdlValue::Bool(x), KdlValue::Bool(y)) => x == y,
        (KdlValue::Null, KdlValue::Null) => true,
        _ => false,
    };
    if same {
        Ok(())
    } else {
        Err(format!("{path}: value {a:?} ≠ kdl's {b:?}"))
    }
}

fn entry(path: &str, a: &KdlEntry, b: &KdlEntry) -> Result<(), String> {
    opt_ident(&format!("{path} name"), a.name(), b.name())?;
    opt_ident(&format!("{path} type"), a.ty(), b.ty())?;
    value(path, a.value(), b.value())?;
    if a.format() != b.format() {
        return Err(format!(
            "{path}: format {:?} ≠ kdl's {:?}",
            a.format(),
            b.format()
        ));
    }
    if span(a.span()) != span(b.span()) {
        return Err(format!(
            "{path}: span {:?} ≠ kdl's {:?}",
            span(a.span()),
            span(b.span())
        ));
    }
    Ok(())
}

fn node(path: &str, a: &KdlNode, b: &KdlNode) -> Result<(), String> {
    let path = format!("{path}/{}", b.name().value());
    ident(&format!("{path} name"), a.name(), b.name())?;
    opt_ident(&format!("{path} type"), a.ty(), b.ty())?;
    if a.entries().len() != b.entries().len() {
        return Err(format!(
            "{path}: {} entries ≠ kdl's {}",
            a.entries().len(),
            b.entries().len()
        ));
    }
    for (i, (x, y)) in a.entries().iter().zip(b.entries()).enumerate() {
        entry(&format!("{path} entry {i}"), x, y)?;
    }
    match (a.children(), b.children()) {
        (None, None) => {}
        (Some(x), Some(y)) => document(&path, x, y)?,
        (x, y) => {
            return Err(format!(
                "{path}: children {} ≠ kdl's {}",
                x.is_some(),
                y.is_some()
            ));
        }
    }
    if a.format() != b.format() {
        return Err(format!(
            "{path}: format {:?} ≠ kdl's {:?}",
            a.format(),
            b.format()
        ));
    }
    if span(a.span()) != span(b.span()) {
        return Err(format!(
            "{path}: span {:?} ≠ kdl's {:?}",
            span(a.span()),
            span(b.span())
        ));
    }
    Ok(())
}

fn document(path: &str, a: &KdlDocument, b: &KdlDocument) -> Result<(), String> {
    if a.nodes().len() != b.nodes().len() {
        return Err(format!(
            "{path}: {} nodes ≠ kdl's {}",
            a.nodes().len(),
            b.nodes().len()
        ));
    }
    for (x, y) in a.nodes().iter().zip(b.nodes()) {
        node(path, x, y)?;
    }
    if a.format() != b.format() {
        return Err(format!(
            "{path}: format {:?} ≠ kdl's {:?}",
            a.format(),
            b.format()
        ));
    }
    if span(a.span()) != span(b.span()) {
        return Err(format!(
            "{path}: span {:?} ≠ kdl's {:?}",
            span(a.span()),
            span(b.span())
        ));
    }
    Ok(())
}

/// What the fast parser did with `text`, checked against kdl.
#[derive(Debug, PartialEq)]
enum Outcome {
    /// Both parsed it, to the same document.
    Same,
    /// The fast parser declined; kdl accepted it.
    DeclinedValid,
    /// The fast parser declined; kdl rejected it.
    DeclinedInvalid,
}

/// The differential property. Panics, naming the text, when it does not hold.
fn differ(text: &str) -> Outcome {
    let fast = parse_fast(text);
    let slow = KdlDocument::parse_v2(text);
    match (fast, slow) {
        (Some(fast), Ok(slow)) => {
            if let Err(e) = document("", &fast, &slow) {
                panic!("different trees for {text:?}:\n{e}");
            }
            // kdl's own equality on top (formatting included, spans not).
            assert!(fast == slow, "kdl's equality differs for {text:?}");
            Outcome::Same
        }
        (Some(fast), Err(e)) => {
            panic!("fast parser accepted what kdl rejects: {text:?}\nkdl: {e:?}\nfast: {fast:?}")
        }
        (None, Ok(_)) => Outcome::DeclinedValid,
        (None, Err(_)) => Outcome::DeclinedInvalid,
    }
}

// ---------------------------------------------------------------- corpus

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn walk(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let path = e.path();
        let name = e.file_name();
        let name = name.to_string_lossy();
        // The official KDL suite is mostly what pipelines never write: `kdl_suite.rs` and the
        // differential fuzz target's replay hold the fast path to it.
        if name.starts_with('.') || name == "target" || name == "kdl-suite" {
            continue;
        }
        if path.is_dir() {
            walk(&path, ext, out);
        } else if name.ends_with(ext) {
            out.push(path);
        }
    }
}

/// Every `.kdl` file of the project, and every ```kdl block of its docs.
fn project_texts() -> Vec<(String, String)> {
    let mut files = Vec::new();
    walk(&root(), ".kdl", &mut files);
    let mut texts: Vec<(String, String)> = files
        .iter()
        .filter_map(|p| Some((p.display().to_string(), std::fs::read_to_string(p).ok()?)))
        .collect();
    let mut docs = Vec::new();
    walk(&root().join("docs"), ".md", &mut docs);
    docs.push(root().join("README.md"));
    for p in docs {
        let Ok(md) = std::fs::read_to_string(&p) else {
            continue;
        };
        let mut block: Option<String> = None;
        for (n, line) in md.lines().enumerate() {
            match &mut block {
                None if line.trim_start().starts_with("```kdl") => block = Some(String::new()),
                Some(b) if line.trim_start().starts_with("```") => {
                    texts.push((format!("{}:{n}", p.display()), std::mem::take(b)));
                    block = None;
                }
                Some(b) => {
                    b.push_str(line);
                    b.push('\n');
                }
                None => {}
            }
        }
    }
    texts
}

fn findings(doc: &KdlDocument, source: &Source, registry: &Registry) -> String {
    let (pipeline, facts) = lower(doc, source, registry);
    let dag = Dag::build(&pipeline);
    let compiled = Compiled {
        source: source.clone(),
        pipeline,
        dag,
        facts,
    };
    format!(
        "{:?}",
        run_checks(&compiled, registry, CheckOptions::default())
    )
}

/// Same document, same findings: lowering and every check see one tree whichever parser built it.
fn same_findings(name: &str, text: &str, registry: &Registry) {
    let (Some(fast), Ok(slow)) = (parse_fast(text), KdlDocument::parse_v2(text)) else {
        return;
    };
    let source = Source::new(name, text);
    let a = findings(&fast, &source, registry);
    let b = findings(&slow, &source, registry);
    assert_eq!(a, b, "{name}: findings differ");
    // And what `compile` gives (through the fast path) is the same again.
    if let Ok(compiled) = compile(source, registry, &Limits::default()) {
        let c = format!(
            "{:?}",
            run_checks(&compiled, registry, CheckOptions::default())
        );
        assert_eq!(a, c, "{name}: compile's findings differ");
    }
}

#[test]
fn every_project_kdl_text_parses_the_same_or_is_declined() {
    let registry = Registry::with_builtins();
    let texts = project_texts();
    assert!(texts.len() > 100, "only {} texts found", texts.len());
    let mut declined_valid = Vec::new();
    let mut same = 0;
    for (name, text) in &texts {
        match differ(text) {
            Outcome::Same => {
                same += 1;
                same_findings(name, text, &registry);
            }
            Outcome::DeclinedValid => declined_valid.push(name.as_str()),
            Outcome::DeclinedInvalid => {}
        }
    }
    eprintln!("{same} parsed the same; valid but declined: {declined_valid:?}");
    // The fast path must be the path real pipelines take, not a rare one.
    for (name, _) in &texts {
        if name.contains("/examples/") && !name.contains("/broken/") {
            assert!(
                !declined_valid.contains(&name.as_str()),
                "{name} was declined"
            );
        }
    }
    assert!(
        declined_valid.len() * 20 <= same,
        "{} valid texts declined against {same} parsed: {declined_valid:?}",
        declined_valid.len()
    );
}

#[test]
fn the_many_files_corpus_takes_the_fast_path_with_the_same_findings() {
    let registry = Registry::with_builtins();
    for f in 0..corpus::FILES {
        let text = corpus::pipeline(f);
        assert_eq!(differ(&text), Outcome::Same, "pipeline {f}");
        if f % 30 == 0 {
            same_findings(&format!("p{f}.kdl"), &text, &registry);
        }
    }
}

// ---------------------------------------------------------------- generated documents

/// A small deterministic generator (xorshift64*): the same documents on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

const NAMES: &[&str] = &[
    "stage",
    "a",
    "needs",
    "visible-to",
    "x_y",
    "-",
    "--flag",
    "+x",
    "-inf",
    "+inf",
    "true",
    "null",
    "nan",
    "inf",
    "Foo",
    "a.b",
    ".a",
    "-.5",
    "é",
    "a\u{a0}b",
    "\"quoted name\"",
    "\"\"",
    "#\"raw\"#",
    "##\"r\"#\"##",
    "\"a\\\"b\"",
    "r\"v1\"",
    "1a",
    "a/b",
    "a#b",
    "a[b]",
    "a=b",
    "(t)a",
    "\"\"\"\nml\n\"\"\"",
    "~!@$%^&*",
    "a,b",
    "ab\u{200e}",
    "\u{1f600}",
];

const VALUES: &[&str] = &[
    "1",
    "0",
    "-1",
    "+7",
    "1_000",
    "1_",
    "_1",
    "007",
    "1.5",
    "-0.0",
    "1e3",
    "1E+3",
    "2.5e-3",
    "1.",
    ".5",
    "1.e3",
    "1e",
    "0x1F",
    "0o17",
    "0b101",
    "0xg",
    "1__2",
    "1.5_5",
    "170141183460469231731687303715884105727",
    "170141183460469231731687303715884105728",
    "-170141183460469231731687303715884105728",
    "99999999999999999999999999999999999999.9",
    "1e400",
    "#true",
    "#false",
    "#null",
    "#inf",
    "#-inf",
    "#nan",
    "#True",
    "true",
    "#truex",
    "\"s\"",
    "\"\"",
    "\"a b\"",
    "\"tab\there\"",
    "\"esc \\n \\t \\\\ \\\" \\s \\b \\f \\r\"",
    "\"u \\u{41}\\u{1F600}\\u{10FFFF}\"",
    "\"bad \\u{D800}\"",
    "\"bad \\u{1234567}\"",
    "\"bad \\u{}\"",
    "\"bad \\q\"",
    "\"ws \\   escape\"",
    "\"ws \\\n   escape\"",
    "\"nul \\u{0}\"",
    "\"é ü 中文 \u{1f600}\"",
    "\"nbsp\u{a0}\"",
    "\"ls\u{2028}x\"",
    "\"bidi\u{202e}\"",
    "\"del\u{7f}\"",
    "\"nl\nx\"",
    "\"cr\rx\"",
    "#\"raw \\n\"#",
    "#\"\"#",
    "#\"\"\"#",
    "##\"a\"#b\"##",
    "#\"a\"##",
    "#\"unterminated",
    "\"unterminated",
    "\"a\"b",
    "bare",
    "bare-word",
    "--",
    "-x",
    "+",
    "-",
    "a.b",
    "x=y",
    "(ty)1",
    "(ty) \"s\"",
    "( ty )#true",
    "\"\"\"\n  multi\n  \"\"\"",
    "#\"\"\"\nraw ml\n\"\"\"#",
    "[",
    "]",
    "a\\b",
];

const SPACE: &[&str] = &[
    " ",
    " ",
    " ",
    "  ",
    "\t",
    " \t ",
    "\u{a0}",
    "\u{3000}",
    "\u{2009}",
    " /* c */ ",
    "/**/",
    " \\\n ",
    " \\ // c\n ",
    " \\",
    "",
];

const NEWLINE: &[&str] = &[
    "\n",
    "\n",
    "\n",
    "\r\n",
    "\r\n",
    "\r",
    "\u{85}",
    "\u{2028}",
    "\u{0c}",
    "\u{0b}",
    ";",
    "; ",
    " // comment\n",
    "// é\r\n",
    "//\u{2029}x\n",
    "\n\n",
    "\n  // c\n",
    "//end",
];

fn gen_value(r: &mut Rng) -> String {
    if r.chance(50) {
        r.pick(VALUES).to_string()
    } else {
        // Mostly the common forms, so that many documents are accepted.
        r.pick(&[
            "\"s\"", "12", "#true", "\"x y\"", "bare", "-3", "2.5", "#null",
        ])
        .to_string()
    }
}

fn gen_name(r: &mut Rng) -> String {
    if r.chance(30) {
        r.pick(NAMES).to_string()
    } else {
        r.pick(&["stage", "needs", "a", "\"q\"", "x-y"]).to_string()
    }
}

fn gen_space(r: &mut Rng) -> String {
    if r.chance(20) { r.pick(SPACE) } else { " " }.to_string()
}

fn gen_nodes(r: &mut Rng, depth: usize, indent: &str, out: &mut String) {
    let count = r.below(4);
    for _ in 0..count {
        if r.chance(10) {
            out.push_str(r.pick(&["// a comment\n", "\n", "/- skipped 1\n", "/* b */", "  \n"]));
        }
        out.push_str(indent);
        if r.chance(5) {
            out.push_str("/-");
        }
        out.push_str(&gen_name(r));
        for _ in 0..r.below(4) {
            out.push_str(&gen_space(r));
            if r.chance(5) {
                out.push_str("/-");
            }
            if r.chance(35) {
                out.push_str(&gen_name(r));
                out.push_str(r.pick(&["=", "=", " =", "= ", " = ", "=\t"]));
            }
            out.push_str(&gen_value(r));
        }
        if depth < 3 && r.chance(35) {
            out.push_str(r.pick(&[" ", " ", "", "  ", " /-{ x }", "\t"]));
            out.push('{');
            out.push_str(r.pick(&["\n", "\n", " ", "", "\r\n", " // c\n"]));
            gen_nodes(r, depth + 1, &format!("{indent}    "), out);
            out.push_str(indent);
            out.push('}');
        }
        if r.chance(15) {
            out.push_str(r.pick(&[" ", "  ", "\t", " /* x */", " /-y"]));
        }
        if r.chance(85) {
            out.push_str(if r.chance(80) { "\n" } else { r.pick(NEWLINE) });
        }
    }
}

fn gen_document(r: &mut Rng) -> String {
    let mut out = String::new();
    if r.chance(3) {
        out.push('\u{feff}');
    }
    if r.chance(20) {
        out.push_str(r.pick(&["// head\n", "\n\n", "  ", "\r\n", "/* c */\n", "//\n"]));
    }
    gen_nodes(r, 0, "", &mut out);
    if r.chance(20) {
        out.push_str(r.pick(&["\n", "// tail", "  ", "}", ";", "\n\n// x\n", "\\"]));
    }
    out
}

/// Small edits of a text: insert a token, drop a character, duplicate a run.
fn mutate(r: &mut Rng, text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() {
        return text.to_string();
    }
    let at = r.below(chars.len());
    let mut out: String;
    match r.below(4) {
        0 => {
            out = chars[..at].iter().collect();
            out.push_str(match r.below(4) {
                0 => r.pick(SPACE),
                1 => r.pick(NEWLINE),
                2 => r.pick(VALUES),
                _ => r.pick(&["{", "}", "\"", "#", "=", "/", "\\", "(", ")", ";", "-", "."]),
            });
            out.extend(&chars[at..]);
        }
        1 => {
            out = chars[..at].iter().collect();
            out.extend(&chars[at + 1..]);
        }
        2 => {
            let end = (at + 1 + r.below(8)).min(chars.len());
            out = chars[..end].iter().collect();
            out.extend(&chars[at..]);
        }
        _ => {
            out = chars[..at].iter().collect();
            out.push(
                r.pick(&["\u{0}", "\u{7}", "\u{1b}", "\u{7f}", "\u{feff}", "\u{200f}"])
                    .chars()
                    .next()
                    .unwrap_or(' '),
            );
            out.extend(&chars[at..]);
        }
    }
    out
}

#[test]
fn generated_documents_parse_the_same_or_are_declined() {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    let mut counts = [0usize; 3];
    for _ in 0..10_000 {
        let text = gen_document(&mut r);
        let outcome = differ(&text);
        counts[outcome as usize] += 1;
    }
    // The generator reaches all three outcomes, in numbers that mean something.
    eprintln!("generated: {counts:?}");
    assert!(counts.iter().all(|&n| n > 400), "outcomes {counts:?}");
}

#[test]
fn mutated_project_texts_parse_the_same_or_are_declined() {
    let mut r = Rng(0x2545_f491_4f6c_dd1d);
    let texts: Vec<String> = project_texts()
        .into_iter()
        .map(|(_, t)| t)
        .chain([corpus::pipeline(7)])
        .filter(|t| t.len() < 4_000)
        .collect();
    let mut counts = [0usize; 3];
    for i in 0..2_000 {
        let mut text = texts[i % texts.len()].clone();
        for _ in 0..1 + r.below(3) {
            text = mutate(&mut r, &text);
        }
        counts[differ(&text) as usize] += 1;
    }
    eprintln!("mutated: {counts:?}");
    assert!(counts.iter().all(|&n| n > 50), "outcomes {counts:?}");
}
