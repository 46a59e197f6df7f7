"""The registry of training algorithms: ``params["algorithm"]`` -> its
:class:`cbudget.engine.Algorithm` (declared parameters and trainer), one module per family:

* :mod:`.boosting`: ``gbdt``, ``cegb``, ``greedy_miser`` (a Booster);
* :mod:`.budget_rf`: ``budget_rf`` (a Forest);
* :mod:`.classifier_tree`: ``cstc``, ``cscc``, ``cronus`` (a ClassifierTree / Cascade);
* :mod:`.gated`: ``adapt_gbrt``, ``adapt_lin`` (a GatedModel).

Each entry also says what its models are (``model_class``, the file ``section``): the model
classes and the file format read that from here (:func:`cbudget.model_io.algorithms_of`),
so this is the only list of algorithm names.

Adding an algorithm: a module that declares its parameters, its trainer and its model
class, and one entry in :data:`REGISTRY` (or :func:`register_algorithm` from outside the
package; see docs/architecture.md, "Adding an algorithm").
"""
from __future__ import annotations

import difflib
from typing import Any

from ..engine import Algorithm
from ..model_io import IMPORTED, MODEL_TYPES, register_algorithms, register_params_check
from ..params import ALIASES
from . import boosting, budget_rf, classifier_tree, gated

__all__ = ["REGISTRY", "get_algorithm", "resolve_params", "parameter_docs",
           "register_algorithm", "unregister_algorithm", "taken_by"]

REGISTRY: dict[str, Algorithm] = {
    algorithm.name: algorithm
    for algorithm in (*boosting.ALGORITHMS, budget_rf.BUDGET_RF, *classifier_tree.ALGORITHMS,
                      *gated.ALGORITHMS)
}

# the model classes and the file format dispatch on the algorithm through this dict
register_algorithms(REGISTRY)


def register_algorithm(algorithm: Algorithm) -> None:
    """Add ``algorithm`` to :data:`REGISTRY`: ``train`` takes its name, and its models save
    and load (as its ``model_class``, with its ``section``). ValueError if the name is
    taken."""
    if not isinstance(algorithm, Algorithm):
        raise TypeError(f"register_algorithm takes a cbudget.engine.Algorithm, got "
                        f"{type(algorithm).__name__}")
    if algorithm.name in REGISTRY or algorithm.name == IMPORTED:
        raise ValueError(f"algorithm {algorithm.name!r} is registered already")
    model_type = str(getattr(algorithm.model_class, "model_type", ""))
    if MODEL_TYPES.get(model_type) is not algorithm.model_class:
        raise ValueError(f"algorithm {algorithm.name!r}: its model_class "
                         f"{algorithm.model_class!r} is not a model class registered with "
                         "@register_model_type, so its models could not be loaded")
    REGISTRY[algorithm.name] = algorithm


def unregister_algorithm(name: str) -> Algorithm:
    """Remove the algorithm ``name`` from :data:`REGISTRY` and return it (its models no
    longer load)."""
    return REGISTRY.pop(get_algorithm(name).name)


def taken_by() -> dict[str, list[str]]:
    """Every parameter name -> the registered algorithms that take it."""
    takers: dict[str, list[str]] = {}
    for algorithm in REGISTRY.values():
        for name in algorithm.declared:
            takers.setdefault(name, []).append(algorithm.name)
    return takers


def get_algorithm(name: Any) -> Algorithm:
    """The registered algorithm ``name``; ValueError listing the valid ones."""
    if not isinstance(name, str) or name not in REGISTRY:
        raise ValueError(f"unknown algorithm {name!r}; valid: {list(REGISTRY)}")
    return REGISTRY[name]


# the names LightGBM (num_iterations and its aliases) and XGBoost's estimators give the
# number of rounds in the parameters, where cbudget.train takes it as an argument
ROUND_COUNT_NAMES = frozenset({
    "num_iterations", "num_iteration", "n_iter", "num_tree", "num_trees", "num_round",
    "num_rounds", "nrounds", "num_boost_round", "n_estimators", "max_iter"})
