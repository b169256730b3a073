//! Clusters: which kept document each near-duplicate is removed for.
//!
//! * [`star`]: star clusters, each removed document a near-duplicate of its center, and the
//!   candidates and verification that feed them.

pub mod star;
