"""What dedup reports: for each document, whether it is kept and the document kept in its place,
as arrays or as a table."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _core
from .pipeline import labels_of

__all__ = ["DedupResult"]


class DedupResult:
    """What :func:`dedup` found: one entry per document, in input order.

    Clusters are stars: each removed document is a near-duplicate of the document kept in its
    place (``kept_row``), never only through a chain of others.

    Attributes:
        keep: ``bool`` mask, True for the documents kept.
        kept_row: ``int64``, the row of the document kept in each document's place (its own row
            when it is kept).
        jaccard: ``float32``, the word-shingle Jaccard similarity of each document with its kept
            document: the evidence of a removal (1 for a kept document and for exact copies; NaN
            for a removal on fingerprints alone, ``threshold=None``).
        cluster: ``int64`` cluster labels: the smallest row of each star (a document without
            near-duplicates is a cluster of its own).
        distance: ``uint8`` Hamming distance from each document to its kept document (at most
            ``k`` where fingerprints propose the pairs; any, with prefix candidates).
        fingerprints: the ``uint64`` fingerprints.
        ids: the documents' ids (``id_field``, the DataFrame's index), or None for row numbers.
        k: the candidate radius of fingerprint candidates and of ``threshold=None``: the
            largest distance of a candidate pair (prefix candidates do not read it).
        threshold: the least Jaccard similarity of a near-duplicate pair, or None when pairs were
            taken on their fingerprints alone.
        candidates: what proposed the pairs: ``"prefix"`` (documents sharing one of their
            rarest shingles, whatever ``k``), ``"fingerprint"`` (fingerprints within ``k``), or
            None without verification (``threshold=None``, fingerprints alone) or when unknown.
        stats: ``documents``, ``candidate_pairs`` (the pairs of distinct fingerprints within
            ``k`` that the stars considered; with prefix candidates, the pairs compared),
            ``bytes`` (UTF-8 bytes of text), ``seconds`` and ``mb_per_s``.
    """

    def __init__(
        self,
        fingerprints: np.ndarray,
        kept_row: np.ndarray,
        jaccard: np.ndarray,
        k: int,
        stats: dict[str, float],
        ids: Any = None,
        threshold: float | None = None,
        candidates: str | None = None,
    ) -> None:
        self.fingerprints = fingerprints
        self.kept_row = kept_row
        self.jaccard = jaccard
        self.keep = kept_row == np.arange(len(kept_row))
        self.cluster = labels_of(kept_row)
        self.k = k
        self.stats = stats
        self.ids = ids
        self.threshold = threshold
        self.candidates = candidates if threshold is not None else None
        self.distance = (
            _core.hamming_pairwise(fingerprints, fingerprints[kept_row])
            if len(kept_row)
            else np.zeros(0, np.uint8)
        )
        self._index: Any = None

    @property
    def kept_id(self) -> np.ndarray:
        """The id of the document kept in each document's place (rows without ids)."""
        return self.kept_row if self.ids is None else np.asarray(self.ids)[self.kept_row]

    @property
    def pairs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The removals as pairs ``(kept row, removed row, distance)``, one per removed document,
        in removed-row order."""
        removed = np.flatnonzero(~self.keep)
        return self.kept_row[removed], removed.astype(np.int64), self.distance[removed]

    @property
    def n_documents(self) -> int:
        return len(self.kept_row)

    @property
    def n_kept(self) -> int:
        return int(self.keep.sum())

    @property
    def n_removed(self) -> int:
        """Documents dropped as near-duplicates of a kept one."""
        return self.n_documents - self.n_kept

    @property
    def n_clusters(self) -> int:
        """Clusters of two or more documents (each keeps one of them)."""
        return int(len(np.unique(self.kept_row[~self.keep])))

    def _columns(self) -> dict[str, Any]:
        ids = np.arange(self.n_documents) if self.ids is None else self.ids
        return {
            "id": ids,
            "cluster": self.cluster,
            "kept": self.keep,
            "kept_id": self.kept_id,
            "jaccard": self.jaccard,
            "distance": self.distance.astype(np.int64),
        }

    def to_pandas(self) -> Any:
        """One row per document: ``id``, ``cluster``, ``kept``, ``kept_id`` (the document kept in
        its place), ``jaccard`` and ``distance`` (to that document). For a pandas input, the
        frame keeps the input's index, so ``df.join(result.to_pandas())`` lines up."""
        import pandas as pd

        return pd.DataFrame(self._columns(), index=self._index)

    def removals(self) -> Any:
        """The removals as a pandas DataFrame, one row per removed document: ``id``, ``kept_id``
        (the document kept in its place), ``jaccard`` and ``distance`` (their evidence), in row
        order; with a pandas input, indexed like it."""
        table = self.to_pandas()
        return table.loc[~self.keep, ["id", "kept_id", "jaccard", "distance"]]

    def to_arrow(self) -> Any:
        """The columns of :meth:`to_pandas` as a ``pyarrow.Table`` (needs pyarrow)."""
        import pyarrow as pa

        columns = self._columns()
        ids = columns["id"]
        columns["id"] = pa.array(ids.tolist() if getattr(ids, "dtype", None) == object else ids)  # noqa: E721
        kept = columns["kept_id"]
        columns["kept_id"] = pa.array(
            kept.tolist() if getattr(kept, "dtype", None) == object else kept  # noqa: E721
        )
        return pa.table(columns)

    def to_polars(self) -> Any:
        """The columns of :meth:`to_pandas` as a ``polars.DataFrame`` (needs polars)."""
        import polars as pl

        return pl.from_arrow(self.to_arrow())

    def __len__(self) -> int:
        return self.n_documents

    def __repr__(self) -> str:
        if self.threshold is None:
            how = f"k={self.k}, fingerprints only"
        elif self.candidates == "prefix":  # k plays no part
            how = f"prefix candidates, Jaccard >= {self.threshold:g}"
        elif self.candidates == "fingerprint":
            how = f"fingerprint candidates within k={self.k}, Jaccard >= {self.threshold:g}"
        else:
            how = f"k={self.k}, Jaccard >= {self.threshold:g}"
        clusters = f"{self.n_clusters} cluster{'s' if self.n_clusters != 1 else ''}"
        return f"<DedupResult {how}: {self.n_documents} documents, {clusters}, {self.n_removed} removed>"
