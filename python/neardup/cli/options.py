"""The options the commands share, and the hasher and input they make."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from typing import Any, Literal

import click

from ..hasher import Simhasher, Tokens, Weighting
from ..io import (
    AUTO,
    FORMATS,
    Input,
    InputError,
    open_input,
)
from ..lines import DEFAULT_MAX_RECORD_SIZE, parse_size
from ..normalize import UnicodeForm
from ..paths import note_input, special_kind
from ..pipeline import (
    CANDIDATES,
    DEFAULT_CANDIDATES,
    THRESHOLD,
    THRESHOLD_K,
    UNVERIFIED_K,
    check_candidates,
)
from ..validate import MAX_K

#: The columns of --clusters: each document's id, its cluster (the smallest row of its star), whether
#: it is kept, the id of the document kept in its place, their Jaccard and Hamming distance.
CLUSTER_COLUMNS = ["id", "cluster", "kept", "kept_id", "jaccard", "distance"]


#: Exit statuses (documented in the README).
EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130


SAMPLE = "debian-sample.jsonl.gz"


def sample_path() -> str:
    """The path of the Debian sample shipped with neardup."""
    return str(resources.files("neardup") / "data" / SAMPLE)


def _max_record_size(ctx: click.Context, param: click.Parameter, value: str) -> int:
    try:
        return parse_size(value)
    except ValueError as err:
        raise click.BadParameter(str(err), ctx, param) from None


def input_options(f: Callable[..., Any], bundled: bool = True) -> Callable[..., Any]:
    """INPUT and the options that read it; ``bundled`` adds --sample (the shipped Debian sample)."""
    options = [
        click.argument("input", required=False, metavar="[INPUT]"),
        *(
            [
                click.option(
                    "--sample",
                    is_flag=True,
                    help="Use the Debian sample that ships with neardup (3,000 documents) as INPUT.",
                )
            ]
            if bundled
            else []
        ),
        click.option(
            "--format",
            "fmt",
            type=click.Choice(FORMATS),
            help="Input format (default: from INPUT's extension; stdin: jsonl); for a folder or "
            "glob, its files of this format alone are read (the others are listed as skipped).",
        ),
        click.option(
            "--text-field",
            default="text",
            show_default=True,
            help="Field or column holding each document's text.",
        ),
        click.option(
            "--id-field",
            default=None,
            help="Field or column holding each document's id (default: 'id' if the first "
            "document has it, else document numbers from 0).",
        ),
        click.option(
            "--on-error",
            type=click.Choice(["stop", "skip"]),
            default="stop",
            show_default=True,
            help="On a bad record: stop with FILE:LINE and status 2, or skip it and list it in the report.",
        ),
        click.option(
            "--max-record-size",
            metavar="SIZE",
            default="64M",
            show_default=True,
            callback=_max_record_size,
            is_eager=True,
            help="The most bytes of one record (JSONL or CSV line, .txt file): a larger one is "
            "bad input, found without reading it whole. 64M, 1G or bytes.",
        ),
    ]

    @functools.wraps(f)
    def with_source(**kwargs: Any) -> Any:
        source = Source(
            input=kwargs.pop("input"),
            sample=kwargs.pop("sample", False),
            fmt=kwargs.pop("fmt"),
            text_field=kwargs.pop("text_field"),
            id_field=kwargs.pop("id_field"),
            on_error=kwargs.pop("on_error"),
            max_record_size=kwargs.pop("max_record_size"),
        )
        return f(source=source, **kwargs)

    command: Callable[..., Any] = with_source
    for option in reversed(options):
        command = option(command)
    return command


def hasher_options(f: Callable[..., Any], corpus: bool = True) -> Callable[..., Any]:
    """The Simhasher settings as flags. Without ``corpus`` (two texts, no input to read), the
    options that need a corpus are left out: idf weights (fitted on one) and --field."""
    weightings = ["tf", "binary", "idf"] if corpus else ["tf", "binary"]
    weighting_help = (
        "Weights of the fingerprint features; idf reads the input once more to count document "
        "frequencies."
        if corpus
        else "Weights of the fingerprint features."
    )
    options = [
        click.option(
            "--tokens",
            type=click.Choice(["word", "char"]),
            default="word",
            show_default=True,
            help="Fingerprint features: word or character n-grams.",
        ),
        click.option(
            "--ngram",
            type=click.IntRange(min=1),
            default=1,
            show_default=True,
            help="Words per fingerprint feature (characters with --tokens char).",
        ),
        click.option(
            "--weighting",
            type=click.Choice(weightings),
            default="tf",
            show_default=True,
            help=weighting_help,
        ),
        click.option(
            "--unicode-form",
            type=click.Choice(["NFKC", "NFC", "NFKD", "NFD", "none"]),
            default="NFKC",
            show_default=True,
            help="Unicode normalization.",
        ),
        click.option(
            "--casefold/--no-casefold",
            default=True,
            show_default=True,
            help="Fold case before building the fingerprint features and the shingles.",
        ),
        click.option(
            "--stopwords",
            default=None,
            metavar="english|FILE",
            help="Keep only the fingerprint features holding a stopword: the built-in English "
            "list, or a file of words, one a line.",
        ),
        *(
            [
                click.option(
                    "--field",
                    "fields",
                    multiple=True,
                    metavar="NAME=WEIGHT",
                    help="Fingerprint several weighted fields instead of --text-field "
                    "(repeat: --field title=2 --field body=1).",
                )
            ]
            if corpus
            else []
        ),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def threshold_option(**attrs: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """--threshold, the Jaccard of a near-duplicate, in (0, 1]; ``attrs`` give its help."""
    return click.option(
        "--threshold",
        type=click.FloatRange(0, 1, min_open=True),
        default=THRESHOLD,
        show_default=True,
        **attrs,
    )


def shingle_option(**attrs: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """--shingle, the words per shingle of the Jaccard; ``attrs`` give its help."""
    return click.option(
        "--shingle", type=click.IntRange(min=1), default=3, show_default=True, **attrs
    )


def candidates_option(f: Callable[..., Any]) -> Callable[..., Any]:
    """--candidates: how the pairs that the shingles' Jaccard decides are proposed."""
    return click.option(
        "--candidates",
        type=click.Choice(list(CANDIDATES)),
        default=None,
        help="How the pairs whose Jaccard decides are proposed: prefix (documents sharing one "
        "of the rarest word shingles of their sketches: every pair at --threshold, whatever "
        f"--k) or fingerprint (fingerprints within --k). Default: {DEFAULT_CANDIDATES}; without "
        "verification (--no-verify), fingerprints.",
    )(f)


