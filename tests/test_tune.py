"""`neardup.tune` and `neardup tune`: pair counts against brute force, the sample, the Jaccard of
sampled pairs against an independent set computation, the recommendation rules on hand-worked
tables, the verified mode (recall, cost and precision by documents) against a brute-force
computation over every pair on corpora swamped by copies and empty files, and the command end
to end."""

from __future__ import annotations

import json
import math
import random
import re
import statistics
import struct
import sys
import unicodedata
from pathlib import Path

import numpy as np
import pytest

import neardup
import reference
from brute import distances, family_corpus
from command import run
from neardup.tune import precision_within, recall_within, recommend, recommend_recall, sample_pairs

# Families of texts a few words apart, plus exact copies (several documents per fingerprint).
BASE = family_corpus(families=16, seed=11)
DOCS = BASE + [BASE[0]] * 3 + [BASE[5], BASE[7], BASE[7]]
FPS = neardup.Simhasher().fingerprint_many(DOCS)
DIST = distances(FPS)
MAX_K = 10


def brute_pairs_at(d: int) -> set[tuple[int, int]]:
    i, j = np.nonzero(np.triu(d == DIST, 1))
    return set(zip(i.tolist(), j.tolist()))


def words(text: str) -> list[str]:
    """The test's own tokens: NFKC, case folded, runs of letters and digits, each CJK ideograph
    on its own (the corpus has no marks, underscores or kana)."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return re.findall(r"[\u4e00-\u9fff]|[^\W_\u4e00-\u9fff]+", text)


def jaccard(x: str, y: str, n: int) -> float:
    def grams(tokens: list[str]) -> set[tuple[str, ...]]:
        if len(tokens) < n:
            return {tuple(tokens)}
        return {tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)}

    a, b = grams(words(x)), grams(words(y))
    return len(a & b) / len(a | b)


def text_pairs_at(docs: list[str], fps: np.ndarray, d: int) -> set[tuple[int, int]]:
    """Pairs of distinct texts with words at distance d, each text standing as its first row:
    copies by the oracle's normalization, words by its tokens."""
    first: dict[str, int] = {}
    for row, text in enumerate(docs):
        first.setdefault(reference.normalize(text), row)
    texts = sorted(r for t, r in first.items() if reference.tokens(t))
    dist = distances(fps)
    return {(x, y) for i, x in enumerate(texts) for y in texts[i + 1 :] if dist[x, y] == d}


def test_the_corpus_has_pairs_at_many_distances_and_copies():
    counts = [len(brute_pairs_at(d)) for d in range(MAX_K + 1)]
    assert counts[0] >= 6 and sum(c > 0 for c in counts) >= 6, counts


def test_pair_counts_per_distance_equal_brute_force():
    result = neardup.tune(DOCS, max_k=MAX_K, sample=5, verify=False)
    expected = [len(brute_pairs_at(d)) for d in range(MAX_K + 1)]
    assert [row.pairs for row in result.rows] == expected
    assert [row.pairs_within for row in result.rows] == np.cumsum(expected).tolist()
    assert [row.sampled for row in result.rows] == [min(5, c) for c in expected]
    assert result.documents == len(DOCS) and [row.k for row in result.rows] == list(
        range(MAX_K + 1)
    )


def test_verified_pairs_are_between_distinct_texts_and_count_brute_force():
    result = neardup.tune(DOCS, max_k=MAX_K, sample=5)
    expected = [len(text_pairs_at(DOCS, FPS, d)) for d in range(MAX_K + 1)]
    assert [row.pairs for row in result.rows] == expected
    assert [row.sampled for row in result.rows] == [min(5, c) for c in expected]
    assert (
        result.texts == len(set(BASE))
        and result.copies == len(DOCS) - len(set(BASE))
        and result.featureless == 0
    )
    population = set().union(*(text_pairs_at(DOCS, FPS, d) for d in range(MAX_K + 1)))
    sampled = set(zip(result.sampled.a.tolist(), result.sampled.b.tolist()))
    assert sampled <= population and len(sampled) == sum(row.sampled for row in result.rows)


