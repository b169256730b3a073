//! Search: the pairs of fingerprints within Hamming distance k, found by permuted tables.
//!
//! * [`plan`]: block layouts, permutations and the planner of the tables.
//! * [`table`]: one sorted table of permuted fingerprints, its lookups and sorts.
//! * [`first_table`]: which table reports a pair (the first whose prefix it shares).
//! * [`bit_order`]: the order of the 64 bits a cross search runs in, chosen from the values.
//! * [`cross_search`]: new values against indexed ones and among themselves, with tables built
//!   for the call.
//! * [`pairs`]: batch mode: every pair in one pass per table, and clusters of rows.
//! * [`limits`]: the work a search may do and the pairs a caller collects, estimated and checked
//!   before the search, and [`limits::Bounded`], what a search under a limit returns.
//! * [`neighbourhood`]: what lies around each fingerprint, without listing the pairs.

pub mod bit_order;
pub mod cross_search;
pub mod first_table;
pub mod limits;
pub mod neighbourhood;
pub mod pairs;
pub mod plan;
pub mod table;
