//! A reviewer's `secret-env` line: a variable and the secrets given in it, in order. Under a
//! model's credential variable (`ANTHROPIC_API_KEY`, …) each secret is an account the model API
//! proxy holds and tries in turn ([`AccountPool`]); under any other variable there is one
//! secret, which the program gets as it is.

use std::sync::Arc;

use reviewflow_engine::exec::secret::SecretValue;

use super::proxy::{Account, AccountPool};

/// One `secret-env` line. `Debug` shows the secrets' names, never their values.
#[derive(Clone, Debug)]
pub struct SecretEnv {
    /// The variable the program reads.
    pub var: String,
    /// The secrets given in it (at least one), in the order written.
    pub accounts: Vec<Account>,
}

impl SecretEnv {
    pub fn new(var: impl Into<String>, accounts: Vec<Account>) -> Self {
        Self {
            var: var.into(),
            accounts,
        }
    }

    /// A line of one secret, `name`, holding `key`.
    pub fn one(var: impl Into<String>, name: impl Into<String>, key: SecretValue) -> Self {
        Self::new(var, vec![Account::new(name, key)])
    }

    /// The first secret's value: what a variable the proxy does not hold is given.
    pub fn first_key(&self) -> Option<&SecretValue> {
        self.accounts.first().map(|a| &a.key)
    }

    /// The accounts as a pool for the run, with the variable they are given in.
    pub fn pool(&self) -> (String, Arc<AccountPool>) {
        (
            self.var.clone(),
            Arc::new(AccountPool::new(self.accounts.clone())),
        )
    }
}
