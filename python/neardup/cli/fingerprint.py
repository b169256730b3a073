"""``neardup fingerprint``: the corpus with a column of fingerprints."""

from __future__ import annotations

import json
import os
import time
from typing import Any

import click

from ..corpus import fingerprint_with_progress
from ..io import (
    Outputs,
)
from ..paths import check_outputs
from .app import cli
from .options import Source, hasher_options, input_options, make_hasher, renamed_flag, run_options
from .output import _check_output, _count, _errors_text, _Failed, _say, _size, _stream, _table_name


@cli.command()
@input_options
@click.option(
    "-o",
    "--output",
    required=True,
    metavar="OUTPUT",
    help="Where to write the documents with their fingerprints (- for stdout).",
)
@click.option(
    "--fingerprint-field",
    default="fingerprint",
    show_default=True,
    help="Name of the new field or column.",
)
@click.option("--column", "old_column", default=None, hidden=True)
@hasher_options
@run_options
def fingerprint(
    source: Source,
    output: str,
    fingerprint_field: str,
    old_column: str | None,
    threads: int | None,
    quiet: bool,
    as_json: bool,
    **hasher_flags: Any,
) -> None:
    """Add a fingerprint column to every document of INPUT.

    JSONL and CSV get 16 hex digits (exact in any JSON or CSV reader); Parquet gets a uint64
    column. A folder of .txt files gives a table (id, fingerprint), any other folder or glob
    one of (file, position, fingerprint): name OUTPUT .csv, .jsonl or .parquet. In one pass: the input is read once.
    """
    column = renamed_flag("--column", "--fingerprint-field", old_column, fingerprint_field)
    start = time.perf_counter()
    hasher = make_hasher(**hasher_flags)
    inp = source.open(
        hasher,
        replayable=hasher.weighting == "idf",
    )
    check_outputs([inp.path], [("-o", output)])
    if inp.format not in ("txt", "lines", "folder"):  # documents: the input's format
        _check_output(inp, output)
    elif (
        output == "-"
        or os.path.exists(output)
        and os.path.exists(inp.path)
        and os.path.samefile(output, inp.path)
    ):
        raise click.UsageError(
            f"for {'lines of text' if inp.format == 'lines' else 'a folder or glob of files'}, OUTPUT "
            "is a .csv, .jsonl or .parquet table"
        )
    else:
        _table_name(output, "--output")
    with inp, Outputs() as outputs:
        try:
            tmp = outputs.reserve(output)
        except OSError as err:
            raise _Failed(f"cannot write {output}: {err.strerror or err}") from None
        write, close = inp.fingerprint_writer(tmp, output, column)
        try:
            fps, _, nbytes = fingerprint_with_progress(
                inp, hasher, threads, quiet or as_json, on_chunk=write, raw=True
            )
        finally:
            close()
        outputs.commit()
    seconds = time.perf_counter() - start
    summary = {
        "input": inp.name,
        "documents": len(fps),
        "bytes": nbytes,
        "seconds": round(seconds, 4),
        "mb_per_s": round(nbytes / seconds / 1e6, 2) if seconds > 0 else 0.0,
        "skipped": len(inp.errors),
        "skipped_files": len(inp.left_out),
        "errors": [str(e) for e in inp.errors],
        "output": output,
    }
    if as_json:
        click.echo(json.dumps(summary, indent=2), file=_stream(output))
    elif not quiet:
        _say(
            "\n".join(
                [
                    f"{_count(len(fps), 'document')} ({_size(nbytes)}) fingerprinted in {seconds:.2f} s; wrote {output}"
                ]
                + _errors_text(inp)
            ),
            output,
        )
