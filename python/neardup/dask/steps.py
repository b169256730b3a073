"""How the Dask executor arranges each step of the pipeline (:data:`neardup.stages.DASK`): a
step function per step, over the run's state (:class:`Run`), each a map over partitions of the
modules beside this one after a shuffle on its stage's key; :func:`neardup.dask.driver._find`
runs them in the list's order."""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable
from typing import Any

import dask.dataframe as dd
import numpy as np
import pandas as pd

from neardup import kernels
from neardup.errors import TooManyPairsError
from neardup.hasher import Simhasher
from neardup.verify import SKETCH_SIZE

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
    COPY_ROWS,
    _digest_meta,
    _digest_part,
    _read_digest,
    _texts_meta,
    _texts_part,
    _texts_written_part,
)
from .exchange import Sent, discard, exchange
from .frames import (
    _CHECKED_META,
    _MARKS,
    _by_key,
    _by_row,
    _divisions,
    _frame,
    _join,
    _partitions_for,
    _renumbered,
    _shuffled,
)
from .outputs import _found_columns, _found_meta
from .rarity import _let_go_of_tables, _rarity_tables
from .spill import computed, read_back, spill, spill_counted, spilled
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

__all__ = ["STEPS", "Run"]


@dataclasses.dataclass
class Run:
    """A Dask dedup's settings and what its steps have made so far."""

    ddf: Any
    text_field: str
    id_field: str | None
    keep: str
    k: int
    threshold: float | None
    shingle: int
    hasher: Simhasher
    max_pairs: int | None
    folder: str
    record: dict[str, Any]
    candidates: str
    #: The digest and verify stages' maps (:mod:`neardup.dask.against` digests and verifies on
    #: compact sketches): ``verify_part(pairs, parts, starts, folder, threshold)`` is called by
    #: each verify task on the candidate pairs routed to it (columns ``a`` and ``b``, global rows
    #: of any partitions, repeats possible) and returns those it keeps, each once (a, b,
    #: jaccard, band), and the number of distinct pairs it compared.
    digest_part: Callable[..., pd.DataFrame] = _digest_part
    verify_part: Callable[..., tuple[pd.DataFrame, int]] = _verify_part
    #: With prefixes, a fixed rarity order (an object whose ``load()`` gives it: a dedup
    #: index's, :mod:`neardup.dask.against`) in place of the one the run counts, and the size
    #: of the sketches the digest files hold (the bottom-k the prefix lists are made from).
    table: Any = None
    list_size: int = SKETCH_SIZE
    #: Rows of each input partition, and each one's first global row.
    counts: Any = None
    starts: Any = None
    #: The input partitions with rows, their first rows, and the divisions of their rows.
    parts: list[int] = dataclasses.field(default_factory=list)
    part_starts: Any = None
    divisions: list[int] = dataclasses.field(default_factory=list)
    #: Each row's text and keep rank (spilled), and the texts' first rows.
    rows: Any = None
    texts: Any = None
    #: With prefixes, the rows that are not their text's first, sent to their partitions, and
    #: the hashes the texts' sketches hold and the texts (each once).
    copy_rows: Sent | None = None
    text_sizes: tuple[int, int] = (0, 0)
    #: The candidate pairs routed to one of their texts' partitions; the verified pairs; labels.
    routed: Any = None
    edges: Any = None
    labels: Any = None
    #: The per-row results, one partition per input partition.
    found: Any = None

    @property
    def verified(self) -> bool:
        return self.threshold is not None

    @property
    def with_ids(self) -> bool:
        return self.id_field is not None

    @property
    def by_prefix(self) -> bool:
        return self.verified and self.candidates == "prefix"

    @property
    def tasks(self) -> int:
        return max(len(self.parts), 1)

    def digests(self, columns: list[str], copies: Sent | None = None) -> Any:
        """The digest files' ``columns``, a partition per input partition with rows; with
        ``copies`` (the rows that are not their text's first, sent to their partitions), a
        column ``is_text`` too."""
        meta = _digest_meta(self.ddf, self.id_field, columns, copies is not None)
        return read_back(
            _read_digest,
            self.parts,
            [int(s) for s in self.part_starts],
            range(len(self.parts)),
            folder=self.folder,
            names=columns,
            kind=meta,
            copies=copies,
            meta=meta,
        )


