//! One sorted table of permuted fingerprints, and the searches and sorts behind it.
//!
//! A lookup finds the run of entries sharing the top `prefix_bits` bits of a key by interpolation
//! search (about log log n probes on uniform data) with a bounded number of probes, after which it
//! falls back to binary search on what is left, so a skewed or adversarial distribution never
//! costs more than O(log n) probes.

use crate::runtime::simd;

/// Interpolation probes before falling back to binary search.
const PROBES: u32 = 6;
/// Below this many entries a plain binary search is as fast.
const SMALL: usize = 16;

/// The first index `i` with `a[i] >= key` in an ascending slice (`partition_point(|x| x < key)`).
#[inline]
pub fn lower_bound(a: &[u64], key: u64) -> usize {
    let mut lo = 0usize;
    let mut hi = a.len();
    // Invariant: a[..lo] < key <= a[hi..].
    let mut probes = 0;
    while hi - lo > SMALL && probes < PROBES {
        probes += 1;
        let (first, last) = (a[lo], a[hi - 1]);
        if key <= first {
            return lo;
        }
        if key > last {
            return hi;
        }
        // first < key <= last, so the span is non-zero and the estimate lies in lo..hi-1.
        let span = (hi - 1 - lo) as u128;
        let offset = (u128::from(key - first) * span / u128::from(last - first)) as usize;
        let mid = lo + offset;
        // Guard probes a small step either side of the estimate, which closes both ends of the
        // interval on smooth data instead of creeping up on the key from one side.
        // The estimate of uniform data is off by about the square root of the interval.
        let gap = (1usize << ((usize::BITS - (hi - lo).leading_zeros()) / 2)).max(4);
        if a[mid] < key {
            lo = mid + 1;
            let probe = mid.saturating_add(gap);
            if probe < hi && a[probe] >= key {
                hi = probe;
            } else if probe < hi {
                lo = probe + 1;
            }
        } else {
            hi = mid;
            if mid >= lo + gap {
                let probe = mid - gap;
                if a[probe] < key {
                    lo = probe + 1;
                } else {
                    hi = probe;
                }
            }
        }
    }
    lo + a[lo..hi].partition_point(|&x| x < key)
}

/// Asks the cache for the lines [`lower_bound`]'s first probes will read, so that the searches
/// of several tables wait for memory at the same time instead of one after another.
#[inline]
pub fn prefetch(a: &[u64], key: u64) {
    let n = a.len();
    if n <= SMALL {
        return;
    }
    let (first, last) = (a[0], a[n - 1]);
    if key <= first || key > last {
        return;
    }
    let mid = (u128::from(key - first) * (n - 1) as u128 / u128::from(last - first)) as usize;
    let gap = (1usize << ((usize::BITS - n.leading_zeros()) / 2)).max(4);
    for at in [
        mid,
        mid.saturating_add(gap).min(n - 1),
        mid.saturating_sub(gap),
    ] {
        simd::prefetch_line(&a[at]);
    }
}

/// The entries `lo..hi` of an ascending slice whose top `prefix_bits` bits equal those of `key`.
#[inline]
pub fn prefix_range(a: &[u64], key: u64, prefix_bits: u32) -> (usize, usize) {
    let low = if prefix_bits >= 64 {
        0
    } else {
        u64::MAX >> prefix_bits
    };
    let first = key & !low;
    let last = key | low;
    let lo = lower_bound(a, first);
    // The run is short on average: gallop from its start.
    let rest = &a[lo..];
    let mut step = 1usize;
    let mut known = 0usize; // rest[..known] <= last
    while step <= rest.len() && rest[step - 1] <= last {
        known = step;
        step *= 2;
    }
    let end = step.min(rest.len());
    let hi = lo + known + rest[known..end].partition_point(|&x| x <= last);
    (lo, hi)
}

/// Sorts `v` by its top `bits` bits: an LSD radix sort of 11-bit digits for up to 33 bits,
/// otherwise a comparison sort of the whole words. Entries with equal top bits keep no
/// particular order unless the whole words were sorted.
pub fn radix_sort_top(v: &mut Vec<u64>, bits: u32) {
    radix_sort_top_with(v, bits, &mut Vec::new());
}

/// [`radix_sort_top`] with a scratch buffer the caller keeps, so that sorting many large tables
/// one after another does not fault in fresh pages each time.
pub fn radix_sort_top_with(v: &mut Vec<u64>, bits: u32, scratch: &mut Vec<u64>) {
    const DIGIT: u32 = 11;
    const BUCKETS: usize = 1 << DIGIT;
    let bits = bits.min(64);
    let passes = bits.div_ceil(DIGIT);
    if bits == 0 && v.len() > 256 {
        return;
    }
    // Measured on 10M random words (examples/sort_speed.rs): up to 3 passes the radix sort
    // is a little faster than `sort_unstable`; a full 64-bit key (6 passes) takes twice as long.
    if v.len() <= 256 || passes > 3 {
        v.sort_unstable();
        return;
    }
    let low = 64 - bits; // bits below the sort key
    let shift_of = |p: u32| low + p * DIGIT;
    let mut counts = vec![[0usize; BUCKETS]; passes as usize];
    for &x in v.iter() {
        for p in 0..passes {
            counts[p as usize][((x >> shift_of(p)) as usize) & (BUCKETS - 1)] += 1;
        }
    }
    scratch.clear();
    scratch.resize(v.len(), 0);
    let mut src_is_v = true;
    for p in 0..passes {
        let c = &mut counts[p as usize];
        // A digit that is the same everywhere needs no pass.
        if c.contains(&v.len()) {
            continue;
        }
        let mut sum = 0;
        for n in c.iter_mut() {
            let here = *n;
            *n = sum;
            sum += here;
        }
        let shift = shift_of(p);
        let (src, dst): (&[u64], &mut [u64]) = if src_is_v {
            (&v[..], &mut scratch[..])
        } else {
            (&scratch[..], &mut v[..])
        };
        for &x in src {
            let d = ((x >> shift) as usize) & (BUCKETS - 1);
            dst[c[d]] = x;
            c[d] += 1;
        }
        src_is_v = !src_is_v;
    }
    if !src_is_v {
        std::mem::swap(v, scratch);
    }
}

