//! `check` is pure: it reads the pipeline (and, for lenses, files beneath the checkout through the
//! engine's readers) and decides; it must not depend on the executor, `run`, which starts
//! processes, writes run folders and holds secrets. A `crate::run` in any of its files — or in the
//! helpers it reads through — would make checking a pipeline build on running one.

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, into: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("engine/src/check is readable") {
        let path = entry.expect("a folder entry").path();
        if path.is_dir() {
            rust_files(&path, into);
        } else if path.extension().is_some_and(|e| e == "rs") {
            into.push(path);
        }
    }
}

#[test]
fn check_does_not_name_run() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src.join("check"), &mut files);
    assert!(
        files.len() > 10,
        "engine/src/check holds its files: {files:?}"
    );
    // The file-system and input helpers `check` calls sit beside it for this reason.
    for helper in ["nofollow.rs", "beneath.rs", "inputs.rs"] {
        files.push(src.join(helper));
    }
    let offenders: Vec<_> = files
        .iter()
        .filter(|path| {
            std::fs::read_to_string(path)
                .expect("a source file is readable")
                .contains("crate::run")
        })
        .collect();
    assert!(
        offenders.is_empty(),
        "these name `crate::run`: {offenders:?}"
    );
}
