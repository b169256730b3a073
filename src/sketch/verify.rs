//! Checking candidate pairs by the Jaccard similarity of their word-shingle sets.
//!
//! A simhash fingerprint estimates the cosine of two feature vectors with 64 bits, so at a
//! distance small enough to be precise it misses many pairs that a set similarity would call
//! near-duplicates. Verification lets the fingerprints propose candidates generously (a larger
//! k) and keeps the pairs whose word-shingle sets have Jaccard similarity at or above a threshold.
//!
//! Each document gets a *sketch*: the distinct hashes of its word n-gram shingles, sorted and
//! cut to the `size` smallest (a bottom-k sketch, Broder 1997). Words are the fingerprints' word
//! tokens, each taken as 128 bits (its FNV-1a 64 hash, which a fingerprint of word features
//! leaves ready, and the XXH3-64 of its bytes: [`Scratch::token_identities`]), and a shingle's
//! hash chains the SplitMix64 output function over them: well mixed, so the smallest hashes are
//! a random sample of the shingles, and it depends on word order. A shingle's hash has 63 bits
//! ([`SketchHash`], the top bit clear): two different shingles share it with probability 2^-63,
//! and since each word counts with 128 bits, one chance agreement of two words never makes all
//! the shingles that hold them agree.
//!
//! The sets where one chance agreement could decide (a set of one shingle is at Jaccard 1 with
//! any other whose one shingle hashes alike) carry more: a set of at most [`CHECKED_MAX`]
//! shingles also holds a *check* of each shingle, a second 64-bit hash with the top bit set
//! (sorted after the shingle hashes). Two sets that both carry checks are compared on all their
//! values, shingles and checks: with no chance agreement that is exactly their Jaccard (every
//! shared shingle counts twice, on both sides of the ratio), and one chance agreement of a
//! shingle hash alone adds one value of the doubled sets, not a whole shingle (two unrelated
//! sets of one shingle then have 1/3, not 1). A set with checks and one without compare on
//! their shingle hashes. docs/evidence.md states what this leaves at a given corpus size.
//!
//! For two documents with fewer than `size` shingles each, the Jaccard of the sketches is
//! exact; beyond that it is the bottom-k estimate: among the `size` smallest hashes of the
//! union, the share present in both sketches.

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::fingerprint::encoders::mix64;
use crate::runtime::simd::{merge_eights, prefetch_line};
use crate::text::features::{word_token_hashes, Scratch};

/// Sketches of many documents, concatenated: document d's hashes are
/// `hashes[offsets[d]..offsets[d + 1]]`, sorted ascending and distinct; `keys[d]` is the
/// content key of its normalized text.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Sketches {
    pub offsets: Vec<u64>,
    pub hashes: Vec<SketchHash>,
    pub keys: Vec<ContentKey>,
}

/// The content key of a normalized text: its XXH3-128 (seed 0) as `[low 64 bits, high 64
/// bits]`. Documents with equal keys are taken as copies of one text without comparing them
/// (a first pass gives a text's later copies the fingerprint of its first): two different texts
/// share a key with probability 2^-128, so among 10^10 texts about 10^20 / 2^129 = 1.5 x 10^-19
/// pairs ever do.
pub type ContentKey = [u64; 2];

#[inline]
pub fn content_key(text: &[u8]) -> ContentKey {
    let h = xxhash_rust::xxh3::xxh3_128(text);
    [h as u64, (h >> 64) as u64]
}

/// Content keys handed over as 64-bit words, two a key (low half first).
pub fn keys_of_words(words: &[u64]) -> Result<&[ContentKey]> {
    if !words.len().is_multiple_of(2) {
        return Err(Error::invalid(format!(
            "content keys come as pairs of 64-bit words, got {} words",
            words.len()
        )));
    }
    Ok(bytemuck::cast_slice(words))
}

/// Content keys as 64-bit words, two a key (low half first).
pub fn words_of_keys(keys: &[ContentKey]) -> Vec<u64> {
    keys.as_flattened().to_vec()
}

/// A shingle's hash in a sketch (63 bits, the top bit clear), or a check ([`CHECK_BIT`] set).
pub type SketchHash = u64;

/// The bit set in a check and clear in a shingle's hash.
pub const CHECK_BIT: u64 = 1 << 63;

/// Sets of at most this many shingles carry a check of each (when the sketch has room for
/// them): at a threshold above 1/3, a pair of sets that one chance agreement of shingle hashes
/// could make near holds at most 2 shingles each (`1 / (a + b - 1) >= t`).
pub const CHECKED_MAX: usize = 2;

/// Seeds the checks' chain, apart from the shingle hashes'.
const CHECK_SEED: u64 = 0xC4EC_0B5E_D1A5_7E11;

/// The shingle hashes of a sketch, without its checks.
#[inline]
pub fn shingles_of(sketch: &[SketchHash]) -> &[SketchHash] {
    if sketch.last().is_some_and(|&h| h & CHECK_BIT != 0) {
        &sketch[..sketch.partition_point(|&h| h & CHECK_BIT == 0)]
    } else {
        sketch
    }
}

/// Whether a sketch carries checks.
#[inline]
fn has_checks(sketch: &[SketchHash]) -> bool {
    sketch.last().is_some_and(|&h| h & CHECK_BIT != 0)
}

