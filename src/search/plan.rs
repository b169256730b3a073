//! Block layouts, permutations and the planner of the permuted-table index.
//!
//! Two fingerprints within Hamming distance k differ in at most k of any b blocks of their bits,
//! so at least b − k blocks agree exactly. A *table* moves one choice of b − k blocks to the high
//! end of the word (its *prefix*); with all T = C(b, k) choices, every pair within k shares the
//! whole prefix of at least one table, and a table finds its candidates among the entries that
//! share the query's prefix (Manku, Jain and Das Sarma, WWW 2007).
//!
//! A layout may be *nested*: the low bits a table leaves after its prefix still hold at most k
//! differing bits, so they can be split again into b₂ blocks of which b₂ − k are moved up, giving
//! C(b₁, k)·C(b₂, k) tables with longer prefixes.
//!
//! Blocks are numbered from the high end: block 0 holds bit 63 downwards, and when 64 bits do not
//! divide evenly the first blocks are one bit wider (6 blocks: 11, 11, 11, 11, 10, 10 bits).

use std::fmt;

use crate::error::{Error, Result};

/// The largest k the index supports.
pub const MAX_K: u32 = 16;
/// The most tables a plan may have.
pub const MAX_TABLES: usize = 1024;
/// Without a memory budget, a plan for queries spends at most this many bytes per fingerprint
/// (126 tables): beyond it more tables buy little and memory runs out first.
pub const DEFAULT_BYTES_PER_FINGERPRINT: u64 = 1024;
/// The most levels of nested splitting.
pub const MAX_LEVELS: usize = 4;
/// Bytes per indexed fingerprint besides the tables: the fingerprint and id of each entry.
/// Looking entries up by id (explicit ids, removals, membership tests) adds 4 more, the
/// entry's position in id order.
pub const MAP_BYTES: u64 = 16;

/// A permutation of the 64 bits of a fingerprint, stored as contiguous moves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Permutation {
    /// `order[i]` is the source bit that lands on output bit `63 - i`.
    order: [u8; 64],
    /// (source low bit, width, destination low bit) of each maximal contiguous run.
    moves: Vec<(u32, u32, u32)>,
    /// The same runs, destination to source.
    inverse: Vec<(u32, u32, u32)>,
}

fn mask(width: u32) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

impl Permutation {
    fn from_order(order: [u8; 64]) -> Self {
        let mut moves = Vec::new();
        let mut i = 0usize;
        while i < 64 {
            let mut j = i + 1;
            while j < 64 && order[j] + 1 == order[j - 1] {
                j += 1;
            }
            // Output bits 63-i down to 64-j come from source bits order[i] down to order[j-1].
            let width = (j - i) as u32;
            let src_lo = order[j - 1] as u32;
            let dst_lo = (64 - j) as u32;
            moves.push((src_lo, width, dst_lo));
            i = j;
        }
        let inverse = moves.iter().map(|&(s, w, d)| (d, w, s)).collect();
        Permutation {
            order,
            moves,
            inverse,
        }
    }

    /// The identity.
    pub fn identity() -> Self {
        let mut order = [0u8; 64];
        for (i, o) in order.iter_mut().enumerate() {
            *o = (63 - i) as u8;
        }
        Self::from_order(order)
    }

    /// Source bit of each output bit, from output bit 63 down to 0.
    pub fn order(&self) -> &[u8; 64] {
        &self.order
    }

    /// Whether this is the identity.
    pub fn is_identity(&self) -> bool {
        self.moves.len() == 1
    }

    /// Permutes `x`.
    #[inline]
    pub fn apply(&self, x: u64) -> u64 {
        if self.moves.len() == 1 {
            return x;
        }
        let mut out = 0;
        for &(s, w, d) in &self.moves {
            out |= ((x >> s) & mask(w)) << d;
        }
        out
    }

    /// Undoes [`Permutation::apply`].
    #[inline]
    pub fn invert(&self, y: u64) -> u64 {
        if self.inverse.len() == 1 {
            return y;
        }
        let mut out = 0;
        for &(s, w, d) in &self.inverse {
            out |= ((y >> s) & mask(w)) << d;
        }
        out
    }

    /// The number of contiguous moves (1 for the identity).
    pub fn moves(&self) -> usize {
        self.moves.len()
    }
}

/// One table of a plan: a permutation whose top `prefix_bits` bits are the blocks it matches on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableLayout {
    pub permutation: Permutation,
    pub prefix_bits: u32,
    /// The source bits of the prefix, as a mask over the unpermuted fingerprint.
    pub prefix_mask: u64,
}

