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
//! MD5 comes from RustCrypto's `md-5` crate; its published test vectors are checked below.

use md5::{Digest, Md5};
use rayon::prelude::*;

use crate::fingerprint::simhash::fingerprint_of_counts;
use crate::fingerprint::tally::BitCounter;

/// The MD5 digest of `data`.
pub fn md5(data: &[u8]) -> [u8; 16] {
    Md5::digest(data).into()
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
        texts
            .iter()
            .map(|t| fingerprint_windows(t.as_ref()))
            .collect()
    } else {
        texts
            .par_iter()
            .with_min_len(16)
            .map(|t| fingerprint_windows(t.as_ref()))
            .collect()
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
            (
                b"abcdefghijklmnopqrstuvwxyz",
                "c3fcd3d76192e4007dfb496cca67e13b",
            ),
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
            assert_eq!(
                hex(md5(input)),
                want,
                "{:?}",
                String::from_utf8_lossy(input)
            );
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
