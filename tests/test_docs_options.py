"""The README and the docs name the options the commands have: every option on a `neardup ...`
command line is one its --help shows, and no page names a deprecated option (those the commands
still take but hide, such as tune's --jaccard-ngram, now --shingle)."""

from __future__ import annotations

import re
from pathlib import Path

import click

from neardup.cli.app import cli

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def commands(group: click.Group = cli):
    for command in group.commands.values():
        yield command
        if isinstance(command, click.Group):
            yield from commands(command)


def options(command: click.Command, hidden: bool) -> set[str]:
    return {
        name
        for p in command.params
        if isinstance(p, click.Option) and p.hidden == hidden
        for name in p.opts + p.secondary_opts
        if name.startswith("--")
    }


def command_of(words: list[str]) -> click.Command:
    command: click.Command = cli
    for word in words:
        if not isinstance(command, click.Group) or word not in command.commands:
            break
        command = command.commands[word]
    return command


def command_lines(text: str) -> list[str]:
    """The `neardup ...` commands of a page: in its shell blocks and its code spans."""
    lines = [
        line
        for block in re.findall(r"```(?:bash|console|sh)\n(.*?)```", text, flags=re.S)
        for line in block.splitlines()
    ]
    lines += re.findall(r"`(neardup [^`]+)`", text)
    return [c for line in lines for c in re.findall(r"(?:^|[|;&(]\s*)neardup ([^|;&#)]*)", line)]


def test_every_option_of_a_command_line_in_the_docs_is_one_its_help_shows():
    seen, wrong = 0, []
    for page in PAGES:
        for line in command_lines(page.read_text(encoding="utf-8")):
            words = line.split()
            command = command_of(words)
            if isinstance(command, click.Group):
                continue
            shown = options(command, hidden=False) | {"--help"}
            for word in words:
                flag = word.split("=")[0]
                if flag.startswith("--"):
                    seen += 1
                    if flag not in shown:
                        wrong.append(f"{page.name}: neardup {command.name} {flag}: {line}")
    assert seen > 60 and wrong == []


def test_no_page_names_a_deprecated_option():
    deprecated = set().union(*(options(c, hidden=True) for c in commands()))
    assert {"--jaccard-ngram", "--jaccard-ngrams"} <= deprecated
    named = [
        (page.name, flag)
        for page in PAGES
        for flag in re.findall(r"`[^`]*?(--[a-z][a-z0-9-]*)", page.read_text(encoding="utf-8"))
        if flag in deprecated
    ]
    assert named == []
