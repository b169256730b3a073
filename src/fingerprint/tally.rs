//! Weighted tallies: for each of the 64 bits, the sum of +w over the features whose hash has the
//! bit set and −w over the others ([`crate::fingerprint::simhash`] takes their signs). Three ways
//! to sum, all exact or in a fixed order, so a tally never depends on the thread count or the
//! platform:
//!
//! * unit weights (the common case): [`BitCounter`] counts set bits per position with bit-sliced
//!   counters, 16 bitwise operations per feature, and tally i = 2·count_i − total.
//! * integer weights: `i128` tallies.
//! * float weights: `f64` tallies summed in feature order, with the sign applied by flipping the
//!   sign bit of w from a byte table (no per-bit branch).

use crate::error::{Error, Result};

/// Per-position counts of set bits over a stream of hashes.
///
/// Bit-sliced counting: hashes are summed sixteen at a time through a tree of carry-save adders
/// (Harley-Seal), five bitwise operations a hash, into planes of ones, twos, fours and eights;
/// each block of sixteen leaves one plane of sixteens, spread into byte counters by table. The
/// byte counters move into 64-bit counts before they can wrap. Counts are bounded by the number of
/// hashes added, which is bounded by memory, so `u64` cannot overflow.
#[derive(Clone)]
pub struct BitCounter {
    block: [u64; 16],
    filled: usize,
    /// Planes of weight 1, 2, 4 and 8.
    planes: [u64; 4],
    /// Sixteens, eight byte lanes per word: lane l of word j counts position 8j + l.
    sixteens: [u64; 8],
    blocks: u32,
    counts: [u64; 64],
    total: u64,
}

impl Default for BitCounter {
    fn default() -> Self {
        BitCounter {
            block: [0; 16],
            filled: 0,
            planes: [0; 4],
            sixteens: [0; 8],
            blocks: 0,
            counts: [0; 64],
            total: 0,
        }
    }
}

/// For each byte value, a word whose byte lane l is bit l of the byte.
static SPREAD: [u64; 256] = {
    let mut t = [0u64; 256];
    let mut b = 0;
    while b < 256 {
        let mut l = 0;
        while l < 8 {
            t[b] |= (((b >> l) & 1) as u64) << (8 * l);
            l += 1;
        }
        b += 1;
    }
    t
};

/// A carry-save adder: the (carry, sum) bits of a + b + c, position by position.
#[inline(always)]
fn csa(a: u64, b: u64, c: u64) -> (u64, u64) {
    let u = a ^ b;
    ((a & b) | (u & c), u ^ c)
}

impl BitCounter {
    /// Adds one hash.
    #[inline]
    pub fn add(&mut self, hash: u64) {
        self.block[self.filled] = hash;
        self.filled += 1;
        if self.filled == 16 {
            self.add_block();
        }
    }

    /// Adds every hash of `hashes`: whole blocks of sixteen straight from the slice.
    #[inline]
    pub fn add_all(&mut self, hashes: &[u64]) {
        self.add_all_mapped(hashes, |h| h);
    }

    /// Adds `map(h)` for every hash `h` of `hashes`. A block's sixteen maps are independent, so
    /// they overlap in the pipeline instead of costing a pass of their own.
    #[inline]
    pub fn add_all_mapped(&mut self, hashes: &[u64], map: impl Fn(u64) -> u64) {
        let mut rest = hashes;
        while self.filled != 0 && !rest.is_empty() {
            self.add(map(rest[0]));
            rest = &rest[1..];
        }
        let mut blocks = rest.chunks_exact(16);
        for block in &mut blocks {
            let block: &[u64; 16] = block.try_into().expect("sixteen hashes");
            self.add_block_of(&block.map(&map));
        }
        blocks.remainder().iter().for_each(|&h| self.add(map(h)));
    }

    #[inline]
    fn add_block(&mut self) {
        let block = self.block;
        self.add_block_of(&block);
    }

