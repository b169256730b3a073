//! Exact candidates of short texts: every pair of texts of at most [`SHORT`] shingles each
//! whose Jaccard similarity can reach the threshold, found by prefix filtering.
//!
//! A 64-bit simhash of a short text moves far for a small edit: one word changed in a text of
//! eight shingles changes a quarter of them, and such pairs lie 9 to 14 bits apart, beyond the
//! candidate radius that keeps the search cheap. A short text's sketch, on the other hand, is
//! its whole shingle set, so these pairs can be found exactly.
//!
//! Prefix filtering (Chaudhuri, Ganti and Kaushik, ICDE 2006; Bayardo, Ma and Srikant, WWW 2007):
//! with every set sorted in one global order (here the order of the shingle hashes, which the
//! sketches already are in), two sets A and B with J(A, B) >= t share at least `ceil(t |A|)`
//! elements, so the first `|A| - ceil(t |A|) + 1` of A and the first `|B| - ceil(t |B|) + 1` of
//! B share one. A text of at most 16 shingles has a prefix of at most 4 hashes at t = 0.8; texts
//! that share a prefix hash are candidates. Star clustering walks the texts of each prefix hash
//! only for the centers that need them (see `star::Candidates::stars`), so no pair is stored.
//!
//! A prefix hash shared by more than [`RUN_CAP`] short texts (6,069 npm summaries begin with
//! "typescript definitions for") is split further rather than compared all with all: among those
//! texts, a near pair whose *first* shared hash is this one shares `ceil(t |A|) - 1` more after
//! it, so the next `|A'| - (ceil(t |A|) - 1) + 1` hashes after it (`A'`: A's hashes after it)
//! hold one both have. The run is split by (this hash, that next one), and again while a part
//! is over the cap (a pair whose first shared hash is an earlier one is found in that hash's
//! run). A text whose overlap is already met by the hashes of the run's key (`ceil(t |A|)` at
//! most the depth) cannot be split further: it is compared with every text of the run small
//! enough to be near it. At t = 0.8 and a depth of at most 3, such a group is one shingle set
//! (the key's hashes), near each other whatever their number, and stays whole. Before a run over
//! the cap is split, the texts that the length and positional filters let meet no other text of
//! it from where its hash lies in them leave it ([`Cut::may_meet`]): in near-identical texts
//! whose first shared hash is a common shingle after their own, most of the run. A group over
//! the cap that still cannot be split and is not one set is near-identical texts; it is
//! compared [`RUN_CAP`] texts at a time, and the pairs across those pieces are counted in
//! [`ShortTexts::skipped_pairs`] (reported with the results). Each run over the cap splits
//! within a budget of its own (`split_budget`), so that it is cut alike wherever it is built.
//! So every candidate pair is compared, within a bounded work a center, or counted; memory
//! stays linear in the texts' prefixes.

use rayon::prelude::*;

use crate::candidates::rarity::Rarity;
use crate::error::{try_with_capacity, Error, Result};
use crate::fingerprint::encoders::mix64;
use crate::runtime::interrupt;
use crate::sketch::verify::{jaccard_at_least, shingles_of, SketchHash};

fn check_threshold(threshold: f64) -> Result<()> {
    if threshold > 0.0 && threshold <= 1.0 {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "threshold must be in (0, 1], got {threshold}"
        )))
    }
}

/// The most shingles of a short text.
pub const SHORT: usize = 16;
/// The most short texts one run proposes to each other before it is split further.
pub const RUN_CAP: usize = 1024;
/// Hashes a text lists past its prefix (when it has more than [`SHORT`] shingles): what a run
/// over the cap can be split by, that many times at most.
pub const EXTRA: usize = 8;

/// The overlap a set of `n` shingles needs with any set at Jaccard >= `threshold`:
/// `ceil(threshold n)`, taken a hair low so that rounding can only lengthen a prefix.
fn overlap(n: usize, threshold: f64) -> usize {
    (threshold * n as f64 - 1e-9).ceil().max(1.0) as usize
}

/// How many of the first hashes of a set of `n` shingles must hold a shared one with any set at
/// Jaccard >= `threshold`: `n - ceil(threshold n) + 1`, the ceiling taken a hair low so that
/// rounding can only lengthen the prefix.
pub fn prefix_len(n: usize, threshold: f64) -> usize {
    Cut::new(threshold, None).prefix(n)
}

/// Where prefixes are cut: the threshold of the stars, and, for sketches cut at a size (long
/// texts, whose pairs near the threshold are decided by their exact Jaccard), the overlap a pair
/// whose estimate lies in that band needs.
///
/// A pair's estimate (see [`crate::sketch::verify::jaccard`]) is `both / union`, `both` being at
/// most the overlap of the two sketches and `union` at least the larger sketch (at most `size`): an
/// estimate of at least t needs an overlap of `ceil(t |A|)` hashes of A's sketch. A pair with a
/// cut sketch is decided exactly when its estimate is at least `t - band`, so its union is
/// `size` and its overlap at least `ceil((t - band) size)`: the `floor`. A sketch's needed
/// overlap is the smaller of the two, so that every pair a verified star may check is found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cut {
    pub threshold: f64,
    pub floor: Option<usize>,
    /// The sketch size when known (0 otherwise): two sketches of fewer shingles each hold their
    /// whole sets, and a star takes them only at an exact Jaccard of at least the threshold.
    pub whole_below: usize,
}

impl Cut {
    /// Prefixes for `threshold`; with `band = Some((size, band))`, for the pairs of sketches cut at
    /// `size` whose estimates lie within `band` below it too.
    pub fn new(threshold: f64, band: Option<(usize, f64)>) -> Cut {
        let floor = band
            .filter(|&(_, b)| b > 0.0)
            .map(|(size, b)| ((threshold - b) * size as f64 - 1e-9).ceil().max(0.0) as usize);
        let whole_below = band.map_or(0, |(size, _)| size);
        Cut {
            threshold,
            floor,
            whole_below,
        }
    }

    /// The overlap a sketch of `n` shingles has with any sketch a star may take for it.
    pub fn need(&self, n: usize) -> usize {
        overlap(n, self.threshold)
            .min(self.floor.unwrap_or(usize::MAX))
            .max(1)
    }

    /// The overlap two sketches of `na` and `nb` shingles have when a star may take them: that
    /// of each ([`Cut::need`]), and, for two whole sets (each of 3 shingles or more, which carry
    /// no checks, and fewer than the sketch size), `ceil(t (na + nb) / (1 + t))`, since their
    /// Jaccard `o / (na + nb - o)` is then exact.
    pub fn pair_need(&self, na: usize, nb: usize) -> usize {
        let need = self.need(na).max(self.need(nb));
        let t = self.threshold;
        if na.min(nb) >= 3 && na.max(nb) < self.whole_below {
            need.max((t * (na + nb) as f64 / (1.0 + t) - 1e-9).ceil() as usize)
        } else {
            need
        }
    }

    /// Whether two texts that meet first (in the global order) at a hash `place_a` and
    /// `place_b` say where (see [`place`]) may be a pair a star takes: the length and positional
    /// filters of AllPairs and PPJoin. Past their first shared hash, two sketches share at
    /// most the hashes both still hold after it, `min(rest_a, rest_b)`, and the pair needs
    /// [`Cut::pair_need`] in all. A place of unknown size passes.
    pub fn may_meet(&self, place_a: u32, place_b: u32) -> bool {
        places_meet(place_a, place_b, |na, nb| self.pair_need(na, nb))
    }

    /// The sizes a text may have to be a pair a star takes with a text placed at `place` in the
    /// hash where they first meet: `(least, most)`, inclusive (a little wide, never narrow).
    /// The other holds at least the pair's overlap, so at least `need(n)`; past their first shared
    /// hash both hold at most `rest` more, so `need(other) <= rest + 1`, and for two whole sets
    /// `t (n + other) / (1 + t) <= rest + 1`: AllPairs' length filter and PPJoin's positional
    /// filter seen from one side, which a list sorted by size reads as a window.
    pub fn window(&self, place: u32) -> (usize, usize) {
        if place == UNPLACED {
            return (0, usize::MAX);
        }
        (self.need((place >> 16) as usize), self.window_most(place))
    }

