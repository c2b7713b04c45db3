//! The seeded random points of the tests that interrupt a build (`stops.rs`, `promises.rs`;
//! included with `#[path]`): the seed is printed so that a failure can be repeated.
#![allow(dead_code, clippy::print_stderr)]

/// The seed of a test's random choices: `CB_KILL_SEED`, else the clock; printed so that a
/// failure can be repeated.
pub fn kill_seed(test: &str) -> u64 {
    let seed = std::env::var("CB_KILL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
            now.unwrap().as_nanos() as u64
        });
    eprintln!("{test}: seed {seed} (CB_KILL_SEED={seed} repeats this run)");
    seed
}

/// A number in `lo..hi` drawn from `seed` (splitmix64).
pub fn draw(seed: u64, lo: u64, hi: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    lo + (z ^ (z >> 31)) % (hi - lo)
}
