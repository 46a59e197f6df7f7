"""Training of the gated models (Nan and Saligrama, NIPS 2017): alternating
minimisation of (OPT) over the soft routing q (closed form, :func:`cbudget.adapt.q_step`)
and the gate g with the low-cost predictor f1.

Both algorithms minimise, for fixed q (per-input probability of going to f0),

    sum_i w_i [(1 - q_i) (l(y_i, f1(x_i)) + log(1 + e^g(x_i))) + q_i log(1 + e^-g(x_i))]
    + cost penalty of the features g and f1 use,

(the first two terms of (OPT2) with the weights normalised to sum 1), where ``l`` is the
logistic loss. The q-step takes ``A_i = l(y_i, f1) + log(1 + e^g)`` and
``B_i = -log p0(y_i | x_i) + log(1 + e^-g)`` (p0: the expensive model's probability).
"""
import contextlib

import numpy as np
import scipy.optimize
from scipy.special import expit

from ._core._acquisition import AcquisitionState
from ._core._grower import TreeGrower
from ._core._linear import dense_gradient, dense_scores
from ._core._predict import predict_binned_add
from ._cstc_solver import threads_for
from .adapt import (PROBABILITY_EPS, ExternalModel, GatedModel, LinearClassifier,
                    calibrated_threshold, positive_log_loss, q_step)
from .booster import Booster
from .cstc import ClassifierTree
from .dataset import check_model_matches
from .forest import Forest
from .params import ADAPT_ONLY

__all__ = ["train_gated"]

# a linear weight pair (g_a, f1_a) this small is a candidate for an exact zero
ZERO_CANDIDATE = 1e-4
# the smoothing of the group norms, sqrt(norm^2 + eps^2), in decreasing steps
SMOOTHING = (1e-2, 1e-4, 1e-6, 1e-8)


def _softplus(z):
    return np.logaddexp(0.0, z)


def _logit(p):
    return np.log(p) - np.log1p(-p)


def check_expensive_model(expensive_model, dtrain):
    """The expensive model f0, checked against the training data: a binary cbudget model
    with the same features and costs, or an :class:`ExternalModel`."""
    if expensive_model is None:
        raise ValueError("adapt_gbrt / adapt_lin approximate an expensive model: pass "
                         "train(..., expensive_model=f0), a cbudget model or "
                         "cbudget.ExternalModel(estimator, cost=... or features=...)")
    if isinstance(expensive_model, ExternalModel):
        expensive_model.feature_indices(dtrain.feature_names)   # names checked now
        return expensive_model
    if isinstance(expensive_model, (Booster, Forest, ClassifierTree, GatedModel)):
        binary = (expensive_model.objective == "binary:logistic"
                  and expensive_model.num_class in (1, 2))
        if not binary:
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


def expensive_probability(f0, X):
    """The expensive model's P(y = 1) of the rows of ``X``, clipped away from 0 and 1."""
    p = f0.positive_proba(X) if isinstance(f0, ExternalModel) else f0.predict(X)
    p = np.asarray(p, dtype=np.float64)
    if not np.all(np.isfinite(p)):
        raise ValueError("the expensive model predicted NaN or inf probabilities")
    return np.clip(p, PROBABILITY_EPS, 1 - PROBABILITY_EPS)


def _expensive_loss(p0, y):
    """-log p0(y | x) per input."""
    return -np.log(np.where(y > 0.5, p0, 1.0 - p0))


def _composite(raw_gate, raw_predictor, p0, threshold):
    """The gated model's P(y = 1) from the parts' margins and f0's probabilities."""
    return np.where(raw_gate > threshold, p0, expit(raw_predictor))


