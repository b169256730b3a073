"""The dedup index: a corpus on disk that new documents are deduplicated against.

A :class:`DedupIndex` file holds, per document of the corpus, its id (an integer or a string,
kept exactly), its fingerprint, the content key of its normalized text and a compact sketch of its
word shingles, with the fingerprint settings; :meth:`DedupIndex.search` finds, for a batch of new
documents, the verified near-duplicates it holds (:class:`Matches`). Deduplicating a batch against
it (:func:`neardup.against.dedup_against`) and the sketches' sizes and errors are described in
:mod:`neardup.against`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from . import _core
from .against_result import AgainstResult, Matches
from .chunks import count_docs, in_chunks
from .errors import IndexFormatError
from .hasher import Simhasher
from .index import DEFAULT_MAX_PAIRS, _max_pairs
from .index_batch import Batch
from .index_kinds import dedup_index_error
from .index_lists import IndexSketches
from .index_settings import _hasher_of, _id_values, _settings_bytes  # noqa: F401
from .io.outputs import check_replaceable, write_atomically
from .pipeline import THRESHOLD, THRESHOLD_K, FirstPass, check_candidates
from .progress import log, progress_bar
from .sources import _documents, check_corpus_arguments
from .validate import check_k, integer
from .verify import check_threshold, estimate_band

__all__ = [
    "DEFAULT_SKETCH_BITS",
    "DEFAULT_SKETCH_BYTES",
    "AgainstResult",
    "Batch",
    "DedupIndex",
    "Matches",
]

#: Bytes of a document's compact sketch: 64, so a document with an integer id takes 8
#: (fingerprint) + 8 (content key) + 8 (id) + 4 (sketch length) + 64 = 92 bytes, and 10M
#: documents 920 MB. Chosen with DEFAULT_SKETCH_BITS on the synthetic corpus and the corpus
#: suite (benches/results/against.md).
DEFAULT_SKETCH_BYTES = 64
#: Bits per bin of a sketched document: 1 (512 bins in 64 bytes), the most precise of 1, 2, 4
#: and 32 bits at equal size near J = 0.8 (benches/results/against.md).
DEFAULT_SKETCH_BITS = 1
CHUNK_SIZE = 8192


def _identity(path: str) -> tuple[int, int, int, int] | None:
    """What tells a file from the one that replaced it: device, inode, size, modification time."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def _digest_docs(
    docs: Any,
    hasher: Simhasher,
    shingle: int,
    sketch_bytes: int,
    sketch_bits: int,
    text_field: str | None,
    id_field: str | None,
    threads: int | None,
    progress: bool = False,
    sketches: IndexSketches | None = None,
) -> tuple[Batch, Any]:
    """(fingerprints, content keys and compact sketches of every document, with prefix lists
    when ``sketches`` makes them; their ids or None), with a progress bar of the documents
    digested if ``progress``."""
    texts, ids, _ = _documents(docs, text_field, id_field, hasher, "first")
    first = first_pass(hasher, shingle, sketch_bytes, sketch_bits, threads, sketches)
    bar = progress_bar(count_docs(docs), "neardup dedup against") if progress else None
    try:
        for at, chunk in in_chunks(texts, CHUNK_SIZE, "docs"):
            first.digest(chunk, at)
            if bar is not None:
                bar.update(len(chunk))
    finally:
        if bar is not None:
            bar.close()
    if ids is None and texts.ids is not None:
        ids = texts.ids
    return Batch.of(first, first.rows), ids


def first_pass(
    hasher: Simhasher,
    shingle: int,
    sketch_bytes: int,
    sketch_bits: int,
    threads: int | None,
    sketches: IndexSketches | None = None,
) -> FirstPass:
    """A first pass that digests documents as a dedup index takes them: into ``sketches``
    (default: compact sketches alone), counting a build's rarity order on the way."""
    first = FirstPass(hasher, shingle, threads)
    if sketches is None:
        sketches = IndexSketches(shingle, sketch_bytes, sketch_bits, threads)
    first.sketches = sketches  # type: ignore[assignment]
    if sketches.prefixes is not None:
        # Its count() cuts the sketches before it counts, where the first pass calls it.
        first.prefixes = sketches  # type: ignore[assignment]
    return first


