"""``neardup tune``: measure precision and recall by distance and recommend k."""

from __future__ import annotations

import json
import time
from typing import Any

import click

from ..corpus import Progress, fingerprint_with_progress
from ..index import DEFAULT_MAX_PAIRS
from ..io import (
    MissingExtraError,
    Outputs,
)
from ..pair_sample import sample_mode_pairs
from ..paths import check_outputs
from ..pipeline import FirstPass, check_candidates
from ..threshold_table import THRESHOLDS
from ..tune import measure
from ..tune_result import PLOT_EXTRA, TARGET_PRECISION, TARGET_RECALL
from ..validate import MAX_K
from .app import cli
from .options import (
    Source,
    candidates_option,
    hasher_options,
    input_options,
    make_hasher,
    note_fingerprint_only,
    renamed_flag,
    shingle_option,
    threshold_option,
)
from .output import _errors_text, _Failed, _say, _size
from .tune_thresholds import tune_thresholds


def _ngram_list(ctx: click.Context, param: click.Parameter, value: str | None) -> list[int] | None:
    if value is None:
        return None
    try:
        sizes = [int(v) for v in value.split(",") if v.strip()]
    except ValueError:
        raise click.BadParameter(
            f"{value!r}: expected word counts separated by commas, such as 1,2,3"
        ) from None
    if not sizes or min(sizes) < 1:
        raise click.BadParameter(f"{value!r}: expected word counts of at least 1, such as 1,2,3")
    return sizes


