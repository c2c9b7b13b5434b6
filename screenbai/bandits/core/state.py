"""A policy's state as plain data (arrays, numbers, strings, lists, dicts): what ``Policy.state_dict``
writes and ``load_state_dict`` restores (policy.py), and what persistence.py saves to a file."""

from __future__ import annotations

import numpy as np


class StateVersionError(ValueError):
    """A saved state written by another version of the policy (other state fields): rebuild the policy
    from its outcomes instead (a campaign replays its log)."""


def encode_state(value):
    """``value`` as plain data: arrays are copied, tuples, bytes and non-string dict keys are tagged,
    objects with ``state_dict()`` (estimators, designs, inner policies) give their own state."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            raise TypeError("object arrays cannot be part of a policy state")
        return value.copy()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, tuple):
        return {"__tuple__": [encode_state(v) for v in value]}
    if isinstance(value, list):
        return [encode_state(v) for v in value]
    if isinstance(value, bytes):
        return {"__bytes__": value.hex()}
    if isinstance(value, dict):
        if all(isinstance(k, str) and not k.startswith("__") for k in value):
            return {k: encode_state(v) for k, v in value.items()}
        return {"__items__": [[encode_state(k), encode_state(v)] for k, v in value.items()]}
    if hasattr(value, "state_dict"):
        return {"__object__": encode_state(value.state_dict())}
    raise TypeError(f"cannot store a {type(value).__name__} in a policy state")


def decode_state(value, current=None):
    """Inverse of ``encode_state``; an ``__object__`` is loaded into ``current`` (the existing object)."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, list):
        return [decode_state(v) for v in value]
    if isinstance(value, dict):
        if "__tuple__" in value:
            return tuple(decode_state(v) for v in value["__tuple__"])
        if "__bytes__" in value:
            return bytes.fromhex(value["__bytes__"])
        if "__items__" in value:
            return {_hashable(decode_state(k)): decode_state(v) for k, v in value["__items__"]}
        if "__object__" in value:
            if current is None or not hasattr(current, "load_state_dict"):
                raise StateVersionError(  # e.g. a snapshot written before a rule was added: rebuild from outcomes
                    "the state holds an object the fresh policy does not have; were the parameters the same, and "
                    "the screenbai version?"
                )
            inner = value["__object__"]
            if isinstance(inner, dict) and all(isinstance(k, str) and not k.startswith("__") for k in inner):
                # fields of the object: one that is an object itself loads into the existing one
                inner = {k: decode_state(v, getattr(current, k, None) if _is_object(v) else None)
                         for k, v in inner.items()}
            else:
                inner = decode_state(inner)
            current.load_state_dict(inner)
            return current
        return {k: decode_state(v) for k, v in value.items()}
    return value


def _is_object(value) -> bool:
    return isinstance(value, dict) and "__object__" in value


def _hashable(key):
    return key.item() if isinstance(key, np.ndarray) and key.ndim == 0 else key
