"""What the API parity tests share (tests/test_api_parity*.py): the command's printed output as the reference,
read at full precision, and its one-line refusals."""

from __future__ import annotations

import io
import json
import warnings
from collections.abc import Callable

import pandas as pd

from archsim import cli
from archsim.errors import InputError
from archsim.json_text import dumps

TOPOLOGY = "layerpipe_sample"
MODEL = "configs/transformers/gpt_1024h_24l.json"
NODE = "configs/clusters/a100_node.toml"


def cli_csv(argv: list[str], capsys) -> pd.DataFrame:
    """The command's per-layer rows (its TOTAL row dropped) as the CSV it prints."""
    capsys.readouterr()
    assert cli.main([*argv, "--format", "csv"]) == 0
    frame = pd.read_csv(io.StringIO(capsys.readouterr().out), comment="#")
    return frame[frame.layer != "TOTAL"].reset_index(drop=True)


def same_numbers(api: pd.DataFrame, printed: pd.DataFrame) -> None:
    """Every column the function returns, cell for cell, in the command's output."""
    assert list(api.columns) == list(printed.columns[: len(api.columns)])
    for column in api.columns:
        assert api[column].tolist() == printed[column].tolist(), column


def as_flag(refused: InputError) -> str:
    """The API's line with its field label spelled as the command spells it (``field 'sram_kb'`` → ``argument
    --sram-kb``, as argparse names a flag)."""
    field = refused.where.field or ""
    return str(refused).replace(f"field '{field.replace('-', '_')}'", f"argument --{field}", 1)


def cli_error(argv: list[str], capsys) -> str:
    capsys.readouterr()
    assert cli.main(argv) == 2
    return capsys.readouterr().err.strip()


def as_printed(document: dict) -> dict:
    """The API's document as the command's JSON writes it (NaN as null)."""
    return json.loads(dumps(document))


def cli_json(argv: list[str], capsys) -> dict:
    capsys.readouterr()
    assert cli.main([*argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def same_json(argv: list[str], function: Callable, keywords: dict, capsys) -> tuple:
    """The function's result (its notes silenced) and the command's JSON (the reference), after asserting the
    result's ``to_dict()`` is that JSON at full precision."""
    printed = cli_json(argv, capsys)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = function(**keywords)
    assert as_printed(result.to_dict()) == printed
    return result, printed


def annotation_text(annotation: object) -> str:
    """A parameter's annotation as the types it names: the string ``from __future__ import annotations`` leaves, each
    alias of :mod:`archsim.count_types` and :mod:`archsim.api_types` (``Count``) spelt out as the union it stands for, so a test reads what a type
    checker accepts (``"str" in annotation_text(...)``: text is taken)."""
    import re

    from archsim import api_types, count_types

    text = str(annotation)
    for home, name in ((count_types, "Counts"), (count_types, "Count"), (count_types, "Number"),  # Counts first
                       (api_types, "Model"), (api_types, "Cluster"), (api_types, "SweepSpecs")):  # it names Count
        text = re.sub(rf"\b{name}\b", f"({getattr(home, name)})", text)
    return text