def test_a_sample_as_large_as_the_population_takes_every_pair_once():
    sampled = sample_pairs(FPS, MAX_K, sample=10_000)
    for d in range(MAX_K + 1):
        at = sampled.distance == d
        got = list(zip(sampled.a[at].tolist(), sampled.b[at].tolist()))
        assert len(got) == len(set(got)) and set(got) == brute_pairs_at(d)


def test_a_smaller_sample_draws_distinct_pairs_at_their_distance_and_follows_the_seed():
    draws = [sample_pairs(FPS, MAX_K, sample=3, seed=seed) for seed in range(6)]
    for sampled in draws:
        for d in range(MAX_K + 1):
            at = sampled.distance == d
            got = list(zip(sampled.a[at].tolist(), sampled.b[at].tolist()))
            assert len(got) == min(3, len(brute_pairs_at(d))) == len(set(got))
            assert set(got) <= brute_pairs_at(d)
    again = sample_pairs(FPS, MAX_K, sample=3, seed=0)
    assert again.a.tolist() == draws[0].a.tolist() and again.b.tolist() == draws[0].b.tolist()
    assert len({(s.a.tobytes(), s.b.tobytes()) for s in draws}) > 1


def test_each_document_pair_is_equally_likely_whatever_its_fingerprints_copies():
    # A four times, B and C once; A-B and B-C one bit apart, A-C two. At distance 1 the four
    # A-B pairs and the one B-C pair are equally likely (drawing a pair of fingerprints first
    # would pick B-C half the time).
    a, b, c = 0b00, 0b01, 0b11
    fps = np.array([a, b, a, c, a, a], dtype=np.uint64)
    copies = [0, 2, 4, 5]
    population = {
        0: {(x, y) for x in copies for y in copies if x < y},
        1: {(min(x, 1), max(x, 1)) for x in copies} | {(1, 3)},
        2: {(min(x, 3), max(x, 3)) for x in copies},
    }
    draws = 1200
    seen: dict[int, dict[tuple[int, int], int]] = {d: {} for d in population}
    for seed in range(draws):
        sampled = sample_pairs(
            fps, 8, sample=1, seed=seed
        )  # max_k=8: the quickest search plan for 6 rows
        for d, x, y in zip(sampled.distance.tolist(), sampled.a.tolist(), sampled.b.tolist()):
            seen[d][(x, y)] = seen[d].get((x, y), 0) + 1
    for d, pairs in population.items():
        assert set(seen[d]) == pairs
        p = 1 / len(pairs)
        spread = 5 * math.sqrt(draws * p * (1 - p))  # five standard deviations
        for pair, count in seen[d].items():
            assert abs(count - draws * p) < spread, (d, pair, count, draws * p)


def test_jaccard_of_sampled_pairs_equals_an_independent_set_computation():
    result = neardup.tune(DOCS, max_k=MAX_K, sample=4, seed=3, shingles=(1, 2, 4), verify=False)
    sampled = result.sampled
    assert sorted(sampled.jaccard) == [1, 2, 3, 4]
    pairs = list(zip(sampled.a.tolist(), sampled.b.tolist()))
    assert len(pairs) > 20
    for n, values in sampled.jaccard.items():
        assert values.tolist() == [jaccard(DOCS[x], DOCS[y], n) for x, y in pairs]
    # The curve of the table from those Jaccards (3-word shingles, threshold 0.8).
    mine = [
        [
            jaccard(DOCS[x], DOCS[y], 3)
            for (x, y), d in zip(pairs, sampled.distance.tolist())
            if d == k
        ]
        for k in range(MAX_K + 1)
    ]
    counts = [len(brute_pairs_at(k)) for k in range(MAX_K + 1)]
    hits = 0.0
    for row, values, count in zip(result.rows, mine, counts):
        if not values:
            assert math.isnan(row.precision) and math.isnan(row.mean_jaccard)
            continue
        assert row.mean_jaccard == pytest.approx(sum(values) / len(values))
        assert row.median_jaccard == pytest.approx(statistics.median(values))
        assert row.precision == pytest.approx(sum(v >= 0.8 for v in values) / len(values))
        hits += count * row.precision
        assert row.precision_within == pytest.approx(hits / sum(counts[: row.k + 1]))
        assert row.duplicates_within == pytest.approx(hits)


