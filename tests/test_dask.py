"""neardup.batches and neardup.dask: the same dedup on a Dask cluster (2 worker processes).

Every result is checked against the single-machine neardup.dedup, and the batch functions
against the brute-force oracle of tests/brute.py.
"""

from __future__ import annotations

import gzip
import json
import logging
import os
import random
import signal
import threading
import time
from collections import Counter
from typing import Any

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from distributed import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import neardup
import neardup.dask as ndd
from brute import repeated_slots
from command import run
from computed import computed
from conftest import SAMPLE
from near_threshold import WITHIN_K8, band_corpus, pairs_within_k8, random_words
from neardup import batches
from neardup.dask import components, digest, frames, rarity, steps, verification
from neardup.verify import SKETCH_SIZE, THRESHOLD_K


@pytest.fixture(scope="module")
def client():
    with ndd.local_cluster(2, memory_limit="2GiB") as cluster, Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def band_pairs() -> list[tuple[str, str, float]]:
    return pairs_within_k8()


@pytest.fixture(scope="module")
def debian() -> pd.DataFrame:
    with gzip.open(SAMPLE, "rt", encoding="utf-8") as f:
        return pd.DataFrame([json.loads(line) for line in f])


def planted(n_families: int = 150, seed: int = 7) -> pd.DataFrame:
    """Texts in families of near-duplicates (one word changed, case changed, copied), shuffled."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(400)]
    texts = []
    for _ in range(n_families):
        base = [rng.choice(words) for _ in range(rng.randint(8, 40))]
        texts.append(" ".join(base))
        for _ in range(rng.randint(0, 4)):
            edit = list(base)
            edit[rng.randrange(len(edit))] = rng.choice(words)
            if rng.random() < 0.3:
                edit.append(rng.choice(words))
            texts.append(" ".join(edit))
        if rng.random() < 0.3:
            texts.append(" ".join(base).upper())
    texts += ["", "", "x"]
    rng.shuffle(texts)
    return pd.DataFrame({"id": [f"doc{i}" for i in range(len(texts))], "text": texts})


def _check_same(
    df: pd.DataFrame, kept: dd.DataFrame, table: dd.DataFrame, want: neardup.DedupResult
) -> None:
    got = table.compute()
    assert got["id"].tolist() == df["id"].tolist()
    assert got["kept_id"].tolist() == df["id"].to_numpy()[want.kept_row].tolist()
    np.testing.assert_array_equal(got["jaccard"].to_numpy(), want.jaccard)
    np.testing.assert_array_equal(got["cluster"].to_numpy(), want.cluster)
    np.testing.assert_array_equal(got["kept"].to_numpy(), want.keep)
    np.testing.assert_array_equal(got["distance"].to_numpy(), want.distance)
    assert kept.compute()["id"].tolist() == df["id"][want.keep].tolist()


# -- batch functions -----------------------------------------------------------------------------


def test_fingerprint_batch_names_the_bad_row():
    with pytest.raises(TypeError, match=r"batch 7 row 1: the text is missing"):
        batches.fingerprint_batch(["a", None], where="batch 7")
    with pytest.raises(TypeError, match=r"row 0: the text is int 5"):
        batches.fingerprint_batch([5])
    texts = ["one text", "another one"]
    np.testing.assert_array_equal(
        batches.fingerprint_batch(pd.Series(texts)), neardup.Simhasher().fingerprint_many(texts)
    )


# -- neardup.dask on a LocalCluster of 2 worker processes ----------------------------------------


def test_fingerprint_column(client, debian):
    ddf = dd.from_pandas(debian, npartitions=3)
    got = ndd.fingerprint(ddf).compute()
    np.testing.assert_array_equal(
        got["fingerprint"].to_numpy(), neardup.Simhasher().fingerprint_many(debian["text"].tolist())
    )
    hasher = neardup.Simhasher(tokens="char", ngram=4)
    got = ndd.fingerprint(ddf, hasher=hasher).compute()
    np.testing.assert_array_equal(
        got["fingerprint"].to_numpy(), hasher.fingerprint_many(debian["text"].tolist())
    )


@pytest.mark.parametrize("npartitions", [1, 7])
@pytest.mark.parametrize("keep", ["first", "longest"])
@pytest.mark.parametrize("threshold", [0.8, None])
def test_dedup_matches_single_machine_on_debian(client, debian, npartitions, keep, threshold):
    want = neardup.dedup(debian["text"].tolist(), keep=keep, threshold=threshold)
    assert want.n_removed > 100
    ddf = dd.from_pandas(debian, npartitions=npartitions)
    kept, table = ndd.dedup(ddf, id_field="id", keep=keep, clusters=True, threshold=threshold)
    _check_same(debian, kept, table, want)


@pytest.mark.parametrize(("npartitions", "k"), [(1, 4), (3, 0), (16, 4)])
def test_dedup_matches_single_machine_on_planted_duplicates(client, npartitions, k):
    df = planted()
    want = neardup.dedup(df["text"].tolist(), k=k, keep="longest")
    assert want.n_clusters > 40
    kept, table = ndd.dedup(
        dd.from_pandas(df, npartitions=npartitions),
        k=k,
        id_field="id",
        keep="longest",
        clusters=True,
    )
    _check_same(df, kept, table, want)


# Each kind of candidates and each keep once (each case takes about 25 s on 2 cores): the pair
# tables are cut alike whatever ranks the rows, and both keeps are held to one machine's answer
# on the whole data set by test_dedup_matches_single_machine_on_debian.
@pytest.mark.parametrize(("candidates", "keep"), [("fingerprint", "first"), ("prefix", "longest")])
def test_pair_tables_cut_into_many_partitions_give_the_same_result(
    client, debian, monkeypatch, keep, candidates
):
    """The tables that grow with the pairs (components, stars, rows with copies) take as many
    partitions as their size asks: a few rows each here, so every shuffle of theirs spreads
    components, nodes and copies over many partitions."""
    monkeypatch.setattr(frames, "PAIR_ROWS", 40)
    want = neardup.dedup(debian["text"].tolist(), keep=keep, candidates=candidates)
    assert want.n_removed > 100
    stats: dict = {}
    kept, table = ndd.dedup(
        dd.from_pandas(debian, npartitions=5),
        id_field="id",
        keep=keep,
        clusters=True,
        candidates=candidates,
        stats=stats,
    )
    assert frames._partitions_for(3 * stats["verified_pairs"]) > 10
    assert stats["rounds"] >= 1  # components across partitions, found by rounds
    _check_same(debian, kept, table, want)


def _rarity_frame(texts: list[str]) -> pd.DataFrame:
    """The digests' columns the rarity tables read, one row per text (rows numbered 0, 1, ...)."""
    import pyarrow as pa

    from neardup import kernels

    table = kernels.digest_batch(texts, neardup.Simhasher(), shingle=3, size=SKETCH_SIZE)
    frame = table.select(["key", "sketch"]).to_pandas(
        types_mapper=lambda t: pd.ArrowDtype(t) if pa.types.is_large_list(t) else None
    )
    frame.insert(0, "row", np.arange(len(frame), dtype=np.int64))
    return frame


