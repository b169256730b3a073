//! The cross search of a dedup index: every pair (new value, indexed value) within Hamming
//! distance k, and every pair of new values within k, for a batch smaller than the index.
//!
//! The permuted tables of a plan are not stored with the index (8 bytes a document per table),
//! so each table is built for the call, and building them is what costs: every table visits
//! every indexed value. The tables' prefixes begin with the high bits of a first-level block
//! (their *lead*), so a plan's tables fall into a few groups of one lead each (9 at k = 8 with
//! 11 blocks, for 165 tables), and a group's tables into sub-groups by the next block they share
//! (their *sub-lead*: 45 sub-groups there). Per group, both sides are partitioned once by their
//! lead bits, in memory order, and the parts are searched in parallel: per part and sub-group,
//! each side's part is partitioned again by the sub-lead's bits (at k = 8, 2,200 indexed values
//! a sub-part of the 9M, which fit in the first-level cache, where a part of 140,000 does not
//! fit the second), and per table of the sub-group each side's sub-part is sorted by the
//! prefix's next bits (the *directory* bits, at most [`MAX_DIRECTORY_BITS`]) with a counting
//! sort, and each run of the batch is compared with the index's run of the same key and with
//! itself. No table permutes the values or sorts a whole side through memory: values are
//! compared unpermuted (a distance does not depend on the bit order), a mask test skips values
//! that share the directory's bits but not the whole prefix, and a pair is reported by the first
//! table whose prefix it shares ([`Earlier`]). The batch's own pairs cost only the comparisons
//! inside its runs, which the tables sort anyway.
//!
//! Before the tables, both sides' bits may be moved by one permutation chosen from a sample of
//! them ([`crate::search::bit_order`]): bits of simhash fingerprints that agree together more often
//! than chance go to different blocks, so that fewer pairs share a prefix. The pairs' values are
//! moved back before their positions are looked up: the same pairs.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use rayon::prelude::*;

use crate::error::{try_with_capacity, Error, Result};
use crate::runtime::interrupt;
use crate::runtime::simd;
use crate::search::bit_order::BitOrder;
use crate::search::first_table::{Earlier, FirstTable};
use crate::search::limits::Bounded;
use crate::search::plan::{Plan, TableLayout};

/// The most lead bits: the values are partitioned into at most 2^8 parts per group.
pub const MAX_LEAD_BITS: u32 = 8;
/// The most sub-lead bits: each part is partitioned into at most 2^8 sub-parts per sub-group.
pub const MAX_SUB_BITS: u32 = 8;
/// The most bits of a table's prefix below its lead and sub-lead that a sub-part is sorted by
/// (2^14 runs); values sharing them but not the whole prefix are skipped by a mask test.
pub const MAX_DIRECTORY_BITS: u32 = 14;

/// The most runs of contiguous bits a key is cut from in one step (more take several).
const RUNS: usize = 4;

/// Bits of a word as (low bit, mask) runs from the high end: how a key is cut out of a value;
/// keys are at most [`MAX_DIRECTORY_BITS`] bits.
#[derive(Clone, Debug)]
struct Bits {
    /// (low bit, mask of the width, width): unused entries have mask and width 0.
    runs: Vec<[(u32, u64, u32); RUNS]>,
    /// (low bit, mask) when the bits are one contiguous run (or none): a shift and a mask.
    single: Option<(u32, u64)>,
}

impl Bits {
    /// The bits `order[0]`, `order[1]`, ... of a value (`order` from
    /// [`crate::search::plan::Permutation`]: source bits, highest output first), packed from the
    /// key's high end down.
    fn new(order: &[u8]) -> Self {
        let mut flat = Vec::new();
        let mut i = 0;
        while i < order.len() {
            let mut j = i + 1;
            while j < order.len() && order[j] + 1 == order[j - 1] {
                j += 1;
            }
            let width = (j - i) as u32;
            flat.push((u32::from(order[j - 1]), (1u64 << width) - 1, width));
            i = j;
        }
        let single = match flat[..] {
            [] => Some((0, 0)),
            [(lo, mask, _)] => Some((lo, mask)),
            _ => None,
        };
        let runs = flat
            .chunks(RUNS)
            .map(|c| {
                let mut step = [(0, 0, 0); RUNS];
                step[..c.len()].copy_from_slice(c);
                step
            })
            .collect();
        Bits { runs, single }
    }

    #[inline]
    fn of(&self, x: u64) -> usize {
        if let Some((lo, mask)) = self.single {
            return ((x >> lo) & mask) as usize;
        }
        let mut key = 0u64;
        for step in &self.runs {
            for &(lo, mask, width) in step {
                key = (key << width) | ((x >> lo) & mask);
            }
        }
        key as usize
    }
}

/// Tables (in table order) that share a number of bits of their prefixes.
type Shared = (u32, Vec<usize>);

/// `tables` of `plan` grouped by the bits of their prefixes from bit `from` of their order: first
/// by the source bits of the next `w` (the width of the narrowest first-level block, or fewer
/// where a prefix ends sooner: every prefix is made of the high bits of whole blocks), then each
/// group's share widened to the bits all its prefixes have there, at most `most`. (shared bits,
/// tables in table order) per group.
fn share(plan: &Plan, tables: &[usize], from: u32, most: u32) -> Vec<Shared> {
    let layouts = plan.tables();
    let blocks = plan.levels().first().copied().unwrap_or(1).max(1);
    let w = tables
        .iter()
        .map(|&t| layouts[t].prefix_bits.saturating_sub(from))
        .fold(64 / blocks, u32::min)
        .min(most);
    let (from, w) = (from as usize, w as usize);
    let mut out: Vec<(&[u8], Vec<usize>)> = Vec::new();
    for &t in tables {
        let bits = &layouts[t].permutation.order()[from..from + w];
        match out.iter_mut().find(|(b, _)| *b == bits) {
            Some((_, ts)) => ts.push(t),
            None => out.push((bits, vec![t])),
        }
    }
    out.into_iter()
        .map(|(_, ts)| {
            let first = layouts[ts[0]].permutation.order();
            let mut width = w;
            while width < most as usize
                && ts.iter().all(|&t| {
                    let o = &layouts[t];
                    ((from + width) as u32) < o.prefix_bits
                        && o.permutation.order()[from + width] == first[from + width]
                })
            {
                width += 1;
            }
            (width as u32, ts)
        })
        .collect()
}

