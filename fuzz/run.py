"""The fuzzing suite of tests/test_fuzz.py run for longer: ``python fuzz/run.py --minutes 10``.

Runs the suite again and again with many more examples per test (fresh random cases each run),
under ``prlimit --as=4G`` where prlimit exists, until the time is up; stops at the first failure
and prints it. No input may abort, be killed or leave a temporary file."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--examples", type=int, default=500, help="examples per test and run")
    args = parser.parse_args()
    limit = ["prlimit", "--as=4294967296"] if shutil.which("prlimit") else []
    env = {**os.environ, "NEARDUP_FUZZ_EXAMPLES": str(args.examples)}
    end = time.monotonic() + args.minutes * 60
    rounds = 0
    while time.monotonic() < end:
        rounds += 1
        done = subprocess.run(
            [
                *limit,
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-x",
                "-p",
                "no:cacheprovider",
                str(ROOT / "tests" / "test_fuzz.py"),
            ],
            cwd=ROOT,
            env=env,
        )
        if done.returncode != 0:
            print(f"fuzz: round {rounds} failed (status {done.returncode})", file=sys.stderr)
            return 1
    print(f"fuzz: {rounds} rounds of {args.examples} examples per test, no failure")
    return 0


if __name__ == "__main__":
    sys.exit(main())
