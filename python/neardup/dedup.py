"""Deduplication of a corpus: fingerprints, near-duplicate clusters, one document kept per cluster."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Union

import numpy as np

from . import _core
from .hasher import Simhasher, _iter_docs
from .index import _int, _k, cluster as _cluster, find_all
from .verify import THRESHOLD_K, Sketches, check_threshold

__all__ = ["DedupResult", "dedup"]

Keep = Union[str, Callable[[Any], Any]]


class DedupResult:
    """What :func:`dedup` found: one entry per document, in input order.

    Attributes:
        keep: ``bool`` mask, True for the one document kept per cluster.
        cluster: ``int64`` cluster labels; a cluster's label is its first document's row, and a
            document without near-duplicates is a cluster of its own.
        distance: ``uint8`` Hamming distance from each document to its cluster's kept document
            (0 for the kept one). It can exceed ``k``: a cluster is a chain of pairs within k.
        fingerprints: the ``uint64`` fingerprints.
        ids: the documents' ids (``id_field``, the DataFrame's index), or None for row numbers.
        k: the largest distance of a near-duplicate pair (of a candidate pair, with a threshold).
        threshold: with a threshold, pairs within ``k`` are near-duplicates only when their word
            shingles have at least this Jaccard similarity; None otherwise.
        stats: ``documents``, ``bytes`` (UTF-8 bytes of text), ``seconds`` and ``mb_per_s``.
    """

    def __init__(
        self,
        fingerprints: np.ndarray,
        cluster: np.ndarray,
        keep: np.ndarray,
        k: int,
        stats: dict[str, float],
        ids: Any = None,
        pairs: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
        threshold: float | None = None,
    ) -> None:
        self.fingerprints = fingerprints
        self.cluster = cluster
        self.keep = keep
        self.k = k
        self.stats = stats
        self.ids = ids
        self.kept_row = kept_rows(cluster, keep)
        self.distance = _core.hamming_pairwise(fingerprints, fingerprints[self.kept_row]) if len(cluster) else np.zeros(0, np.uint8)
        self.threshold = threshold
        self._pairs = pairs

    @property
    def pairs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every near-duplicate pair ``(i, j, distance)`` within ``k`` (``i < j``), each once
        (with a threshold: those that passed it); found on first use (a corpus of n copies of one
        text has n(n-1)/2 of them)."""
        if self._pairs is None:
            self._pairs = find_all(self.fingerprints, self.k)
        return self._pairs

    @property
    def n_documents(self) -> int:
        return len(self.cluster)

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
        sizes = np.bincount(self.cluster, minlength=0) if len(self.cluster) else np.zeros(0, np.int64)
        return int((sizes >= 2).sum())

    def to_pandas(self) -> Any:
        """One row per document: ``id``, ``cluster``, ``kept``, ``distance`` (to the kept one)."""
        import pandas as pd

        ids = np.arange(self.n_documents) if self.ids is None else self.ids
        return pd.DataFrame(
            {"id": ids, "cluster": self.cluster, "kept": self.keep, "distance": self.distance.astype(np.int64)}
        )

    def __len__(self) -> int:
        return self.n_documents

    def __repr__(self) -> str:
        return (
            f"<DedupResult k={self.k}: {self.n_documents} documents, {self.n_clusters} clusters, "
            f"{self.n_removed} removed>"
        )


