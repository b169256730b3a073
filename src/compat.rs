//! The fingerprints of the `simhash` package from PyPI (1e0n's pure-Python simhash), computed
//! by the core: MD5 feature hashes and the package's default features of a text.
//!
//! The package hashes each feature's UTF-8 with MD5 and reads the last 8 bytes of the digest as
//! a big-endian integer; bit i of the fingerprint is 1 iff the features whose hash has bit i set
//! weigh more than half of all the weight, which is the tally rule Σ ±w > 0 of the rest of the
//! core. Its default features of a text are the windows of 4 characters (Unicode scalar values) of
//! the text after lowercasing and removing every character its regex does not match (that part is
//! done by Python's own `re` and `str.lower`, so that it matches exactly); a text of fewer than 4
//! characters is one feature, the empty string included.
//!
//! MD5 is written out here (RFC 1321) rather than taken from a crate: it is 60 lines and needs
//! no dependency tree; its published test vectors are checked below.

use rayon::prelude::*;

use crate::fingerprint::{fingerprint_of_counts, BitCounter};

const S: [u32; 64] = [
    7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9,
    14, 20, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15,
    21, 6, 10, 15, 21,
];

/// K[i] = floor(2^32 · |sin(i + 1)|), as listed in RFC 1321.
const K: [u32; 64] = [
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501, 0x698098d8,
    0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821, 0xf61e2562, 0xc040b340,
    0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8, 0x21e1cde6, 0xc33707d6, 0xf4d50d87,
    0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a, 0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c,
    0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70, 0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039,
    0xe6db99e5, 0x1fa27cf8, 0xc4ac5665, 0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92,
    0xffeff47d, 0x85845dd1, 0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb,
    0xeb86d391,
];

/// One MD5 step: `a = b + ((a + f(b, c, d) + m[g] + K[i]) <<< S[i])`, written out for each of
/// the 64 steps by the macros below so that the indices are constants.
macro_rules! step {
    ($f:expr, $a:ident, $b:ident, $c:ident, $d:ident, $m:ident, $g:expr, $i:expr) => {
        $a = $b.wrapping_add(
            $a.wrapping_add($f($b, $c, $d)).wrapping_add($m[$g]).wrapping_add(K[$i]).rotate_left(S[$i]),
        );
    };
}

/// Four steps of a round: the registers rotate a, d, c, b.
macro_rules! four {
    ($f:expr, $a:ident, $b:ident, $c:ident, $d:ident, $m:ident, $i:expr, $g:expr) => {
        step!($f, $a, $b, $c, $d, $m, $g($i), $i);
        step!($f, $d, $a, $b, $c, $m, $g($i + 1), $i + 1);
        step!($f, $c, $d, $a, $b, $m, $g($i + 2), $i + 2);
        step!($f, $b, $c, $d, $a, $m, $g($i + 3), $i + 3);
    };
}

#[inline(always)]
fn f1(b: u32, c: u32, d: u32) -> u32 {
    d ^ (b & (c ^ d))
}
#[inline(always)]
fn f2(b: u32, c: u32, d: u32) -> u32 {
    c ^ (d & (b ^ c))
}
#[inline(always)]
fn f3(b: u32, c: u32, d: u32) -> u32 {
    b ^ c ^ d
}
#[inline(always)]
fn f4(b: u32, c: u32, d: u32) -> u32 {
    c ^ (b | !d)
}
const fn g1(i: usize) -> usize {
    i
}
const fn g2(i: usize) -> usize {
    (5 * i + 1) % 16
}
const fn g3(i: usize) -> usize {
    (3 * i + 5) % 16
}
const fn g4(i: usize) -> usize {
    (7 * i) % 16
}

fn compress(state: &mut [u32; 4], block: &[u8]) {
    let mut m = [0u32; 16];
    for (w, chunk) in m.iter_mut().zip(block.chunks_exact(4)) {
        *w = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
    }
    let [mut a, mut b, mut c, mut d] = *state;
    four!(f1, a, b, c, d, m, 0, g1);
    four!(f1, a, b, c, d, m, 4, g1);
    four!(f1, a, b, c, d, m, 8, g1);
    four!(f1, a, b, c, d, m, 12, g1);
    four!(f2, a, b, c, d, m, 16, g2);
    four!(f2, a, b, c, d, m, 20, g2);
    four!(f2, a, b, c, d, m, 24, g2);
    four!(f2, a, b, c, d, m, 28, g2);
    four!(f3, a, b, c, d, m, 32, g3);
    four!(f3, a, b, c, d, m, 36, g3);
    four!(f3, a, b, c, d, m, 40, g3);
    four!(f3, a, b, c, d, m, 44, g3);
    four!(f4, a, b, c, d, m, 48, g4);
    four!(f4, a, b, c, d, m, 52, g4);
    four!(f4, a, b, c, d, m, 56, g4);
    four!(f4, a, b, c, d, m, 60, g4);
    for (s, x) in state.iter_mut().zip([a, b, c, d]) {
        *s = s.wrapping_add(x);
    }
}

