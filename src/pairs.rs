//! Batch mode: every pair within Hamming distance k in one pass per table, and clusters.
//!
//! Identical fingerprints are collapsed first, so the tables hold distinct values. Each table
//! permutes the distinct fingerprints, sorts them by its prefix and walks the runs that share
//! it, checking full distances inside each run. A pair that agrees on the prefix blocks of
//! several tables is reported only by the first of them: a table checks the earlier tables'
//! prefix masks against the pair's difference, so no global set of seen pairs is needed. The
//! pairs of distinct values are then expanded to every copy.

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::hamming::hamming;
use crate::plan::Plan;
use crate::table::{lower_bound, radix_sort_top_with};

/// Fingerprints grouped by value: `distinct[g]` occurs at rows `rows[starts[g]..starts[g + 1]]`,
/// in ascending row order.
pub struct Groups {
    pub distinct: Vec<u64>,
    pub starts: Vec<usize>,
    pub rows: Vec<usize>,
}

impl Groups {
    /// Groups the rows of `fingerprints` by value.
    pub fn new(fingerprints: &[u64]) -> Self {
        let mut order: Vec<(u64, usize)> = fingerprints.iter().copied().zip(0..).collect();
        if order.len() > 1 << 15 {
            order.par_sort_unstable();
        } else {
            order.sort_unstable();
        }
        let mut distinct = Vec::new();
        let mut starts = Vec::new();
        let mut rows = Vec::with_capacity(order.len());
        for (i, &(fp, row)) in order.iter().enumerate() {
            if i == 0 || order[i - 1].0 != fp {
                distinct.push(fp);
                starts.push(i);
            }
            rows.push(row);
        }
        starts.push(order.len());
        Groups {
            distinct,
            starts,
            rows,
        }
    }

    pub fn rows_of(&self, g: usize) -> &[usize] {
        &self.rows[self.starts[g]..self.starts[g + 1]]
    }
}

/// Pairs of rows: `i[p] < j[p]` at distance `distance[p]`, sorted by (i, j).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Pairs {
    pub i: Vec<i64>,
    pub j: Vec<i64>,
    pub distance: Vec<u8>,
}

fn check_plan(k: u32, plan: &Plan) -> Result<()> {
    if plan.k() < k {
        return Err(Error::invalid(format!(
            "plan is built for k={} and cannot find pairs at k={k}; build it with k >= {k}",
            plan.k()
        )));
    }
    Ok(())
}

/// Every pair (a, b), a < b, of indices into the ascending distinct values `distinct` within
/// distance `k`, with its distance, in no particular order.
pub fn distinct_pairs(distinct: &[u64], k: u32, plan: &Plan) -> Result<Vec<(usize, usize, u8)>> {
    check_plan(k, plan)?;
    let tables = plan.tables();
    let found: Vec<Vec<(usize, usize, u8)>> = tables
        .par_iter()
        .enumerate()
        // Each worker keeps its two table-sized buffers from one table to the next.
        .map_init(
            || (Vec::new(), Vec::new()),
            |(v, scratch): &mut (Vec<u64>, Vec<u64>), (t, layout)| {
                let perm = &layout.permutation;
                // The prefixes of the earlier tables, in this table's bit order.
                let earlier: Vec<u64> = tables[..t]
                    .iter()
                    .map(|e| perm.apply(e.prefix_mask))
                    .collect();
                v.clear();
                v.extend(distinct.iter().map(|&x| perm.apply(x)));
                radix_sort_top_with(v, layout.prefix_bits, scratch);
                let mut out = Vec::new();
                let mut start = 0;
                while start < v.len() {
                    let prefix = layout.prefix_of(v[start]);
                    let mut end = start + 1;
                    while end < v.len() && layout.prefix_of(v[end]) == prefix {
                        end += 1;
                    }
                    let run = &v[start..end];
                    for (x, &a) in run.iter().enumerate() {
                        for &b in &run[x + 1..] {
                            let d = hamming(a, b);
                            if d > k {
                                continue;
                            }
                            let diff = a ^ b;
                            if earlier.iter().any(|&m| diff & m == 0) {
                                continue;
                            }
                            let ia = lower_bound(distinct, perm.invert(a));
                            let ib = lower_bound(distinct, perm.invert(b));
                            out.push((ia.min(ib), ia.max(ib), d as u8));
                        }
                    }
                    start = end;
                }
                out
            },
        )
        .collect();
    Ok(found.concat())
}

/// Every pair of rows of `fingerprints` within distance `k`, each once, sorted by (i, j).
pub fn find_all(fingerprints: &[u64], k: u32, plan: &Plan) -> Result<Pairs> {
    check_plan(k, plan)?;
    let groups = Groups::new(fingerprints);
    let pairs = distinct_pairs(&groups.distinct, k, plan)?;
    let mut rows: Vec<(u64, u64, u8)> = Vec::new();
    for g in 0..groups.distinct.len() {
        let r = groups.rows_of(g);
        for (x, &a) in r.iter().enumerate() {
            for &b in &r[x + 1..] {
                rows.push((a as u64, b as u64, 0));
            }
        }
    }
    for &(a, b, d) in &pairs {
        for &ra in groups.rows_of(a) {
            for &rb in groups.rows_of(b) {
                rows.push((ra.min(rb) as u64, ra.max(rb) as u64, d));
            }
        }
    }
    if rows.len() > 1 << 15 {
        rows.par_sort_unstable_by_key(|&(i, j, _)| (i, j));
    } else {
        rows.sort_unstable_by_key(|&(i, j, _)| (i, j));
    }
    let mut out = Pairs {
        i: Vec::with_capacity(rows.len()),
        j: Vec::with_capacity(rows.len()),
        distance: Vec::with_capacity(rows.len()),
    };
    for (i, j, d) in rows {
        out.i.push(i as i64);
        out.j.push(j as i64);
        out.distance.push(d);
    }
    Ok(out)
}

