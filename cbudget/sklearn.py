"""scikit-learn estimators of cbudget's algorithms.

``from cbudget.sklearn import CEGBClassifier``: estimators that follow scikit-learn's
conventions (``fit`` / ``predict`` / ``predict_proba`` / ``score``, ``get_params`` /
``set_params``, ``clone``, pipelines, grid search) and train cbudget models with
:func:`cbudget.train`:

=====================================================  ====================================
estimators                                              cbudget algorithm (model)
=====================================================  ====================================
``GBDTClassifier``, ``GBDTRegressor``                   ``gbdt`` (Booster)
``CEGBClassifier``, ``CEGBRegressor``                   ``cegb`` (Booster)
``GreedyMiserClassifier``, ``GreedyMiserRegressor``     ``greedy_miser`` (Booster)
``BudgetRFClassifier``                                  ``budget_rf`` (Forest)
``CSTCClassifier``, ``CSTCRegressor``                   ``cstc``, ``cscc``, ``cronus``
``ADAPTClassifier``                                     ``adapt_gbrt``, ``adapt_lin``
``GBDTRanker``, ``CEGBRanker``, ``GreedyMiserRanker``   learning to rank with ``gbdt``,
                                                        ``cegb``, ``greedy_miser``
=====================================================  ====================================

scikit-learn is an optional dependency (``pip install cbudget[sklearn]``); ``import
cbudget`` does not import this module.
"""
from __future__ import annotations

import inspect
import math
import numbers
import textwrap
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, TypeVar, Union

import numpy as np
import scipy.sparse
from numpy.typing import ArrayLike

try:
    from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, is_regressor
    from sklearn.exceptions import NotFittedError
    from sklearn.metrics import get_scorer
    from sklearn.pipeline import Pipeline
    from sklearn.utils import check_random_state
    from sklearn.utils.multiclass import check_classification_targets
    from sklearn.utils.validation import check_is_fitted, validate_data
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("cbudget.sklearn needs scikit-learn >= 1.6: pip install scikit-learn "
                      "(or cbudget[sklearn])") from exc

from ._model import Model
from .adapt import ExternalModel, GatedModel
from .callback import ProgressMonitor, TrainingCallback
from .categories import as_pandas, auto_columns, parse_categorical_feature
from .cost_path import CostPath, cost_path
from .costs import CostGroups, CostReport, FeatureCosts, GroupCosts
from .cstc import Cascade, ClassifierTree
from .dataset import Dataset, MatrixLike, check_row_count, query_boundaries
from .forest import Forest
from .metrics import RANKING_OBJECTIVES, evaluate_metric
from .model_io import algorithms_of
from .objectives import REGRESSION_OBJECTIVES, objective_name
from .params import ALIASES, metric_list
from .training import lambda_max as find_lambda_max
from .training import train

__all__ = ["GBDTClassifier", "GBDTRegressor", "CEGBClassifier", "CEGBRegressor",
           "GreedyMiserClassifier", "GreedyMiserRegressor", "BudgetRFClassifier",
           "CSTCClassifier", "CSTCRegressor", "ADAPTClassifier", "GBDTRanker", "CEGBRanker",
           "GreedyMiserRanker", "predict_cost", "make_cost_scorer"]

# what validate_data accepts: cbudget reads NaN as a missing value, and densifies sparse
# input as cbudget.Dataset does (implicit zeros are zeros)
_X_CHECKS = dict(accept_sparse=True, ensure_all_finite="allow-nan",
                 dtype=[np.float64, np.float32])
EstimatorT = TypeVar("EstimatorT", bound="_CostAwareEstimator")
RandomStateLike = Union[int, np.random.RandomState, None]
# an eval_set: (X, y) pairs
EvalSet = Sequence[tuple[MatrixLike, ArrayLike]]
# the query groups of each eval_set pair (rankers)
EvalGroups = Sequence[ArrayLike]

# the trade-off of cost_tradeoff="path" without validation data to choose on (tiny data),
# as a fraction of lambda_max: the geometric middle of where it usually matters (1e-3 to
# 1e-1 times lambda_max), so that the one model is neither constant nor cost-blind
FALLBACK_TRADEOFF = 1e-2
# cost_budget: the model picked has a mean validation cost at least this many standard
# errors below the budget (CostPath.best_index's margin), so that its expected cost on
# unseen inputs is within the budget with about 84% confidence, not 50% at the edge
BUDGET_MARGIN = 1.0
# training parameters every estimator sets itself, and from what
_SET_BY_ESTIMATOR = {"algorithm": "the estimator's class (or its `algorithm` parameter)",
                     "objective": "y", "num_class": "y", "seed": "random_state",
                     "n_jobs": "n_jobs", "n_estimators": "n_estimators"}


def _evals_result_of(model: Model, evals: list, params: dict[str, Any]) -> dict:
    """``evals_result_`` of a model the search chose (the cost path logs only its own
    validation data): per evaluation set, each metric after every round, as
    :func:`cbudget.train` logs them."""
    metrics = metric_list(params.get("eval_metric"), "eval_metric") or [model.default_metric]
    return {name: {metric: model.staged_scores(data, metric).tolist() for metric in metrics}
            for data, name in evals}


def _custom_objective(function: Any) -> Callable | None:
    """A LightGBM-style callable objective, ``function(y_true, y_pred)`` (or ``(y_true,
    y_pred, weight)``, ``(y_true, y_pred, weight, group)``) returning ``(grad, hess)``
    of the raw scores, as :func:`cbudget.train`'s ``obj(preds, dtrain)``; None for
    anything else."""
    if not callable(function):
        return None
    argc = len(inspect.signature(function).parameters)
    if argc not in (2, 3, 4):
        raise TypeError(f"a callable objective takes (y_true, y_pred), (y_true, y_pred, "
                        f"weight) or (y_true, y_pred, weight, group), got {argc} parameters")

    def obj(preds: np.ndarray, dtrain: Dataset) -> Any:
        more = (dtrain.weight, None if dtrain.group_ptr is None else np.diff(dtrain.group_ptr))
        return function(dtrain.label, preds, *more[:argc - 2])
    return obj


def _dense(X: Any) -> np.ndarray:
    return X.toarray() if scipy.sparse.issparse(X) else X


# validate_data's checks of data with categorical columns: their levels may be strings
# (cbudget.Dataset converts the columns itself, naming the column in its errors)
_CATEGORICAL_X_CHECKS = dict(accept_sparse=False, ensure_all_finite=False, dtype=None)


def _check_numeric_columns(X: Any, categorical: Sequence[int]) -> None:
    """TypeError naming the first column of a DataFrame ``X`` that holds neither numbers
    nor a categorical feature (scikit-learn's own message does not name it)."""
    for m, dtype in enumerate(getattr(X, "dtypes", ())):
        if m not in categorical and (getattr(dtype, "kind", "O") not in "biuf"
                                     or getattr(dtype, "name", "") == "category"):
            raise TypeError(f"column {X.columns[m]!r} has dtype {dtype}: name it in "
                            "categorical_features (boosting estimators) or encode it as "
                            "numbers")


def _holdout(dtrain: Dataset, seed: int, fraction: float = 0.2) -> list[tuple[np.ndarray, Any]]:
    """Sorted (rows, query sizes) of the training part and of the validation part:
    ``fraction`` of the rows, at random, held out; of the queries, whole, for data with
    query groups (query sizes None without)."""
    rng = np.random.default_rng(seed)
    ptr = dtrain.group_ptr
    if ptr is None:
        order = rng.permutation(dtrain.num_data())
        n_valid = max(1, int(round(fraction * order.shape[0])))
        return [(np.sort(order[n_valid:]), None), (np.sort(order[:n_valid]), None)]
    n_queries = ptr.shape[0] - 1
    if n_queries < 2:
        raise ValueError("choosing on a cost path without eval_set holds out 20% of the "
                         "queries, but the training data has one query: pass eval_set")
    order = rng.permutation(n_queries)
    n_valid = max(1, int(round(fraction * n_queries)))
    parts = []
    for queries in (np.sort(order[n_valid:]), np.sort(order[:n_valid])):
        rows = np.concatenate([np.arange(ptr[q], ptr[q + 1]) for q in queries])
        parts.append((rows, ptr[queries + 1] - ptr[queries]))
    return parts


def check_algorithm(algorithm: Any, *model_classes: type) -> None:
    """ValueError unless ``algorithm`` is a registered algorithm training one of
    ``model_classes`` (the estimator's kind of model)."""
    names = [name for model_class in model_classes for name in algorithms_of(model_class)]
    if algorithm not in names:
        valid = [repr(name) for name in names]
        either = " or ".join([", ".join(valid[:-1]), valid[-1]] if len(valid) > 1 else valid)
        raise ValueError(f"algorithm must be {either}, got {algorithm!r}")

