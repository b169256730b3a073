"""The ``neardup`` command (also ``python -m neardup``)."""

from __future__ import annotations

import functools
import itertools
import json
import logging
import os
import shutil
import signal
import sys
import textwrap
import time
from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor
from importlib import resources
from typing import Any, Callable, Literal, TextIO

import click
import numpy as np

from . import _core, against_cli, pipeline, report as report_mod, stdio
from .dedup import DedupResult
from .digest import Digest
from .pipeline import THRESHOLD, THRESHOLD_K, UNVERIFIED_K, FirstPass, candidates, default_k, first_rows, keep_order, stars
from .verify import Sketches
from .hasher import Simhasher, Tokens, Weighting
from .index import DEFAULT_MAX_PAIRS, SimhashIndex, cluster, find_all, plan as make_plan
from .lines import DEFAULT_MAX_RECORD_SIZE, parse_size
from .paths import check_outputs, locked
from .io import (
    AUTO,
    FORMATS,
    Chunk,
    Input,
    InputError,
    MissingExtraError,
    Outputs,
    TableWriter,
    TxtInput,
    compression_of,
    format_of,
    hex_fingerprints,
    open_input,
)
from .normalize import UnicodeForm
from .tune import PLOT_EXTRA, TARGET_PRECISION, TARGET_RECALL, measure, sample_pairs, sample_text_pairs


#: The columns of --clusters: each document's id, its cluster (the smallest row of its star), whether
#: it is kept, the id of the document kept in its place, their Jaccard and Hamming distance.
CLUSTER_COLUMNS = ["id", "cluster", "kept", "kept_id", "jaccard", "distance"]

#: Exit statuses (documented in the README).
EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130

SAMPLE = "debian-sample.jsonl.gz"


def sample_path() -> str:
    """The path of the Debian sample shipped with neardup."""
    return str(resources.files("neardup") / "data" / SAMPLE)


# -- options shared by commands ------------------------------------------------------------------


def _max_record_size(ctx: click.Context, param: click.Parameter, value: str) -> None:
    try:
        ctx.meta["neardup.max_record_size"] = parse_size(value)
    except ValueError as err:
        raise click.BadParameter(str(err), ctx, param) from None


