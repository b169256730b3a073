"""A dask DataFrame deduplicated against a dedup index (:class:`neardup.DedupIndex`):
``pip install neardup[dask]``.

Every step runs on the workers; the client receives counts per partition and a few totals,
never a column of the documents:

1. each partition's task opens the index file itself, memory-mapped (once per worker process
   while the file is unchanged; the client sends its path, never the index), digests the
   partition with the index's settings (fingerprint, content key, compact sketch) and searches
   it against the index. A document's first near-duplicate in the index depends on no other new
   document, so this part of the answer is final there: the rows it removes, with the index
   ids they name, are kept on the workers; the digests of the rows left are written to the
   scratch folder;
2. the rows left are deduplicated among themselves by :mod:`neardup.dask`'s steps (copies by
   content key, candidates by the search's table keys and the short texts' prefix hashes,
   verification where the sketches lie, connected components, stars in row order), on the
   index's sketches: a pair is near when its Jaccard reaches the threshold as
   :meth:`DedupIndex.search` decides it (the compact sketches', or the exact sets' in an exact
   index; no pair is decided again on the texts); the id of the row that removes each one comes
   with its star;
3. with ``update``, each task writes its partition's kept digests to a file of the scratch
   folder, and the client appends them to the index file, one partition's column at a time (the
   file is one writer's: columns one after the other, so it is written section by section, each
   section partition by partition, memory-mapped from the scratch files); the scratch folder
   must then be readable by the client;
4. the kept rows and the clusters table are lazy: each input partition is read again and joined
   with its results.

The answer is :func:`neardup.dedup` with ``against=index`` on the concatenated partitions (keep
order: row order), for any partitioning.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
from collections.abc import Callable, Iterator
from typing import Any

import dask.dataframe as dd
import numpy as np
import pandas as pd

from neardup import _core
from neardup.against import DedupIndex
from neardup.batches import check_texts
from neardup.dask.against_scratch import (
    _OPENED,  # noqa: F401 (cleared by tests of workers in this process)
    PART_SHIFT,
    _flat,
    _global_rows,
    _IndexOrder,
    _kept_left,
    _kept_sections,
    _numpy,
    _opened,
    _posting_runs,
    _scratch_file,
    _write_kept_part,
)
from neardup.dask.cluster import _wait
from neardup.dask.digest import _check_frame, _digest_file, _read_columns
from neardup.dask.driver import _find
from neardup.dask.frames import _frame, _number
from neardup.dask.scratch import run_folder
from neardup.dask.spill import computed, read_back, write_table
from neardup.dask.steps import Run
from neardup.dask.verification import _pair_nodes
from neardup.index import DEFAULT_MAX_PAIRS
from neardup.index_batch import take_sets
from neardup.io.outputs import write_atomically
from neardup.paths import locked
from neardup.progress import log
from neardup.validate import check_k, integer
from neardup.verify import check_threshold

__all__ = ["dedup_against"]

#: The id column of the rows when the frame names none: the rows are told apart by
#: ``partition << PART_SHIFT | row in partition`` while they are matched, and by their global
#: row numbers in what comes out.
ROW = "__neardup_row"


def _search_part(
    candidates: str,
    path: str,
    k: int,
    threshold: float,
    max_pairs: int | None,
    part: pd.DataFrame,
    text_field: str,
    id_field: str,
    hasher: Any,
    shingle: Any,
    folder: str,
    partition_info: Any = None,
) -> pd.DataFrame:
    """Step 1 of :func:`neardup.dask._find` for a partition: digests it with the index's
    settings and searches it against the index the worker opens. Writes the rows the index
    removes (row in the partition, the index id, the Jaccard) and the partition's row count to
    its ``against`` file, and the digests of the rows left (compact sketches; as ``sketch``,
    the short texts' sets, which the prefix-hash candidates read) to its digest file; returns
    the number of rows left."""
    import pyarrow as pa

    i = _number(partition_info)
    index = _opened(path)
    values = part[text_field].tolist()
    check_texts(values, f"partition {i}, column {text_field!r},")
    sketches = index.sketches(1, bottoms=candidates == "prefix", count=False)
    batch = index.digest(values, 1, sketches)
    found = index.search(
        batch, k=k, threshold=threshold, threads=1, max_pairs=max_pairs, candidates=candidates
    )
    n = len(values)
    fated = found.index_row >= 0
    rows = np.flatnonzero(fated)
    distinct, which = np.unique(found.index_row[rows], return_inverse=True)
    named = index.ids_of(distinct.tolist())
    against = pa.table(
        {
            "row": pa.array(rows.astype(np.int64)),
            "index_id": pa.array(
                [named[j] for j in which.reshape(-1).tolist()],
                type=pa.string() if index.string_ids else pa.int64(),
            ),
            "jaccard": pa.array(found.jaccard[rows].astype(np.float32)),
        }
    ).replace_schema_metadata({"rows": str(n)})
    write_table(_scratch_file(folder, "against", i), against)
    left = np.flatnonzero(~fated)
    w = index.sketch_bytes // 4
    words = batch.words.reshape(-1, w)[left].reshape(-1) if n else np.zeros(0, np.uint32)
    lens = np.ascontiguousarray(batch.lens[left])
    fps = np.ascontiguousarray(batch.fingerprints[left])
    if candidates == "prefix":
        # The rows' bottom-k sketches, which the prefix steps list in the index's order.
        bottoms = sketches.bottoms(n).take(left)
        short_lens, short_sets = bottoms.lengths, bottoms.hashes
    else:
        short_lens, short_sets = _core.compact_short_sets(fps, lens, words, w, index.sketch_bits)
    offsets = np.concatenate([[0], np.cumsum(short_lens, dtype=np.int64)])
    if id_field == ROW:
        ids = pa.array((np.int64(i) << PART_SHIFT) | left.astype(np.int64))
    else:
        ids = pa.array(part[id_field].iloc[left], from_pandas=True)
    columns = {
        "fingerprint": pa.array(fps),
        "key": pa.array(batch.keys["lo"][left]),
        "key_hi": pa.array(batch.keys["hi"][left]),
        "length": pa.array(np.zeros(len(left), np.int64)),
        "sketch": pa.LargeListArray.from_arrays(pa.array(offsets), pa.array(short_sets)),
        "lens": pa.array(lens),
        "words": pa.FixedSizeListArray.from_arrays(pa.array(words), w),
        "id": ids,
    }
    if batch.lists is not None:
        # The prefix lists at the index's cut, which an update stores as postings.
        lists = batch.lists.take(left)
        at = np.concatenate([[0], np.cumsum(lists.lengths, dtype=np.int64)])
        columns["list"] = pa.LargeListArray.from_arrays(pa.array(at), pa.array(lists.hashes))
        columns["list_size"] = pa.array(lists.sizes)
    if batch.sets is not None:
        # The exact sets of an exact index, which verification and an update read.
        set_lens, values = take_sets(batch.sets, left)
        at = np.concatenate([[0], np.cumsum(set_lens, dtype=np.int64)])
        columns["exact"] = pa.LargeListArray.from_arrays(pa.array(at), pa.array(values))
    write_table(_digest_file(folder, i), pa.table(columns))
    return pd.DataFrame({"rows": [len(left)]}, index=[i])


def _compact_of(
    folder: str, i: int, exact: bool
) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray] | None]:
    """Input partition i's compact sketches of the rows left: (lengths, words a row, and for an
    exact index their exact sets as (lengths, values)), memory-mapped from its digest file."""
    table = _read_columns(_digest_file(folder, i), ["lens", "words"] + (["exact"] if exact else []))
    words = table.column(1)
    w = words.type.list_size
    sets = None
    if exact:
        column = table.column(2).combine_chunks()
        sets = (
            np.diff(column.offsets.to_numpy()).astype(np.uint32),
            np.ascontiguousarray(column.values.to_numpy(), np.uint32)[
                column.offsets[0].as_py() : column.offsets[-1].as_py()
            ],
        )
    return _numpy(table.column(0)), _flat(words).reshape(-1, w), sets


def _verify_compact_part(
    sketch_bits: int,
    exact: bool,
    pairs: pd.DataFrame,
    parts: list[int],
    starts: np.ndarray,
    folder: str,
    threshold: float,
) -> tuple[pd.DataFrame, int]:
    """Step 4 of :func:`neardup.dask._find` on the index's sketches, in the task the pairs were
    routed to: each pair once, with its Jaccard as :meth:`DedupIndex.search` decides it (the
    compact sketches', or the exact sets' in an ``exact`` index; none is left in a band for
    the exact shingle sets of the texts), those at ``threshold`` or more, and the number of pairs
    compared. The sketches are read where they lie (the digest files, each opened once)."""

    def take(j: int, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, Any]:
        lens, words, sets = _compact_of(folder, parts[j], exact)
        return lens[rows], words[rows], take_sets(sets, rows) if sets is not None else None

    a, b, at_a, at_b, pieces = _pair_nodes(pairs, starts, take)
    got = np.zeros(len(a), np.float64)
    if pieces:
        lens = np.concatenate([p[0] for p in pieces])
        words = np.concatenate([p[1] for p in pieces])
        w = words.shape[1]
        sides: tuple[Any, Any] = (None, None)
        if exact:
            sets = (
                np.concatenate([p[2][0] for p in pieces]),
                np.concatenate([p[2][1] for p in pieces]),
            )
            sides = (take_sets(sets, at_a), take_sets(sets, at_b))
        got = _core.near_jaccard(
            np.ascontiguousarray(lens[at_a]),
            np.ascontiguousarray(words[at_a]).reshape(-1),
            np.ascontiguousarray(lens[at_b]),
            np.ascontiguousarray(words[at_b]).reshape(-1),
            w,
            sketch_bits,
            threshold,
            *sides,
        )
    near = got >= threshold
    kept = pd.DataFrame(
        {
            "a": a[near],
            "b": b[near],
            "jaccard": got[near].astype(np.float32),
            "band": np.zeros(int(near.sum()), bool),
        }
    )
    return kept, len(a)


def _against_meta(string_ids: bool) -> pd.DataFrame:
    return _frame(row=np.int64, index_id=object if string_ids else np.int64, jaccard=np.float32)


def _read_against(path: str, string_ids: bool) -> pd.DataFrame:
    """A partition's rows removed for the index: (row in the partition, index id, Jaccard)."""
    import pyarrow as pa

    table = pa.ipc.open_file(pa.memory_map(path)).read_all()
    frame = table.to_pandas()
    return frame.astype(_against_meta(string_ids).dtypes.to_dict())


