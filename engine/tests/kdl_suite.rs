//! The official KDL v2 test suite (`kdl-suite/`, vendored as the kdl crate 6.7.1 ships it: see
//! `kdl-suite/PROVENANCE.md`) against each way reviewflow reads a file: the fast path alone,
//! the kdl crate alone, and the whole syntax layer (pre-scan, fast path, kdl). A valid case must
//! parse to the suite's expected document; an invalid one must be refused.
//!
//! The kdl crate's known divergences from KDL v2 are listed below with what reviewflow does
//! about each (`docs/language.md`, *KDL v2 notes*); the test fails if the list is stale either
//! way.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use kdl::{KdlDocument, KdlIdentifier, KdlValue};
use reviewflow_engine::syntax::{Limits, parse_document, parse_fast};

/// Cases the kdl crate gets wrong, and how the syntax layer answers them: `true` when it
/// accepts the case, `false` when it refuses it.
const KDL_DIVERGENCES: &[(&str, bool)] = &[
    // `#"""` without a newline opens no multi-line raw string; kdl reads a single-line one
    // holding `""one line""`. The pre-scan refuses it.
    ("multiline_raw_string_single_line_err_fail.kdl", false),
    // U+007F is forbidden anywhere; kdl lets it through. The pre-scan refuses it.
    ("unicode_delete_fail.kdl", false),
];

/// Cases where the vendored revision of the suite is behind the specification, and what the
/// specification says (the syntax layer follows it): KDL v2 later allowed a slashdash straight
/// after a value (`node "string"/-1`).
const SUITE_BEHIND_SPEC: &[(&str, bool)] = &[("zero_space_before_slashdash_arg_fail.kdl", true)];

/// Cases of the later revision of the suite that this one lacks: name, input, expected.
const LATER_CASES: &[(&str, &str, Option<&str>)] = &[
    (
        "zero_space_before_slashdash_arg",
        "node \"string\"/-1\n",
        Some("node string\n"),
    ),
    (
        "zero_space_before_slashdash_children",
        "node \"string\"/-{}\nnode \"string\" {}/-{}\n",
        Some("node string\nnode string\n"),
    ),
    (
        "zero_space_before_slashdash_prop",
        "node \"string\"/-foo=1\n",
        Some("node string\n"),
    ),
];

fn suite() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kdl-suite")
}

/// What a case asks.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Expect {
    /// Parsed, to this canonical document.
    Document(String),
    /// Parsed: the suite gives no document (`hex.kdl`, a number past 64 bits).
    Valid,
    /// Refused (`…_fail.kdl`).
    Refused,
}

/// Every case: name, input text, what it asks.
fn cases() -> Vec<(String, String, Expect)> {
    let root = suite();
    let mut names: Vec<String> = std::fs::read_dir(root.join("input"))
        .expect("the vendored suite")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut out = Vec::new();
    for name in names {
        let bytes = std::fs::read(root.join("input").join(&name)).expect("a case");
        let Ok(text) = String::from_utf8(bytes) else {
            panic!("{name}: not UTF-8");
        };
        let expected = std::fs::read_to_string(root.join("expected_kdl").join(&name)).ok();
        let expect = match expected {
            Some(doc) => Expect::Document(doc.replace("\r\n", "\n")),
            None if name.ends_with("_fail.kdl") => Expect::Refused,
            None => Expect::Valid,
        };
        out.push((name, text, expect));
    }
    for (name, input, expected) in LATER_CASES {
        let expect = expected.map_or(Expect::Refused, |e| Expect::Document(e.to_string()));
        out.push((format!("{name}.kdl"), input.to_string(), expect));
    }
    out
}

/// The suite's canonical form (its README): comments and formatting dropped, strings and
/// identifiers plain, duplicate properties reduced to the last, empty children removed.
fn canonical(mut doc: KdlDocument) -> String {
    doc.autoformat_no_comments();
    normalise(&mut doc);
    doc.to_string()
}

