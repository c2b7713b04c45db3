//! Seeded randomness. Every random choice in a build draws from a ChaCha generator whose
//! seed is derived from (build seed, recipe, item id, purpose), so a choice does not depend
//! on the order in which items are processed or on the concurrency.

use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use sha2::{Digest, Sha256};

/// The generator for one purpose (e.g. `"negative_answer"`) of one item of one recipe.
pub fn item_rng(seed: u64, recipe: &str, item_id: &str, purpose: &str) -> ChaCha20Rng {
    let mut h = Sha256::new();
    h.update(b"conflictbench-rng-v1\0");
    h.update(seed.to_le_bytes());
    for part in [recipe, item_id, purpose] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    let digest: [u8; 32] = h.finalize().into();
    ChaCha20Rng::from_seed(digest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    #[test]
    fn same_inputs_same_stream_and_parts_are_not_ambiguous() {
        let a: u64 = item_rng(1, "kre-cose", "x", "neg").random();
        let b: u64 = item_rng(1, "kre-cose", "x", "neg").random();
        assert_eq!(a, b);
        // Concatenation ambiguity: ("ab","c") must differ from ("a","bc").
        let c: u64 = item_rng(1, "ab", "c", "neg").random();
        let d: u64 = item_rng(1, "a", "bc", "neg").random();
        assert_ne!(c, d);
        let e: u64 = item_rng(2, "kre-cose", "x", "neg").random();
        assert_ne!(a, e);
    }
}
