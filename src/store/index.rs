//! The Hamming-distance index: permuted tables, a map from fingerprints to ids, an insert buffer
//! and tombstones.
//!
//! The index is two [`Segment`]s with the same layout: the large *main* segment and a small
//! *buffer* that takes new entries. Each segment holds its entries sorted by (fingerprint, id),
//! their positions in id order, and one sorted table of permuted distinct fingerprints per table
//! of the plan. A query searches both. When the buffer passes its limit it is merged into the
//! main segment in one linear pass per table; removals from the main segment are tombstones that
//! the next merge drops.

use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;

use rayon::prelude::*;

use crate::error::{try_push, try_with_capacity, Error, Result};
use crate::fingerprint::encoders::mix64;
use crate::fingerprint::hamming::hamming;
use crate::runtime::memory;
use crate::search::cross_search::{across_pairs_bounded, cross_plan};
use crate::search::limits::{check_cross_work, default_work_limit, Bounded};
use crate::search::pairs::Groups;
use crate::search::plan::{check_k, Plan, Workload};
use crate::search::table::{lower_bound, prefetch, prefix_range, radix_sort_top};
use crate::store::index_file::{self, Words};

/// Corpus size the planner assumes when the caller gives none.
pub const DEFAULT_EXPECTED_SIZE: u64 = 1_000_000;

/// Entries sorted by (fingerprint, id) with their tables.
///
/// The positions in id order are built on first use (an explicit id, a removal, a membership
/// test), so an index filled with default ids, which are fresh by construction, never pays
/// their 4 bytes per entry.
#[derive(Default)]
pub struct Segment {
    fps: Words<u64>,
    ids: Words<i64>,
    by_id: OnceLock<Words<u32>>,
    tables: Vec<Words<u64>>,
}

/// Positions of `ids` in ascending id order.
fn id_order(ids: &[i64]) -> Vec<u32> {
    let mut by_id: Vec<u32> = (0..ids.len() as u32).collect();
    if by_id.len() > 1 << 15 {
        by_id.par_sort_unstable_by_key(|&p| ids[p as usize]);
    } else {
        by_id.sort_unstable_by_key(|&p| ids[p as usize]);
    }
    by_id
}

impl Segment {
    fn empty(plan: &Plan) -> Self {
        Segment {
            tables: plan.tables().iter().map(|_| Words::default()).collect(),
            ..Default::default()
        }
    }

    pub fn len(&self) -> usize {
        self.fps.len()
    }

    pub fn is_empty(&self) -> bool {
        self.fps.is_empty()
    }

    /// A segment of the given (fingerprint, id) entries; ids must be unique.
    fn build(plan: &Plan, mut entries: Vec<(u64, i64)>) -> Result<Self> {
        if entries.len() > u32::MAX as usize {
            return Err(Error::invalid(format!(
                "an index holds at most {} entries",
                u32::MAX
            )));
        }
        if entries.len() > 1 << 15 {
            entries.par_sort_unstable();
        } else {
            entries.sort_unstable();
        }
        let fps: Vec<u64> = entries.iter().map(|e| e.0).collect();
        let ids: Vec<i64> = entries.iter().map(|e| e.1).collect();
        drop(entries);
        let mut distinct = fps.clone();
        distinct.dedup();
        let tables = plan
            .tables()
            .par_iter()
            .map(|layout| {
                let mut v: Vec<u64> = distinct
                    .iter()
                    .map(|&x| layout.permutation.apply(x))
                    .collect();
                radix_sort_top(&mut v, 64);
                Words::Owned(v)
            })
            .collect();
        Ok(Segment {
            fps: fps.into(),
            ids: ids.into(),
            by_id: OnceLock::new(),
            tables,
        })
    }

    /// The position of `id` among the entries.
    fn position_of_id(&self, id: i64) -> Option<usize> {
        let by_id = self.by_id();
        let at = by_id.partition_point(|&p| self.id_at(p) < id);
        (at < by_id.len() && self.id_at(by_id[at]) == id).then(|| by_id[at] as usize)
    }

    /// The id at position `p` of the id order. Positions were checked when the file was loaded;
    /// a mapped file rewritten since may hold any value, so an out-of-range one reads as the
    /// largest id rather than panicking (the index then reports the file as changed).
    #[inline]
    fn id_at(&self, p: u32) -> i64 {
        self.ids.get(p as usize).copied().unwrap_or(i64::MAX)
    }

    /// Entries `lo..hi` holding fingerprint `fp`.
    fn range_of(&self, fp: u64) -> (usize, usize) {
        let lo = lower_bound(&self.fps, fp);
        let rest = &self.fps[lo..];
        // Copies are few: gallop from the first.
        let mut step = 1;
        while step <= rest.len() && rest[step - 1] == fp {
            step *= 2;
        }
        let end = step.min(rest.len());
        (
            lo,
            lo + step / 2 + rest[step / 2..end].partition_point(|&x| x == fp),
        )
    }

    /// Ids in ascending order.
    fn sorted_ids(&self) -> impl Iterator<Item = i64> + '_ {
        self.by_id().iter().map(|&p| self.id_at(p))
    }

    fn nbytes(&self) -> usize {
        self.fps.len() * 8
            + self.ids.len() * 8
            + self.by_id.get().map_or(0, |b| b.len() * 4)
            + self.tables.iter().map(|t| t.len() * 8).sum::<usize>()
    }

    /// Whether any array views a loaded file.
    fn is_mapped(&self) -> bool {
        self.fps.is_shared()
            || self.ids.is_shared()
            || self.by_id.get().is_some_and(Words::is_shared)
            || self.tables.iter().any(Words::is_shared)
    }

    /// Positions of the entries in ascending id order, built on first use.
    fn by_id(&self) -> &[u32] {
        self.by_id.get_or_init(|| Words::Owned(id_order(&self.ids)))
    }
}

fn distinct_of(fps: &[u64]) -> Vec<u64> {
    let mut d = fps.to_vec();
    d.dedup();
    d
}

