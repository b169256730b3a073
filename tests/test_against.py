"""Deduplicating new documents against a dedup index (neardup.DedupIndex, dedup(..., against=),
neardup dedup --against): equal to a verified dedup of the corpus and the new documents by brute
force, ids kept exactly, atomic updates, corrupt files and readers during an update."""

from __future__ import annotations

import json
import random
import resource
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import neardup
import reference
from brute import exact_jaccard, family_corpus, shingle_set, star_oracle, verified_near
from neardup import DedupIndex, IndexFormatError
from neardup.cli import main
from neardup.verify import THRESHOLD_K


def oracle(
    docs: list[str], threshold: float = 0.8, candidates: str = "fingerprint"
) -> tuple[list[int], list[float]]:
    """Verified stars of ``docs`` in row order, by brute force (exact Jaccard of word 3-shingles):
    of the pairs within k with fingerprint candidates, of every pair with prefix candidates."""
    fps = np.array([reference.fingerprint(reference.normalize(t)) for t in docs], dtype=np.uint64)
    k = THRESHOLD_K if candidates == "fingerprint" else 64
    return star_oracle(list(range(len(docs))), verified_near(docs, fps, k, threshold))


def short_corpus(seed: int) -> list[str]:
    """Families of 12 to 14 word texts: a text and a variant differ in one word, so any two have
    at most 16 shingles between them and bottom-16 sketches give their exact Jaccard."""
    rng = random.Random(seed)
    vocab = [
        "".join(rng.choice("abcdefghij") for _ in range(rng.randint(2, 6))) for _ in range(300)
    ]
    docs = []
    for _ in range(30):
        base = [rng.choice(vocab) for _ in range(rng.randint(12, 14))]
        docs.append(" ".join(base))
        for _ in range(rng.randint(0, 3)):
            words = list(base)
            words[rng.choice([0, len(words) - 1, rng.randrange(len(words))])] = rng.choice(vocab)
            docs.append(" ".join(words) if rng.random() < 0.8 else " ".join(base).upper())
    rng.shuffle(docs)
    return docs


def ids_of(kind: str | None, prefix: str, n: int) -> list | None:
    if kind == "str":
        return [f"{prefix}/é/{i}" for i in range(n)]
    if kind == "int":
        return [(-1) ** i * (2**62 + 7 * i) + (hash(prefix) % 1000) for i in range(n)]
    return None


def check_against(
    tmp_path: Path,
    docs: list[str],
    split: int,
    kind: str | None,
    sketch_bytes: int,
    candidates: str = "prefix",
) -> None:
    a_docs, b_docs = docs[:split], docs[split:]
    a_ids = ids_of(kind, "a", len(a_docs)) or list(range(len(a_docs)))
    b_ids = ids_of(kind, "b", len(b_docs)) or list(range(len(b_docs)))
    kept, jac = oracle(docs, candidates=candidates)
    index = DedupIndex.build(
        a_docs,
        tmp_path / "a.ndx",
        ids=a_ids if kind else None,
        sketch_bytes=sketch_bytes,
        candidates=candidates,
    )
    # The index holds what a dedup of A keeps.
    assert index.ids == [a_ids[r] for r in range(split) if kept[r] == r]
    new = [{"id": i, "text": t} for i, t in zip(b_ids, b_docs)]
    got = neardup.dedup(new, against=index, id_field="id")
    assert got.ids == b_ids
    for i in range(len(b_docs)):
        g = split + i
        want_keep = kept[g] == g
        assert got.keep[i] == want_keep, i
        if want_keep:
            assert got.duplicate_of[i] is None and not got.in_index[i]
            continue
        c = kept[g]
        assert got.in_index[i] == (c < split), i
        assert got.duplicate_of[i] == (a_ids[c] if c < split else b_ids[c - split]), i
        assert got.jaccard[i] == np.float32(jac[g]), i
    # ... which is also what the library's own dedup of A + B with the same candidates says.
    full = neardup.dedup(docs, candidates=candidates)
    assert got.keep.tolist() == full.keep[split:].tolist()
    assert got.jaccard.tolist() == full.jaccard[split:].tolist()
    assert got.n_removed > 0 and got.in_index.any()


