"""
A cost-aware model on a DataFrame
=================================

Each column of a DataFrame gets a cost (what measuring that feature costs for one
input); a CEGB model (cost-efficient gradient boosting) then pays for a feature in its
splits' gains, and reads the cheap features more than the expensive ones. The same data
with plain gradient boosting (``gbdt``) shows what the costs change.
"""
import numpy as np
import pandas as pd

import cbudget
from cbudget.datasets import load_letters, train_valid_test_split

# %%
# The UCI Letters data (shipped with cbudget), as a binary task: is the letter a vowel?
X, y, names = load_letters()
frame = pd.DataFrame(X, columns=names)
label = np.isin(y, [0, 4, 8, 14, 20]).astype(np.float64)    # A, E, I, O, U
train, test = train_valid_test_split(len(frame), [4000, 4000], seed=0)

# %%
# Costs per column, by name: the box's position and size are cheap, the edge counts
# expensive.
costs = {name: 1.0 for name in names}
costs.update({name: 10.0 for name in ["x-ege", "xegvy", "y-ege", "yegvx"]})
dtrain = cbudget.Dataset(frame.iloc[train], label[train], feature_costs=costs)

# %%
# The trade-off is in units of the loss's gain per unit of cost: :func:`cbudget.lambda_max`
# is the one at which no feature is worth its cost, so a fraction of it buys some.
params = {"objective": "binary:logistic", "max_depth": 4, "seed": 0, "algorithm": "cegb"}
tradeoff = 0.02 * cbudget.lambda_max(params, dtrain)
print(f"cost_tradeoff {tradeoff:.3g}")

# %%
# Train both ways; the cost of a prediction is the sum of the costs of the features its
# path reads (each paid once per input).
plain = cbudget.train({**params, "algorithm": "gbdt"}, dtrain, 60)
aware = cbudget.train({**params, "cost_tradeoff": tradeoff}, dtrain, 60)
X_test, y_test = frame.iloc[test], label[test]
for name, model in [("gbdt", plain), ("cegb", aware)]:
    accuracy = np.mean((model.predict(X_test) > 0.5) == y_test)
    print(f"{name}: accuracy {accuracy:.3f}, mean cost {model.predict_cost(X_test).mean():.1f}")

# %%
# What each model reads: the cost report gives the mean cost per input and, for each
# feature, the share of inputs that acquire it.
print(aware.cost_report(X_test))