    #[inline]
    fn add_block_of(&mut self, d: &[u64; 16]) {
        let [mut ones, mut twos, mut fours, mut eights] = self.planes;
        let mut eights_pair = [0u64; 2];
        for (half, e) in eights_pair.iter_mut().enumerate() {
            let d = &d[8 * half..8 * half + 8];
            let mut fours_pair = [0u64; 2];
            for (quarter, f) in fours_pair.iter_mut().enumerate() {
                let d = &d[4 * quarter..4 * quarter + 4];
                let (twos_a, o) = csa(ones, d[0], d[1]);
                let (twos_b, o) = csa(o, d[2], d[3]);
                ones = o;
                let (fours_carry, t) = csa(twos, twos_a, twos_b);
                twos = t;
                *f = fours_carry;
            }
            let (eights_carry, f) = csa(fours, fours_pair[0], fours_pair[1]);
            fours = f;
            *e = eights_carry;
        }
        let (sixteens, e) = csa(eights, eights_pair[0], eights_pair[1]);
        eights = e;
        self.planes = [ones, twos, fours, eights];
        for (j, lanes) in self.sixteens.iter_mut().enumerate() {
            *lanes += SPREAD[((sixteens >> (8 * j)) & 0xff) as usize];
        }
        self.filled = 0;
        self.total += 16;
        self.blocks += 1;
        if self.blocks == 255 {
            self.flush_sixteens();
        }
    }

    fn flush_sixteens(&mut self) {
        for (j, lanes) in self.sixteens.iter_mut().enumerate() {
            for l in 0..8 {
                self.counts[8 * j + l] += 16 * ((*lanes >> (8 * l)) & 0xff);
            }
            *lanes = 0;
        }
        self.blocks = 0;
    }

    /// The per-position counts and the number of hashes added.
    pub fn finish(mut self) -> ([u64; 64], u64) {
        // The last partial block, one hash at a time, rippled through the four planes.
        for i in 0..self.filled {
            let mut carry = self.block[i];
            for plane in self.planes.iter_mut() {
                let next = *plane & carry;
                *plane ^= carry;
                carry = next;
            }
            // A carry out of the eights is a sixteen.
            if carry != 0 {
                for (j, lanes) in self.sixteens.iter_mut().enumerate() {
                    *lanes += SPREAD[((carry >> (8 * j)) & 0xff) as usize];
                }
            }
        }
        self.total += self.filled as u64;
        self.flush_sixteens();
        let [ones, twos, fours, eights] = self.planes;
        for j in 0..8 {
            let lane = |x: u64| SPREAD[((x >> (8 * j)) & 0xff) as usize];
            // Each byte lane is at most 15: no carry between lanes.
            let low = lane(ones) + 2 * lane(twos) + 4 * lane(fours) + 8 * lane(eights);
            for l in 0..8 {
                self.counts[8 * j + l] += (low >> (8 * l)) & 0xff;
            }
        }
        (self.counts, self.total)
    }
}

/// For each byte value, the eight sign-bit masks that turn +w into ±w: 0 where the bit is set
/// (w is added), the sign bit where it is clear (w is subtracted).
static SIGN_MASKS: [[u64; 8]; 256] = {
    let mut t = [[0u64; 8]; 256];
    let mut b = 0;
    while b < 256 {
        let mut l = 0;
        while l < 8 {
            if (b >> l) & 1 == 0 {
                t[b][l] = 1 << 63;
            }
            l += 1;
        }
        b += 1;
    }
    t
};

/// Adds ±w to each of the 64 float tallies by the bits of `hash`.
#[inline]
pub fn add_float(tallies: &mut [f64; 64], hash: u64, weight: f64) {
    let w = weight.to_bits();
    for (j, lanes) in tallies.chunks_exact_mut(8).enumerate() {
        let masks = &SIGN_MASKS[((hash >> (8 * j)) & 0xff) as usize];
        for (t, &m) in lanes.iter_mut().zip(masks) {
            *t += f64::from_bits(w ^ m);
        }
    }
}