def test_each_partition_gets_the_counts_of_its_own_hashes(client, debian, monkeypatch, tmp_path):
    """Each partition's rarity table holds the hashes its texts hold that the texts of one
    content key in RARITY_SHARE hold twice or more over the whole corpus (each text counted
    once, wherever its copies lie), with those counts, and the others two texts or more hold
    over the corpus, counting 1 (their exact marks): against counts over the whole corpus in one
    piece. With the whole table, the slots of the repeated hashes are marked instead."""
    from neardup import kernels

    # Copies spread over the partitions: the text is the first row of its key, its copies not.
    texts = debian["text"].tolist()
    rng = random.Random(5)
    for _ in range(400):
        texts.insert(rng.randrange(len(texts) + 1), rng.choice(texts))
    from neardup import prefix_lists

    monkeypatch.setattr(rarity, "RARITY_SHARE", 3)
    monkeypatch.setattr(prefix_lists, "EXACT_HASHES", 0)  # one in 3, not every text
    monkeypatch.setattr(rarity, "RARITY_TABLE", 0)  # no whole table: each partition's own
    whole = _rarity_frame(texts)
    keys = whole["key"].to_numpy(np.uint64)
    first = np.zeros(len(texts), bool)
    first[np.unique(keys, return_index=True)[1]] = True
    sketches = digest._sketch_array(whole["sketch"])
    counted = kernels.rarity_counts(sketches.take(np.flatnonzero(first & (keys % 3 == 0))))
    frequent = {h: c for h, c in zip(*(x.tolist() for x in counted)) if c >= 2}
    # Every text once, its checks (top bit set) left out.
    held_by = Counter(
        h
        for r in np.flatnonzero(first)
        for h in sketches[r].values.to_numpy().tolist()
        if h < 1 << 63
    )
    order_of = {h: frequent.get(h, 1) for h, n in held_by.items() if n >= 2 or h in frequent}
    assert len(order_of) > len(frequent) > 0
    cut = [0, 900, 901, 2000, len(texts)]
    divisions = [*cut[:-1], len(texts) - 1]
    whole["is_text"] = first
    ddf = dd.from_pandas(whole, npartitions=1).repartition(divisions=divisions)
    (tmp_path / "own").mkdir()
    (tmp_path / "whole").mkdir()
    # The hashes the texts' sketches hold, and the texts (the copies stage counts them).
    starts, ends, _ = kernels._ranges(sketches)
    sizes = (int((ends - starts)[first].sum()), int(first.sum()))
    tables, rows, shared = rarity._rarity_tables(
        lambda columns: ddf, len(cut) - 1, str(tmp_path / "own"), sizes
    )
    assert shared is None
    got = tables.partitions
    total = 0
    for i, (lo, hi) in enumerate(zip(cut[:-1], cut[1:])):
        held = {
            h for r in range(lo, hi) if first[r] for h in sketches[r].values.to_numpy().tolist()
        }
        want = sorted((h, c) for h, c in order_of.items() if h in held)
        table = got[i].compute()
        assert len(want) > 0 or hi - lo == 1
        hashes, counts = rarity._table_of(table)
        assert list(zip(hashes.tolist(), counts.tolist())) == want
        total += len(want)
    assert rows == total
    # With the whole table, every text's hashes marked: the slots two hashes of the texts share.
    monkeypatch.setattr(rarity, "RARITY_TABLE", 1 << 22)
    _, rows, shared = rarity._rarity_tables(lambda columns: ddf, 2, str(tmp_path / "whole"), sizes)
    assert rows == len(frequent) and shared.marks > 0
    words = np.concatenate(rarity._read_marks(shared.folder, shared.marks))
    bits = int(np.log2(len(words))) + 6
    marked = np.flatnonzero(np.unpackbits(words.view(np.uint8), bitorder="little"))
    want = repeated_slots([sketches[r].values.to_numpy() for r in np.flatnonzero(first)], bits)
    assert len(want) > 100 and marked.tolist() == want.tolist()


@pytest.mark.parametrize("share", [1, 5])
@pytest.mark.parametrize("exact", [False, True])
@pytest.mark.parametrize("whole", [False, True])
def test_prefix_candidates_with_any_share_match_single_machine(
    client, debian, monkeypatch, share, exact, whole
):
    """The same rarity order as the single machine: the same prefix pairs, the same result;
    whether the order is counted on every text of this small corpus of long texts or on a
    share, and whether every task reads the whole table or each partition gets its own. (With a
    share, both mark the hashes more than one text may hold on every text: Dask's marks are exact
    with each partition's own table, and so are the single machine's here.)"""
    from neardup import prefix_lists

    monkeypatch.setattr(rarity, "RARITY_SHARE", share)
    monkeypatch.setattr(prefix_lists, "RARITY_FRACTION", share)
    if not exact:
        monkeypatch.setattr(prefix_lists, "EXACT_HASHES", 0)
    if not whole:
        monkeypatch.setattr(rarity, "RARITY_TABLE", 0)
    texts = debian["text"].tolist()
    texts += texts[::7]  # copies in other partitions
    frame = pd.DataFrame({"id": range(len(texts)), "text": texts})
    if share > 1 and not whole:
        _exact_marks_on_one_machine(monkeypatch, texts)
    want = neardup.dedup(texts, candidates="prefix")
    kept, table, stats = _by_prefix(frame)
    assert stats["prefix_pairs"] == want.stats["prefix_pairs"] > 0
    _check_same(frame, kept, table, want)


