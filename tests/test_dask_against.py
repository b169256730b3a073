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
