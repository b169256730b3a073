"""``neardup plan``: the tables an index would build."""

from __future__ import annotations

import click

from ..index import plan as make_plan
from ..validate import DEFAULT_EXPECTED_SIZE
from .app import cli
from .options import k_option


@cli.command("plan")
@k_option
@click.option(
    "--n",
    "n",
    type=click.IntRange(0, 2**63 - 1),
    default=DEFAULT_EXPECTED_SIZE,
    show_default=True,
    help="Expected number of fingerprints.",
)
@click.option(
    "--memory",
    type=click.IntRange(0, 2**63 - 1),
    default=None,
    help="Memory budget for the index, in bytes.",
)
def plan_command(k: int, n: int, memory: int | None) -> None:
    """Explain the table layout the planner picks for --k and --n."""
    try:
        chosen = make_plan(k, n, memory)
    except ValueError as err:
        raise click.UsageError(str(err)) from None
    click.echo(str(chosen))
