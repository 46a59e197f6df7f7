"""Other libraries' tree models in cbudget, and cbudget's boosters out to XGBoost
(docs/architecture.md, "Interoperability").

* :mod:`.from_lightgbm`, :mod:`.from_xgboost`, :mod:`.from_sklearn`: a LightGBM, XGBoost
  or scikit-learn model as a cbudget :class:`~cbudget.Booster` or
  :class:`~cbudget.Forest` that predicts the same, with a cost model; cost reports,
  acquisitions and on-demand prediction then work on it (``cbudget.from_lightgbm``,
  ``cbudget.from_xgboost``, ``cbudget.from_sklearn``).
* :mod:`.to_xgboost`: a booster as an XGBoost JSON model
  (``Booster.save_model(path, format="xgboost")``).
* :mod:`.audit`: model files of any library, and what on-demand prediction saves (what
  ``cbudget report`` shows).
* :mod:`.trees`: what the importers share.

The package itself imports none of its modules: ``cbudget`` imports the exporter,
which registers the "xgboost" format with :func:`cbudget.model_io.register_exporter`,
and the importers import ``cbudget.booster``.
"""
