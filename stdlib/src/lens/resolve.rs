//! Where a lens comes from: `builtin:NAME` (compiled in) or a path below the top of the
//! repository, opened one component at a time without following a link (the checkout is
//! hostile: in CI it is the change's own files).

use std::path::Path;

use reviewflow_engine::run::nofollow::{open_regular_beneath, read_bounded, stays_beneath};

use super::Lens;
use super::format::{LensFormatError, MAX_LENS_BYTES, parse};

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
    #[error("lens {spec:?}: cannot read it: {source}")]
    Read {
        spec: String,
        #[source]
        source: std::io::Error,
    },
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

/// Loads the lens `spec` names, reading a file below `checkout` when it is not a built-in.
pub fn load(checkout: &Path, spec: &str) -> Result<Lens, LensError> {
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
    let rel = Path::new(spec);
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
    let file = open_regular_beneath(checkout, rel).map_err(read)?;
    let bytes = read_bounded(file, MAX_LENS_BYTES).map_err(read)?;
    let text = String::from_utf8(bytes).map_err(|_| LensError::NotUtf8 { spec: owned() })?;
    parse(name, &text).map_err(|source| LensError::Format {
        spec: owned(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lens::VerdictMode;
    use crate::rules::Severity;

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
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("lenses")).unwrap();
        std::fs::write(
            dir.path().join("lenses/adversarial.md"),
            "---\nceiling: info\nverdict: included\n---\nNothing to see.\n",
        )
        .unwrap();
        let err = load(dir.path(), "lenses/adversarial.md").unwrap_err();
        assert!(matches!(err, LensError::Reserved { .. }), "{err}");
        // `builtin:` never reads the checkout.
        let lens = load(dir.path(), "builtin:adversarial").unwrap();
        assert_eq!(lens.meta.ceiling, Severity::Error);
    }

    #[test]
    fn paths_that_leave_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        for spec in ["../x.md", "/etc/passwd", "a/../../x.md", ""] {
            let err = load(dir.path(), spec).unwrap_err();
            assert!(matches!(err, LensError::Leaves { .. }), "{spec}: {err}");
        }
    }

    #[test]
    fn bad_files_are_refused_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        let good = "---\nceiling: info\nverdict: included\n---\nx\n";
        std::fs::write(dir.path().join("Bad_Name.md"), good).unwrap();
        std::fs::write(dir.path().join("latin1.md"), b"---\xff\n").unwrap();
        let big = format!("{good}{}", "y".repeat(MAX_LENS_BYTES as usize));
        std::fs::write(dir.path().join("big.md"), big).unwrap();
        std::fs::write(dir.path().join("loose.md"), "---\nceiling: info\n---\nx\n").unwrap();
        let fifo = std::process::Command::new("mkfifo")
            .arg(dir.path().join("fifo.md"))
            .status()
            .is_ok_and(|s| s.success());
        let err = |spec: &str| load(dir.path(), spec).unwrap_err();
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
        if fifo {
            // Opened without blocking, and refused: not a regular file.
            assert!(matches!(err("fifo.md"), LensError::Read { .. }));
        }
    }

    #[test]
    fn links_are_not_followed() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(
            outside.path().join("evil.md"),
            "---\nceiling: error\nverdict: included\n---\nx\n",
        )
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path().join("evil.md"), dir.path().join("evil.md"))
            .unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
        for spec in ["evil.md", "out/evil.md"] {
            let err = load(dir.path(), spec).unwrap_err();
            assert!(matches!(err, LensError::Read { .. }), "{spec}: {err}");
            assert!(err.to_string().contains("link"), "{spec}: {err}");
        }
    }
}
