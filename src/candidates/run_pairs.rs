//! The candidate pairs of the rows one task of a cluster gathers by prefix hash: `(hash, node)`,
//! every node holding each hash there. The nodes of a hash form a run; each pair of a run is a
//! candidate. A pair that shares several hashes is listed once; runs over a cap are handed back
//! whole, for the caller to split by the next hashes of their nodes' lists.

/// The pairs of a task's runs, and what they leave to the caller.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct RunPairs {
    /// The candidate pairs `(a, b)`, a < b, sorted, each once.
    pub pairs: Vec<(i64, i64)>,
    /// The pairs the runs of at most the cap hold, a pair counted once for each hash it shares.
    pub listed: u64,
    /// The rows of the runs over the cap, `(hash, node)`, sorted.
    pub over_cap: Vec<(u64, i64)>,
}

/// The pairs of distinct nodes sharing a hash, from the rows `(hash, node)` (in any order; a
/// row given twice counts once), for the runs of at most `cap` nodes; the rows of larger runs
/// are returned apart. `rows` is sorted in place.
pub fn run_pairs(rows: &mut [(u64, i64)], cap: usize) -> RunPairs {
    rows.sort_unstable();
    let mut out = RunPairs::default();
    let mut run: Vec<i64> = Vec::new();
    let mut start = 0;
    while start < rows.len() {
        let hash = rows[start].0;
        let mut end = start + 1;
        while end < rows.len() && rows[end].0 == hash {
            end += 1;
        }
        run.clear();
        run.extend(rows[start..end].iter().map(|&(_, node)| node));
        run.dedup();
        if run.len() > cap {
            out.over_cap.extend(run.iter().map(|&node| (hash, node)));
        } else if run.len() >= 2 {
            let m = run.len() as u64;
            out.listed += m * (m - 1) / 2;
            for (i, &x) in run.iter().enumerate() {
                // The run is sorted: x is the smaller node of each of its pairs.
                out.pairs.extend(run[i + 1..].iter().map(|&y| (x, y)));
            }
        }
        start = end;
    }
    out.pairs.sort_unstable();
    out.pairs.dedup();
    out
}

/// A task's pairs `(a[p], b[p])` (in any order, either way round, repeats possible) over the
/// nodes they name: `(nodes, at_a, at_b)`, the distinct nodes sorted and each distinct pair
/// once, as positions in `nodes` (`at_a < at_b`), sorted.
pub fn local_pairs(a: &[i64], b: &[i64]) -> (Vec<i64>, Vec<u32>, Vec<u32>) {
    let mut nodes: Vec<i64> = a.iter().chain(b).copied().collect();
    nodes.sort_unstable();
    nodes.dedup();
    let at = |v: i64| nodes.binary_search(&v).unwrap_or_default() as u32;
    let mut pairs: Vec<(u32, u32)> = a
        .iter()
        .zip(b)
        .filter(|(x, y)| x != y)
        .map(|(&x, &y)| {
            let (x, y) = (at(x), at(y));
            (x.min(y), x.max(y))
        })
        .collect();
    pairs.sort_unstable();
    pairs.dedup();
    let (at_a, at_b) = pairs.into_iter().unzip();
    (nodes, at_a, at_b)
}

/// A task's pairs of global rows, each once, grouped by the partitions of their two rows (see
/// [`pair_blocks`]).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct PairBlocks {
    /// The smaller row of each pair.
    pub a: Vec<i64>,
    /// The larger row of each pair.
    pub b: Vec<i64>,
    /// `(lo, hi, i, j)`: the pairs `lo..hi` join a row of partition i and one of partition j.
    pub blocks: Vec<[usize; 4]>,
}

/// The partition holding global row `row`, partition j holding the rows `starts[j]..starts[j +
/// 1]` (the last, those from its start on); `None` before the first.
fn partition_of(starts: &[i64], row: i64) -> Option<usize> {
    starts.partition_point(|&s| s <= row).checked_sub(1)
}