/// Integer tallies: Σ ±w per bit, or Σ ±1 without weights.
///
/// No overflow: each term is at most 2^63 in size and there are fewer than 2^63 terms (each one
/// is a hash in memory), so every partial sum stays below 2^126 < 2^127.
pub fn tallies_int(hashes: &[u64], weights: Option<&[i64]>) -> Result<[i128; 64]> {
    let mut tallies = [0i128; 64];
    match weights {
        None => {
            let mut counter = BitCounter::default();
            hashes.iter().for_each(|&h| counter.add(h));
            let (counts, total) = counter.finish();
            for (t, &c) in tallies.iter_mut().zip(&counts) {
                *t = 2 * i128::from(c) - i128::from(total);
            }
        }
        Some(weights) => {
            check_lengths(hashes.len(), weights.len())?;
            for (&h, &w) in hashes.iter().zip(weights) {
                let w = i128::from(w);
                for (i, t) in tallies.iter_mut().enumerate() {
                    *t += if (h >> i) & 1 == 1 { w } else { -w };
                }
            }
        }
    }
    Ok(tallies)
}

/// Float tallies: Σ ±w per bit, summed in the order given. Weights must be finite.
pub fn tallies_float(hashes: &[u64], weights: &[f64]) -> Result<[f64; 64]> {
    check_lengths(hashes.len(), weights.len())?;
    if let Some(i) = weights.iter().position(|w| !w.is_finite()) {
        return Err(Error::invalid(format!(
            "weights must be finite, got {} at position {i}",
            weights[i]
        )));
    }
    let mut tallies = [0f64; 64];
    for (&h, &w) in hashes.iter().zip(weights) {
        add_float(&mut tallies, h, w);
    }
    Ok(tallies)
}

fn check_lengths(hashes: usize, weights: usize) -> Result<()> {
    if hashes != weights {
        return Err(Error::invalid(format!(
            "weights must have one entry per hash: {hashes} hashes, {weights} weights"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fingerprint::simhash::{fingerprint_of_counts, fingerprint_of_tallies};
    use crate::testing::xorshift64;

    /// The definition, one bit at a time.
    fn naive(hashes: &[u64], weights: &[i64]) -> u64 {
        let mut fp = 0;
        for i in 0..64 {
            let t: i128 = hashes
                .iter()
                .zip(weights)
                .map(|(&h, &w)| {
                    if (h >> i) & 1 == 1 {
                        w as i128
                    } else {
                        -(w as i128)
                    }
                })
                .sum();
            fp |= u64::from(t > 0) << i;
        }
        fp
    }

    fn pseudo_random(n: usize, seed: u64) -> Vec<u64> {
        let mut x = seed;
        (0..n).map(|_| xorshift64(&mut x)).collect()
    }

    #[test]
    fn counter_matches_the_definition_across_flushes() {
        for n in [0, 1, 2, 254, 255, 256, 1000, 4321] {
            let hashes = pseudo_random(n, 7 + n as u64);
            let ones = vec![1i64; n];
            let t = tallies_int(&hashes, None).unwrap();
            assert_eq!(fingerprint_of_tallies(&t), naive(&hashes, &ones), "n = {n}");
            let mut counter = BitCounter::default();
            hashes.iter().for_each(|&h| counter.add(h));
            let (counts, total) = counter.finish();
            assert_eq!(total, n as u64);
            assert_eq!(fingerprint_of_counts(&counts, total), naive(&hashes, &ones));
        }
    }

    #[test]
    fn weighted_tallies_match_the_definition() {
        let hashes = pseudo_random(500, 3);
        let weights: Vec<i64> = (0..500).map(|i| (i % 7) as i64 - 2).collect();
        let t = tallies_int(&hashes, Some(&weights)).unwrap();
        assert_eq!(fingerprint_of_tallies(&t), naive(&hashes, &weights));
        let fw: Vec<f64> = weights.iter().map(|&w| w as f64).collect();
        let tf = tallies_float(&hashes, &fw).unwrap();
        for i in 0..64 {
            assert_eq!(tf[i], t[i] as f64);
        }
    }

    #[test]
    fn seed_two_feature_example() {
        // Seed 002: hashes 100101 (weight 4) and 101011 (weight 5) sum to 9 -9 1 -1 1 9.
        let t = tallies_int(&[0b100101, 0b101011], Some(&[4, 5])).unwrap();
        let low: Vec<i128> = (0..6).rev().map(|i| t[i]).collect();
        assert_eq!(low, [9, -9, 1, -1, 1, 9]);
        assert_eq!(fingerprint_of_tallies(&t) & 0b111111, 0b101011);
    }
}
