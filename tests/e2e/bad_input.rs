//! Hostile and broken files: each gets a diagnostic and exit 1 or 2, never a panic or a hang.
//! A review.kdl can come from a pull request, so these are security properties.

use crate::support::{Run, reviewflow};

fn check_bytes(bytes: &[u8]) -> Run {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("input.kdl");
    std::fs::write(&file, bytes).expect("write");
    reviewflow(&["check", file.to_str().expect("utf-8 path")])
}

fn assert_no_panic(run: &Run) {
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    assert!(run.code == 1 || run.code == 2, "{}", run.transcript());
}

#[test]
fn not_utf8() {
    let run = check_bytes(b"pipeline \"a\"\nstage \"\xff\xfe\" uses=\"run\"\n");
    assert_no_panic(&run);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("not UTF-8"), "{}", run.stderr);
    assert!(
        run.stderr.contains(":2:8"),
        "points at the first bad byte: {}",
        run.stderr
    );
}

#[test]
fn empty_file() {
    let run = check_bytes(b"");
    assert_no_panic(&run);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("needs a `pipeline \"name\"` node"),
        "{}",
        run.stderr
    );
}

#[test]
fn nesting_100_000_levels_deep() {
    let text = format!(
        "pipeline \"a\"\n{}{}",
        "a {".repeat(100_000),
        "}".repeat(100_000)
    );
    let run = check_bytes(text.as_bytes());
    assert_no_panic(&run);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("nest deeper than"), "{}", run.stderr);
}

#[test]
fn nested_slashdash_children_blocks() {
    // Each level doubles the kdl parser's time: 40 levels would never finish.
    let text = format!("pipeline \"a\"\n{}{}", "a /-{ ".repeat(40), "}".repeat(40));
    assert!(text.len() < 300);
    let run = check_bytes(text.as_bytes());
    assert_no_panic(&run);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("slash-dashed"), "{}", run.stderr);
}

#[test]
fn a_ten_megabyte_string() {
    let text = format!("pipeline \"{}\"\n", "x".repeat(10 << 20));
    let run = check_bytes(text.as_bytes());
    assert_no_panic(&run);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("at most"), "{}", run.stderr);
}

#[test]
fn a_long_string_under_the_file_limit() {
    let text = format!(
        "pipeline \"a\"\ninput \"x\" default=\"{}\"\n",
        "x".repeat(1 << 20)
    );
    let run = check_bytes(text.as_bytes());
    assert_no_panic(&run);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("strings may be at most"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_node_named_like_a_stage_kind_with_no_arguments() {
    let run = check_bytes(b"pipeline \"a\"\nstage\n\"std/gather\"\n");
    assert_no_panic(&run);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("needs a name"), "{}", run.stderr);
    assert!(
        run.stderr.contains("unknown node `std/gather`"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_reference_to_itself() {
    let run = check_bytes(
        b"pipeline \"a\"\nstage \"s\" uses=\"std/scan\" when=\"s.clean\" {\n    target \"s.hits\"\n}\n",
    );
    assert_no_panic(&run);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("cycle: s → s"), "{}", run.stderr);
}

#[test]
fn deeply_nested_condition() {
    let cond = format!("{}a.ok{}", "(".repeat(5000), ")".repeat(5000));
    let text = format!(
        "pipeline \"a\"\nstage \"a\" uses=\"std/gather\"\nstage \"b\" uses=\"std/gather\" when=\"{cond}\"\n"
    );
    let run = check_bytes(text.as_bytes());
    assert_no_panic(&run);
    assert!(run.stderr.contains("nested deeper"), "{}", run.stderr);
}

#[test]
fn random_garbage_never_panics() {
    // A fixed-seed generator over KDL-ish fragments.
    let fragments: &[&str] = &[
        "pipeline",
        "stage",
        "\"s\"",
        "uses=",
        "\"std/seal\"",
        "{",
        "}",
        "/-",
        "#true",
        "\"a.b\"",
        "when=",
        "\"!\"",
        "key",
        "\n",
        " ",
        "\"{x}\"",
        "#\"raw\"#",
        "bind",
        "a=1",
        "needs",
        "(",
        ")",
        ";",
        "\\",
        "/*",
        "*/",
        "\"\"\"",
        "0x",
        "1e999",
        "timeout=\"9999999999999999999d\"",
    ];
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    for _ in 0..60 {
        let mut text = String::new();
        for _ in 0..40 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            text.push_str(fragments[(state % fragments.len() as u64) as usize]);
            text.push(' ');
        }
        let run = check_bytes(text.as_bytes());
        assert!(
            !run.stderr.contains("panicked"),
            "input: {text}\n{}",
            run.stderr
        );
        assert!(
            (0..=2).contains(&run.code),
            "input: {text}\n{}",
            run.transcript()
        );
    }
}

/// A KDL v1 raw string gets the v1-to-v2 hint, as a bare `true` does.
#[test]
fn a_kdl_v1_raw_string_gets_a_v2_hint() {
    let run = reviewflow(&["check", "tests/fixtures/pipelines/kdl-v1-raw-string.kdl"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("KDL v2 writes raw strings `#\"…\"#`"),
        "{}",
        run.stderr
    );
    insta::assert_snapshot!("kdl_v1_raw_string", run.transcript());
}

/// A stray `}` says that no block is open, and which block closed last and where.
#[test]
fn a_stray_closing_brace_names_the_last_block_closed() {
    let run = reviewflow(&["check", "tests/fixtures/pipelines/stray-brace.kdl"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .contains("the last block, `stage \"build\"` (line 2), was closed on line 4"),
        "{}",
        run.stderr
    );
    insta::assert_snapshot!("stray_brace", run.transcript());
    let run = reviewflow(&["check", "tests/fixtures/pipelines/stray-brace-no-block.kdl"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("no block was opened before it"),
        "{}",
        run.stderr
    );
    insta::assert_snapshot!("stray_brace_no_block", run.transcript());
}
