//! Artifact URIs: relative references resolved against `%SRCROOT%`, the repository's top.
//!
//! SARIF resolves `artifactLocation.uri` against its `uriBaseId`, so the URI must be a relative
//! reference that does not start with `/` (SARIF1004), and code scanning finds the file only
//! when that reference is its path from the repository's top. A file named by an absolute path
//! or from a subfolder is therefore made relative to the top first (see [`SrcRoot`]).

use std::path::{Component, Path, PathBuf};

/// The `uriBaseId` of every artifact location: the root of the analysed sources.
pub const SRCROOT: &str = "%SRCROOT%";

/// Where file names given on the command line are resolved (`cwd`) and what their URIs are
/// relative to (`top`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SrcRoot {
    /// The folder relative names are relative to.
    cwd: PathBuf,
    /// `%SRCROOT%`: the repository's top, or `cwd` outside a repository.
    top: PathBuf,
}

impl SrcRoot {
    /// For names relative to `cwd` (an absolute path): the top is the nearest folder from `cwd`
    /// up that holds `.git` (a folder, or a file for a worktree or submodule), else `cwd`.
    pub fn discover(cwd: &Path) -> Self {
        let cwd = normalize(cwd);
        let top = cwd
            .ancestors()
            .find(|dir| dir.join(".git").symlink_metadata().is_ok())
            .unwrap_or(&cwd)
            .to_path_buf();
        Self { cwd, top }
    }

    /// [`SrcRoot::discover`] from the process's current folder; when that cannot be read, the
    /// top is `/`: relative names are kept as they are, absolute ones lose their leading `/`.
    pub fn current() -> Self {
        match std::env::current_dir() {
            Ok(cwd) if cwd.is_absolute() => Self::discover(&cwd),
            _ => Self::filesystem(),
        }
    }

    /// A root that knows no folder: names are taken as relative to the filesystem's root, so a
    /// relative name stays as it is and an absolute one loses its leading `/`. For writers that
    /// are given repository-relative names.
    pub fn filesystem() -> Self {
        Self {
            cwd: PathBuf::from("/"),
            top: PathBuf::from("/"),
        }
    }

    /// The URI of the file `name` (as given: relative to the current folder, or absolute).
    ///
    /// A `\` separates folders as `/` does. The name is made absolute, `.` and `..` are removed
    /// lexically (links are not followed: the name says where the user meant), and the result is
    /// made relative to the top. A file outside the top gets `..` segments (`../../tmp/x.kdl`):
    /// still a relative reference, and still naming the file from where the analysis ran.
    pub fn uri(&self, name: &str) -> String {
        let name = name.replace('\\', "/");
        let absolute = normalize(&self.cwd.join(&name));
        encode(&relative(&absolute, &self.top))
    }
}

/// `path` without `.` segments and with each `..` removing the segment before it (never above
/// the root).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !matches!(
                    out.components().next_back(),
                    None | Some(Component::RootDir | Component::Prefix(_))
                ) {
                    out.pop();
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// `path` relative to `base` (both normalized and absolute), `/`-separated, with `..` where
/// `path` is outside `base`.
fn relative(path: &Path, base: &Path) -> String {
    let path: Vec<_> = path.components().collect();
    let base: Vec<_> = base.components().collect();
    let common = path.iter().zip(&base).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<String> = vec!["..".to_owned(); base.len() - common];
    parts.extend(
        path[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    parts.join("/")
}

/// A relative path as a URI reference: everything outside RFC 3986's
/// unreserved characters and a few safe path characters percent-encoded (`:` included, so that
/// a first segment is never read as a scheme). A leading `/` is encoded too (`%2F`), so the
/// reference never starts with one whatever it is given.
pub fn encode(path: &str) -> String {
    let mut uri = String::with_capacity(path.len());
    for (i, byte) in path.bytes().enumerate() {
        match byte {
            b'/' if i == 0 => uri.push_str("%2F"),
            b'A'..=b'Z'
            | b'a'..=b'z'
            | b'0'..=b'9'
            | b'-'
            | b'.'
            | b'_'
            | b'~'
            | b'/'
            | b'!'
            | b'$'
            | b'&'
            | b'\''
            | b'('
            | b')'
            | b'*'
            | b'+'
            | b','
            | b';'
            | b'='
            | b'@' => uri.push(char::from(byte)),
            other => uri.push_str(&format!("%{other:02X}")),
        }
    }
    uri
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root(cwd: &str, top: &str) -> SrcRoot {
        SrcRoot {
            cwd: PathBuf::from(cwd),
            top: PathBuf::from(top),
        }
    }

    #[test]
    fn uris_are_relative_references() {
        assert_eq!(encode(r"ci\review.kdl"), "ci%5Creview.kdl");
        assert_eq!(encode("a b%:é.kdl"), "a%20b%25%3A%C3%A9.kdl");
        assert_eq!(encode("/etc/passwd"), "%2Fetc/passwd");
    }

    #[test]
    fn names_become_relative_to_the_top() {
        let r = root("/repo/ci", "/repo");
        assert_eq!(r.uri("review.kdl"), "ci/review.kdl");
        assert_eq!(r.uri("./x/../review.kdl"), "ci/review.kdl");
        assert_eq!(r.uri("../review.kdl"), "review.kdl");
        assert_eq!(r.uri("/repo/ci/review.kdl"), "ci/review.kdl");
        assert_eq!(r.uri(r"sub\a b.kdl"), "ci/sub/a%20b.kdl");
    }

    #[test]
    fn a_file_outside_the_top_gets_dot_dot_segments() {
        let r = root("/work/repo", "/work/repo");
        assert_eq!(r.uri("/tmp/x.kdl"), "../../tmp/x.kdl");
        assert_eq!(r.uri("../../../../x.kdl"), "../../x.kdl");
        assert_eq!(r.uri("/"), "../..");
    }

    #[test]
    fn the_filesystem_root_keeps_relative_names_and_strips_the_slash() {
        let r = SrcRoot::filesystem();
        assert_eq!(r.uri("examples/review.kdl"), "examples/review.kdl");
        assert_eq!(r.uri("/tmp/x.kdl"), "tmp/x.kdl");
    }

    #[test]
    fn the_top_is_the_nearest_folder_with_git() {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).expect("mkdir");
        std::fs::create_dir_all(repo.join("ci/deep")).expect("mkdir");
        let r = SrcRoot::discover(&repo.join("ci/deep"));
        assert_eq!(r.top, repo);
        assert_eq!(r.uri("x.kdl"), "ci/deep/x.kdl");
        let outside = SrcRoot::discover(dir.path());
        assert_eq!(outside.top, dir.path());
    }
}