def test_recommend_follows_the_rule_on_a_hand_worked_table():
    # Pairs at k = 0..3 and the precision measured there (none at 1).
    pairs, precision = [10, 0, 30, 60], [1.0, math.nan, 0.9, 0.5]
    # Within k: 10/10; 10/10; (10 + 27)/40 = 0.925; (37 + 30)/100 = 0.67.
    assert precision_within(pairs, precision).tolist() == pytest.approx([1.0, 1.0, 0.925, 0.67])
    assert recommend(pairs, precision, 0.9) == 2
    assert (
        recommend(pairs, precision, 0.95) == 1
    )  # the largest k, even one without pairs of its own
    assert recommend(pairs, precision, 0.6) == 3
    assert recommend(pairs, precision, 1.0) == 1
    # Not monotone: k = 0 misses the target, larger k reach it. Within: 0.5, 0.75, 5/6.
    assert recommend([10, 10, 10], [0.5, 1.0, 1.0], 0.8) == 2
    assert recommend([10, 10, 10], [0.5, 0.6, 0.7], 0.8) is None
    assert recommend([0, 0, 0], [math.nan] * 3, 0.5) is None
    assert np.isnan(precision_within([0, 4], [math.nan, 0.25])[0])


def test_recommend_recall_follows_the_rule_on_a_hand_worked_table():
    # Near-duplicates at k = 0..4: 10, 0, 15, 4, 1 (pairs x precision): 30 in all.
    pairs, precision = [10, 0, 30, 40, 100], [1.0, math.nan, 0.5, 0.1, 0.01]
    assert recall_within(pairs, precision).tolist() == pytest.approx(
        [1 / 3, 1 / 3, 25 / 30, 29 / 30, 1.0]
    )
    assert recommend_recall(pairs, precision, 0.99) == 4
    assert recommend_recall(pairs, precision, 0.95) == 3
    assert recommend_recall(pairs, precision, 0.8) == 2
    assert recommend_recall(pairs, precision, 0.3) == 0  # the smallest k, not the largest
    assert recommend_recall(pairs, precision, 1.0) == 4
    assert (
        recommend_recall([5, 5], [0.0, 0.0], 0.5) is None
        and np.isnan(recall_within([5, 5], [0.0, 0.0])).all()
    )
    assert recommend_recall([0, 7], [math.nan, 1.0], 0.99) == 1


def sampled_precision(result, n: int) -> list[float]:
    """At each distance, the share of the sampled pairs whose n-word Jaccard is >= 0.8."""
    return [
        float(np.mean(result.sampled.jaccard[n][result.sampled.distance == d] >= 0.8))
        if row.pairs
        else math.nan
        for d, row in enumerate(result.rows)
    ]


def test_the_result_recommends_by_its_own_curve_and_for_each_shingle_size():
    result = neardup.tune(DOCS, max_k=MAX_K, sample=20, target_precision=0.75, verify=False)
    pairs = [row.pairs for row in result.rows]
    for n, within in result.precision_within_by_shingle.items():
        precision = sampled_precision(result, n)
        assert within == pytest.approx(precision_within(pairs, precision).tolist(), nan_ok=True)
        assert result.recommended_by_shingle[n] == recommend(pairs, precision, 0.75)
    assert result.recommended_k == result.recommended_by_shingle[3]
    text = str(result)
    assert f"recommended k = {result.recommended_k}" in text and "by shingle size: 1 word:" in text
    frame = result.to_pandas()
    assert frame["pairs"].tolist() == pairs and "precision_within_1" in frame.columns
    assert json.loads(json.dumps(result.as_dict()))["recommended_k"] == result.recommended_k


