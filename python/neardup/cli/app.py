"""The ``neardup`` command group and its entry point (also ``python -m neardup``)."""

from __future__ import annotations

import signal
import threading
from typing import Any

import click

from .. import _core, stdio
from ..io import (
    InputError,
    MissingExtraError,
    outputs,
)
from .options import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(_core.__version__, "--version", prog_name="neardup")
def cli() -> None:
    """Find near-duplicate documents: by default, the documents that share one of their rarest
    word shingles are compared, and those whose 3-word shingles have Jaccard >= 0.8 are
    near-duplicates (dedup --threshold). 64-bit simhash fingerprints within k bits propose the
    pairs instead with --candidates fingerprint, and decide alone with --no-verify.

    Inputs: JSONL (plain, .gz, .zst), Parquet, CSV/TSV, a folder or a quoted glob of such files
    and of .txt files (one document per file), each read by its name, or - for stdin. Start
    with the sample that ships with neardup:

        neardup dedup --sample --dry-run

    Exit status: 0 done, 1 failed (an output could not be written), 2 bad usage or bad input
    (FILE:LINE: what is wrong), 130 interrupted. A failed or interrupted job leaves no output;
    a Ctrl-C once the outputs are being renamed into place ends nothing.
    """


#: Set once SIGINT or SIGTERM has stopped the run.
_stopped = threading.Event()


def _signalled(signum: int, frame: Any) -> None:
    """SIGINT and SIGTERM: the run stops, unless it has started renaming its outputs into place
    (then it has succeeded, and goes on to its summary)."""
    if not outputs.renaming.is_set():
        _stopped.set()
        raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    """Runs the command; returns its exit status (the console script exits with it). A run
    stopped by SIGINT or SIGTERM before its outputs are renamed into place writes nothing and
    returns 130; one stopped after has written them all and returns 0."""
    outputs.renaming.clear()
    _stopped.clear()
    previous = {}
    if threading.current_thread() is threading.main_thread():
        for name in ("SIGINT", "SIGTERM"):
            number = getattr(signal, name, None)
            # A signal ignored when the command starts (a background job's SIGINT) stays so.
            if number is not None and signal.getsignal(number) is not signal.SIG_IGN:
                previous[number] = signal.signal(number, _signalled)
    stdio.guard_closed()
    try:
        return _run(argv)
    finally:
        # The command's own process (argv None) ignores a signal that comes once the command
        # has returned, to its exit: its status stands. A caller of main() with its own
        # arguments gets its handlers back.
        for number, handler in previous.items():
            signal.signal(number, signal.SIG_IGN if argv is None else handler)


def _run(argv: list[str] | None) -> int:
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
    except _core.IndexChangedError as err:
        # An index written into (not replaced by renaming) while the run read it.
        click.echo(f"neardup: {err}; no output written", err=True)
        return EXIT_FAILED
    except MemoryError as err:
        click.echo(f"neardup: {str(err) or 'out of memory'}; no output written", err=True)
        return EXIT_FAILED
    except UnicodeEncodeError as err:
        shown = err.object[max(0, err.start - 20) : err.end + 20]
        click.echo(
            f"neardup: cannot print {shown!r}: not valid Unicode (a lone surrogate, which JSON's "
            "\\ud800 escape can hold); write the output to a .jsonl file",
            err=True,
        )
        return EXIT_BAD_INPUT
    except OSError as err:
        where = f"{err.filename}: " if err.filename else ""
        click.echo(f"neardup: {where}{err.strerror or err}", err=True)
        return EXIT_FAILED
    except KeyboardInterrupt:
        click.echo("neardup: interrupted; no output written", err=True)
        return EXIT_INTERRUPTED
    except Exception:
        # The KeyboardInterrupt of a signal may surface as another error: Python 3.11 wraps
        # one raised while a class is made (an import under way) in a RuntimeError.
        if _stopped.is_set():
            click.echo("neardup: interrupted; no output written", err=True)
            return EXIT_INTERRUPTED
        raise
