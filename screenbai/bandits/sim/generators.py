"""Named synthetic instances from the papers, built reproducibly from a seed."""

from __future__ import annotations

import functools
import inspect
import math
import numbers
from collections.abc import Callable

import numpy as np
from scipy.special import expit

from screenbai.bandits.sim.instance import Instance

#: the arguments the builders share, by name: (whole number?, smallest value, is the smallest excluded?)
_ARGUMENTS = {
    "K": (True, 2, False),
    "d": (True, 1, False),
    "m": (True, 1, False),
    "seed": (True, 0, False),
    "sigma": (False, 0.0, True),
    "noise_var": (False, 0.0, True),
}


def _checked(builder: Callable[..., Instance]) -> Callable[..., Instance]:
    """Check a builder's arguments by name (sizes, seeds, noise scales; every number finite) before it runs,
    so that a bad value is named instead of failing inside numpy."""

    @functools.wraps(builder)
    def build(*args, **kwargs) -> Instance:
        bound = inspect.signature(builder).bind(*args, **kwargs)
        for key, value in bound.arguments.items():
            whole, low, strict = _ARGUMENTS.get(key, (False, None, False))
            ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
            ok = ok and (not whole or float(value).is_integer())
            ok = ok and (low is None or value > low or (value == low and not strict))
            if not ok:
                kind = "a whole number" if whole else "a finite number"
                bound_text = "" if low is None else f" {'>' if strict else '>='} {low:g}"
                raise ValueError(f"instance {builder.__name__!r}: {key} must be {kind}{bound_text}; got {value!r}")
        return builder(*args, **kwargs)

    return build


@_checked
def soare(d: int = 2, omega: float = 0.01, sigma: float = 1.0) -> Instance:
    """[SLM14]/[XHS18]: e_1..e_d plus (cos w, sin w, 0..), theta = 2 e_1, N(0, sigma^2) noise."""
    d = int(d)
    if d < 2:
        raise ValueError(f"the Soare instance needs d >= 2; got d = {d}")
    X = np.vstack([np.eye(d), np.r_[np.cos(omega), np.sin(omega), np.zeros(d - 2)]])
    theta = np.r_[2.0, np.zeros(d - 1)]
    return Instance(X, X @ theta, "gaussian", sigma, theta, name=f"soare(d={d},omega={omega})")


@_checked
def reda_classic(K: int = 4, m: int = 2, omega: float = np.pi / 6, sigma: float = 0.5) -> Instance:
    """[RKD21] classic instance: d = K - 1, theta = e_1, top m means 1, arm m+1 cos w.

    x_1 = e_1, not the misprinted 2 e_1: only e_1 gives the reported gaps.
    """
    K, m = int(K), int(m)
    if K < 3 or not 1 <= m <= K - 2:
        raise ValueError(f"reda_classic needs K >= 3 and 1 <= m <= K - 2; got K={K}, m={m}")
    d = K - 1
    E = np.eye(d)
    X = np.zeros((K, d))
    X[0] = E[0]
    for a in range(1, m):  # arms 2..m (1-based): e_1 + e_a
        X[a] = E[0] + E[a]
    X[m] = np.cos(omega) * E[0] + np.sin(omega) * E[m]
    for a in range(m + 1, K):  # arms m+2..K (1-based): e_{a-1}
        X[a] = E[a - 1]
    theta = E[0]
    return Instance(X, X @ theta, "gaussian", sigma, theta, name=f"reda_classic(K={K},m={m},omega={omega:.4g})",
                    meta={"m": m})  # its top m arms tie: a run for another m is named (runner.warn_if_tied)


@_checked
def canonical(d: int = 16, gap: float = 0.1, sigma: float = 1.0) -> Instance:
    """[XHS18] 7.1.2 / [AKG22] 8.2: arms e_1..e_d, theta = gap * e_1."""
    if int(d) < 2:
        raise ValueError(f"the canonical instance has d arms e_1..e_d and needs d >= 2; got d = {d}")
    X = np.eye(int(d))
    theta = np.r_[gap, np.zeros(int(d) - 1)]
    return Instance(X, X @ theta, "gaussian", sigma, theta, name=f"canonical(d={d},gap={gap})")


@_checked
def kw_synthetic(K: int = 50, d: int = 10, seed: int = 0) -> Instance:
    """[KW] synthetic logistic instance: theta ~ N(0, I_d), features U[-1, 1]^d, Bernoulli rewards."""
    rng = np.random.default_rng(seed)
    theta = rng.standard_normal(int(d))
    X = rng.uniform(-1.0, 1.0, size=(int(K), int(d)))
    return Instance(
        X, expit(X @ theta), "bernoulli", 0.5, theta, link="logistic", name=f"kw_synthetic(K={K},d={d},seed={seed})"
    )