def train_gated(p, dtrain, num_boost_round, objective, metrics, evals, n_threads, *,
                expensive_model, container, log_metrics, verbose):
    """ADAPT-GBRT or ADAPT-LIN on ``dtrain`` (0/1 labels) for ``expensive_model``.

    Returns the :class:`GatedModel`, the evaluation log and the last q-step's q on the
    training data."""
    f0 = check_expensive_model(expensive_model, dtrain)
    y = dtrain.label
    weight = np.ones(y.shape[0]) if dtrain.weight is None else dtrain.weight
    p0 = expensive_probability(f0, dtrain.data)
    eval_p0 = [expensive_probability(f0, data.data) for data, _ in evals]
    if verbose:
        accuracy = np.average((p0 > 0.5) == (y > 0.5), weights=weight)
        print(f"{p['algorithm']}: the expensive model's training accuracy is {accuracy:.4f}; "
              f"at most p_full={p['p_full']:g} of the inputs go to it", flush=True)
    train = _train_adapt_gbrt if p["algorithm"] == "adapt_gbrt" else _train_adapt_lin
    return train(p, dtrain, num_boost_round, objective, metrics, evals, n_threads, f0=f0,
                 weight=weight, loss0=_expensive_loss(p0, y), eval_p0=eval_p0,
                 container=container, log_metrics=log_metrics, verbose=verbose)


def _leaf_of_rows(binned, missing_bin, tree, n_threads):
    """The leaf of every row of ``binned`` in ``tree`` (the tree with each leaf's value
    set to its node id, added to zeros)."""
    ids = tree.copy()
    ids["value"] = np.arange(tree.shape[0])
    out = np.zeros((binned.shape[0], 1))
    predict_binned_add(binned, ids, missing_bin, out, 0, n_threads)
    return out[:, 0].astype(np.intp)


def _newton_leaves(tree, leaf, gradient, hessian, learning_rate):
    """Leaf values ``-learning_rate * sum(gradient) / sum(hessian)`` over each leaf's
    rows (``leaf``: the leaf of each row)."""
    n_nodes = tree.shape[0]
    sums = np.bincount(leaf, weights=gradient, minlength=n_nodes)
    curvature = np.bincount(leaf, weights=hessian, minlength=n_nodes)
    is_leaf = tree["left"] == -1
    tree["value"][is_leaf] = -learning_rate * sums[is_leaf] / np.maximum(curvature[is_leaf],
                                                                         1e-300)


def _gate_threshold(p, margin, weight):
    """``gate_threshold``, or the calibrated one (the p_full share of the training inputs
    with the highest gate margins go to the expensive model)."""
    if p["gate_threshold"] is not None:
        return p["gate_threshold"]
    return calibrated_threshold(margin, weight, p["p_full"])


def _part_params(p):
    """Training parameters of the gate's and the predictor's boosters: Greedy Miser's
    trees (the adapt settings live in the gated model's own section)."""
    part = {k: v for k, v in p.items() if k not in ADAPT_ONLY}
    part["algorithm"] = "greedy_miser"
    return part