    /// The second bound of [`Cut::window`] alone.
    #[inline]
    pub fn window_most(&self, place: u32) -> usize {
        if place == UNPLACED {
            return usize::MAX;
        }
        let (n, rest) = ((place >> 16) as usize, (place & 0xFFFF) as usize);
        let t = self.threshold;
        // Closed forms of the largest sizes within reach, a hair wide (1e-6 against the 1e-9 the
        // needs are taken low by, far above the rounding of a division): never narrow.
        let reach = (rest + 1) as f64 + 1e-6;
        let most = if self.floor.is_some_and(|f| f <= rest + 1) {
            usize::MAX
        } else {
            // need(m) = ceil(t m) <= rest + 1.
            (reach / t) as usize
        };
        if n >= 3 && n < self.whole_below && most < self.whole_below {
            // Every text in reach holds a whole set too (or one of at most 2 shingles, whose
            // pairs the general bound covers): t (n + m) / (1 + t) <= rest + 1.
            let whole = ((1.0 + t) * reach / t - n as f64).max(0.0) as usize;
            most.min(whole.max(2))
        } else {
            most
        }
    }

    /// Where a list sorted by place (size, then the hashes after the shared one: see
    /// [`place`]) begins to hold the texts a text placed at `place` may be a pair with: the
    /// first of the smallest size of [`Cut::window`] that holds [`Cut::least_rest`] hashes or
    /// more, as a place. It depends on the size alone, not on where in its list the text
    /// holds the shared hash: a text's runs all begin their windows at the same place.
    #[inline]
    pub fn window_start(&self, place: u32) -> u64 {
        if place == UNPLACED {
            return 0;
        }
        let least = self.need((place >> 16) as usize);
        (least.min(0xFFFF) as u64) << 16 | self.least_rest(place, least).min(0xFFFF) as u64
    }

    /// The fewest hashes a text of `size` shingles must still hold after its first shared hash
    /// with a text placed at `place` to be a pair a star takes ([`Cut::may_meet`] from the other
    /// side): in a run sorted by size and then by that number, the texts of one size below it
    /// come first.
    pub fn least_rest(&self, place: u32, size: usize) -> usize {
        if place == UNPLACED {
            return 0;
        }
        self.pair_need((place >> 16) as usize, size)
            .saturating_sub(1)
    }

    /// How many of a sketch's first hashes (in the global order) hold one it shares with any
    /// sketch a star may take for it.
    pub fn prefix(&self, n: usize) -> usize {
        (n + 1).saturating_sub(self.need(n)).clamp(1, n.max(1))
    }

    /// Whether these prefixes find every pair the stars at `threshold` check, with a `band`
    /// around it for sketches cut at `size`.
    pub fn covers(&self, threshold: f64, band: f64, size: usize) -> bool {
        if threshold != self.threshold {
            return false;
        }
        if band <= 0.0 {
            return true;
        }
        let want = Cut::new(threshold, Some((size, band)));
        matches!((self.floor, want.floor), (Some(a), Some(b)) if a <= b)
    }
}

/// Whether texts placed at `place_a` and `place_b` (see [`place`]) keep enough hashes after it
/// for the `need` of their sizes: the test of [`Cut::may_meet`], with `need` computed or read
/// from a table. A place of unknown size passes.
#[inline]
pub fn places_meet(place_a: u32, place_b: u32, need: impl Fn(usize, usize) -> usize) -> bool {
    if place_a == UNPLACED || place_b == UNPLACED {
        return true;
    }
    let (na, ra) = ((place_a >> 16) as usize, (place_a & 0xFFFF) as usize);
    let (nb, rb) = ((place_b >> 16) as usize, (place_b & 0xFFFF) as usize);
    1 + ra.min(rb) >= need(na, nb)
}

/// A place of no known size: it passes every filter.
pub const UNPLACED: u32 = u32::MAX;

/// Where a hash lies in a sketch of `n` shingles: `n` and how many of its hashes come after
/// position `at` in the global order, 16 bits each ([`UNPLACED`] past 16 bits).
pub fn place(n: usize, at: usize) -> u32 {
    if n >= 0xFFFF || at >= n {
        UNPLACED
    } else {
        (n as u32) << 16 | (n - at - 1) as u32
    }
}

/// Each sketch's hashes in the `rarity` order, as many as prefix filtering at `cut` reads: a
/// set of at most [`SHORT`] shingles whole, a longer one its prefix and [`EXTRA`] more (checks
/// left out). List d is the next `lengths[d]` of `hashes`, `sizes[d]` the number of its
/// sketch's shingles, and its first `alone[d]` hashes are held by no other text (0 unless the
/// order [`Rarity::tells_alone`]): they can be the first shared hash of no pair, and need not
/// be posted.
pub fn prefix_lists(
    sketches: &crate::sketch::verify::Ranges<'_>,
    rarity: &Rarity,
    cut: Cut,
) -> PrefixLists {
    // Blocks of texts, each ordered by one thread into vectors of its own (no vector a text).
    const BLOCK: usize = 256;
    let n_texts = sketches.len();
    let tells_alone = rarity.tells_alone();
    let blocks: Vec<PrefixLists> = (0..n_texts.div_ceil(BLOCK))
        .into_par_iter()
        .map(|b| {
            let texts = b * BLOCK..((b + 1) * BLOCK).min(n_texts);
            let mut block = PrefixLists {
                lengths: Vec::with_capacity(texts.len()),
                sizes: Vec::with_capacity(texts.len()),
                alone: Vec::with_capacity(texts.len()),
                ..PrefixLists::default()
            };
            let (mut buf, mut keyed) = (Vec::new(), Vec::new());
            for d in texts {
                let shingles = shingles_of(sketches.get(d));
                let n = shingles.len();
                block.sizes.push(n as u32);
                if n == 0 {
                    block.lengths.push(0);
                    block.alone.push(0);
                    continue;
                }
                let keep = if n <= SHORT {
                    n
                } else {
                    (cut.prefix(n) + EXTRA).min(n)
                };
                let zeros = rarity.order_first_in(shingles, keep, &mut buf, &mut keyed);
                block.lengths.push(buf.len() as u32);
                block.alone.push(if tells_alone { zeros as u32 } else { 0 });
                block.hashes.extend_from_slice(&buf);
            }
            block
        })
        .collect();
    let total = blocks.iter().map(|b| b.hashes.len()).sum();
    // Written once from end to end: in huge pages, a page fault every 2 MiB (see `vec_in_huge_pages`).
    let mut lists = PrefixLists {
        hashes: crate::runtime::memory::vec_in_huge_pages(total),
        lengths: Vec::with_capacity(n_texts),
        sizes: Vec::with_capacity(n_texts),
        alone: Vec::with_capacity(n_texts),
    };
    for block in blocks {
        lists.lengths.extend_from_slice(&block.lengths);
        lists.hashes.extend_from_slice(&block.hashes);
        lists.sizes.extend_from_slice(&block.sizes);
        lists.alone.extend_from_slice(&block.alone);
    }
    lists
}

/// The texts' lists of [`prefix_lists`], end to end.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PrefixLists {
    /// The hashes of list d: the next `lengths[d]` of `hashes`.
    pub lengths: Vec<u32>,
    pub hashes: Vec<SketchHash>,
    /// The shingles of each text's sketch.
    pub sizes: Vec<u32>,
    /// How many of each list's first hashes no other text holds.
    pub alone: Vec<u32>,
}

