"""neardup.dask.against: a dask DataFrame deduplicated against a dedup index gives the single
machine's answer (neardup.dedup(..., against=)) for any partitioning, updates included."""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from computed import computed

dd = pytest.importorskip("dask.dataframe")

import neardup  # noqa: E402
from brute import family_corpus  # noqa: E402
from neardup import DedupIndex  # noqa: E402
from neardup.dask.against import dedup_against  # noqa: E402


def corpus(tmp_path):
    docs = family_corpus(30, seed=13)
    split = len(docs) // 2
    index = DedupIndex.build(docs[:split], tmp_path / "a.ndx", ids=[f"a{i}" for i in range(split)])
    new = pd.DataFrame({"text": docs[split:], "u": [f"b{i}" for i in range(len(docs) - split)]})
    return index, new


@pytest.mark.parametrize("npartitions", [1, 3, 7])
def test_the_same_answer_as_one_machine(tmp_path, npartitions):
    index, new = corpus(tmp_path)
    single = neardup.dedup(new.to_dict("records"), against=index, id_field="u")
    assert single.n_removed and single.keep.any()
    kept, table = dedup_against(
        dd.from_pandas(new, npartitions=npartitions), index, id_field="u", clusters=True
    )
    assert kept.compute()["u"].tolist() == [i for i, k in zip(single.ids, single.keep) if k]
    t = table.compute()
    assert t["id"].tolist() == single.ids and t["kept"].tolist() == single.keep.tolist()
    assert t["kept_id"].tolist() == [
        i if k else d for i, k, d in zip(single.ids, single.keep, single.duplicate_of)
    ]
    assert (
        t["in_index"].tolist() == single.in_index.tolist()
        and t["jaccard"].tolist() == single.jaccard.tolist()
    )


def test_update_appends_what_one_machine_appends(tmp_path):
    index, new = corpus(tmp_path)
    shutil.copy(tmp_path / "a.ndx", tmp_path / "b.ndx")
    neardup.dedup(
        new.to_dict("records"),
        against=DedupIndex.open(tmp_path / "b.ndx"),
        id_field="u",
        update=True,
    )
    dedup_against(
        dd.from_pandas(new, npartitions=4), str(tmp_path / "a.ndx"), id_field="u", update=True
    )
    assert DedupIndex.open(tmp_path / "a.ndx").ids == DedupIndex.open(tmp_path / "b.ndx").ids
    assert (tmp_path / "a.ndx").read_bytes() == (tmp_path / "b.ndx").read_bytes()


def test_workers_in_processes_open_the_index_themselves(tmp_path):
    # A LocalCluster of two worker processes: each partition's task opens the index file at its
    # path (the client sends the path, not the index), and the answer is one machine's.
    distributed = pytest.importorskip("distributed")
    from neardup.dask import local_cluster

    index, new = corpus(tmp_path)
    single = neardup.dedup(new.to_dict("records"), against=index, id_field="u")
    neardup.dask.against._OPENED.clear()  # earlier tests ran partitions in this process
    with local_cluster(2) as cluster, distributed.Client(cluster) as client:
        kept, table = dedup_against(
            dd.from_pandas(new, npartitions=5), str(tmp_path / "a.ndx"), id_field="u", clusters=True
        )
        t = table.compute()
        opened = client.run(lambda: [key[0] for key in neardup.dask.against._OPENED])
        assert kept.compute()["u"].tolist() == [i for i, k in zip(single.ids, single.keep) if k]
    assert t["kept"].tolist() == single.keep.tolist()
    assert t["kept_id"].tolist() == [
        i if k else d for i, k, d in zip(single.ids, single.keep, single.duplicate_of)
    ]
    assert t["jaccard"].tolist() == single.jaccard.tolist()
    assert t["in_index"].tolist() == single.in_index.tolist()
    paths = [p for got in opened.values() for p in got]
    assert paths and set(paths) == {str(tmp_path / "a.ndx")}
    assert neardup.dask.against._OPENED == {}  # the client opened nothing of its own