def digest(run: Run) -> None:
    """Digests, written by the workers; the client gets one count per partition. Only the
    columns used are read (a Parquet input reads no other)."""
    text_field, id_field = run.text_field, run.id_field
    used = [text_field] + ([id_field] if id_field is not None and id_field != text_field else [])
    counts = computed(
        run.ddf[used].map_partitions(
            run.digest_part,
            text_field,
            id_field,
            run.hasher,
            run.shingle if run.verified else None,
            run.folder,
            meta=pd.DataFrame({"rows": pd.Series([], dtype=np.int64)}),
        )
    )["rows"].to_numpy(np.int64)
    run.counts = counts
    run.starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    run.record["documents"] = int(counts.sum())
    run.parts = [i for i in range(len(counts)) if counts[i] > 0]
    run.part_starts = run.starts[run.parts]
    if run.parts:
        run.divisions = _divisions(run.part_starts, run.starts[run.parts] + counts[run.parts])


def copies(run: Run) -> None:
    """Rows shuffled by content key; each row's text and its keep-order rank. Spilled to the
    scratch folder: a worker holds one partition of it at a time."""
    columns = ["fingerprint", *kernels.KEY_COLUMNS, "length"] + (["id"] if run.with_ids else [])
    meta = _texts_meta(run.ddf, run.id_field)
    if run.by_prefix:
        # With prefixes, the same tasks send the rows that are not their text's first to their
        # partitions, and count the texts and their sketches' hashes (the rarity order's).
        by_key = exchange(run.digests([*columns, "hashes"]), "key", run.tasks, run.folder, "by_key")
        got = computed(
            by_key.map_partitions(
                _texts_written_part,
                run.keep,
                run.with_ids,
                run.folder,
                run.part_starts,
                run.tasks,
                meta=_frame(rows=np.int64, sent=np.int64, texts=np.int64, hashes=np.int64),
            )
        )
        run.rows = spilled(run.folder, "rows", len(got), meta)
        sources = [int(i) for i, sent in zip(got.index, got["sent"]) if sent > 0]
        run.copy_rows = Sent(sources, run.tasks, run.folder, "copies", COPY_ROWS, True)
        run.text_sizes = (int(got["hashes"].sum()), int(got["texts"].sum()))
    else:
        by_key = exchange(run.digests(columns), "key", run.tasks, run.folder, "by_key")
        run.rows, _ = spill(
            by_key.map_partitions(_texts_part, run.keep, run.with_ids, meta=meta),
            run.folder,
            "rows",
        )
    discard(run.folder, "by_key")
    rows = run.rows
    run.texts = rows[rows["row"] == rows["text"]].drop(columns=["row"])