def _train_adapt_gbrt(p, dtrain, num_boost_round, objective, metrics, evals, n_threads, *,
                      f0, weight, loss0, eval_p0, container, log_metrics, verbose):
    """Algorithm 2: every ``q_update_period`` rounds a q-step; every round one CART tree
    (first order, Greedy Miser's impurity) added to f1 on the residuals of eq. (1) and one
    to g on those of eq. (2). Both trees charge a split on a feature nobody uses yet
    ``cost_tradeoff`` times its cost (the shared u_alpha); with ``acquisition="input"``
    they charge it per input that has not acquired it in g or f1 (CEGB's state)."""
    from .training import _binned_like, _penalty_costs

    y = dtrain.label
    n_samples = y.shape[0]
    costs = dtrain.cost_model
    part_params = _part_params(p)
    common = dict(objective="binary:logistic", num_class=1, feature_names=dtrain.feature_names,
                  cost_model=costs, params=part_params)
    predictor = Booster(base_score=objective.base_score(y, dtrain.weight), **common)
    gate = Booster(base_score=np.zeros(1), **common)
    model = GatedModel(gate=gate, predictor=predictor, expensive=f0,
                       feature_names=dtrain.feature_names, cost_model=costs, params=p)

    edges, edges_indptr = dtrain.flat_bin_edges()
    grower = TreeGrower(
        dtrain.binned, edges, edges_indptr, dtrain.n_value_bins, dtrain.missing_bin,
        p["learning_rate"], p["reg_lambda"], p["min_child_weight"], p["gamma"],
        p["min_data_in_leaf"], p["num_leaves"] or -1,
        -1 if p["max_depth"] is None else p["max_depth"], p["grow_policy"] == "lossguide",
        n_threads)
    state = AcquisitionState(n_samples, costs.feature_group, costs.n_groups)
    grower.set_cost_penalty(state, p["cost_tradeoff"], *_penalty_costs(
        "cegb" if p["acquisition"] == "input" else "greedy_miser", costs))
    splittable = (dtrain.n_value_bins >= 2).astype(np.uint8)
    no_split = np.zeros_like(splittable)
    all_rows = np.arange(n_samples, dtype=np.int32)
    rows = np.empty(n_samples, dtype=np.int32)
    # first order (CART on residuals): the hessian is the weight
    unit = np.ascontiguousarray(weight, dtype=np.float64)
    grad = np.empty((n_samples, 1), order="F")
    hess = np.empty((n_samples, 1), order="F")
    raw_predictor = np.tile(predictor.base_score, (n_samples, 1))
    raw_gate = np.zeros((n_samples, 1))
    eval_state = [(name, data, _binned_like(data, dtrain),
                   np.tile(predictor.base_score, (data.num_data(), 1)),
                   np.zeros((data.num_data(), 1)), p0_eval)
                  for (data, name), p0_eval in zip(evals, eval_p0)]

    def grow(gradient, mask):
        rows[:] = all_rows      # the grower reorders its rows
        tree = grower.grow(np.ascontiguousarray(gradient), unit, rows, mask)
        return tree

    model = container.before_training(model)
    evals_log = {}
    thresholds = []
    q = np.zeros(n_samples)
    for epoch in range(num_boost_round):
        if container.before_iteration(model, epoch, evals_log):
            break
        if epoch % p["q_update_period"] == 0:
            excess = (positive_log_loss(raw_predictor[:, 0], y) + _softplus(raw_gate[:, 0])
                      - loss0 - _softplus(-raw_gate[:, 0]))
            q, beta = q_step(excess, p["p_full"], weight)
            if epoch == 0:
                # g starts at the constant that best fits the first q (log-odds of its mean)
                share = np.clip(np.average(q, weights=weight), 1e-6, 1 - 1e-6)
                gate.base_score = np.array([_logit(share)])
                raw_gate[:] = gate.base_score
                for state_eval in eval_state:
                    state_eval[4][:] = gate.base_score
        # f1: residuals (1 - q_i)(y_i - p_i) of eq. (1) (the logistic gradient kernel,
        # so that p_full = 0 grows Greedy Miser's trees bit for bit)
        objective.gradients(raw_predictor, y, dtrain.weight, grad, hess, n_threads)
        tree = grow(grad[:, 0] * (1.0 - q), splittable)
        grower.add_leaf_values(rows, raw_predictor, 0)
        predictor._append_tree(tree, 0)
        predictor._end_round()
        for _, _, binned, raw_f, _, _ in eval_state:
            predict_binned_add(binned, tree, dtrain.missing_bin, raw_f, 0, n_threads)
        # g: CART on the residuals q_i - sigmoid(g_i) of eq. (2) (a constant residual
        # needs no split), with Newton leaf values (Friedman's TreeBoost for the logistic
        # loss): first-order steps barely move a gate whose sigmoid is near 0 or 1
        gate_probability = expit(raw_gate[:, 0])
        residual = gate_probability - q
        gate_gradient = residual * unit
        tree = grow(gate_gradient, no_split if np.ptp(residual) == 0 else splittable)
        leaf = _leaf_of_rows(dtrain.binned, dtrain.missing_bin, tree, n_threads)
        _newton_leaves(tree, leaf, gate_gradient,
                       np.maximum(gate_probability * (1 - gate_probability), 1e-16) * unit,
                       p["learning_rate"])
        raw_gate[:, 0] += tree["value"][leaf]
        gate._append_tree(tree, 0)
        gate._end_round()
        model.gate_threshold = _gate_threshold(p, raw_gate[:, 0], weight)
        thresholds.append(model.gate_threshold)
        for name, data, binned, raw_f, raw_g, p0_eval in eval_state:
            predict_binned_add(binned, tree, dtrain.missing_bin, raw_g, 0, n_threads)
            log_metrics(evals_log, name, metrics, data,
                        _composite(raw_g[:, 0], raw_f[:, 0], p0_eval, model.gate_threshold))
        if container.after_iteration(model, epoch, evals_log):
            break
    if model.best_iteration is not None:
        best_iteration, best_score = model.best_iteration, model.best_score
        model.gate, model.predictor = gate[:best_iteration + 1], predictor[:best_iteration + 1]
        model.best_iteration, model.best_score = best_iteration, best_score
        model.gate_threshold = thresholds[best_iteration]
    return model, evals_log, q


