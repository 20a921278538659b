//! The parser on diffs that git wrote (tests/fixtures/diffs, rebuilt by make-fixtures.sh),
//! on hand-made edge cases, and on garbage.

use super::*;

macro_rules! fixture {
    ($name:literal) => {
        include_bytes!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/diffs/",
            $name
        ))
    };
}

fn clean(text: &[u8]) -> Diff {
    let d = parse(text);
    assert!(d.is_clean(), "problems: {:?}", d.problems);
    d
}

fn contents(f: &FileDiff, kind: LineKind) -> Vec<String> {
    f.hunks
        .iter()
        .flat_map(|h| &h.lines)
        .filter(|l| l.kind == kind)
        .map(|l| String::from_utf8_lossy(&l.content).into_owned())
        .collect()
}

#[test]
fn added_file() {
    let d = clean(fixture!("added.diff"));
    assert_eq!(d.files.len(), 1);
    let f = &d.files[0];
    assert_eq!(f.status, FileStatus::Added);
    assert_eq!(f.old_path, None);
    assert_eq!(f.new_path.as_deref(), Some("src/added.rs"));
    assert_eq!(f.new_mode.as_deref(), Some("100644"));
    assert_eq!(f.added_lines(), 3);
    assert_eq!(f.changed, vec![LineRange { start: 1, end: 3 }]);
    let lines: Vec<_> = f.added().map(|(n, l)| (n, l.content.clone())).collect();
    assert_eq!(lines[1], (2, b"    42".to_vec()));
    assert_eq!(
        d.totals(),
        Totals {
            files: 1,
            added: 3,
            deleted: 0
        }
    );
}

#[test]
fn deleted_file() {
    let d = clean(fixture!("deleted.diff"));
    let f = &d.files[0];
    assert_eq!(f.status, FileStatus::Deleted);
    assert_eq!(f.old_path.as_deref(), Some("src/old.rs"));
    assert_eq!(f.new_path, None);
    assert_eq!(f.path(), "src/old.rs");
    assert_eq!(f.deleted_lines(), 2);
    assert!(f.changed.is_empty());
    let old: Vec<_> = f.hunks[0].lines.iter().map(|l| l.old_line).collect();
    assert_eq!(old, vec![Some(1), Some(2)]);
}

#[test]
fn renames() {
    let d = clean(fixture!("rename.diff"));
    assert_eq!(d.files.len(), 2);
    let edited = &d.files[0];
    assert_eq!(edited.status, FileStatus::Renamed);
    assert_eq!(edited.old_path.as_deref(), Some("src/lib.rs"));
    assert_eq!(edited.new_path.as_deref(), Some("src/library.rs"));
    assert_eq!(edited.similarity, Some(86));
    assert_eq!(contents(edited, LineKind::Added), vec!["DELTA"]);
    assert_eq!(edited.changed, vec![LineRange { start: 4, end: 4 }]);
    assert!(edited.in_hunk(7) && !edited.in_hunk(8));
    let pure = &d.files[1];
    assert_eq!(pure.status, FileStatus::Renamed);
    assert_eq!(pure.similarity, Some(100));
    assert_eq!(pure.new_path.as_deref(), Some("src/renamed.rs"));
    assert!(pure.hunks.is_empty());
}

#[test]
fn binary_files() {
    let d = clean(fixture!("binary.diff"));
    assert_eq!(d.files.len(), 2);
    assert!(d.files.iter().all(|f| f.binary && f.hunks.is_empty()));
    assert_eq!(d.files[0].status, FileStatus::Modified);
    assert_eq!(d.files[1].status, FileStatus::Added);
    assert_eq!(d.files[1].path(), "new.bin");
    assert_eq!(d.totals().files, 2);
}

