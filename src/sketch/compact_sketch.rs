//! The compact sketch a dedup index stores per document: a fixed number of 32-bit words.
//!
//! A document with few distinct shingles keeps them all: its shingle hashes, sorted, each cut to
//! its top `32 words / n` bits (whole, 64 bits with the checks of a set of one or two shingles
//! (see [`crate::sketch::verify`]), for up to `words / 2` values; 32 bits for up to `words`
//! shingles; down to [`MIN_BITS`] = 8 bits and no fewer than `2 + log2 n`, so that a value agrees
//! with a given other by chance at most once in 4 n: 64 shingles in 16 words, 113 in 32). Two such
//! documents compare their hashes cut to the narrower width: exact from 32 bits up (at 64 bits,
//! with the checks when both have them, as the sketches in memory compare), else the shared count I
//! whose expected equal values, I plus the chance agreements of the unshared ones
//! (`(n_a - I)(n_b - I) / 2^bits`), are the M found: an error below that of a sketch of the
//! same size (at 8 bits and 64 shingles, a pair near J = 0.8 has a quarter of a chance
//! agreement on average, an error of about 0.01 in J, against 0.026 for 512 one-bit bins; 6
//! bits for 85 shingles would err by 0.03, more than the bins). A larger document keeps a
//! *b-bit similarity sketch*:
//! `m = 32 words / bits` bins, each holding `bits` bits of the shingle that wins it. A document
//! whose hashes are cut below 32 bits cannot be compared with a sketched one (its whole hashes
//! are gone): such pairs, of at most [`Compact::max_kept`] shingles on one side and more on the other, are
//! not near-duplicates here (at J >= 0.8 both sides have between 52 and 80 shingles for 16
//! words).
//!
//! The bins are filled the way Dahlgaard, Knudsen and Thorup's fast similarity sketch fills
//! them ("Fast similarity sketching", FOCS 2017): in round r = 0, 1, ... every shingle throws a
//! dart (the next output of a SplitMix64 stream seeded by its hash) at a random bin with the
//! value (r, 32 random bits); a bin keeps its smallest value, and the rounds stop once every bin
//! holds a dart, since later rounds only throw larger values. Each shingle's darts depend on the
//! shingle alone, so in each bin the winner over the union of two documents is uniform over the
//! union, and the two documents' winners are equal with probability J exactly. Unlike one
//! permutation hashing with densification, this holds for small sets without correlated copies;
//! it costs about max(n, m ln m) darts a document.
//!
//! Keeping `b` bits of a hash of each winner (Li and König's b-bit minwise hashing, WWW 2010)
//! makes two different winners agree by chance with probability 2^-b, so a share P of equal bins
//! estimates J = (P - 2^-b) / (1 - 2^-b), with standard error
//! sqrt(P (1 - P) / m) / (1 - 2^-b): 0.026 at J = 0.8 for 1 bit and 512 bins (64 bytes), against
//! 0.035 for a bottom-128 sketch of 32-bit hashes (512 bytes).

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::fingerprint::encoders::mix64;
use crate::sketch::verify::{Ranges, SketchHash, CHECK_BIT};
use crate::GOLDEN_GAMMA;

/// The length recorded for a document whose words hold bins rather than its shingles.
pub const SKETCHED: u32 = u32::MAX;
/// The most 32-bit words a compact sketch may have (1 KB).
pub const MAX_WORDS: usize = 256;
/// Rounds of darts at most (a safeguard: every bin is filled long before for any set of one
/// shingle or more, with overwhelming probability; a bin still empty keeps 0 bits).
const MAX_ROUNDS: u64 = 1 << 16;
/// Kept values [`Compact::jaccard`] decodes into a buffer on the stack (every document of 16
/// words keeps at most 64).
const KEPT_ON_STACK: usize = 64;
/// The fewest bits a kept shingle hash is cut to: a document of up to `32 words / MIN_BITS`
/// shingles keeps them.
pub const MIN_BITS: usize = 8;
/// Seeds each shingle's stream of darts from its hash.
const STREAM_SEED: u64 = 0x5EED_0FD4_A7B1_C3E9;

