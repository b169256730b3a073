//! Throughput of the JSONL fast path alone: `cargo run --release --example jsonl_speed -- FILE
//! [BLOCK_MB]` reads the first 64 MB of a JSONL file and fingerprints it in blocks.

use std::time::Instant;

use neardup::features::{FeatureConfig, TokenKind};
use neardup::fingerprint::{Hasher, Weighting};
use neardup::jsonl::fingerprint_lines;

fn main() {
    let path = std::env::args()
        .nth(1)
        .expect("usage: jsonl_speed FILE [BLOCK_MB]");
    let block_mb: usize = std::env::args()
        .nth(2)
        .map_or(4, |s| s.parse().expect("a number of MB"));
    let mut data = std::fs::read(&path).expect("readable file");
    data.truncate(64 << 20);
    let hasher = Hasher::new(
        FeatureConfig::new(TokenKind::Word, 1, None).unwrap(),
        Weighting::Tf,
        None,
        vec![1.0],
    )
    .unwrap();
    let mut blocks = Vec::new();
    let mut rest = &data[..];
    while let Some(cut) = rest[..rest.len().min(block_mb << 20)]
        .iter()
        .rposition(|&b| b == b'\n')
    {
        blocks.push(&rest[..cut]);
        rest = &rest[cut + 1..];
    }
    let bytes: usize = blocks.iter().map(|b| b.len()).sum();
    for threads in [1, 2] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let mut best = f64::MAX;
        for _ in 0..5 {
            let t = Instant::now();
            for b in &blocks {
                std::hint::black_box(pool.install(|| {
                    fingerprint_lines(&hasher, b, "text", Some("id"), true, None, None).unwrap()
                }));
            }
            best = best.min(t.elapsed().as_secs_f64());
        }
        println!(
            "threads={threads}, {block_mb} MB blocks: {:.0} MB/s",
            bytes as f64 / best / 1e6
        );
    }
}
