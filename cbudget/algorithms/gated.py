"""``adapt_gbrt`` and ``adapt_lin``: a gate and a low-cost predictor in front of an
expensive model (Nan and Saligrama, NIPS 2017; binary, labels 0/1 or -1/+1); return a
:class:`cbudget.GatedModel`. ``train(..., expensive_model=f0)`` takes the expensive
model: a binary cbudget model with the same features and costs, or
``cbudget.ExternalModel(estimator, cost=... or features=...)`` for anything with
``predict_proba``.

Alternating minimisation of (OPT) over the soft routing q (closed form, the q-step
:func:`cbudget.adapt.q_step`: ``q_i = 1 / (1 + exp(B_i - A_i + beta))``, at most
``p_full`` (default 0.2) of the inputs to the expensive model) and the gate g with the
low-cost predictor f1:

* adapt_gbrt: ``num_boost_round`` rounds, each adding one Greedy Miser tree to the
  predictor and one to the gate, with a q-step every ``q_update_period`` (10) rounds; a
  split on a feature no tree of either uses yet pays ``cost_tradeoff`` (gamma, default
  1) times its cost (``acquisition="input"``: per input that has not acquired it, as
  CEGB). The tree parameters are Greedy Miser's.
* adapt_lin: linear gate and predictor with the penalty ``cost_tradeoff`` (0.01) x
  ``sum_a c_a sqrt(g_a^2 + f1_a^2)`` and a ridge ``reg_lambda`` (1e-4) on the
  standardised features (so gamma does not depend on the features' units), solved by
  L-BFGS; ``num_boost_round`` alternations at most (until the objective changes less
  than ``tol`` or the features used settle), from ``n_restarts`` (4) starts. Departures
  from the paper, each because the paper's example (Synthetic-2) broke on variants of
  its geometry: the first start follows gamma down from where the zero model stops
  being optimal (a continuation); the others start from the best gates that read one
  feature (the p_full share of the inputs at one end of it to f0); every start's
  features are refitted without the relaxed penalty (g and f1 jointly, q eliminated),
  and the start kept is the one of lowest (OPT) with the paper's cost -- gamma times
  the cost of the features used -- not with its group-norm relaxation.

Evaluation and early stopping use the gated predictions; the model is cut to the best
iteration. ``xgb_model`` is not supported.

Both algorithms minimise, for fixed q (per-input probability of going to f0),

    sum_i w_i [(1 - q_i) (l(y_i, f1(x_i)) + log(1 + e^g(x_i))) + q_i log(1 + e^-g(x_i))]
    + cost penalty of the features g and f1 use,

(the first two terms of (OPT2) with the weights normalised to sum 1), where ``l`` is the
logistic loss. The q-step takes ``A_i = l(y_i, f1) + log(1 + e^g)`` and
``B_i = -log p0(y_i | x_i) + log(1 + e^-g)`` (p0: the expensive model's probability).
"""
from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np
import scipy.optimize
from scipy.special import expit

from .._core._acquisition import AcquisitionState
from .._core._grower import bin_words
from .._core._linear import dense_gradient, dense_scores
from .._core._predict import predict_binned_add
from .._model import Model
from ..adapt import (
    PROBABILITY_EPS,
    ExternalModel,
    GatedModel,
    LinearClassifier,
    calibrated_threshold,
    is_binary_classifier,
    positive_log_loss,
    positive_probability,
    q_step,
)
from ..booster import Booster
from ..dataset import Dataset, check_model_matches, zero_one_labels
from ..engine import Algorithm, MemoryNeed, Trainer, TrainingSetup
from ..metrics import ranking_hint
from ..params import CATEGORICAL_PARAMS, Param, choice, number
from .boosting import (
    GREEDY_MISER,
    TREE_PARAMS,
    add_checked_round,
    binned_like,
    complete_tree_params,
    greedy_miser_trees,
    grower_memory_needs,
    penalty_costs,
    tree_grower,
)
from .linear_inputs import cost_groups, standardize, standardized, threads_for

if TYPE_CHECKING:  # only for type hints
    from scipy.sparse import sparray, spmatrix

    from ..objectives import Objective

# ADAPT-LIN's (OPT2) as a function of the weights v and the routing q: a step (the new v)
# or an objective value
Step: TypeAlias = Callable[[np.ndarray, np.ndarray], np.ndarray]
PairObjective: TypeAlias = Callable[[np.ndarray, np.ndarray], float]

__all__ = ["ALGORITHMS", "LinearPairProblem", "check_expensive_model"]

# a linear weight pair (g_a, f1_a) this small is a candidate for an exact zero
ZERO_CANDIDATE = 1e-4
# the smoothing of the group norms, sqrt(norm^2 + eps^2), in decreasing steps
SMOOTHING = (1e-2, 1e-4, 1e-6, 1e-8)
# the first start's continuation: the relaxed problem at this many trade-offs
PATH_LEVELS = 4
# the relaxed alternations stop once the features used are the same this many times
# (only the features they choose matter: the refit fits the weights)
SETTLED = 3
# L-BFGS iterations of a refit
REFIT_ITERATIONS = 1000


def _softplus(z: np.ndarray) -> np.ndarray:
    return np.logaddexp(0.0, z)


def _logit(p: float) -> float:
    return np.log(p) - np.log1p(-p)


