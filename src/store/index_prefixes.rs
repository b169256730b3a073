//! The prefix postings of a dedup index: the candidates of new documents by prefix filtering,
//! as [`neardup.dedup`](crate::candidates::short_texts) finds them in memory, without the
//! index's texts or sketches.
//!
//! Every document of the index is listed by its shingle hashes in one global order, rarest
//! first (a [`Rarity`] table counted on the corpus the index was built from, stored with it and
//! frozen: documents added later are listed in the same order), as many as prefix filtering at
//! the index's [`Cut`] reads (its threshold, and the band below it where bottom-`size` sketches
//! decide by their estimate). The file holds, for every hash of every document's prefix, the
//! posting `(hash, place, row)`, sorted, where `place` says the document's size and how many of
//! its hashes follow this one ([`place`]); a new document's candidates are the rows of the
//! postings of its own prefix's hashes (binary searches), and two documents at the cut share one.
//! Of those, only the postings whose place may meet the new document's place in that hash are
//! read: the length and positional filters of exact set-similarity joins (AllPairs, PPJoin), as
//! the star sweep of one machine applies them ([`Cut::may_meet`]). The postings of one hash are
//! sorted by size and then by the hashes left, so that a new document reads only the window of
//! sizes it may meet ([`Cut::window`]), in each size from the first with enough hashes left
//! ([`Cut::least_rest`]). Two documents that reach the threshold pass the filters at the first
//! hash they share, which lies in both prefixes, so every such pair is still found.
//!
//! A document without shingles (a text that normalizes to nothing) is listed by one hash made
//! from its content key, with the check bit set so that no shingle hash equals it: its copies
//! meet it.
//!
//! 16 bytes a prefix hash: a document of `n` shingles (its sketch cut at `size`) has a prefix
//! of `n - need + 1` hashes (about 4 for a text of 16 shingles at t = 0.8; 269 for a long one
//! with `size` = 1,024 and the band of 5 standard errors).

use rayon::prelude::*;

use crate::candidates::short_texts::{place, Cut, UNPLACED};
use crate::error::{try_with_capacity, Error, Result};
use crate::fingerprint::encoders::mix64;
use crate::sketch::verify::{ContentKey, CHECK_BIT};
use crate::store::index_file::Words;

/// How the prefixes of an index were cut, and the frozen order they were listed in.
#[derive(Debug, Clone, PartialEq)]
pub struct PrefixSettings {
    /// The threshold the prefixes were cut at.
    pub threshold: f64,
    /// The band below it where bottom-`size` estimates do not decide (0: none).
    pub band: f64,
    /// The hashes a document's sketch keeps (its bottom-`size`), which its list is made from.
    pub size: u32,
}

impl PrefixSettings {
    pub fn check(&self) -> Result<()> {
        if !(self.threshold > 0.0 && self.threshold <= 1.0) {
            return Err(Error::invalid(format!(
                "prefix threshold must be in (0, 1], got {}",
                self.threshold
            )));
        }
        if !(0.0..=1.0).contains(&self.band) {
            return Err(Error::invalid(format!(
                "prefix band must be in [0, 1], got {}",
                self.band
            )));
        }
        if self.size == 0 {
            return Err(Error::invalid("prefix sketch size must be at least 1"));
        }
        Ok(())
    }

    /// The cut of these prefixes.
    pub fn cut(&self) -> Cut {
        Cut::new(self.threshold, Some((self.size as usize, self.band)))
    }

    /// Whether prefixes cut this way hold every hash prefixes cut at `cut` read, for sketches of
    /// any size up to `size`: then a new document listed at `cut` and an index document meet
    /// whenever their overlap reaches what `cut` needs.
    pub fn covers(&self, cut: Cut) -> bool {
        let mine = self.cut();
        (1..=self.size as usize).all(|n| mine.need(n) <= cut.need(n))
    }
}

/// The prefix postings of an index and the order its documents are listed in.
#[derive(Default)]
pub struct Prefixes {
    pub settings: Option<PrefixSettings>,
    /// The frozen rarity table: hashes (sorted) and their counts.
    pub table_hashes: Words<u64>,
    pub table_counts: Words<u32>,
    /// Postings sorted by `(hash, place, row)`: where the hash lies in the row's list
    /// ([`place`]; [`UNPLACED`] in an index written before places were kept).
    pub hashes: Words<u64>,
    pub places: Words<u32>,
    pub rows: Words<u32>,
}

