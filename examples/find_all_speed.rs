//! Times find_all: `cargo run --release --example find_all_speed -- N [THREADS]`
use neardup::pairs::{distinct_pairs, find_all, Groups};
use neardup::plan::{Plan, Workload};
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let threads: Option<i64> = args.next().and_then(|s| s.parse().ok());
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    let mut fps: Vec<u64> = (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        })
        .collect();
    for i in 0..n / 100 {
        fps[n - 1 - i] = fps[i] ^ 0b1011;
    }
    let plan = Plan::choose(3, n as u64, None, Workload::Batch).unwrap();
    neardup::parallel::with_threads(threads, || {
        let t = Instant::now();
        let groups = Groups::new(&fps);
        println!("collapse {:.3} s", t.elapsed().as_secs_f64());
        let t = Instant::now();
        let pairs = distinct_pairs(&groups.distinct, 3, &plan).unwrap();
        println!(
            "{} tables {:.3} s, {} pairs",
            plan.tables().len(),
            t.elapsed().as_secs_f64(),
            pairs.len()
        );
        let t = Instant::now();
        let all = find_all(&fps, 3, &plan, None).unwrap();
        println!(
            "find_all {:.3} s, {} pairs",
            t.elapsed().as_secs_f64(),
            all.i.len()
        );
    })
    .unwrap();
}
