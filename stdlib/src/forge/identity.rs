//! Finding identity across pushes: the fingerprint recipe (`docs/findings.md`).
//!
//! A finding on a line is identified by its rule, its path and a normalised snippet of its lines
//! at the reviewed head (whitespace removed, so a reindent keeps it; no line number, so a line
//! move keeps it; no message, so a model reviewer's rewording keeps it). A finding about the
//! whole file, or one whose file cannot be read, by its rule, path and normalised message.
//! Findings with equal parts are numbered by their position, so no two findings of one review
//! share a fingerprint.
//!
//! Files are read from the head commit's git objects ([`read_head_files`]), never the working
//! tree, never through a symbolic link, within bounds.

use std::collections::BTreeMap;
use std::path::{Component, Path};

use reviewflow_engine::hex::encode as hex;
use sha2::{Digest, Sha256};

use super::review::ReviewFinding;
use crate::git::{GitError, Sha, git_command, spawn_bounded};

/// The recipe's name and version, the first part hashed: a new recipe gives new fingerprints.
pub const RECIPE: &str = "reviewflow-finding/1";
/// Hex digits of a fingerprint (the first 128 bits of the SHA-256).
pub const FINGERPRINT_HEX: usize = 32;
/// Most lines of a finding that go into its snippet.
pub const MAX_SNIPPET_LINES: u32 = 16;
/// A snippet shorter than this (in characters, whitespace removed) also takes the nearest
/// non-blank line above and below.
pub const MIN_SNIPPET_CHARS: usize = 8;
/// Most files read at the head for one review.
pub const MAX_FILES: usize = 256;
/// Largest file read.
pub const MAX_FILE_BYTES: u64 = 1 << 20;
/// Most bytes read in all.
pub const MAX_TOTAL_BYTES: u64 = 8 << 20;
/// Paths per `git ls-tree` call, so that no command line grows without bound.
const PATHS_PER_CALL: usize = 64;

/// The text of files at the reviewed head, by path; a path missing from it is not readable.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HeadFiles {
    files: BTreeMap<String, Vec<String>>,
}

impl HeadFiles {
    /// Files given as text (tests, and forges that read files otherwise).
    pub fn from_texts<'a>(texts: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        HeadFiles {
            files: texts
                .into_iter()
                .map(|(path, text)| (path.to_owned(), lines_of(text.as_bytes())))
                .collect(),
        }
    }

    /// How many files were read.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    fn lines(&self, path: &str) -> Option<&[String]> {
        self.files.get(path).map(Vec::as_slice)
    }
}

fn lines_of(bytes: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(bytes)
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l).to_owned())
        .collect()
}

/// Sets `fingerprint` on every finding of `findings`, from `files` (see the module's doc).
pub fn fingerprint_all(findings: &mut [ReviewFinding], files: &HeadFiles) {
    let keys: Vec<Key> = findings.iter().map(|f| key_of(f, files)).collect();
    // Equal keys are numbered in the order of their line, end line and message.
    let mut order: Vec<usize> = (0..findings.len()).collect();
    order.sort_by(|&a, &b| {
        keys[a].cmp(&keys[b]).then_with(|| {
            let (fa, fb) = (&findings[a], &findings[b]);
            (fa.line, fa.end_line, &fa.message).cmp(&(fb.line, fb.end_line, &fb.message))
        })
    });
    let mut previous: Option<&Key> = None;
    let mut occurrence = 0u64;
    let mut prints = vec![String::new(); findings.len()];
    for &i in &order {
        occurrence = if previous == Some(&keys[i]) {
            occurrence + 1
        } else {
            0
        };
        previous = Some(&keys[i]);
        prints[i] = keys[i].fingerprint(occurrence);
    }
    for (finding, print) in findings.iter_mut().zip(prints) {
        finding.fingerprint = Some(print);
    }
}