/// Two sketches as they compare: whole when both carry checks or neither does, else their
/// shingle hashes.
#[inline]
pub fn comparable<'a>(
    a: &'a [SketchHash],
    b: &'a [SketchHash],
) -> (&'a [SketchHash], &'a [SketchHash]) {
    if has_checks(a) == has_checks(b) {
        (a, b)
    } else {
        (shingles_of(a), shingles_of(b))
    }
}

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

    /// Lists of hashes in any order (prefix lists, rarest first), or sketches whose order is
    /// known (those of digest files this library wrote, read where they lie): as
    /// [`Ranges::new`] checks them, but for their order, which would read every sketch whole
    /// where a check of a pair reads a few of its hashes. A sketch out of order gives a wrong
    /// Jaccard, never a read out of bounds.
    pub fn unordered(starts: &'a [u64], ends: &'a [u64], hashes: &'a [SketchHash]) -> Result<Self> {
        if starts.len() != ends.len() {
            return Err(Error::invalid(format!(
                "{} list starts but {} ends",
                starts.len(),
                ends.len()
            )));
        }
        let n = hashes.len() as u64;
        if let Some((&a, &b)) = starts.iter().zip(ends).find(|(&a, &b)| a > b || b > n) {
            return Err(Error::invalid(format!(
                "list range {a}..{b} out of {n} hashes"
            )));
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

/// The chain of a shingle's words from `seed`: each word's two hashes, `first` through the
/// SplitMix64 output function and `second` after it, so that two different words agree in a
/// given place of a given shingle with probability 2^-64, and in every place only when both
/// their hashes agree.
#[inline]
fn chain(seed: u64, first: &[u64], second: &[u64]) -> u64 {
    let h = first
        .iter()
        .zip(second)
        .fold(seed, |h, (&a, &b)| mix64(h ^ a) ^ b);
    mix64(h)
}

/// The hash of a shingle from its words' two hashes (63 bits).
#[inline]
pub(crate) fn shingle_hash(first: &[u64], second: &[u64]) -> SketchHash {
    chain(crate::PI_SEED, first, second) >> 1
}

/// The check of a shingle (see the module's account): a second hash, the top bit set.
#[inline]
fn shingle_check(first: &[u64], second: &[u64]) -> SketchHash {
    chain(CHECK_SEED, first, second) | CHECK_BIT
}

/// The sketch of a document from its words' two hashes (see [`Scratch::token_identities`]),
/// written to `out` (cleared first). A document of fewer than `ngram` words is one shingle; one
/// without words has an empty sketch. A set of at most [`CHECKED_MAX`] shingles gets their
/// checks too, when `size` has room for them.
///
/// Each shingle is hashed once, and on a document of more than twice `size` shingles kept only
/// while it is below the largest of the `size` smallest distinct hashes found so far: one compare
/// rejects most of a long document's shingles, and the sort sees a few times `size` hashes, not
/// all of them.
pub fn sketch_of_words(
    config: ShingleConfig,
    words: &[u64],
    checks: &[u64],
    out: &mut Vec<SketchHash>,
) {
    out.clear();
    if words.is_empty() || words.len() != checks.len() {
        return;
    }
    let width = config.ngram.min(words.len());
    if config.whole_only {
        let shingles = words
            .windows(width)
            .zip(checks.windows(width))
            .map(|(w, c)| shingle_hash(w, c));
        for h in shingles {
            if !out.contains(&h) {
                if out.len() == config.size {
                    out.clear(); // more than `size` distinct shingles: not sketched
                    return;
                }
                out.push(h);
            }
        }
        sort_shingle_hashes(out);
    } else {
        bottom_k(width, words, checks, config.size, out);
    }
    let n = out.len();
    if n <= CHECKED_MAX && 2 * n <= config.size {
        // The check of each shingle, from the first window that makes it.
        let mut found = [0u64; CHECKED_MAX];
        let mut left = n;
        for (w, c) in words.windows(width).zip(checks.windows(width)) {
            if left == 0 {
                break;
            }
            let at = out[..n].binary_search(&shingle_hash(w, c)).unwrap_or(0);
            if found[at] == 0 {
                found[at] = shingle_check(w, c);
                left -= 1;
            }
        }
        out.extend_from_slice(&found[..n]);
        out.sort_unstable();
        out.dedup();
    }
}

/// Sets of up to this many hashes are sorted by [`sort_shingle_hashes`]'s buckets; larger ones
/// by `sort_unstable`.
const BUCKET_SORT_MAX: usize = 2048;

/// Sorts shingle hashes (63 bits, spread evenly: [`shingle_hash`]) ascending: the same order as
/// `sort_unstable`, about twice as fast on the sets of a few hundred to a few thousand hashes a
/// document holds. A counting pass by their top bits (about one hash a bucket) puts them nearly
/// in order in the second half of `hashes` (grown for it, then cut back), and an insertion
/// pass finishes the order, moving each hash past the few of its bucket. Any values sort: a
/// hash with the top bit set goes to the last bucket, and a pass that moves hashes far (values
/// that are not spread evenly) is finished by `sort_unstable`.
fn sort_shingle_hashes(hashes: &mut Vec<SketchHash>) {
    let n = hashes.len();
    if !(32..=BUCKET_SORT_MAX).contains(&n) {
        hashes.sort_unstable();
        return;
    }
    // Between n and 2n buckets: 2^bits >= n.
    let bits = usize::BITS - (n - 1).leading_zeros();
    let shift = 63 - bits;
    let last = (1usize << bits) - 1;
    let bucket = |h: u64| ((h >> shift) as usize).min(last);
    let mut starts = [0u16; BUCKET_SORT_MAX + 1];
    let starts = &mut starts[..last + 2];
    for &h in hashes.iter() {
        starts[bucket(h) + 1] += 1;
    }
    for b in 1..starts.len() {
        starts[b] += starts[b - 1];
    }
    hashes.resize(2 * n, 0);
    let (sorted, spread) = hashes.split_at_mut(n);
    for &h in sorted.iter() {
        let at = &mut starts[bucket(h)];
        spread[usize::from(*at)] = h;
        *at += 1;
    }
    // Each hash moves past the larger ones of its bucket; past `4 n` moves in all, the values
    // are not spread evenly, and the rest are sorted at once. The first step is taken without a
    // branch (the larger of the hash and the one before it goes last): a bucket of two needs no
    // more, and only a hash that must move two places or more (a bucket of three or more,
    // rare) takes the loop, whose branch the CPU cannot predict.
    sorted[0] = spread[0];
    let mut moves = 0;
    for i in 1..n {
        let (h, before) = (spread[i], sorted[i - 1]);
        sorted[i] = before.max(h);
        let h = before.min(h);
        sorted[i - 1] = h;
        moves += usize::from(h != before);
        let mut j = i - 1;
        while j > 0 && sorted[j - 1] > h {
            sorted[j] = sorted[j - 1];
            j -= 1;
            moves += 1;
        }
        sorted[j] = h;
        if moves > 4 * n {
            sorted[i + 1..].copy_from_slice(&spread[i + 1..]);
            sorted.sort_unstable();
            break;
        }
    }
    hashes.truncate(n);
}

/// Removes the repeats of sorted `hashes` (`Vec::dedup`), without a branch on the data: each
/// hash is written, and kept when it differs from the one before.
fn dedup_sorted(hashes: &mut Vec<SketchHash>) {
    let Some(&first) = hashes.first() else {
        return;
    };
    let (mut kept, mut last) = (1, first);
    for i in 1..hashes.len() {
        let h = hashes[i];
        hashes[kept] = h;
        kept += usize::from(h != last);
        last = h;
    }
    hashes.truncate(kept);
}

/// Hashes a block holds (see [`for_each_shingle_block`]).
const SHINGLE_BLOCK: usize = 64;

/// Writes to `block` the hashes of the shingles of `width` words that start at word `from` and
/// the ones after it, one a slot. The usual widths are hashed four shingles at a time, their
/// chains unrolled and interleaved so that their multiplies overlap.
#[inline]
pub fn hash_shingles(
    width: usize,
    words: &[u64],
    checks: &[u64],
    from: usize,
    block: &mut [SketchHash],
) {
    #[inline(always)]
    fn fixed<const W: usize>(words: &[u64], checks: &[u64], from: usize, block: &mut [u64]) {
        let end = from + block.len() + W - 1;
        let (words, checks) = (&words[from..end], &checks[from..end]);
        let mut quads = block.chunks_exact_mut(4);
        let mut i = 0;
        for quad in &mut quads {
            let mut h = [crate::PI_SEED; 4];
            for k in 0..W {
                for (l, hl) in h.iter_mut().enumerate() {
                    *hl = mix64(*hl ^ words[i + l + k]) ^ checks[i + l + k];
                }
            }
            for (slot, hl) in quad.iter_mut().zip(h) {
                *slot = mix64(hl) >> 1;
            }
            // Kept opaque to the optimizer: the loop left to vectorize runs on SSE lanes,
            // whose 64-bit multiplies are made of three 32-bit ones (6.4 against 3.3 ns a
            // shingle of three words).
            i = std::hint::black_box(i + 4);
        }
        for (j, slot) in quads.into_remainder().iter_mut().enumerate() {
            *slot = shingle_hash(&words[i + j..i + j + W], &checks[i + j..i + j + W]);
        }
    }
    let done = crate::runtime::simd::shingle_chains(
        crate::PI_SEED,
        width,
        &words[from..],
        &checks[from..],
        block,
    );
    let (from, block) = (from + done, &mut block[done..]);
    match width {
        1 => fixed::<1>(words, checks, from, block),
        2 => fixed::<2>(words, checks, from, block),
        3 => fixed::<3>(words, checks, from, block),
        4 => fixed::<4>(words, checks, from, block),
        5 => fixed::<5>(words, checks, from, block),
        _ => {
            let shingles = words[from..]
                .windows(width)
                .zip(checks[from..].windows(width));
            for (slot, (w, c)) in block.iter_mut().zip(shingles) {
                *slot = shingle_hash(w, c);
            }
        }
    }
}

/// Calls `f` on the hashes of the shingles of `width` words, in order, up to
/// [`SHINGLE_BLOCK`] at a time.
#[inline]
fn for_each_shingle_block(
    width: usize,
    words: &[u64],
    checks: &[u64],
    mut f: impl FnMut(&[SketchHash]),
) {
    let mut block = [0u64; SHINGLE_BLOCK];
    let shingles = words.len() + 1 - width;
    let mut from = 0;
    while from < shingles {
        let m = SHINGLE_BLOCK.min(shingles - from);
        hash_shingles(width, words, checks, from, &mut block[..m]);
        f(&block[..m]);
        from += m;
    }
}

/// The `size` smallest distinct shingle hashes of a document, sorted, in `out` (empty on entry).
/// A hash at or above the largest of the `size` smallest found so far cannot be among them, and
/// is rejected by one compare; the others gather until twice `size` are held, then are sorted,
/// deduplicated and cut back to `size`.
///
/// On a long document that bound falls slowly (after `m` shingles it keeps about `size / m` of
/// the next ones, so about `2 size (1 + ln(n / 2 size))` hashes are sorted), and the first cut sets a
/// lower one: from the share of distinct hashes among the shingles gathered so far, the bound
/// below which about [`ESTIMATE_HALVES`] halves of `size` of the document's distinct hashes
/// are expected (the hashes are spread evenly). It is only an estimate: when fewer than `size`
/// distinct hashes fall below it (a document whose repeats grow towards its end), the document
/// is read again with the exact bound alone. The result is the same either way.
fn bottom_k(width: usize, words: &[u64], checks: &[u64], size: usize, out: &mut Vec<SketchHash>) {
    let gather = 2 * size.max(SHINGLE_BLOCK);
    if words.len() <= gather {
        // Too few shingles for a cut to pay: all of them, sorted once.
        // Room for the sort's second half too (see `sort_shingle_hashes`).
        let shingles = words.len() + 1 - width;
        out.reserve(2 * shingles);
        out.resize(shingles, 0);
        hash_shingles(width, words, checks, 0, out);
        sort_shingle_hashes(out);
        dedup_sorted(out);
        out.truncate(size);
        return;
    }
    if !bounded_bottom_k(width, words, checks, size, true, out) {
        out.clear();
        bounded_bottom_k(width, words, checks, size, false, out);
    }
}

/// How many halves of `size` distinct hashes [`bottom_k`]'s estimated bound is set to keep: 3
/// (1.5 times `size`) took 0.588 CPU s for the suite's code, where 2 times took 0.601, 1.25
/// times 0.594 and no estimate 0.610.
const ESTIMATE_HALVES: u64 = 3;

/// [`bottom_k`] of a long document, with (`estimate`) or without the estimated bound: false
/// when the estimate left fewer than `size` distinct hashes below it (`out` is then not the
/// sketch).
fn bounded_bottom_k(
    width: usize,
    words: &[u64],
    checks: &[u64],
    size: usize,
    estimate: bool,
    out: &mut Vec<SketchHash>,
) -> bool {
    let gather = 2 * size.max(SHINGLE_BLOCK);
    let shingles = (words.len() + 1 - width) as u64;
    let (mut bound, mut read) = (u64::MAX, 0u64);
    let (mut tried, mut estimated) = (!estimate, false);
    for_each_shingle_block(width, words, checks, |block| {
        if out.len() + block.len() > gather {
            sort_shingle_hashes(out);
            dedup_sorted(out);
            if !tried {
                // The distinct share of the shingles read so far (all gathered: this is the
                // first cut), taken for the whole document.
                tried = true;
                let distinct = (out.len() as u64 * shingles).div_ceil(read.max(1));
                let keep = ESTIMATE_HALVES * size as u64 / 2;
                if distinct > keep {
                    estimated = true;
                    // Below the bound, `keep` of `distinct` hashes spread over 63 bits.
                    let b = ((u128::from(keep) << 63) / u128::from(distinct)) as u64;
                    bound = bound.min(b);
                    out.truncate(out.partition_point(|&h| h < bound));
                }
            }
            out.truncate(size);
            if out.len() == size {
                bound = bound.min(out[size - 1]);
            }
        }
        read += block.len() as u64;
        // Without a branch on the data: each hash written, and kept when below the bound.
        let mut kept = out.len();
        out.resize(kept + block.len(), 0);
        for &h in block {
            out[kept] = h;
            kept += usize::from(h < bound);
        }
        out.truncate(kept);
    });
    sort_shingle_hashes(out);
    dedup_sorted(out);
    out.truncate(size);
    out.len() == size || !estimated
}

/// The sketch of one normalized text, written to `out` (cleared first).
pub fn sketch(config: ShingleConfig, text: &str, scratch: &mut Scratch, out: &mut Vec<SketchHash>) {
    word_token_hashes(text, scratch);
    let (words, checks) = scratch.token_identities(text);
    sketch_of_words(config, words, checks, out);
}

/// The sketches of many normalized texts, computed in parallel (see [`try_sketches`]; a text
/// whose buffers cannot be had panics).
pub fn sketches<T: AsRef<str> + Sync>(config: ShingleConfig, texts: &[T]) -> Sketches {
    try_sketches(config, texts).unwrap_or_else(|e| panic!("{e}"))
}

/// The sketches of many normalized texts, computed in parallel: [`Error::OutOfMemoryAt`] the
/// first text whose buffers cannot be had.
pub fn try_sketches<T: AsRef<str> + Sync>(config: ShingleConfig, texts: &[T]) -> Result<Sketches> {
    let each: Vec<(Vec<SketchHash>, ContentKey)> = texts
        .par_iter()
        .enumerate()
        .map_init(Scratch::default, |scratch, (d, text)| {
            let text = text.as_ref();
            let mut out = Vec::new();
            scratch.reserve_sketch(text).map_err(|e| e.at(d))?;
            sketch(config, text, scratch, &mut out);
            out.shrink_to_fit(); // held until every text is sketched
            scratch.release_after(text.len());
            Ok((out, content_key(text.as_bytes())))
        })
        .collect::<Result<_>>()?;
    let mut offsets = Vec::with_capacity(each.len() + 1);
    offsets.push(0u64);
    let mut hashes = Vec::with_capacity(each.iter().map(|e| e.0.len()).sum());
    let mut keys = Vec::with_capacity(each.len());
    for (s, key) in &each {
        hashes.extend_from_slice(s);
        offsets.push(hashes.len() as u64);
        keys.push(*key);
    }
    Ok(Sketches {
        offsets,
        hashes,
        keys,
    })
}

/// The Jaccard similarity of two bottom-`size` sketches: exact when both sets have fewer than
/// `size` shingles (the sketches hold them whole, and all of their union is counted, however
/// large), the bottom-k estimate otherwise (among the `size` smallest hashes of the union, the
/// share present in both). A text without words shares no shingle with any other
/// (0): only its copies, found by their content key, are its duplicates.
pub fn jaccard(a: &[SketchHash], b: &[SketchHash], size: usize) -> f64 {
    let (a, b) = comparable(a, b);
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
    let (a, b) = comparable(a, b);
    comparable_jaccard_at_least(a, b, size, threshold)
}

/// [`jaccard_at_least`] of two sketches already as they compare (as [`comparable`] gives
/// them): for a caller that knows which carry checks without reading their ends.
pub fn comparable_jaccard_at_least(
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
/// sketches; None once the share can no longer reach `threshold` (never for 0). When neither
/// sketch is cut (each holds fewer than `size` hashes: its whole set), the whole union counts,
/// so that two whole sets whose union passes `size` still get their exact Jaccard.
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
    let size = if a.len() < size && b.len() < size {
        a.len() + b.len()
    } else {
        size
    };
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
        // Eight hashes of each sketch a step where the CPU can, the same merge: a hash a step
        // waits on the last step's compare, and took 0.8 us a pair compared on the manual
        // pages.
        let (vx, vy, vboth) = merge_eights(a, b, x, y, both, size, REACH_STEPS / 8);
        if (vx, vy) != (x, y) {
            (x, y, both) = (vx, vy, vboth);
            union = x + y - both;
            continue;
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

/// Pairs of rows `(i[p], j[p])` of `n` sketches: as many of each, every row in range.
fn check_pair_rows(i: &[i64], j: &[i64], n: usize) -> Result<()> {
    if i.len() != j.len() {
        return Err(Error::invalid(format!(
            "i and j must have the same length, got {} and {}",
            i.len(),
            j.len()
        )));
    }
    let n = n as i64;
    if let Some(bad) = i.iter().chain(j).find(|&&r| r < 0 || r >= n) {
        return Err(Error::invalid(format!(
            "row {bad} out of range for {n} sketches"
        )));
    }
    Ok(())
}

/// The Jaccard similarity of each pair of rows `(i[p], j[p])` of `sketches`, in parallel.
pub fn jaccard_pairs(sketches: &Ranges<'_>, size: usize, i: &[i64], j: &[i64]) -> Result<Vec<f64>> {
    check_pair_rows(i, j, sketches.len())?;
    Ok(i.par_iter()
        .zip(j)
        .map(|(&a, &b)| jaccard(sketches.get(a as usize), sketches.get(b as usize), size))
        .collect())
}

/// The Jaccard similarity of the sketches of each pair `p`: row `p` of `a` and row `p` of `b`
/// (two sets of ranges over their own hashes: the sketches of a pair's two documents may lie in
/// two buffers, such as two memory-mapped files, and are read where they lie).
pub fn jaccard_zip(a: &Ranges<'_>, b: &Ranges<'_>, size: usize) -> Result<Vec<f64>> {
    if a.len() != b.len() {
        return Err(Error::invalid(format!(
            "{} sketches on one side but {} on the other",
            a.len(),
            b.len()
        )));
    }
    Ok((0..a.len())
        .into_par_iter()
        .map(|p| jaccard(a.get(p), b.get(p), size))
        .collect())
}

/// The Jaccard similarity of the sketches of each pair of rows `(i[p], j[p])`, where the rows
/// are those of `parts` one after another (row d of the second part is row `parts[0].len() + d`):
/// the sketches of a task's pairs may lie in several buffers, such as the memory-mapped files of
/// several partitions, and are read where they lie. A pair below `at_least` (of two whole sets)
/// or `cut_at_least` (a sketch cut at `size`) gets -1, found as [`jaccard_at_least`] finds it:
/// most candidate pairs are refused after a few of their hashes.
pub fn jaccard_parts(
    parts: &[Ranges<'_>],
    size: usize,
    i: &[i64],
    j: &[i64],
    (at_least, cut_at_least): (f64, f64),
) -> Result<Vec<f64>> {
    let sets: Vec<&[SketchHash]> = parts
        .iter()
        .flat_map(|part| (0..part.len()).map(|d| part.get(d)))
        .collect();
    check_pair_rows(i, j, sets.len())?;
    let mut out = vec![0.0; i.len()];
    // The pairs' sketches lie anywhere in the buffers: each chunk walks its pairs in order,
    // asking the cache for the sketches a few pairs ahead (and, twice as far, where they lie).
    out.par_chunks_mut(PAIRS_CHUNK)
        .zip(i.par_chunks(PAIRS_CHUNK).zip(j.par_chunks(PAIRS_CHUNK)))
        .for_each(|(out, (i, j))| {
            for k in 0..out.len() {
                if let (Some(&x), Some(&y)) =
                    (i.get(k + 2 * PAIRS_AHEAD), j.get(k + 2 * PAIRS_AHEAD))
                {
                    prefetch_line(&sets[x as usize]);
                    prefetch_line(&sets[y as usize]);
                }
                if let (Some(&x), Some(&y)) = (i.get(k + PAIRS_AHEAD), j.get(k + PAIRS_AHEAD)) {
                    for set in [sets[x as usize], sets[y as usize]] {
                        if let (Some(first), Some(last)) = (set.first(), set.last()) {
                            prefetch_line(first);
                            prefetch_line(last);
                        }
                    }
                }
                let (a, b) = (sets[i[k] as usize], sets[j[k] as usize]);
                let floor = if a.len() >= size || b.len() >= size {
                    cut_at_least
                } else {
                    at_least
                };
                out[k] = jaccard_at_least(a, b, size, floor).unwrap_or(-1.0);
            }
        });
    Ok(out)
}

/// Pairs a thread of [`jaccard_parts`] takes at a time.
const PAIRS_CHUNK: usize = 1 << 12;

/// How many pairs ahead [`jaccard_parts`] asks the cache for the sketches of a pair.
const PAIRS_AHEAD: usize = 8;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::xorshift64;
    use crate::text::features::{FeatureConfig, TokenKind};
    use std::collections::BTreeSet;

    /// The bottom-`size` Jaccard of two sets written out: the share of the first `size` values of
    /// their union that both hold, or of their whole union when each holds fewer than `size`.
    fn bottom_k_jaccard(a: &BTreeSet<u64>, b: &BTreeSet<u64>, size: usize) -> f64 {
        let whole = a.len() < size && b.len() < size;
        let take = if whole { usize::MAX } else { size };
        let union: Vec<u64> = a.union(b).copied().take(take).collect();
        if union.is_empty() {
            return 0.0;
        }
        let in_both = union
            .iter()
            .filter(|v| a.contains(v) && b.contains(v))
            .count();
        in_both as f64 / union.len() as f64
    }

    /// The `size` least distinct hashes of the shingles of `width` words: a sort of them all.
    fn bottom_k_oracle(words: &[u64], checks: &[u64], width: usize, size: usize) -> Vec<u64> {
        let mut want: Vec<u64> = words
            .windows(width)
            .zip(checks.windows(width))
            .map(|(w, c)| shingle_hash(w, c))
            .collect();
        want.sort_unstable();
        want.dedup();
        want.truncate(size);
        want
    }

    /// Sketches split over three parts give the Jaccard of the same rows of one buffer.
    #[test]
    fn parts_read_where_they_lie_as_one_buffer() {
        let mut s = 5u64;
        let sets: Vec<Vec<u64>> = (0..30)
            .map(|_| {
                let n = 1 + xorshift64(&mut s) % 12;
                let set: BTreeSet<u64> = (0..n).map(|_| xorshift64(&mut s) % 40).collect();
                set.into_iter().collect()
            })
            .collect();
        let flat: Vec<u64> = sets.concat();
        let ends: Vec<u64> = sets
            .iter()
            .scan(0u64, |at, v| {
                *at += v.len() as u64;
                Some(*at)
            })
            .collect();
        let starts: Vec<u64> = sets
            .iter()
            .zip(&ends)
            .map(|(v, e)| e - v.len() as u64)
            .collect();
        let whole = Ranges::new(&starts, &ends, &flat).unwrap();
        // Parts of rows 0..7, 7..19 and 19..30, each over its own copy of its hashes.
        let cuts = [0usize, 7, 19, 30];
        let owned: Vec<(Vec<u64>, Vec<u64>, Vec<u64>)> = cuts
            .windows(2)
            .map(|w| {
                let part = &sets[w[0]..w[1]];
                let hashes: Vec<u64> = part.concat();
                let mut at = 0u64;
                let (mut st, mut en) = (Vec::new(), Vec::new());
                for v in part {
                    st.push(at);
                    at += v.len() as u64;
                    en.push(at);
                }
                (st, en, hashes)
            })
            .collect();
        let parts: Vec<Ranges<'_>> = owned
            .iter()
            .map(|(st, en, h)| Ranges::new(st, en, h).unwrap())
            .collect();
        let i: Vec<i64> = (0..200).map(|_| (xorshift64(&mut s) % 30) as i64).collect();
        let j: Vec<i64> = (0..200).map(|_| (xorshift64(&mut s) % 30) as i64).collect();
        let want = jaccard_pairs(&whole, 1024, &i, &j).unwrap();
        assert_eq!(
            jaccard_parts(&parts, 1024, &i, &j, (0.0, 0.0)).unwrap(),
            want
        );
        // Below a floor: -1, else the same Jaccard (sketches of at least 8 hashes count as cut
        // at a size of 8, and take the other floor).
        for (size, floors) in [(1024, (0.5, 0.9)), (8, (0.9, 0.3))] {
            let all = jaccard_pairs(&whole, size, &i, &j).unwrap();
            let got = jaccard_parts(&parts, size, &i, &j, floors).unwrap();
            for (p, (&a, &b)) in i.iter().zip(&j).enumerate() {
                let cut = sets[a as usize].len() >= size || sets[b as usize].len() >= size;
                let floor = if cut { floors.1 } else { floors.0 };
                let expect = if all[p] >= floor { all[p] } else { -1.0 };
                assert_eq!(got[p], expect, "pair {p} at size {size}");
            }
        }
        // Each pair against the exact Jaccard of its two sets.
        for (p, (&a, &b)) in i.iter().zip(&j).enumerate() {
            let (x, y) = (&sets[a as usize], &sets[b as usize]);
            let common = x.iter().filter(|h| y.contains(h)).count() as f64;
            let union = (x.len() + y.len()) as f64 - common;
            assert!((want[p] - common / union).abs() < 1e-12);
        }
        assert!(jaccard_parts(&parts, 1024, &[30], &[0], (0.0, 0.0)).is_err());
    }

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
        let checks = |w: &[u64]| -> Vec<u64> { w.iter().map(|&x| x.wrapping_mul(3) + 1).collect() };
        for (words, small) in [
            (vec![1u64, 2, 3, 4, 5], true),             // 4 shingles
            (vec![1u64, 2, 3, 4, 5, 6], false),         // 5
            (vec![7u64, 8, 7, 8, 7, 8, 7, 8, 7], true), // 2 distinct of 8
            (vec![9u64], true),                         // 1 (fewer words than the shingle)
            (vec![], true),                             // no words: empty either way
        ] {
            sketch_of_words(whole, &words, &checks(&words), &mut got);
            sketch_of_words(bottom, &words, &checks(&words), &mut want);
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

    /// The sketch kept by its running bound is the `size` smallest distinct shingle hashes, as
    /// sorting them all gives: documents of many repeated words (so repeats cross each cut),
    /// sizes on either side of the point where the cuts start.
    #[test]
    fn the_bound_keeps_the_smallest_distinct_hashes() {
        let mut s = 5u64;
        for round in 0..200 {
            let size = [1usize, 3, 64, 100, 1024][round % 5];
            let len = (xorshift64(&mut s) % 5000) as usize;
            let vocabulary = 1 + xorshift64(&mut s) % 400;
            let words: Vec<u64> = (0..len).map(|_| xorshift64(&mut s) % vocabulary).collect();
            let checks: Vec<u64> = words.iter().map(|w| w ^ 0xABCD).collect();
            // Each width hashed by its own code (1 to 5) and by the general one (7).
            for ngram in [1usize, 2, 3, 4, 5, 7] {
                let config = shingle_config(ngram as i64, size as i64).unwrap();
                let mut got = Vec::new();
                sketch_of_words(config, &words, &checks, &mut got);
                let width = ngram.min(words.len().max(1));
                let want = bottom_k_oracle(&words, &checks, width, size);
                assert_eq!(shingles_of(&got), &want[..], "{len} words, size {size}");
            }
        }
    }

    /// The buckets sort as `sort_unstable` does: shingle hashes of every count around the
    /// bucket sort's bounds, with repeats (side by side, and two or three in a bucket), values
    /// with the top bit set, and values that all fall in one bucket (the insertion pass gives up
    /// on them and sorts the rest at once).
    #[test]
    fn shingle_hashes_sort_and_lose_their_repeats_as_the_standard_sort_does() {
        let mut s = 11u64;
        let mut cases: Vec<Vec<u64>> = Vec::new();
        for n in [
            0, 1, 2, 31, 32, 33, 100, 1000, 1024, 1025, 2047, 2048, 2049, 5000,
        ] {
            let spread: Vec<u64> = (0..n).map(|_| xorshift64(&mut s) >> 1).collect();
            cases.push(spread.clone());
            // Each hash twice, and three times in reverse: repeats within a bucket.
            cases.push(spread.iter().flat_map(|&h| [h, h]).collect());
            cases.push(spread.iter().rev().flat_map(|&h| [h, h ^ 1, h]).collect());
            cases.push((0..n).map(|_| (xorshift64(&mut s) % 7) << 60).collect());
            cases.push((0..n).map(|_| xorshift64(&mut s)).collect());
            cases.push((0..n as u64).map(|i| (n as u64 - i) ^ (3 << 61)).collect());
        }
        for hashes in cases {
            let mut want = hashes.clone();
            want.sort_unstable();
            let mut got = hashes.clone();
            sort_shingle_hashes(&mut got);
            assert_eq!(got, want, "{} hashes", hashes.len());
            want.dedup();
            dedup_sorted(&mut got);
            assert_eq!(got, want, "{} hashes", hashes.len());
        }
    }

    /// A long document's estimated bound: kept when at least `size` distinct hashes fall below
    /// it (words all distinct), given up when they do not (distinct words first, then a few
    /// repeated to the end, so that the share estimated at the first cut is far too high); the
    /// sketch is the oracle's either way (all shingle hashes sorted, repeats dropped, cut).
    #[test]
    fn the_estimated_bound_gives_the_smallest_distinct_hashes_or_is_given_up() {
        let mut s = 17u64;
        let distinct: Vec<u64> = (0..12_000).map(|_| xorshift64(&mut s)).collect();
        let mut repeated = distinct[..2_500].to_vec();
        repeated.extend((0..9_000).map(|i| distinct[5_000 + i % 40]));
        for (words, kept) in [(&distinct, true), (&repeated, false)] {
            let checks: Vec<u64> = words.iter().map(|w| w.rotate_left(17) ^ 0x5EED).collect();
            for (ngram, size) in [(3usize, 1024usize), (1, 1024), (2, 100)] {
                let want = bottom_k_oracle(words, &checks, ngram, size);
                let mut got = Vec::new();
                let estimated = bounded_bottom_k(ngram, words, &checks, size, true, &mut got);
                assert_eq!(estimated, kept, "{ngram} {size}");
                if estimated {
                    assert_eq!(got, want, "{ngram} {size}");
                }
                let config = shingle_config(ngram as i64, size as i64).unwrap();
                sketch_of_words(config, words, &checks, &mut got);
                assert_eq!(got, want, "{ngram} {size}");
            }
        }
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
            word_token_hashes(t, &mut sc);
            let (w, c) = sc.token_identities(t);
            w.iter()
                .zip(c)
                .map(|(&a, &b)| shingle_hash(&[a], &[b]))
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

    /// Two sets of fewer than `size` shingles each are held whole: their Jaccard is exact even
    /// where their union has more than `size` (a bottom-`size` estimate would take its smallest).
    #[test]
    fn whole_sets_give_the_exact_jaccard_past_size_in_their_union() {
        let words: Vec<String> = (0..80).map(|w| format!("w{w}")).collect();
        let a = words[..60].join(" ");
        let b = words[20..].join(" ");
        let config = shingle_config(1, 64).unwrap();
        let s = sketches(config, &[a.as_str(), b.as_str()]);
        assert_eq!((s.get(0).len(), s.get(1).len()), (60, 60));
        assert_eq!(jaccard(s.get(0), s.get(1), 64), 0.5); // 40 shared of 80
        assert_eq!(jaccard_at_least(s.get(0), s.get(1), 64, 0.5), Some(0.5));
        assert_eq!(jaccard_at_least(s.get(0), s.get(1), 64, 0.51), None);
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
    fn content_key_is_xxh3_128() {
        // The published XXH3-128 of the empty input (seed 0) and of "abc", low half first.
        assert_eq!(
            content_key(b""),
            [0x6001_C324_468D_497F, 0x99AA_06D3_0147_98D8]
        );
        assert_eq!(
            content_key(b"abc"),
            [0x78AF_5F94_892F_3950, 0x06B0_5AB6_733A_6185]
        );
        let words = words_of_keys(&[content_key(b"abc"), content_key(b"")]);
        assert_eq!(words.len(), 4);
        assert_eq!(keys_of_words(&words).unwrap()[0], content_key(b"abc"));
        assert!(keys_of_words(&words[..3]).is_err());
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
                values.insert(xorshift64(&mut s) >> 40);
            }
            let mut values: Vec<u64> = values.into_iter().collect();
            for i in (1..values.len()).rev() {
                values.swap(i, (xorshift64(&mut s) % (i as u64 + 1)) as usize);
            }
            let shared = &values[..n_both];
            let a: BTreeSet<u64> = shared
                .iter()
                .chain(&values[n_both..n_both + n_a])
                .copied()
                .collect();
            let b: BTreeSet<u64> = shared
                .iter()
                .chain(&values[n_both + n_a..])
                .copied()
                .collect();
            let want = bottom_k_jaccard(&a, &b, size);
            let sa: Vec<u64> = a.iter().copied().take(size).collect();
            let sb: Vec<u64> = b.iter().copied().take(size).collect();
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

    /// Long sketches of 64-bit values (checks' top bit among them: the order is unsigned),
    /// alike in every share from none to all, cut at sizes the union reaches inside a step of
    /// eight hashes or at its end: the merge eight hashes a step (where the CPU has it) counts
    /// what the bottom-k of the sets holds, and refuses a pair exactly when it is below the
    /// threshold.
    #[test]
    fn long_sketches_merge_to_the_bottom_k_of_their_sets() {
        let mut s = 31u64;
        for round in 0..1500 {
            let size = [1024usize, 1000, 17, 8, 3000][round % 5];
            let n = 1 + (xorshift64(&mut s) % 2500) as usize;
            let alike = [0.0, 0.5, 0.8, 0.95, 1.0][(round / 5) % 5];
            let a: BTreeSet<u64> = (0..n).map(|_| xorshift64(&mut s)).collect();
            let mut b = BTreeSet::new();
            for &v in &a {
                let keep = (xorshift64(&mut s) % 1000) as f64 / 1000.0 < alike;
                b.insert(if keep { v } else { xorshift64(&mut s) });
            }
            for _ in 0..xorshift64(&mut s) % 40 {
                b.insert(xorshift64(&mut s));
            }
            let want = bottom_k_jaccard(&a, &b, size);
            let sa: Vec<u64> = a.iter().copied().take(size).collect();
            let sb: Vec<u64> = b.iter().copied().take(size).collect();
            assert_eq!(jaccard(&sa, &sb, size), want, "round {round}");
            assert_eq!(jaccard(&sb, &sa, size), want, "round {round}");
            for threshold in [0.5, 0.8, want, 0.95] {
                assert_eq!(
                    comparable_jaccard_at_least(&sa, &sb, size, threshold),
                    (want >= threshold).then_some(want),
                    "round {round}: {threshold} {want}"
                );
            }
        }
    }

    /// Sets of one or two shingles carry a check of each, sorted after the shingle hashes; two
    /// sets with checks compare on all their values (exactly their Jaccard when nothing agrees
    /// by chance), a set with checks and one without on their shingle hashes.
    #[test]
    fn the_smallest_sets_carry_checks_and_compare_exactly() {
        let config = shingle_config(3, 1024).unwrap();
        let texts = [
            "tweetoscope",
            "Tweetoscope!",
            "password reader",
            "password reader tool",
            "password reader tool here",
            "password reader tool here and there",
        ];
        let s = sketches(config, &texts);
        for (d, shingles) in [(0, 1), (1, 1), (2, 1), (3, 1), (4, 2), (5, 4)] {
            let got = s.get(d);
            assert_eq!(shingles_of(got).len(), shingles, "{d}");
            let checks = got.len() - shingles;
            assert_eq!(checks, if shingles <= CHECKED_MAX { shingles } else { 0 });
            assert!(shingles_of(got).iter().all(|&h| h & CHECK_BIT == 0));
            assert!(got[shingles..].iter().all(|&h| h & CHECK_BIT != 0));
        }
        for a in 0..texts.len() {
            for b in 0..texts.len() {
                let want = exact(texts[a], texts[b], 3);
                assert_eq!(jaccard(s.get(a), s.get(b), 1024), want, "{a} {b}");
            }
        }
        // A bottom-1 sketch has no room for a check.
        let tight = sketches(shingle_config(3, 1).unwrap(), &texts[..1]);
        assert_eq!(tight.get(0).len(), 1);
    }

    /// The birthday mechanism, forced: shingle hashes cut to 12 bits make some of 2,000
    /// distinct one-shingle texts agree (about 2000^2 / 2^13 = 488 pairs); compared on shingle
    /// hashes alone those pairs have Jaccard 1, with their checks 1/3, so none is near at 0.8.
    #[test]
    fn checks_keep_chance_agreements_of_narrow_hashes_from_deciding() {
        let config = shingle_config(3, 1024).unwrap();
        let texts: Vec<String> = (0..2000).map(|i| format!("word{i}x")).collect();
        let s = sketches(config, &texts);
        let narrow: Vec<Vec<SketchHash>> = (0..texts.len())
            .map(|d| {
                let got = s.get(d);
                assert_eq!(got.len(), 2);
                // The shingle hash cut to 12 bits; the check kept.
                vec![got[0] >> 51, got[1]]
            })
            .collect();
        let (mut agree, mut near) = (0, 0);
        for a in 0..narrow.len() {
            for b in a + 1..narrow.len() {
                if narrow[a][0] == narrow[b][0] {
                    agree += 1;
                    assert_eq!(jaccard(&narrow[a][..1], &narrow[b][..1], 1024), 1.0);
                    assert!((jaccard(&narrow[a], &narrow[b], 1024) - 1.0 / 3.0).abs() < 1e-12);
                }
                near += usize::from(jaccard_at_least(&narrow[a], &narrow[b], 1024, 0.8).is_some());
            }
        }
        assert!((300..700).contains(&agree), "{agree} chance agreements");
        assert_eq!(near, 0);
    }

    /// A word counts with both its hashes: two words whose first hashes agree (as two FNV-1a
    /// hashes can) still make different shingles.
    #[test]
    fn a_word_is_taken_with_both_its_hashes() {
        let config = shingle_config(2, 1024).unwrap();
        let (mut a, mut b) = (Vec::new(), Vec::new());
        let words = [11u64, 22, 33, 44, 55];
        sketch_of_words(config, &words, &[1, 2, 3, 4, 5], &mut a);
        sketch_of_words(config, &words, &[1, 2, 9, 4, 5], &mut b);
        // 4 shingles each; the 2 that hold the third word differ.
        assert_eq!((a.len(), b.len()), (4, 4));
        assert!((jaccard(&a, &b, 1024) - 2.0 / 6.0).abs() < 1e-12);
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
        assert_eq!((r.get(0), r.get(1)), (&[2u64][..], &[1u64, 2][..]));
        assert_eq!(jaccard_pairs(&r, 16, &[0], &[1]).unwrap(), vec![0.5]);
    }

    /// Pairs whose two sketches lie in two buffers give what one buffer holding both gives.
    #[test]
    fn jaccard_zip_equals_the_pairs_of_one_buffer() {
        let mut state = 7u64;
        let mut sketch = || {
            let mut v: Vec<u64> = (0..20).map(|_| xorshift64(&mut state) % 40).collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let (left, right): (Vec<Vec<u64>>, Vec<Vec<u64>>) =
            (0..30).map(|_| (sketch(), sketch())).unzip();
        let ranges = |sets: &[Vec<u64>]| {
            let (mut starts, mut ends, mut hashes) = (Vec::new(), Vec::new(), Vec::new());
            for s in sets {
                starts.push(hashes.len() as u64);
                hashes.extend_from_slice(s);
                ends.push(hashes.len() as u64);
            }
            (starts, ends, hashes)
        };
        let (sa, ea, ha) = ranges(&left);
        let (sb, eb, hb) = ranges(&right);
        // Pair p: left row p with right row 29 - p (read backwards through b's ranges).
        let (sb, eb): (Vec<u64>, Vec<u64>) = (
            sb.into_iter().rev().collect(),
            eb.into_iter().rev().collect(),
        );
        let a = Ranges::new(&sa, &ea, &ha).unwrap();
        let b = Ranges::new(&sb, &eb, &hb).unwrap();
        let got = jaccard_zip(&a, &b, 16).unwrap();
        let both: Vec<Vec<u64>> = left.iter().chain(right.iter()).cloned().collect();
        let (s, e, h) = ranges(&both);
        let one = Ranges::new(&s, &e, &h).unwrap();
        let i: Vec<i64> = (0..30).collect();
        let j: Vec<i64> = (0..30).map(|p| 30 + 29 - p).collect();
        assert_eq!(got, jaccard_pairs(&one, 16, &i, &j).unwrap());
        assert!(got.iter().any(|&x| x > 0.0) && got.iter().any(|&x| x < 1.0));
        assert!(jaccard_zip(&a, &Ranges::new(&[0], &[0], &[]).unwrap(), 16).is_err());
    }
}