class LinearPairProblem:
    """(OPT2) for linear g and f1 on centred features ``Z`` (missing values at 0, the
    mean): ``v = [g (d), g's bias, f1 (d), f1's bias]``, minimising

        sum_i w_i [(1 - q_i)(l(y_i, f1) + softplus(g_i)) + q_i softplus(-g_i)]
        + gamma sum_k c_k ||(g, f1) restricted to group k|| + reg_lambda / 2 (|g|^2 + |f1|^2)

    (weights normalised to sum 1; a group is a feature with its cost, or a cost group
    with its cost). The group norms are smoothed as ``sqrt(norm^2 + eps^2)`` with eps
    decreasing to 1e-8 for L-BFGS (scipy), then the pairs that the optimality
    conditions of the exact objective allow at zero are set to exactly zero."""

    def __init__(self, Z, y, weight, loss0, groups, group_costs, *, gamma, reg_lambda,
                 n_threads=1):
        self.Z = np.ascontiguousarray(Z, dtype=np.float64)
        self.columns = np.arange(Z.shape[1], dtype=np.int64)
        # products by cbudget's kernels (no BLAS: its idle threads spin and compete with
        # OpenMP's; fixed summation order)
        self.n_threads = threads_for(Z.shape[0] * Z.shape[1], n_threads)
        self.y = y
        self.w = weight / weight.sum()
        self.loss0 = loss0
        self.groups = groups                 # csr (n_groups, d) 0/1
        self.group_costs = group_costs
        self.gamma = gamma
        self.reg_lambda = reg_lambda
        self.d = Z.shape[1]

    def split(self, v):
        d = self.d
        return v[:d], v[d], v[d + 1:2 * d + 1], v[2 * d + 1]

    def _scores(self, beta, bias):
        used = np.flatnonzero(beta)
        out = np.empty(self.Z.shape[0])
        dense_scores(self.Z, self.columns[used], np.ascontiguousarray(beta[used]), float(bias),
                     out, self.n_threads)
        return out

    def _transposed(self, residual):
        out = np.empty(self.d)
        dense_gradient(self.Z, self.columns, np.ascontiguousarray(residual), out,
                       self.n_threads)
        return out

    def margins(self, v):
        g, g_bias, f, f_bias = self.split(v)
        return self._scores(g, g_bias), self._scores(f, f_bias)

    def excess_loss(self, v):
        """A_i - B_i of the q-step."""
        sg, sf = self.margins(v)
        return positive_log_loss(sf, self.y) + _softplus(sg) - self.loss0 - _softplus(-sg)

    def _pair_squares(self, v):
        g, _, f, _ = self.split(v)
        return g * g + f * f

    def penalty(self, v):
        """gamma sum_k c_k ||group k|| + the ridge (exact, not smoothed)."""
        squares = self._pair_squares(v)
        return (self.gamma * self.group_costs @ np.sqrt(self.groups @ squares)
                + 0.5 * self.reg_lambda * squares.sum())

    def loss_and_margin_gradients(self, v, q):
        sg, sf = self.margins(v)
        loss = self.w @ ((1 - q) * (positive_log_loss(sf, self.y) + _softplus(sg))
                         + q * _softplus(-sg))
        return loss, self.w * (expit(sg) - q), self.w * (1 - q) * (expit(sf) - self.y)

    def _loss_gradient(self, v, q):
        """The loss (without penalties) and its gradient with respect to ``v``."""
        loss, dg, df = self.loss_and_margin_gradients(v, q)
        return loss, np.concatenate([self._transposed(dg), [dg.sum()], self._transposed(df),
                                     [df.sum()]])

    def _smoothed(self, v, q, eps, free):
        loss, grad = self._loss_gradient(v, q)
        g, _, f, _ = self.split(v)
        squares = g * g + f * f
        norms = np.sqrt(self.groups @ squares + eps * eps)
        value = loss + self.gamma * self.group_costs @ norms + 0.5 * self.reg_lambda * squares.sum()
        scale = self.gamma * (self.groups.T @ (self.group_costs / norms)) + self.reg_lambda
        d = self.d
        grad[:d] += scale * g
        grad[d + 1:2 * d + 1] += scale * f
        return value, grad * free

    def solve(self, q, v):
        """Minimise for fixed ``q`` from ``v``; returns the new ``v``."""
        d = self.d
        free = np.ones(2 * d + 2)
        for eps in SMOOTHING:
            v = scipy.optimize.minimize(self._smoothed, v, args=(q, eps, free), jac=True,
                                        method="L-BFGS-B",
                                        options={"maxiter": 500, "gtol": 1e-10}).x
        zero = self._zero_pairs(v, q)
        if zero.any():
            v = v.copy()
            v[:d][zero] = 0.0
            v[d + 1:2 * d + 1][zero] = 0.0
            free[:d][zero] = free[d + 1:2 * d + 1][zero] = 0.0
            v = scipy.optimize.minimize(self._smoothed, v, args=(q, SMOOTHING[-1], free),
                                        jac=True, method="L-BFGS-B",
                                        options={"maxiter": 500, "gtol": 1e-10}).x
        return v

    def _zero_pairs(self, v, q):
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
        radius = self.gamma * (self.groups.T @ (self.group_costs * empty))
        return candidate & (pair_gradient <= radius)

    def objective(self, v, q):
        """The (OPT) value at ``v`` and its q: losses, the KL term's entropy, penalties."""
        loss = self.loss_and_margin_gradients(v, q)[0]
        with np.errstate(divide="ignore", invalid="ignore"):
            entropy = -(np.where(q > 0, q * np.log(q), 0.0)
                        + np.where(q < 1, (1 - q) * np.log1p(-q), 0.0))
        return float(loss + self.w @ (q * self.loss0 - entropy) + self.penalty(v))


