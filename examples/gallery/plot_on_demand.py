"""
Predicting on demand
====================

A model's ``predict`` takes a :class:`cbudget.FeatureSource` in place of ``X``: features
are then fetched only when an input's path reaches a split on them. Here the "fetch" reads
from an array and counts what it is asked for; in practice it would query a service, a
database or a lab.
"""
import numpy as np

import cbudget
from cbudget.datasets import make_quadrants

# the CSTC paper's regression data: four expensive columns, two cheap ones
X, y = make_quadrants(3000, seed=0)
costs = [10.0, 10.0, 10.0, 10.0, 1.0, 1.0]
dtrain = cbudget.Dataset(X[:2000], y[:2000], feature_costs=costs)
params = {"algorithm": "cegb", "objective": "reg:squarederror", "seed": 0}
params["cost_tradeoff"] = 1e-4 * cbudget.lambda_max(params, dtrain)
model = cbudget.train(params, dtrain, 30)
X_new = X[2000:]

asked = []


def fetch(features, rows):
    """Return the requested features of the requested inputs (and log the call)."""
    asked.append((list(features), len(rows)))
    return X_new[np.ix_(rows, features)]


source = cbudget.FeatureSource(fetch, len(X_new))
on_demand = model.predict(source)

# %%
# The predictions are those of the whole matrix; far fewer values were fetched: each input
# reads the two cheap signs, then only its own quadrant's expensive column (cost 12, the
# optimum of this data).
print("same predictions:", np.allclose(on_demand, model.predict(X_new)))
print(f"fetched {source.acquired.sum()} of {X_new.size} values in {len(asked)} calls:")
for features, n_rows in asked:
    print(f"  features {features} of {n_rows} inputs")
print("mean cost per input:", source.cost().mean())
