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
    block.iter().enumerate().fold(0, |bits, (j, &b)| {
        bits | (u64::from(b.is_ascii_alphanumeric()) << j)
    })
}

/// [`word_bits`] sixteen bytes a compare.
#[cfg(target_arch = "x86_64")]
#[inline]
fn word_bits_sse2(block: &[u8; 64]) -> u64 {
    use std::arch::x86_64::*;
    let mut bits = 0u64;
    for (k, chunk) in block.chunks_exact(16).enumerate() {
        // SAFETY: SSE2 is always available on x86_64; the load is unaligned and reads the
        // sixteen bytes of `chunk`.
        let mask = unsafe {
            let v = _mm_loadu_si128(chunk.as_ptr().cast());
            let between = |v: __m128i, lo: u8, hi: u8| {
                // Bytes past 0x7f are negative as i8, below every bound: never a word byte.
                _mm_and_si128(
                    _mm_cmpgt_epi8(v, _mm_set1_epi8(lo as i8 - 1)),
                    _mm_cmplt_epi8(v, _mm_set1_epi8(hi as i8 + 1)),
                )
            };
            let lower = _mm_or_si128(v, _mm_set1_epi8(0x20));
            let word = _mm_or_si128(between(v, b'0', b'9'), between(lower, b'a', b'z'));
            _mm_movemask_epi8(word) as u16
        };
        bits |= u64::from(mask) << (16 * k);
    }
    bits
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
                        if next() % 23 == 0 {
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
