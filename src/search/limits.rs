//! The limits of a search: the candidate comparisons it may make, estimated from the data
//! before any is made, the pairs a caller collects unless told otherwise, and [`Bounded`], a
//! collection that fits its limit or the count that passed it.
//!
//! Batch mode ([`super::pairs`]), the cross search ([`super::cross_search`]), the indexes and the
//! star clusters all answer to these limits, so they sit apart from each of them.

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::fingerprint::encoders::mix64;
use crate::search::plan::{Plan, TableLayout};

/// Pairs a caller collects unless told otherwise: 100 million, 1.7 GB as `find_all`'s arrays.
pub const DEFAULT_MAX_PAIRS: u64 = 100_000_000;

/// Candidate comparisons a batch search may make while a pair limit is set: 30 billion, about
/// a minute or more of the walk, or [`COMPARISONS_PER_VALUE`] per distinct value searched if that
/// is more, so that the limit grows with the corpus as the walk's work does. The 1M-document
/// benchmark corpus is estimated at 10 billion at k = 8 (10,400 a value); 100k short texts of 8
/// words from 20 at k = 16, at 52 billion (517,000 a value).
pub const DEFAULT_MAX_COMPARISONS: u64 = 30_000_000_000;

/// Comparisons per distinct value the work limit allows at least: 20x what the 1M-document
/// benchmark corpus needs at k = 8, and a corpus of 10M such documents (about 100,000 a value
/// there, as buckets grow with the corpus) still within it.
pub const COMPARISONS_PER_VALUE: u64 = 200_000;

/// The work limit of a search over `values` distinct fingerprints: [`DEFAULT_MAX_COMPARISONS`],
/// or [`COMPARISONS_PER_VALUE`] each if that is more.
pub fn default_work_limit(values: usize) -> u64 {
    DEFAULT_MAX_COMPARISONS.max(COMPARISONS_PER_VALUE.saturating_mul(values as u64))
}

/// Distinct values an estimate samples at most; below it the estimate is exact.
const ESTIMATE_SAMPLE: usize = 1 << 16;

/// The candidate comparisons [`walk`](super::pairs::walk) makes over `distinct` with `plan`: for
/// each table, the pairs of values that share its prefix. Exact for up to 65,536 values; past
/// that counted on a deterministic random sample of about 65,536 and scaled by the ratio of pair
/// counts. One sort of the sample per table, so it costs a small fraction of the walk.
pub fn estimate_comparisons(distinct: &[u64], plan: &Plan) -> u64 {
    let n = distinct.len();
    if n < 2 {
        return 0;
    }
    let sample = sample_of(distinct);
    let m = sample.len() as f64;
    if m < 2.0 {
        return 0;
    }
    let found: f64 = plan
        .tables()
        .par_iter()
        .map(|layout| {
            let prefixes = sorted_prefixes(&sample, layout);
            let mut pairs = 0f64;
            let mut start = 0;
            while start < prefixes.len() {
                let mut end = start + 1;
                while end < prefixes.len() && prefixes[end] == prefixes[start] {
                    end += 1;
                }
                let run = (end - start) as f64;
                pairs += run * (run - 1.0) / 2.0;
                start = end;
            }
            pairs
        })
        .sum();
    let scale = (n as f64) * (n as f64 - 1.0) / (m * (m - 1.0));
    (found * scale).min(u64::MAX as f64) as u64
}

/// The prefixes of `values` in the table of `layout`, ascending: values that share one are
/// compared in that table.
fn sorted_prefixes(values: &[u64], layout: &TableLayout) -> Vec<u64> {
    let mut prefixes: Vec<u64> = values
        .iter()
        .map(|&x| layout.prefix_of(layout.permutation.apply(x)))
        .collect();
    prefixes.sort_unstable();
    prefixes
}

/// About [`ESTIMATE_SAMPLE`] of `values`, a deterministic random sample (all of them when
/// fewer): a value is kept when its mixed hash falls below p * 2^64, p = SAMPLE / n, so a value
/// found in two lists is kept in both or neither at equal rates.
fn sample_of(values: &[u64]) -> Vec<u64> {
    let n = values.len();
    if n <= ESTIMATE_SAMPLE {
        return values.to_vec();
    }
    let cut = ((ESTIMATE_SAMPLE as f64 / n as f64) * 2f64.powi(64)) as u64;
    values.iter().copied().filter(|&x| mix64(x) < cut).collect()
}

