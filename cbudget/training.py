"""``train()``: the boosting loop in the style of ``xgboost.train``, and the BudgetRF loop."""
import copy
import os
import time
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse

from ._core._acquisition import AcquisitionState
from ._core._openmp_helpers import resolve_n_threads
from ._core._grower import TreeGrower
from ._core._predict import predict_binned_add
from ._core._stumps import grow_greedy_tree
from .booster import Booster
from ._core._linear import LOSS_LOGISTIC, LOSS_SQUARED
from ._adapt_training import train_gated
from ._cstc_solver import TreeProblem, validation_score
from .cstc import Cascade, ClassifierTree, node_inputs, score_transform
from .callback import BudgetStopping, CallbackContainer, EarlyStopping, EvaluationMonitor
from .dataset import Dataset, check_model_matches
from .forest import Forest
from .metrics import check_metric, evaluate_metric
from .model_io import load_model
from .objectives import get_objective
from .params import (ADAPT_ALGORITHMS, CLASSIFIER_TREE_ALGORITHMS, COST_AWARE_ALGORITHMS,
                     resolve_params)

__all__ = ["train"]


def _check_evals(evals, dtrain):
    if evals is None:
        return []
    if isinstance(evals, tuple) and len(evals) == 2 and isinstance(evals[0], Dataset):
        evals = [evals]
    out = []
    names = set()
    for item in evals:
        if not (isinstance(item, (tuple, list)) and len(item) == 2
                and isinstance(item[0], Dataset) and isinstance(item[1], str)):
            raise TypeError("evals must be a list of (Dataset, name) pairs")
        data, name = item
        if data.label is None:
            raise ValueError(f"evaluation data {name!r} has no label")
        if data.num_feature() != dtrain.num_feature():
            raise ValueError(f"evaluation data {name!r} has {data.num_feature()} features, "
                             f"training data has {dtrain.num_feature()}")
        if name in names:
            raise ValueError(f"two evaluation data sets are named {name!r}")
        names.add(name)
        out.append((data, name))
    return out


def _binned_like(data, dtrain):
    """The evaluation data binned with the training edges (shared when built with
    ``reference=dtrain``)."""
    if data is dtrain or data.bin_edges is dtrain.bin_edges:
        return data.binned
    return dtrain.bin_data(data.data)


def _initial_base_score(params, objective, y, weight):
    if params["base_score"] is None:
        return objective.base_score(y, weight)
    value = params["base_score"]
    if objective.name == "binary:logistic":
        if not 0 < value < 1:
            raise ValueError("base_score for binary:logistic is a probability in (0, 1)")
        value = np.log(value / (1 - value))
    return np.full(objective.n_outputs, value, dtype=np.float64)


def _init_model(xgb_model, dtrain, objective, model_class=None):
    """The model to continue from (a Booster / Forest or a saved model's path), checked
    against the training data."""
    if xgb_model is None:
        return None
    model_class = model_class or Booster
    if isinstance(xgb_model, (str, os.PathLike)):
        xgb_model = load_model(xgb_model)
    if not isinstance(xgb_model, model_class):
        raise TypeError(f"xgb_model must be a cbudget.{model_class.__name__} or the path of "
                        f"a saved one, got {type(xgb_model).__name__}")
    num_class = (objective.num_class if model_class is Booster
                 else max(2, objective.num_class))
    if (xgb_model.objective, xgb_model.num_class) != (objective.name, num_class):
        raise ValueError(f"xgb_model was trained for {xgb_model.objective} with num_class="
                         f"{xgb_model.num_class}, not {objective.name} with num_class={num_class}")
    check_model_matches(xgb_model, dtrain, "xgb_model",
                        "a model has one cost model; give dtrain the model's costs")
    return xgb_model


def _initial_raw(init, data, base_score):
    """Raw scores (n_samples, n_outputs) before the first new round."""
    if init is None:
        return np.tile(base_score, (data.num_data(), 1))
    raw = init.predict(data, output_margin=True)
    return np.ascontiguousarray(raw.reshape(data.num_data(), -1), dtype=np.float64)


def _acquisition_state(dtrain, init):
    """The cost-aware learners' state (per-input acquisitions, features and groups the
    model uses); when continuing, restored by routing the training inputs through the
    existing trees."""
    cost_model = dtrain.cost_model
    state = AcquisitionState(dtrain.num_data(), cost_model.feature_group, cost_model.n_groups)
    if init is not None and init.num_boosted_rounds():
        _, bitsets = init._costs(dtrain.data)
        state.load_bitsets(bitsets[0], bitsets[1], init.used_features())
    return state


def _penalty_costs(algorithm, costs):
    """The costs a split pays, as :meth:`TreeGrower.set_cost_penalty` takes them
    (per-input feature and group costs, once-per-model feature and group costs, split
    cost). CEGB: as the cost model defines them. Greedy Miser: the paper's phi -- a
    feature's whole cost (``feature_costs + coupled_costs``) the first time the model
    uses it, its group's cost the first time the model uses any member, nothing after;
    no per-input or split terms."""
    if algorithm == "cegb":
        return (costs.feature_costs, costs.feature_group, costs.group_costs,
                costs.coupled_costs, np.zeros(costs.n_groups), costs.split_cost)
    return (np.zeros(costs.n_features), costs.feature_group, np.zeros(costs.n_groups),
            costs.feature_costs + costs.coupled_costs, costs.group_costs, 0.0)


