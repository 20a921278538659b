//! Generates the benchmark's pipelines: `n` stages where stage `i` reads the outputs of stages
//! `i-1` and `i/2`, and every 10th stage holds a secret of its own.
//!
//! The stages are of a bench-only kind, `bench/step`, whose contract declares its output (it
//! propagates its inputs' labels and adds none), like the std/* kinds: `run` stages are opaque,
//! so every stage downstream of one holding a secret would carry that secret and the file could
//! not be clean.
//!
//! The `i/2` edge gives the DAG long-range fan-out (stage `k` feeds `2k` and `2k+1`) so the
//! graph is not a mere chain, and the file stays clean so every check runs to completion.

use std::fmt::Write as _;

use reviewflow_engine::Registry;
use reviewflow_engine::contract::{
    ChildSpec, LabelRule, OutputType, Role, StageContract, ValueType,
};

/// The engine's builtins plus `bench/step`.
pub fn registry() -> Registry {
    let mut r = Registry::with_builtins();
    r.register(
        StageContract::new("bench/step", "a step of the benchmark")
            .child(ChildSpec::new("read", Role::Data, "inputs").many(ValueType::Template))
            .child(ChildSpec::new("key", Role::SecretSlot, "a secret").arg(ValueType::Secret))
            .output("out", OutputType::Text, "the result", LabelRule::all()),
    );
    r
}

/// The sizes measured, in stages.
pub const SIZES: [usize; 3] = [100, 1_000, 10_000];

/// The limits the scaling benches compile with: the defaults, but no token bound. A pipeline of
/// 10,000 stages has about 200,000 tokens, which `reviewflow` refuses (40,000 at most,
/// docs/language.md); the benches measure how the engine scales past that.
#[allow(dead_code)]
pub fn limits() -> reviewflow_engine::syntax::Limits {
    reviewflow_engine::syntax::Limits {
        max_tokens: usize::MAX,
        ..reviewflow_engine::syntax::Limits::default()
    }
}

/// The KDL text of a clean pipeline of `stages` stages.
pub fn pipeline(stages: usize) -> String {
    // About 80 bytes a stage and 60 per secret.
    let mut out = String::with_capacity(stages * 100 + 32);
    out.push_str("pipeline \"bench\"\n\n");
    for i in (0..stages).step_by(10) {
        // Writing into a String cannot fail.
        let _ = writeln!(
            out,
            "secret \"k{i}\" env=\"K{i}\" {{ visible-to \"s{i}\" }}"
        );
    }
    out.push('\n');
    for i in 0..stages {
        let _ = write!(out, "stage \"s{i}\" uses=\"bench/step\" {{");
        if i > 0 {
            out.push_str(" read");
        }
        if i > 0 {
            let (a, b) = (i - 1, i / 2);
            if a == b {
                let _ = write!(out, " \"{{s{a}.out}}\"");
            } else {
                let _ = write!(out, " \"{{s{a}.out}}\" \"{{s{b}.out}}\"");
            }
        }
        if i % 10 == 0 {
            let _ = write!(out, "{}key \"k{i}\"", if i > 0 { "; " } else { " " });
        }
        out.push_str(" }\n");
    }
    out
}
