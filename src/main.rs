//! `reviewflow`: the command line. Turns arguments into calls on the engine and the stdlib;
//! nothing else lives here.

mod cli;
mod cmd_check;
mod cmd_explain;
mod cmd_export;
mod cmd_graph;
mod cmd_init;
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

fn main() -> ExitCode {
    // Before anything reads the environment: a `run` re-executed by itself takes back the secrets
    // it moved out of its environment block.
    let isolation = match isolation::Isolation::early() {
        Ok(isolation) => isolation,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::from(output::EXIT_UNUSABLE);
        }
    };
    let args = cli::Cli::parse();
    let code = match args.command {
        cli::Command::Check(a) => cmd_check::run(a),
        cli::Command::Graph(a) => cmd_graph::run(a),
        cli::Command::Schema(a) => cmd_schema::run(a),
        cli::Command::Run(a) => cmd_run::run(a, isolation),
        cli::Command::Explain(a) => cmd_explain::run(a),
        cli::Command::Init => cmd_init::run(),
        cli::Command::Export(a) => cmd_export::run(a),
    };
    ExitCode::from(code)
}
