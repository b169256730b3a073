"""Evidence you can trust at any scale: no removal decided by a chance agreement of hashes, the
reported Jaccard exact where it decides, no candidate pair dropped by a cap, misuse refused.
docs/evidence.md explains each; benches/bench_evidence.py runs the 2,000,000-text version."""

from __future__ import annotations

import collections
import csv
import json
from collections.abc import Sequence

import numpy as np
import pytest
import xxhash

import neardup
from command import run
from near_threshold import band_corpus, long_pair, pairs_within_k8, random_words
from neardup import _core, kernels
from neardup.digest import key_words
from neardup.hasher import digest_many
from neardup.pipeline import FirstPass
from neardup.verify import Sketches


def test_texts_whose_32_bit_shingle_hashes_agreed_are_not_near():
    # The pair the issue found: one shingle each, whose shingle hashes once agreed on 32 bits.
    assert neardup.jaccard("Tweetoscope", "PasswordReader tool") == 0.0
    result = neardup.dedup(["Tweetoscope", "PasswordReader tool"])
    assert result.n_removed == 0
    # The same words are still one shingle: Jaccard 1 (checks agree too), and a removal.
    assert neardup.jaccard("Tweetoscope", "tweetoscope!") == 1.0
    assert neardup.dedup(["Tweetoscope", "tweetoscope!"]).n_removed == 1


def test_checks_keep_chance_agreements_of_a_narrow_hash_from_removing():
    # The birthday mechanism, forced: 3,000 one-word texts whose shingle hashes are cut to 12
    # bits share them by the hundred. Stars over those hashes alone remove every text but one
    # of each value; with each shingle's check (a second 64-bit hash) none is removed.
    texts = random_words(3000, seed=1)
    first = FirstPass(neardup.Simhasher(), 3)
    first.digest(texts)
    first.finish()
    rows, starts, ends, hashes = first.sketches.parts()
    assert (rows == np.arange(len(texts))).all()
    assert ((ends - starts) == 2).all()  # one shingle and its check each
    narrow = hashes.copy()
    shingle = narrow < np.uint64(1 << 63)
    narrow[shingle] >>= np.uint64(51)
    assert shingle.sum() == len(texts)
    fps, keys = first.fingerprints, key_words(first.keys)
    order = np.arange(len(texts), dtype=np.int64)

    def removed(starts: np.ndarray, ends: np.ndarray, values: np.ndarray) -> int:
        found = _core.StarCandidates(
            fps, keys, 8, short=(rows, starts, ends, values), threshold=0.8
        )
        kept, _, _, _ = found.stars(order, 0.8, starts, ends, values, 1024)
        return int((kept != order).sum())

    assert removed(starts, ends, narrow) == 0
    alone = narrow[starts.astype(np.int64)]  # the shingle hashes without their checks
    at = np.arange(len(texts), dtype=np.uint64)
    want = len(texts) - len(np.unique(alone))
    assert want > 300  # about 3000 - 4096 (1 - exp(-3000 / 4096)) = 874
    assert removed(at, at + np.uint64(1), alone) == want


def test_content_keys_are_the_xxh3_128_of_the_normalized_text():
    texts = ["Hello, World", "hello, world", "ｈｅｌｌｏ, world", "other"]
    got = digest_many(neardup.Simhasher(), texts)
    for text, key in zip(texts, got.keys.tolist()):
        h = xxhash.xxh3_128_intdigest(neardup.normalize(text).encode())
        assert key == (h & (2**64 - 1), h >> 64)
    assert len(set(got.keys.tolist())) == 2