/// Texts and the runs of those that share a prefix hash: the short texts of a corpus
/// ([`ShortTexts::new`], hashes in value order), or every text ([`ShortTexts::from_lists`],
/// hashes in a [`Rarity`] order).
#[derive(Debug, Default)]
pub struct ShortTexts {
    /// Text t's list is `sets[offsets[slot[t]]..offsets[slot[t] + 1]]` when `slot[t]`
    /// is not `u32::MAX`: its whole shingle set for a short text, else its first hashes in the
    /// global order.
    slot: Vec<u32>,
    offsets: Vec<usize>,
    sets: Vec<SketchHash>,
    /// Where the prefixes were cut.
    cut: Cut,
    /// Whether every text takes part (not only the short ones).
    every: bool,
    /// Run r of short texts sharing a prefix hash is `texts[runs[r]..runs[r + 1]]`, and
    /// `places[runs[r]..runs[r + 1]]` where the run's first hash lies in each (see [`place`]).
    runs: Vec<usize>,
    texts: Vec<u32>,
    places: Vec<u32>,
    /// Whether every place is known (no [`UNPLACED`]): runs sorted by size are then read by
    /// [`Cut::window`].
    placed: bool,
    /// The runs of each short slot's prefix hashes: `run_of[run_starts[s]..run_starts[s + 1]]`,
    /// in the order of the slot's list (by where the run's first hash lies in it), and the
    /// slot's place in each, `run_places[..]` alike.
    run_starts: Vec<usize>,
    run_of: Vec<u32>,
    run_places: Vec<u32>,
    /// Candidate pairs in groups that could not be split and were over the cap.
    skipped: u64,
}

impl Default for Cut {
    fn default() -> Self {
        Cut::new(1.0, None)
    }
}

/// A text in a run: `(key, slot, position of the key's last hash in the slot's list << 8 |
/// depth, position of the key's first hash, the run over the cap it was split from or
/// [`UNSPLIT`])`.
type Posting = (u64, u32, u32, u32, u32);

/// The root of a posting not split from a run over the cap.
const UNSPLIT: u32 = u32::MAX;

/// The postings a run over the cap of `m` texts may be split into, over all its depths: past
/// them, what is still over the cap is counted as skipped. A budget of each run's own, so that
/// a run is split the same wherever it is found (with the whole corpus on one machine, or in a
/// Dask task with the other runs of its hashes), and the split postings of a corpus stay within
/// 8 times its postings.
fn split_budget(m: usize) -> usize {
    m.saturating_mul(4).saturating_add(4 * RUN_CAP)
}

/// The members of a run over the cap that may be a pair a star takes with another of them, by
/// the length and positional filters where the run's first hash lies ([`Cut::may_meet`]); None
/// when all may. Members of one place are alike, so each distinct place is checked against
/// each other (a run of more than 4,096 distinct places is left whole).
fn meeting(run: &[Posting], cut: &Cut, size_of: impl Fn(u32) -> usize) -> Option<Vec<Posting>> {
    let place_of = |p: &Posting| place(size_of(p.1), p.3 as usize);
    let mut places: Vec<u32> = run.iter().map(place_of).collect();
    places.sort_unstable();
    let mut distinct: Vec<(u32, usize)> = Vec::new();
    for chunk in places.chunk_by(|a, b| a == b) {
        distinct.push((chunk[0], chunk.len()));
    }
    if distinct.len() > 4096 {
        return None;
    }
    let meets: Vec<u32> = distinct
        .iter()
        .enumerate()
        .filter(|&(i, &(p, count))| {
            distinct
                .iter()
                .enumerate()
                .any(|(j, &(q, _))| (i != j || count > 1) && cut.may_meet(p, q))
        })
        .map(|(_, &(p, _))| p)
        .collect();
    if meets.len() == distinct.len() {
        return None;
    }
    Some(
        run.iter()
            .filter(|p| meets.binary_search(&place_of(p)).is_ok())
            .copied()
            .collect(),
    )
}

/// The most hashes a text's list may hold (positions take 24 bits of a posting).
const MOST_LISTED: usize = 1 << 24;

/// Sorts `items` (any order of `Ord`) whose order begins with `key`, a value spread evenly
/// over the `u64`s (a hash), in the order of `sort_unstable` without its `n log n`
/// comparisons (runs of postings: 0.08 against 0.04 CPU s for 1.9M), and with no second copy
/// of the items: they are moved in place to [`FLAG_BUCKETS`] buckets by the key's top bits (an
/// American flag sort, each move putting one item in its bucket; few enough buckets that the
/// places they fill stay in the cache), then each bucket is spread by the next bits through a
/// buffer of its size into buckets of a few items, each sorted whole.
fn sort_by_spread_key<T: Ord + Copy>(items: &mut [T], key: impl Fn(&T) -> u64) {
    const TOP: u32 = FLAG_BUCKETS.trailing_zeros();
    if items.len() < 4 * FLAG_BUCKETS {
        items.sort_unstable();
        return;
    }
    let ends = flag_sort(items, FLAG_BUCKETS, |item| {
        (key(item) >> (64 - TOP)) as usize
    });
    let mut spare: Vec<T> = Vec::new();
    let mut counts: Vec<usize> = Vec::new();
    let mut from = 0;
    for end in ends {
        let bucket = &mut items[from..end];
        from = end;
        let n = bucket.len();
        if n < 64 {
            bucket.sort_unstable();
            continue;
        }
        // About four to eight items a bucket of the second level.
        let bits = (usize::BITS - (n / 8).leading_zeros()).min(20);
        let low = |item: &T| ((key(item) << TOP) >> (64 - bits)) as usize;
        counts.clear();
        counts.resize((1 << bits) + 1, 0);
        for item in bucket.iter() {
            counts[low(item) + 1] += 1;
        }
        for b in 1..counts.len() {
            counts[b] += counts[b - 1];
        }
        spare.clear();
        spare.extend_from_slice(bucket);
        let mut at = counts.clone();
        for &item in &spare {
            let to = &mut at[low(&item)];
            bucket[*to] = item;
            *to += 1;
        }
        for w in counts.windows(2) {
            if w[1] - w[0] > 1 {
                bucket[w[0]..w[1]].sort_unstable();
            }
        }
    }
}

/// Buckets of the first level of [`sort_by_spread_key`].
const FLAG_BUCKETS: usize = 1 << 10;

/// Moves `items` in place into `buckets` buckets (`bucket` of each item, below `buckets`), in
/// bucket order: an American flag sort (McIlroy, Bostic and McIlroy 1993). The end of each
/// bucket.
fn flag_sort<T>(items: &mut [T], buckets: usize, bucket: impl Fn(&T) -> usize) -> Vec<usize> {
    let mut ends = vec![0usize; buckets];
    for item in items.iter() {
        ends[bucket(item)] += 1;
    }
    let mut next = Vec::with_capacity(buckets);
    let mut sum = 0;
    for end in ends.iter_mut() {
        next.push(sum);
        sum += *end;
        *end = sum;
    }
    for b in 0..buckets {
        while next[b] < ends[b] {
            let mut home = bucket(&items[next[b]]);
            while home != b {
                items.swap(next[b], next[home]);
                next[home] += 1;
                home = bucket(&items[next[b]]);
            }
            next[b] += 1;
        }
    }
    ends
}

/// The key of a run one hash deeper.
#[inline]
fn deeper(key: u64, h: SketchHash) -> u64 {
    mix64(key ^ h ^ 0x5EED_5B11_7DEE_9E12)
}

impl ShortTexts {
    /// From the shingle sets of some of `texts` texts: `(text, set)` pairs, each set sorted and
    /// distinct. Sets of more than [`SHORT`] hashes, empty sets (texts without words) and texts
    /// given twice after the first are left out.
    pub fn new<'a>(
        texts: usize,
        sets: impl Iterator<Item = (u32, &'a [SketchHash])>,
        threshold: f64,
    ) -> Result<Self> {
        check_threshold(threshold)?;
        let mut bad = false;
        let lists = sets.filter_map(|(t, set)| {
            let n = shingles_of(set).len();
            if n == 0 || n > SHORT {
                return None;
            }
            bad |= set.windows(2).any(|w| w[0] >= w[1]);
            Some((t, set, n, 0))
        });
        let built = Self::build(texts, lists, Cut::new(threshold, None), false, None, true)?;
        if bad {
            return Err(Error::invalid(
                "each shingle set must be sorted and distinct",
            ));
        }
        Ok(built)
    }

