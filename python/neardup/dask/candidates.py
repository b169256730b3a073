"""Step 3 of a Dask dedup, the candidate pairs: the fingerprint search by part keys (pairs within
``k``, and texts of one fingerprint), and the texts meeting on a prefix hash of their sketches
(short texts, or with prefix candidates every text, in the rarity order), runs over the cap
split by their next hashes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from neardup import _core, kernels
from neardup.verify import SKETCH_SIZE, estimate_band

from .digest import _is_text, _sketch_array, _sketches_of
from .frames import _LISTED, _SKIPPED, _WITHIN_K, _frame, _partition_of
from .rarity import _local_table, _SharedTable, _table_of


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


def _prefix_keys_part(
    part: pd.DataFrame,
    table: pd.DataFrame | _SharedTable,
    threshold: float,
    size: int = SKETCH_SIZE,
) -> pd.DataFrame:
    """The prefix hashes of the partition's texts in the rarity order of ``table`` (its texts'
    hashes of the order's table, or the whole table: :func:`_rarity_tables`): (hash, row),
    each row a text's; the rows that are not texts (column ``is_text``) list none: their texts
    list the same hashes. ``size``: the sketches' size (the bottom-k their lists are made
    from)."""
    # Rows that are not texts are given no prefix, as texts without features are.
    fps = np.where(_is_text(part), part["fingerprint"].to_numpy(np.uint64), np.uint64(0))
    # A partition's own table holds every hash two texts of the corpus hold (their exact
    # marks): the others, held by one text alone, are not shuffled.
    index, hashes = kernels.prefix_keys(
        _sketch_array(part["sketch"]),
        table.load()
        if hasattr(table, "load")
        else _core.RarityOrder(*_table_of(table), every_text=True),
        threshold,
        fps,
        size,
        estimate_band(threshold, size),
    )
    return pd.DataFrame(
        {"hash": hashes.astype(np.int64), "row": part["row"].to_numpy(np.int64)[index]},
        copy=False,
    )


def _short_pairs_part(
    rows: pd.DataFrame,
    parts: list[int],
    starts: np.ndarray,
    folder: str,
    table: Any,
    threshold: float,
    size: int = SKETCH_SIZE,
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
        order = table.load() if hasattr(table, "load") else table
        if order is None:
            held = [_local_table(folder, int(j), piece) for j, piece in zip(np.unique(of), pieces)]
            hashes_of, at = np.unique(np.concatenate([h for h, _ in held]), return_index=True)
            order = (hashes_of, np.concatenate([c for _, c in held])[at])
        band = estimate_band(threshold, size)
        return kernels.split_runs(hashes, nodes, sketches, order, threshold, size, band)

    a, b, skipped, listed = kernels._run_pairs(rows["hash"].to_numpy(np.int64), text, split)
    return pd.DataFrame(
        {"a": np.append(a, [_SKIPPED, _LISTED]), "b": np.append(b, [skipped, listed])},
        copy=False,
    )


#: The order of the short texts' prefixes: by hash value (no table of frequent hashes).
_NO_TABLE = (np.zeros(0, np.uint64), np.zeros(0, np.uint32))
