"""``cstc``, ``cscc`` and ``cronus``: trees and cascades of linear classifiers (Xu,
Kusner, Weinberger, Chen, Chapelle, JMLR 2014; ``reg:squarederror`` or
``binary:logistic``); return a :class:`cbudget.ClassifierTree` (cstc) or
:class:`cbudget.Cascade`.

Each node scores and routes with ``x . w + b > theta``; training minimises every node's
loss weighted by its reach probability (cscc, cronus: exit probability times
``class_weight``) + ``reg_alpha`` x l1 + ``cost_tradeoff`` (default 0.01) x the relaxed
expected cost (per path ``sum_a c_a sqrt(sum_nodes w_a^2)``; cronus: reach-weighted
weights in one norm), on standardised features and (regression) standardised targets,
so that the loss is in units of the label variance and lambda does not move with the
labels' scale; the routing probability is ``sigmoid(routing_sharpness (f - theta))``
(default 30, see :mod:`.cstc_solver` for this and the other departures from the paper);
by block coordinate descent (:mod:`.cstc_solver`):
``num_boost_round`` is the number of sweeps (fewer when the objective changes less than
``tol``; evaluation and early stopping per sweep; the best sweep is kept). ``max_depth``
levels (default 3; cascades: stages, default 4), ``tree_structure`` "full", "prune" or
"greedy" (the last two on the last ``evals`` set; "prune" prunes the optimised tree),
``loss`` "squared" (the paper's, +-1 targets) or "logistic", ``fine_tune`` (re-fit the
leaves without the cost term, on the features their paths pay for),
``basis_trees`` > 0 for the boosting trick (``basis_max_depth``,
``basis_learning_rate``). ``xgb_model`` is not supported: each training optimises the
whole tree.
"""
from __future__ import annotations

import copy
import numbers
import time
from typing import Any

import numpy as np

from .._core._linear import LOSS_LOGISTIC, LOSS_SQUARED
from .._core._openmp_helpers import resolve_n_threads
from ..booster import Booster
from ..callback import CallbackContainer
from ..cstc import LOSSES, Cascade, ClassifierTree, default_metric, node_inputs, score_transform
from ..dataset import Dataset
from ..engine import Algorithm, MemoryNeed, Trainer, TrainingSetup, run_training
from ..metrics import ranking_hint
from ..objectives import Objective, get_objective
from ..params import SQRT_FLOAT_MAX, Param, choice, flag, number
from .boosting import GBDT, grower_memory_needs
from .cstc_solver import TreeProblem, skeleton, validation_score
from .linear_inputs import cost_groups, standardize, standardized

__all__ = ["ALGORITHMS", "ClassifierTreeTrainer"]

PARAMS = (
    Param("objective", "reg:squarederror", None,
          "reg:squarederror (regression) or binary:logistic"),
    Param("cost_tradeoff", 0.01, number(low=0),
          "lambda: weight of the relaxed expected feature cost"),
    Param("reg_alpha", 0.01, number(low=0),
          "rho: l1 weight of every node's coefficients"),
    Param("max_depth", None, number(integer=True, low=1, high=12, allow_none=True),
          "levels of the tree (stages of a cascade); default 3 (cascades 4)"),
    Param("tree_structure", "full", choice("full", "prune", "greedy"),
          '"full", "prune" (bottom-up on validation after the sweeps, 3.6.1) or "greedy" '
          '(top-down, 3.6.2)'),
    Param("loss", "squared", choice(*LOSSES),
          'the paper\'s "squared" (+-1 targets for binary) or "logistic"'),
    Param("fine_tune", True, flag, "re-fit the leaves without the cost term (3.5)"),
    Param("class_weight", None, None, 'None, "balanced" or [w0, w1] (CSCC\'s w_y)'),
    Param("basis_trees", 0, number(integer=True, low=0),
          "T > 0: the boosting trick (section 5), T CART trees as coordinates"),
    Param("basis_max_depth", 4, number(integer=True, low=1), "depth of the basis trees"),
    Param("basis_learning_rate", 0.1, number(low=0, low_open=True),
          "learning rate of the basis trees"),
    Param("routing_sharpness", 30.0, number(low=0, low_open=True),
          "slope of the sigmoid of the soft routing, on standardised scores"),
    Param("tol", 1e-4, number(low=0, low_open=True),
          "relative objective change that ends a node's and the sweeps' iterations"),
)


def basis_params(p: dict[str, Any]) -> dict[str, Any]:
    """The gbdt parameters of the basis trees (the boosting trick)."""
    return GBDT.resolve({"objective": "reg:squarederror", "grow_policy": "depthwise",
                         "max_depth": p["basis_max_depth"],
                         "learning_rate": p["basis_learning_rate"], "seed": p["seed"],
                         "n_jobs": p["n_jobs"]})