impl TableLayout {
    fn new(order: [u8; 64], prefix_bits: u32) -> Self {
        let prefix_mask = order[..prefix_bits as usize]
            .iter()
            .fold(0u64, |m, &b| m | (1u64 << b));
        TableLayout {
            permutation: Permutation::from_order(order),
            prefix_bits,
            prefix_mask,
        }
    }

    /// The prefix of a permuted fingerprint.
    #[inline]
    pub fn prefix_of(&self, permuted: u64) -> u64 {
        if self.prefix_bits == 0 {
            0
        } else {
            permuted >> (64 - self.prefix_bits)
        }
    }

    /// The source bit ranges (low bit, width) of the prefix, from the high end.
    pub fn prefix_ranges(&self) -> Vec<(u32, u32)> {
        ranges(&self.permutation.order()[..self.prefix_bits as usize])
    }
}

/// Source bit ranges (low bit, width) of a sequence of source bits, contiguous descending runs.
fn ranges(bits: &[u8]) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < bits.len() {
        let mut j = i + 1;
        while j < bits.len() && bits[j] + 1 == bits[j - 1] {
            j += 1;
        }
        out.push((bits[j - 1] as u32, (j - i) as u32));
        i = j;
    }
    out
}

/// Sizes of `blocks` blocks over `bits` bits, as even as possible, wider blocks first.
pub fn block_sizes(bits: u32, blocks: u32) -> Vec<u32> {
    (0..blocks)
        .map(|i| bits / blocks + u32::from(i < bits % blocks))
        .collect()
}

/// All ways to choose `r` of `n` indices, in lexicographic order.
fn combinations(n: usize, r: usize) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    let mut c: Vec<usize> = (0..r).collect();
    if r > n {
        return out;
    }
    loop {
        out.push(c.clone());
        let mut i = r;
        loop {
            if i == 0 {
                return out;
            }
            i -= 1;
            if c[i] != i + n - r {
                break;
            }
        }
        c[i] += 1;
        for j in i + 1..r {
            c[j] = c[j - 1] + 1;
        }
    }
}

fn binomial(n: u64, r: u64) -> u64 {
    let r = r.min(n.saturating_sub(r));
    let mut acc: u128 = 1;
    for i in 0..r {
        acc = acc * u128::from(n - i) / u128::from(i + 1);
        if acc > u128::from(u64::MAX) {
            return u64::MAX;
        }
    }
    acc as u64
}

/// A set of permuted tables that finds every pair within Hamming distance `k`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    k: u32,
    levels: Vec<u32>,
    tables: Vec<TableLayout>,
}

/// What a plan is chosen for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// Queries against a standing index.
    Query,
    /// One all-pairs pass ([`crate::search::pairs`]).
    Batch,
}

pub fn check_k(k: i64) -> Result<u32> {
    if !(0..=i64::from(MAX_K)).contains(&k) {
        return Err(Error::invalid(format!("k must be in 0..={MAX_K}, got {k}")));
    }
    Ok(k as u32)
}

impl Plan {
    /// The layout of `levels[0]` blocks, each table's low bits split again into `levels[1]`
    /// blocks, and so on; C(levels[0], k)·C(levels[1], k)·… tables.
    pub fn nested(levels: &[i64], k: i64) -> Result<Self> {
        let k = check_k(k)?;
        if levels.is_empty() || levels.len() > MAX_LEVELS {
            return Err(Error::invalid(format!(
                "a plan has 1 to {MAX_LEVELS} levels of blocks, got {}",
                levels.len()
            )));
        }
        let mut count: u64 = 1;
        let mut levels_u = Vec::with_capacity(levels.len());
        for &b in levels {
            if b <= i64::from(k) || b > 64 {
                return Err(Error::invalid(format!(
                    "blocks must be in {}..=64 for k={k} (at least k + 1 so that one block agrees), got {b}",
                    k + 1
                )));
            }
            count = count.saturating_mul(binomial(b as u64, u64::from(k)));
            levels_u.push(b as u32);
        }
        if count > MAX_TABLES as u64 {
            return Err(Error::invalid(format!(
                "blocks {levels:?} with k={k} need {count} tables; a plan has at most {MAX_TABLES}"
            )));
        }
        // Each level refines every table of the level above.
        let mut tables: Vec<([u8; 64], u32)> = vec![(Permutation::identity().order, 0)];
        for &b in &levels_u {
            let mut next = Vec::new();
            for (order, prefix) in &tables {
                let rest = &order[*prefix as usize..];
                if (rest.len() as u32) < b {
                    return Err(Error::invalid(format!(
                        "cannot split the {} low bits of a table into {b} blocks",
                        rest.len()
                    )));
                }
                let sizes = block_sizes(rest.len() as u32, b);
                let mut blocks: Vec<&[u8]> = Vec::new();
                let mut at = 0usize;
                for &s in &sizes {
                    blocks.push(&rest[at..at + s as usize]);
                    at += s as usize;
                }
                for chosen in combinations(b as usize, (b - k) as usize) {
                    let mut new_order = [0u8; 64];
                    new_order[..*prefix as usize].copy_from_slice(&order[..*prefix as usize]);
                    let mut at = *prefix as usize;
                    let mut extra = 0u32;
                    for &c in &chosen {
                        new_order[at..at + blocks[c].len()].copy_from_slice(blocks[c]);
                        at += blocks[c].len();
                        extra += blocks[c].len() as u32;
                    }
                    for (i, block) in blocks.iter().enumerate() {
                        if !chosen.contains(&i) {
                            new_order[at..at + block.len()].copy_from_slice(block);
                            at += block.len();
                        }
                    }
                    next.push((new_order, prefix + extra));
                }
            }
            tables = next;
        }
        let tables = tables
            .into_iter()
            .map(|(o, p)| TableLayout::new(o, p))
            .collect();
        Ok(Plan {
            k,
            levels: levels_u,
            tables,
        })
    }

