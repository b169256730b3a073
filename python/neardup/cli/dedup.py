"""``neardup dedup``: remove near-duplicates from a corpus."""

from __future__ import annotations

import time
from typing import Any

import click
import numpy as np

from .. import pipeline
from .. import report as report_mod
from ..corpus import Progress, fingerprint_pass, ids_of, resketcher
from ..dedup_result import DedupResult
from ..hasher import Simhasher
from ..index import DEFAULT_MAX_PAIRS
from ..io import (
    InputError,
    Outputs,
    TableWriter,
    compression_of,
)
from ..paths import check_outputs
from ..pipeline import FirstPass, default_k, keep_order, stars
from ..pipeline import candidates as find_candidates
from ..threshold_table import BELOW, removals_at, spared
from ..verify import WHOLE
from . import against as against_cmd
from .app import cli
from .dedup_dask import _dedup_on_dask
from .ids import bad_id
from .options import (
    CLUSTER_COLUMNS,
    Source,
    _verification,
    checked_k_options,
    hasher_options,
    input_options,
    make_hasher,
    note_fingerprint_only,
    note_unused_k,
    run_options,
)
from .output import (
    _check_output,
    _count,
    _evidence_note,
    _Failed,
    _jaccard_note,
    _size,
    _table_name,
    _writes_folder,
    summarize,
)


def _write_clusters(inp: Any, writer: TableWriter, first_row: int, rows: dict[str, Any]) -> None:
    """A chunk of --clusters rows; a value CSV cannot hold is named at its input line too."""
    try:
        writer.write(rows)
    except InputError as err:
        row = getattr(err, "row", None)
        if row is None:
            raise
        raise bad_id(inp, first_row + row, f"its id cannot be written to {err}") from None


