"""The rarity order of prefix candidates on Dask: how many texts of a share of the corpus hold
each shingle hash, summed by hash; the whole table, which every worker process reads once from
the scratch folder, with the marks of the hashes more than one text may hold (up to
``RARITY_TABLE`` hashes), or past that each partition's own table, brought to it by an
exchange."""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable
from typing import Any

import dask.dataframe as dd
import numpy as np
import pandas as pd

from neardup import _core, kernels
from neardup.prefix_lists import RARITY_FRACTION, counted_on_every_text, marks_fit
from neardup.progress import log

from .cluster import _client
from .digest import _is_text, _sketch_array, _text_sketches
from .exchange import discard, exchange, word_bounds
from .frames import _frame, _number
from .spill import spill, spill_file


def _held_part(part: pd.DataFrame, share: int, partition_info: Any = None) -> pd.DataFrame:
    """The distinct shingle hashes of the partition's texts of the counted share (one content
    key in ``share``), each with how many of those texts hold it: (hash, part, count). Each
    text of the corpus lies in one partition: summed by hash, the counts are the whole
    corpus's."""
    chosen = _is_text(part)
    if share > 1:
        chosen = chosen & (part["key"].to_numpy(kernels.KEY_DTYPE) % np.uint64(share) == 0)
    hashes, counts = kernels.rarity_counts(_text_sketches(part, chosen), 1 << 62)
    return pd.DataFrame(
        {
            "hash": hashes.astype(np.int64),
            "part": np.full(len(hashes), _number(partition_info), np.int32),
            "count": counts.astype(np.int32),
        },
        copy=False,
    )


def _hashes_part(part: pd.DataFrame, partition_info: Any = None) -> pd.DataFrame:
    """The distinct shingle hashes of the partition's texts, each with how many of them hold
    it, up to 2 (enough to tell a hash held by two texts of the corpus): (hash, part, held)."""
    hashes, counts = kernels.rarity_counts(_text_sketches(part, _is_text(part)), 1 << 62)
    return pd.DataFrame(
        {
            "hash": hashes.view(np.int64),
            "part": np.full(len(hashes), _number(partition_info), np.int32),
            "held": np.minimum(counts, 2).astype(np.int8),
        }
    )


