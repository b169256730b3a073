"""The driver of a Dask dedup: :func:`dedup` checks its arguments and runs the seven steps
(:func:`_find`, each step a map over partitions of the modules beside this one) on the
cluster."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable
from typing import Any

import dask.dataframe as dd
import numpy as np
import pandas as pd

from neardup import kernels
from neardup.errors import TooManyPairsError
from neardup.hasher import Simhasher
from neardup.index import DEFAULT_MAX_PAIRS
from neardup.pipeline import VERIFY, check_candidates, check_settings
from neardup.progress import log, progress_bar

from ..deprecation import renamed
from ..validate import integer
from .candidates import (
    _NO_TABLE,
    _bit_order_part,
    _keys_part,
    _pairs_part,
    _prefix_keys_part,
    _short_keys_part,
    _short_pairs_part,
)
from .cluster import _wait
from .components import _components
from .digest import (
    _check_frame,
    _digest_meta,
    _digest_part,
    _hasher,
    _read_digest,
    _texts_meta,
    _texts_part,
)
from .exchange import discard, exchange
from .frames import (
    _CHECKED_META,
    _MARKS,
    _by_key,
    _by_row,
    _coalesced,
    _divisions,
    _frame,
    _join,
    _partitions_for,
    _renumbered,
    _shuffled,
    _with_part,
)
from .outputs import _empty_found, _found_columns, _found_meta, _output_part, _spread
from .rarity import _let_go_of_tables, _rarity_tables
from .spill import read_back, remove_spilled, spill, spill_counted
from .stars import (
    _copies_part,
    _counts_part,
    _node_rows_meta,
    _nodes_part,
    _stars_meta,
    _stars_part,
)
from .verification import (
    _checked_part,
    _exact_in_band,
    _routed_part,
    _unique_pairs_part,
    _verify_part,
)


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
    for steps 1 and 4 (:mod:`neardup.dask.against` digests and verifies on compact sketches):
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
