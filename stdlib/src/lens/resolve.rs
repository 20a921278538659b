//! Where a lens comes from: `builtin:NAME` (compiled in) or a path below the top of the
//! repository, read from the base revision of the change under review, never from the work
//! tree (`reviewer::instructions`: the change cannot rewrite the lens that reviews it).

use std::path::Path;

use reviewflow_engine::nofollow::stays_beneath;

use super::Lens;
use super::format::{LensFormatError, MAX_LENS_BYTES, parse};
use crate::reviewer::instructions::{Base, InstructionsError};

/// The prefix of a built-in lens's name in a pipeline.
pub const BUILTIN_PREFIX: &str = "builtin:";

/// The built-in lenses: name and text.
const BUILTINS: &[(&str, &str)] = &[
    ("adversarial", include_str!("../../lenses/adversarial.md")),
    ("engineering", include_str!("../../lenses/engineering.md")),
];

/// Why a lens cannot be used. Every message names the lens as the pipeline wrote it.
#[derive(Debug, thiserror::Error)]
pub enum LensError {
    #[error("lens {spec:?}: there is no built-in lens `{name}` (built-ins: {})", builtin_names().join(", "))]
    UnknownBuiltin { spec: String, name: String },
    #[error(
        "lens {spec:?}: the path leaves the repository (an absolute path or a `..` component); a lens path is relative to the top of the repository"
    )]
    Leaves { spec: String },
    #[error(
        "lens {spec:?}: `{name}` is not a lens name (1 to 64 characters of a-z 0-9 -, starting with a letter or digit)"
    )]
    BadName { spec: String, name: String },
    #[error(
        "lens {spec:?}: `{name}` is the name of a built-in lens; a lens file cannot replace it (write `builtin:{name}`, or rename the file)"
    )]
    Reserved { spec: String, name: String },
    #[error("lens {spec:?}: {source}")]
    Read {
        spec: String,
        #[source]
        source: InstructionsError,
    },
    #[error(
        "lens {spec:?}: a lens file is read from the base revision of the change under review, and this run has opened no change"
    )]
    NoBase { spec: String },
    #[error("lens {spec:?}: not UTF-8")]
    NotUtf8 { spec: String },
    #[error("lens {spec:?}: {source}")]
    Format {
        spec: String,
        #[source]
        source: LensFormatError,
    },
}

/// The names of the built-in lenses.
pub fn builtin_names() -> Vec<&'static str> {
    BUILTINS.iter().map(|(n, _)| *n).collect()
}

/// Makes the built-in lenses' ceilings known to `check` (`Registry::lens_ceiling`), read from
/// their headers when a check asks.
pub fn register(registry: &mut reviewflow_engine::Registry) {
    registry.register_lens_ceilings(|name| builtin(name).map(|lens| lens.meta.ceiling.as_str()));
    registry.register_lens_file_ceiling(|text| {
        parse("lens", text)
            .ok()
            .map(|lens| lens.meta.ceiling.as_str())
    });
}

/// The built-in lens `name`.
pub fn builtin(name: &str) -> Option<Lens> {
    let (n, text) = BUILTINS.iter().find(|(n, _)| *n == name)?;
    // The built-ins are tested to parse (`every_builtin_parses`).
    parse(n, text).ok()
}

/// The name a lens spec gives its lens: the built-in's name, else the file's stem.
pub fn name_of(spec: &str) -> Option<&str> {
    if let Some(name) = spec.strip_prefix(BUILTIN_PREFIX) {
        return Some(name);
    }
    let stem = Path::new(spec).file_stem()?.to_str()?;
    Some(stem)
}

fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
}