def test_the_verified_result_recommends_by_its_own_recall_for_each_shingle_size():
    result = neardup.tune(DOCS, max_k=MAX_K, sample=4, target_recall=0.9)
    pairs = [row.pairs for row in result.rows]
    for n, recall in result.recall_within_by_shingle.items():
        precision = sampled_precision(result, n)
        assert recall == pytest.approx(recall_within(pairs, precision).tolist(), nan_ok=True)
        assert result.recommended_by_shingle[n] == recommend_recall(pairs, precision, 0.9)
        if n == 3:
            assert [row.pair_precision for row in result.rows] == pytest.approx(
                precision, nan_ok=True
            )
    assert result.recommended_k == result.recommended_by_shingle[3] is not None
    row = result.rows[result.recommended_k]
    assert row.recall_within >= 0.9 and (row.k == 0 or result.rows[row.k - 1].recall_within < 0.9)
    assert row.candidates_per_duplicate == pytest.approx(row.pairs_within / row.duplicates_within)
    assert 0 < row.recall_se < 0.5  # 4 pairs of more at a distance: uncertain
    assert f"recommended k = {row.k}: the smallest k that keeps >= 0.9" in str(result)
    frame = result.to_pandas()
    assert frame["pairs"].tolist() == pairs and "recall_within_1" in frame.columns
    report = json.loads(json.dumps(result.as_dict()))
    assert (
        report["verify"] is True
        and report["target_recall"] == 0.9
        and report["target_precision"] is None
    )


def test_when_no_k_qualifies_the_result_says_so():
    unrelated = ["alpha beta gamma delta", "epsilon zeta eta theta", "iota kappa lambda mu"]
    result = neardup.tune(unrelated, max_k=2, verify=False)
    assert result.recommended_k is None and "no pair of documents within k = 2" in str(result)
    verified = neardup.tune(unrelated + ["", "", "?!"], max_k=2)
    assert (
        verified.recommended_k is None
        and "no two distinct texts with words within k = 2" in str(verified)
    )
    # Pairs within max_k, none of them a near-duplicate: reordered words, one fingerprint.
    shuffled = neardup.tune(
        [
            "red green blue cyan magenta",
            "magenta cyan blue green red",
            "blue red magenta green cyan",
        ],
        max_k=2,
    )
    assert shuffled.rows[0].pairs == 3 and shuffled.recommended_k is None
    assert "none of the 3 pairs sampled within k = 2 is a near-duplicate" in str(shuffled)
    loose = neardup.tune(DOCS, max_k=MAX_K, threshold=1.0, target_precision=1.0, verify=False)
    best = max(r.precision_within for r in loose.rows if not math.isnan(r.precision_within))
    if loose.recommended_k is None:
        assert f"no k in 0..{MAX_K} reaches" in str(loose) and f"({best:.3f})" in str(loose)
    else:
        assert best == 1.0


def test_jaccard_sees_the_text_as_the_hasher_normalizes_it():
    names = [
        "alpha",
        "bravo",
        "charlie",
        "delta",
        "echo",
        "foxtrot",
        "golf",
        "hotel",
        "india",
        "juliett",
        "kilo",
        "lima",
        "mike",
        "november",
        "oscar",
        "papa",
        "quebec",
        "romeo",
        "sierra",
        "tango",
        "uniform",
        "victor",
        "whiskey",
        "xray",
        "yankee",
        "zulu",
        "one",
        "two",
        "three",
        "four",
    ]
    docs = [
        " ".join(names),
        " ".join(["ALPHA"] + names[1:]),
    ]  # one word of 30 differs, in case only
    folded = neardup.tune(docs, max_k=16, shingles=[1], verify=False)
    assert folded.rows[0].pairs == 1 and folded.sampled.jaccard[1].tolist() == [1.0]
    cased = neardup.tune(
        docs, max_k=16, shingles=[1], hasher=neardup.Simhasher(casefold=False), verify=False
    )
    assert cased.sampled.jaccard[1].tolist() == [29 / 31]  # 29 shared words of 31
    # Verified: folded, the two are one text (copies); not folded, two texts 29/31 alike.
    folded = neardup.tune(docs, max_k=16, shingles=[1])
    assert (folded.texts, folded.copies, sum(row.pairs for row in folded.rows)) == (1, 1, 0)
    cased = neardup.tune(docs, max_k=16, shingles=[1], hasher=neardup.Simhasher(casefold=False))
    assert cased.texts == 2 and cased.sampled.jaccard[1].tolist() == [29 / 31]


