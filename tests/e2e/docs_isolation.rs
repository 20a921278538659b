//! docs/isolation.md's table of layers: every layer the engine reports has a row, and every
//! test a row names as the one that tries the layer's attack exists (a `#[test]` of that name in
//! that file), so that no row claims what no test checks.

use crate::support::root;

/// The table's rows: (layer, the `tried by` cell).
fn rows() -> Vec<(String, String)> {
    let doc = std::fs::read_to_string(root().join("docs/isolation.md")).expect("doc");
    let start = doc.find("| layer | stops |").expect("the table of layers");
    doc[start..]
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<&str> = l.split(" | ").collect();
            let layer = cells
                .first()
                .map(|c| c.trim_start_matches("| ").trim_matches('`').to_string())
                .unwrap_or_default();
            let tried = cells
                .last()
                .map(|c| c.trim_end_matches(" |").to_string())
                .unwrap_or_default();
            (layer, tried)
        })
        .collect()
}

/// The files named `name` beneath `dir`.
fn files_named(dir: &std::path::Path, name: &str, found: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            files_named(&path, name, found);
        } else if entry.file_name() == name {
            found.push(path);
        }
    }
}

/// Whether `file` (a test file of `tests/e2e` or `engine/tests`, or a module of `engine/src`
/// with unit tests) has a test named `name`.
fn has_test(file: &str, name: &str) -> bool {
    let mut files = Vec::new();
    for dir in ["tests/e2e", "engine/tests", "engine/src"] {
        files_named(&root().join(dir), &format!("{file}.rs"), &mut files);
    }
    for path in files {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        let needle = format!("fn {name}(");
        if let Some(at) = text.find(&needle) {
            // The attribute within the few lines before it.
            let before = &text[at.saturating_sub(200)..at];
            return before.contains("#[test]") || before.contains("#[tokio::test");
        }
    }
    false
}

#[test]
fn every_layer_has_a_row_and_every_row_names_tests_that_exist() {
    let rows = rows();
    let layers: Vec<&str> = rows.iter().map(|(l, _)| l.as_str()).collect();
    for layer in [
        "scrubbed-environment",
        "not-dumpable",
        "watchdog",
        "no-new-privileges",
        "capabilities-dropped",
        "parent-death-signal",
        "subreaper",
        "inherited-descriptors",
        "no-keyring",
        "cgroup",
        "network-namespace",
        "ipc-namespace",
        "mount-namespace",
        "pid-namespace",
        "landlock-filesystem",
        "landlock-network",
        "landlock-scopes",
    ] {
        assert!(layers.contains(&layer), "no row for {layer}: {layers:?}");
    }
    for (layer, tried) in &rows {
        let named: Vec<&str> = tried
            .split('`')
            .skip(1)
            .step_by(2)
            .filter(|t| t.contains("::"))
            .collect();
        assert!(
            !named.is_empty() || tried.contains("the spy"),
            "{layer}: no test named in `{tried}`"
        );
        for t in named {
            let (file, name) = t.split_once("::").expect("file::name");
            assert!(has_test(file, name), "{layer}: `{t}` is not a test");
        }
    }
}
