//! The other encoders of the seeds: a sparse top-N document encoder (seed 001), simhash of dense
//! vectors by random hyperplanes (seed 003) and a minhash-style cluster key (seed 004).
//!
//! Everything here is deterministic across platforms and thread counts: hashes are FNV-1a 64
//! extended by SplitMix64, random hyperplanes come from a seeded xoshiro256** stream turned
//! Gaussian with basic IEEE operations only, and every sum runs in a fixed order.

use std::cmp::Ordering;

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::fingerprint::simhash::HashKeyMap;
use crate::fingerprint::tally::{add_float, BitCounter};
use crate::runtime::simd;
use crate::text::features::{FeatureConfig, Field, Scratch};
use crate::text::hash::fnv1a_64;

// -- SplitMix64 and xoshiro256** ------------------------------------------------------------------

/// The SplitMix64 output function: a bijection of u64 in which every output bit depends on
/// every input bit (Steele, Lea and Flood, 2014).
#[inline]
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Word `j` of the extendable hash of `bytes` whose FNV-1a 64 is `seed`: SplitMix64 output
/// `j` of the stream seeded with it.
#[inline]
pub fn extended_word(seed: u64, j: usize) -> u64 {
    mix64(seed.wrapping_add(crate::GOLDEN_GAMMA.wrapping_mul(j as u64 + 1)))
}

/// Appends the first `words` 64-bit words of the extendable hash of `bytes` to `out`.
///
/// FNV-1a 64 of the bytes seeds a SplitMix64 stream, and word j is its output j. FNV-1a alone is
/// not enough past 64 bits: continuing it over a counter byte changes mostly the low bits, and
/// inputs that differ in their last byte share most high bits, so the words would be correlated.
/// SplitMix64 is counter-based (any word is computed directly) and its output function spreads
/// every bit of the FNV-1a hash over every output bit.
pub fn extended_hash(bytes: &[u8], words: usize, out: &mut Vec<u64>) {
    let seed = fnv1a_64(bytes);
    out.extend((0..words).map(|j| extended_word(seed, j)));
}

/// xoshiro256** (Blackman and Vigna), seeded through SplitMix64.
struct Xoshiro256 {
    s: [u64; 4],
}

impl Xoshiro256 {
    fn new(seed: u64) -> Self {
        Xoshiro256 {
            s: [0, 1, 2, 3].map(|j| extended_word(seed, j)),
        }
    }

    fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in [-1, 1), a multiple of 2^-52.
    fn symmetric(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 52) as f64) - 1.0
    }
}

/// ln(x) for a positive normal x from + - * / only, so that it is the same on every platform
/// (a libm's `ln` may differ in the last bit between systems, and with it the hyperplanes).
fn portable_ln(x: f64) -> f64 {
    let bits = x.to_bits();
    let mut exponent = ((bits >> 52) & 0x7ff) as i64 - 1023;
    let mut m = f64::from_bits((bits & ((1u64 << 52) - 1)) | (1023u64 << 52));
    if m > std::f64::consts::SQRT_2 {
        m *= 0.5;
        exponent += 1;
    }
    // ln m = 2 atanh(t) = 2 (t + t^3/3 + t^5/5 + ...), |t| <= 0.172: 12 terms are exact to 1e-19.
    let t = (m - 1.0) / (m + 1.0);
    let t2 = t * t;
    let mut series = 0.0;
    for k in (0..12).rev() {
        series = series * t2 + 1.0 / (2 * k + 1) as f64;
    }
    exponent as f64 * std::f64::consts::LN_2 + 2.0 * t * series
}

/// Standard normal deviates by Marsaglia's polar method, two per accepted pair.
struct Gaussian {
    rng: Xoshiro256,
    spare: Option<f64>,
}

impl Gaussian {
    fn new(seed: u64) -> Self {
        Gaussian {
            rng: Xoshiro256::new(seed),
            spare: None,
        }
    }