/// The shape of compact sketches: 32-bit words per document and bits per bin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compact {
    words: usize,
    bits: u32,
}

/// Reusable buffers of [`Compact::encode`].
#[derive(Debug, Default)]
pub struct Darts {
    state: Vec<u64>,
    best: Vec<u64>,
    winner: Vec<u64>,
}

impl Compact {
    /// Checks `words` (1 to [`MAX_WORDS`]) and `bits` (1, 2, 4, 8, 16 or 32).
    pub fn new(words: i64, bits: i64) -> Result<Self> {
        if !(1..=MAX_WORDS as i64).contains(&words) {
            return Err(Error::invalid(format!(
                "sketch words must be in 1..={MAX_WORDS} (4 to {} bytes), got {words}",
                4 * MAX_WORDS
            )));
        }
        if ![1, 2, 4, 8, 16, 32].contains(&bits) {
            return Err(Error::invalid(format!(
                "sketch bits must be 1, 2, 4, 8, 16 or 32, got {bits}"
            )));
        }
        Ok(Compact {
            words: words as usize,
            bits: bits as u32,
        })
    }

    pub fn words(&self) -> usize {
        self.words
    }

    pub fn bits(&self) -> u32 {
        self.bits
    }

    /// Bins of a sketched document.
    pub fn bins(&self) -> usize {
        self.words * 32 / self.bits as usize
    }

    /// The most shingles a document keeps: n, cut to `32 words / n` bits, where that is at
    /// least [`MIN_BITS`] and two more than n needs (`2^bits >= 4 n`, so that chance agreements
    /// stay rare: past that the values crowd and the correction fails).
    pub fn max_kept(&self) -> usize {
        (1..=self.words * 32 / MIN_BITS)
            .rev()
            .find(|&n| {
                let width = self.width(n) as usize;
                width >= MIN_BITS && (width >= 32 || 1usize << width >= 4 * n)
            })
            .unwrap_or(0)
    }

    /// Bits each of `n` kept values is cut to.
    fn width(&self, n: usize) -> u32 {
        (self.words * 32 / n.max(1)).min(64) as u32
    }

    /// The compact sketch of a document's sketch (its distinct shingle hashes, sorted ascending,
    /// uncut, with their checks when it has them, as [`crate::sketch::verify::sketches`] makes
    /// them), written to `out` (`words` long): returns the length to record, the number of values
    /// kept or [`SKETCHED`]. The checks are kept when every value fits whole (64 bits).
    pub fn encode(&self, hashes: &[SketchHash], darts: &mut Darts, out: &mut [u32]) -> u32 {
        let values = if self.width(hashes.len()) == 64 {
            hashes
        } else {
            crate::sketch::verify::shingles_of(hashes)
        };
        if values.len() <= self.max_kept() {
            out.fill(0);
            let width = self.width(values.len());
            for (i, &h) in values.iter().enumerate() {
                put(out, i * width as usize, cut(h, width));
            }
            return values.len() as u32;
        }
        self.bins_of(values.iter().map(|&h| cut(h, 32)), darts, out);
        SKETCHED
    }

    /// The bins of a set of shingles, given by the top 32 bits of their hashes (whatever its
    /// size), written to `out`.
    fn bins_of(&self, seeds: impl Iterator<Item = u64>, darts: &mut Darts, out: &mut [u32]) {
        out.fill(0);
        let m = self.bins();
        darts.state.clear();
        darts.state.extend(seeds.map(|h| mix64(h ^ STREAM_SEED)));
        darts.best.clear();
        darts.best.resize(m, u64::MAX);
        darts.winner.clear();
        darts.winner.resize(m, 0);
        let mut filled = 0;
        for round in 0..MAX_ROUNDS {
            if darts.state.is_empty() {
                break;
            }
            for s in darts.state.iter_mut() {
                *s = s.wrapping_add(GOLDEN_GAMMA);
                let x = mix64(*s);
                let bin = (((x >> 32) * m as u64) >> 32) as usize;
                let value = (round << 32) | (x & 0xFFFF_FFFF);
                let best = &mut darts.best[bin];
                if *best == u64::MAX {
                    filled += 1;
                }
                if value < *best {
                    *best = value;
                    darts.winner[bin] = x;
                }
            }
            if filled == m {
                break;
            }
        }
        let per_word = 32 / self.bits as usize;
        for (bin, (&best, &x)) in darts.best.iter().zip(&darts.winner).enumerate() {
            if best == u64::MAX {
                continue;
            }
            let v = (mix64(x ^ GOLDEN_GAMMA) >> (64 - self.bits)) as u32;
            out[bin / per_word] |= v << ((bin % per_word) as u32 * self.bits);
        }
    }