impl Prefixes {
    /// The postings of `h`: their range.
    fn range_of(&self, h: u64) -> (usize, usize) {
        let a = self.hashes.partition_point(|&x| x < h);
        let b = a + self.hashes[a..].partition_point(|&x| x <= h);
        (a, b)
    }

    /// The rows whose prefix holds `h`, ascending by place.
    pub fn rows_of(&self, h: u64) -> &[u32] {
        let (a, b) = self.range_of(h);
        &self.rows[a..b]
    }

    /// The rows whose prefix holds `h` at a place that may meet `at` (where `h` lies in a new
    /// document's list) at `cut`, added to `out`: see [`Prefixes::meeting_parts`]. Returns how
    /// many were added.
    pub fn meeting(&self, h: u64, at: u32, needs: &Needs, out: &mut Vec<u32>) -> usize {
        let before = out.len();
        self.meeting_parts(h, at, needs, |a, b| out.extend_from_slice(&self.rows[a..b]));
        out.len() - before
    }

    /// How many rows [`Prefixes::meeting`] lists.
    pub fn meeting_count(&self, h: u64, at: u32, needs: &Needs) -> u64 {
        let mut count = 0;
        self.meeting_parts(h, at, needs, |a, b| count += (b - a) as u64);
        count
    }

    /// The postings of `h` whose place may meet `at` at `cut`, as ranges `part(a, b)` (see
    /// [`meeting_parts`]).
    fn meeting_parts(&self, h: u64, at: u32, needs: &Needs, mut part: impl FnMut(usize, usize)) {
        let (a, b) = self.range_of(h);
        if a == b {
            return;
        }
        let places = &self.places[a..b];
        meeting_parts(
            places.len(),
            |i| places[i],
            at,
            needs,
            |x, y| part(a + x, a + y),
        );
    }

    /// Whether the index has prefixes.
    pub fn present(&self) -> bool {
        self.settings.is_some()
    }
}

