"""Every registered policy has a real signature: declared once as typed fields (params.py), seen by
``inspect``/``help()``/mypy, validated at construction, old names kept with a deprecation warning."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
import pydoc

import numpy as np
import pytest

import screenbai
from screenbai.bandits.core.params import REQUIRED, RenamedParameterWarning, declared, renamed
from screenbai.bandits.core.policy import Policy
from screenbai.bandits.core.registry import UnknownAlgorithm, available, make_policy
from screenbai.bandits.logistic.glgape import GLGapE

ENTRIES = available()
CLASSES = sorted({e.cls for e in ENTRIES.values()}, key=lambda c: c.__name__)
X = np.random.default_rng(0).normal(size=(6, 2))


NEEDED = {"budget": 500, "S": 1.0, "theta": np.array([1.0, 0.3])}


def _required(cls) -> dict:
    """Values for the parameters without a usable default (budget, S; xy-oracle's theta)."""
    return {k: v for k, v in NEEDED.items() if k in declared(cls)
            and (declared(cls)[k].default is REQUIRED or declared(cls)[k].oracle)}


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_every_registered_class_has_an_explicit_signature(cls):
    sig = inspect.signature(cls)
    kinds = [p.kind for p in sig.parameters.values()]
    assert inspect.Parameter.VAR_KEYWORD not in kinds and inspect.Parameter.VAR_POSITIONAL not in kinds
    init = inspect.signature(cls.__init__)  # what help() shows for the constructor
    assert list(init.parameters) == ["self", *sig.parameters]
    assert inspect.Parameter.VAR_KEYWORD not in [p.kind for p in init.parameters.values()]
    first, *rest = sig.parameters.values()
    assert first.name == "features" and first.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in rest)
    # the signature is the declaration: same names, same defaults, each with a type
    decl = declared(cls)
    assert [p.name for p in rest] == list(decl)
    for p in rest:
        assert p.annotation is not inspect.Parameter.empty, f"{cls.__name__}.{p.name} has no type"
        want = decl[p.name].default
        assert (p.default is inspect.Parameter.empty) if want is REQUIRED else p.default == want
    # the frozen dataclass of the parameters has every accepted field (and the pinned ones)
    names = {f.name for f in dataclasses.fields(cls.Params)}
    assert set(decl) <= names
    assert cls.Params.__dataclass_params__.frozen


def test_help_shows_the_parameters():
    text = pydoc.render_doc(GLGapE, renderer=pydoc.plaintext)
    assert "GLGapE(features: 'ArrayLike', *, epsilon: 'float' = 0.1, delta: 'float' = 0.05" in text
    assert "calibration: 'str' = 'likelihood-ratio'" in text


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_the_constructor_sets_the_frozen_parameters(cls):
    policy = cls(X, rng=0, **_required(cls))
    assert isinstance(policy.params, cls.Params)
    name = next(iter(declared(cls)))
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(policy.params, name, None)
    for key, p in declared(cls).items():  # the defaults (rng and the values given aside)
        if key != "rng" and key not in _required(cls):
            assert getattr(policy.params, key) == p.default
    clone = pickle.loads(pickle.dumps(policy))  # cls.Params is found by its qualified name
    assert repr(clone.params) == repr(policy.params) == repr(copy.deepcopy(policy).params)  # theta: an array


@pytest.mark.parametrize(
    ("name", "key", "value", "message"),
    [
        ("glgape", "epsilon", "0.1", "epsilon='0.1' is not allowed"),  # a wrong type
        ("glgape", "delta", 1.5, r"delta=1.5 is not allowed; delta \(confidence level"),  # a constraint
        ("glgape", "calibration", "exact", "must be one of 'likelihood-ratio'"),
        ("m-lingape", "m", 1.5, "m=1.5 is not allowed"),
        ("gse-lin", "eta", 1.0, "eta=1.0 is not allowed"),
        ("lin-tas", "growth", -0.1, "growth=-0.1 is not allowed"),
        ("xy-static", "allocation_seed", -1, "allocation_seed=-1 is not allowed"),
        ("linucb", "budget", 2.5, "budget=2.5 is not allowed"),
    ],
)
def test_a_wrong_type_or_constraint_is_refused_at_construction(name, key, value, message):
    cls = ENTRIES[name].cls
    given = {**_required(cls), key: value}
    with pytest.raises(ValueError, match=message):
        make_policy(name, X, **given)
    with pytest.raises(ValueError, match=message):
        cls(X, **given)


