"""Argument parsing shared by both command lines, ``screenbai`` (cli.py) and ``screenbai campaign``
(campaign/cli.py): the --param KEY=VALUE options and the help formatter."""

from __future__ import annotations

import argparse
import json


def parse_value(text: str):
    """Parse a --param value: JSON when it parses (numbers, true/false, lists), else a string."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def parse_params(pairs: list[str]) -> dict:
    """The --param KEY=VALUE options as a dict (each key once; values as ``parse_value`` reads them). A malformed
    one is a usage error: ValueError, which both command lines print as "error: ..." and exit with 2 (a bad value
    of a well-formed one, m=abc, is the algorithm's to name, as a ValueError too)."""
    params: dict[str, object] = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        if not eq or not key.strip():
            raise ValueError(
                f"--param {pair!r}: expected KEY=VALUE, the setting's name, '=' and its value (e.g. --param m=2 or "
                "--param delta=0.05; `screenbai algorithms` lists each algorithm's settings)"
            )
        if key.strip() in params:  # silently keeping the last one ran with a value the user may not have meant
            raise ValueError(
                f"--param {key.strip()} is given twice ({key.strip()}={params[key.strip()]!r} and {pair!r}); "
                "give each parameter once"
            )
        params[key.strip()] = parse_value(value.strip())
    return params


class HelpFormatter(argparse.HelpFormatter):
    """Each option's default said once: appended unless the help already says it, or there is none to say."""

    def _get_help_string(self, action):
        text = action.help or ""
        nothing = action.default is None or action.default is False or action.default in ([], "") \
            or action.default == argparse.SUPPRESS
        if "default" in text or not action.option_strings or nothing:
            return text
        return text + " (default: %(default)s)"