def test_tune_takes_what_dedup_takes():
    pd = pytest.importorskip("pandas")
    expected = neardup.tune(DOCS, max_k=4, sample=3, seed=1)
    for docs, options in (
        ((d for d in DOCS), {}),
        ([{"body": d} for d in DOCS], {"text_field": "body"}),
        (pd.DataFrame({"body": DOCS}), {"text_field": "body"}),
        (pd.Series(DOCS), {}),
    ):
        got = neardup.tune(docs, max_k=4, sample=3, seed=1, **options)
        assert got.as_dict() == expected.as_dict()


@pytest.mark.parametrize(
    "options, error",
    [
        ({"max_k": 17}, ValueError),
        ({"sample": 0}, ValueError),
        ({"target_precision": 0, "verify": False}, ValueError),
        ({"target_precision": 1.5, "verify": False}, ValueError),
        ({"threshold": 0.0}, ValueError),
        ({"shingle": 0}, ValueError),
        ({"shingles": [1, 0]}, ValueError),
        ({"shingles": "12"}, TypeError),
        ({"hasher": "word"}, TypeError),
        ({"target_precision": "high", "verify": False}, TypeError),
        ({"target_recall": 0}, ValueError),
        ({"target_recall": 1.01}, ValueError),
        ({"target_recall": "all"}, TypeError),
        ({"verify": "no"}, TypeError),
        ({"target_precision": 0.9}, ValueError),
        ({"target_recall": 0.9, "verify": False}, ValueError),
    ],
)
def test_tune_refuses_bad_arguments(options, error):
    with pytest.raises(error):
        neardup.tune(DOCS, **options)
    with pytest.raises(TypeError, match="single str"):
        neardup.tune("one text")


# -- the command -------------------------------------------------------------------------------------


def write_corpus(tmp_path: Path) -> Path:
    src = tmp_path / "corpus.jsonl"
    src.write_text(
        "".join(
            json.dumps({"id": f"d{i}", "text": t}, ensure_ascii=False) + "\n"
            for i, t in enumerate(DOCS)
        ),
        encoding="utf-8",
    )
    return src


def test_command_prints_the_table_and_the_recommendation(tmp_path, capsys):
    for flags, pairs_at in (
        ([], lambda k: text_pairs_at(DOCS, FPS, k)),
        (["--no-verify"], brute_pairs_at),
    ):
        code, out, _ = run(
            capsys,
            "tune",
            "--candidates",
            "fingerprint",
            write_corpus(tmp_path),
            "--max-k",
            6,
            "--pairs",
            7,
            "--seed",
            2,
            *flags,
        )
        assert code == 0
        expected = neardup.tune(DOCS, max_k=6, sample=7, seed=2, verify=not flags)
        expected.command = True  # the command's messages name its options
        assert out.startswith(str(expected) + "\n")
        lines = out.splitlines()
        header = lines[1].split()
        assert header[:3] == ["k", "pairs", "at"]
        for k in range(7):
            cells = lines[2 + k].split()
            assert cells[0] == str(k) and int(cells[1].replace(",", "")) == len(pairs_at(k))
        assert "recommended k" in out


def test_command_json_is_the_curve_of_the_python_api(tmp_path, capsys):
    def report_of(*flags) -> dict:
        code, out, _ = run(
            capsys,
            "tune",
            "--candidates",
            "fingerprint",
            write_corpus(tmp_path),
            "--json",
            "--max-k",
            MAX_K,
            "--pairs",
            9,
            *flags,
        )
        assert code == 0
        return json.loads(out)

    report = report_of("--no-verify", "--target-precision", 0.8, "--shingles", "1,5")
    assert report["documents"] == len(DOCS) and report["max_k"] == MAX_K
    assert [row["pairs"] for row in report["rows"]] == [
        len(brute_pairs_at(d)) for d in range(MAX_K + 1)
    ]
    assert sorted(report["recommended_by_ngram"]) == ["1", "3", "5"]
    expected = neardup.tune(
        DOCS, max_k=MAX_K, sample=9, target_precision=0.8, shingles=(1, 5), verify=False
    ).as_dict()
    assert {k: report[k] for k in expected} == expected and report["verify"] is False
    report = report_of("--target-recall", 0.95)
    expected = neardup.tune(DOCS, max_k=MAX_K, sample=9, target_recall=0.95).as_dict()
    assert (
        {k: report[k] for k in expected} == expected
        and report["verify"] is True
        and report["texts"] == len(set(BASE))
    )