def kept_rows(labels: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """For each row, the row kept in its cluster."""
    kept = np.flatnonzero(keep)
    by_label = np.zeros(len(labels), dtype=np.int64)
    by_label[labels[kept]] = kept
    return by_label[labels]


def select(
    labels: np.ndarray,
    keep: Keep,
    lengths: np.ndarray | None = None,
    doc: Callable[[int], Any] | None = None,
) -> np.ndarray:
    """The keep mask: one row per cluster, chosen by ``keep`` ("first", "longest" with the
    documents' ``lengths``, or a key function called on ``doc(row)`` of rows in clusters of two
    or more documents; the highest key is kept, the first of equals)."""
    n = len(labels)
    rows = np.arange(n, dtype=np.int64)
    if keep == "first":
        return labels == rows
    if keep == "longest":
        assert lengths is not None
        order = np.lexsort((rows, -np.asarray(lengths, dtype=np.int64), labels))
        first = np.ones(n, dtype=bool)
        first[1:] = labels[order][1:] != labels[order][:-1]
        mask = np.zeros(n, dtype=bool)
        mask[order[first]] = True
        return mask
    if callable(keep):
        assert doc is not None
        mask = labels == rows
        sizes = np.bincount(labels, minlength=n) if n else np.zeros(0, np.int64)
        in_clusters = np.flatnonzero(sizes[labels] >= 2)
        order = in_clusters[np.argsort(labels[in_clusters], kind="stable")]
        best: dict[int, tuple[Any, int]] = {}
        for row in order.tolist():
            label = int(labels[row])
            key = keep(doc(row))
            if label not in best or key > best[label][0]:
                best[label] = (key, row)
        for label, (_, row) in best.items():
            mask[label] = False
            mask[row] = True
        return mask
    raise ValueError(f"keep must be \"first\", \"longest\" or a function, got {keep!r}")


def _check_keep(keep: Any) -> None:
    if not (keep in ("first", "longest") or callable(keep)):
        raise ValueError(f"keep must be \"first\", \"longest\" or a function, got {keep!r}")


class _Texts:
    """Yields the text (or fields dict) of each document, noting its length and bytes."""

    def __init__(self, items: Iterable[Any], text_field: str | None, id_field: str | None, fields: bool) -> None:
        self.items, self.text_field, self.id_field, self.fields = items, text_field, id_field, fields
        self.lengths: list[int] = []
        self.nbytes = 0
        self.ids: list[Any] | None = [] if id_field is not None else None
        self.held: list[Any] | None = None  # every text, when set to a list

    def __iter__(self) -> Iterator[Any]:
        lengths, ids, held = self.lengths, self.ids, self.held
        for i, item in enumerate(_iter_docs(self.items)):
            if isinstance(item, Mapping) and not self.fields:
                field = self.text_field or "text"
                if field not in item:
                    raise KeyError(f"docs[{i}] has no field {field!r} (pass text_field= to name the text)")
                text = item[field]
                if not isinstance(text, str):
                    raise TypeError(f"docs[{i}][{field!r}] is {type(text).__name__}, expected str")
            else:
                text = item
            if ids is not None:
                if not isinstance(item, Mapping) or self.id_field not in item:
                    raise KeyError(f"docs[{i}] has no field {self.id_field!r} (id_field)")
                ids.append(item[self.id_field])
            if isinstance(text, str):
                lengths.append(len(text))
                self.nbytes += len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
            elif isinstance(text, Mapping):
                values = [v for v in text.values() if isinstance(v, str)]
                lengths.append(sum(map(len, values)))
                self.nbytes += sum(len(v.encode("utf-8", "surrogatepass")) for v in values)
            else:
                lengths.append(0)
            if held is not None:
                held.append(text)
            yield text


def dedup(
    docs: Any,
    k: int | None = None,
    hasher: Simhasher | None = None,
    keep: Keep = "first",
    *,
    threshold: float | None = None,
    shingle: int = 3,
    text_field: str | None = None,
    id_field: str | None = None,
    column: str | None = None,
    threads: int | None = None,
) -> DedupResult:
    """Finds the near-duplicate clusters of a corpus and keeps one document of each.

    Two documents are near-duplicates when their fingerprints are within Hamming distance ``k``
    and, with a ``threshold``, their word shingles have at least that Jaccard similarity; a
    cluster holds the documents linked by chains of near-duplicate pairs.

    Args:
        docs: a list or any iterable of strings or dicts (the text in ``text_field``, default
            ``"text"``; with ``hasher.fields`` set, dicts go to the hasher whole), a pandas
            Series or DataFrame, a polars DataFrame or a pyarrow Table (the text in ``column``,
            default ``"text"``).
        k: the largest distance of a near-duplicate pair, 0 to 16 (default 3; 5 with a threshold,
            which then weeds out the pairs that are only alike by chance).
        hasher: the fingerprint settings (default: ``Simhasher()``).
        keep: which document of a cluster is kept: ``"first"``, ``"longest"`` (ties to the
            first), or a function called on each document of a cluster of two or more whose
            highest result is kept (ties to the first), such as ``lambda doc: doc["stars"]``.
            With a function, a one-shot iterator of documents is held in a list.
        text_field: for dict documents, the field holding the text.
        id_field: for dicts, the field holding the id; for tables, the id column (default: the
            pandas index, or row numbers).
        column: for tables, the column holding the text.
        threshold: check each pair within ``k`` by the exact Jaccard similarity of the
            documents' word ``shingle``-gram sets (bottom-256 estimate past 256 shingles) and
            keep it only at this value or above, in (0, 1]. Catches more near-duplicates than
            fingerprints alone at the same precision (see the README's quality table), at the
            cost of sketching the candidates' texts again; the texts of a one-shot iterator are
            held until then.
        shingle: words per shingle for ``threshold``.
        threads: worker threads (default: every core).

    Returns:
        a :class:`DedupResult`.

    Example:
        >>> result = dedup(["a cat sat on the mat", "A cat sat on the mat!", "dogs bark"])
        >>> result.keep.tolist(), result.cluster.tolist(), result.n_removed
        ([True, False, True], [0, 0, 2], 1)
    """
    if threshold is not None:
        threshold = check_threshold(threshold)
        shingle = _int(shingle, "shingle", minimum=1)
    k = _k((THRESHOLD_K if threshold is not None else 3) if k is None else k)
    _check_keep(keep)
    hasher, threads = check_corpus_arguments(docs, hasher, threads)
    start = time.perf_counter()
    texts, ids, doc_at = _documents(docs, text_field, id_field, column, hasher, keep)
    texts.held = [] if threshold is not None else None
    fps = hasher.fingerprint_many(texts, threads=threads)
    n = len(fps)
    pairs = None
    if threshold is not None:
        assert texts.held is not None
        pairs = verified_pairs(fps, k, threshold, texts.held.__getitem__, hasher, shingle, threads)
        texts.held = None
        labels = _core.cluster_pairs(n, pairs[0], pairs[1])
    else:
        labels = _cluster(fps, k, threads=threads) if n else np.zeros(0, np.int64)
    lengths = np.asarray(texts.lengths, dtype=np.int64)
    mask = select(labels, keep, lengths, doc_at) if n else np.zeros(0, dtype=bool)
    if ids is None and texts.ids is not None:
        ids = np.asarray(texts.ids, dtype=object) if not all(isinstance(v, int) for v in texts.ids) else np.asarray(texts.ids)
    seconds = time.perf_counter() - start
    stats = {
        "documents": n,
        "bytes": texts.nbytes,
        "seconds": seconds,
        "mb_per_s": texts.nbytes / seconds / 1e6 if seconds > 0 else 0.0,
    }
    return DedupResult(fps, labels, mask, k, stats, ids, pairs, threshold)


def check_corpus_arguments(docs: Any, hasher: Simhasher | None, threads: int | None) -> tuple[Simhasher, int | None]:
    """The arguments every corpus-wide call shares, checked: (the hasher or the default one, threads)."""
    if hasher is None:
        hasher = Simhasher()
    elif not isinstance(hasher, Simhasher):
        raise TypeError(f"hasher must be a neardup.Simhasher, got {type(hasher).__name__}")
    if threads is not None:
        threads = _int(threads, "threads", minimum=1)
    if isinstance(docs, (str, bytes)):
        raise TypeError("docs must be a list or an iterable of documents, not a single str: wrap it in a list")
    return hasher, threads


def verified_pairs(
    fps: np.ndarray, k: int, threshold: float, doc: Callable[[int], Any], hasher: Simhasher, shingle: int, threads: int | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pairs within ``k`` whose shingle Jaccard is at least ``threshold``; ``doc(row)`` gives
    the document of a row."""
    candidates = find_all(fps, k, threads=threads)
    rows = candidate_rows(candidates)
    sketches = Sketches(hasher, shingle, threads=threads)
    sketches.add(rows, [doc(r) for r in rows.tolist()])
    return check_pairs(candidates, sketches, threshold)


def candidate_rows(candidates: tuple[np.ndarray, np.ndarray, np.ndarray]) -> np.ndarray:
    """The rows in any candidate pair, sorted."""
    return np.unique(np.concatenate([candidates[0], candidates[1]]))


def check_pairs(
    candidates: tuple[np.ndarray, np.ndarray, np.ndarray], sketches: Sketches, threshold: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The candidate pairs ``(i, j, distance)`` whose sketches' Jaccard is at least ``threshold``."""
    i, j, d = candidates
    ok = sketches.jaccard(i, j) >= threshold
    return i[ok], j[ok], d[ok]


def _documents(
    docs: Any, text_field: str | None, id_field: str | None, column: str | None, hasher: Simhasher, keep: Keep
) -> tuple[_Texts, Any, Callable[[int], Any] | None]:
    """(texts to fingerprint, ids or None, row -> document for a keep function)."""
    module = type(docs).__module__ or ""
    name = type(docs).__name__
    fields = hasher.fields is not None
    if fields and text_field is not None:
        raise ValueError("text_field names one text; with hasher.fields set, the fields are read from each dict")

    def check_columns(available: list[Any]) -> None:
        """A KeyError naming a missing text or id column and the columns there are."""
        for wanted, option in ((None if fields else column or "text", "column="), (id_field, "id_field=")):
            if wanted is not None and wanted not in available:
                raise KeyError(f"no column {wanted!r} ({option}) in the {name}; its columns: {', '.join(map(str, available))}")

    if name in ("DataFrame", "Table", "RecordBatch") and module.startswith(("pandas", "polars", "pyarrow")):
        check_columns(list(docs.column_names if module.startswith("pyarrow") else docs.columns))
    if module.startswith("pandas") and name == "DataFrame":
        col = docs[column or "text"] if not fields else docs[list(hasher.fields or {})]
        items = col.to_dict("records") if fields else col
        ids = docs[id_field].to_numpy() if id_field is not None else docs.index.to_numpy()
        return _Texts(items, None, None, fields), ids, lambda row: docs.iloc[row].to_dict()
    if module.startswith("pandas") and name == "Series":
        return _Texts(docs, None, None, fields), docs.index.to_numpy(), lambda row: docs.iloc[row]
    if module.startswith("polars") and name == "DataFrame":
        if fields:
            items = docs.select(list(hasher.fields or {})).iter_rows(named=True)
        else:
            items = docs.get_column(column or "text").to_arrow()
        ids = docs.get_column(id_field).to_numpy() if id_field is not None else None
        return _Texts(items, None, None, fields), ids, lambda row: docs.row(row, named=True)
    if module.startswith("pyarrow") and name in ("Table", "RecordBatch"):
        if fields:
            items = docs.select([f for f in (hasher.fields or {}) if f in docs.column_names]).to_pylist()
        else:
            items = docs.column(column or "text")
        ids = docs.column(id_field).to_numpy(zero_copy_only=False) if id_field is not None else None
        return _Texts(items, None, None, fields), ids, lambda row: docs.slice(row, 1).to_pylist()[0]
    if column is not None:
        raise ValueError("column= names the text column of a DataFrame or Table; for dicts, use text_field=")
    if callable(keep) and not hasattr(docs, "__getitem__"):
        docs = list(docs)
    doc_at = (lambda row: docs[row]) if hasattr(docs, "__getitem__") else None
    return _Texts(docs, text_field, id_field, fields), None, doc_at
