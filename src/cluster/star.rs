//! Star clusters: which document each near-duplicate is removed for, without drift.
//!
//! Documents are taken in keep order (the order in which they should be kept). The first
//! document not yet removed becomes a *center* and is kept; every document after it that is not
//! yet removed and is a near-duplicate *of the center itself* is removed for it. So each removed
//! document carries its evidence, the kept document it duplicates and (when verified) their
//! Jaccard similarity, and a cluster never chains documents that are only similar through others.
//!
//! Near-duplicates of a center are found in three steps, each cheaper than the next:
//! 1. Documents with the same content key (a hash of the normalized text) and fingerprint are
//!    copies: only the first of each set in keep order takes part, the others follow it.
//! 2. The fingerprints propose candidates: the distinct fingerprints within `k` of the center's
//!    (Manku's batch mode over distinct values; groups of equal fingerprints are never expanded
//!    into pairs).
//! 3. With verification, a candidate is a near-duplicate only when the Jaccard similarity of the
//!    two sketches is at least the threshold; a pair is checked only when a center needs it.
//!
//! With verification, short texts (at most `short_texts::SHORT` shingles) are also candidates of
//! each other when their shingle sets share a prefix hash (see [`crate::candidates::short_texts`]),
//! however far apart their fingerprints are: every verified pair of short texts is found.
//!
//! A fingerprint of 0 is that of a text without features: such a document proposes no
//! candidates and is a duplicate of its copies only.

use std::collections::HashMap;

use rayon::prelude::*;

use crate::candidates::short_texts::{Cut, ShortTexts};
use crate::error::{try_with_capacity, Error, Result};
use crate::runtime::interrupt;
use crate::runtime::simd::prefetch_line;
use crate::search::cross_search::inner_pairs_bounded;
use crate::search::limits::{check_work, default_work_limit, Bounded, WORK_REMEDY};
use crate::search::pairs::Groups;
use crate::search::plan::Plan;
use crate::sketch::verify::{
    comparable_jaccard_at_least, shingles_of, ContentKey, Ranges, SketchHash,
};
use crate::text::hash::FoldState;

/// The Jaccard check of candidate pairs.
#[derive(Debug, Clone, Copy)]
pub struct Verification<'a> {
    /// Row r's sketch; rows never checked may have empty ones.
    pub sketches: Ranges<'a>,
    /// The sketches' size (hashes kept per document).
    pub size: usize,
    /// The least Jaccard similarity of a near-duplicate pair, in (0, 1].
    pub threshold: f64,
    /// How far from the threshold a bottom-`size` estimate (of a pair where a sketch is cut) may
    /// lie and still need the exact Jaccard to decide (0: decided on the estimate).
    pub band: f64,
    /// Exact Jaccards of pairs of rows `(a, b)`, a < b (the first rows of their texts), that
    /// decide those pairs in the band.
    pub exact: Option<&'a HashMap<(i64, i64), f64, FoldState>>,
}

/// What [`stars`] found, per row.
#[derive(Debug, Clone, PartialEq)]
pub struct Stars {
    /// The row kept in this row's place (the row itself when it is kept).
    pub kept: Vec<i64>,
    /// The Jaccard similarity with the kept row: 1 for a kept row and for copies of its text,
    /// NaN for a row removed on its fingerprint alone (no verification).
    pub jaccard: Vec<f32>,
    /// The pairs of rows `(a, b)`, a < b, whose estimate lay in the band and were decided on it
    /// for want of their exact Jaccard (see [`Verification::band`]), and whether the estimate
    /// made them near.
    pub undecided: Vec<(i64, i64, bool)>,
    /// The candidate pairs whose sketches were compared (a center and a text not yet taken).
    pub checks: u64,
    /// The pairs the prefix runs put before a center, each once (a center and a text not yet
    /// taken that share a prefix hash): those the prefix filters let through are compared.
    pub listed: u64,
}

/// The candidate structure of a corpus, computed once: its distinct texts (equal content key and
/// fingerprint), those texts grouped by fingerprint, and the groups within `k` of each other.
#[derive(Debug)]
pub struct Candidates {
    /// The text of each row.
    text_of: Vec<u32>,
    /// Each text's first row (in row order): the row whose sketch stands for the text.
    first_row: Vec<u32>,
    /// Each text's group of equal fingerprints (`u32::MAX` for a text without features).
    group_of: Vec<u32>,
    /// Group g's texts are `members[starts[g]..starts[g + 1]]`.
    starts: Vec<usize>,
    members: Vec<u32>,
    neighbours: Adjacency,
    /// The short texts and their prefix hashes, once given.
    short: Option<ShortTexts>,
    /// The most candidate pairs verified stars may compare when prefixes propose them (no
    /// pair of fingerprints is searched then, so `max_pairs` bounds these instead).
    max_checks: Option<u64>,
}

impl Candidates {
    /// The candidates of rows with these fingerprints and content keys, within `k`. More than
    /// `max_pairs` pairs of distinct fingerprints within `k` (None: no limit) is
    /// [`Error::TooManyPairs`], raised before they are stored.
    pub fn new(
        fingerprints: &[u64],
        keys: &[ContentKey],
        k: u32,
        plan: &Plan,
        max_pairs: Option<u64>,
    ) -> Result<Self> {
        Self::searched(fingerprints, keys, Some((k, plan)), max_pairs)
    }

    /// [`Candidates::new`], with `search = None` proposing no pairs of distinct fingerprints
    /// (the prefixes of [`Candidates::with_prefixes`] propose the candidates instead).
    pub fn searched(
        fingerprints: &[u64],
        keys: &[ContentKey],
        search: Option<(u32, &Plan)>,
        max_pairs: Option<u64>,
    ) -> Result<Self> {
        let n = fingerprints.len();
        if keys.len() != n {
            return Err(Error::invalid(format!(
                "{n} fingerprints but {} keys",
                keys.len()
            )));
        }
        if n >= u32::MAX as usize {
            return Err(Error::invalid(format!(
                "{n} documents are more than star clusters take (2^32 - 1)"
            )));
        }
        let mut texts: HashMap<(ContentKey, u64), u32, FoldState> =
            HashMap::with_capacity_and_hasher(n.min(1 << 20), FoldState::default());
        let mut text_of = Vec::with_capacity(n);
        let mut first_row = Vec::new();
        for r in 0..n {
            if r % 65536 == 65535 {
                interrupt::check()?;
            }
            let next = first_row.len() as u32;
            let t = *texts.entry((keys[r], fingerprints[r])).or_insert(next);
            if t == next {
                first_row.push(r as u32);
            }
            text_of.push(t);
        }
        drop(texts);
        // Texts with features, grouped by fingerprint.
        let fp_of = |t: u32| fingerprints[first_row[t as usize] as usize];
        let proposers: Vec<u32> = (0..first_row.len() as u32)
            .filter(|&t| fp_of(t) != 0)
            .collect();
        let fps: Vec<u64> = proposers.iter().map(|&t| fp_of(t)).collect();
        interrupt::check()?;
        let groups = Groups::new(&fps);
        drop(fps);
        interrupt::check()?;
        let members: Vec<u32> = groups.rows.iter().map(|&i| proposers[i]).collect();
        let mut group_of = vec![u32::MAX; first_row.len()];
        for g in 0..groups.distinct.len() {
            for &t in &members[groups.starts[g]..groups.starts[g + 1]] {
                group_of[t as usize] = g as u32;
            }
        }
        let neighbours = match search {
            Some((k, plan)) => adjacency(&groups.distinct, k, plan, max_pairs)?,
            None => Adjacency {
                starts: vec![0; groups.distinct.len() + 1],
                to: Vec::new(),
            },
        };
        interrupt::check()?;
        let (starts, members, neighbours) =
            by_first_text(&mut group_of, &groups.starts, &members, &neighbours);
        Ok(Candidates {
            text_of,
            first_row,
            group_of,
            starts,
            members,
            neighbours,
            short: None,
            max_checks: if search.is_none() { max_pairs } else { None },
        })
    }

