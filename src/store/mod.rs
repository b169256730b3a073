//! Stores: the indexes kept between calls, and the files they are saved in.
//!
//! * [`index`]: the simhash index: permuted tables, ids, inserts and removals.
//! * [`dedup_index`]: the dedup index: a corpus on disk (ids, fingerprints, content keys,
//!   compact sketches) that new batches are deduplicated against.
//! * [`index_prefixes`]: the dedup index's prefix postings, which find new documents'
//!   candidates by prefix filtering.
//! * [`index_file`]: the simhash index's file, and the checked, mapped reading both indexes'
//!   files share.

pub mod dedup_index;
pub mod index;
pub mod index_file;
pub mod index_prefixes;
