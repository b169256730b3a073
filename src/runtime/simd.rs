//! Every use of the CPU's vector instructions, each beside the portable code it must equal, and
//! the switch that forces the portable code.
//!
//! * [`word_bits`]: which bytes of a 64-byte block are ASCII letters or digits, sixteen bytes a
//!   compare with SSE2 (part of every x86-64 CPU); the tokenizer's scan of ASCII text.
//! * [`dot`]: the 64 dot products of a vector with the random hyperplanes, compiled for AVX when
//!   the CPU has it: four f64 lanes, each the same IEEE operations in the same order as the
//!   portable loop (multiplications and additions are never fused).
//! * [`first_within`]: the first of a run of fingerprints within Hamming distance k of another,
//!   the comparison loop of the cross search; with AVX2, eight distances a step, each counted
//!   by nibble lookups (AVX2 has no 64-bit population count).
//! * [`shingle_chains`]: the hashes of a sketch's shingles, the SplitMix64 output function
//!   chained over each word's two hashes; with AVX-512 (its DQ part has the 64-bit multiply),
//!   eight shingles a vector, four vectors in flight; with AVX2, four shingles a vector, each
//!   64-bit multiply by a constant made of three 32-bit ones.
//! * [`fnv1a_spans`]: the FNV-1a 64 of each word of a text, the hash the fingerprints and
//!   the sketches know a word by; with AVX-512, words of up to 16 bytes eight lanes a vector,
//!   two vectors in flight, each lane stepping one byte a multiply until its word ends; with
//!   AVX2 (no 64-bit multiply), four lanes a vector, four vectors in flight, each multiply by
//!   the FNV prime made of a 32-bit multiply of each half and a shift.
//! * [`xxh3_spans`]: the XXH3-64 of each word of a text, the second hash of the sketch's words;
//!   with AVX-512, words of up to 16 bytes eight at a time, each of XXH3's three short paths
//!   computed on every lane and each lane's result chosen by its length, where the portable
//!   code (the `xxhash-rust` crate's) branches on the length, which the CPU cannot predict.
//!   An AVX2 path like it was no faster than the crate (about 300 vector operations for four
//!   words, the multiplies made of 32-bit ones), so AVX2 CPUs take the portable code.
//! * [`merge_eights`]: the merge of two sketches that their Jaccard counts, eight hashes of each
//!   a step with AVX-512 (which compares 64-bit values unsigned), or with AVX2 (two vectors a
//!   sketch, their top bits flipped for its signed compare): each step takes what the
//!   one-hash-a-step merge takes up to the smaller of the two eighth hashes, and counts the
//!   shared ones with eight compares, one for each hash of the other sketch.
//! * [`prefetch_line`]: a cache hint for the table searches. It changes no result, so the switch
//!   leaves it alone.
//!
//! Each vector path computes exactly what its portable path computes, bit for bit, so a
//! fingerprint never depends on the CPU. [`force_scalar`] makes every kernel here take its
//! portable path, for the whole process, so that the tests can run both paths on the same
//! inputs and compare them.

use std::sync::atomic::{AtomicBool, Ordering};

static SCALAR: AtomicBool = AtomicBool::new(false);

/// Makes every kernel of this module take its portable path (`true`) or the fastest path the CPU
/// supports (`false`, the default), for the whole process. Results are the same either way.
pub fn force_scalar(on: bool) {
    SCALAR.store(on, Ordering::Relaxed);
}

/// Whether [`force_scalar`] holds the kernels on their portable paths.
#[inline]
pub fn scalar_forced() -> bool {
    SCALAR.load(Ordering::Relaxed)
}

/// Bit `j` set where `block[j]` is an ASCII letter or digit.
#[inline]
pub fn word_bits(block: &[u8; 64]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    if !scalar_forced() {
        return word_bits_sse2(block);
    }
    word_bits_scalar(block)
}

/// [`word_bits`] one byte at a time.
fn word_bits_scalar(block: &[u8; 64]) -> u64 {
    bits_scalar(block, |b| b.is_ascii_alphanumeric())
}

/// [`word_bits`] sixteen bytes a compare.
#[cfg(target_arch = "x86_64")]
#[inline]
fn word_bits_sse2(block: &[u8; 64]) -> u64 {
    use std::arch::x86_64::*;
    bits_sse2(block, |v| {
        // SAFETY: SSE2 is always available on x86_64; these read and write registers only.
        unsafe {
            let between = |v: __m128i, lo: u8, hi: u8| {
                // Bytes past 0x7f are negative as i8, below every bound: never a word byte.
                _mm_and_si128(
                    _mm_cmpgt_epi8(v, _mm_set1_epi8(lo as i8 - 1)),
                    _mm_cmplt_epi8(v, _mm_set1_epi8(hi as i8 + 1)),
                )
            };
            let lower = _mm_or_si128(v, _mm_set1_epi8(0x20));
            _mm_or_si128(between(v, b'0', b'9'), between(lower, b'a', b'z'))
        }
    })
}

/// Bit `j` set where `block[j]` begins a character past ASCII in UTF-8 (a byte `11xxxxxx`).
#[inline]
pub fn lead_bits(block: &[u8; 64]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    if !scalar_forced() {
        return lead_bits_sse2(block);
    }
    lead_bits_scalar(block)
}

/// [`lead_bits`] one byte at a time.
fn lead_bits_scalar(block: &[u8; 64]) -> u64 {
    bits_scalar(block, |b| b >= 0xC0)
}

/// [`lead_bits`] sixteen bytes a compare.
#[cfg(target_arch = "x86_64")]
#[inline]
fn lead_bits_sse2(block: &[u8; 64]) -> u64 {
    use std::arch::x86_64::*;
    bits_sse2(block, |v| {
        // SAFETY: SSE2 is always available on x86_64; these read and write registers only.
        // 0xC0..=0xFF are -64..=-1 as i8: above -65 and below 0.
        unsafe {
            _mm_and_si128(
                _mm_cmpgt_epi8(v, _mm_set1_epi8(-65)),
                _mm_cmplt_epi8(v, _mm_setzero_si128()),
            )
        }
    })
}

/// Bit `j` set where `test` holds of `block[j]`, one byte at a time.
fn bits_scalar(block: &[u8; 64], test: impl Fn(u8) -> bool) -> u64 {
    block
        .iter()
        .enumerate()
        .fold(0, |bits, (j, &b)| bits | (u64::from(test(b)) << j))
}

/// Bit `j` set where `test`, given the sixteen bytes that hold `block[j]`, leaves byte `j` with
/// its top bit set (a compare's all-ones): sixteen bytes at a time.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn bits_sse2(
    block: &[u8; 64],
    test: impl Fn(std::arch::x86_64::__m128i) -> std::arch::x86_64::__m128i,
) -> u64 {
    use std::arch::x86_64::*;
    let mut bits = 0u64;
    for (k, chunk) in block.chunks_exact(16).enumerate() {
        // SAFETY: SSE2 is always available on x86_64; the load is unaligned and reads the
        // sixteen bytes of `chunk`.
        let mask = unsafe { _mm_movemask_epi8(test(_mm_loadu_si128(chunk.as_ptr().cast()))) };
        bits |= u64::from(mask as u16) << (16 * k);
    }
    bits
}