#[test]
fn binary_patch_body_is_skipped() {
    let text = b"diff --git a/b.bin b/b.bin\nnew file mode 100644\nindex 0000000..1111111\n\
GIT binary patch\nliteral 5\nMcmZ?wZ~z1Y00\n\nliteral 0\nHcmV?d00001\n\n\
diff --git a/t.txt b/t.txt\n--- a/t.txt\n+++ b/t.txt\n@@ -1 +1 @@\n-a\n+b\n";
    let d = clean(text);
    assert_eq!(d.files.len(), 2);
    assert!(d.files[0].binary);
    assert_eq!(d.files[0].status, FileStatus::Added);
    assert_eq!(contents(&d.files[1], LineKind::Added), vec!["b"]);
}

#[test]
fn crlf_content() {
    let d = clean(fixture!("crlf.diff"));
    let f = &d.files[0];
    let added: Vec<_> = f.added().map(|(_, l)| (l.content.clone(), l.eol)).collect();
    assert_eq!(
        added,
        vec![(b"TWO".to_vec(), Eol::CrLf), (b"four ".to_vec(), Eol::CrLf)]
    );
    assert_eq!(
        f.changed,
        vec![
            LineRange { start: 2, end: 2 },
            LineRange { start: 4, end: 4 }
        ]
    );
}

#[test]
fn crlf_diff_text() {
    // The same diff after a trip through a CRLF-converting tool: headers still read.
    let text: Vec<u8> = fixture!("added.diff")
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .flat_map(|l| l.iter().copied().chain(*b"\r\n"))
        .collect();
    let d = clean(&text);
    assert_eq!(d.files[0].new_path.as_deref(), Some("src/added.rs"));
    assert_eq!(d.files[0].added_lines(), 3);
}

#[test]
fn no_newline_at_end() {
    let d = clean(fixture!("no-newline.diff"));
    let f = &d.files[0];
    let eols: Vec<_> = f.hunks[0].lines.iter().map(|l| (l.kind, l.eol)).collect();
    assert_eq!(
        eols,
        vec![(LineKind::Deleted, Eol::None), (LineKind::Added, Eol::None)]
    );
    let g = &d.files[1];
    assert_eq!(g.hunks[0].lines[0].eol, Eol::Lf);
    assert_eq!(g.hunks[0].lines[1].eol, Eol::None);
    assert_eq!(g.changed, vec![LineRange { start: 2, end: 2 }]);
}

#[test]
fn quoted_paths() {
    let d = clean(fixture!("quoted-path.diff"));
    let paths: Vec<_> = d.files.iter().map(FileDiff::path).collect();
    assert_eq!(paths, vec!["café.txt", "sp ace.txt", "tab\there.txt"]);
    assert!(d.files.iter().all(|f| f.status == FileStatus::Modified));
}

#[test]
fn mode_change() {
    let d = clean(fixture!("mode-change.diff"));
    let f = &d.files[0];
    assert_eq!(f.status, FileStatus::Modified);
    assert_eq!(
        (f.old_mode.as_deref(), f.new_mode.as_deref()),
        (Some("100644"), Some("100755"))
    );
    assert_eq!(f.path(), "script.sh");
    assert!(f.hunks.is_empty());
}

#[test]
fn multiple_hunks() {
    let d = clean(fixture!("multi-hunk.diff"));
    let f = &d.files[0];
    assert_eq!(f.hunks.len(), 4);
    assert_eq!(
        f.changed,
        vec![
            LineRange { start: 5, end: 5 },
            LineRange { start: 29, end: 29 },
            LineRange { start: 40, end: 40 }
        ]
    );
    assert!(f.is_changed_line(29) && !f.is_changed_line(28) && !f.is_changed_line(41));
    // The third hunk starts at new line 26 after a deletion shifted it.
    let third = &f.hunks[2];
    assert_eq!((third.old_start, third.new_start), (27, 26));
    assert_eq!(
        d.totals(),
        Totals {
            files: 1,
            added: 3,
            deleted: 3
        }
    );
}

#[test]
fn hunk_context_and_merged_ranges() {
    let text = b"--- a/f.rs\n+++ b/f.rs\n@@ -1,2 +1,5 @@ fn main() {\n a\n+b\n+c\n+d\n b\n";
    let d = clean(text);
    let f = &d.files[0];
    assert_eq!(f.hunks[0].context, "fn main() {");
    assert_eq!(f.changed, vec![LineRange { start: 2, end: 4 }]);
    assert_eq!(f.status, FileStatus::Modified);
}

