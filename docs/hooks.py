"""mkdocs hook: the CLI reference page is generated from archsim's own argparse parser at build
time, so it cannot drift from the code. ``cli.md`` holds the marker ``<!-- archsim-cli -->``."""

from __future__ import annotations

import argparse
import os

MARKER = "<!-- archsim-cli -->"
WIDTH = "100"  # help text wrap width: fixed, so the page does not depend on the terminal


def _parsers(parser: argparse.ArgumentParser, prefix: str):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield f"{prefix} {name}", child
                yield from _parsers(child, f"{prefix} {name}")


def cli_reference() -> str:
    """Markdown: ``archsim --help`` and every sub-command's (nested ones too) help, as printed."""
    from archsim.cli import build_parser

    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    try:
        parser = build_parser()
        parts = ["## archsim", "", "```text", parser.format_help().rstrip(), "```", ""]
        for name, child in _parsers(parser, "archsim"):
            level = "#" * (name.count(" ") + 1)
            parts += [f"{level} {name}", "", "```text", child.format_help().rstrip(), "```", ""]
    finally:
        if previous is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = previous
    return "\n".join(parts)


def on_page_markdown(markdown: str, page, config, files) -> str:  # mkdocs hook signature
    if MARKER in markdown:
        return markdown.replace(MARKER, cli_reference())
    return markdown