/// The plan's tables grouped by the top bits of their prefixes (their *lead*, at most
/// [`MAX_LEAD_BITS`]), and each group's tables by the bits below the lead they share (their
/// *sub-lead*, at most [`MAX_SUB_BITS`]): (lead bits, [(sub-lead bits, tables)]) per group.
fn groups(plan: &Plan) -> Vec<(u32, Vec<Shared>)> {
    let all: Vec<usize> = (0..plan.tables().len()).collect();
    share(plan, &all, 0, MAX_LEAD_BITS)
        .into_iter()
        .map(|(lead, ts)| (lead, share(plan, &ts, lead, MAX_SUB_BITS)))
        .collect()
}

/// Bits of a table's prefix its sub-parts are sorted by: the `top` bits of the lead and the
/// sub-lead and up to [`MAX_DIRECTORY_BITS`] below them (the *directory* bits).
fn directory_bits(layout: &TableLayout, top: u32) -> u32 {
    layout.prefix_bits.min(top + MAX_DIRECTORY_BITS).max(top)
}

/// Values partitioned by a key of few bits: `values[starts[p]..starts[p + 1]]` have key p.
#[derive(Default)]
struct Parted {
    values: Vec<u64>,
    starts: Vec<usize>,
}

impl Parted {
    /// `values` by their `bits`-bit `key`, in memory order, reusing this one's buffers.
    fn fill(&mut self, values: &[u64], key: &Bits, bits: u32) {
        self.starts.clear();
        self.starts.resize((1 << bits) + 1, 0);
        for &y in values {
            self.starts[key.of(y) + 1] += 1;
        }
        for p in 0..1 << bits {
            self.starts[p + 1] += self.starts[p];
        }
        let mut fill = std::mem::take(&mut self.starts);
        self.values.clear();
        self.values.resize(values.len(), 0);
        for &y in values {
            let at = &mut fill[key.of(y)];
            self.values[*at] = y;
            *at += 1;
        }
        // Now fill[p] is part p's end, part p + 1's start: shift them back.
        for p in (1..fill.len()).rev() {
            fill[p] = fill[p - 1];
        }
        fill[0] = 0;
        self.starts = fill;
    }

    fn parts(&self) -> usize {
        self.starts.len() - 1
    }

    fn part(&self, p: usize) -> &[u64] {
        &self.values[self.starts[p]..self.starts[p + 1]]
    }
}

/// A part of one side sorted by a key of few bits, with its run starts, reused.
#[derive(Default)]
struct Runs {
    values: Vec<u64>,
    starts: Vec<u32>,
    keys: Vec<u16>,
}

impl Runs {
    /// A counting sort of `part` by `key` (of `runs` values), in cache.
    fn sort(&mut self, part: &[u64], key: &Bits, runs: usize) {
        self.starts.clear();
        self.starts.resize(runs + 1, 0);
        self.keys.clear();
        self.keys.extend(part.iter().map(|&y| key.of(y) as u16));
        for &c in &self.keys {
            self.starts[c as usize] += 1;
        }
        // Exclusive prefix sums: starts[c] is where run c begins; the scatter moves each to its end.
        let mut sum = 0;
        for c in 0..runs {
            let here = self.starts[c];
            self.starts[c] = sum;
            sum += here;
        }
        self.starts[runs] = sum;
        self.values.clear();
        self.values.resize(part.len(), 0);
        for (&y, &c) in part.iter().zip(&self.keys) {
            let at = &mut self.starts[c as usize];
            self.values[*at as usize] = y;
            *at += 1;
        }
        // Now starts[c] is run c's end, run c + 1's start: shift them back.
        for c in (1..=runs).rev() {
            self.starts[c] = self.starts[c - 1];
        }
        self.starts[0] = 0;
    }

    fn run(&self, c: usize) -> &[u64] {
        &self.values[self.starts[c] as usize..self.starts[c + 1] as usize]
    }
}

/// Pairs within k found by [`cross_pairs`], each once, in no particular order.
#[derive(Debug, Default)]
pub struct Found {
    /// (new value, index value), as indices into them.
    pub cross: Vec<(u32, u32)>,
    /// (new value, later new value), as indices: the batch's own pairs, found on the way (each
    /// table sorts the batch's values into runs sharing its prefix anyway).
    pub within: Vec<(u32, u32)>,
}

/// Every pair (new value, index value) of the ascending distinct values `new` and `old` within
/// `k`, and every pair of values of `new` within `k`, each once. See the module; the search runs
/// in the bit order [`BitOrder::choose`] chooses for the values.
pub fn cross_pairs(new: &[u64], old: &[u64], k: u32, plan: &Plan) -> Result<Found> {
    check(new, old, k, plan)?;
    cross_pairs_in(new, old, k, plan, &BitOrder::choose(new, old, plan))
}

/// [`cross_pairs`] with the values' bits moved by `order` for the search: the same pairs.
pub fn cross_pairs_in(
    new: &[u64],
    old: &[u64],
    k: u32,
    plan: &Plan,
    order: &BitOrder,
) -> Result<Found> {
    match pairs_in(new, old, k, plan, order, &Budget::new(None))? {
        Bounded::Within(found) => Ok(found),
        Bounded::Over(_) | Bounded::AtLeast(_) => unreachable!("no budget, never over it"),
    }
}

/// [`cross_pairs`] within a budget of pairs (cross and within together; None: no limit): past
/// it the search stops at once and the answer is a lower bound of their number
/// ([`Bounded::AtLeast`]), so that a refusal costs no more than the pairs it allows.
pub fn cross_pairs_bounded(
    new: &[u64],
    old: &[u64],
    k: u32,
    plan: &Plan,
    budget: Option<u64>,
) -> Result<Bounded<Found>> {
    check(new, old, k, plan)?;
    let order = BitOrder::choose(new, old, plan);
    pairs_in(new, old, k, plan, &order, &Budget::new(budget))
}

/// Every pair (a, b), a < b, of indices into the ascending distinct `values` within `k`, in no
/// particular order, as long as their number stays within `budget` (None: no limit): the search
/// of [`cross_pairs`] without an index (the tables sort the values into runs sharing a prefix
/// and compare inside each run), in the bit order [`BitOrder::choose`] chooses. Past the budget
/// the search stops at once: the answer is a lower bound of their number
/// ([`Bounded::AtLeast`]), found in bounded memory and time.
pub fn inner_pairs_bounded(
    values: &[u64],
    k: u32,
    plan: &Plan,
    budget: Option<u64>,
) -> Result<Bounded<Vec<(u32, u32)>>> {
    check(values, &[], k, plan)?;
    let order = BitOrder::choose(values, &[], plan);
    Ok(
        match pairs_in(values, &[], k, plan, &order, &Budget::new(budget))? {
            Bounded::Within(found) => Bounded::Within(found.within),
            Bounded::Over(count) => Bounded::Over(count),
            Bounded::AtLeast(count) => Bounded::AtLeast(count),
        },
    )
}