@pytest.mark.parametrize("kind", ["csv", "parquet", "txt"])
def test_command_fetches_the_sampled_texts_from_every_format(tmp_path, capsys, kind):
    if kind == "parquet":
        pa = pytest.importorskip("pyarrow")
        import pyarrow.parquet as pq

        src = tmp_path / "corpus.parquet"
        pq.write_table(pa.table({"text": DOCS}), src)
    elif kind == "csv":
        import csv

        src = tmp_path / "corpus.csv"
        with open(src, "w", newline="", encoding="utf-8") as f:
            csv.writer(f).writerows([["text"]] + [[t] for t in DOCS])
    else:
        src = tmp_path / "corpus"
        src.mkdir()
        for i, t in enumerate(DOCS):
            (src / f"{i:03d}.txt").write_text(t, encoding="utf-8")
    code, out, _ = run(
        capsys, "tune", "--candidates", "fingerprint", src, "--json", "--max-k", 6, "--pairs", 6
    )
    assert code == 0
    assert json.loads(out)["rows"] == neardup.tune(DOCS, max_k=6, sample=6).as_dict()["rows"]


def test_command_reads_stdin_twice_through_its_copy(tmp_path, capsys, monkeypatch):
    import io

    data = write_corpus(tmp_path).read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    code, out, _ = run(capsys, "tune", "--candidates", "fingerprint", "-", "--json", "--max-k", 4)
    assert code == 0
    assert json.loads(out)["rows"] == neardup.tune(DOCS, max_k=4).as_dict()["rows"]


def test_command_plot_writes_a_png(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    png = tmp_path / "curve.png"
    code, out, _ = run(
        capsys,
        "tune",
        "--candidates",
        "fingerprint",
        write_corpus(tmp_path),
        "--max-k",
        8,
        "--plot",
        png,
    )
    assert code == 0 and f"wrote {png}" in out
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (800, 650) and len(data) > 20_000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus.jsonl", "curve.png"]


def test_command_plot_without_matplotlib_names_the_extra(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    code, _, err = run(
        capsys,
        "tune",
        "--candidates",
        "fingerprint",
        write_corpus(tmp_path),
        "--plot",
        tmp_path / "curve.png",
    )
    assert code == 2 and "neardup[plot]" in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus.jsonl"]


def test_command_stops_at_a_malformed_line_with_file_line_and_status_2(tmp_path, capsys):
    src = tmp_path / "bad.jsonl"
    src.write_text(
        '{"text": "one"}\n{"text": "two"}\n{"text": "three"\n{"text": "four"}\n', encoding="utf-8"
    )
    code, out, err = run(
        capsys, "tune", "--candidates", "fingerprint", src, "--plot", tmp_path / "curve.png"
    )
    assert code == 2 and f"{src}:3:" in err and out == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl"]


def test_command_skips_bad_records_when_asked_and_lists_them(tmp_path, capsys):
    src = tmp_path / "some-bad.jsonl"
    lines = [json.dumps({"text": t}) for t in DOCS[:20]]
    lines.insert(4, '{"text": 5}')
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, out, _ = run(
        capsys,
        "tune",
        "--candidates",
        "fingerprint",
        src,
        "--on-error",
        "skip",
        "--json",
        "--max-k",
        6,
    )
    assert code == 0
    report = json.loads(out)
    assert report["errors"] == [f"{src}:5: field 'text' is a number, expected a string"]
    assert report["rows"] == neardup.tune(DOCS[:20], max_k=6).as_dict()["rows"]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--no-verify", "--target-precision", "0"], "--target-precision"),
        (["--no-verify", "--target-precision", "1.5"], "--target-precision"),
        (["--target-precision", "0.9"], "--target-precision is the rule of --no-verify"),
        (
            ["--no-verify", "--target-recall", "0.9"],
            "--target-recall is the rule of the verified mode",
        ),
        (["--target-recall", "0"], "--target-recall"),
        (["--threshold", "-0.1"], "--threshold"),
        (["--max-k", "17"], "--max-k"),
        (["--jaccard-ngrams", "1,x"], "--jaccard-ngrams"),
        (["--plot", "curve.svg"], "--plot"),
    ],
)
def test_command_refuses_bad_options_with_a_usage_error(tmp_path, capsys, args, message):
    code, out, err = run(
        capsys, "tune", "--candidates", "fingerprint", write_corpus(tmp_path), *args
    )
    assert code == 2 and message in err and "Traceback" not in err and out == ""


