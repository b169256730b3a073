"""neardup.dedup among the data tools: Hugging Face datasets, tqdm progress, the "neardup" logger,
and a notebook-style script (a pandas frame in, the filtered frame out), each checked against the
brute-force stars of tests/brute.py or against dedup of the same texts as a list."""

import logging
import sys
import types

import numpy as np
import pytest

import neardup
from brute import family_corpus, verified_stars
from neardup.verify import THRESHOLD_K

# conftest.py keeps Hugging Face offline (HF_DATASETS_OFFLINE, HF_HUB_OFFLINE).


@pytest.fixture(scope="module")
def docs() -> list[str]:
    return family_corpus()


@pytest.fixture(scope="module")
def expected(docs) -> list[int]:
    """The row kept in each row's place by the default dedup, by brute force."""
    return verified_stars(docs)


# -- Hugging Face datasets ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def datasets():
    return pytest.importorskip("datasets")


def test_a_dataset_keeps_the_rows_of_the_same_texts_as_a_list(datasets, docs, expected):
    ids = [f"doc-{i}" for i in range(len(docs))]
    ds = datasets.Dataset.from_dict({"text": docs, "id": ids, "n": list(range(len(docs)))})
    result = neardup.dedup(ds, text_field="text", id_field="id")
    as_list = neardup.dedup(docs)
    assert result.kept_row.tolist() == as_list.kept_row.tolist() == expected
    assert result.jaccard.tolist() == as_list.jaccard.tolist()
    assert result.kept_id.tolist() == [ids[r] for r in expected]
    # The README's two-line filter, both ways.
    kept = ds.select(np.flatnonzero(result.keep))
    assert kept["n"] == [r for r in range(len(docs)) if expected[r] == r]
    assert ds.filter(lambda _, i: result.keep[i], with_indices=True)["n"] == kept["n"]