    /// From the lists of some of `texts` texts (see [`prefix_lists`]): `(text, list, shingles)`,
    /// each list the text's first hashes in one global order (its whole set when it has at most
    /// [`SHORT`] shingles, else at least its prefix at `cut`), `shingles` the size of its set.
    /// Empty lists and texts given twice after the first are left out.
    pub fn from_lists<'a>(
        texts: usize,
        lists: impl Iterator<Item = (u32, &'a [SketchHash], usize)>,
        cut: Cut,
    ) -> Result<Self> {
        check_threshold(cut.threshold)?;
        let lists = lists.map(|(t, list, n)| (t, list, n, 0));
        Self::build(texts, lists, cut, true, None, true)
    }

    /// [`ShortTexts::from_lists`] without a copy of the lists, which the runs no longer need
    /// once built (star clustering reads the sketches instead; [`ShortTexts::set`] gives None):
    /// 8 bytes a listed hash less at the peak. Each list comes with how many of its first
    /// hashes no other text holds (see [`prefix_lists`]): those are not posted (a run of one
    /// text holds no pair), which leaves the same runs.
    pub fn runs_of_lists<'a>(
        texts: usize,
        lists: impl Iterator<Item = (u32, &'a [SketchHash], usize, usize)>,
        cut: Cut,
    ) -> Result<Self> {
        check_threshold(cut.threshold)?;
        Self::build(texts, lists, cut, true, None, false)
    }

    /// The runs of some prefix hashes, split as [`ShortTexts::from_lists`] splits a run over the
    /// cap: `keys` holds `(hash, text)` for every text of those hashes (a text is given its
    /// list as there), each hash one of the text's prefix (a driver that shuffled the texts'
    /// prefix hashes and found these runs over the cap hands them here).
    pub fn from_runs<'a>(
        texts: usize,
        lists: impl Iterator<Item = (u32, &'a [SketchHash], usize)>,
        cut: Cut,
        keys: &[(SketchHash, u32)],
    ) -> Result<Self> {
        check_threshold(cut.threshold)?;
        let lists = lists.map(|(t, list, n)| (t, list, n, 0));
        Self::build(texts, lists, cut, true, Some(keys), true)
    }

    fn build<'a>(
        texts: usize,
        lists: impl Iterator<Item = (u32, &'a [SketchHash], usize, usize)>,
        cut: Cut,
        every: bool,
        keys: Option<&[(SketchHash, u32)]>,
        keep_lists: bool,
    ) -> Result<Self> {
        let threshold = cut.threshold;
        let mut slot = vec![u32::MAX; texts];
        // Each slot's list, borrowed while the runs are built (copied after when kept).
        let mut listed: Vec<&'a [SketchHash]> = Vec::new();
        let mut sizes: Vec<u32> = Vec::new();
        // How many of each slot's first hashes no other text holds.
        let mut alone: Vec<u32> = Vec::new();
        let mut postings: Vec<Posting> = Vec::new();
        for (t, set, n, lone) in lists {
            let t = t as usize;
            if t >= texts {
                return Err(Error::invalid(format!("text {t} out of {texts}")));
            }
            let shingles = shingles_of(set);
            if shingles.is_empty() || slot[t] != u32::MAX {
                continue;
            }
            let prefix = cut.prefix(n);
            if shingles.len() < prefix.min(n) || shingles.len() > n || shingles.len() > MOST_LISTED
            {
                return Err(Error::invalid(format!(
                    "text {t}: a list of {} hashes for a set of {n} shingles (a prefix of {prefix})",
                    shingles.len()
                )));
            }
            if lone > shingles.len() {
                return Err(Error::invalid(format!(
                    "text {t}: {lone} hashes held by no other text in a list of {}",
                    shingles.len()
                )));
            }
            slot[t] = listed.len() as u32;
            listed.push(set);
            sizes.push(n as u32);
            alone.push(lone as u32);
        }
        if keys.is_none() {
            // Every text's prefix hashes, in one vector of the size they need (a few hundred MB
            // for a million long texts), backed by huge pages: written once from end to end, it
            // takes a page fault every 2 MiB, not every 4 KiB as it would growing push by push.
            // A list's first hashes that no other text holds are left out: a run of one text.
            let posted = |s: usize| {
                let prefix = cut.prefix(sizes[s] as usize);
                (alone[s] as usize).min(prefix)..prefix
            };
            let total = (0..listed.len()).map(|s| posted(s).len()).sum();
            postings = crate::runtime::memory::vec_in_huge_pages(total);
            for (s, set) in listed.iter().enumerate() {
                let posted = posted(s);
                let shingles = shingles_of(set).iter().enumerate();
                for (i, &h) in shingles.take(posted.end).skip(posted.start) {
                    postings.push((
                        deeper(0, h),
                        s as u32,
                        (i as u32) << 8 | 1,
                        i as u32,
                        UNSPLIT,
                    ));
                }
            }
        }
        for &(h, t) in keys.unwrap_or(&[]) {
            let s = *slot.get(t as usize).unwrap_or(&u32::MAX);
            if s == u32::MAX {
                return Err(Error::invalid(format!("text {t} has no list")));
            }
            let list = shingles_of(listed[s as usize]);
            let prefix = cut.prefix(sizes[s as usize] as usize);
            let Some(i) = list[..prefix.min(list.len())].iter().position(|&x| x == h) else {
                return Err(Error::invalid(format!(
                    "hash {h} is not in text {t}'s prefix"
                )));
            };
            postings.push((deeper(0, h), s, (i as u32) << 8 | 1, i as u32, UNSPLIT));
        }
        let set_of = |s: u32| listed[s as usize];
        let size_of = |s: u32| sizes[s as usize] as usize;
        // Runs of two texts or more, split while over the cap; each slot's runs.
        let mut runs = vec![0usize];
        let mut members: Vec<(u32, u32)> = Vec::new();
        let mut of_slot: Vec<(u32, u32, u32)> = Vec::new();
        let mut skipped = 0u64;
        let mut emit = |run: &mut dyn Iterator<Item = (u32, u32)>| {
            let r = (runs.len() - 1) as u32;
            for (s, first) in run {
                members.push((s, first));
                of_slot.push((s, first, r));
            }
            runs.push(members.len());
        };
        // Each run over the cap at its first depth, and the postings it may still be split into.
        let mut left: Vec<usize> = Vec::new();
        while !postings.is_empty() {
            interrupt::check()?;
            sort_by_spread_key(&mut postings, |p| p.0);
            let mut next: Vec<Posting> = Vec::new();
            for run in postings.chunk_by(|a, b| a.0 == b.0) {
                // Over the cap, only the members that may meet another here take part (texts
                // that share this hash but no pair of which can reach the threshold from it:
                // most of a run of near-identical texts whose first shared hash is common).
                let met = (run.len() > RUN_CAP)
                    .then(|| meeting(run, &cut, size_of))
                    .flatten();
                let run = met.as_deref().unwrap_or(run);
                if run.len() < 2 {
                    continue;
                }
                if run.len() <= RUN_CAP {
                    emit(&mut run.iter().map(|p| (p.1, p.3)));
                    continue;
                }
                let root = if run[0].4 == UNSPLIT {
                    left.push(split_budget(run.len()));
                    (left.len() - 1) as u32
                } else {
                    run[0].4
                };
                // Split: each text by the hashes after the key's that may hold the next shared one.
                let mut rest_of: Vec<(usize, u32, u32)> = Vec::new();
                for &(key, s, at, first, _) in run {
                    let (pos, depth) = ((at >> 8) as usize, (at & 0xFF) as usize);
                    let set = shingles_of(set_of(s));
                    let n = size_of(s);
                    let need = cut.need(n);
                    let after = n - pos - 1;
                    let more = (after + 1)
                        .saturating_sub(need.saturating_sub(depth))
                        .min(after);
                    let from = pos + 1;
                    // Met already by the key's hashes, listed too short to split further, or
                    // past the budget of splits.
                    let budget = &mut left[root as usize];
                    if need <= depth || from + more > set.len() || depth == 0xFF || more > *budget {
                        rest_of.push((n, s, first));
                        continue;
                    }
                    for (j, &h) in set.iter().enumerate().skip(from).take(more) {
                        next.push((
                            deeper(key, h),
                            s,
                            (j as u32) << 8 | (depth as u32 + 1),
                            first,
                            root,
                        ));
                    }
                    *budget -= more;
                }
                if rest_of.is_empty() {
                    continue;
                }
                // The texts met already, with every text of the run small enough to be near one
                // (any size where cut sketches decide by their estimate).
                let largest = rest_of.iter().map(|r| r.0).max().unwrap_or(0);
                let most = if cut.floor.is_some() {
                    usize::MAX
                } else {
                    (largest as f64 / threshold + 1e-9).floor() as usize
                };
                let group: Vec<(u32, u32)> = run
                    .iter()
                    .map(|p| (p.1, p.3))
                    .filter(|&(s, _)| size_of(s) <= most)
                    .collect();
                if group.len() < 2 {
                    continue;
                }
                let whole = |s: u32| shingles_of(set_of(s)).len() == size_of(s);
                let one_set = group
                    .iter()
                    .all(|&(s, _)| whole(s) && set_of(s) == set_of(group[0].0));
                if group.len() <= RUN_CAP || one_set {
                    emit(&mut group.into_iter());
                } else {
                    // Compared a piece of at most the cap at a time (in the order of the texts),
                    // the pairs across pieces counted: a group of near-identical texts is then
                    // a few stars, not as many texts kept.
                    let m = group.len() as u64;
                    skipped += m * (m - 1) / 2;
                    for piece in group.chunks(RUN_CAP).filter(|piece| piece.len() > 1) {
                        let k = piece.len() as u64;
                        skipped -= k * (k - 1) / 2;
                        emit(&mut piece.iter().copied());
                    }
                }
            }
            postings = next;
        }
        drop(postings);
        let slots = listed.len();
        let mut run_starts = vec![0usize; slots + 1];
        for &(s, _, _) in &of_slot {
            run_starts[s as usize + 1] += 1;
        }
        for s in 0..slots {
            run_starts[s + 1] += run_starts[s];
        }
        // Sorted by slot with a counting pass (the slots are the counts' indexes), then each
        // slot's few runs by where they start in its list: the order of a sort of the whole.
        let of_slot = {
            let mut at = run_starts.clone();
            let mut sorted = vec![(0u32, 0u32, 0u32); of_slot.len()];
            for e in of_slot {
                let to = &mut at[e.0 as usize];
                sorted[*to] = e;
                *to += 1;
            }
            sorted
                .par_chunk_by_mut(|a, b| a.0 == b.0)
                .for_each(|runs| runs.sort_unstable());
            sorted
        };
        // Members as texts, so that a center compares them without a lookup.
        let mut text_of_slot = vec![0u32; slots];
        for (t, &s) in slot.iter().enumerate() {
            if s != u32::MAX {
                text_of_slot[s as usize] = t as u32;
            }
        }
        let (mut offsets, mut all) = (vec![0usize], Vec::new());
        if keep_lists {
            all = try_with_capacity(listed.iter().map(|l| l.len()).sum(), "the texts' lists")?;
            for list in &listed {
                all.extend_from_slice(list);
                offsets.push(all.len());
            }
        }
        Ok(ShortTexts {
            slot,
            offsets,
            sets: all,
            cut,
            every,
            runs,
            texts: members
                .iter()
                .map(|&(s, _)| text_of_slot[s as usize])
                .collect(),
            placed: sizes.iter().all(|&n| (n as usize) < 0xFFFF),
            places: members
                .iter()
                .map(|&(s, first)| place(size_of(s), first as usize))
                .collect(),
            run_starts,
            run_places: of_slot
                .iter()
                .map(|&(s, first, _)| place(size_of(s), first as usize))
                .collect(),
            run_of: of_slot.into_iter().map(|(_, _, r)| r).collect(),
            skipped,
        })
    }

