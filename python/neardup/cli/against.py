"""``neardup dedup NEW --against CORPUS.ndx [--update]`` and ``neardup index build INPUT -o
CORPUS.ndx``: the command's side of the dedup index (the library's side is
:mod:`neardup.against`; the options are declared with the commands, in :mod:`.dedup` and
:mod:`.index`)."""

from __future__ import annotations

import contextlib
import json
import time
from typing import Any

import click
import numpy as np

from .. import _core
from ..against import Batch, DedupIndex, Matches
from ..corpus import Progress, fingerprint_pass
from ..dedup_index import first_pass
from ..hasher import Simhasher
from ..index_kinds import expect_dedup_index
from ..index_lists import IndexSketches
from ..io import Input, InputError, Outputs, TableWriter, compression_of
from ..paths import check_outputs, locked
from .ids import bad_id, integer_id
from .options import Source, note_unused_k
from .output import (
    _check_output,
    _evidence_note,
    _Failed,
    _table_name,
    _writes_folder,
    summarize,
)

__all__ = [
    "AGAINST_COLUMNS",
    "build_command",
    "check_shingle",
    "dedup_command",
    "is_dedup_index_path",
]

#: The columns of --clusters with --against: each new document, whether it is kept, the id of
#: the document it duplicates (itself when kept), whether that one is in the index, their Jaccard.
AGAINST_COLUMNS = ["id", "kept", "kept_id", "in_index", "jaccard"]


def is_dedup_index_path(path: str) -> bool:
    """``index build -o NAME.ndx`` writes a dedup index."""
    return path.lower().endswith(".ndx")


def open_index(path: str) -> DedupIndex:
    """The dedup index at ``path``, or FILE: what is wrong (status 2)."""
    expect_dedup_index(path)
    try:
        return DedupIndex.open(path)
    except FileNotFoundError:
        raise InputError(path, "no such file") from None
    except OSError as err:
        raise InputError(path, f"cannot read: {err.strerror or err}") from None
    except _core.IndexChangedError:
        raise  # written into while it was opened: its message names it (status 1)
    except _core.NeardupError as err:
        raise InputError(path, str(err)) from None


def check_shingle(path: str, index: DedupIndex, shingle: int | None) -> None:
    """--shingle, when given with --against, must be the index's: its sketches are of that many
    words per shingle, and cannot be compared at another."""
    if shingle is not None and shingle != index.shingle:
        raise click.UsageError(
            f"{path} holds sketches of {index.shingle}-word shingles: drop --shingle or give "
            f"--shingle {index.shingle}"
        )


def check_search(
    index: DedupIndex, path: str, k: int | None, candidates: str | None, threshold: float | None
) -> None:
    """Refuses --candidates the index cannot search by; notes a --k its search does not read
    (prefix postings)."""
    try:
        used = index._candidates(candidates, threshold)
    except ValueError as err:
        raise click.UsageError(str(err)) from None
    note_unused_k(k, used, threshold, path)


def _ids(
    inp: Input,
    keep: np.ndarray | None,
    output: str | None,
    out_tmp: str | None,
    ids: bool = True,
) -> list[Any]:
    """Reads the input again: writes the kept documents (if ``out_tmp``) and returns every id
    (:meth:`Input.named_ids`: as given, or row numbers where the input has no id field; nothing
    unless ``ids``: reading them costs a parse of every record)."""
    got: list[Any] = []
    if not ids and not out_tmp:
        return got
    inp.bytes_read = 0
    for first_row, chunk_ids, _ in inp.replay(
        keep=keep if out_tmp else None,
        output=out_tmp,
        output_compression=compression_of(output) if output and output != "-" else None,
        ids=ids,
    ):
        if ids:
            got.extend(inp.named_ids(first_row, chunk_ids))
    return got


def _digest_input(
    inp: Input,
    hasher: Simhasher,
    shingle: int,
    sketch_bytes: int,
    sketch_bits: int,
    threads: int | None,
    hidden: bool,
    sketches: IndexSketches,
) -> tuple[Batch, int]:
    """Fingerprints, keys and compact sketches (with prefix lists when ``sketches`` makes them)
    of every document of INPUT, and its bytes."""
    first = first_pass(hasher, shingle, sketch_bytes, sketch_bits, threads, sketches)
    progress = Progress(inp, "fingerprinting", hidden)
    try:
        _, _, nbytes = fingerprint_pass(inp, hasher, threads, progress, first=first)
    finally:
        progress.close()
    return Batch.of(first, first.rows), nbytes


