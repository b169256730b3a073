//! Compares the sorts a table could use: `cargo run --release --example sort_speed -- N`
use neardup::table::radix_sort_top;
use rayon::prelude::*;
use std::time::Instant;

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000_000);
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    let data: Vec<u64> = (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        })
        .collect();
    let time = |name: &str, f: &dyn Fn(&mut Vec<u64>)| {
        let mut best = f64::MAX;
        for _ in 0..3 {
            let mut v = data.clone();
            let t = Instant::now();
            f(&mut v);
            best = best.min(t.elapsed().as_secs_f64());
        }
        println!("{name:<40} {:.3} s", best);
    };
    time("radix, 64 bits (LSD, 11-bit digits)", &|v| {
        radix_sort_top(v, 64)
    });
    time("radix, top 33 bits only", &|v| radix_sort_top(v, 33));
    time("radix, top 26 bits only", &|v| radix_sort_top(v, 26));
    time("radix, top 22 bits only", &|v| radix_sort_top(v, 22));
    time("radix, top 16 bits only", &|v| radix_sort_top(v, 16));
    time("std sort_unstable", &|v| v.sort_unstable());
    time("rayon par_sort_unstable (all cores)", &|v| {
        v.par_sort_unstable()
    });
}
