"""``neardup index build|add|query``: a saved index of fingerprints."""

from __future__ import annotations

import json
from typing import Any

import click
import numpy as np

from .. import _core
from ..against import DEFAULT_SKETCH_BITS, DEFAULT_SKETCH_BYTES
from ..corpus import fingerprint_with_progress
from ..hasher import Simhasher
from ..index import SimhashIndex
from ..index_kinds import expect_simhash_index
from ..io import (
    Input,
    InputError,
    Outputs,
)
from ..paths import check_outputs, locked
from ..pipeline import THRESHOLD, THRESHOLD_K, UNVERIFIED_K
from . import against as against_cmd
from .app import cli
from .ids import bad_id, integer_id
from .options import (
    Source,
    hasher_options,
    index_k_option,
    input_options,
    make_hasher,
    read_text_file,
    run_options,
)
from .output import _count, _Failed, summarize


@cli.group()
def index() -> None:
    """An index kept on disk, checked against new batches.

    A simhash index (build -o NAME.sidx, or any name but .ndx; add, query) holds integer ids:
    the values of --id-field if given (they must be integers), otherwise documents are numbered
    on from the index's largest id. A dedup index (build -o NAME.ndx, for dedup --against)
    holds the ids of --id-field as given, strings or integers, or row numbers. Each command
    handed the other kind says which command reads it. Use the same fingerprint options
    for build, add and query.
    """


def _int_ids(inp: Input) -> np.ndarray | None:
    """The ids of --id-field, checked: each an integer as given, none given twice."""
    if inp.id_field is None:
        return None
    values: list[int] = []
    for _, chunk_ids, _ in inp.replay(ids=True):
        for value in chunk_ids:
            got = integer_id(value)
            if got is None:
                raise bad_id(
                    inp,
                    len(values),
                    f"index ids must be integers (64-bit); {inp.id_field!r} is {json.dumps(value, default=repr)}",
                )
            values.append(got)
    ids = np.asarray(values, dtype=np.int64)
    order = np.argsort(ids, kind="stable")
    again = np.flatnonzero(ids[order][1:] == ids[order][:-1])
    if len(again):
        first, second = int(order[again[0]]), int(order[again[0] + 1])
        earlier = bad_id(inp, first, "")
        where = (
            f"line {earlier.line}"
            if earlier.line is not None and earlier.unit == "line"
            else f"{earlier.unit} {earlier.line}"
        )
        raise bad_id(
            inp, second, f"id {values[second]} in {inp.id_field!r} was given before, at {where}"
        )
    return ids


def _open_for_index(source: Source, hasher: Simhasher) -> Input:
    """INPUT for an index: the ids are document numbers unless --id-field names a field (then
    INPUT can be read again, to point at the record of a bad id)."""
    return source.open(hasher, replayable=source.id_field is not None, auto_id=False)