@pytest.mark.parametrize("candidates", ["prefix", "fingerprint"])
@pytest.mark.parametrize("kind", ["str", "int", None])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_against_an_index_is_a_verified_dedup_of_both(tmp_path, kind, seed, candidates):
    docs = family_corpus(30, seed=seed)
    # 1,024 bytes keep up to 256 whole shingle hashes: these texts' Jaccards are exact.
    check_against(tmp_path, docs, len(docs) // 2, kind, 1024, candidates)


@pytest.mark.parametrize("seed", [4, 5])
def test_the_default_sketch_keeps_short_texts_whole(tmp_path, seed):
    # At most 16 shingles: the default 64 bytes hold their whole hashes, so exact Jaccards.
    docs = short_corpus(seed)
    check_against(tmp_path, docs, len(docs) * 2 // 3, "str", neardup.against.DEFAULT_SKETCH_BYTES)


def long_corpus(seed: int) -> list[str]:
    """Families of texts of 20 to 400 words: some keep their hashes cut short, some are
    sketched; variants replace a few words."""
    rng = random.Random(seed)
    vocab = [
        "".join(rng.choice("abcdefghijklmnop") for _ in range(rng.randint(2, 7)))
        for _ in range(2000)
    ]
    docs = []
    for _ in range(25):
        base = [rng.choice(vocab) for _ in range(rng.choice([20, 50, 120, 400]))]
        docs.append(" ".join(base))
        for _ in range(rng.randint(1, 4)):
            words = list(base)
            for _ in range(rng.randint(1, max(1, len(words) // 25))):
                words[rng.randrange(len(words))] = rng.choice(vocab)
            docs.append(" ".join(words))
    rng.shuffle(docs)
    return docs


@pytest.mark.parametrize("kind", ["str", "int"])
@pytest.mark.parametrize("seed", [6, 7])
def test_against_an_index_is_the_dedup_of_both_with_the_index_sketches(tmp_path, kind, seed):
    # The default compact sketches estimate most of these Jaccards; a verified dedup with the
    # same sketches is neardup.dedup(..., against=<an empty index>), and deduplicating B against
    # the index of A gives B what that dedup of A + B gives it, evidence included.
    docs = long_corpus(seed)
    split = len(docs) // 2
    ids = ids_of(kind, "d", len(docs))
    assert ids is not None
    empty = DedupIndex.build([], tmp_path / "empty.ndx", ids=[])
    both = neardup.dedup(
        [{"id": i, "text": t} for i, t in zip(ids, docs)], against=empty, id_field="id"
    )
    assert both.n_removed > 5 and not both.in_index.any()
    index = DedupIndex.build(docs[:split], tmp_path / "a.ndx", ids=ids[:split])
    assert index.ids == [i for i, k in zip(ids[:split], both.keep[:split]) if k]
    got = neardup.dedup(
        [{"id": i, "text": t} for i, t in zip(ids[split:], docs[split:])],
        against=index,
        id_field="id",
    )
    assert got.keep.tolist() == both.keep[split:].tolist()
    assert got.duplicate_of == both.duplicate_of[split:]
    assert got.jaccard.tolist() == both.jaccard[split:].tolist()
    first = set(ids[:split])
    assert got.in_index.tolist() == [d in first for d in both.duplicate_of[split:]]
    assert got.in_index.any() and (~got.keep & ~got.in_index).any()


def test_the_compact_estimate_is_near_the_exact_jaccard():
    # Pairs of texts of 10 to 600 words, a share of their words replaced, against the exact
    # Jaccard of their word 3-shingle sets (brute force). Kept hashes (up to 64 shingles in 64
    # bytes): nearly exact near the threshold; sketches (512 one-bit bins): within 4.5 standard
    # errors, unbiased.
    from neardup import _core

    rng = random.Random(3)
    vocab = [f"w{i}" for i in range(5000)]
    texts_a, texts_b = [], []
    for size in [10, 14, 16, 17, 30, 45, 64, 80, 90, 150, 300, 600]:
        for rate in [0.0, 0.02, 0.05, 0.1, 0.2]:
            for _ in range(6):
                base = [rng.choice(vocab) for _ in range(size + 2)]
                other = [w if rng.random() >= rate else rng.choice(vocab) for w in base]
                texts_a.append(" ".join(base))
                texts_b.append(" ".join(other))
    exact = np.array([exact_jaccard(a, b) for a, b in zip(texts_a, texts_b)])
    sizes = np.array([len(shingle_set(a)) for a in texts_a])

    def compact(texts):
        offsets, hashes, _ = _core.shingle_sketches(texts, 3, 1 << 20)
        return _core.compact_sketches(offsets[:-1], offsets[1:], hashes, 16, 1)

    (la, wa), (lb, wb) = compact(texts_a), compact(texts_b)
    got = _core.compact_jaccard(la, wa, lb, wb, 16, 1)
    kept = (la != 2**32 - 1) & (lb != 2**32 - 1)
    assert (kept == (sizes <= 64)).all()
    whole = kept & (sizes <= 15)
    assert (got[whole] == exact[whole]).all()
    # Kept hashes cut short agree by chance, more often the more shingles are unshared.
    high = kept & (exact >= 0.7)
    assert np.mean(np.abs(got[high] - exact[high]) <= 0.02) >= 0.9
    assert (np.abs(got[high] - exact[high]) <= 0.05).all()
    assert (np.abs(got[kept] - exact[kept]) <= 0.2).all()
    sketched = ~kept
    assert sketched.sum() > 100
    p = exact + (1 - exact) / 2
    se = np.sqrt(p * (1 - p) / 512) / 0.5
    err = got[sketched] - exact[sketched]
    assert (np.abs(err) <= 4.5 * se[sketched] + 1e-9).all()
    assert abs(err.mean()) < 0.01


def test_index_build_sketch_defaults_to_64_bytes_of_1_bit_bins(tmp_path):
    write_jsonl(tmp_path / "a.jsonl", family_corpus(10, seed=3), "http://a/")
    for extra, shape in ([], (64, 1)), (["--sketch-bytes", "128", "--sketch-bits", "2"], (128, 2)):
        ndx = tmp_path / f"a{shape[0]}.ndx"
        args = ["index", "build", str(tmp_path / "a.jsonl"), "-o", str(ndx), "-q", *extra]
        assert main(args) == 0
        index = DedupIndex.open(ndx)
        assert (index.sketch_bytes, index.sketch_bits) == shape
    assert DedupIndex.build(["a b c"], tmp_path / "d.ndx").sketch_bytes == 64
    with pytest.raises(ValueError, match="multiple of 4"):
        DedupIndex.build(["a b c"], tmp_path / "e.ndx", sketch_bytes=66)
    with pytest.raises(ValueError, match="bits"):
        DedupIndex.build(["a b c"], tmp_path / "e.ndx", sketch_bits=3)


def test_update_appends_the_kept_documents(tmp_path):
    docs = family_corpus(30, seed=9)
    split = len(docs) // 2
    path = tmp_path / "a.ndx"
    index = DedupIndex.build(docs[:split], path, ids=[f"a{i}" for i in range(split)])
    before = index.ids
    new = [{"id": f"b{i}", "text": t} for i, t in enumerate(docs[split:])]
    first = neardup.dedup(new, against=index, id_field="id", update=True)
    kept_ids = [new[i]["id"] for i in np.flatnonzero(first.keep)]
    assert index.ids == before + kept_ids
    assert DedupIndex.open(path).ids == before + kept_ids
    # Again: everything is in the index now, each removed for what it was removed for before or
    # for itself.
    again = neardup.dedup(new, against=str(path), id_field="id")
    assert not again.keep.any() and again.in_index.all()
    assert again.duplicate_of == [
        d if d is not None else i for d, i in zip(first.duplicate_of, first.ids)
    ]
    assert again.jaccard.tolist() == first.jaccard.tolist()


def test_ids_are_kept_exactly(tmp_path):
    texts = [f"text number {i} with some words" for i in range(6)]
    strings = ["", "é/中文", "\ud800 lone", "x" * 5000, "0", "a\nb"]
    index = DedupIndex.build(texts, tmp_path / "s.ndx", ids=strings, dedup=False)
    assert index.ids == strings and index.string_ids
    assert DedupIndex.open(tmp_path / "s.ndx", mmap=False).ids == strings
    ints = [-(2**63), 2**63 - 1, 0, -1, 42, 2**40]
    index = DedupIndex.build(texts, tmp_path / "i.ndx", ids=ints, dedup=False)
    assert index.ids == ints and not index.string_ids
    with pytest.raises(TypeError, match="all integers or all strings"):
        DedupIndex.build(texts, tmp_path / "m.ndx", ids=[1, "2", 3, 4, 5, 6])
    with pytest.raises(ValueError, match="64 bits"):
        DedupIndex.build(texts, tmp_path / "m.ndx", ids=[2**64] * 6)
    with pytest.raises(TypeError, match="strings"):
        neardup.dedup(["new text"], against=DedupIndex.open(tmp_path / "s.ndx"), update=True)
    assert not (tmp_path / "m.ndx").exists()


def test_bad_arguments(tmp_path):
    index = DedupIndex.build(["one two three four"], tmp_path / "a.ndx")
    with pytest.raises(ValueError, match="keep"):
        neardup.dedup(["x"], against=index, keep="longest")
    with pytest.raises(ValueError, match="threshold"):
        neardup.dedup(["x"], against=index, threshold=None)
    with pytest.raises(ValueError, match="built with"):
        neardup.dedup(["x"], against=index, hasher=neardup.Simhasher(ngram=2))
    with pytest.raises(ValueError, match="shingles"):
        neardup.dedup(["x"], against=index, shingle=2)
    with pytest.raises(ValueError, match="idf"):
        DedupIndex.build(
            ["a b"], tmp_path / "b.ndx", hasher=neardup.Simhasher(weighting="idf").fit(["a b"])
        )
    with pytest.raises(TypeError, match="DedupIndex"):
        neardup.against.dedup_against(["x"], object())  # type: ignore[arg-type]


def test_the_fingerprint_settings_travel_with_the_index(tmp_path):
    hasher = neardup.Simhasher(ngram=2, stopwords="english", unicode_form="NFC", casefold=False)
    index = DedupIndex.build(["The cat sat on the mat"], tmp_path / "a.ndx", hasher=hasher)
    assert DedupIndex.open(tmp_path / "a.ndx").hasher == hasher
    got = neardup.dedup(["The cat sat on the mat", "the cat sat on the mat"], against=index)
    assert got.keep.tolist() == [False, True]  # no case folding: the second is another text


def test_corrupt_and_foreign_files_raise_index_format_error(tmp_path):
    path = tmp_path / "a.ndx"
    DedupIndex.build(
        family_corpus(5, seed=1), path, ids=[f"d{i}" for i in range(len(family_corpus(5, seed=1)))]
    )
    good = path.read_bytes()
    bad = tmp_path / "bad.ndx"
    rng = random.Random(0)
    cases = [b"", good[:7], good[:100], good[:-8], good + b"\0" * 8, b"\0" * len(good)]
    for at in [0, 8, 16, 24, 40, 64, 130, len(good) // 2, len(good) - 1] + rng.sample(
        range(len(good)), 20
    ):
        flipped = bytearray(good)
        flipped[at] ^= 1 << rng.randrange(8)
        cases.append(bytes(flipped))
    newer = bytearray(good)
    newer[8] = 7  # past the newest version this neardup reads (6)
    cases.append(bytes(newer))
    olders = []
    for version in (1, 2):
        older = bytearray(good)
        older[8] = version
        olders.append(bytes(older))
    cases.extend(olders)
    idx = neardup.SimhashIndex(k=3)
    idx.add(np.arange(5, dtype=np.uint64))
    idx.save(tmp_path / "other.idx")
    cases.append((tmp_path / "other.idx").read_bytes())
    for data in cases:
        bad.write_bytes(data)
        for mmap in (True, False):
            with pytest.raises(IndexFormatError):
                DedupIndex.open(bad, mmap=mmap)
    bad.write_bytes(bytes(newer))
    with pytest.raises(IndexFormatError, match="newer"):
        DedupIndex.open(bad)
    # Version 2 kept 32-bit shingle hashes and 64-bit content keys: refused, saying to rebuild.
    for version, older in zip((1, 2), olders):
        bad.write_bytes(older)
        with pytest.raises(IndexFormatError, match=f"version {version} .* build the index again"):
            DedupIndex.open(bad)
    with pytest.raises(IsADirectoryError):
        DedupIndex.open(tmp_path)
    with pytest.raises(FileNotFoundError):
        DedupIndex.open(tmp_path / "missing.ndx")


def write_jsonl(path: Path, docs: list[str], prefix: str) -> None:
    path.write_text(
        "".join(json.dumps({"url": f"{prefix}{i}", "text": t}) + "\n" for i, t in enumerate(docs))
    )


def test_the_command_builds_and_deduplicates_against_an_index(tmp_path, capsys):
    docs = family_corpus(30, seed=11)
    split = len(docs) // 2
    write_jsonl(tmp_path / "a.jsonl", docs[:split], "http://a/")
    write_jsonl(tmp_path / "b.jsonl", docs[split:], "http://b/")
    ndx = tmp_path / "a.ndx"
    assert (
        main(
            [
                "index",
                "build",
                str(tmp_path / "a.jsonl"),
                "--id-field",
                "url",
                "-o",
                str(ndx),
                "--sketch-bytes",
                "1024",
                "-q",
            ]
        )
        == 0
    )
    kept, jac = oracle(docs)
    assert DedupIndex.open(ndx).ids == [f"http://a/{r}" for r in range(split) if kept[r] == r]
    out, ev = tmp_path / "kept.jsonl", tmp_path / "ev.jsonl"
    plain = (
        tmp_path / "plain.jsonl"
    )  # without --clusters or --update the ids are not read: the same documents
    assert (
        main(["dedup", str(tmp_path / "b.jsonl"), "--against", str(ndx), "-o", str(plain), "-q"])
        == 0
    )
    code = main(
        [
            "dedup",
            str(tmp_path / "b.jsonl"),
            "--id-field",
            "url",
            "--against",
            str(ndx),
            "-o",
            str(out),
            "--clusters",
            str(ev),
            "--update",
            "--json",
        ]
    )
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    rows = [json.loads(line) for line in ev.read_text().splitlines()]
    want_kept = [i for i in range(len(docs) - split) if kept[split + i] == split + i]
    assert [json.loads(line)["url"] for line in out.read_text().splitlines()] == [
        f"http://b/{i}" for i in want_kept
    ]
    assert plain.read_text() == out.read_text()
    for i, row in enumerate(rows):
        c = kept[split + i]
        assert row["id"] == f"http://b/{i}" and row["kept"] == (c == split + i)
        assert row["kept_id"] == (f"http://a/{c}" if c < split else f"http://b/{c - split}")
        assert row["in_index"] == (c < split)
        assert row["jaccard"] == round(float(np.float32(jac[split + i])), 4)
    assert summary["removed"] == len(rows) - len(want_kept) and summary["index_size"] == len(
        DedupIndex.open(ndx)
    )
    assert DedupIndex.open(ndx).ids[-len(want_kept) :] == [f"http://b/{i}" for i in want_kept]


def test_the_command_refuses_bad_index_files(tmp_path, capsys):
    write_jsonl(tmp_path / "b.jsonl", ["some text here"], "b")
    (tmp_path / "bad.ndx").write_bytes(b"not an index at all, not at all")
    for name in ("bad.ndx", "missing.ndx"):
        code = main(
            [
                "dedup",
                str(tmp_path / "b.jsonl"),
                "--against",
                str(tmp_path / name),
                "-o",
                str(tmp_path / "out.jsonl"),
            ]
        )
        err = capsys.readouterr().err
        assert code == 2 and f"{name}:" in err, err
    assert not (tmp_path / "out.jsonl").exists()
    assert main(["dedup", str(tmp_path / "b.jsonl"), "--update", "--dry-run"]) == 2


def big_index(tmp_path: Path, n: int = 20000) -> tuple[Path, int]:
    rng = random.Random(5)
    texts = [" ".join(f"w{rng.randrange(10**6)}" for _ in range(12)) for _ in range(n)]
    path = tmp_path / "big.ndx"
    return path, len(DedupIndex.build(texts, path, ids=[f"doc-{i}" for i in range(n)], dedup=False))


def update_args(batch: Path, index: Path, out: Path) -> list[str]:
    """The command that dedups the JSONL batch against the index and adds its kept documents."""
    flags = ["--id-field", "url", "--against", str(index), "--update", "-o", str(out), "-q"]
    return ["dedup", str(batch), *flags]


def test_an_interrupted_update_leaves_the_old_index(tmp_path):
    path, n = big_index(tmp_path)
    size = path.stat().st_size
    new = tmp_path / "new.jsonl"
    write_jsonl(new, [f"brand new text number {i} of the batch" for i in range(3000)], "new-")
    out = tmp_path / "out.jsonl"

    def limit() -> (
        None
    ):  # files may not grow past half the index: the new index is cut short by SIGXFSZ
        resource.setrlimit(resource.RLIMIT_FSIZE, (size // 2, size // 2))

    args = update_args(new, path, out)
    # A failed write (EFBIG: Python ignores SIGXFSZ) is an error that removes its temporary file;
    # with SIGXFSZ's default action the kernel kills the process in the middle of the write.
    crash = (
        "import signal, sys; signal.signal(signal.SIGXFSZ, signal.SIG_DFL); "
        "from neardup.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    for command, status in (["-m", "neardup"], 1), (["-c", crash], -signal.SIGXFSZ):
        proc = subprocess.run(
            [sys.executable, *command, *args], preexec_fn=limit, capture_output=True
        )
        assert proc.returncode == status, proc.stderr
        assert path.stat().st_size == size
        index = DedupIndex.open(path)
        assert len(index) == n and index.ids[-1] == f"doc-{n - 1}"
    assert any(
        ".tmp-" in p.name for p in tmp_path.iterdir()
    )  # what the crash left; it hides nothing
    # The same update, uninterrupted.
    assert main(args) == 0
    assert len(DedupIndex.open(path)) == n + 3000


def test_readers_keep_their_version_during_an_update(tmp_path):
    path, n = big_index(tmp_path, 5000)
    reader = DedupIndex.open(path)
    assert reader.mapped
    batch = [f"w{i} and a few more words to make shingles" for i in range(200)]
    before = neardup.dedup(batch, against=reader)
    # Another process updates the file while this one has it mapped.
    new = tmp_path / "new.jsonl"
    write_jsonl(new, batch, "new-")
    proc = subprocess.Popen(
        [sys.executable, "-m", "neardup", *update_args(new, path, tmp_path / "out.jsonl")]
    )
    during = [neardup.dedup(batch, against=reader) for _ in range(5)]
    assert proc.wait() == 0
    after = neardup.dedup(batch, against=reader)
    reader.check_file()  # the old file is still whole: the update renamed a new one over its name
    for got in during + [after]:
        assert got.keep.tolist() == before.keep.tolist() and got.duplicate_of == before.duplicate_of
    assert len(reader) == n
    fresh = DedupIndex.open(path)
    assert len(fresh) == n + before.n_kept
    assert not neardup.dedup(batch, against=fresh).keep.any()


def test_concurrent_updates_run_one_after_the_other(tmp_path):
    path, n = big_index(tmp_path, 3000)
    procs = []
    for name in ("x", "y"):
        write_jsonl(
            tmp_path / f"{name}.jsonl",
            [f"batch {name} text {i} with words of its own" for i in range(500)],
            f"{name}-",
        )
    for name in ("x", "y"):
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "neardup",
                    *update_args(tmp_path / f"{name}.jsonl", path, tmp_path / f"{name}-out.jsonl"),
                ]
            )
        )
    assert [p.wait() for p in procs] == [0, 0]
    ids = DedupIndex.open(path).ids
    # Neither update is lost: the index holds both batches, each whole and in order.
    assert len(ids) == n + 1000 and ids[:n] == [f"doc-{i}" for i in range(n)]
    assert sorted(ids[n:]) == sorted(
        [f"x-{i}" for i in range(500)] + [f"y-{i}" for i in range(500)]
    )
    assert ids[n : n + 500] in ([f"x-{i}" for i in range(500)], [f"y-{i}" for i in range(500)])


def test_a_dense_index_at_a_large_k_is_refused_quickly(tmp_path):
    # 200,000 indexed and 100,000 new fingerprints sharing their top 44 bits: at k = 16 the
    # cross search would compare billions of pairs per table; it is refused from the estimate.
    from neardup import _core

    rng = np.random.default_rng(0)
    base = np.uint64(0xABCD_EF12_3450_0000)
    old = base | rng.integers(0, 2**20, 200_000, dtype=np.uint64)
    new = base | rng.integers(0, 2**20, 100_000, dtype=np.uint64)
    meta = neardup.against._settings_bytes(neardup.Simhasher())
    empty = _core.DedupIndex.empty(16, 1, 3, 8, 0.8, False, meta)
    lens = np.zeros(len(old), np.uint32)
    empty.save_appended(
        tmp_path / "dense.ndx",
        old,
        np.repeat(old, 2),  # content keys: two words each
        lens,
        np.zeros(16 * len(old), np.uint32),
        np.arange(len(old), dtype=np.int64),
    )
    index = DedupIndex.open(tmp_path / "dense.ndx")
    lens = np.zeros(len(new), np.uint32)
    keys = neardup.digest.keys_of_words(np.repeat(new, 2))
    batch = neardup.against.Batch(new, keys, lens, np.zeros(16 * len(new), np.uint32))
    # Refused from the estimate, before any table is searched (no wall-clock limit: CI is loaded).
    with pytest.raises(neardup.TooManyPairsError, match=r"estimated from the data\) .* k=16"):
        index.search(batch, k=16)
