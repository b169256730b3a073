//! Pseudo-random data for the tests and the benchmarks, the same on every run and platform.

/// The next value of Marsaglia's xorshift64 (shifts 13, 7, 17) from `state`, which must not be
/// 0; the value is also the new state.
pub fn xorshift64(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}
