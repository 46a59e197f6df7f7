"""Booster: an additive ensemble of regression trees (gbdt, cegb, greedy_miser)."""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from ._core._predict import (
    add_leaf_values,
    path_holds,
    predict_raw,
    predict_raw_exits,
    trees_until_held,
)
from ._ensemble import (
    TreeEnsemble,
    read_imported_from,
    read_scores,
    read_trees,
    tree_to_dict,
)
from ._model import ModelInput, NotApplicableError
from .category_bins import bitset_codes
from .costs import CostModel, CostReport, resolve_feature
from .dataset import Dataset, InputData, labelled_data
from .exits import (
    BAND,
    EPSILON_GRID,
    EXIT_FOLDS,
    GAP,
    OUTPUTS,
    ExitChoice,
    ExitRules,
    ProbabilityAgreement,
    best_epsilon,
    calibrate,
    certified_bounds,
    check_epsilon,
    check_points,
    exit_folds,
    fit_outputs,
    later_reach,
    map_outputs,
    output_range,
)
from .metrics import RANKING_OBJECTIVES, check_metric, evaluate_on, metric_maximize
from .model_io import (
    build,
    checked_params,
    file_section,
    invalid,
    model_header,
    read_attributes,
    read_categories,
    read_header,
    register_model_type,
    require,
)
from .objectives import LOG_LINK_OBJECTIVES, get_objective
from .on_demand import FeatureSource, ReadSteps

__all__ = ["Booster", "CostStage"]


class CostStage(NamedTuple):
    """One stage of a cost-aware booster (:attr:`Booster.cost_stages`): iterations
    ``first_iteration <= r < end_iteration`` grew with ``cost_tradeoff``."""
    first_iteration: int
    end_iteration: int
    cost_tradeoff: float


def _largest_leaf(tree: np.ndarray) -> float:
    """The largest |leaf value| of a tree (its share of the bound on a raw score)."""
    return float(np.abs(tree["value"][tree["left"] == -1]).max(initial=0.0))


def read_cost_stages(section: dict, name: str, cost_tradeoff: float, n_iterations: int
                     ) -> tuple[CostStage, ...]:
    """The stages of a file's algorithm section (``name``): its ``cost_stages``
    ``[[first, end, cost_tradeoff], ...]``, checked to cover the ``n_iterations``
    iterations in order, each a new trade-off (finite, >= 0); a file before format 1.8
    has none: one stage of the section's ``cost_tradeoff``."""
    if "cost_stages" not in section:
        return (CostStage(0, n_iterations, float(cost_tradeoff)),) if n_iterations else ()
    where = f"{name}.cost_stages"
    stages = require(section, "cost_stages", list, f"{name}.")
    result: list[CostStage] = []
    for k, stage in enumerate(stages):
        if (not isinstance(stage, list) or len(stage) != 3
                or not all(isinstance(v, int) and not isinstance(v, bool) for v in stage[:2])
                or isinstance(stage[2], bool) or not isinstance(stage[2], (int, float))):
            raise invalid(f"{where}[{k}] must be [first_iteration, end_iteration, "
                          "cost_tradeoff]")
        first, end, tradeoff = stage
        if first != (result[-1].end_iteration if result else 0) or not first < end:
            raise invalid(f"{where}[{k}]: the stages must follow each other from iteration "
                          "0, each of at least one iteration")
        if not (math.isfinite(tradeoff) and tradeoff >= 0) or (
                result and result[-1].cost_tradeoff == tradeoff):
            raise invalid(f"{where}[{k}]: a trade-off is a finite number >= 0, another "
                          "than the previous stage's")
        result.append(CostStage(first, end, float(tradeoff)))
    if (result[-1].end_iteration if result else 0) != n_iterations:
        raise invalid(f"{where} must cover the model's {n_iterations} iterations")
    return tuple(result)


def check_codes_within_levels(model: TreeEnsemble) -> None:
    """ValueError for a categorical split of ``model`` that sends a code left beyond its
    feature's levels (``model.categories``): a level not seen in training takes the
    code ``len(levels)``, which no split may send left (the "other" side), and with
    fewer levels than the splits' codes the levels of a DataFrame would be mapped to
    other codes than the trees were grown on (a file's levels edited, an import's
    levels paired with the wrong feature)."""
    levels = model.categories.by_feature()
    for t, tree in enumerate(model.trees):
        for node, bitset in zip(np.flatnonzero(tree["categorical"]).tolist(),
                                model.tree_bitsets(tree)):
            feature = int(tree["feature"][node])
            known, codes = levels[feature], bitset_codes(bitset[1:])
            if known is not None and codes.size and codes[-1] >= len(known):
                raise ValueError(f"tree {t}, node {node} sends code {codes[-1]} left, but "
                                 f"categorical feature {model.feature_names[feature]!r} "
                                 f"has {len(known)} levels")


