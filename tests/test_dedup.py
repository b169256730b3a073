"""neardup.dedup: clusters, keep rules, inputs and the result object, against brute force."""

import numpy as np
import pytest

import neardup
from brute import clusters, distances, family_corpus, keep_by, keep_first, pairs


@pytest.fixture(scope="module")
def docs() -> list[str]:
    return family_corpus()


@pytest.fixture(scope="module")
def fps(docs) -> np.ndarray:
    return neardup.Simhasher().fingerprint_many(docs)


@pytest.mark.parametrize("k", [0, 3, 6])
def test_clusters_keep_and_distances_match_brute_force(docs, fps, k):
    result = neardup.dedup(docs, k=k)
    labels = clusters(fps, k)
    assert result.cluster.tolist() == labels.tolist()
    assert result.keep.tolist() == keep_first(labels).tolist()
    d = distances(fps)
    assert result.distance.tolist() == [int(d[r, labels[r]]) for r in range(len(docs))]
    sizes = np.bincount(labels)
    assert result.n_clusters == int((sizes >= 2).sum())
    assert result.n_removed == len(docs) - int((sizes > 0).sum())
    i, j, dist = result.pairs
    assert set(zip(i.tolist(), j.tolist(), dist.tolist())) == pairs(fps, k)
    assert np.array_equal(result.fingerprints, fps)


def test_the_corpus_has_clusters_to_find(docs, fps):
    sizes = np.bincount(clusters(fps, 3))
    assert (sizes >= 2).sum() >= 5 and (sizes >= 3).sum() >= 2


def test_keep_longest_keeps_the_longest_of_each_cluster_first_of_equals(docs, fps):
    result = neardup.dedup(docs, keep="longest")
    expected = keep_by(clusters(fps, 3), [len(t) for t in docs])
    assert result.keep.tolist() == expected.tolist()
    assert result.keep.tolist() != keep_first(clusters(fps, 3)).tolist()  # the rule made a difference


def test_keep_function_ranks_the_documents_of_a_cluster(docs, fps):
    records = [{"text": t, "stars": (7 * i) % 11} for i, t in enumerate(docs)]
    calls = []

    def stars(doc):
        calls.append(doc)
        return doc["stars"]

    result = neardup.dedup(iter(records), keep=stars)  # a one-shot iterator is held for the function
    labels = clusters(fps, 3)
    assert result.keep.tolist() == keep_by(labels, [r["stars"] for r in records]).tolist()
    in_clusters = int((np.bincount(labels)[labels] >= 2).sum())
    assert len(calls) == in_clusters  # called only on documents that have near-duplicates


def test_dict_documents_with_ids_and_to_pandas(docs, fps):
    records = [{"name": f"doc-{i}", "body": t} for i, t in enumerate(docs)]
    result = neardup.dedup(records, text_field="body", id_field="name")
    frame = result.to_pandas()
    assert list(frame.columns) == ["id", "cluster", "kept", "distance"]
    assert frame["id"].tolist() == [f"doc-{i}" for i in range(len(docs))]
    labels = clusters(fps, 3)
    assert frame["cluster"].tolist() == labels.tolist()
    assert frame["kept"].tolist() == keep_first(labels).tolist()


def test_tables_and_series_give_the_same_result(docs):
    pd = pytest.importorskip("pandas")
    pa = pytest.importorskip("pyarrow")
    plain = neardup.dedup(docs)
    frame = pd.DataFrame({"body": docs, "n": range(len(docs))}, index=[f"r{i}" for i in range(len(docs))])
    from_frame = neardup.dedup(frame, column="body")
    assert from_frame.keep.tolist() == plain.keep.tolist()
    assert from_frame.to_pandas()["id"].tolist() == list(frame.index)
    assert neardup.dedup(frame, column="body", id_field="n").ids.tolist() == list(range(len(docs)))
    assert neardup.dedup(frame["body"]).cluster.tolist() == plain.cluster.tolist()
    table = pa.table({"text": docs})
    assert neardup.dedup(table).cluster.tolist() == plain.cluster.tolist()
    assert neardup.dedup(table, keep=lambda row: len(row["text"])).keep.tolist() == neardup.dedup(docs, keep="longest").keep.tolist()


def test_polars_frames_are_read_too(docs):
    pl = pytest.importorskip("polars")
    frame = pl.DataFrame({"text": docs})
    assert neardup.dedup(frame).cluster.tolist() == neardup.dedup(docs).cluster.tolist()


def test_fields_of_the_hasher_weigh_dict_documents():
    hasher = neardup.Simhasher(fields={"title": 2, "body": 1})
    records = [{"title": "A title", "body": "one two three four"}, {"title": "A title", "body": "one two three four"}, {"title": "x", "body": None}]
    result = neardup.dedup(records, hasher=hasher)
    assert result.cluster.tolist() == [0, 0, 2]
    assert result.fingerprints.tolist() == hasher.fingerprint_many(records).tolist()


def test_stats_count_documents_and_utf8_bytes(docs):
    result = neardup.dedup(docs)
    assert result.stats["documents"] == len(docs)
    assert result.stats["bytes"] == sum(len(t.encode("utf-8")) for t in docs)
    assert result.stats["seconds"] > 0 and result.stats["mb_per_s"] > 0


def test_empty_corpus():
    result = neardup.dedup([])
    assert len(result) == 0 and result.n_clusters == 0 and result.n_removed == 0
    assert result.keep.dtype == bool and result.cluster.dtype == np.int64


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: neardup.dedup("one text"), TypeError, "not a single str"),
        (lambda: neardup.dedup(["a"], k=17), ValueError, "k must be in 0..=16"),
        (lambda: neardup.dedup(["a"], keep="last"), ValueError, "keep must be"),
        (lambda: neardup.dedup([{"body": "a"}]), KeyError, "docs\\[0\\] has no field 'text'"),
        (lambda: neardup.dedup([{"text": "a"}, {"text": 3}]), TypeError, "docs\\[1\\]\\['text'\\] is int"),
        (lambda: neardup.dedup(["a", None]), TypeError, "docs\\[1\\]"),
        (lambda: neardup.dedup(["a"], hasher="word"), TypeError, "hasher must be"),
    ],
)
def test_bad_arguments_say_what_is_wrong(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_repr_and_exports():
    result = neardup.dedup(["same text", "same text", "other"])
    assert repr(result) == "<DedupResult k=3: 3 documents, 1 clusters, 1 removed>"
    assert "dedup" in neardup.__all__ and "DedupResult" in neardup.__all__
    assert isinstance(result, neardup.DedupResult)