fn normalise(doc: &mut KdlDocument) {
    for node in doc.nodes_mut() {
        node.name_mut().clear_format();
        let mut last: HashMap<KdlIdentifier, usize> = HashMap::new();
        for (i, entry) in node.entries().iter().enumerate() {
            if let Some(name) = entry.name() {
                last.insert(name.clone(), i);
            }
        }
        let entries: Vec<_> = node
            .entries()
            .iter()
            .enumerate()
            .filter(|(i, e)| e.name().is_none_or(|n| last.get(n) == Some(i)))
            .map(|(_, e)| e.clone())
            .collect();
        *node.entries_mut() = entries;
        for entry in node.entries_mut() {
            if let Some(s) = entry.value().as_string() {
                *entry.value_mut() = KdlValue::String(s.to_string());
            }
            if let Some(name) = entry.name_mut() {
                name.clear_format();
            }
        }
        let empty = node.children().is_some_and(|c| c.nodes().is_empty());
        if empty {
            *node.children_mut() = None;
        }
        if let Some(children) = node.children_mut() {
            normalise(children);
        }
    }
}

/// Whether `got` answers the case: the expected document, or a refusal.
fn verdict(got: Option<KdlDocument>, expected: &Expect) -> Result<(), String> {
    match (got, expected) {
        (Some(doc), Expect::Document(want)) => {
            let have = canonical(doc);
            if &have == want {
                Ok(())
            } else {
                Err(format!("parsed to {have:?}, expected {want:?}"))
            }
        }
        (Some(_), Expect::Valid) | (None, Expect::Refused) => Ok(()),
        (Some(doc), Expect::Refused) => Err(format!("accepted (as {:?})", canonical(doc))),
        (None, _) => Err("refused".into()),
    }
}

#[test]
fn the_suite_is_all_there() {
    let cases = cases();
    let valid = cases.iter().filter(|c| c.2 != Expect::Refused).count();
    // kdl 6.7.1's revision: 320 inputs, 233 of them valid; and the three later cases.
    assert_eq!((cases.len(), valid), (323, 236));
    for file in ["LICENSE", "NOTICE", "PROVENANCE.md", "README.md"] {
        assert!(suite().join(file).is_file(), "{file}");
    }
}

/// Where the fast path accepts a case, the case is valid and the document the expected one;
/// it never accepts an invalid case.
#[test]
fn fast_path_agrees_with_the_suite() {
    let mut accepted = 0;
    for (name, text, expected) in cases() {
        let Some(doc) = parse_fast(&text) else {
            continue;
        };
        accepted += 1;
        if let Err(e) = verdict(Some(doc), &expected) {
            panic!("{name}: fast path {e}");
        }
    }
    // It handles the common subset only; most of the suite is about the rest.
    assert!(
        accepted >= 50,
        "the fast path accepted only {accepted} cases"
    );
}

/// kdl on its own: exactly the divergences listed.
#[test]
fn kdl_diverges_only_where_listed() {
    let mut diverging = BTreeMap::new();
    for (name, text, expected) in cases() {
        if SUITE_BEHIND_SPEC.iter().any(|(n, _)| *n == name) {
            continue;
        }
        if let Err(e) = verdict(KdlDocument::parse_v2(&text).ok(), &expected) {
            diverging.insert(name, e);
        }
    }
    let listed: Vec<&str> = KDL_DIVERGENCES.iter().map(|(n, _)| *n).collect();
    let later: Vec<String> = LATER_CASES
        .iter()
        .map(|(n, ..)| format!("{n}.kdl"))
        .collect();
    let found: Vec<&str> = diverging
        .keys()
        .map(String::as_str)
        .filter(|n| !later.iter().any(|l| l == n))
        .collect();
    assert_eq!(found, listed, "kdl's divergences: {diverging:#?}");
}

/// The syntax layer as `check` and `run` use it: every case as the specification says,
/// divergences decided as listed.
#[test]
fn syntax_layer_follows_the_specification() {
    let mut wrong = Vec::new();
    for (name, text, expected) in cases() {
        let decided = KDL_DIVERGENCES
            .iter()
            .chain(SUITE_BEHIND_SPEC)
            .find(|(n, _)| *n == name)
            .map(|&(_, accept)| accept);
        let got = parse_document(&text, &Limits::default()).ok();
        let result = match decided {
            Some(accept) if accept != got.is_some() => Err(format!(
                "{} though decided otherwise",
                if got.is_some() { "accepted" } else { "refused" }
            )),
            Some(_) => Ok(()),
            None => verdict(got, &expected),
        };
        if let Err(e) = result {
            wrong.push(format!("{name}: {e}"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}
