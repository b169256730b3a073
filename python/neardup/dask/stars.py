"""Step 6 of a Dask dedup: the stars of each component in keep order. The labels, the texts with
copies and the verified pairs meet by node, then nodes and pairs by label, and each
component's stars are taken where it lies; the rows of texts with copies follow their text."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from neardup import kernels

from .digest import _digest_values
from .frames import _frame


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


def _counts_part(found: pd.DataFrame) -> pd.DataFrame:
    """The rows removed, and the rows kept that remove another (a cluster each)."""
    kept = found["kept_row"].to_numpy(np.int64) == found.index.to_numpy(np.int64)
    return pd.DataFrame(
        {
            "removed": [int((~kept).sum())],
            "clusters": [int((kept & found["leads"].to_numpy(bool)).sum())],
        }
    )


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
