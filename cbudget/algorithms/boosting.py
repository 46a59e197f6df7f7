"""Gradient boosting: ``gbdt``, ``cegb`` and ``greedy_miser``; each returns a
:class:`cbudget.Booster`.

* ``"gbdt"``: gradient boosting (second-order, histogram trees).
* ``"cegb"``: cost-efficient gradient boosting (Peter et al., NIPS 2017). Each split
  pays ``cost_tradeoff`` (lambda, default 1) times its cost increment:
  ``split_cost * |leaf|`` + ``coupled_costs[m]`` if the model does not use ``m`` yet +
  ``feature_costs[m]`` per input of the leaf that has not acquired ``m`` yet (+
  ``group_costs`` per input that has not touched ``m``'s group), with the Dataset's
  costs. Which training inputs have acquired which features is kept across trees and
  rounds. Trees grow best-first without a depth limit by default. With ``subsample <
  1``, the inputs left out of a round are still routed through its trees afterwards and
  charged for the features on their paths (LightGBM only updates the in-bag inputs).
  The trees of one round of a multiclass model grow one after another (each sees the
  acquisitions of the previous ones), not in parallel.
* ``"greedy_miser"``: the Greedy Miser (Xu et al., ICML 2012): stage-wise (first-order)
  regression with step ``learning_rate`` (0.1) and depth-limited CART trees
  (``grow_policy="depthwise"``, ``max_depth=4``, ``reg_lambda=0``: a leaf holds its
  rows' mean residual). A tree minimises ``1/2 sum_i (r_i - h(x_i))^2 + cost_tradeoff *
  sum_m phi_m c_m F_m``: a split on a feature that no tree of the model (this one
  included) uses yet pays ``cost_tradeoff`` times its cost ``feature_costs[m] +
  coupled_costs[m]`` (+ ``group_costs[g]`` if no member of its group is used yet, so
  group-mates then cost only their own marginal cost); later uses are free. Multiclass:
  one tree per class per round, sharing phi: each tree sees the features the earlier
  ones used (on several threads they grow in parallel and those after a tree that used a
  new feature grow again, so the trees are the same on any number of threads). The number of
  rounds is the tree budget: with the Dataset's ``tree_cost`` (e),
  :meth:`cbudget.Booster.best_iteration_within_budget` picks the best validation round
  within a total budget.

Cost stages (``cost_stages=[[rounds, cost_tradeoff], ...]``, cegb and greedy_miser):
the rounds grow in stages, stage ``k`` the next ``rounds`` rounds at its own trade-off
(rounds past the last stage keep the last one's); the acquisition state carries over, so
training in stages grows the trees of training the first stage and continuing it
(``xgb_model``) at the next trade-off. The model records its stages
(:attr:`cbudget.Booster.cost_stages`).

Monotone constraints (``monotone_constraints``, all three): LightGBM's basic method, in
the grower (:class:`TreeGrower`'s ``monotone``, from :func:`monotone_directions`), so
Greedy Miser's first-order trees and CEGB's cost-penalised splits choose among the
admissible splits only.

Continuing a model (``xgb_model``): its trees are kept and new rounds added; the
acquisition state (and, for CEGB and Greedy Miser, the penalty) is restored by routing
the training inputs through the existing trees. ``cost_stages`` then counts the new
rounds; the model's stages are the old model's followed by the new ones (the rounds of a
model trained without a penalty, e.g. gbdt, count as trade-off 0). Row and column
sampling depend only on ``seed`` and the round, so ``a`` rounds continued by ``b`` grow
the same trees as ``a + b`` rounds at once (up to floating-point rounding of the
restored scores).
"""
from __future__ import annotations

import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeAlias

import numpy as np

from .._core._acquisition import AcquisitionState
from .._core._grower import TreeGrower, bin_words
from .._core._predict import predict_binned_add
from .._core._types import HISTOGRAM_DTYPE
from ..booster import Booster
from ..category_bins import grown_tree_bitsets
from ..costs import CostModel
from ..dataset import Dataset
from ..engine import Algorithm, MemoryNeed, Trainer, TrainingSetup, model_to_continue
from ..objectives import CustomObjective, Objective, objective_name, weighted_quantile
from ..params import (
    CATEGORICAL_PARAMS,
    SQRT_FLOAT_MAX,
    Param,
    choice,
    depth_limit,
    flag,
    monotone_constraints,
    number,
)

__all__ = ["ALGORITHMS", "GREEDY_MISER", "TREE_PARAMS", "BoostingTrainer", "RoundSampler",
           "binned_like", "penalty_costs", "tree_grower", "complete_tree_params",
           "greedy_miser_trees", "initial_base_score", "mean_training_cost",
           "check_gradient_sums", "add_checked_round", "grower_memory_needs",
           "COST_STAGES", "check_cost_stages", "stage_tradeoffs", "MONOTONE_CONSTRAINTS",
           "monotone_directions"]

# LightGBM's limit too: more leaves than this is never a useful tree, and the grower's
# per-leaf arrays are sized by it
MAX_LEAVES = 131072

TREE_PARAMS = (
    Param("learning_rate", 0.1, number(low=0, low_open=True), "shrinkage of each tree"),
    Param("grow_policy", "lossguide", choice("lossguide", "depthwise"),
          '"lossguide" (best-first) or "depthwise" (level by level)'),
    Param("num_leaves", None, number(integer=True, low=2, high=MAX_LEAVES, allow_none=True),
          "leaves per tree; default 31 for lossguide, no cap for depthwise"),
    Param("max_depth", None, depth_limit,
          "depth limit (0 or None: none); default none for lossguide, 6 for depthwise "
          "(4 for greedy_miser and adapt_gbrt)"),
    Param("min_child_weight", 1e-3, number(low=0), "least hessian sum in a leaf"),
    Param("min_data_in_leaf", 20, number(integer=True, low=1), "least rows in a leaf"),
    Param("reg_lambda", 1.0, number(low=0), "L2 regularisation of the leaf values"),
    Param("gamma", 0.0, number(low=0), "least net gain of a split"),
)
MONOTONE_CONSTRAINTS = Param(
    "monotone_constraints", None, monotone_constraints,
    "per feature -1 / 0 / +1 (a list, a string '(1,0,-1)', or a dict of feature name -> "
    "direction): the model's output is non-increasing / free / non-decreasing in it "
    "(LightGBM's basic method; numeric features only; "
    "docs/user_guide/monotone.md)")