ROUNDS_HINT = ("the number of boosting rounds is not a parameter: give it as "
               "cbudget.train(params, dtrain, num_boost_round), or the command line's "
               "--rounds N")


def resolve_params(params: dict | None) -> dict:
    """The training parameters of ``params``: aliases resolved, defaults filled in,
    every value checked.

    Raises ValueError for an unknown name (listing the valid ones), a name given twice
    (directly and by an alias), a parameter of another algorithm (saying which ones take
    it) or a bad value.
    """
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise TypeError(f"params must be a dict, got {type(params).__name__}")
    given: dict[str, Any] = {}
    seen: dict[str, str] = {}
    takers = taken_by()
    for key, value in params.items():
        name = ALIASES.get(key, key)
        if name not in takers:
            valid = sorted(set(takers) | set(ALIASES))
            close = difflib.get_close_matches(str(key), valid, n=3, cutoff=0.6)
            hint = (f"; {ROUNDS_HINT}" if key in ROUND_COUNT_NAMES else
                    f"; did you mean {' or '.join(map(repr, close))}?" if close else "")
            raise ValueError(f"unknown parameter {key!r}{hint} (valid parameters: "
                             f"{', '.join(valid)})")
        if name in seen:
            raise ValueError(f"parameter {name!r} given twice (as {seen[name]!r} and {key!r})")
        seen[name] = key
        given[name] = value
    algorithm = get_algorithm(given.get("algorithm", "gbdt"))
    others = [name for name in given if name not in algorithm.declared]
    if others:
        raise ValueError("; ".join(
            f"parameter {seen[name]!r} applies to algorithm{'s' if len(takers[name]) > 1 else ''}"
            f" {', '.join(map(repr, takers[name]))}" for name in others)
            + f", not to algorithm {algorithm.name!r}"
            + (f" ({ROUNDS_HINT})" if any(seen[name] in ROUND_COUNT_NAMES for name in others)
               else ""))
    return algorithm.resolve(given)


def check_saved_params(params: dict) -> dict:
    """The ``training_params`` of a model file (with its ``algorithm``), checked as
    training checks them and completed with the defaults of parameters added since the
    file was written. Unlike training, nothing is converted: a stored value the check
    would change (a float where an integer belongs, a bool where a number belongs) is
    refused, so what loads is what was saved."""
    algorithm = get_algorithm(params.get("algorithm"))
    # files of version 0.1 list other algorithms' parameters as None
    params = {name: value for name, value in params.items()
              if name in algorithm.declared or not (
                  value is None or (name in algorithm.retired_params
                                    and not isinstance(value, bool)
                                    and value == algorithm.retired_params[name]))}
    for name, value in params.items():
        if name not in algorithm.declared:
            raise ValueError(f"{name!r} is not a parameter of algorithm {algorithm.name!r}")
        check = algorithm.declared[name].check
        if value is not None and check is not None:
            checked = check(value, name)
            if (isinstance(value, (int, float)) and type(checked) is not type(value)
                    and not (type(value) is int and type(checked) is float)):
                raise TypeError(f"parameter {name} holds {value!r}, not a "
                                f"{type(checked).__name__}")
    resolved = algorithm.resolve(params)
    for name, value in params.items():
        if resolved[name] != value and not isinstance(value, list):
            raise ValueError(f"parameter {name} holds {value!r}, but a model of algorithm "
                             f"{algorithm.name!r} saves it as {resolved[name]!r}")
    return resolved


register_params_check(check_saved_params)


def parameter_docs(name: str) -> str:
    """Algorithm ``name``: what it is, then its parameters (name, default, one line)."""
    algorithm = get_algorithm(name)
    return "\n".join([f"{algorithm.name}: {algorithm.doc}"]
                     + [f"  {param.name} (default {param.default!r}): {param.doc}"
                        for param in algorithm.declared.values() if param.name != "algorithm"])