def test_the_command_deduplicates_against_an_index_on_dask(tmp_path):
    from neardup.cli import main

    index, new = corpus(tmp_path)
    single = neardup.dedup(new.to_dict("records"), against=index, id_field="u")
    new.rename(columns={"u": "id"}).to_json(tmp_path / "b.jsonl", orient="records", lines=True)
    args = ["dedup", str(tmp_path / "b.jsonl"), "--against", str(tmp_path / "a.ndx")]
    code = main(
        [
            *args,
            "--workers",
            "2",
            "-o",
            str(tmp_path / "out"),
            "--clusters",
            str(tmp_path / "ev.parquet"),
            "-q",
        ]
    )
    assert code == 0
    ev = pd.read_parquet(tmp_path / "ev.parquet")
    assert ev["kept"].tolist() == single.keep.tolist()
    assert ev["kept_id"].tolist() == [
        i if k else d for i, k, d in zip(single.ids, single.keep, single.duplicate_of)
    ]
    out = pd.concat(pd.read_json(p, lines=True) for p in sorted((tmp_path / "out").glob("*.jsonl")))
    assert out["id"].tolist() == [i for i, k in zip(single.ids, single.keep) if k]


# -- equality with one machine on random corpora, on a cluster of two worker processes ---------


@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    from neardup.dask import local_cluster

    with local_cluster(2, memory_limit="2GiB") as cluster, distributed.Client(cluster) as c:
        yield c


def _texts(draws: list[int]) -> tuple[list[str], list[str]]:
    """(the index's corpus, the new documents) from a list of draws: families of a base text
    and chains of edits (each member an edit of the one before), spread over both sides, copies
    of index documents and of new ones, short texts of 1 to 6 words and empty texts."""
    import random

    rng = random.Random(draws[0])
    words = [f"w{i}" for i in range(50)]
    old: list[str] = []
    new: list[str] = []
    for size in draws[1:]:
        base = [rng.choice(words) for _ in range(1 + size % 6 if size % 3 == 0 else 6 + size % 30)]
        member = list(base)
        family = [" ".join(member)]
        for _ in range(size % 5):
            member = list(member)
            member[rng.randrange(len(member))] = rng.choice(words)
            if rng.random() < 0.3:
                member.append(rng.choice(words))
            family.append(" ".join(member))
        if size % 4 == 0:
            family.append(family[-1].upper())
        if size % 11 == 0:
            family.append("")
        for text in family:
            side = rng.random()
            (old if side < 0.3 else new).append(text)
            if side > 0.85:
                new.append(text)
    rng.shuffle(old)
    rng.shuffle(new)
    return old, new


def _frame_with_an_empty_partition(new: pd.DataFrame, npartitions: int, empty: bool) -> Any:
    ddf = dd.from_pandas(new, npartitions=max(1, min(npartitions, len(new))), sort=False)
    if not empty:
        return ddf
    parts = ddf.to_delayed()
    at = len(parts) // 2
    import dask

    blank = dask.delayed(ddf._meta.copy())
    return dd.from_delayed(parts[:at] + [blank] + parts[at:], meta=ddf._meta, verify_meta=False)


