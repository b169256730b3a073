//! Times lower_bound (interpolation) against partition_point (binary) on large uniform tables.
//! `cargo run --release --example search_speed -- N TABLES`
use neardup::table::{lower_bound, prefix_range};
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000_000);
    let tables: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(1);
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let vs: Vec<Vec<u64>> = (0..tables)
        .map(|_| {
            let mut v: Vec<u64> = (0..n).map(|_| next()).collect();
            v.sort_unstable();
            v
        })
        .collect();
    let random: Vec<u64> = (0..200_000).map(|_| next()).collect();
    let members: Vec<u64> = (0..200_000)
        .map(|_| vs[0][(next() % n as u64) as usize])
        .collect();
    for (name, keys) in [("random", random), ("members", members)] {
        let per = (keys.len() * tables) as f64;
        let t = Instant::now();
        let mut acc = 0usize;
        for &k in &keys {
            for v in &vs {
                acc += lower_bound(v, k);
            }
        }
        println!(
            "{name} interpolation {:.0} ns",
            t.elapsed().as_nanos() as f64 / per
        );
        let t = Instant::now();
        for &k in &keys {
            for v in &vs {
                acc += v.partition_point(|&x| x < k);
            }
        }
        println!(
            "{name} binary        {:.0} ns",
            t.elapsed().as_nanos() as f64 / per
        );
        let t = Instant::now();
        for &k in &keys {
            for v in &vs {
                let (a, b) = prefix_range(v, k, 26);
                acc += a + b;
            }
        }
        println!(
            "{name} prefix_range  {:.0} ns  ({acc})",
            t.elapsed().as_nanos() as f64 / per
        );
    }
}
