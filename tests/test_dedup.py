"""neardup.dedup: clusters, keep rules, inputs and the result object, against brute force."""

import numpy as np
import pytest

import neardup
import reference
from brute import (
    clusters,
    distances,
    exact_jaccard,
    family_corpus,
    fingerprint_near,
    same_floats,
    shingle_set,
    star_oracle,
    verified_near,
)
from neardup.pipeline import SHORT
from neardup.verify import THRESHOLD_K


@pytest.fixture(scope="module")
def docs() -> list[str]:
    return family_corpus()


@pytest.fixture(scope="module")
def fps(docs) -> np.ndarray:
    return neardup.Simhasher().fingerprint_many(docs)


@pytest.mark.parametrize("k", [0, 3, 6])
def test_fingerprint_stars_match_brute_force(docs, fps, k):
    result = neardup.dedup(docs, k=k, threshold=None)
    kept, jac = star_oracle(list(range(len(docs))), fingerprint_near(docs, fps, k))
    assert result.kept_row.tolist() == kept
    assert same_floats(result.jaccard.tolist(), jac)
    assert result.keep.tolist() == [kept[r] == r for r in range(len(docs))]
    d = distances(fps)
    assert result.distance.tolist() == [int(d[r, kept[r]]) for r in range(len(docs))]
    assert all(result.distance <= k)
    smallest = {c: min(r for r in range(len(docs)) if kept[r] == c) for c in set(kept)}
    assert result.cluster.tolist() == [smallest[kept[r]] for r in range(len(docs))]
    assert result.n_clusters == sum(1 for c in set(kept) if kept.count(c) > 1)
    assert result.n_removed == sum(kept[r] != r for r in range(len(docs)))
    i, j, dist = result.pairs
    assert list(zip(i.tolist(), j.tolist())) == [
        (kept[r], r) for r in range(len(docs)) if kept[r] != r
    ]
    assert np.array_equal(result.fingerprints, fps)


@pytest.mark.parametrize("k, threshold", [(3, 0.5), (5, 0.8), (8, 0.6), (10, 1.0)])
def test_verified_stars_match_brute_force(docs, fps, k, threshold):
    # Fingerprint candidates: pairs within k, verified (prefix candidates: test_prefix_candidates).
    result = neardup.dedup(docs, k=k, threshold=threshold, candidates="fingerprint")
    kept, jac = star_oracle(list(range(len(docs))), verified_near(docs, fps, k, threshold))
    assert result.kept_row.tolist() == kept
    assert result.jaccard.tolist() == jac
    # The star invariant: every removed document is a near-duplicate of its kept document itself.
    for r, c in enumerate(kept):
        assert exact_jaccard(docs[r], docs[c]) >= threshold - 1e-6


def test_verification_is_the_default(docs):
    result = neardup.dedup(docs)
    assert (result.k, result.threshold) == (8, 0.8)
    assert result.kept_row.tolist() == neardup.dedup(docs, k=8, threshold=0.8).kept_row.tolist()


