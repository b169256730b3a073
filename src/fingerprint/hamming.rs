//! Hamming distances between fingerprints.

use crate::error::{Error, Result};

/// The number of bits in which `a` and `b` differ.
#[inline]
pub fn hamming(a: u64, b: u64) -> u32 {
    (a ^ b).count_ones()
}

/// Distances from `query` to each fingerprint.
pub fn one_to_many(query: u64, fingerprints: &[u64]) -> Vec<u8> {
    fingerprints
        .iter()
        .map(|&f| hamming(query, f) as u8)
        .collect()
}

/// Element-wise distances of two equally long arrays.
pub fn pairwise(a: &[u64], b: &[u64]) -> Result<Vec<u8>> {
    if a.len() != b.len() {
        return Err(Error::invalid(format!(
            "element-wise distances need arrays of one length, got {} and {}",
            a.len(),
            b.len()
        )));
    }
    Ok(a.iter()
        .zip(b)
        .map(|(&x, &y)| hamming(x, y) as u8)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(hamming(0, 0), 0);
        assert_eq!(hamming(0, u64::MAX), 64);
        assert_eq!(hamming(0b10101, 0b00110), 3);
        assert_eq!(one_to_many(0b1, &[0b1, 0b0, 0b111]), [0, 1, 2]);
        assert_eq!(pairwise(&[1, 2], &[1, 1]).unwrap(), [0, 2]);
        assert!(pairwise(&[1], &[]).is_err());
    }
}
