"""`python -m neardup` and the ``neardup`` console script: the command, with SIGINT and SIGTERM
handled from its first moment. `python -m neardup dedup --sample --dry-run` deduplicates the
Debian sample that ships with neardup.

The command's own handlers (:func:`neardup.cli.main`) exist once its modules are imported, a few
tenths of a second in. Until then, a signal ends the process at once with the command's message
and status (nothing is written before the command runs); after the command returns, its status
stands whatever signal comes. Only the interpreter's own start is left to its defaults.
"""

from __future__ import annotations

import os
import signal
from typing import Any

_INTERRUPTED = b"neardup: interrupted; no output written\n"


def _before_start(signum: int, frame: Any) -> None:
    os.write(2, _INTERRUPTED)
    os._exit(130)


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
    return command()


if __name__ == "__main__":
    raise SystemExit(main())
