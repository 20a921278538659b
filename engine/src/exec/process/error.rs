//! Why a child could not be started or supervised. No variant ever carries a secret value.

use std::io;
use std::path::PathBuf;

/// A child process could not be started or supervised.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    /// An environment variable name is empty or holds `=` or NUL.
    #[error("invalid environment variable name {name:?}")]
    InvalidEnvName {
        /// The offending name.
        name: String,
    },
    /// The same variable is declared twice (in `env`, `secret_env`, or both).
    #[error("environment variable {name} is declared more than once")]
    DuplicateEnv {
        /// The repeated name.
        name: String,
    },
    /// A variable's value holds a NUL byte, which no environment can carry.
    #[error("the value of environment variable {name} contains a NUL byte")]
    NulInEnvValue {
        /// The variable's name (the value is not repeated: it may be secret).
        name: String,
    },
    /// An argument or the program name holds a NUL byte.
    #[error("argument {index} contains a NUL byte")]
    NulInArgument {
        /// Position in `args` (0 is the program itself).
        index: usize,
    },
    /// A bare program name was not found in the PATH the child is given.
    #[error("program {program:?} not found: {}", match path {
        Some(path) => format!("no executable of that name in the PATH given to the child ({path:?}); install it there, give its absolute path, or set the stage's `env \"PATH\"`"),
        None => "the child is given no PATH; set the stage's `env \"PATH\"` or give the program's absolute path".to_owned(),
    })]
    ProgramNotFound {
        /// The name as given.
        program: String,
        /// The PATH the child is given, if any.
        path: Option<String>,
    },
    /// The operating system refused to start the child.
    #[error("cannot start {}: {source}", program.display())]
    Spawn {
        /// The resolved program path.
        program: PathBuf,
        /// The operating system's reason.
        #[source]
        source: io::Error,
    },
    /// The child could not be confined as its spec or its stage requires; it was not started.
    #[error("cannot confine {}: {source}", program.display())]
    Confine {
        /// The program, as the spec names it.
        program: PathBuf,
        /// Why.
        #[source]
        source: crate::exec::confine::ConfineError,
    },
    /// Waiting for, or listening for the exit of, the child failed.
    #[error("cannot supervise the child process: {source}")]
    Supervise {
        /// The underlying failure.
        #[source]
        source: io::Error,
    },
}