def _exact_marks_on_one_machine(monkeypatch, texts: list[str]) -> None:
    """Makes the single machine rank ``texts`` as Dask does with each partition's own table: the
    hashes two texts or more hold (each text once), counted with a Counter, count 1 in its table
    where the sample leaves them out, and no slot is marked."""
    from neardup import prefix_lists

    whole = _rarity_frame(texts)
    keys = whole["key"].to_numpy(np.uint64)
    sketches = digest._sketch_array(whole["sketch"])
    held_by = Counter(
        h
        for r in np.unique(keys, return_index=True)[1]
        for h in sketches[int(r)].values.to_numpy().tolist()
        if h < 1 << 63
    )
    repeated = np.array(sorted(h for h, n in held_by.items() if n >= 2), np.uint64)
    sampled = prefix_lists.frequent

    def frequent(hashes: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        table, counted = sampled(hashes, counts)
        more = np.setdiff1d(repeated, table)
        hashes = np.concatenate([table, more])
        order = np.argsort(hashes)
        return hashes[order], np.concatenate([counted, np.ones(len(more), np.uint32)])[order]

    assert len(repeated) > 100
    monkeypatch.setattr(prefix_lists, "frequent", frequent)
    monkeypatch.setattr(prefix_lists.PrefixLists, "_repeats", lambda self: None)


def _by_prefix(frame: pd.DataFrame) -> tuple[Any, Any, dict]:
    """``neardup.dask.dedup`` of ``frame`` (ids in ``id``) in 3 partitions with prefix
    candidates: the kept rows, the clusters table and the stats."""
    stats: dict = {}
    kept, table = ndd.dedup(
        dd.from_pandas(frame, npartitions=3),
        id_field="id",
        clusters=True,
        candidates="prefix",
        stats=stats,
    )
    return kept, table, stats


def test_no_marks_past_one_hash_a_slot_of_the_largest_tables(client, debian, monkeypatch):
    """Past one hash a slot of the largest tables (here made 2^16 slots), neither Dask nor one
    machine marks repeated hashes: both rank by the sample alone, and list the same prefix
    pairs, more than with the marks."""
    from neardup import _core, prefix_lists

    texts = debian["text"].tolist()
    frame = pd.DataFrame({"id": range(len(texts)), "text": texts})
    monkeypatch.setattr(rarity, "RARITY_SHARE", 5)
    monkeypatch.setattr(prefix_lists, "RARITY_FRACTION", 5)
    monkeypatch.setattr(prefix_lists, "EXACT_HASHES", 0)
    marked = neardup.dedup(texts, candidates="prefix")
    monkeypatch.setattr(rarity, "MARK_BITS", 16)
    monkeypatch.setattr(_core, "REPEATS_MOST_BITS", 16)
    plain = neardup.dedup(texts, candidates="prefix")
    kept, table, stats = _by_prefix(frame)
    # The corpus's sketches hold more hashes than 2^16 slots.
    hashes = sum(len(s) for s in neardup.kernels.digest_batch(texts)["sketch"].to_pylist())
    assert hashes > 1 << 16
    assert stats["prefix_pairs"] == plain.stats["prefix_pairs"] > marked.stats["prefix_pairs"]
    _check_same(frame, kept, table, plain)


def test_the_workers_let_go_of_the_rarity_table_once_the_candidates_are_listed(client, debian):
    """The whole rarity table (its hash map and marks: up to a few hundred MB a process on the
    largest corpora) is let go of by every worker process once the candidates are listed, not
    held through the later stages."""

    # Run on the workers; nested, so that they travel by value (a worker need not import this
    # module).
    def record() -> None:
        """Each time the worker lets go of the whole table, how many it held then."""
        forget = rarity._forget_tables
        held: list[int] = []

        def recorded() -> None:
            held.append(rarity._shared_table.cache_info().currsize)
            forget()

        recorded.held = held  # type: ignore[attr-defined]
        recorded.forget = forget  # type: ignore[attr-defined]
        rarity._forget_tables = recorded

    def forgotten() -> tuple[list[int], int]:
        """What the worker held each time it let go of the table, and what it holds now."""
        recorded = rarity._forget_tables
        rarity._forget_tables = recorded.forget  # type: ignore[attr-defined]
        return recorded.held, rarity._shared_table.cache_info().currsize  # type: ignore[attr-defined]

    frame = pd.DataFrame({"id": range(len(debian)), "text": debian["text"]})
    client.run(record)
    try:
        _, _, stats = _by_prefix(frame)
    finally:
        seen = client.run(forgotten)
    assert stats["rarity_rows"] > 0 and stats["prefix_pairs"] > 0
    # Each worker let go once; one at least held the table then, none holds it now.
    assert [len(held) for held, _ in seen.values()] == [1] * len(seen)
    assert max(held[0] for held, _ in seen.values()) == 1
    assert [now for _, now in seen.values()] == [0] * len(seen)


def test_dedup_default_ids_are_global_rows_and_kept_is_lazy(client, debian):
    ddf = dd.from_pandas(debian[["text"]], npartitions=4)
    kept, table = ndd.dedup(ddf, clusters=True)
    assert isinstance(kept, dd.DataFrame) and kept.npartitions == 4
    assert table.compute()["id"].tolist() == list(range(len(debian)))
    assert len(ndd.dedup(ddf)) == neardup.dedup(debian["text"].tolist()).n_kept


def test_dedup_bad_text_fails_with_the_partition_and_row(client):
    df = pd.DataFrame({"text": ["a text", "another text", "third", None, "fifth"]})
    ddf = dd.from_pandas(df, npartitions=2)  # rows 0-2 and 3-4
    with pytest.raises(TypeError, match=r"partition 1, column 'text', row 0: the text is missing"):
        ndd.dedup(ddf)
    with pytest.raises(TypeError, match=r"partition 1, column 'text', row 0"):
        ndd.fingerprint(ddf).compute()
    numbers = dd.from_pandas(pd.DataFrame({"text": [1, 2, 3]}), npartitions=1)
    with pytest.raises(TypeError, match=r"partition 0, column 'text', row 0: the text is int 1"):
        ndd.dedup(numbers)


def test_dedup_with_empty_partitions_and_empty_input(client):
    df = pd.DataFrame({"text": ["a b c", "a b c", "x y z", "q"] * 3})
    ddf = dd.from_pandas(df, npartitions=4)
    holes = ddf[ddf["text"] != "x y z"].map_partitions(
        lambda p: p.iloc[:0] if len(p) and p.index[0] == 3 else p
    )
    for frame in (holes, dd.from_pandas(df.iloc[:0], npartitions=1)):
        full = frame.compute()
        want = neardup.dedup(full["text"].tolist())
        kept, table = ndd.dedup(frame, clusters=True)
        np.testing.assert_array_equal(table.compute()["kept_id"].to_numpy(), want.kept_row)
        assert kept.compute()["text"].tolist() == full["text"][want.keep].tolist()


def test_dedup_refuses_bad_arguments(debian):
    ddf = dd.from_pandas(debian, npartitions=2)
    with pytest.raises(KeyError, match="text_field 'body' is not a column"):
        ndd.dedup(ddf, text_field="body")
    with pytest.raises(KeyError, match="id_field 'url'"):
        ndd.dedup(ddf, id_field="url")
    with pytest.raises(ValueError, match="k must be in 0..=16"):
        ndd.dedup(ddf, k=20)
    with pytest.raises(ValueError, match="keep must be .* on Dask; a keep function needs"):
        ndd.dedup(ddf, keep=lambda doc: 1)
    # Refused naming the driver and what to do instead.
    with pytest.raises(ValueError, match="not supported on Dask: join the fields into one"):
        ndd.dedup(ddf, hasher=neardup.Simhasher(fields={"text": 1.0, "id": 0.5}))
    with pytest.raises(TypeError, match="expected a dask DataFrame"):
        ndd.dedup(debian)


def test_dedup_survives_a_worker_killed_mid_job(client, debian):
    """A worker process killed while the job runs: its nanny restarts it and the lost tasks are
    recomputed, so the job completes with the single-machine result (or fails with an error;
    a silently partial result is the one outcome not allowed)."""

    def slow(part):
        time.sleep(0.25)
        return part

    want = neardup.dedup(debian["text"].tolist(), k=3)
    ddf = dd.from_pandas(debian, npartitions=16).map_partitions(slow)
    pids = client.run(os.getpid)
    killed = threading.Event()

    def kill_one() -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if any(client.processing().values()):
                time.sleep(0.3)
                os.kill(next(iter(pids.values())), signal.SIGKILL)
                killed.set()
                return
            time.sleep(0.02)

    killer = threading.Thread(target=kill_one)
    killer.start()
    try:
        kept, table = ndd.dedup(ddf, k=3, id_field="id", clusters=True)
        result = (table.compute(), kept.compute())
    except Exception as err:  # a clear failure is allowed: it must name what happened
        result = None
        assert "worker" in str(err).lower() or type(err).__name__ in (
            "KilledWorker",
            "CancelledError",
        ), err
    finally:
        killer.join()
    assert killed.is_set(), "the worker was not killed while the job ran"
    if result is not None:
        got, kept_rows = result
        np.testing.assert_array_equal(got["cluster"].to_numpy(), want.cluster)
        np.testing.assert_array_equal(got["kept"].to_numpy(), want.keep)
        assert kept_rows["id"].tolist() == debian["id"][want.keep].tolist()
    client.wait_for_workers(2, timeout=30)


@pytest.mark.parametrize("npartitions", [1, 4, "with an empty partition"])
def test_pairs_near_the_threshold_are_decided_exactly_on_the_workers(client, npartitions):
    """Pairs of long documents whose estimate lies on the other side of the threshold from
    their exact Jaccard (or near it): decided on their exact shingle sets, the texts read again
    on the workers, as neardup.dedup decides them."""
    texts, removals = band_corpus()
    rows = planted()["text"].tolist()
    rng = random.Random(3)
    at = sorted(rng.sample(range(len(rows) + len(texts)), len(texts)))
    for place, text in zip(at, texts):  # the pairs spread among the planted families
        rows.insert(place, text)
    df = pd.DataFrame({"id": [f"doc{i}" for i in range(len(rows))], "text": rows})
    want = neardup.dedup(rows)
    assert want.stats["band_pairs_exact"] == len(WITHIN_K8)
    # The removals of the pairs are those of their exact Jaccards, which they report.
    for b, (a, exact) in removals.items():
        assert want.kept_row[at[b]] == at[a]
        assert want.jaccard[at[b]] == pytest.approx(exact, abs=1e-6)
    kept_pairs = set(at) - {at[b] for b in removals}
    assert kept_pairs <= set(np.flatnonzero(want.keep).tolist())
    if isinstance(npartitions, int):
        ddf = dd.from_pandas(df, npartitions=npartitions)
    else:  # three partitions, the middle one empty
        middle = len(df) // 2
        ddf = dd.concat(
            [
                dd.from_pandas(df.iloc[:middle], npartitions=1),
                dd.from_pandas(df.iloc[:0], npartitions=1),
                dd.from_pandas(df.iloc[middle:], npartitions=1),
            ]
        )
        assert ddf.npartitions == 3
    stats: dict = {}
    kept, table = ndd.dedup(ddf, id_field="id", clusters=True, stats=stats)
    _check_same(df, kept, table, want)
    # Every candidate pair in the band is decided exactly on Dask (here: the built ones).
    assert stats["band_pairs_exact"] == len(WITHIN_K8)
    assert stats["band_pairs_estimated"] == 0


@pytest.mark.parametrize("candidates", ["fingerprint", "prefix"])
def test_a_cut_sketch_against_a_whole_one_is_decided_exactly(client, candidates):
    """A long text (1,148 shingles: its sketch is cut) and its first words (928 or 898
    shingles, all its own: their sketch is their whole set): the exact Jaccards are 928 / 1,148
    (removed) and 898 / 1,148 (kept), each read from the long text's whole set kept by the
    digest and the short one's sketch, as neardup.dedup decides them."""
    words = random_words(2400, seed=11)
    long_a, long_b = words[:1150], words[1200:2350]
    texts = planted(40)["text"].tolist()
    pairs = [(" ".join(long_a), " ".join(long_a[:930])), (" ".join(long_b), " ".join(long_b[:900]))]
    rng = random.Random(4)
    for a, b in pairs:
        texts.insert(rng.randrange(len(texts) + 1), a)
        texts.insert(rng.randrange(texts.index(a) + 1, len(texts) + 1), b)
    df = pd.DataFrame({"id": [f"d{i}" for i in range(len(texts))], "text": texts})
    # k = 16: the fingerprints of a text and its first 80% of words lie 8 to 13 bits apart.
    want = neardup.dedup(texts, k=16, candidates=candidates)
    first = texts.index(pairs[0][1])
    assert want.kept_row[first] == texts.index(pairs[0][0])
    assert want.jaccard[first] == np.float32(928 / 1148)
    assert want.keep[texts.index(pairs[1][1])]
    assert want.stats["band_pairs_exact"] == 2
    stats: dict = {}
    kept, table = ndd.dedup(
        dd.from_pandas(df, npartitions=3),
        k=16,
        id_field="id",
        clusters=True,
        stats=stats,
        candidates=candidates,
    )
    _check_same(df, kept, table, want)
    assert stats["band_pairs_exact"] == 2


# -- the command ---------------------------------------------------------------------------------


def test_cli_dedup_on_dask_matches_the_single_machine_command(tmp_path, debian, capsys):
    assert run(capsys, "dedup", "--sample", "-o", tmp_path / "one.jsonl", "--quiet")[0] == 0
    want = [
        json.loads(line)["id"]
        for line in (tmp_path / "one.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    code, _, _ = run(
        capsys,
        "dedup",
        "--sample",
        "--workers",
        2,
        "-o",
        tmp_path / "kept",
        "--clusters",
        tmp_path / "c.csv",
        "--quiet",
    )
    assert code == 0
    parts = sorted(os.listdir(tmp_path / "kept"))
    got = [
        json.loads(line)["id"]
        for f in parts
        for line in (tmp_path / "kept" / f).read_text(encoding="utf-8").splitlines()
    ]
    assert got == want
    # The kept lines as the sample holds them, byte for byte, as one machine writes them.
    written = b"".join((tmp_path / "kept" / f).read_bytes() for f in parts)
    assert written == (tmp_path / "one.jsonl").read_bytes()
    table = pd.read_csv(tmp_path / "c.csv")  # a file, as its name says
    assert table["id"].tolist() == debian["id"].tolist()
    assert table["kept"].sum() == len(want)

    # Parquet partitions in a folder, keep longest: the same kept rows as neardup.dedup.
    folder = tmp_path / "corpus"
    dd.from_pandas(debian, npartitions=12).to_parquet(
        folder, write_index=False, name_function=lambda i: f"p{i:02d}.parquet"
    )
    code, _, _ = run(
        capsys,
        "dedup",
        folder,
        "--workers",
        2,
        "--keep",
        "longest",
        "-o",
        tmp_path / "kept.parquet",
        "--quiet",
    )
    assert code == 0
    kept = pd.read_parquet(tmp_path / "kept.parquet")
    want_longest = neardup.dedup(debian["text"].tolist(), keep="longest")
    assert kept["id"].tolist() == debian["id"][want_longest.keep].tolist()


def test_cli_dask_decides_pairs_near_the_threshold_as_the_single_machine_command(tmp_path, capsys):
    texts, removals = band_corpus()
    path = tmp_path / "band.jsonl"
    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(texts)))
    summaries, tables = [], []
    for engine, clusters in (([], tmp_path / "one.csv"), (["--workers", 2], tmp_path / "c.csv")):
        code, out, _ = run(
            capsys, "dedup", path, *engine, "--dry-run", "--clusters", clusters, "--json"
        )
        assert code == 0
        summaries.append(json.loads(out))
        files = sorted(os.listdir(clusters)) if clusters.is_dir() else [""]
        tables.append(pd.concat(pd.read_csv(clusters / f if f else clusters) for f in files))
    one, dask_run = tables
    # The same rows, written alike (the Jaccard to 4 places on both).
    pd.testing.assert_frame_equal(one.reset_index(drop=True), dask_run.reset_index(drop=True))
    assert (one["jaccard"] == one["jaccard"].round(4)).all()
    for b, (a, exact) in removals.items():
        assert (dask_run["kept_id"].iloc[b], dask_run["jaccard"].iloc[b]) == (
            a,
            pytest.approx(exact, abs=1e-4),
        )
    assert summaries[1]["removed"] == len(removals)
    for summary in summaries:
        assert summary["evidence"]["band_pairs_exact"] == len(WITHIN_K8)
        assert summary["evidence"]["band_pairs_estimated"] == 0
        # The candidate pairs are the pairs compared, one or more for each removal.
        compared = summary["evidence"]["pairs_compared"]
        assert summary["candidate_pairs"] == compared >= len(removals)
        assert summary["evidence"]["prefix_pairs"] >= compared
    # The summaries' cluster lines say the same (prefix candidates: no k; fingerprints: k).
    for candidates, rule in (("prefix", "with shingle"), ("fingerprint", "within k=8")):
        said = []
        for engine in ([], ["--workers", 2]):
            code, out, err = run(
                capsys, "dedup", path, *engine, "--dry-run", "--candidates", candidates
            )
            assert code == 0, err
            said.append([line for line in out.splitlines() if "of near-duplicates" in line])
        assert said[0] == said[1] and len(said[0]) == 1 and rule in said[0][0], said