/// `a` without the entries whose ids are in `dropped`, plus `b`; ids of the result are unique
/// when the ids of `b` are not live in `a`.
fn merge(plan: &Plan, a: &Segment, b: &Segment, dropped: &HashSet<i64>) -> Segment {
    let (na, nb) = (a.len(), b.len());
    let live = |i: usize| dropped.is_empty() || !dropped.contains(&a.ids[i]);
    let mut fps = Vec::with_capacity(na + nb);
    let mut ids = Vec::with_capacity(na + nb);
    let mut new_a = vec![u32::MAX; na];
    let mut new_b = vec![0u32; nb];
    let (mut i, mut j) = (0, 0);
    loop {
        while i < na && !live(i) {
            i += 1;
        }
        let take_a = match (i < na, j < nb) {
            (false, false) => break,
            (true, false) => true,
            (false, true) => false,
            (true, true) => (a.fps[i], a.ids[i]) < (b.fps[j], b.ids[j]),
        };
        if take_a {
            new_a[i] = fps.len() as u32;
            fps.push(a.fps[i]);
            ids.push(a.ids[i]);
            i += 1;
        } else {
            new_b[j] = fps.len() as u32;
            fps.push(b.fps[j]);
            ids.push(b.ids[j]);
            j += 1;
        }
    }
    // Id order, if `a` has one: merge the two id orders, mapped to the new positions.
    let merged_by_id = OnceLock::new();
    if a.by_id.get().is_some() {
        merged_by_id.get_or_init(|| Words::Owned(merge_id_orders(a, b, &new_a, &new_b, &ids)));
    }
    drop((new_a, new_b));
    // Distinct fingerprints of `a` that no entry holds any more.
    let new_distinct = distinct_of(&fps);
    let mut removed = Vec::new();
    if !dropped.is_empty() {
        let mut x = 0;
        for fp in distinct_of(&a.fps) {
            while x < new_distinct.len() && new_distinct[x] < fp {
                x += 1;
            }
            if x >= new_distinct.len() || new_distinct[x] != fp {
                removed.push(fp);
            }
        }
    }
    let tables = plan
        .tables()
        .par_iter()
        .enumerate()
        .map(|(t, layout)| {
            let mut gone: Vec<u64> = removed
                .iter()
                .map(|&x| layout.permutation.apply(x))
                .collect();
            gone.sort_unstable();
            let (ta, tb) = (&a.tables[t][..], &b.tables[t][..]);
            let mut out = Vec::with_capacity(new_distinct.len());
            let (mut i, mut j, mut g) = (0, 0, 0);
            loop {
                // Skip the values of `a` that are gone.
                while i < ta.len() {
                    while g < gone.len() && gone[g] < ta[i] {
                        g += 1;
                    }
                    if g < gone.len() && gone[g] == ta[i] {
                        i += 1;
                    } else {
                        break;
                    }
                }
                let v = match (i < ta.len(), j < tb.len()) {
                    (false, false) => break,
                    (true, false) => {
                        i += 1;
                        ta[i - 1]
                    }
                    (false, true) => {
                        j += 1;
                        tb[j - 1]
                    }
                    (true, true) => {
                        if ta[i] < tb[j] {
                            i += 1;
                            ta[i - 1]
                        } else if tb[j] < ta[i] {
                            j += 1;
                            tb[j - 1]
                        } else {
                            i += 1;
                            j += 1;
                            ta[i - 1]
                        }
                    }
                };
                out.push(v);
            }
            Words::Owned(out)
        })
        .collect();
    Segment {
        fps: fps.into(),
        ids: ids.into(),
        by_id: merged_by_id,
        tables,
    }
}

fn merge_id_orders(
    a: &Segment,
    b: &Segment,
    new_a: &[u32],
    new_b: &[u32],
    ids: &[i64],
) -> Vec<u32> {
    let mut by_id = Vec::with_capacity(ids.len());
    let mut pa = a
        .by_id()
        .iter()
        .map(|&p| new_a.get(p as usize).copied().unwrap_or(u32::MAX))
        .filter(|&p| p != u32::MAX)
        .peekable();
    let mut pb = b
        .by_id()
        .iter()
        .map(|&p| new_b.get(p as usize).copied().unwrap_or(u32::MAX))
        .filter(|&p| p != u32::MAX)
        .peekable();
    loop {
        let next = match (pa.peek(), pb.peek()) {
            (None, None) => break,
            (Some(_), None) => pa.next(),
            (None, Some(_)) => pb.next(),
            (Some(&x), Some(&y)) => {
                if ids[x as usize] < ids[y as usize] {
                    pa.next()
                } else {
                    pb.next()
                }
            }
        };
        by_id.extend(next);
    }
    by_id
}

/// Whether any id of `sorted` (ascending) is among the ascending ids of `ids`.
fn first_common(sorted: &[i64], mut other: impl Iterator<Item = i64>) -> Option<i64> {
    let mut cur = other.next()?;
    for &id in sorted {
        while cur < id {
            cur = other.next()?;
        }
        if cur == id {
            return Some(id);
        }
    }
    None
}

/// New entries sorted and laid out in tables, ready to be merged into an index.
pub struct Batch {
    segment: Segment,
    /// Ids not given: the segment holds row numbers, shifted to fresh ids when added.
    defaulted: bool,
}

impl Batch {
    /// Sorts `fingerprints` with their `ids` (or row numbers) and builds their tables.
    pub fn new(plan: &Plan, fingerprints: &[u64], ids: Option<&[i64]>) -> Result<Self> {
        let n = fingerprints.len();
        if let Some(ids) = ids {
            if ids.len() != n {
                return Err(Error::invalid(format!(
                    "ids must have one id per fingerprint: {n} fingerprints, {} ids",
                    ids.len()
                )));
            }
        }
        let entries: Vec<(u64, i64)> = match ids {
            Some(ids) => fingerprints
                .iter()
                .copied()
                .zip(ids.iter().copied())
                .collect(),
            None => fingerprints.iter().copied().zip(0..).collect(),
        };
        Ok(Batch {
            segment: Segment::build(plan, entries)?,
            defaulted: ids.is_none(),
        })
    }
}

/// Bytes a match costs [`Index::query_many`] at its peak: its row and id (8 each) and its
/// distance (1) twice over, since the matches found and the arrays they are joined into are
/// alive together (32.9 bytes a match measured at 100M matches, Python's arrays included).
pub const MATCH_BYTES: u64 = 34;

/// Queries a batch needs at least before [`Index::query_many`] searches them at once.
const BATCH_QUERIES: usize = 1024;

/// The batch search passes over every distinct value of the index (a few times per group of its
/// tables); queries one by one cost a search per table each. The batch search is taken when the
/// queries are at least 1/64 of the index's distinct values.
const BATCH_RATIO: usize = 64;

