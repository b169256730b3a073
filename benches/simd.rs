//! The vector paths of `runtime::simd` against their portable code, in one process:
//! `cargo bench --bench simd`.
//!
//! Each kernel runs on the same data with `force_scalar(false)` (the fastest path the CPU has)
//! and `force_scalar(true)` (the portable code), alternating for `ROUNDS` rounds; the least time
//! of each is printed, and their ratio, which is what holds on a shared, noisy machine. The
//! kernels: the FNV-1a of words (`text::hash::hash_ranges`), the chains of 3-shingles
//! (`sketch::verify::hash_shingles`) and the merge of two sketches that their Jaccard counts
//! (`sketch::verify::jaccard`, pairs of bottom-1024 sketches at Jaccard 0.8).

use std::hint::black_box;
use std::time::Instant;

use neardup::runtime::simd::force_scalar;
use neardup::sketch::verify::{hash_shingles, jaccard};
use neardup::testing::xorshift64;
use neardup::text::hash::hash_ranges;

const ROUNDS: usize = 30;

/// The least time of `f` with the vector paths and with the portable code, alternating.
fn both_paths(mut f: impl FnMut()) -> (f64, f64) {
    let mut best = [f64::MAX; 2];
    for round in 0..ROUNDS {
        for k in 0..2 {
            let portable = (round + k) % 2 == 1;
            force_scalar(portable);
            let start = Instant::now();
            f();
            let spent = start.elapsed().as_secs_f64();
            best[usize::from(portable)] = best[usize::from(portable)].min(spent);
        }
    }
    force_scalar(false);
    (best[0], best[1])
}

fn report(name: &str, items: usize, unit: &str, (vector, portable): (f64, f64)) {
    let ns = |t: f64| t / items as f64 * 1e9;
    println!(
        "{name:<16} vector {:>6.2} ns, portable {:>6.2} ns a {unit}, vector / portable {:.3}",
        ns(vector),
        ns(portable),
        vector / portable
    );
}

fn main() {
    let mut seed = 0x5EED_0F51_3D00;
    let mut next = move || xorshift64(&mut seed);

    // Words of 1 to 12 letters, as prose has them, a space between.
    let mut text = Vec::new();
    let mut spans = Vec::new();
    while text.len() < 4 << 20 {
        let len = 1 + (next() % 12) as usize;
        let start = text.len();
        text.extend((0..len).map(|_| b'a' + (next() % 26) as u8));
        spans.push((start, text.len()));
        text.push(b' ');
    }
    let mut out = Vec::with_capacity(spans.len());
    let times = both_paths(|| {
        out.clear();
        hash_ranges(black_box(&text), &spans, &mut out);
    });
    report("fnv1a words", spans.len(), "word", times);

    let words: Vec<u64> = (0..1 << 20).map(|_| next()).collect();
    let checks: Vec<u64> = (0..1 << 20).map(|_| next()).collect();
    let mut block = [0u64; 64];
    let times = both_paths(|| {
        let mut from = 0;
        while from + block.len() + 2 < words.len() {
            hash_shingles(3, black_box(&words), &checks, from, &mut block);
            black_box(&block);
            from += block.len();
        }
    });
    report("shingle chains", words.len(), "shingle", times);

    // Pairs of sorted sketches of 1,024 hashes drawn from a pool of 1,138: 910 shared, a
    // Jaccard of 0.8.
    let pairs: Vec<(Vec<u64>, Vec<u64>)> = (0..2_000)
        .map(|_| {
            let pool: Vec<u64> = (0..1_138).map(|_| next() >> 1).collect();
            let mut a: Vec<u64> = pool[..1_024].to_vec();
            let mut b: Vec<u64> = pool[114..].to_vec();
            a.sort_unstable();
            b.sort_unstable();
            (a, b)
        })
        .collect();
    let times = both_paths(|| {
        for (a, b) in &pairs {
            black_box(jaccard(black_box(a), b, 1_024));
        }
    });
    report("sketch merge", pairs.len(), "pair", times);
}
