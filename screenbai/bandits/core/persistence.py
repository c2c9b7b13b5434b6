"""A policy in one file: ``save_policy`` / ``load_policy`` write and rebuild a registered policy (its
algorithm, parameters and whole state) as one ``.npz`` holding arrays and a JSON document (no pickle);
``write_document`` / ``read_document`` are the file format, for any plain data (state.py)."""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path
from typing import Any, cast

import numpy as np

from screenbai.bandits.core.params import keep_saved_defaults, unnamed_defaults
from screenbai.bandits.core.policy import Policy
from screenbai.bandits.core.registry import get, name_of
from screenbai.bandits.core.state import decode_state, encode_state
from screenbai.bandits.numerics.checks import check_features

_FORMAT = "screenbai-policy"


def _split_arrays(value, arrays: dict):
    """Replace every array in a plain-data state by a reference into ``arrays`` (for JSON)."""
    if isinstance(value, np.ndarray):
        key = f"a{len(arrays)}"
        arrays[key] = value
        return {"__array__": key}
    if isinstance(value, dict):
        return {k: _split_arrays(v, arrays) for k, v in value.items()}
    if isinstance(value, list):
        return [_split_arrays(v, arrays) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return {"__float__": repr(value)}
    return value


def _join_arrays(value, arrays):
    if isinstance(value, dict):
        if "__array__" in value:
            return np.asarray(arrays[value["__array__"]])
        if "__float__" in value:
            return float(value["__float__"])
        return {k: _join_arrays(v, arrays) for k, v in value.items()}
    if isinstance(value, list):
        return [_join_arrays(v, arrays) for v in value]
    return value


def _features_digest(X: np.ndarray) -> str:
    return hashlib.sha1(np.ascontiguousarray(X).tobytes() + repr(X.shape).encode()).hexdigest()


def save_policy(policy: Policy, path) -> Path:
    """Write a registered policy (algorithm, parameters, whole state) to one ``.npz`` file.

    The file holds the arrays and a JSON document (no pickle); the write is atomic. The defaults of
    the parameters not given are stored too: ``load_policy`` keeps them (with a warning) if a later
    release changes one, so a screen goes on with the algorithm it started with.
    """
    doc = {
        "format": _FORMAT,
        "version": 1,
        "algorithm": name_of(policy),
        "params": encode_state(policy._init_kwargs),
        # a later release may change a default: the loaded policy keeps these
        "defaults": encode_state(unnamed_defaults(type(policy), policy._init_kwargs)),
        "features_sha1": _features_digest(policy.X),
        "state": policy.state_dict(),
    }
    return write_document(path, doc)


def write_document(path, doc: dict) -> Path:
    """Write plain data (``encode_state`` output) as one ``.npz``: its arrays plus a JSON document
    holding everything else (no pickle). The write is atomic (a temporary file, then a rename)."""
    arrays: dict[str, np.ndarray] = {}
    doc = _split_arrays(doc, arrays)
    path = Path(path)
    if path.suffix != ".npz":
        path = path.with_name(path.name + ".npz")
    if not path.parent.is_dir():
        raise FileNotFoundError(f"cannot write {path}: folder {path.parent} does not exist; create it first")
    tmp = path.with_name(path.name + ".tmp.npz")
    with open(tmp, "wb") as fh:
        np.savez(fh, **cast(dict[str, Any], {"__document__": np.array(json.dumps(doc)), **arrays}))
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    return path


def read_document(path, fmt: str) -> dict:
    """Read a file written by ``write_document`` whose ``format`` is ``fmt``."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in npz.files}
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: not a {fmt} file ({exc})") from None
    if "__document__" not in arrays:
        raise ValueError(f"{path}: not a {fmt} file (no document inside)")
    doc = _join_arrays(json.loads(str(arrays.pop("__document__"))), arrays)
    if not isinstance(doc, dict) or doc.get("format") != fmt:
        raise ValueError(f"{path}: not a {fmt} file (format {doc.get('format') if isinstance(doc, dict) else None!r})")
    return doc


def load_policy(path, features) -> Policy:
    """Rebuild a policy written by ``save_policy`` for the same feature matrix."""
    doc = read_document(path, _FORMAT)
    X = check_features(features)
    if _features_digest(X) != doc["features_sha1"]:
        raise ValueError(
            f"{path}: the features differ from those the policy was saved with (shape now {X.shape}); "
            "load it with the same feature matrix"
        )
    cls = get(doc["algorithm"]).cls
    params = decode_state(doc["params"])
    params.update(keep_saved_defaults(cls, decode_state(doc.get("defaults", {})), str(path)))
    policy = cls(X, **params)
    policy.load_state_dict(doc["state"])
    return policy