    /// The `n` kept values of a document, cut to `to` bits (at most their width), in order;
    /// with `shingles_only`, without the checks (which only values kept whole hold).
    fn kept<'a>(
        &self,
        n: usize,
        words: &'a [u32],
        to: u32,
        shingles_only: bool,
    ) -> impl Iterator<Item = u64> + 'a {
        let width = self.width(n);
        (0..n)
            .map(move |i| get(words, i * width as usize, width))
            .filter(move |&v| !(shingles_only && width == 64 && v & CHECK_BIT != 0))
            .map(move |v| {
                if width == 64 {
                    cut(v, to)
                } else {
                    v >> (width - to)
                }
            })
    }

    /// Whether a document keeping `n` values holds checks.
    fn has_checks(&self, n: usize, words: &[u32]) -> bool {
        n > 0 && self.width(n) == 64 && get(words, (n - 1) * 64, 64) & CHECK_BIT != 0
    }

    /// The Jaccard of two documents from their compact sketches `(length, words)`: from their
    /// kept hashes when both keep them (exact when both are whole), else the b-bit estimate (a
    /// document keeping its whole hashes is sketched for the comparison; one keeping cut hashes
    /// against a sketched one: 0), clamped to 0..=1. A document without shingles has Jaccard 0
    /// with every other.
    pub fn jaccard(&self, a: (u32, &[u32]), b: (u32, &[u32])) -> f64 {
        match (a.0 == SKETCHED, b.0 == SKETCHED) {
            (false, false) => self.kept_jaccard(a.0 as usize, a.1, b.0 as usize, b.1),
            (false, true) => self.mixed(a.0 as usize, a.1, b.1),
            (true, false) => self.mixed(b.0 as usize, b.1, a.1),
            (true, true) => self.estimate(a.1, b.1),
        }
    }

    fn kept_jaccard(&self, na: usize, a: &[u32], nb: usize, b: &[u32]) -> f64 {
        if na == 0 || nb == 0 {
            return 0.0;
        }
        let to = self.width(na).min(self.width(nb));
        // Checks count when both sides hold them, as in memory; else the shingles alone.
        let (ca, cb) = (self.has_checks(na, a), self.has_checks(nb, b));
        let shingles_only = !(ca && cb && to == 64);
        // Both sides' values, sorted, decoded once into buffers on the stack (every document of
        // the default 16 words keeps at most 64 values; larger sketches take the heap).
        let (mut xa, mut xb) = ([0u64; KEPT_ON_STACK], [0u64; KEPT_ON_STACK]);
        let (mut va, mut vb) = (Vec::new(), Vec::new());
        let x = self.kept_into(na, a, to, shingles_only, &mut xa, &mut va);
        let y = self.kept_into(nb, b, to, shingles_only, &mut xb, &mut vb);
        let m = equal_values(x, y) as f64;
        // Without the checks where they were left out.
        let (a, b) = (x.len() as f64, y.len() as f64);
        let shared = if to >= 32 {
            m
        } else {
            // Equal values are the I shared shingles plus chance agreements of the unshared
            // ones, (a - I)(b - I) c on average for c = 2^-bits: I solves c I^2 + (1 - c (a +
            // b)) I + c a b - m = 0 (the root near m, written to keep its precision).
            let c = 1.0 / (1u64 << to) as f64;
            let half = 1.0 - c * (a + b);
            let disc = (half * half + 4.0 * c * (m - c * a * b)).max(0.0);
            (2.0 * (m - c * a * b) / (half + disc.sqrt())).clamp(0.0, a.min(b))
        };
        (shared / (a + b - shared)).clamp(0.0, 1.0)
    }

    /// The values of [`Self::kept`], written to `stack` when they fit, else to `heap`: the
    /// filled part.
    fn kept_into<'b>(
        &self,
        n: usize,
        words: &[u32],
        to: u32,
        shingles_only: bool,
        stack: &'b mut [u64; KEPT_ON_STACK],
        heap: &'b mut Vec<u64>,
    ) -> &'b [u64] {
        if n > KEPT_ON_STACK {
            heap.extend(self.kept(n, words, to, shingles_only));
            return heap;
        }
        let width = self.width(n);
        if width <= 32 {
            // The values of documents of 16 shingles or more: each within two words, no
            // checks; decoded in one tight loop (the iterator's steps cost more than the bits).
            let (mask, shift) = ((1u64 << width) - 1, width - to);
            for (i, out) in stack[..n].iter_mut().enumerate() {
                let at = i * width as usize;
                let (w, o) = (at / 32, at % 32);
                let next = words.get(w + 1).copied().unwrap_or(0);
                let x = (u64::from(words[w]) | (u64::from(next) << 32)) >> o;
                *out = (x & mask) >> shift;
            }
            return &stack[..n];
        }
        let mut len = 0;
        for v in self.kept(n, words, to, shingles_only) {
            stack[len] = v;
            len += 1;
        }
        &stack[..len]
    }

    fn mixed(&self, n: usize, kept: &[u32], bins: &[u32]) -> f64 {
        if n == 0 || self.width(n) < 32 {
            return 0.0;
        }
        let mut words = vec![0u32; self.words];
        self.bins_of(
            self.kept(n, kept, 32, true),
            &mut Darts::default(),
            &mut words,
        );
        self.estimate(&words, bins)
    }

    /// Whether a document's kept values (of a length other than [`SKETCHED`]) are in the order
    /// [`Compact::encode`] writes them: ascending, and distinct when whole (hashes cut to fewer
    /// bits may agree): what an index file read from outside must hold before its sketches are
    /// compared.
    pub fn kept_in_order(&self, d: (u32, &[u32])) -> bool {
        if d.0 == SKETCHED {
            return true;
        }
        let n = d.0 as usize;
        let width = self.width(n);
        let mut last: Option<u64> = None;
        self.kept(n, d.1, width, false).all(|v| {
            let ok = last.is_none_or(|l| l < v || (l == v && width < 64));
            last = Some(v);
            ok
        })
    }

    /// A short document's shingle hashes, cut to 32 bits and widened back (the order and the
    /// prefix hashes of [`crate::candidates::short_texts`]): those of a document of 1 to `most`
    /// shingles kept at 32 bits or more, written to `out`; whether it is one.
    pub fn short_shingles(&self, d: (u32, &[u32]), most: usize, out: &mut Vec<u64>) -> bool {
        out.clear();
        let n = d.0 as usize;
        if d.0 == SKETCHED || n == 0 || self.width(n) < 32 {
            return false;
        }
        out.extend(self.kept(n, d.1, 32, true));
        (1..=most).contains(&out.len())
    }

    /// The estimate from two sketched documents' bins.
    fn estimate(&self, a: &[u32], b: &[u32]) -> f64 {
        let m = self.bins() as f64;
        let unequal: u32 = a
            .iter()
            .zip(b)
            .map(|(&x, &y)| unequal_bins(x ^ y, self.bits))
            .sum();
        let p = (m - f64::from(unequal)) / m;
        let chance = 0.5f64.powi(self.bits as i32);
        ((p - chance) / (1.0 - chance)).clamp(0.0, 1.0)
    }
}