/// Writes to `out[j]` the hash of the shingle of `width` words that starts at word `j`: the
/// SplitMix64 output function chained from `seed` over `words[j + i]`, each step's result
/// xored with `checks[j + i]`, then once more and shifted right by one
/// (`sketch::verify::shingle_hash`, the portable code it must equal). Returns how many it
/// wrote, from the start of `out`: a multiple of eight with AVX-512, of four with AVX2, else
/// none, and the caller hashes the rest. `words` and `checks` hold at least
/// `out.len() + width - 1` values.
#[inline]
pub fn shingle_chains(
    seed: u64,
    width: usize,
    words: &[u64],
    checks: &[u64],
    out: &mut [u64],
) -> usize {
    #[cfg(target_arch = "x86_64")]
    if out.len() >= 8 && !scalar_forced() && std::arch::is_x86_feature_detected!("avx512dq") {
        let need = out.len() + width.max(1) - 1;
        assert!(words.len() >= need && checks.len() >= need, "too few words");
        // SAFETY: AVX-512 F and DQ are available (DQ implies F), checked just above; the
        // lengths, just above.
        return unsafe { shingle_chains_avx512(seed, width, words, checks, out) };
    }
    #[cfg(target_arch = "x86_64")]
    if out.len() >= 4 && !scalar_forced() && std::arch::is_x86_feature_detected!("avx2") {
        let need = out.len() + width.max(1) - 1;
        assert!(words.len() >= need && checks.len() >= need, "too few words");
        // SAFETY: AVX2 is available, checked just above; the lengths, just above.
        return unsafe { shingle_chains_avx2(seed, width, words, checks, out) };
    }
    let _ = (seed, width, words, checks, out);
    0
}

/// [`shingle_chains`] four lanes a vector, as [`shingle_chains_avx512`] reads them. AVX2 has
/// no 64-bit multiply: each of the mix's two by a constant is made of three 32-bit ones (the
/// constant's low half by both halves of the lane, its high half by the lane's low half).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn shingle_chains_avx2(
    seed: u64,
    width: usize,
    words: &[u64],
    checks: &[u64],
    out: &mut [u64],
) -> usize {
    use std::arch::x86_64::*;
    const C1: u64 = 0xBF58_476D_1CE4_E5B9;
    const C2: u64 = 0x94D0_49BB_1331_11EB;
    let (c1_lo, c1_hi) = (
        _mm256_set1_epi64x(C1 as i64),
        _mm256_set1_epi64x((C1 >> 32) as i64),
    );
    let (c2_lo, c2_hi) = (
        _mm256_set1_epi64x(C2 as i64),
        _mm256_set1_epi64x((C2 >> 32) as i64),
    );
    // z * c (mod 2^64): lo(z) lo(c) + (hi(z) lo(c) + lo(z) hi(c)) << 32.
    macro_rules! times {
        ($z:expr, $lo:expr, $hi:expr) => {{
            let z = $z;
            let low = _mm256_mul_epu32(z, $lo);
            let cross = _mm256_add_epi64(
                _mm256_mul_epu32(_mm256_srli_epi64::<32>(z), $lo),
                _mm256_mul_epu32(z, $hi),
            );
            _mm256_add_epi64(low, _mm256_slli_epi64::<32>(cross))
        }};
    }
    // `crate::fingerprint::encoders::mix64`, four lanes.
    macro_rules! mix {
        ($z:expr) => {{
            let z = $z;
            let z = times!(
                _mm256_xor_si256(z, _mm256_srli_epi64::<30>(z)),
                c1_lo,
                c1_hi
            );
            let z = times!(
                _mm256_xor_si256(z, _mm256_srli_epi64::<27>(z)),
                c2_lo,
                c2_hi
            );
            _mm256_xor_si256(z, _mm256_srli_epi64::<31>(z))
        }};
    }
    const FLIGHT: usize = 4;
    let n = out.len() / 4 * 4;
    let (w, c, o) = (words.as_ptr(), checks.as_ptr(), out.as_mut_ptr());
    let mut j = 0;
    while j < n {
        let lanes = if j + 4 * FLIGHT <= n { FLIGHT } else { 1 };
        let mut h = [_mm256_set1_epi64x(seed as i64); FLIGHT];
        for i in 0..width {
            for (l, hl) in h.iter_mut().enumerate().take(lanes) {
                // SAFETY: j + 4 l + 4 <= n <= out.len(), and i < width: the loads read words
                // and checks below out.len() + width - 1.
                let a = _mm256_loadu_si256(w.add(j + 4 * l + i).cast());
                let b = _mm256_loadu_si256(c.add(j + 4 * l + i).cast());
                *hl = _mm256_xor_si256(mix!(_mm256_xor_si256(*hl, a)), b);
            }
        }
        for (l, &hl) in h.iter().enumerate().take(lanes) {
            // SAFETY: j + 4 l + 4 <= n <= out.len().
            _mm256_storeu_si256(o.add(j + 4 * l).cast(), _mm256_srli_epi64::<1>(mix!(hl)));
        }
        j += 4 * lanes;
    }
    n
}

/// [`shingle_chains`] eight lanes a vector: lane `l` of the vector for shingles `j..j + 8`
/// reads word `j + l + i` at step `i`, so each step loads eight consecutive words. Four
/// vectors go at once, their multiplies overlapping.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq")]
unsafe fn shingle_chains_avx512(
    seed: u64,
    width: usize,
    words: &[u64],
    checks: &[u64],
    out: &mut [u64],
) -> usize {
    use std::arch::x86_64::*;
    let c1 = _mm512_set1_epi64(0xBF58_476D_1CE4_E5B9_u64 as i64);
    let c2 = _mm512_set1_epi64(0x94D0_49BB_1331_11EB_u64 as i64);
    // `crate::fingerprint::encoders::mix64`, eight lanes.
    macro_rules! mix {
        ($z:expr) => {{
            let z = $z;
            let z = _mm512_mullo_epi64(_mm512_xor_si512(z, _mm512_srli_epi64::<30>(z)), c1);
            let z = _mm512_mullo_epi64(_mm512_xor_si512(z, _mm512_srli_epi64::<27>(z)), c2);
            _mm512_xor_si512(z, _mm512_srli_epi64::<31>(z))
        }};
    }
    let n = out.len() / 8 * 8;
    let (w, c, o) = (words.as_ptr(), checks.as_ptr(), out.as_mut_ptr());
    let mut j = 0;
    while j < n {
        let lanes = if j + 32 <= n { 4 } else { 1 };
        let mut h = [_mm512_set1_epi64(seed as i64); 4];
        for i in 0..width {
            for (l, hl) in h.iter_mut().enumerate().take(lanes) {
                // SAFETY: j + 8 l + 8 <= n <= out.len(), and i < width: the loads read words
                // and checks below out.len() + width - 1.
                let a = _mm512_loadu_si512(w.add(j + 8 * l + i).cast());
                let b = _mm512_loadu_si512(c.add(j + 8 * l + i).cast());
                *hl = _mm512_xor_si512(mix!(_mm512_xor_si512(*hl, a)), b);
            }
        }
        for (l, &hl) in h.iter().enumerate().take(lanes) {
            // SAFETY: j + 8 l + 8 <= n <= out.len().
            _mm512_storeu_si512(o.add(j + 8 * l).cast(), _mm512_srli_epi64::<1>(mix!(hl)));
        }
        j += 8 * lanes;
    }
    n
}

/// The 16 bytes of `text` from `at` as two little-endian words, zeros past the text's end.
#[inline]
fn window(text: &[u8], at: usize) -> (u64, u64) {
    let word = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("8 bytes"));
    if let Some(w) = text.get(at..at + 16) {
        return (word(&w[..8]), word(&w[8..]));
    }
    let mut bytes = [0u8; 16];
    let m = text.len().saturating_sub(at).min(16);
    bytes[..m].copy_from_slice(&text[at..at + m]);
    (word(&bytes[..8]), word(&bytes[8..]))
}