class _CostAwareEstimator(BaseEstimator):
    """What every estimator shares: the costs, the training data and evaluation sets,
    the one place the training parameters are built (:meth:`_training_params`), fit,
    and the cost methods."""

    # the cbudget algorithm of estimators without an `algorithm` parameter
    _algorithm: ClassVar[str] = ""
    # the kind of model_.feature_importance behind feature_importances_
    _importance_kind: ClassVar[str] = "gain"
    # training parameters of _SET_BY_ESTIMATOR that this estimator takes from `params`
    _set_in_params: ClassVar[tuple[str, ...]] = ()

    def __init__(self, *, n_estimators: int, feature_costs: FeatureCosts | None,
                 cost_groups: CostGroups | None, group_costs: GroupCosts | None,
                 default_cost: float | None, coupled_costs: FeatureCosts | None,
                 split_cost: float | None, tree_cost: float | None,
                 early_stopping_rounds: int | None, random_state: RandomStateLike,
                 n_jobs: int | None, verbose: bool | int, params: dict[str, Any] | None
                 ) -> None:
        self.n_estimators = n_estimators
        self.feature_costs = feature_costs
        self.cost_groups = cost_groups
        self.group_costs = group_costs
        self.default_cost = default_cost
        self.coupled_costs = coupled_costs
        self.split_cost = split_cost
        self.tree_cost = tree_cost
        self.early_stopping_rounds = early_stopping_rounds
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.params = params

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True      # NaN is a missing value
        tags.input_tags.sparse = True
        return tags

    # -- what the subclasses give -------------------------------------------------------
    def _algorithm_params(self) -> dict[str, Any]:
        """The cbudget training parameters of the estimator's own parameters (None: the
        algorithm's default), ``algorithm`` included."""
        raise NotImplementedError

    def _encode_target(self, y: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
        """The labels as cbudget reads them, and the objective parameters they imply."""
        raise NotImplementedError

    def _encode_eval_target(self, y: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _objectives_taken(self, from_y: dict[str, Any]) -> tuple[str, ...]:
        """The objectives a string ``objective`` parameter may name."""
        return (from_y["objective"],)

    def _chosen_objective(self, from_y: dict[str, Any]) -> dict[str, Any]:
        """The objective parameters of training: those the labels imply, or the
        estimator's ``objective`` where it names one of :meth:`_objectives_taken` (a
        callable is trained as ``cbudget.train(obj=)``, see :func:`_custom_objective`)."""
        chosen = getattr(self, "objective", None)
        if chosen is None or callable(chosen):
            return from_y
        name = objective_name(chosen)
        taken = self._objectives_taken(from_y)
        if name not in taken:
            raise ValueError(f"{type(self).__name__}(objective={chosen!r}): it trains with "
                             f"{list(taken)} (or a callable objective)")
        return {**from_y, "objective": name}

    def _eval_set_needed_for(self) -> list[str]:
        """The parameters set that need ``eval_set`` (their cost or metric is measured
        on its last data set)."""
        return ["early_stopping_rounds"] if self.early_stopping_rounds is not None else []

    def _expensive_model(self, dtrain: Dataset, seed: int) -> Any:
        """The expensive model of a gated model (ADAPT); None for the others."""
        return None

    # -- parameters ---------------------------------------------------------------------
    def _seed(self) -> int:
        """``random_state`` as cbudget's integer seed (None or a RandomState: drawn from
        it, as scikit-learn does)."""
        if isinstance(self.random_state, numbers.Integral) \
                and not isinstance(self.random_state, bool):
            return int(self.random_state)
        return int(check_random_state(self.random_state).randint(np.iinfo(np.int32).max))

    def _training_params(self, objective: dict[str, Any], seed: int) -> dict[str, Any]:
        """The params dict given to :func:`cbudget.train`: the objective, the estimator's
        parameters, and ``params`` for any other parameter of the algorithm (checked by
        cbudget: an unknown one raises). The one place training parameters are built."""
        own = {"seed": seed, "n_jobs": self.n_jobs, **objective, **self._algorithm_params()}
        extra = {} if self.params is None else self.params
        if not isinstance(extra, dict):
            raise TypeError(f"params must be a dict or None, got {type(extra).__name__}")
        for key in extra:
            name = ALIASES.get(key, key)
            if name in self._set_in_params:
                continue
            if name in own or name in _SET_BY_ESTIMATOR:
                source = _SET_BY_ESTIMATOR.get(name, f"the parameter {name!r}")
                raise ValueError(f"params[{key!r}]: {type(self).__name__} sets {name!r} "
                                 f"from {source}; set that instead")
        return {name: value for name, value in {**own, **extra}.items() if value is not None}

    def _feature_names(self) -> list[str] | None:
        return list(self.feature_names_in_) if hasattr(self, "feature_names_in_") else None

    def _check_names_available(self) -> None:
        """Features named by string keys need column names: a ValueError that says what
        to do instead (a dict keyed by str would otherwise meet cbudget's default names
        f0, f1, ...)."""
        if self._feature_names() is not None:
            return
        named = [key for costs in (self.feature_costs, self.coupled_costs)
                 if isinstance(costs, dict) for key in costs if isinstance(key, str)]
        groups = self.cost_groups
        members = groups.values() if isinstance(groups, dict) else (groups or [])
        named += [m for group in members for m in group if isinstance(m, str)]
        if named:
            raise ValueError(
                f"features named {named[:5]} in the costs or cost_groups, but X has no "
                "column names: use integer positions as keys, an array of costs, or a "
                "pandas DataFrame (in a Pipeline, set_output(transform='pandas') on the "
                "steps before this one)")

    # -- fit ----------------------------------------------------------------------------
    def fit(self: EstimatorT, X: MatrixLike, y: ArrayLike, sample_weight: ArrayLike | None = None,
            eval_set: EvalSet | None = None,
            eval_sample_weight: Sequence[ArrayLike | None] | None = None) -> EstimatorT:
        """Train the model.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            NaN is a missing value; a DataFrame's string column names become the feature
            names (``feature_names_in_``) that ``feature_costs`` may refer to.
        y : array-like of shape (n_samples,)
            Class labels of any type (classifiers) or finite values (regressors).
        sample_weight : array-like of shape (n_samples,), optional
            Non-negative weights.
        eval_set : list of (X, y) pairs, optional
            Data evaluated after every iteration (named ``valid_0``, ``valid_1``, ... in
            ``evals_result_``); early stopping, and BudgetRF's budget, use the last one.
        eval_sample_weight : list of array-like, optional
            The weights of each ``eval_set`` pair.

        Returns
        -------
        self
        """
        return self._fit(X, y, sample_weight, eval_set, eval_sample_weight)

    def _fit(self: EstimatorT, X: MatrixLike, y: ArrayLike, sample_weight: ArrayLike | None,
             eval_set: EvalSet | None, eval_sample_weight: Sequence[ArrayLike | None] | None,
             queries: dict[str, Any] | None = None,
             eval_queries: Sequence[dict[str, Any]] | None = None) -> EstimatorT:
        """:meth:`fit`, with the query groups of the rankers: ``queries`` the keyword
        (``group`` or ``qid``) and value of the training data's, ``eval_queries`` those
        of each ``eval_set`` pair."""
        check_row_count(X, "X")     # before validate_data converts anything
        X = as_pandas(X)
        categorical = self._categorical_columns(X)
        _check_numeric_columns(X, categorical)
        data, target = validate_data(self, X, y, y_numeric=is_regressor(self),
                                     **(_CATEGORICAL_X_CHECKS if categorical else _X_CHECKS))
        self.is_categorical_ = np.isin(np.arange(self.n_features_in_), categorical)
        label, objective = self._encode_target(target)
        objective = self._chosen_objective(objective)
        self._check_names_available()
        # categorical columns: the DataFrame itself, whose levels and dtypes the Dataset
        # reads (validate_data's object array would lose the pandas categories' order);
        # other data (an array, a list of rows) as validate_data made it an array
        data = X if categorical and hasattr(X, "columns") else _dense(data)
        dtrain = self._dataset(data, label, sample_weight, categorical_feature=categorical,
                               **(queries or {}))
        evals = self._evals(dtrain, eval_set, eval_sample_weight, eval_queries)
        seed = self._seed()
        params = self._training_params(objective, seed)
        evals_result: dict = {}
        # a previous fit's search does not describe this fit's model (e.g. refit with a
        # fixed cost_tradeoff): its results go
        for name in ("cost_path_", "cost_tradeoff_", "cost_stages_"):
            self.__dict__.pop(name, None)
        custom = _custom_objective(getattr(self, "objective", None))
        if custom is not None and self._cost_tradeoff_from_path():
            raise ValueError(f"{type(self).__name__}: a callable objective trains one model; "
                             "give cost_tradeoff a number (the cost-path search trains "
                             "with the built-in objectives)")
        searched = self._model_on_cost_path(params, dtrain, evals, seed) \
            if self._cost_tradeoff_from_path() else params
        if isinstance(searched, Model):
            self.model_ = searched
            evals_result = _evals_result_of(searched, evals, params)
        else:
            params = searched
            expensive = self._expensive_model(dtrain, seed)
            if expensive is not None:
                self.expensive_model_ = expensive
            self.model_ = train(params, dtrain, self.n_estimators, evals=evals,
                                early_stopping_rounds=self.early_stopping_rounds,
                                evals_result=evals_result,
                                verbose_eval=max(self.verbose, 0),
                                callbacks=self._progress(),
                                expensive_model=expensive, obj=custom)
            if self._cost_tradeoff_from_path():   # nothing to search: the one model
                self.cost_path_: CostPath | None = None
                self.cost_tradeoff_: float | None = float(self.model_.params["cost_tradeoff"])
                self.cost_stages_: list[tuple[int, float]] | None = None
        self.evals_result_ = evals_result
        self.best_iteration_ = self.model_.best_iteration
        return self

    def _dataset(self, data: Any, label: np.ndarray,
                 weight: ArrayLike | None, **more: Any) -> Dataset:
        """Training data with the estimator's costs (and ``group`` or ``qid``, and
        ``categorical_feature``)."""
        return Dataset(data, label, weight=weight, feature_names=self._feature_names(),
                       **more,
                       feature_costs=self.feature_costs, cost_groups=self.cost_groups,
                       group_costs=self.group_costs, default_cost=self.default_cost,
                       coupled_costs=self.coupled_costs, split_cost=self.split_cost or 0.0,
                       tree_cost=self.tree_cost or 0.0)

    def _cost_tradeoff_from_path(self) -> bool:
        """Whether ``cost_tradeoff="path"`` asks for the trade-off to be chosen on a
        cost path (the boosters that have a ``lambda_max``)."""
        return False

    def _progress(self) -> list[TrainingCallback]:
        """verbose False (0): a line every 10 s on a long fit only (verbose True prints
        the metrics, and those lines too); -1: nothing."""
        return [ProgressMonitor(self.n_estimators)] if self.verbose == 0 else []

    def _model_on_cost_path(self, params: dict[str, Any], dtrain: Dataset, evals: list,
                            seed: int) -> Model | dict[str, Any]:
        """The model chosen on a cost path (``cost_path_``; ``cost_tradeoff_`` for a
        single trade-off, ``cost_stages_`` for a cascade), validated on the last
        evaluation set, else on 20% of the training rows (of the queries, for rankers)
        held out. Classifiers with ``cost_budget`` search cascades with exits too.

        When there is nothing to search, the params of the one model to train instead:
        without a cost a split could pay for (``lambda_max`` 0), every trade-off trains
        the same model (``params`` as they are); without validation data (one row or
        query and no ``eval_set``, or rows held out that leave no split worth its cost)
        the trade-off :data:`FALLBACK_TRADEOFF` times ``lambda_max``. With
        ``cost_budget``, no validation data is a ValueError."""
        start = find_lambda_max(params, dtrain)
        if start == 0:
            return params
        fallback = dict(params, cost_tradeoff=FALLBACK_TRADEOFF * start)
        if not evals:
            ptr = dtrain.group_ptr
            if (dtrain.num_data() if ptr is None else ptr.shape[0] - 1) < 2:
                if self.cost_budget is not None:
                    what = "row" if ptr is None else "query"
                    raise ValueError(f"cost_budget is measured on validation data, but "
                                     f"the training data has one {what}: pass eval_set")
                return fallback
            (fit_rows, fit_group), (valid_rows, valid_group) = _holdout(dtrain, seed)
            weight, label = dtrain.weight, dtrain.required_label()
            full = dtrain
            dtrain = self._dataset(full.data[fit_rows], label[fit_rows],
                                   None if weight is None else weight[fit_rows],
                                   group=fit_group, categorical_feature=full.categories)
            evals = [(Dataset(full.data[valid_rows], label[valid_rows], reference=dtrain,
                              weight=None if weight is None else weight[valid_rows],
                              group=valid_group), "valid_0")]
            start = find_lambda_max(params, dtrain)
            if start == 0:   # the rows held out had the gains
                return fallback
        # start: the lambda_max of the rows the path trains on, not computed again there
        path = cost_path(
            {k: v for k, v in params.items() if k != "cost_tradeoff"}, dtrain, evals[-1][0],
            lambda_max=start, n_points=self.path_points, num_boost_round=self.n_estimators,
            early_stopping_rounds=self.early_stopping_rounds,
            exit_epsilons=getattr(self, "exit_epsilons", None),
            exit_tolerance=getattr(self, "exit_tolerance", None),
            cascades=self._searches_cascades(), verbose=self.verbose >= 0)
        chosen = path.best_index(np.inf, 0.0) if self.cost_budget is None \
            else path.best_index(self.cost_budget, BUDGET_MARGIN)
        lam = float(path.lambdas[chosen])
        self.cost_path_ = path
        model = path.models[chosen]
        # the stages of the model kept (early stopping may end the last stage sooner)
        self.cost_stages_ = None if path.stages is None else path.stages[chosen]
        self.cost_tradeoff_ = None if np.isnan(lam) else lam
        return model

    def _searches_cascades(self) -> bool:
        """Whether the cost path also searches cascades: for a budget, with exits
        (classifiers; without a budget the choice is the most accurate model, which a
        cascade's exits do not make more accurate, so they would only cost time)."""
        return self.cost_budget is not None and isinstance(self, ClassifierMixin)

    def _evals(self, dtrain: Dataset, eval_set: EvalSet | None,
               eval_sample_weight: Sequence[ArrayLike | None] | None,
               eval_queries: Sequence[dict[str, Any]] | None = None) -> list:
        """The evaluation sets as (Dataset, name) pairs, on the training data's bins
        (with each pair's ``group`` or ``qid`` of ``eval_queries``)."""
        if eval_set is None:
            needs = self._eval_set_needed_for()
            if needs:
                raise ValueError(f"{', '.join(needs)} need(s) validation data: pass "
                                 "fit(..., eval_set=[(X_valid, y_valid)])")
            if eval_sample_weight is not None:
                raise ValueError("eval_sample_weight is given without eval_set")
            return []
        if not isinstance(eval_set, (list, tuple)) or not all(
                isinstance(pair, (list, tuple)) and len(pair) == 2 for pair in eval_set):
            raise TypeError("eval_set must be a list of (X, y) pairs")
        weights = [None] * len(eval_set) if eval_sample_weight is None else eval_sample_weight
        if len(weights) != len(eval_set):
            raise ValueError(f"eval_sample_weight has {len(weights)} entries for "
                             f"{len(eval_set)} eval_set pairs")
        queries = [{}] * len(eval_set) if eval_queries is None else eval_queries
        evals = []
        for i, ((X_eval, y_eval), weight, query) in enumerate(zip(eval_set, weights, queries)):
            X_eval = self._checked_input(X_eval)
            y_eval = np.asarray(y_eval).ravel()
            if y_eval.shape[0] != X_eval.shape[0]:
                raise ValueError(f"eval_set[{i}]: X has {X_eval.shape[0]} rows, y "
                                 f"{y_eval.shape[0]}")
            evals.append((Dataset(_dense(X_eval), self._encode_eval_target(y_eval),
                                  weight=weight, reference=dtrain, **query), f"valid_{i}"))
        return evals

    # -- prediction and costs -----------------------------------------------------------
    def _prediction_input(self, X: MatrixLike) -> np.ndarray:
        check_is_fitted(self, "model_")   # not partial state of a failed fit
        return self._checked_input(X)

    def _checked_input(self, X: MatrixLike) -> Any:
        """``X`` checked against the training data's columns: a dense matrix; with
        categorical features, a DataFrame as it is, or an array of levels (object or
        string dtype; a list of rows made an array): the model maps its levels, as fit
        took them."""
        X = as_pandas(X)
        if np.any(self.is_categorical_) and not scipy.sparse.issparse(X):
            checked = validate_data(self, X, reset=False, **_CATEGORICAL_X_CHECKS)
            if hasattr(X, "columns"):
                return X
            if checked.dtype.kind in "OSU":
                return checked
        _check_numeric_columns(X, [])
        return _dense(validate_data(self, X, reset=False, **_X_CHECKS))

    def _categorical_columns(self, X: Any) -> list[int]:
        """The categorical columns of training data ``X`` by ``categorical_features``
        (as HistGradientBoosting reads it; estimators without the parameter take
        "from_dtype", and their algorithm refuses such columns clearly)."""
        spec = getattr(self, "categorical_features", "from_dtype")
        if spec is None:
            return []
        if isinstance(spec, str) and spec == "from_dtype":
            return auto_columns(X)
        if scipy.sparse.issparse(X):
            raise ValueError("categorical_features: categorical columns need dense X "
                             "(a DataFrame or an array)")
        n_columns = np.shape(X)[1] if len(np.shape(X)) == 2 else 0
        names = ([str(c) for c in X.columns] if hasattr(X, "columns")
                 else [f"x{m}" for m in range(n_columns)])
        mask = np.asarray(spec) if not isinstance(spec, str) else None
        if mask is not None and mask.dtype == bool:
            if mask.shape != (n_columns,):
                raise ValueError(f"categorical_features: a boolean mask needs one entry per "
                                 f"column ({n_columns}), got shape {mask.shape}")
            return np.flatnonzero(mask).tolist()
        return parse_categorical_feature(spec, names, []).tolist()

    def contributions(self, X: MatrixLike) -> np.ndarray:
        """Each feature's contribution to each input's raw score (TreeSHAP), then the
        bias, per output, in LightGBM's layout (``predict(X, pred_contrib=True)`` of
        :class:`cbudget.Booster`, or ``predict_proba`` of a :class:`cbudget.Forest`);
        NotApplicableError for the models that are not sums of trees."""
        X = self._prediction_input(X)
        if isinstance(self.model_, Forest):
            return self.model_.predict_proba(X, pred_contrib=True)
        return self.model_.predict(X, pred_contrib=True)

    def predict_cost(self, X: MatrixLike) -> np.ndarray:
        """The prediction cost of each input (docs/architecture.md, "Cost model"); with
        early stopping, of the model up to the best iteration.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of float64, shape (n_samples,)
        """
        X = self._prediction_input(X)
        return self.model_.predict_cost(X)

    def cost_report(self, X: MatrixLike) -> CostReport:
        """Mean and per-input cost, per-feature acquisition rates, features used and the
        coupled cost of predicting ``X`` (see :meth:`cbudget.Model.cost_report`).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        cbudget.CostReport
        """
        X = self._prediction_input(X)
        return self.model_.cost_report(X)

    def acquisitions(self, X: MatrixLike) -> np.ndarray:
        """The features each input pays for.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of bool, shape (n_samples, n_features)
        """
        X = self._prediction_input(X)
        return self.model_.acquisitions(X)

    @property
    def feature_importances_(self) -> np.ndarray:
        """The model's importance of each feature, normalised to sum 1 (all zeros when
        the model uses no feature): the splits' total gain for boosters, forests and the
        gated models (their gate's and predictor's added), the number of nodes that
        read the feature for trees and cascades of linear classifiers."""
        check_is_fitted(self, "model_")   # not partial state of a failed fit
        importance = self.model_.feature_importance(self._importance_kind)
        total = importance.sum()
        return importance / total if total > 0 else importance


class _Classifier(ClassifierMixin, _CostAwareEstimator):
    """Labels of any type encoded as 0..K-1 (``classes_``); predict is the class of
    highest probability."""

    # the algorithm fits two classes only
    _binary_only: ClassVar[bool] = False

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = not self._binary_only
        return tags

    def _encode_target(self, y: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
        check_classification_targets(y)
        self.classes_, codes = np.unique(y, return_inverse=True)
        n_classes = len(self.classes_)
        if n_classes < 2:
            raise ValueError(f"{type(self).__name__} needs samples of at least 2 classes; "
                             f"y has 1 class ({self.classes_[0]!r})")
        if n_classes > 2 and self._binary_only:
            raise ValueError(f"Only binary classification is supported: "
                             f"{type(self).__name__} fits two classes, y has {n_classes}")
        objective = ({"objective": "binary:logistic"} if n_classes == 2
                     else {"objective": "multi:softprob", "num_class": n_classes})
        return codes.astype(np.float64), objective

    def _encode_eval_target(self, y: np.ndarray) -> np.ndarray:
        unknown = ~np.isin(y, self.classes_)
        if unknown.any():
            raise ValueError(f"eval_set labels {np.unique(y[unknown])[:5].tolist()} are not "
                             f"among the training classes {self.classes_.tolist()}")
        return np.searchsorted(self.classes_, y).astype(np.float64)

    def _class_probabilities(self, X: np.ndarray) -> np.ndarray:
        """(n_samples, n_classes) probabilities of the model for the prepared ``X``."""
        proba = self.model_.predict(X)
        return proba if proba.ndim == 2 else np.column_stack([1.0 - proba, proba])

    def predict_proba(self, X: MatrixLike) -> np.ndarray:
        """Class probabilities, in the order of ``classes_``.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of float64, shape (n_samples, n_classes)
        """
        return self._class_probabilities(self._prediction_input(X))

    def predict(self, X: MatrixLike, pred_contrib: bool = False) -> np.ndarray:
        """The class of highest probability (ties: the first in ``classes_``).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        pred_contrib : bool, default False
            Each feature's contribution instead (TreeSHAP, as LightGBM's
            ``predict(pred_contrib=True)``): see :meth:`_CostAwareEstimator.contributions`.

        Returns
        -------
        ndarray of shape (n_samples,)
            Labels of ``classes_``.
        """
        if pred_contrib:
            return self.contributions(X)
        proba = self.predict_proba(X)      # first: NotFittedError before fit
        return self.classes_[np.argmax(proba, axis=1)]


class _RealValued(_CostAwareEstimator):
    """Regressors and rankers: real labels, and one real prediction per input."""

    def _encode_eval_target(self, y: np.ndarray) -> np.ndarray:
        return np.asarray(y, dtype=np.float64)

    def predict(self, X: MatrixLike, pred_contrib: bool = False) -> np.ndarray:
        """Predicted values (regressors), or ranking scores: sort each query's documents
        by them, highest first (rankers).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        pred_contrib : bool, default False
            Each feature's contribution instead (TreeSHAP, as LightGBM's
            ``predict(pred_contrib=True)``): see :meth:`_CostAwareEstimator.contributions`.

        Returns
        -------
        ndarray of float64, shape (n_samples,)
        """
        if pred_contrib:
            return self.contributions(X)
        X = self._prediction_input(X)     # first: NotFittedError before fit
        return self.model_.predict(X)


class _Regressor(RegressorMixin, _RealValued):
    def _encode_target(self, y: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
        return np.asarray(y, dtype=np.float64), {"objective": "reg:squarederror"}

    def _objectives_taken(self, from_y: dict[str, Any]) -> tuple[str, ...]:
        return REGRESSION_OBJECTIVES


def _queries(group: ArrayLike | None, qid: ArrayLike | None, what: str) -> dict[str, Any]:
    """The Dataset keyword of a ranker's query groups: ``group`` or ``qid``, exactly one."""
    if (group is None) == (qid is None):
        raise ValueError(f"{what}: give the query groups, group (query sizes) or qid (a "
                         "query id per row), exactly one of them")
    return {"group": group} if group is not None else {"qid": qid}


class _Ranker(_RealValued):
    """Learning to rank: ``fit(X, y, group=...)`` (or ``qid=``) with relevance labels;
    ``predict`` gives each document's score (the higher, the earlier it ranks)."""

    _set_in_params = ("objective",)

    def _encode_target(self, y: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
        # the objective may come from params: the one thing y does not decide here
        return np.asarray(y, dtype=np.float64), {}

    def _objectives_taken(self, from_y: dict[str, Any]) -> tuple[str, ...]:
        return RANKING_OBJECTIVES

    def _training_params(self, objective: dict[str, Any], seed: int) -> dict[str, Any]:
        params = super()._training_params(objective, seed)
        params.setdefault("objective", "rank:ndcg")
        if params["objective"] not in RANKING_OBJECTIVES:
            raise ValueError(f"params['objective'] of a ranker is one of "
                             f"{list(RANKING_OBJECTIVES)}, got {params['objective']!r}")
        return params

    def fit(self: EstimatorT, X: MatrixLike, y: ArrayLike,  # type: ignore[override]
            group: ArrayLike | None = None, *, qid: ArrayLike | None = None,
            sample_weight: ArrayLike | None = None, eval_set: EvalSet | None = None,
            eval_group: EvalGroups | None = None, eval_qid: EvalGroups | None = None,
            eval_sample_weight: Sequence[ArrayLike | None] | None = None) -> EstimatorT:
        """Train the ranking model.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            The documents of every query, each query's rows together.
        y : array-like of shape (n_samples,)
            Relevance labels: integer grades 0..31 for ``rank:ndcg`` (the default
            objective; ``params={"objective": "rank:pairwise"}`` for RankNet's).
        group : array-like of int, optional
            The number of documents of each query, in row order.
        qid : array-like of shape (n_samples,), optional
            Instead of ``group``: each row's query id (rows of a query together).
        sample_weight : array-like of shape (n_samples,), optional
            Each document's weight (it scales the document's gradients; a query's
            metrics weigh by its documents' mean weight).
        eval_set : list of (X, y) pairs, optional
            Validation queries, evaluated after every round (default metric
            ``ndcg@5``; ``params={"eval_metric": [...]}`` for others).
        eval_group, eval_qid : list of array-like, optional
            The query groups of each ``eval_set`` pair (one of the two).
        eval_sample_weight : list of array-like, optional

        Returns
        -------
        self
        """
        queries = _queries(group, qid, "fit")
        eval_queries = None
        if eval_set is not None:
            given = eval_group if eval_group is not None else eval_qid
            if given is None or eval_group is not None and eval_qid is not None \
                    or len(given) != len(eval_set):
                raise ValueError("eval_set needs the query groups of each pair: "
                                 "eval_group=[sizes, ...] or eval_qid=[ids, ...]")
            key = "group" if eval_group is not None else "qid"
            eval_queries = [{key: value} for value in given]
        elif eval_group is not None or eval_qid is not None:
            raise ValueError("eval_group / eval_qid are given without eval_set")
        return self._fit(X, y, sample_weight, eval_set, eval_sample_weight, queries,
                         eval_queries)

    def score(self, X: MatrixLike, y: ArrayLike, group: ArrayLike | None = None, *,
              qid: ArrayLike | None = None, sample_weight: ArrayLike | None = None) -> float:
        """Mean NDCG@5 of the queries of ``X`` (``cbudget.metrics``: gain ``2**y - 1``).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Relevance labels.
        group, qid : array-like, optional
            The query groups (one of the two).
        sample_weight : array-like of shape (n_samples,), optional

        Returns
        -------
        float
        """
        scores = self.predict(X)
        _queries(group, qid, "score")       # exactly one of them
        group_ptr = query_boundaries(group, qid, scores.shape[0])
        return evaluate_metric("ndcg@5", np.asarray(y), scores,
                               None if sample_weight is None else np.asarray(sample_weight),
                               group=None if group_ptr is None else np.diff(group_ptr))


# -- the estimators' own parameters, by family ------------------------------------------
class _GradientBoosting(_CostAwareEstimator):
    def __init__(self, *, n_estimators: int = 100, learning_rate: float | None = None,
                 num_leaves: int | None = None, max_depth: int | None = None,
                 categorical_features: Any = "from_dtype",
                 feature_costs: FeatureCosts | None = None,
                 cost_groups: CostGroups | None = None, group_costs: GroupCosts | None = None,
                 default_cost: float | None = None, coupled_costs: FeatureCosts | None = None,
                 split_cost: float | None = None, tree_cost: float | None = None,
                 early_stopping_rounds: int | None = None, random_state: RandomStateLike = None,
                 n_jobs: int | None = None, verbose: bool | int = False,
                 params: dict[str, Any] | None = None,
                 objective: str | Callable | None = None) -> None:
        super().__init__(n_estimators=n_estimators, feature_costs=feature_costs,
                         cost_groups=cost_groups, group_costs=group_costs,
                         default_cost=default_cost, coupled_costs=coupled_costs,
                         split_cost=split_cost, tree_cost=tree_cost,
                         early_stopping_rounds=early_stopping_rounds,
                         random_state=random_state, n_jobs=n_jobs, verbose=verbose,
                         params=params)
        self.objective = objective
        self.learning_rate = learning_rate
        self.num_leaves = num_leaves
        self.max_depth = max_depth
        self.categorical_features = categorical_features

    def _algorithm_params(self) -> dict[str, Any]:
        return {"algorithm": self._algorithm, "learning_rate": self.learning_rate,
                "num_leaves": self.num_leaves, "max_depth": self.max_depth}


class _CostAwareBoosting(_CostAwareEstimator):
    def __init__(self, *, n_estimators: int = 100, cost_tradeoff: float | str | None = None,
                 cost_budget: float | None = None, path_points: int = 16,
                 exit_epsilons: Sequence[float] | None = None,
                 exit_tolerance: float | None = None,
                 cost_stages: Sequence[Sequence[float]] | None = None,
                 learning_rate: float | None = None, num_leaves: int | None = None,
                 max_depth: int | None = None, categorical_features: Any = "from_dtype",
                 feature_costs: FeatureCosts | None = None,
                 cost_groups: CostGroups | None = None, group_costs: GroupCosts | None = None,
                 default_cost: float | None = None, coupled_costs: FeatureCosts | None = None,
                 split_cost: float | None = None, tree_cost: float | None = None,
                 early_stopping_rounds: int | None = None, random_state: RandomStateLike = None,
                 n_jobs: int | None = None, verbose: bool | int = False,
                 params: dict[str, Any] | None = None,
                 objective: str | Callable | None = None) -> None:
        super().__init__(n_estimators=n_estimators, feature_costs=feature_costs,
                         cost_groups=cost_groups, group_costs=group_costs,
                         default_cost=default_cost, coupled_costs=coupled_costs,
                         split_cost=split_cost, tree_cost=tree_cost,
                         early_stopping_rounds=early_stopping_rounds,
                         random_state=random_state, n_jobs=n_jobs, verbose=verbose,
                         params=params)
        self.objective = objective
        self.cost_tradeoff = cost_tradeoff
        self.cost_budget = cost_budget
        self.path_points = path_points
        self.exit_epsilons = exit_epsilons
        self.exit_tolerance = exit_tolerance
        self.cost_stages = cost_stages
        self.learning_rate = learning_rate
        self.num_leaves = num_leaves
        self.max_depth = max_depth
        self.categorical_features = categorical_features

    def _algorithm_params(self) -> dict[str, Any]:
        # None or "path" (the search): set per point of the path (left out: the
        # algorithm's default when there is nothing to search)
        lam = None if isinstance(self.cost_tradeoff, str) else self.cost_tradeoff
        return {"algorithm": self._algorithm, "cost_tradeoff": lam,
                "cost_stages": self.cost_stages,
                "learning_rate": self.learning_rate, "num_leaves": self.num_leaves,
                "max_depth": self.max_depth}

    def _cost_tradeoff_from_path(self) -> bool:
        """Whether the estimator searches: ``cost_tradeoff`` None (the default) or
        "path", without ``cost_stages`` (which gives each stage its trade-off)."""
        if self.cost_stages is not None and self.cost_tradeoff == "path":
            raise ValueError("cost_stages gives each stage its trade-off: leave "
                             "cost_tradeoff None (not 'path')")
        if isinstance(self.cost_tradeoff, str) and self.cost_tradeoff != "path":
            raise ValueError(f"cost_tradeoff must be a number >= 0, 'path' or None, got "
                             f"{self.cost_tradeoff!r}")
        search = self.cost_stages is None and self.cost_tradeoff in (None, "path")
        for name in ("cost_budget", "exit_epsilons", "exit_tolerance"):
            if getattr(self, name) is not None and not search:
                raise ValueError(f"{name} applies with cost_tradeoff='path' or None (the "
                                 "search), not with a number or cost_stages")
        if isinstance(self, _Ranker) and (self.exit_epsilons is not None
                                          or self.exit_tolerance is not None):
            raise ValueError("exit_epsilons and exit_tolerance do not apply to a ranker: a "
                             "document's place depends on its query's other documents")
        if isinstance(self, RegressorMixin) and self.exit_epsilons is not None \
                and self.exit_tolerance is None:
            raise ValueError("exit_epsilons of a regressor need exit_tolerance: how far an "
                             "exited prediction may be from the full model's")
        if self.exit_tolerance is not None and self.exit_epsilons is None \
                and not self._searches_cascades():
            raise ValueError("exit_tolerance applies to exits: give exit_epsilons (or, to a "
                             "classifier, cost_budget, whose cascades have exits)")
        return search


class _ClassifierTrees(_CostAwareEstimator):
    _importance_kind = "split"        # linear nodes have no split gain

    def __init__(self, *, algorithm: str = "cstc", n_estimators: int = 100,
                 cost_tradeoff: float | None = None, max_depth: int | None = None,
                 feature_costs: FeatureCosts | None = None,
                 cost_groups: CostGroups | None = None, group_costs: GroupCosts | None = None,
                 default_cost: float | None = None, coupled_costs: FeatureCosts | None = None,
                 split_cost: float | None = None, tree_cost: float | None = None,
                 early_stopping_rounds: int | None = None, random_state: RandomStateLike = None,
                 n_jobs: int | None = None, verbose: bool | int = False,
                 params: dict[str, Any] | None = None) -> None:
        super().__init__(n_estimators=n_estimators, feature_costs=feature_costs,
                         cost_groups=cost_groups, group_costs=group_costs,
                         default_cost=default_cost, coupled_costs=coupled_costs,
                         split_cost=split_cost, tree_cost=tree_cost,
                         early_stopping_rounds=early_stopping_rounds,
                         random_state=random_state, n_jobs=n_jobs, verbose=verbose,
                         params=params)
        self.algorithm = algorithm
        self.cost_tradeoff = cost_tradeoff
        self.max_depth = max_depth

    def _algorithm_params(self) -> dict[str, Any]:
        check_algorithm(self.algorithm, ClassifierTree, Cascade)
        return {"algorithm": self.algorithm, "cost_tradeoff": self.cost_tradeoff,
                "max_depth": self.max_depth}

    def _eval_set_needed_for(self) -> list[str]:
        structure = self.params.get("tree_structure") if isinstance(self.params, dict) \
            else None
        return super()._eval_set_needed_for() + (
            [f"tree_structure={structure!r}"] if structure in ("prune", "greedy") else [])


_COMMON_DOC = """\
n_estimators : int, default 100
    %(iterations)s
feature_costs : array-like of shape (n_features,) or dict, optional
    Each feature's per-input acquisition cost: an array by position, or a dict
    ``{column name or integer position: cost}``. Column names need a DataFrame ``X``
    (in a Pipeline, ``set_output(transform="pandas")`` on the steps before); integer
    positions work whatever the steps before do to the names. A dict names every
    feature or gives ``default_cost``. None: every feature is free.
cost_groups : dict {group name: [features]} or list of lists, optional
    Features acquired together, by column name or position.
group_costs : array-like or dict {group name: cost}, optional
    The cost of each group, paid once per input that acquires any of its features.
default_cost : float, optional
    The cost of the features a ``feature_costs`` dict does not name.
coupled_costs : array-like of shape (n_features,) or dict, optional
    Once-per-model cost of using a feature at all.
split_cost, tree_cost : float, optional
    The cost of evaluating one split node / one tree for one input (default 0).
early_stopping_rounds : int, optional
    Stop when the last metric on the last ``eval_set`` has not improved for this many
    iterations; prediction then uses the model up to ``best_iteration_``.
random_state : int, RandomState or None, default None
    Seed of the algorithm's sampling and of the rows CEGB's and Greedy Miser's search
    holds out without ``eval_set`` (None: drawn from numpy's global generator, so two
    fits may differ).
n_jobs : int, optional
    Threads (None or -1: all cores).
verbose : bool or int, default False
    Print the evaluation metrics every iteration (or every ``verbose`` iterations).
    False: only on a long fit, a line every 10 seconds with the iterations done (or
    the cost path's models trained) and the time left; -1: nothing.
params : dict, optional
    Any other parameter of the algorithm by its cbudget name
    (``cbudget.algorithms.parameter_docs(name)`` lists them); unknown names raise.

Attributes
----------
model_ : cbudget.Model
    The trained model (%(model)s).
classes_ : ndarray of shape (n_classes,)
    The class labels (classifiers).
n_features_in_ : int
is_categorical_ : ndarray of bool, shape (n_features,)
    The categorical columns.
feature_names_in_ : ndarray of str
    Only when ``X`` has string column names.
best_iteration_ : int or None
    The best iteration of early stopping.
evals_result_ : dict
    ``{"valid_0": {metric: [values per iteration]}, ...}``.
feature_importances_ : ndarray of shape (n_features,)
    %(importance)s, normalised to sum 1.
    """


def _documented(iterations: str, model: str, importance: str) -> Any:
    """Complete the class docstring with the parameters every estimator shares."""
    def document(cls: type) -> type:
        common = _COMMON_DOC % {"iterations": iterations, "model": model,
                                "importance": importance}
        if issubclass(cls, _CostAwareBoosting):
            common = _COST_STAGES_DOC + common
        if issubclass(cls, (_GradientBoosting, _CostAwareBoosting)):
            common = _CATEGORICAL_DOC + _OBJECTIVE_DOC + common
        cls.__doc__ = (cls.__doc__ or "").rstrip() + "\n" + textwrap.indent(common, "    ")
        return cls
    return document


_OBJECTIVE_DOC = """\
objective : str or callable, optional
    Regressors: reg:squarederror (None), reg:absoluteerror, reg:pseudohubererror,
    reg:quantileerror, count:poisson, reg:tweedie, reg:gamma (or LightGBM's names;
    their parameters in ``params``, e.g. ``{"quantile_alpha": 0.9}``); rankers:
    rank:ndcg or rank:pairwise; classifiers: the one the labels imply. A callable, as
    LightGBM's: ``objective(y_true, y_pred[, weight[, group]]) -> (grad, hess)`` of the
    raw scores (with the weights applied), the labels' objective giving the base score
    and the prediction transform; a cost-aware estimator then needs a number for
    ``cost_tradeoff``.
"""
_CATEGORICAL_DOC = """\
categorical_features : "from_dtype", array-like of int, str or bool, or None
    The categorical columns, as in scikit-learn's HistGradientBoosting (whose default,
    "from_dtype", this follows): "from_dtype" takes a DataFrame's pandas ``category``
    columns -- and, unlike HistGradientBoosting, its string/object columns (mapped to
    categories in sorted order); indices, column names or a boolean mask name them (a
    numeric column then holds integer codes 0, 1, 2, ...; negative is missing); None:
    none. Their levels are kept in ``model_.categories``: ``predict`` maps a DataFrame's
    (or an object / string array's) levels by them (a level not seen in training goes
    to each split's "other" side), a numeric array is taken as codes (cbudget.Dataset's
    ``categorical_feature``). The estimators of the other algorithms take "from_dtype"
    and refuse such columns.
"""
_COST_STAGES_DOC = """\
cost_stages : list of [rounds, cost_tradeoff] pairs, optional
    Boosting in stages instead of one ``cost_tradeoff`` (leave that None): stage ``k``
    grows the next ``rounds`` rounds at its trade-off, e.g. ``[(150, 1e-3), (150,
    3e-4)]`` with ``n_estimators=300`` (which counts the rounds of all the stages: a
    stage past them is not trained, with a warning) to leave the costly features for
    the later trees
    (:attr:`cbudget.Booster.cost_stages`; exits at the stage boundaries with
    ``model_.calibrate_exits(data, epsilon, checks="stages")``).
"""
_BOOSTER_DOC = dict(iterations="Boosting rounds.", model="a cbudget.Booster",
                    importance="The total gain of each feature's splits")
_CSTC_DOC = dict(iterations="Sweeps of block coordinate descent (fewer once converged).",
                 model="a cbudget.ClassifierTree or cbudget.Cascade",
                 importance="The number of nodes that read each feature")


@_documented(**_BOOSTER_DOC)
class GBDTClassifier(_Classifier, _GradientBoosting):
    """Gradient boosting (``algorithm="gbdt"``) with cost accounting: binary or
    multi-class.

    Parameters
    ----------
    learning_rate, num_leaves, max_depth : optional
        As in cbudget (None: its defaults, 0.1, 31 leaves best-first, no depth limit).
    """
    _algorithm = "gbdt"


@_documented(**_BOOSTER_DOC)
class GBDTRegressor(_Regressor, _GradientBoosting):
    """Gradient boosting (``algorithm="gbdt"``) with cost accounting: squared error.

    Parameters
    ----------
    learning_rate, num_leaves, max_depth : optional
        As in cbudget (None: its defaults, 0.1, 31 leaves best-first, no depth limit).
    """
    _algorithm = "gbdt"


def _search_doc(weight: str, task: str) -> str:
    """The docs of a CEGB or Greedy Miser estimator's search parameters (``cost_tradeoff``,
    ``cost_budget``, ``path_points``, ``exit_epsilons``): ``weight`` says what lambda
    weighs; ``task`` is "classifier", "regressor" or "ranker"."""
    unit, each, rows = ("a document", "document", "queries") if task == "ranker" \
        else ("an input", "input", "rows")
    extras = {
        "classifier": "With ``cost_budget``, the search takes in two-stage cascades with "
                      "exits (``cost_path(cascades=True)``): if one is chosen, "
                      "``cost_tradeoff_`` is None and ``cost_stages_`` its stages, "
                      "those of the iterations it predicts with (early stopping may end "
                      "stage 2 sooner), as a ``cost_stages`` value (None otherwise).",
        "regressor": "No cascades (their exits would need a tolerance) nor exits.",
        "ranker": "No cascades nor exits."}
    empty = "one row" if task != "ranker" else "one query"
    text = (f"lambda, {weight}. None (the default) or \"path\": the search, chosen on a "
            f":func:`cbudget.cost_path` of ``path_points`` trade-offs from ``lambda_max`` "
            f"down, measured on the last ``eval_set`` (or on 20% of the training {rows} "
            f"held out, the model then trained on the other 80%): the best validation "
            f"score, or with ``cost_budget`` the best whose mean cost per {each} is within "
            f"it. It trains ``path_points`` models (and, with ``cost_budget``, cascades) "
            f"instead of one. The path is ``cost_path_``, the trade-off chosen "
            f"``cost_tradeoff_``, the eval_set's metrics per round ``evals_result_``. "
            f"{extras[task]} With nothing to search, the one model (``cost_path_`` None): "
            f"without costs (``lambda_max`` 0), at the algorithm's default trade-off (1; "
            f"every trade-off then gives the same model); "
            f"without validation data ({empty} and no ``eval_set``, or a holdout that "
            f"leaves no split worth its cost), at ``cbudget.sklearn.FALLBACK_TRADEOFF`` "
            f"(0.01) times ``lambda_max``. With "
            f"``cost_stages``, None trains those stages.")
    exits = ("With the search: the path's exit dimension (each trade-off's model also with "
             "exit rules calibrated at these epsilons, :func:`cbudget.cost_path`), so the "
             "model chosen may stop inputs early (``model_.exit_rules``)"
             + (", with ``exit_tolerance`` (required)." if task == "regressor" else ".")
             if task != "ranker" else
             "The exit dimension of the classifiers and regressors; a ranker's is a "
             "ValueError (a document's place depends on its query's other documents).")
    tolerance = {
        "classifier": "With the search: binary exits that also count as a disagreement an "
                      "exit moving the probability by more than this (in [0, 1]; "
                      ":meth:`cbudget.Booster.calibrate_exits`' ``tolerance``, which "
                      "keeps the log-loss near the full model's), for the exit dimension "
                      "and the cascades' exits; multiclass: a ValueError.",
        "regressor": "With ``exit_epsilons``: how far an exited prediction may be from "
                     "the full model's.",
        "ranker": "A ValueError, as ``exit_epsilons``."}[task]

    def entry(name: str, body: str) -> str:
        return f"    {name}\n" + textwrap.fill(body, 92, initial_indent=" " * 8,
                                               subsequent_indent=" " * 8,
                                               break_on_hyphens=False) + "\n"

    return (entry('cost_tradeoff : float, "path" or None, default None', text)
            + entry("cost_budget : float, optional",
                    f"With the search: the most {unit}'s prediction may cost on average. "
                    "The search picks the best model whose mean cost on the validation "
                    "data, plus one standard error of it, is within it: its expected cost "
                    "per input on unseen data is then within the budget with about 84% "
                    "confidence (50% for a model whose validation cost is at the budget).")
            + entry("path_points : int, default 16", "With the search: the trade-offs tried.")
            + entry("exit_epsilons : sequence of float, optional" if task != "ranker"
                    else "exit_epsilons : None", exits)
            + entry("exit_tolerance : float, optional" if task != "ranker"
                    else "exit_tolerance : None", tolerance))


_CEGB_WEIGHT = "the weight of a split's cost increment"
_GREEDY_MISER_WEIGHT = "the weight of a feature's cost the first time the model uses it"
_TREE_DOC = """    learning_rate, num_leaves, max_depth : optional
        As in cbudget (None: its defaults, 0.1, %s).
"""
_CEGB_TREES = _TREE_DOC % "31 leaves best-first, no depth limit"
_GREEDY_MISER_TREES = _TREE_DOC % "depth 4 level by level"


@_documented(**_BOOSTER_DOC)
class CEGBClassifier(_Classifier, _CostAwareBoosting):
    __doc__ = ("""Cost-efficient gradient boosting (``algorithm="cegb"``, Peter et al., NIPS 2017):
    binary or multi-class.

    Parameters
    ----------
""" + _search_doc(_CEGB_WEIGHT, "classifier") + _CEGB_TREES)
    _algorithm = "cegb"


@_documented(**_BOOSTER_DOC)
class CEGBRegressor(_Regressor, _CostAwareBoosting):
    __doc__ = ("""Cost-efficient gradient boosting (``algorithm="cegb"``, Peter et al., NIPS 2017):
    squared error.

    Parameters
    ----------
""" + _search_doc(_CEGB_WEIGHT, "regressor") + _CEGB_TREES)
    _algorithm = "cegb"


@_documented(**_BOOSTER_DOC)
class GreedyMiserClassifier(_Classifier, _CostAwareBoosting):
    __doc__ = ("""The Greedy Miser (``algorithm="greedy_miser"``, Xu et al., ICML 2012): binary or
    multi-class.

    Parameters
    ----------
""" + _search_doc(_GREEDY_MISER_WEIGHT, "classifier") + _GREEDY_MISER_TREES)
    _algorithm = "greedy_miser"


@_documented(**_BOOSTER_DOC)
class GreedyMiserRegressor(_Regressor, _CostAwareBoosting):
    __doc__ = ("""The Greedy Miser (``algorithm="greedy_miser"``, Xu et al., ICML 2012): squared
    error.

    Parameters
    ----------
""" + _search_doc(_GREEDY_MISER_WEIGHT, "regressor") + _GREEDY_MISER_TREES)
    _algorithm = "greedy_miser"


_RANKER_DOC = """

    ``fit(X, y, group=sizes)`` (or ``qid=ids``; ``eval_group`` / ``eval_qid`` with
    ``eval_set``); ``predict`` gives the documents' scores, ``score`` the mean NDCG@5.
    The objective is ``rank:ndcg`` (LambdaMART); ``params={"objective":
    "rank:pairwise"}`` for RankNet's pairwise loss. Costs are per document (each pays
    for the features its paths read); ``cost_report`` on a :class:`cbudget.Dataset`
    with groups also gives the mean cost per query.
"""


@_documented(**_BOOSTER_DOC)
class GBDTRanker(_Ranker, _GradientBoosting):
    __doc__ = ("""Gradient boosting (``algorithm="gbdt"``) for learning to rank.""" + _RANKER_DOC
               + """
    Parameters
    ----------
    learning_rate, num_leaves, max_depth : optional
        As in cbudget (None: its defaults, 0.1, 31 leaves best-first, no depth limit).
""")
    _algorithm = "gbdt"


@_documented(**_BOOSTER_DOC)
class CEGBRanker(_Ranker, _CostAwareBoosting):
    __doc__ = ("""Cost-efficient gradient boosting (``algorithm="cegb"``, Peter et al.,
    NIPS 2017) for learning to rank.""" + _RANKER_DOC + """
    Parameters
    ----------
""" + _search_doc(_CEGB_WEIGHT, "ranker") + _CEGB_TREES)
    _algorithm = "cegb"


@_documented(**_BOOSTER_DOC)
class GreedyMiserRanker(_Ranker, _CostAwareBoosting):
    __doc__ = ("""The Greedy Miser (``algorithm="greedy_miser"``, Xu et al., ICML 2012) for
    learning to rank: first-order steps on the ranking objective's lambdas.""" + _RANKER_DOC
               + """
    Parameters
    ----------
""" + _search_doc(_GREEDY_MISER_WEIGHT, "ranker") + _GREEDY_MISER_TREES)
    _algorithm = "greedy_miser"


@_documented(iterations="The most trees (fewer when ``budget`` is reached).",
             model="a cbudget.Forest",
             importance="The total impurity decrease of each feature's splits")
class BudgetRFClassifier(_Classifier, _CostAwareEstimator):
    """The feature-budgeted random forest (``algorithm="budget_rf"``, Nan, Wang and
    Saligrama, ICML 2015): binary or multi-class.

    ``predict`` is the forest's majority vote (as ``model_.predict``) and
    ``predict_proba`` the share of the trees voting for each class, so that the vote is
    its argmax; ``model_.predict_proba(X)`` gives the summed leaf class counts instead.

    Parameters
    ----------
    budget : float, optional
        Trees are added until the mean prediction cost per input on the last
        ``eval_set`` exceeds it (that tree is dropped).
    alpha : float, optional
        threshold-Pairs alpha: larger gives shallower trees (None: 0).
    max_depth : int, optional
        Depth limit of a tree (None: none).
    """
    _algorithm = "budget_rf"

    def __init__(self, *, n_estimators: int = 100, budget: float | None = None,
                 alpha: float | None = None, max_depth: int | None = None,
                 feature_costs: FeatureCosts | None = None,
                 cost_groups: CostGroups | None = None, group_costs: GroupCosts | None = None,
                 default_cost: float | None = None, coupled_costs: FeatureCosts | None = None,
                 split_cost: float | None = None, tree_cost: float | None = None,
                 early_stopping_rounds: int | None = None, random_state: RandomStateLike = None,
                 n_jobs: int | None = None, verbose: bool | int = False,
                 params: dict[str, Any] | None = None) -> None:
        super().__init__(n_estimators=n_estimators, feature_costs=feature_costs,
                         cost_groups=cost_groups, group_costs=group_costs,
                         default_cost=default_cost, coupled_costs=coupled_costs,
                         split_cost=split_cost, tree_cost=tree_cost,
                         early_stopping_rounds=early_stopping_rounds,
                         random_state=random_state, n_jobs=n_jobs, verbose=verbose,
                         params=params)
        self.budget = budget
        self.alpha = alpha
        self.max_depth = max_depth

    def _algorithm_params(self) -> dict[str, Any]:
        return {"algorithm": self._algorithm, "budget": self.budget, "alpha": self.alpha,
                "max_depth": self.max_depth}

    def _eval_set_needed_for(self) -> list[str]:
        return super()._eval_set_needed_for() + (["budget"] if self.budget is not None
                                                 else [])

    def _class_probabilities(self, X: np.ndarray) -> np.ndarray:
        forest = self.model_
        assert isinstance(forest, Forest)     # what budget_rf trains
        return forest.predict_proba(X, votes=True)


@_documented(**_CSTC_DOC)
class CSTCClassifier(_Classifier, _ClassifierTrees):
    """A tree (``algorithm="cstc"``) or cascade (``"cscc"``, ``"cronus"``) of linear
    classifiers (Xu et al., JMLR 2014): binary classification only.

    Parameters
    ----------
    algorithm : {"cstc", "cscc", "cronus"}, default "cstc"
    cost_tradeoff : float, optional
        lambda, the weight of the relaxed expected feature cost (None: 0.01).
    max_depth : int, optional
        Levels of the tree, stages of a cascade (None: 3 for a tree, 4 for a cascade).
    """
    _binary_only = True


@_documented(**_CSTC_DOC)
class CSTCRegressor(_Regressor, _ClassifierTrees):
    """A tree (``algorithm="cstc"``) or cascade (``"cscc"``, ``"cronus"``) of linear
    regressors (Xu et al., JMLR 2014): squared error.

    Parameters
    ----------
    algorithm : {"cstc", "cscc", "cronus"}, default "cstc"
    cost_tradeoff : float, optional
        lambda, the weight of the relaxed expected feature cost (None: 0.01).
    max_depth : int, optional
        Levels of the tree, stages of a cascade (None: 3 for a tree, 4 for a cascade).
    """


@_documented(iterations="ADAPT-GBRT's rounds, ADAPT-LIN's alternations (at most).",
             model="a cbudget.GatedModel",
             importance="The total gain of the gate's and the predictor's splits "
                        "(ADAPT-LIN: their weights' magnitudes)")
class ADAPTClassifier(_Classifier, _CostAwareEstimator):
    """A cheap gate and predictor in front of an expensive model
    (``algorithm="adapt_gbrt"`` or ``"adapt_lin"``, Nan and Saligrama, NIPS 2017):
    binary classification only.

    Parameters
    ----------
    algorithm : {"adapt_gbrt", "adapt_lin"}, default "adapt_gbrt"
    expensive_model : fitted estimator or model, optional
        The expensive model f0, fitted with the same classes: a fitted cbudget estimator
        (same features and costs) or cbudget Model, a ``cbudget.ExternalModel``, or any
        fitted classifier with ``predict_proba``, taken as
        ``cbudget.ExternalModel(clf, features="all")`` (an input sent to it pays for every
        feature). ``clone`` (grid search, cross-validation) leaves an estimator unfitted:
        wrap it in ``sklearn.frozen.FrozenEstimator``. None: a ``GBDTClassifier`` with
        the same ``n_estimators``, costs and seed is fitted as f0 on the training data.
        After fit, ``expensive_model_`` is the f0 used (a cbudget Model or
        ``ExternalModel``).
    p_full : float, optional
        At most this share of the training inputs goes to f0 (None: 0.2).
    cost_tradeoff : float, optional
        gamma, the weight of the cost penalty (None: 1 for adapt_gbrt, 0.01 for
        adapt_lin).
    """
    _binary_only = True

    def __init__(self, *, algorithm: str = "adapt_gbrt", expensive_model: Any = None,
                 n_estimators: int = 100, p_full: float | None = None,
                 cost_tradeoff: float | None = None,
                 feature_costs: FeatureCosts | None = None,
                 cost_groups: CostGroups | None = None, group_costs: GroupCosts | None = None,
                 default_cost: float | None = None, coupled_costs: FeatureCosts | None = None,
                 split_cost: float | None = None, tree_cost: float | None = None,
                 early_stopping_rounds: int | None = None, random_state: RandomStateLike = None,
                 n_jobs: int | None = None, verbose: bool | int = False,
                 params: dict[str, Any] | None = None) -> None:
        super().__init__(n_estimators=n_estimators, feature_costs=feature_costs,
                         cost_groups=cost_groups, group_costs=group_costs,
                         default_cost=default_cost, coupled_costs=coupled_costs,
                         split_cost=split_cost, tree_cost=tree_cost,
                         early_stopping_rounds=early_stopping_rounds,
                         random_state=random_state, n_jobs=n_jobs, verbose=verbose,
                         params=params)
        self.algorithm = algorithm
        self.expensive_model = expensive_model
        self.p_full = p_full
        self.cost_tradeoff = cost_tradeoff

    def _algorithm_params(self) -> dict[str, Any]:
        check_algorithm(self.algorithm, GatedModel)
        return {"algorithm": self.algorithm, "p_full": self.p_full,
                "cost_tradeoff": self.cost_tradeoff}

    def _expensive_model(self, dtrain: Dataset, seed: int) -> Any:
        f0 = self.expensive_model
        if f0 is None:
            default = GBDTClassifier(n_estimators=self.n_estimators, n_jobs=self.n_jobs)
            return train(default._training_params({"objective": "binary:logistic"}, seed),
                         dtrain, self.n_estimators, verbose_eval=False)
        if isinstance(f0, (Model, ExternalModel)):
            return f0
        if not callable(getattr(f0, "predict_proba", None)):
            raise TypeError(f"expensive_model must be a fitted classifier with predict_proba, "
                            f"a cbudget Model or a cbudget.ExternalModel, got "
                            f"{type(f0).__name__}")
        if callable(getattr(f0, "fit", None)):
            try:
                check_is_fitted(f0)
            except NotFittedError:
                raise ValueError(
                    f"expensive_model {type(f0).__name__} is not fitted: fit it first; "
                    "clone() (GridSearchCV, cross_val_score) copies estimator parameters "
                    "unfitted, so wrap it in sklearn.frozen.FrozenEstimator") from None
        classes = getattr(f0, "classes_", None)
        # compared as Python values: numbers against strings are unequal, where NumPy < 2
        # warned that it could not compare them elementwise
        if classes is not None and np.asarray(classes).tolist() != self.classes_.tolist():
            raise ValueError(f"expensive_model was fitted on classes {list(classes)}, "
                             f"not {self.classes_.tolist()}")
        model = getattr(f0, "model_", None)     # a fitted cbudget estimator
        return model if isinstance(model, Model) else ExternalModel(f0, features="all")


# -- cost-aware model selection ------------------------------------------------------------
def predict_cost(estimator: Any, X: MatrixLike) -> np.ndarray:
    """The prediction cost of each input of a fitted estimator that ends in a cbudget
    one: a cbudget estimator or model; a ``Pipeline`` (``X`` through its transforming
    steps, then its last step's cost: scikit-learn's meta-estimators forward
    ``predict`` but no other method); a fitted search (``GridSearchCV``...: its
    ``best_estimator_``).

    Raises
    ------
    TypeError
        For an estimator that does not end in a cbudget estimator or model.
    """
    while True:
        if isinstance(estimator, (Model, _CostAwareEstimator)):
            return estimator.predict_cost(X)
        if isinstance(estimator, Pipeline):
            for _, step in estimator.steps[:-1]:
                if step is not None and step != "passthrough":
                    X = step.transform(X)
            estimator = estimator.steps[-1][1]
        elif hasattr(estimator, "best_estimator_"):
            estimator = estimator.best_estimator_
        else:
            raise TypeError(f"predict_cost needs a cbudget estimator or model, or a "
                            f"pipeline or fitted search ending in one; got "
                            f"{type(estimator).__name__}")


# how far below every candidate within the budget one over it scores (make_cost_scorer):
# finite (a search averages the folds' scores), and more the dearer the candidate
OVER_BUDGET = 1e6


def make_cost_scorer(metric: str | Callable[..., float] = "accuracy", *,
                     cost_weight: float | None = None,
                     budget: float | None = None) -> Callable[..., float]:
    """A scorer for scikit-learn's model selection (``GridSearchCV(scoring=...)``,
    ``cross_val_score``) that weighs the mean prediction cost against ``metric``, through
    pipelines and searches (:func:`predict_cost`).

    Parameters
    ----------
    metric : str or callable, default "accuracy"
        A scikit-learn scorer name (``"roc_auc"``, ``"neg_log_loss"``, ...) or a scorer
        ``metric(estimator, X, y) -> float`` (higher is better).
    cost_weight : float, optional
        The score is ``metric - cost_weight * mean cost``.
    budget : float, optional
        The score is ``metric`` for a candidate whose mean cost on the scored inputs is
        within ``budget``; a candidate over it scores about ``-1e6`` (:data:`OVER_BUDGET`,
        lower the dearer it is), below every candidate within it. Give ``cost_weight``
        or ``budget``.

    Returns
    -------
    callable
        ``scorer(estimator, X, y) -> float``.
    """
    if (cost_weight is None) == (budget is None):
        raise ValueError("give cost_weight or budget (one of them)")
    limit = cost_weight if budget is None else budget
    if isinstance(limit, bool) or not isinstance(limit, (int, float)) \
            or not math.isfinite(limit) or limit < 0:
        raise ValueError(f"{'cost_weight' if budget is None else 'budget'} must be a "
                         f"finite number >= 0, got {limit!r}")
    scorer = get_scorer(metric) if isinstance(metric, str) else metric
    if not callable(scorer):
        raise TypeError(f"metric must be a scorer name or a callable, got {metric!r}")

    def cost_scorer(estimator: Any, X: MatrixLike, y: ArrayLike) -> float:
        score = float(scorer(estimator, X, y))
        cost = float(np.mean(predict_cost(estimator, X)))
        if budget is None:
            return score - float(cost_weight) * cost   # type: ignore[arg-type]
        if cost <= budget:
            return score
        return score - OVER_BUDGET * (1.0 + (cost - budget) / (cost + budget))

    return cost_scorer