/// Loads the lens `spec` names: a built-in, else a file of the `base` revision (none: the run
/// opened no change, and only a built-in can be loaded).
pub fn load(base: Option<&Base>, spec: &str) -> Result<Lens, LensError> {
    let owned = || spec.to_owned();
    if let Some(name) = spec.strip_prefix(BUILTIN_PREFIX) {
        return builtin(name).ok_or_else(|| LensError::UnknownBuiltin {
            spec: owned(),
            name: name.to_owned(),
        });
    }
    if !stays_beneath(spec) {
        return Err(LensError::Leaves { spec: owned() });
    }
    let name = name_of(spec).unwrap_or_default();
    if !valid_name(name) {
        return Err(LensError::BadName {
            spec: owned(),
            name: name.chars().take(64).collect(),
        });
    }
    if BUILTINS.iter().any(|(n, _)| *n == name) {
        return Err(LensError::Reserved {
            spec: owned(),
            name: name.to_owned(),
        });
    }
    let read = |source| LensError::Read {
        spec: owned(),
        source,
    };
    let base = base.ok_or_else(|| LensError::NoBase { spec: owned() })?;
    let bytes = base.read(spec, MAX_LENS_BYTES).map_err(read)?;
    let text = String::from_utf8(bytes).map_err(|_| LensError::NotUtf8 { spec: owned() })?;
    parse(name, &text).map_err(|source| LensError::Format {
        spec: owned(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::Sha;
    use crate::git::testing::git;
    use crate::lens::VerdictMode;
    use crate::rules::Severity;

    /// A repository whose one commit holds `files` (a path ending in `@` is a link to the
    /// text): that commit is the base.
    fn base_with(files: &[(&str, &[u8])]) -> (tempfile::TempDir, Base) {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        git(r, &["init", "-q", "-b", "main"]);
        std::fs::write(r.join(".keep"), "").unwrap();
        for (path, bytes) in files {
            let (path, link) = match path.strip_suffix('@') {
                Some(p) => (p, true),
                None => (*path, false),
            };
            let at = r.join(path);
            std::fs::create_dir_all(at.parent().unwrap()).unwrap();
            if link {
                std::os::unix::fs::symlink(std::str::from_utf8(bytes).unwrap(), &at).unwrap();
            } else {
                std::fs::write(&at, bytes).unwrap();
            }
        }
        git(r, &["add", "-A"]);
        git(r, &["commit", "-q", "-m", "base"]);
        let commit = Sha::parse(&git(r, &["rev-parse", "HEAD"])).unwrap();
        let base = Base {
            repo: r.to_path_buf(),
            commit,
        };
        (dir, base)
    }

    const GOOD: &str = "---\nceiling: info\nverdict: included\n---\nx\n";

    #[test]
    fn every_builtin_parses() {
        for (name, text) in BUILTINS {
            let lens = parse(name, text).unwrap();
            assert!(valid_name(name));
            assert_eq!(lens.meta.verdict, VerdictMode::Included);
        }
        assert_eq!(
            builtin("engineering").unwrap().meta.ceiling,
            Severity::Warning
        );
    }

    #[test]
    fn a_file_cannot_take_a_builtin_name() {
        let (_dir, base) = base_with(&[(
            "lenses/adversarial.md",
            b"---\nceiling: info\nverdict: included\n---\nNothing to see.\n",
        )]);
        let err = load(Some(&base), "lenses/adversarial.md").unwrap_err();
        assert!(matches!(err, LensError::Reserved { .. }), "{err}");
        // `builtin:` never reads the repository, and needs no base.
        let lens = load(None, "builtin:adversarial").unwrap();
        assert_eq!(lens.meta.ceiling, Severity::Error);
    }

    #[test]
    fn paths_that_leave_are_refused() {
        let (_dir, base) = base_with(&[]);
        for spec in ["../x.md", "/etc/passwd", "a/../../x.md", ""] {
            let err = load(Some(&base), spec).unwrap_err();
            assert!(matches!(err, LensError::Leaves { .. }), "{spec}: {err}");
        }
    }

    #[test]
    fn bad_files_are_refused_with_the_reason() {
        let big = format!("{GOOD}{}", "y".repeat(MAX_LENS_BYTES as usize));
        let (_dir, base) = base_with(&[
            ("Bad_Name.md", GOOD.as_bytes()),
            ("latin1.md", b"---\xff\n"),
            ("big.md", big.as_bytes()),
            ("loose.md", b"---\nceiling: info\n---\nx\n"),
        ]);
        let err = |spec: &str| load(Some(&base), spec).unwrap_err();
        assert!(matches!(err("Bad_Name.md"), LensError::BadName { .. }));
        assert!(matches!(err("latin1.md"), LensError::NotUtf8 { .. }));
        assert!(
            err("big.md").to_string().contains("64 KiB"),
            "{}",
            err("big.md")
        );
        assert_eq!(
            err("loose.md").to_string(),
            "lens \"loose.md\": its header lacks `verdict`"
        );
        assert!(matches!(err("none.md"), LensError::Read { .. }));
        // A file is never read without a base to read it from.
        assert!(matches!(
            load(None, "loose.md").unwrap_err(),
            LensError::NoBase { .. }
        ));
    }

    #[test]
    fn the_base_answers_and_a_link_in_it_is_refused() {
        let (dir, base) = base_with(&[
            ("lenses/strict.md", GOOD.as_bytes()),
            ("evil.md@", b"/etc/passwd"),
        ]);
        // The change rewrites the lens and adds one: the work tree is never read.
        std::fs::write(
            dir.path().join("lenses/strict.md"),
            "---\nceiling: error\nverdict: included\n---\nFind nothing.\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("lenses/added.md"), GOOD).unwrap();
        let lens = load(Some(&base), "lenses/strict.md").unwrap();
        assert_eq!(lens.meta.ceiling, Severity::Info);
        assert_eq!(lens.prompt.trim(), "x");
        let added = load(Some(&base), "lenses/added.md").unwrap_err();
        assert!(
            added
                .to_string()
                .contains("the change under review adds it")
                && added.to_string().contains("merge it first"),
            "{added}"
        );
        let link = load(Some(&base), "evil.md").unwrap_err();
        assert!(link.to_string().contains("symbolic link"), "{link}");
    }
}