/// A value's top `width` bits as kept: whole at 64 bits, else a shingle hash's 63 bits (its
/// top bit clear) cut to their top `width`.
#[inline]
fn cut(v: u64, width: u32) -> u64 {
    if width >= 64 {
        v
    } else {
        (v << 1) >> (64 - width)
    }
}

/// ORs the `width`-bit value `v` in at bit `at` of `out`.
#[inline]
fn put(out: &mut [u32], at: usize, v: u64) {
    let (w, o) = (at / 32, at % 32);
    let x = u128::from(v) << o;
    for (k, word) in out[w..].iter_mut().take(3).enumerate() {
        *word |= (x >> (32 * k)) as u32;
    }
}

/// How many values two sorted lists of distinct values share.
#[inline]
fn equal_values(x: &[u64], y: &[u64]) -> usize {
    let (mut i, mut j, mut equal) = (0, 0, 0);
    while i < x.len() && j < y.len() {
        let (p, q) = (x[i], y[j]);
        equal += usize::from(p == q);
        i += usize::from(p <= q);
        j += usize::from(q <= p);
    }
    equal
}

/// The `width`-bit value at bit `at` of `words`.
#[inline]
fn get(words: &[u32], at: usize, width: u32) -> u64 {
    let (w, o) = (at / 32, at % 32);
    let x = words[w..]
        .iter()
        .take(3)
        .enumerate()
        .fold(0u128, |x, (k, &word)| x | (u128::from(word) << (32 * k)));
    let v = (x >> o) as u64;
    if width >= 64 {
        v
    } else {
        v & ((1u64 << width) - 1)
    }
}

