//! The `std/*` stages. Each file holds one stage's contract and its implementation; [`register`]
//! hands the contracts to the engine and [`runtime::register_implementations`] the code.

pub mod gather;
pub mod post;
pub mod restore;
pub mod review;
pub mod runtime;
pub mod scan;
pub mod seal;

use reviewflow_engine::Registry;

/// Registers every `std/*` stage kind.
pub fn register(registry: &mut Registry) {
    registry.register(gather::contract());
    registry.register(restore::contract());
    registry.register(review::contract());
    registry.register(scan::contract());
    registry.register(seal::contract());
    registry.register(post::contract());
}

/// Words of an enum type.
pub(crate) fn words(list: &[&str]) -> reviewflow_engine::contract::ValueType {
    reviewflow_engine::contract::ValueType::Enum(list.iter().map(|s| (*s).to_string()).collect())
}