@pytest.mark.parametrize("exact_above", [False, True])
def test_pairs_whose_estimate_lies_near_the_threshold_are_decided_exactly(exact_above):
    a, b, exact = long_pair(exact_above, seed=3 if exact_above else 4)
    result = neardup.dedup([a, b], shingle=1, k=16)
    assert result.n_removed == int(exact_above)
    if exact_above:
        assert result.jaccard[1] == pytest.approx(exact, abs=1e-6)
    assert result.stats["band_pairs_exact"] == 1
    assert result.stats["band_pairs_estimated"] == 0
    # A one-shot iterator cannot be read again: the pair is decided on its estimate, and said so.
    once = neardup.dedup(iter([a, b]), shingle=1, k=16)
    assert once.n_removed == int(not exact_above)
    assert once.stats["band_pairs_estimated"] == 1


def test_a_pair_near_the_threshold_that_its_estimate_decides_alike_reports_the_exact():
    # Estimate and exact Jaccard both above 0.8, apart: the stars stand (no second pass) and
    # the removal reports the exact Jaccard.
    a, b, exact = long_pair(True, seed=5, flip=False)
    result = neardup.dedup([a, b], shingle=1, k=16)
    assert not result.keep[1]
    assert result.jaccard[1] == pytest.approx(exact, abs=1e-6)
    assert result.stats["band_pairs_exact"] >= 1


def test_the_command_decides_pairs_near_the_threshold_exactly(tmp_path, capsys):
    a, b, exact = long_pair(True, seed=3)
    path = tmp_path / "pair.jsonl"
    path.write_text(json.dumps({"text": a}) + "\n" + json.dumps({"text": b}) + "\n")
    out, clusters = tmp_path / "kept.jsonl", tmp_path / "clusters.csv"
    code, stdout, _ = run(
        capsys,
        "dedup",
        path,
        "--shingle",
        1,
        "--k",
        16,
        "-o",
        out,
        "--clusters",
        clusters,
        "--json",
    )
    assert code == 0
    assert [json.loads(line)["text"] for line in out.read_text().splitlines()] == [a]
    rows = list(csv.DictReader(clusters.read_text().splitlines()))
    assert float(rows[1]["jaccard"]) == pytest.approx(exact, abs=1e-4)  # written to 4 places
    summary = json.loads(stdout)
    assert summary["evidence"]["band_pairs_exact"] == 1
    assert summary["evidence"]["band_pairs_estimated"] == 0


def npm_like(n: int, seed: int) -> tuple[list[str], list[tuple[int, int]]]:
    """n texts "typescript definitions for W1 ... W5" (6 shingles of 3 words, the first
    shared by all), and copies of some with one more word (7 shingles, Jaccard 6/7) whose only
    shared prefix hash (the first 2 of their hashes in hash order) is the common shingle's."""
    words = random_words(6 * n + 2000, seed=seed, length=6)
    texts = [" ".join(["typescript definitions for", *words[5 * i : 5 * i + 5]]) for i in range(n)]
    spare = iter(words[5 * n :])
    sketches = Sketches()
    sketches.add(list(range(n)), texts)
    _, starts, ends, hashes = sketches.parts()
    common = set(hashes[starts[0] : ends[0]].tolist())
    for d in range(1, 3):
        common &= set(hashes[starts[d] : ends[d]].tolist())
    (c,) = common
    planted = []
    for i in range(n):
        prefix_a = set(hashes[starts[i] : starts[i] + 2].tolist())
        if c not in prefix_a:
            continue
        for _ in range(30):
            candidate = texts[i] + " " + next(spare)
            s = Sketches()
            s.add([0], [candidate])
            _, _, _, h = s.parts()
            if set(h[:2].tolist()) & prefix_a == {c}:
                planted.append((i, len(texts)))
                texts.append(candidate)
                break
        if len(planted) == 40:
            break
    return texts, planted


def test_a_prefix_shared_by_thousands_of_short_texts_loses_no_pair():
    texts, planted = npm_like(5000, seed=7)
    assert len(planted) == 40
    # k = 0: the fingerprints propose (almost) nothing; the short texts' prefixes must.
    result = neardup.dedup(texts, k=0)
    removed = {int(r): int(result.kept_row[r]) for r in np.flatnonzero(~result.keep)}
    assert removed == {b: a for a, b in planted}
    assert all(result.jaccard[b] == pytest.approx(6 / 7) for _, b in planted)
    assert result.stats["short_pairs_skipped"] == 0