    fn next(&mut self) -> f64 {
        if let Some(x) = self.spare.take() {
            return x;
        }
        loop {
            let (u, v) = (self.rng.symmetric(), self.rng.symmetric());
            let s = u * u + v * v;
            if s < 1.0 && s > 0.0 {
                let f = (-2.0 * portable_ln(s) / s).sqrt();
                self.spare = Some(v * f);
                return u * f;
            }
        }
    }
}

// -- the sparse encoder (seed 001) ---------------------------------------------------------------

/// The largest sparse encoding accepted.
/// (A document's sums take 8 bytes a bit and its bit counters about 12: 2^20 bits is 20 MB.)
pub const MAX_SIZE: i64 = 1 << 20;

/// Token lists per call below which the batch runs on the calling thread.
const PARALLEL_MIN_ITEMS: usize = 64;

/// A simhash document encoder with a sparse output: the `active` largest of `size` column sums.
#[derive(Clone, Debug)]
pub struct Sparse {
    size: usize,
    active: usize,
    token_similarity: bool,
    weights: Option<HashKeyMap<f64>>,
}

impl Sparse {
    /// `size` bits (1..=2^20), `active` of them set (1..=size); with `token_similarity` each
    /// character of each token is added too. `weights` maps tokens to their weight (finite);
    /// tokens not in it weigh 1, and a token's characters weigh what the token does.
    pub fn new(
        size: i64,
        active: i64,
        token_similarity: bool,
        weights: Option<Vec<(String, f64)>>,
    ) -> Result<Self> {
        if !(1..=MAX_SIZE).contains(&size) {
            return Err(Error::invalid(format!(
                "size must be in 1..={MAX_SIZE}, got {size}"
            )));
        }
        if !(1..=size).contains(&active) {
            return Err(Error::invalid(format!(
                "active must be in 1..=size ({size}), got {active}"
            )));
        }
        let weights = match weights {
            None => None,
            Some(pairs) => {
                let mut map = HashKeyMap::default();
                for (token, w) in pairs {
                    if !w.is_finite() {
                        return Err(Error::invalid(format!(
                            "weights must be finite, got {w} for {token:?}"
                        )));
                    }
                    map.insert(fnv1a_64(token.as_bytes()), w);
                }
                Some(map)
            }
        };
        Ok(Sparse {
            size: size as usize,
            active: active as usize,
            token_similarity,
            weights,
        })
    }

    /// The number of bits.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The number of active bits.
    pub fn active(&self) -> usize {
        self.active
    }

    /// 64-bit words per token hash.
    fn words(&self) -> usize {
        self.size.div_ceil(64)
    }

    /// The column sums of a token list: each token (then, with token similarity, each of its
    /// characters) adds +w to column i where bit i of its hash is 1 and -w where it is 0.
    pub fn sums<T: AsRef<str>>(&self, tokens: &[T]) -> Vec<f64> {
        let words = self.words();
        let mut hash = Vec::with_capacity(words);
        let mut char_buf = [0u8; 4];
        match &self.weights {
            None => {
                // Unit weights: bit counters per 64-column word, sum = 2 count - total.
                let mut counters = vec![BitCounter::default(); words];
                let mut add = |bytes: &[u8]| {
                    hash.clear();
                    extended_hash(bytes, words, &mut hash);
                    for (c, &h) in counters.iter_mut().zip(&hash) {
                        c.add(h);
                    }
                };
                for token in tokens {
                    let token = token.as_ref();
                    add(token.as_bytes());
                    if self.token_similarity {
                        for ch in token.chars() {
                            add(ch.encode_utf8(&mut char_buf).as_bytes());
                        }
                    }
                }
                let mut sums = Vec::with_capacity(words * 64);
                for c in counters {
                    let (counts, total) = c.finish();
                    sums.extend(counts.iter().map(|&k| 2.0 * k as f64 - total as f64));
                }
                sums.truncate(self.size);
                sums
            }
            Some(weights) => {
                let mut sums = vec![[0f64; 64]; words];
                let mut add = |bytes: &[u8], w: f64| {
                    hash.clear();
                    extended_hash(bytes, words, &mut hash);
                    for (t, &h) in sums.iter_mut().zip(&hash) {
                        add_float(t, h, w);
                    }
                };
                for token in tokens {
                    let token = token.as_ref();
                    let w = weights
                        .get(&fnv1a_64(token.as_bytes()))
                        .copied()
                        .unwrap_or(1.0);
                    add(token.as_bytes(), w);
                    if self.token_similarity {
                        for ch in token.chars() {
                            add(ch.encode_utf8(&mut char_buf).as_bytes(), w);
                        }
                    }
                }
                let mut flat: Vec<f64> = sums.into_iter().flatten().collect();
                flat.truncate(self.size);
                flat
            }
        }
    }

