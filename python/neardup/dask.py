"""The same dedup on Dask: ``pip install neardup[dask]``.

:func:`fingerprint` adds a ``fingerprint`` column to a dask DataFrame; :func:`dedup` finds the
near-duplicates of a corpus spread over many machines and keeps one document of each cluster,
with the same kept documents and the same evidence as :func:`neardup.dedup` on one machine, for
any number of partitions and workers. Every step runs on the workers, each a kernel of
:mod:`neardup.kernels` applied to one partition; the client receives a count per partition:

1. digests: each input partition's fingerprints, content keys, lengths and sketches (and the
   whole shingle sets of the texts whose sketch is cut, from the same pass), written to one
   Arrow file of a scratch folder (the input's one read before the outputs);
2. copies: the rows shuffled by content key; a text is the first row of its key and
   fingerprint, and its keep-order rank that of its first row in keep order;
3. candidates: one row per text and lead group of the search plan, shuffled by part key; the
   pairs of fingerprints within ``k`` of each part (each pair in one part only), and the pairs
   of texts of one fingerprint; the short texts' pairs by a shuffle on their prefix hashes
   (with prefix candidates, every text's, in a rarity order whose counts come to each
   partition for its own texts' hashes by two exchanges, one by hash and one back);
4. verification: every copy of a candidate pair goes, through the scratch folder, to the task of
   the partition of one of its two texts (the pair choosing which), so that each pair is checked
   once, however many tasks found it; the task reads its pairs' sketches where they lie, in the
   memory-mapped digest files (its own partition's, and the others' one at a time: no sketch
   moves); only the pairs kept leave it. A pair whose estimate lies near the threshold is
   decided on its exact shingle sets, which the digest wrote beside the sketches of the texts
   whose sketch is cut: read where they lie, no shuffle;
5. connected components of the verified pairs: in one task when they fit one partition of
   ``PAIR_ROWS`` rows, else by rounds of two shuffles (each node takes its neighbours' smallest
   label, then its label's label) until no label changes;
6. the stars of each component in keep order: the labels, the texts with copies and the pairs
   shuffled together by node (a text without copies reads its columns from its digest), then
   nodes and pairs by label; the tables of this stage and the last grow with the pairs, not the
   corpus, and take partitions of ``PAIR_ROWS`` rows;
7. the results of the rows concerned, partitioned like the input, and joined with it lazily by
   the kept rows and the clusters table.
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from typing import Any

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd

from neardup import _core, kernels
from neardup.batches import check_texts, fingerprint_batch
from neardup.dask_exchange import discard, exchange, word_bounds
from neardup.dask_spill import (
    conform,
    read_back,
    remove_spilled,
    spill,
    spill_counted,
    spill_file,
    write_table,
)
from neardup.errors import TooManyPairsError
from neardup.hasher import Simhasher
from neardup.index import DEFAULT_MAX_PAIRS
from neardup.pipeline import (
    RARITY_FRACTION,
    VERIFY,
    check_candidates,
    check_settings,
    counted_on_every_text,
    marks_fit,
)
from neardup.progress import log, progress_bar
from neardup.verify import SKETCH_SIZE, estimate_band, in_band

from .deprecation import renamed
from .validate import integer

__all__ = ["dedup", "fingerprint", "local_cluster"]


def local_cluster(workers: int = 2, **options: Any) -> Any:
    """A ``distributed.LocalCluster`` of ``workers`` processes, one thread each, every port on
    127.0.0.1 and chosen by the system, no dashboard (use it in a ``with`` block); ``options``
    go to ``LocalCluster`` (``processes=False``: worker threads in this process)."""
    import logging

    from distributed import LocalCluster

    settings: dict[str, Any] = dict(
        n_workers=integer(workers, "workers", minimum=1),
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address="127.0.0.1:0",
        worker_dashboard_address="127.0.0.1:0",
        scheduler_kwargs={"dashboard": False},
        silence_logs=logging.ERROR,
    )
    settings.update(options)
    if not settings["processes"]:
        settings.setdefault("protocol", "tcp")  # threads in this process, still on 127.0.0.1
    return LocalCluster(**settings)


def _hasher(hasher: Any) -> Simhasher:
    if hasher is None:
        return Simhasher()
    if not isinstance(hasher, Simhasher):
        raise TypeError(f"hasher must be a neardup.Simhasher, got {type(hasher).__name__}")
    return hasher


def _check_frame(ddf: Any, text_field: str, id_field: str | None = None) -> None:
    if not isinstance(ddf, dd.DataFrame):
        raise TypeError(
            f"expected a dask DataFrame, got {type(ddf).__name__} (dask.dataframe.from_pandas makes one)"
        )
    for name, what in ((text_field, "text_field"), (id_field, "id_field")):
        if name is not None and name not in ddf.columns:
            raise KeyError(
                f"{what} {name!r} is not a column of the DataFrame (columns: {list(ddf.columns)})"
            )


def _number(partition_info: dict[str, Any] | None) -> int:
    return int(partition_info["number"]) if partition_info else 0


def _add_fingerprints(
    part: pd.DataFrame, text_field: str, hasher: Simhasher, partition_info: Any = None
) -> pd.DataFrame:
    fps = fingerprint_batch(
        part[text_field],
        hasher,
        where=f"partition {_number(partition_info)}, column {text_field!r},",
    )
    return part.assign(fingerprint=fps)


@renamed(column="text_field")
def fingerprint(ddf: Any, text_field: str = "text", hasher: Simhasher | None = None) -> Any:
    """The DataFrame with a ``fingerprint`` column (``uint64``) of the text in column
    ``text_field`` (``column=`` is its old name, deprecated).

    Lazy: each partition is fingerprinted in its own task, by the Rust kernel. A missing or
    non-string text fails the task with a TypeError naming the partition and row.
    """
    hasher = _hasher(hasher)
    _check_frame(ddf, text_field)
    meta = ddf._meta.assign(fingerprint=pd.Series([], dtype=np.uint64))
    return ddf.map_partitions(_add_fingerprints, text_field, hasher, meta=meta)


# -- the steps of dedup, one partition each -------------------------------------------------------
#
# Every step below runs on the workers, one partition at a time; the client only sees a count
# per partition and a few counts in all. The digests are written once to the scratch folder (one
# Parquet file per input partition) and read back by the steps that need them, column by column.


def _digest_file(folder: str, i: int) -> str:
    return os.path.join(folder, f"digest.{i:06d}.arrow")


def _read_columns(path: str, names: list[str]) -> Any:
    """Columns of an Arrow file of digests, memory-mapped (read where they are used)."""
    import pyarrow as pa

    # The map stays open while the columns read from it live.
    return pa.ipc.open_file(pa.memory_map(path)).read_all().select(names)


def _digest_part(
    part: pd.DataFrame,
    text_field: str,
    id_field: str | None,
    hasher: Simhasher,
    shingle: int | None,
    folder: str,
    partition_info: Any = None,
) -> pd.DataFrame:
    """Writes the partition's digests (fingerprint, content key, length, sketch, the whole
    shingle set of a text whose sketch is cut, id) to its file; returns its row count."""
    import pyarrow as pa

    i = _number(partition_info)
    where = f"partition {i}, column {text_field!r},"
    values = part[text_field].tolist()
    check_texts(values, where)
    table = kernels.digest_batch(
        values, hasher, shingle=shingle, size=SKETCH_SIZE, name=where, whole=shingle is not None
    )
    if id_field is not None:
        table = table.append_column("id", pa.array(part[id_field], from_pandas=True))
    write_table(_digest_file(folder, i), table)
    return pd.DataFrame({"rows": [len(values)]}, index=[i])


def _read_digest(
    i: int, start: int, folder: str, names: list[str], kind: pd.DataFrame
) -> pd.DataFrame:
    """Partition i's digests, with their global row numbers (and the dtypes of ``kind``)."""
    table = _read_columns(_digest_file(folder, i), names)
    frame = table.to_pandas(types_mapper=_arrow_types)
    frame.insert(0, "row", np.arange(start, start + len(frame), dtype=np.int64))
    return conform(frame, kind)


def _digest_meta(ddf: Any, id_field: str | None, names: list[str]) -> pd.DataFrame:
    import pyarrow as pa

    sketch = pa.large_list(pa.from_numpy_dtype(kernels.SKETCH_DTYPE))
    columns = {
        "row": pd.Series([], dtype=np.int64),
        "fingerprint": pd.Series([], dtype=np.uint64),
        "key": pd.Series([], dtype=kernels.KEY_DTYPE),
        "key_hi": pd.Series([], dtype=kernels.KEY_DTYPE),
        "length": pd.Series([], dtype=np.int64),
        "sketch": pd.Series([], dtype=pd.ArrowDtype(sketch)),
        "id": ddf._meta[id_field] if id_field is not None else None,
    }
    return pd.DataFrame({name: columns[name] for name in ["row", *names]})


def _arrow_types(t: Any) -> Any:
    """Sketches stay Arrow lists in pandas (no Python object per row)."""
    import pyarrow as pa

    return pd.ArrowDtype(t) if pa.types.is_large_list(t) else None


def _texts_part(part: pd.DataFrame, keep: str, with_ids: bool) -> pd.DataFrame:
    """Rows shuffled by content key: each row's text (the first row of its key and
    fingerprint), the text's row that stands for it in keep order and its rank there."""
    n = len(part)
    rows = part["row"].to_numpy(np.int64)
    keys = part["key"].to_numpy(kernels.KEY_DTYPE)
    highs = part["key_hi"].to_numpy(kernels.KEY_DTYPE)
    fps = part["fingerprint"].to_numpy(np.uint64)
    lengths = part["length"].to_numpy(np.int64)
    # Sorted by text, then by keep order inside it: the first of each text stands for it.
    by = (rows, -lengths) if keep == "longest" else (rows,)
    order = np.lexsort((*by, fps, highs, keys))
    k, h, f = keys[order], highs[order], fps[order]
    new = np.ones(n, bool)
    new[1:] = (k[1:] != k[:-1]) | (h[1:] != h[:-1]) | (f[1:] != f[:-1])
    group = np.cumsum(new) - 1
    heads = np.flatnonzero(new)
    sizes = np.diff(np.append(heads, n))
    first = np.minimum.reduceat(rows[order], heads) if n else np.zeros(0, np.int64)
    standin = rows[order][heads]
    out = pd.DataFrame(
        {
            "row": rows[order],
            "text": first[group],
            "fingerprint": f,
            "copies": sizes[group].astype(np.int64),
            "rank": (-lengths[order][heads] if keep == "longest" else standin)[group],
            "standin": standin[group],
        }
    )
    if with_ids:
        out["standin_id"] = part["id"].to_numpy()[order][heads][group]
    return out


def _bit_order_part(part: pd.DataFrame, plan: Any) -> pd.DataFrame:
    """The search's bit order (64 source bits; none for the identity) from a sample of these
    fingerprints."""
    fps = part["fingerprint"].to_numpy(np.uint64)
    order = kernels.bit_order(fps[fps != 0][: 1 << 16], plan)
    return _frame(bit=np.int64) if order is None else pd.DataFrame({"bit": order})


def _keys_part(texts: pd.DataFrame, plan: Any, order: Any) -> pd.DataFrame:
    """One row per text and lead group of the plan: (part key, text, fingerprint)."""
    fps = texts["fingerprint"].to_numpy(np.uint64)
    index, keys = kernels.table_keys(fps, plan, order)
    return pd.DataFrame(
        {
            "pkey": keys,
            "text": texts["text"].to_numpy(np.int64)[index],
            "fingerprint": fps[index],
        }
    )