/// Compact sketches of documents ([`crate::sketch::compact_sketch`]): document d's length (its
/// shingles, or [`SKETCHED`]) and its `words` words `words[d * w..(d + 1) * w]`.
#[derive(Clone, Copy)]
pub struct Sketches<'a> {
    pub lens: &'a [u32],
    pub words: &'a [u32],
}

impl Sketches<'_> {
    /// Checks `n` sketches of `shape`: as many lengths, `words` words each, every length a
    /// count of shingles the words keep or [`SKETCHED`].
    pub fn check(&self, n: usize, shape: Compact) -> Result<()> {
        let w = shape.words();
        if self.lens.len() != n || self.words.len() != n.saturating_mul(w) {
            return Err(Error::invalid(format!(
                "{n} documents but {} sketch lengths and {} sketch words ({w} a document)",
                self.lens.len(),
                self.words.len()
            )));
        }
        if let Some(&bad) = self
            .lens
            .iter()
            .find(|&&l| l != SKETCHED && l as usize > shape.max_kept())
        {
            return Err(Error::invalid(format!(
                "sketch length {bad} over the {} shingles {w} words keep",
                shape.max_kept()
            )));
        }
        Ok(())
    }

    /// Document d's (length, words).
    pub fn get(&self, d: usize, w: usize) -> (u32, &[u32]) {
        (self.lens[d], &self.words[d * w..(d + 1) * w])
    }
}

/// The number of nonzero `bits`-wide groups in `z`.
#[inline]
fn unequal_bins(z: u32, bits: u32) -> u32 {
    if bits == 32 {
        return u32::from(z != 0);
    }
    let mut t = z;
    let mut s = 1;
    while s < bits {
        t |= t >> s;
        s <<= 1;
    }
    // The low bit of each group now says whether the group was nonzero.
    let low = (0..32 / bits).fold(0u32, |acc, g| acc | (1 << (g * bits)));
    (t & low).count_ones()
}