# -- the verified mode against brute force over every pair ---------------------------------------


def swamped_corpus(seed: int = 5) -> list[str]:
    """What a code corpus looks like: hundreds of empty files and identical `__init__.py`-like
    texts, short snippets of the same words in other orders (one fingerprint, little shared
    text), and a few families of long texts a few words apart (some near-duplicates, some not)."""
    rng = random.Random(seed)
    docs: list[str] = []
    docs += (
        [""] * 150 + ["\n"] * 40 + ["#" * (i % 7 + 1) + "\n" for i in range(30)]
    )  # no words; 7 distinct ones
    docs += (
        ["from .core import *\n"] * 160
        + ['"""The package."""\n'] * 90
        + ["From .core import *\n"] * 20
    )
    imports = [
        "import os",
        "import sys",
        "import re",
        "import json",
        "from typing import Any",
        "import math",
    ]
    for _ in range(40):
        rng.shuffle(imports)
        docs.append("\n".join(imports) + "\n")
    vocabulary = [f"w{i}" for i in range(400)]
    for _ in range(6):
        base = rng.choices(vocabulary, k=70)
        docs.append(" ".join(base))
        for changes in (1, 2, 3, 5, 8, 12):
            words = list(base)
            for at in rng.sample(range(len(words)), changes):
                words[at] = rng.choice(vocabulary)
            docs.append(" ".join(words))
    rng.shuffle(docs)
    return docs


def grams(text: str, n: int) -> set[str]:
    return set(reference.word_features(reference.normalize(text), n))


def brute_verified(
    docs: list[str], max_k: int, threshold: float = 0.8, n: int = 3, target: float = 0.99
) -> dict:
    """Every figure of the verified mode, exactly, from every pair of distinct texts with words."""
    fps = neardup.Simhasher().fingerprint_many(docs)
    dist = distances(fps)
    first: dict[str, int] = {}
    for row, text in enumerate(docs):
        first.setdefault(reference.normalize(text), row)
    texts = sorted(r for t, r in first.items() if reference.tokens(t))
    featureless = sum(not reference.tokens(reference.normalize(t)) for t in docs)
    sets = {r: grams(docs[r], n) for r in texts}
    pairs = [
        (x, y, int(dist[x, y]), len(sets[x] & sets[y]) / len(sets[x] | sets[y]) >= threshold)
        for i, x in enumerate(texts)
        for y in texts[i + 1 :]
        if dist[x, y] <= max_k
    ]
    width = max_k + 1
    count = [sum(1 for p in pairs if p[2] == d) for d in range(width)]
    true = [sum(1 for p in pairs if p[2] == d and p[3]) for d in range(width)]
    found = np.cumsum(true)
    recall = (found / found[-1]).tolist() if found[-1] else [math.nan] * width

    def by_documents(chosen: list[tuple[int, int, int, bool]]) -> float:
        share: dict[int, list[bool]] = {}
        for x, y, _, t in chosen:
            share.setdefault(x, []).append(t)
            share.setdefault(y, []).append(t)
        return statistics.fmean(sum(v) / len(v) for v in share.values()) if share else math.nan

    return {
        "texts": len(texts),
        "featureless": featureless,
        "copies": len(docs) - featureless - len(texts),
        "pairs": count,
        "true": true,
        "recall": recall,
        "recommended": next((k for k in range(width) if recall[k] >= target), None)
        if found[-1]
        else None,
        "precision_at": [by_documents([p for p in pairs if p[2] == d]) for d in range(width)],
        "precision_within": [by_documents([p for p in pairs if p[2] <= k]) for k in range(width)],
        "texts_within": [len({r for p in pairs if p[2] <= k for r in p[:2]}) for k in range(width)],
        "pair_precision_within": [
            sum(true[: k + 1]) / sum(count[: k + 1]) if sum(count[: k + 1]) else math.nan
            for k in range(width)
        ],
    }


