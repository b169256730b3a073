//! A global order of shingle hashes, rarest first: the order in which prefix filtering (see
//! [`crate::candidates::short_texts`]) lists each text's hashes.
//!
//! Any order that every text shares keeps prefix filtering exact; only the number of candidates
//! depends on it. Listing the rarest hashes first makes two unrelated texts' lists meet rarely:
//! a hash held by thousands of texts ("the", boilerplate) comes last, where a prefix seldom
//! reaches. The order is `(count, hash)`, the count being how many texts of a *sample* hold the
//! hash; a hash seen once or not at all in the sample counts 0, so the table holds only the
//! hashes seen at least twice there (a few per cent of a sample's hashes): small enough to hand
//! to every machine of a cluster. With the marks of [`crate::candidates::repeats`], made on every
//! text, the hashes the table leaves out that more than one text may hold count 1 instead of 0.

use std::collections::HashMap;

use crate::candidates::repeats::Repeated;
use crate::error::{Error, Result};
use crate::sketch::verify::{shingles_of, SketchHash};
use crate::text::hash::FoldState;

/// The most shingle hashes a sample counts by default (about 40 MB of counts at most).
pub const SAMPLE_HASHES: usize = 1 << 21;

/// How many texts of a sample hold each frequent hash, and, when counted on every text, which
/// of the others more than one text may hold ([`crate::candidates::repeats`]): those count 1, after
/// the hashes no other text holds (0) and before the frequent ones (2 or more).
#[derive(Debug, Clone, Default)]
pub struct Rarity {
    counts: CountTable,
    repeated: Option<Repeated>,
    every_text: bool,
}

impl Rarity {
    /// The order of a table of frequent hashes and their counts (hashes absent count 0).
    pub fn new(hashes: &[SketchHash], counts: &[u32]) -> Result<Self> {
        if hashes.len() != counts.len() {
            return Err(Error::invalid(format!(
                "{} hashes but {} counts",
                hashes.len(),
                counts.len()
            )));
        }
        let rows: Vec<(SketchHash, u32)> =
            hashes.iter().copied().zip(counts.iter().copied()).collect();
        Ok(Rarity {
            counts: CountTable::new(&rows),
            repeated: None,
            every_text: false,
        })
    }

    /// This order with the hashes of `repeated` that the table leaves out counting 1.
    pub fn with_repeated(mut self, repeated: Repeated) -> Self {
        self.repeated = Some(repeated);
        self
    }

    /// This order, its table (or its marks) made on every text whose lists it cuts: a hash
    /// that counts 0 is then held by one of those texts alone, and can be the first shared
    /// hash of no pair ([`Rarity::order_first_in`] tells how many a list begins with).
    pub fn on_every_text(mut self) -> Self {
        self.every_text = true;
        self
    }

    /// Whether a hash that counts 0 is held by one text alone ([`Rarity::on_every_text`]).
    pub fn tells_alone(&self) -> bool {
        self.every_text
    }

