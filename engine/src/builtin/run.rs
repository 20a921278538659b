//! `run`: an arbitrary command. Opaque to the flow analysis: every output carries every input
//! label and every secret the stage holds.

use crate::contract::{ChildSpec, Effect, Role, StageContract, ValueType};

pub fn contract() -> StageContract {
    let kind = ValueType::Enum(
        ["text", "json", "bool", "file", "findings"]
            .iter()
            .map(|s| (*s).to_string())
            .collect(),
    );
    StageContract::new("run", "runs a command; its outputs are read from files or stdout")
        .child(
            ChildSpec::new("command", Role::CommandLine, "the program and its arguments")
                .many(ValueType::Template)
                .required(),
        )
        .child(
            ChildSpec::new("cwd", Role::Path, "the working directory (default: the checkout)")
                .arg(ValueType::Template),
        )
        .child(
            ChildSpec::new("env", Role::Environment, "an environment variable: name and value")
                .args(vec![ValueType::String, ValueType::Template])
                .repeatable(),
        )
        .child(
            ChildSpec::new(
                "secret-env",
                Role::SecretSlot,
                "a secret given as an environment variable: variable name and secret name",
            )
            .args(vec![ValueType::String, ValueType::Secret])
            .repeatable(),
        )
        .child(
            ChildSpec::new("stdin", Role::Stdin, "what the command reads on its standard input")
                .arg(ValueType::Template),
        )
        .child(
            ChildSpec::new(
                "output",
                Role::Path,
                "a named output: read from `file=` (relative to the stage's work folder) or from stdout",
            )
            .arg(ValueType::String)
            .prop("file", ValueType::Template, false, "the file the command writes")
            .prop("type", kind, false, "how to read it (default \"text\")")
            .repeatable(),
        )
        .outputs_from("output")
        .effect(Effect::Executes)
        .opaque()
}
