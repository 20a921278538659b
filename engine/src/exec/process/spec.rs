//! What to run: program, arguments, working directory, environment, stdin and time limits.
//!
//! The child's environment is built from nothing: it holds exactly `env` and `secret_env`, not
//! even `PATH` unless one is declared ([`minimal_path`] is a sensible value to declare). Secrets
//! reach the child only through `secret_env` or `stdin`; `args` are plain strings, and nothing in
//! this API turns a [`SecretValue`] into one.

use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::error::ProcessError;
use super::spawn::Launch;
use crate::exec::confine::{ChildSteps, ConfineSpec, Program};
use crate::exec::secret::SecretValue;

/// Time a child gets between SIGTERM and SIGKILL unless the spec says otherwise.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(10);

/// Longest line handed to the line callback; longer lines arrive in pieces of this size.
pub const DEFAULT_MAX_LINE: usize = 64 * 1024;

/// A conventional `PATH` holding only system directories, for callers that want the child to
/// find standard tools by name. It is never added implicitly.
pub fn minimal_path() -> &'static str {
    "/usr/local/bin:/usr/bin:/bin"
}

/// What the child reads on standard input. It is closed once written, so a program that reads
/// stdin to the end never waits forever.
#[derive(Clone, Default)]
pub enum Stdin {
    /// `/dev/null`: an immediate end of file.
    #[default]
    Null,
    /// Non-secret bytes (a prompt, a diff).
    Bytes(Vec<u8>),
    /// A secret (a key the child reads from stdin rather than its environment).
    Secret(SecretValue),
}

impl Stdin {
    pub(super) fn bytes(&self) -> Option<&[u8]> {
        match self {
            Stdin::Null => None,
            Stdin::Bytes(bytes) => Some(bytes),
            Stdin::Secret(secret) => Some(secret.expose_secret()),
        }
    }
}

impl std::fmt::Debug for Stdin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stdin::Null => f.write_str("Null"),
            Stdin::Bytes(bytes) => write!(f, "Bytes({} bytes)", bytes.len()),
            Stdin::Secret(_) => f.write_str("Secret([redacted])"),
        }
    }
}

/// One child process to run. `Debug` shows no secret.
#[derive(Debug, Clone)]
pub struct ChildSpec {
    /// An absolute path, a path relative to `cwd`, or a bare name looked up in the declared
    /// `PATH` (absolute entries only: an empty or relative entry would mean the working
    /// directory, which may hold untrusted files).
    pub program: PathBuf,
    /// Arguments, after the program name. Never put a secret here.
    pub args: Vec<String>,
    /// Working directory of the child.
    pub cwd: PathBuf,
    /// Declared, non-secret environment variables: the child sees these and `secret_env` only.
    pub env: Vec<(String, String)>,
    /// Secret environment variables.
    pub secret_env: Vec<(String, SecretValue)>,
    /// Standard input.
    pub stdin: Stdin,
    /// Wall-clock limit from spawn; `None` for none.
    pub timeout: Option<Duration>,
    /// Time between SIGTERM and SIGKILL on timeout or cancellation; also bounds how long output
    /// is still read after the child exits (a process that escaped the group may hold a pipe).
    pub grace: Duration,
    /// Keep up to this many bytes of (redacted) stdout in the result.
    pub capture_stdout: Option<usize>,
    /// Longest line handed to the line callback.
    pub max_line: usize,
    /// What the child may reach (Landlock). `None`: the confinement of the stage that starts it,
    /// if any; outside a stage, none beyond what every child gets (no new privileges, no
    /// capabilities, a parent-death signal).
    pub confine: Option<ConfineSpec>,
}

impl ChildSpec {
    /// A spec with no arguments, an empty environment, null stdin, no timeout, the default
    /// grace period, no stdout capture, and the confinement of the stage that runs it.
    pub fn new(program: impl Into<PathBuf>, cwd: impl Into<PathBuf>) -> Self {
        Self {
            program: program.into(),
            args: Vec::new(),
            cwd: cwd.into(),
            env: Vec::new(),
            secret_env: Vec::new(),
            stdin: Stdin::Null,
            timeout: None,
            grace: DEFAULT_GRACE,
            capture_stdout: None,
            max_line: DEFAULT_MAX_LINE,
            confine: None,
        }
    }

