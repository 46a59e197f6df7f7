"""``budget_rf``: the feature-budgeted random forest (Nan, Wang, Saligrama, ICML 2015,
Algorithm 1); returns a :class:`cbudget.Forest` of classification trees
(``binary:logistic``, or ``multi:softprob`` with ``num_class``).

Each tree is grown on a bootstrap sample (``subsample`` x n rows, with replacement) by
GREEDYTREE: a node splits on the feature of least risk ``c(t) / (worst-child impurity
decrease)`` of its best random stump (``n_stumps``, ``stump_node_sizes``; ``"all"``:
every threshold), until the impurity (``impurity``: ``"threshold_pairs"`` with
``alpha``, ``"gini"``, ``"entropy"``) is 0 or ``max_depth`` is reached. c(t) is
``feature_costs[t]`` (0 for a feature already on the path with ``path_free=True``) + its
group's cost if the path has not touched the group + ``split_cost``. Trees are added
until the mean prediction cost on the last data set of ``evals`` exceeds ``budget``
(that tree is dropped), or ``n_estimators`` (default ``num_boost_round``) trees;
``n_jobs`` trees grow at once, and tree ``t`` depends only on ``seed`` and ``t``: the
same forest whatever ``n_jobs``, and continuing a forest of ``a`` trees by ``b`` gives
the forest of ``a + b``. Default metric: the vote's ``error`` / ``merror``.
"""
from __future__ import annotations

import warnings
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from .._core._stumps import grow_greedy_tree
from .._core._types import NODE_DTYPE
from ..callback import BudgetStopping, TrainingCallback
from ..dataset import Dataset
from ..engine import Algorithm, MemoryNeed, Trainer, TrainingSetup, model_to_continue
from ..forest import IMPURITIES, VOTE_METRICS, Forest
from ..metrics import evaluate_on, ranking_hint
from ..objectives import Objective
from ..params import Param, choice, depth_limit, flag, int_tuple, number

__all__ = ["BUDGET_RF", "ForestTrainer"]

PARAMS = (
    Param("objective", None, None,
          "binary:logistic, or multi:softprob (the default when num_class is given)"),
    Param("alpha", 0.0, number(low=0),
          "threshold-Pairs alpha: larger gives shallower trees"),
    Param("impurity", "threshold_pairs", choice(*IMPURITIES),
          '"threshold_pairs", or "gini" / "entropy" (not admissible; for comparison)'),
    Param("path_free", False, flag, "a feature already tested on the path costs 0"),
    Param("n_stumps", (80, 40, 20), int_tuple(3, also=("all",)),
          "random stumps per feature at nodes of more than / more than / at most "
          'stump_node_sizes examples; "all": every threshold'),
    Param("stump_node_sizes", (2000, 500), int_tuple(2), "node sizes of n_stumps"),
    Param("budget", None, number(low=0, allow_none=True),
          "mean validation cost per input (the last evals set) at which growth stops"),
    Param("n_estimators", None, number(integer=True, low=0, allow_none=True),
          "cap on the trees; default num_boost_round"),
    Param("max_depth", None, depth_limit, "depth limit of a tree (0 or None: none)"),
    Param("subsample", 1.0, number(low=0, low_open=True, high=1),
          "bootstrap sample size as a fraction of the rows"),
)