def test_stars_do_not_chain():
    # b is a near-duplicate of a and of c, but c is not one of a: components would remove c too.
    a = " ".join(f"w{i}" for i in range(40))
    b = " ".join(f"w{i}" for i in range(4, 44))
    c = " ".join(f"w{i}" for i in range(8, 48))
    assert (
        exact_jaccard(a, b) >= 0.75 and exact_jaccard(b, c) >= 0.75 and exact_jaccard(a, c) < 0.75
    )
    result = neardup.dedup([a, b, c], k=64 // 4, threshold=0.75)
    assert result.kept_row.tolist() == [0, 0, 2]
    assert result.keep.tolist() == [True, False, True]


def test_texts_without_features_are_duplicates_of_their_copies_only():
    docs = ["", "", "!!", "??", "!!", "  ", "a real text here"]
    for threshold in (None, 0.8):
        result = neardup.dedup(docs, threshold=threshold)
        # "" and "  " normalize differently (NFKC keeps spaces), so only exact copies go.
        assert result.kept_row.tolist() == [0, 0, 2, 3, 2, 5, 6]
        assert result.fingerprints[:6].tolist() == [0] * 6


def test_the_corpus_has_clusters_to_find(docs, fps):
    sizes = np.bincount(clusters(fps, 3))
    assert (sizes >= 2).sum() >= 5 and (sizes >= 3).sum() >= 2


def test_keep_longest_takes_the_longest_first(docs, fps):
    result = neardup.dedup(docs, keep="longest")
    order = sorted(range(len(docs)), key=lambda r: (-len(docs[r]), r))
    kept, _ = star_oracle(order, verified_near(docs, fps, THRESHOLD_K, 0.8))
    assert result.kept_row.tolist() == kept
    assert result.keep.tolist() != neardup.dedup(docs).keep.tolist()  # the rule made a difference


def test_keep_function_ranks_the_documents(docs, fps):
    records = [{"text": t, "stars": (7 * i) % 11} for i, t in enumerate(docs)]
    calls = []

    def stars(doc):
        calls.append(doc)
        return doc["stars"]

    result = neardup.dedup(
        iter(records), keep=stars, candidates="fingerprint"
    )  # a one-shot iterator is held for the function
    order = sorted(range(len(docs)), key=lambda r: (-records[r]["stars"], r))
    kept, _ = star_oracle(order, verified_near(docs, fps, THRESHOLD_K, 0.8))
    assert result.kept_row.tolist() == kept
    d = distances(fps)
    alone = [
        r
        for r in range(len(docs))
        if not any(d[r, s] <= THRESHOLD_K for s in range(len(docs)) if s != r)
    ]
    assert len(calls) == len(docs) - len(alone)  # not called on documents without candidates


def test_dict_documents_with_ids_and_to_pandas(docs, fps):
    records = [{"name": f"doc-{i}", "body": t} for i, t in enumerate(docs)]
    result = neardup.dedup(records, text_field="body", id_field="name")
    frame = result.to_pandas()
    assert list(frame.columns) == ["id", "cluster", "kept", "kept_id", "jaccard", "distance"]
    assert frame["id"].tolist() == [f"doc-{i}" for i in range(len(docs))]
    plain = neardup.dedup(docs)
    assert frame["cluster"].tolist() == plain.cluster.tolist()
    assert frame["kept"].tolist() == plain.keep.tolist()
    assert frame["kept_id"].tolist() == [f"doc-{r}" for r in plain.kept_row.tolist()]
    assert frame["jaccard"].tolist() == plain.jaccard.tolist()


def test_tables_and_series_give_the_same_result(docs):
    pd = pytest.importorskip("pandas")
    pa = pytest.importorskip("pyarrow")
    plain = neardup.dedup(docs)
    frame = pd.DataFrame(
        {"body": docs, "n": range(len(docs))}, index=[f"r{i}" for i in range(len(docs))]
    )
    from_frame = neardup.dedup(frame, text_field="body")
    assert from_frame.keep.tolist() == plain.keep.tolist()
    assert from_frame.to_pandas()["id"].tolist() == list(frame.index)
    assert neardup.dedup(frame, text_field="body", id_field="n").ids.tolist() == list(
        range(len(docs))
    )
    assert neardup.dedup(frame["body"]).cluster.tolist() == plain.cluster.tolist()
    table = pa.table({"text": docs})
    assert neardup.dedup(table).cluster.tolist() == plain.cluster.tolist()
    assert (
        neardup.dedup(table, keep=lambda row: len(row["text"])).keep.tolist()
        == neardup.dedup(docs, keep="longest").keep.tolist()
    )


def test_polars_frames_are_read_too(docs):
    pl = pytest.importorskip("polars")
    frame = pl.DataFrame({"text": docs})
    assert neardup.dedup(frame).cluster.tolist() == neardup.dedup(docs).cluster.tolist()


def test_fields_of_the_hasher_weigh_dict_documents():
    hasher = neardup.Simhasher(fields={"title": 2, "body": 1})
    records = [
        {"title": "A title", "body": "one two three four"},
        {"title": "A title", "body": "one two three four"},
        {"title": "x", "body": None},
    ]
    result = neardup.dedup(records, hasher=hasher)
    assert result.cluster.tolist() == [0, 0, 2]
    assert result.fingerprints.tolist() == hasher.fingerprint_many(records).tolist()


def test_stats_count_documents_and_utf8_bytes(docs):
    result = neardup.dedup(docs)
    assert result.stats["documents"] == len(docs)
    assert result.stats["bytes"] == sum(len(t.encode("utf-8")) for t in docs)
    assert result.stats["seconds"] > 0 and result.stats["mb_per_s"] > 0
    # Non-ASCII texts of every size among ASCII ones, their bytes counted a few at a time.
    wide = [("déjà vu 日本 " * n)[: 7 * n + 1] for n in (1, 3, 9000, 20, 12000, 5)]
    mixed = [t for pair in zip(wide, docs) for t in pair]
    result = neardup.dedup(mixed)
    assert result.stats["bytes"] == sum(len(t.encode("utf-8")) for t in mixed)


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
        (
            lambda: neardup.dedup([{"text": "a"}, {"text": 3}]),
            TypeError,
            "docs\\[1\\]\\['text'\\] is int",
        ),
        (lambda: neardup.dedup(["a", None]), TypeError, "docs\\[1\\]"),
        (lambda: neardup.dedup(["a"], hasher="word"), TypeError, "hasher must be"),
    ],
)
def test_bad_arguments_say_what_is_wrong(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_repr_and_exports():
    result = neardup.dedup(["same text", "same text", "other"])
    # the repr names what proposed the pairs: prefix candidates by default, where k plays no part
    assert (
        repr(result)
        == "<DedupResult prefix candidates, Jaccard >= 0.8: 3 documents, 1 cluster, 1 removed>"
    )
    assert result.candidates == "prefix"
    docs = ["same text", "same text", "other"]
    result = neardup.dedup(docs, candidates="fingerprint")
    assert result.candidates == "fingerprint" and repr(result) == (
        "<DedupResult fingerprint candidates within k=8, Jaccard >= 0.8: 3 documents, 1 cluster, "
        "1 removed>"
    )
    result = neardup.dedup(docs, threshold=None)
    assert result.candidates is None and repr(result) == (
        "<DedupResult k=3, fingerprints only: 3 documents, 1 cluster, 1 removed>"
    )
    assert "dedup" in neardup.__all__ and "DedupResult" in neardup.__all__
    assert isinstance(result, neardup.DedupResult)


# -- the star invariant over random corpora ------------------------------------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@st.composite
def planted_corpora(draw):
    """Chains of edits (each member a few words from the one before, so the ends drift apart),
    exact and case-changed copies, and texts without words, shuffled."""
    vocab = [f"w{i}" for i in range(draw(st.integers(8, 60)))]
    docs: list[str] = []
    for _ in range(draw(st.integers(1, 6))):
        words = draw(st.lists(st.sampled_from(vocab), min_size=1, max_size=40))
        docs.append(" ".join(words))
        for _ in range(draw(st.integers(0, 5))):
            words = list(words)
            for _ in range(draw(st.integers(1, 3))):
                at = draw(st.integers(0, len(words)))
                words.insert(at, draw(st.sampled_from(vocab)))
            docs.append(" ".join(words))
            if draw(st.booleans()):
                docs.append(docs[-1].upper() if draw(st.booleans()) else docs[-1])
    docs += draw(st.lists(st.sampled_from(["", "!!", "  ", "--"]), max_size=4))
    order = draw(st.permutations(range(len(docs))))
    return [docs[i] for i in order]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    planted_corpora(),
    st.sampled_from([2, 5, 8]),
    st.sampled_from([0.5, 0.8, 0.9]),
    st.sampled_from(["first", "longest"]),
)
def test_every_removed_document_is_a_verified_near_duplicate_of_its_kept_one(
    docs, k, threshold, keep
):
    result = neardup.dedup(docs, k=k, threshold=threshold, keep=keep, candidates="fingerprint")
    fps = neardup.Simhasher().fingerprint_many(docs)
    order = (
        list(range(len(docs)))
        if keep == "first"
        else sorted(range(len(docs)), key=lambda r: (-len(docs[r]), r))
    )
    kept, jac = star_oracle(order, verified_near(docs, fps, k, threshold))
    assert result.kept_row.tolist() == kept
    assert result.jaccard.tolist() == jac
    for r, c in enumerate(result.kept_row.tolist()):
        assert result.keep[c]  # a kept document keeps itself
        if c != r:
            assert exact_jaccard(docs[r], docs[c]) >= threshold - 1e-9 or reference.normalize(
                docs[r]
            ) == reference.normalize(docs[c])
            # Within k, unless both are short texts (compared whatever their fingerprints).
            short = max(len(shingle_set(docs[r])), len(shingle_set(docs[c]))) <= SHORT
            assert result.distance[r] <= k or short


