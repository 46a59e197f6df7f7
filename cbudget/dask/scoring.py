"""Scoring, on-demand prediction, cost paths and parameter sweeps on a Dask cluster
(docs/architecture.md, "Dask").

Prediction (:func:`predict`, :func:`predict_proba`, :func:`predict_cost`,
:func:`acquisitions`) maps the model's own method over the blocks of a Dask array or the
partitions of a Dask DataFrame, lazily: the result is a Dask array whose blocks equal
the local method's output on the same rows, bit for bit. The model is scattered to
every worker once per call and the graph holds a reference to it, not a copy per block.
Before anything is sent, the method runs here on one row of zeros typed as the input:
a wrong number of features, other feature names or an unknown option raise the local
model's own error at once, and that row gives the shape and dtype of the output.

:func:`predict_on_demand` builds a :class:`cbudget.FeatureSource` per partition on the
workers, around a ``fetch`` that runs there. :func:`cost_path` and :func:`sweep` train
one model per task; the function a task runs holds the training data and is sent to
each worker once (:class:`_ClusterExecutor`).
"""
from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Executor
from concurrent.futures import Future as LocalFuture
from functools import partial
from typing import Any, NamedTuple, TypeAlias, TypeVar

import numpy as np

try:
    import dask.array as da
    import dask.dataframe as dd
    import pandas as pd
    from dask import delayed
    from distributed import Client
    from distributed import Future as ClusterFuture
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(f"cbudget.dask needs dask and distributed ({exc}): "
                      "pip install cbudget[dask]") from exc

from .._model import Model, NotApplicableError
from ..cost_path import CostPath, ScoredModel, train_scored
from ..cost_path import cost_path as local_cost_path
from ..dataset import Dataset
from ..on_demand import FeatureSource
from ..training import check_evals

__all__ = ["predict", "predict_proba", "predict_cost", "acquisitions", "predict_on_demand",
           "OnDemandPrediction", "cost_path", "sweep"]

DaskMatrix: TypeAlias = "da.Array | dd.DataFrame"

# the methods a block or a partition can run, by name
METHODS = ("predict", "predict_proba", "predict_cost", "acquisitions")
PROBABILITY_OBJECTIVES = ("binary:logistic", "multi:softprob")


class OnDemandPrediction(NamedTuple):
    """What :func:`predict_on_demand` returns: Dask arrays of the same rows."""
    predictions: da.Array   # what the method returns on the full matrix
    cost: da.Array          # float64 (n,): FeatureSource.cost() of each input
    acquired: da.Array      # bool (n, n_features): the pairs fetched (known ones excluded)


# -- checks ------------------------------------------------------------------------------
def check_client(client: Any) -> None:
    """TypeError unless ``client`` is a ``distributed.Client`` (every function of
    cbudget.dask checks it first)."""
    if not isinstance(client, Client):
        raise TypeError(f"client must be a distributed.Client, got {type(client).__name__}")


def _check_model(model: Any) -> None:
    if not isinstance(model, Model):
        raise TypeError("model must be a cbudget model (cbudget.Model: Booster, Forest, "
                        f"ClassifierTree, Cascade, GatedModel), got {type(model).__name__}")


def _check_method(model: Model, method: str, options: Mapping[str, Any]) -> None:
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if method != "predict_proba" or hasattr(model, "predict_proba"):
        return
    # from predict: probabilities only when the objective gives them, and no option
    # (output_margin, pred_leaf ...) that makes predict return something else
    if model.objective not in PROBABILITY_OBJECTIVES:
        raise NotApplicableError(f"predict_proba does not apply to a {model.objective} "
                                 f"{type(model).__name__}: it gives no probabilities")
    other = sorted(set(options) - {"iteration_range", "early_exit"})
    if other:
        raise TypeError(f"predict_proba of a {type(model).__name__} takes iteration_range "
                        f"and early_exit only, got {other}")


def _matrix(X: Any) -> DaskMatrix:
    """``X`` checked: a Dask DataFrame, or a 2-D Dask array chunked along rows only (its
    columns rechunked into one block otherwise)."""
    if isinstance(X, dd.DataFrame):
        return X
    if not isinstance(X, da.Array):
        raise TypeError("X must be a dask.array.Array or a dask.dataframe.DataFrame, got "
                        f"{type(X).__name__} (for data in memory, use the model's methods)")
    if X.ndim != 2 or np.isnan(X.shape[1]):
        raise ValueError(f"X must be a 2-D Dask array (n_samples, n_features) of known "
                         f"width, got shape {X.shape}")
    return X if X.numblocks[1] == 1 else X.rechunk({1: -1})


