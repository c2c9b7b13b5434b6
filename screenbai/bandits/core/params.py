"""Each algorithm declares its parameters once: type, default, allowed values and a one-line help.

A policy class declares each parameter as an annotated class attribute, like a dataclass field::

    class GLGapE(Policy):
        epsilon: float = param(0.1, NONNEGATIVE, "tolerance of the answer")
        delta: float = DELTA                       # the shared vocabulary below
        budget: int = required(TEST_COUNT, "total number of pulls")
        m: int = pinned(1)                         # an inherited parameter this class fixes

Fields are inherited and a subclass may redeclare one (a new default: ``like(SIGMA, default=1.0)``;
pinned: no longer accepted).  ``Policy``'s base is a ``dataclass_transform``: mypy, IDEs and
``help()`` see the constructor ``GLGapE(features, *, epsilon: float = 0.1, ...)`` (``declare``
builds it at run time, ``__signature__``), and each class gets a frozen
dataclass of its parameters, ``GLGapE.Params`` (the validated values: ``policy.params``).  From
that one declaration come the constructor's validation (``resolve``), the registry's defaults, the
output of ``screenbai algorithms`` and the workflow's up-front check of a config (``check``).  Old
names listed in ``renamed`` keep working for one release, with a ``RenamedParameterWarning`` (a
``DeprecationWarning``) naming the new one.

Constraints that need the features (e.g. m < K) are checked by the constructor itself.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import inspect
import math
import numbers
import os
import sys
import warnings
from dataclasses import dataclass, replace
from types import FrameType
from typing import Any, Literal

from screenbai import ScreenbaiWarning

_HERE = os.path.dirname(os.path.abspath(__file__))

# A finite default cap: 10^6 tests is more than any wet-lab screen runs, and a simulated run reaches
# it in seconds to a minute.  A run that needs more (tied best arms with epsilon = 0, or the Soare
# instance at omega = 0.01, which reproduce_soare.py runs with 10^8) is reported as hitting the cap.
DEFAULT_MAX_SAMPLES = 10**6

REQUIRED = object()  # default of a parameter the caller must give


class Constraint:
    def accepts(self, value: Any) -> bool:  # pragma: no cover - interface
        raise NotImplementedError

    def convert(self, value: Any) -> Any:
        return value

    def describe(self) -> str:  # pragma: no cover - interface
        raise NotImplementedError


@dataclass(frozen=True)
class Interval(Constraint):
    """A real (or integer) number in [low, high]; ``open`` lists the excluded ends ("low", "high")."""

    low: float | None = None
    high: float | None = None
    integer: bool = False
    open: tuple[str, ...] = ()

    def accepts(self, value: Any) -> bool:
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            return False
        v = float(value)
        if not math.isfinite(v) or (self.integer and v != int(v)):
            return False
        if self.low is not None and (v < self.low or ("low" in self.open and v == self.low)):
            return False
        return not (self.high is not None and (v > self.high or ("high" in self.open and v == self.high)))

    def convert(self, value: Any) -> Any:
        return int(value) if self.integer else float(value)

    def describe(self) -> str:
        kind = "an integer" if self.integer else "a number"
        if self.low is None and self.high is None:
            return kind
        if self.high is None:
            return f"{kind} {'>' if 'low' in self.open else '>='} {self.low:g}"
        if self.low is None:
            return f"{kind} {'<' if 'high' in self.open else '<='} {self.high:g}"
        left = "(" if "low" in self.open else "["
        right = ")" if "high" in self.open else "]"
        return f"{kind} in {left}{self.low:g}, {self.high:g}{right}"


@dataclass(frozen=True)
class Options(Constraint):
    """One of a few values (strings or booleans)."""

    values: tuple

    def accepts(self, value: Any) -> bool:
        return any(value is v or (type(value) is type(v) and value == v) for v in self.values)

    def describe(self) -> str:
        return "one of " + ", ".join(repr(v) for v in self.values)


@dataclass(frozen=True)
class Anything(Constraint):
    """Any value (e.g. a random generator or a seed); ``what`` says what is expected."""

    what: str = "any value"

    def accepts(self, value: Any) -> bool:
        return True

    def describe(self) -> str:
        return self.what


@dataclass(frozen=True)
class AnyOf(Constraint):
    """Satisfies at least one of the constraints (the first that accepts converts)."""

    options: tuple

    def accepts(self, value: Any) -> bool:
        return any(c.accepts(value) for c in self.options)

    def convert(self, value: Any) -> Any:
        return next(c for c in self.options if c.accepts(value)).convert(value)

    def describe(self) -> str:
        return " or ".join(c.describe() for c in self.options)


BOOLEAN = Options((True, False))
PROBABILITY = Interval(0.0, 1.0, open=("low", "high"))
POSITIVE = Interval(0.0, None, open=("low",))
NONNEGATIVE = Interval(0.0, None)
POSITIVE_INT = Interval(1, None, integer=True)
#: a count of tests: at most 10^15 (decades of simulation at a microsecond per test), so that counts,
#: budgets and caps stay far inside int64 (a cap of 1e300 failed deep in numpy)
TEST_COUNT = Interval(1, 1e15, integer=True)


@dataclass(frozen=True)
class Param:
    """One parameter: its default, the constraints it may satisfy (any of them), a help line.

    ``none``: None is allowed (its meaning belongs in the help); ``oracle``: the string "oracle" is
    allowed, resolved from the true instance by ``policy_for_instance`` in simulations;
    ``no_guarantee``: values that void the algorithm's error guarantee (said wherever they are offered).
    """

    default: Any
    constraint: Constraint
    help: str
    none: bool = False
    oracle: bool = False
    no_guarantee: tuple = ()
    #: False: pinned by the class (``pinned``), not a constructor parameter
    init: bool = True
    #: the positional ``features`` (validated by the policy itself, not part of ``Params``)
    positional: bool = False
    #: the attribute (the value the policy resolved it to, e.g. a seed drawn when None is given) is
    #: part of the run's state, saved by ``state_dict``
    state: bool = False

    def describe(self) -> str:
        parts = [self.constraint.describe()]
        if self.none:
            parts.append("None")
        if self.oracle:
            parts.append("'oracle'")
        return " or ".join(parts)

    def validate(self, owner: str, name: str, value: Any, allow_oracle: bool = False) -> Any:
        if value is None and self.none:
            return None
        if self.oracle and isinstance(value, str) and value == "oracle":
            if allow_oracle:
                return value
            raise ValueError(
                f"{owner}: {name}='oracle' is resolved only by policy_for_instance (a simulation with a "
                f"true instance); pass a value: {self.describe()}"
            )
        if not self.constraint.accepts(value):
            raise ValueError(
                f"{owner}: {name}={value!r} is not allowed; {name} ({self.help}) must be {self.describe()}"
            )
        return self.constraint.convert(value)


@functools.cache  # classes do not change after definition: merge once per class
def _merged(cls: type, attribute: str) -> dict:
    out: dict = {}
    for klass in reversed(cls.__mro__):
        out.update(klass.__dict__.get(attribute, {}))
    return out


# ------------------------------------------------------------------------------ field specifiers
# What a policy class writes in its body.  They return ``Any`` to the type checker, so that
# ``delta: float = param(...)`` type-checks; ``required`` and ``pinned`` are the dataclass_transform
# field specifiers (a parameter without default; one the class fixes, absent from the constructor).
def param(default: Any, constraint: Constraint, help: str, *, none: bool = False, oracle: bool = False,
          no_guarantee: tuple = (), state: bool = False) -> Any:
    """A parameter with a default (``state``: its attribute, as resolved and updated, is saved with the state)."""
    return Param(default, constraint, help, none=none, oracle=oracle, no_guarantee=no_guarantee, state=state)


def required(constraint: Constraint, help: str, *, none: bool = False, oracle: bool = False,
             kw_only: bool = True) -> Any:
    """A parameter the caller must give (``kw_only=False``: the positional features)."""
    return Param(REQUIRED, constraint, help, none=none, oracle=oracle, positional=not kw_only)


def pinned(default: Any, *, init: Literal[False] = False) -> Any:
    """An inherited parameter this class fixes to ``default`` (no longer accepted by its constructor)."""
    return Param(default, Anything("fixed by the class"), "fixed by the class", init=init)


class RunState:
    """Marks an attribute that changes during a run (``run_state()``): saved by ``state_dict``."""

    __slots__ = ()


def run_state(*, init: Literal[False] = False) -> Any:
    """An attribute of the run's state (set in ``_setup``, changed by the run, saved by ``state_dict``
    and restored by ``load_state_dict``), declared with its type: ``_rounds: int = run_state()``."""
    return RunState()


def like(p: Any, **changes: Any) -> Any:
    """A declared parameter with some attributes changed (e.g. ``like(SIGMA, default=1.0)``)."""
    return replace(p, **changes)


_COMMON_LAST = ("rng", "max_samples")  # shown after each algorithm's own parameters


def declare(cls: type) -> None:
    """Collect the parameters of a policy class (its annotated ``Param`` attributes and those of
    its bases) into ``cls.__parameters__``, make the frozen dataclass ``cls.Params`` of them, and
    the constructor's signature ``cls.__signature__``; the attributes it declares with ``run_state()``
    (and parameters declared with ``state=True``) go to ``cls.__state__``.  Called once per class
    (``__init_subclass__``)."""
    fields: dict[str, Param] = {}
    own_state: list[str] = []
    for base in reversed(cls.__mro__[1:]):
        fields.update(base.__dict__.get("__parameters__", {}))
    annotations = {}
    for base in reversed(cls.__mro__):
        annotations.update(base.__dict__.get("__annotations__", {}))
    for name in cls.__dict__.get("__annotations__", {}):
        value = cls.__dict__.get(name)
        if isinstance(value, RunState):
            own_state.append(name)
            delattr(cls, name)  # an instance attribute, set by _setup
        elif isinstance(value, Param):
            fields[name] = value
            if value.state:
                own_state.append(name)
            if value.default is REQUIRED or value.positional:
                delattr(cls, name)
            else:
                setattr(cls, name, value.default)  # like a dataclass: the class attribute is the default
        elif name in fields:
            raise TypeError(f"{cls.__name__}.{name} redeclares a parameter without param()/pinned()/like()")
    for name in _COMMON_LAST:  # keep rng and max_samples last, after the algorithm's own parameters
        if name in fields:
            fields[name] = fields.pop(name)
    cls.__parameters__ = fields  # type: ignore[attr-defined]
    cls.__state__ = tuple(own_state)  # type: ignore[attr-defined]
    specs = []
    for name, p in fields.items():
        if p.positional:
            continue
        kind = dataclasses.field(init=p.init, default=p.default) if p.default is not REQUIRED else dataclasses.field()
        specs.append((name, annotations.get(name, "Any"), kind))
    params_cls = dataclasses.make_dataclass("Params", specs, frozen=True, kw_only=True)
    params_cls.__module__ = cls.__module__  # picklable as module.<cls>.Params
    params_cls.__qualname__ = f"{cls.__qualname__}.Params"
    params_cls.__doc__ = f"The validated parameters of {cls.__name__} (frozen; ``policy.params``)."
    cls.Params = params_cls  # type: ignore[attr-defined]
    sig = [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                             annotation=str(annotations.get(n, "Any")).removeprefix("InitVar[").removesuffix("]"))
           for n, p in fields.items() if p.positional]
    sig += [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, annotation=annotations.get(n, "Any"),
                              default=inspect.Parameter.empty if p.default is REQUIRED else p.default)
            for n, p in fields.items() if p.init and not p.positional]
    cls.__signature__ = inspect.Signature(sig)  # type: ignore[attr-defined]


def declared(cls: type) -> dict[str, Param]:
    """The parameters ``cls`` accepts, in declaration order (rng and max_samples last), with their defaults."""
    return {k: p for k, p in cls.__dict__.get("__parameters__", {}).items() if p.init and not p.positional}


class RenamedParameterWarning(ScreenbaiWarning, DeprecationWarning):
    """A parameter was given under its old name (it keeps working for one release)."""


class SavedDefaultWarning(ScreenbaiWarning, UserWarning):
    """A saved policy keeps a default that a later release changed, or lost a parameter."""


def renamed(cls: type) -> dict[str, str]:
    """Deprecated parameter names of ``cls`` -> their current names."""
    return _merged(cls, "renamed")


def _outside_stacklevel() -> int:
    """The ``stacklevel`` of the first frame outside screenbai.bandits (the user's call), as seen
    from the function that calls ``warnings.warn``."""
    frame: FrameType | None = sys._getframe(2)
    level = 2
    while frame is not None and frame.f_code.co_filename.startswith(_HERE):
        frame, level = frame.f_back, level + 1
    return level


def rename(cls: type, params: dict) -> dict:
    """``params`` with deprecated names replaced by the current ones (a ``RenamedParameterWarning`` each)."""
    old_names = renamed(cls)
    out = {}
    for key, value in params.items():
        new = old_names.get(key)
        if new is not None:
            if new in params:
                raise TypeError(f"{cls.__name__}: got both {key!r} and its new name {new!r}; keep {new!r}")
            warnings.warn(
                f"{cls.__name__}: parameter {key!r} is now called {new!r}; "
                "the old name will be removed in the next release",
                RenamedParameterWarning,
                stacklevel=_outside_stacklevel(),
            )
            key = new
        out[key] = value
    return out


def _unknown(cls: type, key: str, params: dict[str, Param], says: str = "got an unexpected parameter") -> str:
    """The message for a parameter ``cls`` does not accept: the close matches and the valid names."""
    close = difflib.get_close_matches(key, list(params), n=3, cutoff=0.6)
    hint = f"did you mean {' or '.join(map(repr, close))}? " if close else ""
    return f"{cls.__name__} {says} {key!r}; {hint}parameters accepted: {', '.join(params)}"


def _count(n: int) -> str:
    """A whole number as text, short when it is astronomically large (1e+300, not 301 digits)."""
    return str(n) if n < 10**15 else f"{float(n):.3g}"


def _owner(cls) -> str:
    """How an error names an algorithm: the name its users type (``log-tas``), then its class (LogisticTrackAndStop)."""
    name = getattr(cls, "name", None)
    known = isinstance(name, str) and name not in ("policy", cls.__name__)
    return f"{name} ({cls.__name__})" if known else cls.__name__


def resolve(cls: type, given: dict) -> Any:
    """Validated values of every parameter of ``cls`` (defaults filled in, pinned ones added), as its
    frozen dataclass ``cls.Params``; ``given`` uses the current names (``rename`` first)."""
    params = declared(cls)
    for key in given:
        if key not in params:
            raise TypeError(_unknown(cls, key, params))
    values = {}
    for name, p in params.items():
        if name in given:
            values[name] = p.validate(_owner(cls), name, given[name])
        elif p.default is REQUIRED:
            raise TypeError(f"{cls.__name__} needs the parameter {name!r} ({p.help}): {p.describe()}")
        else:
            values[name] = p.default
    budget, cap = values.get("budget"), values.get("max_samples")
    if budget is not None and cap is not None and budget > cap:
        raise ValueError(
            f"{cls.__name__}: budget = {_count(budget)} exceeds max_samples = {_count(cap)}, the safety cap on the "
            "number of tests (in the workflow, screen.max_samples): the run would stop at the cap with its budget "
            "unspent; lower the budget or raise max_samples"
        )
    return cls.Params(**values)  # type: ignore[attr-defined]


def without_guarantee(cls: type, given: dict) -> list[str]:
    """The settings among ``given`` (defaults filled in) that void ``cls``'s error guarantee, as key=value:
    the values each parameter declares in ``no_guarantee``, then the combinations the class names in its
    ``settings_without_guarantee(values)`` (a classmethod, optional), e.g. a calibration whose guarantee
    assumes constants left at their plug-in estimates."""
    out = []
    values = {}
    for key, p in declared(cls).items():
        value = values[key] = given.get(key, p.default)
        if isinstance(value, str) and value in p.no_guarantee:
            out.append(f"{key}={value!r}")
    combined = getattr(cls, "settings_without_guarantee", None)
    if combined is not None:
        out.extend(combined(values))
    return out


def unnamed_defaults(cls: type, given: dict) -> dict:
    """The defaults ``cls`` used for the parameters not in ``given`` (the generator excepted): what a
    saved policy must keep when a later release changes a default."""
    return {
        k: p.default for k, p in declared(cls).items() if k not in given and k != "rng" and p.default is not REQUIRED
    }


def keep_saved_defaults(cls: type, saved: dict, where: str) -> dict:
    """The parameters whose default changed since ``saved`` (``unnamed_defaults`` of a saved policy)
    was written, at their saved values, with a warning for each; a parameter that no longer exists
    is reported too (the policy goes on without it)."""
    current = declared(cls)
    old_names = renamed(cls)
    keep = {}
    for key, value in saved.items():
        key = old_names.get(key, key)
        if key not in current:
            warnings.warn(
                f"{where}: {cls.__name__} no longer has the parameter {key!r} (saved at its default {value!r}); "
                "the policy goes on without it",
                SavedDefaultWarning,
                stacklevel=_outside_stacklevel(),
            )
        elif current[key].default != value:
            warnings.warn(
                f"{where}: {cls.__name__}'s default {key}={current[key].default!r} differs from the "
                f"{key}={value!r} this policy was saved with; it keeps {value!r}",
                SavedDefaultWarning,
                stacklevel=_outside_stacklevel(),
            )
            keep[key] = value
    return keep


def check(cls: type, given: dict, label: str = "") -> None:
    """Validate parameters without features (the workflow's up-front check); oracle values are
    accepted where declared.  Raises ValueError / TypeError naming the parameter."""
    params = declared(cls)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RenamedParameterWarning)
        given = rename(cls, given)
    prefix = f"{label}: " if label else ""
    for key, value in given.items():
        if key == "rng":
            raise ValueError(
                f"{prefix}rng cannot be set among the parameters: the generator comes from the seed "
                "(the workflow's screen.seed, a campaign's --seed); remove it"
            )
        if key not in params:
            raise ValueError(f"{prefix}{_unknown(cls, key, params, 'has no parameter')}")
        try:
            params[key].validate(_owner(cls), key, value, allow_oracle=True)
        except ValueError as exc:
            raise ValueError(f"{prefix}{exc}") from None


# ---------------------------------------------------------------------------- the shared vocabulary
# One name per idea across all algorithms; classes pick these and change only the default (``like``).
# Typed ``Any`` (``param``) so that ``delta: float = DELTA`` type-checks; BUDGET is required, so a class
# writes ``budget: int = required(TEST_COUNT, ...)`` for mypy to see it required (or BUDGET at runtime).
BUDGET = required(TEST_COUNT, "total number of pulls")
M = param(1, POSITIVE_INT, "number of best arms to identify (m < K)")
DELTA = param(0.05, PROBABILITY, "confidence level: the error probability is at most delta")
EPSILON = param(0.0, NONNEGATIVE, "tolerance: an arm within epsilon of the m-th best counts as correct")
#: EPSILON of the algorithms for 0/1 outcomes, whose means are hit rates in [0, 1]: at 1 or more every arm is correct
HIT_RATE_EPSILON = param(0.0, Interval(0.0, 1.0, open=("high",)),
                         "tolerance on the hit rates: an arm within epsilon of the m-th best counts as correct")
SIGMA = param(1.0, POSITIVE, "sub-Gaussian scale of the reward noise", oracle=True)
S_BOUND = param(1.0, NONNEGATIVE, "bound on the norm of theta*", oracle=True)
L_BOUND = param(None, POSITIVE, "bound on the arms' norms (None: the largest ||x_a||)", none=True, oracle=True)
LAMBDA_REG = param(1.0, POSITIVE, "ridge penalty lambda (prior precision lambda I)")
ALPHA_UCB = param(1.0, NONNEGATIVE, "exploration factor alpha of the UCB index x^T theta + alpha ||x||_{V^-1}")
REFRESH_EVERY = param(2000, POSITIVE_INT, "rebuild the inverse exactly after this many rank-one updates")
ALLOCATION_SEED = param(
    0,
    Interval(0, None, integer=True),
    "seed of the reward-independent allocation's tie-breaks (None: drawn from rng)",
    none=True,
)
# parameters every policy takes (declared by ``Policy``)
COMMON: dict[str, Any] = {  # Any: ``rng: Any = COMMON['rng']`` type-checks
    "rng": param(
        None,
        Anything("a numpy Generator, a seed or None"),
        "random generator for tie-breaking and random choices",
        none=True,
    ),
    "max_samples": param(
        DEFAULT_MAX_SAMPLES, TEST_COUNT, "safety cap on the number of pulls (runs reaching it are reported)"
    ),
}
