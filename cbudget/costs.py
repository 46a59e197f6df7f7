"""The cost model (docs/architecture.md, "Cost model") -- the one definition used by training,
prediction, the JSON format and the benchmarks.

* ``feature_costs[m]``: paid once per input the first time any node on the input's
  paths tests feature ``m`` (the value is cached afterwards).
* cost groups: ``group_costs[g]`` is paid once per input when the first feature of
  group ``g`` is acquired (on top of that feature's own ``feature_costs[m]``).
* ``coupled_costs[m]``: paid once per model if ``m`` is used anywhere.
* ``split_cost``: per input per split node evaluated; ``tree_cost``: per input per tree.

``cost(x) = sum_{m acquired} feature_costs[m] + sum_{g touched} group_costs[g]
+ split_cost * #split nodes visited + tree_cost * #trees evaluated``.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Real
from typing import Any, TypeAlias, Union

import numpy as np
from numpy.typing import ArrayLike

from ._core._acquisition import bitset_to_bool
from ._core._predict import predict_cost as _predict_cost_kernel
from ._core._types import BITSET_WORD_DTYPE
from ._json_checks import invalid, number_list, require
from .categories import NO_CATEGORIES, Categories

__all__ = ["CostModel", "CostReport", "stage_line"]

# Per-feature costs as users give them: one number per feature, or a dict
# {feature name or index: cost} (features left out cost 0).
FeatureCosts: TypeAlias = Union[ArrayLike, Mapping[str, float], Mapping[int, float]]
# Per-group costs: one number per group, or a dict {group name: cost}.
GroupCosts: TypeAlias = Union[ArrayLike, Mapping[str, float]]
# Cost groups: a dict {group name: [features]} or a list of lists of features, each
# feature given by name or index.
CostGroups: TypeAlias = Union[Mapping[str, Iterable[Union[str, int]]],
                              Sequence[Iterable[Union[str, int]]]]


def _n_words(n_bits: int) -> int:
    return max(1, (int(n_bits) + 63) // 64)


# The largest cost: a prediction's cost sums at most a few billion of them, which must
# stay finite (costs of 1e308 would add up to inf).
MAX_COST = 1e100


def _check_scalar_cost(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    if not 0 <= value <= MAX_COST:
        raise ValueError(f"{name} must be finite and >= 0 (at most {MAX_COST:g}), got {value}")
    return value


def _check_cost_array(costs: np.ndarray, name: str) -> None:
    """Every entry of ``costs`` in [0, MAX_COST] (ValueError naming the first bad one)."""
    bad = np.flatnonzero(~((costs >= 0) & (costs <= MAX_COST)))
    if bad.size:
        raise ValueError(f"{name} must be finite and >= 0 (at most {MAX_COST:g}); got "
                         f"{costs[bad[0]]} at "
                         f"index {bad[0]}" + (f" (and {bad.size - 1} more)" if bad.size > 1
                                              else ""))


def resolve_feature(key: str | int | np.integer, feature_names: Sequence[str],
                    what: str) -> int:
    """Index of a feature given by index or by name.

    Parameters
    ----------
    key : int or str
        The feature's index in ``feature_names`` or its name.
    feature_names : sequence of str
    what : str
        What the feature is for, to begin the error messages with.

    Returns
    -------
    int

    Raises
    ------
    ValueError
        For an index out of range or an unknown name.
    TypeError
        For a key that is neither an int nor a str.
    """
    if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
        if not 0 <= key < len(feature_names):
            raise ValueError(f"{what}: feature index {key} out of range [0, {len(feature_names)})")
        return int(key)
    if isinstance(key, str):
        try:
            return feature_names.index(key)
        except ValueError:
            raise ValueError(f"{what}: unknown feature name {key!r}") from None
    raise TypeError(f"{what}: a feature is named by an int index or a str name, got {key!r}")


def _per_feature_costs(costs: Any, feature_names: list[str], name: str,
                       default_cost: float | None = 0.0) -> np.ndarray:
    """float64 array of length n_features from None, an array-like or a dict by name.

    A dict leaves the features it does not name at ``default_cost``; with None it must
    name every feature (a forgotten expensive feature must not become free silently)."""
    n_features = len(feature_names)
    if costs is None:
        return np.zeros(n_features)
    if isinstance(costs, dict):
        named = np.zeros(n_features, dtype=bool)
        out = np.zeros(n_features)
        for key, value in costs.items():
            m = resolve_feature(key, feature_names, name)
            out[m] = _check_scalar_cost(value, f"{name}[{key!r}]")
            named[m] = True
        if not named.all():
            if default_cost is None:
                missing = [feature_names[m] for m in np.flatnonzero(~named)]
                shown = ", ".join(repr(n) for n in missing[:20])
                more = f" and {len(missing) - 20} more" if len(missing) > 20 else ""
                raise ValueError(
                    f"{name} does not name {len(missing)} of the {n_features} features: "
                    f"{shown}{more}; give them costs, or default_cost= for the rest")
            out[~named] = default_cost
        return out
    if default_cost:
        raise ValueError(f"default_cost applies to a dict of {name}, not to an array")
    try:
        given = np.asarray(costs)
        # no bools or strings taken for numbers (numpy makes [True, 2.0] floats)
        if given.dtype.kind not in "iuf" or (isinstance(costs, (list, tuple)) and any(
                isinstance(v, (bool, np.bool_)) for v in costs)):
            raise TypeError
        out = given.astype(np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be an array of numbers or a dict keyed by feature "
                        "name") from None
    if out.ndim != 1 or out.shape[0] != n_features:
        raise ValueError(f"{name} must have one entry per feature ({n_features}), "
                         f"got shape {out.shape}")
    _check_cost_array(out, name)
    return out


@dataclass
class CostReport:
    """What predictions on a data set cost (see :meth:`cbudget.Booster.cost_report`).

    Attributes
    ----------
    mean_cost : float
        Mean per-input prediction cost.
    per_input_cost : ndarray of shape (n_samples,)
    acquisition_rate : ndarray of shape (n_features,)
        Fraction of inputs for which each feature is acquired.
    features_used : list of str
        Features tested anywhere in the model.
    coupled_cost : float
        Fixed once-per-model cost, ``sum of coupled_costs over features_used``.
    feature_names : list of str
    mean_cost_per_query : float or None
        Learning to rank, for a Dataset with query groups: the mean over the queries of
        the summed cost of their documents (each document pays for its own features);
        None otherwise.
    cost_stages : list of dict or None
        A booster trained in cost stages (:attr:`cbudget.Booster.cost_stages`), per stage
        of the iterations reported: ``first_iteration``, ``end_iteration``,
        ``cost_tradeoff``, ``reached_share`` (the inputs that evaluate its trees: with exit
        rules, those still in) and ``mean_cost`` (the mean cost per input up to its end);
        None otherwise.
    categorical : dict {str: str}
        The categorical features, each one feature (paid once whatever its level):
        name -> "categorical, k levels" (or "categorical" for integer codes).
    """

    mean_cost: float
    per_input_cost: np.ndarray = field(repr=False)
    acquisition_rate: np.ndarray = field(repr=False)
    features_used: list[str]
    coupled_cost: float
    feature_names: list[str] = field(repr=False)
    mean_cost_per_query: float | None = None
    cost_stages: list[dict[str, Any]] | None = None
    categorical: dict[str, str] = field(default_factory=dict, repr=False)

    def __str__(self) -> str:
        per_query = ([] if self.mean_cost_per_query is None else
                     [f"mean cost per query: {self.mean_cost_per_query:.6g}"])
        lines = [f"mean cost per input: {self.mean_cost:.6g}", *per_query,
                 f"coupled (once per model) cost: {self.coupled_cost:.6g}",
                 f"features used: {len(self.features_used)} of {len(self.feature_names)}"]
        order = np.argsort(-self.acquisition_rate, kind="stable")
        for m in order:
            if self.acquisition_rate[m] > 0:
                name = self.feature_names[m]
                kind = f" ({self.categorical[name]})" if name in self.categorical else ""
                lines.append(f"  {name}{kind}: acquired for "
                             f"{100 * self.acquisition_rate[m]:.2f}% of inputs")
        if self.cost_stages:
            lines.append("cost stages:")
            lines.extend(f"  {stage_line(stage)}" for stage in self.cost_stages)
        return "\n".join(lines)


def stage_line(stage: dict[str, Any]) -> str:
    """One line of a cost stage of :attr:`CostReport.cost_stages`."""
    return (f"iterations {stage['first_iteration']}-{stage['end_iteration'] - 1} at "
            f"cost_tradeoff {stage['cost_tradeoff']:.6g}: reached by "
            f"{100 * stage['reached_share']:.2f}% of inputs, mean cost by its end "
            f"{stage['mean_cost']:.6g}")


class CostModel:
    """Feature, group, coupled, split and tree costs of a model (docs/architecture.md,
    "Cost model").

    Build it with :meth:`from_user` (validation of user input by name or index) or
    :meth:`from_dict` (a saved model).

    Attributes
    ----------
    feature_costs : ndarray of float64, shape (n_features,)
    feature_group : ndarray of int32, shape (n_features,); -1 = no group
    group_costs : ndarray of float64, shape (n_groups,)
    group_names : list of str
    coupled_costs : ndarray of float64, shape (n_features,)
    split_cost, tree_cost : float
    """

    def __init__(self, feature_costs: ArrayLike, feature_group: ArrayLike,
                 group_costs: ArrayLike, group_names: Iterable[str], coupled_costs: ArrayLike,
                 split_cost: float, tree_cost: float) -> None:
        self.feature_costs = np.ascontiguousarray(feature_costs, dtype=np.float64)
        self.feature_group = np.ascontiguousarray(feature_group, dtype=np.int32)
        self.group_costs = np.ascontiguousarray(group_costs, dtype=np.float64)
        self.group_names = list(group_names)
        self.coupled_costs = np.ascontiguousarray(coupled_costs, dtype=np.float64)
        self.split_cost = float(split_cost)
        self.tree_cost = float(tree_cost)

    @property
    def n_features(self) -> int:
        """Number of features."""
        return self.feature_costs.shape[0]

    @property
    def n_groups(self) -> int:
        """Number of cost groups."""
        return self.group_costs.shape[0]

    @classmethod
    def from_user(cls, feature_names: Iterable[str], feature_costs: FeatureCosts | None = None,
                  cost_groups: CostGroups | None = None, group_costs: GroupCosts | None = None,
                  coupled_costs: FeatureCosts | None = None, split_cost: float = 0.0,
                  tree_cost: float = 0.0, default_cost: float | None = None) -> CostModel:
        """Validate user-given costs.

        Parameters
        ----------
        feature_names : list of str
        feature_costs : None, array-like of shape (n_features,) or dict
            A dict maps feature names (or indices) to costs. It must name every feature
            unless ``default_cost`` is given (ValueError listing the missing ones).
        coupled_costs : None, array-like of shape (n_features,) or dict
            A dict maps feature names (or indices) to costs; features left out cost 0.
        cost_groups : None, dict {group name: list of features} or list of lists
            Features are given by name or index; a feature belongs to at most one group.
        group_costs : None, array-like of shape (n_groups,) or dict {group name: cost}
        split_cost, tree_cost : float >= 0
        default_cost : float >= 0, optional
            The cost of the features a ``feature_costs`` dict does not name.

        Returns
        -------
        CostModel

        Raises
        ------
        ValueError, TypeError
            For costs that are negative, not finite, of the wrong length or type, or
            that name unknown features or groups.
        """
        feature_names = list(feature_names)
        n_features = len(feature_names)
        if default_cost is not None:
            default_cost = _check_scalar_cost(default_cost, "default_cost")
        feature_costs = _per_feature_costs(feature_costs, feature_names, "feature_costs",
                                           default_cost)
        coupled_costs = _per_feature_costs(coupled_costs, feature_names, "coupled_costs")
        feature_group = np.full(n_features, -1, dtype=np.int32)
        group_names: list[str] = []
        if cost_groups is not None:
            if isinstance(cost_groups, dict):
                items = [(str(k), v) for k, v in cost_groups.items()]
            elif isinstance(cost_groups, (list, tuple)):
                items = [(f"group_{g}", v) for g, v in enumerate(cost_groups)]
            else:
                raise TypeError("cost_groups must be a dict {name: [features]} or a list of "
                                f"lists of features, got {type(cost_groups).__name__}")
            for g, (gname, members) in enumerate(items):
                if isinstance(members, (str, int, np.integer)) or not hasattr(members, "__iter__"):
                    raise TypeError(f"cost group {gname!r} must be a list of features")
                members = list(members)
                if not members:
                    raise ValueError(f"cost group {gname!r} is empty")
                for key in members:
                    m = resolve_feature(key, feature_names, f"cost group {gname!r}")
                    if feature_group[m] >= 0 and feature_group[m] != g:
                        raise ValueError(f"feature {feature_names[m]!r} is in two cost groups "
                                         f"({group_names[feature_group[m]]!r} and {gname!r})")
                    feature_group[m] = g
                group_names.append(gname)
        n_groups = len(group_names)
        if group_costs is None:
            if n_groups:
                raise ValueError("cost_groups given without group_costs")
            group_costs_arr = np.zeros(0)
        elif n_groups == 0:
            raise ValueError("group_costs given without cost_groups")
        elif isinstance(group_costs, dict):
            group_costs_arr = np.zeros(n_groups)
            for key, value in group_costs.items():
                if str(key) not in group_names:
                    raise ValueError(f"group_costs: unknown cost group {key!r}; "
                                     f"groups are {group_names}")
                group_costs_arr[group_names.index(str(key))] = _check_scalar_cost(
                    value, f"group_costs[{key!r}]")
        else:
            group_costs_arr = _per_feature_costs(group_costs, group_names, "group_costs")
        return cls(feature_costs, feature_group, group_costs_arr, group_names, coupled_costs,
                   _check_scalar_cost(split_cost, "split_cost"),
                   _check_scalar_cost(tree_cost, "tree_cost"))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (the ``cost_model`` section of the model format)."""
        return {
            "feature_costs": self.feature_costs.tolist(),
            "feature_group": self.feature_group.tolist(),
            "group_names": list(self.group_names),
            "group_costs": self.group_costs.tolist(),
            "coupled_costs": self.coupled_costs.tolist(),
            "split_cost": self.split_cost,
            "tree_cost": self.tree_cost,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], n_features: int) -> CostModel:
        """Inverse of :meth:`to_dict`, validating types, lengths and values exactly as
        saved (ValueError naming the field; nothing converted)."""
        if not isinstance(d, Mapping):
            raise invalid("cost_model must be an object")
        group_names = require(d, "group_names", list, "cost_model.")
        if not all(isinstance(g, str) for g in group_names):
            raise invalid("cost_model.group_names must be a list of str")
        if len(set(group_names)) != len(group_names):
            raise invalid("cost_model.group_names holds a name twice")
        arrays = {}
        for name, length in (("feature_costs", n_features), ("coupled_costs", n_features),
                             ("group_costs", len(group_names))):
            arrays[name] = np.asarray(number_list(require(d, name, list, "cost_model."),
                                                  f"cost_model.{name}", length),
                                      dtype=np.float64)
        feature_group = number_list(require(d, "feature_group", list, "cost_model."),
                                    "cost_model.feature_group", n_features, integer=True)
        if not all(-1 <= g < len(group_names) for g in feature_group):
            raise invalid("cost_model.feature_group refers to a missing group")
        split_cost = float(require(d, "split_cost", (int, float), "cost_model."))
        tree_cost = float(require(d, "tree_cost", (int, float), "cost_model."))
        try:
            for name, arr in (*arrays.items(), ("split_cost", np.array([split_cost])),
                              ("tree_cost", np.array([tree_cost]))):
                _check_cost_array(arr, f"cost_model.{name}")
        except ValueError as exc:
            raise invalid(str(exc)) from None
        return cls(arrays["feature_costs"], np.asarray(feature_group, dtype=np.int64),
                   arrays["group_costs"], group_names, arrays["coupled_costs"],
                   split_cost, tree_cost)

    def is_zero(self) -> bool:
        """True when nothing costs anything."""
        return not (self.feature_costs.any() or self.group_costs.any()
                    or self.coupled_costs.any() or self.split_cost or self.tree_cost)

    def first_read_costs(self) -> np.ndarray:
        """Per feature, the most its first read can cost an input: its own cost plus
        its cost group's (when the group is not yet touched)."""
        group = np.zeros(self.n_features)
        grouped = self.feature_group >= 0
        group[grouped] = self.group_costs[self.feature_group[grouped]]
        return self.feature_costs + group

    def new_bitsets(self, n_samples: int) -> tuple[np.ndarray, np.ndarray]:
        """Zeroed (acquired, groups_touched) bitsets for ``n_samples`` inputs: nothing
        acquired yet."""
        return (np.zeros((n_samples, _n_words(self.n_features)), dtype=BITSET_WORD_DTYPE),
                np.zeros((n_samples, _n_words(self.n_groups)), dtype=BITSET_WORD_DTYPE))

    def accumulate(self, X: np.ndarray, nodes: np.ndarray, tree_offsets: np.ndarray,
                   bitsets: tuple[np.ndarray, np.ndarray], cost: np.ndarray, *,
                   node_counts: np.ndarray | None = None, n_threads: int = 1,
                   row_tree_end: np.ndarray | None = None,
                   cat_words: np.ndarray | None = None) -> None:
        """Add to ``cost`` what evaluating the trees costs each input of ``X``, given the
        acquisitions already in ``bitsets`` (updated in place).

        Parameters
        ----------
        X : float32/float64 ndarray of shape (n_samples, n_features)
        nodes : NODE_DTYPE or PREDICT_NODE_DTYPE array (trees back to back)
        tree_offsets : int64 array
        bitsets : pair of uint64 arrays from :meth:`new_bitsets`
        cost : float64 array of shape (n_samples,), incremented
        node_counts : int64 array of shape (n_nodes,), optional
            Incremented by the number of inputs that first acquire each node's feature
            at that node.
        row_tree_end : int64 array of shape (n_samples,), optional
            Input ``i`` evaluates only the first ``row_tree_end[i]`` trees (it exited
            there: cbudget.exits); None: all of them.
        cat_words : uint32 array, optional
            The bitsets of the categorical splits (``TreeEnsemble.cat_words``).
        """
        per_thread = np.zeros((n_threads if node_counts is not None else 0, nodes.shape[0]),
                              dtype=np.int64)
        _predict_cost_kernel(X, nodes, tree_offsets, self.feature_costs, self.feature_group,
                             self.group_costs, self.split_cost, self.tree_cost, cost,
                             bitsets[0], bitsets[1], per_thread, n_threads, row_tree_end,
                             cat_words)
        if node_counts is not None:
            node_counts += per_thread.sum(axis=0)

    def acquired_matrix(self, bitsets: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        """(n_samples, n_features) uint8 0/1 matrix of the acquired features."""
        acquired = np.zeros((bitsets[0].shape[0], self.n_features), dtype=np.uint8)
        bitset_to_bool(bitsets[0], self.n_features, acquired)
        return acquired

    def group_members(self) -> np.ndarray:
        """(n_features, n_groups) 0/1: which features belong to which cost group."""
        members = np.zeros((self.n_features, self.n_groups))
        grouped = np.flatnonzero(self.feature_group >= 0)
        members[grouped, self.feature_group[grouped]] = 1.0
        return members

    def acquisition_costs(self, acquired: np.ndarray) -> np.ndarray:
        """Per input: the cost of its acquired features, and of the groups they touch,
        from the (n_samples, n_features) 0/1 matrix ``acquired``."""
        cost = acquired @ self.feature_costs
        if self.n_groups:
            cost += ((acquired @ self.group_members()) > 0) @ self.group_costs
        return cost

    def structural_costs(self, cost: np.ndarray, acquired: np.ndarray) -> np.ndarray:
        """What a model's per-input ``cost`` holds besides its acquisitions (the split
        and tree costs), given its ``acquired`` matrix; exactly 0 without those costs."""
        if not (self.split_cost or self.tree_cost):
            return np.zeros(cost.shape[0])
        return cost - self.acquisition_costs(acquired)

    def acquisition_cost(self, features: ArrayLike) -> float:
        """Cost of acquiring the distinct ``features`` once, groups included."""
        features = np.unique(np.asarray(features, dtype=np.int64))
        groups = np.unique(self.feature_group[features])
        groups = groups[groups >= 0]
        return float(self.feature_costs[features].sum() + self.group_costs[groups].sum())

    def report(self, cost: np.ndarray, acquired: np.ndarray,
               used_features: np.ndarray | Sequence[int],
               feature_names: Sequence[str],
               group_ptr: np.ndarray | None = None, *,
               categories: Categories = NO_CATEGORIES) -> CostReport:
        """The :class:`CostReport` of per-input costs ``cost``, the (n_samples,
        n_features) 0/1 matrix ``acquired`` and the features the model uses; with the
        query boundaries ``group_ptr``, the mean cost per query too; ``categories``
        names the categorical features."""
        n_queries = 0 if group_ptr is None else group_ptr.shape[0] - 1
        return CostReport(
            categorical={feature_names[m]: categories.describe(m)
                         for m in categories.features.tolist()},
            mean_cost_per_query=float(cost.sum() / n_queries) if n_queries else None,
            mean_cost=float(cost.mean()) if cost.size else 0.0, per_input_cost=cost,
            acquisition_rate=(acquired.mean(axis=0) if acquired.shape[0]
                              else np.zeros(self.n_features)),
            features_used=[feature_names[m] for m in used_features],
            coupled_cost=self.coupled_cost(used_features),
            feature_names=list(feature_names))

    def coupled_cost(self, used_features: ArrayLike) -> float:
        """Fixed once-per-model cost of the features in ``used_features``."""
        return float(self.coupled_costs[np.asarray(used_features, dtype=np.int64)].sum())