/// The fingerprint of each finding of the line recipe without its path (`None` for the message
/// recipe): how a finding is recognised in a file that was renamed or moved. Equal parts are
/// numbered across files, in the order of path, line, end line and message. Only the line
/// recipe: a message (`` `TODO` added``) is too common to say that two files hold one finding.
pub fn moved_prints(findings: &[ReviewFinding], files: &HeadFiles) -> Vec<Option<String>> {
    let keys: Vec<Option<Key>> = findings
        .iter()
        .map(|f| {
            let key = key_of(f, files);
            (key.recipe == "line").then(|| Key {
                recipe: "moved",
                path: String::new(),
                ..key
            })
        })
        .collect();
    let mut order: Vec<usize> = (0..findings.len()).filter(|&i| keys[i].is_some()).collect();
    order.sort_by(|&a, &b| {
        keys[a].cmp(&keys[b]).then_with(|| {
            let (fa, fb) = (&findings[a], &findings[b]);
            (&fa.path, fa.line, fa.end_line, &fa.message).cmp(&(
                &fb.path,
                fb.line,
                fb.end_line,
                &fb.message,
            ))
        })
    });
    let mut prints = vec![None; findings.len()];
    let mut previous: Option<&Key> = None;
    let mut occurrence = 0u64;
    for &i in &order {
        let Some(key) = keys[i].as_ref() else {
            continue;
        };
        occurrence = if previous == Some(key) {
            occurrence + 1
        } else {
            0
        };
        previous = Some(key);
        prints[i] = Some(key.fingerprint(occurrence));
    }
    prints
}

/// The parts of a fingerprint before the occurrence number.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    recipe: &'static str,
    rule: String,
    path: String,
    text: String,
}

impl Key {
    fn fingerprint(&self, occurrence: u64) -> String {
        let mut hash = Sha256::new();
        for part in [
            RECIPE,
            self.recipe,
            &self.rule,
            &self.path,
            &self.text,
            &occurrence.to_string(),
        ] {
            hash.update(part.as_bytes());
            hash.update([0u8]);
        }
        let mut print = hex(&hash.finalize());
        print.truncate(FINGERPRINT_HEX);
        print
    }
}

fn key_of(f: &ReviewFinding, files: &HeadFiles) -> Key {
    let snippet = f
        .line
        .and_then(|line| Some((line, files.lines(&f.path)?)))
        .and_then(|(line, lines)| snippet(lines, line, f.end_line));
    let (recipe, text) = match snippet {
        Some(text) => ("line", text),
        None => ("message", normalise_message(&f.message)),
    };
    Key {
        recipe,
        rule: f.rule.clone(),
        path: f.path.clone(),
        text,
    }
}

/// The normalised text of lines `line..=end` (1-based) of `lines`, with the nearest non-blank
/// neighbours when it is short; `None` when `line` is not a line of the file.
fn snippet(lines: &[String], line: u32, end: Option<u32>) -> Option<String> {
    let first = usize::try_from(line).ok()?.checked_sub(1)?;
    if first >= lines.len() {
        return None;
    }
    let last = end
        .filter(|e| *e >= line)
        .unwrap_or(line)
        .min(line.saturating_add(MAX_SNIPPET_LINES - 1));
    let last = usize::try_from(last)
        .map_or(first, |l| l - 1)
        .min(lines.len() - 1);
    let own: Vec<String> = lines[first..=last]
        .iter()
        .map(|l| squeeze(l))
        .filter(|l| !l.is_empty())
        .collect();
    let mut text = own.join("\n");
    if text.chars().count() < MIN_SNIPPET_CHARS {
        let above = lines[..first]
            .iter()
            .rev()
            .map(|l| squeeze(l))
            .find(|l| !l.is_empty());
        let below = lines[last + 1..]
            .iter()
            .map(|l| squeeze(l))
            .find(|l| !l.is_empty());
        text = format!(
            "{}\n{text}\n{}",
            above.unwrap_or_default(),
            below.unwrap_or_default()
        );
    }
    Some(text)
}

/// `line` without any whitespace.
fn squeeze(line: &str) -> String {
    line.chars().filter(|c| !c.is_whitespace()).collect()
}