/// Queries and index entries an estimate of the matches samples at most (about 16 million
/// comparisons); below it the count is exact.
const MATCH_SAMPLE: usize = 4096;

/// Matches found in the samples before a refusal may rest on the estimate, and how far past the
/// memory left it must reach (as for `find_all`, [`crate::search::pairs::estimate_pairs`]).
const SURE_HITS: u64 = 10_000;
const SURE_FACTOR: u64 = 4;

const QUERY_REMEDY: &str =
    "query fewer fingerprints at once, or lower k (in Python, max_pairs=None lifts the limit)";

/// What bounds a call of [`Index::query_many`]: the pair limit and the memory left.
struct Limit {
    k: u32,
    queries: usize,
    max_pairs: Option<u64>,
    memory: Option<u64>,
}

impl Limit {
    fn new(k: u32, queries: usize, max_pairs: Option<u64>, memory: Option<u64>) -> Self {
        Limit {
            k,
            queries,
            max_pairs,
            memory,
        }
    }

    /// The matches the arrays can hold in the memory left, where that binds before the limit.
    fn room(&self) -> Option<u64> {
        self.memory
            .map(|m| m / MATCH_BYTES)
            .filter(|&r| self.max_pairs.is_none_or(|m| r < m))
    }

    /// The most matches a call may find: the limit, or fewer where memory binds.
    fn cap(&self) -> Option<u64> {
        self.room().or(self.max_pairs)
    }

    /// The work limit of a batch search over `values` distinct values, with a pair limit.
    fn work(&self, values: usize) -> Option<u64> {
        self.max_pairs.map(|_| default_work_limit(values))
    }

    /// Out of memory at once, without a limit, where an estimate of the matches (`estimate()`:
    /// the estimate and the matches its samples found) passes the memory left by far.
    fn refused_early(&self, estimate: impl FnOnce() -> (u64, u64)) -> Option<Error> {
        // With a limit, a refusal names the count of the limit, found by the search.
        if self.max_pairs.is_some() {
            return None;
        }
        let (room, memory) = (self.room()?, self.memory?);
        let (count, hits) = estimate();
        (hits >= SURE_HITS && count / SURE_FACTOR > room)
            .then(|| self.past_memory(count, "about ", memory))
    }

    fn past_memory(&self, count: u64, how: &str, memory: u64) -> Error {
        Error::OutOfMemory(format!(
            "{how}{} matches within k={} of {} queries need {} at their peak ({MATCH_BYTES} \
             bytes a match), more than the {} of memory left; query fewer fingerprints at once",
            crate::error::thousands(count),
            self.k,
            crate::error::thousands(self.queries as u64),
            memory::readable(count.saturating_mul(MATCH_BYTES)),
            memory::readable(memory)
        ))
    }

    /// The refusal of `count` matches (`at_least`: a lower bound), past the cap.
    fn refusal(&self, count: u64, at_least: bool) -> Error {
        match (self.max_pairs, self.memory) {
            (Some(limit), _) if count > limit => self.too_many(count, at_least, limit),
            (_, Some(memory)) => {
                self.past_memory(count, if at_least { "at least " } else { "" }, memory)
            }
            (limit, None) => self.too_many(count, at_least, limit.unwrap_or(u64::MAX)),
        }
    }

    fn too_many(&self, count: u64, at_least: bool, limit: u64) -> Error {
        Error::TooManyPairs {
            count,
            at_least,
            limit,
            what: format!("matches within k={} of {} queries", self.k, self.queries),
            remedy: "query fewer fingerprints at once (in Python, raise max_pairs, or None \
                     for no limit)"
                .into(),
        }
    }
}

/// A Hamming-distance index over (fingerprint, id) entries.
pub struct Index {
    k: u32,
    plan: Plan,
    main: Segment,
    buffer: Segment,
    tombstones: HashSet<i64>,
    next_id: i64,
    limits: Option<(usize, usize)>,
    /// The mapped file the main segment views, checked around every use.
    source: Option<index_file::Source>,
}

impl Index {
    /// An empty index answering queries within `k`, with `plan` or one chosen for `expected`
    /// entries.
    pub fn new(k: i64, plan: Option<Plan>, expected: Option<u64>) -> Result<Self> {
        let k = check_k(k)?;
        let plan = match plan {
            Some(p) => p,
            None => Plan::choose(
                i64::from(k),
                expected.unwrap_or(DEFAULT_EXPECTED_SIZE),
                None,
                Workload::Query,
            )?,
        };
        if plan.k() < k {
            return Err(Error::invalid(format!(
                "plan is built for k={} and cannot answer queries at k={k}; build it with k >= {k}",
                plan.k()
            )));
        }
        Ok(Index {
            k,
            main: Segment::empty(&plan),
            buffer: Segment::empty(&plan),
            plan,
            tombstones: HashSet::new(),
            next_id: 0,
            limits: None,
            source: None,
        })
    }

    pub fn k(&self) -> u32 {
        self.k
    }

    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// Whether the main segment views a memory-mapped file.
    pub fn is_mapped(&self) -> bool {
        self.source.is_some()
    }

    /// [`Error::Changed`] if the mapped file under the index changed since it was loaded.
    pub fn check_file(&self) -> Result<()> {
        self.source
            .as_ref()
            .map_or(Ok(()), index_file::Source::check)
    }

