//! Checking candidate pairs by the Jaccard similarity of their word-shingle sets.
//!
//! A simhash fingerprint estimates the cosine of two feature vectors with 64 bits, so at a
//! distance small enough to be precise it misses many pairs that a set similarity would call
//! near-duplicates. Verification lets the fingerprints propose candidates generously (a larger
//! k) and keeps the pairs whose word-shingle sets have Jaccard similarity at or above a threshold.
//!
//! Each document gets a *sketch*: the distinct hashes of its word n-gram shingles, sorted and
//! cut to the `size` smallest (a bottom-k sketch, Broder 1997). Words are the fingerprints' word
//! tokens with their FNV-1a 64 hashes (so a fingerprint of word features leaves them ready), and
//! a shingle's hash chains the SplitMix64 output function over its words' hashes: well mixed,
//! so the smallest hashes are a random sample of the shingles, and it depends on word order. A
//! sketch keeps the high 32 bits of each ([`SketchHash`]): half the memory. For two documents with fewer than `size` shingles each, the
//! Jaccard of the sketches is exact; beyond that it is the bottom-k estimate: among the `size`
//! smallest hashes of the union, the share present in both sketches.

use rayon::prelude::*;

use crate::encoders::mix64;
use crate::error::{Error, Result};
use crate::features::{word_token_hashes, Scratch};

/// Sketches of many documents, concatenated: document d's hashes are
/// `hashes[offsets[d]..offsets[d + 1]]`, sorted ascending and distinct; `keys[d]` is the
/// content key of its normalized text.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Sketches {
    pub offsets: Vec<u64>,
    pub hashes: Vec<SketchHash>,
    pub keys: Vec<u64>,
}

/// The content key of a normalized text: its XXH3-64 (seed 0). Documents with equal keys and
/// fingerprints are taken as copies of one text (two different texts share a key and a
/// fingerprint with probability about 2^-128).
#[inline]
pub fn content_key(text: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(text)
}

/// A shingle's hash in a sketch: the high half of its 64-bit hash. Two distinct shingles of a
/// pair of documents share it with probability 2^-32 each, far below what moves a Jaccard.
pub type SketchHash = u32;

impl Sketches {
    /// The number of documents.
    pub fn len(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Document `d`'s sketch.
    pub fn get(&self, d: usize) -> &[SketchHash] {
        &self.hashes[self.offsets[d] as usize..self.offsets[d + 1] as usize]
    }
}

/// Sketches laid out anyhow: row d's hashes are `hashes[starts[d]..ends[d]]` (as Python gathers
/// them, chunk by chunk in any order).
#[derive(Debug, Clone, Copy)]
pub struct Ranges<'a> {
    starts: &'a [u64],
    ends: &'a [u64],
    hashes: &'a [SketchHash],
}

impl<'a> Ranges<'a> {
    /// Checks sketches received from outside: as many starts as ends, each range inside the
    /// hashes, each sketch strictly increasing.
    pub fn new(starts: &'a [u64], ends: &'a [u64], hashes: &'a [SketchHash]) -> Result<Self> {
        if starts.len() != ends.len() {
            return Err(Error::invalid(format!(
                "{} sketch starts but {} ends",
                starts.len(),
                ends.len()
            )));
        }
        let n = hashes.len() as u64;
        for (&a, &b) in starts.iter().zip(ends) {
            if a > b || b > n {
                return Err(Error::invalid(format!(
                    "sketch range {a}..{b} out of {n} hashes"
                )));
            }
            if hashes[a as usize..b as usize]
                .windows(2)
                .any(|w| w[0] >= w[1])
            {
                return Err(Error::invalid("each sketch must be sorted and distinct"));
            }
        }
        Ok(Ranges {
            starts,
            ends,
            hashes,
        })
    }

    pub fn len(&self) -> usize {
        self.starts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.starts.is_empty()
    }

    /// Row `d`'s sketch.
    pub fn get(&self, d: usize) -> &'a [SketchHash] {
        &self.hashes[self.starts[d] as usize..self.ends[d] as usize]
    }

    /// Where row `d`'s sketch lies in [`Ranges::hashes`]: (start, length).
    pub fn span(&self, d: usize) -> (u64, u32) {
        (self.starts[d], (self.ends[d] - self.starts[d]) as u32)
    }

    /// Every row's hashes, one range after another.
    pub fn hashes(&self) -> &'a [SketchHash] {
        self.hashes
    }
}

