//! FNV-1a 64, the hash of every feature.
//!
//! FNV-1a is serial within one input: each byte waits for the multiply of the one before, so a
//! single stream runs at the multiplier's latency. [`fnv1a_64_x4`] hashes four inputs in lockstep
//! so that four independent multiply chains overlap, which is where most of the feature
//! throughput comes from; [`hash_ranges`] steps four short ranges (word tokens) to the longest
//! of them without a branch on the data, since a branch per token end mispredicts about once
//! a word.

/// The FNV-1a 64 offset basis.
pub const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
/// The FNV-1a 64 prime.
pub const PRIME: u64 = 0x0000_0100_0000_01b3;

/// fmix64, the 64-bit finalizer of Austin Appleby's MurmurHash3: a fixed bijection of `u64`
/// (xor-shifts and odd multipliers, each invertible) in which every input bit flips each output
/// bit with probability close to 1/2.
///
/// FNV-1a alone mixes its last bytes poorly: the hashes of one- and two-byte features share most
/// of their bits, so texts of digits and one-letter names all fingerprint close to one value.
/// Every feature hash goes through this finalizer before the tallies ([`feature_hash`]).
#[inline]
pub fn fmix64(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^ (k >> 33)
}

/// The hash of one feature as the fingerprints tally it: [`fmix64`] of its FNV-1a 64.
#[inline]
pub fn feature_hash(bytes: &[u8]) -> u64 {
    fmix64(fnv1a_64(bytes))
}

/// Continues an FNV-1a 64 hash `state` over `bytes`.
#[inline]
pub fn fnv1a_64_update(state: u64, bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(state, |h, &b| (h ^ u64::from(b)).wrapping_mul(PRIME))
}

/// FNV-1a 64 of `bytes`.
#[inline]
pub fn fnv1a_64(bytes: &[u8]) -> u64 {
    fnv1a_64_update(OFFSET_BASIS, bytes)
}

/// FNV-1a 64 of four inputs at once; equal to four calls of [`fnv1a_64`].
#[inline]
pub fn fnv1a_64_x4(inputs: [&[u8]; 4]) -> [u64; 4] {
    let [a, b, c, d] = inputs;
    let common = a.len().min(b.len()).min(c.len()).min(d.len());
    let mut h = [OFFSET_BASIS; 4];
    for (((&x0, &x1), &x2), &x3) in a[..common]
        .iter()
        .zip(&b[..common])
        .zip(&c[..common])
        .zip(&d[..common])
    {
        h[0] = (h[0] ^ u64::from(x0)).wrapping_mul(PRIME);
        h[1] = (h[1] ^ u64::from(x1)).wrapping_mul(PRIME);
        h[2] = (h[2] ^ u64::from(x2)).wrapping_mul(PRIME);
        h[3] = (h[3] ^ u64::from(x3)).wrapping_mul(PRIME);
    }
    [
        fnv1a_64_update(h[0], &a[common..]),
        fnv1a_64_update(h[1], &b[common..]),
        fnv1a_64_update(h[2], &c[common..]),
        fnv1a_64_update(h[3], &d[common..]),
    ]
}

/// Ranges up to this long are hashed in lockstep to the longest of four (see [`hash_ranges`]).
const SHORT_RANGE: usize = 16;

/// FNV-1a 64 of four ranges of `buf`, none longer than [`SHORT_RANGE`], stepping all four to
/// the length of the longest: a lane past its end keeps its hash, so no step branches on the
/// data. Equal to four calls of [`fnv1a_64`].
#[inline]
#[allow(clippy::needless_range_loop)] // byte j of four lanes per step: the index is the point
fn fnv1a_64_x4_short(buf: &[u8], q: &[(usize, usize)]) -> [u64; 4] {
    let len = [
        q[0].1 - q[0].0,
        q[1].1 - q[1].0,
        q[2].1 - q[2].0,
        q[3].1 - q[3].0,
    ];
    let longest = len.iter().copied().max().unwrap_or(0);
    let mut h = [OFFSET_BASIS; 4];
    if q.iter().all(|&(s, _)| s + longest <= buf.len()) {
        // Each lane reads `longest` bytes from its start, past its end where it is shorter.
        let lanes = [0, 1, 2, 3].map(|l| &buf[q[l].0..q[l].0 + longest]);
        for j in 0..longest {
            for l in 0..4 {
                let next = (h[l] ^ u64::from(lanes[l][j])).wrapping_mul(PRIME);
                h[l] = if j < len[l] { next } else { h[l] };
            }
        }
        return h;
    }
    let last = buf.len().saturating_sub(1);
    for j in 0..longest {
        for l in 0..4 {
            let next = (h[l] ^ u64::from(buf[(q[l].0 + j).min(last)])).wrapping_mul(PRIME);
            h[l] = if j < len[l] { next } else { h[l] };
        }
    }
    h
}

/// Appends to `out` the FNV-1a 64 of `buf[start..end]` for each range, four at a time.
pub fn hash_ranges(buf: &[u8], ranges: &[(usize, usize)], out: &mut Vec<u64>) {
    out.reserve(ranges.len());
    let done = crate::runtime::simd::fnv1a_spans(buf, ranges, out);
    let mut quads = ranges[done..].chunks_exact(4);
    for q in &mut quads {
        if q.iter().all(|&(s, e)| e - s <= SHORT_RANGE) {
            out.extend_from_slice(&fnv1a_64_x4_short(buf, q));
            continue;
        }
        out.extend_from_slice(&fnv1a_64_x4([
            &buf[q[0].0..q[0].1],
            &buf[q[1].0..q[1].1],
            &buf[q[2].0..q[2].1],
            &buf[q[3].0..q[3].1],
        ]));
    }
    out.extend(quads.remainder().iter().map(|&(s, e)| fnv1a_64(&buf[s..e])));
}