class _TuneCommand(click.Command):
    """``tune``, whose ``--sample`` is the shipped corpus as for every command: ``--sample 200``
    (pairs per distance) gets a usage error that names ``--pairs``, not a puzzling extra argument."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        for flag, value in zip(args, args[1:]):
            if flag == "--sample" and value.isdigit():
                raise click.UsageError(
                    f"--sample takes no number: it uses the shipped Debian sample as INPUT; "
                    f"the pairs measured at each distance are --pairs {value}",
                    ctx,
                )
        return super().parse_args(ctx, args)


def _threshold_list(
    ctx: click.Context, param: click.Parameter, value: str | None
) -> list[float] | None:
    if value is None:
        return None
    try:
        values = [float(v) for v in value.split(",") if v.strip()]
    except ValueError:
        values = []
    if not values or not all(0 < v <= 1 for v in values):
        raise click.BadParameter(
            f"{value!r}: expected thresholds in (0, 1] separated by commas, such as 0.7,0.8,0.9"
        )
    return values


#: The options of the k tuning (fingerprint candidates, --no-verify), refused in prefix mode.
K_OPTIONS = ("max_k", "pairs", "target_recall", "target_precision", "shingles", "seed", "plot")


@cli.command("tune", cls=_TuneCommand)
@input_options
@candidates_option
@click.option(
    "--thresholds",
    default=",".join(f"{t:g}" for t in THRESHOLDS),
    show_default=True,
    callback=_threshold_list,
    help="Prefix candidates (the default): the thresholds of the table, separated by commas "
    "(--threshold is always one of them).",
)
@click.option(
    "--max-pairs",
    type=click.IntRange(min=0),
    default=DEFAULT_MAX_PAIRS,
    show_default=True,
    help="Prefix candidates: the most pairs compared at the lowest threshold; more stop the "
    "run with their number (0: no limit).",
)
@click.option(
    "--max-k",
    type=click.IntRange(0, MAX_K),
    default=8,
    show_default=True,
    help=f"Fingerprint candidates: largest Hamming distance measured (0 to {MAX_K}).",
)
@click.option(
    "--pairs",
    type=click.IntRange(min=1),
    default=200,
    show_default=True,
    help="Fingerprint candidates: pairs whose Jaccard is measured at each distance (at most).",
)
@click.option(
    "--no-verify",
    is_flag=True,
    help="Tune the fingerprint-only dedup (dedup --no-verify): the largest k whose precision "
    "reaches --target-precision.",
)
@click.option(
    "--target-recall",
    type=click.FloatRange(0, 1, min_open=True),
    default=None,
    help=f"Share of the near-duplicate pairs within --max-k that k must keep, in (0, 1]  [default: {TARGET_RECALL:g}]",
)
@click.option(
    "--target-precision",
    type=click.FloatRange(0, 1, min_open=True),
    default=None,
    help="With --no-verify: share of reported pairs that must be near-duplicates, in (0, 1]  "
    f"[default: {TARGET_PRECISION:g}]",
)
@threshold_option(
    help="Jaccard at and above which a pair is a near-duplicate, in (0, 1]: the threshold in use."
)
@shingle_option(help="Words per shingle of the Jaccard that defines a near-duplicate.")
@click.option(
    "--shingles",
    default="1,2,3",
    show_default=True,
    callback=_ngram_list,
    help="Fingerprint candidates: shingle sizes to recommend a k for as well, separated by commas.",
)
@click.option("--jaccard-ngram", type=click.IntRange(min=1), default=None, hidden=True)
@click.option("--jaccard-ngrams", default=None, hidden=True, callback=_ngram_list)
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Fingerprint candidates: seed of the sample of pairs.",
)
@click.option(
    "--plot",
    metavar="FILE.png",
    help="Fingerprint candidates: also draw precision and pair counts against k in a PNG "
    "(needs neardup[plot]).",
)
@hasher_options
@click.option(
    "--threads",
    type=click.IntRange(min=1),
    default=None,
    help="Worker threads (default: every core).",
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print the curve and the recommendation as JSON."
)
def tune_command(
    source: Source,
    candidates: str | None,
    thresholds: list[float],
    max_pairs: int,
    max_k: int,
    pairs: int,
    no_verify: bool,
    target_recall: float | None,
    target_precision: float | None,
    threshold: float,
    shingle: int,
    shingles: list[int],
    jaccard_ngram: int | None,
    jaccard_ngrams: list[int] | None,
    seed: int,
    plot: str | None,
    threads: int | None,
    as_json: bool,
    **hasher_flags: Any,
) -> None:
    """Which threshold (and k)? What dedup's default removes at each threshold, read from INPUT.

    Prefix candidates (dedup's default, whose --k plays no part): for each of --thresholds, the
    documents `neardup dedup --threshold T` removes from INPUT (read once; the stars taken at
    each threshold as dedup takes them), the clusters, and sample pairs just above the threshold
    (removed) and just below it (kept, removed by the next lower one); --threshold marks the row
    in use. Reads INPUT again for the texts of the sample pairs.

    --candidates fingerprint (or --no-verify): which k? Counts the pairs at each Hamming distance
    0..--max-k exactly and measures the word-shingle Jaccard of up to --pairs of them at each
    distance (seeded); a pair is a near-duplicate at Jaccard >= --threshold. For fingerprint
    candidates the pairs are between distinct texts with words (exact copies count once), and
    the recommended k is the smallest that keeps --target-recall of the near-duplicate pairs
    found within --max-k; the precision is weighted by documents. With --no-verify, for the
    fingerprint-only dedup: the pairs are between documents, and the recommended k is the
    largest whose precision within k reaches --target-precision. Reads INPUT twice: the second
    pass fetches the sampled documents' texts.
    """
    shingle = renamed_flag("--jaccard-ngram", "--shingle", jaccard_ngram, shingle)
    if not no_verify and check_candidates(candidates) == "prefix":
        ctx = click.get_current_context()
        for name in (*K_OPTIONS, "jaccard_ngrams"):
            if ctx.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT:
                flag = "--" + name.replace("_", "-")
                raise click.UsageError(
                    f"{flag} tunes k, which prefix candidates (the default) do not use: add "
                    f"--candidates fingerprint (or --no-verify) to tune k, or drop {flag}"
                )
        hasher = make_hasher(**hasher_flags)
        note_fingerprint_only(candidates, threshold, shingle)
        tune_thresholds(
            source, hasher, thresholds, threshold, shingle, max_pairs or None, threads, as_json
        )
        return
    ctx = click.get_current_context()
    for name in ("thresholds", "max_pairs"):
        if ctx.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT:
            raise click.UsageError(
                f"--{name.replace('_', '-')} goes with prefix candidates (the default): drop "
                "--candidates fingerprint and --no-verify, or drop it"
            )
    if no_verify and candidates == "prefix":
        raise click.UsageError(
            "--no-verify takes pairs on their fingerprints alone: drop --candidates prefix or "
            "--no-verify"
        )
    if no_verify and target_recall is not None:
        raise click.UsageError(
            "--target-recall is the rule of the verified mode: drop it or --no-verify (which takes --target-precision)"
        )
    if not no_verify and target_precision is not None:
        raise click.UsageError(
            "--target-precision is the rule of --no-verify: add --no-verify, or give --target-recall"
        )
    shingles = renamed_flag("--jaccard-ngrams", "--shingles", jaccard_ngrams, shingles)
    start = time.perf_counter()
    hasher = make_hasher(**hasher_flags)
    if plot is not None:
        if not plot.lower().endswith(".png"):
            raise click.BadParameter(
                f"{plot}: --plot writes a PNG; name it .png", param_hint="--plot"
            )
        try:
            import matplotlib.figure  # noqa: F401
        except ImportError:
            raise MissingExtraError(f"--plot needs matplotlib: {PLOT_EXTRA}") from None
    inp = source.open(hasher, replayable=True)
    check_outputs([inp.path], [("--plot", plot)])
    with inp, Outputs() as outputs:
        try:
            plot_tmp = outputs.reserve(plot) if plot else None
        except OSError as err:
            raise _Failed(f"cannot write {plot}: {err.strerror or err}") from None
        first = FirstPass(hasher, None, threads)
        fps, _, nbytes = fingerprint_with_progress(inp, hasher, threads, as_json, first=first)
        sampled = sample_mode_pairs(
            fps, first.keys, max_k, pairs, seed, threads, verify=not no_verify
        )
        texts: dict[int, str] = {}
        progress = Progress(
            inp, f"texts of {len(sampled.a):,} pair{'' if len(sampled.a) == 1 else 's'}", as_json
        )
        inp.bytes_read = 0
        try:
            for _, _, chunk_texts in inp.replay(texts=sampled.rows):
                texts.update(chunk_texts)
                progress.update()
        finally:
            progress.close()
        result = measure(
            sampled,
            texts,
            hasher=hasher,
            shingle=shingle,
            shingles=shingles,
            threshold=threshold,
            target_precision=target_precision,
            target_recall=target_recall,
            documents=len(fps),
            sample=pairs,
            seed=seed,
        )
        result.command = True  # its messages name --pairs, --max-k, ...
        if plot_tmp is not None:
            result.plot().savefig(plot_tmp, format="png", dpi=100)
        outputs.commit()
    seconds = time.perf_counter() - start
    if as_json:
        summary = {
            "input": inp.name,
            "candidates": None if no_verify else "fingerprint",
            **result.as_dict(),
            "bytes": nbytes,
            "seconds": round(seconds, 4),
            "skipped": len(inp.errors),
            "skipped_files": len(inp.left_out),
            "errors": [str(e) for e in inp.errors],
            "plot": plot,
        }
        click.echo(json.dumps(summary, indent=2, ensure_ascii=False))
        return
    lines = [
        str(result),
        f"{inp.name}: {_size(nbytes)} in {seconds:.2f} s" + (f"; wrote {plot}" if plot else ""),
    ]
    _say("\n".join(lines + _errors_text(inp)))