def _rows_of(path: str) -> pd.DataFrame:
    """A partition's row count, from its ``against`` file."""
    import pyarrow as pa

    schema = pa.ipc.open_file(pa.memory_map(path)).schema
    return pd.DataFrame({"rows": [int(schema.metadata[b"rows"])]})


def _output_part(
    part: pd.DataFrame,
    found: pd.DataFrame,
    against: pd.DataFrame,
    starts: np.ndarray,
    counts: np.ndarray,
    offsets: np.ndarray,
    id_field: str | None,
    kept_type: Any,
    table: bool,
    partition_info: Any = None,
) -> pd.DataFrame:
    """Input partition i's clusters table (``table``) or kept rows, from the rows the index
    removes (``against``) and the results of the rows left (``found``)."""
    i = _number(partition_info)
    n = len(part)
    if n != int(offsets[i + 1] - offsets[i]):
        raise RuntimeError(
            f"partition {i} has {n} rows now but had {int(offsets[i + 1] - offsets[i])} when "
            "digested: the input changed"
        )
    fated = np.zeros(n, bool)
    index_rows = against["row"].to_numpy(np.int64)
    fated[index_rows] = True
    left = np.flatnonzero(~fated)
    kept = ~fated
    kept[left] = _kept_left(found, int(starts[i]), int(counts[i]))
    if not table:
        return part[kept]
    ids = part[id_field].to_numpy() if id_field is not None else offsets[i] + np.arange(n)
    kept_id = np.asarray(ids, dtype=object).copy()
    jaccard = np.ones(n, np.float32)
    kept_id[index_rows] = against["index_id"].to_numpy(object)
    jaccard[index_rows] = against["jaccard"].to_numpy(np.float32)
    at = left[found.index.to_numpy(np.int64) - int(starts[i])]
    theirs = found["kept_id"].to_numpy()
    kept_id[at] = theirs if id_field is not None else _global_rows(theirs, offsets)
    jaccard[at] = found["jaccard"].to_numpy(np.float32)
    return pd.DataFrame(
        {
            "id": pd.Series(ids, dtype=part[id_field].dtype if id_field is not None else np.int64),
            "kept": kept,
            "kept_id": pd.Series(kept_id, dtype=kept_type),
            "in_index": fated,
            "jaccard": jaccard,
        }
    )