def checked_k_options(f: Callable[..., Any], prefix: bool = True) -> Callable[..., Any]:
    """--k, and --threshold/--shingle/--no-verify: the rule of a near-duplicate, and the
    fingerprint radius of the modes that use one; without ``prefix`` (a command whose
    candidates are always fingerprints within --k), --k always applies."""
    f = shingle_option(help="Words per shingle of the Jaccard (--threshold).")(f)
    f = click.option(
        "--no-verify",
        is_flag=True,
        help="Take every pair within --k on its fingerprints alone, without comparing "
        f"shingles: faster, less precise (--k defaults to {UNVERIFIED_K}).",
    )(f)
    f = threshold_option(
        metavar="J",
        help="A candidate pair is a near-duplicate when the Jaccard similarity of its word "
        "shingles is J or above (0 < J <= 1): what decides a removal.",
    )(f)
    return click.option(
        "--k",
        "k",
        type=click.IntRange(0, MAX_K),
        default=None,
        help=f"Fingerprint radius, 0 to {MAX_K}: the largest Hamming distance of a candidate "
        + (
            "pair. Used only with --candidates fingerprint or --no-verify; prefix candidates (the "
            "default) find every pair at --threshold whatever --k, and a --k given then is noted "
            "on stderr and has no effect"
            if prefix
            else "pair: only pairs within it are listed (unlike dedup's default prefix "
            "candidates, which find every pair at --threshold)"
        )
        + f"  [default: {THRESHOLD_K}; {UNVERIFIED_K} with --no-verify]",
    )(f)