def _pairs_part(
    rows: pd.DataFrame, k: int, plan: Any, order: Any, max_pairs: int | None
) -> pd.DataFrame:
    """The candidate pairs of texts of the part keys shuffled here: texts whose fingerprints the
    search pairs, and texts of one fingerprint (from lead group 0's rows). A last row
    ``(_WITHIN_K, count)`` counts the pairs of distinct fingerprints."""
    keys = rows["pkey"].to_numpy(np.uint32)
    fps = rows["fingerprint"].to_numpy(np.uint64)
    fa, fb, count = kernels.pairs_in_groups(keys, fps, k, plan, order, max_pairs)
    texts = (
        pd.DataFrame({"fingerprint": fps, "text": rows["text"].to_numpy(np.int64)})
        .drop_duplicates()
        .reset_index(drop=True)
    )
    pieces = []
    if len(fa):
        pairs = pd.DataFrame({"fa": fa, "fb": fb})
        pairs = pairs.merge(texts, left_on="fa", right_on="fingerprint").rename(
            columns={"text": "a"}
        )
        pairs = pairs[["fb", "a"]].merge(texts, left_on="fb", right_on="fingerprint")
        pieces.append((pairs["a"].to_numpy(np.int64), pairs["text"].to_numpy(np.int64)))
    # Texts of one fingerprint are candidates of each other: once, from lead group 0.
    lead0 = rows[kernels.key_groups(keys) == 0][["fingerprint", "text"]].drop_duplicates()
    lead0 = lead0[lead0.duplicated("fingerprint", keep=False)]
    if len(lead0):
        same = _core.run_pairs(
            kernels._array(lead0["fingerprint"], np.uint64),
            kernels._array(lead0["text"], np.int64),
            len(lead0),
        )
        pieces.append((same[0], same[1]))
    a = np.concatenate([p[0] for p in pieces] or [np.zeros(0, np.int64)])
    b = np.concatenate([p[1] for p in pieces] or [np.zeros(0, np.int64)])
    return pd.DataFrame(
        {"a": np.append(np.minimum(a, b), [_WITHIN_K]), "b": np.append(np.maximum(a, b), [count])}
    )


def _short_keys_part(part: pd.DataFrame, threshold: float) -> pd.DataFrame:
    """The prefix hashes of the partition's short texts: (hash, key, fingerprint, row)."""
    sketches = _sketch_array(part["sketch"])
    index, hashes = kernels.short_text_keys(
        sketches, threshold, part["fingerprint"].to_numpy(np.uint64)
    )
    return pd.DataFrame(
        {
            "hash": hashes.astype(np.int64),
            "key": part["key"].to_numpy(kernels.KEY_DTYPE)[index],
            "key_hi": part["key_hi"].to_numpy(kernels.KEY_DTYPE)[index],
            "fingerprint": part["fingerprint"].to_numpy(np.uint64)[index],
            "row": part["row"].to_numpy(np.int64)[index],
        }
    )


