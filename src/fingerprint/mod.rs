//! Fingerprints: 64 bits a document, made from the hashes of its features, and the distance
//! between two of them.
//!
//! * [`tally`]: the weighted sums of each bit.
//! * [`simhash`]: the fingerprints, one document or many: the sign of each tally.
//! * [`hamming`]: Hamming distances between fingerprints.
//! * [`encoders`]: the seeds' other encoders (sparse top-N, random hyperplanes, a minhash-style
//!   cluster key) and `mix64`, the mixing step much of the core uses.
//! * [`compat`]: the fingerprints of the `simhash` package from PyPI.

pub mod compat;
pub mod encoders;
pub mod hamming;
pub mod simhash;
pub mod tally;
