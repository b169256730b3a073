//! Throughput of the Rust kernel alone on already-normalized text, one thread and all threads.
//! `cargo run --release --example kernel -- FILE` where FILE holds documents separated by NUL.

use std::time::Instant;

use neardup::features::{FeatureConfig, TokenKind};
use neardup::fingerprint::{Hasher, Weighting};

fn main() {
    let path = std::env::args()
        .nth(1)
        .expect("usage: kernel FILE (NUL-separated documents)");
    let text = std::fs::read_to_string(&path).expect("readable UTF-8 file");
    let docs: Vec<&str> = text.split('\0').collect();
    let mb = text.len() as f64 / 1e6;
    let only = std::env::args().nth(2);
    for (name, tokens, ngram) in [
        ("word1", TokenKind::Word, 1),
        ("word3", TokenKind::Word, 3),
        ("char5", TokenKind::Char, 5),
    ] {
        if only.as_deref().is_some_and(|o| o != name) {
            continue;
        }
        let hasher = Hasher::new(
            FeatureConfig::new(tokens, ngram, None).unwrap(),
            Weighting::Tf,
            None,
            vec![1.0],
        )
        .unwrap();
        for threads in [1, 2] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let mut best = f64::MAX;
            for _ in 0..5 {
                let t = Instant::now();
                let fps = pool.install(|| hasher.fingerprint_many(&[&docs[..]]).unwrap());
                std::hint::black_box(fps);
                best = best.min(t.elapsed().as_secs_f64());
            }
            println!("{name} threads={threads}: {:.0} MB/s", mb / best);
        }
    }
}
