//! A merge request's diff as git writes it. GitLab lists each file's hunks without git's header
//! lines (`diff --git`, modes, `rename from`, `---`/`+++`); they are written back here so that
//! the diff reads as the GitHub forge's does. File names are the change author's: a name git
//! would quote (a control character, `"`, `\`, a non-ASCII byte) is C-quoted as git does, so a
//! name can never forge a header line.

use super::DiffFile;

/// The unified diff of `files`, in GitLab's order. Refused, naming the files, when GitLab left
/// out a file's hunks (`too_large`, or `collapsed` with no hunks): a review of part of a change
/// must not read as a review of all of it.
pub fn unified_diff(files: &[DiffFile]) -> Result<Vec<u8>, String> {
    let left_out: Vec<&str> = files
        .iter()
        .filter(|f| f.too_large == Some(true) || (f.collapsed == Some(true) && f.diff.is_empty()))
        .map(|f| f.new_path.as_str())
        .collect();
    if !left_out.is_empty() {
        let shown: Vec<String> = left_out
            .iter()
            .take(5)
            .map(|p| crate::github::error::quote(p))
            .collect();
        return Err(format!(
            "GitLab left out the diff of {} file(s) as too large ({}{}): the change is not reviewed in part",
            left_out.len(),
            shown.join(", "),
            if left_out.len() > 5 { ", …" } else { "" }
        ));
    }
    let mut out = Vec::new();
    for f in files {
        write_file(&mut out, f);
    }
    Ok(out)
}

fn write_file(out: &mut Vec<u8>, f: &DiffFile) {
    let a = quoted("a/", &f.old_path);
    let b = quoted("b/", &f.new_path);
    out.extend_from_slice(format!("diff --git {a} {b}\n").as_bytes());
    let mode = |m: &Option<String>| {
        m.as_deref()
            .filter(|m| m.len() == 6 && m.bytes().all(|c| c.is_ascii_digit()))
            .map(str::to_owned)
    };
    let (a_mode, b_mode) = (mode(&f.a_mode), mode(&f.b_mode));
    if f.new_file {
        if let Some(m) = &b_mode {
            out.extend_from_slice(format!("new file mode {m}\n").as_bytes());
        }
    } else if f.deleted_file {
        if let Some(m) = &a_mode {
            out.extend_from_slice(format!("deleted file mode {m}\n").as_bytes());
        }
    } else if let (Some(old), Some(new)) = (&a_mode, &b_mode)
        && old != new
    {
        out.extend_from_slice(format!("old mode {old}\nnew mode {new}\n").as_bytes());
    }
    if f.renamed_file {
        out.extend_from_slice(
            format!(
                "rename from {}\nrename to {}\n",
                quoted("", &f.old_path),
                quoted("", &f.new_path)
            )
            .as_bytes(),
        );
    }
    if f.diff.is_empty() {
        return;
    }
    if f.diff.starts_with("@@") {
        let minus = if f.new_file {
            "/dev/null".to_owned()
        } else {
            side("a/", &f.old_path)
        };
        let plus = if f.deleted_file {
            "/dev/null".to_owned()
        } else {
            side("b/", &f.new_path)
        };
        out.extend_from_slice(format!("--- {minus}\n+++ {plus}\n").as_bytes());
    }
    out.extend_from_slice(f.diff.as_bytes());
    if !f.diff.ends_with('\n') {
        out.push(b'\n');
    }
}

/// A `---`/`+++` name: git appends a tab to an unquoted name that holds a space.
fn side(prefix: &str, path: &str) -> String {
    let name = quoted(prefix, path);
    if name.contains(' ') && !name.starts_with('"') {
        format!("{name}\t")
    } else {
        name
    }
}

/// `prefix` + `path`, C-quoted as git quotes a name (`core.quotePath`).
fn quoted(prefix: &str, path: &str) -> String {
    let needs = path
        .bytes()
        .any(|b| b < 0x20 || b == 0x7f || b == b'"' || b == b'\\' || b >= 0x80);
    if !needs {
        return format!("{prefix}{path}");
    }
    let mut out = String::from("\"");
    out.push_str(prefix);
    for b in path.bytes() {
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\t' => out.push_str("\\t"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            0x20..=0x7e => out.push(char::from(b)),
            _ => out.push_str(&format!("\\{b:03o}")),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(old: &str, new: &str, diff: &str) -> DiffFile {
        DiffFile {
            old_path: old.into(),
            new_path: new.into(),
            a_mode: Some("100644".into()),
            b_mode: Some("100644".into()),
            diff: diff.into(),
            new_file: false,
            renamed_file: false,
            deleted_file: false,
            too_large: Some(false),
            collapsed: Some(false),
        }
    }

    #[test]
    fn headers_are_written_back_and_parse() {
        let mut added = file(
            "src/new.rs",
            "src/new.rs",
            "@@ -0,0 +1,2 @@\n+fn a() {}\n+fn b() {}\n",
        );
        added.new_file = true;
        added.a_mode = Some("0".into());
        let mut renamed = file("old name.md", "docs/new name.md", "");
        renamed.renamed_file = true;
        let changed = file("README.md", "README.md", "@@ -1 +1 @@\n-Title\n+README");
        let text = unified_diff(&[added, renamed, changed]).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(text.starts_with(
            "diff --git a/src/new.rs b/src/new.rs\nnew file mode 100644\n--- /dev/null\n+++ b/src/new.rs\n@@ -0,0 +1,2 @@\n"
        ), "{text}");
        assert!(text.contains("rename from old name.md\nrename to docs/new name.md\n"));
        assert!(text.ends_with("--- a/README.md\n+++ b/README.md\n@@ -1 +1 @@\n-Title\n+README\n"));
        let parsed = crate::diff::parse(text.as_bytes());
        assert!(parsed.problems.is_empty(), "{:?}", parsed.problems);
        assert_eq!(parsed.files.len(), 3);
    }

    #[test]
    fn a_hostile_name_cannot_forge_a_header() {
        let evil = "x\ndiff --git a/etc/passwd b/etc/passwd";
        let text = unified_diff(&[file(evil, evil, "@@ -1 +1 @@\n-a\n+b\n")]).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert_eq!(text.matches("\ndiff --git").count(), 0, "{text}");
        assert!(text.starts_with("diff --git \"a/x\\ndiff --git"), "{text}");
        let parsed = crate::diff::parse(text.as_bytes());
        assert_eq!(parsed.files.len(), 1);
    }

    #[test]
    fn a_left_out_file_refuses_the_diff() {
        let mut big = file("big.json", "big.json", "");
        big.too_large = Some(true);
        let e = unified_diff(&[file("a", "a", "@@ -1 +1 @@\n-a\n+b\n"), big]).unwrap_err();
        assert!(e.contains("big.json") && e.contains("too large"), "{e}");
    }
}
