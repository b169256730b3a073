//! The core's kernels under criterion: `cargo bench --bench kernels [-- FILTER]`.
//!
//! fingerprint (the kernel on normalized text), jsonl (the JSONL fast path), sort (the table
//! sorts), search (lookups in a sorted table), find_all (batch mode) and index (queries on one
//! thread). Synthetic data by default; `NEARDUP_BENCH_DOCS=FILE` (documents separated by NUL
//! bytes) and `NEARDUP_BENCH_JSONL=FILE` time real text, `NEARDUP_BENCH_N` sets the number of
//! fingerprints (default 1,000,000).

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use rayon::prelude::*;

use neardup::fingerprint::simhash::{Hasher, Weighting};
use neardup::first_pass::jsonl::fingerprint_lines;
use neardup::search::pairs::find_all;
use neardup::search::plan::{Plan, Workload};
use neardup::search::table::{lower_bound, prefix_range, radix_sort_top};
use neardup::store::index::Index;
use neardup::testing::xorshift64;
use neardup::text::features::{FeatureConfig, TokenKind};

/// xorshift64: the same pseudo-random fingerprints on every run.
fn random_u64s(n: usize, seed: u64) -> Vec<u64> {
    let mut s = seed | 1;
    (0..n).map(|_| xorshift64(&mut s)).collect()
}

fn size() -> usize {
    std::env::var("NEARDUP_BENCH_N")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000)
}

/// Documents of 40 to 120 words drawn from a small vocabulary, or those of NEARDUP_BENCH_DOCS.
fn documents() -> Vec<String> {
    if let Ok(path) = std::env::var("NEARDUP_BENCH_DOCS") {
        let text =
            std::fs::read_to_string(&path).expect("NEARDUP_BENCH_DOCS: a readable UTF-8 file");
        return text.split('\0').map(str::to_owned).collect();
    }
    let words: Vec<String> = random_u64s(2_000, 7)
        .iter()
        .map(|w| format!("w{}", w % 100_000))
        .collect();
    let mut draw = random_u64s(1 << 16, 11).into_iter().cycle();
    let mut next = move |bound: usize| (draw.next().unwrap() % bound as u64) as usize;
    (0..2_500)
        .map(|_| {
            let n = 40 + next(81);
            let doc: Vec<&str> = (0..n).map(|_| words[next(words.len())].as_str()).collect();
            doc.join(" ")
        })
        .collect()
}

fn hasher(tokens: TokenKind, ngram: i64) -> Hasher {
    Hasher::new(
        FeatureConfig::new(tokens, ngram, None).unwrap(),
        Weighting::Tf,
        None,
        vec![1.0],
    )
    .unwrap()
}

fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
}

fn fingerprint(c: &mut Criterion) {
    let docs = documents();
    let refs: Vec<&str> = docs.iter().map(String::as_str).collect();
    let bytes: usize = docs.iter().map(String::len).sum();
    let mut group = c.benchmark_group("fingerprint");
    group.throughput(Throughput::Bytes(bytes as u64));
    for (name, tokens, ngram) in [
        ("word1", TokenKind::Word, 1),
        ("word3", TokenKind::Word, 3),
        ("char5", TokenKind::Char, 5),
    ] {
        let h = hasher(tokens, ngram);
        for threads in [1, 2] {
            let p = pool(threads);
            group.bench_function(BenchmarkId::new(name, threads), |b| {
                b.iter(|| p.install(|| h.fingerprint_many(&[&refs[..]]).unwrap()))
            });
        }
    }
    group.finish();
}

fn jsonl(c: &mut Criterion) {
    let data = match std::env::var("NEARDUP_BENCH_JSONL") {
        Ok(path) => {
            let mut data = std::fs::read(&path).expect("NEARDUP_BENCH_JSONL: a readable file");
            data.truncate(
                data[..data.len().min(64 << 20)]
                    .iter()
                    .rposition(|&b| b == b'\n')
                    .unwrap_or(0),
            );
            data
        }
        Err(_) => documents()
            .iter()
            .enumerate()
            .map(|(i, d)| format!("{{\"id\": {i}, \"text\": \"{d}\"}}"))
            .collect::<Vec<_>>()
            .join("\n")
            .into_bytes(),
    };
    // Blocks of whole lines of up to 4 MB, as the command reads them.
    let mut blocks = Vec::new();
    let mut rest = &data[..];
    while !rest.is_empty() {
        let cut = if rest.len() <= 4 << 20 {
            rest.len()
        } else {
            rest[..4 << 20]
                .iter()
                .rposition(|&b| b == b'\n')
                .unwrap_or(rest.len())
        };
        blocks.push(&rest[..cut]);
        rest = &rest[(cut + 1).min(rest.len())..];
    }
    let h = hasher(TokenKind::Word, 1);
    let mut group = c.benchmark_group("jsonl");
    group.throughput(Throughput::Bytes(data.len() as u64));
    for threads in [1, 2] {
        let p = pool(threads);
        group.bench_function(BenchmarkId::new("fingerprint_lines", threads), |b| {
            b.iter(|| {
                p.install(|| {
                    for block in &blocks {
                        fingerprint_lines(&h, block, "text", Some("id"), true, None, None, None)
                            .unwrap();
                    }
                })
            })
        });
    }
    group.finish();
}