/// The candidate comparisons of a cross search of the distinct values `new` against `old` with
/// `plan` (each value of `new` against each of `old` that shares a table's prefix, summed over
/// the tables): exact while both have at most 65,536 values, else counted on samples of each and
/// scaled by the inverse of the sampled shares.
pub fn estimate_cross_comparisons(new: &[u64], old: &[u64], plan: &Plan) -> u64 {
    if new.is_empty() || old.is_empty() {
        return 0;
    }
    let (a, b) = (sample_of(new), sample_of(old));
    if a.is_empty() || b.is_empty() {
        return 0;
    }
    let found: f64 = plan
        .tables()
        .par_iter()
        .map(|layout| {
            let (pa, pb) = (sorted_prefixes(&a, layout), sorted_prefixes(&b, layout));
            let (mut i, mut j, mut pairs) = (0, 0, 0f64);
            while i < pa.len() && j < pb.len() {
                if pa[i] != pb[j] {
                    if pa[i] < pb[j] {
                        i += 1;
                    } else {
                        j += 1;
                    }
                    continue;
                }
                let (si, sj) = (i, j);
                while i < pa.len() && pa[i] == pa[si] {
                    i += 1;
                }
                while j < pb.len() && pb[j] == pb[sj] {
                    j += 1;
                }
                pairs += (i - si) as f64 * (j - sj) as f64;
            }
            pairs
        })
        .sum();
    let scale = (new.len() as f64 / a.len() as f64) * (old.len() as f64 / b.len() as f64);
    (found * scale).min(u64::MAX as f64) as u64
}

/// The remedy [`check_work`] names where the limit comes with `max_pairs`.
pub const WORK_REMEDY: &str = "lower k (in Python, max_pairs=None lifts the limit)";

/// [`Error::TooManyPairs`] naming the estimate when the search of `distinct` within `k` would
/// make more than `limit` candidate comparisons (None: no limit), before any of them is made.
pub fn check_work(
    distinct: &[u64],
    k: u32,
    plan: &Plan,
    limit: Option<u64>,
    remedy: &str,
) -> Result<()> {
    let estimate = || estimate_comparisons(distinct, plan);
    refuse_over(limit, estimate, k, plan, remedy)
}

/// [`check_work`] for a cross search of `new` against `old` ([`estimate_cross_comparisons`]).
pub fn check_cross_work(
    new: &[u64],
    old: &[u64],
    k: u32,
    plan: &Plan,
    limit: Option<u64>,
    remedy: &str,
) -> Result<()> {
    let estimate = || estimate_cross_comparisons(new, old, plan);
    refuse_over(limit, estimate, k, plan, remedy)
}

/// [`Error::TooManyPairs`] when there is a `limit` and the `estimate`, made only then, passes it.
fn refuse_over(
    limit: Option<u64>,
    estimate: impl FnOnce() -> u64,
    k: u32,
    plan: &Plan,
    remedy: &str,
) -> Result<()> {
    let Some(limit) = limit else {
        return Ok(());
    };
    let estimate = estimate();
    if estimate > limit {
        return Err(Error::TooManyPairs {
            count: estimate,
            at_least: false,
            limit,
            what: format!(
                "candidate comparisons (estimated from the data) for the search at k={k} over {} \
                 tables",
                plan.tables().len()
            ),
            remedy: remedy.into(),
        });
    }
    Ok(())
}

/// A collection that fits its limit, or the number of items it would have held: exactly
/// (`Over`), or at least (`AtLeast`, where counting them all would have cost more than a refusal
/// may: the search stopped soon after the limit).
#[derive(Debug, PartialEq, Eq)]
pub enum Bounded<T> {
    Within(T),
    Over(u64),
    AtLeast(u64),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::xorshift64 as rng;

    /// The distinct values of `values`, ascending.
    fn distinct_of(values: &[u64]) -> Vec<u64> {
        let mut distinct = values.to_vec();
        distinct.sort_unstable();
        distinct.dedup();
        distinct
    }