/// Sorts fully and removes repeats.
pub fn sort_dedup(v: &mut Vec<u64>) {
    radix_sort_top(v, 64);
    v.dedup();
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            crate::testing::xorshift64(&mut self.0)
        }
    }

    fn inputs() -> Vec<Vec<u64>> {
        let mut r = Rng(0x2545_f491_4f6c_dd1d);
        let mut out = vec![
            vec![],
            vec![7],
            vec![5; 1000],
            vec![0; 100],
            vec![u64::MAX; 100],
            (0..5000).collect(),
        ];
        out.push((0..5000).map(|_| r.next()).collect());
        // Clustered: a few dense clumps far apart.
        out.push(
            (0..5000)
                .map(|i| (i % 7) * (u64::MAX / 7) + (r.next() % 50))
                .collect(),
        );
        // Geometric: spacing that doubles, the worst case for interpolation.
        out.push(
            (0..64)
                .map(|i| 1u64 << i)
                .chain((0..2000).map(|i| i * 3))
                .collect(),
        );
        out.push(
            (0..3000)
                .map(|i| (1.5f64.powi(i % 100)) as u64 + i as u64)
                .collect(),
        );
        // Mostly tiny values and a few huge ones.
        out.push(
            (0..5000)
                .map(|i| if i % 500 == 0 { u64::MAX - i } else { i })
                .collect(),
        );
        for v in &mut out {
            v.sort_unstable();
        }
        out
    }

    #[test]
    fn lower_bound_matches_partition_point() {
        let mut r = Rng(99);
        for a in inputs() {
            let mut keys: Vec<u64> = a
                .iter()
                .flat_map(|&x| [x, x.wrapping_sub(1), x.wrapping_add(1)])
                .collect();
            keys.extend([0, 1, u64::MAX, u64::MAX - 1]);
            keys.extend((0..500).map(|_| r.next()));
            for key in keys {
                assert_eq!(
                    lower_bound(&a, key),
                    a.partition_point(|&x| x < key),
                    "key {key} in {} entries",
                    a.len()
                );
            }
        }
    }

    #[test]
    fn prefix_range_matches_partition_point() {
        let mut r = Rng(7);
        for a in inputs() {
            for bits in [1, 5, 16, 31, 32, 33, 63, 64] {
                let low = if bits == 64 { 0 } else { u64::MAX >> bits };
                let mut keys: Vec<u64> = a.iter().step_by(7).copied().collect();
                keys.extend((0..200).map(|_| r.next()));
                keys.extend([0, u64::MAX]);
                for key in keys {
                    let want = (
                        a.partition_point(|&x| x < key & !low),
                        a.partition_point(|&x| x <= key | low),
                    );
                    assert_eq!(prefix_range(&a, key, bits), want);
                }
            }
        }
    }

    #[test]
    fn interpolation_is_bounded_on_geometric_input() {
        // Not a timing test: the fall-back keeps the work logarithmic, which shows as finishing;
        // the answers are checked against partition_point.
        let a: Vec<u64> = (0..64).map(|i| 1u64 << i).collect();
        for key in 0..200u64 {
            assert_eq!(lower_bound(&a, key), a.partition_point(|&x| x < key));
        }
    }

    #[test]
    fn radix_sort_orders_by_top_bits() {
        let mut r = Rng(5);
        for bits in [0, 1, 11, 16, 31, 33, 64] {
            let orig: Vec<u64> = (0..20_000)
                .map(|i| {
                    if i % 3 == 0 {
                        r.next() & 0xffff_0000_ffff
                    } else {
                        r.next()
                    }
                })
                .collect();
            let mut v = orig.clone();
            radix_sort_top(&mut v, bits);
            let key = |x: u64| if bits == 0 { 0 } else { x >> (64 - bits) };
            assert!(v.windows(2).all(|w| key(w[0]) <= key(w[1])), "bits {bits}");
            let (mut a, mut b) = (orig, v.clone());
            a.sort_unstable();
            b.sort_unstable();
            assert_eq!(a, b);
            if bits == 64 {
                assert!(v.windows(2).all(|w| w[0] <= w[1]));
            }
        }
        let mut same = vec![42u64; 1000];
        radix_sort_top(&mut same, 64);
        assert_eq!(same, vec![42u64; 1000]);
    }
}