/// Every pair (new value, index value) of the ascending distinct values `new` and `old` within
/// `k`, as indices into them, each once, in no particular order, without the pairs inside `new`
/// (which [`cross_pairs`] finds on the way): the search of a batch of queries. Past `budget`
/// pairs (None: no limit) the search stops at once: the answer is a lower bound of their number
/// ([`Bounded::AtLeast`]), found in bounded memory and time.
pub fn across_pairs_bounded(
    new: &[u64],
    old: &[u64],
    k: u32,
    plan: &Plan,
    budget: Option<u64>,
) -> Result<Bounded<Vec<(u32, u32)>>> {
    check(new, old, k, plan)?;
    let order = BitOrder::choose(new, old, plan);
    Ok(
        match pairs_in(new, old, k, plan, &order, &Budget::across(budget))? {
            Bounded::Within(found) => Bounded::Within(found.cross),
            Bounded::Over(count) => Bounded::Over(count),
            Bounded::AtLeast(count) => Bounded::AtLeast(count),
        },
    )
}

/// [`cross_pairs_in`] within a budget of pairs (cross and within together).
fn pairs_in(
    new: &[u64],
    old: &[u64],
    k: u32,
    plan: &Plan,
    order: &BitOrder,
    budget: &Budget,
) -> Result<Bounded<Found>> {
    check(new, old, k, plan)?;
    let mut out = Found::default();
    if new.is_empty() {
        return Ok(Bounded::Within(out));
    }
    let found = if order.is_identity() {
        search(new, old, k, plan, budget)?
    } else {
        let moved = |values: &[u64]| -> Vec<u64> {
            values
                .par_iter()
                .with_min_len(1 << 12)
                .map(|&x| order.apply(x))
                .collect()
        };
        let (new_moved, old_moved) = rayon::join(|| moved(new), || moved(old));
        let mut found = search(&new_moved, &old_moved, k, plan, budget)?;
        drop((new_moved, old_moved));
        // The pairs' values moved back; a pair inside the batch is (smaller, larger) again.
        found
            .cross
            .par_iter_mut()
            .for_each(|(a, b)| (*a, *b) = (order.invert(*a), order.invert(*b)));
        found.within.par_iter_mut().for_each(|(a, b)| {
            let (x, y) = (order.invert(*a), order.invert(*b));
            (*a, *b) = (x.min(y), x.max(y));
        });
        found
    };
    interrupt::check()?;
    if let Some(count) = budget.over_by(found.pending) {
        return Ok(Bounded::AtLeast(count));
    }
    if let Some(err) = found.error {
        return Err(err);
    }
    out.cross = positions(found.cross, new, old)?;
    out.within = positions(found.within, new, new)?;
    Ok(Bounded::Within(out))
}

/// The most pairs a search keeps (None: no limit), and the pairs its workers have counted.
struct Budget {
    limit: Option<u64>,
    /// How many pairs a worker counts before it reports them: FLUSH, or fewer for a small limit.
    flush: u64,
    total: AtomicU64,
    over: AtomicBool,
    /// A worker's allocation failed: every worker stops (the others would only fail in turn).
    failed: AtomicBool,
    /// Whether the pairs inside the batch are searched too.
    within: bool,
}

impl Budget {
    /// Workers report their count every FLUSH pairs (or every limit + 1, if fewer), so at most
    /// that many pairs per part searched are kept past the budget before every worker knows.
    const FLUSH: u64 = 1 << 16;

    fn new(limit: Option<u64>) -> Self {
        Budget {
            limit,
            flush: limit.map_or(Self::FLUSH, |l| l.saturating_add(1).min(Self::FLUSH)),
            total: AtomicU64::new(0),
            over: AtomicBool::new(false),
            failed: AtomicBool::new(false),
            within: true,
        }
    }

    /// [`Budget::new`] for a search of the pairs across the sides only.
    fn across(limit: Option<u64>) -> Self {
        Budget {
            within: false,
            ..Self::new(limit)
        }
    }

    /// Whether the search is past its budget, or out of memory: its workers stop.
    #[inline]
    fn stopped(&self) -> bool {
        (self.limit.is_some() && self.over.load(Ordering::Relaxed))
            || self.failed.load(Ordering::Relaxed)
    }

    /// Whether a worker whose `out` has just found a pair keeps it: past the budget its pairs
    /// are let go of (and the worker stops at its next poll).
    #[inline]
    fn keep(&self, out: &mut Values) -> bool {
        let Some(limit) = self.limit else {
            return true;
        };
        out.pending += 1;
        if out.pending >= self.flush {
            let now = self.total.fetch_add(out.pending, Ordering::Relaxed) + out.pending;
            out.pending = 0;
            if now > limit {
                self.over.store(true, Ordering::Relaxed);
            }
        }
        if self.over.load(Ordering::Relaxed) {
            if out.cross.capacity() + out.within.capacity() > 0 {
                (out.cross, out.within) = (Vec::new(), Vec::new());
            }
            return false;
        }
        true
    }

    /// The number of pairs found when it is past the budget (a lower bound: the workers stop
    /// once it is passed), `pending` being the count not yet reported.
    fn over_by(&self, pending: u64) -> Option<u64> {
        let count = self.total.load(Ordering::Relaxed) + pending;
        self.limit.filter(|&l| count > l).map(|_| count)
    }
}

/// Whether `plan` finds the pairs within `k` and the sides can be counted in u32.
fn check(new: &[u64], old: &[u64], k: u32, plan: &Plan) -> Result<()> {
    if plan.k() < k {
        return Err(Error::invalid(format!(
            "plan is built for k={} and cannot find pairs at k={k}",
            plan.k()
        )));
    }
    if new.len() >= u32::MAX as usize || old.len() >= u32::MAX as usize {
        return Err(Error::invalid("at most 2^32 - 2 values on each side"));
    }
    Ok(())
}