/// A task's pairs `(a[p], b[p])` of global rows (either way round, repeats possible), each
/// distinct pair once as `(a, b)` with `a < b`, in order of the partitions of their two rows
/// (`starts`: each partition's first row), then of `(a, b)`: one sort, where a sort of the
/// distinct rows, a binary search of each and a second sort of the pairs took three times as
/// long. A row paired with itself is left out. `None` when a row lies before the first
/// partition.
pub fn pair_blocks(a: &[i64], b: &[i64], starts: &[i64]) -> Option<PairBlocks> {
    let mut keyed: Vec<(u32, u32, i64, i64)> = Vec::with_capacity(a.len().min(b.len()));
    for (&x, &y) in a.iter().zip(b).filter(|(x, y)| x != y) {
        let (x, y) = (x.min(y), x.max(y));
        let (i, j) = (partition_of(starts, x)?, partition_of(starts, y)?);
        keyed.push((u32::try_from(i).ok()?, u32::try_from(j).ok()?, x, y));
    }
    keyed.sort_unstable();
    keyed.dedup();
    let mut out = PairBlocks {
        a: keyed.iter().map(|p| p.2).collect(),
        b: keyed.iter().map(|p| p.3).collect(),
        blocks: Vec::new(),
    };
    let mut lo = 0;
    for run in keyed.chunk_by(|x, y| (x.0, x.1) == (y.0, y.1)) {
        out.blocks
            .push([lo, lo + run.len(), run[0].0 as usize, run[0].1 as usize]);
        lo += run.len();
    }
    Some(out)
}

/// The odd constant that spreads a pair's `a ^ b` over the bits before its top bit is read (the
/// `_SPREAD` of `neardup.dask_exchange`).
const SPREAD: u64 = 0x9E37_79B9_7F4A_7C15;