def check_expensive_model(expensive_model: Any, dtrain: Dataset) -> Model | ExternalModel:
    """The expensive model f0, checked against the training data: a binary cbudget model
    with the same features and costs, or an :class:`ExternalModel`."""
    if expensive_model is None:
        raise ValueError("adapt_gbrt / adapt_lin approximate an expensive model: pass "
                         "train(..., expensive_model=f0), a cbudget model or "
                         "cbudget.ExternalModel(estimator, cost=... or features=...)")
    if isinstance(expensive_model, ExternalModel):
        expensive_model.feature_indices(dtrain.feature_names)   # names checked now
        return expensive_model
    if isinstance(expensive_model, Model):
        if not is_binary_classifier(expensive_model):
            raise ValueError(f"the expensive model must be a binary classifier "
                             f"(binary:logistic), not {expensive_model.objective!r}")
        check_model_matches(expensive_model, dtrain, "the expensive model",
                            "one cost model is used for the whole gated model")
        return expensive_model
    if callable(getattr(expensive_model, "predict_proba", None)):
        raise TypeError(f"declare what the expensive {type(expensive_model).__name__} costs: "
                        "pass cbudget.ExternalModel(model, cost=...) or "
                        "ExternalModel(model, features=[...] or 'all')")
    raise TypeError(f"expensive_model must be a cbudget model or a cbudget.ExternalModel, "
                    f"got {type(expensive_model).__name__}")


def expensive_probability(f0: Model | ExternalModel, X: np.ndarray) -> np.ndarray:
    """The expensive model's P(y = 1) of the rows of ``X``, clipped away from 0 and 1."""
    p = np.asarray(positive_probability(f0, X), dtype=np.float64)
    if not np.all(np.isfinite(p)):
        raise ValueError("the expensive model predicted NaN or inf probabilities")
    return np.clip(p, PROBABILITY_EPS, 1 - PROBABILITY_EPS)


def _expensive_loss(p0: np.ndarray, y: np.ndarray) -> np.ndarray:
    """-log p0(y | x) per input."""
    return -np.log(np.where(y > 0.5, p0, 1.0 - p0))


def _composite(raw_gate: np.ndarray, raw_predictor: np.ndarray, p0: np.ndarray,
               threshold: float) -> np.ndarray:
    """The gated model's P(y = 1) from the parts' margins and f0's probabilities."""
    return np.where(raw_gate > threshold, p0, expit(raw_predictor))


def _leaf_of_rows(binned: np.ndarray, missing_bin: int, tree: np.ndarray, n_threads: int
                  ) -> np.ndarray:
    """The leaf of every row of ``binned`` in ``tree`` (the tree with each leaf's value
    set to its node id, added to zeros)."""
    ids = tree.copy()
    ids["value"] = np.arange(tree.shape[0])
    out = np.zeros((binned.shape[0], 1))
    predict_binned_add(binned, ids, missing_bin, out, 0, n_threads,
                       cat_bin_words=bin_words(ids))
    return out[:, 0].astype(np.intp)


def _newton_leaves(tree: np.ndarray, leaf: np.ndarray, gradient: np.ndarray,
                   hessian: np.ndarray, learning_rate: float) -> None:
    """Leaf values ``-learning_rate * sum(gradient) / sum(hessian)`` over each leaf's
    rows (``leaf``: the leaf of each row)."""
    n_nodes = tree.shape[0]
    sums = np.bincount(leaf, weights=gradient, minlength=n_nodes)
    curvature = np.bincount(leaf, weights=hessian, minlength=n_nodes)
    is_leaf = tree["left"] == -1
    tree["value"][is_leaf] = -learning_rate * sums[is_leaf] / np.maximum(curvature[is_leaf],
                                                                         1e-300)


def _gate_threshold(p: dict, margin: np.ndarray, weight: np.ndarray) -> float:
    """``gate_threshold``, or the calibrated one (the p_full share of the training inputs
    with the highest gate margins go to the expensive model)."""
    if p["gate_threshold"] is not None:
        return p["gate_threshold"]
    return calibrated_threshold(margin, weight, p["p_full"])


def _part_params(p: dict) -> dict:
    """Training parameters of the gate's and the predictor's boosters: Greedy Miser's
    trees, every Greedy Miser parameter listed (as a file of the part lists them); the
    adapt settings live in the gated model's own section."""
    part = {k: v for k, v in p.items() if k not in ADAPT_PARAM_NAMES}
    part["algorithm"] = "greedy_miser"
    return GREEDY_MISER.resolve(part)


class GatedTrainer(Trainer[GatedModel]):
    """What ADAPT-GBRT and ADAPT-LIN share: the expensive model f0, checked, and its
    probabilities on the training and evaluation data."""

    keeps_all_iterations = False

    def __init__(self, p: dict, dtrain: Dataset, num_boost_round: int, setup: TrainingSetup):
        super().__init__(p, dtrain, num_boost_round, setup)
        self.f0 = f0 = check_expensive_model(setup.expensive_model, dtrain)
        y = dtrain.required_label()
        self.weight = np.ones(y.shape[0]) if dtrain.weight is None else dtrain.weight
        p0 = expensive_probability(f0, dtrain.data)
        self.loss0 = _expensive_loss(p0, y)
        self.eval_p0 = [expensive_probability(f0, data.data) for data, _ in setup.evals]
        self.q = np.zeros(y.shape[0])   # the last q-step's q on the training data
        if setup.verbose:
            accuracy = np.average((p0 > 0.5) == (y > 0.5), weights=self.weight)
            print(f"{p['algorithm']}: the expensive model's training accuracy is "
                  f"{accuracy:.4f}; at most p_full={p['p_full']:g} of the inputs go to it",
                  flush=True)

    def record_training(self, model: GatedModel) -> None:
        model.finalize(self.dtrain, self.named_evals, self.q)