/// How documents are sketched: words per shingle, and hashes kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShingleConfig {
    pub ngram: usize,
    pub size: usize,
    /// Only documents of at most `size` distinct shingles are sketched (whole); the others get
    /// an empty sketch, found after `size + 1` distinct shingles instead of sorting them all.
    pub whole_only: bool,
}

/// The sketches a first pass asks for, `(ngram, size)`: bottom-`size`, or with a negative
/// `size`, the whole sets of documents of at most `-size` distinct shingles (see
/// [`ShingleConfig::whole_only`]).
pub fn digest_config(ngram: i64, size: i64) -> Result<ShingleConfig> {
    let config = shingle_config(ngram, size.checked_abs().unwrap_or(i64::MAX))?;
    Ok(ShingleConfig {
        whole_only: size < 0,
        ..config
    })
}

/// The checked shingle configuration of bottom-`size` sketches.
pub fn shingle_config(ngram: i64, size: i64) -> Result<ShingleConfig> {
    if !(1..=64).contains(&ngram) {
        return Err(Error::invalid(format!(
            "ngram must be in 1..=64, got {ngram}"
        )));
    }
    if !(1..=1 << 20).contains(&size) {
        return Err(Error::invalid(format!(
            "sketch size must be in 1..=1048576, got {size}"
        )));
    }
    Ok(ShingleConfig {
        ngram: ngram as usize,
        size: size as usize,
        whole_only: false,
    })
}

/// The hash of a shingle from the hashes of its words.
#[inline]
fn shingle_hash(words: &[u64]) -> SketchHash {
    (words.iter().fold(crate::PI_SEED, |h, &w| mix64(h ^ w)) >> 32) as SketchHash
}

/// The sketch of a document from the hashes of its words, written to `out` (cleared first). A
/// document of fewer than `ngram` words is one shingle; one without words has an empty sketch.
pub fn sketch_of_words(config: ShingleConfig, words: &[u64], out: &mut Vec<SketchHash>) {
    out.clear();
    if words.is_empty() {
        return;
    }
    let width = config.ngram.min(words.len());
    if config.whole_only {
        for h in words.windows(width).map(shingle_hash) {
            if !out.contains(&h) {
                if out.len() == config.size {
                    out.clear(); // more than `size` distinct shingles: not sketched
                    return;
                }
                out.push(h);
            }
        }
        out.sort_unstable();
        return;
    }
    out.extend(words.windows(width).map(shingle_hash));
    out.sort_unstable();
    out.dedup();
    out.truncate(config.size);
}

/// The sketch of one normalized text, written to `out` (cleared first).
pub fn sketch(config: ShingleConfig, text: &str, scratch: &mut Scratch, out: &mut Vec<SketchHash>) {
    let words = word_token_hashes(text, scratch);
    sketch_of_words(config, words, out);
}

/// The sketches of many normalized texts, computed in parallel.
pub fn sketches<T: AsRef<str> + Sync>(config: ShingleConfig, texts: &[T]) -> Sketches {
    let each: Vec<(Vec<SketchHash>, u64)> = texts
        .par_iter()
        .map_init(Scratch::default, |scratch, text| {
            let mut out = Vec::new();
            sketch(config, text.as_ref(), scratch, &mut out);
            (out, content_key(text.as_ref().as_bytes()))
        })
        .collect();
    let mut offsets = Vec::with_capacity(each.len() + 1);
    offsets.push(0u64);
    let mut hashes = Vec::with_capacity(each.iter().map(|e| e.0.len()).sum());
    let mut keys = Vec::with_capacity(each.len());
    for (s, key) in &each {
        hashes.extend_from_slice(s);
        offsets.push(hashes.len() as u64);
        keys.push(*key);
    }
    Sketches {
        offsets,
        hashes,
        keys,
    }
}