/// The pairs of values within `k` of distinct `new` and `old` (in any order), each once, `new`
/// not empty.
fn search(new: &[u64], old: &[u64], k: u32, plan: &Plan, budget: &Budget) -> Result<Values> {
    let lookup = FirstTable::new(plan);
    let (mut old_parted, mut new_parted) = (Parted::default(), Parted::default());
    let mut out = Values::default();
    for (lead, subs) in groups(plan) {
        interrupt::check()?;
        // Both sides by their lead bits (the same for every table of the group).
        let order = plan.tables()[subs[0].1[0]].permutation.order();
        let lead_of = Bits::new(&order[..lead as usize]);
        rayon::join(
            || old_parted.fill(old, &lead_of, lead),
            || new_parted.fill(new, &lead_of, lead),
        );
        let subs: Vec<Sub> = subs
            .iter()
            .map(|(bits, ts)| Sub::new(plan, lookup.as_ref(), lead, *bits, ts))
            .collect();
        // Per part, each sub-group's sub-parts and their tables, in cache.
        let found: Vec<Values> = (0..new_parted.parts())
            .into_par_iter()
            .filter(|&p| !new_parted.part(p).is_empty())
            .map_init(Scratch::default, |scratch, p| {
                let mut out = Values::default();
                for sub in &subs {
                    if interrupt::requested() || budget.stopped() || out.error.is_some() {
                        break;
                    }
                    let (new, old) = (new_parted.part(p), old_parted.part(p));
                    sub.pairs(k, new, old, scratch, budget, &mut out);
                }
                out
            })
            .collect();
        for f in found {
            out.pending += f.pending;
            if let Some(err) = f.error {
                out.error.get_or_insert(err);
            }
            if budget.stopped() || out.error.is_some() {
                (out.cross, out.within) = (Vec::new(), Vec::new());
                continue;
            }
            let grown = out
                .cross
                .try_reserve(f.cross.len())
                .and_then(|()| out.within.try_reserve(f.within.len()));
            if grown.is_err() {
                budget.failed.store(true, Ordering::Relaxed);
                (out.cross, out.within) = (Vec::new(), Vec::new());
                out.error = Some(Error::OutOfMemory(format!(
                    "more than {} pairs of fingerprints within k={k}",
                    out.pending.max((f.cross.len() + f.within.len()) as u64)
                )));
                continue;
            }
            out.cross.extend(f.cross);
            out.within.extend(f.within);
        }
        if budget.stopped() || out.error.is_some() {
            break;
        }
    }
    Ok(out)
}

/// Pairs of values found by the tables: (new value, index value) or (new value, later new value).
#[derive(Default)]
struct Values {
    cross: Vec<(u64, u64)>,
    within: Vec<(u64, u64)>,
    /// Pairs counted and not yet reported to the [`Budget`] (with one).
    pending: u64,
    /// A failed allocation: the worker stopped.
    error: Option<Error>,
}

impl Values {
    /// Keeps a pair found, growing its list with `try_reserve`: a failed allocation is kept as
    /// [`Error::OutOfMemory`] (and the worker stops), never an abort.
    #[inline]
    fn push(&mut self, within: bool, pair: (u64, u64)) {
        let list = if within {
            &mut self.within
        } else {
            &mut self.cross
        };
        if list.len() == list.capacity() && list.try_reserve(list.len().max(64)).is_err() {
            let len = list.len() as u64;
            (self.cross, self.within) = (Vec::new(), Vec::new());
            self.error = Some(Error::OutOfMemory(format!(
                "more than {} pairs of fingerprints within k in one part of the search; a \
                 limit of pairs (max_pairs, --max-pairs) bounds them",
                crate::error::thousands(len)
            )));
            return;
        }
        list.push(pair);
    }
}

/// Pairs of values as their positions in the ascending `first` and `second` that hold them: each
/// side sorted and walked along its array once (a search per pair would miss the cache).
/// Every allocation grows with the pairs, so each is fallible ([`Error::OutOfMemory`]).
fn positions(mut pairs: Vec<(u64, u64)>, first: &[u64], second: &[u64]) -> Result<Vec<(u32, u32)>> {
    fn walk(values: impl Iterator<Item = u64>, sorted: &[u64], len: usize) -> Result<Vec<u32>> {
        let mut out = try_with_capacity(len, "positions of pairs")?;
        let mut at = 0;
        out.extend(values.map(|v| {
            while at + 1 < sorted.len() && sorted[at] < v {
                at += 1;
            }
            at as u32
        }));
        Ok(out)
    }
    let n = pairs.len();
    pairs.par_sort_unstable_by_key(|p| p.1);
    let seconds = walk(pairs.iter().map(|p| p.1), second, n)?;
    // The pairs' own allocation, reused: (first value, second's position).
    let mut out: Vec<(u64, u64)> = pairs;
    for (p, &b) in out.iter_mut().zip(&seconds) {
        p.1 = u64::from(b);
    }
    drop(seconds);
    out.par_sort_unstable_by_key(|p| p.0);
    let firsts = walk(out.iter().map(|p| p.0), first, n)?;
    let mut pairs = try_with_capacity(n, "pairs of positions")?;
    pairs.extend(firsts.into_iter().zip(out).map(|(a, (_, b))| (a, b as u32)));
    Ok(pairs)
}

/// Buffers a worker reuses: each side's part by a sub-lead, and a sub-part of each sorted.
#[derive(Default)]
struct Scratch {
    new: Parted,
    old: Parted,
    batch: Runs,
    index: Runs,
}

/// A group's tables that share a sub-lead, ready to search a part.
struct Sub<'a> {
    bits: u32,
    key: Bits,
    tables: Vec<Table<'a>>,
}

/// One table's search of a sub-part.
struct Table<'a> {
    layout: &'a TableLayout,
    earlier: Earlier<'a>,
    /// The directory's keys by their number of bits d: the d bits of the prefix after the lead
    /// and sub-lead (a small sub-part is sorted into fewer runs, about one per value, so that
    /// small batches and parts do not walk 2^14 empty runs).
    below: Vec<Bits>,
}

impl<'a> Sub<'a> {
    fn new(
        plan: &'a Plan,
        lookup: Option<&'a FirstTable>,
        lead: u32,
        bits: u32,
        tables: &[usize],
    ) -> Self {
        let top = (lead + bits) as usize;
        let order = plan.tables()[tables[0]].permutation.order();
        let tables = tables
            .iter()
            .map(|&t| {
                let layout = &plan.tables()[t];
                let most = directory_bits(layout, top as u32) as usize - top;
                let order = &layout.permutation.order()[top..];
                Table {
                    layout,
                    earlier: Earlier::new(plan, lookup, t),
                    below: (0..=most).map(|d| Bits::new(&order[..d])).collect(),
                }
            })
            .collect();
        Sub {
            bits,
            key: Bits::new(&order[lead as usize..top]),
            tables,
        }
    }

