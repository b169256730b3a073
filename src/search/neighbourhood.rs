//! What lies around each fingerprint, without listing the pairs: the distance of each value's
//! nearest other value, the pairs at each distance and a few sample pairs, in memory linear in
//! the values however many pairs there are (the report's figures beyond k).

use std::sync::atomic::{AtomicU8, Ordering};

use crate::error::Result;
use crate::fingerprint::encoders::mix64;
use crate::search::limits::{check_work, default_work_limit, WORK_REMEDY};
use crate::search::pairs::walk;
use crate::search::plan::{Plan, MAX_K};

/// No other value within the search's k.
pub const NONE: u8 = u8::MAX;

/// The neighbourhood of each of a set of distinct values within k.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Neighbourhood {
    /// For each value, the distance to its nearest other value, or [`NONE`] beyond k.
    pub nearest: Vec<u8>,
    /// Pairs of rows at each distance 1..=k (index d), each pair of values weighing the product
    /// of their weights (their copies); index 0 is left to the caller (copies of one value).
    pub pairs: Vec<u64>,
    /// At each distance, up to the asked number of pairs (a < b), the same on every run: those
    /// with the smallest hash of (a, b), a fixed pseudo-random choice.
    pub samples: Vec<Vec<(u32, u32)>>,
}

/// One table's share.
#[derive(Default)]
struct Part {
    pairs: [u64; MAX_K as usize + 1],
    samples: Vec<Vec<(u64, u32, u32)>>,
}

/// The neighbourhood within `k` of the ascending distinct values `distinct`, rows weighing
/// `weights` (the copies of each value); `per_distance` sample pairs at each distance. Refused
/// as `find_all` is when the search's estimated work passes the default limit.
pub fn neighbourhood(
    distinct: &[u64],
    weights: &[u64],
    k: u32,
    plan: &Plan,
    per_distance: usize,
) -> Result<Neighbourhood> {
    assert_eq!(distinct.len(), weights.len(), "a weight for each value");
    let limit = default_work_limit(distinct.len());
    check_work(distinct, k, plan, Some(limit), WORK_REMEDY)?;
    let nearest: Vec<AtomicU8> = distinct.iter().map(|_| AtomicU8::new(NONE)).collect();
    let keep = |part: &mut Part, d: usize, a: u32, b: u32| {
        if part.samples.is_empty() {
            part.samples = vec![Vec::new(); k as usize + 1];
        }
        let at = &mut part.samples[d];
        at.push((mix64((u64::from(a) << 32) | u64::from(b)), a, b));
        if at.len() >= 2 * per_distance.max(1) {
            at.sort_unstable();
            at.truncate(per_distance);
        }
    };
    let parts = walk(distinct, k, plan, |part: &mut Part, a, b, d| {
        nearest[a as usize].fetch_min(d, Ordering::Relaxed);
        nearest[b as usize].fetch_min(d, Ordering::Relaxed);
        let w = weights[a as usize].saturating_mul(weights[b as usize]);
        part.pairs[d as usize] = part.pairs[d as usize].saturating_add(w);
        keep(part, d as usize, a, b);
    })?;
    let mut pairs = vec![0u64; k as usize + 1];
    let mut chosen: Vec<Vec<(u64, u32, u32)>> = vec![Vec::new(); k as usize + 1];
    for part in parts {
        for (total, &found) in pairs.iter_mut().zip(&part.pairs) {
            *total = total.saturating_add(found);
        }
        for (all, some) in chosen.iter_mut().zip(part.samples) {
            all.extend(some);
        }
    }
    let samples = chosen
        .into_iter()
        .map(|mut at| {
            at.sort_unstable();
            at.truncate(per_distance);
            at.into_iter().map(|(_, a, b)| (a, b)).collect()
        })
        .collect();
    Ok(Neighbourhood {
        nearest: nearest.into_iter().map(AtomicU8::into_inner).collect(),
        pairs,
        samples,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fingerprint::hamming::hamming;
    use crate::search::plan::Workload;
    use crate::testing::xorshift64;

    #[test]
    fn matches_brute_force_over_every_pair() {
        let mut state = 7u64;
        // Clustered values, so that every distance up to k has pairs.
        let base = xorshift64(&mut state);
        let mut distinct: Vec<u64> = (0..600)
            .map(|_| base ^ (xorshift64(&mut state) & xorshift64(&mut state) & 0xFFFF_FFFF))
            .collect();
        distinct.sort_unstable();
        distinct.dedup();
        let weights: Vec<u64> = (0..distinct.len() as u64).map(|i| 1 + i % 3).collect();
        for k in [3, 8, 12] {
            let plan = Plan::choose(k, distinct.len() as u64, None, Workload::Batch).unwrap();
            let got = neighbourhood(&distinct, &weights, k as u32, &plan, 2).unwrap();
            let mut nearest = vec![NONE; distinct.len()];
            let mut pairs = vec![0u64; k as usize + 1];
            let mut all: Vec<Vec<(u64, u32, u32)>> = vec![Vec::new(); k as usize + 1];
            for a in 0..distinct.len() {
                for b in a + 1..distinct.len() {
                    let d = hamming(distinct[a], distinct[b]);
                    if d <= k as u32 {
                        nearest[a] = nearest[a].min(d as u8);
                        nearest[b] = nearest[b].min(d as u8);
                        pairs[d as usize] += weights[a] * weights[b];
                        let key = mix64(((a as u64) << 32) | b as u64);
                        all[d as usize].push((key, a as u32, b as u32));
                    }
                }
            }
            assert_eq!(got.nearest, nearest, "k = {k}");
            assert_eq!(got.pairs, pairs, "k = {k}");
            for (d, mut at) in all.into_iter().enumerate() {
                at.sort_unstable();
                let want: Vec<(u32, u32)> = at.iter().take(2).map(|&(_, a, b)| (a, b)).collect();
                assert_eq!(got.samples[d], want, "k = {k}, d = {d}");
            }
            let at = pairs.iter().filter(|&&p| p > 0).count();
            assert!(at >= k as usize / 2, "k = {k}: {pairs:?}");
        }
    }
}