/// The Jaccard similarity of two bottom-`size` sketches: exact when both sets have fewer than
/// `size` shingles, the bottom-k estimate otherwise (among the `size` smallest hashes of the
/// union, the share present in both). A text without words shares no shingle with any other
/// (0): only its copies, found by their content key, are its duplicates.
pub fn jaccard(a: &[SketchHash], b: &[SketchHash], size: usize) -> f64 {
    let (both, union) = bottom_union(a, b, size, 0.0).unwrap_or((0, 0));
    share(both, union)
}

/// The Jaccard similarity of two sketches when it is at least `threshold` (exactly what
/// [`jaccard`] gives), else None, found without finishing the merge once `threshold` is out of
/// reach: a pair far below it is refused after a fraction of its hashes.
pub fn jaccard_at_least(
    a: &[SketchHash],
    b: &[SketchHash],
    size: usize,
    threshold: f64,
) -> Option<f64> {
    let (both, union) = bottom_union(a, b, size, threshold)?;
    let j = share(both, union);
    (j >= threshold).then_some(j)
}

fn share(both: usize, union: usize) -> f64 {
    if union == 0 {
        0.0
    } else {
        both as f64 / union as f64
    }
}

/// Merge steps between two checks of the threshold.
const REACH_STEPS: usize = 32;

/// `(both, union)`: the hashes of the union's `size` smallest, and how many of them are in both
/// sketches; None once the share can no longer reach `threshold` (never for 0).
///
/// The `size` smallest of the union are all known: each sketch holds its set's `size` smallest,
/// so the union's smallest `size` never lie past the end of a truncated sketch. Each step of the
/// merge takes the smaller head (both when equal) without a branch. After `union` steps with
/// `both` shared, with `ra` and `rb` hashes left in the sketches, at most
/// `c = min(ra, rb, size - union)` more are shared, and the union ends with at least
/// `d = min(size, union + max(ra, rb))` hashes: a share that ends at most `(both + c) / d` below
/// `threshold` is refused. Checked before the first step too, where it is the size filter
/// (`min / max` of the two set sizes, for sketches that hold their whole sets).
#[inline]
fn bottom_union(
    a: &[SketchHash],
    b: &[SketchHash],
    size: usize,
    threshold: f64,
) -> Option<(usize, usize)> {
    let (mut x, mut y) = (0usize, 0usize);
    let (mut union, mut both) = (0usize, 0usize);
    loop {
        if threshold > 0.0 {
            let (ra, rb) = (a.len() - x, b.len() - y);
            let c = ra.min(rb).min(size - union);
            let d = (union + ra.max(rb)).min(size);
            // As `share` divides (rounding is monotone, so the bound stays above the end).
            if share(both + c, d) < threshold {
                return None;
            }
        }
        if !(union < size && x < a.len() && y < b.len()) {
            break;
        }
        let stop = (union + REACH_STEPS).min(size);
        while union < stop && x < a.len() && y < b.len() {
            let (p, q) = (a[x], b[y]);
            both += usize::from(p == q);
            x += usize::from(p <= q);
            y += usize::from(q <= p);
            union += 1;
        }
    }
    // One sketch is used up: the rest of the other fills the union, sharing nothing.
    union = (union + (a.len() - x) + (b.len() - y)).min(size);
    Some((both, union))
}