def test_cli_dask_scratch_folder_holds_the_run_and_is_emptied(
    tmp_path, debian, capsys, monkeypatch
):
    """--scratch: the digests and intermediate tables go to that folder (made if missing) while
    the run lasts, and are removed after it; the kept rows are the single machine's."""
    import neardup.dask.spill

    seen: list[str] = []
    real = neardup.dask.spill.spill

    def spy(frame, folder, name, *into):
        out = real(frame, folder, name, *into)
        seen.append(sorted(os.listdir(folder)))
        return out

    for module in (steps, rarity, components):  # every module of neardup.dask that spills a table
        assert module.spill is real
        monkeypatch.setattr(module, "spill", spy)
    scratch = tmp_path / "scratch" / "run"
    code, _, _ = run(
        capsys,
        "dedup",
        "--sample",
        "--workers",
        2,
        "--scratch",
        scratch,
        "-o",
        tmp_path / "kept",
        "--quiet",
    )
    assert code == 0
    # Each spilled table's files were in the folder while the run lasted, beside the digests.
    assert seen and all(any(f.startswith("digest.") for f in names) for names in seen)
    assert any(f.startswith("spill.rows.") for f in seen[-1])
    assert any(f.startswith("spill.edges.") for f in seen[-1])
    assert os.listdir(scratch) == []
    got = [
        json.loads(line)["id"]
        for f in sorted(os.listdir(tmp_path / "kept"))
        for line in (tmp_path / "kept" / f).read_text(encoding="utf-8").splitlines()
    ]
    want = neardup.dedup(debian["text"].tolist())
    assert got == debian["id"][want.keep].tolist()
    # --scratch is for the Dask path only, and names a folder.
    code, _, err = run(capsys, "dedup", "--sample", "--scratch", scratch, "--dry-run")
    assert code == 2 and "--scratch goes with --scheduler or --workers" in err
    (tmp_path / "file").write_text("x")
    code, _, err = run(
        capsys, "dedup", "--sample", "--workers", 1, "--scratch", tmp_path / "file", "--dry-run"
    )
    assert code == 2 and "is not a folder" in err