def test_a_frequent_prefix_loses_no_pair_against_a_dedup_index(tmp_path):
    texts, planted = npm_like(5000, seed=7)
    index = neardup.DedupIndex.build(texts[:5000], tmp_path / "npm.ndx", dedup=False)
    news = [texts[b] for _, b in planted]
    found = neardup.dedup(news, against=index, k=0)
    assert found.n_removed == len(planted)
    assert bool(found.in_index.all())
    assert found.duplicate_of == [a for a, _ in planted]
    # 6 of 7 shingles shared: at most the index's 64 bytes cut them to 56 bits, exact.
    assert np.allclose(found.jaccard, 6 / 7)


def test_a_group_that_cannot_be_split_is_counted_and_said(tmp_path, capsys):
    # At t = 0.5 a text of two shingles meets its overlap with the first: 1,100 texts sharing
    # it cannot be split, are not one set, and are over the cap: they are compared in pieces of
    # 1,024 and 76 texts, and the 1,024 x 76 pairs across the pieces are counted.
    texts = [f"alpha beta gamma w{i}x" for i in range(1100)]
    result = neardup.dedup(texts, threshold=0.5)
    assert result.stats["short_pairs_skipped"] == 1024 * 76
    path = tmp_path / "skip.jsonl"
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    code, out, err = run(capsys, "dedup", path, "--threshold", 0.5, "--dry-run")
    assert code == 0
    assert "note: 77,824 candidate pairs of short texts not compared" in out + err


class Books(collections.abc.Mapping):
    def __init__(self) -> None:
        self._d = {"a": "hello world", "b": "hello world"}

    def __getitem__(self, key: str) -> str:
        return self._d[key]

    def __iter__(self):
        return iter(self._d)

    def __len__(self) -> int:
        return len(self._d)


@pytest.mark.parametrize("docs", [{"a": "hello world", "b": "hello world"}, Books()])
def test_a_mapping_is_refused_as_a_corpus(docs, tmp_path):
    hasher = neardup.Simhasher()
    calls = [
        lambda: neardup.dedup(docs),
        lambda: neardup.dedup(docs, threshold=None),
        lambda: neardup.tune(docs),
        lambda: neardup.DedupIndex.build(docs, tmp_path / "x.ndx"),
        lambda: hasher.fingerprint_many(docs),
        lambda: neardup.Simhasher(weighting="idf").fit(docs),
        lambda: neardup.minhash_key_many(docs),
        lambda: neardup.SparseEncoder(size=64, active=8).encode_many(docs),
        lambda: kernels.digest_batch(docs),
        lambda: kernels.shingle_sets(docs),
    ]
    for call in calls:
        with pytest.raises(TypeError, match="mapping|not a dict"):
            call()
    index = neardup.DedupIndex.build(["some text here"], tmp_path / "y.ndx")
    with pytest.raises(TypeError, match="mapping"):
        neardup.dedup(docs, against=index)


def test_a_dataset_dict_is_refused_naming_its_splits():
    datasets = pytest.importorskip("datasets")
    splits = datasets.DatasetDict(
        {
            "train": datasets.Dataset.from_dict({"text": ["a b c", "a b c"]}),
            "test": datasets.Dataset.from_dict({"text": ["d e f"]}),
        }
    )
    for call in (lambda: neardup.dedup(splits), lambda: neardup.tune(splits)):
        with pytest.raises(
            TypeError, match=r"DatasetDict of splits \['train', 'test'\].*docs\['train'\]"
        ):
            call()
    assert neardup.dedup(splits["train"]).n_removed == 1