/// The first 16 bytes of each of eight spans of `text`, as two vectors of little-endian words
/// (zeros past the text's end), their lengths as a third, and the longest length. The words are
/// gathered from the text, where writing them to an array and loading it would stall on the
/// stores; a group that reaches the text's last 16 bytes is read by [`window`]. A macro, so that
/// it is compiled inside the AVX-512 kernels (a function of its own would not be inlined).
#[cfg(target_arch = "x86_64")]
macro_rules! windows8 {
    ($text:expr, $group:expr) => {{
        let (text, group): (&[u8], &[(usize, usize)]) = ($text, $group);
        let (mut starts, mut lens) = ([0i64; 8], [0i64; 8]);
        let mut longest = 0;
        let mut inside = true;
        for (l, &(a, b)) in group.iter().enumerate() {
            starts[l] = a as i64;
            lens[l] = (b - a) as i64;
            longest = longest.max(b - a);
            inside &= a + 16 <= text.len();
        }
        let set = |v: [i64; 8]| _mm512_set_epi64(v[7], v[6], v[5], v[4], v[3], v[2], v[1], v[0]);
        let len = set(lens);
        if inside {
            let at = set(starts);
            let base: *const i64 = text.as_ptr().cast();
            // SAFETY: each lane reads text[a..a + 16], inside the text (checked above).
            let v0 = _mm512_i64gather_epi64::<1>(at, base);
            let v1 = _mm512_i64gather_epi64::<1>(_mm512_add_epi64(at, _mm512_set1_epi64(8)), base);
            ([v0, v1, len], longest)
        } else {
            let (mut first, mut second) = ([0i64; 8], [0i64; 8]);
            for (l, &(a, _)) in group.iter().enumerate() {
                let (x, y) = window(text, a);
                (first[l], second[l]) = (x as i64, y as i64);
            }
            ([set(first), set(second), len], longest)
        }
    }};
}

/// Appends to `out` the FNV-1a 64 of `text[a..b]` for as many spans of `spans` as it can from
/// the first, and returns how many: a multiple of 16 with AVX-512 or AVX2, else none (the caller
/// hashes the rest; `crate::text::hash::fnv1a_64` is the portable code it must equal).
#[inline]
pub fn fnv1a_spans(text: &[u8], spans: &[(usize, usize)], out: &mut Vec<u64>) -> usize {
    #[cfg(target_arch = "x86_64")]
    if spans.len() >= 16 && !scalar_forced() && std::arch::is_x86_feature_detected!("avx512dq") {
        let from = out.len();
        let n = spans.len() / 16 * 16;
        out.resize(from + n, 0);
        // SAFETY: AVX-512 F and DQ are available, checked just above.
        unsafe { fnv1a_spans_avx512(text, &spans[..n], &mut out[from..]) };
        return n;
    }
    #[cfg(target_arch = "x86_64")]
    if spans.len() >= 16 && !scalar_forced() && std::arch::is_x86_feature_detected!("avx2") {
        let from = out.len();
        let n = spans.len() / 16 * 16;
        out.resize(from + n, 0);
        // SAFETY: AVX2 is available, checked just above.
        unsafe { fnv1a_spans_avx2(text, &spans[..n], &mut out[from..]) };
        return n;
    }
    let _ = (text, spans, out);
    0
}

/// [`fnv1a_spans`] sixteen spans a step (`spans` a multiple of 16, `out` as long): two vectors
/// of eight lanes, each lane holding the first 16 bytes of its span and stepping through them
/// to the longest span's end, a lane past its own end keeping its hash (a masked multiply). A
/// span of more than 16 bytes is hashed again by the portable code.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq")]
unsafe fn fnv1a_spans_avx512(text: &[u8], spans: &[(usize, usize)], out: &mut [u64]) {
    use crate::text::hash::{fnv1a_64, OFFSET_BASIS, PRIME};
    use std::arch::x86_64::*;
    let prime = _mm512_set1_epi64(PRIME as i64);
    let byte = _mm512_set1_epi64(0xFF);
    for (group, slots) in spans.chunks_exact(16).zip(out.chunks_exact_mut(16)) {
        let ([a0, b0, len0], longest0) = windows8!(text, &group[..8]);
        let ([a1, b1, len1], longest1) = windows8!(text, &group[8..]);
        let longest = longest0.max(longest1);
        let mut h0 = _mm512_set1_epi64(OFFSET_BASIS as i64);
        let mut h1 = h0;
        for (half, (mut w0, mut w1)) in [(a0, a1), (b0, b1)].into_iter().enumerate() {
            for j in 8 * half..(8 * half + 8).min(longest) {
                let at = _mm512_set1_epi64(j as i64);
                let (m0, m1) = (
                    _mm512_cmpgt_epu64_mask(len0, at),
                    _mm512_cmpgt_epu64_mask(len1, at),
                );
                let x0 = _mm512_xor_si512(h0, _mm512_and_si512(w0, byte));
                let x1 = _mm512_xor_si512(h1, _mm512_and_si512(w1, byte));
                h0 = _mm512_mask_mullo_epi64(h0, m0, x0, prime);
                h1 = _mm512_mask_mullo_epi64(h1, m1, x1, prime);
                w0 = _mm512_srli_epi64::<8>(w0);
                w1 = _mm512_srli_epi64::<8>(w1);
            }
        }
        // SAFETY: `slots` holds sixteen u64.
        _mm512_storeu_si512(slots.as_mut_ptr().cast(), h0);
        _mm512_storeu_si512(slots.as_mut_ptr().add(8).cast(), h1);
        if longest > 16 {
            for (slot, &(a, b)) in slots.iter_mut().zip(group) {
                if b - a > 16 {
                    *slot = fnv1a_64(&text[a..b]);
                }
            }
        }
    }
}

/// The first 16 bytes of each of four spans of `text` as two vectors of little-endian words
/// (zeros past the text's end, read by [`window`]), and their lengths as a third: each span's
/// 16 bytes one unaligned load, the four put in place by two inserts and two unpacks.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn windows4(text: &[u8], group: &[(usize, usize)]) -> [std::arch::x86_64::__m256i; 3] {
    use std::arch::x86_64::*;
    let load = |(a, _): (usize, usize)| {
        if a + 16 <= text.len() {
            // SAFETY: text[a..a + 16] is inside the text, checked just above.
            unsafe { _mm_loadu_si128(text.as_ptr().add(a).cast()) }
        } else {
            let (x, y) = window(text, a);
            _mm_set_epi64x(y as i64, x as i64)
        }
    };
    let (p0, p1, p2, p3) = (
        load(group[0]),
        load(group[1]),
        load(group[2]),
        load(group[3]),
    );
    // Spans 0 and 2 in one vector, 1 and 3 in another: each unpack takes the same half of each
    // span's 16 bytes, lane by lane, in the spans' order.
    let (even, odd) = (_mm256_set_m128i(p2, p0), _mm256_set_m128i(p3, p1));
    let len = |l: usize| (group[l].1 - group[l].0) as i64;
    [
        _mm256_unpacklo_epi64(even, odd),
        _mm256_unpackhi_epi64(even, odd),
        _mm256_set_epi64x(len(3), len(2), len(1), len(0)),
    ]
}

