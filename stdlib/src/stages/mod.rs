//! The `std/*` stages. Each file holds one stage's contract and its implementation, and
//! [`STAGES`] lists each kind once: [`register`] hands the contracts to the engine and
//! [`register_implementations`] the code.

pub mod aggregate;
pub mod draft;
pub mod gather;
pub mod post;
pub mod published;
pub mod restore;
pub mod review;
mod review_run;
pub mod runtime;
pub mod scan;
pub mod seal;

use std::sync::Arc;

use reviewflow_engine::Registry;
use reviewflow_engine::contract::StageContract;
use reviewflow_engine::run::{Implementations, StageImpl};

/// A stage kind: its contract and its implementation, registered together.
pub struct StageKind {
    pub contract: fn() -> StageContract,
    pub implementation: fn() -> Arc<dyn StageImpl>,
}

/// Every `std/*` stage kind, once.
pub static STAGES: &[StageKind] = &[
    StageKind {
        contract: gather::contract,
        implementation: || Arc::new(gather::Gather),
    },
    StageKind {
        contract: restore::contract,
        implementation: || Arc::new(restore::Restore),
    },
    StageKind {
        contract: review::contract,
        implementation: || Arc::new(review::Review),
    },
    StageKind {
        contract: scan::contract,
        implementation: || Arc::new(scan::Scan),
    },
    StageKind {
        contract: seal::contract,
        implementation: || Arc::new(seal::Seal),
    },
    StageKind {
        contract: post::contract,
        implementation: || Arc::new(post::Post),
    },
    StageKind {
        contract: aggregate::contract,
        implementation: || Arc::new(aggregate::Aggregate),
    },
];

/// Registers every `std/*` stage kind's contract.
pub fn register(registry: &mut Registry) {
    for kind in STAGES {
        registry.register((kind.contract)());
    }
}

/// Registers every `std/*` stage kind's implementation.
pub fn register_implementations(implementations: &mut Implementations) {
    for kind in STAGES {
        implementations.register(&(kind.contract)().kind, (kind.implementation)());
    }
}

/// Words of an enum type.
pub(crate) fn words(list: &[&str]) -> reviewflow_engine::contract::ValueType {
    reviewflow_engine::contract::ValueType::Enum(list.iter().map(|s| (*s).to_string()).collect())
}