SAMPLING_PARAMS = (
    Param("subsample", 1.0, number(low=0, low_open=True, high=1),
          "rows sampled per round (whole queries for the ranking objectives)"),
    Param("colsample_bytree", 1.0, number(low=0, low_open=True, high=1),
          "features sampled per tree"),
    Param("base_score", None, number(allow_none=True),
          "initial score, a prediction (a probability for binary:logistic, a mean for "
          "count:poisson, reg:tweedie, reg:gamma); default fitted to the labels"),
)
OBJECTIVE = Param("objective", "reg:squarederror", objective_name,
                  "reg:squarederror, reg:absoluteerror, reg:pseudohubererror, "
                  "reg:quantileerror, count:poisson, reg:tweedie, reg:gamma, "
                  "binary:logistic, multi:softprob, or the ranking objectives rank:ndcg "
                  "(LambdaMART) and rank:pairwise (they need Dataset(..., group=) or qid=); "
                  "LightGBM's names (regression_l1, quantile, poisson, tweedie, gamma, ...) "
                  "are taken too")
# the parameters of the objectives that have one (XGBoost's names; LightGBM's for the
# Poisson safeguard, whose XGBoost name max_delta_step is also a tree limit there)
OBJECTIVE_PARAMS = (
    Param("quantile_alpha", 0.5, number(low=0, low_open=True, high=1),
          "reg:quantileerror: the quantile, in (0, 1)"),
    Param("huber_slope", 1.0, number(low=0, low_open=True),
          "reg:pseudohubererror: the slope (delta) of the pseudo-Huber loss"),
    Param("tweedie_variance_power", 1.5, number(low=1, high=1.999999),
          "reg:tweedie: the variance power rho, in [1, 2)"),
    Param("poisson_max_delta_step", 0.7, number(low=0, low_open=True),
          "count:poisson: the hessian is exp(raw + this), damping the steps"),
)
RANKING_PARAMS = (
    Param("lambdarank_truncation_level", 30, number(integer=True, low=1),
          "rank:ndcg: the pairs it weighs have a document among this many top ones"),
    Param("lambdarank_norm", True, flag,
          "rank:ndcg: normalise the lambdas by score distance and per query (LightGBM's)"),
)
COST_TRADEOFF = Param("cost_tradeoff", 1.0, number(low=0),
                      "lambda: weight of the cost penalty of a split, in units of the "
                      "loss's gain per unit of cost (it scales with the data size and "
                      "inversely with the costs); cbudget.lambda_max(params, dtrain) is "
                      "where nothing is bought any more, cbudget.cost_path scans below it")


def check_cost_stages(value: object, name: str) -> list[list[float]] | None:
    """None, or a non-empty list of ``[rounds, cost_tradeoff]`` pairs (tuples taken):
    ``rounds`` an integer >= 1, the trade-off a finite number >= 0. Returned as a list of
    2-lists (the JSON form)."""
    if value is None:
        return None
    rounds_check = number(integer=True, low=1)
    tradeoff_check = number(low=0)
    if not isinstance(value, (list, tuple)) or not value:
        raise ValueError(f"parameter {name} must be a non-empty list of [rounds, "
                         f"cost_tradeoff] pairs, got {value!r}")
    stages = []
    for k, stage in enumerate(value):
        if not isinstance(stage, (list, tuple)) or len(stage) != 2:
            raise ValueError(f"parameter {name}[{k}] must be a pair [rounds, cost_tradeoff],"
                             f" got {stage!r}")
        stages.append([rounds_check(stage[0], f"{name}[{k}] rounds"),
                       tradeoff_check(stage[1], f"{name}[{k}] cost_tradeoff")])
    return stages


COST_STAGES = Param("cost_stages", None, check_cost_stages,
                    "[[rounds, cost_tradeoff], ...]: boosting in stages, each the next "
                    "`rounds` rounds at its own trade-off (rounds past the last stage keep "
                    "its trade-off; a stage after the last round is not trained, with a "
                    "warning); replaces cost_tradeoff "
                    "(docs/user_guide/choosing_budget.md, 'Cascades')")


def stage_tradeoffs(p: dict, first_iteration: int, num_rounds: int) -> dict[int, float]:
    """The trade-off of training ``num_rounds`` rounds from ``first_iteration`` on:
    iteration -> the trade-off its stage starts with (the first entry at
    ``first_iteration``; with ``cost_stages``, one per stage, counted from
    ``first_iteration``). A stage that starts after the last round is never trained: a
    warning says so (the model would otherwise silently be no cascade)."""
    if p.get("cost_stages") is None:
        return {first_iteration: p["cost_tradeoff"]}
    starts, start = {}, first_iteration
    for rounds, tradeoff in p["cost_stages"]:
        starts[start] = tradeoff
        start += rounds
    end = first_iteration + num_rounds
    unreached = [k for k, begin in enumerate(starts) if begin >= end]
    if unreached and num_rounds > 0:
        warnings.warn(
            f"{p['algorithm']}: cost_stages[{unreached[0]}:] start after the last of the "
            f"{num_rounds} rounds (num_boost_round / n_estimators), so they are not "
            f"trained; the stages ask for {start - first_iteration} rounds",
            UserWarning, stacklevel=2)
    return starts


GREEDY_MISER_TREES = {"grow_policy": "depthwise", "reg_lambda": 0.0}


def greedy_miser_trees(params: tuple) -> tuple:
    """The tree parameters with Greedy Miser's defaults: CART trees level by level, a
    leaf holding its rows' mean residual."""
    return tuple(param.with_default(GREEDY_MISER_TREES[param.name])
                 if param.name in GREEDY_MISER_TREES else param for param in params)


def complete_tree_params(p: dict, depthwise_depth: int) -> None:
    """The tree limits that depend on the growth policy: 31 leaves best-first, depth
    ``depthwise_depth`` level by level."""
    if p["grow_policy"] == "lossguide" and p["num_leaves"] is None:
        p["num_leaves"] = 31
    if p["grow_policy"] == "depthwise" and p["max_depth"] is None:
        p["max_depth"] = depthwise_depth