def _partition_of(starts: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The partition each global row lies in (``starts``: each partition's first row)."""
    return np.searchsorted(starts, rows, side="right").astype(np.int64) - 1


def _pair_blocks(
    a: np.ndarray, b: np.ndarray, starts: np.ndarray
) -> tuple[np.ndarray, np.ndarray, list[tuple[int, int, int, int]]]:
    """Pairs (a[p], b[p]) of global rows (either way round, repeats possible), each once as
    ``a < b`` (a text paired with itself left out), ordered by the partitions of their two texts
    (the core's one sort): ``(a, b, blocks)``, each block ``(lo, hi, i, j)`` the pairs ``lo:hi``
    of a text of partition i and one of partition j, in ascending order of (i, j)."""
    a, b, blocks = _core.pair_blocks(
        kernels._array(a, np.int64), kernels._array(b, np.int64), kernels._array(starts, np.int64)
    )
    return a, b, [(lo, hi, i, j) for lo, hi, i, j in blocks.reshape(-1, 4).tolist()]


def _with_part(rows: pd.DataFrame, starts: np.ndarray) -> pd.DataFrame:
    """``rows`` with the partition each lies in (``starts``: each partition's first row)."""
    return rows.assign(part=_partition_of(starts, rows["row"].to_numpy(np.int64)))


def _is_text(part: pd.DataFrame, copies: pd.DataFrame) -> np.ndarray:
    """Which of the partition's rows are texts (the first row of their key and fingerprint):
    all but ``copies``' rows (the partition's other rows, from the copies stage). A mask, so
    that a task copies the sketches it reads only (taking the rows out of the frame copied
    every column, 0.8 of a task's 3.5 CPU s at 1M)."""
    return ~np.isin(part["row"].to_numpy(np.int64), copies["row"].to_numpy(np.int64))


def _text_sketches(part: pd.DataFrame, chosen: np.ndarray) -> Any:
    """The sketches of the partition's rows where ``chosen`` is set, as an Arrow list array."""
    import pyarrow as pa

    sketches = _sketch_array(part["sketch"])
    return sketches if chosen.all() else sketches.take(pa.array(np.flatnonzero(chosen)))


def _held_part(
    part: pd.DataFrame, copies: pd.DataFrame, share: int, partition_info: Any = None
) -> pd.DataFrame:
    """The distinct shingle hashes of the partition's texts of the counted share (one content
    key in ``share``), each with how many of those texts hold it: (hash, part, count). Each
    text of the corpus lies in one partition: summed by hash, the counts are the whole
    corpus's."""
    chosen = _is_text(part, copies)
    if share > 1:
        chosen &= part["key"].to_numpy(kernels.KEY_DTYPE) % np.uint64(share) == 0
    hashes, counts = kernels.rarity_counts(_text_sketches(part, chosen), 1 << 62)
    return pd.DataFrame(
        {
            "hash": hashes.astype(np.int64),
            "part": np.full(len(hashes), _number(partition_info), np.int32),
            "count": counts.astype(np.int32),
        }
    )


def _hashes_part(
    part: pd.DataFrame, copies: pd.DataFrame, partition_info: Any = None
) -> pd.DataFrame:
    """The distinct shingle hashes of the partition's texts, each with how many of them hold
    it, up to 2 (enough to tell a hash held by two texts of the corpus): (hash, part, held)."""
    hashes, counts = kernels.rarity_counts(_text_sketches(part, _is_text(part, copies)), 1 << 62)
    return pd.DataFrame(
        {
            "hash": hashes.view(np.int64),
            "part": np.full(len(hashes), _number(partition_info), np.int32),
            "held": np.minimum(counts, 2).astype(np.int8),
        }
    )


def _text_sizes_part(part: pd.DataFrame, copies: pd.DataFrame) -> pd.DataFrame:
    """The partition's texts (each once: not ``copies``' rows) and the hashes their sketches
    hold in all: (texts, hashes), one row."""
    text = _is_text(part, copies)
    starts, ends, _ = kernels._ranges(_sketch_array(part["sketch"]))
    hashes = int((ends.astype(np.int64) - starts.astype(np.int64))[text].sum())
    return pd.DataFrame({"texts": [int(text.sum())], "hashes": [hashes]})


def _frequent_part(rows: pd.DataFrame) -> pd.DataFrame:
    """Of the hashes shuffled here, those counted twice or more over the corpus, once each, with
    their count: (hash, count)."""
    summed = rows.groupby("hash")["count"].sum()
    summed = summed[summed >= 2]
    return pd.DataFrame(
        {"hash": summed.index.to_numpy(np.int64), "count": summed.to_numpy(np.int64)}
    )


def _read_marks(folder: str, files: int) -> list[np.ndarray]:
    """The pieces of a run's table of repeated slots, memory-mapped where they lie: the core
    copies them into one table (one copy, not two; the files' pages are the system's to keep or
    let go)."""
    import pyarrow as pa

    pieces = [
        pa.ipc.open_file(pa.memory_map(spill_file(folder, _REPEATED, i))).read_all()["word"]
        for i in range(files)
    ]
    return [kernels._array(p.to_numpy().view(np.uint64), np.uint64) for p in pieces]


class _SharedTable:
    """The whole rarity table, when it holds at most ``RARITY_TABLE`` hashes: the spilled files
    of :func:`_frequent_part`, which every task reads from the scratch folder (nothing goes
    through the client), and the ``marks`` pieces of the run's table of repeated slots (0:
    none; :func:`_marks`)."""

    def __init__(self, folder: str, files: int, marks: int) -> None:
        self.folder = folder
        self.files = files
        self.marks = marks
        # Tells this run's table from any other's in a worker's cache (a scratch folder may
        # be used again).
        self.token = os.urandom(16).hex()

    def load(self) -> Any:
        """The table's order (a ``_core.RarityOrder``), which :func:`neardup.kernels.prefix_keys`
        and :func:`neardup.kernels.split_runs` take as they take ``(hashes, counts)``."""
        return _shared_table(self.folder, self.files, self.marks, self.token)


@functools.lru_cache(maxsize=1)
def _shared_table(folder: str, files: int, marks: int, token: str) -> Any:
    """The spilled pieces of a shared rarity table, put together once a worker process (a run
    is told by ``token``), and its hash map built once there too (not by every task), with the
    ``marks`` pieces of the run's repeated slots, if any."""
    import pyarrow as pa

    pieces = [
        pa.ipc.open_file(pa.memory_map(spill_file(folder, _FREQUENT, i))).read_all()
        for i in range(files)
    ]
    hashes = np.concatenate([np.zeros(0, np.int64), *(t["hash"].to_numpy() for t in pieces)]).view(
        np.uint64
    )
    counts = np.concatenate([np.zeros(0, np.int64), *(t["count"].to_numpy() for t in pieces)])
    order = np.argsort(hashes)
    table = kernels.frequent_hashes(hashes[order], counts[order])
    return _core.RarityOrder(*table, repeated=_read_marks(folder, marks) if marks else None)


def _forget_tables() -> None:
    """Lets go of the whole rarity table this process holds, if any (its hash map and marks)."""
    _shared_table.cache_clear()


def _let_go_of_tables() -> None:
    """The client and every worker process let go of the whole rarity table, once the candidates
    are listed: up to 140 MB of hash map and 128 MiB of marks a process, which the later stages
    would hold beside their own tables."""
    _forget_tables()
    client = _client()
    if client is not None:
        client.run(_forget_tables)


def _slots_part(part: pd.DataFrame, copies: pd.DataFrame, bits: int) -> pd.DataFrame:
    """The slots (of ``bits`` bits) of the shingle hashes of the partition's texts (not
    ``copies``' rows), sorted, each at most twice: (slot)."""
    # The texts' sketches by their ranges (not a copy of them).
    starts, ends, hashes = kernels._ranges(_sketch_array(part["sketch"]))
    text = _is_text(part, copies)
    slots = _core.repeat_slots(
        kernels._array(starts[text], np.uint64),
        kernels._array(ends[text], np.uint64),
        kernels._array(hashes, np.uint64),
        bits,
    )
    return pd.DataFrame({"slot": slots})


def _marks_part(
    rows: pd.DataFrame, bits: int, partitions: int, partition_info: Any = None
) -> pd.DataFrame:
    """The words of the table of repeated slots in this partition's range, marked by the slots
    every partition moved here: (word)."""
    first, end = word_bounds(_number(partition_info), 1 << (bits - 6), partitions)
    words = _core.repeated_words(kernels._array(rows["slot"], np.uint32), first, end - first)
    return pd.DataFrame({"word": words.view(np.int64)})


def _marks(
    digests: Callable[[list[str]], Any], copies: Any, hashes: int, partitions: int, folder: str
) -> int:
    """The marks of the hashes more than one text may hold, on every text of the corpus (each
    once; ``hashes``: their sketches' hashes in all), as :class:`neardup.pipeline.PrefixLists`
    makes them on one machine: each partition's slots go to the partition of their range (four
    bytes a hash), which marks its words of the table; the words are spilled, to be read by
    every worker process once with the shared table. Returns the number of pieces."""
    clock = time.perf_counter()
    bits = min(_core.repeat_bits(hashes), MARK_BITS)
    slots = dd.map_partitions(
        _slots_part,
        digests(["sketch"]),
        copies,
        bits,
        meta=_frame(slot=np.uint32),
        align_dataframes=False,
    )
    marked = exchange(slots, "slot", partitions, folder, "slots", ranged=bits).map_partitions(
        _marks_part, bits, partitions, meta=_frame(word=np.int64)
    )
    _, words = spill(marked, folder, _REPEATED)
    log.debug("marks of repeated hashes: 2^%d slots in %.3f s", bits, time.perf_counter() - clock)
    discard(folder, "slots")
    if int(words.sum()) != 1 << (bits - 6):
        raise RuntimeError(f"the marks hold {int(words.sum())} words, not {1 << (bits - 6)}")
    return len(words)


def _holders_part(rows: pd.DataFrame, frequent: pd.DataFrame) -> pd.DataFrame:
    """Of the hashes moved here (each partition's distinct ones: hash, part, held), those of the
    order's table, once for each partition holding them: (part, hash, count). ``frequent`` is
    the table of the counted share's hashes that fall here (the same destinations): those count
    as there. The others held by two texts or more over the corpus (their ``held`` summed) count
    1: the exact marks of the hashes more than one text holds, after the unique ones."""
    table = frequent["hash"].to_numpy(np.int64)
    counts = frequent["count"].to_numpy(np.int64)
    order = np.argsort(table, kind="stable")
    table, counts = table[order], counts[order]
    # Each source's rows come sorted by hash: a stable sort merges their runs.
    hashes = rows["hash"].to_numpy(np.int64)
    by_hash = np.argsort(hashes.view(np.uint64), kind="stable")
    hashes = hashes[by_hash]
    held = rows["held"].to_numpy(np.int64)[by_hash]
    holders = held
    if len(hashes):
        firsts = np.flatnonzero(np.append(True, hashes[1:] != hashes[:-1]))
        holders = np.repeat(np.add.reduceat(held, firsts), np.diff(np.append(firsts, len(hashes))))
    at = np.minimum(np.searchsorted(table, hashes), max(len(table) - 1, 0))
    hit = table[at] == hashes if len(table) else np.zeros(len(hashes), bool)
    kept = hit | (holders >= 2)
    return pd.DataFrame(
        {
            "part": rows["part"].to_numpy(np.int64)[by_hash][kept],
            "hash": hashes[kept],
            "count": np.where(hit, counts[at] if len(table) else 0, 1)[kept],
        }
    )


def _table_part(rows: pd.DataFrame) -> pd.DataFrame:
    """One partition's table: its texts' frequent hashes and their counts, by hash (unsigned)."""
    hashes = rows["hash"].to_numpy(np.int64)
    order = np.argsort(hashes.view(np.uint64), kind="stable")
    return pd.DataFrame({"hash": hashes[order], "count": rows["count"].to_numpy(np.int64)[order]})


#: One content key in this many counts for the rarity order of a Dask dedup (each text once,
#: as :class:`neardup.pipeline.PrefixLists` counts).
RARITY_SHARE = RARITY_FRACTION

#: The name of the spilled rarity tables: one a partition with rows, its texts' hashes.
_RARITY = "rarity"

#: The name of the spilled pieces of the table of repeated slots (:func:`_marks`).
_REPEATED = "repeated"

#: The most bits of a slot of the marks of a Dask dedup with the whole rarity table: a table of
#: at most 2^30 slots (128 MiB), which every worker process holds once, two slots a hash up to
#: 2^29 hashes (about 9M short texts); up to 2^30 hashes more hashes fill it, past that no marks
#: are made (:func:`neardup.pipeline.marks_fit`; :func:`neardup.dedup`'s tables go to 2^32
#: slots). Past ``RARITY_TABLE`` the marks are exact and need no table.
MARK_BITS = 30

#: The name of the spilled pieces of the whole rarity table (the hashes counted twice or more).
_FREQUENT = "frequent"

#: The most hashes of a rarity table that every worker process reads whole from the scratch
#: folder, once (its hash map: about 140 MB at most); past it each partition gets the counts of
#: its own texts' hashes by an exchange, with the exact marks of those more than one text holds.
#: At 8M synthetic documents (2.0M hashes) the run cost 2.7 times the single machine's CPU with
#: the exchange, 1.8 times with the whole table (benches/results/dask.md).
RARITY_TABLE = 1 << 22


def _rarity_tables(
    digests: Callable[[list[str]], Any], copies: Any, partitions: int, folder: str
) -> tuple[Any, int, _SharedTable | None]:
    """Each partition's table of the rarity order, spilled (one partition with rows each), and
    the tables' rows: how many texts of a share of the corpus (one content key in
    ``RARITY_SHARE``, or every text when :func:`neardup.pipeline.counted_on_every_text`; each
    text once) hold each hash its texts hold, for the hashes counted twice
    or more (the others count 0). A partition's table orders its texts' hashes as the whole
    corpus's table would (and as :func:`neardup.dedup` does); its size is set by the
    partition's, whatever the corpus. ``copies``: the rows that are not their text's first,
    partitioned like the digests.

    The share's hashes are summed by hash (an exchange of 1/16 of them); the sums of two or
    more make the table, in pieces by destination. When it holds at most ``RARITY_TABLE``
    hashes, every task reads it whole from the scratch folder. Past that, the distinct hashes
    of each partition's texts go to the same destinations, each finds its count in that piece,
    and those found come back to the partition (two exchanges; hashes, and how many of the
    partition's texts hold them up to 2, not counts, go).

    In the sampled order, the hashes more than one text holds count 1, after the unique ones.
    With the whole table, they are marked on every text by slots, as on one machine
    (:func:`_marks`; up to one hash a slot of a table of ``2**MARK_BITS`` slots, else none).
    With each partition's own, the exchange gives their exact marks at no cost of a table: the
    hashes held by two texts or more over the corpus, found where their rows meet, join the
    tables (:func:`_holders_part`). Returns the partitions' tables (or None), their rows (or the
    whole table's), and the whole table (or None)."""
    # The share counted: every text on a small corpus of long texts, as on one machine.
    sizes = (
        dd.map_partitions(
            _text_sizes_part,
            digests(["sketch"]),
            copies,
            meta=_frame(texts=np.int64, hashes=np.int64),
            align_dataframes=False,
        )
        .sum()
        .compute()
    )
    share = 1 if counted_on_every_text(int(sizes["hashes"]), int(sizes["texts"])) else RARITY_SHARE
    sampled = dd.map_partitions(
        _held_part,
        digests(["key", "sketch"]),
        copies,
        share,
        meta=_frame(hash=np.int64, part=np.int32, count=np.int32),
        align_dataframes=False,
    )
    frequent = exchange(sampled, "hash", partitions, folder, "sampled").map_partitions(
        _frequent_part, meta=_frame(hash=np.int64, count=np.int64)
    )
    frequent, frequent_rows = spill(frequent, folder, _FREQUENT)
    discard(folder, "sampled")
    if int(frequent_rows.sum()) <= RARITY_TABLE:
        # In the sampled order, the hashes more than one text may hold are marked on every text.
        hashes = int(sizes["hashes"])
        marks = (
            _marks(digests, copies, hashes, partitions, folder)
            if share > 1 and marks_fit(hashes, MARK_BITS)
            else 0
        )
        return None, int(frequent_rows.sum()), _SharedTable(folder, len(frequent_rows), marks)
    # Each partition's distinct hashes go where their sums went (the same destinations): each
    # finds its count, if any, in that piece of the table, or is found held by two texts.
    held = dd.map_partitions(
        _hashes_part,
        digests(["sketch"]),
        copies,
        meta=_frame(hash=np.int64, part=np.int32, held=np.int8),
        align_dataframes=False,
    )
    holders = dd.map_partitions(
        _holders_part,
        exchange(held, "hash", partitions, folder, "held"),
        frequent,
        meta=_frame(part=np.int64, hash=np.int64, count=np.int64),
        align_dataframes=False,
    )
    tables = exchange(holders, "part", partitions, folder, "holders", direct=True).map_partitions(
        _table_part, meta=_frame(hash=np.int64, count=np.int64)
    )
    tables, sizes = spill(tables, folder, _RARITY)
    discard(folder, "held")
    discard(folder, "holders")
    return tables, int(sizes.sum()), None


def _table_of(table: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    return (
        table["hash"].to_numpy(np.int64).view(np.uint64),
        table["count"].to_numpy(np.int64).astype(np.uint32),
    )


def _local_table(folder: str, j: int, sketches: Any) -> tuple[np.ndarray, np.ndarray]:
    """The rows of the j-th partition's rarity table (read from its file) of the hashes of
    ``sketches`` (texts of that partition)."""
    import pyarrow as pa

    path = spill_file(folder, _RARITY, j)
    table = pa.ipc.open_file(pa.memory_map(path)).read_all()
    hashes = table["hash"].to_numpy().view(np.uint64)
    wanted = np.unique(kernels._ranges(sketches)[2].astype(np.uint64))
    at = np.minimum(np.searchsorted(hashes, wanted), max(len(hashes) - 1, 0))
    hit = np.flatnonzero(hashes[at] == wanted) if len(hashes) else np.zeros(0, np.int64)
    counts = table["count"].to_numpy()[at[hit]]
    return wanted[hit], counts.astype(np.uint32)


def _prefix_keys_part(
    part: pd.DataFrame,
    copies: pd.DataFrame,
    table: pd.DataFrame | _SharedTable,
    threshold: float,
) -> pd.DataFrame:
    """The prefix hashes of the partition's texts in the rarity order of ``table`` (its texts'
    hashes of the order's table, or the whole table: :func:`_rarity_tables`): (hash, row),
    each row a text's. ``copies``: the partition's rows that are not texts (their texts list the
    same hashes)."""
    # Rows that are not texts are given no prefix, as texts without features are.
    fps = np.where(_is_text(part, copies), part["fingerprint"].to_numpy(np.uint64), np.uint64(0))
    index, hashes = kernels.prefix_keys(
        _sketch_array(part["sketch"]),
        table.load() if isinstance(table, _SharedTable) else _table_of(table),
        threshold,
        fps,
        SKETCH_SIZE,
        estimate_band(threshold, SKETCH_SIZE),
    )
    return pd.DataFrame(
        {"hash": hashes.astype(np.int64), "row": part["row"].to_numpy(np.int64)[index]}
    )


def _short_pairs_part(
    rows: pd.DataFrame,
    parts: list[int],
    starts: np.ndarray,
    folder: str,
    table: Any,
    threshold: float,
) -> pd.DataFrame:
    """The candidate pairs of the texts sharing a prefix hash shuffled here, each once (rows
    (hash, row) of texts, or of short texts with their copies: (hash, key, key_hi, fingerprint,
    row), a text being the first row of its key and fingerprint); a hash of more than
    ``RUN_CAP`` texts is split by the next hashes of their lists, read from their sketches where
    they lie (the digest files), in the order of ``table`` (None: of their partitions' rarity
    tables, read from their files). Two last rows count the pairs of groups that could not be
    split, ``(_SKIPPED, skipped)``, and the pairs listed, ``(_LISTED, listed)``: a pair once for each hash
    it shares (:func:`neardup.kernels.pairs_in_runs` lists it once)."""
    # With prefixes, every row is a text's own; a short text's copies share its key and
    # fingerprint, and are named by its first row.
    text = (
        rows.groupby([*kernels.KEY_COLUMNS, "fingerprint"])["row"]
        .transform("min")
        .to_numpy(np.int64)
        if "key" in rows.columns
        else rows["row"].to_numpy(np.int64)
    )

    def split(hashes: np.ndarray, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
        distinct = np.unique(nodes)
        of = _partition_of(starts, distinct)
        pieces = [
            _sketches_of(distinct[of == j], int(j), parts, starts, folder) for j in np.unique(of)
        ]
        import pyarrow as pa

        sketches = pa.concat_arrays(pieces)
        # Without a table, each partition's rarity table gives its texts' counts.
        order = table.load() if isinstance(table, _SharedTable) else table
        if order is None:
            held = [_local_table(folder, int(j), piece) for j, piece in zip(np.unique(of), pieces)]
            hashes_of, at = np.unique(np.concatenate([h for h, _ in held]), return_index=True)
            order = (hashes_of, np.concatenate([c for _, c in held])[at])
        band = estimate_band(threshold, SKETCH_SIZE)
        return kernels.split_runs(hashes, nodes, sketches, order, threshold, SKETCH_SIZE, band)

    a, b, skipped, listed = kernels._run_pairs(rows["hash"].to_numpy(np.int64), text, split)
    return pd.DataFrame(
        {"a": np.append(a, [_SKIPPED, _LISTED]), "b": np.append(b, [skipped, listed])}
    )


#: The order of the short texts' prefixes: by hash value (no table of frequent hashes).
_NO_TABLE = (np.zeros(0, np.uint64), np.zeros(0, np.uint32))


def _sketch_array(column: pd.Series) -> Any:
    import pyarrow as pa

    array = pa.array(column)
    return pa.concat_arrays(array.chunks) if isinstance(array, pa.ChunkedArray) else array


def _sketch_column(j: int, parts: list[int], folder: str) -> Any:
    """The sketch column of the j-th partition with rows, memory-mapped from its digest file."""
    return _read_columns(_digest_file(folder, parts[j]), ["sketch"]).column(0)


def _sketches_of(
    rows: np.ndarray, j: int, parts: list[int], starts: np.ndarray, folder: str
) -> Any:
    """The sketches of ``rows`` (all in the j-th partition with rows), read from its file, as
    an Arrow binary array."""
    return kernels.take_sketches(_sketch_column(j, parts, folder), rows - int(starts[j]))


def _pair_nodes(
    pairs: pd.DataFrame, starts: np.ndarray, take: Callable[[int, np.ndarray], Any]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[Any]]:
    """A task's candidate pairs (columns ``a`` and ``b``, global rows of any partitions; they
    may repeat), each once: ``(a, b, at_a, at_b, pieces)``, where the texts of the pairs are
    gathered from the partitions they lie in, each partition's file opened once: ``pieces`` are
    ``take(j, rows)`` of the rows of each j-th partition with rows (in ascending order of the
    texts), and pair i's texts are the ``at_a[i]``-th and ``at_b[i]``-th of them."""
    nodes, at_a, at_b = _core.local_pairs(
        kernels._array(pairs["a"], np.int64), kernels._array(pairs["b"], np.int64)
    )
    at_a, at_b = at_a.astype(np.int64), at_b.astype(np.int64)
    of = _partition_of(starts, nodes)
    bounds = [*np.flatnonzero(np.diff(of) != 0) + 1]
    pieces = [
        take(int(of[lo]), nodes[lo:hi] - starts[of[lo]])
        for lo, hi in zip([0, *bounds], [*bounds, len(nodes)])
        if lo < hi
    ]
    return nodes[at_a], nodes[at_b], at_a, at_b, pieces


def _verify_part(
    pairs: pd.DataFrame, parts: list[int], starts: np.ndarray, folder: str, threshold: float
) -> tuple[pd.DataFrame, int]:
    """A task's candidate pairs (``a``, ``b``: global rows, any partitions; they may repeat),
    each once, verified: (a, b, jaccard, band) of those at Jaccard >= ``threshold`` and of those
    whose estimate lies too near it to decide them (``band``: see
    :func:`neardup.kernels.pairs_in_band`), and the number of pairs compared. The sketches
    are read where they lie, in the memory-mapped digest files, nothing copied: the pairs go by
    the partitions of their two texts, two files mapped at a time (a task of pairs routed by
    :func:`_routed_part` keeps its own partition's mapped while it reads the others one by
    one)."""
    a, b, blocks = _pair_blocks(pairs["a"], pairs["b"], starts)
    got = np.zeros(len(a), np.float64)
    cut = np.zeros(len(a), bool)
    # Pairs below the threshold (below its band when a sketch is cut) are refused early, most
    # after a few hashes, those whose sizes alone rule them out before the first: -1.
    floor = max(threshold - estimate_band(threshold, SKETCH_SIZE), 0.0)
    files: dict[int, Any] = {}
    for lo, hi, i, j in blocks:
        # The block's two files; those of the block before are let go unless still needed.
        files = {f: files[f] if f in files else _sketch_column(f, parts, folder) for f in (i, j)}
        mine = kernels._row_ranges(files[i], a[lo:hi] - starts[i])
        theirs = kernels._row_ranges(files[j], b[lo:hi] - starts[j])
        n = hi - lo
        at = np.arange(n, dtype=np.int64)
        got[lo:hi] = _core.sketch_jaccard_parts(
            [mine, theirs], at, at + n, SKETCH_SIZE, threshold, floor, 1
        )
        cut[lo:hi] = (mine[1] - mine[0] >= SKETCH_SIZE) | (theirs[1] - theirs[0] >= SKETCH_SIZE)
        del mine, theirs
    del files
    band = in_band(got, cut, threshold, SKETCH_SIZE)
    near = (got >= threshold) | band
    kept = pd.DataFrame(
        {"a": a[near], "b": b[near], "jaccard": got[near].astype(np.float32), "band": band[near]}
    )
    return kept, len(a)


def _routed_part(found: pd.DataFrame, starts: np.ndarray) -> pd.DataFrame:
    """A task's candidate pairs (``a < b``, and count rows ``a < 0``), each with the partition
    that takes it in step 4 (``part``): that of ``a`` or of ``b``, as a bit of the pair's hash
    says, so that every copy of a pair meets in one task and the tasks get even shares (a
    pair's first text lies more often in an early partition). Count rows go to partition 0."""
    a = kernels._array(found["a"], np.int64)
    b = kernels._array(found["b"], np.int64)
    part = _core.routed_pairs(a, b, kernels._array(starts, np.int64))
    return pd.DataFrame({"a": a, "b": b, "part": part})


def _checked_part(
    found: pd.DataFrame,
    verify_part: Callable[..., tuple[pd.DataFrame, int]],
    parts: list[int],
    starts: np.ndarray,
    folder: str,
    threshold: float,
) -> pd.DataFrame:
    """The candidate pairs routed here (:func:`_routed_part`, with count rows ``(a < 0,
    count)``), each once, verified by ``verify_part``: the pairs it keeps (a, b, jaccard, band),
    the count rows as they came, a row ``(_IN_BAND, count)`` of the kept pairs in the band, and
    a row ``(_COMPARED, count)`` of the pairs compared (every copy of a pair comes here)."""
    marks = found["a"].to_numpy(np.int64) < 0
    checked, compared = verify_part(found[~marks][["a", "b"]], parts, starts, folder, threshold)
    counts = pd.concat(
        [
            found[marks][["a", "b"]],
            pd.DataFrame(
                {
                    "a": [_IN_BAND, _COMPARED],
                    "b": [int(checked["band"].to_numpy(bool).sum()), compared],
                }
            ),
        ],
        ignore_index=True,
    )
    tail = counts.assign(jaccard=np.float32(np.nan), band=False)
    return pd.concat([checked[list(_CHECKED_META.columns)], tail], ignore_index=True).astype(
        _CHECKED_META.dtypes.to_dict()
    )


def _unique_pairs_part(found: pd.DataFrame) -> pd.DataFrame:
    """The candidate pairs routed here (:func:`_routed_part`), each once, with no Jaccard
    (near-duplicates on their fingerprints alone), and the count rows as they came."""
    marks = found["a"].to_numpy(np.int64) < 0
    once = found[~marks].drop_duplicates(["a", "b"])
    return pd.concat([once, found[marks]], ignore_index=True)[["a", "b"]].assign(
        jaccard=np.float32(np.nan)
    )


def _exact_part(
    pairs: pd.DataFrame,
    parts: list[int],
    starts: np.ndarray,
    folder: str,
    threshold: float,
) -> pd.DataFrame:
    """The pairs (a, b) here decided on their exact Jaccards: (a, b, jaccard) of those at
    ``threshold`` or more. Each text's whole shingle set is read where it lies, from the
    memory-mapped digest files (the ``shingles`` of a text whose sketch is cut, else its
    sketch, which is then whole), one pair of files at a time: nothing moves but the pairs."""
    a, b, blocks = _pair_blocks(
        pairs["a"].to_numpy(np.int64), pairs["b"].to_numpy(np.int64), starts
    )
    got = np.zeros(len(a), np.float64)
    mine: tuple[int, Any] = (-1, None)
    for lo, hi, i, j in blocks:
        if mine[0] != i:
            mine = (i, _whole_sets(i, parts, folder))
        theirs = mine[1] if j == i else _whole_sets(j, parts, folder)
        got[lo:hi] = _exact_rows(
            mine[1], a[lo:hi] - int(starts[i]), theirs, b[lo:hi] - int(starts[j])
        )
        del theirs
    near = got >= threshold
    return pd.DataFrame({"a": a[near], "b": b[near], "jaccard": got[near].astype(np.float32)})


def _whole_sets(j: int, parts: list[int], folder: str) -> tuple[Any, Any]:
    """The sketch and ``shingles`` columns of the j-th partition with rows, memory-mapped."""
    table = _read_columns(_digest_file(folder, parts[j]), ["sketch", "shingles"])
    return table.column(0), table.column(1)


def _exact_rows(
    mine: tuple[Any, Any], rows_a: np.ndarray, theirs: tuple[Any, Any], rows_b: np.ndarray
) -> np.ndarray:
    """The exact Jaccards of the whole sets of ``rows_a`` (in ``mine``: sketch and shingles
    columns) and ``rows_b`` (in ``theirs``): each side's ``shingles`` when its sketch is cut,
    else its sketch (whole); read where they lie."""
    cut_a = _cut(mine[0], rows_a)
    cut_b = _cut(theirs[0], rows_b)
    got = np.zeros(len(rows_a), np.float64)
    for side_a in (False, True):
        for side_b in (False, True):
            at = (cut_a == side_a) & (cut_b == side_b)
            if at.any():
                got[at] = kernels.verify_rows(
                    mine[int(side_a)], rows_a[at], theirs[int(side_b)], rows_b[at], kernels.WHOLE
                )
    return got


def _cut(sketches: Any, rows: np.ndarray) -> np.ndarray:
    """Whether the sketches of ``rows`` are cut (hold ``SKETCH_SIZE`` hashes)."""
    import pyarrow.compute as pc

    lengths = pc.list_value_length(sketches.take(rows)).to_numpy(zero_copy_only=False)
    return np.asarray(lengths, np.int64) >= SKETCH_SIZE


def _exact_in_band(
    band: Any, threshold: float, parts: list[int], starts: np.ndarray, folder: str
) -> Any:
    """The pairs ``band`` (a, b) decided on their exact Jaccards, as :func:`neardup.dedup`
    decides a pair whose estimate lies near the threshold: (a, b, jaccard) of those at
    ``threshold`` or more. The whole shingle sets were written beside the sketches at digest
    time; each partition of ``band`` reads those of its pairs where they lie, no shuffle.
    ``starts``: the first row of each partition with rows. Nothing goes to the client."""
    return band.map_partitions(_exact_part, parts, starts, folder, threshold, meta=_EDGE_META)


def _stars_part(rows: pd.DataFrame, with_ids: bool) -> pd.DataFrame:
    """The stars of the components shuffled here (whole components: by their label), in keep
    order: per text, the row kept in its place, its id, their Jaccard, the cluster (the smallest
    row of the star) and the kept text's fingerprint. Rows with ``b = -1`` are the texts, the
    others the verified pairs ``(text, b)``."""
    pair = rows["b"].to_numpy(np.int64) >= 0
    nodes, edges = rows[~pair], rows[pair]
    text = nodes["text"].to_numpy(np.int64)
    kept, jac = kernels.graph_stars(
        text,
        (nodes["standin"].to_numpy(np.int64), nodes["rank"].to_numpy(np.int64)),
        edges["text"].to_numpy(np.int64),
        edges["b"].to_numpy(np.int64),
        edges["jaccard"].to_numpy(np.float32),
    )
    sort = np.argsort(text)
    center = sort[np.searchsorted(text, kept, sorter=sort)]
    cluster = pd.Series(text).groupby(kept).transform("min").to_numpy(np.int64)
    # A star removes a document when it has two texts or more, or a text with copies.
    copies = nodes["copies"].to_numpy(np.int64)
    by_star = pd.DataFrame({"kept": kept, "rows": copies}).groupby("kept")["rows"]
    leads = by_star.transform("sum").to_numpy(np.int64) > 1
    out = pd.DataFrame(
        {
            "text": text,
            "copies": nodes["copies"].to_numpy(np.int64),
            "kept_row": nodes["standin"].to_numpy(np.int64)[center],
            "jaccard": jac,
            "cluster": cluster,
            "fingerprint": nodes["fingerprint"].to_numpy(np.uint64),
            "kept_fingerprint": nodes["fingerprint"].to_numpy(np.uint64)[center],
            "leads": leads,
        }
    )
    if with_ids:
        out["kept_id"] = nodes["standin_id"].to_numpy()[center]
    return out


def _digest_values(
    rows: np.ndarray, names: list[str], parts: list[int], starts: np.ndarray, folder: str
) -> dict[str, np.ndarray]:
    """Columns ``names`` of the digests of ``rows`` (global rows, any order), read from the
    memory-mapped digest files where they lie, one file at a time."""
    import pyarrow as pa

    of = _partition_of(starts, rows)
    order = np.argsort(of, kind="stable")
    pieces: dict[str, list[Any]] = {name: [] for name in names}
    bounds = np.flatnonzero(np.diff(of[order])) + 1
    for lo, hi in zip([0, *bounds.tolist()], [*bounds.tolist(), len(rows)]):
        if lo == hi:
            continue
        j = int(of[order[lo]])
        table = _read_columns(_digest_file(folder, parts[j]), names)
        at = pa.array(rows[order[lo:hi]] - int(starts[j]))
        for name in names:
            pieces[name].append(table.column(name).take(at).to_numpy(zero_copy_only=False))
        del table
    back = np.empty(len(rows), np.int64)
    back[order] = np.arange(len(rows), dtype=np.int64)
    return {
        name: (np.concatenate(got) if got else np.zeros(0, np.int64))[back]
        for name, got in pieces.items()
    }


def _nodes_part(
    labels: pd.DataFrame,
    copied: pd.DataFrame,
    edges: pd.DataFrame,
    keep: str,
    with_ids: bool,
    parts: list[int],
    starts: np.ndarray,
    folder: str,
) -> pd.DataFrame:
    """The rows of the stars stage, from three tables shuffled together by node: the labels
    (node, label), the texts with copies (their columns) and the verified pairs (by their first
    text). One row per node (``b = -1``): its columns, from the texts with copies, or from its
    digest for a text without copies (one row, its own standin); one row per pair: its first
    text, ``b``, the Jaccard and the first text's label."""
    node = labels["node"].to_numpy(np.int64)
    label = labels["label"].to_numpy(np.int64)
    sort = np.argsort(node)
    node, label = node[sort], label[sort]
    text = copied["text"].to_numpy(np.int64)
    by_text = np.argsort(text)
    at = np.searchsorted(text, node, sorter=by_text)
    hit = at < len(text)
    hit[hit] = text[by_text[at[hit]]] == node[hit]
    src = by_text[at[hit]]
    names = (
        ["fingerprint"] + (["length"] if keep == "longest" else []) + (["id"] if with_ids else [])
    )
    digest = _digest_values(node, names, parts, starts, folder)
    copies = np.ones(len(node), np.int64)
    copies[hit] = copied["copies"].to_numpy(np.int64)[src]
    standin = node.copy()
    standin[hit] = copied["standin"].to_numpy(np.int64)[src]
    rank = node.copy() if keep == "first" else -digest["length"].astype(np.int64)
    rank[hit] = copied["rank"].to_numpy(np.int64)[src]
    columns: dict[str, Any] = {
        "text": node,
        "fingerprint": digest["fingerprint"].astype(np.uint64),
        "copies": copies,
        "rank": rank,
        "standin": standin,
    }
    if with_ids:
        ids = digest["id"].astype(object)
        ids[hit] = copied["standin_id"].to_numpy(object)[src]
        columns["standin_id"] = pd.array(ids, dtype=copied["standin_id"].dtype)
    nodes = pd.DataFrame(columns)
    # The pairs, each with its first text's row among the nodes (every node of a pair has one).
    a = edges["a"].to_numpy(np.int64)
    where = np.searchsorted(node, a)
    if len(a) and (where.max() >= len(node) or (node[np.minimum(where, len(node) - 1)] != a).any()):
        raise RuntimeError("a node of a verified pair has no label")
    pairs = nodes.iloc[where].reset_index(drop=True)
    out = pd.concat([nodes, pairs], ignore_index=True)
    out["label"] = np.concatenate([label, label[where]])
    out["b"] = np.concatenate([np.full(len(node), -1, np.int64), edges["b"].to_numpy(np.int64)])
    out["jaccard"] = np.concatenate(
        [np.full(len(node), np.nan, np.float32), edges["jaccard"].to_numpy(np.float32)]
    )
    return out


def _node_rows_meta(texts: pd.DataFrame) -> pd.DataFrame:
    meta = texts.drop(columns=[c for c in ("_key",) if c in texts]).copy()
    meta["label"] = pd.Series([], dtype=np.int64)
    meta["b"] = pd.Series([], dtype=np.int64)
    meta["jaccard"] = pd.Series([], dtype=np.float32)
    return meta


def _copies_part(rows: pd.DataFrame, with_ids: bool) -> pd.DataFrame:
    """Rows of texts with copies, joined with their text's star (left; nullable integers): a
    text in no star keeps its standin row, which its copies name with Jaccard 1."""
    alone = rows["kept_row"].isna().to_numpy()

    def pick(own: str, star: str, dtype: Any) -> np.ndarray:
        theirs = rows[star].to_numpy(dtype=dtype, na_value=0) if star in rows else None
        return np.asarray(np.where(alone, rows[own].to_numpy(dtype), theirs), dtype=dtype)

    out = pd.DataFrame(
        {
            "row": rows["row"].to_numpy(np.int64),
            "kept_row": pick("standin", "kept_row", np.int64),
            "jaccard": np.where(alone, 1.0, rows["jaccard"].to_numpy(np.float32)).astype(
                np.float32
            ),
            "cluster": pick("text", "cluster", np.int64),
            "fingerprint": rows["fingerprint"].to_numpy(np.uint64),
            "kept_fingerprint": pick("fingerprint", "kept_fingerprint", np.uint64),
            "leads": alone | rows["leads"].fillna(False).to_numpy(bool),
        }
    )
    if with_ids:
        out["kept_id"] = np.where(alone, rows["standin_id"], rows["kept_id"])
    return out


def _result_columns(
    part: pd.DataFrame, found: pd.DataFrame, start: int, id_field: str | None
) -> pd.DataFrame:
    """The clusters table of one input partition: the rows ``found`` names (indexed by global
    row) take its values, the others are kept alone."""
    n = len(part)
    rows = np.arange(start, start + n, dtype=np.int64)
    kept_row = rows.copy()
    jaccard = np.ones(n, np.float32)
    cluster = rows.copy()
    distance = np.zeros(n, np.int64)
    at = found.index.to_numpy(np.int64) - start
    if len(at) and (at.min() < 0 or at.max() >= n):
        raise RuntimeError(
            f"the input changed: a partition has {n} rows now, fewer than when it was digested"
        )
    kept_row[at] = found["kept_row"].to_numpy(np.int64)
    jaccard[at] = found["jaccard"].to_numpy(np.float32)
    cluster[at] = found["cluster"].to_numpy(np.int64)
    if len(at):
        distance[at] = _core.hamming_pairwise(
            np.array(found["fingerprint"], np.uint64),
            np.array(found["kept_fingerprint"], np.uint64),
        ).astype(np.int64)
    if id_field is not None:
        ids = part[id_field].to_numpy()
        kept_id = ids.copy()
        if len(at):
            kept_id[at] = found["kept_id"].to_numpy()
    else:
        ids, kept_id = rows, kept_row
    return pd.DataFrame(
        {
            "id": ids,
            "cluster": cluster,
            "kept": kept_row == rows,
            "kept_id": kept_id,
            "jaccard": jaccard,
            "distance": distance,
        }
    )


def _output_part(
    part: pd.DataFrame,
    found: pd.DataFrame,
    starts: np.ndarray,
    counts: np.ndarray,
    id_field: str | None,
    table: bool,
    partition_info: Any = None,
) -> pd.DataFrame:
    i = _number(partition_info)
    if len(part) != int(counts[i]):
        raise RuntimeError(
            f"partition {i} has {len(part)} rows now but had {int(counts[i])} when digested: the input changed"
        )
    got = _result_columns(part, found, int(starts[i]), id_field)
    if table:
        return got
    return part[got["kept"].to_numpy(bool)]


def _divisions(starts: np.ndarray, ends: np.ndarray) -> list[int]:
    """Divisions of row numbers: one partition per (start, end) range, none empty."""
    return [int(s) for s in starts] + [int(ends[-1]) - 1]


@renamed(column="text_field", id_column="id_field")
def dedup(
    ddf: Any,
    text_field: str = "text",
    k: int | None = None,
    id_field: str | None = None,
    keep: str = "first",
    *,
    threshold: float | None | object = VERIFY,
    shingle: int = 3,
    hasher: Simhasher | None = None,
    clusters: bool = False,
    stats: dict[str, Any] | None = None,
    max_pairs: int | None = DEFAULT_MAX_PAIRS,
    scratch: str | None = None,
    progress: bool = False,
    candidates: str | None = None,
) -> Any:
    """Keeps one document of each near-duplicate cluster of a dask DataFrame.

    The same kept documents and evidence as :func:`neardup.dedup` on the concatenated
    partitions, for any number of partitions and workers. Every step runs on the workers (see
    docs/cluster.md): the documents are read once to digest them, the candidates are found by a
    shuffle on the search's part keys, verified where the two sketches meet, cut into connected
    components and each component's stars taken apart. The client receives counts only. The
    matching runs when this is called; the kept rows are a lazy DataFrame that reads the input
    again.

    Args:
        ddf: a dask DataFrame with the text in column ``text_field``.
        text_field: the column holding each document's text (str; a missing text is an error);
            ``column=`` is its old name, deprecated.
        k: the candidate radius, 0 to 16 (default 8; 3 with ``threshold=None``).
        id_field: the column of ids for the clusters table (default: global row numbers);
            ``id_column=`` is its old name, deprecated.
        keep: ``"first"`` or ``"longest"`` (ties to the first), as in :func:`neardup.dedup`.
        threshold: the least word-shingle Jaccard of a near-duplicate pair (default 0.8); None
            takes pairs on their fingerprints alone.
        shingle: words per shingle for ``threshold``.
        hasher: the fingerprint settings (default: ``Simhasher()``).
        clusters: also return the clusters table.
        stats: a dict to fill with ``documents``, ``candidate_pairs`` (pairs of distinct
            fingerprints within ``k``; with prefixes, the pairs compared), ``pairs_compared``
            (each distinct candidate pair, compared once: on one machine the stars skip the
            pairs whose texts are taken already), ``short_pairs`` (candidate pairs of short texts),
            ``band_pairs_exact`` (candidate pairs whose estimate lies near the threshold,
            decided on their exact shingle sets, which the digests hold),
            ``band_pairs_estimated`` (0: none is left to its estimate), ``verified_pairs`` (each
            once), ``rounds`` (of the connected components; 0 when the verified pairs fit one
            partition) and the seconds of each stage (the candidates' include their
            verification, done where they are found; ``seconds_verify`` is the rest: the
            verified pairs made unique, and the band decided).
        max_pairs: the most candidate pairs of distinct fingerprints, or with prefixes the most
            pairs compared (as :func:`neardup.dedup`); more raise
            :class:`neardup.TooManyPairsError` naming their number. None: no limit.
        scratch: a folder every worker can read and write, for the digests while this runs
            (default: a temporary folder on this machine, which a local cluster shares).
        progress: draw tqdm's bar of the five stages (digest, candidates, verify, components,
            stars) when tqdm is installed; each stage's time goes to the ``neardup`` logger at
            DEBUG either way.
        candidates: ``"prefix"`` (the default) or ``"fingerprint"``, as in :func:`neardup.dedup`: with
            prefixes, the texts meet by a shuffle on the rarest hashes of their sketches (in
            the single machine's order, counted on one text in 16 of the corpus; each
            partition gets the counts of its own texts' hashes), and ``stats["prefix_pairs"]``
            counts the candidate pairs found (the single machine's number), a pair once for
            each prefix hash its two texts share (``short_pairs`` likewise), each of them
            verified where it is found.

    Returns:
        the kept rows, a lazy dask DataFrame in input order; with ``clusters=True``,
        ``(kept, table)`` where ``table`` is a lazy dask DataFrame with one row per document:
        ``id``, ``cluster``, ``kept``, ``kept_id``, ``jaccard`` and ``distance``, as
        :meth:`neardup.DedupResult.to_pandas`.
    """
    k, threshold, shingle = check_settings(k, threshold, shingle)
    candidates = check_candidates(candidates)
    if callable(keep):
        raise ValueError(
            'keep must be "first" or "longest" on Dask; a keep function needs every document on one machine'
        )
    if keep not in ("first", "longest"):
        raise ValueError(f'keep must be "first" or "longest", got {keep!r}')
    max_pairs = None if max_pairs is None else integer(max_pairs, "max_pairs", minimum=0)
    hasher = _hasher(hasher)
    if hasher.fields is not None:
        raise ValueError(
            "neardup.dask.dedup fingerprints one text column; hasher.fields is not supported"
        )
    _check_frame(ddf, text_field, id_field)
    ddf = ddf.clear_divisions()
    record: dict[str, Any] = stats if stats is not None else {}
    bar = progress_bar(len(_STAGES), "neardup dask dedup", unit="stage") if progress else None

    def stage(name: str) -> None:
        log.debug("dask dedup: %s in %.3f s", name, record[f"seconds_{name}"])
        if bar is not None:
            bar.set_postfix_str(name, refresh=False)
            bar.update(1)

    owned = scratch is None
    folder = tempfile.mkdtemp(prefix="neardup-dask-") if scratch is None else os.fspath(scratch)
    try:
        found, starts, counts = _find(
            ddf,
            text_field,
            id_field,
            keep,
            k,
            threshold,
            shingle,
            hasher,
            max_pairs,
            folder,
            record,
            stage,
            candidates,
        )
    finally:
        if bar is not None:
            bar.close()
        if owned:
            shutil.rmtree(folder, ignore_errors=True)
        else:
            for name in os.listdir(folder):
                if name.startswith("digest.") and name.endswith(".arrow"):
                    os.remove(os.path.join(folder, name))
            remove_spilled(folder)
    figures = {key: record.get(key, 0) for key in ("documents", "removed", "candidate_pairs")}
    log.info(
        "dask dedup: %d documents, %d removed (%d clusters), %d candidate pairs, k=%d, "
        "threshold=%s",
        figures["documents"],
        figures["removed"],
        record.get("clusters", 0),
        figures["candidate_pairs"],
        k,
        threshold,
        extra=figures,
    )
    meta_table = pd.DataFrame(
        {
            "id": ddf._meta[id_field] if id_field is not None else pd.Series([], dtype=np.int64),
            "cluster": pd.Series([], dtype=np.int64),
            "kept": pd.Series([], dtype=bool),
            "kept_id": ddf._meta[id_field]
            if id_field is not None
            else pd.Series([], dtype=np.int64),
            "jaccard": pd.Series([], dtype=np.float32),
            "distance": pd.Series([], dtype=np.int64),
        }
    )
    args = (starts, counts, id_field)
    kept_rows = dd.map_partitions(
        _output_part, ddf, found, *args, False, meta=ddf._meta, align_dataframes=False
    )
    if not clusters:
        return kept_rows
    table = dd.map_partitions(
        _output_part, ddf, found, *args, True, meta=meta_table, align_dataframes=False
    )
    return kept_rows, table


#: The stages of a Dask dedup, each reported (log, progress bar) as it ends.
_STAGES = ("digest", "candidates", "verify", "components", "stars")


def _find(
    ddf: Any,
    text_field: str,
    id_field: str | None,
    keep: str,
    k: int,
    threshold: float | None,
    shingle: int,
    hasher: Simhasher,
    max_pairs: int | None,
    folder: str,
    record: dict[str, Any],
    stage: Callable[[str], None],
    candidates: str = "fingerprint",
    digest_part: Callable[..., pd.DataFrame] = _digest_part,
    verify_part: Callable[..., tuple[pd.DataFrame, int]] = _verify_part,
) -> tuple[Any, np.ndarray, np.ndarray]:
    """The per-row results of the documents that are removed or have copies or near-duplicates,
    one partition per input partition (indexed by global row, persisted on the workers), and
    each input partition's first row and row count. ``digest_part`` and ``verify_part`` stand
    for steps 1 and 4 (:mod:`neardup.dask_against` digests and verifies on compact sketches):
    ``verify_part(pairs, parts, starts, folder, threshold)`` is called by each task of step 4,
    on the candidate pairs routed to it (columns ``a`` and ``b``, global rows of any
    partitions, repeats possible), and returns those it keeps, each once: (a, b, jaccard,
    band), and the number of distinct pairs it compared."""
    clock = time.perf_counter()
    verified = threshold is not None
    with_ids = id_field is not None
    # 1. Digests, written by the workers; the client gets one count per partition. Only the
    # columns used are read (a Parquet input reads no other).
    used = [text_field] + ([id_field] if with_ids and id_field != text_field else [])
    counts = (
        ddf[used]
        .map_partitions(
            digest_part,
            text_field,
            id_field,
            hasher,
            shingle if verified else None,
            folder,
            meta=pd.DataFrame({"rows": pd.Series([], dtype=np.int64)}),
        )
        .compute()["rows"]
        .to_numpy(np.int64)
    )
    P = len(counts)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    n = int(counts.sum())
    record["documents"] = n
    record["seconds_digest"] = time.perf_counter() - clock
    stage("digest")
    clock = time.perf_counter()
    parts = [i for i in range(P) if counts[i] > 0]
    if not parts:
        record.update(
            candidate_pairs=0,
            short_pairs=0,
            prefix_pairs=0,
            verified_pairs=0,
            rounds=0,
            removed=0,
            clusters=0,
        )
        return _empty_found(ddf, id_field, P), starts, counts
    Q = max(len(parts), 1)
    part_starts = starts[parts]
    divisions = _divisions(part_starts, starts[parts] + counts[parts])

    def digests(columns: list[str]) -> Any:
        meta = _digest_meta(ddf, id_field, columns)
        return read_back(
            _read_digest,
            parts,
            [int(s) for s in part_starts],
            folder=folder,
            names=columns,
            kind=meta,
            meta=meta,
        )

    # 2. Copies: rows shuffled by content key; each row's text and its keep-order rank.
    # Spilled to the scratch folder: a worker holds one partition of it at a time.
    rows, _ = spill(
        exchange(
            digests(["fingerprint", *kernels.KEY_COLUMNS, "length"] + (["id"] if with_ids else [])),
            "key",
            Q,
            folder,
            "by_key",
        ).map_partitions(_texts_part, keep, with_ids, meta=_texts_meta(ddf, id_field)),
        folder,
        "rows",
    )
    discard(folder, "by_key")
    texts = rows[rows["row"] == rows["text"]].drop(columns=["row"])
    # 3. Candidates: with prefixes, by a shuffle on the texts' prefix hashes alone; else one
    # row per text and lead group, shuffled by part key (and the short texts' prefix hashes).
    by_prefix = verified and candidates == "prefix"
    # The tables of candidate pairs, each task's pairs listed once (a pair may still be listed
    # by several tasks: every copy is routed to one task for step 4).
    listings: list[Any] = []
    if not by_prefix:
        plan = kernels.search_plan(k, n)
        # The bit order of the search, chosen on a worker from the first partition's fingerprints.
        chosen = (
            digests(["fingerprint"])
            .partitions[0]
            .map_partitions(_bit_order_part, plan, meta=_frame(bit=np.int64))
            .compute()["bit"]
            .tolist()
        )
        order = chosen or None
        found = (
            texts[texts["fingerprint"] != np.uint64(0)][["text", "fingerprint"]]
            .map_partitions(
                _keys_part,
                plan,
                order,
                meta=_frame(pkey=np.uint32, text=np.int64, fingerprint=np.uint64),
            )
            .shuffle(on="pkey", npartitions=Q)
            .map_partitions(
                _pairs_part, k, plan, order, max_pairs, meta=_frame(a=np.int64, b=np.int64)
            )
        )
        listings.append(found)
    if verified:
        # Short texts, or with prefixes every text: a shuffle on their prefix hashes.
        keyed = digests(["fingerprint", *kernels.KEY_COLUMNS, "sketch"])
        table: Any = _NO_TABLE
        if by_prefix:
            # The rows that are not their text's first, by partition: texts count once.
            copies = exchange(
                rows[rows["row"] != rows["text"]][["row"]].map_partitions(
                    _with_part, part_starts, meta=_frame(row=np.int64, part=np.int64)
                ),
                "part",
                Q,
                folder,
                "copies",
                direct=True,
            )
            ticks = time.perf_counter()
            tables, record["rarity_rows"], table = _rarity_tables(digests, copies, Q, folder)
            record["seconds_rarity"] = time.perf_counter() - ticks
        key_meta = (
            _frame(hash=np.int64, row=np.int64)
            if by_prefix
            else _frame(
                hash=np.int64,
                key=kernels.KEY_DTYPE,
                key_hi=kernels.KEY_DTYPE,
                fingerprint=np.uint64,
                row=np.int64,
            )
        )
        keyed = (
            dd.map_partitions(
                _prefix_keys_part,
                keyed,
                copies,
                tables if table is None else table,
                threshold,
                meta=key_meta,
                align_dataframes=False,
            )
            if by_prefix
            else keyed.map_partitions(_short_keys_part, threshold, meta=key_meta)
        )
        if not by_prefix:
            # Short texts may be none (long documents): their hashes counted first, and no
            # shuffle's fixed cost when there are none.
            keyed, key_rows = spill(keyed, folder, "short_keys")
        hashed = (
            exchange(keyed, "hash", Q, folder, "prefix_keys")
            if by_prefix or key_rows.sum()
            else keyed
        )
        listings.append(
            hashed.map_partitions(
                _short_pairs_part,
                parts,
                part_starts,
                folder,
                table,
                threshold,
                meta=_frame(a=np.int64, b=np.int64),
            )
        )
    # Every copy of a pair goes to the task of one of its texts' partitions, the pair choosing:
    # there each pair is verified once (step 4), or kept once.
    listed = listings[0] if len(listings) == 1 else _renumbered(dd.concat(listings))
    routed = exchange(
        listed.map_partitions(
            _routed_part, part_starts, meta=_frame(a=np.int64, b=np.int64, part=np.int64)
        ),
        "part",
        Q,
        folder,
        "pairs",
        direct=True,
    )
    if verified:
        discard(folder, "prefix_keys")
        discard(folder, "copies")
    if by_prefix:
        _let_go_of_tables()
    record["seconds_candidates"] = time.perf_counter() - clock
    stage("candidates")
    clock = time.perf_counter()
    # 4. Verification: each pair once, in the task it was routed to; those whose estimate lies
    # near the threshold on their exact shingle sets, read from the digest files.
    checked = routed.map_partitions(
        *(
            (_checked_part, verify_part, parts, part_starts, folder, threshold)
            if verified
            else (_unique_pairs_part,)
        ),
        meta=_CHECKED_META if verified else _frame(a=np.int64, b=np.int64, jaccard=np.float32),
    )
    checked, checked_rows, tallies = spill_counted(checked, folder, "checked", _MARKS)
    discard(folder, "pairs")
    checked = _coalesced(checked, _partitions_for(int(checked_rows.sum())))
    skipped, found_pairs, within_k, in_band_pairs, compared = tallies
    record["short_pairs_skipped"] = skipped
    record["prefix_pairs"] = found_pairs if by_prefix else 0
    record["short_pairs"] = 0 if by_prefix or not verified else found_pairs
    record["pairs_compared"] = compared
    # With prefixes, the candidate pairs are those compared (each distinct pair once).
    record["candidate_pairs"] = candidate_pairs = compared if by_prefix else within_k
    if max_pairs is not None and candidate_pairs > max_pairs:
        raise TooManyPairsError(
            f"{candidate_pairs} candidate pairs compared (texts sharing a prefix hash), more "
            f"than the limit of {max_pairs}; raise max_pairs (None lifts the limit)"
            if by_prefix
            else f"{candidate_pairs} candidate pairs of distinct fingerprints within k={k} "
            f"(the limit is {max_pairs}): lower k (the candidate radius), or raise max_pairs"
        )
    if verified:
        record["band_pairs_exact"] = in_band_pairs
        in_band = checked["band"]
        band = checked[in_band][["a", "b"]]
        record["band_pairs_estimated"] = 0
        edges = checked[~in_band].drop(columns=["band"])
        if record["band_pairs_exact"]:
            assert threshold is not None
            exact = _exact_in_band(band, threshold, parts, part_starts, folder)
            edges = dd.concat([edges, exact])
    else:
        record["band_pairs_exact"] = record["band_pairs_estimated"] = 0
        edges = checked
    edges, edge_counts = spill(edges, folder, "edges")
    record["verified_pairs"] = int(edge_counts.sum())
    # Read back in partitions of about PAIR_ROWS pairs (adjacent files together): the shuffles
    # of the pairs' tables start from as many tasks as their size asks, not one per input part.
    edges = _coalesced(edges, _partitions_for(record["verified_pairs"]))
    record["seconds_verify"] = time.perf_counter() - clock
    stage("verify")
    clock = time.perf_counter()
    # 5. Connected components of the verified pairs: smallest labels spread along the pairs.
    # In one task up to 2 PAIR_ROWS pairs (about 100 MB of arrays), else by rounds.
    labels, rounds = _components(edges, _partitions_for(record["verified_pairs"] // 2), folder)
    record["rounds"] = rounds
    record["seconds_components"] = time.perf_counter() - clock
    stage("components")
    clock = time.perf_counter()
    # 6. Stars per component, in keep order, on the workers. The labels, the texts with copies
    # and the verified pairs, shuffled together by node: each node's columns (from its digest
    # when its text has no copies) and each pair's label; then nodes and pairs shuffled by
    # label, each component's stars taken where it lies. Only tables of the pairs' size move.
    copied, copied_counts = spill(rows[rows["copies"] > 1], folder, "copied")
    copies_rows = int(copied_counts.sum())
    copied = _coalesced(copied, _partitions_for(copies_rows))
    S = _partitions_for(3 * record["verified_pairs"] + copies_rows)
    text_columns = copied[copied["row"] == copied["text"]].drop(columns=["row"])
    stars = (
        dd.map_partitions(
            _nodes_part,
            _by_key(labels, "node", S),
            _by_key(text_columns, "text", S),
            _by_key(edges, "a", S),
            keep,
            with_ids,
            parts,
            part_starts,
            folder,
            meta=_node_rows_meta(text_columns._meta),
            align_dataframes=False,
        )
        .pipe(_shuffled, "label", S)
        .map_partitions(_stars_part, with_ids, meta=_stars_meta(ddf, id_field))
    )
    # 7. Per row: the star of its text (texts without copies: the text's row itself), and the
    # rows of texts with copies (a text in no star: its standin, with Jaccard 1).
    nullable = {
        "kept_row": "Int64",
        "cluster": "Int64",
        "kept_fingerprint": "UInt64",
        "leads": "boolean",
    }
    found_rows = copies_rows + 2 * record["verified_pairs"]
    with_copies = _join(
        copied,
        stars[stars["copies"] > 1]
        .drop(columns=["copies", "fingerprint"])
        .astype(nullable)
        .rename(columns={"text": "star_text"}),
        "text",
        "star_text",
        "left",
        _partitions_for(found_rows),
    ).drop(columns=["star_text"])
    lone = stars[stars["copies"] == 1].drop(columns=["copies"]).rename(columns={"text": "row"})
    found = (
        dd.concat(
            [
                lone[_found_columns(with_ids)],
                with_copies.map_partitions(
                    _copies_part, with_ids, meta=_found_meta(ddf, id_field).reset_index()
                )[_found_columns(with_ids)],
            ]
        )
        .pipe(_renumbered)
        .pipe(_by_row, divisions, _partitions_for(found_rows) == 1)
        .persist()
    )
    _wait(found)
    counts_of = found.map_partitions(_counts_part, meta=_frame(removed=np.int64, clusters=np.int64))
    totals = counts_of.sum().compute()
    record["removed"], record["clusters"] = int(totals["removed"]), int(totals["clusters"])
    record["seconds_stars"] = time.perf_counter() - clock
    stage("stars")
    found = _spread(found, parts, P)
    return found, starts, counts


def _counts_part(found: pd.DataFrame) -> pd.DataFrame:
    """The rows removed, and the rows kept that remove another (a cluster each)."""
    kept = found["kept_row"].to_numpy(np.int64) == found.index.to_numpy(np.int64)
    return pd.DataFrame(
        {
            "removed": [int((~kept).sum())],
            "clusters": [int((kept & found["leads"].to_numpy(bool)).sum())],
        }
    )


def _wait(collection: Any) -> None:
    """Until a persisted collection is computed (the digests it reads are then let go of); then
    a copy of each of its partitions on a second worker, so that losing one worker loses none
    (they cannot be computed again once the digests are gone; they are small: only the rows
    removed or with a copy or a partner)."""
    client = _client()
    if client is None:
        return
    from distributed import futures_of, wait

    wait(collection)
    if len(client.scheduler_info().get("workers", {})) > 1:
        client.replicate(futures_of(collection), n=2)


def _client() -> Any:
    """The distributed client this run computes on, or None (no distributed, or a local
    scheduler)."""
    try:
        from distributed import get_client

        return get_client()
    except (ImportError, ValueError):
        return None


def _frame(**dtypes: Any) -> pd.DataFrame:
    return pd.DataFrame({name: pd.Series([], dtype=t) for name, t in dtypes.items()})


_EDGE_META = _frame(a=np.int64, b=np.int64, jaccard=np.float32)
_CHECKED_META = _frame(a=np.int64, b=np.int64, jaccard=np.float32, band=bool)

#: The count rows of the tables of candidate and verified pairs, ``(mark, count)``: pairs not
#: compared (a prefix hash's run too large to split), pairs listed by the prefixes, pairs of
#: distinct fingerprints within k, and verified pairs left in the estimate's band. Summed
#: apart when the table is spilled (:func:`neardup.dask_spill.spill_counted`: mark ``-1 - m``
#: is its m-th sum).
_SKIPPED, _LISTED, _WITHIN_K, _IN_BAND, _COMPARED = -1, -2, -3, -4, -5
_MARKS = 5


def _texts_meta(ddf: Any, id_field: str | None) -> pd.DataFrame:
    meta = _frame(
        row=np.int64,
        text=np.int64,
        fingerprint=np.uint64,
        copies=np.int64,
        rank=np.int64,
        standin=np.int64,
    )
    if id_field is not None:
        meta["standin_id"] = ddf._meta[id_field]
    return meta


def _stars_meta(ddf: Any, id_field: str | None) -> pd.DataFrame:
    meta = _frame(
        text=np.int64,
        copies=np.int64,
        kept_row=np.int64,
        jaccard=np.float32,
        cluster=np.int64,
        fingerprint=np.uint64,
        kept_fingerprint=np.uint64,
        leads=bool,
    )
    if id_field is not None:
        meta["kept_id"] = ddf._meta[id_field]
    return meta


def _found_columns(with_ids: bool) -> list[str]:
    return ["row", "kept_row", "jaccard", "cluster", "fingerprint", "kept_fingerprint", "leads"] + (
        ["kept_id"] if with_ids else []
    )


def _merge_part(left: pd.DataFrame, right: pd.DataFrame, how: str) -> pd.DataFrame:
    return left.merge(right, on="_key", how=how).drop(columns=["_key"])


def _keyed(part: pd.DataFrame, on: str) -> pd.DataFrame:
    return part.assign(_key=part[on].to_numpy(np.int64)).reset_index(drop=True)


def _renumbered(frame: Any) -> Any:
    """``frame`` with each partition's index 0, 1, ... (a concatenation's repeats them)."""
    return frame.map_partitions(lambda p: p.reset_index(drop=True), meta=frame._meta)


def _by_key(frame: Any, on: str, partitions: int) -> Any:
    """``frame`` with its int64 column ``on`` copied to ``_key``, shuffled on it into
    ``partitions`` (the same hash sends equal keys of any table to the same partition)."""
    keyed = frame.map_partitions(_keyed, on, meta=frame._meta.assign(_key=np.int64(0)))
    return _shuffled(keyed, "_key", partitions)


def _shuffled(frame: Any, on: str, partitions: int) -> Any:
    """``frame`` shuffled on column ``on`` into ``partitions``; into one, its partitions put
    together instead (every row goes there): a shuffle's fixed cost is most of the work of a
    small table's."""
    if partitions == 1:
        return frame.repartition(npartitions=1)
    return frame.shuffle(on=on, npartitions=partitions)


def _by_row(frame: Any, divisions: list[int], small: bool) -> Any:
    """``frame`` indexed by its column ``row`` into the partitions of ``divisions``: by a
    shuffle, or when it is ``small`` (one partition of ``PAIR_ROWS`` rows holds it) put together
    in one task and cut there by row, without a shuffle's fixed cost."""
    if not small:
        return frame.set_index("row", divisions=divisions)
    meta = frame._meta.set_index("row")
    whole = frame.repartition(npartitions=1).to_delayed()[0]
    cut = dask.delayed(_cut_by_row, nout=len(divisions) - 1)(whole, divisions)
    pieces = [cut[q] for q in range(len(divisions) - 1)]
    return dd.from_delayed(pieces, meta=meta, divisions=tuple(divisions), verify_meta=False)


def _cut_by_row(part: pd.DataFrame, divisions: list[int]) -> list[pd.DataFrame]:
    """``part`` indexed by its column ``row`` in order, cut into the ranges of ``divisions``
    (each from one division to the next, the last one's end included)."""
    part = part.set_index("row").sort_index()
    bounds = np.searchsorted(part.index.to_numpy(np.int64), [*divisions[:-1], divisions[-1] + 1])
    return [part.iloc[lo:hi] for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist())]


def _join(left: Any, right: Any, left_on: str, right_on: str, how: str, partitions: int) -> Any:
    """``left`` joined with ``right`` where ``left[left_on] == right[right_on]`` (int64 columns):
    both shuffled on the key into ``partitions``, then joined partition by partition."""
    sides = [_by_key(left, left_on, partitions), _by_key(right, right_on, partitions)]
    meta = _merge_part(sides[0]._meta, sides[1]._meta, how)
    if how == "left":
        meta = meta.astype({c: sides[1]._meta[c].dtype for c in right.columns if c in meta})
    return dd.map_partitions(
        _merge_part, sides[0], sides[1], how, meta=meta, align_dataframes=False
    )


#: The rows of one partition of the tables that grow with the pairs found, not the corpus (the
#: verified pairs, their labels, the stars, the rows with copies): their shuffles make as many
#: partitions as it takes to hold about this many rows each, so a worker holds one such
#: partition whatever the corpus, and a small table is not cut into many tiny ones.
PAIR_ROWS = 1 << 20


def _partitions_for(rows: int) -> int:
    return max(1, -(-int(rows) // PAIR_ROWS))


def _coalesced(frame: Any, partitions: int) -> Any:
    """``frame`` in ``partitions`` partitions or fewer, each of adjacent ones put together."""
    return frame.repartition(npartitions=partitions) if frame.npartitions > partitions else frame


def _lookup_part(rows: pd.DataFrame) -> pd.DataFrame:
    """Rows shuffled by ``key``: the label rows (kind 0: a node's label) pass; each other row
    (kind 1: a neighbour's or its label's node) takes the label of its key."""
    own = rows["kind"].to_numpy() == 0
    keys = rows["key"].to_numpy(np.int64)
    labelled, labels = keys[own], rows["lab"].to_numpy(np.int64)[own]
    sort = np.argsort(labelled)
    asked = keys[~own]
    at = np.searchsorted(labelled, asked, sorter=sort)
    if len(asked) and (at.max() >= len(labelled) or (labelled[sort[at]] != asked).any()):
        raise RuntimeError("a node of a verified pair has no label")
    lab = rows["lab"].to_numpy(np.int64).copy()
    lab[~own] = labels[sort[at]]
    return pd.DataFrame({"who": rows["who"].to_numpy(np.int64), "lab": lab, "kind": rows["kind"]})


def _lowest_part(rows: pd.DataFrame) -> pd.DataFrame:
    """Rows shuffled by node (``who``): each node's smallest label, and whether it is lower than
    its label before (its kind 0 row)."""
    who = rows["who"].to_numpy(np.int64)
    lab = rows["lab"].to_numpy(np.int64)
    old = np.where(rows["kind"].to_numpy() == 0, lab, np.iinfo(np.int64).max)
    frame = pd.DataFrame({"node": who, "label": lab, "old": old})
    got = frame.groupby("node", sort=False).agg(label=("label", "min"), old=("old", "min"))
    return pd.DataFrame(
        {
            "node": got.index.to_numpy(np.int64),
            "label": got["label"].to_numpy(np.int64),
            "changed": got["label"].to_numpy(np.int64) < got["old"].to_numpy(np.int64),
        }
    )


_LABEL_ROW = _frame(key=np.int64, who=np.int64, lab=np.int64, kind=np.int8)


def _label_rows(labels: pd.DataFrame) -> pd.DataFrame:
    """A node's label (kind 0, by node) and its question for its label's label (kind 1, by
    label)."""
    node, label = labels["node"].to_numpy(np.int64), labels["label"].to_numpy(np.int64)
    n = len(node)
    return pd.DataFrame(
        {
            "key": np.concatenate([node, label]),
            "who": np.concatenate([node, node]),
            "lab": np.concatenate([label, np.full(n, -1, np.int64)]),
            "kind": np.concatenate([np.zeros(n, np.int8), np.ones(n, np.int8)]),
        }
    )


def _pair_rows(edges: pd.DataFrame) -> pd.DataFrame:
    """Both ends of each pair ask for the other's label (kind 1, by the other)."""
    a, b = edges["a"].to_numpy(np.int64), edges["b"].to_numpy(np.int64)
    return pd.DataFrame(
        {
            "key": np.concatenate([b, a]),
            "who": np.concatenate([a, b]),
            "lab": np.full(2 * len(a), -1, np.int64),
            "kind": np.ones(2 * len(a), np.int8),
        }
    )


def _local_labels(edges: pd.DataFrame) -> pd.DataFrame:
    """Each node of these pairs with the smallest node of its component among them."""
    a, b = edges["a"].to_numpy(np.int64), edges["b"].to_numpy(np.int64)
    nodes, at = np.unique(np.concatenate([a, b]), return_inverse=True)
    at = at.reshape(-1).astype(np.int64)
    local = _core.cluster_pairs(len(nodes), at[: len(a)], at[len(a) :])
    return pd.DataFrame({"who": nodes, "lab": nodes[local], "kind": np.zeros(len(nodes), np.int8)})


def _components(edges: Any, partitions: int, folder: str) -> tuple[Any, int]:
    """(node, label) for each node of a pair: the smallest node of its connected component,
    found by rounds of two shuffles on the workers: each node asks its neighbours for their
    labels and its label for its label's (pointer jumping), then takes the smallest, until no
    label changes (none with one partition: the components are found in one task). Returns the
    labels and the number of rounds."""
    meta = _frame(node=np.int64, label=np.int64, changed=bool)
    if partitions == 1:
        # The pairs in one task: their components found there at once, no round.
        whole = edges.repartition(npartitions=1).map_partitions(
            _local_labels, meta=_frame(who=np.int64, lab=np.int64, kind=np.int8)
        )
        labels, _ = spill(
            whole[["who", "lab"]].rename(columns={"who": "node", "lab": "label"}),
            folder,
            "labels",
        )
        return labels, 0
    asks, _ = spill(edges.map_partitions(_pair_rows, meta=_LABEL_ROW), folder, "asks")
    # To start with, each node takes the smallest node of its component among the pairs of each
    # partition (most components lie whole in one).
    first = edges.map_partitions(
        _local_labels, meta=_frame(who=np.int64, lab=np.int64, kind=np.int8)
    )
    labels, _ = spill(
        first.shuffle(on="who", npartitions=partitions).map_partitions(_lowest_part, meta=meta),
        folder,
        "labels0",
    )
    rounds = 0
    while True:
        rounds += 1
        rows = dd.concat([labels.map_partitions(_label_rows, meta=_LABEL_ROW), asks])
        looked = rows.shuffle(on="key", npartitions=partitions).map_partitions(
            _lookup_part, meta=_frame(who=np.int64, lab=np.int64, kind=np.int8)
        )
        new, _ = spill(
            looked.shuffle(on="who", npartitions=partitions).map_partitions(
                _lowest_part, meta=meta
            ),
            folder,
            f"labels{rounds}",
        )
        changed = int(new["changed"].sum().compute())
        labels = new
        if not changed:
            return labels[["node", "label"]], rounds


def _empty_found(ddf: Any, id_field: str | None, partitions: int) -> Any:
    meta = _found_meta(ddf, id_field)
    return read_back(lambda i: meta, range(partitions), meta=meta)


def _found_meta(ddf: Any, id_field: str | None) -> pd.DataFrame:
    meta = pd.DataFrame(
        {
            "kept_row": pd.Series([], dtype=np.int64),
            "jaccard": pd.Series([], dtype=np.float32),
            "cluster": pd.Series([], dtype=np.int64),
            "fingerprint": pd.Series([], dtype=np.uint64),
            "kept_fingerprint": pd.Series([], dtype=np.uint64),
            "leads": pd.Series([], dtype=bool),
        },
        index=pd.Index([], dtype=np.int64, name="row"),
    )
    if id_field is not None:
        meta["kept_id"] = ddf._meta[id_field]
    return meta


def _spread(found: Any, parts: list[int], partitions: int) -> Any:
    """``found`` (one partition per input partition with rows) with an empty partition for each
    empty input partition, so that partition i goes with input partition i."""
    if len(parts) == partitions:
        return found
    meta = found._meta
    pieces = found.to_delayed()
    by_part = dict(zip(parts, pieces))
    empty = dask.delayed(lambda: meta)()
    return dd.from_delayed(
        [by_part.get(i, empty) for i in range(partitions)], meta=meta, verify_meta=False
    )


def neardup_result(
    fps: np.ndarray, kept: np.ndarray, jaccard: np.ndarray, k: int, threshold: float | None
) -> Any:
    from neardup.dedup_result import DedupResult

    return DedupResult(fps, kept, jaccard, k, {}, None, threshold)