def test_results_convert_to_pandas_arrow_and_polars_keeping_the_index(docs):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("polars")
    frame = pd.DataFrame({"text": docs}).iloc[10:30]  # an index that does not start at 0
    result = neardup.dedup(frame)
    table = result.to_pandas()
    assert table.index.tolist() == list(range(10, 30)) and table["id"].tolist() == list(
        range(10, 30)
    )
    joined = frame.join(table)
    assert joined["kept_id"].tolist() == [frame.index[r] for r in result.kept_row.tolist()]
    records = [{"name": f"d{i}", "text": t} for i, t in enumerate(docs)]
    result = neardup.dedup(records, id_field="name")
    arrow = result.to_arrow()
    assert arrow.column_names == ["id", "cluster", "kept", "kept_id", "jaccard", "distance"]
    assert arrow.column("kept_id").to_pylist() == [f"d{r}" for r in result.kept_row.tolist()]
    polars = result.to_polars()
    assert polars["id"].to_list() == [f"d{i}" for i in range(len(docs))]
    assert polars["jaccard"].to_list() == result.jaccard.tolist()


def test_removals_list_each_removed_document_with_its_evidence(docs, fps):
    pytest.importorskip("pandas")
    records = [{"name": f"d{i}", "text": t} for i, t in enumerate(docs)]
    result = neardup.dedup(records, id_field="name")
    kept, jac = star_oracle(list(range(len(docs))), verified_near(docs, fps, THRESHOLD_K, 0.8))
    removed = [r for r in range(len(docs)) if kept[r] != r]
    table = result.removals()
    assert list(table.columns) == ["id", "kept_id", "jaccard", "distance"]
    assert table["id"].tolist() == [f"d{r}" for r in removed] and removed
    assert table["kept_id"].tolist() == [f"d{kept[r]}" for r in removed]
    assert table["jaccard"].tolist() == [jac[r] for r in removed]
    d = distances(fps)
    assert table["distance"].tolist() == [int(d[r, kept[r]]) for r in removed]