    /// Adds the short texts' candidates: `sets` holds the shingle sets (sketches) of some rows,
    /// `rows[i]`'s being `sets.get(i)`; those of at most `short_texts::SHORT` hashes are kept
    /// (one per text). Verified stars must then use the same `threshold`.
    pub fn with_short_texts(
        mut self,
        rows: &[i64],
        sets: &Ranges<'_>,
        threshold: f64,
    ) -> Result<Self> {
        if rows.len() != sets.len() {
            return Err(Error::invalid(format!(
                "{} rows but {} shingle sets",
                rows.len(),
                sets.len()
            )));
        }
        let short = ShortTexts::new(
            self.first_row.len(),
            self.proposing(rows)?.map(|(i, t)| (t, sets.get(i))),
            threshold,
        )?;
        self.short = Some(short);
        Ok(self)
    }

    /// The texts of `rows` that propose candidates, with their places in `rows`; a row out of
    /// range is an error. A text without features proposes nothing: only its copies are its
    /// duplicates.
    fn proposing<'a>(&'a self, rows: &'a [i64]) -> Result<impl Iterator<Item = (usize, u32)> + 'a> {
        let n = self.text_of.len();
        if let Some(&r) = rows.iter().find(|&&r| r < 0 || r as u64 >= n as u64) {
            return Err(Error::invalid(format!("row {r} out of {n}")));
        }
        Ok(rows
            .iter()
            .enumerate()
            .map(|(i, &r)| (i, self.text_of[r as usize]))
            .filter(|&(_, t)| self.group_of[t as usize] != u32::MAX))
    }

    /// Adds the candidates of prefix filtering over every text (see
    /// [`crate::candidates::short_texts`]): `lists` holds the lists of some rows (from
    /// [`crate::candidates::short_texts::prefix_lists`]), `rows[i]`'s being `lists.get(i)` with
    /// `sizes[i]` shingles (one per text is kept). Verified stars must then use a threshold and
    /// band that `cut` covers.
    pub fn with_prefixes(
        mut self,
        rows: &[i64],
        lists: &Ranges<'_>,
        sizes: &[u32],
        alone: &[u32],
        cut: Cut,
    ) -> Result<Self> {
        if rows.len() != lists.len() || rows.len() != sizes.len() || rows.len() != alone.len() {
            return Err(Error::invalid(format!(
                "{} rows but {} lists, {} sizes and {} counts of hashes held alone",
                rows.len(),
                lists.len(),
                sizes.len(),
                alone.len()
            )));
        }
        let prefixes = ShortTexts::runs_of_lists(
            self.first_row.len(),
            self.proposing(rows)?
                .map(|(i, t)| (t, lists.get(i), sizes[i] as usize, alone[i] as usize)),
            cut,
        )?;
        self.short = Some(prefixes);
        Ok(self)
    }

    /// The candidate pairs the prefix runs hold (see [`ShortTexts::run_pairs`]).
    pub fn prefix_pairs(&self) -> u64 {
        self.short.as_ref().map_or(0, ShortTexts::run_pairs)
    }

    /// Candidate pairs of short texts not compared (see
    /// [`crate::candidates::short_texts::ShortTexts::skipped_pairs`]).
    pub fn skipped_pairs(&self) -> u64 {
        self.short.as_ref().map_or(0, ShortTexts::skipped_pairs)
    }

    /// Stars whose pairs in the band were decided on their estimates (`kept`, `jaccard`) given
    /// the exact Jaccards of those pairs that decided them alike: the Jaccard of each removed row
    /// whose pair (the first rows of its text and of the kept one's) is in `exact` becomes the
    /// exact one. (When an exact Jaccard would decide a pair otherwise, the stars must be taken
    /// again with it.)
    pub fn patch_jaccards(
        &self,
        kept: &[i64],
        jaccard: &mut [f32],
        exact: &HashMap<(i64, i64), f64, FoldState>,
    ) -> Result<()> {
        let n = self.text_of.len();
        if kept.len() != n || jaccard.len() != n {
            return Err(Error::invalid(format!(
                "{n} rows but {} kept and {} Jaccards",
                kept.len(),
                jaccard.len()
            )));
        }
        if exact.is_empty() {
            return Ok(());
        }
        let first = |r: usize| i64::from(self.first_row[self.text_of[r] as usize]);
        for (r, (&k, j)) in kept.iter().zip(jaccard.iter_mut()).enumerate() {
            if k == r as i64 || k < 0 || k as usize >= n {
                continue;
            }
            let (a, b) = (first(k as usize), first(r));
            if let Some(&e) = exact.get(&(a.min(b), a.max(b))) {
                *j = e as f32;
            }
        }
        Ok(())
    }

    /// The pairs of distinct fingerprints within `k`: the candidate pairs the stars consider
    /// (beside copies, texts of one fingerprint and short texts).
    pub fn pair_count(&self) -> usize {
        self.neighbours.to.len() / 2
    }

    /// The rows whose sketches [`Candidates::stars`] may read: the first row of each text that
    /// has another text within `k` (and of each short text that shares a prefix hash). A caller that could not keep every sketch reads these
    /// documents again.
    pub fn rows(&self) -> Vec<i64> {
        let groups = self.starts.len().saturating_sub(1);
        let mut rows: Vec<i64> = (0..groups)
            .filter(|&g| {
                self.starts[g + 1] - self.starts[g] > 1 || !self.neighbours.of(g).is_empty()
            })
            .flat_map(|g| {
                self.members[self.starts[g]..self.starts[g + 1]]
                    .iter()
                    .map(|&t| i64::from(self.first_row[t as usize]))
            })
            .collect();
        if let Some(short) = &self.short {
            rows.extend(
                (0..self.first_row.len())
                    .filter(|&t| short.has_runs(t))
                    .map(|t| i64::from(self.first_row[t])),
            );
            rows.sort_unstable();
            rows.dedup();
        } else {
            rows.sort_unstable();
        }
        rows
    }

