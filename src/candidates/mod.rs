//! Candidates of short texts: the pairs whose shingle sets can reach the Jaccard threshold,
//! found by prefix filtering where a fingerprint moves too far for the search.
//!
//! * [`short_texts`]: prefix filtering of the short texts' sketches.
//! * [`rarity`]: the global order of shingle hashes, rarest first, that the prefixes follow.
//! * [`repeats`]: which hashes more than one text holds, marked on every text for that order.
//! * [`run_pairs`]: the candidate pairs of the rows one task of a cluster gathers by prefix
//!   hash.

pub mod rarity;
pub mod repeats;
pub mod run_pairs;
pub mod short_texts;