    /// The indices of the `active` largest sums, ascending. Ties go to the lower index.
    pub fn select(&self, sums: &[f64]) -> Result<Vec<i64>> {
        if sums.len() != self.size {
            return Err(Error::invalid(format!(
                "sums must have one entry per bit: size is {}, got {} sums",
                self.size,
                sums.len()
            )));
        }
        if let Some(i) = sums.iter().position(|x| x.is_nan()) {
            return Err(Error::invalid(format!(
                "sums must be numbers, got NaN at position {i}"
            )));
        }
        Ok(top(sums, self.active))
    }

    /// The active bits of one token list.
    pub fn encode<T: AsRef<str>>(&self, tokens: &[T]) -> Vec<i64> {
        top(&self.sums(tokens), self.active)
    }

    /// The active bits of many token lists, `active` per list, one list after another.
    pub fn encode_many<T: AsRef<str> + Sync, D: AsRef<[T]> + Sync>(&self, docs: &[D]) -> Vec<i64> {
        let encode = |d: &D| self.encode(d.as_ref());
        let rows: Vec<Vec<i64>> = if docs.len() < PARALLEL_MIN_ITEMS {
            docs.iter().map(encode).collect()
        } else {
            docs.par_iter().with_min_len(8).map(encode).collect()
        };
        rows.concat()
    }

    /// Column sums of given hash rows, `words` 64-bit words per row (column i of a row is bit
    /// i % 64 of word i / 64): the summation step of the encoder on hashes given by hand.
    pub fn sums_of_words(&self, rows: &[u64], weights: Option<&[f64]>) -> Result<Vec<f64>> {
        let words = self.words();
        if !rows.len().is_multiple_of(words) {
            return Err(Error::invalid(format!(
                "hash rows must have {words} words each, got {} words in all",
                rows.len()
            )));
        }
        let n = rows.len() / words;
        if let Some(w) = weights {
            if w.len() != n {
                return Err(Error::invalid(format!(
                    "weights must have one entry per row: {n} rows, {} weights",
                    w.len()
                )));
            }
            if let Some(x) = w.iter().find(|x| !x.is_finite()) {
                return Err(Error::invalid(format!("weights must be finite, got {x}")));
            }
        }
        let mut sums = vec![[0f64; 64]; words];
        for (r, row) in rows.chunks_exact(words).enumerate() {
            let w = weights.map_or(1.0, |w| w[r]);
            for (t, &h) in sums.iter_mut().zip(row) {
                add_float(t, h, w);
            }
        }
        let mut flat: Vec<f64> = sums.into_iter().flatten().collect();
        flat.truncate(self.size);
        Ok(flat)
    }
}

/// Larger sum first, then lower index: a total order, so the selection is deterministic.
fn by_rank(sums: &[f64]) -> impl Fn(&usize, &usize) -> Ordering + '_ {
    move |&a, &b| sums[b].total_cmp(&sums[a]).then(a.cmp(&b))
}

