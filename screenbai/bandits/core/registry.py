"""Algorithm registry: a config string selects a policy class and its parameters.

Each algorithm module decorates its classes with ``@register("name", **defaults)``.
``make_policy`` builds a policy for a feature matrix; ``policy_for_instance`` also resolves
parameters given as the string "oracle" (e.g. ``S="oracle"``, ``c_mu="oracle"``) from the
true instance, for simulation studies.
"""

from __future__ import annotations

import difflib
import importlib
import re
from dataclasses import dataclass, field

from screenbai.bandits.core.params import declared

_MODULES = ("linear.gifa", "linear.static", "linear.static_adaptive", "linear.rage", "logistic.glgape",
            "logistic.glgape_topm", "logistic.rage_glm", "budget.gse", "budget.baselines", "tracking.linear",
            "tracking.logistic", "unstructured.kl_lucb")
_REGISTRY: dict[str, Entry] = {}
#: the module registering each name, so that ``get`` imports that one only (a campaign command then
#: imports one algorithm family, not all ten modules: 50 ms of its start); a name missing here is
#: still found, by importing them all (tests/test_registry.py checks that the map is right and whole)
_HOME = {
    **dict.fromkeys(("fb-lingape", "linucb", "ucb-glm", "uniform"), "budget.baselines"),
    **dict.fromkeys(("g-allocation", "xy-oracle", "xy-static"), "linear.static"),
    **dict.fromkeys(("xy-adaptive", "xy-fully-adaptive"), "linear.static_adaptive"),
    **dict.fromkeys(("lingape", "lingifa", "lucb", "m-lingape", "ugape"), "linear.gifa"),
    **dict.fromkeys(
        [f"gse-{m}{a}" for m in ("lin", "log") for a in ("", "-fwg", "-greedy", "-uniform", "-wynn")], "budget.gse"
    ),
    "glgape": "logistic.glgape",
    "m-glgape": "logistic.glgape_topm",
    "lin-tas": "tracking.linear",
    "log-tas": "tracking.logistic",
    "rage": "linear.rage",
    "rage-glm": "logistic.rage_glm",
    "kl-lucb": "unstructured.kl_lucb",
}


@dataclass(frozen=True)
class Entry:
    """A registered name: the class and the parameter values this name fixes (e.g. an allocation)."""

    name: str
    cls: type
    defaults: dict = field(default_factory=dict)
    description: str = ""

    def parameters(self) -> dict:
        """Every parameter with its default under this name (from the class's declaration)."""
        return {**{k: p.default for k, p in declared(self.cls).items()}, **self.defaults}


class UnknownAlgorithm(KeyError):
    """A name that is not registered; the message gives the close matches (a KeyError, printed unquoted)."""

    def __str__(self) -> str:
        return str(self.args[0])


def summary(doc: str | None) -> str:
    """The first sentence of a docstring's first paragraph, on one line (a description never cut mid-sentence)."""
    paragraph = " ".join((doc or "").strip().split("\n\n")[0].split())
    paragraph = re.sub(r"``([^`]*)``", r"\1", paragraph)  # reST literals read as plain text
    # a full stop that ends a sentence: before a capital or the end, not after an abbreviation (e.g., Fig., Prop.)
    not_after = "(?<!e\\.g)(?<!i\\.e)(?<!et al)(?<!cf)(?<!Fig)(?<!Eq)(?<!Prop)(?<!Sec)"
    match = re.search(not_after + r"\.(?=\s+[A-Z(\[]|$)", paragraph)
    return paragraph[: match.start() + 1] if match else paragraph


def register(name: str, description: str = "", **defaults):
    def deco(cls):
        key = name.lower()
        if key in _REGISTRY and _REGISTRY[key].cls is not cls:
            raise ValueError(f"algorithm name {name!r} is registered twice")
        _REGISTRY[key] = Entry(key, cls, dict(defaults), description or summary(cls.__doc__))
        return cls

    return deco


def _load_all() -> None:
    for mod in _MODULES:
        importlib.import_module(f"screenbai.bandits.{mod}")


def available() -> dict[str, Entry]:
    _load_all()
    return dict(sorted(_REGISTRY.items()))


def get(name: str) -> Entry:
    key = str(name).lower()
    if key in _HOME:
        importlib.import_module(f"screenbai.bandits.{_HOME[key]}")
        if key in _REGISTRY:
            return _REGISTRY[key]
    entries = available()
    if key not in entries:
        close = difflib.get_close_matches(key, list(entries), n=4, cutoff=0.6)
        hint = f"did you mean {' or '.join(close)}? " if close else ""
        raise UnknownAlgorithm(
            f"unknown algorithm {name!r}; {hint}`screenbai algorithms` lists the {len(entries)} registered names"
        )
    return entries[key]


def name_of(policy) -> str:
    """The registered name of a policy's class (its own ``name`` when that is one of its names)."""
    names = [key for key, entry in available().items() if entry.cls is type(policy)]
    if not names:
        raise ValueError(f"{type(policy).__name__} is not a registered algorithm; only registered ones can be saved")
    return policy.name if policy.name in names else names[0]


def make_policy(name: str, features, **params):
    """The policy registered as ``name`` for these features: its class with the name's defaults and
    ``params`` (an unknown name gets the close matches; the class's constructor refuses an unknown
    parameter or a bad value, naming it and the valid ones, and renames old names with a warning)."""
    entry = get(name)
    kwargs = {**entry.defaults, **params}
    return entry.cls(features, **kwargs)


def policy_for_instance(name: str, instance, **params):
    """Like make_policy, with "oracle" parameter values resolved from the true instance."""
    entry = get(name)
    kwargs = {**entry.defaults, **params}
    sigma = declared(entry.cls).get("sigma")
    if sigma is not None and sigma.oracle and "sigma" not in params:
        # the instance's own noise scale unless the caller overrides it (a policy assuming a smaller
        # scale than the simulation's loses its guarantee)
        kwargs["sigma"] = noise_scale(instance)
    resolve = getattr(entry.cls, "resolve_oracle", None)
    for key, value in list(kwargs.items()):
        if isinstance(value, str) and value == "oracle":
            if resolve is None:
                raise ValueError(f"{name} has no oracle value for parameter {key!r}")
            kwargs[key] = resolve(key, instance)
    return make_policy(name, instance.features, **kwargs)


def noise_scale(instance) -> float:
    """Sub-Gaussian scale of an instance's rewards: 1/2 for 0/1 outcomes, else its sigma."""
    return 0.5 if instance.reward == "bernoulli" else float(instance.sigma)
