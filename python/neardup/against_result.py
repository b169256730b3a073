"""What deduplicating new documents against a dedup index finds: :class:`Matches` per
digested document (what the core hands back) and :class:`AgainstResult`, the answer with the
documents' ids (:func:`neardup.against.dedup_against`)."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

__all__ = ["AgainstResult", "Matches"]


class AgainstResult:
    """What :func:`dedup_against` found, per new document in input order.

    Attributes:
        ids: the new documents' ids (row numbers if none were given).
        keep: True for the documents kept.
        duplicate_of: for a removed document, the id of the document it duplicates (in the
            index, or an earlier new document); None for a kept one.
        in_index: True when that document is in the index.
        jaccard: their Jaccard (1.0 for copies and kept documents), from the sketches.
        skipped_pairs: candidate pairs among the new documents that were not compared (a
            prefix hash shared by too many of them to split; 0 almost always).
    """

    def __init__(
        self,
        ids: list[Any],
        keep: np.ndarray,
        duplicate_of: list[Any],
        in_index: np.ndarray,
        jaccard: np.ndarray,
        skipped_pairs: int = 0,
    ) -> None:
        self.skipped_pairs = skipped_pairs
        self.ids, self.keep, self.duplicate_of, self.in_index, self.jaccard = (
            ids,
            keep,
            duplicate_of,
            in_index,
            jaccard,
        )

    @property
    def n_documents(self) -> int:
        return len(self.keep)

    @property
    def n_removed(self) -> int:
        return int((~self.keep).sum())

    @property
    def n_kept(self) -> int:
        return int(self.keep.sum())

    def removed(self) -> list[dict[str, Any]]:
        """One dict per removed document: ``id``, ``duplicate_of``, ``in_index``, ``jaccard``."""
        return [
            {
                "id": self.ids[r],
                "duplicate_of": self.duplicate_of[r],
                "in_index": bool(self.in_index[r]),
                "jaccard": float(self.jaccard[r]),
            }
            for r in np.flatnonzero(~self.keep).tolist()
        ]

    def __len__(self) -> int:
        return self.n_documents

    def __repr__(self) -> str:
        return (
            f"<AgainstResult: {self.n_documents} documents, {self.n_removed} removed "
            f"({int(self.in_index.sum())} for documents of the index)>"
        )


class Matches(NamedTuple):
    """What :meth:`DedupIndex.search` found, per digested document: ``kept``, the row of the
    batch kept in its place (itself when kept) or -1 when removed for a document of the index;
    ``index_row``, that document's row in the index or -1; ``jaccard``, their Jaccard (1 for a
    kept document and for copies)."""

    kept: np.ndarray
    index_row: np.ndarray
    jaccard: np.ndarray
    skipped_pairs: int = 0

    @property
    def keep(self) -> np.ndarray:
        return self.kept == np.arange(len(self.kept))

    @property
    def in_index(self) -> np.ndarray:
        return self.index_row >= 0

    def kept_ids(self, index: Any, ids: list[Any]) -> list[Any]:
        """Per document, the id of the one it duplicates (in the index, or of ``ids``), or its
        own id when kept."""
        in_index = self.in_index
        rows = np.unique(self.index_row[in_index]).tolist()
        named = dict(zip(rows, index.ids_of(rows)))
        return [
            named[int(i)] if i >= 0 else ids[int(c)]
            for i, c in zip(self.index_row.tolist(), self.kept.tolist())
        ]

    def result(self, index: Any, ids: list[Any]) -> AgainstResult:
        """The evidence, with the documents' ``ids``."""
        keep = self.keep
        duplicate_of = [None if k else d for k, d in zip(keep, self.kept_ids(index, ids))]
        return AgainstResult(
            ids, keep, duplicate_of, self.in_index, self.jaccard, self.skipped_pairs
        )
