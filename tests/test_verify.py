"""Candidate pairs checked by shingle Jaccard: neardup.jaccard, dedup(threshold=) and
`neardup dedup --threshold`, against sets built by the independent reference tokenizer."""

import csv
import os
import random

import numpy as np
import pytest
import xxhash

import neardup
import reference
from brute import family_corpus, pairs, shingle_set
from neardup.hasher import digest_many
from neardup.verify import Sketches
from test_cli import IDS, run, write_input

MASK = (1 << 64) - 1


def exact(a: str, b: str, n: int = 3) -> float:
    x, y = shingle_set(a, n), shingle_set(b, n)
    return len(x & y) / len(x | y) if x | y else 1.0


def mix64(z: int) -> int:
    """SplitMix64's output function (Steele, Lea and Flood 2014), written out here."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


DOCS = family_corpus()


def test_jaccard_is_the_exact_shingle_jaccard():
    rng = random.Random(3)
    for _ in range(60):
        a, b = rng.choice(DOCS), rng.choice(DOCS)
        for n in (1, 2, 3, 5):
            assert neardup.jaccard(a, b, ngram=n) == pytest.approx(exact(a, b, n), abs=1e-12)
    # Hand-worked: 7 shingles each, the 3 holding "jumps" differ from the 3 holding "jumped".
    assert (
        neardup.jaccard(
            "The quick brown fox jumps over the lazy dog",
            "the quick brown fox JUMPED over the lazy dog",
        )
        == 0.4
    )
    assert neardup.jaccard("", "  !! ") == 0.0  # texts without words share nothing
    assert neardup.jaccard("!!", "!!") == neardup.jaccard("", "") == 1.0  # but copies are copies
    assert neardup.jaccard("two words", "other words") == 0.0  # each is one shingle of 2 words


def test_long_documents_get_the_bottom_k_estimate():
    rng = random.Random(5)
    vocab = [f"w{i}" for i in range(5000)]
    a_words = [rng.choice(vocab) for _ in range(900)]
    b_words = a_words[:600] + [rng.choice(vocab) for _ in range(300)]
    a, b = " ".join(a_words), " ".join(b_words)
    sketches = Sketches(size=256)
    sketches.add([0, 1], [a, b])
    got = sketches.jaccard(np.array([0]), np.array([1]))[0]

    # The estimator by its definition: the 256 smallest shingle hashes of the union, a shingle's
    # hash chaining SplitMix64's output function over two hashes of each word (its FNV-1a 64, and
    # the XXH3-64 of its bytes, seeded), 63 bits kept.
    def shingle_hash(shingle: str) -> int:
        h = 0x243F6A8885A308D3
        for word in shingle.split(" "):
            h = mix64(h ^ reference.fnv1a_64(word.encode()))
            h ^= xxhash.xxh3_64_intdigest(word.encode(), seed=0x7E57ED0F5EC04D11)
        return mix64(h) >> 1

    ha = {shingle_hash(s) for s in shingle_set(a)}
    hb = {shingle_hash(s) for s in shingle_set(b)}
    smallest = sorted(ha | hb)[:256]
    assert got == sum(h in ha and h in hb for h in smallest) / 256
    assert abs(got - exact(a, b)) < 0.1


def oracle_shingle_hash(words: list[str]) -> int:
    """A shingle's hash by its definition (see the test above), from its words."""
    h = 0x243F6A8885A308D3
    for word in words:
        h = mix64(h ^ reference.fnv1a_64(word.encode()))
        h ^= xxhash.xxh3_64_intdigest(word.encode(), seed=0x7E57ED0F5EC04D11)
    return mix64(h) >> 1


