"""Forest: a voting ensemble of classification trees (``algorithm="budget_rf"``)."""
import numpy as np

from ._core._predict import predict_node_rows
from ._ensemble import TreeEnsemble
from .objectives import get_objective

__all__ = ["Forest"]


class Forest(TreeEnsemble):
    """A trained random forest of classification trees. Made by :func:`cbudget.train`
    with ``algorithm="budget_rf"`` or by :func:`cbudget.load_model`.

    Each tree is a flat ``NODE_DTYPE`` struct array (node 0 the root, children by node
    id, -1 for leaves); a leaf's ``value`` is its majority class. ``class_counts[t]``
    holds, for every node of tree ``t``, the (bootstrap) training examples of each class
    that reached it. One iteration is one tree: ``iteration_range=(0, k)`` and
    ``forest[:k]`` are the first ``k`` trees.

    Attributes
    ----------
    objective : str
        ``binary:logistic`` or ``multi:softprob`` (the label convention and the metrics;
        a forest is not fitted by a loss).
    num_class : int
        Number of classes (2 for a binary forest).
    class_prior : ndarray of shape (num_class,)
        Class frequencies of the training labels: the prediction of a forest without
        trees (e.g. when one tree already exceeds the budget).
    class_counts : list of ndarray of shape (n_nodes, num_class)
    feature_names, cost_model, params, summary, best_iteration, best_score :
        as for :class:`cbudget.Booster`.
    """

    model_type = "forest"

    def __init__(self, *, objective, num_class, class_prior, feature_names, cost_model,
                 params):
        super().__init__(feature_names=feature_names, cost_model=cost_model, params=params)
        if objective not in ("binary:logistic", "multi:softprob"):
            raise ValueError(f"a Forest is a classifier; objective {objective!r} is not "
                             "binary:logistic or multi:softprob")
        self.objective = objective
        self.num_class = int(num_class)
        if self.num_class < 2 or (objective == "binary:logistic" and self.num_class != 2):
            raise ValueError(f"num_class {num_class} does not fit objective {objective!r}")
        self._objective = get_objective(objective, self.num_class
                                        if objective == "multi:softprob" else None)
        self.class_prior = np.asarray(class_prior, dtype=np.float64)
        if self.class_prior.shape != (self.num_class,):
            raise ValueError(f"class_prior must have {self.num_class} entries")
        self.class_counts = []

    # -- building ---------------------------------------------------------------------
    def _append_tree(self, tree, class_counts):
        class_counts = np.ascontiguousarray(class_counts, dtype=np.float64)
        if class_counts.shape != (tree.shape[0], self.num_class):
            raise ValueError("class_counts must have one row per node and one column per "
                             "class")
        leaves = tree["left"] == -1
        tree["value"][leaves] = np.argmax(class_counts[leaves], axis=1)
        super()._append_tree(tree, 0)
        self.class_counts.append(class_counts)
        self._end_round()

    def _slice_extra(self, t0, t1):
        self.class_counts = [c.copy() for c in self.class_counts[t0:t1]]

    def num_trees(self):
        """Number of trees."""
        return self.num_iterations()

    # -- prediction -------------------------------------------------------------------
    def _node_table(self, t0, t1, what):
        """Per node of trees [t0, t1): its class counts (``what="counts"``), the one-hot
        majority class stored as the leaf's ``value`` (``"votes"``; internal nodes are
        never reached as leaves), or both side by side (``"both"``, 2 x num_class
        columns: one traversal gives both)."""
        key = (what, t0, t1)
        if key not in self._flat_cache:
            counts = (np.concatenate(self.class_counts[t0:t1]) if t1 > t0
                      else np.zeros((0, self.num_class)))
            votes = np.zeros_like(counts)
            votes[np.arange(counts.shape[0]),
                  self._flat(t0, t1)[0]["value"].astype(np.intp)] = 1.0
            self._flat_cache[key] = {"counts": counts, "votes": votes,
                                     "both": np.hstack([counts, votes])}[what]
        return self._flat_cache[key]

    def _accumulate(self, X, iteration_range, what):
        """The node table rows (see :meth:`_node_table`) of the leaves each input
        reaches, summed over the trees."""
        t0, t1 = self._tree_range(iteration_range)
        _, offsets, _, nodes = self._flat(t0, t1)
        table = self._node_table(t0, t1, what)
        out = np.zeros((X.shape[0], table.shape[1]))
        predict_node_rows(X, nodes, offsets, table, out, self._n_threads())
        return out

    def predict(self, X, *, iteration_range=None, pred_leaf=False):
        """Predicted class by majority vote of the trees (each tree votes for the
        majority class of the leaf the input reaches; ties go to the lower class).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), DataFrame, sparse or Dataset
        iteration_range : (begin, end), optional
            Use trees ``begin <= t < end`` (``end = 0``: up to the last).
        pred_leaf : bool
            Return the leaf index reached in each tree, int32 (n_samples, n_trees).

        Returns
        -------
        ndarray of int64, shape (n_samples,)
            Classes in ``[0, num_class)``; a forest without trees predicts the most
            frequent training class.
        """
        X = self._prepare(X)
        if pred_leaf:
            return self._leaf_indices(X, iteration_range)
        votes = self._accumulate(X, iteration_range, "votes")
        return np.argmax(self._normalise(votes), axis=1).astype(np.int64)

    def predict_proba(self, X, *, iteration_range=None):
        """Class probabilities: the training examples of each class in the leaves the
        input reaches, summed over the trees and normalised (the paper's confidence).

        Returns
        -------
        ndarray of float64, shape (n_samples, num_class)
            A forest without trees gives the training class frequencies.
        """
        return self._normalise(self._accumulate(self._prepare(X), iteration_range,
                                                "counts"))

    def _normalise(self, table):
        """Rows of summed class counts or votes -> probabilities; the class prior where
        nothing was summed (no trees, or only zero-weight examples in the leaves)."""
        totals = table.sum(axis=1, keepdims=True)
        return np.where(totals > 0, table / np.where(totals > 0, totals, 1.0),
                        self.class_prior)

    def _metric_predictions(self, metric, counts, votes):
        """What ``metric`` takes, from summed leaf class counts and votes: the error
        metrics score the vote (as :meth:`predict`), the others the probabilities of
        :meth:`predict_proba`; P(class 1) for a binary forest."""
        proba = self._normalise(votes if metric in ("error", "merror") else counts)
        return proba[:, 1] if self.objective == "binary:logistic" else proba

    def __repr__(self):
        return (f"<cbudget.Forest algorithm={self.algorithm} num_class={self.num_class} "
                f"trees={self.num_trees()}>")