/// The indices of the `active` (1..=len) largest of `sums`, ascending; ties go to the lower index.
fn top(sums: &[f64], active: usize) -> Vec<i64> {
    let mut order: Vec<usize> = (0..sums.len()).collect();
    if active < order.len() {
        order.select_nth_unstable_by(active - 1, by_rank(sums));
        order.truncate(active);
    }
    order.sort_unstable();
    order.into_iter().map(|i| i as i64).collect()
}

// -- simhash of dense vectors (seed 003) ---------------------------------------------------------

/// The largest vector dimension accepted.
/// (The normals take 512 bytes a dimension: 2^20 dimensions is 512 MB.)
pub const MAX_DIM: i64 = 1 << 20;

/// Random hyperplanes through the origin: bit i of a vector's fingerprint is 1 iff its dot
/// product with hyperplane i's normal is positive (Charikar, STOC 2002).
///
/// The dot products of each vector accumulate component by component in order, so a fingerprint
/// is the same on every machine: [`simd::dot`] runs them four lanes wide where the CPU has AVX,
/// each lane computing exactly what the portable code would.
#[derive(Clone, Debug)]
pub struct Hyperplanes {
    dim: usize,
    bits: usize,
    /// Normals stored by dimension, 64 to a row: entry `d * 64 + i` is component d of normal i
    /// (0 for i >= bits, which leaves those bits 0).
    by_dim: Vec<f64>,
}

fn sign_bits(acc: &[f64; 64]) -> u64 {
    acc.iter()
        .enumerate()
        .fold(0u64, |fp, (i, &a)| fp | (u64::from(a > 0.0) << i))
}

impl Hyperplanes {
    /// `bits` (1..=64) normals of `dim` (1..=2^20) independent standard normal components, drawn
    /// normal after normal from the stream of `seed`: the first b normals are the same for any
    /// `bits` >= b.
    pub fn new(dim: i64, bits: i64, seed: u64) -> Result<Self> {
        if !(1..=MAX_DIM).contains(&dim) {
            return Err(Error::invalid(format!(
                "dim must be in 1..={MAX_DIM}, got {dim}"
            )));
        }
        if !(1..=64).contains(&bits) {
            return Err(Error::invalid(format!(
                "bits must be in 1..=64, got {bits}"
            )));
        }
        let (dim, bits) = (dim as usize, bits as usize);
        let mut by_dim = vec![0.0; dim * 64];
        let mut gaussian = Gaussian::new(seed);
        for i in 0..bits {
            for d in 0..dim {
                by_dim[d * 64 + i] = gaussian.next();
            }
        }
        Ok(Hyperplanes { dim, bits, by_dim })
    }

    /// The vector dimension.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The number of hyperplanes (fingerprint bits).
    pub fn bits(&self) -> usize {
        self.bits
    }

    /// The normals, one row of `dim` components per bit.
    pub fn normals(&self) -> Vec<f64> {
        let mut out = vec![0.0; self.dim * self.bits];
        for d in 0..self.dim {
            for i in 0..self.bits {
                out[i * self.dim + d] = self.by_dim[d * 64 + i];
            }
        }
        out
    }

    /// The fingerprint of one vector of `dim` finite components (checked by the callers).
    fn row<T: Copy + Into<f64>>(&self, v: &[T]) -> u64 {
        sign_bits(&simd::dot(&self.by_dim, v))
    }

    /// The fingerprint of one vector of `dim` finite components.
    pub fn fingerprint<T: Copy + Into<f64> + Sync>(&self, v: &[T]) -> Result<u64> {
        if v.len() != self.dim {
            return Err(Error::invalid(format!(
                "vector must have dim = {} components, got {}",
                self.dim,
                v.len()
            )));
        }
        Ok(self.fingerprint_many(v)?[0])
    }