def test_verified_tune_is_not_swamped_by_copies_and_empty_files():
    docs = swamped_corpus()
    max_k = 10
    expected = brute_verified(docs, max_k)
    result = neardup.tune(
        docs, max_k=max_k, sample=1_000_000
    )  # every pair: the estimates are exact
    assert (result.texts, result.copies, result.featureless) == (
        expected["texts"],
        expected["copies"],
        expected["featureless"],
    )
    assert result.featureless == 220 and result.copies > 250
    assert [row.pairs for row in result.rows] == expected["pairs"]
    assert [row.duplicates for row in result.rows] == pytest.approx(
        [float(t) if c else math.nan for t, c in zip(expected["true"], expected["pairs"])],
        nan_ok=True,
    )
    assert [row.recall_within for row in result.rows] == pytest.approx(expected["recall"])
    assert [row.recall_se for row in result.rows] == pytest.approx(
        [0.0] * (max_k + 1)
    )  # the whole population
    assert [row.precision for row in result.rows] == pytest.approx(
        expected["precision_at"], nan_ok=True
    )
    assert [row.precision_within for row in result.rows] == pytest.approx(
        expected["precision_within"], nan_ok=True
    )
    assert [row.texts_within for row in result.rows] == expected["texts_within"]
    assert result.recommended_k == expected["recommended"] is not None
    # The copies, the empty files and the reordered snippets do not make k look precise: most
    # texts with a candidate have no near-duplicate among them.
    assert expected["precision_within"][max_k] < 0.5 and expected["precision_at"][0] < 0.3
    # The fingerprint-only rule, over document pairs, is swamped by the copies: it takes the
    # largest k, whose pairs it counts as 90% precise.
    old = neardup.tune(docs, max_k=max_k, sample=1_000_000, verify=False)
    assert old.recommended_k == max_k and old.rows[max_k].precision_within > 0.9


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_recommended_k_is_the_smallest_with_the_target_recall_by_brute_force(seed):
    docs = family_corpus(families=12, seed=seed) + swamped_corpus(seed)[:120]
    for target in (0.99, 0.8, 0.5):
        expected = brute_verified(docs, 8, target=target)
        result = neardup.tune(docs, max_k=8, sample=1_000_000, target_recall=target)
        assert [row.recall_within for row in result.rows] == pytest.approx(
            expected["recall"], nan_ok=True
        )
        assert result.recommended_k == expected["recommended"]
        assert result.rows[-1].candidates_per_duplicate == pytest.approx(
            sum(expected["pairs"]) / sum(expected["true"])
        )


def test_a_sampled_estimate_is_within_its_stated_error():
    docs = family_corpus(families=40, seed=4) + swamped_corpus(4)
    expected = brute_verified(docs, 8)
    result = neardup.tune(docs, max_k=8, sample=40, seed=1)
    assert (
        result.rows[0].pairs > 10 * result.rows[0].sampled
        and max(row.recall_se for row in result.rows[:8]) < 0.5
    )
    for row, recall in zip(result.rows, expected["recall"]):
        if row.k < 8 and row.recall_within > 0:
            assert (
                row.recall_se > 0 and abs(row.recall_within - recall) <= 3 * row.recall_se + 1e-9
            ), (row, recall)


def test_the_advice_names_the_option_of_the_command_or_of_the_function(tmp_path, capsys):
    """The verdict's advice names what the reader types: --pairs and --max-k on the command line
    (--sample there is the shipped corpus), sample= and max_k= in Python."""
    corpus = write_corpus(tmp_path)
    # Near-duplicates still appear at the largest distance measured: look farther. Two pairs a
    # distance up to 3 leave the recall uncertain: measure more.
    for max_k, pairs, python, command in (
        (1, 1, "raise max_k=", "raise --max-k"),
        (3, 2, "raise sample=", "raise --pairs"),
    ):
        text = neardup.tune(DOCS, max_k=max_k, sample=pairs, seed=2).verdict()
        assert python in text and "--" not in text
        code, out, _ = run(
            capsys,
            "tune",
            "--candidates",
            "fingerprint",
            corpus,
            "--max-k",
            max_k,
            "--pairs",
            pairs,
            "--seed",
            2,
        )
        assert code == 0 and command in out and python not in out and "--sample" not in out