def dedup_against(
    ddf: Any,
    index: DedupIndex | str | os.PathLike[str],
    text_field: str = "text",
    id_field: str | None = None,
    *,
    k: int | None = None,
    threshold: float | None = None,
    update: bool = False,
    clusters: bool = False,
    max_pairs: int | None = DEFAULT_MAX_PAIRS,
    scratch: str | os.PathLike[str] | None = None,
    stats: dict[str, Any] | None = None,
    candidates: str | None = None,
) -> Any:
    """The rows of ``ddf`` that are not near-duplicates of a document of ``index`` or of an
    earlier row (in partition order), as :func:`neardup.dedup` with ``against=index`` on the
    concatenated partitions. Every step runs on the workers (see the module); the matching
    runs when this is called, and the kept rows (and the clusters table) are lazy DataFrames
    that read the input again.

    Args:
        ddf: a dask DataFrame with the text in column ``text_field``.
        index: the dedup index or its path, a file every worker can read at that path.
        id_field: the column of ids of the rows (default: global row numbers); with ``update`` they are
            stored in the index, so they must be of its kind (strings or integers).
        k, threshold: default to the index's.
        update: append the kept rows to the index file (atomically, under the file's lock, held
            from the search to the rename); the client reads the kept rows' digests from the
            scratch folder, a partition at a time. (The command writes its outputs first and
            the index last, through :func:`matched`.)
        clusters: also return a table with one row per document: ``id``, ``kept``, ``kept_id``
            (the document it duplicates, itself when kept), ``in_index`` and ``jaccard``.
        max_pairs: bounds each partition's search of the index (as
            :meth:`neardup.DedupIndex.search` on one machine: the index search of a partition
            with more candidate pairs raises TooManyPairsError) and the candidate pairs of
            distinct fingerprints among the new rows (as :func:`neardup.dask.dedup`); None lifts
            both.
        scratch: a folder every worker (and, with ``update``, the client) can read and write,
            for the digests while this runs (default: the temporary folder of this machine);
            the run writes in a subfolder of its own, removed when it ends
            (:mod:`neardup.dask.scratch`).
        stats: a dict to fill with ``documents``, ``in_index`` (rows removed for the index),
            ``removed`` and the figures of :func:`neardup.dask.dedup`'s steps among the rows left.
        candidates: how each partition's search of the index proposes pairs: the index's by
            default (``"prefix"`` for an index with prefix postings), or ``"fingerprint"``. The
            rows left are deduplicated among themselves with the same candidates (prefix
            lists in the index's order). An update merges the kept rows' postings, written
            sorted by each partition, into the file as it is written (a run a partition,
            memory-mapped).

    Returns:
        the kept rows, a lazy dask DataFrame in input order; with ``clusters=True``, ``(kept, table)``.
    """
    with matched(
        ddf,
        index,
        text_field,
        id_field,
        k=k,
        threshold=threshold,
        update=update,
        max_pairs=max_pairs,
        scratch=scratch,
        stats=stats,
        candidates=candidates,
    ) as got:
        if update:
            write_atomically(got.index.path, got.write_index)
            got.index._reopen_if_replaced()
    return (got.kept, got.table) if clusters else got.kept


