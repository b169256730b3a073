"""``neardup dedup --workers/--scheduler``: the same on Dask. OUTPUT and --clusters are files
when their names say a format (the workers write parts, which are joined into the file as one
machine joins the files of a folder: :mod:`neardup.io.joined`), else folders of partitions."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

import click

from ..against import DedupIndex
from ..hasher import Simhasher
from ..io import (
    InputError,
    MissingExtraError,
    Outputs,
    format_of,
)
from ..io.compression import compression_of
from ..io.joined import Joined
from ..io.listing import is_glob, listing, read_as
from ..paths import check_outputs
from ..pipeline import check_candidates
from .options import Source, sample_path
from .output import _count, _evidence_note, _jaccard_note, _say


def _one_file(path: str | None) -> str | None:
    """The format of the one file an output path names (``kept.jsonl.gz``: jsonl), or None for a
    folder of partitions: a name with a trailing slash, an existing folder, or a name of no
    format."""
    if path is None or path.endswith(("/", os.sep)) or os.path.isdir(path):
        return None
    named = format_of(path)
    return named if named in ("jsonl", "csv", "parquet") else None


def _joined(frame: Any, path: str, name: str, fmt: str, force_ascii: bool = True) -> Any:
    """The delayed write of a dask DataFrame as one file at ``path`` (the temporary file of
    ``name``, compressed as ``name`` says): the workers write its parts beside it, and
    :func:`_join` joins them once they are written."""
    joined = Joined(path, name, fmt, compression_of(name))
    return joined, _parts(frame, joined.folder, fmt, force_ascii)


def _join(joined: Joined, name: str) -> None:
    """Appends the parts of ``joined``, in partition order, and finishes the file."""
    done = False
    try:
        for part in sorted(os.listdir(joined.folder)):
            joined.append(os.path.join(joined.folder, part), name)
        done = True
    finally:
        joined.close(done)


def _dask_format(path: str, fmt: str | None) -> str:
    """parquet or jsonl, from --format or the name of a file, glob or folder. A folder or glob
    holding files Dask would leave out (another format, or JSONL files in a subfolder) is
    refused, naming them."""
    if fmt is not None and fmt not in ("parquet", "jsonl"):
        raise click.UsageError(f"on Dask, INPUT is Parquet or JSONL, not {fmt}")
    name = path.rstrip("/")
    if os.path.isdir(name) or is_glob(name):
        try:
            root, files = listing(name)
        except InputError as err:
            raise click.UsageError(str(err)) from None
        formats = {f: read_as(f, None)[0] for f in files}
        found = set(formats.values()) - {None}
        if fmt is None and len(found) == 1 and next(iter(found)) in ("parquet", "jsonl"):
            fmt = str(next(iter(found)))
        if fmt is None:
            held = sorted(str(f) for f in found) + (
                ["files of no format"] if None in formats.values() else []
            )
            raise click.UsageError(
                f"{path}: on Dask, a folder or glob holds Parquet or JSONL files of one format, "
                f"and this one holds {', '.join(held) or 'no files'}; give --format, or run on "
                "one machine (without --scheduler/--workers), which reads every format"
            )
        left = [
            os.path.join(root, f)
            for f, got in formats.items()
            if got != fmt or (fmt == "jsonl" and os.path.isdir(name) and os.sep in f)
        ]
        if left:
            shown = ", ".join(left[:5]) + (f" and {len(left) - 5:,} more" if len(left) > 5 else "")
            raise click.UsageError(
                f"{path}: on Dask, the {fmt} files are read and {len(left):,} other "
                f"file{'s' if len(left) != 1 else ''} would be left out: {shown}; run on one "
                "machine (without --scheduler/--workers), which reads every format, or move "
                "them out"
            )
        return fmt
    if fmt is not None:
        return fmt
    named = format_of(name.replace("*", "x"))
    if named not in ("parquet", "jsonl"):
        raise click.UsageError(
            f"{path}: on Dask, INPUT is Parquet or JSONL (a file, a glob or a folder); give --format"
        )
    return str(named)


def _parts(frame: Any, folder: str, fmt: str | None, force_ascii: bool = True) -> Any:
    """The delayed write of a dask DataFrame as parts in ``folder`` (``parquet``, ``csv`` or
    JSONL), one a partition, written by the workers: records read from JSONL as the lines they
    were read from."""
    from ..dask.jsonl import LINE, write_part

    if LINE in frame.columns:
        import pandas as pd

        return frame.map_partitions(
            write_part, folder, meta=pd.Series(dtype="int64"), enforce_metadata=False
        )
    if fmt == "parquet":
        return frame.to_parquet(
            folder, write_index=False, name_function=_part_name(".parquet"), compute=False
        )
    if fmt == "csv":
        import pandas as pd

        return frame.map_partitions(
            _csv_part, folder, meta=pd.Series(dtype="int64"), enforce_metadata=False
        )
    return frame.to_json(
        os.path.join(folder, "part-*.jsonl"),
        orient="records",
        lines=True,
        force_ascii=force_ascii,
        name_function=_part_name(),
        compute=False,
    )


def _csv_part(part: Any, folder: str, partition_info: Any = None) -> Any:
    """Partition i of a table written to ``folder/part-0000i.csv``, its rows ended as one
    machine's csv module ends them; their number."""
    import pandas as pd

    from ..dask.frames import _number

    path = os.path.join(folder, f"part-{_number(partition_info):05d}.csv")
    part.to_csv(path, index=False, lineterminator="\r\n")
    return pd.Series([len(part)], dtype="int64")