def _check_as_one_machine(
    single: Any, kept: Any, table: Any, new: pd.DataFrame, ids: list[Any]
) -> None:
    t = table.compute()
    assert t["id"].tolist() == ids == single.ids
    assert t["kept"].tolist() == single.keep.tolist()
    assert t["kept_id"].tolist() == [
        i if k else d for i, k, d in zip(single.ids, single.keep, single.duplicate_of)
    ]
    assert t["in_index"].tolist() == single.in_index.tolist()
    assert t["jaccard"].tolist() == single.jaccard.tolist()
    got = kept.compute()
    assert got["u"].tolist() == new["u"][single.keep].tolist()
    assert got["text"].tolist() == new["text"][single.keep].tolist()


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    draws=st.lists(st.integers(0, 10_000), min_size=10, max_size=50),
    npartitions=st.integers(1, 5),
    empty=st.booleans(),
    threshold=st.sampled_from([None, 0.6]),
    k=st.sampled_from([None, 3, 10]),
    shape=st.sampled_from([(64, 1), (16, 1), (128, 2), (32, 4)]),
    shingle=st.sampled_from([3, 2]),
    named=st.booleans(),
    update=st.booleans(),
)
def test_random_corpora_give_one_machine_answer(
    client, draws, npartitions, empty, threshold, k, shape, shingle, named, update
):
    old, new_texts = _texts(draws)
    folder = tempfile.mkdtemp(prefix="neardup-test-")
    try:
        a, b = os.path.join(folder, "a.ndx"), os.path.join(folder, "b.ndx")
        DedupIndex.build(
            old,
            a,
            ids=[f"a{i}" for i in range(len(old))] if named else None,
            sketch_bytes=shape[0],
            sketch_bits=shape[1],
            shingle=shingle,
        )
        shutil.copy(a, b)
        new = pd.DataFrame({"text": new_texts, "u": [f"b{i}" for i in range(len(new_texts))]})
        id_field = "u" if named else None
        single = neardup.dedup(
            new.to_dict("records"),
            against=DedupIndex.open(b),
            id_field=id_field,
            text_field="text",
            k=k,
            update=update,
            **({} if threshold is None else {"threshold": threshold}),
        )
        stats: dict = {}
        kept, table = dedup_against(
            _frame_with_an_empty_partition(new, npartitions, empty),
            a,
            id_field=id_field,
            k=k,
            threshold=threshold,
            clusters=True,
            update=update,
            stats=stats,
        )
        ids = new["u"].tolist() if named else list(range(len(new)))
        _check_as_one_machine(single, kept, table, new, ids)
        assert stats["documents"] == len(new) and stats["removed"] == single.n_removed
        assert stats["in_index"] == int(single.in_index.sum())
        if update:
            with open(a, "rb") as fa, open(b, "rb") as fb:
                assert fa.read() == fb.read()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_the_client_receives_counts_only(client, tmp_path, monkeypatch):
    """Nothing per document comes back to the client: every computed result is a count per
    partition, a total or the search's bit order (64 bits), updates included (the client reads
    the kept digests from the scratch folder, a partition at a time, to append them)."""

    docs = family_corpus(90, seed=5)
    split = len(docs) // 3
    DedupIndex.build(docs[:split], tmp_path / "a.ndx", ids=[f"a{i}" for i in range(split)])
    shutil.copy(tmp_path / "a.ndx", tmp_path / "b.ndx")
    texts = docs[split:] + docs[: split // 4]  # and copies of index documents
    new = pd.DataFrame({"text": texts, "u": [f"b{i}" for i in range(len(texts))]})
    single = neardup.dedup(
        new.to_dict("records"),
        against=DedupIndex.open(tmp_path / "b.ndx"),
        id_field="u",
        update=True,
    )
    assert single.in_index.any() and (~single.keep & ~single.in_index).any()
    with computed(monkeypatch) as got:
        kept, table = dedup_against(
            dd.from_pandas(new, npartitions=4),
            str(tmp_path / "a.ndx"),
            id_field="u",
            clusters=True,
            update=True,
        )
    sizes = [len(x) if hasattr(x, "__len__") else 1 for x in got]
    assert got and max(sizes) <= 64 < len(new), sizes
    _check_as_one_machine(single, kept, table, new, new["u"].tolist())
    assert (tmp_path / "a.ndx").read_bytes() == (tmp_path / "b.ndx").read_bytes()


def test_an_update_needs_ids_of_the_index_kind(tmp_path):
    index, new = corpus(tmp_path)  # string ids
    before = (tmp_path / "a.ndx").read_bytes()
    with pytest.raises(TypeError, match="ids that are strings"):
        dedup_against(dd.from_pandas(new, npartitions=2), index, update=True)
    numbered = new.assign(u=range(len(new)))
    with pytest.raises(TypeError, match="ids that are strings"):
        dedup_against(dd.from_pandas(numbered, npartitions=2), index, id_field="u", update=True)
    assert (tmp_path / "a.ndx").read_bytes() == before
    assert not [p for p in os.listdir(tmp_path) if ".tmp" in p]


def test_max_pairs_bounds_the_search_as_on_one_machine(tmp_path):
    # The user's limit reaches each partition's search of the index (not only "a limit or
    # none"): 0 refuses the pairs this corpus has, as neardup.dedup(against=) does.
    index, new = corpus(tmp_path)
    with pytest.raises(neardup.TooManyPairsError):
        neardup.dedup(new.to_dict("records"), against=index, id_field="u", max_pairs=0)
    with pytest.raises(neardup.TooManyPairsError):
        dedup_against(dd.from_pandas(new, npartitions=3), index, id_field="u", max_pairs=0)
    single = neardup.dedup(new.to_dict("records"), against=index, id_field="u", max_pairs=None)
    kept = dedup_against(dd.from_pandas(new, npartitions=3), index, id_field="u", max_pairs=None)
    assert kept.compute()["u"].tolist() == [i for i, k in zip(single.ids, single.keep) if k]
    with pytest.raises(ValueError, match="max_pairs"):
        dedup_against(dd.from_pandas(new, npartitions=3), index, id_field="u", max_pairs=-1)