/// The hasher of in-memory maps and sets keyed by our own values (feature hashes, stopwords):
/// one folded 128-bit multiply per word, so both the low bits (bucket) and the high bits (control
/// byte) of the table hash are well mixed. Deterministic, unlike std's `RandomState`.
#[derive(Default)]
pub struct FoldHasher(u64);

/// The state of maps and sets hashed by [`FoldHasher`].
pub type FoldState = std::hash::BuildHasherDefault<FoldHasher>;

impl std::hash::Hasher for FoldHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Eight bytes a step (a content key, two words, in two), then the rest one by one.
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            self.write_u64(u64::from_le_bytes(w.try_into().unwrap_or([0; 8])));
        }
        for &b in words.remainder() {
            self.write_u64(u64::from(b) ^ self.0.rotate_left(8));
        }
    }
    fn write_u64(&mut self, x: u64) {
        let p = u128::from(x ^ self.0) * u128::from(crate::GOLDEN_GAMMA);
        self.0 = (p as u64) ^ ((p >> 64) as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Published FNV-1a 64 test vectors (the FNV reference test suite by Fowler, Noll and Vo).
    const VECTORS: &[(&[u8], u64)] = &[
        (b"", 0xcbf29ce484222325),
        (b"a", 0xaf63dc4c8601ec8c),
        (b"b", 0xaf63df4c8601f1a5),
        (b"c", 0xaf63de4c8601eff2),
        (b"foobar", 0x85944171f73967e8),
        (b"chongo was here!\n", 0x46810940eff5f915),
    ];

    #[test]
    fn published_vectors() {
        for &(input, expected) in VECTORS {
            assert_eq!(fnv1a_64(input), expected, "input {input:?}");
        }
    }

    // MurmurHash3_x64_128 of the empty input with seed s ends in h1 = fmix64(2s) + fmix64(3s),
    // h2 = h1 + fmix64(3s) (its body and tail do nothing; h1 = h2 = s, then h1 += h2; h2 += h1).
    // The digests are those of the reference implementation, as the `mmh3` package (Appleby's C++
    // code) returns them: mmh3.hash128(b"", s, signed=False) = h2 << 64 | h1.
    const MURMUR3_EMPTY: &[(u64, u64, u64)] = &[
        (1, 0x4610_abe5_6eff_5cb5, 0x5162_2daa_78f8_3583),
        (2, 0x3044_b81a_706c_5de8, 0x18f9_6bcc_37e8_a35b),
        (0xdead_beef, 0x08c8_a2f1_0d6a_12a1, 0xa82a_e0a4_4ebd_3bbb),
    ];

    #[test]
    fn fmix64_finishes_murmur3_as_the_reference_does() {
        for &(seed, h1, h2) in MURMUR3_EMPTY {
            let (a, b) = (fmix64(seed.wrapping_mul(2)), fmix64(seed.wrapping_mul(3)));
            let got1 = a.wrapping_add(b);
            assert_eq!((got1, b.wrapping_add(got1)), (h1, h2), "seed {seed:#x}");
        }
        assert_eq!(fmix64(0), 0);
    }

    #[test]
    fn fmix64_is_a_bijection_on_a_sample() {
        // Distinct inputs give distinct outputs, and single-bit changes move about half the bits.
        let inputs: Vec<u64> = (0..4096u64)
            .map(|i| i.wrapping_mul(crate::GOLDEN_GAMMA))
            .collect();
        let mut outputs: Vec<u64> = inputs.iter().map(|&x| fmix64(x)).collect();
        outputs.sort_unstable();
        outputs.dedup();
        assert_eq!(outputs.len(), inputs.len());
        let flips: u32 = (0..64)
            .map(|bit| (fmix64(12345) ^ fmix64(12345 ^ (1 << bit))).count_ones())
            .sum();
        let mean = f64::from(flips) / 64.0;
        assert!((28.0..36.0).contains(&mean), "mean {mean}");
    }

    #[test]
    fn four_streams_equal_one_at_a_time() {
        let words: Vec<Vec<u8>> = (0..40)
            .map(|i| (0..(i * 7 % 23)).map(|j| (i * 31 + j) as u8).collect())
            .collect();
        for w in words.windows(4) {
            let got = fnv1a_64_x4([&w[0], &w[1], &w[2], &w[3]]);
            let want = [
                fnv1a_64(&w[0]),
                fnv1a_64(&w[1]),
                fnv1a_64(&w[2]),
                fnv1a_64(&w[3]),
            ];
            assert_eq!(got, want);
        }
    }

    #[test]
    fn ranges_hash_their_slices() {
        let buf = b"the quick brown fox jumps";
        let mut ranges: Vec<(usize, usize)> = (0..buf.len() - 3)
            .map(|i| (i, i + 3 + i % 5))
            .map(|(s, e)| (s, e.min(buf.len())))
            .collect();
        // Empty ranges, and ranges past the lockstep length among short ones.
        ranges.extend([
            (0, 0),
            (2, 2),
            (0, 17),
            (1, 3),
            (3, 25),
            (0, 16),
            (9, 25),
            (24, 25),
        ]);
        let mut out = Vec::new();
        hash_ranges(buf, &ranges, &mut out);
        let want: Vec<u64> = ranges.iter().map(|&(s, e)| fnv1a_64(&buf[s..e])).collect();
        assert_eq!(out, want);
    }
}