#[test]
fn lines_that_look_like_headers_inside_a_hunk() {
    // A deleted "-- x" line and an added "++ y" line are content, as the counts say.
    let text = b"diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n--- x\n+++ y\n \n";
    let d = clean(text);
    let f = &d.files[0];
    assert_eq!(contents(f, LineKind::Deleted), vec!["-- x"]);
    assert_eq!(contents(f, LineKind::Added), vec!["++ y"]);
    assert_eq!(contents(f, LineKind::Context), vec![""]);
}

#[test]
fn plain_unified_diff_with_several_files() {
    let text = b"--- a/x\t2024-01-01\n+++ b/x\t2024-01-02\n@@ -1 +1 @@\n-1\n+2\n\
--- /dev/null\n+++ b/y\n@@ -0,0 +1 @@\n+new\n";
    let d = clean(text);
    assert_eq!(d.files.len(), 2);
    assert_eq!(d.files[0].path(), "x");
    assert_eq!(d.files[1].status, FileStatus::Added);
    assert_eq!(d.files[1].path(), "y");
}

#[test]
fn preamble_and_signature_are_ignored() {
    let mut text = b"From 123 Mon Sep 17 00:00:00 2001\nSubject: [PATCH] x\n\n---\n".to_vec();
    text.extend_from_slice(fixture!("added.diff"));
    text.extend_from_slice(b"-- \n2.45.0\n\n");
    let d = clean(&text);
    assert_eq!(d.files.len(), 1);
    assert_eq!(d.files[0].added_lines(), 3);
}

#[test]
fn truncated_hunk_keeps_what_was_read() {
    let text = b"diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n";
    let d = parse(text);
    assert_eq!(d.files.len(), 1);
    assert_eq!(d.files[0].hunks[0].lines.len(), 2);
    assert_eq!(
        d.problems,
        vec![DiffProblem::TruncatedHunk {
            line: 6,
            missing_old: 1,
            missing_new: 2
        }]
    );
}

#[test]
fn truncated_hunk_followed_by_next_file() {
    let text = b"diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n\
diff --git a/g b/g\n--- a/g\n+++ b/g\n@@ -1 +1 @@\n-x\n+y\n";
    let d = parse(text);
    assert_eq!(d.files.len(), 2);
    assert_eq!(contents(&d.files[1], LineKind::Added), vec!["y"]);
    assert!(matches!(
        d.problems[..],
        [DiffProblem::TruncatedHunk { line: 6, .. }]
    ));
}

#[test]
fn problems_are_reported() {
    let cases: &[(&[u8], DiffProblem)] = &[
        (
            b"@@ -1 +1 @@\n+x\n",
            DiffProblem::HunkOutsideFile { line: 1 },
        ),
        (
            b"diff --git a/f b/f\n@@ -1 +x @@\n+x\n",
            DiffProblem::BadHunkHeader { line: 2 },
        ),
        (
            b"diff --git a/f b/f\nwhat is this\n",
            DiffProblem::UnexpectedLine { line: 2 },
        ),
        (b"diff --git \"a/f\n", DiffProblem::BadPath { line: 1 }),
        (
            b"diff --cc f\n@@@ -1 -1 +1 @@@\n",
            DiffProblem::CombinedDiff { line: 1 },
        ),
    ];
    for (text, want) in cases {
        let d = parse(text);
        assert_eq!(
            d.problems.first(),
            Some(want),
            "{}",
            String::from_utf8_lossy(text)
        );
    }
}

#[test]
fn problems_are_capped() {
    let mut text = b"diff --git a/f b/f\n".to_vec();
    for _ in 0..1000 {
        text.extend_from_slice(b"junk\n");
    }
    let d = parse(&text);
    assert_eq!(d.problems.len(), 101);
    assert_eq!(
        d.problems.last(),
        Some(&DiffProblem::TooManyProblems { more: 900 })
    );
}

