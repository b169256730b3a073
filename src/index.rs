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
use crate::hamming::hamming;
use crate::plan::{check_k, Plan, Workload};
use crate::store::{self, Words};
use crate::table::{lower_bound, prefetch, prefix_range, radix_sort_top};

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
    source: Option<store::Source>,
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
        self.source.as_ref().map_or(Ok(()), store::Source::check)
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

    /// (query row, id, distance) for many queries, in query order, parallel over queries.
    pub fn query_many(
        &self,
        queries: &[u64],
        max_pairs: Option<u64>,
    ) -> Result<(Vec<i64>, Vec<i64>, Vec<u8>)> {
        // Matches are counted as they are found; past `max_pairs` every worker stops, so the
        // error names a lower bound of their number (found in bounded memory and time) unless
        // every query was answered.
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
                crate::interrupt::check()?;
                if over.load(Ordering::Relaxed) {
                    stopped.store(true, Ordering::Relaxed);
                    break;
                }
                found.clear();
                self.query_into(q, &mut found);
                let now =
                    total.fetch_add(found.len() as u64, Ordering::Relaxed) + found.len() as u64;
                if max_pairs.is_some_and(|m| now > m) {
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
        crate::interrupt::check()?;
        let count = total.load(Ordering::Relaxed);
        if let Some(limit) = max_pairs.filter(|&m| count > m) {
            return Err(Error::TooManyPairs {
                count,
                at_least: stopped.load(Ordering::Relaxed),
                limit,
                what: format!("matches within k={} of {} queries", self.k, queries.len()),
                remedy: "query fewer fingerprints at once (in Python, raise max_pairs, or None \
                         for no limit)"
                    .into(),
            });
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
        store::save(
            path,
            &store::ToStore {
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
        let s = store::load(path, mmap)?;
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
