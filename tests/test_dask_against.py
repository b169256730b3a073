"""neardup.dask_against: a dask DataFrame deduplicated against a dedup index gives the single
machine's answer (neardup.dedup(..., against=)) for any partitioning, updates included."""

from __future__ import annotations

import shutil

import pandas as pd
import pytest

dd = pytest.importorskip("dask.dataframe")

import neardup  # noqa: E402
from brute import family_corpus  # noqa: E402
from neardup import DedupIndex  # noqa: E402
from neardup.dask_against import dedup_against  # noqa: E402


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
    neardup.dask_against._OPENED.clear()  # earlier tests ran partitions in this process
    with local_cluster(2) as cluster, distributed.Client(cluster) as client:
        kept, table = dedup_against(
            dd.from_pandas(new, npartitions=5), str(tmp_path / "a.ndx"), id_field="u", clusters=True
        )
        t = table.compute()
        opened = client.run(lambda: [key[0] for key in neardup.dask_against._OPENED])
        assert kept.compute()["u"].tolist() == [i for i, k in zip(single.ids, single.keep) if k]
    assert t["kept"].tolist() == single.keep.tolist()
    assert t["kept_id"].tolist() == [
        i if k else d for i, k, d in zip(single.ids, single.keep, single.duplicate_of)
    ]
    assert t["jaccard"].tolist() == single.jaccard.tolist()
    assert t["in_index"].tolist() == single.in_index.tolist()
    paths = [p for got in opened.values() for p in got]
    assert paths and set(paths) == {str(tmp_path / "a.ndx")}
    assert neardup.dask_against._OPENED == {}  # the client opened nothing of its own


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