def note_unused_k(
    k: int | None, candidates: str | None, threshold: float | None, index: str | None = None
) -> None:
    """A one-line note on stderr when --k was given but the mode in force does not use it:
    prefix candidates with verification (a script that passes --k keeps working). Against the
    dedup index ``index``, ``candidates`` is the mode its search uses."""
    if k is None or threshold is None or check_candidates(candidates) != "prefix":
        return
    who = "prefix candidates (the default)" if index is None else f"{index}'s prefix postings"
    click.echo(
        f"neardup: note: --k {k} has no effect: {who} find every pair at Jaccard >= "
        f"{threshold:g} whatever k; --k applies with --candidates fingerprint"
        + (" or --no-verify" if index is None else ""),
        err=True,
    )


#: The options that shape the fingerprints alone: the Jaccard's shingles are --shingle words.
FINGERPRINT_ONLY = ("tokens", "ngram", "weighting", "stopwords")


def note_fingerprint_only(candidates: str | None, threshold: float | None, shingle: int) -> None:
    """A one-line note on stderr when fingerprint options were given (``FINGERPRINT_ONLY``) but
    prefix candidates decide, which do not read the fingerprints."""
    if threshold is None or check_candidates(candidates) != "prefix":
        return
    ctx = click.get_current_context()
    given = [
        f"--{name} {ctx.params[name]}"
        for name in FINGERPRINT_ONLY
        if ctx.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT
    ]
    if given:
        click.echo(
            f"neardup: note: {', '.join(given)} only change{'s' if len(given) == 1 else ''} the "
            "fingerprints, which prefix candidates (the default) do not read: the Jaccard of "
            f"word {shingle}-shingles decides; the fingerprint options apply with --candidates "
            "fingerprint or --no-verify",
            err=True,
        )


def _verification(threshold: float, no_verify: bool) -> float | None:
    """The threshold in force: None with --no-verify (which refuses an explicit --threshold or
    --shingle: no shingles are compared)."""
    if not no_verify:
        return threshold
    ctx = click.get_current_context()
    for name in ("threshold", "shingle"):
        if ctx.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT:
            raise click.UsageError(
                f"--no-verify takes pairs on fingerprints alone: drop --{name} or --no-verify"
            )
    return None


def k_option(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--k",
        "k",
        type=click.IntRange(0, MAX_K),
        default=UNVERIFIED_K,
        show_default=True,
        help=f"Largest Hamming distance of a near-duplicate pair (0 to {MAX_K}).",
    )(f)


def index_k_option(f: Callable[..., Any]) -> Callable[..., Any]:
    """--k of ``index build``, whose default depends on the kind of index."""
    return click.option(
        "--k",
        "k",
        type=click.IntRange(0, MAX_K),
        default=None,
        help=f"Fingerprint radius of the index, 0 to {MAX_K}: the largest Hamming distance of a "
        "match. In INDEX.ndx it is the radius of dedup --against with fingerprint candidates or "
        "--no-verify (prefix candidates, the default, find every pair at the threshold whatever "
        f"k)  [default: {THRESHOLD_K} for INDEX.ndx; {UNVERIFIED_K} for a fingerprint index]",
    )(f)