    /// `blocks` blocks as even as 64 bits allow, one table for each choice of `blocks - k`.
    pub fn blocks(blocks: i64, k: i64) -> Result<Self> {
        Self::nested(&[blocks], k)
    }

    /// The plan that minimises the expected work of `workload` on `n` fingerprints, using at most
    /// `memory` bytes (all structures of an index of `n` entries); without a budget, an index
    /// gets at most [`DEFAULT_BYTES_PER_FINGERPRINT`] and a batch pass (which holds one table
    /// per thread at a time) is not limited.
    pub fn choose(k: i64, n: u64, memory: Option<u64>, workload: Workload) -> Result<Self> {
        let k = check_k(k)?;
        let n = n.max(1);
        let memory = match (memory, workload) {
            (None, Workload::Query) => Some(DEFAULT_BYTES_PER_FINGERPRINT.saturating_mul(n)),
            (memory, _) => memory,
        };
        let mut best: Option<(f64, Plan)> = None;
        let mut smallest: Option<u64> = None;
        for levels in candidate_levels(k) {
            let Ok(plan) = Plan::nested(&levels, i64::from(k)) else {
                continue;
            };
            let bytes = plan.bytes_per_fingerprint().saturating_mul(n);
            smallest = Some(smallest.map_or(bytes, |s| s.min(bytes)));
            if memory.is_some_and(|m| bytes > m) {
                continue;
            }
            let cost = plan.expected_work(n, workload);
            if best.as_ref().is_none_or(|(c, _)| cost < *c) {
                best = Some((cost, plan));
            }
        }
        match best {
            Some((_, plan)) => Ok(plan),
            None => Err(Error::invalid(format!(
                "memory={} bytes is too small for {n} fingerprints at k={k}: the smallest plan needs {} bytes",
                memory.unwrap_or(0),
                smallest.unwrap_or(0)
            ))),
        }
    }

    pub fn k(&self) -> u32 {
        self.k
    }

    /// Blocks per level: `[6]` for the 6-block layout, `[4, 4]` for the nested 4 × 4 one.
    pub fn levels(&self) -> &[u32] {
        &self.levels
    }

    pub fn tables(&self) -> &[TableLayout] {
        &self.tables
    }

    /// Expected candidates per query over all tables, for `n` uniformly random fingerprints.
    pub fn expected_candidates(&self, n: u64) -> f64 {
        self.tables
            .iter()
            .map(|t| n as f64 / 2f64.powi(t.prefix_bits as i32))
            .sum()
    }

    /// Bytes an index spends per fingerprint: 8 per table plus [`MAP_BYTES`].
    pub fn bytes_per_fingerprint(&self) -> u64 {
        8 * self.tables.len() as u64 + MAP_BYTES
    }