def test_cli_dask_usage_errors(tmp_path, capsys):
    dry = ("dedup", "--sample", "--workers", 2, "--dry-run")
    code, _, err = run(capsys, *dry, "--scheduler", "tcp://127.0.0.1:1")
    assert code == 2 and "give one of them" in err
    code, _, err = run(capsys, *dry, "--report", tmp_path / "r.html")
    assert code == 2 and "--report is not supported" in err
    (tmp_path / "a.csv").write_text("text\nx\n")
    code, _, err = run(capsys, "dedup", tmp_path / "a.csv", "--workers", 1, "--dry-run")
    assert code == 2 and "Parquet or JSONL" in err


def test_dedup_stats_count_the_stages(client, debian, caplog, capsys):
    stats: dict = {}
    with caplog.at_level(logging.DEBUG, logger="neardup"):
        ndd.dedup(
            dd.from_pandas(debian, npartitions=3),
            stats=stats,
            max_pairs=None,
            progress=True,
            candidates="fingerprint",  # the candidate pairs counted below are fingerprints'
        )
    # tqdm's bar of the six steps went to stderr and reached its end.
    assert "neardup dask dedup: 100%" in capsys.readouterr().err
    # The neardup logger says what it did: the stages at DEBUG, the figures at INFO.
    (done,) = [r for r in caplog.records if r.levelno == logging.INFO]
    assert (done.documents, done.removed, done.candidate_pairs) == (
        stats["documents"],
        stats["removed"],
        stats["candidate_pairs"],
    )
    stages = [r.getMessage().split(" in ")[0] for r in caplog.records if r.levelno == logging.DEBUG]
    assert [s for s in stages if s.startswith("dask dedup: ")] == [
        f"dask dedup: {s}"
        for s in ("digest", "copies", "candidates", "verify", "components", "stars")
    ]
    fps = neardup.Simhasher().fingerprint_many(debian["text"].tolist())
    assert stats["documents"] == len(debian)
    # The candidate pairs are the pairs of distinct fingerprints within k = 8, by brute force.
    distinct = np.unique(fps[fps != 0])
    d = np.bitwise_count(distinct[:, None] ^ distinct[None, :])
    want = int((np.triu(d <= THRESHOLD_K, 1)).sum())
    assert want > 100
    assert stats["candidate_pairs"] == want
    one = neardup.dedup(debian["text"].tolist(), candidates="fingerprint")
    assert one.stats["candidate_pairs"] == want
    assert (stats["removed"], stats["clusters"]) == (one.n_removed, one.n_clusters)
    # Short texts' candidates too; a verified pair is a candidate pair whose Jaccard passed.
    assert stats["short_pairs"] > 0
    assert 0 < stats["verified_pairs"] <= stats["candidate_pairs"] + stats["short_pairs"]
    assert stats["rounds"] == 0  # the verified pairs fit one partition: no round
    assert all(stats[f"seconds_{s}"] >= 0 for s in ("digest", "candidates", "verify", "stars"))
    # max_pairs bounds the candidate pairs, as on one machine, naming their number.
    by_fp = {"candidates": "fingerprint"}
    with pytest.raises(neardup.TooManyPairsError, match=f"{want} candidate pairs"):
        ndd.dedup(dd.from_pandas(debian, npartitions=3), max_pairs=want - 1, **by_fp)
    with pytest.raises(neardup.TooManyPairsError):
        neardup.dedup(debian["text"].tolist(), max_pairs=want - 1, **by_fp)
    # With prefixes the candidate pairs are the distinct pairs compared, which max_pairs bounds:
    # at least the verified ones, at most those listed (a pair once for each shared hash).
    by_prefix: dict = {}
    ndd.dedup(dd.from_pandas(debian, npartitions=3), stats=by_prefix, candidates="prefix")
    compared = by_prefix["pairs_compared"]
    assert by_prefix["candidate_pairs"] == compared
    assert 0 < by_prefix["verified_pairs"] <= compared <= by_prefix["prefix_pairs"]
    ndd.dedup(dd.from_pandas(debian, npartitions=3), max_pairs=compared, candidates="prefix")
    with pytest.raises(neardup.TooManyPairsError, match=f"{compared} candidate pairs compared"):
        ndd.dedup(dd.from_pandas(debian, npartitions=3), max_pairs=compared - 1)