    /// How many of the sketches hold each of their shingle hashes (checks left out), counting
    /// sketches in turn until `budget` hashes are counted: every count, not only the frequent
    /// ones (a cluster adds the counts of its machines' samples, then keeps those of 2 or more).
    pub fn count<'a>(
        sketches: impl Iterator<Item = &'a [SketchHash]>,
        budget: usize,
    ) -> HashMap<SketchHash, u32, FoldState> {
        let mut counts: HashMap<SketchHash, u32, FoldState> = HashMap::default();
        let mut seen = 0usize;
        for sketch in sketches {
            if seen >= budget {
                break;
            }
            let shingles = shingles_of(sketch);
            seen += shingles.len();
            for &h in shingles {
                *counts.entry(h).or_insert(0) += 1;
            }
        }
        counts
    }

    /// The counts of [`Rarity::count`] as a table by hash, `(hashes, counts)`: every hash of
    /// the counted sketches gathered and sorted, and each run of one value counted. About three
    /// times faster than the map on a partition's millions of hashes (no hashing, one sort of
    /// eight-byte values), for the cost of holding them: eight bytes a hash counted.
    pub fn sorted_counts<'a>(
        sketches: impl Iterator<Item = &'a [SketchHash]>,
        budget: usize,
    ) -> (Vec<SketchHash>, Vec<u32>) {
        let mut held: Vec<SketchHash> = Vec::new();
        for sketch in sketches {
            if held.len() >= budget {
                break;
            }
            held.extend_from_slice(shingles_of(sketch));
        }
        held.sort_unstable();
        runs_of_sorted(&held, 1)
    }

    /// The order counted on a sample of sketches (see [`Rarity::count`]): hashes held by two
    /// sketches of the sample or more.
    pub fn sample<'a>(sketches: impl Iterator<Item = &'a [SketchHash]>, budget: usize) -> Self {
        let counts: Vec<(SketchHash, u32)> = Self::count(sketches, budget)
            .into_iter()
            .filter(|&(_, c)| c >= 2)
            .collect();
        Rarity {
            counts: CountTable::new(&counts),
            repeated: None,
            every_text: false,
        }
    }

    /// The frequent hashes and their counts, by hash.
    pub fn table(&self) -> (Vec<SketchHash>, Vec<u32>) {
        let mut rows: Vec<(SketchHash, u32)> = self.counts.iter().collect();
        rows.sort_unstable();
        rows.into_iter().unzip()
    }

    /// The hashes held in the table.
    pub fn len(&self) -> usize {
        self.counts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }

    /// A hash's place in the order: rarer first, ties by value.
    #[inline]
    pub fn key(&self, h: SketchHash) -> (u32, SketchHash) {
        let count = match &self.repeated {
            // A hash of the table is held by two texts or more, so its slot is marked: the
            // table is looked up only for the few hashes whose slot is.
            Some(r) if !r.holds(h) => 0,
            Some(_) => self.counts.get(h).unwrap_or(1),
            None => self.counts.get(h).unwrap_or(0),
        };
        (count, h)
    }

    /// The first `keep` of `shingles` (sorted by value, as a sketch is) in this order, or all
    /// of them when they are fewer, written to `out`. The hashes that count 0 come first and by
    /// value: a sketch holding `keep` of them needs no other lookup. With the repeated hashes
    /// marked, those are told by the marks (on short texts about a third of the lookups of
    /// [`Rarity::order`]); without, by the table, read only until `keep` are found.
    /// A sketch holding fewer (most of a text's hashes are frequent where it has copies and
    /// near copies) takes all those of count 0, then as many of the others as are missing, the
    /// first in the order of `(count, hash)`: by a tally of their counts (`first_by_count`),
    /// or, past its counts, selected among the others alone, then only they are sorted.
    /// Returns how many of the hashes written first count 0 (those of a list that no other
    /// text holds, when the order [`Rarity::tells_alone`]).
    pub fn order_first(
        &self,
        shingles: &[SketchHash],
        keep: usize,
        out: &mut Vec<SketchHash>,
    ) -> usize {
        self.order_first_in(shingles, keep, out, &mut Vec::new())
    }

    /// [`Rarity::order_first`] with `keyed` for its scratch (one buffer for the texts a thread
    /// orders, not one allocation a text).
    pub fn order_first_in(
        &self,
        shingles: &[SketchHash],
        keep: usize,
        out: &mut Vec<SketchHash>,
        keyed: &mut Vec<(u32, SketchHash)>,
    ) -> usize {
        debug_assert!(shingles.windows(2).all(|w| w[0] < w[1]));
        out.clear();
        keyed.clear();
        if keep == 0 {
            return 0;
        }
        if let Some(r) = &self.repeated {
            // Each hash's slot found once, and asked of the cache PREFETCH_AHEAD hashes ahead
            // of its test; the marked hashes are kept for a sketch that holds too few unmarked.
            let mut ring = [0usize; PREFETCH_AHEAD];
            for (i, &h) in shingles.iter().take(PREFETCH_AHEAD).enumerate() {
                ring[i] = r.slot_of(h);
                r.prefetch_slot(ring[i]);
            }
            for (i, &h) in shingles.iter().enumerate() {
                let s = ring[i % PREFETCH_AHEAD];
                if let Some(&ahead) = shingles.get(i + PREFETCH_AHEAD) {
                    let a = r.slot_of(ahead);
                    ring[i % PREFETCH_AHEAD] = a;
                    r.prefetch_slot(a);
                }
                if r.holds_slot(s) {
                    keyed.push((0, h));
                } else {
                    out.push(h);
                    if out.len() == keep {
                        return keep;
                    }
                }
            }
            // The marked hashes' counts: the table's, else 1.
            for i in 0..keyed.len() {
                if let Some(&(_, ahead)) = keyed.get(i + PREFETCH_AHEAD) {
                    self.counts.prefetch(ahead);
                }
                keyed[i].0 = self.counts.get(keyed[i].1).unwrap_or(1);
            }
        } else {
            for (i, &h) in shingles.iter().enumerate() {
                if let Some(&ahead) = shingles.get(i + PREFETCH_AHEAD) {
                    self.counts.prefetch(ahead);
                }
                match self.counts.get(h).unwrap_or(0) {
                    0 => {
                        out.push(h);
                        if out.len() == keep {
                            return keep;
                        }
                    }
                    count => keyed.push((count, h)),
                }
            }
        }
        // The hashes that count 0, first.
        let mut zeros = out.len();
        if keyed.iter().any(|&(count, _)| count == 0) {
            // A table handed a count of 0 for a marked hash: it goes with the unmarked ones,
            // by value, so the whole order is taken. (A marked hash more than one text may
            // hold: none is told alone.)
            keyed.extend(out.iter().map(|&h| (0, h)));
            out.clear();
            zeros = 0;
        } else if first_by_count(keyed, keep.min(shingles.len()) - out.len(), out) {
            return zeros;
        }
        let missing = keep.min(shingles.len()) - out.len();
        if missing < keyed.len() {
            keyed.select_nth_unstable(missing);
            keyed.truncate(missing);
        }
        keyed.sort_unstable();
        out.extend(keyed.iter().map(|&(_, h)| h));
        zeros
    }

    /// `shingles` in this order, rarest first, written to `out`: sorted by `(count, hash)`
    /// (the whole order, which the tests hold [`Rarity::order_first`] to).
    #[cfg(test)]
    pub fn order(&self, shingles: &[SketchHash], out: &mut Vec<SketchHash>) {
        let mut keyed: Vec<(u32, SketchHash)> = shingles.iter().map(|&h| self.key(h)).collect();
        keyed.sort_unstable();
        out.clear();
        out.extend(keyed.into_iter().map(|(_, h)| h));
    }
}