def _single_threaded_blas():
    """BLAS on one thread while L-BFGS works on vectors of 2 d + 2 numbers: its idle
    threads only spin (on a busy machine they made the solver 18x slower). Needs
    threadpoolctl (used when installed, as it is with scikit-learn)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(1, user_api="blas")


def _restarts(p, problem, y, std, weight, objective, sample_weight, num_boost_round,
              verbose):
    """Algorithm 1 from each start; the (states, objective values) of the start of lowest
    final objective, None if there was no alternation."""
    d = problem.d
    n_starts = p["n_restarts"] if 0 < p["p_full"] < 1 else 1
    best = None
    for start in range(n_starts):
        v = np.zeros(2 * d + 2)
        v[2 * d + 1] = objective.base_score(y, sample_weight)[0]
        if start > 0:
            rng = np.random.default_rng([p["seed"], start])
            direction = rng.standard_normal(d) * np.where(std > 0, 1.0 / np.where(
                std > 0, std, 1.0), 0.0)
            along = problem._scores(direction, 0.0)
            q0 = (along > np.quantile(along, 1.0 - p["p_full"])).astype(np.float64)
            v = problem.solve(q0, v)
        states, values, previous = [], [], None
        for _ in range(num_boost_round):
            q, _ = q_step(problem.excess_loss(v), p["p_full"], weight)
            v = problem.solve(q, v)
            value = problem.objective(v, q_step(problem.excess_loss(v), p["p_full"], weight)[0])
            states.append(v.copy())
            values.append(value)
            if previous is not None and abs(previous - value) <= p["tol"] * max(1.0, abs(value)):
                break
            previous = value
        if verbose:
            used = np.flatnonzero(problem._pair_squares(v) > 0).size
            print(f"adapt_lin: start {start}: objective {values[-1]:.6g} after "
                  f"{len(values)} alternations, {used} features", flush=True)
        if states and (best is None or values[-1] < best[1][-1]):
            best = (states, values)
    return best


def _train_adapt_lin(p, dtrain, num_boost_round, objective, metrics, evals, n_threads, *,
                     f0, weight, loss0, eval_p0, container, log_metrics, verbose):
    """Algorithm 1 from ``n_restarts`` starts (zeros; then random gates sending the
    ``p_full`` share of the inputs furthest along a random direction to f0): alternate the
    q-step and (OPT2) until the objective changes by less than ``tol`` or for
    ``num_boost_round`` alternations; keep the start of lowest objective. Its alternations
    are then evaluated in turn (metrics, callbacks, early stopping)."""
    from .training import _cost_groups, _standardize, _standardized

    y = dtrain.label
    mean, std = _standardize(dtrain.data)
    Z = _standardized(dtrain.data, mean, np.where(std > 0, 1.0, 0.0))   # centred only
    groups, group_costs = _cost_groups(dtrain.cost_model, None, Z.shape[1])
    problem = LinearPairProblem(Z, y, weight, loss0, groups, group_costs,
                                gamma=p["cost_tradeoff"], reg_lambda=p["reg_lambda"],
                                n_threads=n_threads)
    d = Z.shape[1]
    with _single_threaded_blas():
        best = _restarts(p, problem, y, std, weight, objective, dtrain.weight, num_boost_round,
                         verbose)

    def gated(v):
        g, g_bias, f, f_bias = problem.split(v)
        parts = [LinearClassifier(w, b - w @ mean, mean, feature_names=dtrain.feature_names,
                                  cost_model=dtrain.cost_model)
                 for w, b in ((g, g_bias), (f, f_bias))]
        # calibrated on the margins routing computes (raw features), not the centred ones
        return GatedModel(gate=parts[0], predictor=parts[1], expensive=f0,
                          feature_names=dtrain.feature_names, cost_model=dtrain.cost_model,
                          params=p, gate_threshold=_gate_threshold(
                              p, parts[0].decision_function(dtrain.data), weight))

    states = best[0] if best else [np.zeros(2 * d + 2)]
    model = gated(states[-1])
    model = container.before_training(model)
    evals_log = {}
    chosen = len(states) - 1
    for alternation, v in enumerate(states if best else []):
        if container.before_iteration(model, alternation, evals_log):
            break
        current = gated(v)
        model.gate, model.predictor = current.gate, current.predictor
        model.gate_threshold = current.gate_threshold
        chosen = alternation
        for (data, name), p0_eval in zip(evals, eval_p0):
            log_metrics(evals_log, name, metrics, data,
                        _composite(current.gate.decision_function(data.data),
                                   current.predictor.decision_function(data.data), p0_eval,
                                   model.gate_threshold))
        if container.after_iteration(model, alternation, evals_log):
            break
    if model.best_iteration is not None:
        chosen = model.best_iteration
    final = gated(states[chosen])
    model.gate, model.predictor = final.gate, final.predictor
    model.gate_threshold = final.gate_threshold
    q, _ = q_step(problem.excess_loss(states[chosen]), p["p_full"], weight)
    return model, evals_log, q