class AdaptGBRTTrainer(GatedTrainer):
    """Algorithm 2: every ``q_update_period`` rounds a q-step; every round one CART tree
    (first order, Greedy Miser's impurity) added to f1 on the residuals of eq. (1) and one
    to g on those of eq. (2). Both trees charge a split on a feature nobody uses yet
    ``cost_tradeoff`` times its cost (the shared u_alpha); with ``acquisition="input"``
    they charge it per input that has not acquired it in g or f1 (CEGB's state)."""

    def __init__(self, p: dict, dtrain: Dataset, num_boost_round: int, setup: TrainingSetup):
        super().__init__(p, dtrain, num_boost_round, setup)
        y = dtrain.required_label()
        n_samples = y.shape[0]
        costs = dtrain.cost_model
        common: dict[str, Any] = dict(objective="binary:logistic", num_class=1,
                      feature_names=dtrain.feature_names, cost_model=costs,
                      params=_part_params(p))
        self.predictor = Booster(base_score=setup.objective.base_score(y, dtrain.weight),
                                 **common)
        self.gate = Booster(base_score=np.zeros(1), **common)
        self.model = GatedModel(gate=self.gate, predictor=self.predictor, expensive=self.f0,
                                feature_names=dtrain.feature_names, cost_model=costs, params=p)
        for model in (self.model, self.gate, self.predictor):
            model.categories = dtrain.categories
        self.grower = tree_grower(dtrain, p, setup.n_threads)
        state = AcquisitionState(n_samples, costs.feature_group, costs.n_groups)
        self.grower.set_cost_penalty(state, p["cost_tradeoff"], *penalty_costs(
            "cegb" if p["acquisition"] == "input" else "greedy_miser", costs))
        self.splittable = (dtrain.n_value_bins >= 2).astype(np.uint8)
        self.no_split = np.zeros_like(self.splittable)
        self.all_rows = np.arange(n_samples, dtype=np.int32)
        self.rows = np.empty(n_samples, dtype=np.int32)
        # first order (CART on residuals): the hessian is the weight
        self.unit = np.ascontiguousarray(self.weight, dtype=np.float64)
        self.grad = np.empty((n_samples, 1), order="F")
        self.hess = np.empty((n_samples, 1), order="F")
        self.raw_predictor = np.tile(self.predictor.base_score, (n_samples, 1))
        self.raw_gate = np.zeros((n_samples, 1))
        self.eval_state = [(name, data, binned_like(data, dtrain),
                            np.tile(self.predictor.base_score, (data.num_data(), 1)),
                            np.zeros((data.num_data(), 1)), p0_eval)
                           for (data, name), p0_eval in zip(setup.evals, self.eval_p0)]
        self.thresholds: list[float] = []

    def grow(self, gradient: np.ndarray, mask: np.ndarray) -> np.ndarray:
        self.rows[:] = self.all_rows      # the grower reorders its rows
        return self.grower.grow(np.ascontiguousarray(gradient), self.unit, self.rows, mask)

    def iterate(self, iteration: int) -> bool:
        p, dtrain, n_threads = self.p, self.dtrain, self.setup.n_threads
        y, weight, unit = dtrain.required_label(), self.weight, self.unit
        raw_predictor, raw_gate = self.raw_predictor, self.raw_gate
        if iteration % p["q_update_period"] == 0:
            excess = (positive_log_loss(raw_predictor[:, 0], y) + _softplus(raw_gate[:, 0])
                      - self.loss0 - _softplus(-raw_gate[:, 0]))
            self.q, _ = q_step(excess, p["p_full"], weight)
            if iteration == 0:
                # g starts at the constant that best fits the first q (log-odds of its mean)
                share = np.clip(np.average(self.q, weights=weight), 1e-6, 1 - 1e-6)
                self.gate.base_score = np.array([_logit(share)])
                raw_gate[:] = self.gate.base_score
                for state_eval in self.eval_state:
                    state_eval[4][:] = self.gate.base_score
        q = self.q
        # f1: residuals (1 - q_i)(y_i - p_i) of eq. (1) (the logistic gradient kernel,
        # so that p_full = 0 grows Greedy Miser's trees bit for bit)
        self.setup.objective.gradients(raw_predictor, y, dtrain.weight, self.grad, self.hess,
                                       n_threads)
        tree = self.grow(self.grad[:, 0] * (1.0 - q), self.splittable)
        self.grower.add_leaf_values(self.rows, raw_predictor, 0)
        add_checked_round(self.predictor, [tree], p, bin_codes=dtrain.categorical_bin_codes)
        for _, _, binned, raw_f, _, _ in self.eval_state:
            predict_binned_add(binned, tree, dtrain.missing_bin, raw_f, 0, n_threads,
                               cat_bin_words=bin_words(tree))
        # g: CART on the residuals q_i - sigmoid(g_i) of eq. (2) (a constant residual
        # needs no split), with Newton leaf values (Friedman's TreeBoost for the logistic
        # loss): first-order steps barely move a gate whose sigmoid is near 0 or 1
        gate_probability = expit(raw_gate[:, 0])
        residual = gate_probability - q
        gate_gradient = residual * unit
        tree = self.grow(gate_gradient, self.no_split if np.ptp(residual) == 0
                         else self.splittable)
        leaf = _leaf_of_rows(dtrain.binned, dtrain.missing_bin, tree, n_threads)
        _newton_leaves(tree, leaf, gate_gradient,
                       np.maximum(gate_probability * (1 - gate_probability), 1e-16) * unit,
                       p["learning_rate"])
        raw_gate[:, 0] += tree["value"][leaf]
        add_checked_round(self.gate, [tree], p, bin_codes=dtrain.categorical_bin_codes)
        self.model.gate_threshold = _gate_threshold(p, raw_gate[:, 0], weight)
        self.thresholds.append(self.model.gate_threshold)
        for _, _, binned, _, raw_g, _ in self.eval_state:
            predict_binned_add(binned, tree, dtrain.missing_bin, raw_g, 0, n_threads,
                               cat_bin_words=bin_words(tree))
        return False

    def eval_predictions(self) -> list:
        threshold = self.model.gate_threshold
        return [(name, data, _composite(raw_g[:, 0], raw_f[:, 0], p0_eval, threshold))
                for name, data, _, raw_f, raw_g, p0_eval in self.eval_state]

    def finish(self, n_keep: int | None) -> GatedModel:
        model = self.model
        if n_keep is not None:
            model.gate, model.predictor = self.gate[:n_keep], self.predictor[:n_keep]
            model.gate_threshold = self.thresholds[n_keep - 1] if n_keep else \
                _gate_threshold(self.p, np.full(self.weight.shape[0], self.gate.base_score[0]),
                                self.weight)
        return model


