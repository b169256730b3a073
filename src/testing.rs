//! Pseudo-random data for the tests and the benchmarks, the same on every run and platform.

/// The next value of Marsaglia's xorshift64 (shifts 13, 7, 17) from `state`, which must not be
/// 0; the value is also the new state.
pub fn xorshift64(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// `n` distinct ascending values whose bits come in runs of four copies of one random bit, each
/// copy flipped with chance 1/8: bits that agree together, side by side, as the contiguous
/// blocks of a plan would take them (simhash fingerprints of text have bits that agree together,
/// though not side by side).
pub fn correlated(seed: u64, n: usize) -> Vec<u64> {
    let mut s = seed;
    let mut out: Vec<u64> = (0..n)
        .map(|_| {
            let (f, a, b, c) = (
                xorshift64(&mut s),
                xorshift64(&mut s),
                xorshift64(&mut s),
                xorshift64(&mut s),
            );
            let mut x = 0u64;
            for g in 0..16 {
                if f >> g & 1 == 1 {
                    x |= 0xf << (4 * g);
                }
            }
            x ^ (a & b & c)
        })
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// A pseudo-random order of the 64 bits: `order[i]` is a bit, each once.
pub fn shuffled_bits(seed: u64) -> [u8; 64] {
    let mut s = seed;
    let mut order: [u8; 64] = std::array::from_fn(|i| i as u8);
    for i in (1..64).rev() {
        order.swap(i, xorshift64(&mut s) as usize % (i + 1));
    }
    order
}