    /// The pairs its tables report in the parts `new` and `old` of one lead: each side by the
    /// sub-lead, and per table each sub-part of the batch's sorted by the directory's bits (fewer
    /// for a small sub-part), in cache, its runs compared with the index's run of the same key
    /// and with themselves.
    fn pairs(
        &self,
        k: u32,
        new: &[u64],
        old: &[u64],
        s: &mut Scratch,
        budget: &Budget,
        out: &mut Values,
    ) {
        s.new.fill(new, &self.key, self.bits);
        s.old.fill(old, &self.key, self.bits);
        for table in &self.tables {
            let mask = table.layout.prefix_mask;
            let most = table.below.len() - 1;
            // Pairs within k that share the whole prefix and no earlier table's.
            let first = |diff: u64| {
                diff & mask == 0 && !table.earlier.holds(table.layout.permutation.apply(diff))
            };
            for q in 0..s.new.parts() {
                let (a_part, b_part) = (s.new.part(q), s.old.part(q));
                if a_part.is_empty() {
                    continue;
                }
                let size = a_part.len().max(b_part.len());
                let d = (usize::BITS - size.leading_zeros()).min(most as u32) as usize;
                let runs = 1usize << d;
                let key = &table.below[d];
                s.batch.sort(a_part, key, runs);
                s.index.sort(b_part, key, runs);
                for c in 0..runs {
                    let (a_run, b_run) = (s.batch.run(c), s.index.run(c));
                    for (i, &a) in a_run.iter().enumerate() {
                        // A long run (many values sharing a prefix) is quadratic: poll in it;
                        // past the budget, or out of memory, the worker stops at once.
                        if out.error.is_some() {
                            budget.failed.store(true, Ordering::Relaxed);
                            return;
                        }
                        if (i % 1024 == 1023 && interrupt::requested()) || budget.stopped() {
                            return;
                        }
                        within_k(a, b_run, k, |y| {
                            if first(a ^ y) && budget.keep(out) {
                                out.push(false, (a, y));
                            }
                        });
                        if budget.within {
                            within_k(a, &a_run[i + 1..], k, |b| {
                                if first(a ^ b) && budget.keep(out) {
                                    out.push(true, (a.min(b), a.max(b)));
                                }
                            });
                        }
                    }
                }
            }
        }
    }
}

/// Calls `hit` with each value of `run` within `k` of `a`, in order.
#[inline]
fn within_k(a: u64, run: &[u64], k: u32, mut hit: impl FnMut(u64)) {
    let mut at = 0;
    while at < run.len() {
        at += simd::first_within(a, &run[at..], k);
        if at < run.len() {
            hit(run[at]);
            at += 1;
        }
    }
}

/// The plan of least expected work for [`cross_pairs`] of `n_new` values against `n_old`, in
/// nanoseconds measured roughly on one core: per lead group and per sub-group, a partition of the
/// index's values (two passes); per table, a counting sort of each side's sub-parts, in cache,
/// and a comparison per pair sharing the directory's bits, across the sides and inside the batch
/// (the single-level plans of `k + 1` to 64 blocks).
pub fn cross_plan(k: u32, n_old: u64, n_new: u64) -> Result<Plan> {
    let (a, b) = (n_old.max(1) as f64, n_new.max(1) as f64);
    let mut best: Option<(f64, Plan)> = None;
    for blocks in i64::from(k) + 1..=64 {
        let Ok(plan) = Plan::nested(&[blocks], i64::from(k)) else {
            continue;
        };
        let groups = groups(&plan);
        let subs = groups.iter().map(|(_, subs)| subs.len()).sum::<usize>();
        let tables: f64 = groups
            .iter()
            .flat_map(|(lead, subs)| subs.iter().map(move |(sub, ts)| (lead + sub, ts)))
            .flat_map(|(top, ts)| ts.iter().map(move |&t| (top, t)))
            .map(|(top, t)| {
                let bits = directory_bits(&plan.tables()[t], top);
                a * 4.0 + b * 6.0 + (a * b + b * b / 2.0) / 2f64.powi(bits as i32)
            })
            .sum();
        let cost = (groups.len() + subs) as f64 * a * 5.0 + tables;
        if best.as_ref().is_none_or(|(c, _)| cost < *c) {
            best = Some((cost, plan));
        }
    }
    best.map(|(_, p)| p)
        .ok_or_else(|| Error::invalid(format!("no plan for k={k}")))
}

/// The search of [`inner_pairs_bounded`] cut into parts that can run apart, on other machines:
/// each value belongs to one part per lead group of the plan (its *part keys*, see
/// [`part_keys`]), and the pairs a lead group's tables report lie inside one of its parts. So a
/// cluster sends each value to the owners of its keys (one row per lead group: 9 at k = 8 with
/// 11 blocks), and each owner runs [`part_pairs`] on the values of a key: every pair within k is
/// found once, in the part of the first table whose prefix it shares, as on one machine.
///
/// A key is the lead group's number above [`MAX_LEAD_BITS`] bits of the value's lead bits, in
/// the bit order `order` (the same on every machine; [`BitOrder::choose`] on a sample of the
/// values, or the identity: the pairs do not depend on it, only the work).
pub struct KeyParts<'a> {
    plan: &'a Plan,
    order: BitOrder,
    lookup: Option<FirstTable>,
    /// Per lead group: (lead bits, the key of a value's lead bits, sub-groups).
    groups: Vec<(u32, Bits, Vec<Shared>)>,
}

impl<'a> KeyParts<'a> {
    pub fn new(plan: &'a Plan, order: BitOrder) -> Self {
        let groups = groups(plan)
            .into_iter()
            .map(|(lead, subs)| {
                let first = plan.tables()[subs[0].1[0]].permutation.order();
                (lead, Bits::new(&first[..lead as usize]), subs)
            })
            .collect();
        KeyParts {
            plan,
            order,
            lookup: FirstTable::new(plan),
            groups,
        }
    }

    /// The number of lead groups: the keys of each value.
    pub fn groups(&self) -> usize {
        self.groups.len()
    }

    /// The keys of each value, value after value (`groups()` each, in group order).
    pub fn keys(&self, values: &[u64]) -> Vec<u32> {
        let g = self.groups.len();
        let mut out = vec![0u32; values.len() * g];
        out.par_chunks_mut(g.max(1))
            .zip(values.par_iter())
            .for_each(|(keys, &x)| {
                let y = self.order.apply(x);
                for (i, (_, lead_of, _)) in self.groups.iter().enumerate() {
                    keys[i] = ((i as u32) << MAX_LEAD_BITS) | lead_of.of(y) as u32;
                }
            });
        out
    }

