"""The Parquet fast path (the core digests the text column as it lies in Arrow's buffers)
against the Python path it stands in for: same fingerprints, same documents, same errors, the
same kept rows and evidence."""

import random

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import neardup
from neardup.io.parquet import ParquetInput
from test_cli import run
from test_jsonl_fast import first_pass


def python_path(monkeypatch):
    monkeypatch.setattr(ParquetInput, "fingerprint_chunks", lambda self, *a: None)


WORDS = ["Alpha", "beta", "GAMMA", "delta", "café", "Straße", "ﬁne", "中文", "ＡＢＣ", "x\ty"]


def mixed_texts(n: int, seed: int, nulls: bool) -> list[str | None]:
    rng = random.Random(seed)
    base = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 14))) for _ in range(n // 4)]
    texts: list[str | None] = []
    for _ in range(n):
        pick = rng.random()
        if nulls and pick < 0.04:
            texts.append(None)
        elif pick < 0.3 and base:
            # copies and near copies of earlier texts, some differing in case alone
            text = rng.choice(base)
            texts.append(text.upper() if pick < 0.1 else text + rng.choice(["", " Alpha beta"]))
        else:
            texts.append(" ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 14))))
    return texts


def write(path, texts, kind=None, rows=700):
    table = pa.table({"id": list(range(len(texts))), "text": pa.array(texts, kind or pa.string())})
    pq.write_table(table, path, row_group_size=rows)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("kind", [pa.string(), pa.large_string()])
@pytest.mark.parametrize("settings", [{}, {"casefold": False}, {"tokens": "char", "ngram": 4}])
def test_fast_path_gives_the_python_paths_fingerprints(tmp_path, monkeypatch, seed, kind, settings):
    path = tmp_path / "in.parquet"
    texts = mixed_texts(3000, seed, nulls=False)
    write(path, texts, kind)
    hasher = neardup.Simhasher(**settings)
    fast = first_pass(path, hasher, text_field="text", id_field="id")
    # the independent expectation: the API on the texts pyarrow reads
    assert fast[0].tolist() == hasher.fingerprint_many(texts).tolist()
    assert fast[1].tolist() == [len(t) for t in texts]
    assert fast[2] == sum(len(t.encode()) for t in texts)
    python_path(monkeypatch)
    slow = first_pass(path, hasher, text_field="text", id_field="id")
    assert fast[0].tolist() == slow[0].tolist() and fast[1].tolist() == slow[1].tolist()
    assert fast[2:] == slow[2:]


def _invalid_utf8_column(texts: list[bytes]) -> pa.Array:
    """A string column holding bytes that are not UTF-8 (as a foreign writer may leave them)."""
    offsets = np.concatenate([[0], np.cumsum([len(t) for t in texts])]).astype(np.int32)
    return pa.Array.from_buffers(
        pa.string(),
        len(texts),
        [None, pa.py_buffer(offsets.tobytes()), pa.py_buffer(b"".join(texts))],
    )


def test_nulls_and_invalid_utf8_are_skipped_and_reported_as_on_the_python_path(
    tmp_path, monkeypatch
):
    path = tmp_path / "in.parquet"
    texts = [t.encode() if t is not None else None for t in mixed_texts(1500, 5, nulls=True)]
    texts[7] = b"bad \xff byte"
    texts[900] = b"\xc3"
    column = _invalid_utf8_column([t if t is not None else b"" for t in texts])
    mask = pa.array([t is None for t in texts])
    column = pa.compute.if_else(mask, pa.scalar(None, pa.string()), column)
    pq.write_table(pa.table({"text": column}), path, row_group_size=400)
    hasher = neardup.Simhasher()
    fast = first_pass(path, hasher, text_field="text", on_error="skip")
    assert any("invalid UTF-8" in e for e in fast[3]) and any("is null" in e for e in fast[3])
    assert len(fast[3]) == 2 + sum(t is None for t in texts)
    python_path(monkeypatch)
    slow = first_pass(path, hasher, text_field="text", on_error="skip")
    assert fast[0].tolist() == slow[0].tolist() and fast[1].tolist() == slow[1].tolist()
    assert fast[2:] == slow[2:]


def test_dedup_keeps_the_same_rows_with_the_same_evidence_on_both_paths(
    tmp_path, monkeypatch, capsys
):
    path = tmp_path / "in.parquet"
    write(path, mixed_texts(4000, 11, nulls=False), rows=1000)
    outputs = []
    for name in ("fast", "slow"):
        kept, clusters = tmp_path / f"{name}.parquet", tmp_path / f"{name}-clusters.jsonl"
        code, _, err = run(capsys, "dedup", path, "-o", kept, "--clusters", clusters)
        assert code == 0, err
        outputs.append((pq.read_table(kept), clusters.read_text()))
        python_path(monkeypatch)
    (kept_fast, clusters_fast), (kept_slow, clusters_slow) = outputs
    assert 0 < kept_fast.num_rows < 4000
    assert kept_fast.equals(kept_slow)
    assert clusters_fast == clusters_slow


def test_small_batches_and_blocks_give_the_same_digests(tmp_path, monkeypatch):
    # Batches of a few rows (sized by bytes from the file's metadata) cut again into blocks of
    # at most BLOCK_BYTES of text, a text longer than that alone in its block.
    from neardup.io import parquet

    path = tmp_path / "in.parquet"
    texts = mixed_texts(1200, 4, nulls=True)
    texts[10] = "long " * 400
    write(path, texts, rows=500)
    hasher = neardup.Simhasher()
    whole = first_pass(path, hasher, text_field="text", on_error="skip")
    monkeypatch.setattr(parquet, "BLOCK_BYTES", 300)
    assert parquet._blocks(pa.array(["a" * 200, "b" * 200, "c" * 500, "d"])) == [
        (0, 1),
        (1, 2),
        (2, 3),
        (3, 4),
    ]
    assert parquet._blocks(pa.array(["ab"] * 10)) == [(0, 10)]
    small = first_pass(path, hasher, text_field="text", on_error="skip")
    assert whole[0].tolist() == small[0].tolist() and whole[1].tolist() == small[1].tolist()
    assert whole[2:] == small[2:] and whole[3]
    python_path(monkeypatch)
    assert (
        first_pass(path, hasher, text_field="text", on_error="skip")[0].tolist()
        == small[0].tolist()
    )