/// `message` with each run of whitespace made one space, the ends trimmed.
pub fn normalise_message(message: &str) -> String {
    message.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether `path` may name a file of a commit: relative, no `.`/`..` component, no empty
/// component, no control character.
fn is_tree_path(path: &str) -> bool {
    !path.is_empty()
        && path.len() <= crate::git::MAX_PATH
        && !path.chars().any(char::is_control)
        && !path.starts_with('/')
        && !path.ends_with('/')
        && !path.contains("//")
        && Path::new(path)
            .components()
            .all(|c| matches!(c, Component::Normal(_)))
}

/// The regular files among `paths` at commit `head` of the repository at `repo`, read from its
/// objects with `git ls-tree -l` and `git cat-file blob`: a symbolic link, a submodule, a file
/// over [`MAX_FILE_BYTES`], files past [`MAX_FILES`] or [`MAX_TOTAL_BYTES`] (in path order), and
/// a path that breaks [`is_tree_path`] are left out. An error (the head is not in the
/// repository, git fails) leaves out every file not read yet: the findings then use the message
/// recipe, and the caller may say so.
pub fn read_head_files<'a>(
    repo: &Path,
    head: &Sha,
    paths: impl IntoIterator<Item = &'a str>,
) -> (HeadFiles, Option<GitError>) {
    let mut wanted: Vec<&str> = paths.into_iter().filter(|p| is_tree_path(p)).collect();
    wanted.sort_unstable();
    wanted.dedup();
    wanted.truncate(MAX_FILES);
    let mut files = HeadFiles::default();
    let mut total = 0u64;
    for chunk in wanted.chunks(PATHS_PER_CALL) {
        let entries = match tree_entries(repo, head, chunk) {
            Ok(entries) => entries,
            Err(e) => return (files, Some(e)),
        };
        for entry in entries {
            if !matches!(entry.mode.as_str(), "100644" | "100755")
                || entry.kind != "blob"
                || entry.size > MAX_FILE_BYTES
                || total.saturating_add(entry.size) > MAX_TOTAL_BYTES
                || !chunk.contains(&entry.path.as_str())
            {
                continue;
            }
            match blob(repo, &entry.object) {
                Ok(bytes) => {
                    total += bytes.len() as u64;
                    files.files.insert(entry.path, lines_of(&bytes));
                }
                Err(e) => return (files, Some(e)),
            }
        }
    }
    (files, None)
}

struct TreeEntry {
    mode: String,
    kind: String,
    object: String,
    size: u64,
    path: String,
}