/// The counts [`first_by_count`] tells apart; larger ones are left to a sort.
const FEW_COUNTS: usize = 256;

/// Appends to `out` the first `missing` hashes of `keyed` in the order of `(count, hash)`, and
/// returns true, when `keyed` is in the order of its hashes (as a sketch's hashes are met) and
/// the count they reach is below [`FEW_COUNTS`]; else returns false and leaves `out` as it is.
/// Without a comparison: the counts are tallied, the count at which `missing` are reached is
/// found from the tallies, and the hashes below it (and the first of those at it, the smallest)
/// are written where their count puts them, in the order met, so by hash within a count.
fn first_by_count(keyed: &[(u32, SketchHash)], missing: usize, out: &mut Vec<SketchHash>) -> bool {
    let missing = missing.min(keyed.len());
    let mut tallies = [0u32; FEW_COUNTS + 1];
    for &(count, _) in keyed {
        tallies[(count as usize).min(FEW_COUNTS)] += 1;
    }
    // The count `last` at which `missing` are reached, `before` held below it.
    let (mut last, mut before) = (0, 0usize);
    while before + (tallies[last] as usize) < missing {
        before += tallies[last] as usize;
        last += 1;
    }
    if last >= FEW_COUNTS {
        return false;
    }
    // Where each count's hashes begin: counts below `last` take all of theirs, and `last` the
    // first `missing - before` of its own.
    let mut at = [0usize; FEW_COUNTS + 1];
    let base = out.len();
    let mut from = base;
    for c in 0..=last {
        at[c] = from;
        from += tallies[c] as usize;
    }
    let end = base + missing;
    out.resize(end, 0);
    for &(count, h) in keyed {
        let c = count as usize;
        if c < last || (c == last && at[c] < end) {
            out[at[c]] = h;
            at[c] += 1;
        }
    }
    true
}

/// How many hashes ahead of the one looked up [`Rarity::order_first`] asks the cache for.
const PREFETCH_AHEAD: usize = 16;

