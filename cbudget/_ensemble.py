"""What every tree ensemble shares (Booster, Forest): trees as flat ``NODE_DTYPE`` struct
arrays grouped in iterations, input checks, and the cost accounting of ARCHITECTURE
section 2 (per-input cost, cost reports, cost after each iteration, used features)."""
import copy

import numpy as np

from ._core._openmp_helpers import resolve_n_threads
from ._core._predict import predict_leaf
from ._core._types import NODE_DTYPE, compact_nodes
from .dataset import prediction_input

__all__ = ["TreeEnsemble"]

IMPORTANCE_KINDS = ("split", "gain", "cost")


class TreeEnsemble:
    """Base class of the tree models.

    Each tree is a flat ``NODE_DTYPE`` struct array (node 0 the root, children by node
    id, -1 for leaves). Iteration ``r`` holds trees
    ``iteration_indptr[r]:iteration_indptr[r + 1]`` (a boosting round: one tree per
    output; a forest: one tree).
    """

    def __init__(self, *, feature_names, cost_model, params):
        self.feature_names = list(feature_names)
        self.cost_model = cost_model
        self.params = dict(params)
        self.algorithm = self.params.get("algorithm", "gbdt")
        self.trees = []
        self.tree_outputs = []
        self.iteration_indptr = [0]
        self.best_iteration = None   # set by early stopping
        self.best_score = None
        self.summary = {}
        self._flat_cache = {}

    # -- building ---------------------------------------------------------------------
    def _append_tree(self, tree, output=0):
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
    def num_iterations(self):
        """Number of iterations (boosting rounds; trees of a forest)."""
        return len(self.iteration_indptr) - 1

    def num_features(self):
        return len(self.feature_names)

    def _tree_range(self, iteration_range):
        n_iterations = self.num_iterations()
        if iteration_range is None:
            begin, end = 0, n_iterations
        else:
            try:
                begin, end = (int(v) for v in iteration_range)
            except (TypeError, ValueError):
                raise TypeError("iteration_range must be a pair (begin, end) of ints") from None
            if end == 0:
                end = n_iterations
            if not 0 <= begin <= end <= n_iterations:
                raise ValueError(f"iteration_range {tuple(iteration_range)} is out of "
                                 f"[0, {n_iterations}]")
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
        """``model[a:b]``: a new model with iterations ``a`` to ``b - 1``; ``model[i]``:
        iteration ``i`` alone. Everything else (a booster's base score, a forest's
        classes) is kept; ``best_iteration`` is dropped."""
        n = self.num_iterations()
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            if key < 0:
                key += n
            if not 0 <= key < n:
                raise IndexError(f"iteration {key} out of range for {n} iterations")
            key = slice(key, key + 1)
        if not isinstance(key, slice):
            raise TypeError(f"a {type(self).__name__} is indexed by an int or a slice")
        begin, end, step = key.indices(n)
        if step != 1:
            raise ValueError(f"slicing a {type(self).__name__} needs step 1")
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
        sliced._slice_extra(t0, t1)
        return sliced

    def _slice_extra(self, t0, t1):
        """Hook for subclasses: keep per-tree data of trees ``[t0, t1)`` after slicing."""

    # -- prediction cost --------------------------------------------------------------
    def _n_threads(self):
        return resolve_n_threads(self.params.get("n_jobs"))

    def _prepare(self, X):
        return prediction_input(X, self.feature_names)

    def _leaf_indices(self, X, iteration_range):
        """int32 (n_samples, n_trees): the tree-local leaf each input reaches."""
        t0, t1 = self._tree_range(iteration_range)
        _, offsets, _, nodes = self._flat(t0, t1)
        out = np.zeros((X.shape[0], t1 - t0), dtype=np.int32)
        predict_leaf(X, nodes, offsets, out, self._n_threads())
        return out

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

    def acquisitions(self, X, *, iteration_range=None):
        """The features each input pays for: bool (n_samples, n_features), True where an
        input's paths through the trees test the feature."""
        X = self._prepare(X)
        return self.cost_model.acquired_matrix(self._costs(X, iteration_range)[1]).astype(bool)

    def _cost_parts(self, X):
        """(n_samples, n_features) 0/1 matrix of the features each input acquires, and
        its split and tree costs: what a gated model combines with its other parts'."""
        cost, bitsets = self._costs(X)
        acquired = self.cost_model.acquired_matrix(bitsets)
        return acquired, self.cost_model.structural_costs(cost, acquired)

    def cost_report(self, X, *, iteration_range=None):
        """Mean cost, per-input cost, per-feature acquisition rates, features used and the
        fixed coupled cost of predicting ``X``.

        Returns
        -------
        CostReport
        """
        X = self._prepare(X)
        cost, bitsets = self._costs(X, iteration_range)
        return self.cost_model.report(cost, self.cost_model.acquired_matrix(bitsets),
                                      self.used_features(iteration_range), self.feature_names)

    def cost_curve(self, X):
        """Mean prediction cost of ``X`` using iterations ``0..r``, for each ``r``.

        Returns
        -------
        ndarray of float64, shape (num_iterations,)
        """
        return self._cost_curve(self._prepare(X))

    def _cost_curve(self, X, node_counts=None):
        _, offsets, _, nodes = self._flat(0, len(self.trees))
        bitsets = self.cost_model.new_bitsets(X.shape[0])
        cost = np.zeros(X.shape[0])
        curve = np.zeros(self.num_iterations())
        for r in range(self.num_iterations()):
            t0, t1 = self.iteration_indptr[r], self.iteration_indptr[r + 1]
            round_counts = None if node_counts is None else node_counts[offsets[t0]:offsets[t1]]
            self.cost_model.accumulate(
                X, nodes[offsets[t0]:offsets[t1]], offsets[t0:t1 + 1] - offsets[t0], bitsets,
                cost, node_counts=round_counts, n_threads=self._n_threads())
            curve[r] = cost.mean()
        return curve

    def _record_training_costs(self, dtrain, evals, train_cost_curve=None):
        """Per node ``new_acquisitions`` (training inputs that first acquire the node's
        feature there) and the cost ``summary``; run once after training.

        ``train_cost_curve``: the mean training cost after each iteration when training
        already tracked it (the cost-aware boosters' acquisition state; the trees then
        carry their ``new_acquisitions``), else both come from routing the training data
        through the trees."""
        if train_cost_curve is None:
            _, offsets, _, nodes = self._flat(0, len(self.trees))
            counts = np.zeros(nodes.shape[0], dtype=np.int64)
            curve = self._cost_curve(dtrain.data, node_counts=counts)
            for t, tree in enumerate(self.trees):
                tree["new_acquisitions"] = counts[offsets[t]:offsets[t + 1]]
            self._flat_cache.clear()
        else:
            curve = np.asarray(train_cost_curve[:self.num_iterations()], dtype=np.float64)
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
            splits (a forest: their minimum impurity decrease); "cost": total
            acquisition cost the training inputs paid for the feature
            (``feature_costs[m]`` times the inputs that acquired it).

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
        from .model_io import model_to_dict
        return model_to_dict(self)