    #[test]
    fn the_work_estimate_is_exact_for_small_inputs_and_refuses_clusters() {
        let plan = Plan::nested(&[4, 4], 3).unwrap();
        let mut seed = 7u64;
        // Half random, half sharing their top 40 bits: long prefix runs in some tables.
        let mut fps: Vec<u64> = (0..2000).map(|_| rng(&mut seed)).collect();
        fps.extend((0..2000).map(|_| 0xABCD_EF12_3400_0000 | (rng(&mut seed) >> 40)));
        let distinct = distinct_of(&fps);
        let want: u64 = plan
            .tables()
            .iter()
            .map(|t| {
                let p: Vec<u64> = distinct
                    .iter()
                    .map(|&x| t.prefix_of(t.permutation.apply(x)))
                    .collect();
                let mut same = 0u64;
                for a in 0..p.len() {
                    for b in a + 1..p.len() {
                        same += u64::from(p[a] == p[b]);
                    }
                }
                same
            })
            .sum();
        assert!(want > 1_000_000, "{want}");
        assert_eq!(estimate_comparisons(&distinct, &plan), want);
        match check_work(&distinct, 3, &plan, Some(want - 1), "lower k") {
            Err(err @ Error::TooManyPairs { count, limit, .. }) => {
                assert_eq!((count, limit), (want, want - 1));
                let text = err.to_string();
                assert!(
                    text.contains("k=3") && text.ends_with("; lower k"),
                    "{text}"
                );
            }
            other => panic!("expected TooManyPairs, got {other:?}"),
        }
        assert!(check_work(&distinct, 3, &plan, Some(want), "lower k").is_ok());
    }

    #[test]
    fn the_cross_work_estimate_counts_prefix_sharing_pairs_of_the_two_sides() {
        let plan = Plan::nested(&[4, 4], 3).unwrap();
        let mut seed = 9u64;
        let side = |seed: &mut u64, n: usize| {
            let mut v: Vec<u64> = (0..n).map(|_| rng(seed)).collect();
            v.extend((0..n).map(|_| 0xABCD_EF12_3400_0000 | (rng(seed) >> 40)));
            distinct_of(&v)
        };
        let (new, old) = (side(&mut seed, 300), side(&mut seed, 1500));
        // Brute force: per table, every (new, old) pair with equal prefixes.
        let want: u64 = plan
            .tables()
            .iter()
            .map(|t| {
                let p = |x: u64| t.prefix_of(t.permutation.apply(x));
                let mut same = 0u64;
                for &a in &new {
                    for &b in &old {
                        same += u64::from(p(a) == p(b));
                    }
                }
                same
            })
            .sum();
        assert!(want > 100_000, "{want}");
        assert_eq!(estimate_cross_comparisons(&new, &old, &plan), want);
        assert_eq!(estimate_cross_comparisons(&[], &old, &plan), 0);
        assert!(matches!(
            check_cross_work(&new, &old, 3, &plan, Some(want - 1), "lower k"),
            Err(Error::TooManyPairs { count, .. }) if count == want
        ));
        assert!(check_cross_work(&new, &old, 3, &plan, Some(want), "lower k").is_ok());
        assert!(check_cross_work(&new, &old, 3, &plan, None, "lower k").is_ok());
    }

    #[test]
    fn the_sampled_work_estimate_is_close() {
        let plan = Plan::nested(&[4, 4], 3).unwrap();
        let mut seed = 11u64;
        let fps: Vec<u64> = (0..200_000)
            .map(|i| {
                let x = rng(&mut seed);
                if i % 2 == 0 {
                    x
                } else {
                    0x1234_5678_9A00_0000 | (x >> 40)
                }
            })
            .collect();
        let distinct = distinct_of(&fps);
        let exact: u64 = plan
            .tables()
            .iter()
            .map(|t| {
                sorted_prefixes(&distinct, t)
                    .chunk_by(|a, b| a == b)
                    .map(|r| (r.len() as u64) * (r.len() as u64 - 1) / 2)
                    .sum::<u64>()
            })
            .sum();
        let got = estimate_comparisons(&distinct, &plan) as f64;
        assert!((got / exact as f64 - 1.0).abs() < 0.05, "{got} vs {exact}");
    }
}