/// The partition that checks each pair `(a[p], b[p])` of global rows, partition j holding the
/// rows `starts[j]..starts[j + 1]` (the last, those from its start on): that of `a[p]` or of
/// `b[p]`, as the top bit of `(a ^ b) * SPREAD` says (`destinations(a ^ b, 2)` of
/// `neardup.dask_exchange`), so that the partitions get even shares. A count row (`a[p] < 0`)
/// goes to partition 0. `None` when a row lies before the first partition.
pub fn route_pairs(a: &[i64], b: &[i64], starts: &[i64]) -> Option<Vec<i64>> {
    let part = |row: i64| partition_of(starts, row).map(|j| j as i64);
    a.iter()
        .zip(b)
        .map(|(&a, &b)| {
            if a < 0 {
                return Some(0);
            }
            let side = if ((a ^ b) as u64).wrapping_mul(SPREAD) >> 63 == 1 {
                b
            } else {
                a
            };
            part(side)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::xorshift64 as rng;
    use std::collections::{BTreeMap, BTreeSet};

    #[test]
    fn pair_blocks_are_the_distinct_pairs_by_partitions() {
        let mut state = 17u64;
        for round in 0..200 {
            let parts = 1 + (rng(&mut state) % 6) as usize;
            let mut starts = vec![0i64];
            for _ in 1..parts {
                let last = *starts.last().unwrap();
                starts.push(last + (rng(&mut state) % 9) as i64);
            }
            let rows = (*starts.last().unwrap() + 1 + (rng(&mut state) % 9) as i64) as u64;
            let n = (rng(&mut state) % 60) as usize;
            let (mut a, mut b) = (Vec::new(), Vec::new());
            for _ in 0..n {
                a.push((rng(&mut state) % rows) as i64);
                b.push((rng(&mut state) % rows) as i64);
            }
            let got = pair_blocks(&a, &b, &starts).unwrap();
            // By brute force: the partition of a row is the last whose start is at most it.
            let part = |r: i64| starts.iter().rposition(|&s| s <= r).unwrap();
            let want: BTreeSet<(usize, usize, i64, i64)> = a
                .iter()
                .zip(&b)
                .filter(|(x, y)| x != y)
                .map(|(&x, &y)| (x.min(y), x.max(y)))
                .map(|(x, y)| (part(x), part(y), x, y))
                .collect();
            let listed: Vec<(usize, usize, i64, i64)> = got
                .blocks
                .iter()
                .flat_map(|&[lo, hi, i, j]| (lo..hi).map(move |p| (i, j, p)))
                .map(|(i, j, p)| (i, j, got.a[p], got.b[p]))
                .collect();
            assert_eq!(
                listed,
                want.iter().copied().collect::<Vec<_>>(),
                "round {round}"
            );
            assert_eq!(got.blocks.last().map_or(0, |k| k[1]), got.a.len());
            let keys: Vec<(usize, usize)> = got.blocks.iter().map(|k| (k[2], k[3])).collect();
            assert!(
                keys.windows(2).all(|w| w[0] < w[1]),
                "one block per two partitions"
            );
        }
        assert_eq!(
            pair_blocks(&[3], &[1], &[2, 5]),
            None,
            "a row before the first partition"
        );
    }

    /// What [`run_pairs`] finds, as sets: pairs, pairs listed, rows over the cap.
    type Found = (BTreeSet<(i64, i64)>, u64, BTreeSet<(u64, i64)>);

    /// Every pair of distinct nodes of each hash, by brute force over the rows.
    fn brute(rows: &[(u64, i64)], cap: usize) -> Found {
        let mut by_hash: BTreeMap<u64, BTreeSet<i64>> = BTreeMap::new();
        for &(h, v) in rows {
            by_hash.entry(h).or_default().insert(v);
        }
        let (mut pairs, mut listed, mut over) = (BTreeSet::new(), 0, BTreeSet::new());
        for (h, nodes) in by_hash {
            let nodes: Vec<i64> = nodes.into_iter().collect();
            if nodes.len() > cap {
                over.extend(nodes.iter().map(|&v| (h, v)));
                continue;
            }
            for i in 0..nodes.len() {
                for j in i + 1..nodes.len() {
                    pairs.insert((nodes[i], nodes[j]));
                    listed += 1;
                }
            }
        }
        (pairs, listed, over)
    }

    #[test]
    fn a_hand_worked_task() {
        // Hash 7: nodes 3, 1, 2 (pairs 1-2, 1-3, 2-3); hash 9: nodes 2, 3 (2-3 again) and a row
        // given twice; hash 4: node 5 alone; hash 8: four nodes, over a cap of 3.
        let mut rows = vec![
            (7, 3),
            (9, 2),
            (7, 1),
            (4, 5),
            (9, 3),
            (7, 2),
            (9, 3),
            (8, 10),
            (8, 11),
            (8, 12),
            (8, 13),
        ];
        let got = run_pairs(&mut rows, 3);
        assert_eq!(got.pairs, vec![(1, 2), (1, 3), (2, 3)]);
        assert_eq!(got.listed, 4);
        assert_eq!(got.over_cap, vec![(8, 10), (8, 11), (8, 12), (8, 13)]);
    }

    #[test]
    fn random_tasks_match_brute_force() {
        let mut s = 11u64;
        for round in 0..200 {
            let n = (rng(&mut s) % 300) as usize;
            let hashes = 1 + rng(&mut s) % 40;
            let nodes = 1 + rng(&mut s) % 60;
            let mut rows: Vec<(u64, i64)> = (0..n)
                .map(|_| (rng(&mut s) % hashes, (rng(&mut s) % nodes) as i64 - 5))
                .collect();
            let cap = 2 + (round % 9);
            let (pairs, listed, over) = brute(&rows, cap);
            let got = run_pairs(&mut rows, cap);
            assert_eq!(got.pairs, pairs.into_iter().collect::<Vec<_>>());
            assert_eq!(got.listed, listed);
            assert_eq!(got.over_cap, over.into_iter().collect::<Vec<_>>());
        }
    }

    #[test]
    fn local_pairs_name_each_pair_once() {
        // Pairs 30-10 (twice, once each way round), 10-20, and 20-20 (no pair).
        let (nodes, at_a, at_b) = local_pairs(&[30, 10, 10, 20], &[10, 30, 20, 20]);
        assert_eq!(nodes, vec![10, 20, 30]);
        assert_eq!((at_a, at_b), (vec![0, 0], vec![1, 2]));
    }

    #[test]
    fn no_rows_no_pairs() {
        assert_eq!(run_pairs(&mut [], 4), RunPairs::default());
    }

    #[test]
    fn pairs_are_routed_to_the_partition_of_one_of_their_rows() {
        // Partitions of rows 0..10, 10..25 and 25 on, written out by hand; each pair goes to
        // the partition of the side the top bit of (a ^ b) * SPREAD names.
        let starts = [0i64, 10, 25];
        let part = |row: i64| match row {
            0..=9 => 0,
            10..=24 => 1,
            _ => 2,
        };
        let mut seed = 11u64;
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for _ in 0..2_000 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let x = (seed >> 33) as i64 % 40;
            let y = x + 1 + (seed >> 13) as i64 % 20;
            a.push(x);
            b.push(y);
        }
        a.push(-2);
        b.push(7);
        let got = route_pairs(&a, &b, &starts).unwrap();
        let mut by_b = 0;
        for p in 0..a.len() - 1 {
            let top = ((a[p] ^ b[p]) as u64).wrapping_mul(SPREAD) >> 63;
            let want = part(if top == 1 { b[p] } else { a[p] });
            assert_eq!(got[p], want, "pair {} {}", a[p], b[p]);
            by_b += top;
        }
        // The count row goes to partition 0; the sides are taken about evenly.
        assert_eq!(got[a.len() - 1], 0);
        assert!((800..1_200).contains(&by_b), "{by_b}");
        assert_eq!(route_pairs(&[3], &[4], &[5]), None);
        assert_eq!(route_pairs(&[3], &[4], &[]), None);
    }
}