/// The counts of a [`Rarity`] table, by hash: open addressing with linear probing, two thirds
/// full, a hash's first slot taken from the hash times an odd constant, scaled to the table's
/// length. Unlike a `HashMap`, a slot can be asked of the cache ahead of its lookup
/// ([`CountTable::prefetch`]): where most of a text's hashes are in the table (texts with near
/// copies), each lookup was a cache miss waited for in turn.
#[derive(Debug, Clone, Default)]
struct CountTable {
    /// `(hash, count + 1)`, `(0, 0)` for an empty slot.
    slots: Vec<(SketchHash, u64)>,
    /// The hashes held.
    len: usize,
}

impl CountTable {
    /// The table of `(hash, count)` rows; the counts of a hash given twice add up, held at
    /// `u32::MAX`.
    fn new(rows: &[(SketchHash, u32)]) -> Self {
        // Never full: a lookup stops at an empty slot. In huge pages where the kernel grants
        // them: the lookups land anywhere in the table (13 MB on the manual pages), and with
        // pages of 4 KiB most of them missed the TLB too.
        let size = rows.len() + rows.len() / 2 + 1;
        let mut slots = crate::runtime::memory::vec_in_huge_pages(size);
        slots.resize(size, (0, 0));
        let mut table = CountTable { slots, len: 0 };
        for (i, &(h, c)) in rows.iter().enumerate() {
            if let Some(&(ahead, _)) = rows.get(i + PREFETCH_AHEAD) {
                table.prefetch(ahead);
            }
            let mut at = table.slot(h);
            loop {
                let slot = &mut table.slots[at];
                if slot.1 == 0 {
                    *slot = (h, u64::from(c) + 1);
                    table.len += 1;
                    break;
                }
                if slot.0 == h {
                    slot.1 = (slot.1 + u64::from(c)).min(u64::from(u32::MAX) + 1);
                    break;
                }
                at = table.after(at);
            }
        }
        table
    }

    /// The first slot of `h`'s lookup.
    #[inline]
    fn slot(&self, h: SketchHash) -> usize {
        ((u128::from(h.wrapping_mul(crate::GOLDEN_GAMMA)) * self.slots.len() as u128) >> 64)
            as usize
    }

    /// The slot after `at`, the first after the last.
    #[inline]
    fn after(&self, at: usize) -> usize {
        if at + 1 == self.slots.len() {
            0
        } else {
            at + 1
        }
    }

    /// The count of `h`, None when the table does not hold it.
    #[inline]
    fn get(&self, h: SketchHash) -> Option<u32> {
        if self.len == 0 {
            return None;
        }
        let mut at = self.slot(h);
        loop {
            let (held, c) = self.slots[at];
            if c == 0 {
                return None;
            }
            if held == h {
                return Some((c - 1) as u32);
            }
            at = self.after(at);
        }
    }

    /// Asks the cache for the slot where the lookup of `h` starts.
    #[inline]
    fn prefetch(&self, h: SketchHash) {
        if !self.slots.is_empty() {
            // A lookup reads a few slots on from its first (two on average in a table two
            // thirds full): the line of the third too, where the first's line ends before it.
            let at = self.slot(h);
            crate::runtime::simd::prefetch_line(&self.slots[at]);
            crate::runtime::simd::prefetch_line(&self.slots[(at + 2).min(self.slots.len() - 1)]);
        }
    }

    /// The `(hash, count)` rows, in no order.
    fn iter(&self) -> impl Iterator<Item = (SketchHash, u32)> + '_ {
        self.slots
            .iter()
            .filter(|s| s.1 != 0)
            .map(|&(h, c)| (h, (c - 1) as u32))
    }

    fn len(&self) -> usize {
        self.len
    }

    fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// The values of `hashes` in `[low, high)`, in their order: a range of a corpus's hashes,
/// counted one range at a time (see [`frequent_runs`]). Without a branch on the values: each
/// block of them is written to a buffer on the stack, each value kept when it lies in the range,
/// and the kept ones are appended (the output grows by what it holds, not by the input's size).
pub fn hashes_between(hashes: &[SketchHash], low: SketchHash, high: SketchHash) -> Vec<SketchHash> {
    const BLOCK: usize = 256;
    let mut out = Vec::new();
    if low >= high {
        return out;
    }
    let mut buffer = [0; BLOCK];
    for block in hashes.chunks(BLOCK) {
        let mut kept = 0;
        for &h in block {
            buffer[kept] = h;
            kept += usize::from(h.wrapping_sub(low) < high.wrapping_sub(low));
        }
        out.extend_from_slice(&buffer[..kept]);
    }
    out
}