@index.command("build")
@input_options
@click.option(
    "-o",
    "--output",
    "index_path",
    required=True,
    metavar="INDEX",
    help="The index file to write; INDEX.ndx writes a dedup index (for dedup --against).",
)
@index_k_option
@click.option(
    "--sketch-bytes",
    type=click.IntRange(4, 1024),
    default=DEFAULT_SKETCH_BYTES,
    show_default=True,
    help="For INDEX.ndx: bytes of each document's compact sketch (a multiple of 4), 28 + this "
    "a document with integer ids (64: 10M documents in 920 MB). A document of at most this / 4 "
    "shingles keeps them all (exact Jaccards); a larger one keeps 8 x this / --sketch-bits bins.",
)
@click.option(
    "--sketch-bits",
    type=click.Choice(["1", "2", "4", "8", "16", "32"]),
    default=str(DEFAULT_SKETCH_BITS),
    show_default=True,
    help="For INDEX.ndx: bits per bin of a sketched document.",
)
@click.option(
    "--candidates",
    type=click.Choice(["prefix", "fingerprint"]),
    default="prefix",
    show_default=True,
    help="For INDEX.ndx: how dedup --against finds a new document's candidates: prefix (the "
    "index keeps each document's rarest shingle hashes, 16 bytes each, and finds every pair at "
    "the threshold) or fingerprint (within --k; a smaller file).",
)
@click.option(
    "--exact/--no-exact",
    default=None,
    help="For INDEX.ndx: keep each document's whole shingle set (4 bytes a distinct shingle), so "
    "that dedup --against decides every pair on its exact Jaccard, as dedup does  [default: "
    "--exact]. --no-exact keeps the compact sketches alone, a smaller file whose Jaccards are "
    "estimates (docs/against.md).",
)
@hasher_options
@run_options
def index_build(
    source: Source,
    index_path: str,
    k: int | None,
    sketch_bytes: int,
    sketch_bits: str,
    candidates: str,
    exact: bool | None,
    threads: int | None,
    quiet: bool,
    as_json: bool,
    **hasher_flags: Any,
) -> None:
    """Fingerprint INPUT and save it as an index file; INDEX.ndx: dedup INPUT (word 3-shingle
    Jaccard >= 0.8, as dedup's default) and save a dedup index of what it
    keeps, for dedup --against."""
    hasher = make_hasher(**hasher_flags)
    if against_cmd.is_dedup_index_path(index_path):  # cli/against.py
        against_cmd.build_command(
            source,
            index_path,
            THRESHOLD_K if k is None else k,
            THRESHOLD,
            3,
            sketch_bytes,
            int(sketch_bits),
            threads,
            quiet,
            as_json,
            hasher,
            candidates,
            True if exact is None else exact,
        )
        return
    if exact is not None:
        raise click.UsageError(
            "--exact/--no-exact apply to a dedup index (-o INDEX.ndx); a simhash index keeps "
            "fingerprints only"
        )
    k = UNVERIFIED_K if k is None else k
    inp = _open_for_index(source, hasher)
    check_outputs([inp.path], [("-o", index_path)])
    with inp, Outputs() as outputs:
        tmp = outputs.reserve(index_path)
        fps, _, _ = fingerprint_with_progress(inp, hasher, threads, quiet or as_json)
        idx = SimhashIndex(k=k, expected_size=max(len(fps), 1))
        idx.add(fps, _int_ids(inp))
        _save_index(idx, tmp, index_path)
        outputs.commit()
    summarize(
        {"index": index_path, "documents": len(fps), "k": k},
        f"indexed {_count(len(fps), 'document')} (k={k}) in {index_path}"
        + _numbered(inp, 0, len(fps)),
        inp,
        as_json,
        quiet,
    )


@index.command("add")
@click.argument("index_path", metavar="INDEX")
@input_options
@hasher_options
@run_options
def index_add(
    index_path: str,
    source: Source,
    threads: int | None,
    quiet: bool,
    as_json: bool,
    **hasher_flags: Any,
) -> None:
    """Add the documents of INPUT to INDEX, saying how many were already near-duplicates of it."""
    hasher = make_hasher(**hasher_flags)
    inp = _open_for_index(source, hasher)
    check_outputs([inp.path], [("INDEX", index_path)])

    # Held from loading INDEX to renaming the new one into place: concurrent adds wait their turn.
    def waiting() -> None:
        if not quiet:
            click.echo(f"waiting for another neardup writing {index_path} ...", err=True)

    with locked(index_path, waiting), inp, Outputs() as outputs:
        idx = _load_index(index_path, "add")
        tmp = outputs.reserve(index_path)
        fps, _, _ = fingerprint_with_progress(inp, hasher, threads, quiet or as_json)
        rows, _, _ = idx.query_many(fps, threads=threads)
        matched = len(np.unique(rows))
        before = len(idx)
        try:
            idx.add(fps, _int_ids(inp))
        except ValueError as err:
            raise InputError(inp.name, str(err)) from None
        _save_index(idx, tmp, index_path)
        outputs.commit()
    summarize(
        {
            "index": index_path,
            "added": len(fps),
            "size": before + len(fps),
            "already_near_duplicates": matched,
        },
        f"added {_count(len(fps), 'document')} to {index_path} ({before + len(fps):,} in all); "
        f"{matched:,} of them {'was' if matched == 1 else 'were'} within k={idx.k} of an entry already there"
        + _numbered(inp, None, len(fps)),
        inp,
        as_json,
        quiet,
    )


