//! Prints the planner's choices: `cargo run --release --example plans`
use neardup::search::plan::{Plan, Workload};

fn main() {
    for k in [1, 3, 6, 8] {
        for n in [10_000u64, 1_000_000, 10_000_000, 1 << 34] {
            for w in [Workload::Query, Workload::Batch] {
                let p = Plan::choose(k, n, None, w).unwrap();
                println!(
                    "k={k} n={n} {w:?}: levels {:?}, {} tables, prefix {:?}",
                    p.levels(),
                    p.tables().len(),
                    p.tables().iter().map(|t| t.prefix_bits).max()
                );
            }
        }
    }
}