/// The first `i` in `lo..hi` where `pred(i)` holds (`hi` when none), for a `pred` that holds
/// from some point on.
fn first(mut lo: usize, mut hi: usize, pred: impl Fn(usize) -> bool) -> usize {
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if pred(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

/// [`Cut::pair_need`] and [`Cut::may_meet`] of a cut read from tables for the sizes up to a
/// bound (the sketch size): the same numbers, without a floating-point rounding a pair.
#[derive(Debug, Clone)]
pub struct Needs {
    pub cut: Cut,
    /// `need[n]`: [`Cut::need`] of a size up to the bound.
    need: Vec<u32>,
    /// `whole[s]`: the need of two whole sets of `s` shingles in all (see [`Cut::pair_need`]).
    whole: Vec<u32>,
}

impl Needs {
    /// The tables of `cut` for sizes up to `most` (at most 2^16 - 2).
    pub fn new(cut: Cut, most: usize) -> Self {
        let most = most.min(0xFFFE);
        let t = cut.threshold;
        Needs {
            cut,
            need: (0..=most).map(|n| cut.need(n) as u32).collect(),
            whole: (0..=2 * most)
                .map(|s| (t * s as f64 / (1.0 + t) - 1e-9).ceil() as u32)
                .collect(),
        }
    }

    /// [`Cut::pair_need`].
    #[inline]
    pub fn pair_need(&self, na: usize, nb: usize) -> usize {
        let (Some(&a), Some(&b)) = (self.need.get(na), self.need.get(nb)) else {
            return self.cut.pair_need(na, nb);
        };
        let need = a.max(b) as usize;
        if na.min(nb) >= 3 && na.max(nb) < self.cut.whole_below {
            need.max(self.whole[na + nb] as usize)
        } else {
            need
        }
    }

    /// [`Cut::may_meet`].
    #[inline]
    pub fn may_meet(&self, place_a: u32, place_b: u32) -> bool {
        crate::candidates::short_texts::places_meet(place_a, place_b, |na, nb| {
            self.pair_need(na, nb)
        })
    }
}

/// Lists of at most this many places are checked place by place.
const SCANNED: usize = 8;

/// Of `n` places sorted (`place_of(i)`, [`UNPLACED`] last), those that may meet `at` at `cut`
/// ([`Cut::may_meet`]), as ranges `part(a, b)`: the sizes in the window of `at`
/// ([`Cut::window`]) read in order, the pair's need ([`Cut::pair_need`]) taken once a size;
/// and every place unknown. All of them when `at` is unknown.
pub fn meeting_parts(
    n: usize,
    place_of: impl Fn(usize) -> u32,
    at: u32,
    needs: &Needs,
    mut part: impl FnMut(usize, usize),
) {
    let cut = &needs.cut;
    if n == 0 {
        return;
    }
    if at == UNPLACED {
        part(0, n);
        return;
    }
    if n <= SCANNED {
        // A few places: each checked, cheaper than a window and searches.
        for i in 0..n {
            if needs.may_meet(at, place_of(i)) {
                part(i, i + 1);
            }
        }
        return;
    }
    let (least, most) = cut.window(at);
    // Sizes are below 2^16 - 1 in a known place.
    let (least, most) = (least.min(0xFFFF) as u32, most.min(0xFFFE) as u32);
    let (size, rest) = ((at >> 16) as usize, at & 0xFFFF);
    let placed = first(0, n, |i| place_of(i) == UNPLACED);
    let from = first(0, placed, |i| place_of(i) >> 16 >= least);
    let to = first(from, placed, |i| place_of(i) >> 16 > most);
    // The passing places of a size follow its others (sorted by the hashes left): runs.
    let (mut current, mut need) = (u32::MAX, u32::MAX);
    let mut open: Option<usize> = None;
    for i in from..to {
        let q = place_of(i);
        if q >> 16 != current {
            current = q >> 16;
            let pair = needs.pair_need(size, current as usize);
            // 1 + min(rest, theirs) >= pair: this text's side once a size.
            need = if rest as usize + 1 >= pair {
                pair.saturating_sub(1).min(0xFFFF) as u32
            } else {
                u32::MAX
            };
        }
        let passes = q & 0xFFFF >= need;
        match (passes, open) {
            (true, None) => open = Some(i),
            (false, Some(a)) => {
                part(a, i);
                open = None;
            }
            _ => {}
        }
    }
    if let Some(a) = open {
        part(a, to);
    }
    if placed < n {
        part(placed, n);
    }
}

/// The hash a document without shingles is listed by: from its content key, the check bit set.
pub fn empty_key(key: ContentKey) -> u64 {
    mix64(key[0] ^ mix64(key[1] ^ 0x0E3F_7C1D_5A2B_9E47)) | CHECK_BIT
}

/// The lists of some documents, one a row: row d's is `hashes[start(d)..start(d) + lengths[d]]`,
/// made from a sketch of `sizes[d]` shingles (see `short_texts::prefix_lists`).
#[derive(Debug, Clone)]
pub struct Lists<'a> {
    hashes: &'a [u64],
    sizes: &'a [u32],
    starts: Vec<usize>,
}

impl<'a> Lists<'a> {
    pub fn new(lengths: &[u32], hashes: &'a [u64], sizes: &'a [u32]) -> Result<Self> {
        if lengths.len() != sizes.len() {
            return Err(Error::invalid(format!(
                "{} list lengths but {} sizes",
                lengths.len(),
                sizes.len()
            )));
        }
        let mut starts = Vec::with_capacity(lengths.len() + 1);
        let mut at = 0usize;
        starts.push(0);
        for (d, (&l, &n)) in lengths.iter().zip(sizes).enumerate() {
            if l > n || (l == 0) != (n == 0) {
                return Err(Error::invalid(format!(
                    "row {d}: a list of {l} hashes for a sketch of {n} shingles"
                )));
            }
            at += l as usize;
            starts.push(at);
        }
        if at != hashes.len() {
            return Err(Error::invalid(format!(
                "the list lengths add up to {at}, but {} hashes were given",
                hashes.len()
            )));
        }
        Ok(Lists {
            hashes,
            sizes,
            starts,
        })
    }

    pub fn len(&self) -> usize {
        self.sizes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sizes.is_empty()
    }

    /// Row d's list and the size of its sketch.
    pub fn get(&self, d: usize) -> (&'a [u64], usize) {
        (
            &self.hashes[self.starts[d]..self.starts[d + 1]],
            self.sizes[d] as usize,
        )
    }

    /// The hashes of row d's `prefix` (see [`Lists::prefix`]) with their places in its list
    /// ([`UNPLACED`] for a document without shingles).
    pub fn placed<'p>(&self, d: usize, prefix: &'p [u64]) -> impl Iterator<Item = (u64, u32)> + 'p {
        let n = self.sizes[d] as usize;
        prefix
            .iter()
            .enumerate()
            .map(move |(at, &h)| (h, if n == 0 { UNPLACED } else { place(n, at) }))
    }

    /// Row d's prefix at `cut` written to `out` (one key hash for a document without
    /// shingles); an error when its list is shorter than the prefix.
    pub fn prefix(&self, d: usize, key: ContentKey, cut: Cut, out: &mut Vec<u64>) -> Result<()> {
        out.clear();
        let (list, n) = self.get(d);
        if n == 0 {
            out.push(empty_key(key));
            return Ok(());
        }
        let p = cut.prefix(n).min(n);
        if list.len() < p {
            return Err(Error::invalid(format!(
                "row {d}: a list of {} hashes is shorter than its prefix of {p}",
                list.len()
            )));
        }
        out.extend_from_slice(&list[..p]);
        Ok(())
    }
}