@cli.command()
@input_options
@click.option(
    "-o",
    "--output",
    metavar="OUTPUT",
    help="Where to write the kept documents, in INPUT's format (for a folder or glob, a folder "
    "that mirrors it, or one file when its files have one format; - for stdout).",
)
@click.option(
    "--clusters",
    metavar="FILE",
    help="Write one row per document: id, cluster, kept, kept_id (the document kept in its place), "
    "jaccard (their shingle Jaccard; empty with --no-verify), distance (.csv, .tsv, .jsonl or "
    ".parquet; with --against: id, kept, kept_id, in_index, jaccard).",
)
@click.option(
    "--report",
    "report_path",
    metavar="FILE.html",
    help="Write an HTML report: the removals, their Jaccard, cluster sizes, sample pairs.",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Write no OUTPUT; only report (and write --clusters/--report if asked).",
)
@checked_k_options
@click.option(
    "--keep",
    type=click.Choice(["first", "longest"]),
    default="first",
    show_default=True,
    help="Which document of a cluster to keep.",
)
@click.option(
    "--max-pairs",
    type=click.IntRange(min=0),
    default=DEFAULT_MAX_PAIRS,
    show_default=True,
    help="The most candidate pairs: with prefix candidates (the default), the pairs compared; "
    "with --candidates fingerprint or --no-verify, the pairs of distinct fingerprints within "
    "--k. More stop the run with their number (raise this, or raise --threshold; with "
    "fingerprints, lower --k; 0: no limit, as in every command).",
)
@click.option(
    "--candidates",
    type=click.Choice(list(pipeline.CANDIDATES)),
    default=None,
    help="How the pairs whose Jaccard decides are proposed: prefix (documents sharing one of "
    "the rarest word shingles of their sketches: every pair at --threshold, whatever --k) or "
    f"fingerprint (fingerprints within --k). Default: {pipeline.DEFAULT_CANDIDATES}; with "
    "--against, the index's (prefix unless it was built with --candidates fingerprint). "
    "Without verification (--no-verify), fingerprints.",
)
@click.option(
    "--scheduler",
    metavar="ADDRESS",
    help="Run on the Dask cluster at ADDRESS (tcp://host:8786): INPUT and outputs are folders "
    "or globs of Parquet or JSONL partitions on storage every worker sees (needs neardup[dask]).",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    help="Run on Dask with a local cluster of N worker processes (needs neardup[dask]).",
)
@click.option(
    "--scratch",
    metavar="FOLDER",
    help="With --scheduler/--workers: a folder every worker can read and write, for the "
    "digests and the intermediate tables while the run lasts, in a subfolder of the run's own "
    "(removed after it; other files there are left alone; default: the temporary folder of "
    "this machine, which only --workers shares).",
)
@click.option(
    "--verbose",
    is_flag=True,
    help="With --scheduler/--workers: also show Dask's own error lines (a worker's failed task "
    "with its traceback); without it, a failure is the one line that names what failed.",
)
@click.option(
    "--against",
    metavar="INDEX.ndx",
    help="Also remove the near-duplicates of the documents of this dedup index (neardup index "
    "build -o INDEX.ndx); --clusters names what each removed document duplicates. An index "
    "is searched as it was built: by prefix candidates (the default, whatever --k) or by "
    "fingerprints within --k (the index's k by default).",
)
@click.option(
    "--update",
    is_flag=True,
    help="With --against: append the kept documents to INDEX.ndx (a new file renamed over it).",
)
@hasher_options
@run_options
def dedup(
    source: Source,
    output: str | None,
    clusters: str | None,
    report_path: str | None,
    dry_run: bool,
    k: int | None,
    threshold: float,
    no_verify: bool,
    shingle: int,
    keep: str,
    max_pairs: int,
    candidates: str | None,
    scheduler: str | None,
    workers: int | None,
    scratch: str | None,
    verbose: bool,
    against: str | None,
    update: bool,
    threads: int | None,
    quiet: bool,
    as_json: bool,
    **hasher_flags: Any,
) -> None:
    """Keep one document of each near-duplicate cluster of INPUT.

    Two documents are near-duplicates when the sets of their word --shingle-grams (3 words)
    have Jaccard similarity >= --threshold (0.8). The candidates compared are, by default, the
    documents that share one of the rarest shingles of their sketches (prefix candidates: every
    pair at --threshold is found, and --k plays no part); with --candidates fingerprint, those
    whose 64-bit fingerprints are within --k bits (8); with --no-verify, pairs within --k (3) are
    near-duplicates on their fingerprints alone. --tokens, --ngram, --weighting and --stopwords
    shape the fingerprints alone (noted when given with prefix candidates). Documents with the
    same normalized text are copies. Documents are taken in --keep order: the first not yet removed is kept and removes
    its own near-duplicates, so each removed document is a near-duplicate of the one kept in its
    place (--clusters names it, with their Jaccard). The input is read in chunks, keeping 16
    bytes per document and its sketch (up to a memory budget, past which the documents of
    candidate pairs are read again); writing OUTPUT, --clusters or --report reads INPUT a second
    time (stdin is copied to a temporary file). INPUT is a file, a folder or a quoted glob of
    files (each read by its name), - for stdin, or --sample.
    """
    threshold_in_force = _verification(threshold, no_verify)
    if against is None:  # against an index, its search decides (below)
        note_unused_k(k, candidates, threshold_in_force)
    limit = max_pairs or None  # --max-pairs 0: no limit, on every path
    on_dask = scheduler is not None or workers is not None
    shingle_given = (
        click.get_current_context().get_parameter_source("shingle")
        is not click.core.ParameterSource.DEFAULT
    )
    if scratch is not None and not on_dask:
        raise click.UsageError("--scratch goes with --scheduler or --workers")
    if verbose and not on_dask:
        raise click.UsageError("--verbose goes with --scheduler or --workers")
    index = None
    if against is not None or update:  # deduplicating against a dedup index: cli/against.py
        if against is None:
            raise click.UsageError(
                "--update appends the kept documents to a dedup index: give --against INDEX.ndx"
            )
        if report_path or keep != "first":
            what = "--report" if report_path else "--keep longest"
            raise click.UsageError(f"--against does not take {what}")
        if not on_dask:
            hasher = make_hasher(**hasher_flags)
            against_cmd.dedup_command(
                source,
                output,
                clusters,
                dry_run,
                k,
                threshold_in_force,
                update,
                threads,
                quiet,
                as_json,
                against,
                hasher,
                hasher != Simhasher(),
                shingle if shingle_given else None,
                limit,
                candidates,
            )
            return
        if update and dry_run:
            raise click.UsageError("--dry-run writes nothing: drop --update or --dry-run")
        index = against_cmd.open_index(against)
        against_cmd.check_shingle(against, index, shingle if shingle_given else None)
        against_cmd.check_search(index, against, k, candidates, threshold_in_force)
        k = index.k if k is None else k
    k = default_k(k, threshold_in_force)
    start = time.perf_counter()
    if output is None and not dry_run:
        raise click.UsageError("give -o OUTPUT for the kept documents, or --dry-run to only report")
    if output is not None and dry_run:
        raise click.UsageError("--dry-run writes no OUTPUT: drop -o or --dry-run")
    hasher = make_hasher(**hasher_flags)
    if against is None:  # against an index, the options must be its own
        note_fingerprint_only(candidates, threshold_in_force, shingle)
    if on_dask:
        _dedup_on_dask(
            source,
            output,
            clusters,
            report_path,
            k,
            threshold_in_force,
            shingle,
            keep,
            scheduler,
            workers,
            threads,
            quiet,
            as_json,
            hasher,
            start,
            against=index,
            update=update,
            max_pairs=limit,
            scratch=scratch,
            candidates=candidates,
            verbose=verbose,
        )
        return
    threshold = threshold_in_force  # type: ignore[assignment]
    inp = source.open(
        hasher,
        replayable=bool(output or clusters or report_path or threshold is not None),
    )
    check_outputs([inp.path], [("-o", output), ("--clusters", clusters), ("--report", report_path)])
    _check_output(inp, output)
    _table_name(clusters, "--clusters")
    with inp, Outputs() as outputs:
        try:
            out_tmp = (
                outputs.reserve(output, directory=_writes_folder(inp, output)) if output else None
            )
            clusters_tmp = outputs.reserve(clusters) if clusters else None
            report_tmp = outputs.reserve(report_path) if report_path else None
        except OSError as err:
            raise _Failed(
                f"cannot write {err.filename or ''}: {err.strerror or err}".replace(
                    "cannot write : ", "cannot write: "
                )
            ) from None

        by_prefix = pipeline.check_candidates(candidates) == "prefix" and threshold is not None
        first = FirstPass(
            hasher,
            shingle if threshold is not None else None,
            threads,
            budget=pipeline.SKETCH_BUDGET,
            prefixes=threshold if by_prefix else None,
        )
        first.expect(inp.size)
        progress = Progress(inp, "fingerprinting", quiet or as_json)
        try:
            fps, lengths, nbytes = fingerprint_pass(
                inp, hasher, threads, progress, lengths=keep == "longest", first=first
            )
        finally:
            progress.close()
        if progress.shown:
            click.echo(
                f"finding near-duplicates of {len(fps):,} documents "
                f"{'by prefix candidates' if by_prefix else f'within k={k}'}{_jaccard_note(threshold)} ...",
                err=True,
            )
        order = keep_order(keep, len(fps), lengths)
        evidence: dict[str, Any] = {}
        # The report's pairs just below the threshold come from a run at a lower one, after
        # this one: the prefix lists' rarity order is kept for it.
        below_run = bool(report_tmp and by_prefix and threshold is not None)
        if below_run:
            assert first.prefixes is not None
            first.prefixes.keep_order = True
        found = find_candidates(
            fps, first.keys, k, threads, first.short, threshold, limit, first.prefixes
        )
        kept, jaccard = stars(
            found,
            order,
            threshold,
            first.sketches,
            resketcher(inp, hasher, shingle, threads, quiet or as_json, first),
            resketcher(inp, hasher, shingle, threads, quiet or as_json, first, size=WHOLE),
            evidence,
        )
        candidate_pairs = evidence["pairs_compared"] if by_prefix else found.pair_count
        del found  # its memory, before the report's run below
        lower = (
            removals_at(
                first,
                max(threshold - BELOW, threshold / 2),
                order,
                threads,
                resketcher(inp, hasher, shingle, threads, quiet or as_json, first),
                None,  # decided on estimates: the report shows the exact Jaccard of each pair
                limit,
            )[1]
            if below_run
            else []
        )
        if below_run:
            assert first.prefixes is not None
            first.prefixes.keep_order = False
            first.prefixes.release()
        result = DedupResult(
            fps,
            kept,
            jaccard,
            k,
            {},
            threshold=threshold,
            candidates="prefix" if by_prefix else "fingerprint",
        )
        data = (
            report_mod.prepare(
                fps,
                result,
                threads,
                candidates="prefix" if by_prefix else "fingerprint",
                below=spared(lower, kept, threshold, report_mod.SAMPLES_PER_DISTANCE)
                if threshold is not None
                else [],
            )
            if report_tmp
            else None
        )

        ids: dict[int, Any] = {}
        texts: dict[int, str] = {}
        # Ids of kept documents that come after a document they replace (--keep longest): read first.
        ahead = (
            np.unique(kept[kept > np.arange(len(kept))]) if clusters_tmp else np.zeros(0, np.int64)
        )
        kept_ids: dict[int, Any] = ids_of(inp, ahead) if len(ahead) else {}
        if out_tmp or clusters_tmp or data:
            progress = Progress(inp, "writing", quiet or as_json)
            inp.bytes_read = 0
            clusters_writer = (
                TableWriter(clusters_tmp, clusters, CLUSTER_COLUMNS)
                if clusters_tmp and clusters
                else None
            )
            centers = set(np.unique(kept[~result.keep]).tolist()) if clusters_writer else set()
            try:
                for first_row, chunk_ids, chunk_texts in inp.replay(
                    keep=result.keep if out_tmp else None,
                    output=out_tmp,
                    output_compression=compression_of(output) if output and output != "-" else None,
                    ids=bool(clusters_writer or data),
                    texts=data.rows if data else frozenset(),
                ):
                    n = len(chunk_ids)
                    rows = np.arange(first_row, first_row + n)
                    named = inp.named_ids(first_row, chunk_ids)
                    if clusters_writer is not None:
                        kept_ids.update(
                            (r, v) for r, v in zip(rows.tolist(), named) if r in centers
                        )
                        kept_here = kept[first_row : first_row + n]
                        _write_clusters(
                            inp,
                            clusters_writer,
                            first_row,
                            {
                                "id": named,
                                "cluster": result.cluster[first_row : first_row + n],
                                "kept": result.keep[first_row : first_row + n],
                                "kept_id": [
                                    kept_ids[c] if c != r else v
                                    for r, c, v in zip(rows.tolist(), kept_here.tolist(), named)
                                ],
                                "jaccard": [
                                    None if j != j else round(j, 4)
                                    for j in jaccard[first_row : first_row + n].tolist()
                                ],
                                "distance": result.distance[first_row : first_row + n],
                            },
                        )
                    if data is not None:
                        ids.update(
                            (r, named[r - first_row])
                            for r in data.rows
                            if first_row <= r < first_row + n
                        )
                        texts.update(chunk_texts)
                    progress.update()
            finally:
                progress.close()
                if clusters_writer is not None:
                    clusters_writer.close()
        seconds = time.perf_counter() - start
        summary = {
            "input": inp.name,
            "documents": result.n_documents,
            "candidate_pairs": candidate_pairs,
            "bytes": nbytes,
            "clusters": result.n_clusters,
            "kept": result.n_kept,
            "removed": result.n_removed,
            "candidates": (
                "prefix" if by_prefix else "fingerprint" if threshold is not None else None
            ),
            "k": k,
            "threshold": threshold,
            "keep": keep,
            "seconds": round(seconds, 4),
            "mb_per_s": round(nbytes / seconds / 1e6, 2) if seconds > 0 else 0.0,
            "skipped": len(inp.errors),
            "errors": [str(e) for e in inp.errors],
            "evidence": evidence,
        }
        if data is not None and report_tmp is not None:
            page = report_mod.render(data, summary, ids, texts, inp.name)
            with open(report_tmp, "w", encoding="utf-8") as f:
                f.write(page)
        outputs.commit()
    summarize(
        summary,
        f"{_count(summary['documents'], 'document')} ({_size(nbytes)}) in {seconds:.2f} s, "
        f"{summary['mb_per_s']:.1f} MB/s\n"
        f"{_count(summary['clusters'], 'cluster')} of near-duplicates"
        # Prefix candidates: every pair at the threshold, whatever k.
        f"{'' if by_prefix else f' within k={k}'}{_jaccard_note(threshold)}: "
        f"kept {summary['kept']:,}, removed {summary['removed']:,}"
        f"{_evidence_note(evidence)}",
        inp,
        as_json,
        quiet,
        output=output,
        outputs={"output": output, "clusters": clusters, "report": report_path},
        wrote=[
            f"{output} ({_count(summary['kept'], 'document')})"
            if output and output != "-"
            else None,
            clusters,
            report_path,
        ],
        dry_run=dry_run,
    )
