//! Text: from a normalized text to the hashes of its features.
//!
//! * [`tokens`]: the built-in tokenizer (word tokens, and char mode's compacted text).
//! * [`features`]: word shingles or character n-grams, hashed as the text is read.
//! * [`normal`]: the texts whose normalization the core does itself (ASCII capitals, wide
//!   characters, and the characters of its tables: CJK, kana, Hangul, Latin, Greek, Cyrillic,
//!   punctuation and symbols), decided on their bytes; `normal_tables` holds the tables, made by
//!   `tools/normal_tables.py`.
//! * [`hash`]: FNV-1a 64, the hash of every feature (finished by fmix64), and the hasher of the
//!   core's hash maps.

pub mod features;
pub mod hash;
pub mod normal;
mod normal_tables;
pub mod tokens;