/// [`fnv1a_spans`] sixteen spans a step with AVX2 (`spans` a multiple of 16, `out` as long): four
/// vectors of four lanes, stepped as [`fnv1a_spans_avx512`] steps its two, a lane past its end
/// keeping its hash by a blend (the lengths are small, so a signed compare masks them). AVX2 has
/// no 64-bit multiply, but the FNV prime is 2^40 + 0x1b3, so x * PRIME = (x << 40) + x * 0x1b3,
/// and x * 0x1b3 (mod 2^64) is the 64-bit product of x's low 32 bits by 0x1b3 plus that of its
/// high 32 bits (mod 2^32) shifted up 32: one unsigned 32 x 32 -> 64 multiply of the low halves
/// and one 32-bit multiply of the high halves, by a constant that is zero in the low halves.
/// About 1.2 times the portable four-at-a-time loop on Zen 3 (the portable code is held by the
/// one 64-bit multiply a cycle, this by the eleven vector operations a byte of four lanes).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn fnv1a_spans_avx2(text: &[u8], spans: &[(usize, usize)], out: &mut [u64]) {
    use crate::text::hash::{fnv1a_64, OFFSET_BASIS, PRIME};
    use std::arch::x86_64::*;
    let low = _mm256_set1_epi64x((PRIME & 0xFFFF_FFFF) as i64);
    let high = _mm256_set1_epi64x(((PRIME & 0xFFFF_FFFF) << 32) as i64);
    let byte = _mm256_set1_epi64x(0xFF);
    let max = |a, b| _mm256_blendv_epi8(b, a, _mm256_cmpgt_epi64(a, b));
    for (group, slots) in spans.chunks_exact(16).zip(out.chunks_exact_mut(16)) {
        let (v0, v1) = (windows4(text, &group[..4]), windows4(text, &group[4..8]));
        let (v2, v3) = (windows4(text, &group[8..12]), windows4(text, &group[12..]));
        let len = [v0[2], v1[2], v2[2], v3[2]];
        let m = max(max(len[0], len[1]), max(len[2], len[3]));
        let m = max(m, _mm256_permute4x64_epi64::<0b0100_1110>(m));
        let m = max(m, _mm256_shuffle_epi32::<0b0100_1110>(m));
        let longest = _mm256_extract_epi64::<0>(m) as usize;
        let mut h = [_mm256_set1_epi64x(OFFSET_BASIS as i64); 4];
        for half in 0..2 {
            let mut w = [v0[half], v1[half], v2[half], v3[half]];
            for j in 8 * half..(8 * half + 8).min(longest) {
                let at = _mm256_set1_epi64x(j as i64);
                for l in 0..4 {
                    let x = _mm256_xor_si256(h[l], _mm256_and_si256(w[l], byte));
                    let p = _mm256_add_epi64(
                        _mm256_add_epi64(_mm256_mul_epu32(x, low), _mm256_mullo_epi32(x, high)),
                        _mm256_slli_epi64::<40>(x),
                    );
                    h[l] = _mm256_blendv_epi8(h[l], p, _mm256_cmpgt_epi64(len[l], at));
                    w[l] = _mm256_srli_epi64::<8>(w[l]);
                }
            }
        }
        for (l, &hl) in h.iter().enumerate() {
            // SAFETY: `slots` holds sixteen u64.
            _mm256_storeu_si256(slots.as_mut_ptr().add(4 * l).cast(), hl);
        }
        if longest > 16 {
            for (slot, &(a, b)) in slots.iter_mut().zip(group) {
                if b - a > 16 {
                    *slot = fnv1a_64(&text[a..b]);
                }
            }
        }
    }
}

/// Appends to `out` the XXH3-64, seeded with `seed`, of each span `text[a..b]` of `spans`: the
/// crate's `xxh3_64_with_seed`, which the vector path must equal.
pub fn xxh3_spans(text: &[u8], spans: &[(usize, usize)], seed: u64, out: &mut Vec<u64>) {
    let from = out.len();
    #[cfg(target_arch = "x86_64")]
    if spans.len() >= 8
        && !scalar_forced()
        && std::arch::is_x86_feature_detected!("avx512dq")
        && std::arch::is_x86_feature_detected!("avx512bw")
    {
        out.resize(from + spans.len(), 0);
        // SAFETY: AVX-512 F, DQ and BW are available, checked just above.
        let done = unsafe { xxh3_spans_avx512(text, spans, seed, &mut out[from..]) };
        for (slot, &(a, b)) in out[from + done..].iter_mut().zip(&spans[done..]) {
            *slot = xxhash_rust::xxh3::xxh3_64_with_seed(&text[a..b], seed);
        }
        return;
    }
    out.extend(
        spans
            .iter()
            .map(|&(a, b)| xxhash_rust::xxh3::xxh3_64_with_seed(&text[a..b], seed)),
    );
}

