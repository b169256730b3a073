//! Whole shingle sets, as a dedup index built with `exact` keeps them beside the compact
//! sketches, so that a search decides every pair on its exact Jaccard, as the in-memory dedup
//! does near the threshold.
//!
//! A document's set is its distinct shingle hashes ([`crate::sketch::verify`]: 63 bits, checks
//! left out) cut to their top 32 bits, ascending and distinct: 4 bytes a distinct shingle. Two
//! different shingles of a pair of documents share a cut hash with probability 2^-32 each, so
//! for sets of sizes a and b the expected chance agreements are `a b / 2^32`: 0.0002 for two
//! documents of 1,000 shingles (a change of 10^-7 in their Jaccard), one for two of 65,536.
//! Sets of a handful of shingles, where one chance agreement would decide, are not compared
//! here: their compact sketch keeps their whole 64-bit hashes, with checks
//! ([`crate::sketch::compact_sketch`]), and decides them exactly.

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::sketch::compact_sketch::{Compact, Sketches};
use crate::sketch::verify::{shingles_of, Ranges};

/// Exact sets of many documents: document d's is `values[offsets[d]..offsets[d + 1]]`.
#[derive(Clone, Copy)]
pub struct ExactSets<'a> {
    pub offsets: &'a [u64],
    pub values: &'a [u32],
}

impl<'a> ExactSets<'a> {
    /// Checks sets received from outside: `n + 1` offsets from 0, ascending, ending at the
    /// values' length, each set ascending and distinct.
    pub fn new(n: usize, offsets: &'a [u64], values: &'a [u32]) -> Result<Self> {
        if offsets.len() != n + 1 {
            return Err(Error::invalid(format!(
                "{n} documents but {} exact set offsets (one more than the documents)",
                offsets.len()
            )));
        }
        if offsets[0] != 0
            || offsets[n] != values.len() as u64
            || offsets.windows(2).any(|w| w[0] > w[1])
        {
            return Err(Error::invalid(
                "exact set offsets out of order or out of range",
            ));
        }
        let sets = ExactSets { offsets, values };
        if (0..n)
            .into_par_iter()
            .with_min_len(1024)
            .any(|d| sets.get(d).windows(2).any(|w| w[0] >= w[1]))
        {
            return Err(Error::invalid("each exact set must be sorted and distinct"));
        }
        Ok(sets)
    }

    /// Document d's set.
    #[inline]
    pub fn get(&self, d: usize) -> &'a [u32] {
        &self.values[self.offsets[d] as usize..self.offsets[d + 1] as usize]
    }
}

/// The exact sets of documents given by their whole shingle sets (`ranges`, sorted): (each
/// set's length, the sets one after the other).
pub fn cut_sets(ranges: &Ranges<'_>) -> (Vec<u32>, Vec<u32>) {
    let mut lens = Vec::with_capacity(ranges.len());
    let mut values = Vec::new();
    for d in 0..ranges.len() {
        let start = values.len();
        for &h in shingles_of(ranges.get(d)) {
            // Ascending 63-bit hashes cut to their top 32 bits stay ascending: equal cuts meet.
            let v = (h >> 31) as u32;
            if values.len() == start || values.last() != Some(&v) {
                values.push(v);
            }
        }
        lens.push((values.len() - start) as u32);
    }
    (lens, values)
}

/// The offsets of sets of lengths `lens`: `n + 1` running sums from 0.
pub fn offsets_of(lens: &[u32]) -> Vec<u64> {
    let mut at = 0u64;
    std::iter::once(0)
        .chain(lens.iter().map(|&l| {
            at += u64::from(l);
            at
        }))
        .collect()
}

/// The Jaccard of two sets (ascending, distinct); 0 when both are empty.
pub fn jaccard(a: &[u32], b: &[u32]) -> f64 {
    jaccard_at_least(a, b, 0.0).unwrap_or(0.0)
}

/// The Jaccard of two sets (ascending, distinct) when it is at least `threshold` (in [0, 1]),
/// else None: as [`jaccard`] decides it, but the merge stops as soon as the shared values can no
/// longer reach the threshold (at once when the sizes alone rule it out), so that most pairs
/// far below it read a fraction of their values.
pub fn jaccard_at_least(a: &[u32], b: &[u32], threshold: f64) -> Option<f64> {
    // I / (|a| + |b| - I) >= t  <=>  I >= t (|a| + |b|) / (1 + t); a little below, so that
    // rounding never stops a pair the exact ratio would keep.
    let need = threshold * (a.len() + b.len()) as f64 / (1.0 + threshold) - 1e-6;
    let (mut i, mut j, mut both) = (0, 0, 0usize);
    let mut steps = 0u32;
    loop {
        if steps.is_multiple_of(16) && ((both + (a.len() - i).min(b.len() - j)) as f64) < need {
            return None;
        }
        if i == a.len() || j == b.len() {
            break;
        }
        steps += 1;
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                both += 1;
                i += 1;
                j += 1;
            }
        }
    }
    let union = a.len() + b.len() - both;
    let got = if union == 0 {
        0.0
    } else {
        both as f64 / union as f64
    };
    (got >= threshold).then_some(got)
}