def tree_grower(dtrain: Dataset, p: dict, n_threads: int, *, exchange: Any = None,
                n_tree_rows: int = 0) -> TreeGrower:
    """A histogram tree grower on ``dtrain`` with the tree parameters of ``p``
    (``exchange``, ``n_tree_rows``: a Dask training's driver or worker, see
    :class:`TreeGrower`)."""
    edges, edges_indptr = dtrain.flat_bin_edges()
    categorical = None
    if dtrain.categorical_features.size:
        if "max_cat_to_onehot" not in p:
            raise ValueError(f"categorical splits are not supported by algorithm "
                             f"{p['algorithm']} yet: give it numeric features (or train "
                             f"gbdt, cegb or greedy_miser)")
        categorical = np.zeros(dtrain.num_feature(), dtype=np.uint8)
        categorical[dtrain.categorical_features] = 1
    cat_params = {param.name: p[param.name] for param in CATEGORICAL_PARAMS if param.name in p}
    return TreeGrower(
        dtrain.binned, edges, edges_indptr, dtrain.n_value_bins, dtrain.missing_bin,
        p["learning_rate"], p["reg_lambda"], p["min_child_weight"], p["gamma"],
        p["min_data_in_leaf"], p["num_leaves"] or -1,
        -1 if p["max_depth"] is None else p["max_depth"], p["grow_policy"] == "lossguide",
        n_threads, dtrain.sparse_bins() if exchange is None else None, exchange=exchange,
        n_tree_rows=n_tree_rows, categorical=categorical,
        monotone=monotone_directions(p, dtrain), **cat_params)


def monotone_directions(p: dict, dtrain: Dataset) -> np.ndarray | None:
    """The ``monotone_constraints`` of ``p`` as one int8 direction per feature of
    ``dtrain`` (None: none given, or all 0). ValueError when a list's length is not the
    number of features, a dict names a feature ``dtrain`` has not, or a categorical
    feature gets a direction (it has no order: LightGBM refuses it too)."""
    given = p.get("monotone_constraints")
    if given is None:
        return None
    names = list(dtrain.feature_names)
    directions = np.zeros(len(names), dtype=np.int8)
    if isinstance(given, dict):
        unknown = [name for name in given if name not in names]
        if unknown:
            raise ValueError(f"monotone_constraints names features the data has not: "
                             f"{unknown[:5]}; its features are {names[:10]}"
                             f"{' ...' if len(names) > 10 else ''}")
        for name, direction in given.items():
            directions[names.index(name)] = direction
    elif len(given) != len(names):
        raise ValueError(f"monotone_constraints has {len(given)} "
                         f"entr{'y' if len(given) == 1 else 'ies'} for the data's "
                         f"{len(names)} features: give one -1 / 0 / 1 per feature, or a "
                         f"dict of feature name -> direction")
    else:
        directions[:] = given
    on_categories = [names[f] for f in dtrain.categorical_features if directions[f]]
    if on_categories:
        raise ValueError(f"monotone_constraints on categorical features {on_categories}: "
                         f"their levels have no order, so the output cannot be monotone "
                         f"in them; give them 0")
    return directions if directions.any() else None


def round_growers(p: dict, n_outputs: int, n_threads: int) -> tuple[int, bool]:
    """(growers side by side, speculative) of a boosting round: a grower per thread for
    the independent trees of a multiclass round (plain boosting), or speculatively for
    Greedy Miser's (which then also has a sequential grower); one otherwise."""
    speculative = p["algorithm"] == "greedy_miser" and n_outputs > 1 and n_threads > 1
    tree_parallel = (n_outputs > 1 and n_threads > 1
                     and ("cost_tradeoff" not in p or speculative))
    return (min(n_threads, n_outputs) if tree_parallel else 1), speculative


