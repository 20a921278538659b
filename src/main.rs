//! `reviewflow`: the command line. Turns arguments into calls on the engine and the stdlib;
//! nothing else lives here.

mod cli;
mod cmd_check;
mod cmd_explain;
mod cmd_export;
mod cmd_graph;
mod cmd_init;
mod cmd_prune;
mod cmd_run;
mod cmd_schema;
mod fail_on;
mod isolation;
mod output;
#[cfg(target_os = "linux")]
mod reexec;
#[cfg(target_os = "linux")]
mod watchdog;

use std::process::ExitCode;

use clap::Parser;

use crate::output::errln;

fn main() -> ExitCode {
    // Before anything reads the environment: a `run` re-executed by itself takes back the secrets
    // it moved out of its environment block.
    let isolation = match isolation::Isolation::early() {
        Ok(isolation) => isolation,
        Err(message) => {
            errln!("error: {message}");
            return ExitCode::from(output::EXIT_UNUSABLE);
        }
    };
    // clap's own exit panics when it cannot print (`reviewflow --help | head -0`): printed here,
    // a closed pipe is ignored like every other write.
    let args = match cli::Cli::try_parse() {
        Ok(args) => args,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(output::EXIT_UNUSABLE));
        }
    };
    let code = match args.command {
        cli::Command::Check(a) => cmd_check::run(a),
        cli::Command::Graph(a) => cmd_graph::run(a),
        cli::Command::Schema(a) => cmd_schema::run(a),
        cli::Command::Run(a) => cmd_run::run(a, isolation),
        cli::Command::Explain(a) => cmd_explain::run(a),
        cli::Command::Init => cmd_init::run(),
        cli::Command::Export(a) => cmd_export::run(a),
        cli::Command::Prune(a) => cmd_prune::run(a),
    };
    ExitCode::from(code)
}
