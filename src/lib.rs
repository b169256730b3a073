//! neardup: near-duplicate detection with 64-bit simhash fingerprints.
//!
//! The core is plain Rust, tested by `cargo test` without Python: the tokenizer ([`tokens`]),
//! features of normalized text ([`features`]), FNV-1a feature hashes ([`hash`]), weighted tallies
//! ([`tally`]), fingerprints ([`fingerprint`]) and Hamming distances ([`hamming`]); the vector
//! instructions and the switch that turns them off ([`simd`]); the seeds' other encoders
//! ([`encoders`]) and the fingerprints of the `simhash` package ([`compat`]). The Python bindings
//! live in `python/` behind the `python` feature and only extract, validate, release the GIL and
//! convert.

pub mod bit_order;
pub mod compact_sketch;
pub mod compat;
pub mod cross_search;
pub mod dedup_index;
pub mod digest;
pub mod encoders;
pub mod error;
pub mod features;
pub mod fingerprint;
pub mod first_table;
pub mod hamming;
pub mod hash;
pub mod index;
pub mod interrupt;
pub mod jsonl;
pub mod memory;
pub mod neighbourhood;
pub mod pairs;
pub mod parallel;
pub mod plan;
pub mod rarity;
pub mod repeats;
pub mod run_pairs;
pub mod short_texts;
pub mod simd;
pub mod star;
pub mod store;
pub mod strings;
pub mod table;
pub mod tally;
pub mod testing;
pub mod tokens;
pub mod verify;

#[cfg(feature = "python")]
mod python;

pub use error::{Error, Result};

/// 2^64 divided by the golden ratio, made odd: the increment of SplitMix64 and the multiplier of
/// Fibonacci hashing, the one constant of every mixing step in the core.
pub const GOLDEN_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// The first 64 bits of the fraction of π: the starting value of the chained hashes (a shingle's
/// sketch hash, a file's checksum), a constant that hides no structure.
pub const PI_SEED: u64 = 0x243F_6A88_85A3_08D3;