/// [`xxh3_spans`] eight spans a step into `out` (as long as `spans`), for the first multiple of
/// eight of them; returns how many. Each lane holds the first 16 bytes from its span's start
/// (fewer, padded with zeros, at the text's end) and its length; XXH3's paths for 1 to 3, 4 to
/// 8 and 9 to 16 bytes read only bytes within the span, and a lane of another length (empty,
/// or longer than 16 bytes) is hashed again by the crate.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx512bw")]
unsafe fn xxh3_spans_avx512(
    text: &[u8],
    spans: &[(usize, usize)],
    seed: u64,
    out: &mut [u64],
) -> usize {
    use std::arch::x86_64::*;
    // The first 56 bytes of XXH3's default secret (`kSecret` of its specification), the
    // ones its paths of up to 16 bytes read.
    #[rustfmt::skip]
    const S: [u8; 56] = [
        0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21,
        0xad, 0x1c, 0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4,
        0xb7, 0xb3, 0x67, 0x1f, 0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a,
        0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21, 0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e,
    ];
    let le64 = |i: usize| u64::from_le_bytes(S[i..i + 8].try_into().expect("8 bytes"));
    let le32 = |i: usize| u64::from(u32::from_le_bytes(S[i..i + 4].try_into().expect("4 bytes")));
    let set = |v: u64| _mm512_set1_epi64(v as i64);
    let flip_1to3 = set((le32(0) ^ le32(4)).wrapping_add(seed));
    let seed_4to8 = seed ^ (u64::from((seed as u32).swap_bytes()) << 32);
    let flip_4to8 = set((le64(8) ^ le64(16)).wrapping_sub(seed_4to8));
    let flip_lo = set((le64(24) ^ le64(32)).wrapping_add(seed));
    let flip_hi = set((le64(40) ^ le64(48)).wrapping_sub(seed));
    let byte = set(0xFF);
    let low32 = set(0xFFFF_FFFF);
    #[rustfmt::skip]
    let reverse = _mm512_set_epi8(
        8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7,
        8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7,
        8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7,
        8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7,
    );
    let xor = |a, b| _mm512_xor_si512(a, b);
    let add = |a, b| _mm512_add_epi64(a, b);
    let mul = |a, b| _mm512_mullo_epi64(a, b);
    let n = spans.len() / 8 * 8;
    for (group, slots) in spans[..n].chunks_exact(8).zip(out.chunks_exact_mut(8)) {
        let ([v0, v1, len], longest) = windows8!(text, group);
        let other = longest > 16 || group.iter().any(|&(a, b)| a == b);
        let bits = |k: i64| _mm512_slli_epi64::<3>(_mm512_sub_epi64(len, _mm512_set1_epi64(k)));
        // 1 to 3 bytes: the first, middle and last, and the length, through XXH64's avalanche.
        let at = |shift| _mm512_and_si512(_mm512_srlv_epi64(v0, shift), byte);
        let middle = _mm512_slli_epi64::<3>(_mm512_srli_epi64::<1>(len));
        let combo = _mm512_or_si512(
            _mm512_or_si512(
                _mm512_slli_epi64::<16>(_mm512_and_si512(v0, byte)),
                _mm512_slli_epi64::<24>(at(middle)),
            ),
            _mm512_or_si512(at(bits(1)), _mm512_slli_epi64::<8>(len)),
        );
        let mut h = xor(combo, flip_1to3);
        h = xor(h, _mm512_srli_epi64::<33>(h));
        h = mul(h, set(0xC2B2_AE3D_27D4_EB4F));
        h = xor(h, _mm512_srli_epi64::<29>(h));
        h = mul(h, set(0x1656_67B1_9E37_79F9));
        let short = xor(h, _mm512_srli_epi64::<32>(h));
        // 4 to 8 bytes: the first four and the last four, through the strong avalanche.
        let last4 = _mm512_and_si512(_mm512_srlv_epi64(v0, bits(4)), low32);
        let first4 = _mm512_slli_epi64::<32>(_mm512_and_si512(v0, low32));
        let mut h = xor(add(last4, first4), flip_4to8);
        h = xor(h, xor(_mm512_rol_epi64::<49>(h), _mm512_rol_epi64::<24>(h)));
        h = mul(h, set(0x9FB2_1C65_1E98_DF25));
        h = xor(h, add(_mm512_srli_epi64::<35>(h), len));
        h = mul(h, set(0x9FB2_1C65_1E98_DF25));
        let middling = xor(h, _mm512_srli_epi64::<28>(h));
        // 9 to 16 bytes: the first eight and the last eight, and their 128-bit product folded.
        let lo = xor(v0, flip_lo);
        let last8 = _mm512_or_si512(
            _mm512_srlv_epi64(v0, bits(8)),
            _mm512_sllv_epi64(v1, _mm512_slli_epi64::<3>(_mm512_sub_epi64(set(16), len))),
        );
        let hi = xor(last8, flip_hi);
        // The high halves kept opaque to the optimizer: seeing the whole product, it makes
        // eight scalar multiplies of it, each lane moved out of the vector and back.
        let lo_hi = std::hint::black_box(_mm512_srli_epi64::<32>(lo));
        let hi_hi = std::hint::black_box(_mm512_srli_epi64::<32>(hi));
        let ll = _mm512_mul_epu32(lo, hi);
        let lh = _mm512_mul_epu32(lo, hi_hi);
        let hl = _mm512_mul_epu32(lo_hi, hi);
        let hh = _mm512_mul_epu32(lo_hi, hi_hi);
        let cross = add(
            _mm512_srli_epi64::<32>(ll),
            add(_mm512_and_si512(lh, low32), _mm512_and_si512(hl, low32)),
        );
        let high = add(
            add(hh, _mm512_srli_epi64::<32>(cross)),
            add(_mm512_srli_epi64::<32>(lh), _mm512_srli_epi64::<32>(hl)),
        );
        let folded = xor(mul(lo, hi), high);
        let swapped = _mm512_shuffle_epi8(lo, reverse);
        let mut h = add(add(len, swapped), add(hi, folded));
        h = xor(h, _mm512_srli_epi64::<37>(h));
        h = mul(h, set(0x1656_6791_9E37_79F9));
        let long = xor(h, _mm512_srli_epi64::<32>(h));
        // Each lane's path by its length.
        let up_to_3 = _mm512_cmple_epu64_mask(len, set(3));
        let up_to_8 = _mm512_cmple_epu64_mask(len, set(8));
        let hashes = _mm512_mask_blend_epi64(
            up_to_3,
            _mm512_mask_blend_epi64(up_to_8, long, middling),
            short,
        );
        // SAFETY: `slots` holds eight u64.
        _mm512_storeu_si512(slots.as_mut_ptr().cast(), hashes);
        if other {
            for (slot, &(a, b)) in slots.iter_mut().zip(group) {
                if b == a || b - a > 16 {
                    *slot = xxhash_rust::xxh3::xxh3_64_with_seed(&text[a..b], seed);
                }
            }
        }
    }
    n
}

/// The position of the first value of `run` within Hamming distance `k` of `a`, or `run.len()`.
#[inline]
pub fn first_within(a: u64, run: &[u64], k: u32) -> usize {
    #[cfg(target_arch = "x86_64")]
    if run.len() >= 8 && !scalar_forced() && std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 is available, checked just above.
        return unsafe { first_within_avx2(a, run, k) };
    }
    first_within_scalar(a, run, k)
}

/// [`first_within`] four distances at a time, with one branch for the four: nearly every
/// comparison fails, and a branch each costs more than the comparison.
fn first_within_scalar(a: u64, run: &[u64], k: u32) -> usize {
    let near = |y: &u64| (a ^ y).count_ones() <= k;
    let mut at = 0;
    for four in run.chunks_exact(4) {
        if near(&four[0]) | near(&four[1]) | near(&four[2]) | near(&four[3]) {
            break;
        }
        at += 4;
    }
    at + run[at..].iter().position(near).unwrap_or(run.len() - at)
}

/// [`first_within`] eight distances a step: each byte of `a ^ y` counted by two nibble lookups,
/// the byte counts summed per 64-bit lane; a step with a distance within `k` is resolved by the
/// portable loop, which finds the first.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn first_within_avx2(a: u64, run: &[u64], k: u32) -> usize {
    use std::arch::x86_64::*;
    let av = _mm256_set1_epi64x(a as i64);
    let kv = _mm256_set1_epi64x(i64::from(k));
    let nibble = _mm256_set1_epi8(0x0f);
    #[rustfmt::skip]
    let ones = _mm256_setr_epi8(
        0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4,
        0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4,
    );
    let zero = _mm256_setzero_si256();
    let mut at = 0;
    while at + 8 <= run.len() {
        let mut far = _mm256_set1_epi8(-1);
        for half in 0..2 {
            // SAFETY: at + 8 <= run.len(): the two unaligned loads read run[at..at + 8].
            let y = _mm256_loadu_si256(run.as_ptr().add(at + 4 * half).cast());
            let x = _mm256_xor_si256(y, av);
            let low = _mm256_shuffle_epi8(ones, _mm256_and_si256(x, nibble));
            let high = _mm256_shuffle_epi8(ones, _mm256_and_si256(_mm256_srli_epi16(x, 4), nibble));
            let count = _mm256_sad_epu8(_mm256_add_epi8(low, high), zero);
            far = _mm256_and_si256(far, _mm256_cmpgt_epi64(count, kv));
        }
        if _mm256_movemask_epi8(far) != -1 {
            break;
        }
        at += 8;
    }
    at + first_within_scalar(a, &run[at..], k)
}

/// The dot products of `v` with the 64 normals stored by dimension in `by_dim` (entry
/// `d * 64 + i` is component d of normal i), each accumulated in dimension order.
#[inline]
pub fn dot<T: Copy + Into<f64>>(by_dim: &[f64], v: &[T]) -> [f64; 64] {
    #[cfg(target_arch = "x86_64")]
    if !scalar_forced() && std::arch::is_x86_feature_detected!("avx") {
        // SAFETY: AVX is available, checked just above.
        return unsafe { dot_avx(by_dim, v) };
    }
    dot_scalar(by_dim, v)
}

/// [`dot`] as portable code. The 64 sums stay in registers with AVX (16 x 4 lanes); measured no
/// slower than blocks of rows.
#[inline(always)]
fn dot_scalar<T: Copy + Into<f64>>(by_dim: &[f64], v: &[T]) -> [f64; 64] {
    let mut acc = [0f64; 64];
    for (normals, &x) in by_dim.chunks_exact(64).zip(v) {
        let normals: &[f64; 64] = normals.try_into().unwrap_or(&[0.0; 64]);
        let x: f64 = x.into();
        for (a, &n) in acc.iter_mut().zip(normals) {
            *a += x * n;
        }
    }
    acc
}

/// [`dot_scalar`] compiled for AVX.
///
/// # Safety
/// The CPU must support AVX.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn dot_avx<T: Copy + Into<f64>>(by_dim: &[f64], v: &[T]) -> [f64; 64] {
    dot_scalar(by_dim, v)
}

