"""benches/synth.py: the synthetic corpus generator, its ground truth and the benchmarks' scorer.

The truth is checked against an exact computation written here (shingles, an inverted index that
counts the shingles every two documents share), not against the generator's own bookkeeping.
"""

from __future__ import annotations

import gzip
import json
import re
import sys
from collections import Counter
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benches"))
import synth  # noqa: E402

SOURCE = ROOT / "python" / "neardup" / "data" / "debian-sample.jsonl.gz"


def word3(text: str) -> frozenset[str]:
    """The shared README's shingles, written out again: lowercase, \\w+ tokens, three in a row."""
    tokens = re.findall(r"\w+", text.lower())
    if len(tokens) < 3:
        return frozenset([" ".join(tokens)])
    return frozenset(f"{tokens[i]} {tokens[i + 1]} {tokens[i + 2]}" for i in range(len(tokens) - 2))


def read_corpus(path: Path) -> tuple[list[str], list[str]]:
    ids, texts = [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            doc = json.loads(line)
            ids.append(doc["id"])
            texts.append(doc["text"])
    return ids, texts


def read_truth(path: Path) -> tuple[list[str], list[tuple[str, str, str]]]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        header = f.readline().rstrip("\n").split("\t")
        return header, [tuple(line.rstrip("\n").split("\t")) for line in f]  # type: ignore[misc]


def similar_pairs(texts: list[str], threshold: float) -> dict[tuple[int, int], float]:
    """Every pair (i < j) with Jaccard >= threshold, exactly: an inverted index gives, for every two
    documents sharing a shingle, how many they share."""
    sets = [word3(t) for t in texts]
    postings: dict[str, list[int]] = {}
    for i, s in enumerate(sets):
        for g in s:
            postings.setdefault(g, []).append(i)
    shared: Counter[tuple[int, int]] = Counter()
    for docs in postings.values():
        shared.update(combinations(docs, 2))
    out = {}
    for (i, j), inter in shared.items():
        jac = inter / (len(sets[i]) + len(sets[j]) - inter)
        if jac >= threshold:
            out[(i, j)] = jac
    return out


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> synth.SynthCorpus:
    return synth.generate(2000, tmp_path_factory.mktemp("synth"), seed=3, source=SOURCE)


def test_shingles_and_jaccard_by_hand() -> None:
    # "The cat, the CAT sat." -> tokens: the cat the cat sat -> windows "the cat the", "cat the cat",
    # "the cat sat". Fewer than three tokens: one shingle of them all.
    assert synth.shingles("The cat, the CAT sat.") == {"the cat the", "cat the cat", "the cat sat"}
    assert synth.shingles("Hello,  World") == {"hello world"}
    assert synth.shingles("") == {""}
    # {a, b, c} and {b, c, d}: 2 shared of 4 in all.
    assert synth.jaccard({"a", "b", "c"}, {"b", "c", "d"}) == 0.5
    assert synth.jaccard(set(), set()) == 1.0


def test_shingles_match_the_independent_definition(corpus: list[str]) -> None:
    for text in corpus[:300]:
        assert synth.shingles(text) == word3(text)


def test_truth_is_complete_and_exact(small: synth.SynthCorpus) -> None:
    ids, texts = read_corpus(small.jsonl)
    assert len(texts) == small.n == 2000
    assert ids == [f"d{i}" for i in range(2000)]
    header, rows = read_truth(small.truth)
    assert header == ["id_a", "id_b", "jaccard"]
    row = {doc_id: i for i, doc_id in enumerate(ids)}
    listed = [(row[a], row[b], float(j)) for a, b, j in rows]
    assert all(len(j.split(".")[1]) >= 6 for _, _, j in rows)
    assert [(a, b) for a, b, _ in listed] == sorted((a, b) for a, b, _ in listed)  # corpus order
    assert all(a < b for a, b, _ in listed)
    expected = similar_pairs(texts, 0.5)
    assert {(a, b) for a, b, _ in listed} == set(expected)
    for a, b, j in listed:
        assert j == pytest.approx(expected[(a, b)], abs=5e-7)
    # A corpus worth benchmarking on: near-duplicates on both sides of 0.8, unique documents too.
    jac = np.array([j for _, _, j in listed])
    assert (jac >= 0.8).sum() > 100 and ((jac >= 0.5) & (jac < 0.8)).sum() > 100
    paired = {a for a, _, _ in listed} | {b for _, b, _ in listed}
    assert 0.1 < len(paired) / len(texts) < 0.5


def test_same_seed_same_bytes_other_seed_other_corpus(
    small: synth.SynthCorpus, tmp_path: Path
) -> None:
    again = synth.generate(2000, tmp_path, seed=3, source=SOURCE)
    assert again.jsonl.read_bytes() == small.jsonl.read_bytes()
    assert again.truth.read_bytes() == small.truth.read_bytes()
    other = synth.generate(2000, tmp_path, seed=4, source=SOURCE)
    assert other.jsonl != again.jsonl
    assert other.jsonl.read_bytes() != again.jsonl.read_bytes()
    assert other.truth.read_bytes() != again.truth.read_bytes()


def test_chunks_and_processes_do_not_change_the_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(synth, "CHUNK", 400)
    one = synth.generate(1000, tmp_path / "one", seed=1, source=SOURCE)
    two = synth.generate(1000, tmp_path / "two", seed=1, source=SOURCE, jobs=2)
    assert one.jsonl.read_bytes() == two.jsonl.read_bytes()
    assert one.truth.read_bytes() == two.truth.read_bytes()
    # Families never straddle chunks, and the truth still holds across them.
    ids, texts = read_corpus(one.jsonl)
    _, rows = read_truth(one.truth)
    row = {doc_id: i for i, doc_id in enumerate(ids)}
    assert {(row[a], row[b]) for a, b, _ in rows} == set(similar_pairs(texts, 0.5))
    assert all(row[a] // 400 == row[b] // 400 for a, b, _ in rows)


def test_complete_files_are_reused_and_incomplete_ones_redone(tmp_path: Path) -> None:
    first = synth.generate(500, tmp_path, source=SOURCE)
    marker = tmp_path / "corpus-500-s0.done"
    assert json.loads(marker.read_text())["documents"] == 500
    stamp = first.jsonl.stat().st_mtime_ns
    assert synth.generate(500, tmp_path, source=SOURCE) == first
    assert first.jsonl.stat().st_mtime_ns == stamp
    whole = first.jsonl.read_bytes()
    first.jsonl.write_bytes(whole[: len(whole) // 2])  # an interrupted copy, say
    synth.generate(500, tmp_path, source=SOURCE)
    assert first.jsonl.read_bytes() == whole
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "corpus-500-s0.done",
        "corpus-500-s0.jsonl",
        "truth-500-s0.tsv.gz",
    ]


def test_score_by_hand() -> None:
    # Five documents. Truth: (0,1) 0.9, (1,2) 0.85, (2,3) 0.6, (0,4) 0.8; at 0.8 three pairs count.
    truth = synth.Truth.from_pairs(5, [(1, 0, 0.9), (1, 2, 0.85), (2, 3, 0.6), (0, 4, 0.8)])
    # Reported: (0,1) hit; (2,1) the same pair as (1,2), hit; (3,2) similar but below 0.8;
    # (3,4) not similar at all; (1,0) a repeat of (0,1), counted once. So 4 distinct pairs:
    # precision 2/4, recall 2/3 (missed (0,4)), F1 = 2 * 1/2 * 2/3 / (1/2 + 2/3) = 4/7,
    # loose: (0,1), (1,2), (2,3) have Jaccard >= 0.5, 3/4.
    got = synth.score([(0, 1), (2, 1), (3, 2), (3, 4), (1, 0)], truth)
    assert got["precision"] == pytest.approx(1 / 2)
    assert got["recall"] == pytest.approx(2 / 3)
    assert got["f1"] == pytest.approx(4 / 7)
    assert got["loose"] == pytest.approx(3 / 4)
    assert got["reported"] == 4
    # At 0.6 the truth has all four pairs; three are reported: precision 3/4, recall 3/4.
    got = synth.score(np.array([[0, 1], [2, 1], [3, 2], [3, 4]]), truth, threshold=0.6)
    assert (got["precision"], got["recall"]) == (pytest.approx(3 / 4), pytest.approx(3 / 4))
    empty = synth.score([], truth)
    assert (empty["precision"], empty["recall"], empty["f1"], empty["loose"]) == (
        1.0,
        0.0,
        0.0,
        1.0,
    )
    with pytest.raises(ValueError, match=r"\[0, 5\)"):
        synth.score([(0, 5)], truth)


def test_load_truth_and_score_on_a_generated_corpus(small: synth.SynthCorpus) -> None:
    ids, _ = read_corpus(small.jsonl)
    truth = synth.load_truth(small.truth, ids)
    _, rows = read_truth(small.truth)
    strong = [(int(a[1:]), int(b[1:])) for a, b, j in rows if float(j) >= 0.8]
    assert synth.score(strong, truth) == {
        "precision": 1.0,
        "recall": 1.0,
        "f1": 1.0,
        "loose": 1.0,
        "reported": len(strong),
        "truth": len(strong),
    }
    half = strong[::2]
    got = synth.score(half, truth)
    assert got["recall"] == pytest.approx(len(half) / len(strong))
    with pytest.raises(ValueError, match="not a pair of known ids"):
        synth.load_truth(small.truth, ids[:10])


def test_cli_writes_the_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        synth.main(
            ["300", str(tmp_path / "out"), "--seed", "2", "--source", str(SOURCE), "--stats"]
        )
        == 0
    )
    corpus = tmp_path / "out" / "corpus-300-s2.jsonl"
    truth = tmp_path / "out" / "truth-300-s2.tsv.gz"
    out = capsys.readouterr().out
    assert str(corpus) in out
    assert len(read_corpus(corpus)[1]) == 300
    header, rows = read_truth(truth)
    assert header == ["id_a", "id_b", "jaccard"]
    # --stats: a table whose counts are the files'.
    assert "| documents | 300 |" in out
    assert f"| truth pairs, Jaccard >= 0.5 | {len(rows):,} |" in out
    assert f"| truth pairs, Jaccard >= 0.8 | {sum(float(j) >= 0.8 for _, _, j in rows):,} |" in out
    assert (
        synth.generate(300, tmp_path / "out", seed=2, source=SOURCE).jsonl.read_bytes()
        == corpus.read_bytes()
    )


@pytest.mark.parametrize(
    "argv, message",
    [
        (["0", "OUT"], "N must be a positive number"),
        (["ten", "OUT"], "invalid int value"),
        (["10", "OUT", "--jobs", "0"], "--jobs must be at least 1"),
        (["10", "OUT", "--source", "MISSING"], "no such file"),
        (["10", "FILE"], "is not a folder"),
    ],
)
def test_cli_bad_input(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "FILE").write_text("x")
    argv = [str(tmp_path / a) if a in ("OUT", "FILE", "MISSING") else a for a in argv]
    if "--source" not in argv:
        argv += ["--source", str(SOURCE)]
    with pytest.raises(SystemExit) as exit:
        synth.main(argv)
    assert exit.value.code == 2
    assert message in capsys.readouterr().err


def test_bad_source_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "one two three four"}\n{"title": "no text"}\n')
    with pytest.raises(SystemExit) as exit:
        synth.main(["10", str(tmp_path / "out"), "--source", str(bad)])
    assert exit.value.code == 2
    assert "bad.jsonl:2: expected a JSON object with a text field" in capsys.readouterr().err
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_exact_truth_finds_every_similar_pair_of_a_corpus() -> None:
    _, texts = read_corpus_gz(SOURCE)
    texts = texts[:800]
    loose = similar_pairs(texts, 0.5)
    for threshold in (0.5, 0.8):
        truth = synth.exact_truth(texts, threshold)
        expected = {pair: j for pair, j in loose.items() if j >= threshold}
        rows = np.column_stack(np.divmod(truth.keys, len(texts)))
        assert {(int(a), int(b)): j for (a, b), j in zip(rows, truth.jaccard)} == pytest.approx(
            expected
        ), threshold
        assert len(expected) > 100
    # Texts with few shingles, where the prefix is the whole set; a pair with one shared of three.
    small = ["a b c d", "a b c d e", "x y", "x y", "q r s", "q r s t u v w"]
    truth = synth.exact_truth(small, 0.2)
    assert dict(zip(truth.keys.tolist(), truth.jaccard.tolist())) == pytest.approx(
        {0 * 6 + 1: 2 / 3, 2 * 6 + 3: 1.0, 4 * 6 + 5: 1 / 5}
    )
    assert synth.exact_truth(small, 1.0).keys.tolist() == [2 * 6 + 3]


def read_corpus_gz(path: Path) -> tuple[list[str], list[str]]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        docs = [json.loads(line) for line in f]
    return [d["id"] for d in docs], [d["text"] for d in docs]


@pytest.mark.parametrize("script", ["quality.py", "bench_dedup.py"])
def test_quality_benchmarks_run_from_a_clone_without_shared_data(
    script: str, tmp_path: Path
) -> None:
    import subprocess

    args = ["--configs", "default"] if script == "quality.py" else ["--peers", ""]
    done = subprocess.run(
        [sys.executable, str(ROOT / "benches" / script), "--data", str(tmp_path / "absent"), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    notes = [line for line in done.stderr.splitlines() if line.strip()]
    assert notes == [
        f"no Debian corpus in {tmp_path / 'absent'}: using the debian-sample.jsonl.gz that ships with neardup "
        "(3,000 documents), its truth computed exactly now; --data DIR for the full corpus"
    ]
    assert (
        "3000 documents, 894 truth pairs" in done.stdout
        or "3,000 documents, 1.4 MB of JSONL; truth: 894 pairs" in done.stdout
    )


def test_score_of_a_dedup_result_by_hand() -> None:
    # Six documents; truth at 0.8: (0,1) 0.9, (0,2) 0.8, (3,4) 0.85; (1,5) is 0.6 only.
    truth = synth.Truth.from_pairs(6, [(0, 1, 0.9), (0, 2, 0.8), (3, 4, 0.85), (1, 5, 0.6)])
    # Documents with an earlier one at >= 0.8: 1, 2, 4 (to_remove = 3).
    # The result removes 1 (for 0, right), 5 (for 1? no: 1 is removed; for 0, and (0,5) is not
    # in the truth: wrong) and keeps 2, 3, 4: removed 2, precision 1/2, recall 1/3.
    got = synth.score(None, truth, kept_row=[0, 0, 2, 3, 4, 0])
    assert (got["removed"], got["to_remove"]) == (2, 3)
    assert got["removal_precision"] == pytest.approx(1 / 2)
    assert got["removal_recall"] == pytest.approx(1 / 3)
    # The removals are the reported pairs: (0,1) hit, (0,5) miss of the three strong pairs.
    assert (got["reported"], got["precision"], got["recall"]) == (
        2,
        pytest.approx(1 / 2),
        pytest.approx(1 / 3),
    )
    # From the texts, exactly: document 5 is a copy of 0 up to case, so its removal is right there
    # (the texts decide, not the truth given); 1 differs from 0 by one of five shingles (J = 4/6 < 0.8).
    texts = ["a b c d e f g", "a b c d e f x", "u v w", "p q r", "p q r s", "A B C D E F G!"]
    got = synth.score(None, truth, kept_row=[0, 0, 2, 3, 4, 0], texts=texts)
    assert got["removal_precision"] == pytest.approx(1 / 2)  # 5 right, 1 wrong (4/6)
    got = synth.score(
        None, truth, kept_row=[0, 0, 2, 3, 4, 0], texts=texts, shingler=synth.neardup_shingles
    )
    assert got["removal_precision"] == pytest.approx(1 / 2)
    # Nothing removed: precision 1, recall 0.
    none = synth.score(None, truth, kept_row=list(range(6)))
    assert (none["removed"], none["removal_precision"], none["removal_recall"]) == (0, 1.0, 0.0)
    with pytest.raises(ValueError, match="removed document"):
        synth.score(None, truth, kept_row=[0, 0, 1, 3, 4, 5])  # 2 points to 1, itself removed
    with pytest.raises(ValueError, match="6 rows"):
        synth.score(None, truth, kept_row=[0, 0])


def test_exact_truth_against_brute_force() -> None:
    # Texts over a tiny vocabulary, many of them edits of earlier ones, some copies, some without
    # words: every pair's Jaccard by brute force on the string sets must be what exact_truth says.
    rng = __import__("random").Random(7)
    words = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"]
    texts: list[str] = []
    for _ in range(300):
        if texts and rng.random() < 0.45:
            w = rng.choice(texts).split()
            for _ in range(rng.randint(0, 3)):
                if w:
                    w[rng.randrange(len(w))] = rng.choice(words)
            texts.append(" ".join(w))
        else:
            texts.append(
                " ".join(rng.choice(words) for _ in range(rng.randint(0, 12)))
                + rng.choice(["", "!", " ?"])
            )
    for shingler in (synth.shingles, synth.neardup_shingles):
        sets = [shingler(t) for t in texts]
        for t in (0.3, 0.5, 0.8, 1.0):
            truth = synth.exact_truth(texts, t, shingler)
            brute = {}
            for i, j in combinations(range(len(texts)), 2):
                jac = synth.jaccard(sets[i], sets[j])
                if jac >= t:
                    brute[i * len(texts) + j] = jac
            got = dict(zip(truth.keys.tolist(), truth.jaccard.tolist()))
            assert got.keys() == brute.keys()
            assert all(got[k] == pytest.approx(brute[k], abs=1e-12) for k in got)
            assert len(brute) > 100  # copies and edits: the sample holds pairs at every threshold


def test_neardup_shingles() -> None:
    # neardup's normalization: NFKC and case folding; its words split on underscores and keep digits.
    assert synth.neardup_shingles("The ﬁne CAT_sat, Straße") == {
        "the fine cat",
        "fine cat sat",
        "cat sat strasse",
    }
    assert synth.neardup_shingles("Hello,  World") == {"hello world"}
    # Texts without words: copies of each other when normalized alike, of nothing else.
    assert synth.neardup_shingles("!!") == synth.neardup_shingles("!!")
    assert synth.neardup_shingles("") != synth.neardup_shingles("!!")
    assert synth.jaccard(synth.neardup_shingles(""), synth.neardup_shingles("x")) == 0.0