def _zero_row(X: DaskMatrix) -> np.ndarray | pd.DataFrame:
    """One row of zeros of the type, columns and dtypes of ``X``'s blocks."""
    if isinstance(X, da.Array):
        return np.zeros((1, X.shape[1]), dtype=X.dtype)
    return pd.DataFrame(np.zeros((1, len(X.columns))), columns=X.columns).astype(
        dict(X.dtypes))


def _empty_output(model: Model, method: str, row: Any, options: Mapping[str, Any]
                  ) -> np.ndarray:
    """The method run on the one row ``row`` here (its errors raised now), as an empty
    array of the output's shape and dtype."""
    _check_method(model, method, options)
    out = _score(model, row, method, options)
    if not isinstance(out, np.ndarray) or out.ndim not in (1, 2) or out.shape[0] != 1:
        raise TypeError(f"{method} with options {sorted(options)} returns "
                        f"{type(out).__name__}: cbudget.dask maps methods that return one "
                        "array of a row per input (not return_route=True)")
    return np.empty((0,) + out.shape[1:], dtype=out.dtype)


# -- what runs on the workers -----------------------------------------------------------
def _score(model: Model, X: Any, method: str, options: Mapping[str, Any]) -> Any:
    """``method`` of ``model`` on ``X`` (a block, a partition or a FeatureSource)."""
    if method == "predict_proba" and not hasattr(model, "predict_proba"):
        # as cbudget's scikit-learn classifiers: a column per class
        p = model.predict(X, **options)
        return p if p.ndim == 2 else np.column_stack([1.0 - p, p])
    return getattr(model, method)(X, **options)


def _score_block(block: Any, model: Model, *, method: str, options: Mapping[str, Any],
                 empty: np.ndarray) -> np.ndarray:
    if len(block) == 0:     # the models reject empty input; Dask partitions can be empty
        return empty
    return _score(model, block, method, options)