def _numbered(inp: Input, first: int | None, count: int) -> str:
    """What the summary says of ids given as document numbers (no --id-field), from ``first``
    (None: on from the index's largest id): never silent, since a corpus's own id field,
    strings or not, is not what the index holds."""
    if inp.id_field is not None or count == 0:
        return ""
    numbers = (
        f"{first:,} to {first + count - 1:,}" if first is not None else "on from the largest id"
    )
    return f"; ids are document numbers {numbers} (--id-field names a field of integer ids)"


def _save_index(idx: SimhashIndex, tmp: str, path: str) -> None:
    """Saves to the temporary file of ``path``; a failure names ``path``."""
    try:
        idx.save(tmp)
    except OSError as err:
        raise _Failed(f"cannot write {path}: {err.strerror or err}") from None


def _load_index(path: str, command: str) -> SimhashIndex:
    expect_simhash_index(path, command)
    try:
        return SimhashIndex.load(path, mmap=False)
    except FileNotFoundError:
        raise InputError(path, "no such file") from None
    except OSError as err:
        raise InputError(path, f"cannot read: {err.strerror or err}") from None
    except Exception as err:  # IndexFormatError and friends
        if isinstance(err, _core.NeardupError):
            raise InputError(path, str(err)) from None
        raise


@index.command("query")
@click.argument("index_path", metavar="INDEX")
@input_options
@click.option("--text", "query_text", help="Query one text.")
@click.option(
    "--file", "query_file", type=click.Path(dir_okay=False), help="Query the text of one file."
)
@hasher_options
@run_options
def index_query(
    index_path: str,
    source: Source,
    query_text: str | None,
    query_file: str | None,
    threads: int | None,
    quiet: bool,
    as_json: bool,
    **hasher_flags: Any,
) -> None:
    """The entries of INDEX within its k of --text, --file, or each document of INPUT."""
    given = sum(
        x is not None and x is not False
        for x in (query_text, query_file, source.input, source.sample or None)
    )
    if given != 1:
        raise click.UsageError("give exactly one of --text TEXT, --file FILE or INPUT")
    hasher = make_hasher(**hasher_flags)
    idx = _load_index(index_path, "query")
    if query_text is not None or query_file is not None:
        if query_file is not None:
            query_text = read_text_file(query_file, source.max_record_size)
        assert query_text is not None
        fp = hasher.fingerprint(
            query_text if hasher.fields is None else {next(iter(hasher.fields)): query_text}
        )
        matches = idx.query(fp)
        if as_json:
            click.echo(
                json.dumps(
                    {
                        "fingerprint": f"{fp:016x}",
                        "matches": [{"id": i, "distance": d} for i, d in matches],
                    }
                )
            )
        else:
            click.echo(
                f"{_count(len(matches), 'entry', 'entries')} within k={idx.k}"
                + "".join(f"\n  {i}\tdistance {d}" for i, d in matches)
            )
        return
    inp = source.open(hasher, replayable=True)
    with inp:
        fps, _, _ = fingerprint_with_progress(inp, hasher, threads, quiet or as_json)
        rows, found, dists = idx.query_many(fps, threads=threads)
        names: dict[int, Any] = {}
        wanted = set(rows.tolist())
        for first, chunk_ids, _ in inp.replay(ids=True):
            for offset, value in enumerate(chunk_ids):
                if first + offset in wanted:
                    names[first + offset] = first + offset if value is None else value
    matched = len(wanted)
    if as_json:
        for r, i, d in zip(rows.tolist(), found.tolist(), dists.tolist()):
            click.echo(
                json.dumps({"document": names[r], "id": i, "distance": d}, ensure_ascii=False)
            )
        return
    if quiet:
        return
    for r, i, d in zip(rows.tolist(), found.tolist(), dists.tolist()):
        click.echo(f"{names[r]}\t{i}\tdistance {d}")
    click.echo(
        f"{matched:,} of {_count(len(fps), 'document')} {'has' if matched == 1 else 'have'} an entry within k={idx.k} "
        f"({_count(len(rows), 'match', 'matches')})"
    )
