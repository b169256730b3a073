//! Batch mode: every pair within Hamming distance k in one pass per table, and clusters.
//!
//! Identical fingerprints are collapsed first, so the tables hold distinct values. The pairs of
//! distinct values come from the cross search run without an index
//! ([`crate::search::cross_search::inner_pairs_bounded`]: per table, the values sorted in cache by
//! the prefix's bits and compared inside each run). A pair that agrees on the prefix blocks of
//! several tables is reported only by the first of them: a table checks the earlier tables'
//! prefix masks against the pair's difference, so no global set of seen pairs is needed. The
//! pairs of distinct values are then expanded to every copy. The older walk
//! ([`distinct_pairs_bounded`]: each table permutes the distinct fingerprints, sorts them by its
//! prefix through memory and walks the runs) counts the exact weight of a refused search.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use rayon::prelude::*;

use crate::error::{try_push, try_with_capacity, Error, Result};
use crate::fingerprint::encoders::mix64;
use crate::fingerprint::hamming::hamming;
use crate::runtime::interrupt;
use crate::runtime::memory;
use crate::search::cross_search::inner_pairs_bounded;
use crate::search::first_table::{Earlier, FirstTable};
use crate::search::limits::{
    check_work, default_work_limit, estimate_comparisons, Bounded, WORK_REMEDY,
};
use crate::search::plan::Plan;
use crate::search::table::{lower_bound, radix_sort_top_with};

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

    /// The group of each row, by row: what a search of `distinct` for the row's fingerprint
    /// finds, without a search per row.
    pub fn of_rows(&self) -> Vec<u32> {
        let mut of = vec![0u32; self.rows.len()];
        for g in 0..self.distinct.len() {
            for &r in self.rows_of(g) {
                of[r] = g as u32;
            }
        }
        of
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

/// Candidate comparisons a refusal may spend on counting the pairs exactly (the walk of
/// [`distinct_pairs_bounded`]): 2 billion, a few seconds. Past it a refusal names a lower bound.
pub const COUNT_WORK: u64 = 2_000_000_000;

/// Distinct values are numbered with u32 in pair lists and union-find.
fn check_distinct(distinct: &[u64]) -> Result<()> {
    if distinct.len() > u32::MAX as usize {
        return Err(Error::invalid(format!(
            "{} distinct fingerprints are more than batch mode takes (2^32 - 1)",
            distinct.len()
        )));
    }
    Ok(())
}

/// Walks every pair (a, b), a < b, of indices into the ascending distinct values `distinct`
/// within distance `k` exactly once, calling `visit(state, a, b, distance)`, each table with its
/// own state (one per table, returned in table order). [`Error::Interrupted`] if an interrupt
/// is raised meanwhile: every worker polls for one before each run of candidates.
pub(crate) fn walk<S, F>(distinct: &[u64], k: u32, plan: &Plan, visit: F) -> Result<Vec<S>>
where
    S: Default + Send,
    F: Fn(&mut S, u32, u32, u8) + Sync,
{
    let tables = plan.tables();
    let lookup = FirstTable::new(plan);
    let states = tables
        .par_iter()
        .enumerate()
        // Each worker keeps its two table-sized buffers from one table to the next.
        .map_init(
            || (Vec::new(), Vec::new()),
            |(v, scratch): &mut (Vec<u64>, Vec<u64>), (t, layout)| {
                if interrupt::requested() {
                    return S::default();
                }
                let perm = &layout.permutation;
                let earlier = Earlier::new(plan, lookup.as_ref(), t);
                v.clear();
                v.extend(distinct.iter().map(|&x| perm.apply(x)));
                radix_sort_top_with(v, layout.prefix_bits, scratch);
                let mut state = S::default();
                let mut start = 0;
                while start < v.len() {
                    if interrupt::requested() {
                        break;
                    }
                    let prefix = layout.prefix_of(v[start]);
                    let mut end = start + 1;
                    while end < v.len() && layout.prefix_of(v[end]) == prefix {
                        end += 1;
                    }
                    let run = &v[start..end];
                    for (x, &a) in run.iter().enumerate() {
                        // A long run (many fingerprints sharing a prefix) is quadratic: poll in it.
                        if x % 1024 == 1023 && interrupt::requested() {
                            break;
                        }
                        for &b in &run[x + 1..] {
                            let d = hamming(a, b);
                            if d > k {
                                continue;
                            }
                            if earlier.holds(a ^ b) {
                                continue;
                            }
                            let ia = lower_bound(distinct, perm.invert(a)) as u32;
                            let ib = lower_bound(distinct, perm.invert(b)) as u32;
                            visit(&mut state, ia.min(ib), ia.max(ib), d as u8);
                        }
                    }
                    start = end;
                }
                state
            },
        )
        .collect();
    interrupt::check()?;
    Ok(states)
}

/// One table's share of [`distinct_pairs_bounded`].
#[derive(Default)]
struct Part {
    pairs: Vec<(u32, u32, u8)>,
    /// Weight found since the last report to the shared total.
    pending: u64,
    error: Option<Error>,
}

/// Every pair (a, b), a < b, of indices into the ascending distinct values `distinct` within
/// distance `k`, with its distance, in no particular order, as long as the total `weight(a, b)`
/// of the pairs stays within `budget` (None: no limit). Past the budget nothing more is kept and
/// the walk only counts, so the answer is the exact total weight, found in bounded memory.
pub fn distinct_pairs_bounded(
    distinct: &[u64],
    k: u32,
    plan: &Plan,
    budget: Option<u64>,
    weight: &(dyn Fn(u32, u32) -> u64 + Sync),
) -> Result<Bounded<Vec<(u32, u32, u8)>>> {
    check_plan(k, plan)?;
    check_distinct(distinct)?;
    // Workers report their weight every FLUSH, so at most FLUSH pairs per table are kept past
    // the budget before every worker knows.
    const FLUSH: u64 = 1 << 16;
    let total = AtomicU64::new(0);
    let over = AtomicBool::new(false);
    let report = |part: &mut Part| {
        let now = total
            .fetch_add(part.pending, Ordering::Relaxed)
            .saturating_add(part.pending);
        part.pending = 0;
        if budget.is_some_and(|b| now > b) {
            over.store(true, Ordering::Relaxed);
        }
    };
    let parts: Vec<Part> = walk(distinct, k, plan, |part: &mut Part, a, b, d| {
        part.pending = part.pending.saturating_add(weight(a, b));
        if part.pending >= FLUSH {
            report(part);
        }
        if over.load(Ordering::Relaxed) || part.error.is_some() {
            if part.pairs.capacity() > 0 {
                part.pairs = Vec::new();
            }
            return;
        }
        if let Err(err) = try_push(&mut part.pairs, (a, b, d), "pairs of distinct fingerprints") {
            part.pairs = Vec::new();
            part.error = Some(err);
        }
    })?;
    let weight_found = parts.iter().fold(total.load(Ordering::Relaxed), |w, p| {
        w.saturating_add(p.pending)
    });
    if budget.is_some_and(|b| weight_found > b) {
        return Ok(Bounded::Over(weight_found));
    }
    let mut parts = parts;
    if let Some(err) = parts.iter_mut().find_map(|p| p.error.take()) {
        return Err(err);
    }
    let len = parts.iter().map(|p| p.pairs.len()).sum();
    let mut out = try_with_capacity(len, "pairs of distinct fingerprints")?;
    for part in parts {
        out.extend_from_slice(&part.pairs);
    }
    Ok(Bounded::Within(out))
}

/// [`distinct_pairs_bounded`] by the cross search ([`inner_pairs_bounded`]), whose tables sort
/// the values in cache: the same answer. Every weight is at least 1, so the search keeps at most
/// `budget` pairs; past it the exact total weight is counted by the walk of
/// [`distinct_pairs_bounded`], which a refusal only needs once.
fn weighted_pairs(
    distinct: &[u64],
    k: u32,
    plan: &Plan,
    budget: Option<u64>,
    weight: &(dyn Fn(u32, u32) -> u64 + Sync),
) -> Result<Bounded<Vec<(u32, u32, u8)>>> {
    check_plan(k, plan)?;
    check_distinct(distinct)?;
    let pairs = match inner_pairs_bounded(distinct, k, plan, budget)? {
        Bounded::Within(pairs) => pairs,
        Bounded::Over(count) | Bounded::AtLeast(count) => {
            // Counted exactly only while that costs a few seconds.
            if estimate_comparisons(distinct, plan) <= COUNT_WORK {
                return distinct_pairs_bounded(distinct, k, plan, budget, weight);
            }
            return Ok(Bounded::AtLeast(count));
        }
    };
    let total = pairs
        .iter()
        .fold(0u64, |t, &(a, b)| t.saturating_add(weight(a, b)));
    if budget.is_some_and(|b| total > b) {
        return Ok(Bounded::Over(total));
    }
    let distance = |a: u32, b: u32| hamming(distinct[a as usize], distinct[b as usize]) as u8;
    let mut out = try_with_capacity(pairs.len(), "pairs of distinct fingerprints")?;
    out.extend(pairs.into_iter().map(|(a, b)| (a, b, distance(a, b))));
    Ok(Bounded::Within(out))
}

/// Every pair (a, b), a < b, of indices into the ascending distinct values `distinct` within
/// distance `k`, with its distance, in no particular order; no limit on their number.
pub fn distinct_pairs(distinct: &[u64], k: u32, plan: &Plan) -> Result<Vec<(u32, u32, u8)>> {
    match weighted_pairs(distinct, k, plan, None, &|_, _| 1)? {
        Bounded::Within(pairs) => Ok(pairs),
        Bounded::Over(_) | Bounded::AtLeast(_) => unreachable!("no budget, never over it"),
    }
}

fn too_many_pairs(count: u64, at_least: bool, limit: u64, k: u32) -> Error {
    Error::TooManyPairs {
        count,
        at_least,
        limit,
        what: format!("pairs within k={k}"),
        remedy: "raise max_pairs (None for no limit) or lower k".into(),
    }
}

/// For each row x of `xs`, adds to `count[x + 1]` how many rows of `ys` are greater (both
/// ascending, no row in both).
fn add_greater(xs: &[usize], ys: &[usize], count: &mut [usize]) {
    let mut below = 0;
    for &x in xs {
        while below < ys.len() && ys[below] < x {
            below += 1;
        }
        count[x + 1] += ys.len() - below;
    }
}

/// Bytes a pair costs [`find_all`] at its peak: i and j (8 each) and the distance (1) twice over,
/// since the pairs found and the sorted arrays they are joined into are alive together (31.5
/// bytes a pair measured at 50M pairs, Python's arrays included).
pub const PAIR_BYTES: u64 = 34;

/// Rows an estimate of the pairs samples at most ([`estimate_pairs`]); below it the count is
/// exact.
const PAIR_SAMPLE: usize = 8192;

/// Pairs found in the sample before a refusal may rest on the estimate: with 10,000, a corpus
/// whose pairs would fit is refused only if its sample holds twice its share of them, which a
/// sample of that size does not do (even where one value's copies make all of its pairs).
const SURE_HITS: u64 = 10_000;

/// How much further than the memory an estimate must reach before it is a refusal.
const SURE_FACTOR: u64 = 4;

/// An estimate of the pairs of rows of `fingerprints` within `k`: the pairs within `k` among a
/// deterministic random sample of about [`PAIR_SAMPLE`] rows (every row when fewer: then exact),
/// scaled by n(n - 1) / (m(m - 1)); with the pairs found in the sample, which say how sure it
/// is. One comparison per pair of the sample: some 34 million, a fraction of a second.
pub fn estimate_pairs(fingerprints: &[u64], k: u32) -> (u64, u64) {
    let n = fingerprints.len();
    let sample: Vec<u64> = if n <= PAIR_SAMPLE {
        fingerprints.to_vec()
    } else {
        let cut = ((PAIR_SAMPLE as f64 / n as f64) * 2f64.powi(64)) as u64;
        fingerprints
            .iter()
            .enumerate()
            .filter(|&(r, _)| mix64(r as u64 ^ crate::PI_SEED) < cut)
            .map(|(_, &x)| x)
            .collect()
    };
    let m = sample.len();
    if m < 2 {
        return (0, 0);
    }
    let hits: u64 = sample
        .par_iter()
        .enumerate()
        .map(|(i, &a)| {
            sample[i + 1..]
                .iter()
                .filter(|&&b| hamming(a, b) <= k)
                .count() as u64
        })
        .sum();
    let scale = (n as f64) * (n as f64 - 1.0) / (m as f64 * (m as f64 - 1.0));
    (((hits as f64) * scale).min(u64::MAX as f64) as u64, hits)
}

/// [`Error::OutOfMemory`] for `count` pairs (`how`: "", "at least " or "about ") that
/// [`find_all`]'s arrays cannot hold in the `memory` bytes left.
fn pairs_past_memory(count: u64, how: &str, k: u32, memory: u64) -> Error {
    Error::OutOfMemory(format!(
        "{how}{} pairs within k={k} need {} at their peak ({PAIR_BYTES} bytes a pair), more \
         than the {} of memory left; lower k, or cluster the rows instead (cluster() holds no \
         pair)",
        crate::error::thousands(count),
        memory::readable(count.saturating_mul(PAIR_BYTES)),
        memory::readable(memory)
    ))
}

/// Every pair of rows of `fingerprints` within distance `k`, each once, sorted by (i, j).
///
/// The number of pairs is known before they are allocated: copies of one value make c(c-1)/2,
/// two distinct values within `k` make c_a * c_b. More than `max_pairs` (None: no limit) is
/// [`Error::TooManyPairs`] naming the exact count, found in bounded memory, or a lower bound of
/// it where counting them all would take longer than [`COUNT_WORK`] comparisons. More than the
/// memory left holds ([`memory::available`], [`PAIR_BYTES`] a pair) is [`Error::OutOfMemory`],
/// as soon as that is known: from the copies, from a sample's estimate far past it
/// ([`estimate_pairs`], without `max_pairs`), or when the search passes it.
pub fn find_all(
    fingerprints: &[u64],
    k: u32,
    plan: &Plan,
    max_pairs: Option<u64>,
) -> Result<Pairs> {
    find_all_in(fingerprints, k, plan, max_pairs, memory::available())
}

/// [`find_all`] with `memory` bytes left to allocate (None: unknown, no bound but a failed
/// allocation).
pub fn find_all_in(
    fingerprints: &[u64],
    k: u32,
    plan: &Plan,
    max_pairs: Option<u64>,
    memory: Option<u64>,
) -> Result<Pairs> {
    check_plan(k, plan)?;
    let groups = Groups::new(fingerprints);
    let size = |g: u32| groups.rows_of(g as usize).len() as u64;
    let copies = (0..groups.distinct.len() as u32)
        .map(|g| size(g) * (size(g) - 1) / 2)
        .fold(0u64, u64::saturating_add);
    // The pairs the arrays can hold in the memory left, where that binds before `max_pairs`.
    let room = memory
        .map(|m| m / PAIR_BYTES)
        .filter(|&r| max_pairs.is_none_or(|m| r < m));
    let refusal = |count: u64, at_least: bool| match (max_pairs, memory) {
        (Some(limit), _) if count > limit => too_many_pairs(count, at_least, limit, k),
        (_, Some(memory)) => {
            pairs_past_memory(count, if at_least { "at least " } else { "" }, k, memory)
        }
        (limit, None) => too_many_pairs(count, at_least, limit.unwrap_or(u64::MAX), k),
    };
    if let (Some(room), Some(memory)) = (room, memory) {
        if copies > room {
            return Err(refusal(copies, false));
        }
        // Without a limit, memory is the only bound: a sure estimate far past it is enough
        // (with one, a refusal names the count of the limit, found by the search).
        let (estimate, hits) = match max_pairs {
            None => estimate_pairs(fingerprints, k),
            Some(_) => (0, 0),
        };
        if hits >= SURE_HITS && estimate / SURE_FACTOR > room {
            return Err(pairs_past_memory(estimate, "about ", k, memory));
        }
    }
    let cap = room.or(max_pairs);
    // Past the copies alone, the distinct pairs only count (a budget of 0 keeps none).
    let budget = cap.map(|m| m.saturating_sub(copies));
    let work = max_pairs.map(|_| default_work_limit(groups.distinct.len()));
    check_work(&groups.distinct, k, plan, work, WORK_REMEDY)?;
    let found = weighted_pairs(&groups.distinct, k, plan, budget, &|a, b| size(a) * size(b))?;
    let pairs = match found {
        Bounded::Within(pairs) => pairs,
        Bounded::Over(weight) => return Err(refusal(copies.saturating_add(weight), false)),
        Bounded::AtLeast(weight) => return Err(refusal(copies.saturating_add(weight), true)),
    };
    let total = pairs
        .iter()
        .fold(copies, |t, &(a, b, _)| t.saturating_add(size(a) * size(b)));
    if cap.is_some_and(|m| total > m) {
        return Err(refusal(total, false));
    }
    let total = usize::try_from(total).map_err(|_| {
        Error::OutOfMemory(format!(
            "{total} pairs do not fit in this machine's address space"
        ))
    })?;

    // Row r's pairs (r, j), j > r, go to packed[starts[r]..starts[r + 1]] as j << 8 | distance.
    let n = fingerprints.len();
    let mut starts = vec![0usize; n + 1];
    for g in 0..groups.distinct.len() {
        let r = groups.rows_of(g);
        for (x, &row) in r.iter().enumerate() {
            starts[row + 1] += r.len() - 1 - x;
        }
    }
    for &(a, b, _) in &pairs {
        let (ra, rb) = (groups.rows_of(a as usize), groups.rows_of(b as usize));
        add_greater(ra, rb, &mut starts);
        add_greater(rb, ra, &mut starts);
    }
    for r in 0..n {
        starts[r + 1] += starts[r];
    }
    let mut packed: Vec<u64> = try_with_capacity(total, "pairs (j and distance)")?;
    packed.resize(total, 0);
    let mut next = starts.clone();
    for g in 0..groups.distinct.len() {
        let r = groups.rows_of(g);
        for (x, &a) in r.iter().enumerate() {
            for &b in &r[x + 1..] {
                packed[next[a]] = (b as u64) << 8;
                next[a] += 1;
            }
        }
    }
    for &(a, b, d) in &pairs {
        for &ra in groups.rows_of(a as usize) {
            for &rb in groups.rows_of(b as usize) {
                let (lo, hi) = (ra.min(rb), ra.max(rb));
                packed[next[lo]] = (hi as u64) << 8 | u64::from(d);
                next[lo] += 1;
            }
        }
    }
    drop(next);
    drop(pairs);
    interrupt::check()?;
    // Each row's partners in ascending order.
    let mut segments: Vec<&mut [u64]> = Vec::new();
    let mut rest = &mut packed[..];
    for r in 0..n {
        let (head, tail) = rest.split_at_mut(starts[r + 1] - starts[r]);
        if head.len() > 1 {
            segments.push(head);
        }
        rest = tail;
    }
    segments.par_iter_mut().for_each(|s| s.sort_unstable());
    drop(segments);
    let mut i: Vec<i64> = try_with_capacity(total, "pairs (i)")?;
    for r in 0..n {
        i.extend(std::iter::repeat_n(r as i64, starts[r + 1] - starts[r]));
    }
    let mut distance: Vec<u8> = try_with_capacity(total, "pairs (distance)")?;
    distance.extend(packed.iter().map(|&x| x as u8));
    // The same allocation, reused for j.
    let j: Vec<i64> = packed.into_iter().map(|x| (x >> 8) as i64).collect();
    Ok(Pairs { i, j, distance })
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

/// Union-find over distinct values shared by the tables' workers: a root is linked only to a
/// smaller root, by compare-and-swap, so parents only decrease and no cycle can form.
struct SharedUnionFind {
    parent: Vec<AtomicU32>,
}

impl SharedUnionFind {
    fn new(n: usize) -> Self {
        SharedUnionFind {
            parent: (0..n as u32).map(AtomicU32::new).collect(),
        }
    }

    fn find(&self, mut x: u32) -> u32 {
        loop {
            let p = self.parent[x as usize].load(Ordering::Acquire);
            if p == x {
                return x;
            }
            let up = self.parent[p as usize].load(Ordering::Acquire);
            if up != p {
                // Path halving; losing the race to another update is harmless.
                let _ = self.parent[x as usize].compare_exchange(
                    p,
                    up,
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                );
            }
            x = up;
        }
    }

    fn union(&self, a: u32, b: u32) {
        let (mut a, mut b) = (a, b);
        loop {
            a = self.find(a);
            b = self.find(b);
            if a == b {
                return;
            }
            let (high, low) = (a.max(b), a.min(b));
            if self.parent[high as usize]
                .compare_exchange(high, low, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                return;
            }
        }
    }
}

/// The cluster label of each row: rows linked by chains of pairs within `k` share a label, the
/// smallest row of their cluster. No pair is stored: copies share their value's group, and the
/// tables' workers join groups as they find pairs, so memory stays linear in the rows.
pub fn cluster(fingerprints: &[u64], k: u32, plan: &Plan) -> Result<Vec<i64>> {
    check_plan(k, plan)?;
    let groups = Groups::new(fingerprints);
    check_distinct(&groups.distinct)?;
    check_work(
        &groups.distinct,
        k,
        plan,
        Some(default_work_limit(groups.distinct.len())),
        "lower k",
    )?;
    let uf = SharedUnionFind::new(groups.distinct.len());
    walk(&groups.distinct, k, plan, |_: &mut (), a, b, _| {
        uf.union(a, b)
    })?;
    let mut smallest = vec![usize::MAX; groups.distinct.len()];
    let mut root_of = Vec::with_capacity(groups.distinct.len());
    for g in 0..groups.distinct.len() {
        let root = uf.find(g as u32) as usize;
        smallest[root] = smallest[root].min(groups.rows_of(g)[0]);
        root_of.push(root);
    }
    let mut labels = vec![0i64; fingerprints.len()];
    for (g, &root) in root_of.iter().enumerate() {
        for &r in groups.rows_of(g) {
            labels[r] = smallest[root] as i64;
        }
    }
    Ok(labels)
}

/// The cluster label of each of `n` rows linked by the pairs `(i[p], j[p])`: the smallest row
/// of its connected component.
pub fn components(n: usize, i: &[i64], j: &[i64]) -> Result<Vec<i64>> {
    if i.len() != j.len() {
        return Err(Error::invalid(format!(
            "i and j must have the same length, got {} and {}",
            i.len(),
            j.len()
        )));
    }
    if let Some(bad) = i.iter().chain(j).find(|&&r| r < 0 || r as u64 >= n as u64) {
        return Err(Error::invalid(format!(
            "row {bad} out of range for {n} rows"
        )));
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
    use crate::testing::xorshift64 as rng;

    #[test]
    fn each_row_is_in_the_group_of_its_fingerprint() {
        let mut seed = 3u64;
        // Repeated values among fresh ones, unsorted.
        let fps: Vec<u64> = (0..500)
            .map(|i| {
                if i % 3 == 0 {
                    17 * (i % 7)
                } else {
                    rng(&mut seed)
                }
            })
            .collect();
        let groups = Groups::new(&fps);
        let of = groups.of_rows();
        assert_eq!(of.len(), fps.len());
        for (r, &g) in of.iter().enumerate() {
            assert_eq!(
                groups.distinct.iter().position(|&x| x == fps[r]),
                Some(g as usize)
            );
        }
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
                assert_eq!(
                    find_all(&fps, k, plan, None).unwrap(),
                    want,
                    "k={k} plan={plan}"
                );
            }
        }
    }

    #[test]
    fn copies_and_shared_high_bits() {
        let plan = Plan::blocks(4, 3).unwrap();
        let fps = vec![42u64; 30];
        let got = find_all(&fps, 3, &plan, None).unwrap();
        assert_eq!(got, brute(&fps, 3));
        assert_eq!(got.i.len(), 30 * 29 / 2);
        let mut seed = 7;
        let fps: Vec<u64> = (0..400)
            .map(|_| 0xdead_beef_0000_0000 | (rng(&mut seed) & 0xfff))
            .collect();
        assert_eq!(find_all(&fps, 3, &plan, None).unwrap(), brute(&fps, 3));
        assert_eq!(find_all(&[], 3, &plan, None).unwrap(), Pairs::default());
        assert!(find_all(&fps, 4, &plan, None).is_err());
    }

    fn too_many(result: Result<Pairs>) -> (u64, u64) {
        match result {
            Err(Error::TooManyPairs { count, limit, .. }) => (count, limit),
            other => panic!("expected TooManyPairs, got {other:?}"),
        }
    }

    #[test]
    fn find_all_counts_before_it_allocates_and_refuses_past_the_limit() {
        let plan = Plan::blocks(4, 3).unwrap();
        let n = 2_000u64;
        let fps = vec![7u64; n as usize];
        let all = n * (n - 1) / 2;
        assert_eq!(too_many(find_all(&fps, 3, &plan, Some(1000))), (all, 1000));
        assert_eq!(
            too_many(find_all(&fps, 3, &plan, Some(all - 1))),
            (all, all - 1)
        );
        assert_eq!(
            find_all(&fps, 3, &plan, Some(all)).unwrap().i.len() as u64,
            all
        );
        // Values sharing their high bits, with copies: the count is exact however the limit
        // falls between the copies and the distinct pairs.
        let mut seed = 11;
        let fps: Vec<u64> = (0..3000)
            .map(|_| 0xabcd_0000_0000_0000 | (rng(&mut seed) & 0xff))
            .collect();
        let want = brute(&fps, 3);
        let count = want.i.len() as u64;
        let copies = (0..fps.len())
            .flat_map(|a| (a + 1..fps.len()).map(move |b| (a, b)))
            .filter(|&(a, b)| fps[a] == fps[b])
            .count() as u64;
        for limit in [0, copies / 2, copies, copies + 1, count - 1] {
            assert_eq!(
                too_many(find_all(&fps, 3, &plan, Some(limit))),
                (count, limit)
            );
        }
        assert_eq!(find_all(&fps, 3, &plan, Some(count)).unwrap(), want);
        assert_eq!(find_all(&[], 3, &plan, Some(0)).unwrap(), Pairs::default());
    }

    fn out_of_memory(result: Result<Pairs>) -> String {
        match result {
            Err(Error::OutOfMemory(message)) => message,
            other => panic!("expected OutOfMemory, got {other:?}"),
        }
    }

    #[test]
    fn the_estimate_of_pairs_is_exact_for_small_inputs_and_close_for_sampled_ones() {
        let mut seed = 17u64;
        // Values sharing their top 44 bits: about a quarter of all pairs within k = 8.
        let dense: Vec<u64> = (0..16_384)
            .map(|_| 0xABCD_E000_0000_0000 | (rng(&mut seed) >> 44))
            .collect();
        let count = |fps: &[u64]| brute(fps, 8).i.len() as u64;
        let small = &dense[..3000];
        assert_eq!(estimate_pairs(small, 8), (count(small), count(small)));
        assert_eq!(estimate_pairs(&dense[..1], 8), (0, 0));
        let exact = count(&dense) as f64;
        let (got, hits) = estimate_pairs(&dense, 8);
        assert!(hits > SURE_HITS && hits < exact as u64, "{hits}");
        assert!((got as f64 / exact - 1.0).abs() < 0.05, "{got} vs {exact}");
    }

    #[test]
    fn find_all_refuses_what_the_memory_left_cannot_hold_and_finds_what_it_can() {
        let plan = Plan::blocks(9, 8).unwrap();
        // Copies alone: 1,999,000 pairs, known before any search.
        let copies = vec![7u64; 2000];
        let message = out_of_memory(find_all_in(
            &copies,
            8,
            &plan,
            None,
            Some(PAIR_BYTES * 1000),
        ));
        assert!(
            message.starts_with("1,999,000 pairs within k=8 need 68 MB"),
            "{message}"
        );
        // A sample far past the memory: refused on the estimate, before the search.
        let mut seed = 5u64;
        let dense: Vec<u64> = (0..20_000)
            .map(|_| 0xABCD_E000_0000_0000 | (rng(&mut seed) >> 44))
            .collect();
        let message = out_of_memory(find_all_in(
            &dense,
            8,
            &plan,
            None,
            Some(PAIR_BYTES * 1_000_000),
        ));
        assert!(
            message.starts_with("about ") && message.contains("34 MB"),
            "{message}"
        );
        // Too few pairs in the sample to be sure: the search stops past the memory instead.
        let fps = planted(3000, 3, &mut seed);
        let want = brute(&fps, 3);
        let n = want.i.len() as u64;
        assert!(n > 100 && n < SURE_HITS, "{n}");
        let plan = Plan::blocks(4, 3).unwrap();
        let message = out_of_memory(find_all_in(
            &fps,
            3,
            &plan,
            None,
            Some(PAIR_BYTES * (n - 1)),
        ));
        assert!(message.contains(&format!("{} pairs within k=3", crate::error::thousands(n))));
        assert_eq!(
            find_all_in(&fps, 3, &plan, None, Some(PAIR_BYTES * n)).unwrap(),
            want
        );
        // A pair limit below the memory is the refusal it always was.
        assert_eq!(
            too_many(find_all_in(
                &fps,
                3,
                &plan,
                Some(n - 1),
                Some(PAIR_BYTES * n)
            )),
            (n, n - 1)
        );
        assert_eq!(find_all_in(&fps, 3, &plan, Some(n), None).unwrap(), want);
    }

    #[test]
    fn bounded_distinct_pairs_count_exactly_past_the_budget() {
        let plan = Plan::blocks(4, 3).unwrap();
        let distinct: Vec<u64> = (0..512u64).map(|x| 0x1234_0000_0000_0000 | x).collect();
        let all = distinct_pairs(&distinct, 3, &plan).unwrap();
        let n = all.len() as u64;
        let weighted = |a: u32, b: u32| u64::from(a + b + 1);
        let weight: u64 = all.iter().map(|&(a, b, _)| weighted(a, b)).sum();
        assert_eq!(
            distinct_pairs_bounded(&distinct, 3, &plan, Some(n - 1), &|_, _| 1).unwrap(),
            Bounded::Over(n)
        );
        assert_eq!(
            distinct_pairs_bounded(&distinct, 3, &plan, Some(10), &weighted).unwrap(),
            Bounded::Over(weight)
        );
        match distinct_pairs_bounded(&distinct, 3, &plan, Some(weight), &weighted).unwrap() {
            Bounded::Within(mut got) => {
                let mut all = all;
                got.sort_unstable();
                all.sort_unstable();
                assert_eq!(got, all);
            }
            other => panic!("within its budget, yet {other:?}"),
        }
    }

    #[test]
    fn cluster_matches_the_components_of_brute_force_pairs() {
        let mut seed = 31;
        for k in [0u32, 1, 3, 6] {
            let mut fps = planted(700, k, &mut seed);
            // Copies, and a dense corner where everything chains.
            for r in (0..fps.len()).step_by(9) {
                fps.push(fps[r]);
            }
            fps.extend((0..200).map(|_| 0xffff_ffff_0000_0000 | (rng(&mut seed) & 0x3f)));
            let want = brute(&fps, k);
            let want = components(fps.len(), &want.i, &want.j).unwrap();
            for plan in [
                Plan::blocks(i64::from(k) + 1, i64::from(k)).unwrap(),
                Plan::blocks(i64::from(k) + 3, i64::from(k)).unwrap(),
            ] {
                assert_eq!(cluster(&fps, k, &plan).unwrap(), want, "k={k} plan={plan}");
            }
        }
    }

    #[test]
    fn cluster_labels_are_smallest_rows() {
        let plan = Plan::blocks(4, 3).unwrap();
        // 0b0 ~ 0b111 (3) ~ 0b111111 (3): one chain; 1<<40 alone is far from 0b0? distance 1.
        let fps = [u64::MAX, 0b111, 0, 0b11_1111, u64::MAX, 0xffff_0000];
        assert_eq!(cluster(&fps, 3, &plan).unwrap(), [0, 1, 1, 1, 0, 5]);
    }
}