def _rounded_jaccard(part: Any) -> Any:
    """A partition of --clusters with its Jaccard to 4 places, as the single-machine command
    writes it (not the float32's digits, 0.824000001). Done in the partition: a column of the
    table assigned across partitions is aligned on their indexes, which repeat."""
    return part.assign(jaccard=part["jaccard"].astype("float64").round(4))


def _part_name(suffix: str = "") -> Callable[[int], str]:
    """Partition file names that sort in partition order (part.00000.parquet, part-00000.jsonl)."""
    return (lambda i: f"part.{i:05d}{suffix}") if suffix else (lambda i: f"{i:05d}")


def _local_cluster(neardup_dask: Any, workers: int, level: int) -> Any:
    """The local cluster of --workers, started with SIGINT and SIGTERM held until it is up (a
    cluster stopped half-way cannot be closed: distributed's exit handler fails on it with a
    traceback); a signal that came meanwhile stops the run then."""
    if threading.current_thread() is not threading.main_thread():
        return neardup_dask.local_cluster(workers, silence_logs=level)
    came: list[int] = []
    held = [s for s in (signal.SIGINT, signal.SIGTERM) if signal.getsignal(s) is not signal.SIG_IGN]
    previous = {s: signal.signal(s, lambda signum, frame: came.append(signum)) for s in held}
    try:
        cluster = neardup_dask.local_cluster(workers, silence_logs=level)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    if came:
        cluster.close()
        raise KeyboardInterrupt
    return cluster


def _write(dask: Any, writes: list[tuple[str, str, Any]]) -> None:
    """Computes the writes of outputs (name, temporary folder, delayed write) together. An
    OSError of a worker writing them (a full disk) names the outputs, not their hidden
    temporary folders; one that names another file (an input) is left as it is."""
    if not writes:
        return
    try:
        dask.compute(*(write for _, _, write in writes))
    except OSError as err:
        if err.filename is not None and not any(
            os.fspath(err.filename).startswith(tmp) for _, tmp, _ in writes
        ):
            raise
        names = " and ".join(
            name if _one_file(name) is not None else f"{name.rstrip('/')}/" for name, _, _ in writes
        )
        raise OSError(err.errno, f"cannot write {names}: {err.strerror or err}") from None