def input_options(f: Callable[..., Any], bundled: bool = True) -> Callable[..., Any]:
    """INPUT and the options that read it; ``bundled`` adds --sample (the shipped Debian sample)."""
    options = [
        click.argument("input", required=False, metavar="[INPUT]"),
        *([click.option("--sample", is_flag=True, help="Use the Debian sample that ships with neardup (3,000 documents) as INPUT.")] if bundled else []),
        click.option("--format", "fmt", type=click.Choice(FORMATS), help="Input format (default: from INPUT's extension; stdin: jsonl)."),
        click.option("--text-field", default="text", show_default=True, help="Field or column holding each document's text."),
        click.option("--id-field", default=None, help="Field or column holding each document's id (default: 'id' if the first document has it, else document numbers from 0)."),
        click.option("--on-error", type=click.Choice(["stop", "skip"]), default="stop", show_default=True, help="On a bad record: stop with FILE:LINE and status 2, or skip it and list it in the report."),
        click.option("--max-record-size", metavar="SIZE", default="64M", show_default=True, expose_value=False,
                     callback=_max_record_size, is_eager=True,
                     help="The most bytes of one record (JSONL or CSV line, .txt file): a larger one is bad input, found without reading it whole. 64M, 1G or bytes."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def hasher_options(f: Callable[..., Any], corpus: bool = True) -> Callable[..., Any]:
    """The Simhasher settings as flags. Without ``corpus`` (two texts, no input to read), the
    options that need a corpus are left out: idf weights (fitted on one) and --field."""
    weightings = ["tf", "binary", "idf"] if corpus else ["tf", "binary"]
    weighting_help = "Feature weights; idf reads the input once more to count document frequencies." if corpus else "Feature weights."
    options = [
        click.option("--tokens", type=click.Choice(["word", "char"]), default="word", show_default=True, help="Features: word shingles or character n-grams."),
        click.option("--ngram", type=click.IntRange(min=1), default=1, show_default=True, help="Words per shingle (characters per n-gram with --tokens char)."),
        click.option("--weighting", type=click.Choice(weightings), default="tf", show_default=True, help=weighting_help),
        click.option("--unicode-form", type=click.Choice(["NFKC", "NFC", "NFKD", "NFD", "none"]), default="NFKC", show_default=True, help="Unicode normalization."),
        click.option("--casefold/--no-casefold", default=True, show_default=True, help="Fold case before building features."),
        click.option("--stopwords", default=None, metavar="english|FILE", help="Keep only word shingles holding a stopword: the built-in English list, or a file of words, one a line."),
        *([click.option("--field", "fields", multiple=True, metavar="NAME=WEIGHT", help="Fingerprint several weighted fields instead of --text-field (repeat: --field title=2 --field body=1).")] if corpus else []),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def checked_k_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """--k, and --threshold/--shingle/--no-verify: how pairs within --k are checked."""
    f = click.option("--shingle", type=click.IntRange(min=1), default=3, show_default=True, help="Words per shingle for --threshold.")(f)
    f = click.option("--no-verify", is_flag=True,
                     help="Take every pair within --k on its fingerprints alone, without comparing shingles: faster, less precise (--k defaults to 3).")(f)
    f = click.option("--threshold", type=click.FloatRange(0, 1, min_open=True), default=THRESHOLD, show_default=True, metavar="J",
                     help="A pair within --k is a near-duplicate when the Jaccard similarity of its word shingles is J or above (0 < J <= 1).")(f)
    return click.option("--k", "k", type=click.IntRange(0, 16), default=None,
                        help=f"Candidate radius: the largest Hamming distance of a near-duplicate pair, 0 to 16  [default: {THRESHOLD_K}; {UNVERIFIED_K} with --no-verify]")(f)


def _verification(threshold: float, no_verify: bool) -> float | None:
    """The threshold in force: None with --no-verify (which refuses an explicit --threshold)."""
    if not no_verify:
        return threshold
    ctx = click.get_current_context()
    if ctx.get_parameter_source("threshold") is not click.core.ParameterSource.DEFAULT:
        raise click.UsageError("--no-verify takes pairs on fingerprints alone: drop --threshold or --no-verify")
    return None


def k_option(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--k", "k", type=click.IntRange(0, 16), default=3, show_default=True, help="Largest Hamming distance of a near-duplicate pair (0 to 16).")(f)


def run_options(f: Callable[..., Any]) -> Callable[..., Any]:
    f = click.option("--threads", type=click.IntRange(min=1), default=None, help="Worker threads (default: every core).")(f)
    f = click.option("--quiet", "-q", is_flag=True, help="No progress bar and no report on the terminal.")(f)
    f = click.option("--json", "as_json", is_flag=True, help="Print a machine-readable JSON report instead.")(f)
    return f


def make_hasher(tokens: Tokens, ngram: int, weighting: Weighting, unicode_form: UnicodeForm | Literal["none"], casefold: bool,
                stopwords: str | None, fields: tuple[str, ...] = ()) -> Simhasher:
    words: Any = None
    if stopwords == "english":
        words = "english"
    elif stopwords is not None:
        try:
            with open(stopwords, encoding="utf-8") as f:
                words = [w.strip() for w in f if w.strip()]
        except OSError as err:
            raise click.BadParameter(f"{stopwords}: {err.strerror or err}", param_hint="--stopwords") from None
    weights: dict[str, float] | None = None
    if fields:
        weights = {}
        for spec in fields:
            name, sep, weight = spec.partition("=")
            try:
                weights[name] = float(weight) if sep else 1.0
            except ValueError:
                raise click.BadParameter(f"{spec!r}: expected NAME=WEIGHT, such as title=2", param_hint="--field") from None
    try:
        return Simhasher(
            tokens=tokens, ngram=ngram, weighting=weighting, unicode_form=None if unicode_form == "none" else unicode_form,
            casefold=casefold, stopwords=words, fields=weights,
        )
    except (TypeError, ValueError) as err:
        raise click.UsageError(str(err)) from None


def _open(input: str | None, sample: bool, fmt: str | None, text_field: str, id_field: str | None, on_error: str, hasher: Simhasher, replayable: bool, auto_id: bool = True) -> Input:
    if sample and input is not None:
        raise click.UsageError("give INPUT or --sample, not both")
    if sample:
        input = sample_path()
    if input is None:
        raise click.UsageError("missing INPUT (a file, a folder of .txt files, or - for stdin; or --sample)")
    inp = open_input(
        input,
        fmt,
        text_field=text_field,
        id_field=id_field if id_field is not None else (AUTO if auto_id else None),
        fields=list(hasher.fields) if hasher.fields else None,
        on_error=on_error,
        replayable=replayable,
        max_record_size=click.get_current_context().meta.get("neardup.max_record_size", DEFAULT_MAX_RECORD_SIZE),
    )
    if isinstance(inp, TxtInput) and not inp.files():
        raise InputError(inp.name, "no .txt files")
    return inp


class Progress:
    """A progress bar on stderr over an input's bytes, shown only on a terminal."""

    def __init__(self, inp: Input, label: str, quiet: bool) -> None:
        self.inp = inp
        size = inp.size if not quiet and sys.stderr.isatty() else None
        self._bar: Any = click.progressbar(length=size, label=label, file=sys.stderr, width=30) if size else None
        self.shown = self._bar is not None
        self._done = 0
        if self._bar is not None:
            self._bar.__enter__()

    def update(self) -> None:
        if self._bar is not None:
            now = self.inp.bytes_read
            if now > self._done:
                self._bar.update(now - self._done)
                self._done = now

    def close(self) -> None:
        """Ends the bar: at 100% when the pass got to its end (the bytes counted can fall short
        of the size, with skipped records or a compressed input's trailer), where it stopped
        when an error or Ctrl-C ended it (close runs in a ``finally``)."""
        if self._bar is not None:
            self.update()
            if sys.exc_info()[0] is None and self._bar.length is not None and self._bar.pos < self._bar.length:
                self._bar.update(self._bar.length - self._bar.pos)
            self._bar.__exit__(None, None, None)
            self._bar = None


# -- the first pass: fingerprints ------------------------------------------------------------


def _texts_of(doc: Any) -> list[str]:
    return [doc] if isinstance(doc, str) else [v for v in doc.values() if isinstance(v, str)]


def _fingerprint_chunk(inp: Input, hasher: Simhasher, chunk: Chunk, threads: int | None,
                       sketch: tuple[int, int] | None = None) -> tuple[Chunk, Digest]:
    """The digests of a chunk (see :mod:`neardup.digest`); a document the hasher refuses (a
    lone surrogate from a JSON escape) is reported at its line, or skipped."""
    try:
        return chunk, hasher._digest(chunk.docs, 0, "docs", threads, sketch)
    except ValueError:
        bad = []
        for i, doc in enumerate(chunk.docs):
            for text in _texts_of(doc):
                try:
                    text.encode("utf-8")
                except UnicodeEncodeError as err:
                    inp.skip(chunk.positions[i], f"text holds a lone surrogate (U+{ord(text[err.start]):04X}), which is not valid Unicode")
                    bad.append(i)
                    break
        if not bad:
            raise
        good = np.setdiff1d(np.arange(len(chunk.docs)), bad)
        kept = Chunk(
            docs=[chunk.docs[i] for i in good],
            positions=[chunk.positions[i] for i in good],
            lengths=[chunk.lengths[i] for i in good] if chunk.lengths else [],
            raw=[chunk.raw[i] for i in good] if len(chunk.raw) == len(chunk.docs) else chunk.raw,
            nbytes=sum(len(t.encode()) for i in good for t in _texts_of(chunk.docs[i])),
        )
        return kept, hasher._digest(kept.docs, 0, "docs", threads, sketch)


def fingerprint_with_progress(inp: Input, hasher: Simhasher, threads: int | None, hidden: bool, **options: Any) -> tuple[np.ndarray, np.ndarray, int]:
    """`fingerprint_pass` with a progress bar (hidden with --quiet or --json, or off a terminal)."""
    progress = Progress(inp, "fingerprinting", hidden)
    try:
        return fingerprint_pass(inp, hasher, threads, progress, **options)
    finally:
        progress.close()


def fingerprint_pass(
    inp: Input, hasher: Simhasher, threads: int | None, progress: Progress, on_chunk: Callable[[Chunk, np.ndarray], None] | None = None,
    raw: bool = False, lengths: bool = False, first: FirstPass | None = None,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Reads the input once: (fingerprints, text lengths if asked, text bytes). JSONL is read
    and fingerprinted by the core where it can (see JsonlInput.fingerprint_chunks); otherwise
    the core fingerprints one chunk on every core while this thread parses the next. Only the
    fingerprints (8 bytes a document) and, for --keep longest, the lengths (4 more) are kept;
    given ``first``, every digest goes to it (content keys, and sketches within its budget)."""
    if hasher.weighting == "idf":
        if inp.path == "-":
            raise click.UsageError("--weighting idf reads the input twice and cannot read stdin: give a file")
        hasher.fit(doc for chunk in inp.chunks() for doc in chunk.docs)
        inp.errors.clear()
        inp._skipped.clear()
    first = first if first is not None else FirstPass(hasher, None, threads)
    len_parts: list[np.ndarray] = []
    nbytes = 0

    def finish(chunk: Chunk, digest: Digest) -> None:
        nonlocal nbytes
        first.add(digest, chunk.positions)
        if lengths:
            len_parts.append(np.asarray(chunk.lengths, dtype=np.uint32))
        nbytes += chunk.nbytes
        if on_chunk is not None:
            on_chunk(chunk, digest.fingerprints)

    fast = None if raw or on_chunk is not None else getattr(inp, "fingerprint_chunks", None)
    blocks = fast(hasher, threads, lambda chunk: _fingerprint_chunk(inp, hasher, chunk, threads, first.sketch_spec()),
                  first.sketch_spec) if fast is not None else None
    if blocks is not None:
        for chunk, digest in blocks:
            finish(chunk, digest)
            progress.update()
    else:
        _python_pass(inp, hasher, threads, progress, finish, raw, first.sketch_spec)
    progress.update()
    inp.errors.sort(key=lambda e: (e.path, e.line or 0))
    return first.fingerprints, (np.concatenate(len_parts) if len_parts else np.zeros(0, np.uint32)), nbytes


def _python_pass(inp: Input, hasher: Simhasher, threads: int | None, progress: Progress,
                 finish: Callable[[Chunk, Digest], None], raw: bool, sketch_now: Callable[[], tuple[int, int] | None]) -> None:
    """The first pass read by Python: the core digests one chunk on every core while this
    thread parses the next."""
    pending: Future[tuple[Chunk, Digest]] | None = None
    with ThreadPoolExecutor(1, thread_name_prefix="neardup") as pool:
        try:
            for chunk in inp.chunks(raw=raw):
                future = pool.submit(_fingerprint_chunk, inp, hasher, chunk, threads, sketch_now())
                if pending is not None:
                    finish(*pending.result())
                pending = future
                progress.update()
            if pending is not None:
                finish(*pending.result())
                pending = None
        except BaseException:
            if pending is not None:
                pending.cancel()
            raise


def _jaccard_note(threshold: float | None) -> str:
    return f" with shingle Jaccard >= {threshold:g}" if threshold is not None else " (fingerprints only)"


def _resketcher(inp: Input, hasher: Simhasher, shingle: int, threads: int | None, hidden: bool,
                first: FirstPass | None = None) -> Callable[[np.ndarray], Sketches]:
    """Reads again, and sketches, the documents of given rows: for a corpus whose first-pass
    sketches passed their budget (only the sketches of these rows are kept). JSONL is read by
    the core, line by line where the first pass found the rows; other inputs by Python."""

    def resketch(rows: np.ndarray) -> Sketches:
        sketches = Sketches(hasher, shingle, threads=threads)
        if not len(rows):
            return sketches
        progress = Progress(inp, f"sketching {len(rows):,} candidate documents", hidden)
        inp.bytes_read = 0
        try:
            positions = first.positions if first is not None else None
            fast = getattr(inp, "sketch_lines", None)
            if positions is not None and fast is not None and fast(hasher, positions[rows], rows, sketches, threads, progress.update):
                return sketches
            for _, _, chunk_texts in inp.replay(texts=frozenset(rows.tolist())):
                got = sorted(chunk_texts)
                sketches.add(got, [chunk_texts[r] for r in got])
                progress.update()
        finally:
            progress.close()
        return sketches

    return resketch


# -- reporting -----------------------------------------------------------------------------------


def _stream(output: str | None) -> TextIO:
    """Where the human report goes: stdout, unless the data goes there."""
    return sys.stderr if output == "-" else sys.stdout


def _say(text: str, output: str | None = None) -> None:
    stream = _stream(output)
    # The report of a job whose outputs are written: to stderr when stdout was closed.
    click.echo(text, file=sys.stderr if stdio.is_closed(stream) else stream)


def _errors_text(inp: Input, limit: int = 10) -> list[str]:
    lines = [f"skipped {len(inp.errors)} bad record{'s' if len(inp.errors) != 1 else ''}:"] if inp.errors else []
    lines += [f"  {e}" for e in inp.errors[:limit]]
    if len(inp.errors) > limit:
        lines.append(f"  ... and {len(inp.errors) - limit} more (--json or --report lists them all)")
    return lines


def _count(n: Any, noun: str, plural: str | None = None) -> str:
    """``1 document``, ``2 documents``; ``plural`` where it is not ``noun + "s"``."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def _size(nbytes: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if nbytes < 1000 or unit == "GB":
            return f"{nbytes:.0f} {unit}" if unit == "B" else f"{nbytes:.1f} {unit}"
        nbytes /= 1000
    return f"{nbytes:.1f} GB"


# -- the command ---------------------------------------------------------------------------------


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(_core.__version__, "--version", prog_name="neardup")
def cli() -> None:
    """Find near-duplicate documents with 64-bit simhash fingerprints.

    Inputs: JSONL (plain, .gz, .zst), Parquet, CSV/TSV, a folder of .txt files (one document
    per file), or - for stdin. Start with the sample that ships with neardup:

        neardup dedup --sample --dry-run

    Exit status: 0 done, 1 failed (an output could not be written), 2 bad usage or bad input
    (FILE:LINE: what is wrong), 130 interrupted. A failed or interrupted job leaves no output.
    """


@cli.command()
@input_options
@click.option("-o", "--output", metavar="OUTPUT", help="Where to write the kept documents, in INPUT's format (a folder for .txt input; - for stdout).")
@click.option("--clusters", metavar="FILE", help="Write one row per document: id, cluster, kept, distance (.csv, .tsv, .jsonl or .parquet).")
@click.option("--report", "report_path", metavar="FILE.html", help="Write an HTML report: distance histograms, cluster sizes, sample pairs.")
@click.option("--dry-run", is_flag=True, help="Write no OUTPUT; only report (and write --clusters/--report if asked).")
@checked_k_options
@click.option("--keep", type=click.Choice(["first", "longest"]), default="first", show_default=True, help="Which document of a cluster to keep.")
@click.option("--scheduler", metavar="ADDRESS", help="Run on the Dask cluster at ADDRESS (tcp://host:8786): INPUT and outputs are folders or globs of Parquet or JSONL partitions on storage every worker sees (needs neardup[dask]).")
@click.option("--workers", type=click.IntRange(min=1), default=None, help="Run on Dask with a local cluster of N worker processes (needs neardup[dask]).")
@click.option("--against", metavar="INDEX.ndx", help="Also remove the near-duplicates of the documents of this dedup index (neardup index build -o INDEX.ndx); --clusters names what each removed document duplicates.")
@click.option("--update", is_flag=True, help="With --against: append the kept documents to INDEX.ndx (a new file renamed over it).")
@hasher_options
@run_options
def dedup(input: str | None, sample: bool, fmt: str | None, text_field: str, id_field: str | None, on_error: str, output: str | None,
          clusters: str | None, report_path: str | None, dry_run: bool, k: int | None, threshold: float, no_verify: bool, shingle: int,
          keep: str, scheduler: str | None, workers: int | None, against: str | None, update: bool, threads: int | None, quiet: bool,
          as_json: bool, **hasher_flags: Any) -> None:
    """Keep one document of each near-duplicate cluster of INPUT.

    The fingerprints propose, the shingles decide: documents whose fingerprints are within --k
    bits and whose word shingles have Jaccard similarity >= --threshold are near-duplicates;
    documents with the same normalized text are copies. Documents are taken in --keep order:
    the first not yet removed is kept and removes its own near-duplicates, so each removed
    document is a near-duplicate of the one kept in its place (--clusters names it, with their
    Jaccard). The input is read in chunks, keeping 16 bytes per document and its sketch (up to
    a memory budget, past which the documents of candidate pairs are read again); writing
    OUTPUT, --clusters or --report reads INPUT a second time (stdin is copied to a temporary
    file). INPUT is a file, a folder of .txt files, - for stdin, or --sample.
    """
    threshold_in_force = _verification(threshold, no_verify)
    if against is not None or update:  # deduplicating against a dedup index: neardup/against_cli.py
        if against is None or report_path or scheduler or workers or keep != "first":
            raise click.UsageError("--update needs --against; --against takes neither --report, --keep longest nor Dask")
        hasher = make_hasher(**hasher_flags)
        return against_cli.dedup_command(sys.modules[__name__], input, sample, fmt, text_field, id_field, on_error, output, clusters, dry_run,
                                         k, threshold_in_force, update, threads, quiet, as_json, against, hasher, hasher != Simhasher())
    k = default_k(k, threshold_in_force)
    start = time.perf_counter()
    if output is None and not dry_run:
        raise click.UsageError("give -o OUTPUT for the kept documents, or --dry-run to only report")
    if output is not None and dry_run:
        raise click.UsageError("--dry-run writes no OUTPUT: drop -o or --dry-run")
    hasher = make_hasher(**hasher_flags)
    if scheduler is not None or workers is not None:
        _dedup_on_dask(input, sample, fmt, text_field, id_field, on_error, output, clusters, report_path, k, threshold_in_force, shingle,
                       keep, scheduler, workers, threads, quiet, as_json, hasher, start)
        return
    threshold = threshold_in_force  # type: ignore[assignment]
    inp = _open(input, sample, fmt, text_field, id_field, on_error, hasher,
                replayable=bool(output or clusters or report_path or threshold is not None))
    check_outputs([inp.path], [("-o", output), ("--clusters", clusters), ("--report", report_path)])
    _check_output(inp, output)
    _table_name(clusters, "--clusters")
    with inp, Outputs() as outputs:
        try:
            out_tmp = outputs.reserve(output, directory=inp.format == "txt") if output else None
            clusters_tmp = outputs.reserve(clusters) if clusters else None
            report_tmp = outputs.reserve(report_path) if report_path else None
        except OSError as err:
            raise _Failed(f"cannot write {err.filename or ''}: {err.strerror or err}".replace("cannot write : ", "cannot write: ")) from None

        first = FirstPass(hasher, shingle if threshold is not None else None, threads, budget=pipeline.SKETCH_BUDGET)
        first.expect(inp.size)
        progress = Progress(inp, "fingerprinting", quiet or as_json)
        try:
            fps, lengths, nbytes = fingerprint_pass(inp, hasher, threads, progress, lengths=keep == "longest", first=first)
        finally:
            progress.close()
        if progress.shown:
            click.echo(f"finding near-duplicates of {len(fps):,} documents within k={k}{_jaccard_note(threshold)} ...", err=True)
        order = keep_order(keep, len(fps), lengths)
        kept, jaccard = stars(candidates(fps, first.keys, k, threads), order, threshold, first.sketches,
                              _resketcher(inp, hasher, shingle, threads, quiet or as_json, first))
        result = DedupResult(fps, kept, jaccard, k, {}, threshold=threshold)
        data = report_mod.prepare(fps, result, threads) if report_tmp else None

        ids: dict[int, Any] = {}
        texts: dict[int, str] = {}
        # Ids of kept documents that come after a document they replace (--keep longest): read first.
        ahead = np.unique(kept[kept > np.arange(len(kept))]) if clusters_tmp else np.zeros(0, np.int64)
        kept_ids: dict[int, Any] = _ids_of(inp, ahead) if len(ahead) else {}
        if out_tmp or clusters_tmp or data:
            progress = Progress(inp, "writing", quiet or as_json)
            inp.bytes_read = 0
            clusters_writer = TableWriter(clusters_tmp, clusters, CLUSTER_COLUMNS) if clusters_tmp and clusters else None
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
                    named = [r if v is None else v for r, v in zip(rows.tolist(), chunk_ids)]
                    if clusters_writer is not None:
                        kept_ids.update((r, v) for r, v in zip(rows.tolist(), named) if r in centers)
                        kept_here = kept[first_row:first_row + n]
                        clusters_writer.write({
                            "id": named, "cluster": result.cluster[first_row:first_row + n], "kept": result.keep[first_row:first_row + n],
                            "kept_id": [kept_ids[c] if c != r else v for r, c, v in zip(rows.tolist(), kept_here.tolist(), named)],
                            "jaccard": [None if j != j else round(j, 4) for j in jaccard[first_row:first_row + n].tolist()],
                            "distance": result.distance[first_row:first_row + n]})
                    if data is not None:
                        ids.update((r, named[r - first_row]) for r in data.rows if first_row <= r < first_row + n)
                        texts.update(chunk_texts)
                    progress.update()
            finally:
                progress.close()
                if clusters_writer is not None:
                    clusters_writer.close()
        seconds = time.perf_counter() - start
        summary = {
            "input": inp.name, "documents": result.n_documents, "bytes": nbytes, "clusters": result.n_clusters,
            "kept": result.n_kept, "removed": result.n_removed, "k": k, "threshold": threshold, "keep": keep, "seconds": round(seconds, 4),
            "mb_per_s": round(nbytes / seconds / 1e6, 2) if seconds > 0 else 0.0, "skipped": len(inp.errors),
            "errors": [str(e) for e in inp.errors],
        }
        if data is not None and report_tmp is not None:
            page = report_mod.render(data, summary, ids, texts, inp.name)
            with open(report_tmp, "w", encoding="utf-8") as f:
                f.write(page)
        outputs.commit()
    written = {"output": output, "clusters": clusters, "report": report_path}
    if as_json:
        click.echo(json.dumps({**summary, "outputs": {k_: v for k_, v in written.items() if v}}, indent=2), file=_stream(output))
        return
    if quiet:
        return
    lines = [
        f"{_count(summary['documents'], 'document')} ({_size(nbytes)}) in {seconds:.2f} s, {summary['mb_per_s']:.1f} MB/s",
        f"{_count(summary['clusters'], 'cluster')} of near-duplicates within k={k}{_jaccard_note(threshold)}: kept {summary['kept']}, removed {summary['removed']}",
    ]
    done = [f"{output} ({_count(summary['kept'], 'document')})" if output and output != "-" else None, clusters, report_path]
    if any(done):
        lines.append("wrote " + ", ".join(d for d in done if d))
    elif dry_run:
        lines.append("dry run: nothing written")
    lines += _errors_text(inp)
    _say("\n".join(lines), output)


def _ids_of(inp: Input, rows: np.ndarray) -> dict[int, Any]:
    """The ids of some rows, from one more read of the input."""
    want, found = set(rows.tolist()), {}
    inp.bytes_read = 0
    for first_row, chunk_ids, _ in inp.replay(ids=True):
        for r, v in enumerate(chunk_ids, first_row):
            if r in want:
                found[r] = r if v is None else v
    return found


def _dask_format(path: str, fmt: str | None) -> str:
    """parquet or jsonl, from --format or the name of a file, glob or folder."""
    if fmt is not None:
        if fmt not in ("parquet", "jsonl"):
            raise click.UsageError(f"on Dask, INPUT is Parquet or JSONL, not {fmt}")
        return fmt
    name = path.rstrip("/")
    if os.path.isdir(name):
        found = {format_of(f) for f in os.listdir(name) if not f.startswith((".", "_"))} - {None}
        if len(found) == 1 and next(iter(found)) in ("parquet", "jsonl"):
            return str(next(iter(found)))
        raise click.UsageError(f"{path}: a folder of Parquet or JSONL files is expected; give --format")
    named = format_of(name.replace("*", "x"))
    if named not in ("parquet", "jsonl"):
        raise click.UsageError(f"{path}: on Dask, INPUT is Parquet or JSONL (a file, a glob or a folder); give --format")
    return str(named)


def _part_name(suffix: str = "") -> Callable[[int], str]:
    """Partition file names that sort in partition order (part.00000.parquet, part-00000.jsonl)."""
    return (lambda i: f"part.{i:05d}{suffix}") if suffix else (lambda i: f"{i:05d}")


def _dedup_on_dask(input: str | None, sample: bool, fmt: str | None, text_field: str, id_field: str | None, on_error: str,
                   output: str | None, clusters: str | None, report_path: str | None, k: int, threshold: float | None, shingle: int,
                   keep: str, scheduler: str | None, workers: int | None, threads: int | None, quiet: bool, as_json: bool,
                   hasher: Simhasher, start: float) -> None:
    """`neardup dedup` on Dask: INPUT, OUTPUT and --clusters are folders of partitions."""
    if scheduler is not None and workers is not None:
        raise click.UsageError("--scheduler runs on an existing cluster, --workers starts a local one: give one of them")
    for flag, given in (("--report", report_path), ("--on-error skip", on_error == "skip"), ("--threads", threads),
                        ("--field", hasher.fields is not None)):
        if given:
            raise click.UsageError(f"{flag} is not supported with --scheduler/--workers")
    if sample:
        input = sample_path()
    if input is None or input == "-":
        raise click.UsageError("on Dask, INPUT is a file, glob or folder the workers can read (not stdin)")
    fmt = _dask_format(input, fmt)
    if output is not None and output == "-":
        raise click.UsageError("on Dask, OUTPUT is a folder of partitions: give -o FOLDER")
    clusters_format = None
    if clusters is not None:
        clusters_format = {".parquet": "parquet", ".csv": "csv", ".jsonl": "jsonl"}.get(os.path.splitext(clusters.rstrip("/"))[1])
        if clusters_format is None:
            raise click.BadParameter("on Dask, --clusters is a folder named .parquet, .csv or .jsonl", param_hint="--clusters")
    try:
        import dask.dataframe as dd
        from distributed import Client

        from . import dask as neardup_dask
    except ImportError:
        raise MissingExtraError("--scheduler and --workers need Dask: pip install 'neardup[dask]'") from None

    with Outputs() as outputs:
        out_tmp = outputs.reserve(output, directory=True) if output else None
        clusters_tmp = outputs.reserve(clusters, directory=True) if clusters else None
        # Dask's own INFO and WARNING lines (p2p shuffle start and stop) would drown the report.
        logging.getLogger("distributed").setLevel(logging.ERROR)
        cluster_ctx: Any = (
neardup_dask.local_cluster(workers)
            if workers is not None else None
        )
        try:
            with Client(cluster_ctx if cluster_ctx is not None else scheduler) as client:
                if not quiet and not as_json:
                    click.echo(f"dask: {len(client.scheduler_info()['workers'])} workers at {client.scheduler.address}", err=True)
                if fmt == "parquet":
                    ddf = dd.read_parquet(input)
                else:
                    compressed = input.endswith((".gz", ".zst", ".bz2", ".xz"))
                    # Values as written: no dtype or date guessing (pandas 3 folds dates into
                    # dtype=False and deprecates convert_dates).
                    import pandas as pd

                    dates = {"convert_dates": False} if int(pd.__version__.split(".")[0]) < 3 else {}
                    ddf = dd.read_json(input, lines=True, orient="records", dtype=False,
                                       blocksize=None if compressed else 64 * 2**20, **dates)
                if id_field is None and "id" in ddf.columns:
                    id_field = "id"
                for name, flag in ((text_field, "--text-field"), (id_field, "--id-field")):
                    if name is not None and name not in ddf.columns:
                        raise InputError(input, f"no column {name!r} ({flag}); columns: {', '.join(map(str, ddf.columns))}")
                try:
                    kept, table = neardup_dask.dedup(ddf, column=text_field, k=k, id_column=id_field, keep=keep,
                                                     threshold=threshold, shingle=shingle, hasher=hasher, clusters=True)
                except (TypeError, ValueError) as err:
                    raise InputError(input, str(err)) from None
                n_docs = len(table)
                removed_rows = table[~table["kept"]]
                n_removed = len(removed_rows)
                n_clusters = int(removed_rows["kept_id"].nunique().compute()) if n_removed else 0
                if out_tmp is not None:
                    if fmt == "parquet":
                        kept.to_parquet(out_tmp, write_index=False, name_function=_part_name(".parquet"))
                    else:
                        kept.to_json(os.path.join(out_tmp, "part-*.jsonl"), orient="records", lines=True, force_ascii=False, name_function=_part_name())
                if clusters_tmp is not None:
                    if clusters_format == "parquet":
                        table.to_parquet(clusters_tmp, write_index=False, name_function=_part_name(".parquet"))
                    elif clusters_format == "csv":
                        table.to_csv(os.path.join(clusters_tmp, "part-*.csv"), index=False, name_function=_part_name())
                    else:
                        table.to_json(os.path.join(clusters_tmp, "part-*.jsonl"), orient="records", lines=True, name_function=_part_name())
        finally:
            if cluster_ctx is not None:
                cluster_ctx.close()
        outputs.commit()
    seconds = time.perf_counter() - start
    summary = {"input": input, "documents": n_docs, "clusters": n_clusters, "kept": n_docs - n_removed, "removed": n_removed,
               "k": k, "threshold": threshold, "keep": keep, "seconds": round(seconds, 4), "engine": "dask"}
    written = {"output": output, "clusters": clusters}
    if as_json:
        click.echo(json.dumps({**summary, "outputs": {k_: v for k_, v in written.items() if v}}, indent=2))
        return
    if quiet:
        return
    lines = [
        f"{_count(n_docs, 'document')} in {seconds:.2f} s on Dask",
        f"{_count(n_clusters, 'cluster')} of near-duplicates within k={k}{_jaccard_note(threshold)}: kept {n_docs - n_removed}, removed {n_removed}",
    ]
    done = [d for d in (output, clusters) if d]
    lines.append("wrote " + ", ".join(done) if done else "dry run: nothing written")
    _say("\n".join(lines))


def _check_output(inp: Input, output: str | None) -> None:
    """OUTPUT holds documents in INPUT's format, and its name must say so: .jsonl for JSONL input
    (.gz or .zst after it to compress), .csv, .tsv, .parquet; a folder for a folder of .txt
    files. A name without an extension, or with another one, is refused rather than written in
    a format it does not name."""
    if output is None or output == "-":
        if output == "-" and inp.format in ("parquet", "txt"):
            raise click.UsageError(f"{inp.format} output cannot go to stdout: give -o FILE")
        return
    named = format_of(output)
    if inp.format == "txt" and os.path.exists(output) and (not os.path.isdir(output) or os.listdir(output)):
        raise click.UsageError(f"{output}: exists and is not an empty folder; remove it or name another")
    if inp.format == "txt" and named not in (None, "txt"):
        raise click.UsageError(f"{output}: OUTPUT is written in the input's format, a folder of .txt files; name a folder, not a .{named} file")
    if inp.format != "txt":
        if named != inp.format:
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


def _find_all_within(fps: np.ndarray, k: int, max_pairs: int, threads: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """find_all, refusing more than --max-pairs pairs (0: no limit) before they are allocated."""
    try:
        return find_all(fps, k, threads=threads, max_pairs=max_pairs or None)
    except _core.TooManyPairsError as err:
        raise _TooManyPairs(f"{err.count:,} pairs within k={k} among {len(fps):,} documents, more than --max-pairs "
                            f"{err.limit:,}; raise --max-pairs (0 for no limit) or lower --k") from None


@cli.command()
@input_options
@click.option("-o", "--output", required=True, metavar="OUTPUT", help="Where to write the documents with their fingerprints (- for stdout).")
@click.option("--column", default="fingerprint", show_default=True, help="Name of the new field or column.")
@hasher_options
@run_options
def fingerprint(input: str | None, sample: bool, fmt: str | None, text_field: str, id_field: str | None, on_error: str, output: str,
                column: str, threads: int | None, quiet: bool, as_json: bool, **hasher_flags: Any) -> None:
    """Add a fingerprint column to every document of INPUT.

    JSONL and CSV get 16 hex digits (exact in any JSON or CSV reader); Parquet gets a uint64
    column. A folder of .txt files gives a table (id, fingerprint): name OUTPUT .csv, .jsonl or
    .parquet. In one pass: the input is read once.
    """
    start = time.perf_counter()
    hasher = make_hasher(**hasher_flags)
    inp = _open(input, sample, fmt, text_field, id_field, on_error, hasher, replayable=hasher.weighting == "idf")
    check_outputs([inp.path], [("-o", output)])
    if inp.format != "txt":
        _check_output(inp, output)
    elif output == "-" or os.path.exists(output) and os.path.exists(inp.path) and os.path.samefile(output, inp.path):
        raise click.UsageError("for a folder of .txt files, OUTPUT is a .csv, .jsonl or .parquet file")
    else:
        _table_name(output, "--output")
    with inp, Outputs() as outputs:
        try:
            tmp = outputs.reserve(output)
        except OSError as err:
            raise _Failed(f"cannot write {output}: {err.strerror or err}") from None
        write, close = _annotator(inp, tmp, output, column)
        try:
            fps, _, nbytes = fingerprint_with_progress(inp, hasher, threads, quiet or as_json, on_chunk=write, raw=True)
        finally:
            close()
        outputs.commit()
    seconds = time.perf_counter() - start
    summary = {"input": inp.name, "documents": len(fps), "bytes": nbytes, "seconds": round(seconds, 4),
               "mb_per_s": round(nbytes / seconds / 1e6, 2) if seconds > 0 else 0.0, "skipped": len(inp.errors),
               "errors": [str(e) for e in inp.errors], "output": output}
    if as_json:
        click.echo(json.dumps(summary, indent=2), file=_stream(output))
    elif not quiet:
        _say("\n".join([f"{_count(len(fps), 'document')} ({_size(nbytes)}) fingerprinted in {seconds:.2f} s; wrote {output}"] + _errors_text(inp)), output)


def _annotator(inp: Input, tmp: str, output: str, column: str) -> tuple[Callable[[Chunk, np.ndarray], None], Callable[[], None]]:
    """(write one chunk with its fingerprints, close) for the fingerprint command."""
    from .io import _pyarrow, _RawWriter

    if inp.format == "txt":
        table = TableWriter(tmp, output, ["id", column])

        def write_table(chunk: Chunk, fps: np.ndarray) -> None:
            table.write({"id": chunk.raw, column: fps if table.format == "parquet" else hex_fingerprints(fps)})

        return write_table, table.close
    if inp.format == "parquet":
        pa = _pyarrow()
        state: dict[str, Any] = {"writer": None, "row": 0}

        def write_parquet(chunk: Chunk, fps: np.ndarray) -> None:
            (batch,) = chunk.raw
            take = np.asarray(chunk.positions, dtype=np.int64) - 1 - state["row"]
            state["row"] += batch.num_rows
            table = pa.Table.from_batches([batch]).take(pa.array(take))
            values = pa.array(fps, pa.uint64())
            if column in table.column_names:
                table = table.set_column(table.column_names.index(column), column, values)
            else:
                table = table.append_column(column, values)
            if state["writer"] is None:
                state["writer"] = pa.parquet.ParquetWriter(tmp, table.schema, compression="zstd")
            state["writer"].write_table(table)

        def close_parquet() -> None:
            if state["writer"] is not None:
                state["writer"].close()

        return write_parquet, close_parquet
    raw = _RawWriter(tmp, compression_of(output) if output != "-" else None)
    if inp.format == "jsonl":
        key = json.dumps(column).encode()

        def write_jsonl(chunk: Chunk, fps: np.ndarray) -> None:
            out = []
            for (line, record), value in zip(chunk.raw, hex_fingerprints(fps)):
                if column in record:
                    record[column] = value
                    out.append(json.dumps(record, ensure_ascii=False).encode() + b"\n")
                    continue
                body = line.rstrip()
                sep = b"" if record == {} else b", "
                out.append(body[:-1] + sep + key + b': "' + value.encode() + b'"}\n')
            raw.write(b"".join(out))

        return write_jsonl, raw.close
    import csv
    import io as _io

    from .io import _Unclosed

    text = _io.TextIOWrapper(_Unclosed(raw), encoding="utf-8", newline="")  # type: ignore[type-var]
    writer = csv.writer(text, delimiter="," if inp.format == "csv" else "\t")
    state_csv: dict[str, Any] = {"header": None}

    def write_csv(chunk: Chunk, fps: np.ndarray) -> None:
        for (header, row), value in zip(chunk.raw, hex_fingerprints(fps)):
            if state_csv["header"] is None:
                names = header + ([column] if column not in header else [])
                state_csv["header"] = names
                writer.writerow(names)
            row = list(row)
            if column in header:
                row[header.index(column)] = value
            else:
                row.append(value)
            writer.writerow(row)

    def close_csv() -> None:
        text.flush()
        text.detach()
        raw.close()

    return write_csv, close_csv


@cli.command()
@input_options
@checked_k_options
@click.option("-o", "--output", metavar="FILE", help="Write every pair (id_a, id_b, distance, jaccard) to FILE (.csv, .tsv, .jsonl or .parquet).")
@click.option("--limit", type=click.IntRange(min=0), default=20, show_default=True, help="Pairs to show with a preview (the farthest apart first).")
@click.option("--max-pairs", type=click.IntRange(min=0), default=DEFAULT_MAX_PAIRS, show_default=True,
              help="The most pairs within --k to collect (counted before they are; 0 for no limit): more is an error, status 2.")
@hasher_options
@run_options
def pairs(input: str | None, sample: bool, fmt: str | None, text_field: str, id_field: str | None, on_error: str, k: int | None,
          threshold: float, no_verify: bool, shingle: int, output: str | None, limit: int, max_pairs: int, threads: int | None, quiet: bool,
          as_json: bool, **hasher_flags: Any) -> None:
    """The near-duplicate pairs of INPUT (fingerprints within --k, word shingles with Jaccard >=
    --threshold), with their distance, Jaccard and a short preview of each text."""
    threshold = _verification(threshold, no_verify)  # type: ignore[assignment]
    k = default_k(k, threshold)
    hasher = make_hasher(**hasher_flags)
    _table_name(output, "--output")
    inp = _open(input, sample, fmt, text_field, id_field, on_error, hasher, replayable=True)
    check_outputs([inp.path], [("-o", output)])
    with inp, Outputs() as outputs:
        tmp = outputs.reserve(output) if output else None
        first = FirstPass(hasher, shingle if threshold is not None else None, threads, budget=pipeline.SKETCH_BUDGET)
        fps, _, _ = fingerprint_with_progress(inp, hasher, threads, quiet or as_json, first=first)
        i, j, d = _find_all_within(fps, k, max_pairs, threads)
        jac = np.full(len(i), np.nan)
        if threshold is not None:
            sketches = first.sketches
            of = first_rows(first.keys)  # copies share the sketch of their first row
            if sketches is None or sketches.dropped:
                sketches = _resketcher(inp, hasher, shingle, threads, quiet or as_json, first)(np.unique(np.concatenate([of[i], of[j]])))
            jac = sketches.jaccard(of[i], of[j])
            same = first.keys[i] == first.keys[j]  # copies of one text, with or without words
            jac[same] = 1.0
            ok = jac >= threshold
            i, j, d, jac = i[ok], j[ok], d[ok], jac[ok]
        else:
            plain = (fps[i] != 0) | (first.keys[i] == first.keys[j])  # texts without features: copies only
            i, j, d = i[plain], j[plain], d[plain]
            jac = jac[plain]
        order = np.lexsort((j, i, -d.astype(np.int64)))
        shown = order[:limit]
        preview_rows = set(i[shown].tolist()) | set(j[shown].tolist())
        need = set(np.concatenate([i, j]).tolist()) if (output or as_json) else preview_rows
        ids: dict[int, Any] = {}
        texts: dict[int, str] = {}
        for first_row, chunk_ids, chunk_texts in inp.replay(ids=True, texts=preview_rows if not as_json else frozenset()):
            for offset, value in enumerate(chunk_ids):
                row = first_row + offset
                if row in need:
                    ids[row] = row if value is None else value
            texts.update(chunk_texts)
        if tmp is not None and output is not None:
            table = TableWriter(tmp, output, ["id_a", "id_b", "distance", "jaccard"])
            table.write({"id_a": [ids[r] for r in i.tolist()], "id_b": [ids[r] for r in j.tolist()], "distance": d,
                         "jaccard": [None if x != x else round(x, 4) for x in jac.tolist()]})
            table.close()
        outputs.commit()
    if as_json:
        for n in order.tolist():
            value = float(jac[n])
            click.echo(json.dumps({"id_a": ids[int(i[n])], "id_b": ids[int(j[n])], "distance": int(d[n]),
                                   "jaccard": None if value != value else round(value, 4)}, ensure_ascii=False))
        return
    if quiet:
        return
    column = max(20, (shutil.get_terminal_size((120, 20)).columns - 7) // 2)
    for n in shown.tolist():
        a, b = int(i[n]), int(j[n])
        value = float(jac[n])
        click.echo(f"distance {int(d[n])}{'' if value != value else f', Jaccard {value:.3f}'}: {ids[a]}  ~  {ids[b]}")
        left, right = (textwrap.wrap(" ".join(texts.get(row, "").split()), column)[:3] for row in (a, b))
        for x, y in itertools.zip_longest(left, right, fillvalue=""):
            click.echo(f"  {x:<{column}} | {y}")
    more = f" (showing {len(shown)})" if len(shown) < len(i) else ""
    click.echo(f"{_count(len(i), 'pair')} within k={k}{_jaccard_note(threshold)} among {len(fps)} documents{more}" + (f"; wrote {output}" if output else ""))
    for line in _errors_text(inp):
        click.echo(line)


@cli.group()
def index() -> None:
    """An index kept on disk, checked against new batches.

    Ids in the index are integers: the values of --id-field if given (they must be integers),
    otherwise documents are numbered on from the index's largest id. Use the same fingerprint
    options for build, add and query.
    """


_INT64 = (-(2**63), 2**63 - 1)


def _index_id(value: Any) -> int | None:
    """An id as the index holds it (a 64-bit integer), exactly as given, or None: an integer, a
    float with an integral value, or the text of one (CSV), never a boolean, 1.9 or " 42 "."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float):
        value = int(value) if value.is_integer() else None
    elif isinstance(value, str):
        digits = value[1:] if value.startswith("-") else value
        value = int(value) if digits.isascii() and digits.isdigit() else None
    elif not isinstance(value, (int, np.integer)):
        return None
    return int(value) if value is not None and _INT64[0] <= value <= _INT64[1] else None


def _bad_id(inp: Input, number: int, reason: str) -> InputError:
    """An InputError at the record of document ``number`` (found by reading the input again)."""
    errors = list(inp.errors)
    seen = -1
    try:
        for position, _doc, _id, _raw in inp._records(True, False):
            if position not in inp._skipped:
                seen += 1
                if seen == number:
                    return InputError(inp.name, reason, position, inp.unit)
    except InputError:
        pass
    finally:
        inp.errors[:] = errors
    return InputError(inp.name, f"document {number}: {reason}")


def _int_ids(inp: Input) -> np.ndarray | None:
    """The ids of --id-field, checked: each an integer as given, none given twice."""
    if inp.id_field is None:
        return None
    values: list[int] = []
    for _, chunk_ids, _ in inp.replay(ids=True):
        for value in chunk_ids:
            got = _index_id(value)
            if got is None:
                raise _bad_id(inp, len(values), f"index ids must be integers (64-bit); {inp.id_field!r} is {json.dumps(value, default=repr)}")
            values.append(got)
    ids = np.asarray(values, dtype=np.int64)
    order = np.argsort(ids, kind="stable")
    again = np.flatnonzero(ids[order][1:] == ids[order][:-1])
    if len(again):
        first, second = int(order[again[0]]), int(order[again[0] + 1])
        earlier = _bad_id(inp, first, "")
        where = f"line {earlier.line}" if earlier.line is not None and earlier.unit == "line" else f"{earlier.unit} {earlier.line}"
        raise _bad_id(inp, second, f"id {values[second]} in {inp.id_field!r} was given before, at {where}")
    return ids


@index.command("build")
@input_options
@click.option("-o", "--output", "index_path", required=True, metavar="INDEX", help="The index file to write; INDEX.ndx writes a dedup index (for dedup --against).")
@k_option
@click.option("--sketch-size", type=click.IntRange(1, 1024), default=16, show_default=True, help="For INDEX.ndx: shingle hashes kept per document.")
@hasher_options
@run_options
def index_build(input: str | None, sample: bool, fmt: str | None, text_field: str, id_field: str | None, on_error: str, index_path: str,
                k: int, sketch_size: int, threads: int | None, quiet: bool, as_json: bool, **hasher_flags: Any) -> None:
    """Fingerprint INPUT and save it as an index file; INDEX.ndx: dedup INPUT and save a dedup index of what it keeps."""
    hasher = make_hasher(**hasher_flags)
    if against_cli.is_dedup_index_path(index_path):  # neardup/against_cli.py
        k_given = click.get_current_context().get_parameter_source("k") is not click.core.ParameterSource.DEFAULT
        return against_cli.build_command(sys.modules[__name__], input, sample, fmt, text_field, id_field, on_error, index_path,
                                         k if k_given else THRESHOLD_K, THRESHOLD, 3, sketch_size, threads, quiet, as_json, hasher)
    inp = _open(input, sample, fmt, text_field, id_field, on_error, hasher, replayable=id_field is not None, auto_id=False)
    check_outputs([inp.path], [("-o", index_path)])
    with inp, Outputs() as outputs:
        tmp = outputs.reserve(index_path)
        fps, _, _ = fingerprint_with_progress(inp, hasher, threads, quiet or as_json)
        idx = SimhashIndex(k=k, expected_size=max(len(fps), 1))
        idx.add(fps, _int_ids(inp))
        _save_index(idx, tmp, index_path)
        outputs.commit()
    summary = {"index": index_path, "documents": len(fps), "k": k, "skipped": len(inp.errors), "errors": [str(e) for e in inp.errors]}
    if as_json:
        click.echo(json.dumps(summary, indent=2))
    elif not quiet:
        click.echo("\n".join([f"indexed {_count(len(fps), 'document')} (k={k}) in {index_path}"] + _errors_text(inp)))


@index.command("add")
@click.argument("index_path", metavar="INDEX")
@input_options
@hasher_options
@run_options
def index_add(index_path: str, input: str | None, sample: bool, fmt: str | None, text_field: str, id_field: str | None, on_error: str,
              threads: int | None, quiet: bool, as_json: bool, **hasher_flags: Any) -> None:
    """Add the documents of INPUT to INDEX, saying how many were already near-duplicates of it."""
    hasher = make_hasher(**hasher_flags)
    inp = _open(input, sample, fmt, text_field, id_field, on_error, hasher, replayable=id_field is not None, auto_id=False)
    check_outputs([inp.path], [("INDEX", index_path)])
    # Held from loading INDEX to renaming the new one into place: concurrent adds wait their turn.
    def waiting() -> None:
        if not quiet:
            click.echo(f"waiting for another neardup writing {index_path} ...", err=True)

    with locked(index_path, waiting), inp, Outputs() as outputs:
        idx = _load_index(index_path)
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
    summary = {"index": index_path, "added": len(fps), "size": before + len(fps), "already_near_duplicates": matched,
               "skipped": len(inp.errors), "errors": [str(e) for e in inp.errors]}
    if as_json:
        click.echo(json.dumps(summary, indent=2))
    elif not quiet:
        click.echo("\n".join([f"added {_count(len(fps), 'document')} to {index_path} ({before + len(fps)} in all); "
                              f"{matched} of them {'was' if matched == 1 else 'were'} within k={idx.k} of an entry already there"] + _errors_text(inp)))


def _save_index(idx: SimhashIndex, tmp: str, path: str) -> None:
    """Saves to the temporary file of ``path``; a failure names ``path``."""
    try:
        idx.save(tmp)
    except OSError as err:
        raise _Failed(f"cannot write {path}: {err.strerror or err}") from None


def _load_index(path: str) -> SimhashIndex:
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
@click.option("--file", "query_file", type=click.Path(dir_okay=False), help="Query the text of one file.")
@hasher_options
@run_options
def index_query(index_path: str, input: str | None, sample: bool, fmt: str | None, text_field: str, id_field: str | None, on_error: str,
                query_text: str | None, query_file: str | None, threads: int | None, quiet: bool, as_json: bool, **hasher_flags: Any) -> None:
    """The entries of INDEX within its k of --text, --file, or each document of INPUT."""
    given = sum(x is not None and x is not False for x in (query_text, query_file, input, sample or None))
    if given != 1:
        raise click.UsageError("give exactly one of --text TEXT, --file FILE or INPUT")
    hasher = make_hasher(**hasher_flags)
    idx = _load_index(index_path)
    if query_text is not None or query_file is not None:
        if query_file is not None:
            try:
                with open(query_file, "rb") as f:
                    data = f.read()
                query_text = data.decode("utf-8")
            except OSError as err:
                raise InputError(query_file, f"cannot read: {err.strerror or err}") from None
            except UnicodeDecodeError as err:
                raise InputError(query_file, f"invalid UTF-8 at byte {err.start}") from None
        assert query_text is not None
        fp = hasher.fingerprint(query_text if hasher.fields is None else {next(iter(hasher.fields)): query_text})
        matches = idx.query(fp)
        if as_json:
            click.echo(json.dumps({"fingerprint": f"{fp:016x}", "matches": [{"id": i, "distance": d} for i, d in matches]}))
        else:
            click.echo(f"{_count(len(matches), 'entry', 'entries')} within k={idx.k}" + "".join(f"\n  {i}\tdistance {d}" for i, d in matches))
        return
    inp = _open(input, sample, fmt, text_field, id_field, on_error, hasher, replayable=True)
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
            click.echo(json.dumps({"document": names[r], "id": i, "distance": d}, ensure_ascii=False))
        return
    if quiet:
        return
    for r, i, d in zip(rows.tolist(), found.tolist(), dists.tolist()):
        click.echo(f"{names[r]}\t{i}\tdistance {d}")
    click.echo(f"{matched} of {_count(len(fps), 'document')} {'has' if matched == 1 else 'have'} an entry within k={idx.k} "
               f"({_count(len(rows), 'match', 'matches')})")


def _ngram_list(ctx: click.Context, param: click.Parameter, value: str) -> list[int]:
    try:
        sizes = [int(v) for v in value.split(",") if v.strip()]
    except ValueError:
        raise click.BadParameter(f"{value!r}: expected word counts separated by commas, such as 1,2,3") from None
    if not sizes or min(sizes) < 1:
        raise click.BadParameter(f"{value!r}: expected word counts of at least 1, such as 1,2,3")
    return sizes


class _TuneCommand(click.Command):
    """``tune``, whose ``--sample`` is the shipped corpus as for every command: ``--sample 200``
    (pairs per distance) gets a usage error that names ``--pairs``, not a puzzling extra argument."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        for flag, value in zip(args, args[1:]):
            if flag == "--sample" and value.isdigit():
                raise click.UsageError(f"--sample takes no number: it uses the shipped Debian sample as INPUT; "
                                       f"the pairs measured at each distance are --pairs {value}", ctx)
        return super().parse_args(ctx, args)


@cli.command("tune", cls=_TuneCommand)
@input_options
@click.option("--max-k", type=click.IntRange(0, 16), default=8, show_default=True, help="Largest Hamming distance measured (0 to 16).")
@click.option("--pairs", type=click.IntRange(min=1), default=200, show_default=True, help="Pairs whose Jaccard is measured at each distance (at most).")
@click.option("--no-verify", is_flag=True, help="Tune the fingerprint-only dedup (dedup --no-verify): the largest k whose precision reaches --target-precision.")
@click.option("--target-recall", type=click.FloatRange(0, 1, min_open=True), default=None,
              help=f"Share of the near-duplicate pairs within --max-k that k must keep, in (0, 1]  [default: {TARGET_RECALL:g}]")
@click.option("--target-precision", type=click.FloatRange(0, 1, min_open=True), default=None,
              help=f"With --no-verify: share of reported pairs that must be near-duplicates, in (0, 1]  [default: {TARGET_PRECISION:g}]")
@click.option("--threshold", type=click.FloatRange(0, 1, min_open=True), default=0.8, show_default=True, help="Jaccard at and above which a pair is a near-duplicate, in (0, 1].")
@click.option("--jaccard-ngram", type=click.IntRange(min=1), default=3, show_default=True, help="Words per shingle of the Jaccard that defines a near-duplicate.")
@click.option("--jaccard-ngrams", default="1,2,3", show_default=True, callback=_ngram_list, help="Shingle sizes to recommend a k for as well, separated by commas.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Seed of the sample of pairs.")
@click.option("--plot", metavar="FILE.png", help="Also draw precision and pair counts against k in a PNG (needs neardup[plot]).")
@hasher_options
@click.option("--threads", type=click.IntRange(min=1), default=None, help="Worker threads (default: every core).")
@click.option("--json", "as_json", is_flag=True, help="Print the curve and the recommendation as JSON.")
def tune_command(input: str | None, sample: bool, fmt: str | None, text_field: str, id_field: str | None, on_error: str, max_k: int, pairs: int,
                 no_verify: bool, target_recall: float | None, target_precision: float | None, threshold: float, jaccard_ngram: int,
                 jaccard_ngrams: list[int], seed: int, plot: str | None, threads: int | None, as_json: bool, **hasher_flags: Any) -> None:
    """Which k? Measure how many pairs at each Hamming distance are near-duplicates on INPUT and recommend a --k.

    Counts the pairs at each distance 0..--max-k exactly and measures the word-shingle Jaccard of
    up to --pairs of them at each distance (seeded); a pair is a near-duplicate at Jaccard >=
    --threshold. For the verified dedup (the default), the pairs are between distinct texts with
    words (exact copies count once), and the recommended k is the smallest that keeps
    --target-recall of the near-duplicate pairs found within --max-k; the precision is weighted
    by documents. With --no-verify, for the fingerprint-only dedup: the pairs are between
    documents, and the recommended k is the largest whose precision within k reaches
    --target-precision. Reads INPUT twice: the second pass fetches the sampled documents' texts.
    """
    if no_verify and target_recall is not None:
        raise click.UsageError("--target-recall is the rule of the verified mode: drop it or --no-verify (which takes --target-precision)")
    if not no_verify and target_precision is not None:
        raise click.UsageError("--target-precision is the rule of --no-verify: add --no-verify, or give --target-recall")
    start = time.perf_counter()
    hasher = make_hasher(**hasher_flags)
    if plot is not None:
        if not plot.lower().endswith(".png"):
            raise click.BadParameter(f"{plot}: --plot writes a PNG; name it .png", param_hint="--plot")
        try:
            import matplotlib.figure  # noqa: F401
        except ImportError:
            raise MissingExtraError(f"--plot needs matplotlib: {PLOT_EXTRA}") from None
    inp = _open(input, sample, fmt, text_field, id_field, on_error, hasher, replayable=True)
    check_outputs([inp.path], [("--plot", plot)])
    with inp, Outputs() as outputs:
        try:
            plot_tmp = outputs.reserve(plot) if plot else None
        except OSError as err:
            raise _Failed(f"cannot write {plot}: {err.strerror or err}") from None
        first = FirstPass(hasher, None, threads)
        fps, _, nbytes = fingerprint_with_progress(inp, hasher, threads, as_json, first=first)
        if no_verify:
            sampled = sample_pairs(fps, max_k, pairs, seed, threads)
        else:
            sampled = sample_text_pairs(fps, first.keys, max_k, pairs, seed, threads)
        texts: dict[int, str] = {}
        progress = Progress(inp, f"texts of {len(sampled.a):,} pair{'' if len(sampled.a) == 1 else 's'}", as_json)
        inp.bytes_read = 0
        try:
            for _, _, chunk_texts in inp.replay(texts=sampled.rows):
                texts.update(chunk_texts)
                progress.update()
        finally:
            progress.close()
        result = measure(sampled, texts, hasher=hasher, ngram=jaccard_ngram, ngrams=jaccard_ngrams, threshold=threshold,
                         target_precision=target_precision, target_recall=target_recall, documents=len(fps), sample=pairs, seed=seed)
        if plot_tmp is not None:
            result.plot().savefig(plot_tmp, format="png", dpi=100)
        outputs.commit()
    seconds = time.perf_counter() - start
    if as_json:
        summary = {"input": inp.name, **result.as_dict(), "bytes": nbytes, "seconds": round(seconds, 4), "skipped": len(inp.errors),
                   "errors": [str(e) for e in inp.errors], "plot": plot}
        click.echo(json.dumps(summary, indent=2, ensure_ascii=False))
        return
    lines = [str(result), f"{inp.name}: {_size(nbytes)} in {seconds:.2f} s" + (f"; wrote {plot}" if plot else "")]
    _say("\n".join(lines + _errors_text(inp)))


@cli.command("plan")
@k_option
@click.option("--n", "n", type=click.IntRange(0, 2**63 - 1), default=1_000_000, show_default=True, help="Expected number of fingerprints.")
@click.option("--memory", type=click.IntRange(0, 2**63 - 1), default=None, help="Memory budget for the index, in bytes.")
def plan_command(k: int, n: int, memory: int | None) -> None:
    """Explain the table layout the planner picks for --k and --n."""
    try:
        chosen = make_plan(k, n, memory)
    except ValueError as err:
        raise click.UsageError(str(err)) from None
    click.echo(str(chosen))


@cli.command()
@click.argument("a")
@click.argument("b")
@click.option("--files", is_flag=True, help="A and B are files to read, not texts.")
@click.option("--limit", type=click.IntRange(min=1), default=15, show_default=True, help="Features to list in each group.")
@functools.partial(hasher_options, corpus=False)
def explain(a: str, b: str, files: bool, limit: int, **hasher_flags: Any) -> None:
    """Why two texts match or not: their distance, shared features and the ones that differ."""
    hasher = make_hasher(**hasher_flags)
    if files:
        texts = []
        for path in (a, b):
            try:
                with open(path, encoding="utf-8") as f:
                    texts.append(f.read())
            except OSError as err:
                raise InputError(path, f"cannot read: {err.strerror or err}") from None
            except UnicodeDecodeError as err:
                raise InputError(path, f"invalid UTF-8 at byte {err.start}") from None
        a, b = texts
    fa, fb = hasher.fingerprint(a), hasher.fingerprint(b)
    distance = bin(fa ^ fb).count("1")
    ca, cb = Counter(hasher.features(a)), Counter(hasher.features(b))
    shared, only_a, only_b = ca & cb, ca - cb, cb - ca
    bits = [i for i in range(64) if (fa ^ fb) >> i & 1]

    def listing(counter: Counter[str]) -> str:
        items = counter.most_common()
        text = ", ".join(f"{f!r}" + (f" x{c}" if c > 1 else "") for f, c in items[:limit])
        return text + (f", ... ({len(items) - limit} more)" if len(items) > limit else "")

    total = sum((ca | cb).values()) or 1
    click.echo(f"A {fa:016x}\nB {fb:016x}\ndistance {distance} (bits {', '.join(map(str, bits)) or 'none'})")
    click.echo(f"near-duplicates at k >= {distance}; the default k=3 {'matches' if distance <= 3 else 'does not match'}")
    click.echo(f"shared features ({sum(shared.values())} of {total}): {listing(shared) or 'none'}")
    click.echo(f"only in A ({sum(only_a.values())}): {listing(only_a) or 'none'}")
    click.echo(f"only in B ({sum(only_b.values())}): {listing(only_b) or 'none'}")


# -- entry point ---------------------------------------------------------------------------------


def _terminate(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    """Runs the command; returns its exit status (the console script exits with it)."""
    previous = signal.signal(signal.SIGTERM, _terminate) if hasattr(signal, "SIGTERM") else None
    stdio.guard_closed()
    try:
        result = cli.main(args=argv, prog_name="neardup", standalone_mode=False)
        return result if isinstance(result, int) else EXIT_OK
    except click.exceptions.Abort:
        click.echo("neardup: interrupted; no output written", err=True)
        return EXIT_INTERRUPTED
    except click.ClickException as err:
        err.show()
        return err.exit_code
    except InputError as err:
        click.echo(f"neardup: {err}", err=True)
        return EXIT_BAD_INPUT
    except MissingExtraError as err:
        click.echo(f"neardup: {err}", err=True)
        return EXIT_BAD_INPUT
    except _core.TooManyPairsError as err:
        click.echo(f"neardup: {err}", err=True)
        return EXIT_BAD_INPUT
    except MemoryError as err:
        click.echo(f"neardup: {err or 'out of memory'}; no output written", err=True)
        return EXIT_FAILED
    except UnicodeEncodeError as err:
        click.echo(f"neardup: cannot print {err.object[max(0, err.start - 20):err.end + 20]!r}: not valid Unicode "
                   "(a lone surrogate, which JSON's \\ud800 escape can hold); write the output to a .jsonl file", err=True)
        return EXIT_BAD_INPUT
    except OSError as err:
        where = f"{err.filename}: " if err.filename else ""
        click.echo(f"neardup: {where}{err.strerror or err}", err=True)
        return EXIT_FAILED
    except KeyboardInterrupt:
        click.echo("neardup: interrupted; no output written", err=True)
        return EXIT_INTERRUPTED
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
