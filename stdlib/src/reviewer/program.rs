//! Which `PATH` a reviewer's program gets, and where it came from; and, before any try, whether
//! the program is there at all: a missing program is not transient, so it is said once, with
//! the fix, instead of failing every try.

use std::fmt;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use reviewflow_engine::exec::process::minimal_path;

/// Where a reviewer's `PATH` came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathOrigin {
    /// The stage's `env "PATH" "…"`.
    Declared,
    /// reviewflow's own `PATH`, without relative entries and entries inside the checkout.
    Inherited,
    /// The system folders: reviewflow's own `PATH` had no entry left to give.
    Minimal,
}

impl fmt::Display for PathOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PathOrigin::Declared => "the stage's `env \"PATH\"`",
            PathOrigin::Inherited => {
                "reviewflow's own PATH, without relative entries and entries inside the checkout"
            }
            PathOrigin::Minimal => {
                "the system folders: reviewflow's own PATH has no entry outside the checkout"
            }
        })
    }
}

/// The `PATH` a reviewer's program gets and is looked up in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReviewerPath {
    pub value: String,
    pub origin: PathOrigin,
}

impl ReviewerPath {
    /// The declared `PATH` in `env`, else `inherited` (already without the checkout's
    /// entries), else the minimal one.
    pub fn of(env: &[(String, String)], inherited: Option<&str>) -> Self {
        if let Some((_, value)) = env.iter().find(|(n, _)| n == "PATH") {
            return Self {
                value: value.clone(),
                origin: PathOrigin::Declared,
            };
        }
        match inherited.filter(|p| !p.is_empty()) {
            Some(value) => Self {
                value: value.to_owned(),
                origin: PathOrigin::Inherited,
            },
            None => Self {
                value: minimal_path().to_owned(),
                origin: PathOrigin::Minimal,
            },
        }
    }
}

/// A reviewer's program that is not there.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProgramMissing {
    /// A bare name found in no folder of the `PATH`.
    #[error(
        "the reviewer program `{program}` is not installed: no executable `{program}` in the \
         PATH {} ({}). Install it in one of those folders, give its absolute path, or declare \
         the folders to search with `env \"PATH\" \"…\"` on the stage",
        path.value,
        path.origin
    )]
    NotInPath { program: String, path: ReviewerPath },
    /// A path (holding a `/`) that is no executable file.
    #[error(
        "the reviewer program `{program}` is not there: {} is no executable file (a relative \
         path is relative to the checkout). Give the path of an installed program",
        resolved.display()
    )]
    NoSuchFile { program: String, resolved: PathBuf },
}

/// Whether `program` can be started from `cwd` with `path`, looked up as the child's start
/// looks it up: a name holding a `/` is a path (relative to `cwd`), any other name is searched
/// in the absolute entries of `path`. Blocking file work (a few `stat`s).
pub fn locate(program: &str, cwd: &Path, path: &ReviewerPath) -> Result<PathBuf, ProgramMissing> {
    let executable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let resolved = cwd.join(program);
        return if executable(&resolved) {
            Ok(resolved)
        } else {
            Err(ProgramMissing::NoSuchFile {
                program: program.to_owned(),
                resolved,
            })
        };
    }
    path.value
        .split(':')
        .map(Path::new)
        // Relative entries are never searched.
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(program))
        .find(|candidate| executable(candidate))
        .ok_or_else(|| ProgramMissing::NotInPath {
            program: program.to_owned(),
            path: path.clone(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_declared_path_wins_then_the_inherited_then_the_minimal() {
        let declared = vec![("PATH".to_owned(), "/opt/x".to_owned())];
        assert_eq!(
            ReviewerPath::of(&declared, Some("/usr/bin")).origin,
            PathOrigin::Declared
        );
        let inherited = ReviewerPath::of(&[], Some("/usr/bin"));
        assert_eq!(inherited.value, "/usr/bin");
        assert_eq!(inherited.origin, PathOrigin::Inherited);
        let minimal = ReviewerPath::of(&[], Some(""));
        assert_eq!(minimal.value, minimal_path());
        assert_eq!(minimal.origin, PathOrigin::Minimal);
    }

    #[test]
    fn a_missing_program_names_itself_the_path_its_origin_and_the_fix() {
        let path = ReviewerPath::of(&[], Some("/nonexistent-a:relative"));
        let e = locate("no-such-reviewer", Path::new("/"), &path).unwrap_err();
        let text = e.to_string();
        for part in [
            "`no-such-reviewer` is not installed",
            "PATH /nonexistent-a:relative",
            "reviewflow's own PATH",
            "env \"PATH\"",
        ] {
            assert!(text.contains(part), "{text}");
        }
        assert!(locate("sh", Path::new("/"), &ReviewerPath::of(&[], None)).is_ok());
        let e = locate("./nope", Path::new("/tmp"), &path).unwrap_err();
        assert!(e.to_string().contains("/tmp/./nope"), "{e}");
    }
}