def _frequent_part(rows: pd.DataFrame) -> pd.DataFrame:
    """Of the hashes shuffled here, those counted twice or more over the corpus, once each, with
    their count: (hash, count), by hash."""
    # Each source's rows come sorted (as unsigned hashes): the sort merges their runs.
    hashes = rows["hash"].to_numpy(np.int64)
    order = np.argsort(hashes, kind="stable")
    hashes = hashes[order]
    firsts = np.flatnonzero(np.append(True, hashes[1:] != hashes[:-1])) if len(hashes) else order
    summed = (
        np.add.reduceat(rows["count"].to_numpy(np.int64)[order], firsts) if len(firsts) else firsts
    )
    held = summed >= 2
    return pd.DataFrame({"hash": hashes[firsts][held], "count": summed[held]}, copy=False)


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
    none; :func:`_marks`). ``every_text``: whether the table was counted, or the marks made,
    on every text, so that a hash counting 0 is held by one text alone."""

    def __init__(self, folder: str, files: int, marks: int, every_text: bool = False) -> None:
        self.folder = folder
        self.files = files
        self.marks = marks
        self.every_text = every_text
        # Tells this run's table from any other's in a worker's cache (a scratch folder may
        # be used again).
        self.token = os.urandom(16).hex()

    def load(self) -> Any:
        """The table's order (a ``_core.RarityOrder``), which :func:`neardup.kernels.prefix_keys`
        and :func:`neardup.kernels.split_runs` take as they take ``(hashes, counts)``."""
        return _shared_table(self.folder, self.files, self.marks, self.every_text, self.token)


@functools.lru_cache(maxsize=1)
def _shared_table(folder: str, files: int, marks: int, every_text: bool, token: str) -> Any:
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
    return _core.RarityOrder(
        *table, repeated=_read_marks(folder, marks) if marks else None, every_text=every_text
    )


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


def _slots_part(part: pd.DataFrame, bits: int) -> pd.DataFrame:
    """The slots (of ``bits`` bits) of the shingle hashes of the partition's texts (its rows
    ``is_text``), sorted, each at most twice: (slot)."""
    # The texts' sketches by their ranges (not a copy of them).
    starts, ends, hashes = kernels._ranges(_sketch_array(part["sketch"]))
    text = _is_text(part)
    slots = _core.repeat_slots(
        kernels._array(starts[text], np.uint64),
        kernels._array(ends[text], np.uint64),
        kernels._array(hashes, np.uint64),
        bits,
    )
    return pd.DataFrame({"slot": slots}, copy=False)


def _marks_part(
    rows: pd.DataFrame, bits: int, partitions: int, partition_info: Any = None
) -> pd.DataFrame:
    """The words of the table of repeated slots in this partition's range, marked by the slots
    every partition moved here: (word)."""
    first, end = word_bounds(_number(partition_info), 1 << (bits - 6), partitions)
    words = _core.repeated_words(kernels._array(rows["slot"], np.uint32), first, end - first)
    return pd.DataFrame({"word": words.view(np.int64)}, copy=False)


def _marks(digests: Callable[[list[str]], Any], hashes: int, partitions: int, folder: str) -> int:
    """The marks of the hashes more than one text may hold, on every text of the corpus (each
    once; ``hashes``: their sketches' hashes in all), as :class:`neardup.prefix_lists.PrefixLists`
    makes them on one machine: each partition's slots go to the partition of their range (four
    bytes a hash), which marks its words of the table; the words are spilled, to be read by
    every worker process once with the shared table. Returns the number of pieces."""
    clock = time.perf_counter()
    bits = min(_core.repeat_bits(hashes), MARK_BITS)
    slots = digests(["sketch"]).map_partitions(_slots_part, bits, meta=_frame(slot=np.uint32))
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
#: as :class:`neardup.prefix_lists.PrefixLists` counts).
RARITY_SHARE = RARITY_FRACTION

#: The name of the spilled rarity tables: one a partition with rows, its texts' hashes.
_RARITY = "rarity"

#: The name of the spilled pieces of the table of repeated slots (:func:`_marks`).
_REPEATED = "repeated"

#: The most bits of a slot of the marks of a Dask dedup with the whole rarity table: a table of
#: at most 2^30 slots (128 MiB), which every worker process holds once, two slots a hash up to
#: 2^29 hashes (about 9M short texts); up to 2^30 hashes more hashes fill it, past that no marks
#: are made (:func:`neardup.prefix_lists.marks_fit`; :func:`neardup.dedup`'s tables go to 2^32
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
    digests: Callable[[list[str]], Any], partitions: int, folder: str, sizes: tuple[int, int]
) -> tuple[Any, int, _SharedTable | None]:
    """Each partition's table of the rarity order, spilled (one partition with rows each), and
    the tables' rows: how many texts of a share of the corpus (one content key in
    ``RARITY_SHARE``, or every text when :func:`neardup.prefix_lists.counted_on_every_text`; each
    text once) hold each hash its texts hold, for the hashes counted twice
    or more (the others count 0). A partition's table orders its texts' hashes as the whole
    corpus's table would (and as :func:`neardup.dedup` does); its size is set by the
    partition's, whatever the corpus. ``digests(columns)``: the digests' columns, with a column
    ``is_text`` (the rows that are their text's first); ``sizes``: the hashes their texts'
    sketches hold, and the texts (each once).

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
    hashes, texts = sizes
    share = 1 if counted_on_every_text(hashes, texts) else RARITY_SHARE
    sampled = digests(["key", "sketch"]).map_partitions(
        _held_part, share, meta=_frame(hash=np.int64, part=np.int32, count=np.int32)
    )
    frequent = exchange(sampled, "hash", partitions, folder, "sampled").map_partitions(
        _frequent_part, meta=_frame(hash=np.int64, count=np.int64)
    )
    frequent, frequent_rows = spill(frequent, folder, _FREQUENT)
    discard(folder, "sampled")
    if int(frequent_rows.sum()) <= RARITY_TABLE:
        # In the sampled order, the hashes more than one text may hold are marked on every text.
        marks = (
            _marks(digests, hashes, partitions, folder)
            if share > 1 and marks_fit(hashes, MARK_BITS)
            else 0
        )
        # Counted on every text, or marked on every text: the hashes of one text are told.
        shared = _SharedTable(folder, len(frequent_rows), marks, every_text=share == 1 or marks > 0)
        return None, int(frequent_rows.sum()), shared
    # Each partition's distinct hashes go where their sums went (the same destinations): each
    # finds its count, if any, in that piece of the table, or is found held by two texts.
    held = digests(["sketch"]).map_partitions(
        _hashes_part, meta=_frame(hash=np.int64, part=np.int32, held=np.int8)
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
    tables, table_rows = spill(tables, folder, _RARITY)
    discard(folder, "held")
    discard(folder, "holders")
    return tables, int(table_rows.sum()), None


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