/// Carries on the merge of two ascending runs of distinct values eight values of each a step,
/// where the CPU can: from `x` values of `a` and `y` of `b` taken, `both` of them in both, a step
/// takes every value up to the smaller of the two runs' eighth values ahead (eight of one, up to
/// eight of the other) and adds those of the eight of `a` that are among the eight of `b` (a
/// value of `a` in `b` past them is larger than both eighth values): the state that the merge
/// taking the smaller head a step reaches there. At most `steps` steps, while each run holds
/// eight more and the union taken, `x + y - both`, stays within `limit` (a step takes 8 to 16
/// of it). Returns the new `(x, y, both)`, unchanged on the portable path (the caller merges a
/// value a step).
#[inline]
pub fn merge_eights(
    a: &[u64],
    b: &[u64],
    x: usize,
    y: usize,
    both: usize,
    limit: usize,
    steps: usize,
) -> (usize, usize, usize) {
    #[cfg(target_arch = "x86_64")]
    if !scalar_forced() && std::arch::is_x86_feature_detected!("avx512f") {
        // SAFETY: AVX-512 F is available, checked just above.
        return unsafe { merge_eights_avx512(a, b, x, y, both, limit, steps) };
    }
    #[cfg(target_arch = "x86_64")]
    if !scalar_forced() && std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 is available, checked just above.
        return unsafe { merge_eights_avx2(a, b, x, y, both, limit, steps) };
    }
    let _ = (a, b, limit, steps);
    (x, y, both)
}

/// How many values ahead of a step [`merge_eights`] asks the cache for each run's line.
#[cfg(target_arch = "x86_64")]
const MERGE_AHEAD: usize = 32;

/// The next eight values of each run for a step of [`merge_eights`], from the merge's state
/// `(x, y, both)`; None where a run holds fewer than eight more or the step could take the
/// union past `limit`. A candidate's sketch comes from memory: the lines `MERGE_AHEAD` values
/// ahead are asked for (none left the stars 1.03-1.05 times as long on the manual pages and
/// the long texts, eight or sixteen lines ahead 1.01-1.05 times).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn next_eights<'a>(
    a: &'a [u64],
    b: &'a [u64],
    (x, y, both): (usize, usize, usize),
    limit: usize,
) -> Option<(&'a [u64], &'a [u64])> {
    if x + 8 > a.len() || y + 8 > b.len() || x + y - both + 16 > limit {
        return None;
    }
    if let Some(v) = a.get(x + MERGE_AHEAD) {
        prefetch_line(v);
    }
    if let Some(v) = b.get(y + MERGE_AHEAD) {
        prefetch_line(v);
    }
    Some((&a[x..x + 8], &b[y..y + 8]))
}

/// [`merge_eights`] with AVX-512: the runs taken counted by two unsigned compares, each run's
/// eight against the other's eighth value, the shared values by eight compares of `a`'s eight
/// with each of `b`'s, all independent of each other (a step waits on the last one's counts
/// alone, not on a value a step as the portable merge does).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn merge_eights_avx512(
    a: &[u64],
    b: &[u64],
    mut x: usize,
    mut y: usize,
    mut both: usize,
    limit: usize,
    steps: usize,
) -> (usize, usize, usize) {
    use std::arch::x86_64::*;
    for _ in 0..steps {
        let Some((ra, rb)) = next_eights(a, b, (x, y, both), limit) else {
            break;
        };
        // SAFETY: `ra` and `rb` hold eight values each; the loads are unaligned.
        let (va, vb) = unsafe {
            (
                _mm512_loadu_si512(ra.as_ptr().cast()),
                _mm512_loadu_si512(rb.as_ptr().cast()),
            )
        };
        let taken_a = _mm512_cmple_epu64_mask(va, _mm512_set1_epi64(rb[7] as i64));
        let taken_b = _mm512_cmple_epu64_mask(vb, _mm512_set1_epi64(ra[7] as i64));
        let mut shared = 0u8;
        for &v in rb {
            shared |= _mm512_cmpeq_epi64_mask(va, _mm512_set1_epi64(v as i64));
        }
        x += taken_a.count_ones() as usize;
        y += taken_b.count_ones() as usize;
        both += shared.count_ones() as usize;
    }
    (x, y, both)
}

/// [`merge_eights`] with AVX2, as [`merge_eights_avx512`] does it with four lanes a vector:
/// each run's eight values in two vectors, compared unsigned by flipping their top bits before
/// AVX2's signed compare, the counts read from the compares' masks.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn merge_eights_avx2(
    a: &[u64],
    b: &[u64],
    mut x: usize,
    mut y: usize,
    mut both: usize,
    limit: usize,
    steps: usize,
) -> (usize, usize, usize) {
    use std::arch::x86_64::*;
    let top = _mm256_set1_epi64x(i64::MIN);
    // How many lanes of `m` (a compare's result) are set.
    let lanes = |m: __m256i| _mm256_movemask_pd(_mm256_castsi256_pd(m)).count_ones() as usize;
    for _ in 0..steps {
        let Some((ra, rb)) = next_eights(a, b, (x, y, both), limit) else {
            break;
        };
        // SAFETY: `ra` and `rb` hold eight values each; the loads are unaligned.
        let (a0, a1, b0, b1) = unsafe {
            (
                _mm256_loadu_si256(ra.as_ptr().cast()),
                _mm256_loadu_si256(ra[4..].as_ptr().cast()),
                _mm256_loadu_si256(rb.as_ptr().cast()),
                _mm256_loadu_si256(rb[4..].as_ptr().cast()),
            )
        };
        // The values of each run past the other's eighth: those not taken.
        let flip = |v: __m256i| _mm256_xor_si256(v, top);
        let (last_a, last_b) = (
            _mm256_set1_epi64x((ra[7] ^ (1 << 63)) as i64),
            _mm256_set1_epi64x((rb[7] ^ (1 << 63)) as i64),
        );
        let past_a = lanes(_mm256_cmpgt_epi64(flip(a0), last_b))
            + lanes(_mm256_cmpgt_epi64(flip(a1), last_b));
        let past_b = lanes(_mm256_cmpgt_epi64(flip(b0), last_a))
            + lanes(_mm256_cmpgt_epi64(flip(b1), last_a));
        let (mut shared0, mut shared1) = (_mm256_setzero_si256(), _mm256_setzero_si256());
        for &v in rb {
            let v = _mm256_set1_epi64x(v as i64);
            shared0 = _mm256_or_si256(shared0, _mm256_cmpeq_epi64(a0, v));
            shared1 = _mm256_or_si256(shared1, _mm256_cmpeq_epi64(a1, v));
        }
        x += 8 - past_a;
        y += 8 - past_b;
        both += lanes(shared0) + lanes(shared1);
    }
    (x, y, both)
}

