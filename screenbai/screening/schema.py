"""The workflow config against its schema (workflow/schemas/config.schema.yaml), in words that name the key,
the bad value and the fix.

jsonschema's own messages do not: a typo inside a ``oneOf`` (``offline_fallback: null`` or a source) reads
"... is not valid under any of the given schemas" with the whole mapping, and ``threshold_nM: 1e6`` (text
to PyYAML) reads "'1e6' is not of type 'number'".  Here a ``oneOf``/``anyOf`` failure is explained by the
alternative the value was meant for: the one of the value's type, else each alternative in turn.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["config_errors"]

_TYPE_WORDS = {"integer": "an integer", "number": "a number", "string": "text", "boolean": "true or false",
               "array": "a list", "object": "a mapping", "null": "null"}


def config_errors(config: Mapping[str, Any], schema: Mapping[str, Any] | str | os.PathLike) -> list[str]:
    """One sentence per place where ``config`` breaks ``schema`` (a mapping or a YAML file), sorted by key;
    empty when the config is valid."""
    import jsonschema
    import yaml

    root: Mapping[str, Any]
    if isinstance(schema, Mapping):
        root = schema
    else:
        with open(schema, encoding="utf-8") as fh:
            root = yaml.safe_load(fh)
    validator = jsonschema.Draft202012Validator(root)
    out: list[str] = []
    for error in sorted(validator.iter_errors(config), key=lambda e: [str(p) for p in e.absolute_path]):
        for sentence in _explain(error, config, root):
            if sentence not in out:
                out.append(sentence)
    return out


def _key(path: Iterable[Any]) -> str:
    """``screen.studies.vary_d.K[0]``; the top level is "the config"."""
    text = ""
    for p in path:
        text += f"[{p}]" if isinstance(p, int) else (f".{p}" if text else str(p))
    return text or "the config"


def _kinds(schema: Any) -> list[str]:
    kinds = schema.get("type", []) if isinstance(schema, Mapping) else []
    return [kinds] if isinstance(kinds, str) else list(kinds)


def _typed(value: Any, kinds: list[str]) -> bool:
    """Whether ``value`` has one of the JSON types ``kinds``."""
    python = {"string": str, "boolean": bool, "array": list, "object": Mapping, "null": type(None)}
    for kind in kinds:
        if kind in ("integer", "number"):
            numeric = int if kind == "integer" else (int, float)
            if isinstance(value, numeric) and not isinstance(value, bool):
                return True
        elif isinstance(value, python[kind]):
            return True
    return False


def _number_hint(key: str, value: Any, kinds: list[str]) -> str:
    """For a number PyYAML read as text (``1e6``, ``"3"``): how to write it so that YAML reads a number."""
    if not isinstance(value, str) or not {"number", "integer"} & set(kinds):
        return ""
    try:
        number = float(value)
    except ValueError:
        return ""
    if "e" in value.lower():  # PyYAML (YAML 1.1) reads a float only with a dot and a signed exponent
        mantissa, exponent = f"{number:e}".split("e")
        text = f"{float(mantissa)!r}e{'-' if int(exponent) < 0 else '+'}{abs(int(exponent))}"
    else:
        text = str(int(number)) if number.is_integer() else repr(number)
    return f"; YAML reads it as text: write {key.rsplit('.', 1)[-1]}: {text}, without quotes"


_BOUNDS = {"minimum": "at least", "exclusiveMinimum": "above", "maximum": "at most", "exclusiveMaximum": "below"}


def _explain(error: Any, config: Mapping[str, Any], root: Mapping[str, Any]) -> list[str]:
    key, value, kind = _key(error.absolute_path), error.instance, error.validator
    if kind in ("oneOf", "anyOf") and error.context:
        return _explain_alternatives(error, config, root)
    if "propertyNames" in error.schema_path:  # a key another kind of source uses (path with kind: chembl)
        parent = _at(config, error.absolute_path)
        of_kind = f" with kind: {parent.get('kind')}" if isinstance(parent, Mapping) and "kind" in parent else ""
        return [f"{key}: key {value!r} does not apply{of_kind}; remove it"]
    if kind == "additionalProperties":
        allowed = sorted(error.schema.get("properties") or {})
        out = []
        for name in sorted(set(value) - set(allowed)) if isinstance(value, Mapping) else []:
            close = difflib.get_close_matches(str(name), allowed, n=1)
            out.append(f"{key}: unknown key {name!r}" + (f"; did you mean {close[0]!r}?" if close else "")
                       + f" (keys allowed here: {', '.join(allowed)})")
        return out or [f"{key}: {error.message}"]
    if kind == "required":
        # a key one kind of source needs (target_chembl_id with kind: chembl)
        needed = f" (needed with kind: {value['kind']})" if "then" in error.schema_path and "kind" in value else ""
        return [f"{key}: missing key {n!r}{needed}" for n in error.validator_value if n not in value]
    if kind == "type":
        kinds = _kinds(error.schema)
        want = " or ".join(_TYPE_WORDS.get(k, k) for k in kinds)
        return [f"{key} = {value!r} is not {want}{_number_hint(key, value, kinds)}"]
    if kind == "enum":
        return [f"{key} = {value!r}: choose one of {', '.join(map(str, error.validator_value))}"]
    if kind in _BOUNDS:
        return [f"{key} = {value!r}: must be {_BOUNDS[kind]} {error.validator_value}"]
    if kind == "pattern":
        return [f"{key} = {value!r} does not match the pattern {error.validator_value}"]
    return [f"{key} = {value!r}: {error.message}"]


def _at(config: Any, path: Iterable[Any]) -> Any:
    for p in path:
        config = config[p]
    return config


def _explain_alternatives(error: Any, config: Mapping[str, Any], root: Mapping[str, Any]) -> list[str]:
    """A value matching none of ``oneOf``/``anyOf``: the errors of the alternatives of its type (a mapping
    given to ``null`` or a source is a source with a mistake; [-5, 8] given to an integer or a list of
    integers is a list); if none has its type, what is allowed."""
    alternatives = [_resolve(alt, root) for alt in error.validator_value]
    of_its_type = {i for i, alt in enumerate(alternatives) if _typed(error.instance, _kinds(alt))}
    subs = [sub for sub in error.context if sub.relative_schema_path[0] in of_its_type]
    if subs:
        return [sentence for sub in subs for sentence in _explain(sub, config, root)]
    key = _key(error.absolute_path)
    allowed = " or ".join(_describe(alt) for alt in alternatives)
    kinds = [k for alt in alternatives for k in _kinds(alt)]
    return [f"{key} = {error.instance!r} is not allowed: give {allowed}{_number_hint(key, error.instance, kinds)}"]


def _resolve(alt: Any, root: Mapping[str, Any]) -> Any:
    """A ``$ref`` alternative's schema (local references only: the config schema has no other)."""
    ref = alt.get("$ref") if isinstance(alt, Mapping) else None
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return alt
    node: Any = root
    for part in ref[2:].split("/"):
        node = node.get(part, {}) if isinstance(node, Mapping) else {}
    return node


_PLURALS = {"integer": "integers", "number": "numbers", "string": "texts"}


def _describe(schema: Any) -> str:
    """``an integer of at least 2``, ``a list of integers (each at least 2)``, ``null``."""
    words = []
    for kind in _kinds(schema):
        items = schema.get("items") if kind == "array" else None
        if isinstance(items, Mapping) and _kinds(items):
            text = "a list of " + " or ".join(_PLURALS.get(k, k) for k in _kinds(items))
            text += f" (each at least {items['minimum']})" if "minimum" in items else ""
        else:
            text = _TYPE_WORDS.get(kind, kind) + (f" of at least {schema['minimum']}" if "minimum" in schema else "")
        words.append(text)
    return " or ".join(words) or "a valid value"