def basis_booster(p: dict[str, Any], dtrain: Dataset, targets: np.ndarray) -> Booster:
    """The boosting trick (section 5): the booster of T depth-limited regression trees
    by gradient boosting on the targets (squared loss), whose trees' outputs are the
    coordinates the nodes see."""
    data = copy.copy(dtrain)
    data.label = targets
    params = basis_params(p)
    objective = get_objective("reg:squarederror", None)
    setup = TrainingSetup(objective=objective, metrics=[objective.default_metric], evals=[],
                          n_threads=resolve_n_threads(p["n_jobs"]), verbose=False)
    booster = run_training(GBDT.trainer(params, data, p["basis_trees"], setup),
                           CallbackContainer([]))
    assert isinstance(booster, Booster)  # gbdt's
    return booster


def standardize_targets(targets: np.ndarray, weight: np.ndarray) -> tuple[float, float]:
    """(mean, standard deviation) of regression targets under ``weight``; the solver fits
    the standardised targets, so that ``cost_tradeoff`` and ``reg_alpha`` weigh against
    a loss in units of the targets' variance, whatever their scale. A constant target
    keeps the scale 1."""
    mean = float(np.average(targets, weights=weight))
    scale = float(np.sqrt(np.average((targets - mean) ** 2, weights=weight)))
    return mean, scale if scale > 0 else 1.0


def class_factor(p: dict[str, Any], labels: np.ndarray, weight: np.ndarray | None
                 ) -> np.ndarray:
    """CSCC's class weight w_y of each input (ones without ``class_weight``)."""
    choice_ = p["class_weight"]
    if choice_ is None:
        return np.ones(labels.shape[0])
    if choice_ == "balanced":
        w = np.ones(labels.shape[0]) if weight is None else weight
        totals = np.array([w[labels == c].sum() for c in (0, 1)])
        per_class = np.where(totals > 0, w.sum() / (2.0 * np.maximum(totals, 1e-300)), 1.0)
    else:
        per_class = np.asarray(choice_)
    return per_class[labels.astype(np.int64)]


def check_penalty_scale(p: dict, total_weight: float, total_cost: float) -> None:
    """ValueError naming ``reg_alpha`` or ``cost_tradeoff`` when the solver's penalty,
    which it scales by the total sample weight (``reg_alpha``, and ``cost_tradeoff``
    times the costs), would exceed :data:`SQRT_FLOAT_MAX`: its arithmetic would overflow
    (before, SciPy's "array must not contain infs or NaNs" or a model of NaN)."""
    for name, scale, what in (
            ("reg_alpha", total_weight, "the total sample weight"),
            ("cost_tradeoff", total_weight * max(total_cost, 1.0),
             "the total sample weight and cost")):
        with np.errstate(over="ignore"):
            size = p[name] * scale
        if not size <= SQRT_FLOAT_MAX:
            raise ValueError(f"parameter {name}={p[name]!r} is too large for this data: times "
                             f"{what} it reaches {size:.3g}, beyond {SQRT_FLOAT_MAX:.3g}, "
                             "where the solver's arithmetic overflows")


