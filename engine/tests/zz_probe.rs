use kdl::KdlDocument;
use std::time::Instant;
fn run(name: &str, text: String) {
    let t = text.clone();
    let h = std::thread::Builder::new()
        .stack_size(8 << 20)
        .spawn(move || {
            let s = Instant::now();
            let r = KdlDocument::parse_v2(&t);
            (r.is_ok(), r.err().map(|e| e.diagnostics.len()), s.elapsed())
        })
        .unwrap();
    match h.join() {
        Ok(r) => eprintln!("{name}: {r:?}"),
        Err(_) => eprintln!("{name}: PANIC"),
    }
}
#[test]
fn probe() {
    let n = 1400;
    let nest = |k: usize| format!("{}{}", "a {".repeat(k), "}".repeat(k));
    for (name, pre) in [
        ("eq-string", format!("=\"x {}\"", "{ ".repeat(n))),
        ("badnum-string", format!("a 1x\"{}\"", "{ ".repeat(n))),
        ("badescape", format!("a \"\\q {}\"", "{ ".repeat(n))),
        ("unterminated", format!("a \"x {}", "{ ".repeat(n))),
        ("nl-in-string", format!("a \"x\n{}\"", "a { ".repeat(n))),
        ("ml-not-nl", format!("a \"\"\"x {}\"\"\"", "{ ".repeat(n))),
        (
            "dedent",
            format!("a \"\"\"\n  x\n y {}\n  \"\"\"", "{ ".repeat(n)),
        ),
        ("eq-raw", format!("=#\"x {}\"#", "{ ".repeat(n))),
        ("type-string", format!("a (x\"{}\")1", "{ ".repeat(n))),
        ("keyword-string", format!("a #true\"{}\"", "{ ".repeat(n))),
        ("string-string", format!("a \"a\"\"{}\"", "{ ".repeat(n))),
        ("close-string", format!("}}\"{}\"", "{ ".repeat(n))),
        ("semicolon-eq", format!("a; =\"{}\"", "{ ".repeat(n))),
        ("comment-eq", format!("=/*{}*/", "{ ".repeat(n))),
    ] {
        if std::env::var("CASE").ok().as_deref() != Some(name) {
            continue;
        }
        run(name, pre);
    }
    let _ = nest;
    for w in ["true", "false", "null", "inf", "-inf", "nan"] {
        for t in [
            format!("a {w}"),
            format!("a k={w}"),
            format!("{w} 1"),
            format!("a ({w})1"),
            format!("a {w}=1"),
        ] {
            eprintln!("{t:?} ok={}", KdlDocument::parse_v2(&t).is_ok());
        }
    }
    for t in [
        "a {} /-x",
        "a {} /-k=1",
        "a {}/-{}",
        "a {} /-{}",
        "node \"string\"/-1",
        "a \u{7f}b",
        "a \"\u{7f}\"",
        "// \u{202e}\na",
        "a\n\u{feff}b",
        "a #-inf",
        "a {} b",
        "\"\"\"\"",
        "a \"\"\"\"\"\"",
    ] {
        eprintln!("{t:?} ok={}", KdlDocument::parse_v2(t).is_ok());
    }
}
