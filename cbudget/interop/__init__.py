"""Other libraries' tree models in cbudget, and cbudget's boosters out to XGBoost
(docs/architecture.md, "Interoperability").

* :func:`from_lightgbm`, :func:`from_xgboost`, :func:`from_sklearn`: a LightGBM, XGBoost
  or scikit-learn model as a cbudget :class:`~cbudget.Booster` or
  :class:`~cbudget.Forest` that predicts the same, with a cost model; cost reports,
  acquisitions and on-demand prediction then work on it.
* :func:`save_xgboost` (``Booster.save_model(path, format="xgboost")``): a booster as an
  XGBoost JSON model.
* :func:`load_foreign_model`, :func:`on_demand_savings`: what ``cbudget report`` audits.
"""
from .audit import foreign_model_kind, from_any, load_foreign_model, on_demand_savings
from .from_lightgbm import from_lightgbm
from .from_sklearn import from_sklearn
from .from_xgboost import from_xgboost
from .to_xgboost import save_xgboost

__all__ = ["from_lightgbm", "from_xgboost", "from_sklearn", "save_xgboost",
           "load_foreign_model", "foreign_model_kind", "from_any", "on_demand_savings"]