fn sort(c: &mut Criterion) {
    let data = random_u64s(size(), 1);
    let mut group = c.benchmark_group("sort");
    group.sample_size(10);
    for bits in [64, 33, 26, 16] {
        group.bench_function(BenchmarkId::new("radix_top_bits", bits), |b| {
            b.iter_batched_ref(
                || data.clone(),
                |v| radix_sort_top(v, bits),
                BatchSize::LargeInput,
            )
        });
    }
    group.bench_function("std_sort_unstable", |b| {
        b.iter_batched_ref(
            || data.clone(),
            |v| v.sort_unstable(),
            BatchSize::LargeInput,
        )
    });
    group.bench_function("rayon_par_sort_unstable", |b| {
        b.iter_batched_ref(
            || data.clone(),
            |v| v.par_sort_unstable(),
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

fn search(c: &mut Criterion) {
    let mut table = random_u64s(size(), 2);
    table.sort_unstable();
    let random = random_u64s(10_000, 3);
    let members: Vec<u64> = random
        .iter()
        .map(|r| table[(r % table.len() as u64) as usize])
        .collect();
    let mut group = c.benchmark_group("search");
    group.throughput(Throughput::Elements(random.len() as u64));
    for (name, keys) in [("random", &random), ("members", &members)] {
        group.bench_function(BenchmarkId::new("interpolation", name), |b| {
            b.iter(|| keys.iter().map(|&k| lower_bound(&table, k)).sum::<usize>())
        });
        group.bench_function(BenchmarkId::new("binary", name), |b| {
            b.iter(|| {
                keys.iter()
                    .map(|&k| table.partition_point(|&x| x < k))
                    .sum::<usize>()
            })
        });
        group.bench_function(BenchmarkId::new("prefix_range", name), |b| {
            b.iter(|| {
                keys.iter()
                    .map(|&k| {
                        let (lo, hi) = prefix_range(&table, k, 26);
                        lo + hi
                    })
                    .sum::<usize>()
            })
        });
    }
    group.finish();
}

/// Fingerprints with 1% planted near-duplicates (3 bits apart).
fn planted(n: usize) -> Vec<u64> {
    let mut fps = random_u64s(n, 4);
    for i in 0..n / 100 {
        fps[n - 1 - i] = fps[i] ^ 0b1011;
    }
    fps
}

fn batch(c: &mut Criterion) {
    let n = size();
    let fps = planted(n);
    let plan = Plan::choose(3, n as u64, None, Workload::Batch).unwrap();
    let mut group = c.benchmark_group("find_all");
    group.sample_size(10);
    group.throughput(Throughput::Elements(n as u64));
    group.bench_function(BenchmarkId::new("k3", n), |b| {
        b.iter(|| find_all(&fps, 3, &plan, None).unwrap())
    });
    group.finish();
}

fn index(c: &mut Criterion) {
    let n = size();
    let fps = planted(n);
    let mut index = Index::new(3, Some(Plan::blocks(5, 3).unwrap()), None).unwrap();
    index.add(&fps, None).unwrap();
    let random = random_u64s(10_000, 5);
    let members = fps[..10_000.min(n)].to_vec();
    let mut group = c.benchmark_group("index");
    group.throughput(Throughput::Elements(random.len() as u64));
    for (name, queries) in [("members", &members), ("random", &random)] {
        group.bench_function(BenchmarkId::new("query_into", name), |b| {
            let mut out = Vec::new();
            b.iter(|| {
                let mut found = 0;
                for &q in queries {
                    out.clear();
                    index.query_into(q, &mut out);
                    found += out.len();
                }
                found
            })
        });
    }
    group.finish();
}

criterion_group!(kernels, fingerprint, jsonl, sort, search, batch, index);
criterion_main!(kernels);