    /// Appends an argument.
    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Declares a non-secret environment variable.
    pub fn env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.push((name.into(), value.into()));
        self
    }

    /// Declares a secret environment variable.
    pub fn secret_env(mut self, name: impl Into<String>, value: SecretValue) -> Self {
        self.secret_env.push((name.into(), value));
        self
    }

    /// Checks names and values before anything is started, so that errors name the culprit.
    pub(super) fn validate(&self) -> Result<(), ProcessError> {
        if self.program.as_os_str().is_empty() || self.program.as_os_str().as_bytes().contains(&0) {
            return Err(ProcessError::NulInArgument { index: 0 });
        }
        if let Some(index) = self.args.iter().position(|a| a.contains('\0')) {
            return Err(ProcessError::NulInArgument { index: index + 1 });
        }
        let names = self
            .env
            .iter()
            .map(|(n, v)| (n, v.as_bytes()))
            .chain(self.secret_env.iter().map(|(n, v)| (n, v.expose_secret())));
        let mut seen: Vec<&str> = Vec::new();
        for (name, value) in names {
            if name.is_empty() || name.contains(['=', '\0']) {
                return Err(ProcessError::InvalidEnvName { name: name.clone() });
            }
            if seen.contains(&name.as_str()) {
                return Err(ProcessError::DuplicateEnv { name: name.clone() });
            }
            if value.contains(&0) {
                return Err(ProcessError::NulInEnvValue { name: name.clone() });
            }
            seen.push(name);
        }
        Ok(())
    }

    /// The program as the child is to find it: its path where the spec names one, or a search
    /// of the declared `PATH` (blocking work, done in the preparation's one hand-off to the
    /// runtime's blocking threads: `confine::prepare`).
    pub(super) fn program(&self) -> Program {
        if self.program.is_absolute() {
            return Program::Known(self.program.clone());
        }
        if self.program.components().count() > 1 {
            return Program::Known(self.cwd.join(&self.program));
        }
        let (program, path) = (self.program.clone(), self.path());
        Program::Search(Box::new(move || search(&program, path.as_deref())))
    }

    /// The program as the spec names it.
    pub(super) fn program_named(&self) -> &Path {
        &self.program
    }

    /// The error for a bare name that no entry of the declared `PATH` holds.
    pub(super) fn not_found(&self) -> ProcessError {
        ProcessError::ProgramNotFound {
            program: self.program.to_string_lossy().into_owned(),
            path: self.path(),
        }
    }

    fn path(&self) -> Option<String> {
        self.env
            .iter()
            .find(|(name, _)| name == "PATH")
            .map(|(_, value)| value.clone())
    }

    /// What to start: the cleared environment (`NAME=value`, each with room for the NUL the
    /// system needs, so that adding it never copies a secret), stdin piped when there is
    /// something to write, and the confinement steps.
    pub(super) fn launch<'a>(&'a self, program: &'a Path, steps: Option<ChildSteps>) -> Launch<'a> {
        let entry = |name: &str, value: &[u8]| {
            let mut bytes = Vec::with_capacity(name.len() + value.len() + 2);
            bytes.extend_from_slice(name.as_bytes());
            bytes.push(b'=');
            bytes.extend_from_slice(value);
            bytes
        };
        let env = self
            .env
            .iter()
            .map(|(n, v)| entry(n, v.as_bytes()))
            .chain(
                self.secret_env
                    .iter()
                    .map(|(n, v)| entry(n, v.expose_secret())),
            )
            .collect();
        Launch {
            program,
            args: &self.args,
            env,
            cwd: &self.cwd,
            stdin_piped: self.stdin.bytes().is_some(),
            steps,
        }
    }
}

/// The first executable file named `program` in an absolute entry of `path` (relative entries
/// are never searched).
fn search(program: &Path, path: Option<&str>) -> Option<PathBuf> {
    path.iter()
        .flat_map(|p| p.split(':'))
        .map(Path::new)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(program))
        .find(|candidate| {
            std::fs::metadata(candidate)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}