    /// Where the prefixes were cut.
    pub fn cut(&self) -> Cut {
        self.cut
    }

    /// Whether every text takes part ([`ShortTexts::from_lists`]), not only the short ones.
    pub fn every(&self) -> bool {
        self.every
    }

    /// The candidate pairs the runs hold, `m (m - 1) / 2` for a run of m texts (a pair in
    /// several runs counts in each).
    pub fn run_pairs(&self) -> u64 {
        (0..self.run_count())
            .map(|r| {
                let (a, b) = self.run_bounds(r);
                let m = (b - a) as u64;
                m * (m - 1) / 2
            })
            .sum()
    }

    /// Candidate pairs not compared: those of groups that could not be split further, were over
    /// [`RUN_CAP`] and were not one shingle set.
    pub fn skipped_pairs(&self) -> u64 {
        self.skipped
    }

    /// The threshold the prefixes were cut for.
    pub fn threshold(&self) -> f64 {
        self.cut.threshold
    }

    /// Text t's shingle set, when it is short (None when the lists were not kept).
    pub fn set(&self, t: usize) -> Option<&[SketchHash]> {
        let s = *self.slot.get(t)? as usize;
        let (&a, &b) = (self.offsets.get(s)?, self.offsets.get(s + 1)?);
        Some(&self.sets[a..b])
    }

    /// Where text t's runs lie in [`ShortTexts::listed_runs`] and its places in them in
    /// [`ShortTexts::listed_places`]; empty when it is not short.
    pub fn run_range(&self, t: usize) -> std::ops::Range<usize> {
        match self.slot.get(t) {
            Some(&s) if s != u32::MAX => {
                self.run_starts[s as usize]..self.run_starts[s as usize + 1]
            }
            _ => 0..0,
        }
    }

    /// The runs (indices) of text t's prefix hashes, in the order of its list; none when it is
    /// not short.
    pub fn runs_of(&self, t: usize) -> &[u32] {
        &self.run_of[self.run_range(t)]
    }

    /// Text t's place (see [`place`]) in each of its runs, as [`ShortTexts::runs_of`] lists them.
    pub fn run_places_of(&self, t: usize) -> &[u32] {
        &self.run_places[self.run_range(t)]
    }

    /// The runs of every text, text after text ([`ShortTexts::run_range`] tells which are
    /// whose).
    pub fn listed_runs(&self) -> &[u32] {
        &self.run_of
    }

    /// The places of every text in its runs, as [`ShortTexts::listed_runs`] lists them.
    pub fn listed_places(&self) -> &[u32] {
        &self.run_places
    }

    /// Whether every member's place is known (see [`Cut::window`]).
    pub fn placed(&self) -> bool {
        self.placed
    }

    /// Where each member of [`ShortTexts::members`] holds its run's first hash (see [`place`]).
    pub fn places(&self) -> &[u32] {
        &self.places
    }

    /// The number of runs.
    pub fn run_count(&self) -> usize {
        self.runs.len() - 1
    }

    /// Run r's bounds in [`ShortTexts::members`].
    pub fn run_bounds(&self, r: usize) -> (usize, usize) {
        (self.runs[r], self.runs[r + 1])
    }

    /// The texts of every run, run after run (a caller that removes texts from runs copies them).
    pub fn members(&self) -> &[u32] {
        &self.texts
    }

    /// Whether text t has a short text to compare with.
    pub fn has_runs(&self, t: usize) -> bool {
        !self.runs_of(t).is_empty()
    }