    /// Fingerprints of the rows of a row-major matrix of `dim` columns.
    pub fn fingerprint_many<T: Copy + Into<f64> + Sync>(&self, matrix: &[T]) -> Result<Vec<u64>> {
        if !matrix.len().is_multiple_of(self.dim) {
            return Err(Error::invalid(format!(
                "vectors must have dim = {} components, got {} numbers in all",
                self.dim,
                matrix.len()
            )));
        }
        if let Some(at) = matrix.iter().position(|&x| !x.into().is_finite()) {
            let (r, d) = (at / self.dim, at % self.dim);
            return Err(Error::invalid(format!(
                "vectors must be finite: row {r}, component {d} is {}",
                matrix[at].into()
            )));
        }
        let rows = matrix.chunks_exact(self.dim);
        if rows.len() < PARALLEL_MIN_ITEMS {
            return Ok(rows.map(|v| self.row(v)).collect());
        }
        Ok(matrix
            .par_chunks_exact(self.dim)
            .with_min_len(16)
            .map(|v| self.row(v))
            .collect())
    }
}

// -- minhash cluster keys (seed 004) -------------------------------------------------------------

/// The largest restrictiveness accepted.
pub const MAX_RESTRICTIVENESS: i64 = 1024;

/// Checks a restrictiveness (1..=1024).
pub fn restrictiveness(r: i64) -> Result<usize> {
    if !(1..=MAX_RESTRICTIVENESS).contains(&r) {
        return Err(Error::invalid(format!(
            "restrictiveness must be in 1..={MAX_RESTRICTIVENESS}, got {r}"
        )));
    }
    Ok(r as usize)
}

/// Keeps the `r` smallest distinct values of a stream, ascending.
struct Smallest {
    r: usize,
    kept: Vec<u64>,
}

impl Smallest {
    fn new(r: usize) -> Self {
        Smallest {
            r,
            kept: Vec::with_capacity(r + 1),
        }
    }

    #[inline]
    fn add(&mut self, h: u64) {
        if self.kept.len() == self.r && h >= self.kept[self.r - 1] {
            return;
        }
        if let Err(at) = self.kept.binary_search(&h) {
            self.kept.insert(at, h);
            self.kept.truncate(self.r);
        }
    }

    fn key(&self) -> u64 {
        self.kept.iter().fold(0, |k, &h| k ^ h)
    }
}

/// The XOR of the `r` smallest distinct hashes (of all of them if there are fewer; 0 for none).
pub fn minhash_key(hashes: &[u64], r: usize) -> u64 {
    let mut smallest = Smallest::new(r);
    hashes.iter().for_each(|&h| smallest.add(h));
    smallest.key()
}

/// Minhash keys of many documents: `fields[f][d]` is field f of document d (a text, or tokens);
/// a document's set is the features of all its fields.
pub fn minhash_keys_many<F, S>(
    config: &FeatureConfig,
    fields: &[&[S]],
    r: usize,
) -> Result<Vec<u64>>
where
    F: Field + Sync + ?Sized,
    S: AsRef<F> + Sync,
{
    let n = fields.first().map_or(0, |f| f.len());
    if fields.iter().any(|f| f.len() != n) {
        return Err(Error::invalid(
            "every field must hold one entry per document",
        ));
    }
    let one = |scratch: &mut Scratch, d: usize| {
        let mut smallest = Smallest::new(r);
        for f in fields {
            f[d].as_ref().hash_features(config, scratch);
            scratch
                .feature_hashes()
                .iter()
                .for_each(|&h| smallest.add(h));
        }
        smallest.key()
    };
    if n < PARALLEL_MIN_ITEMS {
        let mut scratch = Scratch::default();
        return Ok((0..n).map(|d| one(&mut scratch, d)).collect());
    }
    Ok((0..n)
        .into_par_iter()
        .with_min_len(16)
        .map_init(Scratch::default, one)
        .collect())
}