def _write_index(outputs: Outputs, got: Any) -> None:
    """Writes the updated index of a Dask update to a new file beside it, renamed over it by
    ``outputs`` after every other output: the last of them, as on one machine."""
    path = got.index.path
    tmp = outputs.reserve(path)
    try:
        got.write_index(tmp)
    except OSError as err:  # named by the index, not its hidden temporary file
        raise OSError(err.errno, err.strerror or str(err), path) from None


def _dedup_on_dask(
    source: Source,
    output: str | None,
    clusters: str | None,
    report_path: str | None,
    k: int,
    threshold: float | None,
    shingle: int,
    keep: str,
    scheduler: str | None,
    workers: int | None,
    threads: int | None,
    quiet: bool,
    as_json: bool,
    hasher: Simhasher,
    start: float,
    against: DedupIndex | None = None,
    update: bool = False,
    max_pairs: int | None = None,
    scratch: str | None = None,
    candidates: str | None = None,
    verbose: bool = False,
) -> None:
    """`neardup dedup` on Dask: OUTPUT and --clusters are files or folders of partitions. With
    ``against`` (a dedup index every worker can read at its path), the documents are
    deduplicated against it (:func:`neardup.dask.against.dedup_against`)."""
    input, sample, fmt = source.input, source.sample, source.fmt
    text_field, id_field, on_error = source.text_field, source.id_field, source.on_error
    if scheduler is not None and workers is not None:
        raise click.UsageError(
            "--scheduler runs on an existing cluster, --workers starts a local one: give one of them"
        )
    for flag, given in (
        ("--report", report_path),
        ("--on-error skip", on_error == "skip"),
        ("--threads", threads),
        ("--field", hasher.fields is not None),
    ):
        if given:
            raise click.UsageError(f"{flag} is not supported with --scheduler/--workers")
    if against is not None:
        if threshold is None:
            raise click.UsageError(
                "--against verifies every pair by its sketches: drop --no-verify"
            )
        if hasher != Simhasher() and hasher != against.hasher:
            raise click.UsageError(
                f"{against.path} was built with {against.hasher!r}: drop the fingerprint options or use the same ones"
            )
    if scratch is not None:
        if os.path.exists(scratch) and not os.path.isdir(scratch):
            raise click.BadParameter(f"{scratch} is not a folder", param_hint="--scratch")
        os.makedirs(scratch, exist_ok=True)
    if sample:
        input = sample_path()
    if input is None or input == "-":
        raise click.UsageError(
            "on Dask, INPUT is a file, glob or folder the workers can read (not stdin)"
        )
    fmt = _dask_format(input, fmt)
    # As on one machine: no output over an input (a file of the input folder, the index).
    check_outputs(
        [input, str(against.path) if against is not None else None],
        [("-o", output), ("--clusters", clusters)],
    )
    if output is not None and output == "-":
        raise click.UsageError(
            "on Dask, OUTPUT is a file or a folder the client can write (not stdout)"
        )
    output_file = _one_file(output)
    if output_file is not None and output_file != fmt:
        raise click.BadParameter(
            f"{output} names a {output_file} file, and the kept rows of {fmt} input are written "
            f"as {fmt}: name a .{fmt} file or a folder",
            param_hint="-o",
        )
    clusters_format = None
    if clusters is not None:
        clusters_format = _one_file(clusters) or {
            ".parquet": "parquet",
            ".csv": "csv",
            ".jsonl": "jsonl",
        }.get(os.path.splitext(clusters.rstrip("/"))[1])
        if clusters_format is None:
            raise click.BadParameter(
                "on Dask, --clusters is a .parquet, .csv or .jsonl file (compressed as its name "
                "says), or a folder of partitions named so with a trailing slash",
                param_hint="--clusters",
            )
    try:
        import dask
        import dask.dataframe as dd
        from distributed import Client

        from .. import dask as neardup_dask
        from ..dask import against as dask_against
        from ..dask import jsonl as dask_jsonl
        from ..dask.cluster import halt
    except ImportError:
        raise MissingExtraError(
            "--scheduler and --workers need Dask: pip install 'neardup[dask]'"
        ) from None

    with Outputs() as outputs:
        out_tmp = outputs.reserve(output, directory=output_file is None) if output else None
        clusters_tmp = (
            outputs.reserve(clusters, directory=_one_file(clusters) is None) if clusters else None
        )
        joins: list[tuple[Joined, str]] = []
        # Dask's own INFO and WARNING lines (p2p shuffle start and stop) would drown the report;
        # its ERROR lines (a worker's failed task, with its traceback, before the client raises
        # the task's error) only with --verbose: the failure is reported once, naming its path.
        # So are asyncio's (an interrupted run's "Task exception was never retrieved").
        level = logging.ERROR if verbose else logging.CRITICAL
        for logger in ("distributed", "asyncio"):
            logging.getLogger(logger).setLevel(level)
        cluster_ctx: Any = (
            _local_cluster(neardup_dask, workers, level) if workers is not None else None
        )
        try:
            with Client(cluster_ctx if cluster_ctx is not None else scheduler) as client:
                if not quiet and not as_json:
                    click.echo(
                        f"dask: {len(client.scheduler_info()['workers'])} workers at {client.scheduler.address}",
                        err=True,
                    )
                if fmt == "parquet":
                    ddf = dd.read_parquet(input)
                else:
                    # Each record's line kept as it was read: the kept lines are written back
                    # byte for byte, as one machine writes them.
                    paths = [input]
                    if os.path.isdir(input) or is_glob(input):
                        root, files = listing(input)
                        paths = [
                            os.path.join(root, f) for f in files if read_as(f, None)[0] == "jsonl"
                        ]
                    ddf, id_field = dask_jsonl.frame(
                        paths, text_field or "text", id_field, source.max_record_size
                    )
                if id_field is None and "id" in ddf.columns:
                    id_field = "id"
                for name, flag in ((text_field, "--text-field"), (id_field, "--id-field")):
                    if name is not None and name not in ddf.columns:
                        raise InputError(
                            input,
                            f"no column {name!r} ({flag}); columns: {', '.join(map(str, ddf.columns))}",
                        )
                record: dict[str, Any] = {}
                # An update holds the index's lock and its run's scratch folder to the end of
                # this block: the outputs are written, then the index (a new file), and all are
                # renamed into place, the index last. Whatever stops the run before leaves the
                # index as it was.
                with contextlib.ExitStack() as held:
                    try:
                        if against is not None:
                            got = held.enter_context(
                                dask_against.matched(
                                    ddf,
                                    against,
                                    text_field=text_field,
                                    id_field=id_field,
                                    k=k,
                                    threshold=threshold,
                                    update=update,
                                    max_pairs=max_pairs,
                                    scratch=scratch,
                                    candidates=candidates,
                                    stats=record,
                                )
                            )
                            kept, table = got.kept, got.table
                        else:
                            kept, table = neardup_dask.dedup(
                                ddf,
                                text_field=text_field,
                                k=k,
                                id_field=id_field,
                                keep=keep,
                                threshold=threshold,
                                shingle=shingle,
                                hasher=hasher,
                                clusters=True,
                                max_pairs=max_pairs,
                                stats=record,
                                scratch=scratch,
                                candidates=candidates,
                            )
                    except UnicodeEncodeError:
                        # Dask turns the columns it reads into Arrow strings, raising an
                        # encoding error without a message.
                        raise InputError(
                            input,
                            "a value is not valid Unicode (a lone surrogate, which JSON's "
                            "\\ud800 escape can hold), and Dask keeps text as Arrow strings, "
                            "which cannot hold it; deduplicate it on one machine (without "
                            "--workers or --scheduler), with .jsonl outputs",
                        ) from None
                    except (TypeError, ValueError) as err:
                        # A reader's message names its file already (the input, or a file of it).
                        message = str(err).removeprefix(f"{input}: ")
                        raise InputError(input, message) from None
                    # Counted on the workers, while matching.
                    n_docs, n_removed = record["documents"], record["removed"]
                    n_clusters = record["clusters"]
                    if against is not None and n_removed:  # the documents that remove another
                        removed_rows = table[~table["kept"]]
                        n_clusters = int(removed_rows["kept_id"].nunique().compute())
                    # Both outputs in one computation: the input is read once for them.
                    writes = []
                    if out_tmp is not None and output is not None:
                        if output_file is not None:
                            joined, write = _joined(kept, out_tmp, output, fmt, force_ascii=False)
                            joins.append((joined, output))
                        else:
                            write = _parts(kept, out_tmp, fmt, force_ascii=False)
                        writes.append((output, out_tmp, write))
                    if clusters_tmp is not None and clusters is not None:
                        assert clusters_format is not None
                        table = table.map_partitions(
                            _rounded_jaccard, meta=_rounded_jaccard(table._meta)
                        )
                        if _one_file(clusters) is not None:
                            joined, write = _joined(table, clusters_tmp, clusters, clusters_format)
                            joins.append((joined, clusters))
                        else:
                            write = _parts(table, clusters_tmp, clusters_format)
                        writes.append((clusters, clusters_tmp, write))
                    if against is None:
                        _write(dask, writes)
                    else:  # its outputs mix graph kinds, which dask computes apart
                        for write in writes:
                            _write(dask, [write])
                    # One file each: the parts joined on the client, streamed, in partition order.
                    while joins:
                        _join(*joins.pop(0))
                    if against is not None and update:
                        _write_index(outputs, got)
                    outputs.commit()
        except KeyboardInterrupt:
            if cluster_ctx is not None:  # its workers end now, not when their tasks end
                halt(cluster_ctx)
            raise
        finally:
            for joined, _ in joins:  # a failure before they were joined: their parts go
                joined.close(False)
            if cluster_ctx is not None:
                cluster_ctx.close()
    seconds = time.perf_counter() - start
    summary = {
        "input": input,
        "documents": n_docs,
        "candidate_pairs": record.get("candidate_pairs"),
        "clusters": n_clusters,
        "kept": n_docs - n_removed,
        "removed": n_removed,
        "k": k,
        "threshold": threshold,
        "keep": keep,
        "seconds": round(seconds, 4),
        "engine": "dask",
        "candidates": (
            against._candidates(candidates, threshold)
            if against is not None
            else check_candidates(candidates)
            if threshold is not None
            else None
        ),
    }
    if against is not None:
        summary.update(against=against.path, updated=update)
    else:  # pairs near the threshold: decided on their exact shingle sets, as on one machine
        summary["evidence"] = {
            name: record.get(name, 0)
            for name in (
                "short_pairs_skipped",
                "prefix_pairs",
                "pairs_compared",
                "band_pairs_exact",
                "band_pairs_estimated",
            )
        }
    written = {"output": output, "clusters": clusters}
    if as_json:
        click.echo(
            json.dumps({**summary, "outputs": {k_: v for k_, v in written.items() if v}}, indent=2)
        )
        return
    if quiet:
        return
    # Prefix candidates (the default, and an index's with postings): every pair at the
    # threshold, whatever k; as the single-machine command says.
    by_prefix = summary["candidates"] == "prefix"
    lines = [
        f"{_count(n_docs, 'document')} in {seconds:.2f} s on Dask",
        f"{_count(n_clusters, 'cluster')} of near-duplicates"
        f"{'' if by_prefix else f' within k={k}'}{_jaccard_note(threshold)}: "
        f"kept {n_docs - n_removed:,}, removed {n_removed:,}"
        f"{_evidence_note(summary.get('evidence', record))}",
    ]
    done = [
        d if _one_file(d) is not None else f"{d.rstrip('/')}/ (a folder of partitions)"
        for d in (output, clusters)
        if d
    ]
    lines.append("wrote " + ", ".join(done) if done else "dry run: nothing written")
    _say("\n".join(lines))