def grower_memory_needs(p: dict, dtrain: Dataset, n_growers: int, who: str = ""
                        ) -> list[MemoryNeed]:
    """What ``n_growers`` :func:`tree_grower` s on ``dtrain`` allocate beyond the data: a
    histogram (every feature x bin) per open leaf, at most one leaf per
    ``min_data_in_leaf`` rows, ``num_leaves`` or ``2**max_depth``; and the per-feature
    bin counts of the sparse layout (``Dataset.sparse_bins``)."""
    n_rows, n_features = dtrain.data.shape
    n_bins = dtrain.missing_bin + 1     # every feature's histogram has this many bins
    leaves = max(1, n_rows // p["min_data_in_leaf"])
    if p["num_leaves"]:
        leaves = min(leaves, p["num_leaves"])
    if p["max_depth"]:
        leaves = min(leaves, 2 ** p["max_depth"])
    size = HISTOGRAM_DTYPE.itemsize
    return [
        MemoryNeed(f"{who}histograms: {n_growers} tree(s) growing x {leaves} open leaves x "
                   f"n_features x {n_bins} bins x {size} bytes",
                   float(n_growers) * leaves * n_features * n_bins * size,
                   "Reduce the features (select the useful ones first), max_bin, or "
                   "num_leaves / max_depth"),
        MemoryNeed(f"{who}per-feature bin counts: n_features x {n_bins} x 8 bytes",
                   float(n_features) * n_bins * 8, "Reduce the features or max_bin"),
    ]


def binned_like(data: Dataset, dtrain: Dataset) -> np.ndarray:
    """The evaluation data binned with the training edges (shared when built with
    ``reference=dtrain``)."""
    if data is dtrain or data.bin_edges is dtrain.bin_edges:
        return data.binned
    return dtrain.bin_data(data.data)


def penalty_costs(kind: str, costs: CostModel) -> tuple:
    """The costs a split pays, as :meth:`TreeGrower.set_cost_penalty` takes them
    (per-input feature and group costs, once-per-model feature and group costs, split
    cost). ``"cegb"``: as the cost model defines them. ``"greedy_miser"``: the paper's
    phi -- a feature's whole cost (``feature_costs + coupled_costs``) the first time the
    model uses it, its group's cost the first time the model uses any member, nothing
    after; no per-input or split terms."""
    if kind == "cegb":
        return (costs.feature_costs, costs.feature_group, costs.group_costs,
                costs.coupled_costs, np.zeros(costs.n_groups), costs.split_cost)
    return (np.zeros(costs.n_features), costs.feature_group, np.zeros(costs.n_groups),
            costs.feature_costs + costs.coupled_costs, costs.group_costs, 0.0)


def initial_base_score(p: dict, objective: Objective, y: np.ndarray, weight: np.ndarray | None
                       ) -> np.ndarray:
    if p["base_score"] is None:
        return objective.base_score(y, weight)
    # a prediction (a probability, a mean), as XGBoost takes it: its raw score
    return np.full(objective.n_outputs, objective.margin(p["base_score"]), dtype=np.float64)


# A split's gain squares a node's gradient sum (_split.pyx: g * g / (h + reg_lambda)); a
# node's sum is at most the sum of |gradient| over the rows, which must stay below this
# for the gains (and so the trees) to mean anything.
MAX_GRADIENT_SUM = SQRT_FLOAT_MAX


def check_gradient_sums(grad: np.ndarray, p: dict, iteration: int, first: int) -> None:
    """ValueError when a round's gradients (n_samples, n_outputs) are not finite or sum,
    in absolute value over the rows, beyond :data:`MAX_GRADIENT_SUM`: a base score far
    from the labels (first round), labels of that magnitude, or training diverging."""
    with np.errstate(over="ignore", invalid="ignore"):   # an overflow is what this checks
        total = float(np.abs(grad).sum(axis=0).max(initial=0.0))
    if total < MAX_GRADIENT_SUM:      # NaN fails the comparison
        return
    if iteration == first and p.get("base_score") is not None:
        cause = (f"base_score={p['base_score']!r} is too far from the labels; give one "
                 "nearer them, or None to fit it to the labels")
    elif iteration == first:
        cause = "the labels are too large in magnitude for float64 arithmetic: scale them"
    else:
        cause = diverging_hint(p)
    raise ValueError(f"boosting round {iteration}: the gradients sum to {total:.3g} over "
                     f"the training rows, beyond {MAX_GRADIENT_SUM:.3g}, where a split's gain "
                     f"(their square) overflows: {cause}")


def diverging_hint(p: dict) -> str:
    """What to change when training diverges."""
    return (f"training diverged; use a smaller learning_rate (now {p['learning_rate']!r}) "
            f"or a larger reg_lambda / min_child_weight")


def add_checked_round(model: Booster, trees: list[np.ndarray], p: dict,
                      cost_tradeoff: float | None = None, bin_codes: dict | None = None
                      ) -> None:
    """``model.add_round(trees, cost_tradeoff)``, its refusal (a leaf value that is not
    finite, raw scores that could overflow) reported as training diverging, with what to
    change."""
    try:
        model.add_round(trees, cost_tradeoff=cost_tradeoff, bitsets=None if not bin_codes else
                        [grown_tree_bitsets(tree, bin_codes) for tree in trees])
    except ValueError as exc:
        raise ValueError(f"{exc}: {diverging_hint(p)}") from None


def leaf_ranges(tree: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(leaf ids, start, stop) of each leaf's rows in the partition the grower leaves
    its rows in: a node's left child holds the first ``n_samples`` of its rows."""
    start = np.zeros(tree.shape[0], dtype=np.int64)
    for node in range(tree.shape[0]):        # children come after their parent
        left = tree["left"][node]
        if left != -1:
            start[left] = start[node]
            start[tree["right"][node]] = start[node] + tree["n_samples"][left]
    leaves = np.flatnonzero(tree["left"] == -1)
    return leaves, start[leaves], start[leaves] + tree["n_samples"][leaves]


def renew_leaf_values(tree: np.ndarray, rows: np.ndarray, residual: np.ndarray,
                      weight: np.ndarray | None, quantile: float,
                      learning_rate: float, bounds: tuple[np.ndarray, np.ndarray]) -> None:
    """Set each leaf's value to ``learning_rate`` times the ``quantile`` of its rows'
    residuals ``y - raw`` (weighted; :func:`cbudget.objectives.weighted_quantile`):
    the exact minimiser of absolute / pinball loss in the leaf, where a Newton step of
    hessian 1 is not (XGBoost's adaptive leaves, LightGBM's RenewTreeOutput); clipped
    to the leaf's monotone ``bounds`` (:meth:`TreeGrower.output_bounds`), as the
    grower clips its Newton steps."""
    lower, upper = bounds
    for leaf, begin, end in zip(*leaf_ranges(tree)):
        members = rows[begin:end]
        value = weighted_quantile(residual[members],
                                  None if weight is None else weight[members], quantile)
        if np.isfinite(value):          # a leaf always holds rows; kept if not
            tree["value"][leaf] = learning_rate * min(max(value, lower[leaf]), upper[leaf])


def partition_values(tree: np.ndarray) -> np.ndarray:
    """The tree's leaf value of each position of its partition (the order
    :func:`leaf_ranges` describes)."""
    leaves, begin, end = leaf_ranges(tree)
    order = np.argsort(begin)
    return np.repeat(tree["value"][leaves[order]], (end - begin)[order])


def initial_raw(init: Booster | None, data: Dataset, base_score: np.ndarray) -> np.ndarray:
    """Raw scores (n_samples, n_outputs) before the first new round."""
    if init is None:
        return np.tile(base_score, (data.num_data(), 1))
    raw = init.predict(data, output_margin=True, iteration_range=(0, 0))   # every round
    return np.ascontiguousarray(raw.reshape(data.num_data(), -1), dtype=np.float64)


class RoundSampler:
    """The rows and features of each boosting round: they depend only on ``seed`` and
    the round, so continued training and a Dask training (whose workers draw the same
    rows) repeat them.

    ``sample(iteration)`` returns the in-bag mask of the rows (None: every row) and one
    feature mask per output (features with a single bin are never split: masked out)."""

    def __init__(self, p: dict, n_samples: int, n_value_bins: np.ndarray, n_outputs: int,
                 query_ptr: np.ndarray | None = None):
        self.seed, self.n_samples, self.n_outputs = p["seed"], n_samples, n_outputs
        self.n_sub_rows = max(1, int(round(p["subsample"] * n_samples)))
        # ranking: a round samples whole queries, as LightGBM bags them (a query's
        # lambdas only mean something beside the other documents of the query)
        self.query_ptr = query_ptr
        if query_ptr is not None:
            self.n_sub_queries = max(1, int(round(p["subsample"] * (query_ptr.shape[0] - 1))))
        n_features = n_value_bins.shape[0]
        self.n_sub_features = max(1, int(round(p["colsample_bytree"] * n_features)))
        self.splittable = (n_value_bins >= 2).astype(np.uint8)

    def sample(self, iteration: int) -> tuple[np.ndarray | None, list[np.ndarray]]:
        rng = np.random.default_rng([self.seed, iteration])
        in_bag_mask = None
        if self.n_sub_rows < self.n_samples:
            if self.query_ptr is None:
                in_bag_mask = np.zeros(self.n_samples, dtype=bool)
                in_bag_mask[rng.choice(self.n_samples, self.n_sub_rows, replace=False)] = True
            else:
                sizes = np.diff(self.query_ptr)
                chosen = np.zeros(sizes.shape[0], dtype=bool)
                chosen[rng.choice(sizes.shape[0], self.n_sub_queries, replace=False)] = True
                in_bag_mask = np.repeat(chosen, sizes)
        n_features = self.splittable.shape[0]
        feature_masks = []
        for _ in range(self.n_outputs):
            feature_mask = self.splittable.copy()
            if self.n_sub_features < n_features:
                sampled = np.zeros(n_features, dtype=np.uint8)
                sampled[rng.choice(n_features, self.n_sub_features, replace=False)] = 1
                feature_mask &= sampled
            feature_masks.append(feature_mask)
        return in_bag_mask, feature_masks


def mean_training_cost(costs: CostModel, acquired_counts: np.ndarray,
                       touched_counts: np.ndarray, split_visits: int,
                       n_samples: int, n_trees: int) -> float:
    """The mean cost per training input of a model of ``n_trees`` trees, from how many
    inputs acquired each feature and touched each group, and the split nodes visited."""
    return float((costs.feature_costs @ acquired_counts + costs.group_costs @ touched_counts
                  + costs.split_cost * split_visits) / n_samples + costs.tree_cost * n_trees)


# a tree to grow: (output, in-bag rows, out-of-bag rows, feature mask)
Job: TypeAlias = tuple[int, np.ndarray, np.ndarray, np.ndarray]
# a tree grown: (tree, its partition of the in-bag rows, out-of-bag rows)
Grown: TypeAlias = tuple[np.ndarray, np.ndarray, np.ndarray]


class BoostingTrainer(Trainer[Booster]):
    """Rounds of one tree per output on the gradients of the objective; the cost-aware
    learners grow them with a cost penalty and the training inputs' acquisition state."""

    def __init__(self, p: dict, dtrain: Dataset, num_boost_round: int, setup: TrainingSetup):
        super().__init__(p, dtrain, num_boost_round, setup)
        objective, n_threads = setup.objective, setup.n_threads
        y, weight = dtrain.required_label(), dtrain.weight
        init = model_to_continue(setup.xgb_model, dtrain, objective, Booster)
        if init is None:
            base_score = initial_base_score(p, objective, y, weight)
            self.model = Booster(objective=objective.name, num_class=objective.num_class,
                                 base_score=base_score, feature_names=dtrain.feature_names,
                                 cost_model=dtrain.cost_model, params=p)
            # the levels of the categorical features, from the start: evaluation and
            # prediction on a DataFrame map its levels by them
            self.model.categories = dtrain.categories
        else:
            self.model = init[:]
            self.model.params, self.model.algorithm = dict(p), p["algorithm"]
            base_score = self.model.base_score
            self.first_iteration = self.model.num_boosted_rounds()

        n_samples, n_features = dtrain.data.shape
        n_outputs = objective.n_outputs
        # Fortran order: a tree adds its leaf values to one contiguous column (rows in
        # the order of its partition); C order would touch a cache line per row
        self.raw_train = np.asfortranarray(initial_raw(init, dtrain, base_score))
        self.eval_state = [(name, data, binned_like(data, dtrain),
                            initial_raw(init, data, base_score))
                           for data, name in setup.evals]
        self.grad = np.empty((n_samples, n_outputs), dtype=np.float64, order="F")
        self.hess = np.empty((n_samples, n_outputs), dtype=np.float64, order="F")
        self.all_rows = np.arange(n_samples, dtype=np.int32)
        self.sampler = RoundSampler(p, n_samples, dtrain.n_value_bins, n_outputs,
                                    dtrain.group_ptr if objective.needs_groups else None)
        # Which training inputs have acquired which features, for every learner: the
        # cost-aware ones grow their trees with it (the grower updates it at each split);
        # for plain boosting it is updated from each tree's leaf partition after growth.
        # Either way the training cost after each round, and each node's
        # new_acquisitions, follow from it: no routing pass over the training data after
        # training (TreeEnsemble.finalize).
        costs = dtrain.cost_model
        self.cost_state = AcquisitionState(n_samples, costs.feature_group, costs.n_groups)
        self.split_visits = 0         # split nodes visited by all training inputs so far
        self.train_cost_curve: list[float] = []
        if init is not None and init.num_boosted_rounds():
            self.restore_costs(init)
        # the cost-aware learners are those with a cost trade-off (cegb, greedy_miser)
        self.penalised = "cost_tradeoff" in p
        # Greedy Miser is first order: CART on the residuals, the hessian is the weight.
        if p["algorithm"] == "greedy_miser":
            unit = np.ones(n_samples) if weight is None else weight
            self.grow_hess = np.asfortranarray(np.repeat(unit[:, None], n_outputs, axis=1))
        else:
            self.grow_hess = self.hess
        # Multiclass: the trees of one round are independent given the gradients, so
        # they grow in parallel, one single-threaded grower per thread (the same trees as
        # one grower using all threads: growth does not depend on the thread count). Not
        # for CEGB, where each tree depends on the inputs the previous ones charged.
        # Greedy Miser's trees depend on each other only through the features the model
        # uses (its penalty is once per model): they grow in parallel speculatively, each
        # grower on a copy of the round's starting state, and a tree is kept only while
        # no earlier tree of its round used a new feature (or group); the others grow
        # again, in order, on the model's state (grow_round_speculatively). Most rounds
        # use no new feature, and the trees are those of growing them one by one.
        self.n_growers, self.speculative = round_growers(p, n_outputs, n_threads)
        self.threads_per_tree = 1 if self.n_growers > 1 else n_threads
        self.growers = [tree_grower(dtrain, p, self.threads_per_tree)
                        for _ in range(self.n_growers)]
        self.scratch_states = []
        if self.speculative:
            self.sequential_grower = tree_grower(dtrain, p, n_threads)
            self.scratch_states = [
                AcquisitionState(n_samples, costs.feature_group, costs.n_groups)
                for _ in self.growers]
        # cost stages: the trade-off changes at the first round of each stage; the
        # acquisition state carries over
        self.stage_starts = (stage_tradeoffs(p, self.first_iteration, self.n_iterations)
                             if self.penalised else {})
        self.cost_tradeoff = p.get("cost_tradeoff")
        if self.penalised:
            self.set_cost_tradeoff(self.stage_starts[self.first_iteration])
            if init is not None and not init.cost_stages and init.num_boosted_rounds():
                # rounds of a model trained without a cost penalty (gbdt, imported)
                self.model.record_cost_stage(0, init.num_boosted_rounds(), 0.0)
        self.rows_buffers = [np.empty(n_samples, dtype=np.int32) for _ in self.growers]
        self.pool = (ThreadPoolExecutor(max_workers=self.n_growers) if self.n_growers > 1
                     else None)

    def set_cost_tradeoff(self, tradeoff: float) -> None:
        """Grow the next trees with this trade-off: every grower (Greedy Miser's
        speculative ones on their scratch states) penalises splits with it."""
        penalty = penalty_costs(self.p["algorithm"], self.dtrain.cost_model)
        if self.speculative:
            self.sequential_grower.set_cost_penalty(self.cost_state, tradeoff, *penalty)
            for grower, state in zip(self.growers, self.scratch_states):
                grower.set_cost_penalty(state, tradeoff, *penalty)
        else:
            self.growers[0].set_cost_penalty(self.cost_state, tradeoff, *penalty)
        self.cost_tradeoff = tradeoff

    def restore_costs(self, init: Booster) -> None:
        """Continuing ``init``: the acquisition state, its trees' ``new_acquisitions``
        and the training cost curve of its rounds, from one routing pass of the training
        inputs through its trees (they may be other data than ``init`` was trained on)."""
        dtrain, costs = self.dtrain, self.dtrain.cost_model
        curve, bitsets = self.model.training_cost_pass(dtrain.data)
        self.cost_state.load_bitsets(bitsets[0], bitsets[1], self.model.used_features((0, 0)))
        self.train_cost_curve = curve.tolist()
        if costs.split_cost > 0:
            # every input visits the split nodes above the leaf it reaches
            leaves = self.model.predict(dtrain, pred_leaf=True, iteration_range=(0, 0))
            self.split_visits = sum(int(tree["depth"][leaves[:, t]].sum())
                                    for t, tree in enumerate(self.model.trees))

    def grow_tree(self, grower_index: int, k: int, in_bag: np.ndarray, out_of_bag: np.ndarray,
                  feature_mask: np.ndarray) -> Grown:
        """Grow the tree of output k and add it to the training and evaluation scores."""
        grower = self.growers[grower_index]
        rows = self.rows_buffers[grower_index][:in_bag.shape[0]]
        rows[:] = in_bag      # the grower reorders its rows: never in_bag itself
        tree = self.grow_on(grower, k, rows, feature_mask)
        # the partition of the last tree grown, for record_acquisitions; the buffer is
        # reused by this grower's next tree: trees growing in parallel keep a copy
        partition = rows if self.pool is None else rows.copy()
        if self.pool is None:
            self.record_acquisitions(tree, partition, out_of_bag, not self.penalised)
        self.add_scores(grower, tree, rows, k, in_bag, self.threads_per_tree)
        return tree, partition, out_of_bag

    def grow_on(self, grower: TreeGrower, k: int, rows: np.ndarray, feature_mask: np.ndarray
                ) -> np.ndarray:
        """A tree of output k grown by ``grower`` on ``rows`` (left in the order of its
        partition); with an objective that renews leaves (absolute error, quantile),
        its leaf values re-fitted to the quantile of their rows' residuals."""
        tree = grower.grow(self.grad[:, k], self.grow_hess[:, k], rows, feature_mask)
        quantile = self.setup.objective.leaf_quantile
        if quantile is not None:
            renew_leaf_values(tree, rows, self.dtrain.required_label() - self.raw_train[:, k],
                              self.dtrain.weight, quantile, self.p["learning_rate"],
                              grower.output_bounds())
        return tree

    def score_arrays(self) -> list:
        """The raw scores a tree is added to: the training set's, then each evaluation
        set's."""
        return [self.raw_train] + [raw for _, _, _, raw in self.eval_state]

    def add_scores(self, grower: TreeGrower, tree: np.ndarray, rows: np.ndarray, k: int,
                   in_bag: np.ndarray, n_threads: int,
                   targets: list[np.ndarray] | None = None) -> None:
        """Add the tree to column k of ``targets`` (default :meth:`score_arrays`): the
        training rows from ``grower``'s partition ``rows`` when it holds every row, else
        by traversal, and each evaluation set by traversal."""
        dtrain = self.dtrain
        train, *evals = self.score_arrays() if targets is None else targets
        if in_bag is self.all_rows:   # every row sits in a leaf of the partition
            if self.setup.objective.leaf_quantile is None:
                grower.add_leaf_values(rows, train, k)
            else:     # the renewed values: the tree's, not the grower's sums
                train[rows, k] += partition_values(tree)
        else:
            predict_binned_add(dtrain.binned, tree, dtrain.missing_bin, train, k, n_threads,
                               cat_bin_words=bin_words(tree))
        for (_, _, binned, _), raw in zip(self.eval_state, evals):
            predict_binned_add(binned, tree, dtrain.missing_bin, raw, k, n_threads,
                               cat_bin_words=bin_words(tree))

    def tree_values(self, grower: TreeGrower, tree: np.ndarray, rows: np.ndarray,
                    in_bag: np.ndarray) -> list[np.ndarray]:
        """What :meth:`add_scores` would add, as one column per score array, without
        adding it."""
        # -0.0 + value is value, bit for bit (0.0 + -0.0 is not): adding these columns
        # later gives the scores that adding the values directly would
        columns = [np.full((raw.shape[0], 1), -0.0, order="F") for raw in self.score_arrays()]
        self.add_scores(grower, tree, rows, 0, in_bag, 1, columns)
        return columns

    def record_acquisitions(self, tree: np.ndarray, partition: np.ndarray,
                            out_of_bag: np.ndarray, from_partition: bool) -> None:
        """Update the acquisition state with a new tree (in the order of the trees):
        the in-bag rows from the tree's partition (``from_partition``; else the grower
        has done that while growing on this state), the rows left out of the round by
        routing them through it; the tree's ``new_acquisitions`` count both."""
        if from_partition:
            self.cost_state.acquire_partition(tree, partition)
        self.split_visits += int(tree["n_samples"][tree["left"] != -1].sum())
        if out_of_bag.shape[0]:
            self.split_visits += self.cost_state.acquire_along_paths(
                self.dtrain.binned, tree, self.dtrain.missing_bin, out_of_bag,
                bin_words(tree))

    def grow_trees(self, grower_index: int, jobs: list[Job]) -> list[Grown]:
        return [self.grow_tree(grower_index, *job) for job in jobs]

    def speculate_trees(self, grower_index: int, jobs: list[Job]
                        ) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, list[np.ndarray]]]:
        """Greedy Miser's trees of ``jobs`` on one grower and its copy of the state,
        with their values (:meth:`tree_values`); nothing is added or recorded yet."""
        grower = self.growers[grower_index]
        speculated = []
        for k, in_bag, out_of_bag, feature_mask in jobs:
            rows = self.rows_buffers[grower_index][:in_bag.shape[0]]
            rows[:] = in_bag
            tree = self.grow_on(grower, k, rows, feature_mask)
            speculated.append((tree, rows.copy(), out_of_bag,
                               self.tree_values(grower, tree, rows, in_bag)))
        return speculated

    def grow_round_speculatively(self, jobs: list[Job]) -> list[np.ndarray]:
        """Greedy Miser's multiclass round on several threads, with the trees of growing
        them one after another (see __init__)."""
        state, n = self.cost_state, self.n_growers
        assert self.pool is not None      # speculative: several growers
        for scratch in self.scratch_states:
            scratch.copy_from(state)
        parts = [self.pool.submit(self.speculate_trees, g, jobs[g::n]) for g in range(n)]
        by_grower = [part.result() for part in parts]
        trees, new_use = [], False
        for k, (_, in_bag, out_of_bag, feature_mask) in enumerate(jobs):
            if new_use:     # an earlier tree of the round used a new feature: grow again
                grower = self.sequential_grower
                rows = self.rows_buffers[0][:in_bag.shape[0]]
                rows[:] = in_bag
                tree = self.grow_on(grower, k, rows, feature_mask)
                self.record_acquisitions(tree, rows, out_of_bag, False)
                self.add_scores(grower, tree, rows, k, in_bag, self.setup.n_threads)
            else:
                tree, rows, out_of_bag, values = by_grower[k % n][k // n]
                used = (state.used_mask.copy(), state.group_used_mask.copy())
                tree["new_acquisitions"] = 0    # counted again on the model's state
                self.record_acquisitions(tree, rows, out_of_bag, True)
                for raw, column in zip(self.score_arrays(), values):
                    raw[:, k] += column[:, 0]
                new_use = not (np.array_equal(used[0], state.used_mask)
                               and np.array_equal(used[1], state.group_used_mask))
            trees.append(tree)
        return trees

    def round_jobs(self, iteration: int) -> list[Job]:
        """The gradients of round ``iteration`` (into ``grad`` / ``hess``) and its trees'
        samples: ``(output, in_bag rows, out_of_bag rows, feature_mask)`` per tree."""
        dtrain, objective = self.dtrain, self.setup.objective
        objective.gradients(self.raw_train, dtrain.required_label(), dtrain.weight, self.grad,
                            self.hess, self.setup.n_threads, dtrain.group_ptr)
        check_gradient_sums(self.grad, self.p, iteration, self.first_iteration)
        in_bag_mask, feature_masks = self.sampler.sample(iteration)
        if in_bag_mask is None:
            in_bag, out_of_bag = self.all_rows, self.all_rows[:0]
        else:
            in_bag = np.flatnonzero(in_bag_mask).astype(np.int32)
            out_of_bag = np.flatnonzero(~in_bag_mask).astype(np.int32)
        return [(k, in_bag, out_of_bag, mask) for k, mask in enumerate(feature_masks)]

    def root_split_terms(self) -> list:
        """Per tree of the next round, per feature: the best raw gain of a root split
        and its cost increment (:meth:`TreeGrower.root_split_terms`)."""
        terms = []
        for k, in_bag, _, feature_mask in self.round_jobs(self.first_iteration):
            rows = np.array(in_bag, dtype=np.int32)
            terms.append(self.growers[0].root_split_terms(
                self.grad[:, k], self.grow_hess[:, k], rows, feature_mask))
        return terms

    def iterate(self, iteration: int) -> bool:
        dtrain, n_outputs = self.dtrain, self.setup.objective.n_outputs
        n_samples = dtrain.data.shape[0]
        if iteration in self.stage_starts and iteration != self.first_iteration:
            self.set_cost_tradeoff(self.stage_starts[iteration])
        jobs = self.round_jobs(iteration)
        if self.speculative:
            trees = self.grow_round_speculatively(jobs)
        elif self.pool is None:
            trees = [tree for tree, _, _ in self.grow_trees(0, jobs)]
        else:
            n = self.n_growers
            parts = [self.pool.submit(self.grow_trees, g, jobs[g::n]) for g in range(n)]
            by_grower = [part.result() for part in parts]
            grown = [by_grower[k % n][k // n] for k in range(n_outputs)]
            for tree_grown in grown:     # in the order of the trees, as routing would
                self.record_acquisitions(*tree_grown, True)
            trees = [tree for tree, _, _ in grown]
        add_checked_round(self.model, trees, self.p, self.cost_tradeoff,
                          dtrain.categorical_bin_codes)
        state = self.cost_state
        self.train_cost_curve.append(mean_training_cost(
            dtrain.cost_model, state.acquired_counts, state.touched_counts, self.split_visits,
            n_samples, len(self.model.trees)))
        return False

    def eval_predictions(self) -> list:
        transform = self.setup.objective.transform
        return [(name, data, transform(raw)) for name, data, _, raw in self.eval_state]

    def custom_metric_inputs(self) -> list:
        if not isinstance(self.setup.objective, CustomObjective):
            return self.eval_predictions()
        # a custom objective: the raw scores, as XGBoost and LightGBM give them
        return [(name, data, raw[:, 0].copy() if raw.shape[1] == 1 else raw.copy())
                for name, data, _, raw in self.eval_state]

    def finish(self, n_keep: int | None) -> Booster:
        return self.model if n_keep is None else self.model[:n_keep]

    def record_training(self, model: Booster) -> None:
        model.finalize(self.dtrain, self.named_evals, self.train_cost_curve)
        # the lowest trade-off the model's rounds grew with (without stages, cost_tradeoff)
        lowest = min((stage.cost_tradeoff for stage in model.cost_stages), default=0.0)
        if (self.penalised and lowest > 0 and model.trees
                and all(tree.shape[0] == 1 for tree in model.trees)):
            limit = smallest_blocking_tradeoff(self.p, self.dtrain, self.setup)
            if 0 < limit <= lowest:
                warnings.warn(
                    f"{self.p['algorithm']}: no split could pay its cost at cost_tradeoff="
                    f"{lowest:g}, so the model predicts a constant: "
                    f"lambda_max for this data is {limit:.4g}, the smallest trade-off at "
                    "which no split pays; try 1e-3 to 1e-1 times that, or "
                    "cbudget.cost_path, which scans down from lambda_max",
                    UserWarning, stacklevel=4)   # train()'s caller

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown()


def first_root_split_terms(p: dict, dtrain: Dataset, setup: TrainingSetup) -> list:
    """Per tree of the first round, on all rows and features: the best raw gain of a
    root split on each feature and its cost increment
    (:meth:`TreeGrower.root_split_terms`)."""
    # one round, at the first stage's trade-off: the later stages play no part
    trainer = BoostingTrainer(dict(p, subsample=1.0, colsample_bytree=1.0, cost_stages=None),
                              dtrain, 1, setup.without_evals())
    try:
        return trainer.root_split_terms()
    finally:
        trainer.close()


def smallest_blocking_tradeoff(p: dict, dtrain: Dataset, setup: TrainingSetup) -> float:
    """lambda_max: the smallest ``cost_tradeoff`` at which no root split of the first
    round pays its cost, i.e. ``raw_gain - lambda * increment <= gamma`` for every
    feature with a cost increment (features without one split at any trade-off); 0
    when no costly split has a gain above ``gamma``. On all rows and features: with
    ``subsample`` or ``colsample_bytree`` below 1, a later round's sample may still
    find a split that pays."""
    limit, gamma = 0.0, p["gamma"]
    for raw_gain, increment in first_root_split_terms(p, dtrain, setup):
        costly = (raw_gain > gamma) & (increment > 0)
        if costly.any():
            limit = max(limit, float(np.max((raw_gain[costly] - gamma) / increment[costly])))
    # a relative 1e-6 above the ratio: at the ratio itself, rounding (and the next
    # rounds' leaf values of order 1e-17 moving the gradients) may still let it split
    return limit * (1.0 + 1e-6)


class Boosting(Algorithm):
    """gbdt, cegb and greedy_miser: the tree limits follow the growth policy. The
    cost-aware ones (with a ``cost_tradeoff``) restate it in their files' section named
    after them."""

    def __init__(self, name: str, params: tuple, doc: str, *, depthwise_depth: int = 6
                 ) -> None:
        super().__init__(name, params, BoostingTrainer, doc, model_class=Booster,
                         section=name if any(param.name == "cost_tradeoff" for param in params)
                         else None, takes_callables=True)
        self.depthwise_depth = depthwise_depth

    def resolve(self, given: dict) -> dict:
        """As :meth:`Algorithm.resolve`; with ``cost_stages``, ``cost_tradeoff`` is the
        first stage's (what lambda_max and the first round's root splits use): giving
        another one as well is an error."""
        p = super().resolve(given)
        if p.get("cost_stages") is not None:
            first = p["cost_stages"][0][1]
            if given.get("cost_tradeoff") is not None and p["cost_tradeoff"] != first:
                raise ValueError(
                    f"give cost_tradeoff or cost_stages, not both: each stage of "
                    f"cost_stages has its trade-off (cost_tradeoff="
                    f"{given['cost_tradeoff']!r}, the first stage's {first!r})")
            p["cost_tradeoff"] = first
        return p

    def complete(self, p: dict) -> None:
        complete_tree_params(p, self.depthwise_depth)

    def memory_needs(self, p: dict, dtrain: Dataset, setup: TrainingSetup) -> list[MemoryNeed]:
        n_growers, speculative = round_growers(p, setup.objective.n_outputs, setup.n_threads)
        return grower_memory_needs(p, dtrain, n_growers + speculative)

    def root_split_terms(self, p: dict, dtrain: Dataset, setup: TrainingSetup) -> list:
        if self.name == "gbdt":
            return super().root_split_terms(p, dtrain, setup)
        return first_root_split_terms(p, dtrain, setup)

    def lambda_max(self, p: dict, dtrain: Dataset, setup: TrainingSetup) -> float:
        if self.name == "gbdt":
            return super().lambda_max(p, dtrain, setup)
        return smallest_blocking_tradeoff(p, dtrain, setup)


GBDT = Boosting("gbdt", (OBJECTIVE,) + OBJECTIVE_PARAMS + TREE_PARAMS + (MONOTONE_CONSTRAINTS,)
                + CATEGORICAL_PARAMS + SAMPLING_PARAMS + RANKING_PARAMS,
                "gradient boosting (second-order histogram trees)")
CEGB = Boosting("cegb", (OBJECTIVE, COST_TRADEOFF, COST_STAGES) + OBJECTIVE_PARAMS + TREE_PARAMS
                + (MONOTONE_CONSTRAINTS,) + CATEGORICAL_PARAMS + SAMPLING_PARAMS + RANKING_PARAMS,
                "cost-efficient gradient boosting (Peter et al., NIPS 2017)")
GREEDY_MISER = Boosting(
    "greedy_miser", (OBJECTIVE, COST_TRADEOFF, COST_STAGES) + OBJECTIVE_PARAMS
    + greedy_miser_trees(TREE_PARAMS) + (MONOTONE_CONSTRAINTS,)
    + CATEGORICAL_PARAMS + SAMPLING_PARAMS + RANKING_PARAMS,
    "Greedy Miser, stage-wise regression (Xu et al., ICML 2012)",
    depthwise_depth=4)
ALGORITHMS = (GBDT, CEGB, GREEDY_MISER)
