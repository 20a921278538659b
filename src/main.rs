//! `reviewflow`: the command line. Turns arguments into calls on the engine and the stdlib;
//! nothing else lives here.

mod cli;
mod cmd_check;
mod cmd_graph;
mod cmd_run;
mod cmd_schema;
mod output;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    let code = match args.command {
        cli::Command::Check(a) => cmd_check::run(a),
        cli::Command::Graph(a) => cmd_graph::run(a),
        cli::Command::Schema(a) => cmd_schema::run(a),
        cli::Command::Run(a) => cmd_run::run(a),
    };
    ExitCode::from(code)
}
