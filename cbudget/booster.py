"""Booster: an additive ensemble of regression trees (gbdt, cegb, greedy_miser)."""
import copy
from typing import NamedTuple

import numpy as np

from ._core._openmp_helpers import resolve_n_threads
from ._core._predict import predict_leaf, predict_raw
from ._core._types import NODE_DTYPE, compact_nodes
from .costs import CostReport
from .dataset import Dataset, as_float_matrix
from .metrics import check_metric, evaluate_metric, metric_maximize
from .objectives import get_objective

__all__ = ["Booster", "BudgetChoice"]


class BudgetChoice(NamedTuple):
    """Result of :meth:`Booster.best_iteration_within_budget`: predict with
    ``iteration_range=(0, iteration + 1)``."""
    iteration: int
    cost: float
    score: float
    metric: str

IMPORTANCE_KINDS = ("split", "gain", "cost")


class Booster:
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
    """

    def __init__(self, *, objective, num_class, base_score, feature_names, cost_model,
                 params):
        self.objective = objective
        self._objective = get_objective(objective, num_class if num_class > 1 else None)
        self.num_class = int(num_class)
        self.base_score = np.asarray(base_score, dtype=np.float64)
        self.feature_names = list(feature_names)
        self.cost_model = cost_model
        self.params = dict(params)
        self.algorithm = self.params.get("algorithm", "gbdt")
        self.trees = []
        self.tree_outputs = []
        self.iteration_indptr = [0]
        self.best_iteration = None
        self.best_score = None
        self.summary = {}
        self._flat_cache = {}

    # -- building ---------------------------------------------------------------------
    def _append_tree(self, tree, output):
        self._annotate_path_costs(tree)
        self.trees.append(tree)
        self.tree_outputs.append(int(output))
        self._flat_cache.clear()

    def _end_round(self):
        self.iteration_indptr.append(len(self.trees))

    def _annotate_path_costs(self, tree):
        """``path_cost`` of each node: acquisition cost (groups included) of the distinct
        features tested on the way from the root to the node, the node's own included."""
        feature_costs = self.cost_model.feature_costs.tolist()
        group_costs = self.cost_model.group_costs.tolist()
        feature_group = self.cost_model.feature_group.tolist()
        # node -> (path cost, features on the path, groups on the path); parents come
        # before their children in id order
        paths = [None] * tree.shape[0]
        paths[0] = (0.0, frozenset(), frozenset())
        path_cost = np.zeros(tree.shape[0])
        for node, (left, right, m) in enumerate(zip(tree["left"].tolist(),
                                                    tree["right"].tolist(),
                                                    tree["feature"].tolist())):
            cost, features, groups = paths[node]
            if left != -1:
                if m not in features:
                    cost += feature_costs[m]
                    features = features | {m}
                    g = feature_group[m]
                    if g >= 0 and g not in groups:
                        cost += group_costs[g]
                        groups = groups | {g}
                paths[left] = paths[right] = (cost, features, groups)
            path_cost[node] = cost
        tree["path_cost"] = path_cost

    # -- structure --------------------------------------------------------------------
    def num_boosted_rounds(self):
        """Number of boosting rounds."""
        return len(self.iteration_indptr) - 1

    def num_features(self):
        return len(self.feature_names)

    def _tree_range(self, iteration_range):
        n_rounds = self.num_boosted_rounds()
        if iteration_range is None:
            begin, end = 0, n_rounds
        else:
            try:
                begin, end = (int(v) for v in iteration_range)
            except (TypeError, ValueError):
                raise TypeError("iteration_range must be a pair (begin, end) of ints") from None
            if end == 0:
                end = n_rounds
            if not 0 <= begin <= end <= n_rounds:
                raise ValueError(f"iteration_range {tuple(iteration_range)} is out of "
                                 f"[0, {n_rounds}]")
        return self.iteration_indptr[begin], self.iteration_indptr[end]

    def _flat(self, t0, t1):
        """All trees in ``[t0, t1)`` back to back: (nodes, int64 offsets, int32 outputs,
        the nodes in the packed prediction layout)."""
        key = (t0, t1)
        if key not in self._flat_cache:
            trees = self.trees[t0:t1]
            nodes = np.concatenate(trees) if trees else np.zeros(0, dtype=NODE_DTYPE)
            offsets = np.zeros(len(trees) + 1, dtype=np.int64)
            offsets[1:] = np.cumsum([t.shape[0] for t in trees])
            outputs = np.asarray(self.tree_outputs[t0:t1], dtype=np.int32)
            self._flat_cache[key] = (nodes, offsets, outputs, compact_nodes(nodes))
        return self._flat_cache[key]

    def used_features(self, iteration_range=None):
        """Sorted indices of the features that the trees split on."""
        t0, t1 = self._tree_range(iteration_range)
        nodes = self._flat(t0, t1)[0]
        return np.unique(nodes["feature"][nodes["left"] != -1]).astype(np.int64)

    def __getitem__(self, key):
        """``booster[a:b]``: a new Booster with rounds ``a`` to ``b - 1``; ``booster[i]``:
        round ``i`` alone. The base score is kept."""
        n = self.num_boosted_rounds()
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            if key < 0:
                key += n
            if not 0 <= key < n:
                raise IndexError(f"round {key} out of range for {n} rounds")
            key = slice(key, key + 1)
        if not isinstance(key, slice):
            raise TypeError("a Booster is indexed by an int or a slice of rounds")
        begin, end, step = key.indices(n)
        if step != 1:
            raise ValueError("slicing a Booster needs step 1")
        end = max(end, begin)
        sliced = copy.copy(self)
        t0, t1 = self.iteration_indptr[begin], self.iteration_indptr[end]
        sliced.trees = [t.copy() for t in self.trees[t0:t1]]
        sliced.tree_outputs = self.tree_outputs[t0:t1]
        sliced.iteration_indptr = [i - t0 for i in self.iteration_indptr[begin:end + 1]]
        sliced.params = dict(self.params)
        sliced.summary = {}
        sliced.best_iteration = sliced.best_score = None
        sliced._flat_cache = {}
        return sliced

    # -- prediction -------------------------------------------------------------------
    def _n_threads(self):
        return resolve_n_threads(self.params.get("n_jobs"))

    def _prepare(self, X):
        if isinstance(X, Dataset):
            X, names = X.data, X.feature_names
        else:
            X, names = as_float_matrix(X, "X")
        if X.shape[1] != len(self.feature_names):
            raise ValueError(f"X has {X.shape[1]} features but the model was trained on "
                             f"{len(self.feature_names)}")
        if names is not None and names != self.feature_names:
            raise ValueError("X's feature names differ from the model's "
                             f"(first differences: {[(a, b) for a, b in zip(names, self.feature_names) if a != b][:3]})")
        return X

    def predict(self, X, *, output_margin=False, pred_leaf=False, iteration_range=None):
        """Predict.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), DataFrame, sparse or Dataset
        output_margin : bool
            Raw scores (before the sigmoid / softmax).
        pred_leaf : bool
            Return the leaf index reached in each tree, int32 (n_samples, n_trees).
        iteration_range : (begin, end), optional
            Use rounds ``begin <= r < end`` (``end = 0``: up to the last). Default: all.
            After early stopping: ``(0, booster.best_iteration + 1)``.

        Returns
        -------
        ndarray
            (n_samples,) for regression and binary:logistic (probabilities),
            (n_samples, num_class) for multi:softprob.
        """
        X = self._prepare(X)
        t0, t1 = self._tree_range(iteration_range)
        _, offsets, outputs, nodes = self._flat(t0, t1)
        if pred_leaf:
            out = np.zeros((X.shape[0], t1 - t0), dtype=np.int32)
            predict_leaf(X, nodes, offsets, out, self._n_threads())
            return out
        raw = np.tile(self.base_score, (X.shape[0], 1))
        predict_raw(X, nodes, offsets, outputs, raw, self._n_threads())
        if output_margin:
            return raw[:, 0].copy() if raw.shape[1] == 1 else raw
        return self._objective.transform(raw)

    def predict_cost(self, X, *, iteration_range=None):
        """Prediction cost of each input (ARCHITECTURE section 2): each feature paid once
        per input across all trees, its cost group once, plus split and tree costs.

        Returns
        -------
        ndarray of float64, shape (n_samples,)
        """
        return self._costs(self._prepare(X), iteration_range)[0]

    def _costs(self, X, iteration_range=None, node_counts=None):
        t0, t1 = self._tree_range(iteration_range)
        _, offsets, _, nodes = self._flat(t0, t1)
        bitsets = self.cost_model.new_bitsets(X.shape[0])
        cost = np.zeros(X.shape[0])
        self.cost_model.accumulate(X, nodes, offsets, bitsets, cost, node_counts=node_counts,
                                   n_threads=self._n_threads())
        return cost, bitsets

    def cost_report(self, X, *, iteration_range=None):
        """Mean cost, per-input cost, per-feature acquisition rates, features used and the
        fixed coupled cost of predicting ``X``.

        Returns
        -------
        CostReport
        """
        X = self._prepare(X)
        cost, bitsets = self._costs(X, iteration_range)
        used = self.used_features(iteration_range)
        return CostReport(
            mean_cost=float(cost.mean()), per_input_cost=cost,
            acquisition_rate=self.cost_model.acquired_matrix(bitsets).mean(axis=0),
            features_used=[self.feature_names[m] for m in used],
            coupled_cost=self.cost_model.coupled_cost(used),
            feature_names=list(self.feature_names))

    def cost_curve(self, X):
        """Mean prediction cost of ``X`` using rounds ``0..r``, for each round ``r``.

        Returns
        -------
        ndarray of float64, shape (num_boosted_rounds,)
        """
        return self._cost_curve(self._prepare(X))

    def _cost_curve(self, X, node_counts=None):
        _, offsets, _, nodes = self._flat(0, len(self.trees))
        bitsets = self.cost_model.new_bitsets(X.shape[0])
        cost = np.zeros(X.shape[0])
        curve = np.zeros(self.num_boosted_rounds())
        for r in range(self.num_boosted_rounds()):
            t0, t1 = self.iteration_indptr[r], self.iteration_indptr[r + 1]
            round_counts = None if node_counts is None else node_counts[offsets[t0]:offsets[t1]]
            self.cost_model.accumulate(
                X, nodes[offsets[t0]:offsets[t1]], offsets[t0:t1 + 1] - offsets[t0], bitsets,
                cost, node_counts=round_counts, n_threads=self._n_threads())
            curve[r] = cost.mean()
        return curve

    def _staged_scores(self, data, metric):
        """``metric`` of ``data`` using rounds ``0..r``, for each round ``r``."""
        X = self._prepare(data)
        _, offsets, outputs, nodes = self._flat(0, len(self.trees))
        raw = np.tile(self.base_score, (X.shape[0], 1))
        scores = np.zeros(self.num_boosted_rounds())
        for r in range(self.num_boosted_rounds()):
            t0, t1 = self.iteration_indptr[r], self.iteration_indptr[r + 1]
            predict_raw(X, nodes[offsets[t0]:offsets[t1]], offsets[t0:t1 + 1] - offsets[t0],
                        outputs[t0:t1], raw, self._n_threads())
            scores[r] = evaluate_metric(metric, data.label, self._objective.transform(raw),
                                        data.weight)
        return scores

    def best_iteration_within_budget(self, data, budget, *, metric=None):
        """The round whose model (rounds ``0..r``) scores best on ``data`` among those
        whose mean prediction cost on ``data`` is at most ``budget``.

        The cost can only grow with the rounds, so the candidates are the first rounds
        up to the last one within budget. Ties go to the earlier (cheaper) round.

        Parameters
        ----------
        data : Dataset with labels (validation data)
        budget : float
        metric : str, optional
            Default: the objective's metric (e.g. ``mlogloss``).

        Returns
        -------
        BudgetChoice
            ``(iteration, cost, score, metric)``.

        Raises
        ------
        ValueError
            If even the first round costs more than ``budget``.
        """
        if not isinstance(data, Dataset) or data.label is None:
            raise TypeError("data must be a cbudget.Dataset with labels")
        budget = float(budget)
        if not budget >= 0:
            raise ValueError(f"budget must be >= 0, got {budget}")
        if self.num_boosted_rounds() == 0:
            raise ValueError("the model has no rounds")
        metric = metric or self._objective.default_metric
        check_metric(metric, self.objective)
        curve = self.cost_curve(data)
        within = np.flatnonzero(curve <= budget)
        if within.size == 0:
            raise ValueError(f"no round is within budget {budget}: the first round alone "
                             f"costs {curve[0]:.6g} per input")
        scores = self._staged_scores(data, metric)[within]
        best = int(np.argmax(scores) if metric_maximize(metric) else np.argmin(scores))
        r = int(within[best])
        return BudgetChoice(iteration=r, cost=float(curve[r]), score=float(scores[best]),
                            metric=metric)

    def _record_training_costs(self, dtrain, evals, train_cost_curve=None):
        """Per node ``new_acquisitions`` (training inputs that first acquire the node's
        feature there) and the cost ``summary``; run once after training.

        ``train_cost_curve``: the mean training cost after each round when training
        already tracked it (CEGB's acquisition state; the trees then carry their
        ``new_acquisitions``), else both come from routing the training data through
        the trees."""
        if train_cost_curve is None:
            _, offsets, _, nodes = self._flat(0, len(self.trees))
            counts = np.zeros(nodes.shape[0], dtype=np.int64)
            curve = self._cost_curve(dtrain.data, node_counts=counts)
            for t, tree in enumerate(self.trees):
                tree["new_acquisitions"] = counts[offsets[t]:offsets[t + 1]]
            self._flat_cache.clear()
        else:
            curve = np.asarray(train_cost_curve[:self.num_boosted_rounds()], dtype=np.float64)
        used = self.used_features()
        self.summary = {
            "train_cost": float(curve[-1]) if curve.size else 0.0,
            "valid_cost": {name: float(self.predict_cost(data)
                                       .mean()) for name, data in evals},
            "features_used": [self.feature_names[m] for m in used],
            "coupled_cost": self.cost_model.coupled_cost(used),
            "train_cost_per_iteration": curve.tolist(),
        }

    # -- importance -------------------------------------------------------------------
    def feature_importance(self, kind="split", *, iteration_range=None):
        """Per-feature importance.

        Parameters
        ----------
        kind : {"split", "gain", "cost"}
            "split": number of splits on the feature; "gain": total raw gain of those
            splits; "cost": total acquisition cost the training inputs paid for the
            feature (``feature_costs[m]`` times the inputs that acquired it).

        Returns
        -------
        ndarray of float64, shape (n_features,)
        """
        if kind not in IMPORTANCE_KINDS:
            raise ValueError(f"kind must be one of {IMPORTANCE_KINDS}, got {kind!r}")
        t0, t1 = self._tree_range(iteration_range)
        nodes = self._flat(t0, t1)[0]
        splits = nodes[nodes["left"] != -1]
        n = len(self.feature_names)
        if kind == "split":
            return np.bincount(splits["feature"], minlength=n).astype(np.float64)
        if kind == "gain":
            return np.bincount(splits["feature"], weights=splits["gain"], minlength=n)
        acquisitions = np.bincount(splits["feature"], weights=splits["new_acquisitions"],
                                   minlength=n)
        return acquisitions * self.cost_model.feature_costs

    # -- I/O --------------------------------------------------------------------------
    def save_model(self, path):
        """Write the model as JSON (see ``cbudget.model_io``)."""
        from .model_io import save_model
        save_model(self, path)

    def to_dict(self):
        """The JSON document of the model as a dict."""
        from .model_io import booster_to_dict
        return booster_to_dict(self)

    def __repr__(self):
        return (f"<cbudget.Booster algorithm={self.algorithm} objective={self.objective} "
                f"rounds={self.num_boosted_rounds()} trees={len(self.trees)}>")