def build_command(
    source: Source,
    index_path: str,
    k: int,
    threshold: float,
    shingle: int,
    sketch_bytes: int,
    sketch_bits: int,
    threads: int | None,
    quiet: bool,
    as_json: bool,
    hasher: Simhasher,
    candidates: str = "prefix",
    exact: bool = False,
) -> None:
    """``neardup index build INPUT -o CORPUS.ndx``: dedups INPUT and writes the kept documents'
    dedup index (ids from --id-field, strings or integers, as given), with prefix postings
    unless ``candidates`` is "fingerprint", and exact sets with ``exact``."""
    try:
        empty = DedupIndex._empty(
            hasher, k, threshold, shingle, sketch_bytes, sketch_bits, False, exact=exact
        )
    except ValueError as err:
        raise click.UsageError(str(err)) from None
    sketches = empty._build_sketches(candidates, threads)
    inp = source.open(hasher, replayable=True)
    check_outputs([inp.path], [("-o", index_path)])
    with inp, Outputs() as outputs:
        tmp = outputs.reserve(index_path)
        got, _ = _digest_input(
            inp, hasher, shingle, sketch_bytes, sketch_bits, threads, quiet or as_json, sketches
        )
        ids = _ids(inp, None, None, None)
        n = len(got.fingerprints)
        string_ids = bool(ids) and any(isinstance(v, str) for v in ids)
        empty = empty._with_prefixes(sketches, string_ids)
        found = empty.search(got, threads=threads)
        rows = np.flatnonzero(found.keep)
        if string_ids and not all(isinstance(v, str) for v in ids):
            first_kind = isinstance(ids[0], str)
            number = next(r for r, v in enumerate(ids) if isinstance(v, str) != first_kind)
            raise bad_id(
                inp,
                number,
                f"ids in {inp.id_field!r} must be all strings or all integers; this one is "
                f"{json.dumps(ids[number], default=repr)}, the first "
                f"{json.dumps(ids[0], default=repr)}",
            )
        if string_ids:
            values: Any = [ids[r].encode("utf-8", "surrogatepass") for r in rows.tolist()]
        else:
            numbers = [integer_id(v) for v in ids]
            if None in numbers:
                number = numbers.index(None)
                raise bad_id(
                    inp,
                    number,
                    f"dedup index ids must be strings or integers (64-bit); {inp.id_field!r} is "
                    f"{json.dumps(ids[number], default=repr)}",
                )
            values = np.asarray([numbers[r] for r in rows.tolist()], dtype=np.int64)
        try:
            got.save_rows(empty._inner, tmp, rows, values)
        except OSError as err:
            raise _Failed(f"cannot write {index_path}: {err.strerror or err}") from None
        outputs.commit()
    summarize(
        {
            "index": index_path,
            "documents": n,
            "indexed": len(rows),
            "removed": n - len(rows),
            "k": k,
            "threshold": threshold,
            "sketch_bytes": sketch_bytes,
            "sketch_bits": sketch_bits,
            "candidates": candidates,
            "exact": exact,
            "short_pairs_skipped": found.skipped_pairs,
        },
        f"indexed {len(rows):,} of {n:,} documents in {index_path} "
        f"({n - len(rows):,} near-duplicates removed; "
        + (
            f"prefix candidates, Jaccard >= {threshold:g}"
            if candidates == "prefix"
            else f"fingerprint candidates within k={k}, Jaccard >= {threshold:g}"
        )
        + f", sketches of {sketch_bytes} bytes, {sketch_bits}-bit bins"
        + (", exact sets" if exact else "")
        + (f"; k={k} for a search by fingerprints)" if candidates == "prefix" else ")")
        + f"{_evidence_note({'short_pairs_skipped': found.skipped_pairs})}",
        inp,
        as_json,
        quiet,
    )


