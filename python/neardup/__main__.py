"""`python -m neardup` and the ``neardup`` console script: the command, with SIGINT and SIGTERM
handled from its first moment. `python -m neardup dedup --sample --dry-run` deduplicates the
Debian sample that ships with neardup.

The command's own handlers (:func:`neardup.cli.main`) exist once its modules are imported, a few
tenths of a second in. Until then, a signal ends the process at once with the command's message
and status (nothing is written before the command runs); after the command returns, its status
stands whatever signal comes. Only the interpreter's own start is left to its defaults.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from typing import Any

_INTERRUPTED = b"neardup: interrupted; no output written\n"
#: The status of an interrupted run.
_STOPPED = 130


def _before_start(signum: int, frame: Any) -> None:
    os.write(2, _INTERRUPTED)
    os._exit(_STOPPED)


def main() -> int:
    """Runs the ``neardup`` command on ``sys.argv``; returns its exit status."""
    held = [
        number
        for number in (signal.SIGINT, signal.SIGTERM)
        # A signal ignored when the command starts (a background job's SIGINT) stays so.
        if signal.getsignal(number) is not signal.SIG_IGN
    ]
    for number in held:
        signal.signal(number, _before_start)
    from .cli import main as command

    # Its handlers replace these, and once it returns it ignores both signals to the exit.
    status = command()
    if status == _STOPPED:
        # An interrupted run has said so and removed what it wrote. It ends now: the
        # interpreter's own end would end it by SIGINT instead once a KeyboardInterrupt has
        # passed through some C code (2 in 12 interrupted Dask runs, after their message).
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(status)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
