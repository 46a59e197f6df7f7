"""Other libraries' tree models in cbudget, and cbudget's models out to the runtimes that
serve them (docs/architecture.md, "Interoperability").

* :mod:`.from_lightgbm`, :mod:`.from_xgboost`, :mod:`.from_sklearn`: a LightGBM, XGBoost
  or scikit-learn model as a cbudget :class:`~cbudget.Booster` or
  :class:`~cbudget.Forest` that predicts the same, with a cost model; cost reports,
  acquisitions and on-demand prediction then work on it (``cbudget.from_lightgbm``,
  ``cbudget.from_xgboost``, ``cbudget.from_sklearn``).
* :mod:`.to_xgboost`, :mod:`.to_lightgbm`, :mod:`.to_onnx`: a booster as an XGBoost
  JSON / UBJSON model or a LightGBM text model, a booster or forest as an ONNX model
  (``save_model(path, format="xgboost" | "lightgbm" | "onnx")``).
* :mod:`.audit`: model files of any library, and what on-demand prediction saves (what
  ``cbudget report`` shows).
* :mod:`.trees`: what the importers share.

The package itself imports none of its modules: ``cbudget`` imports the exporters,
which register their formats with :func:`cbudget.model_io.register_exporter`, and the
importers import ``cbudget.booster``.
"""