def dedup_command(
    source: Source,
    output: str | None,
    clusters: str | None,
    dry_run: bool,
    k: int | None,
    threshold: float | None,
    update: bool,
    threads: int | None,
    quiet: bool,
    as_json: bool,
    against: str,
    hasher: Simhasher,
    hasher_given: bool,
    shingle: int | None = None,
    max_pairs: int | None = None,
    candidates: str | None = None,
) -> None:
    """``neardup dedup NEW --against CORPUS.ndx``: writes the documents of NEW that are not
    near-duplicates of the index or of an earlier document of NEW; ``--update`` appends them to
    the index (a new file renamed over it, under a lock). ``shingle`` is --shingle when given
    (it must be the index's); ``max_pairs`` bounds the index search (None: no limit)."""
    start = time.perf_counter()
    if output is None and not dry_run:
        raise click.UsageError("give -o OUTPUT for the kept documents, or --dry-run to only report")
    if output is not None and dry_run:
        raise click.UsageError("--dry-run writes no OUTPUT: drop -o or --dry-run")
    if threshold is None:
        raise click.UsageError("--against verifies every pair by its sketches: drop --no-verify")
    if update and dry_run:
        raise click.UsageError("--dry-run writes nothing: drop --update or --dry-run")
    index = open_index(against)
    if hasher_given and hasher != index.hasher:
        raise click.UsageError(
            f"{against} was built with {index.hasher!r}: drop the fingerprint options or use the same ones"
        )
    check_shingle(against, index, shingle)
    check_search(index, against, k, candidates, threshold)
    inp = source.open(index.hasher, replayable=True)
    check_outputs([inp.path, against], [("-o", output), ("--clusters", clusters)])
    _check_output(inp, output)
    _table_name(clusters, "--clusters")

    def waiting() -> None:
        if not quiet:
            click.echo(f"waiting for another neardup writing {against} ...", err=True)

    with (
        locked(against, waiting) if update else contextlib.nullcontext(),
        inp,
        Outputs() as outputs,
    ):
        if update:
            index = open_index(against)  # another writer may have replaced it while we waited
        k = index.k if k is None else k
        out_tmp = outputs.reserve(output, directory=_writes_folder(inp, output)) if output else None
        clusters_tmp = outputs.reserve(clusters) if clusters else None
        index_tmp = outputs.reserve(against) if update else None
        sketches = index.sketches(threads)
        got, nbytes = _digest_input(
            inp,
            index.hasher,
            index.shingle,
            index.sketch_bytes,
            index.sketch_bits,
            threads,
            quiet or as_json,
            sketches,
        )
        n = len(got.fingerprints)
        try:
            index = index._listing(sketches)
            found = index.search(
                got,
                k=k,
                threshold=threshold,
                threads=threads,
                max_pairs=max_pairs,
                candidates=candidates,
            )
        except ValueError as err:
            raise click.UsageError(str(err)) from None
        keep = found.keep
        ids = _ids(inp, keep, output, out_tmp, ids=bool(clusters_tmp) or update)
        if clusters_tmp and clusters:
            write_clusters(clusters_tmp, clusters, found, index, ids)
        size = len(index)
        if index_tmp is not None:  # written with the others, renamed with them
            try:
                index._write_appended(index_tmp, got, ids, np.flatnonzero(keep))
            except (TypeError, ValueError) as err:
                raise InputError(inp.name, f"cannot add to {against}: {err}") from None
            except OSError as err:
                raise _Failed(f"cannot write {against}: {err.strerror or err}") from None
            size += int(keep.sum())
        outputs.commit()
    seconds = time.perf_counter() - start
    removed = int((~keep).sum())
    for_index = int(found.in_index.sum())
    # Prefix candidates do not read k: the summary names what did propose the pairs.
    used = index._candidates(candidates, threshold)
    rule = "prefix candidates" if used == "prefix" else f"k={k}"
    summarize(
        {
            "input": inp.name,
            "against": against,
            "documents": n,
            "bytes": nbytes,
            "kept": n - removed,
            "removed": removed,
            "removed_for_index": for_index,
            "candidates": used,
            "k": k,
            "threshold": threshold,
            "updated": update,
            "index_size": size,
            "short_pairs_skipped": found.skipped_pairs,
            "seconds": round(seconds, 4),
        },
        f"{n:,} documents in {seconds:.2f} s against {against} "
        f"({size:,} documents{', updated' if update else ''})\n"
        f"removed {removed:,} ({rule}, Jaccard >= {threshold:g}): {for_index:,} for documents of the index, "
        f"{removed - for_index:,} for earlier documents of the input; kept {n - removed:,}"
        f"{_evidence_note({'short_pairs_skipped': found.skipped_pairs})}",
        inp,
        as_json,
        quiet,
        output=output,
        outputs={"output": output, "clusters": clusters},
        wrote=[
            f"{output} ({n - removed:,} documents)" if output and output != "-" else None,
            clusters,
        ],
        dry_run=dry_run,
    )


def write_clusters(tmp: str, name: str, found: Matches, index: DedupIndex, ids: list[Any]) -> None:
    """The --clusters table of a dedup against an index (``AGAINST_COLUMNS``)."""
    kept_ids = found.kept_ids(index, ids)
    keep, in_index = found.keep, found.in_index
    writer = TableWriter(tmp, name, AGAINST_COLUMNS)
    try:
        for at in range(0, len(ids), 65536):
            end = min(len(ids), at + 65536)
            writer.write(
                {
                    "id": ids[at:end],
                    "kept": keep[at:end],
                    "kept_id": kept_ids[at:end],
                    "in_index": in_index[at:end],
                    "jaccard": [round(float(j), 4) for j in found.jaccard[at:end].tolist()],
                }
            )
    finally:
        writer.close()