@pytest.mark.parametrize("scalar", [False, True])
def test_sketches_hold_their_definition_on_every_path(scalar):
    # Words of 1 to 40 bytes (XXH3 takes other paths for 1-3, 4-8, 9-16 and longer words, and
    # the vector kernels eight words or shingles at a time), some of them two-byte letters;
    # shingles of 1 to 7 words (the chains of up to 5 are unrolled).
    rng = random.Random(21)
    letters = "abcdefghijklmnopqrstuvwxyz0123456789éж"
    words = ["".join(rng.choices(letters, k=rng.randint(1, 40))) for _ in range(700)]
    texts = [" ".join(words[:k]) for k in (1, 2, 5, 9, 17, 33, 100, 700)]
    hasher = neardup.Simhasher()
    neardup._core.force_scalar(scalar)
    try:
        for n in (1, 2, 3, 5, 7):
            starts, ends, hashes = digest_many(hasher, texts, sketch=(n, 4096)).sketches
            for text, a, b in zip(texts, starts, ends):
                w = text.split(" ")
                want = {oracle_shingle_hash(w[i : i + n]) for i in range(max(1, len(w) - n + 1))}
                got = hashes[a:b].tolist()
                assert got[: len(want)] == sorted(want), (n, len(w))
    finally:
        neardup._core.force_scalar(False)


def test_two_whole_sets_get_their_exact_jaccard_whatever_their_union():
    # 1,000 distinct words each (fewer than 1,024: sketched whole), 900 shared: a union of
    # 1,100, past the sketch size. Their Jaccard is exactly 900 / 1,100, not an estimate.
    words = [f"w{i}" for i in range(1100)]
    a, b = " ".join(words[:1000]), " ".join(words[100:])
    sketches = Sketches(ngram=1)
    sketches.add([0, 1], [a, b])
    assert sketches.jaccard(np.array([0]), np.array([1]))[0] == 900 / 1100
    assert not sketches.cut(np.array([0]), np.array([1]))[0]
    result = neardup.dedup([a, b], shingle=1, k=16)
    assert result.jaccard[1] == np.float32(900 / 1100)


def test_a_threshold_finds_pairs_fingerprints_alone_miss_and_drops_chance_ones():
    fps = neardup.Simhasher().fingerprint_many(DOCS)
    at3 = {(a, b) for a, b, _ in pairs(fps, 3)}
    result = neardup.dedup(DOCS, threshold=0.5)  # k = 8 by default with a threshold
    assert result.k == 8
    found = set(zip(result.pairs[0].tolist(), result.pairs[1].tolist()))
    assert found - at3, "the corpus has similar pairs beyond distance 3"
    assert all(exact(DOCS[a], DOCS[b]) >= 0.5 for a, b in found)


def test_iterators_dicts_and_tables_give_the_same_result():
    want = neardup.dedup(DOCS, threshold=0.7).cluster.tolist()
    assert neardup.dedup(iter(DOCS), threshold=0.7).cluster.tolist() == want
    assert neardup.dedup([{"text": t} for t in DOCS], threshold=0.7).cluster.tolist() == want
    pd = pytest.importorskip("pandas")
    assert neardup.dedup(pd.DataFrame({"text": DOCS}), threshold=0.7).cluster.tolist() == want


@pytest.mark.parametrize(
    "threshold, error", [(0, ValueError), (1.5, ValueError), ("0.8", TypeError), (True, TypeError)]
)
def test_bad_thresholds_are_refused(threshold, error):
    with pytest.raises(error, match="threshold"):
        neardup.dedup(DOCS, threshold=threshold)


def test_bad_shingle_sizes_are_refused():
    with pytest.raises(ValueError, match="shingle"):
        neardup.dedup(DOCS, threshold=0.8, shingle=0)