/// `git ls-tree -l -z --full-tree <head> -- :(literal)<path>…`, parsed.
fn tree_entries(repo: &Path, head: &Sha, paths: &[&str]) -> Result<Vec<TreeEntry>, GitError> {
    let mut cmd = git_command(repo, "ls-tree");
    cmd.args([
        "-l",
        "-z",
        "--full-tree",
        "--end-of-options",
        head.as_str(),
        "--",
    ]);
    cmd.args(paths.iter().map(|p| format!(":(literal){p}")));
    let ran = spawn_bounded(cmd, "ls-tree", 1 << 20, 0)?;
    if !ran.status.success() {
        return Err(GitError::Failed {
            subcommand: "ls-tree".to_owned(),
            code: ran.status.code(),
            stderr: String::from_utf8_lossy(&ran.stderr).trim().to_owned(),
        });
    }
    let mut entries = Vec::new();
    for record in ran.stdout.split(|b| *b == 0).filter(|r| !r.is_empty()) {
        let text = String::from_utf8_lossy(record);
        let Some((meta, path)) = text.split_once('\t') else {
            continue;
        };
        let mut parts = meta.split_whitespace();
        let (Some(mode), Some(kind), Some(object), Some(size)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        entries.push(TreeEntry {
            mode: mode.to_owned(),
            kind: kind.to_owned(),
            object: object.to_owned(),
            // A submodule's size is `-`: never read.
            size: size.parse().unwrap_or(u64::MAX),
            path: path.to_owned(),
        });
    }
    Ok(entries)
}

/// `git cat-file blob <object>`, at most [`MAX_FILE_BYTES`].
fn blob(repo: &Path, object: &str) -> Result<Vec<u8>, GitError> {
    if !object.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(GitError::BadOutput {
            subcommand: "ls-tree".to_owned(),
            output: "an object id that is not hex".to_owned(),
        });
    }
    let mut cmd = git_command(repo, "cat-file");
    cmd.args(["blob", "--end-of-options", object]);
    let ran = spawn_bounded(cmd, "cat-file", MAX_FILE_BYTES, 0)?;
    if ran.overflow.is_some() {
        return Err(GitError::TooLarge {
            subcommand: "cat-file".to_owned(),
            limit: MAX_FILE_BYTES,
        });
    }
    if !ran.status.success() {
        return Err(GitError::Failed {
            subcommand: "cat-file".to_owned(),
            code: ran.status.code(),
            stderr: String::from_utf8_lossy(&ran.stderr).trim().to_owned(),
        });
    }
    Ok(ran.stdout)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::Severity;

    fn finding(rule: &str, path: &str, line: Option<u32>, message: &str) -> ReviewFinding {
        ReviewFinding {
            rule: rule.into(),
            severity: Severity::Warning,
            path: path.into(),
            line,
            end_line: None,
            message: message.into(),
            fingerprint: None,
            state: None,
            dialogue: None,
            suggestion: None,
        }
    }

    fn print(f: ReviewFinding, text: &str) -> String {
        let mut one = [f];
        fingerprint_all(&mut one, &HeadFiles::from_texts([("a.rs", text)]));
        one[0].fingerprint.clone().unwrap()
    }

    const FILE: &str = "fn a() {\n    let x = 1; // TODO: check\n}\n";

    #[test]
    fn a_fingerprint_is_32_hex() {
        let p = print(finding("todo-added", "a.rs", Some(2), "`TODO` added"), FILE);
        assert_eq!(p.len(), FINGERPRINT_HEX);
        assert!(
            p.bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );
    }

    #[test]
    fn a_line_move_keeps_it() {
        let f = finding("todo-added", "a.rs", Some(2), "`TODO` added");
        let moved = format!("use x;\n\n// more\n{FILE}");
        let mut g = f.clone();
        g.line = Some(5);
        assert_eq!(print(f, FILE), print(g, &moved));
    }

    #[test]
    fn a_reindent_keeps_it() {
        let f = finding("todo-added", "a.rs", Some(2), "`TODO` added");
        let reindented = "fn a() {\n\tlet x = 1;   // TODO: check   \r\n}\n";
        assert_eq!(print(f.clone(), FILE), print(f, reindented));
    }

    #[test]
    fn a_reworded_message_on_a_line_keeps_it() {
        let f = finding("review", "a.rs", Some(2), "unchecked value");
        let g = finding("review", "a.rs", Some(2), "this value is never checked");
        assert_eq!(print(f, FILE), print(g, FILE));
    }

    #[test]
    fn an_edit_on_the_line_changes_it() {
        let f = finding("todo-added", "a.rs", Some(2), "`TODO` added");
        let edited = FILE.replace("x = 1", "x = 2");
        assert_ne!(print(f.clone(), FILE), print(f, &edited));
    }

    #[test]
    fn rule_and_path_are_part_of_it() {
        let f = finding("todo-added", "a.rs", Some(2), "m");
        let other_rule = finding("debug-leftover", "a.rs", Some(2), "m");
        assert_ne!(print(f.clone(), FILE), print(other_rule, FILE));
        let mut one = [finding("todo-added", "b.rs", Some(2), "m")];
        fingerprint_all(&mut one, &HeadFiles::from_texts([("b.rs", FILE)]));
        assert_ne!(print(f, FILE), one[0].fingerprint.clone().unwrap());
    }

    #[test]
    fn duplicates_are_told_apart_and_stable() {
        let text = "// TODO\nx\n// TODO\ny\n// TODO\n";
        let files = HeadFiles::from_texts([("a.rs", text)]);
        let mut all: Vec<ReviewFinding> = [5, 1, 3]
            .into_iter()
            .map(|l| finding("todo-added", "a.rs", Some(l), "`TODO` added"))
            .collect();
        fingerprint_all(&mut all, &files);
        let prints: Vec<String> = all.iter().map(|f| f.fingerprint.clone().unwrap()).collect();
        assert_ne!(prints[0], prints[1]);
        assert_ne!(prints[1], prints[2]);
        assert_ne!(prints[0], prints[2]);
        // The same findings in another order get the same fingerprints.
        let mut again: Vec<ReviewFinding> = [1, 3, 5]
            .into_iter()
            .map(|l| finding("todo-added", "a.rs", Some(l), "`TODO` added"))
            .collect();
        fingerprint_all(&mut again, &files);
        assert_eq!(again[0].fingerprint.as_ref(), Some(&prints[1]));
        assert_eq!(again[2].fingerprint.as_ref(), Some(&prints[0]));
    }

    #[test]
    fn a_short_snippet_takes_its_neighbours() {
        let text = "fn a() {\n}\nfn b() {\n}\n";
        let files = HeadFiles::from_texts([("a.rs", text)]);
        let mut two = [
            finding("r", "a.rs", Some(2), "m"),
            finding("r", "a.rs", Some(4), "m"),
        ];
        fingerprint_all(&mut two, &files);
        // Different neighbours, different fingerprints (and both occurrence 0).
        assert_ne!(two[0].fingerprint, two[1].fingerprint);
        assert_eq!(
            snippet(&lines_of(text.as_bytes()), 2, None).unwrap(),
            "fna(){\n}\nfnb(){"
        );
    }

    #[test]
    fn a_whole_file_or_unreadable_finding_uses_the_message() {
        let f = finding("oversized-file", "a.rs", None, "the  file is\tlarge ");
        let g = finding("oversized-file", "a.rs", None, "the file is large");
        assert_eq!(print(f.clone(), FILE), print(g, FILE));
        let h = finding("oversized-file", "a.rs", None, "the file is huge");
        assert_ne!(print(f, FILE), print(h, FILE));
        // A line past the end, or a file not read: the message recipe.
        let past = finding("r", "a.rs", Some(99), "m");
        let mut unread = [finding("r", "a.rs", Some(2), "m")];
        fingerprint_all(&mut unread, &HeadFiles::default());
        assert_eq!(print(past, FILE), unread[0].fingerprint.clone().unwrap());
    }

    #[test]
    fn a_moved_print_ignores_the_path_and_needs_a_snippet() {
        let files = HeadFiles::from_texts([("a.rs", FILE), ("b.rs", FILE)]);
        let findings = [
            finding("todo-added", "a.rs", Some(2), "`TODO` added"),
            finding("todo-added", "b.rs", Some(2), "`TODO` added"),
            finding("todo-added", "c.rs", Some(2), "`TODO` added"),
        ];
        let moved = moved_prints(&findings, &files);
        // The same code in two files: distinct by occurrence, both there.
        assert!(moved[0].is_some() && moved[1].is_some());
        assert_ne!(moved[0], moved[1]);
        // Not read: the message recipe, never matched across files.
        assert_eq!(moved[2], None);
        // The file renamed: the path-free print of its one finding is the same.
        let renamed = moved_prints(&findings[1..2], &HeadFiles::from_texts([("b.rs", FILE)]));
        let original = moved_prints(&findings[0..1], &HeadFiles::from_texts([("a.rs", FILE)]));
        assert_eq!(renamed, original);
    }

    #[test]
    fn tree_paths() {
        for good in ["a.rs", "src/a b.rs", "x/.hidden"] {
            assert!(is_tree_path(good), "{good}");
        }
        for bad in [
            "",
            "/etc/passwd",
            "../x",
            "a/../b",
            "./a",
            "a//b",
            "a/",
            "a\nb",
        ] {
            assert!(!is_tree_path(bad), "{bad:?}");
        }
    }

    use crate::git::testing::git;

    #[test]
    fn files_are_read_from_the_head_commit_never_through_a_link() {
        let repo = tempfile::tempdir().unwrap();
        let r = repo.path();
        git(r, &["init", "-q", "-b", "main"]);
        std::fs::create_dir(r.join("src")).unwrap();
        std::fs::write(r.join("src/a b.rs"), "committed\n").unwrap();
        std::fs::write(r.join("big.txt"), vec![b'x'; (MAX_FILE_BYTES + 1) as usize]).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", r.join("link")).unwrap();
        git(r, &["add", "-A"]);
        git(r, &["commit", "-q", "-m", "one"]);
        let head = Sha::parse(&git(r, &["rev-parse", "HEAD"])).unwrap();
        std::fs::write(r.join("src/a b.rs"), "edited in the working tree\n").unwrap();
        let (files, err) = read_head_files(
            r,
            &head,
            ["src/a b.rs", "link", "big.txt", "missing.rs", "../x"],
        );
        assert!(err.is_none(), "{err:?}");
        assert_eq!(files.len(), 1);
        assert_eq!(files.lines("src/a b.rs").unwrap()[0], "committed");
        let unknown = Sha::parse("1111111111111111111111111111111111111111").unwrap();
        let (files, err) = read_head_files(r, &unknown, ["src/a b.rs"]);
        assert!(files.is_empty() && err.is_some());
    }
}
