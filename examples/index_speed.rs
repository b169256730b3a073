//! Times index queries on one thread:
//! `cargo run --release --example index_speed -- N BLOCKS [members|random]`
use neardup::index::Index;
use neardup::plan::Plan;
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000_000);
    let blocks: i64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(5);
    let mode = args.next().unwrap_or_default();
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let fps: Vec<u64> = (0..n).map(|_| next()).collect();
    let random: Vec<u64> = (0..1_000_000).map(|_| next()).collect();
    let t = Instant::now();
    let mut index = Index::new(3, Some(Plan::blocks(blocks, 3).unwrap()), None).unwrap();
    index.add(&fps, None).unwrap();
    println!("build {:.2} s", t.elapsed().as_secs_f64());
    for (name, queries) in [
        ("members", fps[..1_000_000.min(n)].to_vec()),
        ("random", random),
    ] {
        if !mode.is_empty() && mode != name {
            continue;
        }
        let t = Instant::now();
        let mut found = 0;
        let mut out = Vec::new();
        for &q in &queries {
            out.clear();
            index.query_into(q, &mut out);
            found += out.len();
        }
        let dt = t.elapsed().as_secs_f64();
        println!(
            "{name}: {:.0} queries/s on one thread, {found} found",
            queries.len() as f64 / dt
        );
    }
}