class ForestTrainer(Trainer[Forest]):
    """Add GREEDYTREEs grown on bootstrap samples, ``n_threads`` at a time."""

    def __init__(self, p: dict, dtrain: Dataset, num_boost_round: int, setup: TrainingSetup):
        if dtrain.binned.dtype != np.uint8:
            # the stump kernel (_stumps.pyx) counts classes over uint8 bins only
            raise ValueError(
                f"budget_rf grows its trees on at most 256 bins per feature (NaN's "
                f"included); this Dataset has {dtrain.missing_bin + 1} (max_bin="
                f"{dtrain.max_bin}): build the training Dataset with max_bin <= 255")
        super().__init__(p, dtrain, n_trees_of(p, num_boost_round), setup)
        objective = setup.objective
        self.n_classes = max(2, objective.num_class)
        self.labels = dtrain.required_label().astype(np.int32)
        init = model_to_continue(setup.xgb_model, dtrain, objective, Forest, self.n_classes)
        if init is not None and init.vote != "majority":
            raise ValueError("xgb_model is an imported forest, which averages its trees' "
                             "class distributions; BudgetRF's trees vote by majority: train "
                             "a new budget_rf forest instead")
        if init is None:
            prior = np.bincount(self.labels, weights=dtrain.weight, minlength=self.n_classes)
            self.model = Forest(objective=objective.name, num_class=self.n_classes,
                                class_prior=prior / prior.sum(),
                                feature_names=dtrain.feature_names,
                                cost_model=dtrain.cost_model, params=p)
        else:
            self.model = init[:]
            self.model.params, self.model.algorithm = dict(p), p["algorithm"]
        self.first_iteration = self.model.num_trees()
        if p["budget"] is not None and not setup.evals:
            raise ValueError("budget needs validation data to measure the cost on: pass "
                             "evals=[(dvalid, 'valid')] (the last data set is used)")
        costs = dtrain.cost_model
        self.edges, self.edges_indptr = dtrain.flat_bin_edges()
        self.splittable = (dtrain.n_value_bins >= 2).astype(np.uint8)
        self.n_bootstrap = max(1, int(round(p["subsample"] * dtrain.num_data())))
        exhaustive = p["n_stumps"] == "all"
        self.tree_options = dict(
            sample_weight=dtrain.weight, split_cost=costs.split_cost, alpha=p["alpha"],
            impurity=p["impurity"], path_free=p["path_free"], exhaustive=exhaustive,
            n_stumps=(1, 1, 1) if exhaustive else p["n_stumps"],
            stump_node_sizes=p["stump_node_sizes"],
            max_depth=-1 if p["max_depth"] is None else p["max_depth"])
        # running per-class leaf counts and votes (side by side) of every evaluation set
        self.eval_state = [(name, data, self.model.leaf_sums(self.model.prepare_input(data),
                                                             "both"))
                           for data, name in setup.evals]
        n_threads = setup.n_threads
        self.pool = ThreadPoolExecutor(max_workers=n_threads) if n_threads > 1 else None
        # tree index -> (tree, class counts), grown ahead in batches
        self.grown: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def callbacks(self) -> list[TrainingCallback]:
        if self.p["budget"] is None:
            return []
        return [BudgetStopping(self.p["budget"], self.setup.evals[-1][0],
                               verbose=self.setup.verbose)]

    def grow(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        """Tree ``t``: it depends only on the seed and ``t``."""
        dtrain, costs = self.dtrain, self.dtrain.cost_model
        rng = np.random.default_rng([self.p["seed"], t])
        rows = rng.integers(0, dtrain.num_data(), self.n_bootstrap).astype(np.int32)
        return grow_greedy_tree(dtrain.binned, self.labels, rows, self.n_classes,
                                costs.feature_costs, costs.feature_group, costs.group_costs,
                                self.edges, self.edges_indptr, self.splittable,
                                seed=int(rng.integers(2 ** 63)), **self.tree_options)

    def iterate(self, iteration: int) -> bool:
        if iteration not in self.grown:
            # a batch of trees grown in parallel, then added one by one
            end = self.first_iteration + self.n_iterations
            batch = range(iteration, min(iteration + self.setup.n_threads, end))
            trees = list(self.pool.map(self.grow, batch)) if self.pool else \
                [self.grow(t) for t in batch]
            self.grown = dict(zip(batch, trees))
        tree, class_counts = self.grown.pop(iteration)
        self.model.add_tree(tree, class_counts)
        n = self.model.num_trees()
        for _, data, sums in self.eval_state:
            sums += self.model.leaf_sums(data.data, "both", (n - 1, n))
        return False

    def eval_scores(self, metrics: Sequence[str]) -> list:
        scores = []
        for name, data, sums in self.eval_state:
            counts, votes = np.hsplit(sums, 2)
            scores.append((name, {metric: evaluate_on(
                metric, data, self.model.metric_predictions(metric, counts, votes))
                for metric in metrics}))
        return scores

    def finish(self, n_keep: int | None) -> Forest:
        forest = self.model if n_keep is None else self.model[:n_keep]
        if forest.num_trees() == 0 and self.n_iterations > 0 and self.p["budget"] is not None:
            warnings.warn(f"budget_rf: a single tree costs more than the budget "
                          f"{self.p['budget']} per input; the forest has no trees and "
                          "predicts the training class prior", RuntimeWarning, stacklevel=4)
        return forest

    def record_training(self, model: Forest) -> None:
        model.finalize(self.dtrain, self.named_evals)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown()


def n_trees_of(p: dict[str, Any], num_boost_round: int) -> int:
    """The trees to grow: ``n_estimators``, default ``num_boost_round``."""
    return num_boost_round if p["n_estimators"] is None else p["n_estimators"]


class BudgetRF(Algorithm):
    def complete(self, p: dict) -> None:
        if p["objective"] is None:
            p["objective"] = ("multi:softprob" if p["num_class"] not in (None, 1)
                              else "binary:logistic")
        if p["objective"] not in VOTE_METRICS:
            raise ValueError("budget_rf is a classifier: objective must be 'binary:logistic' "
                             f"or 'multi:softprob', got {p['objective']!r}"
                             + ranking_hint(p["objective"], "on relevance made binary "
                                            "(binary:logistic), as in its paper,"))

    def default_metric(self, p: dict, objective: Objective) -> str:
        return VOTE_METRICS[objective.name]

    def memory_needs(self, p: dict, dtrain: Dataset, setup: TrainingSetup) -> list[MemoryNeed]:
        # each thread grows a tree in arrays sized for 2 x its bootstrap rows
        n_bootstrap = max(1, round(p["subsample"] * dtrain.num_data()))
        per_node = NODE_DTYPE.itemsize + 8 * max(2, setup.objective.num_class)
        return [MemoryNeed(f"the trees being grown: {setup.n_threads} threads x 2 x "
                           f"{n_bootstrap} bootstrap rows x {per_node} bytes",
                           2.0 * setup.n_threads * n_bootstrap * per_node,
                           "Reduce subsample or n_jobs")]

    def check_data(self, p: dict, objective: Objective, dtrain: Dataset) -> None:
        y = dtrain.required_label()
        if objective.num_class == 1 and np.max(y) > 1:
            raise ValueError(f"budget_rf: the labels go up to {np.max(y):g}; give num_class "
                             "(the number of classes) for a multi-class forest")
        if np.any(y != np.floor(y)):
            raise ValueError("budget_rf needs integer class labels")


BUDGET_RF = BudgetRF("budget_rf", PARAMS, ForestTrainer,
                     "feature-budgeted random forest (Nan et al., ICML 2015)",
                     model_class=Forest, section="budget_rf")
