//! Sketches: the word-shingle sets that verification compares by their Jaccard similarity.
//!
//! * [`verify`]: shingle sketches, content keys, the Jaccard estimate and its exact band.
//! * [`compact_sketch`]: the sketch of fixed size a dedup index stores per document.
//! * [`exact_sets`]: the whole sets an exact dedup index stores beside them.

pub mod compact_sketch;
pub mod exact_sets;
pub mod verify;
