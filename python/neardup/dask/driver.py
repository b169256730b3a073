"""The driver of a Dask dedup: :func:`dedup` checks its arguments and runs the steps of
:data:`neardup.stages.DASK` in order (:func:`_find`; each step arranged in
:mod:`neardup.dask.steps`, a map over partitions of the modules beside it) on the cluster."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import dask.dataframe as dd
import numpy as np
import pandas as pd

from neardup.hasher import Simhasher
from neardup.index import DEFAULT_MAX_PAIRS
from neardup.pipeline import VERIFY, check_candidates, check_settings
from neardup.progress import log, progress_bar
from neardup.stages import DASK

from ..deprecation import renamed
from ..validate import integer
from .digest import _check_frame, _hasher
from .frames import _cut
from .outputs import _empty_found, _output_part, _spread, _whole
from .scratch import run_folder
from .steps import STEPS, Run


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
            (default: the temporary folder of this machine, which a local cluster shares). The
            run writes in a subfolder of its own, ``neardup-run-PID-RANDOM``, removed when it
            ends (:mod:`neardup.dask.scratch`): runs may share a folder, and no other file of
            it is touched.
        progress: draw tqdm's bar of the steps of :data:`neardup.stages.DASK` (digest, copies,
            candidates, verify, components, stars) when tqdm is installed; each step's time goes
            to the ``neardup`` logger at DEBUG either way.
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
            "neardup.dask.dedup fingerprints one text column; hasher.fields is not supported "
            "on Dask: join the fields into one column first, or run neardup.dedup on one machine"
        )
    _check_frame(ddf, text_field, id_field)
    ddf = ddf.clear_divisions()
    record: dict[str, Any] = stats if stats is not None else {}
    bar = progress_bar(len(DASK), "neardup dask dedup", unit="stage") if progress else None

    def stage(name: str) -> None:
        log.debug("dask dedup: %s in %.3f s", name, record[f"seconds_{name}"])
        if bar is not None:
            bar.set_postfix_str(name, refresh=False)
            bar.update(1)

    try:
        with run_folder(scratch) as folder:
            run = Run(
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
                candidates,
            )
            found, starts, counts = _find(run, stage)
    finally:
        if bar is not None:
            bar.close()
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
    found = _whole(found)
    kept_rows = dd.map_partitions(
        _output_part, ddf, found, *args, False, meta=ddf._meta, align_dataframes=False
    )
    if not clusters:
        return kept_rows
    table = dd.map_partitions(
        _output_part, ddf, found, *args, True, meta=meta_table, align_dataframes=False
    )
    return kept_rows, table


def _find(
    run: Run, stage: Callable[[str], None], whole: bool = True
) -> tuple[Any, np.ndarray, np.ndarray]:
    """The per-row results of the documents that are removed or have copies or near-duplicates,
    one partition per input partition (indexed by global row, persisted on the workers; or,
    ``whole``, one partition in all when they fit one: :func:`neardup.dask.frames._by_row`), and
    each input partition's first row and row count: the steps of :data:`neardup.stages.DASK`
    over ``run``, in order (:mod:`neardup.dask.steps`), each timed as ``seconds_<step>`` and
    reported to ``stage``."""
    record = run.record
    for step in DASK:
        clock = time.perf_counter()
        STEPS[step.name](run)
        record[f"seconds_{step.name}"] = time.perf_counter() - clock
        stage(step.name)
        if step.name == "digest" and not run.parts:  # no rows: nothing more to find
            record.update(
                candidate_pairs=0,
                short_pairs=0,
                prefix_pairs=0,
                verified_pairs=0,
                rounds=0,
                removed=0,
                clusters=0,
            )
            return _empty_found(run.ddf, run.id_field, len(run.counts)), run.starts, run.counts
    found = run.found
    if found.npartitions == 1 and whole:
        return found, run.starts, run.counts
    if found.npartitions == 1 and len(run.parts) > 1:
        found = _cut(found, run.divisions)
    return _spread(found, run.parts, len(run.counts)), run.starts, run.counts
