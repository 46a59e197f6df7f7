"""
Choosing a budget with a cost path
==================================

:func:`cbudget.cost_path` trains one model per cost trade-off (from the largest, where no
feature is worth its cost, down) and scores each on a validation set. The path's Pareto
front (:func:`cbudget.plot_frontier`) shows what each extra unit of cost buys;
:meth:`cbudget.CostPath.select` picks the best model within a budget.
"""
import matplotlib.pyplot as plt
import numpy as np

import cbudget
from cbudget.datasets import load_letters, train_valid_test_split

X, y, names = load_letters()
label = np.isin(y, [0, 4, 8, 14, 20]).astype(np.float64)
train, valid, test = train_valid_test_split(len(X), [3000, 2000, 4000], seed=1)
costs = np.linspace(1.0, 8.0, X.shape[1])
dtrain = cbudget.Dataset(X[train], label[train], feature_costs=costs, feature_names=names)
dvalid = cbudget.Dataset(X[valid], label[valid], feature_costs=costs, feature_names=names)

# %%
# Eight trade-offs, 30 rounds each.
params = {"algorithm": "cegb", "objective": "binary:logistic", "max_depth": 3, "seed": 0}
path = cbudget.cost_path(params, dtrain, dvalid, n_points=8, num_boost_round=30)
for lam, cost, score in zip(path.lambdas, path.costs, path.scores):
    print(f"lambda {lam:10.4g}: mean cost {cost:6.2f}, {path.metric} {score:.4f}")

# %%
# The best model that costs at most 20 per input on the validation set:
model = path.select(budget=20.0)
print("test cost", model.predict_cost(X[test]).mean())
cbudget.plot_frontier({"cegb": path})
plt.show()