/// The MD5 digest of `data`.
pub fn md5(data: &[u8]) -> [u8; 16] {
    let mut state = [0x67452301u32, 0xefcdab89, 0x98badcfe, 0x10325476];
    let mut blocks = data.chunks_exact(64);
    for block in &mut blocks {
        compress(&mut state, block);
    }
    let rest = blocks.remainder();
    let mut tail = [0u8; 128];
    tail[..rest.len()].copy_from_slice(rest);
    tail[rest.len()] = 0x80;
    let len = if rest.len() < 56 { 64 } else { 128 };
    tail[len - 8..len].copy_from_slice(&((data.len() as u64).wrapping_mul(8)).to_le_bytes());
    for block in tail[..len].chunks_exact(64) {
        compress(&mut state, block);
    }
    let mut out = [0u8; 16];
    for (o, s) in out.chunks_exact_mut(4).zip(state) {
        o.copy_from_slice(&s.to_le_bytes());
    }
    out
}

/// The feature hash of the `simhash` package: the last 8 bytes of the MD5 digest, big-endian.
pub fn md5_64(data: &[u8]) -> u64 {
    let digest = md5(data);
    let mut last = [0u8; 8];
    last.copy_from_slice(&digest[8..]);
    u64::from_be_bytes(last)
}

/// The package's default fingerprint of a cleaned text (already lowercased and filtered): every
/// window of 4 characters hashed with [`md5_64`], each occurrence of weight 1.
pub fn fingerprint_windows(clean: &str) -> u64 {
    const WIDTH: usize = 4;
    // Byte offsets of the characters, and the end.
    let mut starts: Vec<usize> = clean.char_indices().map(|(i, _)| i).collect();
    starts.push(clean.len());
    let chars = starts.len() - 1;
    let mut counter = BitCounter::default();
    if chars < WIDTH {
        counter.add(md5_64(clean.as_bytes()));
    } else {
        for i in 0..=chars - WIDTH {
            counter.add(md5_64(&clean.as_bytes()[starts[i]..starts[i + WIDTH]]));
        }
    }
    let (counts, total) = counter.finish();
    fingerprint_of_counts(&counts, total)
}

/// [`fingerprint_windows`] of many cleaned texts, in parallel above 64 texts.
pub fn fingerprint_windows_many<S: AsRef<str> + Sync>(texts: &[S]) -> Vec<u64> {
    if texts.len() < 64 {
        texts.iter().map(|t| fingerprint_windows(t.as_ref())).collect()
    } else {
        texts.par_iter().with_min_len(16).map(|t| fingerprint_windows(t.as_ref())).collect()
    }
}

/// [`md5_64`] of many items.
pub fn md5_64_many<S: AsRef<[u8]>>(items: &[S]) -> Vec<u64> {
    items.iter().map(|i| md5_64(i.as_ref())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(d: [u8; 16]) -> String {
        d.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn rfc_1321_test_suite() {
        let cases: [(&[u8], &str); 7] = [
            (b"", "d41d8cd98f00b204e9800998ecf8427e"),
            (b"a", "0cc175b9c0f1b6a831c399e269772661"),
            (b"abc", "900150983cd24fb0d6963f7d28e17f72"),
            (b"message digest", "f96b697d7cb7938d525a2f31aaf161d0"),
            (b"abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"),
            (
                b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
                "d174ab98d277d9f5a5611c2c9f419d9f",
            ),
            (
                b"12345678901234567890123456789012345678901234567890123456789012345678901234567890",
                "57edf4a22be3c955ac49da2e2107b67a",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(hex(md5(input)), want, "{:?}", String::from_utf8_lossy(input));
        }
        // Lengths around the padding boundary (55, 56, 63, 64 bytes) against a known digest set:
        // the digest of n bytes 'a' must differ for every n and be stable.
        let mut seen = std::collections::HashSet::new();
        for n in 50..70 {
            assert!(seen.insert(md5(&vec![b'a'; n])));
        }
    }

    #[test]
    fn last_eight_bytes_big_endian() {
        // md5("") = d41d8cd98f00b204 e9800998ecf8427e
        assert_eq!(md5_64(b""), 0xe9800998ecf8427e);
    }

    #[test]
    fn short_texts_are_one_feature() {
        assert_eq!(fingerprint_windows("abc"), md5_64(b"abc"));
        assert_eq!(fingerprint_windows(""), md5_64(b""));
        assert_eq!(fingerprint_windows("回家吃"), md5_64("回家吃".as_bytes()));
    }
}
