//! neardup: near-duplicate detection with 64-bit simhash fingerprints.
//!
//! The core is plain Rust, tested by `cargo test` without Python. Its folders follow a document
//! from its text to a decision, one concept each:
//!
//! * [`text`]: tokens, features and their FNV-1a hashes.
//! * [`fingerprint`]: weighted tallies, simhash fingerprints, Hamming distances, the other
//!   encoders and the `simhash` package's fingerprints.
//! * [`sketch`]: word-shingle sketches, content keys and the Jaccard check of verification.
//! * [`first_pass`]: each document's fingerprint, content key and sketch, from texts, JSONL lines
//!   or Arrow string columns.
//! * [`search`]: the plan and the permuted tables, every pair within k, the cross search.
//! * [`candidates`]: the exact candidates of short texts by prefix filtering.
//! * [`cluster`]: star clusters, which document each near-duplicate is removed for.
//! * [`store`]: the simhash index and the dedup index, and their files.
//! * [`runtime`]: vector instructions, thread pools, the memory left and interrupts.
//!
//! Beside them: the one error type ([`error`]) and the tests' pseudo-random data ([`testing`]).
//! The Python bindings live in `python/` behind the `python` feature and only extract, validate,
//! release the GIL and convert.

pub mod candidates;
pub mod cluster;
pub mod error;
pub mod fingerprint;
pub mod first_pass;
pub mod runtime;
pub mod search;
pub mod sketch;
pub mod store;
pub mod testing;
pub mod text;

#[cfg(feature = "python")]
mod python;

pub use error::{Error, Result};

/// 2^64 divided by the golden ratio, made odd: the increment of SplitMix64 and the multiplier of
/// Fibonacci hashing, the one constant of every mixing step in the core.
pub const GOLDEN_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// The first 64 bits of the fraction of π: the starting value of the chained hashes (a shingle's
/// sketch hash, a file's checksum), a constant that hides no structure.
pub const PI_SEED: u64 = 0x243F_6A88_85A3_08D3;