class LinearPairProblem:
    """(OPT2) for linear g and f1 on standardised features ``Z`` (missing values at 0, the
    mean): ``v = [g (d), g's bias, f1 (d), f1's bias]``, minimising

        sum_i w_i [(1 - q_i)(l(y_i, f1) + softplus(g_i)) + q_i softplus(-g_i)]
        + gamma sum_k c_k ||(g, f1) restricted to group k|| + reg_lambda / 2 (|g|^2 + |f1|^2)

    (weights normalised to sum 1; a group is a feature with its cost, or a cost group
    with its cost). The group norms are smoothed as ``sqrt(norm^2 + eps^2)`` with eps
    decreasing to 1e-8 for L-BFGS (scipy), then the pairs that the optimality
    conditions of the exact objective allow at zero are set to exactly zero."""

    def __init__(self, Z: np.ndarray, y: np.ndarray, weight: np.ndarray, loss0: np.ndarray,
                 groups: sparray | spmatrix, group_costs: np.ndarray, *, gamma: float,
                 reg_lambda: float, n_threads: int = 1) -> None:
        self.Z = np.ascontiguousarray(Z, dtype=np.float64)
        self.columns = np.arange(Z.shape[1], dtype=np.int64)
        # products by cbudget's kernels (no BLAS: its idle threads spin and compete with
        # OpenMP's; fixed summation order)
        self.requested_threads = n_threads
        self.n_threads = threads_for(Z.shape[0] * Z.shape[1], n_threads)
        self.y = y
        self.w = weight / weight.sum()
        self.loss0 = loss0
        self.groups = groups                 # csr (n_groups, d) 0/1
        # its transpose, built once: L-BFGS evaluates the gradient thousands of times
        self.groups_t = groups.T
        self.group_costs = group_costs
        self.gamma = gamma
        self.reg_lambda = reg_lambda
        self.d = Z.shape[1]

    def split(self, v: np.ndarray) -> tuple[np.ndarray, Any, np.ndarray, Any]:
        # (g, g's bias, f1, f1's bias): the biases are numpy scalars
        d = self.d
        return v[:d], v[d], v[d + 1:2 * d + 1], v[2 * d + 1]

    def _scores(self, beta: np.ndarray, bias: float) -> np.ndarray:
        used = np.flatnonzero(beta)
        out = np.empty(self.Z.shape[0])
        dense_scores(self.Z, self.columns[used], np.ascontiguousarray(beta[used]), float(bias),
                     out, self.n_threads)
        return out

    def _transposed(self, residual: np.ndarray) -> np.ndarray:
        out = np.empty(self.d)
        dense_gradient(self.Z, self.columns, np.ascontiguousarray(residual), out,
                       self.n_threads)
        return out

    def margins(self, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        g, g_bias, f, f_bias = self.split(v)
        return self._scores(g, g_bias), self._scores(f, f_bias)

    def excess_loss(self, v: np.ndarray) -> np.ndarray:
        """A_i - B_i of the q-step (softplus(g) - softplus(-g) = g)."""
        sg, sf = self.margins(v)
        return positive_log_loss(sf, self.y) + sg - self.loss0

    def _pair_squares(self, v: np.ndarray) -> np.ndarray:
        g, _, f, _ = self.split(v)
        return g * g + f * f

    def penalty(self, v: np.ndarray) -> float:
        """gamma sum_k c_k ||group k|| + the ridge (exact, not smoothed)."""
        squares = self._pair_squares(v)
        return (self.gamma * self.group_costs @ np.sqrt(self.groups @ squares)
                + 0.5 * self.reg_lambda * squares.sum())

    def loss_and_margin_gradients(self, v: np.ndarray, q: np.ndarray
                                  ) -> tuple[float, np.ndarray, np.ndarray]:
        sg, sf = self.margins(v)
        # (1 - q) softplus(g) + q softplus(-g) = softplus(g) - q g
        loss = self.w @ ((1 - q) * positive_log_loss(sf, self.y) + _softplus(sg) - q * sg)
        return loss, self.w * (expit(sg) - q), self.w * (1 - q) * (expit(sf) - self.y)

    def _loss_gradient(self, v: np.ndarray, q: np.ndarray) -> tuple[float, np.ndarray]:
        """The loss (without penalties) and its gradient with respect to ``v``."""
        loss, dg, df = self.loss_and_margin_gradients(v, q)
        return loss, np.concatenate([self._transposed(dg), [dg.sum()], self._transposed(df),
                                     [df.sum()]])

    def _smoothed(self, v: np.ndarray, q: np.ndarray, eps: float, free: np.ndarray,
                  gamma: float | None = None) -> tuple[float, np.ndarray]:
        """The smoothed objective of (OPT2) and its gradient (``gamma``: the group
        penalty's weight, by default the problem's)."""
        gamma = self.gamma if gamma is None else gamma
        costs = self.group_costs
        loss, grad = self._loss_gradient(v, q)
        g, _, f, _ = self.split(v)
        squares = g * g + f * f
        norms = np.sqrt(self.groups @ squares + eps * eps)
        value = loss + gamma * costs @ norms + 0.5 * self.reg_lambda * squares.sum()
        scale = gamma * (self.groups_t @ (costs / norms)) + self.reg_lambda
        d = self.d
        grad[:d] += scale * g
        grad[d + 1:2 * d + 1] += scale * f
        return value, grad * free

    def solve(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Minimise for fixed ``q`` from ``v``; returns the new ``v``."""
        d = self.d
        free = np.ones(2 * d + 2)
        for eps in SMOOTHING:
            v = scipy.optimize.minimize(self._smoothed, v, args=(q, eps, free),
                                        jac=True, method="L-BFGS-B",
                                        options={"maxiter": 500, "gtol": 1e-10}).x
        zero = self._zero_pairs(v, q)
        if zero.any():
            v = v.copy()
            v[:d][zero] = 0.0
            v[d + 1:2 * d + 1][zero] = 0.0
            free[:d][zero] = free[d + 1:2 * d + 1][zero] = 0.0
            v = scipy.optimize.minimize(self._smoothed, v,
                                        args=(q, SMOOTHING[-1], free),
                                        jac=True, method="L-BFGS-B",
                                        options={"maxiter": 500, "gtol": 1e-10}).x
        return v

    def profile(self, v: np.ndarray, p_full: float, weight: np.ndarray
                ) -> tuple[float, np.ndarray]:
        """(OPT) without the group penalty, with q eliminated by the q-step (its
        minimiser for ``v``), and its gradient: by the envelope theorem the loss gradient
        at that q (plus the ridge)."""
        q, _ = q_step(self.excess_loss(v), p_full, weight)
        loss, grad = self._loss_gradient(v, q)
        value = loss + self._kl_terms(q) + 0.5 * self.reg_lambda * self._pair_squares(v).sum()
        d = self.d
        grad[:d] += self.reg_lambda * v[:d]
        grad[d + 1:2 * d + 1] += self.reg_lambda * v[d + 1:2 * d + 1]
        return float(value), grad

    def with_gamma(self, gamma: float) -> LinearPairProblem:
        """This problem with another group penalty weight."""
        other = copy.copy(self)
        other.gamma = gamma
        return other

    def refit(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Minimise the loss and the ridge for fixed ``q`` from ``v``, without the group
        penalty: the unrelaxed (OPT2) once the features are chosen (their cost is then a
        constant). Used on a :meth:`restricted` problem."""
        free = np.ones(2 * self.d + 2)
        return scipy.optimize.minimize(self._smoothed, v, args=(q, 1.0, free, 0.0), jac=True,
                                       method="L-BFGS-B",
                                       options={"maxiter": REFIT_ITERATIONS, "gtol": 1e-10}).x

    def restricted(self, support: Sequence[int] | np.ndarray) -> LinearPairProblem:
        """The problem on the features ``support`` only, with the groups that contain one
        of them (and their costs)."""
        support = np.asarray(support, dtype=np.intp)
        groups = self.groups[:, support].tocsr()
        touched = np.flatnonzero(np.diff(groups.indptr))
        return LinearPairProblem(self.Z[:, support], self.y, self.w, self.loss0,
                                 groups[touched], self.group_costs[touched], gamma=self.gamma,
                                 reg_lambda=self.reg_lambda, n_threads=self.requested_threads)

    def take(self, v: np.ndarray, support: Sequence[int] | np.ndarray) -> np.ndarray:
        """``v``'s coordinates of a :meth:`restricted` problem on ``support``."""
        g, g_bias, f, f_bias = self.split(v)
        return np.concatenate([g[support], [g_bias], f[support], [f_bias]])

    def embed(self, v_support: np.ndarray, support: Sequence[int] | np.ndarray) -> np.ndarray:
        """A :meth:`restricted` problem's ``v`` as this problem's (zeros elsewhere)."""
        k = len(support)
        v = np.zeros(2 * self.d + 2)
        v[np.asarray(support, dtype=np.intp)] = v_support[:k]
        v[self.d] = v_support[k]
        v[self.d + 1 + np.asarray(support, dtype=np.intp)] = v_support[k + 1:2 * k + 1]
        v[2 * self.d + 1] = v_support[2 * k + 1]
        return v

    def _zero_pairs(self, v: np.ndarray, q: np.ndarray) -> np.ndarray:
        """The small pairs (g_a, f1_a) that may be exactly zero: with them at zero, the
        loss gradient's pair norm is within the subdifferential radius gamma * (sum of
        the costs of the groups of a that are then all zero)."""
        d = self.d
        squares = self._pair_squares(v)
        scale = max(1.0, float(np.sqrt(squares.max()))) if d else 1.0
        candidate = np.sqrt(squares) <= ZERO_CANDIDATE * scale
        if not candidate.any():
            return candidate
        trial = v.copy()
        trial[:d][candidate] = 0.0
        trial[d + 1:2 * d + 1][candidate] = 0.0
        _, grad = self._loss_gradient(trial, q)
        pair_gradient = np.hypot(grad[:d], grad[d + 1:2 * d + 1])
        empty = (self.groups @ self._pair_squares(trial)) == 0
        radius = self.gamma * (self.groups_t @ (self.group_costs * empty))
        return candidate & (pair_gradient <= radius)

    def _kl_terms(self, q: np.ndarray) -> float:
        """The terms of (OPT) that depend on q alone: ``sum_i w_i (q_i loss0_i - H(q_i))``
        (the expensive model's loss and the KL term's entropy)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            entropy = -(np.where(q > 0, q * np.log(q), 0.0)
                        + np.where(q < 1, (1 - q) * np.log1p(-q), 0.0))
        return float(self.w @ (q * self.loss0 - entropy))

    def _losses(self, v: np.ndarray, q: np.ndarray) -> float:
        """The losses of (OPT) at ``v`` and q, with the KL term's entropy."""
        return float(self.loss_and_margin_gradients(v, q)[0]) + self._kl_terms(q)

    def objective(self, v: np.ndarray, q: np.ndarray) -> float:
        """The (OPT) value at ``v`` and its q: losses, the KL term's entropy, penalties
        (the relaxed cost)."""
        return self._losses(v, q) + float(self.penalty(v))

    def cost_objective(self, v: np.ndarray, q: np.ndarray) -> float:
        """(OPT) with the paper's cost itself, ``gamma`` times the cost of the features
        (and groups) g or f1 uses, in place of its group-norm relaxation (and the
        ridge)."""
        squares = self._pair_squares(v)
        used = (self.groups @ squares) > 0
        return (self._losses(v, q) + self.gamma * float(self.group_costs @ used)
                + 0.5 * self.reg_lambda * float(squares.sum()))


def _single_threaded_blas() -> AbstractContextManager:
    """BLAS on one thread while L-BFGS works on vectors of 2 d + 2 numbers: its idle
    threads only spin (on a busy machine they made the solver 18x slower). Needs
    threadpoolctl (used when installed, as it is with scikit-learn)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(1, user_api="blas")


def _single_feature_gates(Z: np.ndarray, y: np.ndarray, weight: np.ndarray,
                          f0_right: np.ndarray, p_full: float) -> list[tuple[float, int, int]]:
    """Gates that read one feature: per feature ``a`` and direction, the ``p_full`` share
    of the inputs with the largest (or smallest) ``Z[:, a]`` go to f0 and the best
    threshold on the same feature classifies the others. Returns ``(share of the
    training inputs such a system gets right, a, direction)`` per feature and direction
    (+1: the largest values to f0), best first."""
    w = weight / weight.sum()
    candidates = []
    for a in np.flatnonzero(np.ptp(Z, axis=0) > 0) if Z.shape[0] else ():
        order = np.argsort(Z[:, a], kind="stable")
        for direction in (1, -1):
            rows = order if direction == 1 else order[::-1]
            ww, yy = w[rows], y[rows] > 0.5
            # keep the prefix, send the suffix of weight at most p_full to f0
            sent = np.cumsum(ww[::-1])[::-1]
            kept = int(np.searchsorted(-sent, -p_full * (1 + 1e-12), side="right"))
            ones = np.concatenate([[0.0], np.cumsum(np.where(yy, ww, 0.0)[:kept])])
            zeros = np.concatenate([[0.0], np.cumsum(np.where(yy, 0.0, ww)[:kept])])
            right = max((ones + zeros[-1] - zeros).max(), (zeros + ones[-1] - ones).max())
            right += float(ww[kept:] @ f0_right[rows[kept:]])
            candidates.append((right, int(a), direction))
    candidates.sort(key=lambda c: -c[0])     # stable: ties keep feature order
    return candidates


def _start_gates(p: dict, problem: LinearPairProblem, y: np.ndarray, weight: np.ndarray,
                 f0_right: np.ndarray, n_starts: int) -> list[tuple[np.ndarray, int | None]]:
    """The starts after the first (from zero): ``(q0, feature)`` of the best single-feature
    gates, then of random gates (the p_full share of the inputs furthest along a random
    direction; feature None)."""
    Z, d = problem.Z, problem.d
    starts: list[tuple[np.ndarray, int | None]] = []
    for _, a, direction in _single_feature_gates(Z, y, weight, f0_right,
                                                 p["p_full"])[:n_starts - 1]:
        starts.append((_routed_along(direction * Z[:, a], weight, p["p_full"]), a))
    for start in range(len(starts) + 1, n_starts):
        rng = np.random.default_rng([p["seed"], start])
        direction = rng.standard_normal(d) * (np.ptp(Z, axis=0) > 0)
        starts.append((_routed_along(problem._scores(direction, 0.0), weight, p["p_full"]),
                       None))
    return starts


def _routed_along(score: np.ndarray, weight: np.ndarray, p_full: float) -> np.ndarray:
    """1 for the inputs of highest ``score`` whose weight is at most ``p_full`` of the
    total, 0 for the others."""
    order = np.argsort(-score, kind="stable")
    share = np.cumsum(weight[order]) / weight.sum()
    q0 = np.zeros(score.shape[0])
    q0[order[share <= p_full * (1 + 1e-12)]] = 1.0
    return q0


def _alternate(problem: LinearPairProblem, v: np.ndarray, p: dict, weight: np.ndarray,
               num_boost_round: int, step: Step, objective: PairObjective
               ) -> tuple[list[np.ndarray], list[float]]:
    """Algorithm 1 from ``v``: q-step, then ``step(q, v)``, until ``objective(v, q)``
    changes by at most ``tol`` (relative), the features used have not changed for
    ``SETTLED`` alternations, or for ``num_boost_round`` alternations; the states and
    objective values."""
    states, values, previous, same = [], [], None, 0
    used = problem._pair_squares(v) > 0
    for _ in range(num_boost_round):
        q, _ = q_step(problem.excess_loss(v), p["p_full"], weight)
        v = step(q, v)
        value = objective(v, q_step(problem.excess_loss(v), p["p_full"], weight)[0])
        states.append(v.copy())
        values.append(value)
        now = problem._pair_squares(v) > 0
        same = same + 1 if np.array_equal(now, used) else 0
        used = now
        if previous is not None and abs(previous - value) <= p["tol"] * max(1.0, abs(value)):
            break
        if same >= SETTLED:
            break
        previous = value
    return states, values


def _refit(problem: LinearPairProblem, v: np.ndarray, p: dict, weight: np.ndarray,
           support: Sequence[int] | np.ndarray | None = None, q0: np.ndarray | None = None
           ) -> tuple[list[np.ndarray], float]:
    """(OPT) without the group penalty on the features ``support`` (by default those
    ``v`` uses), from ``v`` (fitted to ``q0`` first if given): the unrelaxed (OPT) once
    the features are chosen, their cost a constant; minimised over g and f1 jointly, q
    eliminated by the q-step (L-BFGS on :meth:`LinearPairProblem.profile`: the
    alternation's fixed point without its slow zigzag). The state (as ``problem``'s) and
    its (OPT) value with the paper's cost."""
    if support is None:
        support = np.flatnonzero(problem._pair_squares(v) > 0)
    sub = problem.restricted(support)
    v = problem.take(v, support)
    if q0 is not None:
        v = sub.refit(q0, v)
    v = scipy.optimize.minimize(sub.profile, v, args=(p["p_full"], weight), jac=True,
                                method="L-BFGS-B",
                                options={"maxiter": REFIT_ITERATIONS, "gtol": 1e-9}).x
    value = sub.cost_objective(v, q_step(sub.excess_loss(v), p["p_full"], weight)[0])
    return [problem.embed(v, support)], value


def _restarts(p: dict, problem: LinearPairProblem, y: np.ndarray, weight: np.ndarray,
              f0_right: np.ndarray, objective: Objective, sample_weight: np.ndarray | None,
              num_boost_round: int, verbose: bool | int
              ) -> tuple[list[np.ndarray], float] | None:
    """Algorithm 1 from each start, then the refit on the features it chose; a start from
    a single-feature gate first fits the gate and f1 on that feature alone (refitted: a
    candidate too). Returns the states of the candidate whose final (OPT) value with the
    paper's cost is lowest, and that value; None if there was no alternation."""
    d = problem.d
    n_starts = p["n_restarts"] if 0 < p["p_full"] < 1 else 1
    gates = _start_gates(p, problem, y, weight, f0_right, n_starts) if n_starts > 1 else []
    best = None

    def keep(states: list[np.ndarray], value: float, start: int, what: str) -> None:
        nonlocal best
        if verbose:
            used = np.flatnonzero(problem._pair_squares(states[-1]) > 0).size
            print(f"adapt_lin: start {start} ({what}): objective {value:.6g} after "
                  f"{len(states)} alternations, {used} features", flush=True)
        if best is None or value < best[1]:
            best = (states, value)

    for start in range(n_starts):
        v = np.zeros(2 * d + 2)
        v[2 * d + 1] = objective.base_score(y, sample_weight)[0]
        if start == 0:
            # the continuation: gamma from where the zero model stops being optimal down
            # to the given one, each level's features refitted
            path, refitted = [], set()
            for level in _path_levels(problem, v, p, weight):
                at_level = problem.with_gamma(level)
                states, _ = _alternate(at_level, v, p, weight, num_boost_round,
                                       at_level.solve, at_level.objective)
                if not states:
                    break
                path += states
                v = states[-1]
                support = tuple(np.flatnonzero(problem._pair_squares(v) > 0))
                if support not in refitted:
                    refitted.add(support)
                    refit, value = _refit(problem, v, p, weight)
                    keep(path + refit, value, start, f"gamma {level:.3g}")
            continue
        first: list[np.ndarray] = []
        q0, feature = gates[start - 1]
        if feature is None:
            v = problem.solve(q0, v)
        else:
            first, value = _refit(problem, v, p, weight, [feature], q0)
            keep(first, value, start, f"feature {feature} alone")
            v = first[-1]
        states, _ = _alternate(problem, v, p, weight, num_boost_round, problem.solve,
                               problem.objective)
        if states:
            refit, value = _refit(problem, states[-1], p, weight)
            keep(first + states + refit, value, start, "all features")
    return best


def _path_levels(problem: LinearPairProblem, v: np.ndarray, p: dict, weight: np.ndarray
                 ) -> list[float]:
    """The trade-offs of the first start's continuation: ``PATH_LEVELS`` values,
    geometric, from the smallest gamma at which ``v`` (the zero model) solves (OPT2)
    for its q (excluded) down to the problem's gamma."""
    gamma = problem.gamma
    q, _ = q_step(problem.excess_loss(v), p["p_full"], weight)
    _, grad = problem._loss_gradient(v, q)
    d = problem.d
    costs = problem.groups.T @ problem.group_costs
    priced = costs > 0
    if gamma <= 0 or not priced.any():
        return [gamma]
    pair = np.hypot(grad[:d], grad[d + 1:2 * d + 1])
    gamma_max = float((pair[priced] / costs[priced]).max())
    if gamma_max <= gamma:
        return [gamma]
    return [gamma_max * (gamma / gamma_max) ** (j / PATH_LEVELS)
            for j in range(1, PATH_LEVELS + 1)]


class AdaptLinTrainer(GatedTrainer):
    """Algorithm 1 from ``n_restarts`` starts (:func:`_restarts`: zeros along a gamma
    continuation; then the best single-feature gates, random gates if there are too few
    of them): alternate the q-step and (OPT2) until the objective changes by less than
    ``tol``, the features used settle, or for ``num_boost_round`` alternations; refit
    each start's features and keep the start of lowest (OPT) with the paper's cost. Its
    states are then the iterations the training loop evaluates (metrics, callbacks, early
    stopping)."""

    def __init__(self, p: dict, dtrain: Dataset, num_boost_round: int, setup: TrainingSetup):
        super().__init__(p, dtrain, num_boost_round, setup)
        self.mean, std = standardize(dtrain.data, self.weight)
        # the solver works on standardised features (constant columns 0); gated() maps
        # its weights back to the raw features
        self.scale = np.where(std > 0, 1.0 / np.where(std > 0, std, 1.0), 0.0)
        Z = standardized(dtrain.data, self.mean, std)
        groups, group_costs = cost_groups(dtrain.cost_model, None, Z.shape[1])
        self.problem = LinearPairProblem(Z, dtrain.required_label(), self.weight, self.loss0,
                                         groups, group_costs, gamma=p["cost_tradeoff"],
                                         reg_lambda=p["reg_lambda"], n_threads=setup.n_threads)
        with _single_threaded_blas():
            best = _restarts(p, self.problem, dtrain.required_label(), self.weight,
                             self.loss0 < np.log(2.0), setup.objective, dtrain.weight,
                             num_boost_round, setup.verbose)
        # the zero model (no alternation), then the kept start's alternations
        self.states = [np.zeros(2 * Z.shape[1] + 2)] + (best[0] if best else [])
        self.n_iterations = len(self.states) - 1
        self.model = self.gated(self.states[-1])
        self.chosen = self.n_iterations
        self.current: GatedModel | None = None     # set by iterate

    def gated(self, v: np.ndarray) -> GatedModel:
        dtrain, problem = self.dtrain, self.problem
        g, g_bias, f, f_bias = problem.split(v)
        parts = [LinearClassifier(w * self.scale, b - (w * self.scale) @ self.mean, self.mean,
                                  feature_names=dtrain.feature_names,
                                  cost_model=dtrain.cost_model)
                 for w, b in ((g, g_bias), (f, f_bias))]
        # calibrated on the margins routing computes (raw features), not the standardised ones
        return GatedModel(gate=parts[0], predictor=parts[1], expensive=self.f0,
                          feature_names=dtrain.feature_names, cost_model=dtrain.cost_model,
                          params=self.p, gate_threshold=_gate_threshold(
                              self.p, parts[0].decision_function(dtrain.data), self.weight))

    def set_parts(self, current: GatedModel) -> None:
        self.model.gate, self.model.predictor = current.gate, current.predictor
        self.model.gate_threshold = current.gate_threshold

    def iterate(self, iteration: int) -> bool:
        self.current = self.gated(self.states[iteration + 1])
        self.set_parts(self.current)
        self.chosen = iteration + 1
        return False

    def eval_predictions(self) -> list:
        current = self.current
        assert current is not None      # evaluated after an iteration
        gate, predictor = current.gate, current.predictor
        assert isinstance(gate, LinearClassifier) and isinstance(predictor, LinearClassifier)
        return [(name, data, _composite(gate.decision_function(data.data),
                                        predictor.decision_function(data.data),
                                        p0_eval, self.model.gate_threshold))
                for (data, name), p0_eval in zip(self.setup.evals, self.eval_p0)]

    def finish(self, n_keep: int | None) -> GatedModel:
        chosen = self.chosen if n_keep is None else n_keep
        self.set_parts(self.gated(self.states[chosen]))
        self.q, _ = q_step(self.problem.excess_loss(self.states[chosen]), self.p["p_full"],
                           self.weight)
        return self.model


ADAPT_PARAMS = (
    Param("objective", "binary:logistic", None, "binary:logistic (labels 0/1 or -1/+1)"),
    Param("p_full", 0.2, number(low=0, high=1),
          "at most this share of the training inputs goes to the expensive model"),
    Param("gate_threshold", None, number(allow_none=True),
          "an input goes to the expensive model when the gate's margin is above it; None: "
          "calibrated so that the p_full share of the training inputs with the highest "
          "margins go (0: the paper's sigmoid(g) > 1/2)"),
)
ADAPT_GBRT_PARAMS = ADAPT_PARAMS + greedy_miser_trees(TREE_PARAMS) + CATEGORICAL_PARAMS + (
    Param("cost_tradeoff", 1.0, number(low=0),
          "gamma: weight of the cost penalty of a split"),
    Param("q_update_period", 10, number(integer=True, low=1),
          "rounds between q-steps (T of Algorithm 2)"),
    Param("acquisition", "model", choice("model", "input"),
          '"model": the paper\'s u_alpha, a feature is free once any tree of g or f1 uses '
          'it; "input": CEGB\'s per-input state'),
)
ADAPT_LIN_PARAMS = ADAPT_PARAMS + (
    Param("cost_tradeoff", 0.01, number(low=0),
          "gamma: weight of the group-lasso cost penalty"),
    Param("reg_lambda", 1e-4, number(low=0), "ridge on the (standardised) features"),
    Param("tol", 1e-5, number(low=0, low_open=True),
          "relative objective change that ends the alternations"),
    Param("n_restarts", 4, number(integer=True, low=1),
          "starts of the alternating minimisation (the first from zero, the others from "
          "the best gates reading one feature, then random gates); the start of lowest "
          "objective (with the paper's cost) is kept"),
)
# the gated model's own settings, not passed on to its parts
ADAPT_PARAM_NAMES = ("p_full", "gate_threshold", "q_update_period", "acquisition",
                     "n_restarts")


class Adapt(Algorithm):
    def __init__(self, name: str, params: tuple, trainer: type[GatedTrainer], doc: str
                 ) -> None:
        # cbudget 0.1's files list adapt_gbrt's row and column sampling, always 1.0
        retired = ({"subsample": 1.0, "colsample_bytree": 1.0} if name == "adapt_gbrt"
                   else None)
        super().__init__(name, params, trainer, doc, model_class=GatedModel, section="adapt",
                         takes_expensive_model=True,
                         cannot_continue="the gate and the predictor are trained together "
                                         "from the start", retired_params=retired)

    def complete(self, p: dict) -> None:
        if p["objective"] != "binary:logistic" or p["num_class"] not in (None, 1):
            raise ValueError(f"{p['algorithm']} is a binary classifier (binary:logistic, "
                             f"labels 0/1 or -1/+1), not {p['objective']!r}"
                             + (f" with num_class={p['num_class']}" if p["num_class"] else "")
                             + ranking_hint(p["objective"], "on relevance made binary "
                                            "(binary:logistic)"))
        if "max_depth" in p:
            complete_tree_params(p, 4)

    def prepare_data(self, dtrain: Dataset, evals: list) -> tuple[Dataset, list]:
        return zero_one_labels(dtrain), [(zero_one_labels(data), name) for data, name in evals]

    def memory_needs(self, p: dict, dtrain: Dataset, setup: TrainingSetup) -> list[MemoryNeed]:
        if "max_depth" in p:        # adapt_gbrt: one grower for the gate and predictor
            return grower_memory_needs(p, dtrain, 1)
        n_rows, n_features = dtrain.data.shape
        return [MemoryNeed("the standardised inputs and their scratch copies: 3 x n_rows x "
                           "n_features x 8 bytes", 3.0 * n_rows * n_features * 8,
                           "Reduce the features or the rows")]


ALGORITHMS = (
    Adapt("adapt_gbrt", ADAPT_GBRT_PARAMS, AdaptGBRTTrainer,
          "gate and low-cost boosted predictor before an expensive model (Nan and "
          "Saligrama, NIPS 2017)"),
    Adapt("adapt_lin", ADAPT_LIN_PARAMS, AdaptLinTrainer,
          "linear gate and predictor before an expensive model (Nan and Saligrama, 2017)"),
)