def test_a_dataset_is_read_in_its_row_order_and_in_arrow_batches(datasets, docs, monkeypatch):
    module = sys.modules["neardup.sources"]  # the Dataset's reader (the input adapter)

    ds = datasets.Dataset.from_dict({"body": docs, "stars": [len(t) % 7 for t in docs]})
    order = list(range(len(docs)))[::-1]
    shuffled = ds.select(order)  # an indices mapping over the same Arrow table
    batches = []
    real = module.iter_docs

    def spy(items):
        batches.append(type(items).__module__)
        return real(items)

    monkeypatch.setattr(module, "iter_docs", spy)
    monkeypatch.setattr(module, "CHUNK_SIZE", 7)  # several batches from this small Dataset
    monkeypatch.setattr(sys.modules["neardup.dedup"], "CHUNK_SIZE", 7)  # and chunks of the dedup
    result = neardup.dedup(shuffled, text_field="body", keep=lambda doc: doc["stars"])
    monkeypatch.undo()
    reordered = [docs[r] for r in order]
    want = neardup.dedup(reordered, keep=lambda text: len(text) % 7)
    assert result.kept_row.tolist() == want.kept_row.tolist()
    assert result.ids is None
    # Every text came from an Arrow batch of at most 7 rows, then the generator of them.
    assert batches.count("pyarrow.lib") == -(-len(docs) // 7)


def test_a_dataset_of_weighted_fields_is_read_as_their_dicts(datasets, docs):
    rows = [{"title": t[:20], "body": t, "n": i} for i, t in enumerate(docs)]
    hasher = neardup.Simhasher(fields={"title": 2, "body": 1})
    result = neardup.dedup(datasets.Dataset.from_list(rows), hasher=hasher, id_field="n")
    want = neardup.dedup(rows, hasher=hasher, id_field="n")
    assert result.kept_row.tolist() == want.kept_row.tolist() and want.n_removed > 0
    assert result.ids.tolist() == list(range(len(docs)))


def test_a_dataset_without_the_text_column_is_a_keyerror_naming_its_columns(datasets):
    ds = datasets.Dataset.from_dict({"body": ["a b c"]})
    with pytest.raises(
        KeyError, match=r"no column 'text' \(text_field=\) in the Dataset; its columns: body"
    ):
        neardup.dedup(ds)


def test_an_empty_dataset(datasets):
    ds = datasets.Dataset.from_dict({"text": ["a"], "id": [3]}).select([])
    result = neardup.dedup(ds, id_field="id")
    assert result.n_documents == 0 and result.ids.tolist() == []


# -- progress and logging -------------------------------------------------------------------------


def test_the_neardup_logger_says_what_a_dedup_did(docs, expected, caplog):
    with caplog.at_level(logging.DEBUG, logger="neardup"):
        result = neardup.dedup(docs, k=THRESHOLD_K, threshold=0.8)
    info = [r for r in caplog.records if r.name == "neardup" and r.levelno == logging.INFO]
    assert len(info) == 1
    record = info[0]
    removed = sum(kept != row for row, kept in enumerate(expected))
    assert (record.documents, record.removed, record.k, record.threshold) == (
        len(docs),
        removed,
        THRESHOLD_K,
        0.8,
    )
    assert record.seconds == result.stats["seconds"]
    assert f"{len(docs)} documents, {removed} removed" in record.getMessage()
    stages = [
        r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG and r.name == "neardup"
    ]
    assert [m.split(" ")[1].rstrip(",") for m in stages] == ["digest", "candidates", "stars"]


def test_nothing_is_logged_at_the_default_warning_level(docs, caplog):
    with caplog.at_level(logging.WARNING, logger="neardup"):
        neardup.dedup(docs)
    assert not [r for r in caplog.records if r.name == "neardup"]


def test_progress_draws_a_tqdm_bar_on_stderr(docs, capsys):
    pytest.importorskip("tqdm")
    result = neardup.dedup(docs, progress=True)
    err = capsys.readouterr().err
    assert "neardup dedup" in err and "100%" in err and f"{len(docs)}/{len(docs)}" in err
    assert result.kept_row.tolist() == neardup.dedup(docs).kept_row.tolist()


def test_progress_counts_every_document(docs, monkeypatch):
    counted = []

    class Bar:
        def __init__(self, total=None, **options):
            counted.append(("total", total))

        def update(self, n):
            counted.append(("update", n))

        def set_postfix_str(self, text, refresh=True):
            pass

        def close(self):
            counted.append(("close", None))

    module = sys.modules["neardup.dedup"]

    monkeypatch.setitem(sys.modules, "tqdm.auto", types.SimpleNamespace(tqdm=Bar))
    monkeypatch.setattr(module, "CHUNK_SIZE", 10)
    neardup.dedup(iter(docs), progress=True)  # a generator: no total
    assert counted[0] == ("total", None) and counted[-1] == ("close", None)
    updates = [n for what, n in counted if what == "update"]
    assert sum(updates) == len(docs) and max(updates) == 10
    counted.clear()
    neardup.dedup(docs, progress=True)
    assert counted[0] == ("total", len(docs))


def test_progress_without_tqdm_is_silent(docs, monkeypatch, capsys):
    monkeypatch.setitem(
        sys.modules, "tqdm.auto", None
    )  # `from tqdm.auto import tqdm` raises ImportError
    result = neardup.dedup(docs, progress=True)
    assert capsys.readouterr().err == ""
    assert result.kept_row.tolist() == neardup.dedup(docs).kept_row.tolist()


def test_progress_must_be_a_bool(docs):
    with pytest.raises(TypeError, match="progress must be True or False"):
        neardup.dedup(docs, progress="yes")


# -- a notebook-style script --------------------------------------------------------------------


def test_notebook_script_pandas_in_filtered_frame_out(docs, expected, capsys):
    pd = pytest.importorskip("pandas")
    # In a notebook: a frame of documents, deduplicated with a progress bar, filtered by the mask.
    df = pd.DataFrame(
        {"url": [f"https://example.org/{i}" for i in range(len(docs))], "text": docs},
        index=pd.Index([1000 + 3 * i for i in range(len(docs))], name="row"),
    )
    result = neardup.dedup(df, text_field="text", progress=True)
    deduped = df[result.keep]
    report = result.to_pandas()
    removed = df.join(report[["kept_id", "jaccard"]])[lambda f: ~report["kept"]]

    rows = [r for r in range(len(docs)) if expected[r] == r]
    pd.testing.assert_frame_equal(deduped, df.iloc[rows])
    assert removed.index.tolist() == [df.index[r] for r in range(len(docs)) if expected[r] != r]
    assert removed["kept_id"].tolist() == [
        df.index[expected[r]] for r in range(len(docs)) if expected[r] != r
    ]
    assert (removed["jaccard"] >= 0.8).all()
    if "tqdm" in sys.modules:
        assert "100%" in capsys.readouterr().err


def test_find_all_cluster_and_tune_log_what_they_did(docs, caplog):
    """The "neardup" logger hears of every long call, not only dedup: a record at INFO each,
    its figures as attributes, checked against the calls' own results."""
    fps = neardup.Simhasher().fingerprint_many(docs)
    with caplog.at_level(logging.INFO, logger="neardup"):
        i, _, _ = neardup.find_all(fps, k=4)
        labels = neardup.cluster(fps, k=4)
        result = neardup.tune(docs, max_k=4, sample=5)
    records: dict = {}  # the first record of each call (tune runs a find_all of its own)
    for record in caplog.records:
        if record.name == "neardup":
            records.setdefault(record.getMessage().split(":")[0], record)
    found, grouped, tuned = records["find_all"], records["cluster"], records["tune"]
    assert (found.fingerprints, found.pairs, found.k) == (len(docs), len(i), 4)
    assert (grouped.fingerprints, grouped.k) == (len(docs), 4)
    assert grouped.clusters == len(set(labels.tolist()))
    assert (tuned.documents, tuned.recommended_k, tuned.max_k) == (
        len(docs),
        result.recommended_k,
        4,
    )


def test_tune_draws_a_progress_bar_when_asked(docs, capsys):
    pytest.importorskip("tqdm")
    result = neardup.tune(docs, max_k=3, sample=5, progress=True)
    err = capsys.readouterr().err
    assert "neardup tune" in err and f"{len(docs)}/{len(docs)}" in err
    assert [r.pairs for r in result.rows] == [
        r.pairs for r in neardup.tune(docs, max_k=3, sample=5).rows
    ]