    /// Every pair `(a, b)`, a < b, of the values given with `keys` (one key each, any order,
    /// repeats allowed) within `k` that the key's part reports: over all parts, each pair within
    /// `k` once. More than `budget` pairs (None: no limit) is `Over` their exact number.
    pub fn pairs(
        &self,
        keys: &[u32],
        values: &[u64],
        k: u32,
        budget: Option<u64>,
    ) -> Result<Bounded<Vec<(u64, u64)>>> {
        if keys.len() != values.len() {
            return Err(Error::invalid(format!(
                "{} keys but {} values",
                keys.len(),
                values.len()
            )));
        }
        check(values, &[], k, self.plan)?;
        let mut rows: Vec<(u32, u64)> = keys
            .iter()
            .zip(values)
            .map(|(&key, &x)| (key, self.order.apply(x)))
            .collect();
        rows.par_sort_unstable();
        rows.dedup();
        let budget = Budget::new(budget);
        let mut out = Values::default();
        let mut scratch = Scratch::default();
        let mut part: Vec<u64> = Vec::new();
        // Each lead group's sub-groups, ready to search a part: made once for all its keys.
        let mut ready: Vec<Option<Vec<Sub<'_>>>> = (0..self.groups.len()).map(|_| None).collect();
        for run in rows.chunk_by(|a, b| a.0 == b.0) {
            interrupt::check()?;
            let key = run[0].0;
            let g = (key >> MAX_LEAD_BITS) as usize;
            let Some((lead, lead_of, subs)) = self.groups.get(g) else {
                return Err(Error::invalid(format!(
                    "key {key} names lead group {g} of {}",
                    self.groups.len()
                )));
            };
            part.clear();
            part.extend(run.iter().map(|r| r.1));
            let want = (key & ((1 << MAX_LEAD_BITS) - 1)) as usize;
            if part.iter().any(|&y| lead_of.of(y) != want) {
                return Err(Error::invalid(format!(
                    "a value given with key {key} has other lead bits: keys from another plan or bit order"
                )));
            }
            let subs = ready[g].get_or_insert_with(|| {
                subs.iter()
                    .map(|(bits, ts)| Sub::new(self.plan, self.lookup.as_ref(), *lead, *bits, ts))
                    .collect()
            });
            for sub in subs.iter() {
                sub.pairs(k, &part, &[], &mut scratch, &budget, &mut out);
            }
        }
        interrupt::check()?;
        if let Some(count) = budget.over_by(out.pending) {
            return Ok(Bounded::Over(count));
        }
        Ok(Bounded::Within(
            out.within
                .into_iter()
                .map(|(a, b)| {
                    let (x, y) = (self.order.invert(a), self.order.invert(b));
                    (x.min(y), x.max(y))
                })
                .collect(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fingerprint::hamming::hamming;

    fn rng(s: &mut u64) -> u64 {
        crate::testing::xorshift64(s)
    }

    /// Every pair within k, by comparing all of them.
    fn brute(new: &[u64], old: &[u64], k: u32) -> Vec<(u32, u32)> {
        let mut want = Vec::new();
        for (a, &x) in new.iter().enumerate() {
            for (b, &y) in old.iter().enumerate() {
                if hamming(x, y) <= k {
                    want.push((a as u32, b as u32));
                }
            }
        }
        want
    }

    /// Every pair of `values` within k, (earlier, later), by comparing all of them.
    fn brute_within(values: &[u64], k: u32) -> Vec<(u32, u32)> {
        brute(values, values, k)
            .into_iter()
            .filter(|(a, b)| a < b)
            .collect()
    }

    type Lists = (Vec<(u32, u32)>, Vec<(u32, u32)>);

    /// [`cross_pairs`], each list sorted.
    fn found(new: &[u64], old: &[u64], k: u32, plan: &Plan) -> Lists {
        let mut f = cross_pairs(new, old, k, plan).unwrap();
        f.cross.sort_unstable();
        f.within.sort_unstable();
        (f.cross, f.within)
    }

    /// [`cross_pairs_in`] `order`, each list sorted.
    fn found_in(new: &[u64], old: &[u64], k: u32, plan: &Plan, order: &BitOrder) -> Lists {
        let mut f = cross_pairs_in(new, old, k, plan, order).unwrap();
        f.cross.sort_unstable();
        f.within.sort_unstable();
        (f.cross, f.within)
    }

    /// Indexed values and new ones near some of them (a bit and a few random bits flipped, or
    /// none) and near each other, sorted and distinct.
    fn sides(seed: u64, n_old: usize, n_new: usize, flips: u32) -> (Vec<u64>, Vec<u64>) {
        let mut s = seed;
        let mut old: Vec<u64> = (0..n_old).map(|_| rng(&mut s)).collect();
        let mut new: Vec<u64> = (0..n_new)
            .map(|i| {
                let mut x = old[(i * 7) % n_old] ^ (1u64 << (i % 64));
                for _ in 0..i as u32 % (flips + 1) {
                    x ^= 1u64 << (rng(&mut s) % 64);
                }
                x
            })
            .collect();
        // Pairs inside the batch too: values one or two bits from earlier ones.
        let close: Vec<u64> = new[..n_new / 5]
            .iter()
            .enumerate()
            .map(|(i, &x)| x ^ (1u64 << (i % 61)) ^ (1u64 << (i * 5 % 64)))
            .collect();
        new.extend(close);
        new.extend((0..n_new / 10).map(|i| old[(i * 13 + 5) % n_old]));
        new.push(rng(&mut s));
        old.sort_unstable();
        old.dedup();
        new.sort_unstable();
        new.dedup();
        (new, old)
    }

    #[test]
    fn every_pair_within_k_once_for_every_kind_of_plan() {
        let (new, old) = sides(42, 3000, 300, 7);
        for k in [0, 3, 6, 8] {
            let want = (brute(&new, &old, k), brute_within(&new, k));
            assert!(want.0.len() >= 30, "k={k}: {}", want.0.len());
            assert!(k < 3 || want.1.len() >= 30, "k={k}: {}", want.1.len());
            let mut plans = vec![
                cross_plan(k, old.len() as u64, new.len() as u64).unwrap(),
                Plan::choose(
                    i64::from(k),
                    3300,
                    None,
                    crate::search::plan::Workload::Batch,
                )
                .unwrap(),
                Plan::blocks(i64::from(k) + 1, i64::from(k)).unwrap(),
                Plan::blocks(i64::from(k) + 2, i64::from(k)).unwrap(),
                Plan::blocks(i64::from(k) + 3, i64::from(k)).unwrap(),
            ];
            if (3..=6).contains(&k) {
                // Prefixes longer than the lead and directory together (a mask test skips
                // values sharing only the directory's bits), and nested layouts.
                plans.push(Plan::blocks(i64::from(k) + 4, i64::from(k)).unwrap());
                plans.push(Plan::nested(&[k as i64 + 2, k as i64 + 2], i64::from(k)).unwrap());
            }
            for plan in plans {
                let got = found(&new, &old, k, &plan);
                assert_eq!(got, want, "k={k}, levels {:?}", plan.levels());
            }
        }
        // The plans above include both: prefixes longer than the lead, sub-lead and directory
        // together, and groups of several sub-groups each partitioned by a sub-lead.
        let long = Plan::blocks(7, 3).unwrap();
        assert!(groups(&long)
            .iter()
            .any(|(lead, subs)| subs
                .iter()
                .any(|(sub, ts)| ts.iter().any(|&t| long.tables()[t].prefix_bits
                    > directory_bits(&long.tables()[t], lead + sub)))));
        let split = Plan::blocks(11, 8).unwrap();
        assert!(groups(&split)
            .iter()
            .any(|(_, subs)| subs.len() > 1 && subs.iter().all(|(sub, _)| *sub > 0)));
    }

    #[test]
    fn the_same_pairs_in_any_bit_order() {
        let (new, old) = sides(43, 3000, 300, 7);
        for k in [0, 3, 8] {
            let want = (brute(&new, &old, k), brute_within(&new, k));
            assert!(want.0.len() >= 30 && (k < 3 || want.1.len() >= 30));
            let mut plans = vec![
                cross_plan(k, old.len() as u64, new.len() as u64).unwrap(),
                Plan::blocks(i64::from(k) + 3, i64::from(k)).unwrap(),
            ];
            if k == 3 {
                plans.push(Plan::nested(&[5, 5], 3).unwrap());
            }
            for plan in plans {
                for seed in [1, 2] {
                    let order = BitOrder::new(crate::testing::shuffled_bits(seed)).unwrap();
                    let mut f = cross_pairs_in(&new, &old, k, &plan, &order).unwrap();
                    // Pairs inside the batch stay (earlier, later).
                    assert!(f.within.iter().all(|&(a, b)| a < b));
                    f.cross.sort_unstable();
                    f.within.sort_unstable();
                    assert_eq!((f.cross, f.within), want, "k={k}, {:?}", plan.levels());
                }
            }
        }
    }

    #[test]
    fn the_same_pairs_in_the_order_chosen_for_bits_that_agree_together() {
        let all = crate::testing::correlated(21, 1 << 17);
        let mut s = 22u64;
        // New values near some indexed ones and near each other, and some far from any.
        let mut new: Vec<u64> = (0..600)
            .map(|i| {
                let mut x = all[i * 1663 % all.len()];
                for _ in 0..i % 10 {
                    x ^= 1u64 << (rng(&mut s) % 64);
                }
                x
            })
            .collect();
        let close: Vec<u64> = new[..200].iter().map(|&x| x ^ 0x0101_0000).collect();
        new.extend(close);
        new.extend(crate::testing::correlated(23, 300));
        new.sort_unstable();
        new.dedup();
        let k = 8;
        let plan = cross_plan(k, all.len() as u64, new.len() as u64).unwrap();
        // The order chosen for a larger batch of such values (were there MIN_PAIRS pairs), and
        // the search in it on a part of the index small enough to compare every pair.
        let more = crate::testing::correlated(24, 5000);
        let order = BitOrder::choose_above(&more, &all, &plan, 0.0);
        assert!(!order.is_identity());
        let old: Vec<u64> = all.iter().copied().step_by(16).collect();
        let mut old_near = old.clone();
        old_near.extend(new.iter().step_by(3).map(|&x| x ^ 0x8000_0000_0000_0001));
        old_near.sort_unstable();
        old_near.dedup();
        let want = (brute(&new, &old_near, k), brute_within(&new, k));
        assert!(
            want.0.len() >= 300 && want.1.len() >= 200,
            "{}",
            want.0.len()
        );
        assert_eq!(found_in(&new, &old_near, k, &plan, &order), want);
    }

    #[test]
    fn empty_sides_and_a_plan_for_a_smaller_k() {
        let (new, old) = sides(7, 500, 50, 3);
        let plan = Plan::blocks(5, 4).unwrap();
        assert!(cross_pairs(&new, &old, 5, &plan).is_err());
        assert_eq!(found(&[], &old, 4, &plan), (vec![], vec![]));
        // Without an index, the batch's own pairs.
        let alone = found(&new, &[], 4, &plan);
        assert_eq!(alone, (vec![], brute_within(&new, 4)));
        assert!(!alone.1.is_empty());
        // A plan for a larger k finds the pairs within the smaller one, once each.
        let got = found(&new, &old, 2, &Plan::blocks(6, 4).unwrap());
        assert_eq!(got, (brute(&new, &old, 2), brute_within(&new, 2)));
    }

    #[test]
    fn across_pairs_are_the_cross_pairs_alone_within_a_budget() {
        let (new, old) = sides(45, 2000, 1500, 6);
        for k in [0, 3, 8] {
            let want = brute(&new, &old, k);
            assert!(k == 0 || want.len() >= 100, "k={k}: {}", want.len());
            let count = want.len() as u64;
            let plan = cross_plan(k, old.len() as u64, new.len() as u64).unwrap();
            for budget in [None, Some(count)] {
                let Bounded::Within(mut got) =
                    across_pairs_bounded(&new, &old, k, &plan, budget).unwrap()
                else {
                    panic!("k={k}: over a budget of {budget:?}");
                };
                got.sort_unstable();
                assert_eq!(got, want, "k={k}");
            }
            if count > 0 {
                match across_pairs_bounded(&new, &old, k, &plan, Some(count - 1)).unwrap() {
                    Bounded::AtLeast(c) => assert!(c > count - 1 && c <= count, "{c}"),
                    other => panic!("k={k}: expected a lower bound, got {other:?}"),
                }
            }
        }
    }

    #[test]
    fn inner_pairs_are_the_batch_pairs_within_a_budget_or_their_exact_count() {
        let (values, _) = sides(44, 3000, 2000, 7);
        for k in [0, 3, 8] {
            let want = brute_within(&values, k);
            assert!(k == 0 || want.len() >= 100, "k={k}: {}", want.len());
            let n = values.len() as u64;
            let plans = [
                cross_plan(k, 0, n).unwrap(),
                Plan::choose(i64::from(k), n, None, crate::search::plan::Workload::Batch).unwrap(),
                Plan::blocks(i64::from(k) + 3, i64::from(k)).unwrap(),
            ];
            let count = want.len() as u64;
            for plan in &plans {
                for budget in [None, Some(count), Some(count + 1)] {
                    let Bounded::Within(mut got) =
                        inner_pairs_bounded(&values, k, plan, budget).unwrap()
                    else {
                        panic!("k={k}: over a budget of {budget:?}");
                    };
                    got.sort_unstable();
                    assert_eq!(got, want, "k={k}, {:?}", plan.levels());
                }
                if count > 0 {
                    for budget in [0, count / 2, count - 1] {
                        // A lower bound past the budget: the search stops there.
                        match inner_pairs_bounded(&values, k, plan, Some(budget)).unwrap() {
                            Bounded::AtLeast(c) => {
                                assert!(c > budget && c <= count, "k={k}, budget {budget}: {c}")
                            }
                            other => panic!("k={k}: {other:?} for a budget of {budget}"),
                        }
                    }
                }
            }
        }
        // Past the budget the search stops soon: many pairs in one run, kept by no worker, and
        // counted only up to a report (limit + 1 pairs) or so per part searched.
        let mut dense: Vec<u64> = (0..1u64 << 12).map(|x| (x << 20) | (x * 3)).collect();
        dense.sort_unstable();
        dense.dedup();
        let want = brute_within(&dense, 8).len() as u64;
        assert!(want > 3 * Budget::FLUSH, "{want}");
        let plan = cross_plan(8, 0, dense.len() as u64).unwrap();
        assert!(matches!(
            inner_pairs_bounded(&dense, 8, &plan, Some(10)).unwrap(),
            Bounded::AtLeast(c) if c > 10 && c < want / 1000
        ));
        assert!(matches!(
            inner_pairs_bounded(&[], 8, &plan, Some(0)).unwrap(),
            Bounded::Within(p) if p.is_empty()
        ));
    }

    #[test]
    fn within_k_calls_back_every_value_within_k_in_order() {
        let mut s = 3u64;
        let a = rng(&mut s);
        for len in [0, 1, 3, 4, 5, 8, 11, 40] {
            let run: Vec<u64> = (0..len)
                .map(|i| match i % 3 {
                    0 => a ^ (rng(&mut s) & rng(&mut s) & rng(&mut s) & rng(&mut s)),
                    1 => a ^ (1u64 << (i % 64)),
                    _ => rng(&mut s),
                })
                .collect();
            for k in [0, 2, 5, 8] {
                let mut got = Vec::new();
                within_k(a, &run, k, |y| got.push(y));
                let want: Vec<u64> = run
                    .iter()
                    .copied()
                    .filter(|&y| hamming(a, y) <= k)
                    .collect();
                assert_eq!(got, want, "len {len}, k {k}");
            }
        }
    }

    #[test]
    fn keys_are_the_bits_in_order() {
        // Several runs, one run (a shift and a mask) and none.
        for order in [vec![63u8, 62, 10, 9, 8, 40], vec![12, 11, 10, 9], vec![]] {
            let bits = Bits::new(&order);
            assert_eq!(bits.single.is_some(), order.len() < 6);
            for x in [0u64, u64::MAX, 0x8000_0000_0000_0700, 0x4000_0100_0000_1500] {
                let want = order
                    .iter()
                    .fold(0usize, |acc, &b| (acc << 1) | ((x >> b) & 1) as usize);
                assert_eq!(bits.of(x), want, "{order:?} {x:#x}");
            }
        }
    }

    /// Cut into parts by their keys, in any bit order, the search finds the pairs of one search,
    /// each once; a part past the budget counts them.
    #[test]
    fn key_parts_find_every_pair_once() {
        let (mut values, old) = sides(9, 2000, 600, 6);
        values.extend(&old);
        values.sort_unstable();
        values.dedup();
        for k in [3u32, 6, 8] {
            let plan = Plan::choose(
                i64::from(k),
                values.len() as u64,
                None,
                crate::search::plan::Workload::Batch,
            )
            .unwrap();
            let mut want: Vec<(u64, u64)> = brute_within(&values, k)
                .into_iter()
                .map(|(a, b)| (values[a as usize], values[b as usize]))
                .collect();
            want.sort_unstable();
            assert!(want.len() > 100, "k={k}: {}", want.len());
            for order in [BitOrder::identity(), BitOrder::choose(&values, &[], &plan)] {
                let parts = KeyParts::new(&plan, order);
                let keys = parts.keys(&values);
                let g = parts.groups();
                assert_eq!(keys.len(), values.len() * g);
                // Rows of each key, sent to 3 owners by key, each owner searching its rows.
                let mut got = Vec::new();
                for owner in 0..3u32 {
                    let (mut ks, mut vs) = (Vec::new(), Vec::new());
                    for (i, &key) in keys.iter().enumerate() {
                        if key % 3 == owner {
                            ks.push(key);
                            vs.push(values[i / g]);
                            // A repeated row changes nothing.
                            if i % 5 == 0 {
                                ks.push(key);
                                vs.push(values[i / g]);
                            }
                        }
                    }
                    match parts.pairs(&ks, &vs, k, None).unwrap() {
                        Bounded::Within(p) => got.extend(p),
                        Bounded::Over(_) | Bounded::AtLeast(_) => unreachable!(),
                    }
                }
                got.sort_unstable();
                assert_eq!(got, want, "k={k}");
                let all: Vec<u32> = keys.clone();
                let vs: Vec<u64> = (0..all.len()).map(|i| values[i / g]).collect();
                match parts
                    .pairs(&all, &vs, k, Some(want.len() as u64 - 1))
                    .unwrap()
                {
                    Bounded::Over(c) => assert_eq!(c, want.len() as u64),
                    Bounded::AtLeast(c) => assert!(c >= want.len() as u64),
                    Bounded::Within(_) => panic!("k={k}: past the budget"),
                }
                assert!(parts.pairs(&[1 << 30], &[5], k, None).is_err());
            }
        }
    }
}