@pytest.mark.parametrize("candidates", ["fingerprint", "prefix"])
def test_the_client_receives_counts_only(client, debian, monkeypatch, candidates):
    """Nothing per document comes back to the client while dedup runs: every computed result is
    a count per partition, a total or the search's bit order (64 bits); with prefixes, no
    rarity table either (each partition's is made and read on the workers)."""

    with computed(monkeypatch) as got:
        ddf = dd.from_pandas(debian, npartitions=4)
        kept, table = ndd.dedup(ddf, id_field="id", clusters=True, candidates=candidates)
        sizes = [len(x) if hasattr(x, "__len__") else 1 for x in got]
        assert got and max(sizes) <= 64, sizes
    # The outputs are partitioned like the input, computed where they are written.
    assert kept.npartitions == table.npartitions == 4
    want = neardup.dedup(debian["text"].tolist(), candidates=candidates)
    _check_same(debian, kept, table, want)


@pytest.mark.parametrize("candidates", ["fingerprint", "prefix"])
def test_the_workers_hold_no_intermediate_table(client, debian, monkeypatch, candidates):
    """At the end of the matching, while every stage's table is still in use, the cluster's
    memory holds the results (the rows removed or with a partner: one partition in all, as they
    fit one) and nothing else: the per-row table, the candidate and verified pairs, the rarity
    tables and the labels lie in the scratch folder, not in the workers' memory."""
    real = steps._wait
    held: list = []

    def spy(collection):
        real(collection)
        held.extend(key for key, workers in client.who_has().items() if workers)

    monkeypatch.setattr(steps, "_wait", spy)  # the name the steps call (cluster.py defines it)
    ddf = dd.from_pandas(debian, npartitions=5)
    kept, table = ndd.dedup(
        ddf, id_field="id", clusters=True, max_pairs=None, candidates=candidates
    )
    monkeypatch.undo()
    assert len(held) == 1, sorted(held)
    want = neardup.dedup(debian["text"].tolist(), candidates=candidates)
    _check_same(debian, kept, table, want)