/// The values that `sorted` (ascending) holds at least twice, and how many times each, held at
/// `u32::MAX`: the table of an order counted on every text, from its hashes sorted. One pass
/// that checks the order and counts the runs, without a branch on the values: each block's runs
/// of two or more are written to buffers on the stack at each change of value, kept when the run
/// ending there is long enough, and appended.
pub fn frequent_runs(sorted: &[SketchHash]) -> Result<(Vec<SketchHash>, Vec<u32>)> {
    const BLOCK: usize = 1024;
    let (mut hashes, mut counts) = (Vec::new(), Vec::new());
    let Some(&first) = sorted.first() else {
        return Ok((hashes, counts));
    };
    let mut run_hashes = [0; BLOCK];
    let mut run_counts = [0usize; BLOCK];
    // The run being read: its value and where it began.
    let (mut last, mut began) = (first, 0usize);
    let mut disorder = false;
    let mut i = 1;
    while i < sorted.len() {
        let end = (i + BLOCK).min(sorted.len());
        let mut kept = 0;
        for (j, &h) in sorted[i..end].iter().enumerate() {
            let at = i + j;
            disorder |= h < last;
            let changed = h != last;
            run_hashes[kept] = last;
            run_counts[kept] = at - began;
            kept += usize::from(changed & (at - began >= 2));
            began = if changed { at } else { began };
            last = h;
        }
        hashes.extend_from_slice(&run_hashes[..kept]);
        counts.extend(
            run_counts[..kept]
                .iter()
                .map(|&c| u32::try_from(c).unwrap_or(u32::MAX)),
        );
        i = end;
    }
    if disorder {
        let at = sorted.windows(2).position(|w| w[0] > w[1]).unwrap_or(0);
        return Err(Error::invalid(format!(
            "the hashes must be sorted: {} at {at} is followed by {}",
            sorted[at],
            sorted[at + 1]
        )));
    }
    if sorted.len() - began >= 2 {
        hashes.push(last);
        counts.push(u32::try_from(sorted.len() - began).unwrap_or(u32::MAX));
    }
    Ok((hashes, counts))
}

/// Each value of `sorted` (ascending) held at least `least` times, and how many times, held at
/// `u32::MAX`.
fn runs_of_sorted(sorted: &[SketchHash], least: usize) -> (Vec<SketchHash>, Vec<u32>) {
    let mut hashes = Vec::new();
    let mut counts = Vec::new();
    for run in sorted.chunk_by(|a, b| a == b) {
        if run.len() >= least {
            hashes.push(run[0]);
            counts.push(u32::try_from(run.len()).unwrap_or(u32::MAX));
        }
    }
    (hashes, counts)
}