/// Union-find over rows; the root of a set is its smallest row.
pub struct UnionFind {
    parent: Vec<usize>,
}

impl UnionFind {
    pub fn new(n: usize) -> Self {
        UnionFind {
            parent: (0..n).collect(),
        }
    }

    pub fn find(&mut self, mut x: usize) -> usize {
        while self.parent[x] != x {
            let up = self.parent[self.parent[x]];
            self.parent[x] = up;
            x = up;
        }
        x
    }

    pub fn union(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra < rb {
            self.parent[rb] = ra;
        } else if rb < ra {
            self.parent[ra] = rb;
        }
    }
}

/// The cluster label of each row: rows linked by chains of pairs within `k` share a label, the
/// smallest row of their cluster.
pub fn cluster(fingerprints: &[u64], k: u32, plan: &Plan) -> Result<Vec<i64>> {
    check_plan(k, plan)?;
    let groups = Groups::new(fingerprints);
    let pairs = distinct_pairs(&groups.distinct, k, plan)?;
    let mut uf = UnionFind::new(fingerprints.len());
    for g in 0..groups.distinct.len() {
        let r = groups.rows_of(g);
        for &x in &r[1..] {
            uf.union(r[0], x);
        }
    }
    for &(a, b, _) in &pairs {
        uf.union(groups.rows_of(a)[0], groups.rows_of(b)[0]);
    }
    Ok((0..fingerprints.len()).map(|r| uf.find(r) as i64).collect())
}

/// The cluster label of each of `n` rows linked by the pairs `(i[p], j[p])`: the smallest row
/// of its connected component.
pub fn components(n: usize, i: &[i64], j: &[i64]) -> Result<Vec<i64>> {
    if i.len() != j.len() {
        return Err(Error::invalid(format!("i and j must have the same length, got {} and {}", i.len(), j.len())));
    }
    if let Some(bad) = i.iter().chain(j).find(|&&r| r < 0 || r as u64 >= n as u64) {
        return Err(Error::invalid(format!("row {bad} out of range for {n} rows")));
    }
    let mut uf = UnionFind::new(n);
    for (&a, &b) in i.iter().zip(j) {
        uf.union(a as usize, b as usize);
    }
    Ok((0..n).map(|r| uf.find(r) as i64).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rng(seed: &mut u64) -> u64 {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed
    }

    fn brute(fps: &[u64], k: u32) -> Pairs {
        let mut out = Pairs::default();
        for i in 0..fps.len() {
            for j in i + 1..fps.len() {
                let d = hamming(fps[i], fps[j]);
                if d <= k {
                    out.i.push(i as i64);
                    out.j.push(j as i64);
                    out.distance.push(d as u8);
                }
            }
        }
        out
    }

    fn planted(n: usize, k: u32, seed: &mut u64) -> Vec<u64> {
        let mut fps: Vec<u64> = Vec::new();
        while fps.len() < n {
            let base = rng(seed);
            fps.push(base);
            for d in 0..=k + 1 {
                let mut x = base;
                let mut flipped = 0u64;
                while flipped.count_ones() < d {
                    flipped |= 1 << (rng(seed) % 64);
                }
                x ^= flipped;
                fps.push(x);
            }
        }
        fps.truncate(n);
        fps
    }

    #[test]
    fn find_all_matches_brute_force() {
        let mut seed = 12345;
        for k in 0..=8u32 {
            let fps = planted(600, k, &mut seed);
            let want = brute(&fps, k);
            let mut plans = vec![Plan::blocks(i64::from(k) + 1, i64::from(k)).unwrap()];
            plans.push(Plan::blocks(i64::from(k) + 2, i64::from(k)).unwrap());
            if (1..=4).contains(&k) {
                plans.push(
                    Plan::nested(&[i64::from(k) + 1, i64::from(k) + 1], i64::from(k)).unwrap(),
                );
            }
            if k == 3 {
                plans.push(Plan::blocks(6, 3).unwrap());
                plans.push(Plan::blocks(8, 6).unwrap());
            }
            for plan in &plans {
                assert_eq!(find_all(&fps, k, plan).unwrap(), want, "k={k} plan={plan}");
            }
        }
    }

    #[test]
    fn copies_and_shared_high_bits() {
        let plan = Plan::blocks(4, 3).unwrap();
        let fps = vec![42u64; 30];
        let got = find_all(&fps, 3, &plan).unwrap();
        assert_eq!(got, brute(&fps, 3));
        assert_eq!(got.i.len(), 30 * 29 / 2);
        let mut seed = 7;
        let fps: Vec<u64> = (0..400)
            .map(|_| 0xdead_beef_0000_0000 | (rng(&mut seed) & 0xfff))
            .collect();
        assert_eq!(find_all(&fps, 3, &plan).unwrap(), brute(&fps, 3));
        assert_eq!(find_all(&[], 3, &plan).unwrap(), Pairs::default());
        assert!(find_all(&fps, 4, &plan).is_err());
    }

    #[test]
    fn cluster_labels_are_smallest_rows() {
        let plan = Plan::blocks(4, 3).unwrap();
        // 0b0 ~ 0b111 (3) ~ 0b111111 (3): one chain; 1<<40 alone is far from 0b0? distance 1.
        let fps = [u64::MAX, 0b111, 0, 0b11_1111, u64::MAX, 0xffff_0000];
        assert_eq!(cluster(&fps, 3, &plan).unwrap(), [0, 1, 1, 1, 0, 5]);
    }
}
