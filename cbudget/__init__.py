"""cbudget: tree learners that know what a prediction costs.

Quick use::

    import cbudget
    dtrain = cbudget.Dataset(X, y, feature_costs=costs)
    booster = cbudget.train({"objective": "binary:logistic"}, dtrain, 100)
    booster.predict(X_test), booster.predict_cost(X_test)

Every model type (Booster, Forest, ClassifierTree, Cascade, GatedModel) is a
:class:`cbudget.Model`. The design (layers, cost model, model files, adding an algorithm)
is in docs/architecture.md. ``from_lightgbm``, ``from_xgboost`` and ``from_sklearn`` bring
other libraries' tree models in (cost reports and on-demand prediction on them).
"""
from . import _threads
from ._version import __version__

try:
    # compiled: fails in an unbuilt source tree; the first import of the kernels starts
    # their OpenMP runtime, which reads its wait policy then (_threads)
    with _threads.passive_openmp_waiting():
        from ._core import _openmp_helpers, _types  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on how cbudget was run
    raise ImportError(
        "cbudget's compiled kernels are missing: this looks like an unbuilt source tree "
        f"({__path__[0]}). Install with `pip install .` and run from another directory "
        "(or use the `cbudget` command), or build in place with "
        "`python setup.py build_ext --inplace`.") from exc

from . import (
    datasets,  # cbudget.datasets: the shipped and generated data sets
    serving,  # cbudget.serving: Predictor, the request batcher
)
from ._model import BudgetChoice, CostParts, Model, NotApplicableError
from .adapt import ExternalModel, GatedModel, LinearClassifier
from .booster import Booster
from .callback import (
    BudgetStopping,
    EarlyStopping,
    EvaluationMonitor,
    ProgressMonitor,
    TrainingCallback,
)
from .cost_path import CostPath, cost_path
from .costs import CostModel, CostReport
from .cstc import Cascade, ClassifierTree
from .dataset import Dataset
from .exits import ExitChoice, ExitRules
from .forest import Forest
from .interop import (  # noqa: F401 - the exporters register their model formats
    to_lightgbm,
    to_onnx,
    to_xgboost,
)
from .interop.from_lightgbm import from_lightgbm
from .interop.from_sklearn import from_sklearn
from .interop.from_xgboost import from_xgboost
from .model_io import ExportWarning, load_model
from .on_demand import FeatureSource, FetchCall, FetchFailure
from .training import lambda_max, train

__all__ = [
    "__version__",
    "Booster",
    "BudgetChoice",
    "BudgetStopping",
    "Cascade",
    "ClassifierTree",
    "CostModel",
    "CostParts",
    "CostPath",
    "CostReport",
    "Dataset",
    "EarlyStopping",
    "EvaluationMonitor",
    "ExitChoice",
    "ExitRules",
    "ExternalModel",
    "FeatureSource",
    "FetchCall",
    "FetchFailure",
    "Forest",
    "GatedModel",
    "LinearClassifier",
    "Model",
    "NotApplicableError",
    "ExportWarning",
    "ProgressMonitor",
    "TrainingCallback",
    "cost_path",
    "datasets",
    "from_lightgbm",
    "from_sklearn",
    "from_xgboost",
    "lambda_max",
    "load_model",
    "serving",
    "train",
]