def _log_metrics(evals_log, name, metrics, data, pred):
    """Append each metric of predictions ``pred`` on evaluation set ``name``."""
    log = evals_log.setdefault(name, {})
    for metric in metrics:
        log.setdefault(metric, []).append(evaluate_metric(metric, data.label, pred, data.weight))


def _callbacks(callbacks, verbose_eval, early_stopping_rounds, extra=()):
    cb_list = list(callbacks or [])
    if verbose_eval:
        cb_list.append(EvaluationMonitor(period=1 if verbose_eval is True else int(verbose_eval)))
    if early_stopping_rounds is not None:
        cb_list.append(EarlyStopping(early_stopping_rounds))
    return CallbackContainer(cb_list + list(extra))


def train(params, dtrain, num_boost_round=100, *, evals=(), early_stopping_rounds=None,
          evals_result=None, verbose_eval=True, callbacks=None, xgb_model=None,
          expensive_model=None):
    """Train a boosted tree model (or a budgeted forest).

    Parameters
    ----------
    params : dict
        Training parameters; see ``cbudget.params.DEFAULT_PARAMS`` for names and
        defaults (XGBoost names where one exists, plus ``num_leaves``, ``max_bin`` on
        the Dataset, ``min_data_in_leaf``). ``algorithm`` selects the learner:

        * ``"gbdt"``: gradient boosting (second-order, histogram trees);
        * ``"cegb"``: cost-efficient gradient boosting (Peter et al., NIPS 2017). Each
          split pays ``cost_tradeoff`` (lambda, default 1) times its cost increment:
          ``split_cost * |leaf|`` + ``coupled_costs[m]`` if the model does not use
          ``m`` yet + ``feature_costs[m]`` per input of the leaf that has not acquired
          ``m`` yet (+ ``group_costs`` per input that has not touched ``m``'s group),
          with the Dataset's costs. Which training inputs have acquired which features
          is kept across trees and rounds. Trees grow best-first without a depth limit
          by default. With ``subsample < 1``, the inputs left out of a round are still
          routed through its trees afterwards and charged for the features on their
          paths (LightGBM only updates the in-bag inputs). The trees of one round of a
          multiclass model grow one after another (each sees the acquisitions of the
          previous ones), not in parallel.
        * ``"greedy_miser"``: the Greedy Miser (Xu et al., ICML 2012): stage-wise
          (first-order) regression with step ``learning_rate`` (0.1) and depth-limited
          CART trees (``grow_policy="depthwise"``, ``max_depth=4``, ``reg_lambda=0``:
          a leaf holds its rows' mean residual). A tree minimises
          ``1/2 sum_i (r_i - h(x_i))^2 + cost_tradeoff * sum_m phi_m c_m F_m``: a
          split on a feature that no tree of the model (this one included) uses yet
          pays ``cost_tradeoff`` times its cost ``feature_costs[m] + coupled_costs[m]``
          (+ ``group_costs[g]`` if no member of its group is used yet, so group-mates
          then cost only their own marginal cost); later uses are free. Multiclass:
          one tree per class per round, grown one after another, sharing phi. The
          number of rounds is the tree budget: with the Dataset's ``tree_cost`` (e),
          :meth:`Booster.best_iteration_within_budget` picks the best validation round
          within a total budget.
        * ``"budget_rf"``: the feature-budgeted random forest (Nan et al., ICML 2015);
          returns a :class:`Forest` of classification trees (``binary:logistic``, or
          ``multi:softprob`` with ``num_class``). Each tree is grown on a bootstrap
          sample (``subsample`` x n rows, with replacement) by GREEDYTREE: a node splits
          on the feature of least risk ``c(t) / (worst-child impurity decrease)`` of
          its best random stump (``n_stumps``, ``stump_node_sizes``; ``"all"``: every
          threshold), until the impurity (``impurity``: ``"threshold_pairs"`` with
          ``alpha``, ``"gini"``, ``"entropy"``) is 0 or ``max_depth`` is reached. c(t)
          is ``feature_costs[t]`` (0 for a feature already on the path with
          ``path_free=True``) + its group's cost if the path has not touched the group
          + ``split_cost``. Trees are added until the mean prediction cost on the last
          data set of ``evals`` exceeds ``budget`` (that tree is dropped), or
          ``n_estimators`` (default ``num_boost_round``) trees; ``n_jobs`` trees grow
          at once, and tree ``t`` depends only on ``seed`` and ``t``. The boosting
          parameters (``learning_rate``, ``num_leaves``, ...) are refused. Default
          metric: the vote's ``error`` / ``merror``.

        * ``"cstc"``, ``"cscc"``, ``"cronus"``: trees and cascades of linear classifiers
          (Xu et al., JMLR 2014; ``reg:squarederror`` or ``binary:logistic``); return a
          :class:`ClassifierTree` (cstc) or :class:`Cascade`. Each node scores and
          routes with ``x . w + b > theta``; training minimises every node's loss
          weighted by its reach probability (cscc, cronus: exit probability times
          ``class_weight``) + ``reg_alpha`` x l1 + ``cost_tradeoff`` (default 0.01) x
          the relaxed expected cost (per path ``sum_a c_a sqrt(sum_nodes w_a^2)``;
          cronus: reach-weighted weights in one norm), by block coordinate descent:
          ``num_boost_round`` is the number of sweeps (fewer when the objective changes
          less than ``tol``; evaluation and early stopping per sweep; the best sweep is
          kept). ``max_depth`` levels (default 3; cascades: stages, default 4),
          ``tree_structure`` "full", "prune" or "greedy" (the last two on the last
          ``evals`` set), ``loss`` "squared" (the paper's, +-1 targets) or "logistic",
          ``fine_tune`` (re-fit the leaves without the cost term), ``basis_trees`` > 0
          for the boosting trick (``basis_max_depth``, ``basis_learning_rate``). The
          boosting and budget_rf parameters are refused; ``xgb_model`` is not
          supported.
        * ``"adapt_gbrt"``, ``"adapt_lin"``: a gate and a low-cost predictor in front of
          ``expensive_model`` (Nan and Saligrama, NIPS 2017; binary, labels 0/1 or
          -1/+1); return a :class:`GatedModel`. Alternating minimisation: a q-step
          (the soft routing ``q_i = 1 / (1 + exp(B_i - A_i + beta))``, at most
          ``p_full`` (default 0.2) of the inputs to the expensive model), then the gate
          and predictor. adapt_gbrt: ``num_boost_round`` rounds, each adding one Greedy
          Miser tree to the predictor and one to the gate, with a q-step every
          ``q_update_period`` (10) rounds; a split on a feature no tree of either uses
          yet pays ``cost_tradeoff`` (gamma, default 1) times its cost
          (``acquisition="input"``: per input that has not acquired it, as CEGB). The
          tree parameters are Greedy Miser's. adapt_lin: linear gate and predictor with
          the penalty ``cost_tradeoff`` (0.01) x ``sum_a c_a sqrt(g_a^2 + f1_a^2)`` and
          a ridge ``reg_lambda`` (1e-4) on the raw (centred) features, solved by L-BFGS;
          ``num_boost_round`` alternations at most (until the objective changes less
          than ``tol``), from ``n_restarts`` (4) starts, the lowest objective kept.
          Evaluation and early stopping use the gated predictions; the model is cut to
          the best iteration.

        An unknown name raises ValueError listing the valid ones.
    dtrain : Dataset
        Training data with labels.
    num_boost_round : int, default 100
    evals : list of (Dataset, str)
        Data sets evaluated after every round (build them with ``reference=dtrain``
        to share bin edges).
    early_stopping_rounds : int, optional
        Stop when the last metric on the last eval set has not improved for this many
        rounds; the booster's ``best_iteration``/``best_score`` are set. All rounds are
        kept: predict with ``iteration_range=(0, best_iteration + 1)`` or slice the
        booster.
    evals_result : dict, optional
        Filled with ``{data name: {metric: [values]}}``.
    verbose_eval : bool or int, default True
        Print the metrics every round (or every ``verbose_eval`` rounds).
    callbacks : list of TrainingCallback, optional
    expensive_model : cbudget model or ExternalModel
        adapt_gbrt / adapt_lin only: the expensive model f0 (a binary cbudget model with
        the same features and costs, or ``cbudget.ExternalModel(estimator, cost=... or
        features=...)`` for anything with ``predict_proba``).
    xgb_model : Booster or path, optional
        Continue training this model (same objective, features and costs): its trees
        are kept, new rounds are added to them. For CEGB and Greedy Miser the
        acquisition state is restored by routing the training inputs through the
        existing trees. Row and
        column sampling depend only on ``seed`` and the round number, so training
        ``a`` rounds and continuing for ``b`` grows the same trees as ``a + b`` rounds
        at once (up to floating-point rounding of the restored scores).

    Returns
    -------
    Booster; Forest for ``algorithm="budget_rf"``; ClassifierTree for "cstc"; Cascade
    for "cscc" and "cronus"; GatedModel for "adapt_gbrt" and "adapt_lin"
    """
    p = resolve_params(params)
    if not isinstance(dtrain, Dataset):
        raise TypeError(f"dtrain must be a cbudget.Dataset, got {type(dtrain).__name__}")
    if dtrain.label is None:
        raise ValueError("dtrain has no label")
    adapt = p["algorithm"] in ADAPT_ALGORITHMS
    if expensive_model is not None and not adapt:
        raise ValueError(f"expensive_model applies to algorithms {list(ADAPT_ALGORITHMS)}, "
                         f"not to {p['algorithm']!r}")
    if adapt:
        dtrain = _zero_one_labels(dtrain)
        if evals:
            evals = [(_zero_one_labels(data), name) for data, name in _check_evals(evals, dtrain)]
    if isinstance(num_boost_round, bool) or not isinstance(num_boost_round, (int, np.integer)) \
            or num_boost_round < 0:
        raise ValueError(f"num_boost_round must be an integer >= 0, got {num_boost_round!r}")
    objective = get_objective(p["objective"], p["num_class"])
    y, weight = dtrain.label, dtrain.weight
    if p["algorithm"] == "budget_rf" and objective.num_class == 1 and np.max(y) > 1:
        raise ValueError(f"budget_rf: the labels go up to {np.max(y):g}; give num_class "
                         "(the number of classes) for a multi-class forest")
    objective.check_label(y)
    metrics = p["eval_metric"] or [_default_metric(p, objective)]
    for metric in metrics:
        check_metric(metric, objective.name)
    evals = _check_evals(evals, dtrain)
    for data, name in evals:
        objective.check_label(data.label)
    n_threads = resolve_n_threads(p["n_jobs"])
    if p["algorithm"] in CLASSIFIER_TREE_ALGORITHMS:
        return _train_classifier_tree(p, dtrain, num_boost_round, objective, metrics, evals,
                                      n_threads, early_stopping_rounds=early_stopping_rounds,
                                      evals_result=evals_result, verbose_eval=verbose_eval,
                                      callbacks=callbacks, xgb_model=xgb_model)
    if adapt:
        return _train_gated(p, dtrain, num_boost_round, objective, metrics, evals, n_threads,
                            expensive_model=expensive_model,
                            early_stopping_rounds=early_stopping_rounds,
                            evals_result=evals_result, verbose_eval=verbose_eval,
                            callbacks=callbacks, xgb_model=xgb_model)
    if p["algorithm"] == "budget_rf":
        return _train_forest(p, dtrain, num_boost_round, objective, metrics, evals,
                             n_threads, early_stopping_rounds=early_stopping_rounds,
                             evals_result=evals_result, verbose_eval=verbose_eval,
                             callbacks=callbacks, xgb_model=xgb_model)

    init = _init_model(xgb_model, dtrain, objective)
    if init is None:
        base_score = _initial_base_score(p, objective, y, weight)
        booster = Booster(objective=objective.name, num_class=objective.num_class,
                          base_score=base_score, feature_names=dtrain.feature_names,
                          cost_model=dtrain.cost_model, params=p)
        start_round = 0
    else:
        booster = init[:]
        booster.params, booster.algorithm = dict(p), p["algorithm"]
        base_score = booster.base_score
        start_round = booster.num_boosted_rounds()

    container = _callbacks(callbacks, verbose_eval, early_stopping_rounds)

    n_samples, n_features = dtrain.data.shape
    n_outputs = objective.n_outputs
    raw_train = _initial_raw(init, dtrain, base_score)
    eval_state = [(name, data, _binned_like(data, dtrain), _initial_raw(init, data, base_score))
                  for data, name in evals]
    grad = np.empty((n_samples, n_outputs), dtype=np.float64, order="F")
    hess = np.empty((n_samples, n_outputs), dtype=np.float64, order="F")
    all_rows = np.arange(n_samples, dtype=np.int32)
    n_sub_rows = max(1, int(round(p["subsample"] * n_samples)))
    n_sub_features = max(1, int(round(p["colsample_bytree"] * n_features)))
    # a feature with a single bin can never be split: skip its histograms
    splittable = (dtrain.n_value_bins >= 2).astype(np.uint8)
    evals_log = {}
    edges, edges_indptr = dtrain.flat_bin_edges()
    cost_state = (_acquisition_state(dtrain, init)
                  if p["algorithm"] in COST_AWARE_ALGORITHMS else None)
    # Greedy Miser is first order: CART on the residuals, the hessian is the weight.
    if p["algorithm"] == "greedy_miser":
        unit = np.ones(n_samples) if weight is None else weight
        grow_hess = np.asfortranarray(np.repeat(unit[:, None], n_outputs, axis=1))
    else:
        grow_hess = hess
    # Multiclass: the trees of one round are independent given the gradients, so they
    # grow in parallel, one single-threaded grower per thread (the same trees as one
    # grower using all threads: growth does not depend on the thread count). Not for
    # the cost-aware learners, where each tree depends on the previous ones' features.
    tree_parallel = n_outputs > 1 and n_threads > 1 and cost_state is None
    n_growers = min(n_threads, n_outputs) if tree_parallel else 1
    growers = [TreeGrower(
        dtrain.binned, edges, edges_indptr, dtrain.n_value_bins, dtrain.missing_bin,
        p["learning_rate"], p["reg_lambda"], p["min_child_weight"], p["gamma"],
        p["min_data_in_leaf"], p["num_leaves"] or -1,
        -1 if p["max_depth"] is None else p["max_depth"], p["grow_policy"] == "lossguide",
        1 if tree_parallel else n_threads) for _ in range(n_growers)]
    threads_per_tree = 1 if tree_parallel else n_threads
    if cost_state is not None:
        growers[0].set_cost_penalty(cost_state, p["cost_tradeoff"],
                                    *_penalty_costs(p["algorithm"], dtrain.cost_model))

    rows_buffers = [np.empty(n_samples, dtype=np.int32) for _ in growers]
    # The cost-aware learners track the training inputs' acquisitions anyway: the
    # training cost after each round follows from the state, no routing pass needed
    # after training (when continuing a model, the pass is run instead).
    track_costs = cost_state is not None and init is None
    split_visits = [0]            # split nodes visited by all training inputs so far
    train_cost_curve = []

    def grow_tree(grower_index, k, in_bag, out_of_bag, feature_mask):
        """Grow the tree of output k and add it to the training and evaluation scores."""
        grower = growers[grower_index]
        rows = rows_buffers[grower_index][:in_bag.shape[0]]
        rows[:] = in_bag      # the grower reorders its rows: never in_bag itself
        tree = grower.grow(grad[:, k], grow_hess[:, k], rows, feature_mask)
        if cost_state is not None:
            split_visits[0] += int(tree["n_samples"][tree["left"] != -1].sum())
            if out_of_bag.shape[0]:
                split_visits[0] += cost_state.acquire_along_paths(
                    dtrain.binned, tree, dtrain.missing_bin, out_of_bag)
        if in_bag is all_rows:   # every row sits in a leaf of the partition
            grower.add_leaf_values(rows, raw_train, k)
        else:
            predict_binned_add(dtrain.binned, tree, dtrain.missing_bin, raw_train, k,
                               threads_per_tree)
        for _, _, binned, raw in eval_state:
            predict_binned_add(binned, tree, dtrain.missing_bin, raw, k, threads_per_tree)
        return tree

    def grow_trees(grower_index, jobs):
        return [grow_tree(grower_index, *job) for job in jobs]

    pool = ThreadPoolExecutor(max_workers=n_growers) if tree_parallel else None
    booster = container.before_training(booster)
    try:
        for epoch in range(start_round, start_round + num_boost_round):
            if container.before_iteration(booster, epoch, evals_log):
                break
            objective.gradients(raw_train, y, weight, grad, hess, n_threads)
            # sampling depends on the seed and the round only (continuation repeats it)
            rng = np.random.default_rng([p["seed"], epoch])
            out_of_bag = all_rows[:0]
            if n_sub_rows < n_samples:
                in_bag_mask = np.zeros(n_samples, dtype=bool)
                in_bag_mask[rng.choice(n_samples, n_sub_rows, replace=False)] = True
                in_bag = np.flatnonzero(in_bag_mask).astype(np.int32)
                out_of_bag = np.flatnonzero(~in_bag_mask).astype(np.int32)
            else:
                in_bag = all_rows
            jobs = []
            for k in range(n_outputs):
                feature_mask = splittable.copy()
                if n_sub_features < n_features:
                    sampled = np.zeros(n_features, dtype=np.uint8)
                    sampled[rng.choice(n_features, n_sub_features, replace=False)] = 1
                    feature_mask &= sampled
                jobs.append((k, in_bag, out_of_bag, feature_mask))
            if pool is None:
                trees = grow_trees(0, jobs)
            else:
                parts = [pool.submit(grow_trees, g, jobs[g::n_growers]) for g in range(n_growers)]
                grown = [part.result() for part in parts]
                trees = [grown[k % n_growers][k // n_growers] for k in range(n_outputs)]
            for k, tree in enumerate(trees):
                booster._append_tree(tree, k)
            booster._end_round()
            if track_costs:
                costs = dtrain.cost_model
                train_cost_curve.append(
                    (costs.feature_costs @ cost_state.acquired_counts
                     + costs.group_costs @ cost_state.touched_counts
                     + costs.split_cost * split_visits[0]) / n_samples
                    + costs.tree_cost * len(booster.trees))
            for name, data, _, raw in eval_state:
                _log_metrics(evals_log, name, metrics, data, objective.transform(raw))
            if container.after_iteration(booster, epoch, evals_log):
                break
    finally:
        if pool is not None:
            pool.shutdown()
    booster = container.after_training(booster)
    booster._record_training_costs(dtrain, [(name, data) for data, name in evals],
                                   train_cost_curve if track_costs else None)
    if evals_result is not None:
        evals_result.clear()
        evals_result.update(evals_log)
    return booster


def _zero_one_labels(data):
    """``data`` with labels -1/+1 as 0/1 (a shallow copy; 0/1 labels unchanged)."""
    y = data.label
    if y is None or not np.any(y == -1) or not np.all((y == -1) | (y == 1)):
        return data
    data = copy.copy(data)
    data.label = (y > 0).astype(np.float64)
    return data


def _train_gated(p, dtrain, num_boost_round, objective, metrics, evals, n_threads, *,
                 expensive_model, early_stopping_rounds, evals_result, verbose_eval,
                 callbacks, xgb_model):
    """ADAPT-GBRT / ADAPT-LIN (see ``cbudget._adapt_training``)."""
    if xgb_model is not None:
        raise ValueError(f"{p['algorithm']} cannot continue a model (xgb_model): the gate "
                         "and the predictor are trained together from the start")
    container = _callbacks(callbacks, verbose_eval, early_stopping_rounds)
    model, evals_log, q = train_gated(
        p, dtrain, num_boost_round, objective, metrics, evals, n_threads,
        expensive_model=expensive_model, container=container, log_metrics=_log_metrics,
        verbose=bool(verbose_eval))
    model = container.after_training(model)
    model._record_training_costs(dtrain, [(name, data) for data, name in evals], q)
    if evals_result is not None:
        evals_result.clear()
        evals_result.update(evals_log)
    return model


# a forest votes: its default metric is the error of the vote
FOREST_METRICS = {"binary:logistic": "error", "multi:softprob": "merror"}


def _default_metric(p, objective):
    """The objective's metric, but the vote's error for a forest, and the error for a
    classifier tree fitted by least squares (its probabilities are clipped scores: the
    log-loss would be decided by the few inputs clipped to the wrong end)."""
    if p["algorithm"] == "budget_rf":
        return FOREST_METRICS[objective.name]
    if (p["algorithm"] in CLASSIFIER_TREE_ALGORITHMS and objective.name == "binary:logistic"
            and p["loss"] == "squared"):
        return "error"
    return objective.default_metric


def _train_forest(p, dtrain, num_boost_round, objective, metrics, evals, n_threads, *,
                  early_stopping_rounds, evals_result, verbose_eval, callbacks, xgb_model):
    """BudgetRF (Nan, Wang, Saligrama, ICML 2015, Algorithm 1): add GREEDYTREEs grown on
    bootstrap samples until the mean prediction cost on the validation set (the last
    of ``evals``) exceeds ``budget``; the tree that crossed it is dropped. Tree ``t``
    depends only on ``seed`` and ``t``: the same forest whatever ``n_jobs``, and
    continuing a forest of ``a`` trees by ``b`` gives the forest of ``a + b``."""
    y = dtrain.label
    if np.any(y != np.floor(y)):
        raise ValueError("budget_rf needs integer class labels")
    n_classes = max(2, objective.num_class)
    labels = y.astype(np.int32)
    n_trees = num_boost_round if p["n_estimators"] is None else p["n_estimators"]
    init = _init_model(xgb_model, dtrain, objective, Forest)
    if init is None:
        prior = np.bincount(labels, weights=dtrain.weight, minlength=n_classes)
        forest = Forest(objective=objective.name, num_class=n_classes,
                        class_prior=prior / prior.sum(), feature_names=dtrain.feature_names,
                        cost_model=dtrain.cost_model, params=p)
    else:
        forest = init[:]
        forest.params, forest.algorithm = dict(p), p["algorithm"]
    budget = []
    if p["budget"] is not None:
        if not evals:
            raise ValueError("budget needs validation data to measure the cost on: pass "
                             "evals=[(dvalid, 'valid')] (the last data set is used)")
        budget = [BudgetStopping(p["budget"], evals[-1][0], verbose=bool(verbose_eval))]
    container = _callbacks(callbacks, verbose_eval, early_stopping_rounds, budget)

    costs = dtrain.cost_model
    edges, edges_indptr = dtrain.flat_bin_edges()
    splittable = (dtrain.n_value_bins >= 2).astype(np.uint8)
    n_samples = dtrain.num_data()
    n_bootstrap = max(1, int(round(p["subsample"] * n_samples)))
    exhaustive = p["n_stumps"] == "all"
    tree_options = dict(
        sample_weight=dtrain.weight, split_cost=costs.split_cost, alpha=p["alpha"],
        impurity=p["impurity"], path_free=p["path_free"], exhaustive=exhaustive,
        n_stumps=(1, 1, 1) if exhaustive else p["n_stumps"],
        stump_node_sizes=p["stump_node_sizes"],
        max_depth=-1 if p["max_depth"] is None else p["max_depth"])

    def grow(t):
        rng = np.random.default_rng([p["seed"], t])
        rows = rng.integers(0, n_samples, n_bootstrap).astype(np.int32)
        return grow_greedy_tree(dtrain.binned, labels, rows, n_classes, costs.feature_costs,
                                costs.feature_group, costs.group_costs, edges, edges_indptr,
                                splittable, seed=int(rng.integers(2 ** 63)), **tree_options)

    # running per-class leaf counts and votes (side by side) of every evaluation set
    eval_state = [(name, data, forest._accumulate(forest._prepare(data), None, "both"))
                  for data, name in evals]
    evals_log = {}
    pool = ThreadPoolExecutor(max_workers=n_threads) if n_threads > 1 else None
    forest = container.before_training(forest)
    first, end = forest.num_trees(), forest.num_trees() + n_trees
    stop = False
    try:
        while first < end and not stop:
            # a batch of trees grown in parallel, then added one by one
            batch = range(first, min(first + n_threads, end))
            grown = list(pool.map(grow, batch)) if pool else [grow(t) for t in batch]
            for t, (tree, class_counts) in zip(batch, grown):
                if container.before_iteration(forest, t, evals_log):
                    stop = True
                    break
                forest._append_tree(tree, class_counts)
                n = forest.num_trees()
                for name, data, sums in eval_state:
                    sums += forest._accumulate(data.data, (n - 1, n), "both")
                    counts, votes = np.hsplit(sums, 2)
                    log = evals_log.setdefault(name, {})
                    for metric in metrics:
                        log.setdefault(metric, []).append(evaluate_metric(
                            metric, data.label,
                            forest._metric_predictions(metric, counts, votes), data.weight))
                if container.after_iteration(forest, t, evals_log):
                    stop = True
                    break
            first = batch.stop
    finally:
        if pool is not None:
            pool.shutdown()
    forest = container.after_training(forest)
    if forest.num_trees() == 0 and n_trees > 0 and p["budget"] is not None:
        warnings.warn(f"budget_rf: a single tree costs more than the budget {p['budget']} "
                      "per input; the forest has no trees and predicts the training class "
                      "prior", RuntimeWarning, stacklevel=3)
    forest._record_training_costs(dtrain, [(name, data) for data, name in evals])
    if evals_result is not None:
        evals_result.clear()
        evals_result.update(evals_log)
    return forest


def _basis(p, dtrain, targets):
    """The boosting trick (section 5): the booster of T depth-limited regression trees
    by gradient boosting on the targets (squared loss), whose trees' outputs are the
    coordinates the nodes see."""
    data = copy.copy(dtrain)
    data.label = targets
    booster = train({"objective": "reg:squarederror", "grow_policy": "depthwise",
                     "max_depth": p["basis_max_depth"], "learning_rate": p["basis_learning_rate"],
                     "seed": p["seed"], "n_jobs": p["n_jobs"]}, data, p["basis_trees"],
                    verbose_eval=False)
    return booster


def _standardize(coords):
    """Mean / standard deviation per column over the non-missing values; constant
    columns get deviation 0 (never used)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = np.nanmean(coords, axis=0)
        std = np.nanstd(coords, axis=0)
    mean = np.where(np.isfinite(mean), mean, 0.0)
    std = np.where(np.isfinite(std) & (std > 1e-12 * np.maximum(1.0, np.abs(mean))), std, 0.0)
    return mean, std


def _standardized(coords, mean, std):
    """(coords - mean) / std with missing values at 0 (the mean) and constant columns 0."""
    scale = np.where(std > 0, 1.0 / np.where(std > 0, std, 1.0), 0.0)
    Z = (coords - mean) * scale
    Z[~np.isfinite(Z)] = 0.0
    return np.ascontiguousarray(Z)


def _cost_groups(costs, basis, n_coords):
    """The relaxed cost's groups of coordinates (see ``_cstc_solver``): per feature (its
    coordinate, or the basis trees that split on it) with ``feature_costs``, per cost
    group with ``group_costs``, and with the boosting trick one per tree with
    ``tree_cost`` (eq. 20, 21)."""
    if basis is None:
        users = [[m] for m in range(costs.n_features)]
    else:
        users = [[] for _ in range(costs.n_features)]
        for t, tree in enumerate(basis.trees):
            for m in np.unique(tree["feature"][tree["left"] != -1]):
                users[m].append(t)
    rows, group_costs = [], []
    for m in range(costs.n_features):
        if costs.feature_costs[m] > 0 and users[m]:
            rows.append(users[m])
            group_costs.append(costs.feature_costs[m])
    for g in range(costs.n_groups):
        members = sorted({t for m in np.flatnonzero(costs.feature_group == g) for t in users[m]})
        if costs.group_costs[g] > 0 and members:
            rows.append(members)
            group_costs.append(costs.group_costs[g])
    if basis is not None and costs.tree_cost > 0:
        rows.extend([t] for t in range(n_coords))
        group_costs.extend([costs.tree_cost] * n_coords)
    indptr = np.cumsum([0] + [len(r) for r in rows])
    indices = np.asarray([t for r in rows for t in r], dtype=np.int64)
    groups = scipy.sparse.csr_matrix((np.ones(indices.size), indices, indptr),
                                     shape=(len(rows), n_coords))
    return groups, np.asarray(group_costs, dtype=np.float64)


def _class_factor(p, labels, weight):
    """CSCC's class weight w_y of each input (ones without ``class_weight``)."""
    choice = p["class_weight"]
    if choice is None:
        return np.ones(labels.shape[0])
    if choice == "balanced":
        w = np.ones(labels.shape[0]) if weight is None else weight
        totals = np.array([w[labels == c].sum() for c in (0, 1)])
        per_class = np.where(totals > 0, w.sum() / (2.0 * np.maximum(totals, 1e-300)), 1.0)
    else:
        per_class = np.asarray(choice)
    return per_class[labels.astype(np.int64)]


def _export(problem, p, objective, dtrain, mean, std, basis):
    """The problem's alive nodes as a ClassifierTree / Cascade: renumbered in level
    order, weights back on the original scale of the coordinates."""
    alive = problem.alive_nodes()
    new_id = {int(k): i for i, k in enumerate(alive)}
    upper, lower = problem.children()
    scale = np.where(std > 0, 1.0 / np.where(std > 0, std, 1.0), 0.0)
    weights = problem.B[alive] * scale
    bias = problem.bias[alive] - weights @ mean
    model_class = ClassifierTree if p["algorithm"] == "cstc" else Cascade
    return model_class(
        objective=objective.name, loss=p["loss"], feature_names=dtrain.feature_names,
        cost_model=dtrain.cost_model, params=p, weights=weights, bias=bias,
        thresholds=np.where([upper[k] == -1 and lower[k] == -1 for k in alive], 0.0,
                            problem.theta[alive]),
        upper=[new_id[int(upper[k])] if upper[k] != -1 else -1 for k in alive],
        lower=[new_id[int(lower[k])] if lower[k] != -1 else -1 for k in alive],
        impute=mean if basis is None else np.zeros_like(mean), basis=basis)


def _train_classifier_tree(p, dtrain, num_boost_round, objective, metrics, evals, n_threads, *,
                           early_stopping_rounds, evals_result, verbose_eval, callbacks,
                           xgb_model):
    """CSTC / CSCC / Cronus (Xu et al., JMLR 2014): structure (full, pruned or greedy on
    the last ``evals`` set), then ``num_boost_round`` sweeps of block coordinate descent
    (fewer when the objective changes less than ``tol``; evaluation, early stopping and
    callbacks per sweep), then fine-tuning of the leaves."""
    if xgb_model is not None:
        raise ValueError(f"{p['algorithm']} cannot continue a model (xgb_model): each "
                         "training optimises the whole tree")
    y, weight = dtrain.label, dtrain.weight
    binary = objective.name == "binary:logistic"
    targets = 2.0 * y - 1.0 if binary else y.astype(np.float64)
    sample_weight = np.ones(y.shape[0]) if weight is None else weight
    basis = _basis(p, dtrain, targets) if p["basis_trees"] else None

    coords = node_inputs(dtrain.data, basis)
    mean, std = _standardize(coords)
    Z = _standardized(coords, mean, std)
    groups, group_costs = _cost_groups(dtrain.cost_model, basis, Z.shape[1])
    cascade = p["algorithm"] != "cstc"
    problem = TreeProblem(
        Z, targets, sample_weight, _class_factor(p, y, weight) if binary else np.ones(y.shape[0]),
        groups, group_costs, kind="cascade" if cascade else "tree", depth=p["max_depth"],
        weighting="exit" if cascade else "reach",
        cost_form="cronus" if p["algorithm"] == "cronus" else "paths",
        loss=LOSS_LOGISTIC if p["loss"] == "logistic" else LOSS_SQUARED,
        rho=p["reg_alpha"], lam=p["cost_tradeoff"], tol=p["tol"], usable=std > 0,
        n_threads=n_threads)
    eval_coords = [(name, data, _standardized(node_inputs(data.data, basis), mean, std))
                   for data, name in evals]

    def transform(score):
        return score_transform(objective.name, p["loss"], score)

    start = time.perf_counter()
    if p["tree_structure"] == "full":
        problem.initialize()
    else:
        if not evals:
            raise ValueError(f"tree_structure {p['tree_structure']!r} needs validation data: "
                             "pass evals=[(dvalid, 'valid')] (the last data set is used)")
        _, valid, Z_valid = eval_coords[-1]
        score = validation_score(metrics[-1], valid.label, valid.weight, transform)
        if p["tree_structure"] == "prune":
            problem.initialize()
            problem.prune(Z_valid, score)
        else:
            problem.grow_greedy(Z_valid, score)

    if verbose_eval:
        print(f"{p['algorithm']}: {p['tree_structure']} structure of "
              f"{problem.alive.sum()} nodes initialised in {time.perf_counter() - start:.1f} s",
              flush=True)
    container = _callbacks(callbacks, verbose_eval, early_stopping_rounds)
    model = _export(problem, p, objective, dtrain, mean, std, basis)
    model = container.before_training(model)
    evals_log = {}
    states = []
    previous = problem.objective()
    for sweep in range(num_boost_round):
        if container.before_iteration(model, sweep, evals_log):
            break
        value = problem.sweep()
        states.append((problem.B.copy(), problem.bias.copy(), problem.theta.copy(),
                       problem.active.copy()))
        model = _export(problem, p, objective, dtrain, mean, std, basis)
        for name, data, Z_eval in eval_coords:
            _log_metrics(evals_log, name, metrics, data,
                         transform(problem.predict_hard(Z_eval)[0]))
        if container.after_iteration(model, sweep, evals_log):
            break
        if abs(previous - value) <= p["tol"] * max(1.0, abs(value)):
            break
        previous = value
    best_iteration, best_score = model.best_iteration, model.best_score
    if best_iteration is not None and best_iteration < len(states) - 1:
        problem.B, problem.bias, problem.theta, problem.active = (
            a.copy() for a in states[best_iteration])
        problem.F = problem.Z @ problem.B.T + problem.bias
    if p["fine_tune"]:
        problem.fine_tune()
    model = _export(problem, p, objective, dtrain, mean, std, basis)
    model.best_iteration, model.best_score = best_iteration, best_score
    model = container.after_training(model)
    reach, _ = problem.route()
    model._record_training_costs(dtrain, [(name, data) for data, name in evals],
                                 (sample_weight @ reach)[problem.alive_nodes()] / problem.W)
    model.summary["objective_per_sweep"] = list(problem.objective_history)
    if evals_result is not None:
        evals_result.clear()
        evals_result.update(evals_log)
    return model
