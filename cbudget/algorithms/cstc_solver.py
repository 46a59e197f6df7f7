"""The optimisation behind CSTC, CSCC and Cronus (Xu, Kusner, Weinberger, Chen, Chapelle,
"Classifier cascades and trees for minimizing feature evaluation cost", JMLR 2014).

:class:`TreeProblem` holds the training data in the coordinates the classifiers see
(standardised features, or standardised CART-tree outputs with the boosting trick), a
skeleton of nodes (a full binary tree of ``max_depth`` levels for CSTC, a chain of
``max_depth`` stages for a cascade) of which a subset is ``alive``, and every node's
weights ``B[k]``, bias and threshold. It implements

* the relaxed objective, eq. (12) / (19) / Cronus (4.1): the loss of every node weighted
  by its reach probability (CSTC) or its exit probability (CSCC, Cronus) times the
  input's class weight, ``reg_alpha`` (rho) times the l1 norms, and ``cost_tradeoff``
  (lambda) times the mixed-norm cost. The cost is written over *cost groups* of coordinates: group
  ``g`` with cost ``c_g`` and coordinates ``S_g``. A path's relaxed cost is
  ``sum_g c_g sqrt(sum_{j on the path} sum_{t in S_g} B[j, t]^2)``: with plain features
  the groups are the features (and the Dataset's cost groups), with the boosting trick
  they are the trees (cost ``e_t``, eq. 21) and, per feature, the trees that use it
  (eq. 20);
* per-node block coordinate descent (Algorithm 1): the auxiliary variables of Lemma 1 in
  closed form, then leaves by the weighted ridge solution of eq. (16) and branching
  nodes (weights, bias and threshold) by L-BFGS on the analytic gradient, whose
  per-input part is ``_core._linear.node_objective``; weights below ``CLAMP`` are
  clamped to zero for good;
* top-down initialisation (3.4.2), bottom-up pruning (3.6.1), greedy top-down growth
  (3.6.2) and fine-tuning of the leaves without the cost term (3.5).

Each classifier also has a bias, not penalised and not a feature. The cost of node
``k``'s weight on coordinate ``t`` is measured on ``B[k, t] * scale[k, t]``, the weight
times the coordinate's (reach-weighted) standard deviation over the inputs that reach the
node (see :meth:`TreeProblem.update_scales`), so rescaling a feature does not change what
it costs.

Departures from the paper, so that one ``cost_tradeoff`` finds the paper's tree whatever
the scale of the labels (the caller standardises regression targets, so the scores are
in label deviations):

* the soft routing is ``sigmoid(sharpness (f - theta))``. With the paper's slope 1 the
  routing is as soft as the labels are close: labels 0 / 1 / 5 / 6 leave a branch
  1/2 label apart, and a slope of 1 sends 40% of the inputs down the wrong side, so
  every leaf fits a mixture and buys every feature;
* ``CLAMP`` is 1e-3 (the weights are in label deviations per feature deviation): the
  Lemma 1 iterations shrink an unneeded weight geometrically, and one left at 1e-4
  charges its whole feature cost to every input that reaches the node;
* :meth:`TreeProblem.drop_idle_weights`: the mixed norm makes a small weight cheap in
  a routing node above a leaf that reads the same feature, but the prediction pays the
  feature on the sibling's path too; weights that send no training input to another
  side are removed (the training predictions do not change);
* fine-tuning fits each leaf on the inputs that its hard route sends it, as prediction
  will, rather than on soft-routed ones that leak other regions into the fit, and on the
  features of its whole path, which those inputs have paid for (the paper: the leaf's
  own). With sharp routing the routing nodes can do the classifying and leave a leaf
  near-constant: on skewed Letters its inputs then tie and the AUC fell to 0.948;
* :meth:`TreeProblem.drop_unreached_nodes` removes the nodes that no training input
  reaches, so that a node left without children is a leaf and is fine-tuned (a node
  with a child routes as well as predicts, and is not);
* the relaxed cost measures a weight against its coordinate's spread over the inputs
  that reach the node, not over all inputs: the paper charges ``c |beta|`` on raw
  features; on globally standardised ones a feature that holds the label in one region
  and is wide noise elsewhere needed a weight as many times larger as the noise is wide
  to fit the label where it is read, and was charged that much more -- on the paper's
  quadrant data with noise of deviation 3 outside a feature's quadrant no
  ``cost_tradeoff`` from 1 to 0.003 bought the features (the optimal tree then had no
  lower objective than the cheaper trees found). The scales are fixed during a sweep
  (each sweep decreases its objective) and are renewed at the start of the next;
* pruning (3.6.1) runs on the optimised tree, not on the initialised one: with
  median thresholds the initialised leaves have not specialised, pruning on MNIST 3 vs
  8 kept a root, one child and one grandchild, and the sweeps then sent every input to
  the root's exit (test error 0.044 where the full tree reaches 0.024 at a similar
  cost).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np
import scipy.linalg
import scipy.optimize

from .._core._linear import (
    LOSS_SQUARED,
    dense_gradient,
    dense_scores,
    node_objective,
    pointwise_loss,
    soft_route,
)
from ..metrics import evaluate_on, metric_maximize
from .linear_inputs import threads_for

if TYPE_CHECKING:  # only for type hints
    from scipy.sparse import sparray, spmatrix

    from ..dataset import Dataset

# node k's terms that the other nodes fix (TreeProblem.node_terms): arrays, flags, lists
# of nodes, keyed by name
NodeTerms: TypeAlias = dict[str, Any]
# a lower-is-better validation score of hard predictions (validation_score)
Score: TypeAlias = Callable[[np.ndarray], float]

__all__ = ["TreeProblem", "CLAMP"]

CLAMP = 1e-3            # |weight| below this is set to zero for good (section 3.4)
_MAX_NODE_ITERATIONS = 100
_MAX_LBFGS_ITERATIONS = 200
# a sigmoid this steep is a step function on any scores but ties at the threshold
_HARD_SHARPNESS = 1e9


def skeleton(kind: str, depth: int) -> tuple[np.ndarray, np.ndarray]:
    """(upper, lower) child arrays of the full structure: a binary tree of ``depth``
    levels in level order (node k's children 2k+1 (upper), 2k+2 (lower)), or a cascade of
    ``depth`` stages (stage k passes its upper side on to k + 1; its lower side exits)."""
    if kind == "tree":
        n = 2 ** depth - 1
        ids = np.arange(n)
        upper, lower = 2 * ids + 1, 2 * ids + 2
        upper[upper >= n] = -1
        lower[lower >= n] = -1
    else:
        n = depth
        upper = np.arange(1, n + 1)
        upper[-1] = -1
        lower = np.full(n, -1)
    return upper.astype(np.int32), lower.astype(np.int32)


def balanced_threshold(values: np.ndarray, weights: np.ndarray) -> float:
    """A threshold that sends about half of the weight up: the midpoint of the gap
    between consecutive distinct values whose weight below is closest to half. Never
    one of the values themselves: scores that take few distinct values (cheap binary
    features) would otherwise put a whole group of inputs at sigmoid(0) = 1/2."""
    distinct, inverse = np.unique(values, return_inverse=True)
    if distinct.size == 1:
        return float(distinct[0])
    mass = np.bincount(inverse, weights=weights, minlength=distinct.size)
    if not mass.sum() > 0:
        mass = np.bincount(inverse, minlength=distinct.size).astype(np.float64)
    below = np.cumsum(mass)[:-1]
    gap = int(np.argmin(np.abs(below - 0.5 * mass.sum())))
    return float(0.5 * (distinct[gap] + distinct[gap + 1]))


class TreeProblem:
    """One CSTC / CSCC / Cronus training problem (see the module docstring).

    Parameters
    ----------
    Z : float64 (n_samples, n_coords), C order; standardised coordinates
    y : float64 (n_samples,); targets (+-1 for classification)
    sample_weight : float64 (n_samples,)
    class_factor : float64 (n_samples,); the class weight of each input (CSCC's w_y; ones
        without class weights)
    groups : scipy.sparse CSR (n_groups, n_coords) of 0/1; the cost groups
    group_costs : float64 (n_groups,)
    kind : "tree" or "cascade"; depth : int >= 1
    weighting : "reach" (CSTC) or "exit" (CSCC, Cronus)
    cost_form : "paths" (CSTC, CSCC: eq. 12 / 19) or "cronus"
    loss : LOSS_SQUARED or LOSS_LOGISTIC
    rho, lam : float; reg_alpha and cost_tradeoff
    usable : bool (n_coords,); coordinates that may get a weight (not constant)
    sharpness : float > 0; routing_sharpness, the slope of the routing sigmoid
    """

    def __init__(self, Z: np.ndarray, y: np.ndarray, sample_weight: np.ndarray,
                 class_factor: np.ndarray, groups: sparray | spmatrix, group_costs: np.ndarray,
                 *, kind: str, depth: int, weighting: str, cost_form: str, loss: int,
                 rho: float, lam: float, tol: float, usable: np.ndarray, sharpness: float,
                 n_threads: int) -> None:
        self.Z, self.y = Z, y
        self.sw = sample_weight
        self.W = float(sample_weight.sum())
        self.class_factor = class_factor
        self.groups = groups.tocsr()
        self.groups_T = self.groups.T.tocsr()
        self.group_costs = np.asarray(group_costs, dtype=np.float64)
        self.kind, self.weighting, self.cost_form = kind, weighting, cost_form
        self.loss, self.rho, self.lam, self.tol = loss, float(rho), float(lam), float(tol)
        self.n_threads = n_threads
        self.sharpness = float(sharpness)
        self.usable = usable
        self.upper_full, self.lower_full = skeleton(kind, depth)
        n_nodes = self.upper_full.shape[0]
        self.parent = np.full(n_nodes, -1, dtype=np.int64)
        for k in range(n_nodes):
            for child in (self.upper_full[k], self.lower_full[k]):
                if child >= 0:
                    self.parent[child] = k
        n, d = Z.shape
        self.B = np.zeros((n_nodes, d))
        self.bias = np.zeros(n_nodes)
        self.theta = np.zeros(n_nodes)
        self.active = np.zeros((n_nodes, d), dtype=bool)
        self.alive = np.zeros(n_nodes, dtype=bool)
        self.F = np.zeros((n, n_nodes))
        # per node and coordinate: the spread the relaxed cost measures weights against
        self.scale = np.ones((n_nodes, d))
        self.objective_history: list[float] = []

    def _threads(self, work: int) -> int:
        return threads_for(work, self.n_threads)

    # -- structure ----------------------------------------------------------------------
    @property
    def n_nodes(self) -> int:
        return self.upper_full.shape[0]

    def children(self) -> tuple[np.ndarray, np.ndarray]:
        """(upper, lower) of the current structure: a child that is not alive is a
        terminal (-1)."""
        upper = np.where((self.upper_full >= 0) & self.alive[np.maximum(self.upper_full, 0)],
                         self.upper_full, -1).astype(np.int32)
        lower = np.where((self.lower_full >= 0) & self.alive[np.maximum(self.lower_full, 0)],
                         self.lower_full, -1).astype(np.int32)
        return upper, lower

    def path(self, k: int) -> list[int]:
        """Nodes from the root to ``k``, ``k`` included."""
        nodes = []
        while k >= 0:
            nodes.append(int(k))
            k = self.parent[k]
        return nodes[::-1]

    def subtree(self, k: int) -> list[int]:
        """Alive nodes below ``k`` (``k`` excluded)."""
        upper, lower = self.children()
        out, stack = [], [c for c in (upper[k], lower[k]) if c >= 0]
        while stack:
            j = stack.pop()
            out.append(j)
            stack.extend(c for c in (upper[j], lower[j]) if c >= 0)
        return sorted(out)

    def alive_nodes(self) -> np.ndarray:
        return np.flatnonzero(self.alive)

    # -- soft traversal and the global objective -------------------------------------
    def route(self, F: np.ndarray | None = None, upper: np.ndarray | None = None,
              lower: np.ndarray | None = None, theta: np.ndarray | None = None
              ) -> tuple[np.ndarray, np.ndarray]:
        """(reach, exit) probabilities of every input at every node (eq. 4, 5)."""
        F = self.F if F is None else F
        if upper is None:
            upper, lower = self.children()
        theta = self.theta if theta is None else theta
        reach = np.empty_like(F)
        exit_ = np.empty_like(F)
        soft_route(F, theta, upper, lower, reach, exit_, self.sharpness,
                   self._threads(F.size))
        return reach, exit_

    def loss_weights(self, reach: np.ndarray, exit_: np.ndarray) -> np.ndarray:
        """Each input's loss weight at each node: its class weight times its reach
        probability (CSTC) or its exit probability (CSCC, Cronus)."""
        return (reach if self.weighting == "reach" else exit_) * self.class_factor[:, None]

    def group_norms(self) -> np.ndarray:
        """(n_nodes, n_groups): ``sum_{t in S_g} (B[k, t] scale[k, t])^2``."""
        return (self.groups @ ((self.B * self.scale) ** 2).T).T

    def update_scales(self, nodes: Sequence[int] | np.ndarray | None = None) -> None:
        """Set ``scale[k]`` of the alive nodes (or of ``nodes``) to each coordinate's
        standard deviation over the inputs that reach ``k``, weighted by sample weight
        times reach probability (1 at the root, where every input arrives with
        probability 1: the coordinates are standardised). A node that no input reaches
        gets scale 1."""
        reach, _ = self.route()
        for k in self.alive_nodes() if nodes is None else nodes:
            weights = self.sw * reach[:, k]
            total = float(weights.sum())
            if not total > 0:
                self.scale[k] = 1.0
                continue
            # sums without an n x d temporary (standardised Z: no cancellation to fear)
            mean = _weighted_sum(weights, self.Z) / total
            variance = np.einsum("i,ij,ij->j", weights, self.Z, self.Z) / total - mean ** 2
            self.scale[k] = np.sqrt(np.maximum(variance, 0.0))

    def cost_term(self, reach: np.ndarray, exit_: np.ndarray) -> float:
        """The relaxed expected cost (without lambda)."""
        q = self.group_norms()
        alive = self.alive_nodes()
        if self.cost_form == "cronus":
            mean_reach = _weighted_sum(self.sw, reach) / self.W
            per_group = (mean_reach[alive, None] ** 2 * q[alive]).sum(axis=0)
            return float(self.group_costs @ np.sqrt(per_group))
        mean_exit = _weighted_sum(self.sw, exit_) / self.W
        upper, lower = self.children()
        total = 0.0
        for k in alive:
            if upper[k] == -1 or lower[k] == -1:
                path_q = q[self.path(k)].sum(axis=0)
                total += mean_exit[k] * float(self.group_costs @ np.sqrt(path_q))
        return total

    def objective(self) -> float:
        """The relaxed objective (12) / (19) / Cronus at the current parameters."""
        reach, exit_ = self.route()
        losses = np.empty_like(self.F)
        pointwise_loss(self.F, self.y, self.loss, losses, self._threads(self.F.size))
        alive = self.alive_nodes()
        weights = self.loss_weights(reach, exit_)
        value = float(_weighted_sum(self.sw, weights[:, alive] * losses[:, alive]).sum()) / self.W
        value += self.rho * float(np.abs(self.B[alive]).sum())
        return float(value + self.lam * self.cost_term(reach, exit_))

    def set_scores(self, k: int) -> None:
        columns = np.flatnonzero(self.B[k]).astype(np.int64)
        scores = np.empty(self.Z.shape[0])
        dense_scores(self.Z, columns, np.ascontiguousarray(self.B[k, columns]), self.bias[k],
                     scores, self._threads(scores.size * max(columns.size, 1)))
        self.F[:, k] = scores

    # -- one node ---------------------------------------------------------------------
    def node_terms(self, k: int) -> NodeTerms:
        """Everything node ``k``'s objective needs that the other nodes fix: the
        per-input loss weights and descendant losses of ``node_objective``, and the cost
        pieces (see :meth:`node_function`)."""
        upper, lower = self.children()
        splits = upper[k] != -1 or lower[k] != -1
        reach, exit_ = self.route(upper=upper, lower=lower)
        reach_k = np.ascontiguousarray(reach[:, k])
        tu = float(upper[k] == -1)
        tl = float(lower[k] == -1)
        t = dict(k=k, splits=splits, reach_k=reach_k, tu=tu, tl=tl)
        factor = self.class_factor
        if self.weighting == "reach":
            t["own_weight"], t["own_slope"] = factor * reach_k, np.zeros_like(reach_k)
        else:
            t["own_weight"] = factor * reach_k * (tl if splits else 1.0)
            t["own_slope"] = factor * reach_k * (tu - tl) if splits else np.zeros_like(reach_k)
        zeros = np.zeros_like(reach_k)
        t["loss_upper"] = t["loss_lower"] = zeros
        t["up"], t["lo"] = [], []
        if splits:
            # probabilities below k as if k sent everything up (resp. down): those of
            # the real tree are these times s (resp. 1 - s)
            forced = self.F.copy()
            forced[:, k] = np.inf
            t["reach_up"], t["exit_up"] = self.route(forced, upper, lower)
            forced[:, k] = -np.inf
            t["reach_lo"], t["exit_lo"] = self.route(forced, upper, lower)
            losses = np.empty_like(self.F)
            pointwise_loss(self.F, self.y, self.loss, losses, self._threads(self.F.size))
            for side, child in (("up", upper[k]), ("lo", lower[k])):
                if child == -1:
                    continue
                nodes = [child] + self.subtree(child)
                t[side] = nodes
                weights = self.loss_weights(t[f"reach_{side}"], t[f"exit_{side}"])
                t["loss_upper" if side == "up" else "loss_lower"] = np.ascontiguousarray(
                    (weights[:, nodes] * losses[:, nodes]).sum(axis=1))
        # cost: the other nodes' group norms on each path, and Lemma 1's eta
        q = self.group_norms()
        if self.cost_form == "cronus":
            mean_reach = _weighted_sum(self.sw, reach) / self.W
            t["mean_reach"] = mean_reach
            others = [j for j in self.alive_nodes() if j != k]
            t["q_others"] = (mean_reach[others, None] ** 2 * q[others]).sum(axis=0)
            eta = np.sqrt(t["q_others"] + mean_reach[k] ** 2 * q[k])
            t["eta"] = self._eta(_safe_inverse(eta))
            t["q_sub"] = q
        else:
            owners = []   # (node, side, other nodes' path norms, *_eta(1 / eta))
            for j in [k] + t["up"] + t["lo"]:
                if upper[j] != -1 and lower[j] != -1:
                    continue
                side = "own" if j == k else ("up" if j in t["up"] else "lo")
                path = self.path(j)
                q_others = q[[m for m in path if m != k]].sum(axis=0)
                eta = np.sqrt(q_others + q[k])
                owners.append((j, side, q_others, *self._eta(_safe_inverse(eta))))
            t["owners"] = owners
        return t

    def _eta(self, inv_eta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Lemma 1's auxiliaries ``1 / eta`` with what the cost pieces take of them in
        every L-BFGS evaluation, computed once: ``(1 / eta, eta, per coordinate the sum
        of c / eta over the groups holding it)``."""
        return (inv_eta, _safe_sqrt_inverse(inv_eta),
                self.groups_T @ (self.group_costs * inv_eta))

    def _cost_pieces(self, t: NodeTerms, beta: np.ndarray, s: np.ndarray | None
                     ) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
        """Node ``k``'s cost term (Lemma 1 form, eta fixed) at weights ``beta`` and
        routing ``s``: (value, d/d beta diagonal, CU, CV) -- CU/CV the derivatives of
        the cost with respect to ``s_i``, per input and with lambda."""
        scale2 = self.scale[t["k"]] ** 2
        qk = self.groups @ (beta ** 2 * scale2)
        c = self.group_costs
        n = t["reach_k"].shape[0]
        cu, cv = np.zeros(n), np.zeros(n)
        if self.cost_form == "cronus":
            mean_reach = t["mean_reach"].copy()
            pk = mean_reach[t["k"]]
            q = t["q_sub"]
            value_q = t["q_others"].copy()
            inv_eta, eta, spread = t["eta"]
            # the subtree's mean reach moves with s
            for side in ("up", "lo"):
                nodes = t[side]
                if nodes:
                    assert s is not None    # a node with children has its routing
                    side_s = s if side == "up" else 1.0 - s
                    reach_side = t[f"reach_{side}"][:, nodes]
                    mean_reach[nodes] = _weighted_sum(self.sw * side_s, reach_side) / self.W
                    moved = mean_reach[nodes, None] ** 2 - t["mean_reach"][nodes, None] ** 2
                    value_q = value_q + (moved * q[nodes]).sum(axis=0)
                    slope = (q[nodes] * inv_eta) @ c * mean_reach[nodes]
                    (cu if side == "up" else cv)[:] += self.lam * np.einsum("ij,j->i", reach_side,
                                                                            slope)
            value_q = value_q + pk ** 2 * qk
            value = 0.5 * float(c @ (value_q * inv_eta + eta))
            diag = pk ** 2 * spread * scale2
            return value, diag, cu, cv
        value = 0.0
        diag = np.zeros(beta.shape[0])
        sw = self.sw
        for j, side, q_others, inv_eta, eta, spread in t["owners"]:
            path_q = q_others + qk
            k_value = 0.5 * float(c @ (path_q * inv_eta + eta))
            if side == "own":
                # s is None for a node without children
                weight_s = 1.0 if s is None else t["tu"] * s + t["tl"] * (1.0 - s)
                mean_exit = float(np.einsum("i,i->", sw, t["reach_k"] * weight_s)) / self.W
                cu += self.lam * t["reach_k"] * t["tu"] * k_value
                cv += self.lam * t["reach_k"] * t["tl"] * k_value
            else:
                exit_j = t[f"exit_{side}"][:, j]
                assert s is not None    # a node with children has its routing
                side_s = s if side == "up" else 1.0 - s
                mean_exit = float(np.einsum("i,i->", sw, side_s * exit_j)) / self.W
                (cu if side == "up" else cv)[:] += self.lam * exit_j * k_value
            value += mean_exit * k_value
            diag += mean_exit * spread * scale2
        return value, diag, cu, cv

    def node_function(self, t: NodeTerms, active: np.ndarray, gamma: np.ndarray
                      ) -> Callable[[np.ndarray], tuple[float, np.ndarray]]:
        """The smoothed objective of node ``t['k']`` (Lemma 1 with ``gamma`` for the l1
        norm and the eta in ``t``; constants dropped) as a function of
        ``x = [weights on the active coordinates, bias, threshold (if it splits)]``,
        returning (value, gradient)."""
        columns = np.flatnonzero(active).astype(np.int64)
        n_active = columns.size
        d = self.Z.shape[1]
        f = np.empty(self.Z.shape[0])
        grad_f = np.empty(self.Z.shape[0])
        grad_beta = np.empty(n_active)
        inv_gamma = _safe_inverse(gamma)
        threads = self._threads(f.size * max(n_active, 1))
        threads_f = self._threads(10 * f.size)

        def function(x: np.ndarray) -> tuple[float, np.ndarray]:
            beta_a, bias = np.ascontiguousarray(x[:n_active]), float(x[n_active])
            theta = x[n_active + 1] if t["splits"] else 0.0
            dense_scores(self.Z, columns, beta_a, bias, f, threads)
            s = _sigmoid(self.sharpness * (f - theta)) if t["splits"] else None
            beta = np.zeros(d)
            beta[active] = beta_a
            cost_value, diag, cu, cv = self._cost_pieces(t, beta, s)
            loss_value, d_theta = node_objective(
                f, self.y, self.sw, t["own_weight"], t["own_slope"], t["loss_upper"],
                t["loss_lower"], cu, cv, theta, self.sharpness, t["splits"], self.loss, grad_f,
                threads_f)
            value = (loss_value / self.W + 0.5 * self.rho * float(beta_a ** 2 @ inv_gamma)
                     + self.lam * cost_value)
            grad = np.empty_like(x)
            dense_gradient(self.Z, columns, grad_f, grad_beta, threads)
            grad[:n_active] = grad_beta / self.W + (self.rho * inv_gamma
                                                    + self.lam * diag[active]) * beta_a
            grad[n_active] = grad_f.sum() / self.W
            if t["splits"]:
                grad[n_active + 1] = d_theta / self.W
            return value, grad

        return function

    def solve_leaf(self, t: NodeTerms, active: np.ndarray, gamma: np.ndarray,
                   gram: WeightedGram) -> tuple[np.ndarray, float]:
        """Closed-form weights and bias of a leaf under squared loss (eq. 16): the
        weighted ridge ``(Z' Omega Z + W Gamma) beta = Z' Omega y`` with an unpenalised
        bias, ``Gamma = rho / gamma + lambda * (cost diagonal)``. ``gram``: the
        :class:`WeightedGram` of the node's loss weights (fixed while the node is
        optimised)."""
        d = self.Z.shape[1]
        _, diag, _, _ = self._cost_pieces(t, np.zeros(d), None)
        penalty = self.rho * _safe_inverse(gamma) + self.lam * diag[active]
        return gram.solve(active, self.W * penalty)

    def optimize_node(self, k: int, *, start: np.ndarray | None = None) -> float:
        """Algorithm 1's inner loop for node ``k``: alternate Lemma 1's auxiliary
        variables (closed form) and the node's parameters until the objective changes
        less than ``tol``; clamp weights below ``CLAMP``. ``start``: a support (bool
        mask) to start afresh on, from the ridge solution with unit auxiliaries."""
        fresh = start is not None
        if fresh:
            self.active[k] = start
            self.B[k] = 0.0
            self.update_scales([k])
        previous = None
        gram = None
        for iteration in range(_MAX_NODE_ITERATIONS):
            active = self.active[k].copy()
            t = self.node_terms(k)
            if fresh and iteration == 0:
                gamma = np.ones(active.sum())
                self._unit_eta(t)
            else:
                gamma = np.abs(self.B[k, active])
            if t["splits"] or self.loss != LOSS_SQUARED:
                function = self.node_function(t, active, gamma)
                x0 = np.concatenate([self.B[k, active], [self.bias[k]],
                                     [self.theta[k]] if t["splits"] else []])
                result = scipy.optimize.minimize(
                    function, x0, jac=True, method="L-BFGS-B",
                    options={"maxiter": _MAX_LBFGS_ITERATIONS})
                x = result.x
                beta_a, bias = x[:active.sum()], x[active.sum()]
                if t["splits"]:
                    self.theta[k] = x[active.sum() + 1]
            else:
                if gram is None:   # the loss weights do not change while k is optimised
                    gram = WeightedGram(self.Z, self.y, self.sw * t["own_weight"], active)
                beta_a, bias = self.solve_leaf(t, active, gamma, gram)
            self.B[k] = 0.0
            self.B[k, active] = beta_a
            self.bias[k] = bias
            small = np.abs(self.B[k]) < CLAMP
            self.B[k, small] = 0.0
            self.active[k] &= ~small
            self.set_scores(k)
            value = self.objective()
            if previous is not None and abs(previous - value) <= self.tol * max(1.0, abs(value)):
                break
            previous = value
        return value

    def _unit_eta(self, t: NodeTerms) -> None:
        """Lemma 1's auxiliaries all 1 (the start of a fresh node)."""
        if self.cost_form == "cronus":
            t["eta"] = self._eta(np.ones_like(t["eta"][0]))
        else:
            t["owners"] = [(j, side, q, *self._eta(np.ones_like(inv)))
                           for j, side, q, inv, *_ in t["owners"]]

    # -- the whole tree ----------------------------------------------------------------
    def set_split_threshold(self, k: int) -> None:
        """Threshold of a node that just got children: half of its (reach-weighted)
        training inputs go up (:func:`balanced_threshold`)."""
        reach, _ = self.route()
        self.theta[k] = balanced_threshold(self.F[:, k], self.sw * reach[:, k])

    def add_node(self, k: int) -> None:
        """Make ``k`` alive and initialise it as a leaf (3.4.2); its parent, which now
        branches, gets the median threshold first if it had no child yet."""
        parent = self.parent[k]
        if parent >= 0:
            upper, lower = self.children()
            if upper[parent] == -1 and lower[parent] == -1:
                self.set_split_threshold(parent)
        self.alive[k] = True
        self.optimize_node(k, start=self.usable)

    def initialize(self, nodes: Sequence[int] | None = None) -> None:
        """Top-down initialisation (3.4.2): each node in level order, as a leaf."""
        for k in range(self.n_nodes) if nodes is None else nodes:
            self.add_node(k)

    def sweep(self) -> float:
        """One pass of block coordinate descent over the alive nodes in level order, the
        cost's scales renewed first (:meth:`update_scales`); returns the objective."""
        value = None
        self.update_scales()
        for k in self.alive_nodes():
            value = self.optimize_node(k)
        assert value is not None    # the root is always alive
        self.objective_history.append(float(value))
        return value

    def fine_tune(self) -> None:
        """Section 3.5: re-fit every leaf without the cost term, on the inputs that reach
        it with hard thresholds, as predictions will route them (soft routing would leak
        other regions' inputs into the fit). Its features are its own and those of the
        nodes on its path: an input that reaches the leaf has paid for all of them, so
        the re-fit changes no cost (the paper keeps the leaf's own; with sharp routing a
        leaf can be left near-constant, its inputs told apart only by the routing). A
        leaf that no training input reaches keeps its weights."""
        upper, lower = self.children()
        _, visited = self.hard_walk(self.F)
        lam, sharpness = self.lam, self.sharpness
        self.lam, self.sharpness = 0.0, _HARD_SHARPNESS
        try:
            for k in self.alive_nodes():
                if upper[k] == -1 and lower[k] == -1 and visited[:, k].any():
                    self.optimize_node(k, start=self.paid_coordinates(k))
        finally:
            self.lam, self.sharpness = lam, sharpness

    def paid_coordinates(self, k: int) -> np.ndarray:
        """bool (n_coords,): the coordinates that node ``k`` or a node on its path
        reads."""
        return np.any(self.active[self.path(k)], axis=0)

    # -- hard prediction on other data (validation) ----------------------------------
    def predict_hard(self, Z: np.ndarray, alive: np.ndarray | None = None
                     ) -> tuple[np.ndarray, np.ndarray]:
        """(scores of the exit nodes, exit nodes) of the rows of ``Z`` with hard
        thresholds, using the structure ``alive`` (default: the current one)."""
        F = Z @ self.B.T + self.bias
        node, _ = self.hard_walk(F, alive)
        return F[np.arange(F.shape[0]), node], node

    def hard_walk(self, F: np.ndarray, alive: np.ndarray | None = None
                  ) -> tuple[np.ndarray, np.ndarray]:
        """(exit node, bool (n_samples, n_nodes) of the nodes visited) of inputs with
        node scores ``F`` under hard thresholds, in the structure ``alive``."""
        alive = self.alive if alive is None else alive
        n = F.shape[0]
        node = np.zeros(n, dtype=np.int64)
        visited = np.zeros(F.shape, dtype=bool)
        visited[:, 0] = True
        done = np.zeros(n, dtype=bool)
        up_full, lo_full = self.upper_full, self.lower_full
        while not done.all():
            rows = np.flatnonzero(~done)
            k = node[rows]
            go_up = F[rows, k] > self.theta[k]
            child = np.where(go_up, up_full[k], lo_full[k])
            child_alive = (child >= 0) & alive[np.maximum(child, 0)]
            done[rows[~child_alive]] = True
            node[rows[child_alive]] = child[child_alive]
            visited[rows[child_alive], child[child_alive]] = True
        return node, visited

    def drop_unreached_nodes(self) -> None:
        """Remove the nodes that no training input reaches with hard thresholds. Their
        weights were shaped by soft routing only, and while such a node hangs below a
        node, that node routes as well as predicts and fine-tuning leaves it alone;
        without it, the node is a leaf and is re-fitted. The training predictions do not
        change."""
        _, visited = self.hard_walk(self.F)
        dead = self.alive & ~visited.any(axis=0)
        dead[0] = False
        self.alive[dead] = False
        self.B[dead] = 0.0
        self.active[dead] = False
        self.F[:, dead] = self.bias[dead]

    def drop_idle_weights(self) -> None:
        """Remove the weights of branching nodes that route no training input
        differently: the mixed norm charges a small weight little, the prediction cost
        charges its feature in full. For each node with two children, coordinates are
        tried from the smallest weight up; one goes when every training input that
        reaches the node (hard thresholds) still takes the same side without it. The
        training predictions are unchanged. A node that no training input reaches is left
        alone (nothing shows what its weights do)."""
        upper, lower = self.children()
        _, visited = self.hard_walk(self.F)
        for k in self.alive_nodes():
            rows = np.flatnonzero(visited[:, k])
            if upper[k] == -1 or lower[k] == -1 or rows.size == 0:
                continue
            scores = self.F[rows, k]
            side = scores > self.theta[k]
            for j in sorted(np.flatnonzero(self.active[k]), key=lambda j: abs(self.B[k, j])):
                trial = scores - self.B[k, j] * self.Z[rows, j]
                if np.array_equal(trial > self.theta[k], side):
                    scores = trial
                    self.B[k, j] = 0.0
                    self.active[k, j] = False
            self.set_scores(k)

    def prune(self, Z_valid: np.ndarray, score: Score) -> None:
        """Bottom-up pruning (3.6.1): remove a leaf whenever the validation ``score``
        (a function of the hard predictions, lower is better) does not get worse;
        repeat until no leaf can go. Training calls it on the optimised tree (see the
        module's docstring)."""
        current = score(self.predict_hard(Z_valid)[0])
        changed = True
        while changed:
            changed = False
            upper, lower = self.children()
            leaves = [k for k in self.alive_nodes()[::-1]
                      if k != 0 and upper[k] == -1 and lower[k] == -1]
            for k in leaves:
                trial = self.alive.copy()
                trial[k] = False
                value = score(self.predict_hard(Z_valid, trial)[0])
                if value <= current:
                    self.alive[k] = False
                    current = value
                    changed = True

    def grow_greedy(self, Z_valid: np.ndarray, score: Score) -> None:
        """Greedy top-down growth (3.6.2): add the potential node that improves the
        validation ``score`` the most until none does. A node that gets children has its
        threshold set so that half of its validation inputs go up."""
        self.add_node(0)
        current = score(self.predict_hard(Z_valid)[0])
        potential = {}

        def open_children(k: int) -> None:
            _, node = self.predict_hard(Z_valid)
            values = (Z_valid @ self.B[k] + self.bias[k])[node == k]
            if values.size:
                self.theta[k] = balanced_threshold(values, np.ones(values.size))
            for child in (self.upper_full[k], self.lower_full[k]):
                if child >= 0:
                    self.alive[child] = True
                    self.optimize_node(child, start=self.usable)
                    potential[child] = (self.B[child].copy(), self.bias[child],
                                        self.active[child].copy())
                    self.alive[child] = False

        open_children(0)
        while potential:
            best, best_value = None, current
            for child in potential:
                trial = self.alive.copy()
                trial[child] = True
                value = score(self.predict_hard(Z_valid, trial)[0])
                if value < best_value:
                    best, best_value = child, value
            if best is None:
                break
            self.B[best], self.bias[best], self.active[best] = potential.pop(best)
            self.set_scores(best)
            self.alive[best] = True
            current = best_value
            open_children(best)
        for child in potential:   # never added
            self.B[child] = 0.0
            self.active[child] = False


class WeightedGram:
    """The weighted normal equations of a leaf, for ridge solves on subsets of its
    columns: ``argmin_{beta, b} 1/2 sum_i w_i (z_i beta + b - y_i)^2 + 1/2 sum_t
    penalty_t beta_t^2`` (eq. 16 with an unpenalised bias, solved after weighted
    centring). Built once per node visit on the columns ``columns`` (bool mask); each
    IRLS step then only solves a sub-block."""

    def __init__(self, Z: np.ndarray, y: np.ndarray, weights: np.ndarray, columns: np.ndarray
                 ) -> None:
        self.columns = np.flatnonzero(columns)
        self.total = float(weights.sum())
        Zs = Z[:, self.columns]
        if self.total <= 0:
            self.z_mean, self.y_mean = np.zeros(self.columns.size), 0.0
            self.lhs = np.zeros((self.columns.size, self.columns.size))
            self.rhs = np.zeros(self.columns.size)
            return
        self.z_mean = (weights @ Zs) / self.total
        self.y_mean = float(weights @ y) / self.total
        Zc = Zs - self.z_mean
        Zw = Zc * weights[:, None]
        self.lhs = Zw.T @ Zc
        self.rhs = Zw.T @ (y - self.y_mean)

    def solve(self, columns: np.ndarray, penalty: np.ndarray | float
              ) -> tuple[np.ndarray, float]:
        """(beta on ``columns`` (a bool mask, within the built ones), bias)."""
        where = np.flatnonzero(columns[self.columns])
        if self.total <= 0:
            return np.zeros(where.size), 0.0
        lhs = self.lhs[np.ix_(where, where)]
        lhs[np.diag_indices_from(lhs)] += penalty
        rhs = self.rhs[where]
        try:
            beta = scipy.linalg.solve(lhs, rhs, assume_a="pos")
        except (np.linalg.LinAlgError, scipy.linalg.LinAlgError):
            beta = np.linalg.lstsq(lhs, rhs, rcond=None)[0]
        return beta, self.y_mean - float(self.z_mean[where] @ beta)


def weighted_ridge(Z: np.ndarray, y: np.ndarray, weights: np.ndarray,
                   penalty: np.ndarray | float) -> tuple[np.ndarray, float]:
    """:class:`WeightedGram`'s solve on all columns of ``Z``: (beta, b)."""
    columns = np.ones(Z.shape[1], dtype=bool)
    return WeightedGram(Z, y, weights, columns).solve(columns, penalty)


def _weighted_sum(weights: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """``weights @ matrix`` without BLAS (whose threads cost more than these small
    products on a busy machine)."""
    return np.einsum("i,ij->j", weights, matrix)


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def _safe_inverse(values: np.ndarray) -> np.ndarray:
    out = np.zeros_like(values, dtype=np.float64)
    positive = values > 0
    out[positive] = 1.0 / values[positive]
    return out


def _safe_sqrt_inverse(inv_eta: np.ndarray) -> np.ndarray:
    """eta from 1 / eta (0 stays 0)."""
    return _safe_inverse(inv_eta)


def validation_score(metric: str, valid: Dataset,
                     transform: Callable[[np.ndarray], np.ndarray]) -> Score:
    """Lower-is-better validation score on the Dataset ``valid`` of hard predictions
    (for pruning / growth)."""
    sign = -1.0 if metric_maximize(metric) else 1.0

    def score(raw: np.ndarray) -> float:
        return sign * evaluate_on(metric, valid, transform(raw))

    return score