class ClassifierTreeTrainer(Trainer[ClassifierTree]):
    """Structure (full, or greedy on the last ``evals`` set), sweeps of block coordinate
    descent, then (``finish``) pruning on the last ``evals`` set for "prune", removal of
    unreached nodes and idle routing weights, and fine-tuning of the leaves."""

    keeps_all_iterations = False

    def __init__(self, p: dict, dtrain: Dataset, num_boost_round: int, setup: TrainingSetup):
        super().__init__(p, dtrain, num_boost_round, setup)
        objective = setup.objective
        y, weight = dtrain.required_label(), dtrain.weight
        binary = objective.name == "binary:logistic"
        self.sample_weight = np.ones(y.shape[0]) if weight is None else weight
        if binary:
            targets = 2.0 * y - 1.0
            self.target_mean, self.target_scale = 0.0, 1.0
        else:
            targets = y.astype(np.float64)
            self.target_mean, self.target_scale = standardize_targets(targets,
                                                                      self.sample_weight)
        scaled_targets = (targets - self.target_mean) / self.target_scale
        self.basis = basis_booster(p, dtrain, targets) if p["basis_trees"] else None
        coords = node_inputs(dtrain.data, self.basis)
        self.mean, self.std = standardize(coords, self.sample_weight)
        Z = standardized(coords, self.mean, self.std)
        groups, group_costs = cost_groups(dtrain.cost_model, self.basis, Z.shape[1])
        check_penalty_scale(p, float(self.sample_weight.sum()), float(np.sum(group_costs)))
        cascade = p["algorithm"] != "cstc"
        self.problem = problem = TreeProblem(
            Z, scaled_targets, self.sample_weight,
            class_factor(p, y, weight) if binary else np.ones(y.shape[0]),
            groups, group_costs, kind="cascade" if cascade else "tree", depth=p["max_depth"],
            weighting="exit" if cascade else "reach",
            cost_form="cronus" if p["algorithm"] == "cronus" else "paths",
            loss=LOSS_LOGISTIC if p["loss"] == "logistic" else LOSS_SQUARED,
            rho=p["reg_alpha"], lam=p["cost_tradeoff"], tol=p["tol"], usable=self.std > 0,
            n_threads=setup.n_threads, sharpness=p["routing_sharpness"])
        self.eval_coords = [(name, data, standardized(node_inputs(data.data, self.basis),
                                                      self.mean, self.std))
                            for data, name in setup.evals]
        start = time.perf_counter()
        # (validation coordinates, lower-is-better score) that pruning uses at the end
        self.pruning = None
        if p["tree_structure"] == "full":
            problem.initialize()
        else:
            if not setup.evals:
                raise ValueError(f"tree_structure {p['tree_structure']!r} needs validation "
                                 "data: pass evals=[(dvalid, 'valid')] (the last data set "
                                 "is used)")
            _, valid, Z_valid = self.eval_coords[-1]
            score = validation_score(setup.metrics[-1], valid, self.transform)
            if p["tree_structure"] == "prune":
                problem.initialize()
                self.pruning = (Z_valid, score)
            else:
                problem.grow_greedy(Z_valid, score)
        if setup.verbose:
            pruned = " (pruned after the sweeps)" if self.pruning else ""
            print(f"{p['algorithm']}: {p['tree_structure']} structure of "
                  f"{problem.alive.sum()} nodes initialised in "
                  f"{time.perf_counter() - start:.1f} s{pruned}", flush=True)
        self.model = self.export()
        # the problem's state after each sweep, the first one before any
        self.states = [self.state()]
        self.previous = problem.objective()

    def state(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        problem = self.problem
        return (problem.B.copy(), problem.bias.copy(), problem.theta.copy(),
                problem.active.copy())

    def transform(self, score: np.ndarray) -> np.ndarray:
        """Predictions from the problem's scores (on the scale of the standardised
        targets)."""
        return score_transform(self.setup.objective.name, self.p["loss"],
                               score * self.target_scale + self.target_mean)

    def export(self) -> ClassifierTree:
        """The problem's alive nodes as a ClassifierTree / Cascade: renumbered in level
        order, weights back on the original scale of the coordinates."""
        problem, p, dtrain = self.problem, self.p, self.dtrain
        alive = problem.alive_nodes()
        new_id = {int(k): i for i, k in enumerate(alive)}
        upper, lower = problem.children()
        scale = np.where(self.std > 0, 1.0 / np.where(self.std > 0, self.std, 1.0), 0.0)
        # back to the targets' scale, then to the coordinates' scale
        weights = problem.B[alive] * scale * self.target_scale
        bias = (problem.bias[alive] * self.target_scale + self.target_mean
                - weights @ self.mean)
        model_class = ClassifierTree if p["algorithm"] == "cstc" else Cascade
        return model_class(
            objective=self.setup.objective.name, loss=p["loss"],
            feature_names=dtrain.feature_names, cost_model=dtrain.cost_model, params=p,
            weights=weights, bias=bias,
            thresholds=np.where([upper[k] == -1 and lower[k] == -1 for k in alive], 0.0,
                                problem.theta[alive] * self.target_scale + self.target_mean),
            upper=[new_id[int(upper[k])] if upper[k] != -1 else -1 for k in alive],
            lower=[new_id[int(lower[k])] if lower[k] != -1 else -1 for k in alive],
            impute=self.mean if self.basis is None else np.zeros_like(self.mean),
            basis=self.basis)

    def iterate(self, iteration: int) -> bool:
        problem = self.problem
        value = problem.sweep()
        self.states.append(self.state())
        self.model = self.export()
        converged = abs(self.previous - value) <= self.p["tol"] * max(1.0, abs(value))
        self.previous = value
        return converged

    def eval_predictions(self) -> list:
        return [(name, data, self.transform(self.problem.predict_hard(Z_eval)[0]))
                for name, data, Z_eval in self.eval_coords]

    def finish(self, n_keep: int | None) -> ClassifierTree:
        problem = self.problem
        if n_keep is not None and n_keep < len(self.states) - 1:
            problem.B, problem.bias, problem.theta, problem.active = (
                a.copy() for a in self.states[n_keep])
            problem.F = problem.Z @ problem.B.T + problem.bias
        if self.pruning is not None:
            problem.prune(*self.pruning)
        problem.drop_unreached_nodes()
        problem.drop_idle_weights()
        if self.p["fine_tune"]:
            problem.fine_tune()
        return self.export()

    def record_training(self, model: ClassifierTree) -> None:
        problem = self.problem
        reach, _ = problem.route()
        model.finalize(self.dtrain, self.named_evals,
                       (self.sample_weight @ reach)[problem.alive_nodes()] / problem.W)
        model.summary["objective_per_sweep"] = list(problem.objective_history)


class ClassifierTreeAlgorithm(Algorithm):
    def __init__(self, name: str, doc: str, depth: int, model_class: type[ClassifierTree]
                 ) -> None:
        super().__init__(name, PARAMS, ClassifierTreeTrainer, doc, model_class=model_class,
                         section="classifier_tree",
                         cannot_continue="each training optimises the whole tree")
        self.depth = depth

    def complete(self, p: dict) -> None:
        if p["objective"] not in ("reg:squarederror", "binary:logistic"):
            raise ValueError(f"{p['algorithm']} fits regression (reg:squarederror) or binary "
                             f"classification (binary:logistic), not {p['objective']!r}"
                             + ranking_hint(p["objective"], "by regression on the relevance "
                                            "labels (reg:squarederror), as in its paper,"))
        if p["num_class"] not in (None, 1):
            raise ValueError(f"{p['algorithm']} is not multi-class: num_class must be None")
        if p["max_depth"] is None:
            p["max_depth"] = self.depth
        if p["loss"] == "logistic" and p["objective"] != "binary:logistic":
            raise ValueError("loss 'logistic' needs objective 'binary:logistic'")
        weight = p["class_weight"]
        if weight is not None:
            if p["objective"] != "binary:logistic":
                raise ValueError("class_weight needs objective 'binary:logistic'")
            if weight != "balanced":
                if (not isinstance(weight, (list, tuple)) or len(weight) != 2
                        or not all(isinstance(w, numbers.Real) and not isinstance(w, bool)
                                   and 0 < float(w) < float("inf") for w in weight)):
                    raise ValueError("parameter class_weight must be None, 'balanced' or two "
                                     f"finite numbers > 0 [w0, w1], got {weight!r}")
                p["class_weight"] = [float(w) for w in weight]

    def default_metric(self, p: dict, objective: Objective) -> str:
        return default_metric(objective.name, p["loss"])

    def memory_needs(self, p: dict, dtrain: Dataset, setup: TrainingSetup) -> list[MemoryNeed]:
        n_rows, n_features = dtrain.data.shape
        # the coordinates: the features, or the basis trees' outputs (boosting trick)
        d = p["basis_trees"] or n_features
        coordinates = "basis_trees" if p["basis_trees"] else "n_features"
        kind = "cascade" if self.model_class is Cascade else "tree"
        n_nodes = skeleton(kind, p["max_depth"])[0].shape[0]
        fewer = ("Reduce the features (select the useful ones first) or learn on "
                 "basis_trees=T boosted trees' outputs (T coordinates)")
        needs = [
            MemoryNeed(f"the standardised coordinates and a node's centred and weighted "
                       f"copies: 3 x n_rows x {coordinates} x 8 bytes",
                       3.0 * n_rows * d * 8, fewer),
            MemoryNeed(f"the nodes' weights: {n_nodes} nodes x {coordinates} x 9 bytes",
                       9.0 * n_nodes * d, fewer + " or max_depth"),
        ]
        if p["loss"] == "squared":
            # a leaf's weighted ridge solve (WeightedGram): d x d, and its solve's copy
            needs.append(MemoryNeed(
                f"a node's normal equations: 2 x {coordinates}^2 x 8 bytes",
                2.0 * d * d * 8, fewer))
        if p["basis_trees"]:
            needs += grower_memory_needs(basis_params(p), dtrain, 1, "the basis trees' ")
        return needs


ALGORITHMS = (
    ClassifierTreeAlgorithm("cstc", "cost-sensitive tree of classifiers (Xu et al., JMLR 2014)",
                            3, ClassifierTree),
    ClassifierTreeAlgorithm("cscc", "cost-sensitive cascade of classifiers (Xu et al., 2014)",
                            4, Cascade),
    ClassifierTreeAlgorithm("cronus", "Cronus cascade (Chen et al. 2012, as in Xu et al. 2014)",
                            4, Cascade),
)