    /// The star clusters, rows taken in keep order `order` (a permutation of the rows). With
    /// `verification`, a text's sketch is that of its first row.
    pub fn stars(&self, order: &[i64], verification: Option<Verification<'_>>) -> Result<Stars> {
        let n = self.text_of.len();
        if order.len() != n {
            return Err(Error::invalid(format!(
                "{n} rows but {} in keep order",
                order.len()
            )));
        }
        if let Some(v) = &verification {
            if v.sketches.len() != n {
                return Err(Error::invalid(format!(
                    "{n} rows but {} sketches",
                    v.sketches.len()
                )));
            }
            if !(v.threshold > 0.0 && v.threshold <= 1.0) {
                return Err(Error::invalid(format!(
                    "threshold must be in (0, 1], got {}",
                    v.threshold
                )));
            }
            if let Some(short) = self.short.as_ref().filter(|s| s.every()) {
                if !short.cut().covers(v.threshold, v.band, v.size) {
                    return Err(Error::invalid(format!(
                        "the prefixes were cut for {:?}, not threshold {} with a band of {} at size {}",
                        short.cut(),
                        v.threshold,
                        v.band,
                        v.size
                    )));
                }
            }
            if let Some(short) = &self.short {
                if short.threshold() != v.threshold {
                    return Err(Error::invalid(format!(
                        "the short texts' prefixes were cut for threshold {}, not {}",
                        short.threshold(),
                        v.threshold
                    )));
                }
            }
        }
        // Short texts propose each other only when pairs are verified.
        let short = self.short.as_ref().filter(|_| verification.is_some());
        let windows = short.is_some_and(ShortTexts::placed);
        let cut = short.map(ShortTexts::cut).unwrap_or_default();
        let (mut lists, heads) = short.map_or_else(Default::default, |s| run_lists(s, windows));
        let rank = ranks(order)?;
        // Each text stands in keep order where its first row in keep order does.
        let texts = self.first_row.len();
        let mut standin = vec![u32::MAX; texts];
        for &row in order {
            let t = self.text_of[row as usize] as usize;
            if standin[t] == u32::MAX {
                standin[t] = row as u32;
            }
        }
        let mut members = self.members.clone();
        for g in 0..self.starts.len().saturating_sub(1) {
            members[self.starts[g]..self.starts[g + 1]]
                .sort_unstable_by_key(|&t| rank[standin[t as usize] as usize]);
        }
        let mut alive: Vec<u32> = self
            .starts
            .windows(2)
            .map(|w| (w[1] - w[0]) as u32)
            .collect();

        let hashes = verification
            .as_ref()
            .map_or(&[][..], |v| v.sketches.hashes());
        // A text's state and, verified, where its sketch lies and how many of its hashes are
        // shingles (the rest are checks): the check of a candidate reads one slot, then (when
        // the sizes allow the threshold) the front of the candidate's hashes.
        let mut slots: Vec<Slot> = (0..texts)
            .map(|t| {
                let (start, len) = verification
                    .as_ref()
                    .map_or((0, 0), |v| v.sketches.span(self.first_row[t] as usize));
                let whole = &hashes[start as usize..][..len as usize];
                Slot {
                    kept: FREE,
                    len,
                    start,
                    last: FREE,
                    shingles: shingles_of(whole).len() as u32,
                }
            })
            .collect();
        // Two sketches as they compare (see `comparable`), told by their slots.
        let compared = |a: Slot, b: Slot| {
            let whole = (a.shingles == a.len) == (b.shingles == b.len);
            let of = |s: Slot| {
                let len = if whole { s.len } else { s.shingles };
                &hashes[s.start as usize..][..len as usize]
            };
            (of(a), of(b))
        };
        let mut jac_text = vec![1.0f32; texts];
        let mut undecided: Vec<(i64, i64, bool)> = Vec::new();
        let mut checks = 0u64;
        let mut listed = 0u64;
        let first_row = &self.first_row;
        let limit = self.max_checks.unwrap_or(u64::MAX);
        let mut over = false;
        for (at, &row) in order.iter().enumerate() {
            if at % 4096 == 0 {
                interrupt::check()?;
            }

            if let Some(short) = short {
                // The first runs of the center a place ahead: its own loop asks for the rest.
                if let Some(&r) = order.get(at + 1) {
                    let next = short.run_range(self.text_of[r as usize] as usize);
                    for &h in heads[next].iter().take(RUNS_AHEAD) {
                        prefetch_run(&lists, h);
                    }
                }
            }
            let t = self.text_of[row as usize] as usize;
            if standin[t] != row as u32 || slots[t].kept != FREE {
                continue;
            }
            slots[t].kept = t as u32;
            let g = self.group_of[t];
            if g == u32::MAX {
                continue;
            }
            let g = g as usize;
            let center = slots[t];
            // A free text near t is taken by it; a taken or kept one leaves the lists for good.
            // The texts a few places ahead in the list are asked of the cache meanwhile (their
            // slots, then their sketches): a center's candidates lie anywhere in the corpus.
            // `places`: the center's and the text's places in the run they meet in (None in a
            // fingerprint group), which the prefix filters read.
            let mut settle = |s: usize, places: Option<(u32, u32)>, near: u32, far: u32| {
                if let Some(slot) = slots.get(far as usize) {
                    prefetch_line(&slot.start);
                }
                if let Some(slot) = slots.get(near as usize) {
                    if slot.kept == FREE {
                        prefetch_sketch(hashes, slot);
                    }
                }
                let slot = slots[s];
                if slot.kept != FREE {
                    return true;
                }
                // A text met again in another list of this center: compared once.
                if slot.last == t as u32 {
                    return false;
                }
                slots[s].last = t as u32;
                if let Some((mine, theirs)) = places {
                    // The center's runs are walked in the order of its list, so this run's
                    // first hash is the first the two share: the filters hold here.
                    listed += 1;
                    if !cut.may_meet(mine, theirs) {
                        return false;
                    }
                }
                checks += 1;
                if checks > limit {
                    over = true;
                    return true;
                }
                let taken = match &verification {
                    None => Some(f32::NAN),
                    Some(v) => {
                        let cut = center.len as usize >= v.size || slot.len as usize >= v.size;
                        let (x, y) = compared(center, slot);
                        if cut && v.band > 0.0 {
                            let low = (v.threshold - v.band).max(0.0);
                            match comparable_jaccard_at_least(x, y, v.size, low) {
                                None => None,
                                Some(j) if j >= v.threshold + v.band => Some(j as f32),
                                Some(j) => {
                                    let (x, y) = (i64::from(first_row[t]), i64::from(first_row[s]));
                                    let key = (x.min(y), x.max(y));
                                    match v.exact.and_then(|m| m.get(&key)) {
                                        Some(&e) => (e >= v.threshold).then_some(e as f32),
                                        None => {
                                            undecided.push((key.0, key.1, j >= v.threshold));
                                            (j >= v.threshold).then_some(j as f32)
                                        }
                                    }
                                }
                            }
                        } else {
                            comparable_jaccard_at_least(x, y, v.size, v.threshold).map(|j| j as f32)
                        }
                    }
                };
                if let Some(j) = taken {
                    slots[s].kept = t as u32;
                    jac_text[s] = j;
                }
                taken.is_some()
            };
            for h in std::iter::once(g).chain(self.neighbours.of(g).iter().map(|&h| h as usize)) {
                let start = self.starts[h];
                let list = &mut members[start..start + alive[h] as usize];
                alive[h] = sweep_ahead(list, |s, near, far| settle(s as usize, None, near, far));
            }
            let (runs, places) = short.map_or((&[][..], &[][..]), |short| {
                let range = short.run_range(t);
                (&heads[range.clone()], &short.listed_places()[range])
            });
            // From the first text of the smallest size in reach that holds enough hashes after
            // the shared one (runs sort by size, then by that number): the same in each run.
            let first = places.first().map_or(0, |&mine| cut.window_start(mine));
            for (i, (&head, &mine)) in runs.iter().zip(places).enumerate() {
                if let Some(&h) = runs.get(i + RUNS_AHEAD) {
                    prefetch_run(&lists, h);
                }
                let head = (head & HEAD_AT) as usize;
                let alive = lists[head] as usize;
                let list = &mut lists[head + 1..][..alive];
                // Only the texts whose sizes the filters allow are read (the list is sorted by
                // size); the others stay for the centers that may take them.
                let (a, b) = if windows {
                    let most = cut.window_most(mine);
                    let a = list.partition_point(|&m| (m >> 32) < first);
                    (
                        a,
                        a + list[a..].partition_point(|&m| ((m >> 48) as usize) <= most),
                    )
                } else {
                    (0, alive)
                };
                let stay = sweep_ahead(&mut list[a..b], |m: u64, near, far| {
                    settle(m as u32 as usize, Some((mine, (m >> 32) as u32)), near, far)
                }) as usize;
                list.copy_within(b.., a + stay);
                lists[head] = (alive - (b - a - stay)) as u64;
            }
            if over {
                return Err(Error::TooManyPairs {
                    count: checks,
                    at_least: true,
                    limit,
                    what: "candidate pairs compared (texts sharing a prefix hash)".into(),
                    remedy: "raise max_pairs (--max-pairs; in Python, None lifts the limit)".into(),
                });
            }
        }
        let mut kept = Vec::with_capacity(n);
        let mut jac = Vec::with_capacity(n);
        for r in 0..n {
            let t = self.text_of[r] as usize;
            let c = slots[t].kept as usize;
            kept.push(i64::from(standin[c]));
            jac.push(if c == t { 1.0 } else { jac_text[t] });
        }
        undecided.sort_unstable();
        undecided.dedup();
        Ok(Stars {
            kept,
            jaccard: jac,
            undecided,
            checks,
            listed,
        })
    }
}