/// Two tables of counts, each by hash (hashes strictly increasing), added up into one by hash:
/// a hash in both counts the sum of its two counts, held at `u32::MAX`. A linear merge, so a
/// sample's counts gathered piece by piece cost the pieces' length, not a sort of them.
pub fn merged_counts(
    a: (&[SketchHash], &[u32]),
    b: (&[SketchHash], &[u32]),
) -> Result<(Vec<SketchHash>, Vec<u32>)> {
    for (hashes, counts) in [a, b] {
        if hashes.len() != counts.len() {
            return Err(Error::invalid(format!(
                "{} hashes but {} counts",
                hashes.len(),
                counts.len()
            )));
        }
        if let Some(at) = hashes.windows(2).position(|w| w[0] >= w[1]) {
            return Err(Error::invalid(format!(
                "the hashes of a table of counts must increase: {} at {at} is followed by {}",
                hashes[at],
                hashes[at + 1]
            )));
        }
    }
    let ((ah, ac), (bh, bc)) = (a, b);
    let mut hashes = Vec::with_capacity(ah.len() + bh.len());
    let mut counts = Vec::with_capacity(ah.len() + bh.len());
    let (mut i, mut j) = (0, 0);
    while i < ah.len() && j < bh.len() {
        let (x, y) = (ah[i], bh[j]);
        hashes.push(x.min(y));
        counts.push(match x.cmp(&y) {
            std::cmp::Ordering::Less => {
                i += 1;
                ac[i - 1]
            }
            std::cmp::Ordering::Greater => {
                j += 1;
                bc[j - 1]
            }
            std::cmp::Ordering::Equal => {
                i += 1;
                j += 1;
                ac[i - 1].saturating_add(bc[j - 1])
            }
        });
    }
    hashes.extend_from_slice(&ah[i..]);
    counts.extend_from_slice(&ac[i..]);
    hashes.extend_from_slice(&bh[j..]);
    counts.extend_from_slice(&bc[j..]);
    Ok((hashes, counts))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Seeded draws of 31 bits (a linear congruential generator): the same cases on every run.
    fn draws(mut seed: u64) -> impl FnMut() -> u64 {
        move || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            seed >> 33
        }
    }

    #[test]
    fn frequent_hashes_come_last_and_ties_go_by_value() {
        let sketches: Vec<Vec<u64>> = vec![vec![1, 2, 3], vec![2, 3, 9], vec![3, 7]];
        let rarity = Rarity::sample(sketches.iter().map(|s| &s[..]), 100);
        // 3 in three sketches, 2 in two; 1, 7 and 9 once (count 0 in the order).
        assert_eq!(rarity.table(), (vec![2, 3], vec![2, 3]));
        let mut out = Vec::new();
        rarity.order(&[1, 2, 3, 7, 9], &mut out);
        assert_eq!(out, vec![1, 7, 9, 2, 3]);
        // The budget stops the count after the sketch that reaches it.
        let counted = Rarity::count(sketches.iter().map(|s| &s[..]), 3);
        assert_eq!(counted.values().sum::<u32>(), 3);
        // From a table: the same order; an empty table orders by value.
        let again = Rarity::new(&[2, 3], &[2, 3]).unwrap();
        again.order(&[9, 3, 1, 2], &mut out);
        assert_eq!(out, vec![1, 9, 2, 3]);
        Rarity::default().order(&[9, 3, 1], &mut out);
        assert_eq!(out, vec![1, 3, 9]);
        assert!(Rarity::new(&[1], &[]).is_err());
    }

    /// The first `keep` of the order, found without reading the whole sketch when enough of its
    /// hashes count 0, are the first `keep` of the whole order: tables holding counts of 0, 1
    /// and more (a table may be handed any counts), every `keep`, with the repeated hashes
    /// marked and without, the scratch of one round handed to the next.
    #[test]
    fn the_first_of_the_order_are_those_of_the_whole_order() {
        use crate::candidates::repeats::{Repeats, FEWEST_BITS};
        let mut next = draws(17);
        let mut keyed = vec![(7, 7)];
        for round in 0..600 {
            let mut sketch: Vec<u64> = (0..next() % 60).map(|_| next() % 200).collect();
            sketch.sort_unstable();
            sketch.dedup();
            let held: Vec<u64> = (0..next() % 80).map(|_| next() % 200).collect();
            // With the marks, the table's counts are of 1 or more, as those of texts that
            // mark them are (a marked hash the table gives 0 ranks with the unmarked ones in
            // the whole order, where the first ones stop at the unmarked).
            // Counts of a few, or about FEW_COUNTS, or far past it, every third round.
            let least = (round % 2) as u32 + [0, FEW_COUNTS as u32 - 2, 1 << 30][round % 3];
            let mut table: Vec<(u64, u32)> = held
                .iter()
                .map(|&h| (h, least + (next() % 4) as u32))
                .collect();
            table.sort_unstable();
            table.dedup_by_key(|e| e.0);
            let (hashes, counts): (Vec<u64>, Vec<u32>) = table.into_iter().unzip();
            let mut rarity = Rarity::new(&hashes, &counts).unwrap();
            if round % 2 == 1 {
                // Other texts of the same small range mark some of the sketch's hashes.
                let mut repeats = Repeats::new(FEWEST_BITS).unwrap();
                for _ in 0..next() % 8 {
                    let mut text: Vec<u64> = (0..next() % 40).map(|_| next() % 200).collect();
                    text.sort_unstable();
                    text.dedup();
                    repeats.add(&text);
                }
                rarity = rarity.with_repeated(repeats.into_repeated());
            }
            let mut whole = Vec::new();
            rarity.order(&sketch, &mut whole);
            let keep = (next() % 70) as usize;
            let mut first = vec![99u64];
            rarity.order_first(&sketch, keep, &mut first);
            assert_eq!(first, &whole[..keep.min(whole.len())], "round {round}");
            rarity.order_first_in(&sketch, keep, &mut first, &mut keyed);
            assert_eq!(first, &whole[..keep.min(whole.len())], "round {round}");
            if round % 2 == 1 {
                // A table giving 0 to marked hashes, and the whole sketch kept: its whole order.
                let zero: Vec<u32> = counts.iter().map(|&c| c % 2).collect();
                let with_zeros = Rarity::new(&hashes, &zero)
                    .unwrap()
                    .with_repeated(rarity.repeated.clone().unwrap());
                with_zeros.order(&sketch, &mut whole);
                with_zeros.order_first_in(&sketch, sketch.len(), &mut first, &mut keyed);
                assert_eq!(first, whole, "round {round}");
            }
        }
    }

    #[test]
    fn repeated_hashes_come_after_unique_ones_and_before_the_table() {
        use crate::candidates::repeats::Repeats;
        // Texts: 5 and 6 are held twice, 8 three times; 1, 2, 3 and 7 once each.
        let texts: [&[u64]; 4] = [&[1, 5, 8], &[2, 5, 6, 8], &[3, 6, 8], &[7]];
        let mut repeats = Repeats::new(crate::candidates::repeats::FEWEST_BITS).unwrap();
        for t in texts {
            repeats.add(t);
        }
        let repeated = repeats.into_repeated();
        // The sample saw 8 twice: it is in the table, and comes last whatever its value.
        let order = Rarity::new(&[8], &[2])
            .unwrap()
            .with_repeated(repeated.clone());
        let mut out = Vec::new();
        order.order(&[1, 2, 3, 5, 6, 7, 8], &mut out);
        // Few slots are shared by chance at 2^16 slots; the order holds whatever the slots.
        let (unique, twice): (Vec<u64>, Vec<u64>) =
            [1, 2, 3, 7].iter().partition(|&&h| !repeated.holds(h));
        let mut want = unique.clone();
        let mut ones = twice.clone();
        ones.extend([5, 6]);
        ones.sort_unstable();
        want.extend(ones);
        want.push(8);
        assert_eq!(out, want);
        assert!(repeated.holds(5) && repeated.holds(6) && repeated.holds(8));
        // Unsorted input gives the same order.
        order.order(&[8, 7, 6, 5, 3, 2, 1], &mut out);
        assert_eq!(out, want);
        // Without the table, repeated hashes still come after unique ones.
        Rarity::default()
            .with_repeated(repeated)
            .order(&[5, 1], &mut out);
        assert_eq!(out[out.len() - 1], 5);
    }

    #[test]
    fn sorted_counts_are_the_counts_of_the_map_by_hash() {
        let mut next = draws(11);
        for round in 0..40 {
            // Sketches of distinct sorted hashes from a small range (so that many are shared),
            // some with checks at the end, which neither count holds.
            let sketches: Vec<Vec<u64>> = (0..next() % 30)
                .map(|_| {
                    let mut s: Vec<u64> = (0..next() % 12).map(|_| next() % 50).collect();
                    s.sort_unstable();
                    s.dedup();
                    if next().is_multiple_of(3) {
                        s.push(crate::sketch::verify::CHECK_BIT | 5);
                    }
                    s
                })
                .collect();
            let budget = if round % 2 == 0 {
                usize::MAX
            } else {
                (next() % 40) as usize
            };
            let (hashes, counts) = Rarity::sorted_counts(sketches.iter().map(|s| &s[..]), budget);
            let mut want: Vec<(u64, u32)> = Rarity::count(sketches.iter().map(|s| &s[..]), budget)
                .into_iter()
                .collect();
            want.sort_unstable();
            let got: Vec<(u64, u32)> = hashes.into_iter().zip(counts).collect();
            assert_eq!(got, want);
        }
    }

    /// The table answers as a map for every size from empty up, present and absent hashes
    /// alike (a lookup of an absent hash ends at an empty slot, even in a table of one).
    #[test]
    fn the_count_table_answers_as_a_map() {
        let mut next = draws(29);
        for n in 0..40u64 {
            let rows: Vec<(u64, u32)> =
                (0..n).map(|_| (next() % 50, (next() % 4) as u32)).collect();
            let mut want = std::collections::BTreeMap::new();
            for &(h, c) in &rows {
                let at: &mut u32 = want.entry(h).or_insert(0);
                *at = at.saturating_add(c);
            }
            let table = CountTable::new(&rows);
            assert_eq!(table.len(), want.len());
            for h in 0..60 {
                assert_eq!(table.get(h), want.get(&h).copied(), "{n} rows, hash {h}");
            }
            let mut all: Vec<(u64, u32)> = table.iter().collect();
            all.sort_unstable();
            assert_eq!(all, want.into_iter().collect::<Vec<_>>());
        }
    }

    #[test]
    fn a_range_and_its_runs_are_those_of_a_filter_and_a_map() {
        let mut next = draws(23);
        for _ in 0..60 {
            let hashes: Vec<u64> = (0..next() % 200).map(|_| next() % 64).collect();
            let (low, high) = (next() % 70, next() % 70);
            let want: Vec<u64> = hashes
                .iter()
                .copied()
                .filter(|h| (low..high).contains(h))
                .collect();
            let mut got = hashes_between(&hashes, low, high);
            assert_eq!(got, want);
            got.sort_unstable();
            let mut map = std::collections::BTreeMap::new();
            for &h in &got {
                *map.entry(h).or_insert(0u32) += 1;
            }
            map.retain(|_, c| *c >= 2);
            let (h, c) = frequent_runs(&got).unwrap();
            assert_eq!(
                h.into_iter().zip(c).collect::<Vec<_>>(),
                map.into_iter().collect::<Vec<_>>()
            );
        }
        assert!(frequent_runs(&[2, 1]).is_err());
        // Runs across the blocks of the count (1,024 values), at its start and its end, and
        // values out of order far into it.
        for round in 0..40 {
            let mut sorted: Vec<u64> = (0..next() % 5000)
                .map(|_| next() % (1 + round * 100))
                .collect();
            sorted.sort_unstable();
            let mut map = std::collections::BTreeMap::new();
            for &h in &sorted {
                *map.entry(h).or_insert(0u32) += 1;
            }
            map.retain(|_, c| *c >= 2);
            let (h, c) = frequent_runs(&sorted).unwrap();
            assert_eq!(
                h.into_iter().zip(c).collect::<Vec<_>>(),
                map.into_iter().collect::<Vec<_>>(),
                "round {round}"
            );
            if sorted.len() > 1 && sorted[0] != sorted[sorted.len() - 1] {
                let at = (next() as usize) % sorted.len();
                let last = sorted.len() - 1;
                let other = if sorted[at] == sorted[0] { last } else { 0 };
                sorted.swap(at, other);
                assert!(frequent_runs(&sorted).is_err(), "round {round}");
            }
        }
    }

    #[test]
    fn merged_counts_add_up_by_hash_against_a_map() {
        // Two tables drawn from a small range, so that many hashes are in both.
        let mut next = draws(7);
        for _ in 0..50 {
            let mut tables: Vec<(Vec<u64>, Vec<u32>)> = Vec::new();
            for _ in 0..2 {
                let mut map = std::collections::BTreeMap::new();
                for _ in 0..next() % 40 {
                    let c = if next().is_multiple_of(5) {
                        u32::MAX - 1
                    } else {
                        (next() % 9) as u32 + 1
                    };
                    map.insert(next() % 60, c);
                }
                tables.push(map.into_iter().unzip());
            }
            let mut expected = std::collections::BTreeMap::new();
            for (h, c) in &tables {
                for (&h, &c) in h.iter().zip(c) {
                    let at: &mut u64 = expected.entry(h).or_insert(0);
                    *at += u64::from(c);
                }
            }
            let (a, b) = (&tables[0], &tables[1]);
            let (h, c) = merged_counts((&a.0, &a.1), (&b.0, &b.1)).unwrap();
            let got: Vec<(u64, u64)> = h.into_iter().zip(c.into_iter().map(u64::from)).collect();
            let want: Vec<(u64, u64)> = expected
                .into_iter()
                .map(|(h, c)| (h, c.min(u64::from(u32::MAX))))
                .collect();
            assert_eq!(got, want);
        }
        assert!(merged_counts((&[1, 1], &[1, 1]), (&[], &[])).is_err());
        assert!(merged_counts((&[], &[]), (&[3, 2], &[1, 1])).is_err());
        assert!(merged_counts((&[1], &[]), (&[], &[])).is_err());
    }
}