def test_an_unknown_parameter_names_itself_and_the_valid_ones():
    with pytest.raises(TypeError) as err:
        make_policy("glgape", X, epsilom=0.1)
    text = str(err.value)
    assert "unexpected parameter 'epsilom'" in text and "did you mean 'epsilon'" in text
    assert "parameters accepted: epsilon, delta, E, c_mu" in text
    with pytest.raises(TypeError, match="unexpected parameter 'm'; .*parameters accepted: epsilon"):
        make_policy("lingape", X, m=2)  # pinned by LinGapE: not accepted
    with pytest.raises(TypeError, match="needs the parameter 'budget'"):
        make_policy("linucb", X)


def test_an_unknown_algorithm_gets_the_close_matches():
    with pytest.raises(UnknownAlgorithm, match="unknown algorithm 'lingapee'; did you mean lingape"):
        make_policy("lingapee", X)


@pytest.mark.parametrize("name", sorted({n for n, e in ENTRIES.items() if renamed(e.cls)}))
def test_old_names_keep_working_with_a_deprecation_warning(name):
    cls = ENTRIES[name].cls
    for old, new in renamed(cls).items():
        if new not in declared(cls):  # inherited, for a parameter this class pins (lucb: lambda0)
            with pytest.raises(TypeError, match=f"unexpected parameter '{new}'"), pytest.warns(RenamedParameterWarning):
                make_policy(name, X, **{old: 1.0})
            continue
        value = declared(cls)[new].default
        if value is REQUIRED or value is None:
            value = 1.0 if new != "selection" else declared(cls)[new].constraint.values[0]
        with pytest.warns(RenamedParameterWarning, match=f"'{old}' is now called '{new}'") as seen:
            policy = make_policy(name, X, rng=0, **{**_required(cls), old: value})
        assert issubclass(seen[0].category, screenbai.ScreenbaiWarning)
        assert issubclass(seen[0].category, DeprecationWarning)
        assert getattr(policy.params, new) == declared(cls)[new].validate(name, new, value)
        assert policy._init_kwargs.get(new) == value  # saved under the current name
        with pytest.raises(TypeError, match=f"got both '{old}' and its new name '{new}'"):
            make_policy(name, X, **{**_required(cls), old: value, new: value})


def test_a_subclass_with_its_own_init_is_refused():
    with pytest.raises(TypeError, match="defines __init__; a policy declares its parameters as fields"):
        class Custom(Policy):  # noqa: F841 - the definition itself fails
            def __init__(self, features):
                pass


def test_the_workflow_check_names_the_close_matches_too():
    from screenbai.bandits.core.params import check

    with pytest.raises(ValueError, match="cfg: GLGapE has no parameter 'deltaa'; did you mean 'delta'"):
        check(GLGapE, {"deltaa": 0.1}, "cfg")


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_the_saved_state_is_the_declared_fields(cls):
    """state_dict saves what the class declares with run_state() (typed), no hand-kept list."""
    assert not [k.__name__ for k in cls.__mro__ if k is not Policy and "_state_attrs" in k.__dict__]
    declared_state = {n for k in cls.__mro__ for n in k.__dict__.get("__state__", ())}
    annotated = {n for k in cls.__mro__ for n in k.__dict__.get("__annotations__", {})}
    assert declared_state and declared_state <= annotated
    policy = cls(X, rng=0, **_required(cls))
    assert set(policy.state_dict()["algorithm_state"]) == declared_state  # each set up by _setup


BINARY_WITH_EPSILON = [c for c in CLASSES if getattr(c, "binary_rewards", False) and "epsilon" in declared(c)]


@pytest.mark.parametrize("cls", BINARY_WITH_EPSILON, ids=lambda c: c.__name__)
def test_an_epsilon_of_a_whole_hit_rate_is_refused_for_0_1_outcomes(cls):
    """On hit rates an epsilon of 1 or more makes every compound correct: it was accepted, and KL-LUCB then stopped
    after 0 tests while log-tas printed numpy warnings from the bound. It is refused, naming the range, at
    construction and in the workflow's up-front check; just below 1 is accepted."""
    from screenbai.bandits.core.params import check

    for bad in (1.0, 2):
        with pytest.raises(ValueError, match=rf"epsilon={bad!r} is not allowed; .* must be a number in \[0, 1\)"):
            cls(X, rng=0, **_required(cls), epsilon=bad)
        with pytest.raises(ValueError, match=r"cfg: .*must be a number in \[0, 1\)"):
            check(cls, {"epsilon": bad}, "cfg")
    assert cls(X, rng=0, **_required(cls), epsilon=0.99).epsilon == 0.99


def test_the_0_1_algorithms_with_an_epsilon_are_the_expected_ones():
    """The refusal above covers every algorithm for 0/1 outcomes that takes an epsilon."""
    names = {c.name for c in BINARY_WITH_EPSILON}
    assert {"log-tas", "glgape", "m-glgape", "kl-lucb", "rage-glm"} <= names
