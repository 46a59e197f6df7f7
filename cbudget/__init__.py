"""cbudget: tree learners that know what a prediction costs.

Quick use::

    import cbudget
    dtrain = cbudget.Dataset(X, y, feature_costs=costs)
    booster = cbudget.train({"objective": "binary:logistic"}, dtrain, 100)
    booster.predict(X_test), booster.predict_cost(X_test)
"""
from ._version import __version__
from .booster import Booster
from .callback import EarlyStopping, EvaluationMonitor, TrainingCallback
from .costs import CostModel, CostReport
from .dataset import Dataset
from .model_io import load_model
from .training import train

__all__ = [
    "__version__",
    "Booster",
    "CostModel",
    "CostReport",
    "Dataset",
    "EarlyStopping",
    "EvaluationMonitor",
    "TrainingCallback",
    "load_model",
    "train",
]
