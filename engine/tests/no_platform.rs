//! The engine names no platform (docs/platforms.md): what is GitHub's or GitLab's is registered
//! by the standard library. A file under `engine/src` that names one, in any case and comments
//! included, fails the test.

use std::path::{Path, PathBuf};

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
fn the_engine_names_no_platform() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &mut all);
    assert!(
        all.len() > 50,
        "found only {} files under {}",
        all.len(),
        src.display()
    );
    let mut naming = Vec::new();
    for path in &all {
        let rel = path
            .strip_prefix(&src)
            .expect("beneath src")
            .to_string_lossy()
            .replace('\\', "/");
        let text = std::fs::read_to_string(path).expect("read");
        if names_a_platform(&text) {
            naming.push(rel);
        }
    }
    assert!(
        naming.is_empty(),
        "these files of the engine name a platform: move what they say into the platform's registration (docs/platforms.md): {naming:?}"
    );
}

#[test]
fn the_test_sees_a_name_in_any_case() {
    assert!(names_a_platform("// GitHub's token"));
    assert!(names_a_platform("GITLAB_CI"));
    assert!(!names_a_platform("a forge's token"));
}