@dataclasses.dataclass
class Matched:
    """A matching of :func:`matched`: the kept rows and the clusters table (lazy), and, for an
    update, the index the kept rows' digests are appended to."""

    index: DedupIndex
    kept: Any
    table: Any
    #: ``write_index(tmp)`` writes the index plus the kept rows to the new file ``tmp``, to be
    #: renamed over the index once every other output is in place (an update only).
    write_index: Callable[[str], None]


@contextlib.contextmanager
def matched(
    ddf: Any,
    index: DedupIndex | str | os.PathLike[str],
    text_field: str = "text",
    id_field: str | None = None,
    *,
    k: int | None = None,
    threshold: float | None = None,
    update: bool = False,
    max_pairs: int | None = DEFAULT_MAX_PAIRS,
    scratch: str | os.PathLike[str] | None = None,
    stats: dict[str, Any] | None = None,
    candidates: str | None = None,
) -> Iterator[Matched]:
    """The matching of :func:`dedup_against` (same arguments), held open while the block runs:
    with ``update``, the index file's lock is held and the run's scratch folder kept until the
    block ends, so that the caller writes its outputs first and the index last: the command
    writes the kept rows and the clusters table, then the index with ``write_index`` to a
    temporary file, and renames them into place in that order, the index under its lock. An
    update that fails or is stopped before then leaves the index as it was."""
    if not isinstance(index, DedupIndex):
        index = DedupIndex.open(index)
    if index.hasher.fields is not None:
        raise ValueError(
            "neardup.dask fingerprints one text column; an index of several fields is not supported"
        )
    k = index.k if k is None else check_k(k)
    threshold = index.threshold if threshold is None else check_threshold(threshold)
    candidates = index._candidates(candidates, threshold)
    if update and candidates == "prefix" and len(index) == 0:
        raise ValueError(
            f"{index.path} holds no documents yet: its first ones set the order of its prefix "
            "postings, counted on them; add them on one machine (neardup.dedup(docs, "
            "against=index, update=True), or the command without --workers), then update it "
            "on Dask"
        )
    max_pairs = None if max_pairs is None else integer(max_pairs, "max_pairs", minimum=0)
    _check_frame(ddf, text_field, id_field)
    if update and index.string_ids and id_field is None:
        raise TypeError(
            "this index holds ids that are strings: the new documents' ids must be strings too "
            "(give id_field)"
        )
    ddf = ddf.clear_divisions()
    record: dict[str, Any] = stats if stats is not None else {}
    with contextlib.ExitStack() as held:
        if update:
            held.enter_context(locked(index.path))
            index._reopen_if_replaced()
        folder = held.enter_context(run_folder(scratch))
        kept_rows, table, write_index = _match(
            ddf,
            index,
            text_field,
            id_field,
            k,
            threshold,
            update,
            max_pairs,
            folder,
            record,
            candidates,
        )
        log.info(
            "dask dedup against %s: %d documents, %d removed (%d for the index)",
            index.path,
            record["documents"],
            record["removed"],
            record["in_index"],
        )
        yield Matched(index, kept_rows, table, write_index)