/// The compact sketches of many documents' shingle sets (each sorted and distinct, uncut), in
/// parallel: (lengths, `words` words per document).
pub fn encode_many(shape: Compact, sketches: &Ranges<'_>) -> (Vec<u32>, Vec<u32>) {
    let n = sketches.len();
    let mut words = vec![0u32; n * shape.words];
    let lens: Vec<u32> = words
        .par_chunks_mut(shape.words)
        .enumerate()
        .with_min_len(256)
        .map_init(Darts::default, |darts, (d, out)| {
            shape.encode(sketches.get(d), darts, out)
        })
        .collect();
    (lens, words)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rng(s: &mut u64) -> u64 {
        *s = s.wrapping_add(GOLDEN_GAMMA);
        mix64(*s)
    }

    /// Two sets with `both` shared hashes and `only` more in each, sorted (63-bit values, as
    /// shingle hashes are).
    fn pair(s: &mut u64, both: usize, only_a: usize, only_b: usize) -> (Vec<u64>, Vec<u64>) {
        // Distinct values: draw what is missing, then sort and drop repeats, until there are enough.
        let need = both + only_a + only_b;
        let mut all: Vec<u64> = Vec::with_capacity(need);
        while all.len() < need {
            let missing = need - all.len();
            all.extend((0..missing).map(|_| rng(s) >> 1));
            all.sort_unstable();
            all.dedup();
        }
        let mut a: Vec<u64> = all[..both + only_a].to_vec();
        let mut b: Vec<u64> = all[..both].to_vec();
        b.extend_from_slice(&all[both + only_a..]);
        a.sort_unstable();
        b.sort_unstable();
        (a, b)
    }

    fn exact(a: &[u64], b: &[u64]) -> f64 {
        let both = a.iter().filter(|x| b.binary_search(x).is_ok()).count();
        both as f64 / (a.len() + b.len() - both) as f64
    }

    fn encoded(shape: Compact, set: &[u64]) -> (u32, Vec<u32>) {
        let mut out = vec![7u32; shape.words()];
        let len = shape.encode(set, &mut Darts::default(), &mut out);
        (len, out)
    }

    #[test]
    fn unequal_bins_counts_nonzero_groups() {
        let mut s = 1;
        for bits in [1, 2, 4, 8, 16, 32] {
            for _ in 0..2000 {
                let z = (rng(&mut s) & rng(&mut s)) as u32;
                let naive = (0..32 / bits)
                    .filter(|g| {
                        let mask = if bits == 32 {
                            u32::MAX
                        } else {
                            (1 << bits) - 1
                        };
                        (z >> (g * bits)) & mask != 0
                    })
                    .count() as u32;
                assert_eq!(unequal_bins(z, bits), naive, "{z:#x} {bits}");
            }
        }
    }

    #[test]
    fn small_sets_are_kept_whole_and_compared_exactly() {
        let shape = Compact::new(16, 1).unwrap();
        let mut s = 2;
        for (both, a_only, b_only) in [(10, 3, 6), (0, 5, 5), (16, 0, 0), (1, 0, 15), (0, 0, 3)] {
            let (a, b) = pair(&mut s, both, a_only, b_only);
            let (ea, eb) = (encoded(shape, &a), encoded(shape, &b));
            assert_eq!(ea.0 as usize, a.len());
            // Each value's top bits, packed: 64 for up to 8 values, 512 / n bits above that.
            let width = shape.width(a.len());
            let kept: Vec<u64> = shape.kept(a.len(), &ea.1, width, false).collect();
            let want: Vec<u64> = a.iter().map(|&h| cut(h, width)).collect();
            assert_eq!(kept, want);
            assert_eq!(width, (512 / a.len().max(1)).min(64) as u32);
            let bits = a.len() * width as usize;
            assert!(ea.1[bits.div_ceil(32)..].iter().all(|&w| w == 0));
            let got = shape.jaccard((ea.0, &ea.1), (eb.0, &eb.1));
            assert_eq!(got, exact(&a, &b));
        }
        // A set without shingles shares nothing, even with a sketched set.
        let (big, _) = pair(&mut s, 100, 0, 0);
        let e = encoded(shape, &big);
        assert_eq!(e.0, SKETCHED);
        assert_eq!(shape.jaccard((0, &[0; 16]), (e.0, &e.1)), 0.0);
        assert_eq!(shape.jaccard((e.0, &e.1), (e.0, &e.1)), 1.0);
    }

    /// Sets of one or two shingles keep their checks whole: two such sets compare as in memory
    /// (a chance agreement of the shingle hashes alone gives 1/3, not 1); against a set without
    /// checks, on the shingles.
    #[test]
    fn checks_are_kept_whole_and_compared_as_in_memory() {
        let shape = Compact::new(16, 1).unwrap();
        let (h, x, y) = (5u64 << 40, 9u64 << 40, 11u64 << 40);
        let (c1, c2) = (CHECK_BIT | 3, CHECK_BIT | 4);
        let same = |a: &[u64], b: &[u64]| {
            let (ea, eb) = (encoded(shape, a), encoded(shape, b));
            assert_eq!(ea.0 as usize, a.len());
            shape.jaccard((ea.0, &ea.1), (eb.0, &eb.1))
        };
        assert_eq!(same(&[h, c1], &[h, c1]), 1.0);
        assert!((same(&[h, c1], &[h, c2]) - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(same(&[h, c1], &[h, x, y]), 1.0 / 3.0);
        assert_eq!(same(&[h, x, y], &[h, c1]), 1.0 / 3.0);
        // A set cut below 64 bits drops its checks (it has none past two shingles anyway).
        let tiny = Compact::new(1, 1).unwrap();
        let mut out = vec![0u32; 1];
        assert_eq!(tiny.encode(&[h, c1], &mut Darts::default(), &mut out), 1);
    }

    #[test]
    fn the_estimate_is_near_the_exact_jaccard_for_sets_of_every_size() {
        // Against the exact Jaccard of the sets: each estimate within 4.5 standard errors (its
        // binomial error, sqrt(P (1 - P) / m) / (1 - 2^-b)), and no bias over many pairs.
        let mut s = 3;
        for (words, bits) in [(16, 1), (16, 2), (16, 4), (8, 32)] {
            let shape = Compact::new(words, bits).unwrap();
            let m = shape.bins() as f64;
            let chance = 0.5f64.powi(bits as i32);
            let (mut sum, mut count) = (0.0, 0.0);
            for size in [17usize, 30, 60, 200, 1000, 5000] {
                for share in [0.5, 0.75, 0.8, 0.9, 0.97] {
                    for _ in 0..4 {
                        // J = both / (both + 2 only) = share.
                        let only = ((size as f64) * (1.0 - share) / (1.0 + share)).round() as usize;
                        let (a, b) = pair(&mut s, size - only, only, only);
                        let j = exact(&a, &b);
                        let (ea, eb) = (encoded(shape, &a), encoded(shape, &b));
                        let got = shape.jaccard((ea.0, &ea.1), (eb.0, &eb.1));
                        let p = j + (1.0 - j) * chance;
                        let se = (p * (1.0 - p) / m).sqrt() / (1.0 - chance);
                        assert!(
                            (got - j).abs() <= 4.5 * se + 1e-9,
                            "{words}x{bits}: |{got} - {j}| > 4.5 x {se} for {size} shingles"
                        );
                        sum += (got - j) / se.max(1e-3);
                        count += 1.0;
                    }
                }
            }
            // The mean of standardized errors of 120 pairs has standard error ~0.09.
            assert!(
                (sum / count).abs() < 0.4,
                "{words}x{bits}: bias {}",
                sum / count
            );
        }
    }

    #[test]
    fn a_set_kept_whole_compares_with_a_sketched_one_as_if_sketched() {
        let shape = Compact::new(16, 1).unwrap();
        let mut s = 4;
        let (a, b) = pair(&mut s, 15, 1, 80);
        assert!(a.len() <= 16 && b.len() > 64);
        let (ea, eb) = (encoded(shape, &a), encoded(shape, &b));
        assert_ne!(ea.0, SKETCHED);
        let mut bins = vec![0u32; 16];
        shape.bins_of(
            a.iter().map(|&h| cut(h, 32)),
            &mut Darts::default(),
            &mut bins,
        );
        let want = shape.estimate(&bins, &eb.1);
        assert_eq!(shape.jaccard((ea.0, &ea.1), (eb.0, &eb.1)), want);
        assert_eq!(shape.jaccard((eb.0, &eb.1), (ea.0, &ea.1)), want);
        assert!((want - exact(&a, &b)).abs() < 0.15);
        // Hashes cut below 32 bits cannot be sketched: such a pair is never near.
        let (c, _) = pair(&mut s, 30, 0, 0);
        let ec = encoded(shape, &c);
        assert_eq!(ec.0, 30);
        assert_eq!(shape.jaccard((ec.0, &ec.1), (eb.0, &eb.1)), 0.0);
    }

    #[test]
    fn sets_kept_with_cut_hashes_are_compared_nearly_exactly() {
        // 17 to 64 shingles in 16 words: hashes cut to 30 down to 8 bits. Against the exact
        // Jaccard: an error only where unshared hashes agree by chance, so from J = 0.7 up 90%
        // of the pairs within 0.02 and every pair within 0.05, every pair within 0.2 below;
        // unbiased on average.
        let shape = Compact::new(16, 1).unwrap();
        let mut s = 5;
        let (mut sum, mut count, mut close, mut high) = (0.0, 0.0, 0.0, 0.0);
        for size in [17usize, 20, 25, 32, 40, 50, 64] {
            for share in [0.5, 0.7, 0.75, 0.8, 0.85, 0.9, 1.0] {
                for _ in 0..20 {
                    let only = ((size as f64) * (1.0 - share) / (1.0 + share)).round() as usize;
                    let (a, b) = pair(&mut s, size - only, only, only);
                    let (ea, eb) = (encoded(shape, &a), encoded(shape, &b));
                    assert_eq!((ea.0 as usize, eb.0 as usize), (a.len(), b.len()));
                    let j = exact(&a, &b);
                    let got = shape.jaccard((ea.0, &ea.1), (eb.0, &eb.1));
                    let bound = if j >= 0.7 { 0.05 } else { 0.2 };
                    assert!((got - j).abs() <= bound, "{size}: {got} vs {j}");
                    if j >= 0.7 {
                        high += 1.0;
                        close += f64::from(u8::from((got - j).abs() <= 0.02));
                    }
                    sum += got - j;
                    count += 1.0;
                }
            }
        }
        assert!(close / high >= 0.9, "{close} of {high}");
        assert!((sum / count).abs() < 0.005, "bias {}", sum / count);
        // Kept and cut to different widths (20 and 64 shingles): compared at the narrower.
        let (a, b) = pair(&mut s, 20, 0, 44);
        let (ea, eb) = (encoded(shape, &a), encoded(shape, &b));
        let got = shape.jaccard((ea.0, &ea.1), (eb.0, &eb.1));
        assert!((got - exact(&a, &b)).abs() < 0.05, "{got}");
        assert_eq!(got, shape.jaccard((eb.0, &eb.1), (ea.0, &ea.1)));
    }

    #[test]
    fn sets_are_kept_while_their_cut_hashes_stay_sparse() {
        // 16 words: 64 shingles of 8 bits (2^8 = 4 x 64); 32 words: 113 of 9 bits (114 would
        // get 8 bits, fewer than 4 x 114 values); 256 words: 682 of 12 bits (683 get 11).
        assert_eq!(Compact::new(16, 1).unwrap().max_kept(), 64);
        assert_eq!(Compact::new(32, 1).unwrap().max_kept(), 113);
        assert_eq!(Compact::new(256, 1).unwrap().max_kept(), 682);
        for words in [1, 2, 8, 16, 32, 64, 256] {
            let shape = Compact::new(words, 1).unwrap();
            let n = shape.max_kept();
            let width = shape.width(n) as usize;
            assert!(
                width >= MIN_BITS && 1usize << width >= 4 * n,
                "{words}: {n} x {width}"
            );
            let more = shape.width(n + 1) as usize;
            assert!(
                more < MIN_BITS || 1usize << more < 4 * (n + 1),
                "{words}: {n}"
            );
        }
    }

    #[test]
    fn shapes_are_checked() {
        assert!(Compact::new(0, 1).is_err());
        assert!(Compact::new(257, 1).is_err());
        assert!(Compact::new(16, 3).is_err());
        assert!(Compact::new(16, 0).is_err());
        assert_eq!(Compact::new(16, 1).unwrap().bins(), 512);
        assert_eq!(Compact::new(16, 4).unwrap().bins(), 128);
    }
}
