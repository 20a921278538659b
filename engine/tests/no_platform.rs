//! The engine names no platform (docs/platforms.md): what is GitHub's or GitLab's is registered
//! by the standard library. The files below still name one, and are being moved out; the list
//! may only shrink. A file not in it that names a platform, in any case and comments included,
//! fails the test, and so does a file in it that no longer does (take it off the list).

use std::path::{Path, PathBuf};

/// Files under `engine/src` that still name a platform, relative to it.
const STILL_NAMING: &[&str] = &["run/keep.rs"];

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read engine/src") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn names_a_platform(text: &str) -> bool {
    let lower = text.to_lowercase();
    lower.contains("github") || lower.contains("gitlab")
}

#[test]
fn the_engine_names_no_platform_beyond_the_shrinking_list() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &mut all);
    assert!(
        all.len() > 50,
        "found only {} files under {}",
        all.len(),
        src.display()
    );
    let mut new = Vec::new();
    let mut cleared = Vec::new();
    for path in &all {
        let rel = path
            .strip_prefix(&src)
            .expect("beneath src")
            .to_string_lossy()
            .replace('\\', "/");
        let text = std::fs::read_to_string(path).expect("read");
        let listed = STILL_NAMING.contains(&rel.as_str());
        match (names_a_platform(&text), listed) {
            (true, false) => new.push(rel),
            (false, true) => cleared.push(rel),
            _ => {}
        }
    }
    assert!(
        new.is_empty(),
        "these files of the engine name a platform: move what they say into the platform's registration (docs/platforms.md): {new:?}"
    );
    assert!(
        cleared.is_empty(),
        "these files no longer name a platform: take them off STILL_NAMING: {cleared:?}"
    );
    for listed in STILL_NAMING {
        assert!(
            src.join(listed).is_file(),
            "{listed} is listed but does not exist: take it off STILL_NAMING"
        );
    }
}

#[test]
fn the_test_sees_a_name_in_any_case() {
    assert!(names_a_platform("// GitHub's token"));
    assert!(names_a_platform("GITLAB_CI"));
    assert!(!names_a_platform("a forge's token"));
}