/// Asks the cache for the line holding `x`; nothing where the CPU has no such hint.
#[inline(always)]
pub fn prefetch_line<T>(x: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching is a hint; the address is a valid reference.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
            (x as *const T).cast::<i8>(),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fingerprint::encoders::Hyperplanes;
    use crate::fingerprint::simhash::{Hasher, Weighting};
    use crate::testing::xorshift64;
    use crate::text::features::{FeatureConfig, TokenKind};

    /// Held by the test that forces the portable paths (a switch of the whole process) and by
    /// the tests that count what dispatch hands to a vector path, which it would change under
    /// them.
    static SWITCH: std::sync::Mutex<()> = std::sync::Mutex::new(());

    fn switch() -> std::sync::MutexGuard<'static, ()> {
        SWITCH.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
        move || xorshift64(&mut seed)
    }

    #[test]
    fn word_bits_paths_agree_on_every_byte_in_every_position() {
        let mut next = xorshift(crate::GOLDEN_GAMMA);
        let mut blocks: Vec<[u8; 64]> = (0..=255u8)
            .map(|b| std::array::from_fn(|j| b.wrapping_add(j as u8)))
            .collect();
        blocks.extend((0..2000).map(|_| std::array::from_fn(|_| next() as u8)));
        for block in &blocks {
            let want = block.iter().enumerate().fold(0u64, |bits, (j, &b)| {
                bits | (u64::from(b.is_ascii_digit() || b.is_ascii_alphabetic()) << j)
            });
            assert_eq!(word_bits_scalar(block), want, "{block:?}");
            #[cfg(target_arch = "x86_64")]
            assert_eq!(word_bits_sse2(block), want, "{block:?}");
            // The first bytes of characters past ASCII: those that are not ASCII and not a
            // continuation (10xxxxxx).
            let leads = block.iter().enumerate().fold(0u64, |bits, (j, &b)| {
                bits | (u64::from(!b.is_ascii() && b & 0xC0 != 0x80) << j)
            });
            assert_eq!(lead_bits_scalar(block), leads, "{block:?}");
            #[cfg(target_arch = "x86_64")]
            assert_eq!(lead_bits_sse2(block), leads, "{block:?}");
        }
    }

    #[test]
    fn shingle_chains_are_the_portable_shingle_hashes() {
        let _switch = switch();
        let mut next = xorshift(11);
        let words: Vec<u64> = (0..300).map(|_| next()).collect();
        let checks: Vec<u64> = (0..300).map(|_| next()).collect();
        // The path dispatch takes, then each vector path the CPU has, called directly (on a CPU
        // with AVX-512, dispatch never takes the AVX2 path).
        type Chains = fn(u64, usize, &[u64], &[u64], &mut [u64]) -> usize;
        let mut paths: Vec<(&str, Chains, usize)> = vec![("dispatch", shingle_chains, 0)];
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512dq") {
                // SAFETY: AVX-512 F and DQ are available, checked just above.
                let avx512: Chains =
                    |s, k, w, c, o| unsafe { shingle_chains_avx512(s, k, w, c, o) };
                paths.push(("avx512", avx512, 8));
                paths[0].2 = 8;
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: AVX2 is available, checked just above.
                let avx2: Chains = |s, k, w, c, o| unsafe { shingle_chains_avx2(s, k, w, c, o) };
                paths.push(("avx2", avx2, 4));
                if paths[0].2 == 0 {
                    paths[0].2 = 4;
                }
            }
        }
        for (name, chains, step) in paths {
            for width in 1..=9 {
                for len in [
                    0, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 40, 64, 100, 291,
                ] {
                    let len = len.min(words.len() + 1 - width);
                    let mut out = vec![0u64; len];
                    let done = chains(crate::PI_SEED, width, &words, &checks, &mut out);
                    // Dispatch hashes a whole number of some path's steps: with AVX-512,
                    // fewer than eight shingles may take the AVX2 path.
                    if step == 0 || name == "dispatch" {
                        assert!(done <= len && done % 4 == 0, "{name}, {done} of {len}");
                        assert!(
                            step == 0 || done >= len / step * step,
                            "{name}, {done} of {len}"
                        );
                    } else {
                        assert_eq!(
                            done,
                            len / step * step,
                            "{name}, width {width}, {len} shingles"
                        );
                    }
                    for (j, &h) in out[..done].iter().enumerate() {
                        let want = crate::sketch::verify::shingle_hash(
                            &words[j..j + width],
                            &checks[j..j + width],
                        );
                        assert_eq!(h, want, "{name}, width {width}, shingle {j} of {len}");
                    }
                }
            }
        }
    }

    /// The merge of `a` and `b` a value a step, from `(x, y, both)`, while both hold eight
    /// more and the union stays within `limit`, for `steps` rounds of eight: each round takes
    /// every value up to the smaller of the two eighth values ahead, as [`merge_eights`] must.
    fn merge_by_ones(
        a: &[u64],
        b: &[u64],
        (mut x, mut y, mut both): (usize, usize, usize),
        limit: usize,
        steps: usize,
    ) -> (usize, usize, usize) {
        for _ in 0..steps {
            if x + 8 > a.len() || y + 8 > b.len() || x + y - both + 16 > limit {
                break;
            }
            let upto = a[x + 7].min(b[y + 7]);
            while (x < a.len() && a[x] <= upto) || (y < b.len() && b[y] <= upto) {
                let (p, q) = (a.get(x).copied(), b.get(y).copied());
                match (p, q) {
                    (Some(p), Some(q)) if p == q => (x, y, both) = (x + 1, y + 1, both + 1),
                    (Some(p), Some(q)) if p < q => x += 1,
                    (Some(_), Some(_)) => y += 1,
                    (Some(_), None) => x += 1,
                    _ => y += 1,
                }
            }
        }
        (x, y, both)
    }

    #[test]
    fn merge_eights_paths_take_what_the_merge_a_value_a_step_takes() {
        type Merge = fn(&[u64], &[u64], usize, usize, usize, usize, usize) -> (usize, usize, usize);
        let mut paths: Vec<(&str, Merge)> = vec![("dispatch", merge_eights)];
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                // SAFETY: AVX-512 F is available, checked just above.
                let avx512: Merge =
                    |a, b, x, y, k, l, s| unsafe { merge_eights_avx512(a, b, x, y, k, l, s) };
                paths.push(("avx512", avx512));
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: AVX2 is available, checked just above.
                let avx2: Merge =
                    |a, b, x, y, k, l, s| unsafe { merge_eights_avx2(a, b, x, y, k, l, s) };
                paths.push(("avx2", avx2));
            }
        }
        let mut next = xorshift(23);
        for round in 0..400 {
            // Two sorted runs of distinct values drawn from a pool, sharing some: values with
            // the top bit set in half the rounds (an unsigned compare that a signed one gets
            // wrong), and an empty overlap, a full one and partial ones.
            let top = if round % 2 == 0 { 0 } else { 1u64 << 63 };
            let share = [0, 1, 3, 7, 10][round % 5];
            let pool: Vec<u64> = (0..200).map(|_| top | (next() >> 2)).collect();
            let mut a: Vec<u64> = pool.iter().copied().filter(|v| v % 10 < 5).collect();
            let mut b: Vec<u64> = pool
                .iter()
                .copied()
                .filter(|v| (v % 10 >= 5) || (v % 10) < share.min(5) as u64 && share > 0)
                .collect();
            if round % 7 == 0 {
                b = a.clone();
            }
            a.sort_unstable();
            a.dedup();
            b.sort_unstable();
            b.dedup();
            let a = &a[..a.len() - (round % 9)];
            // A state the merge reaches: `round % 11` values taken a value at a time.
            let (mut x, mut y, mut both) = (0, 0, 0);
            for _ in 0..round % 11 {
                match a[x].cmp(&b[y]) {
                    std::cmp::Ordering::Equal => (x, y, both) = (x + 1, y + 1, both + 1),
                    std::cmp::Ordering::Less => x += 1,
                    std::cmp::Ordering::Greater => y += 1,
                }
            }
            let start = (x, y, both);
            let limit = [1000, 60, 17, 16][round % 4];
            for steps in [0, 1, 2, 5, 100] {
                let want = merge_by_ones(a, &b, start, limit, steps);
                for (name, merge) in &paths {
                    let got = merge(a, &b, start.0, start.1, start.2, limit, steps);
                    if *name == "dispatch" && got == start {
                        continue; // the portable path leaves the merge to its caller
                    }
                    assert_eq!(got, want, "{name}, round {round}, {steps} steps");
                }
            }
        }
    }

    /// A text of random bytes and spans of it of every length from 0 to 40 bytes, `each` of
    /// every length anywhere, and one of every length ending at the text's end.
    fn random_spans(seed: u64, each: usize) -> (Vec<u8>, Vec<(usize, usize)>) {
        let mut next = xorshift(seed);
        let text: Vec<u8> = (0..4000).map(|_| next() as u8).collect();
        let mut spans = Vec::new();
        for len in 0..=40usize {
            for _ in 0..each {
                let a = (next() as usize) % (text.len() - len + 1);
                spans.push((a, a + len));
            }
            spans.push((text.len() - len, text.len()));
        }
        (text, spans)
    }

    #[test]
    fn fnv1a_spans_are_the_portable_hashes_at_every_length() {
        let _switch = switch();
        let (text, by_length) = random_spans(17, 10);
        // The spans in order of length, and shuffled, so that a step's lanes end apart.
        let mut shuffled = by_length.clone();
        let mut next = xorshift(5);
        for i in (1..shuffled.len()).rev() {
            shuffled.swap(i, (next() % (i as u64 + 1)) as usize);
        }
        let portable = |spans: &[(usize, usize)]| -> Vec<u64> {
            spans
                .iter()
                .map(|&(a, b)| crate::text::hash::fnv1a_64(&text[a..b]))
                .collect()
        };
        let vector = std::arch::is_x86_feature_detected!("avx512dq")
            || std::arch::is_x86_feature_detected!("avx2");
        for spans in [&by_length, &shuffled] {
            for k in [0, 15, 16, 17, 47, 100, spans.len()] {
                let mut got = vec![42];
                let done = fnv1a_spans(&text, &spans[..k], &mut got);
                assert_eq!(done, if vector { k / 16 * 16 } else { 0 });
                assert_eq!(got[0], 42);
                assert_eq!(got[1..], portable(&spans[..done])[..], "{k} spans");
                // The AVX2 path called directly, where dispatch would take AVX-512.
                #[cfg(target_arch = "x86_64")]
                if std::arch::is_x86_feature_detected!("avx2") {
                    let n = k / 16 * 16;
                    let mut got = vec![42; n];
                    // SAFETY: AVX2 is available, checked just above; n is a multiple of 16.
                    unsafe { fnv1a_spans_avx2(&text, &spans[..n], &mut got) };
                    assert_eq!(got, portable(&spans[..n]), "{n} spans");
                }
            }
        }
    }

    #[test]
    fn xxh3_spans_are_the_crates_hashes_at_every_length() {
        let (text, mut spans) = random_spans(13, 20);
        // Starting at the text's end.
        spans.push((text.len(), text.len()));
        let seed = 0x7E57_ED0F_5EC0_4D11;
        // Each span once more, in an order that puts spans of every path in a step's lanes.
        let mut next = xorshift(5);
        let mut mixed = spans.clone();
        for i in (1..mixed.len()).rev() {
            mixed.swap(i, (next() % (i as u64 + 1)) as usize);
        }
        spans.extend(mixed);
        for k in [0, 1, 7, 8, 9, 100, spans.len()] {
            let mut got = vec![42];
            xxh3_spans(&text, &spans[..k], seed, &mut got);
            let want: Vec<u64> = spans[..k]
                .iter()
                .map(|&(a, b)| xxhash_rust::xxh3::xxh3_64_with_seed(&text[a..b], seed))
                .collect();
            assert_eq!(got[0], 42);
            assert_eq!(got[1..], want[..], "{k} spans");
        }
    }

    #[test]
    fn dot_paths_agree_bit_for_bit() {
        let mut next = xorshift(3);
        let mut uniform = move || (next() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0;
        for dim in [1, 3, 64, 385] {
            let by_dim: Vec<f64> = (0..dim * 64).map(|_| uniform()).collect();
            let v: Vec<f64> = (0..dim).map(|_| uniform() * 1e3).collect();
            let scalar = dot_scalar(&by_dim, &v);
            // The definition: each sum accumulated in dimension order.
            for (i, &s) in scalar.iter().enumerate() {
                let want = (0..dim).fold(0.0, |a, d| a + v[d] * by_dim[d * 64 + i]);
                assert_eq!(s.to_bits(), want.to_bits(), "dim {dim}, bit {i}");
            }
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx") {
                // SAFETY: AVX is available, checked just above.
                let avx = unsafe { dot_avx(&by_dim, &v) };
                assert_eq!(avx.map(f64::to_bits), scalar.map(f64::to_bits), "dim {dim}");
            }
        }
    }

    #[test]
    fn first_within_paths_find_the_first_near_value() {
        let mut next = xorshift(11);
        for len in (0..40).chain([97, 256, 1000]) {
            for k in [0, 3, 8, 16, 63] {
                let a = next();
                // Mostly far values, a few near ones (up to 2k flips) at random places.
                let run: Vec<u64> = (0..len)
                    .map(|_| {
                        if next().is_multiple_of(23) {
                            let flips = (next() % (2 * u64::from(k) + 1)) as u32;
                            (0..flips).fold(a, |v, _| v ^ (1u64 << (next() % 64)))
                        } else {
                            next()
                        }
                    })
                    .collect();
                let want = (0..len)
                    .find(|&i| (0..64).filter(|b| (a ^ run[i]) >> b & 1 == 1).count() as u32 <= k)
                    .unwrap_or(len);
                assert_eq!(first_within_scalar(a, &run, k), want, "len {len} k {k}");
                assert_eq!(first_within(a, &run, k), want, "len {len} k {k}");
                #[cfg(target_arch = "x86_64")]
                if len >= 8 && std::arch::is_x86_feature_detected!("avx2") {
                    // SAFETY: AVX2 is available, checked just above.
                    assert_eq!(unsafe { first_within_avx2(a, &run, k) }, want);
                }
            }
        }
    }

    /// The only test that moves the switch, so no other test sees it move.
    #[test]
    fn forcing_the_scalar_path_changes_no_fingerprint() {
        let _switch = switch();
        let texts: Vec<String> = (0..300)
            .map(|i| match i % 3 {
                0 => format!("plain ascii document {i} with words and numbers {} ", i * 7)
                    .repeat(1 + i % 9),
                1 => format!("déjà vu {i} 回家吃饭 한국어 क्ष त्र, café"),
                _ => format!("{i}-{i}_{i}.{}", "x".repeat(i)),
            })
            .collect();
        let hashers: Vec<Hasher> = [
            (TokenKind::Word, 3),
            (TokenKind::Word, 1),
            (TokenKind::Char, 4),
        ]
        .into_iter()
        .map(|(tokens, n)| {
            let features = FeatureConfig::new(tokens, n, None).unwrap();
            Hasher::new(features, Weighting::Tf, None, vec![1.0]).unwrap()
        })
        .collect();
        let planes = Hyperplanes::new(37, 64, 5).unwrap();
        let mut next = xorshift(11);
        let matrix: Vec<f64> = (0..37 * 50)
            .map(|_| (next() % 2001) as f64 / 1000.0 - 1.0)
            .collect();
        let run = || {
            let mut out: Vec<Vec<u64>> = hashers
                .iter()
                .map(|h| h.fingerprint_many(&[&texts[..]]).unwrap())
                .collect();
            out.push(planes.fingerprint_many(&matrix).unwrap());
            out
        };
        assert!(!scalar_forced());
        let fast = run();
        force_scalar(true);
        assert!(scalar_forced());
        let scalar = run();
        force_scalar(false);
        assert_eq!(fast, scalar);
        // The texts are varied enough that the fingerprints are not all alike.
        assert!(
            fast[0]
                .iter()
                .collect::<std::collections::HashSet<_>>()
                .len()
                > 250
        );
    }
}