/// The stars of a graph of verified pairs: `n` nodes taken in keep `order` (a permutation of
/// `0..n`), edge e joining `a[e]` and `b[e]` with Jaccard `jaccard[e]`. The first node not yet
/// taken is kept and takes every node not yet taken that it shares an edge with: the rule of
/// [`Candidates::stars`], which asks of each candidate only whether it is a verified pair. So
/// the stars of a corpus's verified pairs, cut into connected components and each component's
/// stars taken apart (on different machines), are those of the whole corpus. Returns, per node,
/// the node kept in its place and their Jaccard (1 for a kept node); an edge given twice is one.
pub fn graph_stars(order: &[i64], a: &[u32], b: &[u32], jaccard: &[f32]) -> Result<Stars> {
    let n = order.len();
    if a.len() != b.len() || a.len() != jaccard.len() {
        return Err(Error::invalid(format!(
            "{} a, {} b and {} jaccard: one of each per edge",
            a.len(),
            b.len(),
            jaccard.len()
        )));
    }
    if let Some(&bad) = a.iter().chain(b).find(|&&v| v as usize >= n) {
        return Err(Error::invalid(format!("node {bad} out of {n}")));
    }
    ranks(order)?;
    let mut starts = vec![0usize; n + 1];
    for (&x, &y) in a.iter().zip(b) {
        starts[x as usize + 1] += 1;
        starts[y as usize + 1] += 1;
    }
    for v in 0..n {
        starts[v + 1] += starts[v];
    }
    let mut next = starts.clone();
    let mut to = vec![(0u32, 0f32); starts[n]];
    for ((&x, &y), &j) in a.iter().zip(b).zip(jaccard) {
        to[next[x as usize]] = (y, j);
        next[x as usize] += 1;
        to[next[y as usize]] = (x, j);
        next[y as usize] += 1;
    }
    let mut kept = vec![FREE; n];
    let mut jac = vec![1.0f32; n];
    for &v in order {
        let v = v as usize;
        if kept[v] != FREE {
            continue;
        }
        kept[v] = v as u32;
        for &(u, j) in &to[starts[v]..starts[v + 1]] {
            let u = u as usize;
            if kept[u] == FREE {
                kept[u] = v as u32;
                jac[u] = j;
            }
        }
    }
    Ok(Stars {
        kept: kept.into_iter().map(i64::from).collect(),
        jaccard: jac,
        undecided: Vec::new(),
        checks: a.len() as u64,
        listed: 0,
    })
}

/// A text not yet kept or taken.
const FREE: u32 = u32::MAX;

/// A text in [`Candidates::stars`]: the text kept in its place (`FREE` until settled), where
/// its sketch lies in the hashes, and the last center that compared it (`FREE`: none yet), read
/// together.
#[derive(Debug, Clone, Copy)]
struct Slot {
    kept: u32,
    len: u32,
    start: u64,
    last: u32,
    shingles: u32,
}

/// Asks the cache for the first two lines of a text's sketch, which a check reads first; the
/// rest is read in order (the CPU fetches it ahead by itself), and most checks stop early.
#[inline(always)]
fn prefetch_sketch(hashes: &[SketchHash], slot: &Slot) {
    if slot.len == 0 {
        return;
    }
    let at = slot.start as usize;
    prefetch_line(&hashes[at]);
    if slot.len > 8 {
        prefetch_line(&hashes[at + 8]);
    }
}

/// A run's head (see [`run_lists`]): where it lies in the lists in the low 48 bits, how many
/// texts it held at first (at most 0xFFFF) in the high 16.
const HEAD_AT: u64 = (1 << 48) - 1;

/// How many of a run's texts [`prefetch_run`] asks the cache for: four lines, which cover the
/// searches of nearly every run (most hold 2 or 3 texts).
const RUN_PREFETCH: usize = 32;

/// Asks the cache for the run `head` names: its count and the lines of its first texts, which
/// the binary searches of a center's window read in an order the CPU cannot foresee. With the
/// run's first line alone the stars took 0.92-0.94 of the CPU they took reaching each run
/// through its bounds and count (manual pages, the suite's long texts), with these 0.89-0.90.
#[inline(always)]
fn prefetch_run(lists: &[u64], head: u64) {
    let at = (head & HEAD_AT) as usize;
    let end = at + ((head >> 48) as usize).min(RUN_PREFETCH);
    let mut k = at;
    while k < end {
        prefetch_line(&lists[k]);
        k += 8;
    }
    prefetch_line(&lists[end]);
}

/// How many runs ahead of the one it reads a center asks the cache for a run's list (4 left
/// the stars 1.03-1.05 times as long on the manual pages and the suite's long texts, 12 was no
/// better).
const RUNS_AHEAD: usize = 8;

/// The prefix runs as [`Candidates::stars`] reads and shortens them: `(lists, heads)`. Run r
/// lies in `lists` as the number of its texts still listed, then its texts, each with its place
/// in the run (see `short_texts::place`) in the high 32 bits, sorted when `sorted` (by size,
/// the top 16 bits, as `Cut::window` reads them). `heads` holds, for each run a text lists
/// ([`ShortTexts::listed_runs`]), where the run lies in `lists`: a center reads one place to
/// reach a run, not three (its bounds, its count and its texts, each anywhere in memory), and
/// knows where it is a few runs ahead without reading anything else.
fn run_lists(s: &ShortTexts, sorted: bool) -> (Vec<u64>, Vec<u64>) {
    let runs = s.run_count();
    let (members, places) = (s.members(), s.places());
    let mut lists = Vec::with_capacity(members.len() + runs);
    // Each run's head, then the heads of the texts' runs gathered from these: one read a run
    // listed, not two (its bounds), and most runs of two texts ordered by one compare, not a
    // call to the sort (with both, the stars take 0.98 of their CPU).
    let mut head_of = Vec::with_capacity(runs);
    for r in 0..runs {
        let (a, b) = s.run_bounds(r);
        head_of.push(lists.len() as u64 | ((b - a).min(0xFFFF) as u64) << 48);
        lists.push((b - a) as u64);
        let from = lists.len();
        lists.extend(
            members[a..b]
                .iter()
                .zip(&places[a..b])
                .map(|(&t, &p)| u64::from(p) << 32 | u64::from(t)),
        );
        match &mut lists[from..] {
            [x, y] if sorted && *x > *y => std::mem::swap(x, y),
            [_, _] => {}
            run if sorted => run.sort_unstable(),
            _ => {}
        }
    }
    let heads = s
        .listed_runs()
        .iter()
        .map(|&r| head_of[r as usize])
        .collect();
    (lists, heads)
}

/// How many places ahead in a list [`sweep_ahead`] names the texts whose sketches to fetch, and
/// (twice as far) whose slots.
const AHEAD: usize = 6;

/// Walks a list of candidate texts, dropping those `settle` settles (taken now, or no longer
/// free) and keeping the others in order at its front: returns how many stay.
pub(crate) fn sweep(list: &mut [u32], mut settle: impl FnMut(usize) -> bool) -> u32 {
    let mut keep_at = 0;
    for at in 0..list.len() {
        if !settle(list[at] as usize) {
            list[keep_at] = list[at];
            keep_at += 1;
        }
    }
    keep_at as u32
}

/// [`sweep`], `settle(text, near, far)` also naming the texts [`AHEAD`] and twice as many
/// places further in the list (`FREE` past its end), whose memory it may ask the cache for.
/// An entry of a list is a text, or a text in its low 32 bits and what the caller keeps beside
/// it in the high ones (`settle` gets the entry whole).
pub(crate) fn sweep_ahead<T: Copy + Into<u64>>(
    list: &mut [T],
    mut settle: impl FnMut(T, u32, u32) -> bool,
) -> u32 {
    let text = |x: &T| (*x).into() as u32;
    let mut keep_at = 0;
    for at in 0..list.len() {
        let near = list.get(at + AHEAD).map_or(FREE, text);
        let far = list.get(at + 2 * AHEAD).map_or(FREE, text);
        if !settle(list[at], near, far) {
            list[keep_at] = list[at];
            keep_at += 1;
        }
    }
    keep_at as u32
}