@register_model_type
class Booster(TreeEnsemble):
    """A trained boosted tree model. Made by :func:`cbudget.train` or
    :func:`cbudget.load_model`.

    Each tree is a flat ``NODE_DTYPE`` struct array (node 0 the root, children by node
    id, -1 for leaves). Round ``r`` holds trees
    ``iteration_indptr[r]:iteration_indptr[r + 1]`` (one per class for multi:softprob).

    Attributes
    ----------
    objective : str
    num_class : int
    base_score : ndarray of shape (n_outputs,)
        Initial raw score per output.
    feature_names : list of str
    cost_model : cbudget.CostModel
    params : dict
        The resolved training parameters.
    best_iteration, best_score : set by early stopping (else None)
    summary : dict
        Average train/validation cost, features used and train cost per round.
    cost_stages : tuple of CostStage
        cegb and greedy_miser: the trade-off each run of iterations grew with.
    """

    model_type = "booster"
    importable = True

    def __init__(self, *, objective: str, num_class: int, base_score: ArrayLike,
                 feature_names: Sequence[str], cost_model: CostModel,
                 params: dict[str, Any]) -> None:
        super().__init__(feature_names=feature_names, cost_model=cost_model, params=params,
                         default_algorithm="gbdt")
        self.objective = objective
        # the parameters give the objective's own (quantile_alpha, huber_slope, ...)
        self._objective = get_objective(objective, num_class if num_class > 1 else None,
                                        params)
        self.num_class = int(num_class)
        self.base_score = np.asarray(base_score, dtype=np.float64)
        self._exit_rules: ExitRules | None = None
        # the cost-aware learners' stages (a tuple: copies may share it)
        self._cost_stages: tuple[CostStage, ...] = ()
        # per iteration and output, the largest / smallest sum of leaf values it can add
        # (_leaf_extremes), kept until the trees change
        self._extremes: tuple[np.ndarray, np.ndarray] | None = None
        # per output, the sum over its trees of the largest |leaf value|: with
        # |base_score| a bound on any input's raw score (add_round keeps it finite)
        self._leaf_reach = np.zeros(self.n_outputs)

    @property
    def n_outputs(self) -> int:
        """Raw scores per input: one per class for multi:softprob, else one."""
        return self._objective.n_outputs

    def transform(self, raw: np.ndarray) -> np.ndarray:
        """Raw scores (n_samples, n_outputs) to predictions (sigmoid / softmax)."""
        return self._objective.transform(raw)

    @property
    def default_metric(self) -> str:
        """The objective's metric: rmse, logloss, mlogloss, mae, ... (with the
        objective's parameter where it takes one: quantile@0.9)."""
        return self._objective.metric

    def num_boosted_rounds(self) -> int:
        """Number of boosting rounds."""
        return self.num_iterations()

    @property
    def cost_stages(self) -> tuple[CostStage, ...]:
        """cegb and greedy_miser: the stages of the model, in order, covering all its
        iterations: ``(first_iteration, end_iteration, cost_tradeoff)``, one per run of
        iterations grown with one trade-off (a model trained with a single
        ``cost_tradeoff`` has one stage; ``cost_stages`` and continued training
        (``xgb_model``) at another trade-off add more). Empty for other algorithms.
        Slicing keeps the stages cut to the slice. During training, a callback reads
        the trade-off of the latest round in ``model.cost_stages[-1]``."""
        return self._cost_stages if file_section(self.algorithm) is not None else ()

    def record_cost_stage(self, first: int, end: int, cost_tradeoff: float) -> None:
        """Record that iterations ``[first, end)`` grew with ``cost_tradeoff`` (they
        follow the stages recorded so far; the same trade-off as the last stage extends
        it)."""
        stages = list(self._cost_stages)
        if first != (stages[-1].end_iteration if stages else 0) or end <= first:
            raise ValueError(f"a cost stage [{first}, {end}) does not follow the stages "
                             f"{stages}")
        if not (math.isfinite(cost_tradeoff) and cost_tradeoff >= 0):
            raise ValueError(f"a cost stage's trade-off is a finite number >= 0, got "
                             f"{cost_tradeoff!r}")
        if stages and stages[-1].cost_tradeoff == cost_tradeoff:
            first = stages.pop().first_iteration
        stages.append(CostStage(int(first), int(end), float(cost_tradeoff)))
        self._cost_stages = tuple(stages)

    def add_round(self, trees: Iterable[np.ndarray], *,
                  cost_tradeoff: float | None = None,
                  bitsets: Sequence[Sequence[np.ndarray]] | None = None) -> None:
        """Append one boosting round: ``trees[k]`` is the tree of output ``k``
        (``cost_tradeoff``: the trade-off it grew with, recorded in :attr:`cost_stages`;
        default, for cegb and greedy_miser, ``params["cost_tradeoff"]``; ``bitsets[k]``:
        the bitsets of tree ``k``'s categorical splits, see ``TreeEnsemble._add_tree``).

        ValueError, and nothing added, for a leaf value that is not finite or a round
        after which a raw score could leave float64's range: per output, ``|base_score|``
        plus the largest ``|leaf value|`` of each of its trees must stay finite, so that no
        input's raw score (nor its prediction) can be infinite or NaN."""
        trees = list(trees)
        if len(trees) > self.n_outputs:
            raise ValueError(f"round {self.num_iterations()} has {len(trees)} trees for "
                             f"{self.n_outputs} output(s): at most one tree per output")
        reach = np.zeros(self.n_outputs)
        for k, tree in enumerate(trees):
            leaves = tree["value"][tree["left"] == -1]
            if not np.all(np.isfinite(leaves)):
                bad = leaves[~np.isfinite(leaves)][0]
                raise ValueError(f"round {self.num_iterations()}: a leaf value of the tree "
                                 f"of output {k} is {bad}")
            reach[k] = _largest_leaf(tree)
        with np.errstate(over="ignore"):        # an overflow is what this checks
            bound = np.abs(self.base_score) + self._leaf_reach + reach
        if not np.all(np.isfinite(bound)):
            raise ValueError(f"round {self.num_iterations()}: the raw scores could leave "
                             "float64's range (|base_score| plus each tree's largest |leaf "
                             "value| overflows)")
        for k, tree in enumerate(trees):
            self._add_tree(tree, k, () if bitsets is None else bitsets[k])
        self._end_iteration()
        self._leaf_reach = self._leaf_reach + reach
        if cost_tradeoff is None and file_section(self.algorithm) is not None:
            cost_tradeoff = self.params.get("cost_tradeoff")
        if cost_tradeoff is not None:
            n = self.num_iterations()
            self.record_cost_stage(n - 1, n, cost_tradeoff)
        self._extremes = None

    def _slice_extra(self, t0: int, t1: int, begin: int, end: int) -> None:
        self._exit_rules = None     # made for the whole model's iterations
        # the stages cut to the slice's iterations, empty ones dropped
        self._cost_stages = tuple(
            CostStage(max(s.first_iteration, begin) - begin, min(s.end_iteration, end) - begin,
                      s.cost_tradeoff)
            for s in self._cost_stages
            if min(s.end_iteration, end) > max(s.first_iteration, begin))
        self._extremes = None
        reach = np.zeros(self.n_outputs)
        for tree, k in zip(self.trees, self.tree_outputs):
            reach[k] += _largest_leaf(tree)
        self._leaf_reach = reach

    # -- prediction ---------------------------------------------------------------------
    # Model.predict(X, **options): each model type takes its own options
    def predict(self, X: ModelInput, *,
                output_margin: bool = False, pred_leaf: bool = False,
                iteration_range: tuple[int, int] | None = None,
                early_exit: bool | None = None, pred_contrib: bool = False) -> np.ndarray:
        """Predict.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), DataFrame, sparse or Dataset
        output_margin : bool
            Raw scores (before the sigmoid / softmax).
        pred_leaf : bool
            Return the leaf index reached in each tree, int32 (n_samples, n_trees).
        iteration_range : (begin, end), optional
            Use rounds ``begin <= r < end`` (``end = 0``: up to the last). Default: up
            to ``best_iteration`` after early stopping, else all; ``(0, 0)``: all. The
            cost methods (``predict_cost``, ``acquisitions``, ``cost_report``) take the
            same argument and default.
        early_exit : bool, optional
            With :attr:`exit_rules` (from :meth:`calibrate_exits`), an input stops at its
            exit and its prediction is its scores there (default, None: when the rules
            apply to ``iteration_range``'s iterations). False: the full model. True:
            exits, or ValueError when the model has no rules for these iterations.
            ``pred_leaf`` and ``pred_contrib`` ignore exits. The cost methods take the
            same argument.
        pred_contrib : bool
            Each feature's contribution to the raw score (exact path-dependent
            TreeSHAP, as LightGBM's ``pred_contrib`` and XGBoost's ``pred_contribs``),
            float64 (n_samples, n_outputs * (n_features + 1)) in LightGBM's layout: per
            output its feature contributions, then its expected value (the bias). Each
            output's block sums to ``predict(X, output_margin=True, early_exit=False)``.
            :meth:`explain` adds what each input paid for each feature.

        Returns
        -------
        ndarray
            (n_samples,) for regression and binary:logistic (probabilities),
            (n_samples, num_class) for multi:softprob.
        """
        if pred_leaf and pred_contrib:
            raise ValueError("pred_leaf and pred_contrib cannot both be set")
        if pred_leaf:
            return self._leaf_indices(X, iteration_range)
        if pred_contrib:
            return self._pred_contrib(X, iteration_range)
        rules = self._exits_for(iteration_range, early_exit)
        t0, t1 = self._tree_range(iteration_range)
        _, offsets, outputs, nodes = self._flat(t0, t1)
        if rules is not None:
            if isinstance(X, FeatureSource):
                raw = self._acquire(X, iteration_range=iteration_range,
                                    early_exit=early_exit)[0]
            else:
                raw = self._raw_with_exits(self.prepare_input(X), rules)[0]
        elif isinstance(X, FeatureSource):      # from the leaves the walk reached
            leaves = self._leaf_indices(X, iteration_range)
            raw = np.tile(self.base_score, (leaves.shape[0], 1))
            add_leaf_values(leaves, nodes, offsets, outputs, raw, self.n_threads())
        else:
            X = self.prepare_input(X)
            raw = np.tile(self.base_score, (X.shape[0], 1))
            predict_raw(X, nodes, offsets, outputs, raw, self.n_threads(), self.cat_words)
        if output_margin:
            return raw[:, 0].copy() if raw.shape[1] == 1 else raw
        return self.transform(raw)

    def _contributions(self, X: np.ndarray, iteration_range: tuple[int, int] | None = None,
                       **options: Any
                       ) -> tuple[np.ndarray, np.ndarray]:
        """TreeSHAP values of the raw scores (one column per output) and their bias: the
        trees' expectations plus the base score."""
        t0, t1 = self._tree_range(iteration_range)
        nodes, _, outputs, _ = self._flat(t0, t1)
        contributions, bias = self._tree_shap(X, t0, t1, nodes["value"][:, None], outputs,
                                              self.n_outputs)
        return contributions, bias + self.base_score

    # -- early exit ---------------------------------------------------------------------
    @property
    def exit_rules(self) -> ExitRules | None:
        """The exit rules (:class:`cbudget.ExitRules`: from :meth:`calibrate_exits`, or
        set), None without. Prediction and the cost methods use them by default; saved
        with the model. Slicing the model drops them."""
        return self._exit_rules

    @exit_rules.setter
    def exit_rules(self, rules: ExitRules | None) -> None:
        if rules is not None:
            if not isinstance(rules, ExitRules):
                raise TypeError(f"exit_rules must be a cbudget.ExitRules or None, not "
                                f"{type(rules).__name__}")
            self._check_exit_rules(rules)
        self._exit_rules = rules

    def _check_exit_rules(self, rules: ExitRules) -> ExitRules:
        """``rules``, if they fit this model (ValueError naming what does not): an
        objective with exits, the rule of its outputs, checks between trees."""
        if self.objective in RANKING_OBJECTIVES:
            raise NotApplicableError(self._ranking_has_no_exits())
        if rules.gap != (self.n_outputs > 1):
            raise ValueError(f"exit_rules: the {rules.rule!r} rule does not fit a model of "
                          f"{self.n_outputs} output(s)")
        if rules.iterations > self.num_iterations():
            raise ValueError(f"exit_rules: for {rules.iterations} iterations, the model has "
                          f"{self.num_iterations()}")
        trees = np.asarray(self.iteration_indptr)[rules.check_after]
        if np.any(np.diff(trees) <= 0) or np.any(trees < 1) \
                or np.any(trees >= self.iteration_indptr[rules.iterations]):
            raise ValueError("exit_rules: a check falls on an iteration without trees")
        if rules.hold is not None and rules.hold.size \
                and rules.hold[-1] >= self.num_features():
            raise ValueError(f"exit_rules: hold names feature {int(rules.hold[-1])}; the "
                             f"model has {self.num_features()}")
        return rules

    def _ranking_has_no_exits(self) -> str:
        return (f"exit rules do not apply to {self.objective}: a document's place depends "
                "on the other documents of its query, which per-document exits do not see")

    def set_exit_rules(self, rules: ExitRules | None) -> Booster:
        """Set :attr:`exit_rules` (None: remove them); returns the model."""
        self.exit_rules = rules
        return self

    def _exits_for(self, iteration_range: tuple[int, int] | None, early_exit: bool | None
                   ) -> ExitRules | None:
        """The exit rules that apply to a prediction with these options, or None."""
        if early_exit is not None and not isinstance(early_exit, (bool, np.bool_)):
            raise TypeError(f"early_exit must be None, True or False, not {early_exit!r}")
        rules = self._exit_rules
        if early_exit is False:
            return None
        if rules is None:
            if early_exit:
                raise ValueError("early_exit=True, but this model has no exit rules: make "
                                 "them with calibrate_exits(validation_data, epsilon)")
            return None
        used = self.iterations_used(iteration_range)
        if used != (0, rules.iterations):
            if early_exit:
                raise ValueError(f"the exit rules apply to iterations [0, "
                                 f"{rules.iterations}), not to {list(used)}")
            return None
        return rules

    def _exit_tree_ends(self, X: np.ndarray, iteration_range: tuple[int, int] | None,
                        early_exit: bool | None) -> np.ndarray | None:
        rules = self._exits_for(iteration_range, early_exit)
        return None if rules is None else self._raw_with_exits(X, rules)[1]

    def _raw_with_exits(self, X: np.ndarray, rules: ExitRules) -> tuple[np.ndarray, np.ndarray]:
        """(raw scores at each input's exit, the trees it evaluated) of the prepared
        ``X``."""
        indptr = np.asarray(self.iteration_indptr, dtype=np.int64)
        _, offsets, outputs, nodes = self._flat(0, int(indptr[rules.iterations]))
        raw = np.tile(self.base_score, (X.shape[0], 1))
        trees = np.empty(X.shape[0], dtype=np.int64)
        predict_raw_exits(X, nodes, offsets, outputs, indptr[rules.check_after], rules.lower,
                          rules.upper, rules.gap, raw, trees, self.n_threads(),
                          self._leaf_holds(rules.hold, nodes, offsets), self.cat_words)
        self._map_exits(raw, trees, rules)
        return raw, trees

    def _leaf_holds(self, hold: np.ndarray | None, nodes: np.ndarray, offsets: np.ndarray
                    ) -> np.ndarray | None:
        """Per node of the packed trees, whether its path splits on a feature of
        ``hold`` (:attr:`cbudget.ExitRules.hold`); None without."""
        if hold is None:
            return None
        feature_held = np.zeros(self.num_features(), dtype=np.uint8)
        feature_held[hold] = 1
        flags = np.empty(nodes.shape[0], dtype=np.uint8)
        path_holds(nodes, offsets, feature_held, flags)
        return flags

    def _hold_features(self, hold: Any) -> np.ndarray | None:
        """The feature indices of :meth:`calibrate_exits`' ``hold``: a cost (the features
        whose first read costs at least that, their group's cost included), or feature
        indices / names; None for None or when no feature is named."""
        if hold is None:
            return None
        if isinstance(hold, (int, float, np.number)) and not isinstance(hold, bool):
            if not (math.isfinite(hold) and hold >= 0):
                raise ValueError(f"hold must be a cost >= 0 or a list of features, got "
                                 f"{hold!r}")
            features = np.flatnonzero(self.cost_model.first_read_costs() >= float(hold))
        elif isinstance(hold, (str, bytes, dict)) or not isinstance(hold, Iterable):
            raise TypeError(f"hold must be a cost (a number) or a sequence of feature "
                            f"indices or names, got {hold!r}")
        else:
            names = list(self.feature_names)
            features = np.unique(np.asarray([resolve_feature(m, names, "hold") for m in hold],
                                            dtype=np.int64))
        return features.astype(np.int64) if features.size else None

    def _map_exits(self, raw: np.ndarray, trees: np.ndarray, rules: ExitRules) -> None:
        """Replace, in place, the raw scores of the inputs that exited (``trees``: the
        trees each evaluated) by their check's output map (:func:`cbudget.exits.map_outputs`)."""
        if rules.outputs is None or rules.check_after.size == 0:
            return
        low, high = self._output_range(rules.iterations, rules.check_after,
                                       rules.calibration.get("tolerance"), rules.gap)
        map_outputs(rules, raw, self._exit_checks(trees, rules), low, high)

    def _exit_checks(self, trees: np.ndarray, rules: ExitRules) -> np.ndarray:
        """Per input, the check of ``rules`` at which it exited (``trees``: the trees it
        evaluated), -1 for one that did not."""
        ends = np.asarray(self.iteration_indptr, dtype=np.int64)[rules.check_after]
        check = np.searchsorted(ends, trees)
        exited = (check < ends.size) & (ends[np.minimum(check, ends.size - 1)] == trees)
        return np.where(exited, check, -1)

    def _leaf_extremes(self, end: int) -> tuple[np.ndarray, np.ndarray]:
        """(largest, smallest) sum of leaf values each of iterations ``0..end-1`` can add
        to each output, arrays (end, n_outputs)."""
        if self._extremes is None:
            indptr = self.iteration_indptr
            n = self.num_iterations()
            leaf_max, leaf_min = np.zeros((n, self.n_outputs)), np.zeros((n, self.n_outputs))
            for r in range(n):
                for t in range(indptr[r], indptr[r + 1]):
                    values = self.trees[t]["value"][self.trees[t]["left"] == -1]
                    leaf_max[r, self.tree_outputs[t]] += values.max()
                    leaf_min[r, self.tree_outputs[t]] += values.min()
            self._extremes = leaf_max, leaf_min
        return self._extremes[0][:end], self._extremes[1][:end]

    def _score_magnitude(self, end: int) -> float:
        """A bound on the size of a raw score with iterations ``0..end-1`` (for the
        rounding slack of the certified bounds)."""
        leaf_max, leaf_min = self._leaf_extremes(end)
        return float(np.abs(self.base_score).max()
                     + np.maximum(np.abs(leaf_max), np.abs(leaf_min)).sum())

    def _output_range(self, end: int, checks: np.ndarray, tolerance: float | None,
                      gap: bool) -> tuple[np.ndarray, np.ndarray]:
        """Per check, where an exited output may lie (:func:`cbudget.exits.output_range`)."""
        leaf_max, leaf_min = self._leaf_extremes(end)
        return output_range(*later_reach(leaf_max, leaf_min, checks), tolerance,
                            self._score_magnitude(end), gap)

    def read_steps(self, source: FeatureSource, rows: np.ndarray,
                   iteration_range: tuple[int, int] | None = None,
                   early_exit: bool | None = None, **reads: Any) -> ReadSteps:
        """All trees walked together (:func:`cbudget.on_demand.walk_trees`); with exit
        rules, the trees between two checks that can let inputs out together, the inputs
        that exit at a check walking no further. Returns the leaves each input reaches
        (without exits), or (raw scores at the exit, trees evaluated) with them."""
        rules = self._exits_for(iteration_range, early_exit)
        if rules is None:
            return super().read_steps(source, rows, iteration_range)
        return self._exit_walk(source, rows, rules)

    def _exit_walk(self, source: FeatureSource, rows: np.ndarray, rules: ExitRules
                   ) -> ReadSteps:
        indptr = self.iteration_indptr
        firing = np.flatnonzero(rules.firing())
        bounds = [0, *(indptr[rules.check_after[k]] for k in firing), indptr[rules.iterations]]
        raw = np.tile(self.base_score, (rows.size, 1))
        trees = np.full(rows.size, bounds[-1], dtype=np.int64)
        held = np.zeros(rows.size, dtype=bool)
        live = np.arange(rows.size)
        for j, (t0, t1) in enumerate(zip(bounds[:-1], bounds[1:])):
            leaves = yield from self._walk(source, rows[live], t0, t1)
            _, offsets, outputs, nodes = self._flat(t0, t1)
            scores = raw[live]
            add_leaf_values(leaves, nodes, offsets, outputs, scores, self.n_threads())
            raw[live] = scores
            flags = self._leaf_holds(rules.hold, nodes, offsets)
            if flags is not None and leaves.size:
                held[live] |= flags[offsets[:-1] + leaves].any(axis=1)
            if j < firing.size:
                out = rules.exits(scores, int(firing[j]), held[live])
                trees[live[out]] = t1
                live = live[~out]
        self._map_exits(raw, trees, rules)
        return raw, trees

    def exit_iterations(self, X: ModelInput, *, iteration_range: tuple[int, int] | None = None,
                        early_exit: bool | None = None) -> np.ndarray:
        """The iterations each input evaluates before it exits (all of
        ``iteration_range``'s without exit rules or with ``early_exit=False``).

        Returns
        -------
        ndarray of int64, shape (n_samples,)
        """
        reads = {"iteration_range": iteration_range, "early_exit": early_exit}
        X = self.prepare_input(X, **reads)
        rules = self._exits_for(iteration_range, early_exit)
        if rules is None:
            begin, end = self.iterations_used(iteration_range)
            return np.full(X.shape[0], end - begin, dtype=np.int64)
        return np.searchsorted(self.iteration_indptr, self._raw_with_exits(X, rules)[1]) \
            .astype(np.int64)

    def calibrate_exits(self, data: InputData,  # type: ignore[override]
                        epsilon: float | None = None, *, every: int = 1,
                        tolerance: float | None = None, decision_threshold: float = 0.0,
                        max_metric_drop: float | None = None, metric: str | None = None,
                        iteration_range: tuple[int, int] | None = None,
                        checks: str | Sequence[int] | None = None,
                        outputs: str = "calibrated",
                        hold: float | Sequence[int | str] | None = None) -> ExitRules:
        """Make exit rules on validation ``data`` and set them (:attr:`exit_rules`).

        After every ``every`` iterations, an input leaves when its prediction is settled:
        one score (regression, binary) outside a band, or (multiclass) its two largest
        class scores more than a threshold apart. The thresholds are the loosest with
        which the exited predictions disagree with the full model's on at most a fraction
        ``epsilon`` of ``data``'s inputs (binary and multiclass: the predicted class;
        regression: a prediction more than ``tolerance`` away), spread evenly over the
        checks; a share of their total weight when ``data`` is a Dataset with weights
        (an input of weight 2 counts as that input twice). Every check also lets out the
        inputs whose prediction the later trees cannot change (their largest and
        smallest leaf values summed), so ``epsilon=0`` changes no input's class (a
        regression prediction moves by at most ``tolerance``) on any input, not only
        ``data``'s.

        The rule is learned on ``data``: on other inputs the disagreement is near
        ``epsilon``, not bounded by it (``epsilon=0`` excepted).

        An exited input's output is by default an estimate of the full model's
        (``outputs="calibrated"``): per check, a monotone map of its partial score
        fitted on ``data``'s inputs that exit there (isotonic regression to the full
        model's probability, binary, or prediction, regression; multiclass, a
        temperature of the class scores fitted to the full model's probabilities). It
        keeps the partial score's class (binary: its side of ``decision_threshold``;
        multiclass: the largest score) and stays within what the later trees could add
        (regression: within ``tolerance`` of the full prediction wherever the exit is
        certified, and a check's map kept only where it leaves no more of ``data``'s
        exits beyond ``tolerance`` than the partial scores, so that the disagreement on
        ``data`` stays within ``epsilon``), so the guarantees of ``epsilon=0`` hold;
        probabilities, AUC and log-loss come much nearer the full model's than with the
        partial scores
        (benchmarks/results/exit_outputs.md). ``outputs="partial"``: the scores so far,
        whose probabilities are less extreme than the full model's would mostly be
        (docs/architecture.md, "Early exit").

        Parameters
        ----------
        data : array-like or Dataset
            Validation inputs (labels needed only with ``max_metric_drop``).
        epsilon : float in [0, 1], optional
            Default 0.01 (unless ``max_metric_drop`` is given).
        every : int, default 1
            Iterations between two checks. Fewer checks save less, but on-demand
            prediction (:class:`cbudget.FeatureSource`) takes fewer rounds of fetches.
        tolerance : float, optional
            Regression (required there): how far an exited prediction may be from the
            full model's and still agree.
        decision_threshold : float, default 0
            Binary: the raw score above which the model predicts the positive class.
        max_metric_drop : float, optional
            Instead of ``epsilon``: the largest epsilon of (0.1, 0.05, ..., 0.001, 0)
            whose exits worsen ``metric`` on ``data`` by at most this much, scored as
            inputs they were not calibrated on get them (:meth:`cross_fitted_exits`:
            each half of ``data`` with the rules of the other; in-sample below 4
            rows); the rules set are those of that epsilon on all of ``data``.
        metric : str, optional
            For ``max_metric_drop``: any metric of the objective (binary: "error",
            "auc", "logloss", "rmse"; multiclass: "merror", "mlogloss"; regression:
            "rmse"), measured with the exits' outputs (maps included); default "error"
            (binary), "merror" (multiclass), "rmse" (regression).
        iteration_range : (begin, end), optional
            The iterations predictions will use (begin must be 0); default as
            :meth:`predict`'s.
        checks : "stages" or sequence of int, optional
            Instead of ``every``: ``"stages"``, a check after each of the model's
            :attr:`cost_stages` but the last (the inputs the cheap first stages settle
            leave before the trees that buy the costly features; ValueError when the
            iterations used hold no stage boundary); or the iteration
            counts after which to check (ascending, within ``[1, end)``).
        outputs : {"calibrated", "partial"}, default "calibrated"
            What an exited input outputs (above); ``data``'s weights, if any, weigh the
            maps' fit as they weigh ``epsilon``.
        hold : float or sequence of int or str, optional
            Features that hold an input: one whose path through the trees before a
            check has split on any of them does not exit there nor later
            (:attr:`cbudget.ExitRules.hold`). A number: the features whose first read
            costs at least that much (their cost group's cost included); or their
            indices or names. Once an input has paid for such a feature, the later
            trees, grown to use it, cost it little more, while exiting would lose what
            it adds: a cascade's dear stage (``checks="stages"``) keeps the inputs it
            has bought the dear features for. The calibration spends ``epsilon`` on
            the others. Default None: any input may exit.

        Returns
        -------
        ExitRules
            Also in :attr:`exit_rules`, saved with the model.
        """
        data = labelled_data(data, self.feature_names)   # (X, y) as a Dataset
        if max_metric_drop is None:
            rules = self.exit_rules_for(
                data, [0.01 if epsilon is None else epsilon], every=every, tolerance=tolerance,
                decision_threshold=decision_threshold, iteration_range=iteration_range,
                checks=checks, outputs=outputs, hold=hold)[0]
        elif epsilon is not None:
            raise ValueError("give epsilon or max_metric_drop, not both")
        else:
            rules = self._checked_stages(self._calibrated_by_metric(
                data, float(max_metric_drop), metric, (every, checks), tolerance,
                decision_threshold, iteration_range, outputs, hold), checks)
        self._exit_rules = rules
        return rules

    def exit_rules_for(self, data: InputData, epsilons: Sequence[float], *, every: int = 1,
                       tolerance: float | None = None, decision_threshold: float = 0.0,
                       iteration_range: tuple[int, int] | None = None,
                       checks: str | Sequence[int] | None = None,
                       outputs: str = "calibrated",
                       hold: float | Sequence[int | str] | None = None) -> list[ExitRules]:
        """The exit rules :meth:`calibrate_exits` would make on ``data`` for each of
        ``epsilons`` (the other options as there), in one pass over the partial scores
        for them all; the model's own rules (:attr:`exit_rules`) stay as they are. Set
        one with ``model.exit_rules = rules`` (on a :meth:`copy` to keep several)."""
        data = labelled_data(data, self.feature_names)   # (X, y) as a Dataset
        epsilons = [check_epsilon(e) for e in epsilons]
        if not epsilons:
            raise ValueError("epsilons is empty")
        made = self._calibrated(data, epsilons, (every, checks), tolerance,
                                decision_threshold, iteration_range, outputs, hold=hold)
        return [self._checked_stages(rules, checks) for rules in made]

    def cross_fitted_exits(self, data: Dataset, epsilons: Sequence[float], **options: Any
                           ) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per epsilon, ``(predictions, costs)`` of ``data``'s inputs as inputs the exit
        rules were not calibrated on get them: ``data``'s rows in :data:`EXIT_FOLDS`
        parts (a fixed shuffle), each part predicted (as :meth:`predict`) and costed
        (per input, as :meth:`predict_cost`) with the rules :meth:`exit_rules_for`
        makes on the other parts with ``options``. On the rows they were calibrated on,
        exits disagree with the full model on at most epsilon of them by construction:
        these figures are what a choice among epsilons should go by. ValueError for
        fewer than ``2 * EXIT_FOLDS`` rows."""
        data = labelled_data(data, self.feature_names)   # (X, y) as a Dataset
        if not isinstance(data, Dataset):
            raise TypeError("data must be a cbudget.Dataset")
        n = data.num_data()
        if n < 2 * EXIT_FOLDS:
            raise ValueError(f"cross-fitting needs at least {2 * EXIT_FOLDS} rows, got {n}")
        part = exit_folds(n)
        scratch = self.copy()
        found: list[tuple[np.ndarray, np.ndarray]] = []
        for k in range(EXIT_FOLDS):
            rows = np.flatnonzero(part == k)
            held_out = data.subset(rows)
            rules_of_others = self.exit_rules_for(data.subset(np.flatnonzero(part != k)),
                                                  epsilons, **options)
            for i, rules in enumerate(rules_of_others):
                scratch.exit_rules = rules
                reads: dict[str, Any] = {"iteration_range": (0, rules.iterations),
                                         "early_exit": True}
                outputs = scratch.predict(held_out, **reads)
                costs = scratch.predict_cost(held_out, **reads)
                if k == 0:
                    found.append((np.empty((n, *outputs.shape[1:])), np.empty(n)))
                found[i][0][rows] = outputs
                found[i][1][rows] = costs
        return found

    def _checked_stages(self, rules: ExitRules, checks: Any) -> ExitRules:
        """``rules``, unless made with ``checks="stages"`` on iterations within one stage."""
        if isinstance(checks, str) and rules.check_after.size == 0:
            # rules that never check would pass for a cascade's exits, silently
            raise ValueError(
                f"checks='stages': the iterations used, [0, {rules.iterations}), lie in one "
                f"cost stage ({list(self.cost_stages)}), so there is no stage boundary to "
                "check at: train with cost_stages, or give checks= or every=")
        return rules

    def _check_after(self, end: int, where: tuple[int, Any]) -> tuple[np.ndarray, str | None]:
        """(the checks of exit rules for iterations ``[0, end)``, how they were given:
        None for ``every``, "stages" or "given") from ``where = (every, checks)`` of
        :meth:`calibrate_exits`."""
        every, checks = where
        if checks is None:
            return check_points(end, every), None
        if not (isinstance(every, int) and every == 1):
            raise ValueError("give checks or every, not both")
        if isinstance(checks, str):
            if checks != "stages":
                raise ValueError(f"checks must be 'stages' or a sequence of iteration "
                                 f"counts, got {checks!r}")
            if not self.cost_stages:
                raise ValueError(f"checks='stages' needs a model trained in cost stages "
                                 f"(cegb, greedy_miser), not {self.algorithm}")
            return np.asarray([s.end_iteration for s in self.cost_stages
                               if s.end_iteration < end], dtype=np.int64), "stages"
        return check_points(end, every, checks), "given"

    def _calibrated(self, data: Dataset | np.ndarray, epsilons: Sequence[float],
                    where: tuple[int, Any], tolerance: float | None,
                    decision_threshold: float, iteration_range: tuple[int, int] | None,
                    outputs: str = "calibrated", weight: np.ndarray | None = None,
                    hold: float | Sequence[int | str] | None = None) -> list[ExitRules]:
        """Exit rules for each of ``epsilons`` (:func:`cbudget.exits.calibrate`), checked
        where ``where = (every, checks)`` says (:meth:`_check_after`), with their output
        maps (:func:`cbudget.exits.fit_outputs`) unless ``outputs`` is "partial"; both
        weighted by ``data``'s weights, or ``weight`` for a matrix; and the features
        that ``hold`` inputs (:meth:`_hold_features`)."""
        if self.objective in RANKING_OBJECTIVES:
            raise NotApplicableError(self._ranking_has_no_exits())
        if outputs not in OUTPUTS:
            raise ValueError(f"outputs must be one of {OUTPUTS}, got {outputs!r}")
        begin, end = self.iterations_used(iteration_range)
        if begin != 0:
            raise ValueError("exit rules apply to iterations from 0: iteration_range must "
                             "begin at 0")
        if end == 0:
            raise ValueError("the model has no iterations to exit from")
        gap = self.n_outputs > 1
        regression = not gap and self.objective != "binary:logistic"
        if self.objective in LOG_LINK_OBJECTIVES:
            # the exit bounds are on the raw score; a tolerance on exp of it is not one
            raise NotApplicableError(
                f"exit rules are not calibrated for {self.objective} yet: it predicts "
                "exp(raw score), and the exits bound the raw score's distance")
        if regression:
            if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float, np.number)) \
                    or not (math.isfinite(tolerance) and tolerance >= 0):
                raise ValueError("regression exits need tolerance (a finite number >= 0): "
                                 "how far an exited prediction may be from the full model's")
            tolerance = float(tolerance)
        elif tolerance is not None:
            if gap:
                raise ValueError("tolerance is for regression (a prediction's distance) and "
                                 "binary (a probability's): multiclass exits agree when "
                                 "the class does")
            if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float, np.number)) \
                    or not 0 <= tolerance <= 1:
                raise ValueError(f"binary exits' tolerance is a probability in [0, 1]: how "
                                 f"far an exited output's probability may be from the full "
                                 f"model's and still agree; got {tolerance!r}")
            tolerance = float(tolerance)
        if isinstance(decision_threshold, bool) or not isinstance(
                decision_threshold, (int, float, np.number)) \
                or not math.isfinite(decision_threshold):
            raise ValueError("decision_threshold must be a finite number")
        checks, given = self._check_after(end, where)
        hold_features = self._hold_features(hold)
        X = self.prepare_input(data)
        if isinstance(data, Dataset):
            weight = data.weight
        indptr = self.iteration_indptr
        _, offsets, tree_outputs, nodes = self._flat(0, indptr[end])
        held_from = None
        if hold_features is not None:
            # per input, the first check at which it is held (checks.size: never)
            until = np.empty(X.shape[0], dtype=np.int64)
            trees_until_held(X, nodes, offsets, self._leaf_holds(hold_features, nodes, offsets),
                             until, self.n_threads(), self.cat_words)
            held_from = np.searchsorted(np.asarray(indptr)[checks], until, side="left")
        full = np.tile(self.base_score, (X.shape[0], 1))
        predict_raw(X, nodes, offsets, tree_outputs, full, self.n_threads(), self.cat_words)
        # the most and least each iteration can add to each output
        leaf_max, leaf_min = self._leaf_extremes(end)
        rule = GAP if gap else BAND
        # binary with a tolerance: the probability's (ProbabilityAgreement)
        probability = None if regression or gap else tolerance
        certified = certified_bounds(leaf_max, leaf_min, checks, rule=rule,
                                     decision_threshold=None if regression
                                     else float(decision_threshold),
                                     tolerance=None if probability is not None else tolerance,
                                     magnitude=self._score_magnitude(end),
                                     probability_tolerance=probability)

        def stages() -> Iterator[tuple[int, np.ndarray]]:
            raw = np.tile(self.base_score, (X.shape[0], 1))
            done = 0
            for k, check in enumerate(checks.tolist()):
                t = indptr[check]
                predict_raw(X, nodes[offsets[done]:offsets[t]],
                            offsets[done:t + 1] - offsets[done], tree_outputs[done:t], raw,
                            self.n_threads(), self.cat_words)
                done = t
                yield k, raw

        weight = data.weight if isinstance(data, Dataset) else weight
        agreement = None if probability is None else ProbabilityAgreement(
            probability, float(decision_threshold), full, self.transform(full), weight,
            *self._output_range(end, checks, None, False), self.transform,
            fit=outputs == "calibrated", held_from=held_from)
        made = calibrate(stages(), full, epsilons, rule=rule, iterations=end, checks=checks,
                         every=where[0], decision_threshold=None if regression or gap
                         else float(decision_threshold),
                         tolerance=tolerance if regression else None,
                         certified=certified, weight=weight, held_from=held_from,
                         disagrees=agreement)
        for rules in made:
            rules.hold = hold_features
            if probability is not None:
                rules.calibration["probability_tolerance"] = probability
            if given is not None:       # not every `every` iterations
                del rules.calibration["every"]
                rules.calibration["checks"] = given
        if outputs == "calibrated":
            # a second pass over the checks: the maps need each rule's exits
            fit_outputs(stages(), self.transform(full), weight, made, held_from)
            if regression:
                for rules in made:
                    self._keep_maps_within_epsilon(
                        X, rules, None, lambda raw: np.abs(raw - full)[:, 0] > tolerance,
                        weight)
            elif agreement is not None:
                for rules in made:
                    self._keep_maps_within_epsilon(X, rules, agreement.maps,
                                                   lambda raw: agreement.off(raw[:, 0]),
                                                   weight)
        return made

    def _keep_maps_within_epsilon(self, X: np.ndarray, rules: ExitRules,
                                  counted: list[Any] | None,
                                  off: Callable[[np.ndarray], np.ndarray],
                                  weight: np.ndarray | None) -> None:
        """A map moves a prediction, so it may take an exit that agreed with the full
        model's (``off(raw)``: bool per input, whether raw scores disagree) out of the
        agreement. Keep a check's map only if, of ``X``'s inputs that exit there, no
        more (by ``weight``) disagree than with the outputs the calibration counted
        there: ``counted`` (per check a map, or None: the partial scores; None: partial
        scores everywhere), the regression's partial scores, the binary tolerance's
        maps fitted before the thresholds (:class:`cbudget.exits.ProbabilityAgreement`);
        the (weighted) disagreement on ``X`` then stays within the epsilon the
        calibration spent. Sets ``calibration["disagreement"]``."""
        w = np.ones(X.shape[0]) if weight is None else np.asarray(weight, dtype=np.float64)
        before, trees = self._raw_with_exits(X, dataclasses.replace(rules, outputs=None))
        after = before.copy()
        self._map_exits(after, trees, rules)
        if counted is not None:
            self._map_exits(before, trees, dataclasses.replace(rules, outputs=counted))
        check = self._exit_checks(trees, rules)
        off_before, off_after = off(before), off(after)
        if rules.outputs is not None:
            outputs = list(rules.outputs)
            for k in range(len(outputs)):
                there = check == k
                if w[there & off_after].sum() > w[there & off_before].sum():
                    outputs[k] = None if counted is None else counted[k]
                    off_after[there] = off_before[there]
            rules.outputs = outputs
        total = w.sum()
        rules.calibration["disagreement"] = float(w[off_after].sum() / total) if total > 0 \
            else 0.0

    def _exit_metric_default(self) -> str:
        if self.n_outputs > 1:
            return "merror"
        return "error" if self.objective == "binary:logistic" else "rmse"

    def _scored_exits(self, data: Dataset, X: np.ndarray, rules: ExitRules, metric: str
                      ) -> tuple[float, float]:
        """(mean cost, ``metric``) of predicting ``data`` (prepared: ``X``) with ``rules``."""
        raw, trees = self._raw_with_exits(X, rules)
        offsets, nodes = self.packed_trees((0, rules.iterations))
        bitsets = self.cost_model.new_bitsets(X.shape[0])
        cost = np.zeros(X.shape[0])
        self.cost_model.accumulate(X, nodes, offsets, bitsets, cost,
                                   n_threads=self.n_threads(), row_tree_end=trees,
                                   cat_words=self.cat_words)
        return (float(cost.mean()) if cost.size else 0.0,
                evaluate_on(metric, data, self.transform(raw)))

    def _calibrated_by_metric(self, data: InputData, max_drop: float, metric: str | None,
                              where: tuple[int, Any], tolerance: float | None,
                              decision_threshold: float,
                              iteration_range: tuple[int, int] | None, outputs: str,
                              hold: float | Sequence[int | str] | None = None) -> ExitRules:
        if not isinstance(data, Dataset) or data.label is None:
            raise TypeError("max_metric_drop needs data as a cbudget.Dataset with labels")
        if not (math.isfinite(max_drop) and max_drop >= 0):
            raise ValueError(f"max_metric_drop must be a finite number >= 0, got {max_drop}")
        metric = metric or self._exit_metric_default()
        check_metric(metric, self.objective)
        candidates = self._calibrated(data, EPSILON_GRID, where, tolerance,
                                      decision_threshold, iteration_range, outputs, hold=hold)
        X = self.prepare_input(data)
        if data.num_data() >= 2 * EXIT_FOLDS:
            # scored as unseen inputs would get them (cross_fitted_exits), not on the
            # rows the rules were calibrated on, where they look better than they are
            every, checks = where
            folded = self.cross_fitted_exits(
                data, EPSILON_GRID, every=every, checks=checks, tolerance=tolerance,
                decision_threshold=decision_threshold, iteration_range=iteration_range,
                outputs=outputs, hold=hold)
            scores = [(rules.calibration["epsilon"], evaluate_on(metric, data, predictions))
                      for rules, (predictions, _) in zip(candidates, folded, strict=True)]
        else:
            scores = [(rules.calibration["epsilon"],
                       self._scored_exits(data, X, rules, metric)[1]) for rules in candidates]
        full = evaluate_on(metric, data, self.predict(X, iteration_range=(
            0, candidates[0].iterations), early_exit=False))
        chosen = candidates[best_epsilon(scores, full, max_drop, metric_maximize(metric))]
        chosen.calibration["max_metric_drop"] = max_drop
        return chosen

    def best_exit_within_budget(self, data: Dataset, budget: float, *,
                                epsilons: Sequence[float] = EPSILON_GRID,
                                metric: str | None = None, every: int = 1,
                                tolerance: float | None = None,
                                iterations: Sequence[int] | None = None,
                                checks: str | Sequence[int] | None = None,
                                outputs: str = "calibrated",
                                hold: float | Sequence[int | str] | None = None,
                                exit_scoring: str = "cross_fitted") -> ExitChoice:
        """The (iterations, epsilon) pair whose model, with exits calibrated on ``data``,
        scores best on ``data`` within a mean cost per input of ``budget``.

        Parameters
        ----------
        data : Dataset with labels (validation data)
        budget : float
        epsilons : sequence of float
            The epsilons of :meth:`calibrate_exits` tried.
        metric : str, optional
            Default: the model's (:attr:`default_metric`).
        every, tolerance, checks, hold : as for :meth:`calibrate_exits` (``checks``: of
            each model tried, those below its iterations)
        outputs : {"calibrated", "partial"}, default "calibrated"
            What an exited input outputs, as for :meth:`calibrate_exits`: each pair is
            scored with these outputs, and the model chosen keeps them (its output
            maps, or none with "partial").
        iterations : sequence of int, optional
            The numbers of iterations tried; default every one up to 32 iterations, else
            32 spread evenly from 1 to all.
        exit_scoring : {"cross_fitted", "in_sample"}, default "cross_fitted"
            How a pair is scored, as :func:`cbudget.cost_path`'s: ``"cross_fitted"``,
            by :meth:`cross_fitted_exits` (each part of ``data`` predicted with exits
            calibrated on the others, as unseen inputs get them), its cost the larger of
            theirs and that of its own exits (calibrated on all of ``data``, as kept);
            ``"in_sample"``, by its own exits on ``data`` (optimistic: there they
            disagree with the full model on at most epsilon of the inputs by
            construction). Below ``2 * EXIT_FOLDS`` rows, in-sample.

        Returns
        -------
        ExitChoice
            ``(model, iteration, epsilon, cost, score, metric)``: ``model`` holds
            iterations ``0..iteration`` and the calibrated exit rules; ``cost`` and
            ``score`` as ``exit_scoring`` measures them.

        Raises
        ------
        ValueError
            If no pair is within ``budget``.
        """
        data = labelled_data(data, self.feature_names)   # (X, y) as a Dataset
        if not isinstance(data, Dataset) or data.label is None:
            raise TypeError("data must be a cbudget.Dataset with labels")
        budget = float(budget)
        if not budget >= 0:
            raise ValueError(f"budget must be >= 0, got {budget}")
        epsilons = [check_epsilon(e) for e in epsilons]
        if not epsilons:
            raise ValueError("epsilons is empty")
        metric = metric or self.default_metric
        check_metric(metric, self.objective)
        n = self.num_iterations()
        if iterations is None:
            ends = np.unique(np.linspace(1, n, min(n, 32)).round().astype(int)).tolist()
        else:
            ends = sorted({int(r) for r in iterations})
            if not ends or ends[0] < 1 or ends[-1] > n:
                raise ValueError(f"iterations must be in [1, {n}]")
        if exit_scoring not in ("cross_fitted", "in_sample"):
            raise ValueError(f'exit_scoring must be "cross_fitted" or "in_sample", got '
                             f'{exit_scoring!r}')
        cross_fitted = exit_scoring == "cross_fitted" and data.num_data() >= 2 * EXIT_FOLDS
        sign = 1.0 if metric_maximize(metric) else -1.0
        X = self.prepare_input(data)
        best, best_key = None, None
        for end in ends:
            model = self[:end]
            where = (every, checks if isinstance(checks, str) or checks is None
                     else [c for c in checks if c < end])
            made = model._calibrated(X, epsilons, where, tolerance, 0.0, None, outputs,
                                     weight=data.weight, hold=hold)
            folded = model.cross_fitted_exits(
                data, epsilons, every=every, checks=where[1], tolerance=tolerance,
                outputs=outputs, hold=hold) if cross_fitted else [None] * len(made)
            for rules, unseen in zip(made, folded, strict=True):
                model._exit_rules = rules
                cost, score = model._scored_exits(data, X, rules, metric)
                if unseen is not None:
                    predictions, costs = unseen
                    cost, score = max(cost, float(costs.mean())), evaluate_on(
                        metric, data, predictions)
                key = (sign * score, -cost)
                if cost <= budget and (best_key is None or key > best_key):
                    best_key = key
                    best = ExitChoice(model, end - 1, rules.calibration["epsilon"], cost,
                                      score, metric)
                model = model.copy()
        if best is None:
            raise ValueError(f"no model with exits is within budget {budget}")
        return best

    def cost_report(self, X: ModelInput, *, iteration_range: tuple[int, int] | None = None,
                    early_exit: bool | None = None) -> CostReport:
        """As :meth:`TreeEnsemble.cost_report`; a model trained in cost stages also
        reports per stage the inputs that reach it and the mean cost by its end
        (``CostReport.cost_stages``)."""
        report = super().cost_report(X, iteration_range=iteration_range,
                                     early_exit=early_exit)
        begin, end = self.iterations_used(iteration_range)
        stages = [s for s in self.cost_stages if s.end_iteration > begin
                  and s.first_iteration < end]
        if not stages:
            return report
        reads = {"iteration_range": iteration_range, "early_exit": early_exit}
        X = self.prepare_input(X, **reads)
        indptr = np.asarray(self.iteration_indptr, dtype=np.int64)
        t0 = indptr[begin]
        offsets, nodes = self.packed_trees(iteration_range)
        exit_ends = self._exit_tree_ends(X, iteration_range, early_exit)
        tree_ends = (np.full(X.shape[0], indptr[end], dtype=np.int64) if exit_ends is None
                     else exit_ends)
        rows = []
        for stage in stages:
            first = max(stage.first_iteration, begin)
            last = min(stage.end_iteration, end)
            cost = np.zeros(X.shape[0])
            self.cost_model.accumulate(
                X, nodes, offsets, self.cost_model.new_bitsets(X.shape[0]), cost,
                n_threads=self.n_threads(), cat_words=self.cat_words,
                row_tree_end=np.minimum(tree_ends, indptr[last]) - t0)
            rows.append({"first_iteration": int(first), "end_iteration": int(last),
                         "cost_tradeoff": stage.cost_tradeoff,
                         "reached_share": float((tree_ends > indptr[first]).mean())
                         if X.shape[0] else 0.0,
                         "mean_cost": float(cost.mean()) if cost.size else 0.0})
        return dataclasses.replace(report, cost_stages=rows)

    def _staged_metric(self, data: Dataset, metric: str) -> np.ndarray:
        """``metric`` of ``data`` using rounds ``0..r``, for each round ``r``."""
        X = self.prepare_input(data)
        _, offsets, outputs, nodes = self._flat(0, len(self.trees))
        raw = np.tile(self.base_score, (X.shape[0], 1))
        scores = np.zeros(self.num_boosted_rounds())
        for r in range(self.num_boosted_rounds()):
            t0, t1 = self.iteration_indptr[r], self.iteration_indptr[r + 1]
            predict_raw(X, nodes[offsets[t0]:offsets[t1]], offsets[t0:t1 + 1] - offsets[t0],
                        outputs[t0:t1], raw, self.n_threads(), self.cat_words)
            scores[r] = evaluate_on(metric, data, self.transform(raw))
        return scores

    # -- files --------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The JSON document: the header, ``iteration_indptr``, ``base_score``, the trees
        (column arrays with per-node cost metadata) and, for CEGB and Greedy Miser, a
        section named after the algorithm with what a reader needs to interpret the
        per-node ``gain`` and ``cost_penalty``; a model whose first rounds were imported
        from another library, the ``imported_from`` section."""
        doc = model_header(self)
        doc["iteration_indptr"] = list(self.iteration_indptr)
        doc["base_score"] = self.base_score.tolist()
        doc["trees"] = [tree_to_dict(t, k, self.cat_words)
                        for t, k in zip(self.trees, self.tree_outputs)]
        if self.imported_from is not None:
            doc["imported_from"] = dict(self.imported_from)
        if self._exit_rules is not None:
            doc["exit_rules"] = self._exit_rules.to_dict()
        # the cost-aware algorithms' section (the registry's): their cost trade-off
        section = file_section(self.algorithm)
        if section is not None:
            p = self.params
            doc[section] = {
                "cost_tradeoff": float(p["cost_tradeoff"]),
                "grow_policy": p["grow_policy"],
                "num_leaves": p["num_leaves"],
                "max_depth": p["max_depth"],
                "gain_scale": 0.5,
                "gradient_order": 1 if self.algorithm == "greedy_miser" else 2,
                "learning_rate": float(p["learning_rate"]),
                # format 1.8: the trade-off of each run of iterations
                "cost_stages": [[s.first_iteration, s.end_iteration, s.cost_tradeoff]
                                for s in self.cost_stages],
            }
        return doc

    @classmethod
    def from_dict(cls, doc: dict[str, Any], *, expensive_model: Any = None) -> Booster:
        header = read_header(doc, cls)
        num_class = require(doc, "num_class", int)
        objective, params = header.objective, header.params
        if num_class < 1 or (num_class > 1) != (objective == "multi:softprob"):
            raise invalid(f"num_class {num_class} does not fit objective {objective!r}")
        name = file_section(params["algorithm"])
        section = None
        if name is not None:
            section = require(doc, name, dict)
            params = checked_params(
                {**params, "cost_tradeoff": require(section, "cost_tradeoff", (int, float),
                                                    f"{name}.")}, name)
        base_score = np.asarray(read_scores(doc), dtype=np.float64)
        n_scores = num_class if objective == "multi:softprob" else 1
        if base_score.shape != (n_scores,) or not np.all(np.isfinite(base_score)):
            raise invalid(f"base_score must hold {n_scores} finite numbers")
        model = build(cls, objective=objective, num_class=num_class, base_score=base_score,
                      feature_names=header.feature_names, cost_model=header.cost_model,
                      params=params)
        model.imported_from = read_imported_from(doc)
        # before the trees: their categorical splits must be on these features
        model.categories = read_categories(doc, len(header.feature_names))
        trees, indptr = read_trees(doc, len(header.feature_names), model.n_outputs,
                                   one_tree_each=False,
                                   categorical_features=model.categorical_features)
        # rebuilt round by round, path costs recomputed: a file whose stored path costs or
        # tree outputs differ is refused by model_io's final comparison
        for t0, t1 in zip(indptr[:-1], indptr[1:]):
            try:
                model.add_round([tree for _, tree, _, _ in trees[t0:t1]],
                                bitsets=[bitsets for _, _, _, bitsets in trees[t0:t1]])
            except ValueError as exc:     # raw scores that could overflow
                raise invalid(str(exc)) from None
        try:
            check_codes_within_levels(model)
        except ValueError as exc:
            raise invalid(f"{exc} (categories.levels)") from None
        if "exit_rules" in doc:
            try:
                model._exit_rules = model._check_exit_rules(ExitRules.from_dict(
                    doc["exit_rules"], model.num_iterations(), model.n_outputs))
            except (NotApplicableError, ValueError) as exc:
                raise invalid(str(exc).removeprefix("invalid cbudget model: ")) from None
        if section is not None and name is not None:
            model._cost_stages = read_cost_stages(section, name, params["cost_tradeoff"],
                                                  model.num_iterations())
        return read_attributes(model, doc, model.num_iterations())

    def __repr__(self) -> str:
        stages = self.cost_stages
        staged = "" if len(stages) < 2 else " cost_stages=" + ",".join(
            f"[{s.first_iteration}:{s.end_iteration}]@{s.cost_tradeoff:g}" for s in stages)
        return (f"<cbudget.Booster algorithm={self.algorithm} objective={self.objective} "
                f"rounds={self.num_boosted_rounds()} trees={len(self.trees)}{staged}>")

