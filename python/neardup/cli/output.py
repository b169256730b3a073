"""What the commands print: counts, sizes, error listings, and the checks of output names."""

from __future__ import annotations

import fnmatch
import json
import os
import sys
from typing import Any, TextIO

import click

from .. import stdio
from ..io import (
    FilesInput,
    Input,
    TableWriter,
    format_of,
)
from ..io.listing import is_glob
from .options import EXIT_BAD_INPUT, EXIT_FAILED


def _jaccard_note(threshold: float | None) -> str:
    return (
        f" with shingle Jaccard >= {threshold:g}"
        if threshold is not None
        else " (fingerprints only)"
    )


def _stream(output: str | None) -> TextIO:
    """Where the human report goes: stdout, unless the data goes there."""
    return sys.stderr if output == "-" else sys.stdout


def _say(text: str, output: str | None = None) -> None:
    stream = _stream(output)
    # The report of a job whose outputs are written: to stderr when stdout was closed.
    click.echo(text, file=sys.stderr if stdio.is_closed(stream) else stream)


def summarize(
    summary: dict[str, Any],
    headline: str,
    inp: Input,
    as_json: bool,
    quiet: bool,
    *,
    output: str | None = None,
    outputs: dict[str, str | None] | None = None,
    wrote: list[str | None] | None = None,
    dry_run: bool = False,
) -> None:
    """Prints a command's summary with the input's skipped records: as JSON (with the files
    written, ``outputs``), or as its headline, a "wrote ..." line naming ``wrote`` (or "dry run:
    nothing written") and the first skipped records; nothing with --quiet. Both go to stderr
    when the data goes to stdout (``output`` is "-")."""
    summary = {
        **summary,
        "skipped": len(inp.errors),
        "skipped_files": len(inp.left_out),
        "errors": [str(e) for e in inp.errors],
    }
    if as_json:
        if outputs is not None:
            summary["outputs"] = {name: path for name, path in outputs.items() if path}
        click.echo(json.dumps(summary, indent=2), file=_stream(output))
        return
    if quiet:
        return
    lines = [headline]
    if wrote and any(wrote):
        lines.append("wrote " + ", ".join(w for w in wrote if w))
    elif dry_run:
        lines.append("dry run: nothing written")
    _say("\n".join([*lines, *_errors_text(inp)]), output)


def _errors_text(inp: Input, limit: int = 10) -> list[str]:
    files = len(inp.left_out)  # files of a folder or glob not read, then bad records
    what = [
        _count(files, "file") if files else "",
        _count(len(inp.errors) - files, "bad record") if len(inp.errors) > files else "",
    ]
    lines = [f"skipped {' and '.join(w for w in what if w)}:"] if inp.errors else []
    lines += [f"  {e}" for e in inp.errors[:limit]]
    if len(inp.errors) > limit:
        lines.append(
            f"  ... and {len(inp.errors) - limit:,} more (--json or --report lists them all)"
        )
    return lines