def _no_update(tmp: str) -> None:
    raise ValueError("this matching does not update its index (update=False)")


def _match(
    ddf: Any,
    index: DedupIndex,
    text_field: str,
    id_field: str | None,
    k: int,
    threshold: float,
    update: bool,
    max_pairs: int | None,
    folder: str,
    record: dict[str, Any],
    candidates: str,
) -> tuple[Any, Any, Callable[[str], None]]:
    """The matching of :func:`dedup_against` in ``folder``: (kept rows, clusters table, the
    writer of the updated index to a new file; see :class:`Matched`)."""
    path = os.path.abspath(index.path)
    # Without ids, the rows are told apart by their partition and row there (a column for the
    # steps' types only; the digests name the rows themselves).
    frame = ddf if id_field is not None else ddf.assign(**{ROW: np.int64(0)})
    run = Run(
        frame,
        text_field,
        id_field if id_field is not None else ROW,
        "first",
        k,
        threshold,
        index.shingle,
        index.hasher,
        max_pairs,
        folder,
        record,
        candidates,
        digest_part=functools.partial(_search_part, candidates, path, k, threshold, max_pairs),
        verify_part=functools.partial(_verify_compact_part, index.sketch_bits, index.exact),
        # An index without documents has no order yet: the rows left count their own.
        table=_IndexOrder(path) if candidates == "prefix" and len(index) else None,
        list_size=index._list_size,
    )
    found, starts, counts = _find(
        run,
        lambda name: log.debug("dask dedup against: %s in %.3f s", name, record[f"seconds_{name}"]),
        whole=False,
    )
    partitions = len(counts)
    paths = [_scratch_file(folder, "against", i) for i in range(partitions)]
    sizes = computed(read_back(_rows_of, paths, meta=_frame(rows=np.int64)))["rows"].to_numpy(
        np.int64
    )
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    meta = _against_meta(index.string_ids)
    against = dd.from_map(
        _read_against, paths, string_ids=index.string_ids, meta=meta, enforce_metadata=False
    ).persist()
    _wait(against)
    in_index = int(offsets[-1] - counts.sum())
    record["in_index"] = in_index
    record["removed"] = record.get("removed", 0) + in_index
    record["documents"] = int(offsets[-1])
    write_index = _no_update
    if update:
        written = dd.map_partitions(
            _write_kept_part,
            found,
            folder,
            starts,
            counts,
            offsets,
            id_field is not None,
            index.string_ids,
            path,
            meta=_frame(rows=np.int64, id_bytes=np.int64, set_values=np.int64),
            align_dataframes=False,
        ).pipe(computed)
        kept_counts = written["rows"].to_numpy(np.int64)
        sections = _kept_sections(folder, partitions, index.string_ids)
        runs = (
            _posting_runs(folder, partitions, kept_counts, len(index))
            if index.candidates == "prefix"
            else None
        )
        n_new, id_bytes = int(kept_counts.sum()), int(written["id_bytes"].sum())
        write_index = functools.partial(
            index._write_streamed,
            n_new=n_new,
            id_bytes=id_bytes,
            fill=sections,
            postings=runs,
            set_values=int(written["set_values"].sum()),
        )
    # The ids keep the column's type (a Parquet table needs one); row numbers are integers.
    id_type: Any = ddf._meta[id_field].dtype if id_field is not None else np.int64
    kept_type = id_type if id_field is not None or not index.string_ids else object
    args = (starts, counts, offsets, id_field, kept_type)
    kept_rows = dd.map_partitions(
        _output_part, ddf, found, against, *args, False, meta=ddf._meta, align_dataframes=False
    )
    table_meta = pd.DataFrame(
        {
            "id": pd.Series([], dtype=id_type),
            "kept": pd.Series([], dtype=bool),
            "kept_id": pd.Series([], dtype=kept_type),
            "in_index": pd.Series([], dtype=bool),
            "jaccard": pd.Series([], dtype=np.float32),
        }
    )
    table = dd.map_partitions(
        _output_part, ddf, found, against, *args, True, meta=table_meta, align_dataframes=False
    )
    return kept_rows, table, write_index