def candidates(run: Run) -> None:
    """The candidate pairs, each routed to the task of one of its texts' partitions, where it
    is verified once (or kept once)."""
    verified, by_prefix, k, threshold = run.verified, run.by_prefix, run.k, run.threshold
    folder, record, max_pairs, digests = run.folder, run.record, run.max_pairs, run.digests
    texts, parts, part_starts, Q = run.texts, run.parts, run.part_starts, run.tasks
    # With prefixes, by a shuffle on the texts' prefix hashes alone; else one
    # row per text and lead group, shuffled by part key (and the short texts' prefix hashes).
    # The tables of candidate pairs, each task's pairs listed once (a pair may still be listed
    # by several tasks: every copy is routed to one task for step 4).
    listings: list[Any] = []
    if not by_prefix:
        plan = kernels.search_plan(k, record["documents"])
        # The bit order of the search, chosen on a worker from the first partition's fingerprints.
        chosen = computed(
            digests(["fingerprint"])
            .partitions[0]
            .map_partitions(_bit_order_part, plan, meta=_frame(bit=np.int64))
        )["bit"].tolist()
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
            # The rows that are not their text's first, by partition (sent by the copies
            # stage): texts count once. Each task reading a partition's digests reads its rows
            # too (column is_text).
            texts_of = functools.partial(digests, copies=run.copy_rows)
            keyed = texts_of(["fingerprint", "sketch"])
            ticks = time.perf_counter()
            if run.table is not None:
                tables, record["rarity_rows"], table = None, 0, run.table
            else:
                tables, record["rarity_rows"], table = _rarity_tables(
                    texts_of, Q, folder, run.text_sizes
                )
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
                tables if table is None else table,
                threshold,
                run.list_size,
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
                run.list_size,
                meta=_frame(a=np.int64, b=np.int64),
            )
        )
    # Every copy of a pair goes to the task of one of its texts' partitions, the pair choosing:
    # there each pair is verified once (step 4), or kept once.
    listed = listings[0] if len(listings) == 1 else _renumbered(dd.concat(listings))
    run.routed = exchange(
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


def verify(run: Run) -> None:
    """The verified pairs and their Jaccard, spilled; the pairs whose estimate lies near the
    threshold decided on their exact shingle sets, read from the digest files."""
    verified, by_prefix, k, threshold = run.verified, run.by_prefix, run.k, run.threshold
    folder, record, max_pairs = run.folder, run.record, run.max_pairs
    parts, part_starts, verify_part = run.parts, run.part_starts, run.verify_part
    # Each pair once, in the task it was routed to; those whose estimate lies
    # near the threshold on their exact shingle sets, read from the digest files.
    checked = run.routed.map_partitions(
        *(
            (_checked_part, verify_part, parts, part_starts, folder, threshold)
            if verified
            else (_unique_pairs_part,)
        ),
        meta=_CHECKED_META if verified else _frame(a=np.int64, b=np.int64, jaccard=np.float32),
    )
    checked, checked_rows, tallies = spill_counted(
        checked, folder, "checked", _MARKS, _partitions_for
    )
    discard(folder, "pairs")
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
    # Read back in partitions of about PAIR_ROWS pairs (adjacent files together): the shuffles
    # of the pairs' tables start from as many tasks as their size asks, not one per input part.
    run.edges, edge_counts = spill(edges, folder, "edges", _partitions_for)
    record["verified_pairs"] = int(edge_counts.sum())


def components(run: Run) -> None:
    """The connected component of each text with a verified pair."""
    folder, record = run.folder, run.record
    # Smallest labels spread along the pairs.
    # In one task up to 2 PAIR_ROWS pairs (about 100 MB of arrays), else by rounds.
    run.labels, rounds = _components(
        run.edges, _partitions_for(record["verified_pairs"] // 2), folder
    )
    record["rounds"] = rounds


def stars(run: Run) -> None:
    """The stars of each component in keep order, on the workers, and every row's result joined back (the outputs)."""
    folder, record, rows, keep, with_ids = run.folder, run.record, run.rows, run.keep, run.with_ids
    ddf, id_field, parts, part_starts = run.ddf, run.id_field, run.parts, run.part_starts
    # Stars per component, in keep order, on the workers. The labels, the texts with copies
    # and the verified pairs, shuffled together by node: each node's columns (from its digest
    # when its text has no copies) and each pair's label; then nodes and pairs shuffled by
    # label, each component's stars taken where it lies. Only tables of the pairs' size move.
    copied, copied_counts = spill(rows[rows["copies"] > 1], folder, "copied", _partitions_for)
    copies_rows = int(copied_counts.sum())
    S = _partitions_for(3 * record["verified_pairs"] + copies_rows)
    text_columns = copied[copied["row"] == copied["text"]].drop(columns=["row"])
    stars = (
        dd.map_partitions(
            _nodes_part,
            _by_key(run.labels, "node", S),
            _by_key(text_columns, "text", S),
            _by_key(run.edges, "a", S),
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
    # The outputs, per row: the star of its text (texts without copies: the text's row itself), and the
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
    run.found = (
        dd.concat(
            [
                lone[_found_columns(with_ids)],
                with_copies.map_partitions(
                    _copies_part, with_ids, meta=_found_meta(ddf, id_field).reset_index()
                )[_found_columns(with_ids)],
            ]
        )
        .pipe(_renumbered)
        .pipe(_by_row, run.divisions, _partitions_for(found_rows) == 1)
        .persist()
    )
    _wait(run.found)
    counts_of = run.found.map_partitions(
        _counts_part, meta=_frame(removed=np.int64, clusters=np.int64)
    )
    totals = computed(counts_of.sum())
    record["removed"], record["clusters"] = int(totals["removed"]), int(totals["clusters"])


#: The function of each step of :data:`neardup.stages.DASK`, by its name.
STEPS: dict[str, Callable[[Run], None]] = {
    "digest": digest,
    "copies": copies,
    "candidates": candidates,
    "verify": verify,
    "components": components,
    "stars": stars,
}