#[test]
fn cut_keeps_files_under_prefix() {
    let text = fixture!("mixed.diff");
    let cut = cut_to_path(text, "src");
    let d = clean(&cut);
    let paths: Vec<_> = d.files.iter().map(FileDiff::path).collect();
    // docs/moved.rs came from src/moved.rs: one side under the prefix keeps it.
    assert_eq!(
        paths,
        vec!["docs/moved.rs", "src/main.rs", "src/nested/file.rs"]
    );
    let docs = clean(&cut_to_path(text, "docs/"));
    assert_eq!(docs.files.len(), 2);
    assert_eq!(cut_to_path(text, ""), text.to_vec());
    assert!(cut_to_path(text, "nowhere").is_empty());
    // Each kept section is the original text: parsing the cut gives the same files.
    let whole = clean(text);
    let main = whole.file("src/main.rs").unwrap();
    let cut_main = d.file("src/main.rs").unwrap();
    assert_eq!(main.hunks, cut_main.hunks);
}

#[test]
fn span_covers_each_file() {
    let text = fixture!("mixed.diff");
    let d = clean(text);
    assert_eq!(d.files.first().unwrap().span.start, 0);
    assert_eq!(d.files.last().unwrap().span.end, text.len());
    for w in d.files.windows(2) {
        assert_eq!(w[0].span.end, w[1].span.start);
    }
}

#[test]
fn every_fixture_parses_cleanly() {
    let all: &[&[u8]] = &[
        fixture!("added.diff"),
        fixture!("deleted.diff"),
        fixture!("rename.diff"),
        fixture!("binary.diff"),
        fixture!("crlf.diff"),
        fixture!("no-newline.diff"),
        fixture!("quoted-path.diff"),
        fixture!("mode-change.diff"),
        fixture!("multi-hunk.diff"),
        fixture!("mixed.diff"),
        fixture!("rules.diff"),
    ];
    for text in all {
        clean(text);
    }
}

/// A small deterministic generator (xorshift), so the garbage is the same on every run.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[test]
fn garbage_never_panics() {
    // Pieces that steer the parser into its states, mixed with random bytes.
    const PIECES: &[&[u8]] = &[
        b"diff --git a/x b/x\n",
        b"diff --git \"a/\\3",
        b"--- a/x\n+++ b/x\n",
        b"--- /dev/null\n",
        b"+++ \"b/\\",
        b"@@ -1,3 +1,4 @@\n",
        b"@@ -4294967295,4294967295 +4294967295,4294967295 @@\n",
        b"@@ -0,0 +1 @@",
        b"+added\n",
        b"-removed\n",
        b" ctx\n",
        b"\\ No newline at end of file\n",
        b"Binary files a/x and /dev/null differ\n",
        b"GIT binary patch\n",
        b"rename from \"q",
        b"similarity index 999%\n",
        b"diff --cc x\n",
        b"\r\n",
        b"\n",
        b"-- \n",
    ];
    let mut g = Gen(0x9E37_79B9_7F4A_7C15);
    for _ in 0..3000 {
        let mut text = Vec::new();
        for _ in 0..g.below(24) {
            if g.below(3) == 0 {
                let n = g.below(12);
                text.extend((0..n).map(|_| g.next() as u8));
            } else {
                text.extend_from_slice(PIECES[g.below(PIECES.len())]);
            }
        }
        let d = parse(&text);
        for f in &d.files {
            assert!(f.span.start <= f.span.end && f.span.end <= text.len());
            let _ = (f.added_lines(), f.is_changed_line(1), f.in_hunk(1));
        }
        let _ = d.totals();
        let cut = cut_to_path(&text, "x");
        assert!(cut.len() <= text.len());
    }
}

#[test]
fn fixture_diffs_cut_at_every_byte_never_panic() {
    let text = fixture!("rules.diff");
    for end in 0..text.len() {
        let _ = parse(&text[..end]);
    }
}