def test_pairs_near_the_threshold_at_the_defaults_are_decided_exactly_together():
    texts, removals = band_corpus()
    fps = neardup.Simhasher().fingerprint_many(texts)
    assert all(int(np.bitwise_count(fps[r] ^ fps[a])) <= 8 for r, (a, _) in removals.items())
    result = neardup.dedup(texts)
    got = {
        int(r): (int(result.kept_row[r]), float(result.jaccard[r]))
        for r in np.flatnonzero(~result.keep)
    }
    assert got.keys() == removals.keys()
    for r, (a, exact) in removals.items():
        assert got[r][0] == a
        assert got[r][1] == pytest.approx(exact, abs=1e-6)
    assert result.stats["band_pairs_exact"] == len(texts) // 2
    assert result.stats["band_pairs_estimated"] == 0


def test_the_pairs_command_reports_exact_jaccards_near_the_threshold(tmp_path, capsys):
    texts, removals = band_corpus()
    path = tmp_path / "band.jsonl"
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    out = tmp_path / "pairs.csv"
    code, stdout, _ = run(capsys, "pairs", path, "-o", out, "--limit", 0)
    assert code == 0
    rows = list(csv.DictReader(out.read_text().splitlines()))
    got = {int(row["id_b"]): (int(row["id_a"]), float(row["jaccard"])) for row in rows}
    assert got.keys() == removals.keys()
    for b, (a, exact) in removals.items():
        assert got[b] == (a, round(exact, 4))
    assert f"{len(texts) // 2} pairs near the threshold decided on the exact Jaccard" in stdout
    # --json: one line per pair, the same Jaccards.
    code, stdout, _ = run(capsys, "pairs", path, "--json")
    lines = [json.loads(line) for line in stdout.splitlines()]
    assert {d["id_b"]: (d["id_a"], d["jaccard"]) for d in lines} == got


def test_the_kernels_find_and_decide_pairs_near_the_threshold():
    texts, _ = band_corpus()
    exact = [exact for _, _, exact in pairs_within_k8()]
    # Two short texts (never cut) and a long one against a short one (far below the band).
    texts += ["a cat sat on the mat today", "a cat sat on the mat today again", texts[0], "dogs"]
    sketches = kernels.digest_batch(texts)["sketch"]
    a = np.arange(0, len(texts), 2)
    b = a + 1
    sa, sb = sketches.take(a), sketches.take(b)
    jaccard = kernels.verify_pairs(sa, sb)
    band = kernels.pairs_in_band(sa, sb, jaccard, 0.8)
    assert band.tolist() == [True] * len(exact) + [False, False]
    got = kernels.verify_pairs(
        kernels.shingle_sets([texts[i] for i in a]),
        kernels.shingle_sets([texts[i] for i in b]),
        kernels.WHOLE,
    )
    want = [neardup.jaccard(texts[i], texts[j]) for i, j in zip(a, b)]
    assert got.tolist() == pytest.approx(want, abs=1e-12)
    assert got[: len(exact)].tolist() == pytest.approx(exact, abs=1e-12)
    # The estimates were off: that is why they are decided on the whole sets.
    assert (np.abs(jaccard[: len(exact)] - got[: len(exact)]) > 1e-3).all()


def test_an_error_reading_a_pair_again_is_raised_as_it_is():
    # The stars read the documents of the pairs in the band again: an error of that read is
    # the error the caller sees.
    a, b, _ = long_pair(True, seed=3)

    class ReadOnce(Sequence[str]):
        def __init__(self, texts: list[str]) -> None:
            self.texts, self.seen = texts, set()

        def __len__(self) -> int:
            return len(self.texts)

        def __getitem__(self, i):  # type: ignore[no-untyped-def]
            if isinstance(i, slice):
                return [self[j] for j in range(*i.indices(len(self)))]
            if i in self.seen:
                raise OSError(f"document {i} is gone")
            self.seen.add(i)
            return self.texts[i]

    with pytest.raises(OSError, match="is gone"):
        neardup.dedup(ReadOnce([a, b]), shingle=1, k=16)