    /// Every pair of short texts `(a, b, jaccard)`, a < b, whose Jaccard (of their whole sets,
    /// as [`jaccard_at_least`] computes it with `size`) is at least the threshold, sorted. More
    /// than `max_candidates` candidate pairs (texts sharing a prefix hash) is
    /// [`Error::TooManyPairs`], raised before they are stored.
    pub fn verified_pairs(
        &self,
        size: usize,
        max_candidates: Option<u64>,
    ) -> Result<Vec<(u32, u32, f64)>> {
        let count = self.run_pairs();
        if let Some(limit) = max_candidates {
            if count > limit {
                return Err(Error::TooManyPairs {
                    count,
                    at_least: false,
                    limit,
                    what: "candidate pairs of short texts".into(),
                    remedy: "raise the limit".into(),
                });
            }
        }
        let len = usize::try_from(count).unwrap_or(usize::MAX);
        let mut pairs: Vec<(u32, u32)> = try_with_capacity(len, "candidate pairs of short texts")?;
        for r in 0..self.run_count() {
            let (a, b) = self.run_bounds(r);
            let run = &self.texts[a..b];
            for (i, &x) in run.iter().enumerate() {
                pairs.extend(run[i + 1..].iter().map(|&y| (x.min(y), x.max(y))));
            }
        }
        pairs.par_sort_unstable();
        pairs.dedup();
        let set = |t: u32| self.set(t as usize).unwrap_or(&[]);
        Ok(pairs
            .into_par_iter()
            .filter_map(|(a, b)| {
                jaccard_at_least(set(a), set(b), size, self.cut.threshold).map(|j| (a, b, j))
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sketch::verify::jaccard;
    use crate::testing::xorshift64 as rng;

    #[test]
    fn the_spread_key_sort_is_the_whole_sort() {
        let mut state = 0x5EED;
        for round in 0..40u64 {
            let n = (rng(&mut state) % 30000) as usize;
            // Few distinct keys in some rounds (long runs of one key), spread ones in others.
            let distinct = if round % 3 == 0 { 7 } else { u64::MAX };
            let mut items: Vec<Posting> = (0..n)
                .map(|_| {
                    let k = mix64(rng(&mut state) % distinct);
                    let r = rng(&mut state);
                    (
                        k,
                        (r % 5) as u32,
                        (r >> 8) as u32 % 3,
                        (r >> 16) as u32,
                        (r >> 24) as u32,
                    )
                })
                .collect();
            let mut want = items.clone();
            want.sort_unstable();
            sort_by_spread_key(&mut items, |p| p.0);
            assert_eq!(items, want, "round {round}");
        }
    }

    #[test]
    fn the_prefix_is_as_long_as_the_overlap_bound_needs() {
        // Hand-worked at t = 0.8, n - ceil(0.8 n) + 1: n = 1 to 4 -> 1 (ceil(3.2) = 4 for 4);
        // 5 -> 2 (ceil 4); 10 -> 3 (ceil 8); 16 -> 4 (ceil(12.8) = 13).
        let got: Vec<usize> = [1, 2, 3, 4, 5, 6, 10, 15, 16]
            .iter()
            .map(|&n| prefix_len(n, 0.8))
            .collect();
        assert_eq!(got, vec![1, 1, 1, 1, 2, 2, 3, 4, 4]);
        assert_eq!(prefix_len(10, 1.0), 1);
        assert_eq!(prefix_len(10, 0.5), 6);
        // 0.7 * 10 is 7.000000000000001 in floating point: the prefix stays 4, not 3.
        assert_eq!(prefix_len(10, 0.7), 4);
    }

    /// Every pair of short sets at Jaccard >= t shares a run: checked against all pairs of
    /// random sets drawn from a small alphabet (so that many pairs are near).
    #[test]
    fn every_near_pair_of_short_sets_shares_a_run() {
        let mut s = 7u64;
        for &threshold in &[0.5, 0.7, 0.8, 0.9, 1.0] {
            let mut sets: Vec<Vec<u64>> = Vec::new();
            // Families: a base set of 1 to 18 values and variants of it with up to two values
            // dropped or replaced.
            for _ in 0..60 {
                let n = 1 + (rng(&mut s) % 18) as usize;
                let base: Vec<u64> = (0..n).map(|_| rng(&mut s) % 1000).collect();
                for _ in 0..6 {
                    let mut set = base.clone();
                    for _ in 0..rng(&mut s) % 3 {
                        let at = (rng(&mut s) % set.len() as u64) as usize;
                        if rng(&mut s).is_multiple_of(2) && set.len() > 1 {
                            set.remove(at);
                        } else {
                            set[at] = rng(&mut s) % 1000;
                        }
                    }
                    set.sort_unstable();
                    set.dedup();
                    sets.push(set);
                }
            }
            let short = ShortTexts::new(
                sets.len(),
                sets.iter().enumerate().map(|(t, v)| (t as u32, &v[..])),
                threshold,
            )
            .unwrap();
            let runs_of = |t: usize| -> Vec<u32> { short.runs_of(t).to_vec() };
            let mut near = 0;
            for a in 0..sets.len() {
                for b in a + 1..sets.len() {
                    if sets[a].len() > SHORT || sets[b].len() > SHORT {
                        // Only short texts propose each other.
                        assert!(sets[a].len() <= SHORT || short.runs_of(a).is_empty());
                        assert!(sets[b].len() <= SHORT || short.runs_of(b).is_empty());
                        continue;
                    }
                    if jaccard(&sets[a], &sets[b], 1024) >= threshold {
                        near += 1;
                        let (ra, rb) = (runs_of(a), runs_of(b));
                        assert!(
                            ra.iter().any(|r| rb.contains(r)),
                            "t = {threshold}: {:?} and {:?} share no run",
                            sets[a],
                            sets[b]
                        );
                    }
                }
            }
            assert!(near > 50, "t = {threshold}: only {near} near pairs drawn");
        }
    }

    #[test]
    fn long_empty_repeated_and_unsorted_sets() {
        let long: Vec<u64> = (0..17).collect();
        let ok: Vec<u64> = vec![1, 2, 3];
        let short = ShortTexts::new(
            4,
            [
                (0u32, &long[..]),
                (1, &[][..]),
                (2, &ok[..]),
                (2, &long[..16]),
            ]
            .into_iter(),
            0.8,
        )
        .unwrap();
        assert_eq!(short.set(0), None);
        assert_eq!(short.set(1), None);
        assert_eq!(short.set(2), Some(&ok[..]));
        assert_eq!(short.set(3), None);
        let bad = [3u64, 1];
        assert!(ShortTexts::new(1, [(0u32, &bad[..])].into_iter(), 0.8).is_err());
        assert!(ShortTexts::new(1, [(5u32, &ok[..])].into_iter(), 0.8).is_err());
        assert!(ShortTexts::new(1, std::iter::empty(), 0.0).is_err());
    }

    /// The verified pairs are every pair of short sets at Jaccard >= t, by brute force.
    #[test]
    fn verified_pairs_are_every_near_pair_of_short_sets() {
        let mut s = 11u64;
        let mut sets: Vec<Vec<u64>> = Vec::new();
        for _ in 0..80 {
            let n = 1 + (rng(&mut s) % 20) as usize;
            let base: Vec<u64> = (0..n).map(|_| rng(&mut s) % 500).collect();
            for _ in 0..4 {
                let mut set = base.clone();
                if rng(&mut s).is_multiple_of(2) {
                    set.push(rng(&mut s) % 500);
                }
                set.sort_unstable();
                set.dedup();
                sets.push(set);
            }
        }
        for threshold in [0.6, 0.8, 1.0] {
            let short = check_against_brute(&sets, threshold);
            let found = short.verified_pairs(1024, None).unwrap().len();
            assert!(found > 100, "t = {threshold}: {found} pairs");
            assert!(short.verified_pairs(1024, Some(3)).is_err());
        }
    }

    /// The verified pairs by brute force, with the skipped count.
    fn check_against_brute(sets: &[Vec<u64>], threshold: f64) -> ShortTexts {
        let short = ShortTexts::new(
            sets.len(),
            sets.iter().enumerate().map(|(t, v)| (t as u32, &v[..])),
            threshold,
        )
        .unwrap();
        let got = short.verified_pairs(1024, None).unwrap();
        let mut want = Vec::new();
        for a in 0..sets.len() {
            for b in a + 1..sets.len() {
                let j = jaccard(&sets[a], &sets[b], 1024);
                if sets[a].len() <= SHORT && sets[b].len() <= SHORT && j >= threshold {
                    want.push((a as u32, b as u32, j));
                }
            }
        }
        assert_eq!(got, want, "t = {threshold}");
        short
    }

    /// 2,500 texts whose sets all begin with one hash (as "typescript definitions for ..."
    /// does): the run is split, not dropped, and every near pair among them is found.
    #[test]
    fn a_prefix_shared_by_thousands_is_split_and_every_pair_found() {
        let mut s = 3u64;
        let mut sets: Vec<Vec<u64>> = Vec::new();
        for i in 0..2500u64 {
            // 0 (the shared first hash), then 3 or 4 of this text's own.
            let n = 3 + (i % 2) as usize;
            let mut set = vec![0u64];
            set.extend((0..n).map(|_| 1 + rng(&mut s) % (1 << 40)));
            set.sort_unstable();
            set.dedup();
            sets.push(set);
        }
        // Near pairs planted among them: a copy with one hash changed (J = 4/6 for 5, and so
        // below 0.8) or added (J = 4/5 or 5/6).
        for i in 0..300 {
            let mut set = sets[i * 7].clone();
            if i % 3 == 0 {
                set[1] = 1 + rng(&mut s) % (1 << 40);
            } else {
                set.push(1 + rng(&mut s) % (1 << 40));
            }
            set.sort_unstable();
            set.dedup();
            sets.push(set);
        }
        for threshold in [0.8, 0.6] {
            let short = check_against_brute(&sets, threshold);
            assert_eq!(short.skipped_pairs(), 0, "t = {threshold}");
            // No run holds more than the cap.
            for r in 0..short.run_count() {
                let (a, b) = short.run_bounds(r);
                assert!(b - a <= RUN_CAP);
            }
        }
        // 2,500 texts of one set: one run, whatever its size.
        let same: Vec<Vec<u64>> = (0..2500).map(|_| vec![7u64, 9]).collect();
        let short = check_against_brute(&same, 0.8);
        assert_eq!(short.skipped_pairs(), 0);
    }

    /// Past the cap, a group that cannot be split (at t = 0.5, sets of two shingles meet their
    /// overlap with the first) and is not one set is compared a cap of texts at a time: the
    /// pairs across those pieces are counted.
    #[test]
    fn a_group_that_cannot_be_split_is_compared_in_pieces_and_the_rest_counted() {
        let sets: Vec<Vec<u64>> = (0..RUN_CAP as u64 + 1).map(|i| vec![0, 100 + i]).collect();
        let short = ShortTexts::new(
            sets.len(),
            sets.iter().enumerate().map(|(t, v)| (t as u32, &v[..])),
            0.5,
        )
        .unwrap();
        // The first RUN_CAP texts, the last one alone (no piece).
        assert_eq!(short.run_count(), 1);
        assert_eq!(short.run_bounds(0), (0, RUN_CAP));
        assert_eq!(&short.members()[..3], &[0, 1, 2]);
        assert_eq!(short.skipped_pairs(), RUN_CAP as u64);
        let sets: Vec<Vec<u64>> = (0..3 * RUN_CAP as u64 - 5)
            .map(|i| vec![0, 100 + i])
            .collect();
        let short = ShortTexts::new(
            sets.len(),
            sets.iter().enumerate().map(|(t, v)| (t as u32, &v[..])),
            0.5,
        )
        .unwrap();
        assert_eq!(short.run_count(), 3);
        let (m, last) = (3 * RUN_CAP as u64 - 5, RUN_CAP as u64 - 5);
        let cap = RUN_CAP as u64;
        let inside = 2 * cap * (cap - 1) / 2 + last * (last - 1) / 2;
        assert_eq!(short.skipped_pairs(), m * (m - 1) / 2 - inside);
        let sets: Vec<Vec<u64>> = (0..RUN_CAP as u64).map(|i| vec![0, 100 + i]).collect();
        let short = ShortTexts::new(
            sets.len(),
            sets.iter().enumerate().map(|(t, v)| (t as u32, &v[..])),
            0.5,
        )
        .unwrap();
        assert_eq!(short.run_count(), 1);
        assert_eq!(short.skipped_pairs(), 0);
    }

    /// 3,000 sets of 16 shingles: three of their own, then 13 that all share. Their first
    /// shared hash lies fourth in each, with 12 after it: two whole sets reach at most 13 shared
    /// shingles (J = 13/19), below the 15 that 0.8 needs of two sets of 16. The length and
    /// positional filters drop the whole run of that hash (it was split and counted as skipped
    /// before); sets of one own shingle (1 before the shared hash, J = 15/17) stay and are all
    /// found.
    #[test]
    fn a_run_over_the_cap_keeps_only_the_texts_its_filters_let_meet() {
        let cut = Cut::new(0.8, Some((1024, 0.0)));
        let rarity = Rarity::default();
        let shared: Vec<u64> = (0..13).map(|i| 1_000_000 + i).collect();
        let far: Vec<Vec<u64>> = (0..3000u64)
            .map(|i| {
                let mut set = vec![3 * i + 1, 3 * i + 2, 3 * i + 3];
                set.extend(&shared);
                set
            })
            .collect();
        let short = lists_of(&far, &rarity, cut);
        assert_eq!((short.run_count(), short.skipped_pairs()), (0, 0));
        let near: Vec<Vec<u64>> = (0..3000u64)
            .map(|i| {
                let mut set = vec![i + 1];
                set.extend(&shared[..12]);
                set.extend([1_000_100, 1_000_101, 1_000_102]);
                set
            })
            .collect();
        let short = lists_of(&near, &rarity, cut);
        // Every pair is near: a run (or its pieces) holds every text.
        let mut held: Vec<u32> = short.members().to_vec();
        held.sort_unstable();
        held.dedup();
        assert_eq!(held.len(), 3000);
        for a in [0usize, 1500, 2999] {
            assert!(jaccard(&near[a], &near[(a + 1) % 3000], 1024) >= 0.8);
        }
        assert!(jaccard(&far[0], &far[1], 1024) < 0.8);
    }

    /// The lists of `sets` (sorted sketches) in the order of `rarity`, as `prefix_lists` makes
    /// them, built into runs.
    fn lists_of(sets: &[Vec<u64>], rarity: &Rarity, cut: Cut) -> ShortTexts {
        let starts: Vec<u64> = sets
            .iter()
            .scan(0u64, |at, s| {
                let start = *at;
                *at += s.len() as u64;
                Some(start)
            })
            .collect();
        let ends: Vec<u64> = starts
            .iter()
            .zip(sets)
            .map(|(&a, s)| a + s.len() as u64)
            .collect();
        let flat: Vec<u64> = sets.concat();
        let ranges = crate::sketch::verify::Ranges::new(&starts, &ends, &flat).unwrap();
        let PrefixLists {
            lengths,
            hashes,
            sizes,
            ..
        } = prefix_lists(&ranges, rarity, cut);
        let mut at = 0usize;
        let mut items = Vec::new();
        for (t, (&len, &n)) in lengths.iter().zip(&sizes).enumerate() {
            items.push((t as u32, &hashes[at..at + len as usize], n as usize));
            at += len as usize;
        }
        ShortTexts::from_lists(sets.len(), items.into_iter(), cut).unwrap()
    }

    /// Prefix filtering over every text (short, long, and cut at the sketch size) in an order
    /// counted on a sample: every pair whose estimate a verified star may take (at least t, or
    /// t - band when a sketch is cut) shares a run, checked against all pairs.
    #[test]
    fn every_pair_a_star_may_take_shares_a_run_whatever_the_order() {
        let mut s = 23u64;
        let size = 64;
        for &(threshold, band) in &[(0.8, 0.0), (0.8, 0.1), (0.6, 0.05), (1.0, 0.0)] {
            let mut sets: Vec<Vec<u64>> = Vec::new();
            for _ in 0..70 {
                // From 1 to 150 shingles: short sets, longer ones, and sets past the size.
                let n = 1 + (rng(&mut s) % 150) as usize;
                let base: Vec<u64> = (0..n).map(|_| rng(&mut s) % 3000).collect();
                for _ in 0..4 {
                    let mut set = base.clone();
                    for _ in 0..rng(&mut s) % (1 + n as u64 / 8) {
                        let at = (rng(&mut s) % set.len() as u64) as usize;
                        set[at] = rng(&mut s) % 3000;
                    }
                    set.sort_unstable();
                    set.dedup();
                    set.truncate(size);
                    sets.push(set);
                }
            }
            let rarity = Rarity::sample(sets.iter().take(60).map(|v| &v[..]), 1 << 20);
            assert!(!rarity.is_empty());
            let cut = Cut::new(threshold, Some((size, band)));
            let runs = lists_of(&sets, &rarity, cut);
            assert_eq!(runs.skipped_pairs(), 0);
            let mut near = 0;
            for a in 0..sets.len() {
                for b in a + 1..sets.len() {
                    let is_cut = sets[a].len() >= size || sets[b].len() >= size;
                    let low = if is_cut { threshold - band } else { threshold };
                    if jaccard(&sets[a], &sets[b], size) >= low {
                        near += 1;
                        let (ra, rb) = (runs.runs_of(a), runs.runs_of(b));
                        assert!(
                            ra.iter().any(|r| rb.contains(r)),
                            "t = {threshold}, band {band}: {a} and {b} share no run"
                        );
                    }
                }
            }
            assert!(near > 25, "t = {threshold}: only {near} near pairs drawn");
            assert!(cut.covers(threshold, band, size));
            assert!(band == 0.0 || !Cut::new(threshold, None).covers(threshold, band, size));
        }
    }

    /// The filters, by brute force: for every pair of random sets a star may take (whole sets
    /// at an exact Jaccard of at least t, many exactly at it; sets cut at the sketch size at an
    /// estimate of at least t - band), placed where they first share a hash in the order of
    /// their values, `may_meet` passes and each one's size lies in the other's window; and they
    /// turn away most of the other pairs that share a hash.
    #[test]
    fn the_filters_keep_every_pair_a_star_may_take() {
        let mut s = 41u64;
        let size = 48;
        for &(threshold, band) in &[(0.8, 0.0), (0.8, 0.1), (0.5, 0.0), (0.9, 0.05), (1.0, 0.0)] {
            let mut sets: Vec<Vec<u64>> = Vec::new();
            for _ in 0..60 {
                let n = 1 + (rng(&mut s) % 70) as usize;
                let base: Vec<u64> = (0..n).map(|_| rng(&mut s) % 4000).collect();
                for _ in 0..5 {
                    let mut set = base.clone();
                    // Drop or replace a few values, or add some (sets of 9 sharing 8, of 4
                    // and 5 sharing 4, ... lie exactly at 0.8).
                    for _ in 0..rng(&mut s) % (2 + n as u64 / 6) {
                        match rng(&mut s) % 3 {
                            0 if set.len() > 1 => {
                                set.swap_remove((rng(&mut s) % set.len() as u64) as usize);
                            }
                            1 => set.push(rng(&mut s) % 4000),
                            _ => {
                                let at = (rng(&mut s) % set.len() as u64) as usize;
                                set[at] = rng(&mut s) % 4000;
                            }
                        }
                    }
                    set.sort_unstable();
                    set.dedup();
                    set.truncate(size);
                    sets.push(set);
                }
            }
            let cut = Cut::new(threshold, Some((size, band)));
            let (mut near, mut at_threshold, mut turned_away, mut sharing) = (0, 0, 0, 0);
            for x in 0..sets.len() {
                for y in x + 1..sets.len() {
                    let (a, b) = (&sets[x], &sets[y]);
                    let Some(h) = a.iter().find(|h| b.binary_search(h).is_ok()) else {
                        continue;
                    };
                    let (i, j) = (a.binary_search(h).unwrap(), b.binary_search(h).unwrap());
                    let (pa, pb) = (place(a.len(), i), place(b.len(), j));
                    let inside = |p: u32, n: usize| {
                        let (least, most) = cut.window(p);
                        (least..=most).contains(&n)
                    };
                    // And as a star reads a window from a run sorted by place: from its start
                    // to its largest size.
                    let read = |p: u32, q: u32| {
                        u64::from(q) >= cut.window_start(p)
                            && ((q >> 16) as usize) <= cut.window_most(p)
                    };
                    let filtered = cut.may_meet(pa, pb)
                        && inside(pa, b.len())
                        && inside(pb, a.len())
                        && read(pa, pb)
                        && read(pb, pa);
                    sharing += 1;
                    let is_cut = a.len() >= size || b.len() >= size;
                    let low = if is_cut { threshold - band } else { threshold };
                    let j_ab = jaccard(a, b, size);
                    if j_ab >= low {
                        near += 1;
                        at_threshold += usize::from(j_ab == threshold);
                        // A near pair first meets within both prefixes, where the filters hold.
                        assert!(i < cut.prefix(a.len()) && j < cut.prefix(b.len()));
                        assert!(filtered, "t = {threshold}, band {band}: {a:?} and {b:?}");
                    } else {
                        turned_away += usize::from(!filtered);
                    }
                }
            }
            assert!(
                near > if threshold == 1.0 { 10 } else { 100 },
                "t = {threshold}: only {near} near pairs"
            );
            assert!(
                threshold == 1.0 || at_threshold > 2,
                "t = {threshold}: {at_threshold} at it"
            );
            assert!(
                turned_away * 2 > sharing - near,
                "t = {threshold}: {turned_away} of {sharing}"
            );
        }
    }

    /// 3,000 long texts that share a template of ten hashes, 300 of them near copies of another.
    /// Counted in the order (as a sample counts a template), the template comes last and every
    /// near pair meets in a run of its own hashes; missing from the order, the template is the
    /// prefix of every text, its runs are over the cap and cannot be split through the hashes
    /// listed: those pairs are counted as skipped, not lost silently.
    #[test]
    fn a_template_of_rare_hashes_is_split_or_counted() {
        // Half again as many texts as a run takes, a tenth of them with a near copy.
        let texts = 3 * RUN_CAP as u64 / 2;
        let mut sets: Vec<Vec<u64>> = Vec::new();
        for i in 0..texts {
            let mut set: Vec<u64> = (0..10).collect();
            set.extend((0..40).map(|j| 1000 + (i * 40 + j) * 7));
            if i % 10 == 0 {
                let mut copy = set.clone();
                copy[20] = 5_000_000 + i;
                copy.sort_unstable();
                sets.push(copy);
            }
            set.sort_unstable();
            sets.push(set);
        }
        // Every pair at 0.8, by brute force, once.
        let near: Vec<(usize, usize)> = (0..sets.len())
            .flat_map(|a| (a + 1..sets.len()).map(move |b| (a, b)))
            .filter(|&(a, b)| jaccard_at_least(&sets[a], &sets[b], 1024, 0.8).is_some())
            .collect();
        let copies = texts.div_ceil(10) as usize;
        let near_pairs = |runs: &ShortTexts| {
            let met = near.iter().filter(|&&(a, b)| {
                let (ra, rb) = (runs.runs_of(a), runs.runs_of(b));
                ra.iter().any(|r| rb.contains(r))
            });
            (met.count(), near.len())
        };
        let cut = Cut::new(0.8, None);
        let counted = Rarity::sample(sets.iter().take(100).map(|v| &v[..]), 1 << 20);
        let runs = lists_of(&sets, &counted, cut);
        assert_eq!(runs.skipped_pairs(), 0);
        assert_eq!(near_pairs(&runs), (copies, copies));
        let missing = Rarity::default();
        let runs = lists_of(&sets, &missing, cut);
        for r in 0..runs.run_count() {
            let (a, b) = runs.run_bounds(r);
            assert!(b - a <= RUN_CAP);
        }
        // The near pairs meet in deeper runs of their own hashes; the groups of the template,
        // which no listed hash splits, are counted.
        assert_eq!(near_pairs(&runs), (copies, copies));
        assert!(runs.skipped_pairs() > 0);
    }
}