@pytest.mark.parametrize("kind", ["jsonl", "jsonl.gz", "csv", "txt"])
def test_the_command_matches_the_api(capsys, tmp_path, kind):
    path = write_input(tmp_path, kind)
    want = neardup.dedup(DOCS, threshold=0.8)
    code, out, err = run(
        capsys, "dedup", path, "--threshold", "0.8", "--dry-run", "--clusters", tmp_path / "c.csv"
    )
    assert code == 0, err
    # Prefix candidates, the default: every pair at the threshold, whatever k.
    assert "clusters of near-duplicates with shingle Jaccard >= 0.8:" in out
    with open(tmp_path / "c.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["kept"] == "true" or r["kept"] == "True" for r in rows] == want.keep.tolist()
    if kind != "txt":
        assert [r["id"] for r in rows] == IDS
        kept_ids = {IDS[r] for r in np.flatnonzero(want.keep)}
        assert {r["id"] for r in rows if r["kept"] in ("true", "True")} == kept_ids


def test_the_command_refuses_a_threshold_out_of_range_or_without_verification(capsys, tmp_path):
    path = write_input(tmp_path, "jsonl")
    code, _, err = run(capsys, "dedup", path, "--threshold", "0", "--dry-run")
    assert code == 2 and "--threshold" in err
    code, _, err = run(capsys, "dedup", path, "--threshold", "0.8", "--no-verify", "--dry-run")
    assert code == 2 and "drop --threshold or --no-verify" in err


def test_pairs_command_lists_the_checked_pairs(capsys, tmp_path):
    import json

    path = write_input(tmp_path, "jsonl")
    fps = neardup.Simhasher().fingerprint_many(DOCS)
    want = sorted(
        (IDS[a], IDS[b], d, round(exact(DOCS[a], DOCS[b]), 4))
        for a, b, d in pairs(fps, 8)
        if exact(DOCS[a], DOCS[b]) >= 0.6
    )
    code, out, err = run(capsys, "pairs", path, "--k", "8", "--threshold", "0.6", "--json")
    assert code == 0, err
    got = sorted(
        (r["id_a"], r["id_b"], r["distance"], r["jaccard"])
        for r in map(json.loads, out.splitlines())
    )
    assert got == want
    assert got, "the corpus has pairs to list"


@pytest.mark.parametrize("kind", ["jsonl", "csv"])
@pytest.mark.parametrize("past_budget", ["spilled", "disk full", "no room"])
def test_sketches_past_their_budget_are_spilled_or_made_again_from_the_candidates(
    capsys, tmp_path, monkeypatch, kind, past_budget
):
    # Past the budget the sketches go to a temporary file and the candidates' are read back;
    # when the disk has no room, or fills up while they are written, the candidates are read
    # again from the input: every way gives what the sketches held in memory give.
    from neardup import pipeline, sketch_spill

    path = write_input(tmp_path, kind)
    outputs = []
    spills: list[sketch_spill.SketchSpill] = []
    real_init = sketch_spill.SketchSpill.__init__

    def tracked_init(self):
        real_init(self)
        spills.append(self)

    monkeypatch.setattr(sketch_spill.SketchSpill, "__init__", tracked_init)
    written: list[tuple] = []
    for budget in (pipeline.SKETCH_BUDGET, 1):
        monkeypatch.setattr(pipeline, "SKETCH_BUDGET", budget)
        if budget == 1 and past_budget == "no room":
            monkeypatch.setattr(sketch_spill, "room_for", lambda nbytes: False)
        if budget == 1 and past_budget == "disk full":

            def fill_up(self, *args):
                if written:
                    raise OSError(28, "No space left on device")
                written.append(args)
                type(self).write_ok(self, *args)

            monkeypatch.setattr(
                sketch_spill.SketchSpill, "write_ok", sketch_spill.SketchSpill.write, raising=False
            )
            monkeypatch.setattr(sketch_spill.SketchSpill, "write", fill_up)
        out = tmp_path / f"c{budget}.csv"
        # Fingerprint candidates: without room for the sketches prefix candidates stop with an
        # OSError instead (test_prefix_candidates.py).
        code, _, err = run(
            capsys,
            "dedup",
            path,
            "--threshold",
            "0.7",
            "--dry-run",
            "--clusters",
            out,
            "--candidates",
            "fingerprint",
        )
        assert code == 0, err
        outputs.append(out.read_text())
        if budget == 1:
            assert len(spills) == (0 if past_budget == "no room" else 1)
            assert all(s._file.closed for s in spills)  # the temporary file is gone
    assert outputs[0] == outputs[1]
    want = neardup.dedup(DOCS, threshold=0.7, candidates="fingerprint")
    with open(tmp_path / f"c{pipeline.SKETCH_BUDGET}.csv", newline="") as f:
        assert [int(r["cluster"]) for r in csv.DictReader(f)] == want.cluster.tolist()


def sketched_alone(docs: list[str]) -> list[list[int]]:
    """Each document's sketch, made on its own."""
    got = []
    for d in docs:
        one = Sketches()
        one.add([0], [d])
        s, e, h = one.ranges(1)
        got.append(h[s[0] : e[0]].tolist())
    return got


def test_spilled_sketches_read_back_the_rows_asked_for():
    # Rows added in shuffled chunks, past a budget of one byte: every chunk goes to the file,
    # and reading back any set of rows gives each the sketch of its text made on its own.
    rng = random.Random(5)
    docs = DOCS
    alone = sketched_alone(docs)
    rows = list(range(len(docs)))
    rng.shuffle(rows)
    store = Sketches(budget=1, spill=True)
    for at in range(0, len(rows), 5):
        chunk = rows[at : at + 5]
        store.add(chunk, [docs[r] for r in chunk])
    assert store.spilled and not store.dropped
    with pytest.raises(RuntimeError, match="spilled"):
        store.ranges(len(docs))
    wanted = np.array(sorted(rng.sample(range(len(docs)), 25)) + [len(docs) + 5])  # one unknown
    got = store.read_back(wanted)
    assert not store.spilled  # read once, then closed
    starts, ends, hashes = got.ranges(len(docs))
    for r in range(len(docs)):
        assert hashes[starts[r] : ends[r]].tolist() == (alone[r] if r in wanted else []), r


def test_sketches_added_in_any_order_and_chunks_give_each_row_its_own():
    # Rows added in shuffled chunks, some through add_sketches with other rows' hashes around
    # them, some after ranges() has given the hashes out: each row reads back the sketch of its
    # text made on its own.
    rng = random.Random(11)
    docs = DOCS[:120]
    want = sketched_alone(docs)
    rows = list(range(len(docs)))
    rng.shuffle(rows)
    store = Sketches(size=16)
    store16 = [w[:16] for w in want]
    checked = []
    for at in range(0, len(rows), 25):
        chunk = rows[at : at + 25]
        if at % 50:
            store.add(chunk, [docs[r] for r in chunk])
        else:
            # The core's layout: every row's sketch, only some of them added.
            offsets, hashes, _ = neardup._core.shingle_sketches(
                [neardup.normalize(d) for d in docs], 3, 16
            )
            store.add_sketches(chunk, offsets[chunk], offsets[np.asarray(chunk) + 1], hashes)
        starts, ends, hashes = store.ranges(len(docs))
        checked += chunk
        for r in range(len(docs)):
            got = hashes[starts[r] : ends[r]].tolist()
            assert got == (store16[r] if r in checked else []), r
    parts = store.parts()
    assert sorted(parts[0].tolist()) == sorted(rows)
    for r, s, e in zip(*parts[:3]):
        assert parts[3][s:e].tolist() == store16[r]


def test_copies_of_earlier_texts_take_their_fingerprint_and_no_sketch():
    # The first pass records each text's key with its fingerprint; a later chunk's copies of
    # those texts get that fingerprint without being fingerprinted or sketched again, on the
    # API's path and the JSONL fast path alike, and the pass keeps what digesting every row
    # apart gives.
    from neardup.hasher import digest_many
    from neardup.pipeline import FirstPass

    hasher = neardup.Simhasher()
    texts = DOCS[:40] + ["Ünïcode déjà vu, the same words", "日本語のテキスト 回家吃饭"]
    copies = [texts[i] for i in (3, 3, 0, 41, 17, 40)]
    first = FirstPass(hasher, 3)
    first.digest(texts, 0)
    want = [hasher.fingerprint(t) for t in copies]

    got = digest_many(hasher, copies, sketch=first.sketch_spec(), seen=first.seen)
    assert got.fingerprints.tolist() == want
    assert got.sketches is not None and len(got.sketches[2]) == 0  # no copy was sketched

    ascii_copies = [t for t in copies if t.isascii()]
    block = "\n".join(f'{{"text": "{t}"}}' for t in ascii_copies).encode()
    kinds, fps, _, _, _, (offsets, _) = neardup._core.jsonl_fingerprints(
        hasher._inner, block, "text", None, hasher.casefold, first.sketch_spec(), seen=first.seen
    )
    assert kinds.tolist() == [1] * len(ascii_copies)
    assert fps.tolist() == [hasher.fingerprint(t) for t in ascii_copies]
    assert offsets.tolist() == [0] * (len(ascii_copies) + 1)

    # A text not seen yet is digested in full; the pass as a whole matches rows digested apart.
    fresh = "a text never seen before here"
    got = digest_many(hasher, [fresh], sketch=first.sketch_spec(), seen=first.seen)
    assert got.sketches is not None and len(got.sketches[2]) > 0
    first.digest(copies + [fresh], len(texts))
    everything = texts + copies + [fresh]
    assert first.fingerprints.tolist() == [hasher.fingerprint(t) for t in everything]
    starts, ends, hashes = first.sketches.ranges(len(everything))
    alone = sketched_alone(everything)
    for r, text in enumerate(everything):
        kept = hashes[starts[r] : ends[r]].tolist()
        assert kept == (alone[r] if everything.index(text) == r else []), r


def test_a_spill_file_cut_short_is_an_error_and_hold_takes_empty_sketches_only():
    store = Sketches(budget=1, spill=True)
    store.add([0, 1, 2], DOCS[:3])
    assert store.spilled
    store._spill._file.flush()
    os.ftruncate(store._spill._file.fileno(), 8)
    with pytest.raises(OSError, match="ended early"):
        store.read_back(np.array([2]))
    full = Sketches()
    full.add([0], DOCS[:1])
    with pytest.raises(RuntimeError, match="empty Sketches only"):
        full.hold(
            np.array([1]), np.zeros(1, np.uint64), np.ones(1, np.uint64), np.ones(1, np.uint64)
        )


def test_the_first_pass_appends_each_first_sketch_where_the_sketches_are_kept():
    # With into=, the core appends to the store each text's sketch at its first occurrence (not
    # a copy of a text the key set holds, nor of one earlier in the chunk), after what the store
    # held, and the chunk's sketches are read through a view of it that keeps it from moving.
    from neardup.hasher import digest_many

    hasher = neardup.Simhasher()
    texts = DOCS[:30]
    seen = neardup._core.KeySet()
    recorded = digest_many(hasher, [texts[4]], sketch=(3, 16))
    seen.first_seen(np.ascontiguousarray(recorded.keys).view(np.uint64), recorded.fingerprints)
    chunk = texts + [texts[7], texts[4], texts[29], "new words here at last", texts[7]]
    store = neardup._core.HashBuffer()
    store.extend(np.array([5, 6, 7], np.uint64))
    got = digest_many(hasher, chunk, sketch=(3, 16), seen=seen, into=store)
    alone = [s[:16] for s in sketched_alone(chunk)]
    firsts = [r for r, t in enumerate(chunk) if t != texts[4] and chunk.index(t) == r]
    assert got.fingerprints.tolist() == [hasher.fingerprint(t) for t in chunk]
    starts, ends, view = got.sketches
    for r in range(len(chunk)):
        assert view[starts[r] : ends[r]].tolist() == (alone[r] if r in firsts else []), r
    assert len(store) == 3 + sum(len(alone[r]) for r in firsts) == 3 + len(view)
    with pytest.raises(ValueError):
        view[0] = 1
    with pytest.raises(ValueError, match="view"):
        store.extend(np.array([1], np.uint64))
    with pytest.raises(ValueError, match="view"):
        digest_many(hasher, ["more text"], sketch=(3, 16), into=store)
    with pytest.raises(ValueError, match="sketch"):
        digest_many(hasher, ["more text"], into=store)
    part = view[2:5]
    del got, starts, ends, view
    with pytest.raises(ValueError, match="view"):
        store.take()
    del part
    # The views gone, the store grows and is taken whole, as written.
    store.extend(np.array([1], np.uint64))
    want = [5, 6, 7] + [h for r in firsts for h in alone[r]] + [1]
    assert store.take().tolist() == want
