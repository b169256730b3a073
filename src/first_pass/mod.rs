//! The first pass: what a dedup keeps of each document (its fingerprint, the content key of its
//! normalized text and its shingle sketch), for each way the texts arrive.
//!
//! * [`digest`]: texts handed over one by one, and the set of content keys that sketches only a
//!   text's first copy.
//! * [`jsonl`]: the JSONL fast path: a block of lines read, normalized and digested.
//! * [`strings`]: the fast path of an Arrow column of strings (a Parquet file's text column).

pub mod digest;
pub mod jsonl;
pub mod strings;