/// The postings `(hash, place, base + d)` of rows `d` of `lists` at `cut`, sorted: `place`
/// where the hash lies in the row's list ([`place`]; [`UNPLACED`] for a document without
/// shingles, listed by its key).
pub fn postings(
    lists: &Lists<'_>,
    keys: &[ContentKey],
    cut: Cut,
    base: usize,
) -> Result<Vec<(u64, u32, u32)>> {
    if keys.len() != lists.len() {
        return Err(Error::invalid(format!(
            "{} lists but {} keys",
            lists.len(),
            keys.len()
        )));
    }
    let made: Vec<Result<Vec<(u64, u32, u32)>>> = (0..lists.len())
        .into_par_iter()
        .with_min_len(1024)
        .map_init(Vec::new, |buf: &mut Vec<u64>, d| {
            lists.prefix(d, keys[d], cut, buf)?;
            let row = (base + d) as u32;
            Ok(lists.placed(d, buf).map(|(h, at)| (h, at, row)).collect())
        })
        .collect();
    let mut total = 0usize;
    for m in &made {
        total += m.as_ref().map_or(0, Vec::len);
    }
    let mut out: Vec<(u64, u32, u32)> = try_with_capacity(total, "prefix postings")?;
    for m in made {
        out.extend(m?);
    }
    out.par_sort_unstable();
    out.dedup();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_cut_covers_the_cuts_at_a_higher_threshold_only() {
        let stored = PrefixSettings {
            threshold: 0.8,
            band: 0.0625,
            size: 1024,
        };
        assert!(stored.covers(Cut::new(0.8, Some((1024, 0.0625)))));
        assert!(stored.covers(Cut::new(0.9, Some((1024, 0.05)))));
        assert!(!stored.covers(Cut::new(0.7, Some((1024, 0.07)))));
        // Without the band the stored prefixes are longer still.
        assert!(stored.covers(Cut::new(0.8, None)));
    }

    #[test]
    fn postings_list_each_prefix_hash_and_documents_without_shingles_by_their_key() {
        // A set of 5 shingles at t = 0.8 needs 4 of them: a prefix of 2.
        let lengths = [5u32, 0, 3];
        let hashes = [10u64, 11, 12, 13, 14, 11, 20, 21];
        let sizes = [5u32, 0, 3];
        let lists = Lists::new(&lengths, &hashes, &sizes).unwrap();
        let keys = [[1, 2], [3, 4], [5, 6]];
        let cut = Cut::new(0.8, None);
        let got = postings(&lists, &keys, cut, 100).unwrap();
        // Row 2: 3 shingles need 3 (ceil 2.4): a prefix of 1.
        let mut want = vec![
            (10, place(5, 0), 100),
            (11, place(5, 1), 100),
            (empty_key([3, 4]), UNPLACED, 101),
            (11, place(3, 0), 102),
        ];
        want.sort_unstable();
        assert_eq!(got, want);
        assert!(empty_key([3, 4]) & CHECK_BIT != 0);
        // A list shorter than its prefix, or lengths that do not add up, are refused.
        let short = Lists::new(&[1], &[10], &[5]).unwrap();
        assert!(postings(&short, &[[0, 0]], cut, 0).is_err());
        assert!(Lists::new(&[2], &[1], &[5]).is_err());
        assert!(Lists::new(&[0], &[], &[3]).is_err());
    }

    #[test]
    fn the_tables_of_needs_give_the_cuts_numbers() {
        for cut in [
            Cut::new(0.8, None),
            Cut::new(0.8, Some((128, 0.0625))),
            Cut::new(0.7, Some((64, 0.0))),
            Cut::new(0.95, Some((200, 0.02))),
            Cut::new(1.0, Some((16, 0.0))),
        ] {
            // Sizes past the tables' bound are computed.
            let needs = Needs::new(cut, 150);
            for na in 0..260 {
                for nb in 0..260 {
                    assert_eq!(needs.pair_need(na, nb), cut.pair_need(na, nb), "{cut:?}");
                }
            }
            for a in [
                place(10, 9),
                place(10, 2),
                place(128, 100),
                place(200, 7),
                UNPLACED,
            ] {
                for b in [
                    place(12, 11),
                    place(9, 8),
                    place(128, 30),
                    place(300, 250),
                    UNPLACED,
                ] {
                    assert_eq!(needs.may_meet(a, b), cut.may_meet(a, b));
                }
            }
        }
    }

    #[test]
    fn meeting_lists_exactly_the_postings_that_pass_the_filters() {
        // Places of every size from 1 to 40 and every position in its prefix, some unknown,
        // under cuts with and without a sketch size and band: the postings read are those
        // that `may_meet` passes, whatever the order of the checks.
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        for cut in [
            Cut::new(0.8, None),
            Cut::new(0.8, Some((24, 0.1))),
            Cut::new(0.5, Some((16, 0.0))),
            Cut::new(0.9, Some((32, 0.05))),
        ] {
            for _ in 0..200 {
                let mut posted: Vec<(u64, u32, u32)> = (0..next(60) as u32)
                    .map(|row| {
                        if next(20) == 0 {
                            return (7, UNPLACED, row);
                        }
                        let n = 1 + next(40) as usize;
                        let at = next(cut.prefix(n) as u64) as usize;
                        (7, place(n, at), row)
                    })
                    .collect();
                posted.sort_unstable();
                let p = Prefixes {
                    settings: None,
                    hashes: posted.iter().map(|q| q.0).collect::<Vec<_>>().into(),
                    places: posted.iter().map(|q| q.1).collect::<Vec<_>>().into(),
                    rows: posted.iter().map(|q| q.2).collect::<Vec<_>>().into(),
                    ..Default::default()
                };
                let n = 1 + next(40) as usize;
                let at = if next(20) == 0 {
                    UNPLACED
                } else {
                    place(n, next(cut.prefix(n) as u64) as usize)
                };
                let mut got = Vec::new();
                let needs = Needs::new(cut, 40);
                let listed = p.meeting(7, at, &needs, &mut got);
                assert_eq!(listed as u64, p.meeting_count(7, at, &needs));
                got.sort_unstable();
                let mut want: Vec<u32> = posted
                    .iter()
                    .filter(|q| cut.may_meet(at, q.1))
                    .map(|q| q.2)
                    .collect();
                want.sort_unstable();
                assert_eq!(got, want, "{cut:?} at {at:#x}");
                assert_eq!(p.meeting(8, at, &needs, &mut got), 0);
            }
        }
    }

    #[test]
    fn rows_of_finds_every_posting_of_a_hash() {
        let p = Prefixes {
            settings: None,
            hashes: vec![1u64, 3, 3, 3, 7].into(),
            places: vec![UNPLACED; 5].into(),
            rows: vec![0u32, 1, 4, 9, 2].into(),
            ..Default::default()
        };
        assert_eq!(p.rows_of(3), &[1, 4, 9]);
        assert_eq!(p.rows_of(2), &[] as &[u32]);
        assert_eq!(p.rows_of(7), &[2]);
        assert_eq!(p.rows_of(8), &[] as &[u32]);
    }
}
