//! `std/scan`: looks for credentials in what is about to be kept or published: JWT-shaped
//! tokens, GitHub, Anthropic, OpenAI and AWS keys, private key blocks, and the exact values (and
//! base64 forms) of every secret of the run. The secret values are compared in-process and never
//! leave it; `clean` carries no label. `clean` is false on any hit or any error.

use reviewflow_engine::contract::{
    ChildSpec, FallbackValue, LabelRule, OutputType, Role, StageContract, ValueType,
};

use super::words;

pub const DETECTORS: &[&str] = &["jwt", "github", "anthropic", "openai", "aws", "private-key"];

pub fn contract() -> StageContract {
    StageContract::new(
        "std/scan",
        "scans values for credentials before they are kept",
    )
    .child(
        ChildSpec::new("target", Role::Data, "the values to scan")
            .many(ValueType::Reference)
            .required(),
    )
    .child(
        ChildSpec::new(
            "detect",
            Role::Config,
            "detectors to run (default: all); the run's own secret values are always searched",
        )
        .many(words(DETECTORS)),
    )
    .output(
        "clean",
        OutputType::Bool,
        "no detector found anything and nothing failed",
        LabelRule::none(),
    )
    .output(
        "hits",
        OutputType::Findings,
        "detector and location of each hit (never the value)",
        LabelRule::none(),
    )
    .vets("target", "clean")
    .fallback("clean", FallbackValue::Bool(false))
    .fallback("hits", FallbackValue::Absent)
}