/// Whether two documents with features are near-duplicates as a dedup index decides it, and
/// their Jaccard: that of their exact sets (`a.1`, `b.1`) when both have one and either holds
/// more shingles than a compact sketch of `shape` keeps whole (at 64 bits, with the checks of
/// the smallest sets), else that of their compact sketches (`a.0`, `b.0`); Some when it is at
/// least `threshold`.
#[inline]
pub fn near(shape: Compact, a: Sketched<'_>, b: Sketched<'_>, threshold: f64) -> Option<f64> {
    match (a.1, b.1) {
        (Some(x), Some(y)) if x.len().max(y.len()) > shape.words() / 2 => {
            jaccard_at_least(x, y, threshold)
        }
        _ => {
            let j = shape.jaccard(a.0, b.0);
            (j >= threshold).then_some(j)
        }
    }
}

/// A document as [`near`] compares it: its compact sketch and, in an exact index, its set.
pub type Sketched<'a> = ((u32, &'a [u32]), Option<&'a [u32]>);

/// [`near`] for row p of `a` and row p of `b`, for every p, in parallel (0 for a pair below
/// `threshold`); `sets`, the rows' exact sets, in an exact index.
pub fn near_rows(
    shape: Compact,
    a: &Sketches<'_>,
    b: &Sketches<'_>,
    sets: Option<(ExactSets<'_>, ExactSets<'_>)>,
    threshold: f64,
) -> Vec<f64> {
    let w = shape.words();
    (0..a.lens.len().min(b.lens.len()))
        .into_par_iter()
        .map(|p| {
            let (x, y) = match &sets {
                Some((sa, sb)) => (Some(sa.get(p)), Some(sb.get(p))),
                None => (None, None),
            };
            near(shape, (a.get(p, w), x), (b.get(p, w), y), threshold).unwrap_or(0.0)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jaccard_counts_shared_values_over_the_union() {
        assert_eq!(jaccard(&[1, 2, 3, 4], &[2, 3, 4, 5]), 3.0 / 5.0);
        assert_eq!(jaccard(&[1, 2], &[1, 2]), 1.0);
        assert_eq!(jaccard(&[1], &[2]), 0.0);
        assert_eq!(jaccard(&[], &[]), 0.0);
        assert_eq!(jaccard(&[], &[7]), 0.0);
    }

    #[test]
    fn jaccard_at_least_agrees_with_the_whole_merge() {
        // Pseudo-random sets of 0 to 300 values from a small range, so that they share many.
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..3000 {
            let range = 50 + next() % 400;
            let mut set = || {
                let n = next() % 300;
                let mut v: Vec<u32> = (0..n).map(|_| (next() % range) as u32).collect();
                v.sort_unstable();
                v.dedup();
                v
            };
            let (a, b) = (set(), set());
            for t in [0.3, 0.5, 0.8, 0.9, 1.0] {
                let whole = jaccard(&a, &b);
                assert_eq!(
                    jaccard_at_least(&a, &b, t),
                    (whole >= t).then_some(whole),
                    "{a:?} {b:?} {t}"
                );
            }
            // Equal sets, and one inside the other at exactly the threshold.
            assert_eq!(
                jaccard_at_least(&a, &a, 1.0),
                (!a.is_empty()).then_some(1.0)
            );
        }
        let big: Vec<u32> = (0..10).collect();
        assert_eq!(jaccard_at_least(&big[..8], &big, 0.8), Some(0.8));
        assert_eq!(jaccard_at_least(&big[..7], &big, 0.8), None);
    }

    #[test]
    fn cut_sets_drop_checks_and_merge_equal_cuts() {
        let check = crate::sketch::verify::CHECK_BIT;
        // Document 0: two hashes with equal top 32 bits, one other; document 1: a hash and its
        // check.
        let hashes = [
            0x0000_0001_0000_0000u64,
            0x0000_0001_0000_0001,
            0x4000_0000_0000_0000,
            0x0000_0000_8000_0000,
            check | 5,
        ];
        let ranges = Ranges::new(&[0, 3], &[3, 5], &hashes).unwrap();
        let (lens, values) = cut_sets(&ranges);
        assert_eq!(lens, vec![2, 1]);
        assert_eq!(values, vec![2, 0x8000_0000, 1]);
        assert_eq!(offsets_of(&lens), vec![0, 2, 3]);
    }

    #[test]
    fn sets_from_outside_are_checked() {
        assert!(ExactSets::new(2, &[0, 2, 3], &[1, 2, 3]).is_ok());
        assert!(ExactSets::new(2, &[0, 2], &[1, 2]).is_err());
        assert!(ExactSets::new(2, &[0, 2, 4], &[1, 2, 3]).is_err());
        assert!(ExactSets::new(2, &[0, 2, 3], &[2, 1, 3]).is_err());
        assert!(ExactSets::new(1, &[0, 2], &[1, 1]).is_err());
    }
}