    /// Runs `f` on the index, checking a mapped file before and after: an answer is returned
    /// only if the file was the one loaded throughout. A panic while the file changed (data
    /// read from a file rewritten in place) is that error too, never a panic.
    pub fn guarded<R>(&self, f: impl FnOnce(&Index) -> R) -> Result<R> {
        if self.source.is_none() {
            return Ok(f(self));
        }
        self.check_file()?;
        let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(self)));
        self.check_file()?;
        match out {
            Ok(r) => Ok(r),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }

    /// [`Index::guarded`] for a change to the index. Once the main segment no longer views
    /// the file (merged into new arrays), the file is not checked any more.
    pub fn guarded_mut<R>(&mut self, f: impl FnOnce(&mut Index) -> R) -> Result<R> {
        if self.source.is_none() {
            return Ok(f(self));
        }
        self.check_file()?;
        let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(self)));
        self.check_file()?;
        if !self.main.is_mapped() {
            self.source = None;
        }
        match out {
            Ok(r) => Ok(r),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }

    /// Live entries.
    pub fn len(&self) -> usize {
        self.main.len() - self.tombstones.len() + self.buffer.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes held by the index's arrays.
    pub fn nbytes(&self) -> usize {
        self.main.nbytes() + self.buffer.nbytes() + self.tombstones.len() * 16
    }

    /// Sets the buffer and tombstone limits (for tests); `None` restores the defaults.
    pub fn set_limits(&mut self, limits: Option<(usize, usize)>) {
        self.limits = limits;
    }

    fn buffer_limit(&self) -> usize {
        match self.limits {
            Some((b, _)) => b,
            None => (self.main.len() / 16).clamp(1024, 1 << 16),
        }
    }

    fn tombstone_limit(&self) -> usize {
        match self.limits {
            Some((_, t)) => t,
            None => (self.main.len() / 8).max(1024),
        }
    }

    pub fn contains(&self, id: i64) -> bool {
        self.buffer.position_of_id(id).is_some()
            || (self.main.position_of_id(id).is_some() && !self.tombstones.contains(&id))
    }

    /// Adds entries; `ids` default to running numbers after the largest id ever added. Nothing
    /// is added if any id is repeated or already present.
    pub fn add(&mut self, fingerprints: &[u64], ids: Option<&[i64]>) -> Result<()> {
        let batch = Batch::new(&self.plan, fingerprints, ids)?;
        self.add_batch(batch)
    }

    /// Adds a batch prepared by [`Batch::new`] (which needs no access to the index, so a caller
    /// can prepare it before taking a lock). Nothing is added if an id is repeated or present.
    pub fn add_batch(&mut self, batch: Batch) -> Result<()> {
        let Batch {
            mut segment,
            defaulted,
        } = batch;
        let n = segment.len();
        if n == 0 {
            return Ok(());
        }
        if self.len() + n > u32::MAX as usize {
            return Err(Error::invalid(format!(
                "an index holds at most {} entries",
                u32::MAX
            )));
        }
        let sorted: Vec<i64> = if defaulted {
            // Row numbers become ids after the largest id ever added: a shift by a constant,
            // which keeps the entries' (fingerprint, id) order.
            let first = self.next_id;
            first.checked_add(n as i64).ok_or_else(|| {
                Error::invalid("default ids would pass 2**63-1; pass ids explicitly")
            })?;
            match &mut segment.ids {
                Words::Owned(ids) => ids.iter_mut().for_each(|id| *id += first),
                shared => *shared = Words::Owned(shared.iter().map(|&id| id + first).collect()),
            }
            (first..first + n as i64).collect()
        } else {
            segment.sorted_ids().collect()
        };
        let batch = segment;
        if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
            return Err(Error::invalid(format!("ids holds {} more than once", w[0])));
        }
        // Default ids are past every id ever added, so only explicit ones can clash.
        let present = if defaulted {
            None
        } else if sorted.len() * 32 < self.main.len() {
            sorted.iter().copied().find(|&id| self.contains(id))
        } else {
            first_common(&sorted, self.buffer.sorted_ids()).or_else(|| {
                let tomb = &self.tombstones;
                first_common(
                    &sorted,
                    self.main.sorted_ids().filter(|id| !tomb.contains(id)),
                )
            })
        };
        if let Some(id) = present {
            return Err(Error::invalid(format!("id {id} is already in the index")));
        }
        let largest = sorted[sorted.len() - 1];
        self.next_id = self.next_id.max(largest.saturating_add(1));
        let combined = if self.buffer.is_empty() {
            batch
        } else {
            merge(&self.plan, &self.buffer, &batch, &HashSet::new())
        };
        if combined.len() > self.buffer_limit() {
            self.buffer = Segment::empty(&self.plan);
            if self.main.is_empty() && self.tombstones.is_empty() {
                self.main = combined;
            } else {
                self.main = merge(&self.plan, &self.main, &combined, &self.tombstones);
                self.tombstones.clear();
            }
        } else {
            self.buffer = combined;
        }
        Ok(())
    }

    /// Removes entries by id. If an id is not in the index nothing is removed and the error is
    /// [`Error::UnknownId`] with that id.
    pub fn remove(&mut self, ids: &[i64]) -> Result<()> {
        let mut ids = ids.to_vec();
        ids.sort_unstable();
        ids.dedup();
        if let Some(&missing) = ids.iter().find(|&&id| !self.contains(id)) {
            return Err(Error::UnknownId(missing));
        }
        let mut from_buffer = HashSet::new();
        for &id in &ids {
            if self.buffer.position_of_id(id).is_some() {
                from_buffer.insert(id);
            } else {
                self.tombstones.insert(id);
            }
        }
        if !from_buffer.is_empty() {
            let kept = merge(
                &self.plan,
                &self.buffer,
                &Segment::empty(&self.plan),
                &from_buffer,
            );
            self.buffer = kept;
        }
        if self.tombstones.len() > self.tombstone_limit() {
            self.compact();
        }
        Ok(())
    }

    /// Merges the buffer into the main segment and drops the tombstones.
    pub fn compact(&mut self) {
        if self.buffer.is_empty() && self.tombstones.is_empty() {
            return;
        }
        self.main = merge(&self.plan, &self.main, &self.buffer, &self.tombstones);
        self.buffer = Segment::empty(&self.plan);
        self.tombstones.clear();
    }

    /// (distance, id) of every entry within k of `query`, sorted.
    pub fn query_into(&self, query: u64, out: &mut Vec<(u8, i64)>) {
        let tables = self.plan.tables();
        let permuted: Vec<u64> = tables.iter().map(|l| l.permutation.apply(query)).collect();
        for (t, layout) in tables.iter().enumerate() {
            let low = if layout.prefix_bits >= 64 {
                0
            } else {
                u64::MAX >> layout.prefix_bits
            };
            prefetch(&self.main.tables[t], permuted[t] & !low);
        }
        for (t, layout) in tables.iter().enumerate() {
            let pq = permuted[t];
            for (segment, is_main) in [(&self.main, true), (&self.buffer, false)] {
                if segment.is_empty() {
                    continue;
                }
                let table = &segment.tables[t][..];
                let (lo, hi) = prefix_range(table, pq, layout.prefix_bits);
                for &c in &table[lo..hi] {
                    let d = hamming(c, pq);
                    if d > self.k {
                        continue;
                    }
                    let fp = layout.permutation.invert(c);
                    let diff = fp ^ query;
                    // Found already by an earlier table whose prefix it shares.
                    if tables[..t].iter().any(|e| diff & e.prefix_mask == 0) {
                        continue;
                    }
                    let (a, b) = segment.range_of(fp);
                    for &id in &segment.ids[a..b] {
                        if is_main && !self.tombstones.is_empty() && self.tombstones.contains(&id) {
                            continue;
                        }
                        out.push((d as u8, id));
                    }
                }
            }
        }
        out.sort_unstable();
    }

    pub fn query(&self, query: u64) -> Vec<(u8, i64)> {
        let mut out = Vec::new();
        self.query_into(query, &mut out);
        out
    }

    /// (query row, id, distance) for many queries, in query order (each query's matches by
    /// distance, then id), parallel over queries. More than `max_pairs` matches (None: no
    /// limit) is [`Error::TooManyPairs`]; more than the memory left holds
    /// ([`memory::available`], [`MATCH_BYTES`] a match) is [`Error::OutOfMemory`], as soon as
    /// that is known. A batch of many queries is searched at once ([`Index::query_batch`]);
    /// a few, one by one ([`Index::query_into`]).
    pub fn query_many(
        &self,
        queries: &[u64],
        max_pairs: Option<u64>,
    ) -> Result<(Vec<i64>, Vec<i64>, Vec<u8>)> {
        self.query_many_in(queries, max_pairs, memory::available())
    }

    /// [`Index::query_many`] with `memory` bytes left to allocate (None: unknown).
    pub fn query_many_in(
        &self,
        queries: &[u64],
        max_pairs: Option<u64>,
        memory: Option<u64>,
    ) -> Result<(Vec<i64>, Vec<i64>, Vec<u8>)> {
        let limit = Limit::new(self.k, queries.len(), max_pairs, memory);
        if let Some(estimate) = limit.refused_early(|| self.estimate_matches(queries)) {
            return Err(estimate);
        }
        // The batch search costs a pass over the index's distinct values per group of its
        // tables: worth it once there are queries enough to share that pass.
        let values = self.main.tables[0].len() + self.buffer.tables[0].len();
        if queries.len() >= BATCH_QUERIES && queries.len().saturating_mul(BATCH_RATIO) >= values {
            self.query_batch(queries, &limit)
        } else {
            self.query_each(queries, &limit)
        }
    }

    /// An estimate of the matches of `queries`: those of a sample of about [`MATCH_SAMPLE`]
    /// queries against one of about as many entries, scaled up; with the matches found in the
    /// samples, which say how sure it is.
    fn estimate_matches(&self, queries: &[u64]) -> (u64, u64) {
        let live = |s: &Segment| s.fps.len();
        let entries = live(&self.main) + live(&self.buffer);
        let pick = |n: usize| -> u64 {
            if n <= MATCH_SAMPLE {
                u64::MAX
            } else {
                ((MATCH_SAMPLE as f64 / n as f64) * 2f64.powi(64)) as u64
            }
        };
        let (cut_q, cut_e) = (pick(queries.len()), pick(entries));
        let kept = |r: usize, cut: u64| cut == u64::MAX || mix64(r as u64 ^ crate::PI_SEED) < cut;
        let q: Vec<u64> = (0..queries.len())
            .filter(|&r| kept(r, cut_q))
            .map(|r| queries[r])
            .collect();
        let e: Vec<u64> = (0..entries)
            .filter(|&r| kept(r, cut_e))
            .map(|r| {
                if r < self.main.fps.len() {
                    self.main.fps[r]
                } else {
                    self.buffer.fps[r - self.main.fps.len()]
                }
            })
            .collect();
        if q.is_empty() || e.is_empty() {
            return (0, 0);
        }
        let k = self.k;
        let hits: u64 = q
            .par_iter()
            .map(|&a| e.iter().filter(|&&b| hamming(a, b) <= k).count() as u64)
            .sum();
        let scale = (queries.len() as f64 / q.len() as f64) * (entries as f64 / e.len() as f64);
        (((hits as f64) * scale).min(u64::MAX as f64) as u64, hits)
    }

    /// The queries one by one ([`Index::query_into`]): matches are counted as they are found;
    /// past the limit every worker stops, so the refusal names a lower bound of their number
    /// (found in bounded memory and time) unless every query was answered.
    fn query_each(&self, queries: &[u64], limit: &Limit) -> Result<(Vec<i64>, Vec<i64>, Vec<u8>)> {
        let cap = limit.cap();
        let total = AtomicU64::new(0);
        let over = AtomicBool::new(false);
        // Whether a query was left unanswered: the count is then a lower bound.
        let stopped = AtomicBool::new(false);
        let run = |(c, chunk): (usize, &[u64])| -> Result<(Vec<i64>, Vec<i64>, Vec<u8>)> {
            let mut rows = Vec::new();
            let mut ids = Vec::new();
            let mut ds = Vec::new();
            let mut found = Vec::new();
            for (r, &q) in chunk.iter().enumerate() {
                // One query of a dense index compares many candidates: poll before each.
                crate::runtime::interrupt::check()?;
                if over.load(Ordering::Relaxed) {
                    stopped.store(true, Ordering::Relaxed);
                    break;
                }
                found.clear();
                self.query_into(q, &mut found);
                let now =
                    total.fetch_add(found.len() as u64, Ordering::Relaxed) + found.len() as u64;
                if cap.is_some_and(|m| now > m) {
                    over.store(true, Ordering::Relaxed);
                }
                if over.load(Ordering::Relaxed) {
                    rows = Vec::new();
                    ids = Vec::new();
                    ds = Vec::new();
                    if r + 1 < chunk.len() {
                        stopped.store(true, Ordering::Relaxed);
                    }
                    break;
                }
                for &(d, id) in &found {
                    try_push(&mut rows, (c * 1024 + r) as i64, "matches")?;
                    try_push(&mut ids, id, "matches")?;
                    try_push(&mut ds, d, "matches")?;
                }
            }
            Ok((rows, ids, ds))
        };
        let parts: Vec<_> = if queries.len() > 2048 {
            queries.par_chunks(1024).enumerate().map(run).collect()
        } else {
            queries.chunks(1024).enumerate().map(run).collect()
        };
        crate::runtime::interrupt::check()?;
        let count = total.load(Ordering::Relaxed);
        if cap.is_some_and(|m| count > m) {
            return Err(limit.refusal(count, stopped.load(Ordering::Relaxed)));
        }
        let parts = parts.into_iter().collect::<Result<Vec<_>>>()?;
        let total = parts.iter().map(|p| p.0.len()).sum();
        let mut rows = try_with_capacity(total, "matches (rows)")?;
        let mut ids = try_with_capacity(total, "matches (ids)")?;
        let mut ds = try_with_capacity(total, "matches (distances)")?;
        for (r, i, d) in parts {
            rows.extend(r);
            ids.extend(i);
            ds.extend(d);
        }
        Ok((rows, ids, ds))
    }

    /// The live ids of the entries holding `fp`, main segment first, each once.
    fn ids_of(&self, fp: u64, mut each: impl FnMut(i64)) {
        let (a, b) = self.main.range_of(fp);
        for &id in &self.main.ids[a..b] {
            if self.tombstones.is_empty() || !self.tombstones.contains(&id) {
                each(id);
            }
        }
        let (a, b) = self.buffer.range_of(fp);
        self.buffer.ids[a..b].iter().for_each(|&id| each(id));
    }

    /// The index's distinct values with a live entry, ascending.
    fn live_values(&self) -> Vec<u64> {
        let live = |s: &Segment, tombstones: &HashSet<i64>| -> Vec<u64> {
            let mut out: Vec<u64> = Vec::new();
            for (&fp, &id) in s.fps.iter().zip(s.ids.iter()) {
                if out.last() != Some(&fp) && (tombstones.is_empty() || !tombstones.contains(&id)) {
                    out.push(fp);
                }
            }
            out
        };
        let (main, buffer) = (
            live(&self.main, &self.tombstones),
            live(&self.buffer, &HashSet::new()),
        );
        let mut all = main;
        all.extend(buffer);
        all.par_sort_unstable();
        all.dedup();
        all
    }

    /// The queries at once: their distinct values against the index's by the cross search
    /// ([`across_pairs_bounded`], on its own plan: the index's tables are not used), which stops
    /// past the limit, then each distinct query's matches sorted once and given to each of its
    /// rows. The same answer as [`Index::query_each`].
    fn query_batch(&self, queries: &[u64], limit: &Limit) -> Result<(Vec<i64>, Vec<i64>, Vec<u8>)> {
        let k = self.k;
        let groups = Groups::new(queries);
        let old = self.live_values();
        crate::runtime::interrupt::check()?;
        let plan = cross_plan(k, old.len() as u64, groups.distinct.len() as u64)?;
        if let Some(work) = limit.work(old.len() + groups.distinct.len()) {
            check_cross_work(&groups.distinct, &old, k, &plan, Some(work), QUERY_REMEDY)?;
        }
        // Every distinct pair is at least one match: a budget of matches bounds them.
        let cap = limit.cap();
        let mut pairs = match across_pairs_bounded(&groups.distinct, &old, k, &plan, cap)? {
            Bounded::Within(pairs) => pairs,
            Bounded::Over(count) | Bounded::AtLeast(count) => {
                return Err(limit.refusal(count, true))
            }
        };
        pairs.par_sort_unstable();
        crate::runtime::interrupt::check()?;
        let mut starts = vec![0usize; groups.distinct.len() + 1];
        for &(a, _) in &pairs {
            starts[a as usize + 1] += 1;
        }
        for g in 0..groups.distinct.len() {
            starts[g + 1] += starts[g];
        }
        // Each distinct query's matches, counted, then (within the limit) listed and sorted.
        let counts: Vec<u64> = (0..groups.distinct.len())
            .into_par_iter()
            .map(|g| {
                let mut n = 0u64;
                for &(_, b) in &pairs[starts[g]..starts[g + 1]] {
                    self.ids_of(old[b as usize], |_| n += 1);
                }
                n
            })
            .collect();
        let total = counts.iter().enumerate().fold(0u64, |t, (g, &n)| {
            t.saturating_add(n.saturating_mul(groups.rows_of(g).len() as u64))
        });
        if cap.is_some_and(|m| total > m) {
            return Err(limit.refusal(total, false));
        }
        let distinct_matches = counts.iter().sum::<u64>() as usize;
        let mut lists: Vec<(u8, i64)> = try_with_capacity(distinct_matches, "matches")?;
        let mut list_start = Vec::with_capacity(groups.distinct.len() + 1);
        for g in 0..groups.distinct.len() {
            list_start.push(lists.len());
            let q = groups.distinct[g];
            for &(_, b) in &pairs[starts[g]..starts[g + 1]] {
                let v = old[b as usize];
                let d = hamming(q, v) as u8;
                self.ids_of(v, |id| lists.push((d, id)));
            }
        }
        list_start.push(lists.len());
        drop(pairs);
        let mut segments: Vec<&mut [(u8, i64)]> = Vec::new();
        let mut rest = &mut lists[..];
        for g in 0..groups.distinct.len() {
            let (head, tail) = rest.split_at_mut(list_start[g + 1] - list_start[g]);
            segments.push(head);
            rest = tail;
        }
        segments.par_iter_mut().for_each(|s| s.sort_unstable());
        drop(segments);
        crate::runtime::interrupt::check()?;
        let total = total as usize;
        let mut rows = try_with_capacity(total, "matches (rows)")?;
        let mut ids = try_with_capacity(total, "matches (ids)")?;
        let mut ds = try_with_capacity(total, "matches (distances)")?;
        for (r, &g) in groups.of_rows().iter().enumerate() {
            let list = &lists[list_start[g as usize]..list_start[g as usize + 1]];
            rows.extend(std::iter::repeat_n(r as i64, list.len()));
            ids.extend(list.iter().map(|m| m.1));
            ds.extend(list.iter().map(|m| m.0));
        }
        Ok((rows, ids, ds))
    }

    /// Writes the index to one file atomically.
    pub fn save(&self, path: &Path) -> Result<()> {
        let merged;
        let seg = if self.buffer.is_empty() && self.tombstones.is_empty() {
            &self.main
        } else {
            merged = merge(&self.plan, &self.main, &self.buffer, &self.tombstones);
            &merged
        };
        // The file holds the id order; build it for the file only if the index has none.
        let built;
        let by_id: &[u32] = match seg.by_id.get() {
            Some(b) => b,
            None => {
                built = id_order(&seg.ids);
                &built
            }
        };
        index_file::save(
            path,
            &index_file::ToStore {
                k: self.k,
                plan: &self.plan,
                next_id: self.next_id,
                fps: &seg.fps,
                ids: &seg.ids,
                by_id,
                tables: seg.tables.iter().map(|t| &t[..]).collect(),
            },
        )
    }

    /// Opens a saved index, memory-mapped or read into memory.
    pub fn load(path: &Path, mmap: bool) -> Result<Self> {
        let s = index_file::load(path, mmap)?;
        let main = Segment {
            fps: s.fps,
            ids: s.ids,
            by_id: OnceLock::from(s.by_id),
            tables: s.tables,
        };
        Ok(Index {
            k: s.k,
            buffer: Segment::empty(&s.plan),
            plan: s.plan,
            main,
            tombstones: HashSet::new(),
            next_id: s.next_id,
            limits: None,
            source: s.source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::xorshift64 as rng;
    use std::collections::BTreeMap;

    fn brute(model: &BTreeMap<i64, u64>, q: u64, k: u32) -> Vec<(u8, i64)> {
        let mut v: Vec<(u8, i64)> = model
            .iter()
            .filter(|(_, &f)| hamming(f, q) <= k)
            .map(|(&id, &f)| (hamming(f, q) as u8, id))
            .collect();
        v.sort_unstable();
        v
    }

    #[test]
    fn query_many_refuses_more_matches_than_its_limit_naming_the_count() {
        let mut index = Index::new(3, Some(Plan::blocks(4, 3).unwrap()), None).unwrap();
        index.add(&vec![5u64; 3000], None).unwrap();
        let queries = vec![5u64 ^ 0b11; 2500]; // every query matches every entry, 2 bits away
        let all = 3000 * 2500;
        match index.query_many(&queries, Some(all - 1)) {
            Err(Error::TooManyPairs { count, limit, .. }) => {
                assert_eq!((count, limit), (all, all - 1))
            }
            other => panic!("expected TooManyPairs, got {:?}", other.map(|r| r.0.len())),
        }
        let (rows, ids, ds) = index.query_many(&queries, Some(all)).unwrap();
        assert_eq!(
            (rows.len() as u64, ids.len(), ds.len()),
            (all, all as usize, all as usize)
        );
        assert!(ds.iter().all(|&d| d == 2));
        assert_eq!(index.query_many(&queries, None).unwrap().0, rows);
    }

    /// (row, id, distance) of every query against the live entries of `model`, by brute force,
    /// in the order query_many gives them.
    fn brute_many(model: &BTreeMap<i64, u64>, queries: &[u64], k: u32) -> Matches {
        let mut out = (Vec::new(), Vec::new(), Vec::new());
        for (r, &q) in queries.iter().enumerate() {
            for (d, id) in brute(model, q, k) {
                out.0.push(r as i64);
                out.1.push(id);
                out.2.push(d);
            }
        }
        out
    }

    type Matches = (Vec<i64>, Vec<i64>, Vec<u8>);

    #[test]
    fn the_batch_search_answers_as_the_queries_one_by_one() {
        let mut s = 41u64;
        let k = 4u32;
        let mut index = Index::new(4, Some(Plan::blocks(6, 4).unwrap()), None).unwrap();
        index.set_limits(Some((300, 50)));
        let mut model = BTreeMap::new();
        let bases: Vec<u64> = (0..200).map(|_| rng(&mut s)).collect();
        let near = |s: &mut u64| {
            let mut x = bases[(rng(s) % 200) as usize];
            for _ in 0..rng(s) % 6 {
                x ^= 1 << (rng(s) % 64);
            }
            x
        };
        // Adds `count` entries near the bases, then removes `take` whose id is `rem` mod `modulo`.
        let mut round = |count: usize, modulo: i64, rem: i64, take: usize| {
            let fps: Vec<u64> = (0..count).map(|_| near(&mut s)).collect();
            let first = index.next_id;
            index.add(&fps, None).unwrap();
            for (i, &f) in fps.iter().enumerate() {
                model.insert(first + i as i64, f);
            }
            let gone: Vec<i64> = model
                .keys()
                .copied()
                .filter(|id| id % modulo == rem)
                .take(take)
                .collect();
            index.remove(&gone).unwrap();
            gone.iter().for_each(|id| {
                model.remove(id);
            });
        };
        for _ in 0..6 {
            // Copies among the entries, a buffer and tombstones.
            round(500, 7, 3, 40);
        }
        // Last, a batch small enough to stay in the buffer, and removals from the main segment.
        round(100, 5, 1, 5);
        assert!(
            !index.buffer.is_empty() && !index.tombstones.is_empty(),
            "{} {}",
            index.buffer.len(),
            index.tombstones.len()
        );
        // Queries with copies, some far from everything.
        let mut queries: Vec<u64> = (0..3000).map(|_| near(&mut s)).collect();
        queries.extend((0..300).map(|_| rng(&mut s)));
        queries.extend_from_within(..500);
        let want = brute_many(&model, &queries, k);
        assert!(want.0.len() > 5000, "{}", want.0.len());
        let limit = Limit::new(k, queries.len(), None, None);
        assert_eq!(index.query_batch(&queries, &limit).unwrap(), want);
        assert_eq!(index.query_each(&queries, &limit).unwrap(), want);
        assert_eq!(index.query_many(&queries, None).unwrap(), want);
        // A limit of matches: the exact count where it is counted, else a lower bound.
        let n = want.0.len() as u64;
        let limit = Limit::new(k, queries.len(), Some(n), None);
        assert_eq!(index.query_batch(&queries, &limit).unwrap(), want);
        for budget in [n - 1, n / 3] {
            let limit = Limit::new(k, queries.len(), Some(budget), None);
            match index.query_batch(&queries, &limit) {
                Err(Error::TooManyPairs { count, limit, .. }) => {
                    assert!(count > budget && count <= n && limit == budget, "{count}")
                }
                other => panic!("expected TooManyPairs, got {:?}", other.map(|r| r.0.len())),
            }
        }
    }

    #[test]
    fn query_many_refuses_what_the_memory_left_cannot_hold() {
        let mut index = Index::new(8, None, Some(5000)).unwrap();
        let mut s = 3u64;
        // Entries sharing their top 44 bits: about a quarter of all pairs within k = 8.
        let dense: Vec<u64> = (0..5000)
            .map(|_| 0xABCD_E000_0000_0000 | (rng(&mut s) >> 44))
            .collect();
        index.add(&dense, None).unwrap();
        let memory = MATCH_BYTES * 100_000;
        for queries in [&dense[..], &dense[..100]] {
            match index.query_many_in(queries, None, Some(memory)) {
                Err(Error::OutOfMemory(message)) => {
                    assert!(message.contains("matches within k=8"), "{message}")
                }
                other => panic!("expected OutOfMemory, got {:?}", other.map(|r| r.0.len())),
            }
        }
        // On the estimate, before any search, where the samples are sure of it.
        let (estimate, hits) = index.estimate_matches(&dense);
        assert!(
            hits >= SURE_HITS && estimate / SURE_FACTOR > 100_000,
            "{estimate}"
        );
        let limit = Limit::new(8, dense.len(), None, Some(memory));
        assert!(limit.refused_early(|| (estimate, hits)).is_some());
        // What fits is found, the same with or without a memory figure.
        let few = &dense[..10];
        assert_eq!(
            index.query_many_in(few, None, Some(memory)).unwrap(),
            index
                .query_each(few, &Limit::new(8, 10, None, None))
                .unwrap()
        );
    }

    #[test]
    fn add_remove_query_against_a_model() {
        let mut s = 99u64;
        for limits in [None, Some((3, 2)), Some((50, 10))] {
            let mut index = Index::new(3, Some(Plan::blocks(5, 3).unwrap()), None).unwrap();
            index.set_limits(limits);
            let mut model = BTreeMap::new();
            let bases: Vec<u64> = (0..20).map(|_| rng(&mut s)).collect();
            let mut next = 0i64;
            for round in 0..60 {
                let n = (rng(&mut s) % 20) as usize;
                let fps: Vec<u64> = (0..n)
                    .map(|_| {
                        bases[(rng(&mut s) % 20) as usize]
                            ^ (1 << (rng(&mut s) % 64))
                            ^ (1 << (rng(&mut s) % 64))
                    })
                    .collect();
                index.add(&fps, None).unwrap();
                for f in fps {
                    model.insert(next, f);
                    next += 1;
                }
                if round % 3 == 0 {
                    let ids: Vec<i64> = model
                        .keys()
                        .copied()
                        .filter(|id| id % 3 == round % 2)
                        .take(7)
                        .collect();
                    index.remove(&ids).unwrap();
                    for id in ids {
                        model.remove(&id);
                    }
                }
                assert_eq!(index.len(), model.len());
                for &b in &bases[..5] {
                    assert_eq!(index.query(b), brute(&model, b, 3));
                }
            }
            assert!(index
                .add(&[1], Some(&[*model.keys().next().unwrap()]))
                .is_err());
            assert!(index.add(&[1, 2], Some(&[-5, -5])).is_err());
            assert!(matches!(
                index.remove(&[i64::MIN]),
                Err(Error::UnknownId(i64::MIN))
            ));
        }
    }

    #[test]
    fn save_load_round_trip_and_corruption() {
        let dir = std::env::temp_dir().join(format!("neardup-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("index.ndx");
        let mut s = 5u64;
        let fps: Vec<u64> = (0..3000)
            .map(|i| if i % 3 == 0 { 77 } else { rng(&mut s) })
            .collect();
        let mut index = Index::new(3, None, Some(3000)).unwrap();
        index.add(&fps[..2000], None).unwrap();
        index.add(&fps[2000..], None).unwrap();
        index.remove(&[1, 2, 3]).unwrap();
        index.save(&path).unwrap();
        for mmap in [false, true] {
            let loaded = Index::load(&path, mmap).unwrap();
            assert_eq!(loaded.len(), index.len());
            for &q in fps.iter().step_by(37) {
                assert_eq!(loaded.query(q), index.query(q));
            }
        }
        let good = std::fs::read(&path).unwrap();
        let bad_path = dir.join("bad.ndx");
        let mut cases: Vec<Vec<u8>> = vec![
            good[..good.len() - 1].to_vec(),
            good[..good.len() / 2].to_vec(),
            good[..8].to_vec(),
            good[..3].to_vec(),
            b"PK\x03\x04 this is a zip file, honest".to_vec(),
        ];
        for pos in [0, 9, 20, 30, 100, 200, good.len() / 2, good.len() - 3] {
            let mut b = good.clone();
            b[pos] ^= 0x10;
            cases.push(b);
        }
        let mut newer = good.clone();
        newer[8] = 2;
        cases.push(newer);
        for (c, bytes) in cases.iter().enumerate() {
            std::fs::write(&bad_path, bytes).unwrap();
            for mmap in [false, true] {
                match Index::load(&bad_path, mmap) {
                    Err(Error::Format { .. }) => {}
                    Err(e) => panic!("case {c}: {e}"),
                    Ok(_) => panic!("case {c} loaded"),
                }
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_mapped_file_changed_in_place_is_refused_by_every_guarded_call() {
        let dir = std::env::temp_dir().join(format!("neardup-changed-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("index.ndx");
        let fps: Vec<u64> = (0..5000u64)
            .map(|i| i.wrapping_mul(crate::GOLDEN_GAMMA))
            .collect();
        let mut index = Index::new(3, None, Some(5000)).unwrap();
        index.add(&fps, None).unwrap();
        index.save(&path).unwrap();
        let mut mapped = Index::load(&path, true).unwrap();
        assert!(mapped.is_mapped() && !Index::load(&path, false).unwrap().is_mapped());
        assert_eq!(mapped.guarded(|ix| ix.query(fps[9])).unwrap(), vec![(0, 9)]);
        let len = std::fs::metadata(&path).unwrap().len();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(len / 2)
            .unwrap();
        for result in [
            mapped.guarded(|ix| ix.query(fps[9]).len()),
            mapped.guarded(|ix| usize::from(ix.contains(9))),
            mapped.guarded_mut(|ix| ix.remove(&[9]).map_or(0, |()| 1)),
            mapped.check_file().map(|()| 0),
        ] {
            match result {
                Err(Error::Changed(message)) => assert!(message.contains("index.ndx"), "{message}"),
                other => panic!(
                    "expected Changed, got {:?}",
                    other.map_err(|e| e.to_string())
                ),
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