/// The Jaccard similarity of each pair of rows `(i[p], j[p])` of `sketches`, in parallel.
pub fn jaccard_pairs(sketches: &Ranges<'_>, size: usize, i: &[i64], j: &[i64]) -> Result<Vec<f64>> {
    if i.len() != j.len() {
        return Err(Error::invalid(format!(
            "i and j must have the same length, got {} and {}",
            i.len(),
            j.len()
        )));
    }
    let n = sketches.len() as i64;
    if let Some(bad) = i.iter().chain(j).find(|&&r| r < 0 || r >= n) {
        return Err(Error::invalid(format!(
            "row {bad} out of range for {n} sketches"
        )));
    }
    Ok(i.par_iter()
        .zip(j)
        .map(|(&a, &b)| jaccard(sketches.get(a as usize), sketches.get(b as usize), size))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::{FeatureConfig, TokenKind};
    use crate::testing::xorshift64;
    use std::collections::BTreeSet;

    fn set(text: &str, n: i64) -> BTreeSet<String> {
        FeatureConfig::new(TokenKind::Word, n, None)
            .unwrap()
            .features(text)
            .into_iter()
            .collect()
    }

    fn exact(a: &str, b: &str, n: i64) -> f64 {
        let (x, y) = (set(a, n), set(b, n));
        x.intersection(&y).count() as f64 / x.union(&y).count() as f64
    }

    #[test]
    fn small_sets_give_the_exact_jaccard() {
        let texts = [
            "the quick brown fox jumps over the lazy dog",
            "the quick brown fox jumped over the lazy dog",
            "a quick brown fox jumps over a lazy dog today",
            "nothing in common here at all",
            "the the the the",
            "two words",
        ];
        for n in [1, 2, 3, 5] {
            let config = shingle_config(n, 256).unwrap();
            let s = sketches(config, &texts);
            for a in 0..texts.len() {
                for b in 0..texts.len() {
                    let got = jaccard(s.get(a), s.get(b), config.size);
                    assert!(
                        (got - exact(texts[a], texts[b], n)).abs() < 1e-12,
                        "{n} {a} {b}"
                    );
                }
            }
        }
        // Hand-worked: 7 shingles each; the 3 holding "jumps" differ from the 3 holding
        // "jumped", so 4 are shared of 10 in all.
        let config = shingle_config(3, 256).unwrap();
        let s = sketches(config, &texts[..2]);
        assert!((jaccard(s.get(0), s.get(1), config.size) - 0.4).abs() < 1e-12);
    }

    /// In whole-only mode a document of at most `size` distinct shingles gets its whole set (as a
    /// bottom-`size` sketch has it) and any other an empty one, repeats counted once.
    #[test]
    fn whole_only_sketches_keep_small_sets_whole_and_no_others() {
        let whole = digest_config(2, -4).unwrap();
        let bottom = shingle_config(2, 4).unwrap();
        let (mut got, mut want) = (Vec::new(), Vec::new());
        for (words, small) in [
            (vec![1u64, 2, 3, 4, 5], true),             // 4 shingles
            (vec![1u64, 2, 3, 4, 5, 6], false),         // 5
            (vec![7u64, 8, 7, 8, 7, 8, 7, 8, 7], true), // 2 distinct of 8
            (vec![9u64], true),                         // 1 (fewer words than the shingle)
            (vec![], true),                             // no words: empty either way
        ] {
            sketch_of_words(whole, &words, &mut got);
            sketch_of_words(bottom, &words, &mut want);
            if small {
                assert_eq!(got, want, "{words:?}");
            } else {
                assert!(got.is_empty() && want.len() == 4, "{words:?}");
            }
        }
        assert!(digest_config(2, -(1 << 21)).is_err());
        assert!(digest_config(2, i64::MIN).is_err());
        assert!(shingle_config(2, -4).is_err());
    }

    #[test]
    fn word_order_matters() {
        let config = shingle_config(2, 16).unwrap();
        let s = sketches(config, &["a b", "b a"]);
        assert_eq!(jaccard(s.get(0), s.get(1), 16), 0.0);
    }

    #[test]
    fn truncated_sketches_estimate_from_the_smallest_of_the_union() {
        let words: Vec<String> = (0..400).map(|w| format!("w{w}")).collect();
        let a = words[..300].join(" ");
        let b = words[100..].join(" ");
        let config = shingle_config(1, 64).unwrap();
        let s = sketches(config, &[a.as_str(), b.as_str()]);
        assert_eq!(s.get(0).len(), 64);
        // The estimator by its definition: the 64 smallest shingle hashes of the union, and
        // how many of them are in both sets.
        let all = |t: &str| -> BTreeSet<SketchHash> {
            let mut sc = Scratch::default();
            word_token_hashes(t, &mut sc)
                .iter()
                .map(|&h| shingle_hash(&[h]))
                .collect()
        };
        let (x, y) = (all(&a), all(&b));
        let smallest: Vec<SketchHash> = x.union(&y).copied().take(64).collect();
        let both = smallest
            .iter()
            .filter(|h| x.contains(h) && y.contains(h))
            .count();
        assert_eq!(jaccard(s.get(0), s.get(1), 64), both as f64 / 64.0);
        // and it is near the true 200 / 400.
        assert!((jaccard(s.get(0), s.get(1), 64) - 0.5).abs() < 0.2);
    }

    #[test]
    fn texts_without_words_share_nothing_but_their_key() {
        let config = shingle_config(3, 16).unwrap();
        let s = sketches(config, &["", "  ", "some words", "!!", "!!"]);
        assert_eq!(jaccard(s.get(0), s.get(1), 16), 0.0);
        assert_eq!(jaccard(s.get(0), s.get(2), 16), 0.0);
        assert_eq!(jaccard(s.get(3), s.get(4), 16), 0.0);
        assert_eq!(s.keys[3], s.keys[4]);
        assert_ne!(s.keys[0], s.keys[1]);
        assert_ne!(s.keys[0], s.keys[3]);
    }

    #[test]
    fn content_key_is_xxh3_64() {
        // The published XXH3-64 of the empty input (seed 0) and of "abc".
        assert_eq!(content_key(b""), 0x2D06_8005_38D3_94C2);
        assert_eq!(content_key(b"abc"), 0x78AF_5F94_892F_3950);
    }

    #[test]
    fn the_threshold_check_agrees_with_the_bottom_k_of_the_sets() {
        // Sets drawn with a shared part, sketched as the `size` smallest of each; the reference
        // takes the `size` smallest of the union of the whole sets and counts those in both.
        let mut s = 7u64;
        for round in 0..3000 {
            let size = [4usize, 16, 64, 1024][round % 4];
            let n_both = (xorshift64(&mut s) % 300) as usize;
            let n_a = (xorshift64(&mut s) % 300) as usize;
            let n_b = [0, 1, 5, n_a, (xorshift64(&mut s) % 300) as usize][round % 5];
            let mut values = BTreeSet::new();
            while values.len() < n_both + n_a + n_b {
                // 24-bit values: the sketches of small sets end early and interleave closely.
                values.insert((xorshift64(&mut s) >> 40) as u32);
            }
            let mut values: Vec<u32> = values.into_iter().collect();
            for i in (1..values.len()).rev() {
                values.swap(i, (xorshift64(&mut s) % (i as u64 + 1)) as usize);
            }
            let shared = &values[..n_both];
            let a: BTreeSet<u32> = shared
                .iter()
                .chain(&values[n_both..n_both + n_a])
                .copied()
                .collect();
            let b: BTreeSet<u32> = shared
                .iter()
                .chain(&values[n_both + n_a..])
                .copied()
                .collect();
            let union: Vec<u32> = a.union(&b).copied().take(size).collect();
            let in_both = union
                .iter()
                .filter(|v| a.contains(v) && b.contains(v))
                .count();
            let want = if union.is_empty() {
                0.0
            } else {
                in_both as f64 / union.len() as f64
            };
            let sa: Vec<u32> = a.iter().copied().take(size).collect();
            let sb: Vec<u32> = b.iter().copied().take(size).collect();
            assert_eq!(jaccard(&sa, &sb, size), want);
            assert_eq!(jaccard(&sb, &sa, size), want);
            for threshold in [0.05, 0.5, 0.8, want, 0.95, 1.0] {
                let got = jaccard_at_least(&sa, &sb, size, threshold);
                assert_eq!(
                    got,
                    (want >= threshold).then_some(want),
                    "{threshold} {want}"
                );
            }
        }
    }

    #[test]
    fn bad_arguments_are_errors() {
        assert!(shingle_config(0, 16).is_err());
        assert!(shingle_config(3, 0).is_err());
        let s = Ranges::new(&[0], &[0], &[]).unwrap();
        assert!(jaccard_pairs(&s, 16, &[0], &[1]).is_err());
        assert!(jaccard_pairs(&s, 16, &[0, 0], &[0]).is_err());
        assert!(Ranges::new(&[0], &[2], &[5, 3]).is_err());
        assert!(Ranges::new(&[0], &[3], &[1, 2]).is_err());
        assert!(Ranges::new(&[1], &[0], &[1, 2]).is_err());
        assert!(Ranges::new(&[0, 1], &[2], &[1, 2]).is_err());
        let r = Ranges::new(&[1, 0], &[2, 2], &[1, 2]).unwrap();
        assert_eq!((r.get(0), r.get(1)), (&[2u32][..], &[1u32, 2][..]));
        assert_eq!(jaccard_pairs(&r, 16, &[0], &[1]).unwrap(), vec![0.5]);
    }
}