def _family_corpus(draw_ints: list[int]) -> list[str]:
    """Texts from a list of draws: families of a base text and chains of edits of it (each
    member an edit of the one before), copies, short texts and empty texts, in drawn order."""
    import random

    rng = random.Random(draw_ints[0])
    words = [f"w{i}" for i in range(60)]
    texts: list[str] = []
    for size in draw_ints[1:]:
        base = [rng.choice(words) for _ in range(2 + size % 30)]
        member = list(base)
        texts.append(" ".join(member))
        for _ in range(size % 4):
            member = list(member)
            member[rng.randrange(len(member))] = rng.choice(words)
            if rng.random() < 0.3:
                member.append(rng.choice(words))
            texts.append(" ".join(member))
        if size % 5 == 0:
            texts.append(" ".join(base).upper())
        if size % 7 == 0:
            texts.append("")
    rng.shuffle(texts)
    return texts


@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    draws=st.lists(st.integers(0, 10_000), min_size=20, max_size=60),
    npartitions=st.integers(1, 5),
    keep=st.sampled_from(["first", "longest"]),
    threshold=st.sampled_from([0.8, 0.6, None]),
    k=st.integers(2, 10),
    band=st.lists(st.integers(0, len(WITHIN_K8) - 1), max_size=3, unique=True),
    candidates=st.sampled_from(["fingerprint", "prefix"]),
)
def test_dedup_matches_single_machine_on_random_corpora(
    client, band_pairs, draws, npartitions, keep, threshold, k, band, candidates
):
    texts = _family_corpus(draws)
    # Pairs of long documents whose estimate lies near 0.8 (decided exactly), among the others.
    rng = random.Random(draws[0])
    for a, b, _ in (band_pairs[p] for p in band):
        texts.insert(rng.randrange(len(texts) + 1), a)
        texts.insert(rng.randrange(len(texts) + 1), b)
    df = pd.DataFrame({"id": [f"d{i}" for i in range(len(texts))], "text": texts})
    want = neardup.dedup(texts, k=k, keep=keep, threshold=threshold, candidates=candidates)
    stats: dict = {}
    kept, table = ndd.dedup(
        dd.from_pandas(df, npartitions=min(npartitions, len(df))),
        k=k,
        id_field="id",
        keep=keep,
        threshold=threshold,
        clusters=True,
        candidates=candidates,
        stats=stats,
    )
    _check_same(df, kept, table, want)
    if candidates == "prefix" and threshold is not None:
        # The same rarity order (and marks of repeated hashes): the same prefix pairs.
        assert stats["prefix_pairs"] == want.stats["prefix_pairs"]


def test_cli_dask_bad_text_is_a_clear_input_error(tmp_path, capsys):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"text": "one"}\n{"text": "two"}\n{"text": null}\n', encoding="utf-8")
    code, _, err = run(capsys, "dedup", corpus, "--workers", 1, "-o", tmp_path / "kept")
    assert code == 2
    # Refused as the line is read (the third, at byte 32), as one machine refuses it.
    assert f"{corpus}: the line at byte 32: field 'text' is null, expected a string" in err
    assert not (tmp_path / "kept").exists() and not [
        p for p in os.listdir(tmp_path) if p.startswith(".")
    ]


def test_pair_nodes_gives_each_pair_once_and_opens_each_partition_once():
    """A task's pairs (repeated, either way round, any partitions) come out once each, a < b,
    with their texts gathered from their partitions: one ``take`` a partition, of its rows in
    order, against a brute-force set of the pairs."""
    counts = [7, 3, 12, 5]
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    rng = np.random.default_rng(5)
    x = rng.integers(0, sum(counts), 400)
    y = (x + rng.integers(1, sum(counts), 400)) % sum(counts)
    taken: list = []

    def take(j: int, rows: np.ndarray) -> np.ndarray:
        taken.append(j)
        assert (np.diff(rows) > 0).all() and rows.min() >= 0 and rows.max() < counts[j]
        return rows + starts[j]

    a, b, at_a, at_b, pieces = verification._pair_nodes(
        pd.DataFrame({"a": x, "b": y}), starts, take
    )
    want = sorted({(min(p, q), max(p, q)) for p, q in zip(x.tolist(), y.tolist())})
    assert list(zip(a.tolist(), b.tolist())) == want
    assert sorted(taken) == sorted(set(taken))  # each partition read once
    texts = np.concatenate(pieces)
    np.testing.assert_array_equal(texts, np.unique(np.concatenate([x, y])))
    np.testing.assert_array_equal(texts[at_a], a)
    np.testing.assert_array_equal(texts[at_b], b)