/// Group labels of keys: entries with equal keys share a label, the smallest row holding that key.
pub fn group_by_key(keys: &[u64]) -> Vec<i64> {
    let mut order: Vec<usize> = (0..keys.len()).collect();
    // Stable: within a run of equal keys rows stay ascending, so the first is the smallest.
    order.sort_by_key(|&i| keys[i]);
    let mut labels = vec![0i64; keys.len()];
    let mut start = 0;
    while start < order.len() {
        let key = keys[order[start]];
        let label = order[start] as i64;
        let mut end = start;
        while end < order.len() && keys[order[end]] == key {
            labels[order[end]] = label;
            end += 1;
        }
        start = end;
    }
    labels
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::features::TokenKind;

    #[test]
    fn splitmix_matches_its_reference_stream() {
        // SplitMix64 seeded with 1234567: the first outputs of the reference implementation
        // (Vigna's splitmix64.c), as used to seed xoshiro.
        let want = [
            6457827717110365317u64,
            3203168211198807973,
            9817491932198370423,
        ];
        for (j, &w) in want.iter().enumerate() {
            assert_eq!(extended_word(1234567, j), w, "output {j}");
        }
    }

    #[test]
    fn portable_ln_agrees_with_libm() {
        for &x in &[
            1e-300, 1e-10, 0.001, 0.1, 0.5, 0.70, 0.999_999, 1.0, 1.5, 3.0,
        ] {
            let (a, b) = (portable_ln(x), f64::ln(x));
            assert!((a - b).abs() <= 1e-15 * b.abs().max(1.0), "{x}: {a} vs {b}");
        }
    }

    #[test]
    fn gaussian_moments() {
        let mut g = Gaussian::new(7);
        let xs: Vec<f64> = (0..200_000).map(|_| g.next()).collect();
        let n = xs.len() as f64;
        let mean = xs.iter().sum::<f64>() / n;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
        let kurt = xs.iter().map(|x| (x - mean).powi(4)).sum::<f64>() / n / (var * var);
        assert!(mean.abs() < 0.01, "mean {mean}");
        assert!((var - 1.0).abs() < 0.02, "variance {var}");
        assert!((kurt - 3.0).abs() < 0.05, "kurtosis {kurt}");
    }

    #[test]
    fn top_breaks_ties_toward_lower_indices() {
        assert_eq!(
            top(&[0.0, 2.0, -6.0, 8.0, -2.0, -8.0, -6.0, -12.0, 0.0], 4),
            [0, 1, 3, 8]
        );
        assert_eq!(top(&[1.0, 1.0, 1.0, 1.0], 2), [0, 1]);
        assert_eq!(top(&[0.0, 5.0], 2), [0, 1]);
        assert_eq!(
            top(&[-1.0, -1.0, -3.0, 3.0, -3.0, 1.0, -1.0, 1.0, -1.0], 3),
            [3, 5, 7]
        );
    }

    #[test]
    fn sparse_sums_match_the_definition() {
        for weights in [
            None,
            Some(vec![("b".to_string(), 2.5), ("cd".to_string(), -1.0)]),
        ] {
            let enc = Sparse::new(130, 10, true, weights.clone()).unwrap();
            let tokens = ["a", "b", "cd", "b"];
            let sums = enc.sums(&tokens);
            let mut want = vec![0.0; 130];
            let weight = |t: &str| {
                weights
                    .as_ref()
                    .and_then(|w| w.iter().find(|(k, _)| k == t))
                    .map_or(1.0, |(_, w)| *w)
            };
            let mut items: Vec<(String, f64)> = Vec::new();
            for t in tokens {
                items.push((t.to_string(), weight(t)));
                items.extend(t.chars().map(|c| (c.to_string(), weight(t))));
            }
            for (item, w) in items {
                let mut h = Vec::new();
                extended_hash(item.as_bytes(), 3, &mut h);
                for (i, s) in want.iter_mut().enumerate() {
                    *s += if (h[i / 64] >> (i % 64)) & 1 == 1 {
                        w
                    } else {
                        -w
                    };
                }
            }
            assert_eq!(sums, want);
            assert_eq!(enc.encode(&tokens).len(), 10);
        }
    }

    #[test]
    fn sparse_arguments_are_checked() {
        assert!(Sparse::new(0, 1, false, None).is_err());
        assert!(Sparse::new(10, 11, false, None).is_err());
        assert!(Sparse::new(10, 0, false, None).is_err());
        assert!(Sparse::new(10, 2, false, Some(vec![("a".into(), f64::NAN)])).is_err());
        let enc = Sparse::new(10, 2, false, None).unwrap();
        assert!(enc.select(&[0.0; 9]).is_err());
        assert!(enc.sums_of_words(&[1, 2], Some(&[1.0])).is_err());
    }

    #[test]
    fn hyperplanes_are_reproducible_and_nested() {
        let a = Hyperplanes::new(5, 64, 3).unwrap();
        let b = Hyperplanes::new(5, 8, 3).unwrap();
        assert_eq!(a.normals()[..40], b.normals()[..]);
        let v = [0.5f64, -1.0, 2.0, 0.0, 1.0];
        let fa = a.fingerprint(&v).unwrap();
        assert_eq!(fa & 0xff, b.fingerprint(&v).unwrap());
        assert_eq!(a.fingerprint(&[0.0f64; 5]).unwrap(), 0);
        assert!(a.fingerprint(&[1.0, f64::NAN, 0.0, 0.0, 0.0]).is_err());
        assert!(a.fingerprint(&[1.0f64; 4]).is_err());
        // Blocks of four and the rows after them give what one row at a time gives.
        let m: Vec<f64> = (0..5 * 11)
            .map(|i| ((i * 37 % 17) as f64 - 8.0) / 3.0)
            .collect();
        let many = a.fingerprint_many(&m).unwrap();
        let one: Vec<u64> = m.chunks(5).map(|v| a.fingerprint(v).unwrap()).collect();
        assert_eq!(many, one);
        // The definition: the sign of each dot product, summed in dimension order.
        let normals = a.normals();
        for (r, v) in m.chunks(5).enumerate() {
            let mut want = 0u64;
            for i in 0..64 {
                let dot = (0..5).fold(0.0, |acc, d| acc + v[d] * normals[i * 5 + d]);
                want |= u64::from(dot > 0.0) << i;
            }
            assert_eq!(many[r], want, "row {r}");
        }
        assert!(a.fingerprint_many(&[1.0f64; 7]).is_err());
        assert!(Hyperplanes::new(0, 64, 0).is_err());
        assert!(Hyperplanes::new(3, 65, 0).is_err());
    }

    #[test]
    fn minhash_key_is_the_xor_of_the_smallest_distinct() {
        assert_eq!(minhash_key(&[9, 3, 7, 3, 1, 8], 3), 1 ^ 3 ^ 7);
        assert_eq!(minhash_key(&[5, 5], 3), 5);
        assert_eq!(minhash_key(&[], 2), 0);
        let config = FeatureConfig::new(TokenKind::Word, 1, None).unwrap();
        let docs = ["b a c a", "x"];
        let keys = minhash_keys_many::<str, _>(&config, &[&docs[..]], 2).unwrap();
        let mut h: Vec<u64> = ["a", "b", "c"]
            .iter()
            .map(|w| fnv1a_64(w.as_bytes()))
            .collect();
        h.sort_unstable();
        assert_eq!(keys, [h[0] ^ h[1], fnv1a_64(b"x")]);
    }

    #[test]
    fn groups_are_labelled_by_their_first_row() {
        assert_eq!(group_by_key(&[7, 3, 7, 9, 3, 7]), [0, 1, 0, 3, 1, 0]);
        assert!(group_by_key(&[]).is_empty());
    }
}