    /// A cost model in nanoseconds, measured roughly on one core: per query, a search per
    /// table and a distance per candidate; per all-pairs pass, a permute and a radix sort per
    /// fingerprint and table and a distance per pair sharing a prefix.
    pub fn expected_work(&self, n: u64, workload: Workload) -> f64 {
        let n = n as f64;
        match workload {
            Workload::Query => {
                // A search is cheap while a table fits in cache and costs a cache miss per probe
                // beyond it; a candidate costs a distance and a branch.
                let megabytes = n * 8.0 / f64::from(1 << 20);
                let search = 30.0 + 70.0 * megabytes.log2().max(0.0);
                self.tables.len() as f64 * search + 5.0 * self.expected_candidates(n as u64)
            }
            Workload::Batch => self
                .tables
                .iter()
                .map(|t| {
                    let passes = f64::from(t.prefix_bits.min(64).div_ceil(11).max(1));
                    let sort = n * (3.0 + 2.5 * passes);
                    let pairs = n * n / 2f64.powi(t.prefix_bits as i32 + 1);
                    sort + 1.2 * pairs
                })
                .sum(),
        }
    }
}

/// Layouts the planner considers for `k`: one level of k+1..=64 blocks, and two levels.
fn candidate_levels(k: u32) -> Vec<Vec<i64>> {
    let mut out = Vec::new();
    for b in k + 1..=64 {
        if binomial(u64::from(b), u64::from(k)) > MAX_TABLES as u64 {
            break;
        }
        out.push(vec![i64::from(b)]);
        for b2 in k + 1..=64 {
            if binomial(u64::from(b), u64::from(k))
                .saturating_mul(binomial(u64::from(b2), u64::from(k)))
                > MAX_TABLES as u64
            {
                break;
            }
            out.push(vec![i64::from(b), i64::from(b2)]);
        }
    }
    out
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let top = block_sizes(64, self.levels[0]);
        let sizes: Vec<String> = top.iter().map(|s| s.to_string()).collect();
        write!(
            f,
            "Plan for k={}: {} blocks of {} bits",
            self.k,
            self.levels[0],
            sizes.join(",")
        )?;
        for b in &self.levels[1..] {
            write!(f, ", low bits of each table split again into {b} blocks")?;
        }
        writeln!(f, "; {} tables", self.tables.len())?;
        let mut widths: Vec<(u32, usize)> = Vec::new();
        for t in &self.tables {
            match widths.iter_mut().find(|(w, _)| *w == t.prefix_bits) {
                Some((_, c)) => *c += 1,
                None => widths.push((t.prefix_bits, 1)),
            }
        }
        widths.sort_by_key(|w| std::cmp::Reverse(w.0));
        let parts: Vec<String> = widths
            .iter()
            .map(|(w, c)| format!("{c} x {w} bits"))
            .collect();
        writeln!(f, "prefix per table: {}", parts.join(", "))?;
        write!(
            f,
            "memory: {} bytes per fingerprint ({} tables x 8 + {MAP_BYTES}; + 4 once ids are looked up)",
            self.bytes_per_fingerprint(),
            self.tables.len()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fingerprint::hamming::hamming;

    fn widths(plan: &Plan) -> Vec<u32> {
        plan.tables().iter().map(|t| t.prefix_bits).collect()
    }

    #[test]
    fn seed_layouts() {
        let p = Plan::blocks(6, 3).unwrap();
        assert_eq!(block_sizes(64, 6), [11, 11, 11, 11, 10, 10]);
        assert_eq!(p.tables().len(), 20);
        let w = widths(&p);
        assert_eq!(*w.iter().min().unwrap(), 31);
        assert_eq!(*w.iter().max().unwrap(), 33);
        assert_eq!(w.iter().filter(|&&x| x == 33).count(), 4);
        assert_eq!(w.iter().filter(|&&x| x == 31).count(), 4);
        assert!(p.tables()[0].permutation.is_identity());

        let p = Plan::blocks(4, 3).unwrap();
        assert_eq!(widths(&p), [16; 4]);
        let p = Plan::nested(&[4, 4], 3).unwrap();
        assert_eq!(widths(&p), [28; 16]);
        let p = Plan::blocks(8, 6).unwrap();
        assert_eq!(p.tables().len(), 28);
        assert_eq!(widths(&p), [16; 28]);
        let p = Plan::blocks(1, 0).unwrap();
        assert_eq!(widths(&p), [64]);
    }

    #[test]
    fn bad_arguments() {
        assert!(Plan::blocks(6, 17).is_err());
        assert!(Plan::blocks(6, -1).is_err());
        assert!(Plan::blocks(3, 3).is_err());
        assert!(Plan::blocks(65, 1).is_err());
        assert!(Plan::blocks(64, 16).is_err()); // far too many tables
        assert!(Plan::nested(&[], 3).is_err());
        let msg = Plan::blocks(6, 20).unwrap_err().to_string();
        assert!(msg.contains("0..=16"), "{msg}");
    }

    #[test]
    fn permutations_round_trip_and_keep_distance() {
        let mut x = 0x0123_4567_89ab_cdefu64;
        for plan in [
            Plan::blocks(6, 3).unwrap(),
            Plan::nested(&[4, 4], 3).unwrap(),
            Plan::blocks(9, 7).unwrap(),
        ] {
            for t in plan.tables() {
                for _ in 0..50 {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let y = x.rotate_left(17) ^ (x >> 3);
                    let (px, py) = (t.permutation.apply(x), t.permutation.apply(y));
                    assert_eq!(t.permutation.invert(px), x);
                    assert_eq!(hamming(px, py), hamming(x, y));
                    assert_eq!(px.count_ones(), x.count_ones());
                }
                assert_eq!(t.prefix_mask.count_ones(), t.prefix_bits);
                // The prefix of a permuted word is the prefix-mask bits of the original.
                assert_eq!(
                    t.prefix_of(t.permutation.apply(t.prefix_mask)),
                    mask(t.prefix_bits)
                );
                assert_eq!(t.prefix_of(t.permutation.apply(!t.prefix_mask)), 0);
            }
        }
    }

    /// Every difference of weight <= k leaves the prefix of some table untouched.
    #[test]
    fn every_pair_within_k_shares_some_prefix() {
        fn check(plan: &Plan, diffs: &mut dyn Iterator<Item = u64>) {
            for d in diffs {
                assert!(
                    plan.tables().iter().any(|t| d & t.prefix_mask == 0),
                    "difference {d:#x} escapes {plan}"
                );
            }
        }
        // Exhaustively for k <= 3 over all difference patterns of weight exactly k.
        for (levels, k) in [
            (vec![6], 3),
            (vec![4], 3),
            (vec![4, 4], 3),
            (vec![5, 5], 2),
            (vec![3], 2),
            (vec![1], 0),
            (vec![2], 1),
            (vec![7], 3),
        ] {
            let plan = Plan::nested(&levels, k).unwrap();
            let mut all = Vec::new();
            for a in 0..64u32 {
                if k == 1 {
                    all.push(1u64 << a);
                }
                for b in a + 1..64 {
                    if k == 2 {
                        all.push((1u64 << a) | (1u64 << b));
                    }
                    if k == 3 {
                        for c in b + 1..64 {
                            all.push((1u64 << a) | (1u64 << b) | (1u64 << c));
                        }
                    }
                }
            }
            if k == 0 {
                all.push(0);
            }
            check(&plan, &mut all.into_iter());
        }
        // Randomly for larger k: difference patterns of weight exactly k.
        let mut s = crate::GOLDEN_GAMMA;
        for (levels, k) in [
            (vec![8], 6),
            (vec![9, 9], 8),
            (vec![17], 16),
            (vec![12], 8),
            (vec![6, 7], 5),
        ] {
            let plan = Plan::nested(&levels, k).unwrap();
            let mut diffs = (0..20_000).map(|_| {
                let mut d = 0u64;
                while d.count_ones() < k as u32 {
                    d |= 1u64 << (crate::testing::xorshift64(&mut s) % 64);
                }
                d
            });
            check(&plan, &mut diffs);
        }
    }

    #[test]
    fn planner_prefers_fewer_tables_for_small_corpora() {
        let small = Plan::choose(3, 1_000, None, Workload::Query).unwrap();
        let large = Plan::choose(3, 1 << 34, None, Workload::Query).unwrap();
        assert!(small.tables().len() < large.tables().len());
        assert!(large.expected_candidates(1 << 34) < small.expected_candidates(1 << 34));
        // A memory budget is respected.
        let tight = Plan::choose(3, 1_000_000, Some(60 * 1_000_000), Workload::Query).unwrap();
        assert!(tight.bytes_per_fingerprint() <= 60);
        assert_eq!(
            Plan::blocks(6, 3).unwrap().bytes_per_fingerprint(),
            8 * 20 + 16
        );
        assert!(Plan::choose(3, 1_000_000, Some(1000), Workload::Query).is_err());
        for k in 0..=16 {
            let p = Plan::choose(k, 10_000_000, None, Workload::Batch).unwrap();
            assert_eq!(p.k(), k as u32);
            let q = Plan::choose(k, 10_000_000, None, Workload::Query).unwrap();
            assert!(q.bytes_per_fingerprint() <= DEFAULT_BYTES_PER_FINGERPRINT);
        }
    }

    #[test]
    fn combinations_count() {
        assert_eq!(combinations(6, 3).len(), 20);
        assert_eq!(combinations(4, 1).len(), 4);
        assert_eq!(combinations(3, 0).len(), 1);
        assert_eq!(binomial(64, 16), 488_526_937_079_580);
    }
}