/// Each row's position in `order`, checking that it is a permutation of the rows.
fn ranks(order: &[i64]) -> Result<Vec<u32>> {
    let n = order.len();
    let mut rank = vec![u32::MAX; n];
    for (at, &row) in order.iter().enumerate() {
        if row < 0 || row as u64 >= n as u64 || rank[row as usize] != u32::MAX {
            return Err(Error::invalid(format!(
                "the keep order must hold each of the {n} rows once; row {row} is out of range or repeated"
            )));
        }
        rank[row as usize] = at as u32;
    }
    Ok(rank)
}

/// The distinct values within `k` of each distinct value, as compressed rows.
#[derive(Debug)]
struct Adjacency {
    starts: Vec<usize>,
    to: Vec<u32>,
}

impl Adjacency {
    fn of(&self, g: usize) -> &[u32] {
        &self.to[self.starts[g]..self.starts[g + 1]]
    }
}

/// The groups numbered again in the order of their first texts (they come numbered by
/// fingerprint), `group_of` rewritten to match: stars taken in text order then read the
/// groups' entries in order instead of at random across tables that grow with the corpus.
/// Returns the groups' starts and members and their neighbours under the new numbers.
fn by_first_text(
    group_of: &mut [u32],
    starts: &[usize],
    members: &[u32],
    neighbours: &Adjacency,
) -> (Vec<usize>, Vec<u32>, Adjacency) {
    let groups = starts.len().saturating_sub(1);
    let mut new_of = vec![u32::MAX; groups];
    let mut old_of = Vec::with_capacity(groups);
    for g in group_of.iter_mut().filter(|g| **g != u32::MAX) {
        let old = *g as usize;
        if new_of[old] == u32::MAX {
            new_of[old] = old_of.len() as u32;
            old_of.push(old);
        }
        *g = new_of[old];
    }
    let mut new_starts = Vec::with_capacity(old_of.len() + 1);
    let mut new_members = Vec::with_capacity(members.len());
    let mut to_starts = Vec::with_capacity(old_of.len() + 1);
    let mut to = Vec::with_capacity(neighbours.to.len());
    new_starts.push(0);
    to_starts.push(0);
    for &old in &old_of {
        new_members.extend_from_slice(&members[starts[old]..starts[old + 1]]);
        new_starts.push(new_members.len());
        to.extend(neighbours.of(old).iter().map(|&h| new_of[h as usize]));
        to_starts.push(to.len());
    }
    (
        new_starts,
        new_members,
        Adjacency {
            starts: to_starts,
            to,
        },
    )
}