@_checked
def random_linear(K: int = 400, d: int = 20, sigma: float = 0.5, seed: int = 0) -> Instance:
    """A random linear-Gaussian instance (LOWER_BOUND.md's benchmark): features U[-1, 1]^d, then theta ~ N(0, I_d)
    from the same generator, N(0, sigma^2) noise."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, size=(int(K), int(d)))
    theta = rng.standard_normal(int(d))
    name = f"random_linear(K={K},d={d},sigma={sigma},seed={seed})"
    return Instance(X, X @ theta, "gaussian", sigma, theta, name=name)


@_checked
def akg_logistic(K: int = 8, d: int = 5, seed: int = 0) -> Instance:
    """[AKG22] 8.4: features U[-0.5, 0.5]^d, theta ~ N(0, 3/d I), Bernoulli rewards."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-0.5, 0.5, size=(int(K), int(d)))
    theta = rng.normal(0.0, np.sqrt(3.0 / d), size=int(d))
    return Instance(
        X, expit(X @ theta), "bernoulli", 0.5, theta, link="logistic", name=f"akg_logistic(K={K},d={d},seed={seed})"
    )


@_checked
def akg_adaptive(K: int = 8, omega: float = 0.1, noise_var: float = 10.0) -> Instance:
    """[AKG22] 8.1: e_1..e_d plus (cos w, sin w, 0..), d = K - 1, theta = e_1, N(0, 10) noise (variance)."""
    if int(K) < 3:
        raise ValueError(f"akg_adaptive has d = K - 1 >= 2 dimensions and needs K >= 3; got K = {K}")
    d = int(K) - 1
    X = np.vstack([np.eye(d), np.r_[np.cos(omega), np.sin(omega), np.zeros(d - 2)]])
    theta = np.r_[1.0, np.zeros(d - 1)]
    return Instance(X, X @ theta, "gaussian", float(np.sqrt(noise_var)), theta, name=f"akg_adaptive(K={K})")


@_checked
def akg_sphere(K: int = 32, d: int = 10, seed: int = 0, noise_var: float = 1.0) -> Instance:
    """[AKG22] 8.3: arms uniform on the unit sphere; theta = x_i + 0.01 (x_j - x_i), (i, j) closest pair."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((int(K), int(d)))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    D = np.linalg.norm(X[:, None, :] - X[None, :, :], axis=2) + np.eye(int(K)) * 1e9
    i, j = np.unravel_index(np.argmin(D), D.shape)
    theta = X[i] + 0.01 * (X[j] - X[i])
    return Instance(
        X, X @ theta, "gaussian", float(np.sqrt(noise_var)), theta, name=f"akg_sphere(K={K},d={d},seed={seed})"
    )


NAMED: dict[str, Callable[..., Instance]] = {
    "soare": soare,
    "reda_classic": reda_classic,
    "canonical": canonical,
    "kw_synthetic": kw_synthetic,
    "random_linear": random_linear,
    "akg_logistic": akg_logistic,
    "akg_adaptive": akg_adaptive,
    "akg_sphere": akg_sphere,
}


def parse_instance(spec: str) -> Instance:
    """Build a named instance from 'name:key=value,key=value' (e.g. 'soare:d=5')."""
    name, _, rest = spec.partition(":")
    if name not in NAMED:
        raise ValueError(f"unknown instance {name!r}; available: {', '.join(NAMED)}")
    builder = NAMED[name]
    accepted = inspect.signature(builder).parameters
    kwargs = {}
    for part in filter(None, rest.split(",")):
        key, eq, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if not eq:
            example = f"{name}:{next(iter(accepted))}=..."
            raise ValueError(f"instance parameter {part!r} must look like key=value (e.g. {example})")
        if key not in accepted:
            raise ValueError(f"instance {name!r} has no parameter {key!r}; parameters: {', '.join(accepted)}")
        kwargs[key] = _number(value)
        default = accepted[key].default
        whole = isinstance(default, int)
        if isinstance(default, (int, float)) and (
            not isinstance(kwargs[key], (int, float)) or (whole and not float(kwargs[key]).is_integer())
        ):
            kind = "a whole number" if whole else "a number"
            raise ValueError(f"instance {name!r}: parameter {key} must be {kind} (default {default}); got {value!r}")
    return builder(**kwargs)


def _number(text: str):
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    if text.lower() in ("pi/6", "pi/3"):
        return np.pi / (6 if text.endswith("6") else 3)
    return text