def test_verify_part_checks_each_pair_once_where_the_sketches_lie(tmp_path, debian):
    """Step 4 on pairs across three partitions' digest files (repeated, either way round, some
    of texts whose sketch is cut): each pair once, with the Jaccard of its sketches, those at
    the threshold or in its band, against a brute-force check of every distinct pair."""
    from neardup import kernels
    from neardup.verify import in_band

    rng = random.Random(11)
    words = [f"w{i}" for i in range(3_000)]
    long = []
    for _ in range(8):  # families of long texts: more shingles than a sketch holds
        base = [rng.choice(words) for _ in range(1_500)]
        for _ in range(4):
            edited = list(base)
            for _ in range(rng.randint(0, 60)):
                edited[rng.randrange(len(edited))] = rng.choice(words)
            long.append(" ".join(edited))
    texts = debian["text"].tolist()[:268] + long
    rng.shuffle(texts)
    counts = [100, 80, 120]
    starts = np.array([0, 100, 180], np.int64)
    hasher = neardup.Simhasher()
    for i, (start, count) in enumerate(zip(starts.tolist(), counts)):
        part = pd.DataFrame({"text": texts[start : start + count]})
        digest._digest_part(
            part, "text", None, hasher, 3, str(tmp_path), partition_info={"number": i}
        )
    pairs = np.random.default_rng(3).integers(0, len(texts), (3_000, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    # Every family's pairs too, so that some pass.
    where = {t: i for i, t in enumerate(texts)}
    family = [where[t] for t in long]
    extra = [
        (family[f + i], family[f + j])
        for f in range(0, 32, 4)
        for i in range(4)
        for j in range(4)
        if i != j
    ]
    x = np.concatenate([pairs[:, 0], [p for p, _ in extra]])
    y = np.concatenate([pairs[:, 1], [q for _, q in extra]])
    threshold = 0.5
    got, compared = verification._verify_part(
        pd.DataFrame({"a": x, "b": y}), [0, 1, 2], starts, str(tmp_path), threshold
    )

    digests = kernels.digest_batch(texts, hasher, shingle=3, size=SKETCH_SIZE)
    sketches = digests.column("sketch")
    distinct = np.array(sorted({(min(p, q), max(p, q)) for p, q in zip(x.tolist(), y.tolist())}))
    jaccard = kernels.verify_rows(sketches, distinct[:, 0], sketches, distinct[:, 1])
    sizes = np.array([len(s) for s in sketches.to_pylist()])
    cut = (sizes[distinct[:, 0]] >= SKETCH_SIZE) | (sizes[distinct[:, 1]] >= SKETCH_SIZE)
    band = in_band(jaccard, cut, threshold, SKETCH_SIZE)
    near = (jaccard >= threshold) | band
    assert cut.any() and near.sum() >= 24
    want = {
        (int(p), int(q)): (float(j), bool(b))
        for (p, q), j, b, n in zip(distinct, jaccard, band, near)
        if n
    }
    found = {
        (int(p), int(q)): (float(j), bool(b))
        for p, q, j, b in got[["a", "b", "jaccard", "band"]].itertuples(index=False)
    }
    assert found.keys() == want.keys() and len(got) == len(found)  # each pair once
    assert compared == len(distinct)  # each distinct pair compared once
    for pair, (j, b) in want.items():
        assert found[pair][0] == pytest.approx(j, abs=1e-6) and found[pair][1] == b


@pytest.mark.parametrize("npartitions", [1, 5])
def test_prefix_stats_count_each_verified_pair_once(client, debian, npartitions):
    """With prefixes a pair found under hashes sent to several tasks is routed from each to
    one task, and verified there once: the verified pairs are counted (and kept) once, as
    many as the pairs of distinct texts at Jaccard >= 0.8 by brute force (every sketch here is
    the whole shingle set, and prefixes find every such pair); the pairs found count repeats."""
    from neardup import kernels

    texts = debian["text"].tolist()
    digests = kernels.digest_batch(texts, neardup.Simhasher(), shingle=3, size=SKETCH_SIZE)
    heads = np.flatnonzero(
        ~digests.select(["key", "key_hi", "fingerprint"]).to_pandas().duplicated().to_numpy()
    )
    i, j = np.triu_indices(len(heads), 1)
    sketches = digests.column("sketch")
    jaccard = kernels.verify_rows(sketches, heads[i], sketches, heads[j])
    want = int((jaccard >= 0.8).sum())
    assert want > 100
    stats: dict = {}
    ndd.dedup(dd.from_pandas(debian, npartitions=npartitions), stats=stats, candidates="prefix")
    assert stats["verified_pairs"] == want
    assert stats["prefix_pairs"] > 2 * want  # pairs found under several hashes, counted each time
    assert stats["band_pairs_exact"] == 0 and stats["short_pairs_skipped"] == 0


def test_near_identical_texts_past_the_cap_give_the_single_machine_answer(client):
    """20,000 texts one word apart from one sentence: their first shared prefix hash is common,
    past the cap and cannot be split, so both executors compare the group a cap of texts at a
    time, by the same budget of splits, and keep the same documents with the same pairs left
    uncompared (Dask kept 18,402 and one machine 17,765 when each split by its own budget)."""
    from test_dense_corpora import near_identical

    texts = near_identical(20_000)
    want = neardup.dedup(texts, candidates="prefix")
    assert want.stats["short_pairs_skipped"] > 0
    kept, table, stats = _by_prefix(pd.DataFrame({"id": range(len(texts)), "text": texts}))
    assert stats["short_pairs_skipped"] == want.stats["short_pairs_skipped"]
    _check_same(pd.DataFrame({"id": range(len(texts))}), kept, table, want)