class DedupIndex:
    """A corpus kept on disk for deduplicating new documents against it (see the module).

    Open one with :meth:`open`, make one with :meth:`build`. The file is memory-mapped: opening
    reads only its checksum pass, and several processes share its pages. It is never changed in
    place: :meth:`append` and ``dedup(..., update=True)`` write a new file and rename it over the
    old one, so readers that opened the old file keep it and a crash leaves it whole.
    """

    def __init__(self, inner: Any, path: str) -> None:
        self._inner = inner
        self.path = path
        self.hasher = _hasher_of(bytes(inner.meta))
        self._identity = _identity(path)
        self._order: Any = None
        self._table: Any = None

    @classmethod
    def open(cls, path: str | os.PathLike[str], mmap: bool = True) -> DedupIndex:
        """Opens a dedup index file. IndexFormatError if it is not one (truncated, corrupted,
        foreign or of a newer version)."""
        path = os.fspath(path)
        try:
            inner = _core.DedupIndex.load(path, mmap)
        except IndexFormatError as err:
            raise dedup_index_error(path, err) from None
        return cls(inner, path)

    def _reopen_if_replaced(self) -> None:
        """Opens the file again if another writer has replaced it since this index opened it."""
        if self.path and _identity(self.path) != self._identity:
            self._inner = _core.DedupIndex.load(self.path, self.mapped)
            self._identity = _identity(self.path)
            self._order = None

    @classmethod
    def build(
        cls,
        docs: Any,
        path: str | os.PathLike[str],
        *,
        hasher: Simhasher | None = None,
        k: int = THRESHOLD_K,
        threshold: float = THRESHOLD,
        shingle: int = 3,
        sketch_bytes: int = DEFAULT_SKETCH_BYTES,
        sketch_bits: int = DEFAULT_SKETCH_BITS,
        ids: Iterable[Any] | None = None,
        text_field: str | None = None,
        id_field: str | None = None,
        dedup: bool = True,
        threads: int | None = None,
        candidates: str = "prefix",
        exact: bool = True,
    ) -> DedupIndex:
        """Writes the dedup index of a corpus to ``path`` (atomically) and opens it.

        Args:
            docs: the documents, as :func:`neardup.dedup` takes them.
            path: the file to write.
            hasher: the fingerprint settings (default ``Simhasher()``; not idf).
            k, threshold, shingle: the near-duplicate test, stored as the index's defaults.
            sketch_bytes: bytes of each document's compact sketch, a multiple of 4 from 4 to 1,024
                (default 64: 92 bytes a document with an integer id, 920 MB for 10M).
            sketch_bits: bits per bin of a sketched document: 1, 2, 4, 8, 16 or 32 (default 1).
            ids: an id per document (all integers or all strings); default ``id_field``'s values,
                the table's id column, or row numbers.
            dedup: deduplicate the corpus first, keeping what ``neardup.dedup(docs,
                against=<an empty index>)`` keeps (the index's Jaccards); False indexes every
                document as given.
            candidates: how new documents' candidates are found: ``"prefix"`` (the default:
                the index keeps prefix postings, 16 bytes a prefix hash, and the rarity order
                counted on ``docs``; see :mod:`neardup.index_lists`) or ``"fingerprint"``
                (fingerprints within k; no postings).
            exact: keep each document's whole shingle set (4 bytes a distinct shingle), so
                that searches decide every pair on its exact Jaccard, as :func:`neardup.dedup`
                does (the default); False keeps the compact sketches alone, a smaller file
                whose Jaccards are estimates (see docs/against.md).
        """
        check_replaceable(os.fspath(path))
        hasher, threads = check_corpus_arguments(docs, hasher, threads)
        shingle = integer(shingle, "shingle", minimum=1)
        empty = cls._empty(
            hasher, k, threshold, shingle, sketch_bytes, sketch_bits, False, exact=exact
        )
        sketches = empty._build_sketches(check_candidates(candidates), threads)
        got, found_ids = _digest_docs(
            docs,
            hasher,
            shingle,
            sketch_bytes,
            sketch_bits,
            text_field,
            id_field,
            threads,
            sketches=sketches,
        )
        n = len(got.fingerprints)
        string_ids, id_values = _id_values(ids if ids is not None else found_ids, n)
        empty = empty._with_prefixes(sketches, string_ids)
        rows = np.arange(n, dtype=np.int64)
        if dedup and n:
            found = empty.search(got, threads=threads)
            if found.skipped_pairs:
                log.warning(
                    "DedupIndex.build: %d candidate pairs of near-identical documents not "
                    "compared (a prefix hash shared by more than the cap; docs/evidence.md)",
                    found.skipped_pairs,
                )
            rows = np.flatnonzero(found.keep)
        path = os.fspath(path)
        values = (
            [id_values[r] for r in rows.tolist()]
            if string_ids
            else np.ascontiguousarray(id_values[rows])
        )
        write_atomically(path, lambda tmp: got.save_rows(empty._inner, tmp, rows, values))
        return cls.open(path)

    def _build_sketches(self, candidates: str, threads: int | None) -> IndexSketches:
        """The sketches a build of this (empty) index digests its corpus into: with prefix
        lists, their order counted on the corpus, unless ``candidates`` is "fingerprint"."""
        return IndexSketches(
            self.shingle,
            self.sketch_bytes,
            self.sketch_bits,
            threads,
            threshold=self.threshold if candidates == "prefix" else None,
            exact=self.exact,
        )

    def digest(
        self, texts: Any, threads: int | None = None, sketches: IndexSketches | None = None
    ) -> Batch:
        """Digests texts (a list of strings) as this index compares them, into ``sketches``
        (default :meth:`sketches`)."""
        batch, _ = _digest_docs(
            texts,
            self.hasher,
            self.shingle,
            self.sketch_bytes,
            self.sketch_bits,
            None,
            None,
            threads,
            sketches=self.sketches(threads) if sketches is None else sketches,
        )
        return batch

    def _listing(self, sketches: IndexSketches) -> DedupIndex:
        """This index as documents digested into ``sketches`` are searched against it: itself,
        or, when the sketches counted their own order (an index without documents), the same
        empty index with that order, at the same path (an update stores it)."""
        if sketches.prefixes is None:
            made = sketches.table_made_with
            if made is not None:
                now = self._inner.prefix_table()
                if not all(np.array_equal(a, b) for a, b in zip(made, now)):
                    raise ValueError(
                        f"{self.path} was built again while the documents were read: its "
                        "order of shingle hashes changed; run the dedup again"
                    )
            return self
        listed = self._with_prefixes(sketches, self.string_ids)
        listed.path, listed._identity = self.path, self._identity
        return listed

    def _with_prefixes(self, sketches: IndexSketches, string_ids: bool) -> DedupIndex:
        """This empty index's settings, with ``string_ids`` and, when ``sketches`` made prefix
        lists (once every document is in), their cut and the order they counted."""
        prefixes = None
        if sketches.listed:
            assert sketches.threshold is not None and sketches.band is not None
            prefixes = (
                sketches.threshold,
                sketches.band,
                sketches.list_size,
                *sketches.table(),
            )
        inner = _core.DedupIndex.empty(
            self.sketch_bytes // 4,
            self.sketch_bits,
            self.shingle,
            self.k,
            self.threshold,
            string_ids,
            self._meta,
            prefixes,
            self.exact,
        )
        return type(self)(inner, "")

    @classmethod
    def _empty(
        cls,
        hasher: Simhasher,
        k: int,
        threshold: float,
        shingle: int,
        sketch_bytes: int,
        sketch_bits: int,
        string_ids: bool,
        exact: bool = False,
    ) -> DedupIndex:
        """An empty index in memory (not saved) with these settings, checked."""
        k = check_k(k)
        threshold = check_threshold(threshold)
        sketch_bytes = integer(sketch_bytes, "sketch_bytes", minimum=4)
        if sketch_bytes % 4:
            raise ValueError(f"sketch_bytes must be a multiple of 4, got {sketch_bytes}")
        sketch_bits = integer(sketch_bits, "sketch_bits", minimum=1)
        meta = _settings_bytes(hasher)
        if not isinstance(exact, bool):
            raise TypeError(f"exact must be True or False, got {exact!r}")
        inner = _core.DedupIndex.empty(
            sketch_bytes // 4, sketch_bits, shingle, k, threshold, string_ids, meta, None, exact
        )
        return cls(inner, "")

    @property
    def _meta(self) -> bytes:
        return bytes(self._inner.meta)

    def search(
        self,
        batch: Batch,
        *,
        k: int | None = None,
        threshold: float | None = None,
        threads: int | None = None,
        max_pairs: int | None = DEFAULT_MAX_PAIRS,
        candidates: str | None = None,
    ) -> Matches:
        """Deduplicates digested documents against the index and themselves (the one call into
        the core that every caller makes); ``k`` and ``threshold`` default to the index's, and
        ``candidates`` to ``"prefix"`` when the index has prefix postings cut at ``threshold``
        or below (the batch then needs its prefix lists: see :meth:`sketches`), else
        ``"fingerprint"``.

        ``candidates="prefix"`` below the threshold the prefixes were cut at is a ValueError
        (pairs would be missed), and TooManyPairsError is raised, before any pair is compared,
        when the candidate pairs with the index's documents number more than ``max_pairs``.

        Raises TooManyPairsError, before the search starts, when its candidate comparisons
        (estimated from the fingerprints) pass the work limit of :func:`neardup.find_all`, and
        as soon as it finds more than ``max_pairs`` candidate pairs of distinct fingerprints
        (with the index and among the batch; the error names a lower bound of their number);
        ``max_pairs=None`` lifts both, as it does there."""
        k = self.k if k is None else check_k(k)
        threshold = self.threshold if threshold is None else check_threshold(threshold)
        by_prefix = self._candidates(candidates, threshold) == "prefix"
        if by_prefix and batch.lists is None:
            raise ValueError(
                "the batch has no prefix lists: digest it into this index's sketches() first"
            )
        kept, index_row, jaccard, skipped = self._inner.dedup(
            *batch.for_core(),
            k,
            threshold,
            threads,
            _max_pairs(max_pairs),
            batch.lists_for_core() if by_prefix else None,
            estimate_band(threshold, self._list_size) if by_prefix else 0.0,
            batch.sets,
        )
        return Matches(kept, index_row, jaccard, int(skipped))

    @property
    def _list_size(self) -> int:
        """The bottom-k its documents' prefix lists are made from (1 without prefixes)."""
        settings = self._inner.prefix_settings
        return int(settings[2]) if settings is not None else 1

    @property
    def candidates(self) -> str:
        """``"prefix"`` when the index keeps prefix postings (the default of
        :meth:`build`), else ``"fingerprint"``."""
        return "prefix" if self._inner.prefix_settings is not None else "fingerprint"

    def _candidates(self, candidates: str | None, threshold: float | None = None) -> str:
        """The candidates a search at ``threshold`` (None: the index's) uses: when None,
        "prefix" if the index has prefix postings cut at that threshold or below, else
        "fingerprint"; "prefix" needs such postings."""
        settings = self._inner.prefix_settings
        threshold = self.threshold if threshold is None else threshold
        if candidates is None:
            return "prefix" if settings is not None and threshold >= settings[0] else "fingerprint"
        if check_candidates(candidates) == "prefix" and settings is None:
            raise ValueError(
                f"{self.path or 'this dedup index'} has no prefix postings (built with "
                'candidates="fingerprint", or by an earlier neardup): search it with '
                'candidates="fingerprint", or build it again'
            )
        if candidates == "prefix" and settings is not None and threshold < settings[0]:
            raise ValueError(
                f"the prefix postings of {self.path or 'this dedup index'} were cut at Jaccard "
                f"{settings[0]:g}: a search at {threshold:g} would miss pairs; give a threshold "
                f'of at least {settings[0]:g}, or candidates="fingerprint"'
            )
        return str(candidates)

    def _rarity_order(self) -> Any:
        """The stored rarity order of the prefix lists (its hash map built once an opening)."""
        if self._order is None:
            self._table = self._inner.prefix_table()
            self._order = _core.RarityOrder(*self._table)
        return self._order

    def sketches(
        self, threads: int | None = None, bottoms: bool = False, count: bool = True
    ) -> IndexSketches:
        """What new documents are digested into to be searched against (or added to) this
        index: compact sketches of its shape and, when it has prefix postings, each document's
        prefix list at the index's cut, in its stored order (with ``bottoms``, the bottom-k
        sketches the lists are made from too). An index without documents has no order worth
        keeping yet: with ``count``, the order is counted on the new documents, as a build
        counts it, and becomes the index's (:meth:`_listing`)."""
        settings = self._inner.prefix_settings
        if settings is None:
            return IndexSketches(
                self.shingle, self.sketch_bytes, self.sketch_bits, threads, exact=self.exact
            )
        threshold, band, size = settings
        counted = count and len(self) == 0
        return IndexSketches(
            self.shingle,
            self.sketch_bytes,
            self.sketch_bits,
            threads,
            threshold=threshold,
            band=band,
            order=None if counted else self._rarity_order(),
            size=int(size),
            bottoms=bottoms,
            made_with=None if counted else self._table,
            exact=self.exact,
        )

    @property
    def k(self) -> int:
        return int(self._inner.k)

    @property
    def threshold(self) -> float:
        return float(self._inner.threshold)

    @property
    def shingle(self) -> int:
        return int(self._inner.shingle)

    @property
    def sketch_bytes(self) -> int:
        return 4 * int(self._inner.sketch_words)

    @property
    def sketch_bits(self) -> int:
        return int(self._inner.sketch_bits)

    @property
    def string_ids(self) -> bool:
        return bool(self._inner.string_ids)

    @property
    def exact(self) -> bool:
        """Whether the index keeps each document's exact set (built with ``exact=True``)."""
        return bool(self._inner.exact)

    @property
    def mapped(self) -> bool:
        return bool(self._inner.mapped)

    def __len__(self) -> int:
        return len(self._inner)

    @property
    def fingerprints(self) -> np.ndarray:
        return self._inner.fingerprints()

    def ids_of(self, rows: Iterable[int]) -> list[Any]:
        """The ids of some documents of the index, by position."""
        got = self._inner.ids_of([int(r) for r in rows])
        if not self.string_ids:
            return got  # type: ignore[no-any-return]
        try:
            return [v.decode("utf-8", "surrogatepass") for v in got]
        except UnicodeDecodeError as err:
            raise _core.IndexFormatError(
                f"{self.path}: an id of the dedup index is not UTF-8 ({err.reason} at byte "
                f"{err.start}): the file was changed by other means than neardup"
            ) from None

    @property
    def ids(self) -> list[Any]:
        """Every id, in index order."""
        return self.ids_of(range(len(self)))

    def check_file(self) -> None:
        """IndexChangedError if the file was changed in place since it was opened."""
        self._inner.check_file()

    def _append(self, batch: Batch, ids: Any, rows: np.ndarray) -> None:
        """Writes this index plus ``rows`` of a digested batch to the file, atomically, and
        opens the new file. The caller holds the file's lock (:func:`neardup.paths.locked`)."""
        write_atomically(self.path, lambda tmp: self._write_appended(tmp, batch, ids, rows))
        self._inner = _core.DedupIndex.load(self.path, self.mapped)
        self._identity = _identity(self.path)

    def _write_streamed(
        self,
        tmp: str,
        n_new: int,
        id_bytes: int,
        fill: Callable[[str], Iterable[np.ndarray]],
        postings: list[Any] | None = None,
        set_values: int = 0,
    ) -> None:
        """Writes this index plus ``n_new`` documents that ``fill(section)`` hands an array at a
        time (see ``_core.DedupIndex.save_streamed``), with their prefix ``postings`` in sorted
        runs (and ``set_values`` values of their exact sets, for an exact index), to the new
        file ``tmp``, which the caller renames over the index (holding the file's lock)."""
        self._inner.save_streamed(tmp, n_new, id_bytes, fill, postings, set_values)

    def _write_appended(self, tmp: str, batch: Batch, ids: Any, rows: np.ndarray) -> None:
        """Writes this index plus ``rows`` of a digested batch to the new file ``tmp``."""
        string_ids, values = _id_values(ids, len(batch.fingerprints))
        if string_ids != self.string_ids:
            want = "strings" if self.string_ids else "integers"
            raise TypeError(
                f"this index holds ids that are {want}: the new documents' ids must be {want} too"
            )
        new_ids = (
            [values[r] for r in rows.tolist()] if string_ids else np.ascontiguousarray(values[rows])
        )
        batch.save_rows(self._inner, tmp, rows, new_ids)

    def __repr__(self) -> str:
        exact = ", exact sets" if self.exact else ""
        return (
            f"<DedupIndex {self.path!r}: {len(self)} documents, k={self.k}, Jaccard >= {self.threshold:g}, "
            f"{self.shingle}-word shingles, sketches of {self.sketch_bytes} bytes, {self.sketch_bits}-bit bins"
            f"{exact}>"
        )
