"""`python -m neardup`: the `neardup` command. `python -m neardup dedup --sample --dry-run`
deduplicates the Debian sample that ships with neardup."""

from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())
