"""Cost-aware explanations: what each feature contributed to an input's prediction
(TreeSHAP, as ``pred_contrib``) next to what the input paid to acquire it
(docs/architecture.md, "Explanations").

>>> e = booster.explain(X_test)
>>> e.contributions[0, 0]        # input 0, output 0: one contribution per feature
>>> e.feature_cost[0]            # what input 0 paid for each feature
>>> cbudget.plotting.plot_explanation(e, 0)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .costs import CostModel

__all__ = ["Explanation", "paid_per_feature"]


def paid_per_feature(cost_model: CostModel, acquired: np.ndarray) -> np.ndarray:
    """(n_samples, n_features): the acquisition cost each input paid for each feature,
    from the 0/1 matrix ``acquired``: the feature's own cost where acquired, plus an
    equal share of its cost group's cost among the group's features the input acquired
    (the group is paid once, for all of them). Each row sums to the input's acquisition
    cost (:meth:`cbudget.CostModel.acquisition_costs`)."""
    acquired = np.asarray(acquired, dtype=np.float64)
    paid = acquired * cost_model.feature_costs
    if cost_model.n_groups:
        members = cost_model.group_members()
        bought = acquired @ members                 # acquired members per input and group
        share = cost_model.group_costs / np.where(bought > 0, bought, 1.0)
        paid += acquired * (share @ members.T)      # each acquired member's share
    return paid


@dataclass(frozen=True)
class Explanation:
    """Per input and feature, the contribution to the prediction and the acquisition
    cost paid (from :meth:`cbudget.Booster.explain` / :meth:`cbudget.Forest.explain`).

    Attributes
    ----------
    feature_names : list of str
    contributions : ndarray of shape (n_samples, n_outputs, n_features)
        TreeSHAP values (``pred_contrib`` without its bias column): a booster's outputs
        are its raw scores (one for regression and binary models, one per class for
        multi-class ones), a forest's its classes.
    expected_value : ndarray of shape (n_outputs,)
        The bias: each output's expectation over the training data (path-dependent);
        ``contributions.sum(axis=2) + expected_value`` is the explained output.
    acquired : bool ndarray of shape (n_samples, n_features)
        The features each input's paths test, so pays for (:meth:`acquisitions`).
    feature_cost : ndarray of shape (n_samples, n_features)
        What each input paid for each feature (:func:`paid_per_feature`; 0 where not
        acquired).
    other_cost : ndarray of shape (n_samples,)
        Split and tree costs: ``feature_cost.sum(axis=1) + other_cost`` is
        :meth:`predict_cost`.

    A feature can contribute without being paid for: TreeSHAP credits a feature through
    the branches the input did not take (the expectation over them), while the input
    pays only for the features on its paths.
    """

    feature_names: list[str]
    contributions: np.ndarray
    expected_value: np.ndarray
    acquired: np.ndarray
    feature_cost: np.ndarray
    other_cost: np.ndarray

    @property
    def output(self) -> np.ndarray:
        """(n_samples, n_outputs): the explained output (the booster's raw margin, the
        forest's per-tree class counts or votes)."""
        return self.contributions.sum(axis=2) + self.expected_value

    @property
    def cost(self) -> np.ndarray:
        """(n_samples,): each input's prediction cost."""
        return self.feature_cost.sum(axis=1) + self.other_cost

    def top_features(self, index: int, output: int = 0, k: int = 10
                     ) -> list[tuple[str, float, float, bool]]:
        """The ``k`` features of input ``index`` with the largest absolute contribution
        to ``output``: (name, contribution, cost paid, acquired), largest first."""
        n_samples, n_outputs, _ = self.contributions.shape
        if not -n_samples <= index < n_samples:
            raise IndexError(f"input {index} out of range for {n_samples} inputs")
        if not 0 <= output < n_outputs:
            raise IndexError(f"output {output} out of range for {n_outputs} outputs")
        values = self.contributions[index, output]
        order = np.argsort(-np.abs(values), kind="stable")[:max(int(k), 0)]
        return [(self.feature_names[m], float(values[m]), float(self.feature_cost[index, m]),
                 bool(self.acquired[index, m])) for m in order.tolist()]