def _on_demand_part(part: Any, model: Model, fetch: Callable, *, method: str,
                    options: Mapping[str, Any], known: Sequence[str] | None,
                    max_workers: int, empty: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Predict the inputs of one partition of keys on a FeatureSource of its own."""
    n = len(part)
    if n == 0:
        return empty, np.zeros(0), np.zeros((0, model.num_features()), dtype=bool)

    def keys_of(rows: np.ndarray) -> Any:
        return part.iloc[rows] if isinstance(part, (pd.DataFrame, pd.Series)) else part[rows]

    source = FeatureSource(lambda features, rows: fetch(features, keys_of(rows)), n,
                           known=None if known is None else part[list(known)],
                           max_workers=max_workers)
    out = _score(model, source, method, options)
    return out, source.cost(), source.acquired


def _call(fn: Callable, *args: Any, **kwargs: Any) -> Any:
    return fn(*args, **kwargs)


class _ClusterExecutor(Executor):
    """A ``concurrent.futures`` executor of the cluster whose tasks get each function
    from the workers' memory: it is scattered to all of them at its first submission,
    with the data it holds (the training data of :func:`cost_path` and :func:`sweep`),
    instead of travelling with every task. Shutting it down releases them."""

    def __init__(self, client: Client):
        self._client = client
        self._executor = client.get_executor()
        # id(function) -> (the function, kept alive so that its id is not reused; its
        # scattered copy)
        self._sent: dict[int, tuple[Callable, ClusterFuture]] = {}

    def submit(self, fn: Callable, /, *args: Any, **kwargs: Any) -> LocalFuture:
        if id(fn) not in self._sent:
            self._sent[id(fn)] = (fn, self._client.scatter(fn, broadcast=True, hash=False))
        return self._executor.submit(_call, self._sent[id(fn)][1], *args, **kwargs)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._executor.shutdown(wait=wait and not cancel_futures)
        self._sent.clear()


# -- prediction --------------------------------------------------------------------------
def _map_method(client: Client, model: Model, X: Any, method: str,
                options: Mapping[str, Any]) -> da.Array:
    check_client(client)
    _check_model(model)
    X = _matrix(X)
    empty = _empty_output(model, method, _zero_row(X), options)
    run = partial(_score_block, method=method, options=dict(options), empty=empty)
    scattered = client.scatter(model, broadcast=True, hash=False)
    token = f"cbudget-{method}"
    if isinstance(X, dd.DataFrame):
        return X.map_partitions(run, scattered, meta=empty, token=token)
    if empty.ndim == 1:
        return X.map_blocks(run, scattered, drop_axis=1, chunks=(X.chunks[0],), meta=empty,
                            token=token)
    return X.map_blocks(run, scattered, chunks=(X.chunks[0], (empty.shape[1],)), meta=empty,
                        token=token)


_METHOD_DOC = """{summary} (docs/architecture.md, "Dask").
{more}
    Parameters
    ----------
    client : distributed.Client
    model : cbudget.Model
        Any cbudget model (Booster, Forest, ClassifierTree, Cascade, GatedModel),
        scattered to every worker once.
    X : dask.array.Array or dask.dataframe.DataFrame
        The inputs, (n_samples, n_features). An array chunked along its columns is
        rechunked into one column block; a DataFrame's columns are checked against
        the model's feature names, as locally.
    **options
        {options}

    Returns
    -------
    dask.array.Array
        {returns}, lazy: a block per block (partition) of ``X``, equal to the local
        method's output on its rows bit for bit. For a DataFrame the row chunk sizes
        are unknown (NaN), as with ``lightgbm.dask``: ``compute_chunk_sizes()`` finds
        them.

    Raises
    ------
    TypeError
        ``client``, ``model`` or ``X`` of another type; an option the method does not
        take.
    ValueError
        The local model's error for a wrong number of features or other feature
        names, raised before anything runs on the cluster.
    """

F = TypeVar("F", bound=Callable[..., Any])


def _method_doc(summary: str, options: str, returns: str, more: str = "") -> Callable[[F], F]:
    """The docstring of a prediction function: the shared parts and its own."""
    def document(fn: F) -> F:
        fn.__doc__ = _METHOD_DOC.format(summary=summary, options=options, returns=returns,
                                        more=more)
        return fn
    return document


@_method_doc("``model.predict(X, **options)`` on a Dask cluster",
             options="The model's ``predict`` options (``output_margin``, ``iteration_range``, "
                     "``pred_leaf``, ``pred_exit``, ``early_exit`` ...), passed to every "
                     "block as given; not "
                     "``return_route=True``, which returns two arrays.",
             returns="The predictions")
def predict(client: Client, model: Model, X: DaskMatrix, **options: Any) -> da.Array:
    return _map_method(client, model, X, "predict", options)


@_method_doc(
    "Class probabilities on a Dask cluster, (n_samples, n_classes)",
    more="""
    A Forest's ``predict_proba(X, **options)``; for the other models of
    ``binary:logistic`` or ``multi:softprob``, ``predict(X, iteration_range=...,
    early_exit=...)`` with a
    column per class (binary: ``[1 - p, p]``, as cbudget's scikit-learn classifiers).
    Other objectives raise :class:`cbudget.NotApplicableError`.
""",
    options="A Forest's ``predict_proba`` options; ``iteration_range`` and ``early_exit`` "
            "for the others.",
    returns="float64 (n_samples, n_classes)")
def predict_proba(client: Client, model: Model, X: DaskMatrix, **options: Any) -> da.Array:
    return _map_method(client, model, X, "predict_proba", options)


@_method_doc("``model.predict_cost(X, **options)`` on a Dask cluster",
             options="The model's ``predict_cost`` options (``iteration_range``, "
                     "``early_exit``); not "
                     "per-input arrays (a gated model's ``expensive_cost``), which would "
                     "reach every block whole.",
             returns="float64 (n_samples,): the cost of each prediction")
def predict_cost(client: Client, model: Model, X: DaskMatrix, **options: Any) -> da.Array:
    return _map_method(client, model, X, "predict_cost", options)


@_method_doc("``model.acquisitions(X, **options)`` on a Dask cluster",
             options="The model's ``acquisitions`` options (``iteration_range``, "
                     "``early_exit``).",
             returns="bool (n_samples, n_features): True where predicting the input reads "
                     "the feature")
def acquisitions(client: Client, model: Model, X: DaskMatrix, **options: Any) -> da.Array:
    return _map_method(client, model, X, "acquisitions", options)


# -- on-demand prediction ----------------------------------------------------------------
def _key_partitions(keys: Any, known: Sequence[str] | None, model: Model
                    ) -> tuple[list, Sequence[float]]:
    """The partitions of ``keys`` (Delayed) and their row counts (NaN: unknown)."""
    if isinstance(keys, da.Array):
        if known is not None:
            raise TypeError("known names columns of a Dask DataFrame of keys")
        if keys.ndim not in (1, 2) or (keys.ndim == 2 and np.isnan(keys.shape[1])):
            raise ValueError(f"keys must be a 1-D or 2-D Dask array (a row per input), got "
                             f"shape {keys.shape}")
        if keys.ndim == 2 and keys.numblocks[1] > 1:
            keys = keys.rechunk({1: -1})
        return list(keys.to_delayed().ravel()), keys.chunks[0]
    if not isinstance(keys, (dd.DataFrame, dd.Series)):
        raise TypeError("keys must be a dask.array.Array, dask.dataframe.DataFrame or "
                        f"dask.dataframe.Series, got {type(keys).__name__}")
    if known is not None:
        if isinstance(known, str) or not isinstance(known, Sequence):
            raise TypeError("known must be a list of column names of keys")
        columns = list(keys.columns) if isinstance(keys, dd.DataFrame) else []
        missing = [c for c in known if c not in columns]
        if missing:
            raise ValueError(f"known: {missing} are not columns of keys")
        unknown = [c for c in known if str(c) not in model.feature_names]
        if unknown:
            raise ValueError(f"known: {unknown} are not features of the model")
    return list(keys.to_delayed()), [np.nan] * keys.npartitions


def predict_on_demand(client: Client, model: Model, fetch: Callable[[list[int], Any], Any],
                      keys: da.Array | dd.DataFrame | dd.Series, *, method: str = "predict",
                      known: Sequence[str] | None = None, max_workers: int = 1,
                      **options: Any) -> OnDemandPrediction:
    """On-demand prediction on a Dask cluster: a :class:`cbudget.FeatureSource` per
    partition of ``keys``, on the workers (docs/architecture.md, "Dask").

    Locally, ``fetch(features, rows)`` gets the indices of the inputs; here it gets
    their keys: ``fetch(features, keys[rows])`` with ``rows`` the partition's inputs
    that need ``features``. With ``keys = dask.array.arange(n_samples, chunks=...)``
    those are the global row indices, and the local ``fetch`` works unchanged.

    Parameters
    ----------
    client : distributed.Client
    model : cbudget.Model
        Scattered to every worker once.
    fetch : callable ``fetch(features, keys) -> array (len(keys), len(features))``
        As for :class:`cbudget.FeatureSource`, with the inputs' keys in place of their
        indices: the rows of a partition of ``keys`` (a NumPy array, or a pandas
        DataFrame / Series). Runs on the workers: it must pickle, and is sent once.
    keys : dask.array.Array, dask.dataframe.DataFrame or Series
        A row per input: whatever identifies it for ``fetch`` (an id, a row index,
        a database key ...).
    method : {"predict", "predict_proba", "predict_cost", "acquisitions"}
        What to compute (as the functions of the same names).
    known : list of str, optional
        Columns of a DataFrame ``keys`` that hold features known up front, named
        after them: as ``FeatureSource(known=...)``, never fetched and free.
    max_workers : int, default 1
        Concurrent ``fetch`` calls within a partition (``FeatureSource``'s).
    **options
        The method's options, as for :func:`predict`.

    Returns
    -------
    OnDemandPrediction
        ``(predictions, cost, acquired)``, Dask arrays: the method's output (equal to
        the local method on the full matrix, bit for bit), each input's
        ``FeatureSource.cost()`` and the pairs fetched (``FeatureSource.acquired``;
        without ``known``, equal to ``acquisitions`` on the full matrix). Rows in the
        order of ``keys``; unknown chunk sizes for a DataFrame.
    """
    check_client(client)
    _check_model(model)
    if not callable(fetch):
        raise TypeError(f"fetch must be callable, got {type(fetch).__name__}")
    parts, sizes = _key_partitions(keys, known, model)
    empty = _empty_output(model, method, np.zeros((1, model.num_features())), options)
    run = delayed(partial(_on_demand_part, method=method, options=dict(options),
                          known=None if known is None else list(known),
                          max_workers=max_workers, empty=empty), nout=3)
    scattered_model, scattered_fetch = client.scatter([model, fetch], broadcast=True,
                                                      hash=False)
    outputs = [run(part, scattered_model, scattered_fetch) for part in parts]

    def stack(i: int, like: np.ndarray) -> da.Array:
        return da.concatenate([da.from_delayed(out[i], shape=(n,) + like.shape[1:], meta=like)
                               for out, n in zip(outputs, sizes)])

    return OnDemandPrediction(stack(0, empty), stack(1, np.zeros(0)),
                              stack(2, np.zeros((0, model.num_features()), dtype=bool)))


# -- cost paths and sweeps ---------------------------------------------------------------
def cost_path(client: Client, params: dict, dtrain: Dataset, dvalid: Dataset,
              **kwargs: Any) -> CostPath:
    """:func:`cbudget.cost_path` with one task per point on a Dask cluster
    (docs/architecture.md, "Dask"): the same frontier, the same models.

    The first grid is trained at once, then the points placed in the cost gaps one by
    one (each depends on the costs before it). ``dtrain`` and ``dvalid`` reach every
    worker once. Each model trains on one thread unless ``params`` sets ``n_jobs``.

    Parameters
    ----------
    client : distributed.Client
    params, dtrain, dvalid, **kwargs
        As for :func:`cbudget.cost_path` (not ``n_jobs``, its local threads).

    Returns
    -------
    cbudget.CostPath
    """
    check_client(client)
    with _ClusterExecutor(client) as executor:
        return local_cost_path(params, dtrain, dvalid, executor=executor, **kwargs)


def _points(params: Mapping[str, Any] | Sequence[Mapping[str, Any]],
            grid: Mapping[str, Iterable[Any]] | None) -> list[dict[str, Any]]:
    """Each parameter set of ``params`` updated with each combination of ``grid``."""
    sets = [params] if isinstance(params, Mapping) else list(params)
    if not sets or not all(isinstance(p, Mapping) for p in sets):
        raise TypeError("params must be a dict of parameters or a non-empty list of them")
    grid = dict(grid or {})
    values = [list(v) for v in grid.values()]
    if any(isinstance(v, str) for v in grid.values()) or not all(values):
        raise ValueError("grid must map each parameter to a non-empty list of values")
    return [{**p, **dict(zip(grid, combination))}
            for p in sets for combination in itertools.product(*values)]


def sweep(client: Client, params: Mapping[str, Any] | Sequence[Mapping[str, Any]],
          dtrain: Dataset, dvalid: Dataset, *, grid: Mapping[str, Iterable[Any]] | None = None,
          num_boost_round: int = 100, early_stopping_rounds: int | None = None,
          metric: str | None = None, **train_kwargs: Any) -> list[ScoredModel]:
    """Train a model per parameter set, one task each on a Dask cluster, and score each
    on ``dvalid`` as :func:`cbudget.cost_path` scores its points (docs/architecture.md,
    "Dask").

    Parameters
    ----------
    client : distributed.Client
    params : dict or list of dict
        Parameters of :func:`cbudget.train`: one set, or several.
    dtrain, dvalid : Dataset
        Training and validation data (``dvalid`` built with ``reference=dtrain``);
        they reach every worker once.
    grid : dict {parameter: list of values}, optional
        Each set of ``params`` is trained with each combination of these values (the
        last parameter varying fastest).
    num_boost_round, early_stopping_rounds, **train_kwargs
        Passed to :func:`cbudget.train` for every set.
    metric : str, optional
        The validation metric (``eval_metric``; default: the algorithm's).

    Returns
    -------
    list of cbudget.cost_path.ScoredModel
        ``(model, metric, score, cost)`` per parameter set, in the order given (``grid``
        inside ``params``): the validation metric at the best iteration and the mean
        prediction cost on ``dvalid``, equal to training each set locally. Each model
        trains on one thread unless its parameters set ``n_jobs``.
    """
    check_client(client)
    check_evals([(dvalid, "valid")], dtrain)
    extra = {} if metric is None else {"eval_metric": metric}
    points = [{"n_jobs": 1, **p, **extra} for p in _points(params, grid)]
    fit = partial(train_scored, dtrain=dtrain, dvalid=dvalid, num_boost_round=num_boost_round,
                  early_stopping_rounds=early_stopping_rounds, **train_kwargs)
    with _ClusterExecutor(client) as executor:
        return list(executor.map(fit, points))