fn adjacency(distinct: &[u64], k: u32, plan: &Plan, max_pairs: Option<u64>) -> Result<Adjacency> {
    let work = max_pairs.map(|_| default_work_limit(distinct.len()));
    check_work(distinct, k, plan, work, WORK_REMEDY)?;
    let pairs = match inner_pairs_bounded(distinct, k, plan, max_pairs)? {
        Bounded::Within(pairs) => pairs,
        bounded @ (Bounded::Over(count) | Bounded::AtLeast(count)) => {
            return Err(Error::TooManyPairs {
                count,
                at_least: matches!(bounded, Bounded::AtLeast(_)),
                limit: max_pairs.unwrap_or(u64::MAX),
                what: format!("candidate pairs of distinct fingerprints within k={k}"),
                remedy: "lower k (the candidate radius)".into(),
            })
        }
    };
    let mut degree = vec![0usize; distinct.len() + 1];
    for &(a, b) in &pairs {
        degree[a as usize + 1] += 1;
        degree[b as usize + 1] += 1;
    }
    for g in 0..distinct.len() {
        degree[g + 1] += degree[g];
    }
    let starts = degree.clone();
    let mut next = degree;
    let mut to: Vec<u32> =
        try_with_capacity(pairs.len() * 2, "neighbours of distinct fingerprints")?;
    to.resize(pairs.len() * 2, 0);
    for &(a, b) in &pairs {
        let (a, b) = (a as usize, b as usize);
        to[next[a]] = b as u32;
        next[a] += 1;
        to[next[b]] = a as u32;
        next[b] += 1;
    }
    drop(pairs);
    // Neighbours in value order: the result does not depend on how tables were scheduled.
    let mut chunks: Vec<&mut [u32]> = Vec::with_capacity(distinct.len());
    let mut rest = &mut to[..];
    for g in 0..distinct.len() {
        let (head, tail) = rest.split_at_mut(starts[g + 1] - starts[g]);
        chunks.push(head);
        rest = tail;
    }
    chunks.par_iter_mut().for_each(|c| c.sort_unstable());
    Ok(Adjacency { starts, to })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fingerprint::hamming::hamming;
    use crate::sketch::verify::{jaccard, shingle_config, sketches, Sketches};
    use crate::testing::xorshift64 as rng;

    fn stars(
        fingerprints: &[u64],
        keys: &[ContentKey],
        order: &[i64],
        k: u32,
        plan: &Plan,
        verification: Option<Verification<'_>>,
    ) -> Result<Stars> {
        Candidates::new(fingerprints, keys, k, plan, None)?.stars(order, verification)
    }

    fn candidate_rows(
        fingerprints: &[u64],
        keys: &[ContentKey],
        k: u32,
        plan: &Plan,
    ) -> Result<Vec<i64>> {
        Ok(Candidates::new(fingerprints, keys, k, plan, None)?.rows())
    }

    fn plan(k: u32) -> Plan {
        Plan::choose(
            i64::from(k),
            100,
            None,
            crate::search::plan::Workload::Batch,
        )
        .unwrap()
    }

    /// The same greedy rule by brute force over every pair.
    fn brute(
        fps: &[u64],
        keys: &[ContentKey],
        order: &[i64],
        k: u32,
        sim: &dyn Fn(usize, usize) -> Option<f32>,
    ) -> Stars {
        brute_with(fps, keys, order, k, sim, &|_, _| false)
    }

    /// [`brute`], with `also(c, s)` making candidates of rows beyond `k`.
    fn brute_with(
        fps: &[u64],
        keys: &[ContentKey],
        order: &[i64],
        k: u32,
        sim: &dyn Fn(usize, usize) -> Option<f32>,
        also: &dyn Fn(usize, usize) -> bool,
    ) -> Stars {
        let n = fps.len();
        let mut kept = vec![-1i64; n];
        let mut jac = vec![1.0f32; n];
        for &c in order {
            let c = c as usize;
            if kept[c] != -1 {
                continue;
            }
            kept[c] = c as i64;
            for &s in order {
                let s = s as usize;
                if kept[s] != -1 {
                    continue;
                }
                if keys[s] == keys[c] && fps[s] == fps[c] {
                    kept[s] = c as i64;
                    continue;
                }
                if fps[c] == 0 || fps[s] == 0 || (hamming(fps[c], fps[s]) > k && !also(c, s)) {
                    continue;
                }
                if let Some(j) = sim(c, s) {
                    kept[s] = c as i64;
                    jac[s] = j;
                }
            }
        }
        Stars {
            kept,
            jaccard: jac,
            undecided: Vec::new(),
            checks: 0,
            listed: 0,
        }
    }

    fn same(a: &Stars, b: &Stars) -> bool {
        a.kept == b.kept
            && a.jaccard
                .iter()
                .zip(&b.jaccard)
                .all(|(x, y)| x == y || (x.is_nan() && y.is_nan()))
    }

    #[test]
    fn fingerprint_stars_match_brute_force_and_never_chain() {
        let mut seed = 99;
        for k in [0u32, 2, 3, 5] {
            // Chains: each value one bit from the one before, so components would merge them all.
            let mut fps = Vec::new();
            let mut x = rng(&mut seed);
            for i in 0..300 {
                if i % 7 == 0 {
                    x = rng(&mut seed);
                }
                x ^= 1 << (rng(&mut seed) % 64);
                fps.push(x);
                if i % 5 == 0 {
                    fps.push(x); // a copy
                }
            }
            fps.push(0);
            fps.push(0);
            let n = fps.len();
            let keys: Vec<ContentKey> = (0..n as u64)
                .map(|r| {
                    if fps[r as usize] == 0 {
                        [r % 2, 0]
                    } else {
                        [fps[r as usize], 0]
                    }
                })
                .collect();
            let mut order: Vec<i64> = (0..n as i64).collect();
            for i in (1..n).rev() {
                order.swap(i, (rng(&mut seed) % (i as u64 + 1)) as usize);
            }
            let got = stars(&fps, &keys, &order, k, &plan(k), None).unwrap();
            assert!(
                same(&got, &brute(&fps, &keys, &order, k, &|_, _| Some(f32::NAN))),
                "k={k}"
            );
            for r in 0..n {
                let c = got.kept[r] as usize;
                assert_eq!(got.kept[c], c as i64, "a kept row keeps itself");
                assert!(hamming(fps[r], fps[c]) <= k);
            }
        }
    }

    #[test]
    fn verified_stars_match_brute_force() {
        let words = [
            "alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta",
        ];
        let mut seed = 5;
        let mut texts: Vec<String> = Vec::new();
        for _ in 0..120 {
            let len = 3 + (rng(&mut seed) % 6) as usize;
            texts.push(
                (0..len)
                    .map(|_| words[(rng(&mut seed) % 8) as usize])
                    .collect::<Vec<_>>()
                    .join(" "),
            );
        }
        texts.push(String::new());
        texts.push(String::new());
        texts.push("!!".into());
        let n = texts.len();
        let config = shingle_config(2, 64).unwrap();
        let s = sketches(config, &texts);
        // Fingerprints that make everything a candidate of everything but the empty texts.
        let fps: Vec<u64> = (0..n)
            .map(|d| {
                if s.get(d).is_empty() {
                    0
                } else {
                    1 + d as u64 % 3
                }
            })
            .collect();
        let keys = s.keys.clone();
        let starts: Vec<u64> = s.offsets[..n].to_vec();
        let ends: Vec<u64> = s.offsets[1..].to_vec();
        let ranges = Ranges::new(&starts, &ends, &s.hashes).unwrap();
        let order: Vec<i64> = (0..n as i64).rev().collect();
        for threshold in [0.3, 0.5, 1.0] {
            let v = Verification {
                sketches: ranges,
                size: 64,
                threshold,
                band: 0.0,
                exact: None,
            };
            let got = stars(&fps, &keys, &order, 2, &plan(2), Some(v)).unwrap();
            let sim = |a: usize, b: usize| {
                let j = jaccard(s.get(a), s.get(b), 64);
                (j >= threshold).then_some(j as f32)
            };
            assert!(
                same(&got, &brute(&fps, &keys, &order, 2, &sim)),
                "threshold {threshold}"
            );
            for r in 0..n {
                let c = got.kept[r] as usize;
                assert!(f64::from(got.jaccard[r]) >= threshold || c == r);
            }
            // The two empty texts are copies; "!!" has no words and stays alone.
            assert_eq!(got.kept[n - 3], n as i64 - 2);
            assert_eq!(got.kept[n - 1], n as i64 - 1);
        }
    }

    /// Short texts are candidates of each other whatever their fingerprints: the stars are those
    /// of every pair within k or of two texts of at most `SHORT` shingles, by brute force.
    /// What the short-text and prefix tests draw for a corpus: its sketches of `size` hashes,
    /// random fingerprints (nothing within k = 3 but by chance; 0 for a text without words),
    /// its sketches' bounds, its rows and a random keep order.
    struct Drawn {
        s: Sketches,
        fps: Vec<u64>,
        starts: Vec<u64>,
        ends: Vec<u64>,
        rows: Vec<i64>,
        order: Vec<i64>,
    }

    fn drawn(texts: &[String], size: i64, seed: &mut u64) -> Drawn {
        let n = texts.len();
        let s = sketches(shingle_config(2, size).unwrap(), texts);
        let fps: Vec<u64> = (0..n)
            .map(|d| {
                if s.get(d).is_empty() {
                    0
                } else {
                    rng(seed) | 1
                }
            })
            .collect();
        let mut order: Vec<i64> = (0..n as i64).collect();
        for i in (1..n).rev() {
            order.swap(i, (rng(seed) % (i as u64 + 1)) as usize);
        }
        Drawn {
            starts: s.offsets[..n].to_vec(),
            ends: s.offsets[1..].to_vec(),
            rows: (0..n as i64).collect(),
            s,
            fps,
            order,
        }
    }

    #[test]
    fn short_texts_are_verified_against_each_other_beyond_k() {
        use crate::candidates::short_texts::SHORT;
        let words = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"];
        let mut seed = 17;
        let mut texts: Vec<String> = Vec::new();
        for i in 0..300 {
            let len = if i % 3 == 0 {
                2 + (rng(&mut seed) % 30)
            } else {
                2 + (rng(&mut seed) % 12)
            };
            let base: Vec<&str> = (0..len)
                .map(|_| words[(rng(&mut seed) % 10) as usize])
                .collect();
            texts.push(base.join(" "));
            if i % 2 == 0 {
                // An edit of it: a word added at the end (one shingle more), or the last word
                // changed (one shingle other), or one in the middle (two).
                let mut edit = base.clone();
                let other = words[(rng(&mut seed) % 10) as usize];
                match rng(&mut seed) % 3 {
                    0 => edit.push(other),
                    1 => *edit.last_mut().unwrap() = other,
                    _ => edit[(rng(&mut seed) % len) as usize] = other,
                }
                texts.push(edit.join(" "));
            }
        }
        texts.push(String::new());
        let n = texts.len();
        let Drawn {
            s,
            fps,
            starts,
            ends,
            rows,
            order,
        } = drawn(&texts, 64, &mut seed);
        let keys = s.keys.clone();
        let ranges = Ranges::new(&starts, &ends, &s.hashes).unwrap();
        let short = |d: usize| !s.get(d).is_empty() && s.get(d).len() <= SHORT;
        for threshold in [0.5, 0.7, 0.8] {
            let v = Verification {
                sketches: ranges,
                size: 64,
                threshold,
                band: 0.0,
                exact: None,
            };
            let found = Candidates::new(&fps, &keys, 3, &plan(3), None)
                .unwrap()
                .with_short_texts(&rows, &ranges, threshold)
                .unwrap();
            let got = found.stars(&order, Some(v)).unwrap();
            let sim = |a: usize, b: usize| {
                let j = jaccard(s.get(a), s.get(b), 64);
                (j >= threshold).then_some(j as f32)
            };
            let want = brute_with(&fps, &keys, &order, 3, &sim, &|a, b| short(a) && short(b));
            assert!(same(&got, &want), "threshold {threshold}");
            let removed = (0..n).filter(|&r| got.kept[r] != r as i64).count();
            assert!(
                removed > 40,
                "threshold {threshold}: only {removed} removed"
            );
            // Fingerprint-only stars ignore the short texts.
            let plain = found.stars(&order, None).unwrap();
            assert!(same(
                &plain,
                &brute(&fps, &keys, &order, 3, &|_, _| Some(f32::NAN))
            ));
            // The threshold of the stars must be that of the prefixes.
            let other = Verification {
                threshold: threshold / 2.0,
                ..v
            };
            assert!(found.stars(&order, Some(other)).is_err());
            // Rows a star may read include every short text sharing a prefix hash.
            let listed = found.rows();
            let must: Vec<i64> = (0..n)
                .filter(|&d| got.kept[d] != d as i64 && short(d) && fps[d] != 0)
                .map(|d| d as i64)
                .filter(|&d| {
                    keys[..d as usize]
                        .iter()
                        .all(|&key| key != keys[d as usize])
                })
                .collect();
            assert!(must.iter().all(|d| listed.binary_search(d).is_ok()));
        }
    }

    /// The prefix filters, hand-worked at t = 0.8 on whole sets listed in the order of their
    /// values: A = {1, 100..=109} and D = A with 109 replaced by 110 (J = 10/12) share every
    /// prefix hash; B = {1, 200, 201, 202} shares hash 1 with both, but 4 shingles are fewer
    /// than the 9 that A and D need in common with any partner. A, the first center, reads D
    /// alone in its window (sizes 9 to 14) and takes it; B reads nobody (sizes 4 to 6). Without
    /// the filters A would compare B too.
    #[test]
    fn the_prefix_filters_list_only_pairs_that_may_be_near() {
        use crate::candidates::short_texts::Cut;
        let a: Vec<u64> = std::iter::once(1).chain(100..=109).collect();
        let b: Vec<u64> = vec![1, 200, 201, 202];
        let d: Vec<u64> = std::iter::once(1).chain(100..=108).chain([110]).collect();
        let sets = [a, b, d];
        let hashes: Vec<u64> = sets.concat();
        let ends: Vec<u64> = sets
            .iter()
            .scan(0u64, |at, set| {
                *at += set.len() as u64;
                Some(*at)
            })
            .collect();
        let starts: Vec<u64> = ends
            .iter()
            .zip(&sets)
            .map(|(&e, set)| e - set.len() as u64)
            .collect();
        let sketches = Ranges::new(&starts, &ends, &hashes).unwrap();
        let sizes: Vec<u32> = sets.iter().map(|set| set.len() as u32).collect();
        let cut = Cut::new(0.8, Some((64, 0.0)));
        let found = Candidates::searched(&[11, 22, 33], &[[1, 0], [2, 0], [3, 0]], None, None)
            .unwrap()
            .with_prefixes(&[0, 1, 2], &sketches, &sizes, &[0, 0, 0], cut)
            .unwrap();
        let v = Verification {
            sketches,
            size: 64,
            threshold: 0.8,
            band: 0.0,
            exact: None,
        };
        let got = found.stars(&[0, 1, 2], Some(v)).unwrap();
        assert_eq!(got.kept, vec![0, 1, 0]);
        assert_eq!((got.listed, got.checks), (1, 1));
    }

    /// Candidates from prefix filtering alone (no fingerprint search): the stars are those of
    /// every pair, by brute force, for sketches whole and cut, with and without a band.
    #[test]
    fn prefix_candidates_give_the_stars_of_every_pair() {
        use crate::candidates::rarity::Rarity;
        use crate::candidates::repeats::Repeats;
        use crate::candidates::short_texts::{prefix_lists, Cut, PrefixLists};
        let words: Vec<String> = (0..40).map(|w| format!("w{w}")).collect();
        let mut seed = 31;
        let mut texts: Vec<String> = Vec::new();
        for _ in 0..150 {
            let len = 2 + (rng(&mut seed) % 40) as usize;
            let base: Vec<&str> = (0..len)
                .map(|_| words[(rng(&mut seed) % 40) as usize].as_str())
                .collect();
            texts.push(base.join(" "));
            for _ in 0..rng(&mut seed) % 3 {
                let mut edit = base.clone();
                let at = (rng(&mut seed) % len as u64) as usize;
                edit[at] = words[(rng(&mut seed) % 40) as usize].as_str();
                texts.push(edit.join(" "));
            }
        }
        texts.push(String::new());
        let n = texts.len();
        let size = 24;
        let Drawn {
            s,
            fps,
            starts,
            ends,
            rows,
            order,
        } = drawn(&texts, size as i64, &mut seed);
        let keys = s.keys.clone();
        let ranges = Ranges::new(&starts, &ends, &s.hashes).unwrap();
        // Orders counted on a sample (no hash told alone), on every text, and on a sample with
        // every text's marks: the last two leave the hashes no other text holds unposted.
        let sampled = || Rarity::sample((0..50).map(|d| s.get(d)), 1 << 20);
        let (held, counts) = Rarity::sorted_counts((0..n).map(|d| s.get(d)), usize::MAX);
        let (held, counts): (Vec<u64>, Vec<u32>) =
            held.iter().zip(&counts).filter(|&(_, &c)| c >= 2).unzip();
        let every = Rarity::new(&held, &counts).unwrap().on_every_text();
        let mut marks = Repeats::new(16).unwrap();
        marks.add_sketches(&ranges);
        let marked = sampled().with_repeated(marks.repeated()).on_every_text();
        let orders = [(sampled(), false), (every, true), (marked, true)];
        for ((threshold, band), (rarity, tells)) in [(0.8, 0.0), (0.7, 0.1), (0.5, 0.0)]
            .into_iter()
            .flat_map(|tb| orders.iter().map(move |o| (tb, o)))
        {
            let cut = Cut::new(threshold, Some((size, band)));
            let PrefixLists {
                lengths,
                hashes: listed,
                sizes,
                alone,
            } = prefix_lists(&ranges, rarity, cut);
            assert_eq!(alone.iter().any(|&a| a > 0), *tells);
            let ends_at: Vec<u64> = lengths
                .iter()
                .scan(0u64, |at, &l| {
                    *at += u64::from(l);
                    Some(*at)
                })
                .collect();
            let starts_at: Vec<u64> = ends_at
                .iter()
                .zip(&lengths)
                .map(|(&e, &l)| e - u64::from(l))
                .collect();
            let lists = Ranges::unordered(&starts_at, &ends_at, &listed).unwrap();
            let found = Candidates::searched(&fps, &keys, None, None)
                .unwrap()
                .with_prefixes(&rows, &lists, &sizes, &alone, cut)
                .unwrap();
            assert_eq!(found.pair_count(), 0);
            let v = Verification {
                sketches: ranges,
                size,
                threshold,
                band,
                exact: None,
            };
            let got = found.stars(&order, Some(v)).unwrap();
            let sim = |a: usize, b: usize| {
                let j = jaccard(s.get(a), s.get(b), size);
                (j >= threshold).then_some(j as f32)
            };
            let want = brute_with(&fps, &keys, &order, 0, &sim, &|_, _| true);
            assert!(same(&got, &want), "threshold {threshold}, band {band}");
            let removed = (0..n).filter(|&r| got.kept[r] != r as i64).count();
            assert!(removed > 30, "threshold {threshold}: {removed} removed");
            // max_pairs bounds the pairs compared: as many as the walk compares pass, one
            // fewer stops it, naming at least one more than the limit.
            let bounded = |limit: u64| {
                Candidates::searched(&fps, &keys, None, Some(limit))
                    .unwrap()
                    .with_prefixes(&rows, &lists, &sizes, &alone, cut)
                    .unwrap()
                    .stars(&order, Some(v))
            };
            assert!(got.checks > 10);
            assert!(same(&bounded(got.checks).unwrap(), &got));
            match bounded(got.checks - 1) {
                Err(Error::TooManyPairs {
                    count,
                    at_least: true,
                    limit,
                    ..
                }) => assert!(count > limit && limit == got.checks - 1),
                other => panic!("expected TooManyPairs, got {other:?}"),
            }
            // A band the prefixes were not cut for is refused.
            let wider = Verification {
                band: band + 0.1,
                ..v
            };
            assert!(found.stars(&order, Some(wider)).is_err());
        }
    }

    #[test]
    fn candidate_rows_are_those_stars_may_check() {
        let p = plan(2);
        // 0 and 5 copies; 1 near 0; 2 alone; 3, 4 featureless; 6 same fingerprint as 2, other text.
        let fps = [0b1111u64, 0b0111, 1 << 40, 0, 0, 0b1111, 1 << 40, u64::MAX];
        let keys = [1u64, 2, 3, 4, 5, 1, 7, 8].map(|k| [k, 0]);
        assert_eq!(
            candidate_rows(&fps, &keys, 2, &p).unwrap(),
            vec![0, 1, 2, 6]
        );
        assert_eq!(candidate_rows(&fps, &keys, 0, &p).unwrap(), vec![2, 6]);
    }

    #[test]
    fn candidate_pairs_past_max_pairs_are_refused_naming_their_count() {
        let p = plan(3);
        // 64 distinct values within 3 bits of their neighbours, each with a copy.
        let fps: Vec<u64> = (0..128u64).map(|r| (1 << 40) | (r / 2)).collect();
        let keys: Vec<ContentKey> = fps.iter().map(|&f| [f, 0]).collect();
        let count = (0..64u64)
            .flat_map(|a| (a + 1..64).map(move |b| (a, b)))
            .filter(|&(a, b)| hamming(a, b) <= 3)
            .count() as u64;
        match Candidates::new(&fps, &keys, 3, &p, Some(count - 1)) {
            Err(Error::TooManyPairs {
                count: c, limit, ..
            }) => assert_eq!((c, limit), (count, count - 1)),
            other => panic!("expected TooManyPairs, got {other:?}"),
        }
        let found = Candidates::new(&fps, &keys, 3, &p, Some(count)).unwrap();
        assert_eq!(found.pair_count() as u64, count);
    }

    /// A pair whose estimate (a sketch cut) lies within the band is listed, decided on the
    /// estimate without its exact Jaccard and by the exact Jaccard with it; the exact Jaccard is
    /// put in place when it decides alike.
    #[test]
    fn pairs_in_the_band_are_decided_by_their_exact_jaccard() {
        let words: Vec<String> = (0..60).map(|w| format!("w{w}")).collect();
        let (a, b) = (words[..40].join(" "), words[8..48].join(" "));
        let exact = 32.0 / 48.0;
        let s = sketches(shingle_config(1, 16).unwrap(), &[a.as_str(), b.as_str()]);
        let estimate = jaccard(s.get(0), s.get(1), 16);
        assert!((estimate - exact).abs() > 0.01, "{estimate}");
        let starts: Vec<u64> = s.offsets[..2].to_vec();
        let ends: Vec<u64> = s.offsets[1..].to_vec();
        let ranges = Ranges::new(&starts, &ends, &s.hashes).unwrap();
        let (fps, keys) = ([1u64, 3], [[1, 0], [2, 0]]);
        let found = Candidates::new(&fps, &keys, 2, &plan(2), None).unwrap();
        let order = [0i64, 1];
        // The threshold between the two: the estimate and the exact Jaccard decide otherwise.
        let threshold = (estimate + exact) / 2.0;
        let near_by_estimate = estimate >= threshold;
        let mut known: HashMap<(i64, i64), f64, FoldState> = HashMap::default();
        for (band, exact_known) in [(0.0, false), (0.5, false), (0.5, true)] {
            if exact_known {
                known.insert((0, 1), exact);
            }
            let v = Verification {
                sketches: ranges,
                size: 16,
                threshold,
                band,
                exact: Some(&known),
            };
            let got = found.stars(&order, Some(v)).unwrap();
            let near = got.kept[1] == 0;
            if exact_known {
                assert_eq!(near, !near_by_estimate);
                assert!(got.undecided.is_empty());
                if near {
                    assert_eq!(got.jaccard[1], exact as f32);
                }
            } else {
                assert_eq!(near, near_by_estimate);
                let listed = if band > 0.0 {
                    vec![(0, 1, near_by_estimate)]
                } else {
                    vec![]
                };
                assert_eq!(got.undecided, listed);
            }
        }
        // Decided alike (a threshold below both): the removal's Jaccard becomes the exact one.
        let low = estimate.min(exact) - 0.05;
        let v = Verification {
            sketches: ranges,
            size: 16,
            threshold: low,
            band: 0.5,
            exact: None,
        };
        let mut got = found.stars(&order, Some(v)).unwrap();
        assert_eq!(got.undecided, vec![(0, 1, true)]);
        assert_eq!(got.jaccard[1], estimate as f32);
        found
            .patch_jaccards(&got.kept, &mut got.jaccard, &known)
            .unwrap();
        assert_eq!(got.jaccard[1], exact as f32);
        assert!(found
            .patch_jaccards(&got.kept[..1], &mut got.jaccard, &known)
            .is_err());
    }

    #[test]
    fn bad_orders_are_errors() {
        let p = plan(3);
        assert!(stars(&[1, 2], &[[1, 0], [2, 0]], &[0, 0], 3, &p, None).is_err());
        assert!(stars(&[1, 2], &[[1, 0], [2, 0]], &[0, 2], 3, &p, None).is_err());
        assert!(stars(&[1, 2], &[[1, 0]], &[0, 1], 3, &p, None).is_err());
        assert_eq!(
            stars(&[], &[], &[], 3, &p, None).unwrap(),
            Stars {
                kept: vec![],
                jaccard: vec![],
                undecided: vec![],
                checks: 0,
                listed: 0,
            }
        );
    }

    /// The stars of the verified pairs, taken component by component, are those of the corpus.
    #[test]
    fn graph_stars_of_components_are_the_corpus_stars() {
        let mut seed = 3;
        // Fingerprints in chains and families, copies, fingerprint-only stars at k = 3.
        let mut fps = Vec::new();
        let mut x = rng(&mut seed);
        for i in 0..400 {
            if i % 9 == 0 {
                x = rng(&mut seed);
            }
            x ^= 1 << (rng(&mut seed) % 64);
            fps.push(x);
        }
        let n = fps.len();
        let keys: Vec<[u64; 2]> = (0..n as u64).map(|i| [i, 0]).collect();
        let k = 3;
        let mut order: Vec<i64> = (0..n as i64).collect();
        for i in (1..n).rev() {
            order.swap(i, (rng(&mut seed) % (i as u64 + 1)) as usize);
        }
        let want = stars(&fps, &keys, &order, k, &plan(k), None).unwrap();
        // Pairs within k as edges (NaN Jaccard, fingerprints alone), by brute force.
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for i in 0..n {
            for j in i + 1..n {
                if hamming(fps[i], fps[j]) <= k {
                    a.push(i as u32);
                    b.push(j as u32);
                }
            }
        }
        let mut uf = crate::search::pairs::UnionFind::new(n);
        for (&x, &y) in a.iter().zip(&b) {
            uf.union(x as usize, y as usize);
        }
        let comp: Vec<usize> = (0..n).map(|v| uf.find(v)).collect();
        let mut got_kept = vec![-1i64; n];
        let mut got_jac = vec![0f32; n];
        let mut roots: Vec<usize> = comp.clone();
        roots.sort_unstable();
        roots.dedup();
        assert!(roots.len() > 20 && roots.len() < n - 50);
        for root in roots {
            // The component's nodes, numbered apart, in keep order.
            let nodes: Vec<usize> = (0..n).filter(|&v| comp[v] == root).collect();
            let local = |v: usize| nodes.binary_search(&v).unwrap() as u32;
            let sub_order: Vec<i64> = order
                .iter()
                .filter(|&&r| comp[r as usize] == root)
                .map(|&r| i64::from(local(r as usize)))
                .collect();
            let (mut sa, mut sb) = (Vec::new(), Vec::new());
            for (&x, &y) in a.iter().zip(&b) {
                if comp[x as usize] == root {
                    sa.push(local(x as usize));
                    sb.push(local(y as usize));
                }
            }
            let nan = vec![f32::NAN; sa.len()];
            let got = graph_stars(&sub_order, &sa, &sb, &nan).unwrap();
            for (i, &v) in nodes.iter().enumerate() {
                got_kept[v] = nodes[got.kept[i] as usize] as i64;
                got_jac[v] = got.jaccard[i];
            }
        }
        assert!(same(
            &Stars {
                kept: got_kept,
                jaccard: got_jac,
                undecided: Vec::new(),
                checks: 0,
                listed: 0,
            },
            &want
        ));
        assert!(graph_stars(&[0, 1], &[0], &[2], &[1.0]).is_err());
        assert!(graph_stars(&[0, 0], &[0], &[1], &[1.0]).is_err());
        assert!(graph_stars(&[0, 1], &[0], &[1], &[]).is_err());
    }
}