def run_options(f: Callable[..., Any]) -> Callable[..., Any]:
    f = click.option(
        "--threads",
        type=click.IntRange(min=1),
        default=None,
        help="Worker threads (default: every core).",
    )(f)
    f = click.option(
        "--quiet", "-q", is_flag=True, help="No progress bar and no report on the terminal."
    )(f)
    f = click.option(
        "--json", "as_json", is_flag=True, help="Print a machine-readable JSON report instead."
    )(f)
    return f


def read_text_file(path: str, limit: int = DEFAULT_MAX_RECORD_SIZE) -> str:
    """The UTF-8 text of a file named by an option (``--stopwords``, ``index query --file``,
    ``explain --files``), or FILE: what is wrong (status 2). At most ``limit`` bytes are read:
    a larger file (or ``/dev/zero``) is an error, not a memory blow-up; a FIFO or socket, which
    would wait for a writer, is refused before it is opened."""
    kind = special_kind(path, devices=False)
    if kind is not None:
        raise InputError(path, f"is {kind}, not a file: give a file")
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError as err:
        raise InputError(path, f"cannot read: {err.strerror or err}") from None
    if len(data) > limit:
        raise InputError(path, f"more than {limit:,} bytes, the most read of one such file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(path, f"invalid UTF-8 at byte {err.start}") from None


def make_hasher(
    tokens: Tokens,
    ngram: int,
    weighting: Weighting,
    unicode_form: UnicodeForm | Literal["none"],
    casefold: bool,
    stopwords: str | None,
    fields: tuple[str, ...] = (),
) -> Simhasher:
    words: Any = None
    if stopwords == "english":
        words = "english"
    elif stopwords is not None:
        words = [w.strip() for w in read_text_file(stopwords).splitlines() if w.strip()]
        note_input("--stopwords", stopwords)
    weights: dict[str, float] | None = None
    if fields:
        weights = {}
        for spec in fields:
            name, sep, weight = spec.partition("=")
            try:
                weights[name] = float(weight) if sep else 1.0
            except ValueError:
                raise click.BadParameter(
                    f"{spec!r}: expected NAME=WEIGHT, such as title=2", param_hint="--field"
                ) from None
    try:
        return Simhasher(
            tokens=tokens,
            ngram=ngram,
            weighting=weighting,
            unicode_form=None if unicode_form == "none" else unicode_form,
            casefold=casefold,
            stopwords=words,
            fields=weights,
        )
    except (TypeError, ValueError) as err:
        raise click.UsageError(str(err)) from None


@dataclass(frozen=True)
class Source:
    """Where a command's documents come from: INPUT (or --sample), --format, --text-field,
    --id-field, --on-error and --max-record-size, as :func:`input_options` collects them."""

    input: str | None
    sample: bool
    fmt: str | None
    text_field: str
    id_field: str | None
    on_error: str
    max_record_size: int = DEFAULT_MAX_RECORD_SIZE

    def open(self, hasher: Simhasher, replayable: bool, auto_id: bool = True) -> Input:
        """The :class:`neardup.io.Input` of this source for ``hasher``'s fields."""
        if self.sample and self.input is not None:
            raise click.UsageError("give INPUT or --sample, not both")
        input = sample_path() if self.sample else self.input
        if input is None:
            raise click.UsageError(
                "missing INPUT (a file, a folder or glob of files, or - for stdin; or --sample)"
            )
        inp = open_input(
            input,
            self.fmt,
            text_field=self.text_field,
            id_field=self.id_field if self.id_field is not None else (AUTO if auto_id else None),
            fields=list(hasher.fields) if hasher.fields else None,
            on_error=self.on_error,
            replayable=replayable,
            max_record_size=self.max_record_size,
        )
        return inp


def renamed_flag(old: str, new: str, old_value: Any, value: Any) -> Any:
    """The value of a flag given under its old name (with a note on stderr), else ``value``: an
    old spelling keeps working for one release."""
    if old_value is None:
        return value
    click.echo(
        f"neardup: {old} is deprecated and will be removed in the next release: use {new}", err=True
    )
    return old_value
