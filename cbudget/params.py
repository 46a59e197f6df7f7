"""Training parameters: how an algorithm declares them (:class:`Param`: name, default,
check, one-line doc), the checks, the parameters every algorithm shares and the aliases.

Names are XGBoost's where one exists, plus LightGBM's ``num_leaves`` and
``min_data_in_leaf``. Each algorithm module declares its own parameters; the registry
(:mod:`cbudget.algorithms`) derives from the declarations the defaults, the list of valid
names and the "applies only to" errors (:func:`cbudget.algorithms.resolve_params`).
"""
from __future__ import annotations

import math
import numbers
import sys
from collections.abc import Collection
from dataclasses import dataclass, replace
from typing import Any, Callable, TypeAlias

__all__ = ["Param", "ALIASES", "COMMON_PARAMS", "CATEGORICAL_PARAMS", "INT_MAX",
           "SQRT_FLOAT_MAX", "number", "any_integer", "choice", "flag", "int_tuple",
           "metric_list", "depth_limit", "monotone_constraints", "resolve_declared"]

ALIASES = {
    "eta": "learning_rate",
    "lambda": "reg_lambda",
    "min_split_gain": "gamma",
    "max_leaves": "num_leaves",
    "nthread": "n_jobs",
    "random_state": "seed",
    "min_child_samples": "min_data_in_leaf",
    "cegb_tradeoff": "cost_tradeoff",
    "verbose": "verbosity",
}


# a parameter's check: (the value given, which may be anything, the parameter's name) ->
# the value normalised
Check: TypeAlias = Callable[[Any, str], Any]


@dataclass(frozen=True)
class Param:
    """One declared parameter.

    ``check(value, name)`` returns the normalised value or raises TypeError/ValueError
    (None: any value is taken as it is). A value of None, given or default, stands for
    the default; a default of None may be filled in from other parameters by the
    algorithm (:meth:`cbudget.engine.Algorithm.complete`).
    """
    name: str
    default: Any
    check: Check | None
    doc: str

    def with_default(self, default: Any, doc: str | None = None) -> Param:
        """The same parameter with another default (an algorithm's own)."""
        return replace(self, default=default, doc=self.doc if doc is None else doc)


# -- checks -----------------------------------------------------------------------------
# Integers reach the kernels as C ints: larger ones are refused with the parameter's name
# instead of an OverflowError (or a wrapped value) deep inside.
INT_MAX = 2 ** 31 - 1
# The largest magnitude of a quantity that training multiplies by another of its size (a
# gradient sum squared in a split's gain, a penalty scaled by the total weight in a
# solver's matrix): its square is still a finite float64. Parameters that would take such
# a quantity beyond it are refused, with their name, where the data are known.
SQRT_FLOAT_MAX = math.sqrt(sys.float_info.max)    # about 1.34e154


def number(*, integer: bool = False, low: float | None = None, high: float | None = None,
           low_open: bool = False, allow_none: bool = False, allow_inf: bool = False
           ) -> Check:
    """A finite number (an integer) in [low, high] (low excluded with ``low_open``).

    NaN is always refused, infinity unless ``allow_inf``; None only with ``allow_none``.
    Integers are bounded by :data:`INT_MAX` when no ``high`` is given; a float is never
    taken for an integer (1.5 or 1.0 for a count is a TypeError), nor a bool for either.
    """
    if integer and high is None:
        high = INT_MAX

    def check(value: Any, name: str) -> float | None:
        if value is None and allow_none:
            return None
        # type[Any]: mypy's numbers.Real has no comparisons nor int()
        kind: type[Any] = numbers.Integral if integer else numbers.Real
        if isinstance(value, bool) or not isinstance(value, kind):
            raise TypeError(f"parameter {name} must be {'an integer' if integer else 'a number'}"
                            f", got {value!r}")
        if value != value:
            raise ValueError(f"parameter {name} is NaN")
        if not allow_inf and math.isinf(value):
            raise ValueError(f"parameter {name} must be finite, got {value}")
        if low is not None and (value < low or (low_open and value == low)):
            raise ValueError(f"parameter {name} must be {'>' if low_open else '>='} {low}, "
                             f"got {value}")
        if high is not None and value > high:
            raise ValueError(f"parameter {name} must be <= {high}, got {value}")
        return int(value) if integer else float(value)
    return check


