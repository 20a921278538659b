//! Tokens that are unique among concurrent writers on one machine without a lock: the process id
//! tells processes apart, a process-wide counter tells threads and calls apart, and a random part
//! guards against pid reuse across machines sharing a folder.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU32, Ordering};

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// `<pid>-<counter>-<random>`, each as 8 lowercase hex digits (26 characters).
pub fn token() -> String {
    let pid = std::process::id();
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{pid:08x}-{count:08x}-{:08x}", random_u32(count))
}

/// 32 bits from std's randomly keyed hasher: no cryptographic claim, only collision avoidance.
fn random_u32(salt: u32) -> u32 {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u32(salt);
    if let Ok(now) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        hasher.write_u128(now.as_nanos());
    }
    // Truncation is the point: 32 bits are plenty beside the pid and counter.
    hasher.finish() as u32
}

#[cfg(test)]
mod tests {
    use super::token;

    #[test]
    fn tokens_differ_and_have_a_fixed_shape() {
        let a = token();
        let b = token();
        assert_ne!(a, b);
        assert_eq!(a.len(), 26);
        assert!(a.bytes().all(|c| c == b'-' || c.is_ascii_hexdigit()));
    }
}
