//! The prefix postings of a dedup index: the candidates of new documents by prefix filtering,
//! as [`neardup.dedup`](crate::candidates::short_texts) finds them in memory, without the
//! index's texts or sketches.
//!
//! Every document of the index is listed by its shingle hashes in one global order, rarest
//! first (a [`Rarity`] table counted on the corpus the index was built from, stored with it and
//! frozen: documents added later are listed in the same order), as many as prefix filtering at
//! the index's [`Cut`] reads (its threshold, and the band below it where bottom-`size` sketches
//! decide by their estimate). The file holds, for every hash of every document's prefix, the
//! posting `(hash, row)`, sorted; a new document's candidates are the rows of the postings of
//! its own prefix's hashes (binary searches), and two documents at the cut share one.
//!
//! A document without shingles (a text that normalizes to nothing) is listed by one hash made
//! from its content key, with the check bit set so that no shingle hash equals it: its copies
//! meet it.
//!
//! 12 bytes a prefix hash: a document of `n` shingles (its sketch cut at `size`) has a prefix
//! of `n - need + 1` hashes (about 4 for a text of 16 shingles at t = 0.8; 269 for a long one
//! with `size` = 1,024 and the band of 5 standard errors).

use rayon::prelude::*;

use crate::candidates::short_texts::Cut;
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
    /// Postings sorted by `(hash, row)`.
    pub hashes: Words<u64>,
    pub rows: Words<u32>,
}

impl Prefixes {
    /// The rows whose prefix holds `h`, ascending.
    pub fn rows_of(&self, h: u64) -> &[u32] {
        let a = self.hashes.partition_point(|&x| x < h);
        let b = a + self.hashes[a..].partition_point(|&x| x <= h);
        &self.rows[a..b]
    }

    /// Whether the index has prefixes.
    pub fn present(&self) -> bool {
        self.settings.is_some()
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

/// The postings `(hash, base + d)` of rows `d` of `lists` at `cut`, sorted.
pub fn postings(
    lists: &Lists<'_>,
    keys: &[ContentKey],
    cut: Cut,
    base: usize,
) -> Result<Vec<(u64, u32)>> {
    if keys.len() != lists.len() {
        return Err(Error::invalid(format!(
            "{} lists but {} keys",
            lists.len(),
            keys.len()
        )));
    }
    let made: Vec<Result<Vec<(u64, u32)>>> = (0..lists.len())
        .into_par_iter()
        .with_min_len(1024)
        .map_init(Vec::new, |buf: &mut Vec<u64>, d| {
            lists.prefix(d, keys[d], cut, buf)?;
            let row = (base + d) as u32;
            Ok(buf.iter().map(|&h| (h, row)).collect())
        })
        .collect();
    let mut total = 0usize;
    for m in &made {
        total += m.as_ref().map_or(0, Vec::len);
    }
    let mut out: Vec<(u64, u32)> = try_with_capacity(total, "prefix postings")?;
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
        let mut want = vec![(10, 100), (11, 100), (empty_key([3, 4]), 101), (11, 102)];
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
    fn rows_of_finds_every_posting_of_a_hash() {
        let p = Prefixes {
            settings: None,
            hashes: vec![1u64, 3, 3, 3, 7].into(),
            rows: vec![0u32, 1, 4, 9, 2].into(),
            ..Default::default()
        };
        assert_eq!(p.rows_of(3), &[1, 4, 9]);
        assert_eq!(p.rows_of(2), &[] as &[u32]);
        assert_eq!(p.rows_of(7), &[2]);
        assert_eq!(p.rows_of(8), &[] as &[u32]);
    }
}