def _count(n: Any, noun: str, plural: str | None = None) -> str:
    """``1 document``, ``2 documents``; ``plural`` where it is not ``noun + "s"``."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


def _size(nbytes: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if nbytes < 1000 or unit == "GB":
            return f"{nbytes:.0f} {unit}" if unit == "B" else f"{nbytes:.1f} {unit}"
        nbytes /= 1000
    return f"{nbytes:.1f} GB"


def _writes_folder(inp: Input, output: str | None) -> bool:
    """Whether OUTPUT is a folder: for a folder of .txt files, and for a folder or glob of files
    unless OUTPUT names one file (of the one format all its files have)."""
    if inp.format == "txt":
        return True
    return inp.format == "folder" and output != "-" and format_of(output or "") in (None, "txt")


def _outside(inp: Input, output: str | None) -> None:
    """Refuses an OUTPUT that a later run of the same INPUT, a folder or glob, would read: one
    inside the folder (or under a ``**`` glob's folder), or a file the glob matches."""
    if output in (None, "-") or inp.format not in ("txt", "folder") or os.path.isfile(inp.path):
        return
    assert output is not None
    pattern = inp.path if is_glob(inp.path) else None
    if pattern is not None and fnmatch.fnmatch(os.path.normpath(output), os.path.normpath(pattern)):
        raise click.UsageError(
            f"{output}: OUTPUT matches the input glob {pattern}, which a later run would read; "
            "name a file it does not match"
        )
    if pattern is not None and "**" not in pattern:
        return
    root = getattr(inp, "root", inp.path)
    inside = os.path.relpath(os.path.realpath(output), os.path.realpath(root))
    if inside == os.curdir or not inside.startswith(os.pardir):
        raise click.UsageError(
            f"{output}: OUTPUT lies inside the input folder {root}, which a later run would "
            "read; name one outside it"
        )


def _check_output(inp: Input, output: str | None) -> None:
    """OUTPUT holds documents in INPUT's format, and its name must say so: .jsonl for JSONL input
    (.gz or .zst after it to compress), .csv, .tsv, .parquet; a folder for a folder (or a glob)
    of files, which it mirrors, or one file when its files are all of that file's format. A name
    without an extension, or with another one, is refused rather than written in a format it
    does not name."""
    folder = _writes_folder(inp, output)
    joinable = inp.joinable() if isinstance(inp, FilesInput) else None
    _outside(inp, output)
    if inp.format == "folder" and not folder:
        if joinable is None or (
            joinable == "parquet" if output == "-" else format_of(output or "") != joinable
        ):
            held = (
                f"its files are {joinable} files"
                if joinable
                else "its files are of several formats, or .txt documents"
            )
            raise click.UsageError(
                f"{output}: OUTPUT of a folder or glob is a folder that mirrors it, or one file "
                f"of the format all its files have, and {held}; name a folder"
                + (f" or a .{joinable} file" if joinable and joinable != "lines" else "")
                + (" or a .txt file" if joinable == "lines" else "")
            )
        return
    if output is None or output == "-":
        if output == "-" and inp.format == "txt":  # files written one by one, into a folder
            raise click.UsageError("txt output cannot go to stdout: give -o FOLDER")
        if output == "-" and inp.format == "parquet":
            raise click.UsageError("parquet output cannot go to stdout: give -o FILE")
        return
    named = format_of(output)
    if folder and os.path.exists(output) and (not os.path.isdir(output) or os.listdir(output)):
        raise click.UsageError(
            f"{output}: exists and is not an empty folder; remove it or name another"
        )
    if inp.format == "txt" and named not in (None, "txt", "lines"):  # a folder may end in .txt
        raise click.UsageError(
            f"{output}: OUTPUT is written in the input's format, a folder of .txt files; name "
            f"a folder, not a .{named} file"
        )
    if inp.format == "lines" and named != "lines":
        raise click.UsageError(
            f"{output}: OUTPUT is written in the input's format, one document per line; name it "
            ".txt (.gz or .zst to compress)"
        )
    if not folder and inp.format != "lines" and named != inp.format:
        raise click.UsageError(
            f"{output}: OUTPUT is written in the input's format ({inp.format}); name it .{inp.format}"
            + (" (.gz or .zst to compress)" if inp.format in ("jsonl", "csv", "tsv") else "")
        )


def _table_name(name: str | None, option: str) -> None:
    if name is not None:
        try:
            TableWriter.check_name(name)
        except ValueError as err:
            raise click.BadParameter(str(err), param_hint=option) from None


class _Failed(click.ClickException):
    exit_code = EXIT_FAILED


class _TooManyPairs(click.ClickException):
    """More pairs than --max-pairs: one line, status 2."""

    exit_code = EXIT_BAD_INPUT

    def show(self, file: Any = None) -> None:
        click.echo(f"neardup: {self.message}", err=True)


def _evidence_note(evidence: dict[str, Any]) -> str:
    """What the summary says of candidate pairs not decided on exact evidence (docs/evidence.md)."""
    notes = []
    if evidence.get("short_pairs_skipped"):
        notes.append(
            f"{evidence['short_pairs_skipped']:,} candidate pairs of short texts not compared "
            "(a shared prefix over the cap)"
        )
    if evidence.get("band_pairs_estimated"):
        notes.append(
            f"{evidence['band_pairs_estimated']:,} pairs near the threshold decided on an estimate"
        )
    return "".join(f"\nnote: {n} (see docs/evidence.md)" for n in notes)