def any_integer(value: Any, name: str) -> int | None:
    """An integer of any size, or None (``n_jobs``: the thread count is capped later)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"parameter {name} must be an integer, got {value!r}")
    return int(value)


def choice(*values: Any, allow_none: bool = False) -> Check:
    """One of ``values``."""
    def check(value: Any, name: str) -> Any:
        if value is None and allow_none:
            return None
        if value not in values:
            raise ValueError(f"parameter {name} must be one of {list(values)}, got {value!r}")
        return value
    return check


def flag(value: Any, name: str) -> bool:
    """True or False."""
    if not isinstance(value, bool):
        raise TypeError(f"parameter {name} must be True or False, got {value!r}")
    return value


def int_tuple(length: int, *, also: Collection[str] = ()) -> Check:
    """``length`` integers >= 1 (as a tuple), or one of the strings in ``also``."""
    def check(value: Any, name: str) -> tuple[int, ...] | str:
        if isinstance(value, str) and value in also:
            return value
        if (not isinstance(value, (list, tuple)) or len(value) != length
                or not all(isinstance(v, numbers.Integral) and not isinstance(v, bool)
                           and 1 <= int(v) <= INT_MAX for v in value)):
            raise ValueError(f"parameter {name} must be {length} integers in [1, {INT_MAX}], "
                             f"got {value!r}")
        return tuple(int(v) for v in value)
    return check


def metric_list(value: Any, name: str) -> list[str] | None:
    """None, a metric name or a list of them (as a list)."""
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(m, str) for m in value):
        raise TypeError(f"{name} must be a str or a list of str")
    return list(value)


def monotone_constraints(value: Any, name: str) -> list[int] | dict[str, int] | None:
    """Monotone constraints as LightGBM and XGBoost take them: a list (tuple, array) of
    -1 / 0 / +1, one per feature, also as a string ``"(1,0,-1)"`` or ``"1,0,-1"``, or a
    dict of feature name -> direction (features left out: 0). Returns a list of ints or a
    dict of str -> int (what a model file keeps); None for none. Checked against the
    data's features when training starts."""
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip().strip("()[]").strip()
        try:
            value = [int(item) for item in text.split(",")] if text else []
        except ValueError:
            raise ValueError(f"parameter {name} must be integers -1, 0 or 1 separated by "
                             f"commas, e.g. '(1,0,-1)', got {value!r}") from None
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            raise TypeError(f"parameter {name}: a dict's keys are feature names (str); give "
                            f"a list for positions, got keys {list(value)[:5]}")
        items = list(value.items())
    elif isinstance(value, (list, tuple)) or hasattr(value, "__array__"):
        items = list(enumerate(list(value)))
    else:
        raise TypeError(f"parameter {name} must be a list of -1 / 0 / 1 per feature, a dict "
                        f"of feature name -> direction or a string '(1,0,-1)', got "
                        f"{type(value).__name__}")
    for key, direction in items:
        if isinstance(direction, bool) or not isinstance(direction, numbers.Integral) \
                or direction not in (-1, 0, 1):
            raise ValueError(f"parameter {name}[{key!r}] must be -1 (decreasing), 0 (none) "
                             f"or 1 (increasing), got {direction!r}")
    if isinstance(value, dict):
        return {key: int(direction) for key, direction in items}
    return [int(direction) for _, direction in items]


# -- what every algorithm takes ---------------------------------------------------------
COMMON_PARAMS = (
    Param("algorithm", "gbdt", None, "the learner (see cbudget.algorithms)"),
    Param("objective", None, None,
          "reg:squarederror, binary:logistic, multi:softprob, ... (the algorithm's "
          "declaration lists the ones it takes); default: the algorithm's"),
    Param("num_class", None, number(integer=True, low=1, allow_none=True),
          "number of classes (multi:softprob)"),
    Param("eval_metric", None, metric_list, "metric(s) to evaluate; default: the model's"),
    Param("seed", 0, number(integer=True, low=0, high=2 ** 63 - 1), "random seed"),
    Param("n_jobs", None, any_integer,
          "threads; None / -1: all the CPUs this process may use (more are capped)"),
    Param("verbosity", 1, number(integer=True, low=-1),
          "0 or -1 (LightGBM's 'fatal only'): no progress messages of the algorithms "
          "(verbose_eval prints the metrics)"),
)


# Categorical splits of the histogram learners (gbdt, cegb, greedy_miser): LightGBM's
# names, defaults and meaning (docs/architecture.md, "Categorical features").
CATEGORICAL_PARAMS = (
    Param("max_cat_to_onehot", 4, number(integer=True, low=1),
          "a categorical feature with at most this many bins (its levels and one for "
          "the others, as LightGBM counts them) splits one level against the rest; "
          "more: gradient-sorted many-vs-many partitions"),
    Param("max_cat_threshold", 32, number(integer=True, low=1),
          "at most this many levels on the left side of a many-vs-many split"),
    Param("cat_l2", 10.0, number(low=0),
          "L2 regularisation added to reg_lambda in a many-vs-many split's gain"),
    Param("cat_smooth", 10.0, number(low=0),
          "levels are sorted by sum_gradient / (sum_hessian + cat_smooth); levels with "
          "fewer rows than this are left out of the many-vs-many search (go right)"),
    Param("min_data_per_group", 100, number(integer=True, low=1),
          "least rows a many-vs-many split's right side keeps, and between two "
          "candidate splits of one scan"),
)


def depth_limit(value: Any, name: str) -> float | None:
    """A depth limit: an integer >= 0, where 0 (or None) means none (None)."""
    value = number(integer=True, low=0, allow_none=True)(value, name)
    return None if value == 0 else value


def resolve_declared(declared: dict[str, Param], given: dict[str, Any]) -> dict[str, Any]:
    """Every declared parameter: the given value, or the default where none (or None)
    is given, checked."""
    resolved = {}
    for name, param in declared.items():
        value = given.get(name)
        if value is None:
            value = param.default
        if param.check is not None and value is not None:
            value = param.check(value, name)
        resolved[name] = value
    return resolved
