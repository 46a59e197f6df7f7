"""Tests of cbudget.train, Booster prediction / cost accounting, callbacks, parameters."""
import io
import math
import pickle

import numpy as np
import pytest
from reference_predict import brute_cost, brute_raw, tree_walk

import cbudget
from cbudget import Dataset, TrainingCallback, train

# Most tests run single-threaded: small data, and OpenMP regions on a busy 2-core
# machine cost more than they save. test_n_jobs_* compares 1 and 2 threads.
FAST = {"n_jobs": 1}


# --------------------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------------------
def regression_data(n=600, m=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, m))
    y = 2.0 * X[:, 0] + np.sin(2 * X[:, 1]) + 0.5 * X[:, 2] * X[:, 3] + 0.1 * rng.normal(size=n)
    return X, y


def binary_data(n=600, m=6, seed=0, noise=0.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, m))
    y = (X[:, 0] + X[:, 1] * X[:, 2] + noise * rng.normal(size=n) > 0).astype(np.float64)
    return X, y


def multiclass_data(n=600, m=6, k=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, m))
    W = rng.normal(size=(m, k))
    y = np.argmax(X @ W, axis=1).astype(np.float64)
    return X, y


def split_rows(X, y, n_train):
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


def leaves(tree):
    return [i for i, left in enumerate(tree["left_children"]) if left == -1]


def leaf_depths(tree):
    depth = {0: 0}
    for i, (left, r) in enumerate(zip(tree["left_children"], tree["right_children"])):
        if left != -1:
            depth[left] = depth[r] = depth[i] + 1
    return [depth[i] for i in leaves(tree)]


def pairwise_auc(y, s, w=None):
    w = np.ones_like(s) if w is None else w
    num = den = 0.0
    for i in np.flatnonzero(y > 0.5):
        for j in np.flatnonzero(y <= 0.5):
            pair = w[i] * w[j]
            den += pair
            num += pair * (1.0 if s[i] > s[j] else 0.5 if s[i] == s[j] else 0.0)
    return num / den


def trees_only(doc):
    return {k: doc[k] for k in ("base_score", "iteration_indptr", "trees", "summary",
                                "cost_model", "feature_names")}


# --------------------------------------------------------------------------------------
# the three objectives learn something
# --------------------------------------------------------------------------------------
def test_regression_learns():
    X, y = regression_data(800)
    Xtr, ytr, Xte, yte = split_rows(X, y, 600)
    dtrain = Dataset(Xtr, ytr)
    booster = train(dict(FAST, objective="reg:squarederror"), dtrain, 60, verbose_eval=False)
    assert isinstance(booster, cbudget.Booster)
    pred = booster.predict(Xte)
    assert pred.shape == (200,) and pred.dtype == np.float64
    rmse = np.sqrt(np.mean((pred - yte) ** 2))
    base = np.sqrt(np.mean((ytr.mean() - yte) ** 2))
    assert rmse < 0.35 * base, (rmse, base)
    assert booster.base_score == pytest.approx([ytr.mean()])


def test_binary_learns():
    X, y = binary_data(1000)
    Xtr, ytr, Xte, yte = split_rows(X, y, 700)
    booster = train(dict(FAST, objective="binary:logistic"), Dataset(Xtr, ytr), 60,
                    verbose_eval=False)
    p = booster.predict(Xte)
    assert p.shape == (300,)
    assert np.all((p > 0) & (p < 1))
    error = np.mean((p > 0.5) != (yte > 0.5))
    base = min(yte.mean(), 1 - yte.mean())
    assert error < 0.4 * base, (error, base)
    prior = ytr.mean()
    assert booster.base_score == pytest.approx([np.log(prior / (1 - prior))])


def test_multiclass_learns():
    X, y = multiclass_data(900, k=4)
    Xtr, ytr, Xte, yte = split_rows(X, y, 600)
    booster = train(dict(FAST, objective="multi:softprob", num_class=4), Dataset(Xtr, ytr), 40,
                    verbose_eval=False)
    p = booster.predict(Xte)
    assert p.shape == (300, 4)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=1e-12)
    error = np.mean(p.argmax(axis=1) != yte)
    base = 1 - np.bincount(yte.astype(int)).max() / yte.size
    assert error < 0.5 * base, (error, base)
    assert booster.num_boosted_rounds() == 40
    assert len(booster.trees) == 160


def test_zero_rounds_predicts_base_score():
    X, y = binary_data(200)
    booster = train(dict(FAST, objective="binary:logistic"), Dataset(X, y), 0, verbose_eval=False)
    assert booster.num_boosted_rounds() == 0
    np.testing.assert_allclose(booster.predict(X), np.full(200, y.mean()), rtol=1e-12)
    np.testing.assert_array_equal(booster.predict_cost(X), np.zeros(200))
    assert booster.predict(X, pred_leaf=True).shape == (200, 0)


def test_base_score_parameter():
    X, y = binary_data(200)
    booster = train(dict(FAST, objective="binary:logistic", base_score=0.3), Dataset(X, y), 0,
                    verbose_eval=False)
    np.testing.assert_allclose(booster.predict(X), 0.3, rtol=1e-12)
    with pytest.raises(ValueError, match="base_score"):
        train(dict(FAST, objective="binary:logistic", base_score=1.5), Dataset(X, y), 1,
              verbose_eval=False)
    reg = train(dict(FAST, base_score=2.5), Dataset(X, y), 0, verbose_eval=False)
    np.testing.assert_array_equal(reg.predict(X), np.full(200, 2.5))


def test_weights_act_like_duplicated_rows():
    X, y = regression_data(300)
    X = np.round(X, 1)  # < 255 distinct values: the same bin edges with and without copies
    w = np.random.default_rng(1).integers(1, 4, size=300)
    params = dict(FAST, min_data_in_leaf=1, num_leaves=8)
    weighted = train(params, Dataset(X, y, weight=w.astype(float)), 5, verbose_eval=False)
    rows = np.repeat(np.arange(300), w)
    repeated = train(params, Dataset(X[rows], y[rows]), 5, verbose_eval=False)
    np.testing.assert_allclose(weighted.base_score, repeated.base_score, rtol=1e-12)
    np.testing.assert_allclose(weighted.predict(X), repeated.predict(X), rtol=1e-9, atol=1e-9)


# --------------------------------------------------------------------------------------
# evaluation, metrics, early stopping, callbacks
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("objective,extra,metrics", [
    ("reg:squarederror", {}, ["rmse"]),
    ("binary:logistic", {}, ["logloss"]),
    ("binary:logistic", {"eval_metric": ["logloss", "error", "auc"]}, ["logloss", "error", "auc"]),
    ("binary:logistic", {"eval_metric": "auc"}, ["auc"]),
    ("multi:softprob", {"num_class": 3}, ["mlogloss"]),
    ("multi:softprob", {"num_class": 3, "eval_metric": ["mlogloss", "merror"]},
     ["mlogloss", "merror"]),
])
def test_evals_result(objective, extra, metrics):
    if objective == "reg:squarederror":
        X, y = regression_data(500)
    elif objective == "binary:logistic":
        X, y = binary_data(500)
    else:
        X, y = multiclass_data(500)
    Xtr, ytr, Xva, yva = split_rows(X, y, 350)
    dtrain = Dataset(Xtr, ytr)
    dvalid = Dataset(Xva, yva, reference=dtrain)
    result = {"stale": 1}
    booster = train(dict(FAST, objective=objective, **extra), dtrain, 12,
                    evals=[(dtrain, "train"), (dvalid, "valid")], evals_result=result,
                    verbose_eval=False)
    assert list(result) == ["train", "valid"]
    for name in ("train", "valid"):
        assert list(result[name]) == metrics
        for metric in metrics:
            assert len(result[name][metric]) == 12
            assert all(isinstance(v, float) and np.isfinite(v) for v in result[name][metric])
    # the last logged value agrees with metrics of booster.predict
    pred = booster.predict(Xva)
    expected = {
        "rmse": lambda: np.sqrt(np.mean((pred - yva) ** 2)),
        "logloss": lambda: -np.mean(yva * np.log(pred) + (1 - yva) * np.log(1 - pred)),
        "error": lambda: np.mean((pred > 0.5) != (yva > 0.5)),
        "auc": lambda: pairwise_auc(yva, pred),
        "mlogloss": lambda: -np.mean(np.log(pred[np.arange(yva.size), yva.astype(int)])),
        "merror": lambda: np.mean(pred.argmax(axis=1) != yva),
    }
    for metric in metrics:
        assert result["valid"][metric][-1] == pytest.approx(expected[metric](), rel=1e-9)
    # training loss goes down
    first = metrics[0]
    if first in ("rmse", "logloss", "mlogloss"):
        assert result["train"][first][-1] < 0.7 * result["train"][first][0]


def test_auc_matches_pairwise_definition_with_ties():
    X, y = binary_data(160, noise=1.0, seed=4)
    Xtr, ytr, Xva, yva = split_rows(X, y, 100)
    dtrain = Dataset(Xtr, ytr)
    w = np.random.default_rng(2).uniform(0.2, 3.0, size=60)
    dvalid = Dataset(Xva, yva, reference=dtrain)
    dvalid_w = Dataset(Xva, yva, weight=w, reference=dtrain)
    result = {}
    params = dict(FAST, objective="binary:logistic", eval_metric="auc", num_leaves=3,
                  min_data_in_leaf=10)
    booster = train(params, dtrain, 2, evals=[(dvalid, "plain"), (dvalid_w, "weighted")],
                    evals_result=result, verbose_eval=False)
    for r in (1, 2):
        pred = booster.predict(Xva, iteration_range=(0, r))
        assert np.unique(pred).size < 10  # many ties
        assert result["plain"]["auc"][r - 1] == pytest.approx(pairwise_auc(yva, pred), abs=1e-12)
        assert result["weighted"]["auc"][r - 1] == pytest.approx(pairwise_auc(yva, pred, w),
                                                                 abs=1e-12)


def test_weighted_metrics():
    X, y = regression_data(300)
    Xtr, ytr, Xva, yva = split_rows(X, y, 200)
    w = np.random.default_rng(9).uniform(0, 2, size=100)
    dtrain = Dataset(Xtr, ytr)
    result = {}
    booster = train(dict(FAST), dtrain, 5, evals=[(Dataset(Xva, yva, weight=w), "v")],
                    evals_result=result, verbose_eval=False)
    pred = booster.predict(Xva)
    assert result["v"]["rmse"][-1] == pytest.approx(
        np.sqrt(np.sum(w * (pred - yva) ** 2) / w.sum()), rel=1e-12)


def test_eval_without_reference_matches_predict():
    X, y = regression_data(400)
    Xtr, ytr, Xva, yva = split_rows(X, y, 300)
    dtrain = Dataset(Xtr, ytr)
    result = {}
    booster = train(dict(FAST), dtrain, 8, evals=[(Dataset(Xva, yva, max_bin=5), "v")],
                    evals_result=result, verbose_eval=False)
    pred = booster.predict(Xva)
    assert result["v"]["rmse"][-1] == pytest.approx(np.sqrt(np.mean((pred - yva) ** 2)),
                                                    rel=1e-12)


def test_eval_metric_errors():
    X, y = binary_data(100)
    d = Dataset(X, y)
    with pytest.raises(ValueError, match="unknown eval_metric 'nope'"):
        train(dict(FAST, objective="binary:logistic", eval_metric="nope"), d, 1,
              verbose_eval=False)
    with pytest.raises(ValueError, match="does not apply"):
        train(dict(FAST, objective="binary:logistic", eval_metric="merror"), d, 1,
              verbose_eval=False)
    with pytest.raises(ValueError, match="no label"):
        train(dict(FAST), d, 1, evals=[(Dataset(X), "v")], verbose_eval=False)
    with pytest.raises(ValueError, match="has 3 features"):
        train(dict(FAST), d, 1, evals=[(Dataset(X[:, :3], y), "v")], verbose_eval=False)


def test_verbose_eval_prints(capsys):
    X, y = regression_data(200)
    d = Dataset(X, y)
    train(dict(FAST), d, 5, evals=[(d, "train")], verbose_eval=2)
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if line.startswith("[")]
    assert [line.split("\t")[0] for line in lines] == ["[0]", "[2]", "[4]"]
    assert all("train-rmse:" in line for line in lines)
    train(dict(FAST), d, 5, evals=[(d, "train")], verbose_eval=False)
    assert capsys.readouterr().out == ""


def test_verbose_eval_true_prints_every_tenth_round(capsys):
    X, y = regression_data(200)
    d = Dataset(X, y)
    train(dict(FAST), d, 25, evals=[(d, "train")])
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("[")]
    assert [line.split("\t")[0] for line in lines] == ["[0]", "[10]", "[20]", "[24]"]


def test_progress_monitor_reports_rounds_and_time_left():
    """A line each ``interval`` seconds (a fake clock: one second per round), without
    evaluation sets; nothing when training is shorter than the interval."""
    X, y = regression_data(200)
    ticks = iter(range(1000))
    stream = io.StringIO()
    monitor = cbudget.ProgressMonitor(20, interval=5, stream=stream,
                                      clock=lambda: float(next(ticks)))
    train(dict(FAST), Dataset(X, y), 20, callbacks=[monitor], verbose_eval=False)
    lines = stream.getvalue().splitlines()
    assert lines[0] == "[4] 5/20 iterations in 5 s, about 15 s left at most"
    assert lines[-1] == "[19] 20/20 iterations in 20 s, about 0 s left at most"
    assert len(lines) == 4
    quiet = io.StringIO()
    train(dict(FAST), Dataset(X, y), 20, verbose_eval=False,
          callbacks=[cbudget.ProgressMonitor(20, interval=3600, stream=quiet)])
    assert quiet.getvalue() == ""
    with pytest.raises(ValueError, match="interval"):
        cbudget.ProgressMonitor(20, interval=0)


def _noisy_validation():
    X, y = binary_data(900, seed=3)
    rng = np.random.default_rng(8)
    Xtr, ytr = X[:600], y[:600]
    Xva = X[600:]
    yva = (rng.random(300) < 0.5).astype(float)  # labels unrelated to X: overfits at once
    return Xtr, ytr, Xva, yva


@pytest.mark.parametrize("metrics", [["logloss"], ["logloss", "auc"]])
def test_early_stopping(metrics):
    Xtr, ytr, Xva, yva = _noisy_validation()
    dtrain = Dataset(Xtr, ytr)
    dvalid = Dataset(Xva, yva, reference=dtrain)
    result = {}
    booster = train(dict(FAST, objective="binary:logistic", learning_rate=0.5,
                         eval_metric=metrics), dtrain, 300,
                    evals=[(dtrain, "train"), (dvalid, "valid")], evals_result=result,
                    early_stopping_rounds=5, verbose_eval=False)
    values = result["valid"][metrics[-1]]  # the last metric of the last data set
    n = booster.num_boosted_rounds()
    assert n < 300
    assert len(values) == n
    best = int(np.argmax(values)) if metrics[-1] == "auc" else int(np.argmin(values))
    assert booster.best_iteration == best
    assert booster.best_score == values[best]
    assert n == best + 1 + 5
    # predicting with the best rounds gives the best score, and so does the default
    p = booster.predict(Xva, iteration_range=(0, booster.best_iteration + 1))
    np.testing.assert_array_equal(booster.predict(Xva), p)
    if metrics[-1] == "logloss":
        assert -np.mean(yva * np.log(p) + (1 - yva) * np.log(1 - p)) == pytest.approx(
            booster.best_score, rel=1e-9)


def test_early_stopped_booster_predicts_and_costs_up_to_the_best_round():
    """As LightGBM's Booster: the default is the best iteration; (0, 0) is every round."""
    Xtr, ytr, Xva, yva = _noisy_validation()
    dtrain = Dataset(Xtr, ytr, feature_costs=np.arange(1.0, 7.0))
    dvalid = Dataset(Xva, yva, reference=dtrain)
    booster = train(dict(FAST, objective="binary:logistic", algorithm="cegb",
                         cost_tradeoff=1e-3, learning_rate=0.5), dtrain, 300,
                    evals=[(dvalid, "valid")], early_stopping_rounds=5, verbose_eval=False)
    best = booster[: booster.best_iteration + 1]
    assert best.num_boosted_rounds() < booster.num_boosted_rounds()
    for method in ("predict", "predict_cost", "acquisitions"):
        np.testing.assert_array_equal(getattr(booster, method)(Xva),
                                      getattr(best, method)(Xva))
    np.testing.assert_array_equal(booster.predict(Xva, iteration_range=(0, 0)),
                                  booster.predict(
        Xva, iteration_range=(0, booster.num_boosted_rounds())))
    assert not np.array_equal(booster.predict(Xva, iteration_range=(0, 0)), best.predict(Xva))
    np.testing.assert_array_equal(booster.used_features(), best.used_features())
    np.testing.assert_array_equal(booster.feature_importance("gain"),
                                  best.feature_importance("gain"))
    assert booster.cost_report(Xva).mean_cost == best.cost_report(Xva).mean_cost
    assert booster.summary["valid_cost"]["valid"] == pytest.approx(
        best.predict_cost(Xva).mean())
    assert booster.cost_curve(Xva).size == booster.num_boosted_rounds()


def test_no_early_stopping_leaves_best_iteration_unset():
    X, y = regression_data(200)
    booster = train(dict(FAST), Dataset(X, y), 3, verbose_eval=False)
    assert booster.best_iteration is None and booster.best_score is None


def test_early_stopping_needs_evals():
    X, y = regression_data(200)
    with pytest.raises(ValueError, match="at least one data set"):
        train(dict(FAST), Dataset(X, y), 5, early_stopping_rounds=2, verbose_eval=False)


def test_early_stopping_callback_on_named_data():
    Xtr, ytr, Xva, yva = _noisy_validation()
    dtrain = Dataset(Xtr, ytr)
    dvalid = Dataset(Xva, yva, reference=dtrain)
    cb = cbudget.EarlyStopping(3, metric_name="logloss", data_name="valid")
    result = {}
    booster = train(dict(FAST, objective="binary:logistic", learning_rate=0.5,
                         eval_metric=["logloss", "error"]), dtrain, 300,
                    evals=[(dvalid, "valid"), (dtrain, "train")], evals_result=result,
                    callbacks=[cb], verbose_eval=False)
    values = result["valid"]["logloss"]
    assert booster.best_iteration == int(np.argmin(values))
    assert booster.num_boosted_rounds() == booster.best_iteration + 1 + 3


class Recorder(TrainingCallback):
    def __init__(self, stop_before=None, stop_after=None):
        self.calls = []
        self.stop_before, self.stop_after = stop_before, stop_after

    def before_training(self, model):
        self.calls.append(("before_training", model.num_boosted_rounds()))
        return model

    def after_training(self, model):
        self.calls.append(("after_training", model.num_boosted_rounds()))
        return model

    def before_iteration(self, model, epoch, evals_log):
        self.calls.append(("before", epoch, model.num_boosted_rounds()))
        return epoch == self.stop_before

    def after_iteration(self, model, epoch, evals_log):
        self.calls.append(("after", epoch, model.num_boosted_rounds(),
                           len(evals_log.get("v", {}).get("rmse", []))))
        return epoch == self.stop_after


def test_callback_hooks_called_in_order():
    X, y = regression_data(200)
    d = Dataset(X, y)
    cb = Recorder()
    train(dict(FAST), d, 3, evals=[(d, "v")], callbacks=[cb], verbose_eval=False)
    assert cb.calls == [
        ("before_training", 0),
        ("before", 0, 0), ("after", 0, 1, 1),
        ("before", 1, 1), ("after", 1, 2, 2),
        ("before", 2, 2), ("after", 2, 3, 3),
        ("after_training", 3),
    ]


def test_callback_after_iteration_stops():
    X, y = regression_data(200)
    d = Dataset(X, y)
    cb = Recorder(stop_after=2)
    booster = train(dict(FAST), d, 10, evals=[(d, "v")], callbacks=[cb], verbose_eval=False)
    assert booster.num_boosted_rounds() == 3
    assert cb.calls[-1] == ("after_training", 3)


def test_callback_before_iteration_stops():
    X, y = regression_data(200)
    d = Dataset(X, y)
    cb = Recorder(stop_before=4)
    result = {}
    booster = train(dict(FAST), d, 10, evals=[(d, "v")], evals_result=result, callbacks=[cb],
                    verbose_eval=False)
    assert booster.num_boosted_rounds() == 4
    assert len(result["v"]["rmse"]) == 4
    assert ("after", 4, 5, 5) not in cb.calls


def test_callback_type_checked():
    X, y = regression_data(100)
    with pytest.raises(TypeError, match="TrainingCallback"):
        train(dict(FAST), Dataset(X, y), 2, callbacks=[lambda *a: None], verbose_eval=False)


# --------------------------------------------------------------------------------------
# parameters
# --------------------------------------------------------------------------------------
def test_unknown_parameter_lists_valid_names():
    X, y = regression_data(100)
    with pytest.raises(ValueError, match=r"unknown parameter 'max_dept'.*learning_rate.*"
                                         r"num_leaves"):
        train({"max_dept": 3}, Dataset(X, y), 1, verbose_eval=False)


def test_aliases():
    X, y = regression_data(300)
    d = Dataset(X, y)
    a = train({"eta": 0.3, "lambda": 2.0, "max_leaves": 5, "nthread": 1}, d, 4,
              verbose_eval=False)
    b = train({"learning_rate": 0.3, "reg_lambda": 2.0, "num_leaves": 5, "n_jobs": 1}, d, 4,
              verbose_eval=False)
    assert a.params["learning_rate"] == 0.3
    assert a.params["reg_lambda"] == 2.0
    assert a.params["num_leaves"] == 5
    assert "eta" not in a.params
    assert a.to_dict()["trees"] == b.to_dict()["trees"]
    assert max(len(leaves(t)) for t in a.to_dict()["trees"]) == 5
    c = train({"eta": 0.05, "n_jobs": 1}, d, 4, verbose_eval=False)
    assert c.to_dict()["trees"] != a.to_dict()["trees"]


def test_alias_and_name_together_rejected():
    X, y = regression_data(100)
    with pytest.raises(ValueError, match="given twice"):
        train({"eta": 0.3, "learning_rate": 0.2}, Dataset(X, y), 1, verbose_eval=False)


@pytest.mark.parametrize("params,match", [
    ({"learning_rate": 0}, "learning_rate"),
    ({"eta": -0.1}, "learning_rate"),
    ({"subsample": 1.5}, "subsample"),
    ({"subsample": 0}, "subsample"),
    ({"colsample_bytree": 1.01}, "colsample_bytree"),
    ({"grow_policy": "x"}, "grow_policy"),
    ({"objective": "reg:nope"}, "unknown objective 'reg:nope'"),
    ({"objective": "multi:softprob"}, "num_class"),
    ({"objective": "multi:softprob", "num_class": 1}, "num_class"),
    ({"objective": "binary:logistic", "num_class": 3}, "num_class"),
    ({"num_leaves": 1}, "num_leaves"),
    ({"max_depth": -1}, "max_depth"),
    ({"min_data_in_leaf": 0}, "min_data_in_leaf"),
    ({"reg_lambda": -1.0}, "reg_lambda"),
    ({"gamma": -1.0}, "gamma"),
    ({"min_child_weight": float("nan")}, "min_child_weight"),
    ({"seed": -1}, "seed"),
    ({"algorithm": "magic"}, "algorithm"),
])
def test_bad_parameter_values(params, match):
    X, y = binary_data(100)
    with pytest.raises(ValueError, match=match):
        train(dict(FAST, **params), Dataset(X, y), 1, verbose_eval=False)


# issue 20: values that used to be accepted (every prediction NaN) or that failed deep
# inside with an OverflowError or an empty MemoryError
@pytest.mark.parametrize("params,match", [
    ({"learning_rate": math.inf}, "learning_rate must be finite"),
    ({"base_score": math.inf}, "base_score must be finite"),
    ({"gamma": math.inf}, "gamma must be finite"),
    ({"reg_lambda": -math.inf}, "reg_lambda"),
    ({"num_leaves": 2**30 + 1}, "num_leaves must be <= 131072"),
    ({"min_data_in_leaf": 2**40}, "min_data_in_leaf must be <= 2147483647"),
    ({"max_depth": 10**30}, "max_depth must be <= 2147483647"),
    ({"seed": 2**70}, "seed must be <= "),
    ({"num_class": 2**31, "objective": "multi:softprob"}, "num_class must be <= "),
    ({"algorithm": "budget_rf", "n_stumps": (2**40, 1, 1)}, "n_stumps"),
    ({"algorithm": "budget_rf", "budget": math.inf}, "budget must be finite"),
    ({"algorithm": "cstc", "basis_trees": 2**31}, "basis_trees must be <= "),
    ({"algorithm": "adapt_lin", "n_restarts": 10**20}, "n_restarts must be <= "),
])
def test_extreme_parameter_values_name_the_parameter(params, match):
    X, y = binary_data(100)
    params = dict({"objective": "binary:logistic"}, **params)
    with pytest.raises(ValueError, match=match):
        train(params, Dataset(X, y), 1, verbose_eval=False)


@pytest.mark.parametrize("rounds", [2**70, -1, 2.5, True])
def test_num_boost_round_is_a_bounded_integer(rounds):
    X, y = binary_data(100)
    with pytest.raises(ValueError, match=r"num_boost_round must be an integer in \[0, "):
        train({}, Dataset(X, y), rounds, verbose_eval=False)


@pytest.mark.parametrize("n_jobs", [1.5, True, "2"])
def test_n_jobs_must_be_an_integer(n_jobs):
    X, y = binary_data(100)
    with pytest.raises(TypeError, match="n_jobs must be an integer"):
        train({"n_jobs": n_jobs}, Dataset(X, y), 1, verbose_eval=False)


def test_costs_are_bounded_so_that_predicted_costs_stay_finite():
    X, y = binary_data(100, m=3)
    with pytest.raises(ValueError, match=r"feature_costs must be finite and >= 0 \(at most"):
        Dataset(X, y, feature_costs=[1e308, 1e308, 1.0])
    with pytest.raises(ValueError, match="split_cost must be finite and >= 0"):
        Dataset(X, y, split_cost=1e200)
    with pytest.raises(TypeError, match="feature_costs must be an array of numbers"):
        Dataset(X, y, feature_costs=[True, 1.0, 1.0])
    # the largest allowed costs: every predicted cost finite
    data = Dataset(X, y, feature_costs=[1e100] * 3, split_cost=1e100, tree_cost=1e100)
    booster = train({"objective": "binary:logistic"}, data, 5, verbose_eval=False)
    assert np.all(np.isfinite(booster.predict_cost(X)))


@pytest.mark.parametrize("params", [{"num_leaves": 2.5}, {"learning_rate": "0.1"},
                                    {"max_depth": True}])
def test_bad_parameter_types(params):
    X, y = regression_data(100)
    with pytest.raises(TypeError, match=list(params)[0]):
        train(dict(FAST, **params), Dataset(X, y), 1, verbose_eval=False)


@pytest.mark.parametrize("objective,labels", [
    ("binary:logistic", [0, 1, 2]),
    ("binary:logistic", [-1, 0, 1]),
    ("multi:softprob", [0, 1, 3]),
    ("multi:softprob", [0, 1, 1.5]),
    ("multi:softprob", [-1, 0, 1]),
])
def test_labels_out_of_range(objective, labels):
    X = np.random.default_rng(0).normal(size=(30, 2))
    y = np.resize(np.asarray(labels, dtype=float), 30)
    params = dict(FAST, objective=objective)
    if objective == "multi:softprob":
        params["num_class"] = 3
    with pytest.raises(ValueError, match=objective):
        train(params, Dataset(X, y), 1, verbose_eval=False)
    # also for evaluation data
    ok = np.resize([0.0, 1.0], 30)
    with pytest.raises(ValueError, match=objective):
        train(params, Dataset(X, ok), 1, evals=[(Dataset(X, y), "v")], verbose_eval=False)


def test_train_argument_errors():
    X, y = regression_data(50)
    with pytest.raises(ValueError, match="no label"):
        train(dict(FAST), Dataset(X), 1, verbose_eval=False)
    with pytest.raises(TypeError, match="Dataset"):
        train(dict(FAST), X, 1, verbose_eval=False)
    with pytest.raises(ValueError, match="num_boost_round"):
        train(dict(FAST), Dataset(X, y), -1, verbose_eval=False)
    with pytest.raises(TypeError, match="params must be a dict"):
        train([("eta", 0.1)], Dataset(X, y), 1, verbose_eval=False)


# --------------------------------------------------------------------------------------
# determinism
# --------------------------------------------------------------------------------------
def test_same_seed_identical_model():
    X, y = binary_data(500)
    d = Dataset(X, y)
    params = dict(FAST, objective="binary:logistic", subsample=0.7, colsample_bytree=0.5,
                  seed=3)
    a = train(params, d, 15, verbose_eval=False).to_dict()
    b = train(params, Dataset(X, y), 15, verbose_eval=False).to_dict()
    assert a == b
    c = train(dict(params, seed=4), d, 15, verbose_eval=False).to_dict()
    assert c["trees"] != a["trees"]


def test_subsample_and_colsample_are_used():
    X, y = regression_data(400)
    d = Dataset(X, y)
    booster = train(dict(FAST, subsample=0.5, colsample_bytree=0.34, num_leaves=4), d, 10,
                    verbose_eval=False)
    for tree in booster.to_dict()["trees"]:
        assert tree["n_samples"][0] == 200  # in-bag rows
        split_features = {f for f, left in zip(tree["split_features"], tree["left_children"])
                          if left != -1}
        assert len(split_features) <= 2  # round(0.34 * 6) features per tree


def with_sparse_columns(X, k=6, seed=0):
    """X and ``k`` more columns of 90% zeros: enough for the row-wise histogram layout."""
    rng = np.random.default_rng(seed)
    extra = rng.normal(size=(X.shape[0], k)) * (rng.random((X.shape[0], k)) < 0.1)
    return np.hstack([X, extra])


def test_dataset_pickles_after_training():
    X, y = binary_data(300)
    X = with_sparse_columns(X)
    d = Dataset(X, y)
    first = train(FAST, d, 3, verbose_eval=False)
    assert d.sparse_bins().features.tolist() == list(range(6, 12))
    again = pickle.loads(pickle.dumps(d))
    np.testing.assert_array_equal(again.binned, d.binned)
    assert trees_only(train(FAST, again, 3, verbose_eval=False).to_dict()) == \
        trees_only(first.to_dict())


@pytest.mark.parametrize("objective,algorithm", [("reg:squarederror", "gbdt"),
                                                ("multi:softprob", "gbdt"),
                                                ("binary:logistic", "cegb")])
def test_n_jobs_1_and_2_identical(objective, algorithm):
    if objective == "multi:softprob":
        X, y = multiclass_data(2500)
        extra = {"num_class": 3}
    elif objective == "binary:logistic":
        X, y = binary_data(2500, m=6)
        extra = {"cost_tradeoff": 0.01}
    else:
        X, y = regression_data(2500)
        extra = {}
    X = with_sparse_columns(X)    # their histograms are built row-wise
    d = Dataset(X, y, feature_costs=np.arange(12.0))
    assert d.sparse_bins().features.tolist() == list(range(6, 12))
    params = dict(objective=objective, subsample=0.8, colsample_bytree=0.8, num_leaves=15,
                  algorithm=algorithm, **extra)
    one = train(dict(params, n_jobs=1), d, 6, evals=[(d, "t")], verbose_eval=False)
    two = train(dict(params, n_jobs=2), d, 6, evals=[(d, "t")], verbose_eval=False)
    assert trees_only(one.to_dict()) == trees_only(two.to_dict())
    np.testing.assert_array_equal(one.predict(X), two.predict(X))
    np.testing.assert_array_equal(one.predict_cost(X), two.predict_cost(X))


# --------------------------------------------------------------------------------------
# tree shape constraints
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("num_leaves", [2, 5, 16])
def test_lossguide_num_leaves(num_leaves):
    X, y = regression_data(500)
    booster = train(dict(FAST, grow_policy="lossguide", num_leaves=num_leaves,
                         min_data_in_leaf=5), Dataset(X, y), 5, verbose_eval=False)
    counts = [len(leaves(t)) for t in booster.to_dict()["trees"]]
    assert max(counts) == num_leaves
    for t in booster.to_dict()["trees"]:
        assert t["num_nodes"] == 2 * len(leaves(t)) - 1


def test_lossguide_default_num_leaves_is_31():
    X, y = regression_data(1000)
    booster = train(dict(FAST, min_data_in_leaf=2), Dataset(X, y), 2, verbose_eval=False)
    assert max(len(leaves(t)) for t in booster.to_dict()["trees"]) == 31


@pytest.mark.parametrize("max_depth", [1, 2, 4])
def test_depthwise_max_depth(max_depth):
    X, y = regression_data(500)
    booster = train(dict(FAST, grow_policy="depthwise", max_depth=max_depth, min_data_in_leaf=3,
                         reg_lambda=0.0), Dataset(X, y), 4, verbose_eval=False)
    depths = [max(leaf_depths(t)) for t in booster.to_dict()["trees"]]
    assert max(depths) == max_depth
    # without L2 regularisation every split of a continuous target has a positive gain,
    # so depth-wise growth fills every level
    first = booster.to_dict()["trees"][0]
    assert len(leaves(first)) == 2 ** max_depth


def test_depthwise_default_max_depth_is_6():
    X, y = regression_data(2000)
    booster = train(dict(FAST, grow_policy="depthwise", min_data_in_leaf=2), Dataset(X, y), 1,
                    verbose_eval=False)
    assert max(leaf_depths(booster.to_dict()["trees"][0])) == 6


@pytest.mark.parametrize("max_depth", [1, 3])
def test_lossguide_with_max_depth(max_depth):
    X, y = regression_data(500)
    booster = train(dict(FAST, grow_policy="lossguide", num_leaves=64, max_depth=max_depth,
                         min_data_in_leaf=2), Dataset(X, y), 4, verbose_eval=False)
    trees = booster.to_dict()["trees"]
    assert max(max(leaf_depths(t)) for t in trees) == max_depth
    assert max(len(leaves(t)) for t in trees) <= 2 ** max_depth


@pytest.mark.parametrize("min_data", [1, 17, 60])
def test_min_data_in_leaf(min_data):
    X, y = regression_data(400)
    booster = train(dict(FAST, num_leaves=31, min_data_in_leaf=min_data), Dataset(X, y), 4,
                    verbose_eval=False)
    for t in booster.to_dict()["trees"]:
        ns = t["n_samples"]
        assert ns[0] == 400
        assert min(ns[i] for i in leaves(t)) >= min_data
        assert sum(ns[i] for i in leaves(t)) == 400
        for i, (left, r) in enumerate(zip(t["left_children"], t["right_children"])):
            if left != -1:
                assert ns[left] + ns[r] == ns[i]
    if min_data == 1:
        assert min(min(t["n_samples"][i] for i in leaves(t))
                   for t in booster.to_dict()["trees"]) < 17


@pytest.mark.parametrize("reg_lambda", [0.0, 1.0, 10.0])
def test_first_tree_leaf_values_are_newton_steps(reg_lambda):
    """Leaf value = -learning_rate * G / (H + lambda) over the leaf's training rows."""
    X, y = regression_data(300)
    w = np.random.default_rng(4).uniform(0.5, 2.0, size=300)
    booster = train(dict(FAST, learning_rate=0.3, reg_lambda=reg_lambda, num_leaves=6),
                    Dataset(X, y, weight=w), 1, verbose_eval=False)
    base = np.average(y, weights=w)
    assert booster.base_score[0] == pytest.approx(base, rel=1e-12)
    tree = booster.to_dict()["trees"][0]
    leaf = booster.predict(X, pred_leaf=True)[:, 0]
    for node in leaves(tree):
        rows = leaf == node
        G = np.sum(w[rows] * (base - y[rows]))
        H = np.sum(w[rows])
        assert tree["leaf_values"][node] == pytest.approx(-0.3 * G / (H + reg_lambda), rel=1e-9,
                                                          abs=1e-12)
        assert tree["sum_hessian"][node] == pytest.approx(H, rel=1e-12)


def test_learning_rate_scales_first_tree():
    X, y = regression_data(300)
    d = Dataset(X, y)
    a = train(dict(FAST, learning_rate=0.1), d, 1, verbose_eval=False).to_dict()["trees"][0]
    b = train(dict(FAST, learning_rate=0.4), d, 1, verbose_eval=False).to_dict()["trees"][0]
    assert a["left_children"] == b["left_children"]
    assert a["split_features"] == b["split_features"]
    assert a["thresholds"] == b["thresholds"]
    np.testing.assert_allclose(np.asarray(b["leaf_values"]), 4 * np.asarray(a["leaf_values"]),
                               rtol=1e-12)


def test_gamma_is_a_minimum_split_gain():
    X, y = regression_data(400)
    d = Dataset(X, y)
    free = train(dict(FAST), d, 3, verbose_eval=False).to_dict()["trees"]
    gains = sorted(g for t in free for g, left in zip(t["gain"], t["left_children"]) if left != -1)
    gamma = gains[len(gains) // 2]  # half of the unconstrained splits fall below it
    booster = train(dict(FAST, gamma=gamma), d, 3, verbose_eval=False)
    split_gains = [g for t in booster.to_dict()["trees"]
                   for g, left in zip(t["gain"], t["left_children"]) if left != -1]
    assert split_gains and min(split_gains) > gamma


def test_tree_n_samples_match_training_routes():
    X, y = regression_data(300)
    booster = train(dict(FAST, min_data_in_leaf=5), Dataset(X, y), 3, verbose_eval=False)
    leaf_ids = booster.predict(X, pred_leaf=True)
    for t, tree in enumerate(booster.to_dict()["trees"]):
        counts = np.bincount(leaf_ids[:, t], minlength=tree["num_nodes"])
        for leaf in leaves(tree):
            assert counts[leaf] == tree["n_samples"][leaf]


# --------------------------------------------------------------------------------------
# missing values
# --------------------------------------------------------------------------------------
def test_missing_values_default_left():
    rng = np.random.default_rng(0)
    n = 600
    X = rng.uniform(0, 1, size=(n, 3))
    y = X[:, 0].copy()
    missing = rng.random(n) < 0.25
    X[missing, 0] = np.nan
    y[missing] = -3.0  # below every observed value: the best split sends NaN left
    dtrain = Dataset(X, y)
    booster = train(dict(FAST, learning_rate=1.0), dtrain, 3, verbose_eval=False)
    doc = booster.to_dict()
    root = doc["trees"][0]
    assert root["split_features"][0] == 0
    assert root["default_left"][0] == 1
    pred = booster.predict(X)
    assert np.all(np.isfinite(pred))
    assert np.all(pred[missing] < -2.5)
    # observed values (apart from the few lowest, which share the NaN leaf) stay high
    assert np.all(pred[~missing & (X[:, 0] > 0.05)] > -1.0)
    np.testing.assert_allclose(pred, brute_raw(doc, X)[:, 0], rtol=1e-12, atol=1e-12)
    # NaN in a feature never missing in training: goes the default (right) way
    Xt = rng.uniform(0, 1, size=(50, 3))
    Xt[:, 1] = np.nan
    Xt[:10, 0] = np.nan
    np.testing.assert_allclose(booster.predict(Xt), brute_raw(doc, Xt)[:, 0], rtol=1e-12,
                               atol=1e-12)


def test_missing_values_default_right():
    rng = np.random.default_rng(1)
    X = rng.uniform(0, 1, size=(600, 2))
    y = X[:, 0].copy()
    missing = rng.random(600) < 0.25
    X[missing, 0] = np.nan
    y[missing] = 4.0
    booster = train(dict(FAST, learning_rate=1.0), Dataset(X, y), 3, verbose_eval=False)
    root = booster.to_dict()["trees"][0]
    assert root["split_features"][0] == 0 and root["default_left"][0] == 0
    assert np.all(booster.predict(X)[missing] > 3.5)


# --------------------------------------------------------------------------------------
# prediction API
# --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def boosters():
    """One small model per objective, with costs and groups."""
    out = {}
    for objective, (X, y), extra in [
        ("reg:squarederror", regression_data(400, seed=5), {}),
        ("binary:logistic", binary_data(400, seed=5), {}),
        ("multi:softprob", multiclass_data(400, seed=5), {"num_class": 3}),
    ]:
        X = X.copy()
        X[::17, 2] = np.nan
        d = Dataset(X, y, feature_names=list("abcdef"),
                    feature_costs=[1.0, 2.0, 0.5, 3.0, 0.0, 7.0],
                    cost_groups={"s1": ["a", "d"], "s2": ["c", "f"]}, group_costs=[10.0, 4.0],
                    coupled_costs=[0.0, 5.0, 1.0, 0.0, 2.0, 0.0],
                    split_cost=0.01, tree_cost=0.125)
        booster = train(dict(FAST, objective=objective, num_leaves=6, min_data_in_leaf=8,
                             colsample_bytree=0.67, **extra), d, 8, verbose_eval=False)
        out[objective] = (booster, X, y)
    return out


OBJECTIVES = ["reg:squarederror", "binary:logistic", "multi:softprob"]


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_predict_shapes_and_margin(boosters, objective):
    booster, X, _ = boosters[objective]
    n = X.shape[0]
    k = 3 if objective == "multi:softprob" else 1
    pred = booster.predict(X)
    margin = booster.predict(X, output_margin=True)
    leaf = booster.predict(X, pred_leaf=True)
    assert pred.shape == ((n, 3) if k == 3 else (n,))
    assert margin.shape == pred.shape
    assert leaf.shape == (n, 8 * k) and leaf.dtype == np.int32
    assert len(booster.trees) == 8 * k
    raw = brute_raw(booster.to_dict(), X)
    np.testing.assert_allclose(margin.reshape(n, k), raw, rtol=1e-12, atol=1e-12)
    if objective == "reg:squarederror":
        np.testing.assert_array_equal(pred, margin)
    elif objective == "binary:logistic":
        np.testing.assert_allclose(pred, 1 / (1 + np.exp(-margin)), rtol=1e-12)
    else:
        e = np.exp(margin - margin.max(axis=1, keepdims=True))
        np.testing.assert_allclose(pred, e / e.sum(axis=1, keepdims=True), rtol=1e-12)
    # the leaves reached are leaves, and their values add up to the margin
    doc = booster.to_dict()
    total = np.tile(booster.base_score, (n, 1))
    for t, tree in enumerate(doc["trees"]):
        assert all(tree["left_children"][i] == -1 for i in leaf[:, t])
        total[:, tree["output"]] += np.asarray(tree["leaf_values"])[leaf[:, t]]
    np.testing.assert_allclose(total, margin.reshape(n, k), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_iteration_range_and_slicing_agree(boosters, objective):
    booster, X, _ = boosters[objective]
    assert booster.num_boosted_rounds() == 8
    for a, b in [(0, 5), (2, 5), (0, 8), (3, 4), (7, 8)]:
        sliced = booster[a:b]
        assert isinstance(sliced, cbudget.Booster)
        assert sliced.num_boosted_rounds() == b - a
        for kw in ({}, {"output_margin": True}, {"pred_leaf": True}):
            np.testing.assert_array_equal(sliced.predict(X, **kw),
                                          booster.predict(X, iteration_range=(a, b), **kw))
        np.testing.assert_array_equal(sliced.predict_cost(X),
                                      booster.predict_cost(X, iteration_range=(a, b)))
    np.testing.assert_array_equal(booster[3].predict(X), booster[3:4].predict(X))
    np.testing.assert_array_equal(booster[-1].predict(X), booster[7:8].predict(X))
    np.testing.assert_array_equal(booster.predict(X, iteration_range=(0, 0)), booster.predict(X))
    np.testing.assert_array_equal(booster[:].predict(X), booster.predict(X))
    # slicing does not change the original
    assert booster.num_boosted_rounds() == 8
    np.testing.assert_allclose(booster[0:5].predict(X, output_margin=True).reshape(len(X), -1),
                               brute_raw(booster.to_dict(), X, 0,
                                         booster.iteration_indptr[5]), rtol=1e-12, atol=1e-12)


def test_iteration_range_errors(boosters):
    booster, X, _ = boosters["reg:squarederror"]
    with pytest.raises(ValueError, match="iteration_range"):
        booster.predict(X, iteration_range=(0, 9))
    with pytest.raises(ValueError, match="iteration_range"):
        booster.predict(X, iteration_range=(5, 3))
    with pytest.raises(TypeError, match="iteration_range"):
        booster.predict(X, iteration_range=5)
    with pytest.raises(IndexError):
        booster[8]
    with pytest.raises(ValueError, match="step"):
        booster[0:8:2]
    with pytest.raises(TypeError):
        booster["a"]


def test_predict_accepts_dataset_float32_and_sparse(boosters):
    sp = pytest.importorskip("scipy.sparse")
    booster, X, y = boosters["reg:squarederror"]
    pred = booster.predict(X)
    d = Dataset(X, y, feature_names=list("abcdef"))
    np.testing.assert_array_equal(booster.predict(d), pred)
    Xz = np.where(np.isnan(X), 0.0, X)
    np.testing.assert_array_equal(booster.predict(sp.csr_matrix(Xz)), booster.predict(Xz))
    X32 = X.astype(np.float32)
    np.testing.assert_allclose(booster.predict(X32),
                               brute_raw(booster.to_dict(), X32.astype(np.float64))[:, 0],
                               rtol=1e-12, atol=1e-12)


def test_predict_wrong_feature_count(boosters):
    booster, X, _ = boosters["binary:logistic"]
    with pytest.raises(ValueError, match="X has 5 features but the model was trained on 6"):
        booster.predict(X[:, :5])
    with pytest.raises(ValueError, match="7 features"):
        booster.predict(np.hstack([X, X[:, :1]]))
    with pytest.raises(ValueError, match="5 features"):
        booster.predict_cost(X[:, :5])
    with pytest.raises(ValueError, match="2-D"):
        booster.predict(X[0])


def test_predict_dataframe_columns():
    pd = pytest.importorskip("pandas")
    X, y = regression_data(300)
    cols = [f"c{i}" for i in range(6)]
    df = pd.DataFrame(X, columns=cols)
    booster = train(dict(FAST), Dataset(df, y), 5, verbose_eval=False)
    assert booster.feature_names == cols
    np.testing.assert_array_equal(booster.predict(df), booster.predict(X))
    # columns in another order: matched by name (issue 47), as the CLI matches them
    np.testing.assert_array_equal(booster.predict(df[cols[::-1]]), booster.predict(X))
    np.testing.assert_array_equal(booster.predict_cost(df[[cols[1], cols[0]] + cols[2:]]),
                                  booster.predict_cost(X))
    with pytest.raises(ValueError, match="feature names differ"):
        booster.predict(df[cols[1:] + ["c0"]].rename(columns={"c0": "c0_"}))
    renamed = df.rename(columns={"c3": "zz"})
    with pytest.raises(ValueError, match="feature names differ"):
        booster.predict(renamed)


# --------------------------------------------------------------------------------------
# importance and costs
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("objective", OBJECTIVES)
def test_feature_importance(boosters, objective):
    booster, X, _ = boosters[objective]
    doc = booster.to_dict()
    split = np.zeros(6)
    gain = np.zeros(6)
    for tree in doc["trees"]:
        for i, left in enumerate(tree["left_children"]):
            if left != -1:
                split[tree["split_features"][i]] += 1
                gain[tree["split_features"][i]] += tree["gain"][i]
    np.testing.assert_array_equal(booster.feature_importance(), split)
    np.testing.assert_array_equal(booster.feature_importance("split"), split)
    np.testing.assert_allclose(booster.feature_importance("gain"), gain, rtol=1e-12)
    assert np.all(booster.feature_importance("gain") >= 0)
    # "cost": feature cost times the training inputs that acquired the feature
    report = booster.cost_report(X)
    acquired = np.round(report.acquisition_rate * X.shape[0])
    np.testing.assert_allclose(booster.feature_importance("cost"),
                               acquired * np.array([1.0, 2.0, 0.5, 3.0, 0.0, 7.0]), rtol=1e-12)
    # per-range importance
    first = booster.feature_importance("split", iteration_range=(0, 1))
    assert first.sum() == sum(1 for t in doc["trees"][:booster.iteration_indptr[1]]
                              for left in t["left_children"] if left != -1)
    with pytest.raises(ValueError, match="kind must be one of"):
        booster.feature_importance("weight")


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_predict_cost_brute_force(boosters, objective):
    booster, X, _ = boosters[objective]
    doc = booster.to_dict()
    Xs = X[:150]
    cost = booster.predict_cost(Xs)
    assert cost.shape == (150,) and cost.dtype == np.float64
    np.testing.assert_allclose(cost, brute_cost(doc, Xs), rtol=1e-12, atol=1e-12)
    t1 = booster.iteration_indptr[3]
    np.testing.assert_allclose(booster.predict_cost(Xs, iteration_range=(0, 3)),
                               brute_cost(doc, Xs, 0, t1), rtol=1e-12, atol=1e-12)
    t2 = booster.iteration_indptr[6]
    np.testing.assert_allclose(booster.predict_cost(Xs, iteration_range=(3, 6)),
                               brute_cost(doc, Xs, t1, t2), rtol=1e-12, atol=1e-12)
    # new inputs, with missing values where training had none
    Xn = np.random.default_rng(3).normal(size=(40, 6)) * 2
    Xn[::3, 0] = np.nan
    np.testing.assert_allclose(booster.predict_cost(Xn), brute_cost(doc, Xn), rtol=1e-12,
                               atol=1e-12)


def test_predict_cost_hand_computed():
    """A stump per round on one feature: the feature and its group are paid once."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 2))
    y = (X[:, 0] > 0).astype(float)
    d = Dataset(X, y, feature_costs=[3.0, 100.0], cost_groups=[[0, 1]], group_costs=[0.5],
                split_cost=0.25, tree_cost=1.0)
    booster = train(dict(FAST, num_leaves=2), d, 4, verbose_eval=False)
    doc = booster.to_dict()
    assert all(t["split_features"][0] == 0 for t in doc["trees"])
    # 4 trees + 4 split nodes + feature 0 once + its group once
    np.testing.assert_allclose(booster.predict_cost(X), 4 * 1.0 + 4 * 0.25 + 3.0 + 0.5)
    rep = booster.cost_report(X)
    np.testing.assert_array_equal(rep.acquisition_rate, [1.0, 0.0])
    assert rep.features_used == ["f0"]


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_cost_report(boosters, objective):
    booster, X, _ = boosters[objective]
    rep = booster.cost_report(X)
    assert isinstance(rep, cbudget.CostReport)
    cost = booster.predict_cost(X)
    np.testing.assert_array_equal(rep.per_input_cost, cost)
    assert rep.mean_cost == pytest.approx(cost.mean(), rel=1e-12)
    assert rep.acquisition_rate.shape == (6,)
    assert np.all((rep.acquisition_rate >= 0) & (rep.acquisition_rate <= 1))
    used = booster.used_features()
    assert rep.features_used == [list("abcdef")[m] for m in used]
    assert set(rep.features_used) == {
        "abcdef"[f] for t in booster.to_dict()["trees"]
        for f, left in zip(t["split_features"], t["left_children"]) if left != -1}
    coupled = np.array([0.0, 5.0, 1.0, 0.0, 2.0, 0.0])
    assert rep.coupled_cost == pytest.approx(coupled[used].sum())
    # acquisition rate by brute force: features on the input's paths
    doc = booster.to_dict()
    acq = np.zeros((len(X), 6))
    for i, x in enumerate(X):
        for tree in doc["trees"]:
            for node in tree_walk(tree, x)[:-1]:
                acq[i, tree["split_features"][node]] = 1
    np.testing.assert_allclose(rep.acquisition_rate, acq.mean(axis=0), rtol=1e-12)
    # features never used are never acquired
    unused = np.setdiff1d(np.arange(6), used)
    assert np.all(rep.acquisition_rate[unused] == 0)
    assert rep.feature_names == list("abcdef")
    text = str(rep)
    assert "mean cost per input" in text and "features used" in text
    # a range of rounds
    rep3 = booster.cost_report(X, iteration_range=(0, 3))
    assert rep3.mean_cost == pytest.approx(booster.predict_cost(X, iteration_range=(0, 3)).mean())


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_cost_curve(boosters, objective):
    booster, X, _ = boosters[objective]
    curve = booster.cost_curve(X)
    assert curve.shape == (8,)
    assert np.all(np.diff(curve) >= 0)
    assert curve[-1] == pytest.approx(booster.predict_cost(X).mean(), rel=1e-12)
    for r in range(8):
        assert curve[r] == pytest.approx(
            booster.predict_cost(X, iteration_range=(0, r + 1)).mean(), rel=1e-12)
    # tree_cost alone makes it strictly increasing
    assert np.all(np.diff(curve) >= 0.125 * (3 if objective == "multi:softprob" else 1) - 1e-12)


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_summary(boosters, objective):
    booster, X, _ = boosters[objective]
    s = booster.summary
    assert s["train_cost"] == pytest.approx(booster.predict_cost(X).mean(), rel=1e-12)
    np.testing.assert_allclose(s["train_cost_per_iteration"], booster.cost_curve(X), rtol=1e-12)
    assert s["features_used"] == booster.cost_report(X).features_used
    assert s["coupled_cost"] == pytest.approx(booster.cost_report(X).coupled_cost)
    assert s["valid_cost"] == {}


def test_summary_valid_cost():
    X, y = regression_data(500)
    Xtr, ytr, Xva, yva = split_rows(X, y, 350)
    dtrain = Dataset(Xtr, ytr, feature_costs=[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], tree_cost=0.5)
    dvalid = Dataset(Xva, yva, reference=dtrain)
    booster = train(dict(FAST, num_leaves=4), dtrain, 6, evals=[(dvalid, "valid")],
                    verbose_eval=False)
    assert booster.summary["valid_cost"]["valid"] == pytest.approx(
        booster.predict_cost(Xva).mean(), rel=1e-12)
    assert booster.summary["train_cost"] == pytest.approx(booster.predict_cost(Xtr).mean(),
                                                          rel=1e-12)


def test_new_acquisitions_and_path_cost(boosters):
    booster, X, _ = boosters["reg:squarederror"]
    doc = booster.to_dict()
    cm = doc["cost_model"]
    # new_acquisitions: training inputs that first acquire the node's feature at that node
    expected = [np.zeros(t["num_nodes"], dtype=int) for t in doc["trees"]]
    for x in X:
        acquired = set()
        for t, tree in enumerate(doc["trees"]):
            for node in tree_walk(tree, x)[:-1]:
                f = tree["split_features"][node]
                if f not in acquired:
                    acquired.add(f)
                    expected[t][node] += 1
    for t, tree in enumerate(doc["trees"]):
        assert tree["new_acquisitions"] == expected[t].tolist()
    # path_cost: acquisition cost (groups once) of the distinct features root..node
    for tree in doc["trees"]:
        stack = [(0, frozenset())]
        while stack:
            node, feats = stack.pop()
            if tree["left_children"][node] != -1:
                feats = feats | {tree["split_features"][node]}
                stack += [(tree["left_children"][node], feats),
                          (tree["right_children"][node], feats)]
            groups = {cm["feature_group"][f] for f in feats} - {-1}
            want = sum(cm["feature_costs"][f] for f in feats) + sum(cm["group_costs"][g]
                                                                     for g in groups)
            assert tree["path_cost"][node] == pytest.approx(want)


def test_predict_cost_many_features_and_groups():
    """More than 64 features and 64 groups: several bitset words per input."""
    rng = np.random.default_rng(12)
    n, m = 500, 140
    X = rng.normal(size=(n, m))
    y = X[:, 70:].sum(axis=1) + X[:, 3] - X[:, 130]
    groups = {f"g{g}": [2 * g, 2 * g + 1] for g in range(68)}  # 68 groups of 2 features
    d = Dataset(X, y, feature_costs=rng.uniform(0.1, 2.0, size=m), cost_groups=groups,
                group_costs=rng.uniform(0.5, 5.0, size=68), split_cost=0.001)
    booster = train(dict(FAST, num_leaves=16, min_data_in_leaf=5, colsample_bytree=0.5), d, 6,
                    verbose_eval=False)
    used = booster.used_features()
    assert used.max() >= 128 and used.min() < 64  # all three bitset words are used
    doc = booster.to_dict()
    Xs = X[:120]
    np.testing.assert_allclose(booster.predict_cost(Xs), brute_cost(doc, Xs), rtol=1e-12)
    acq = np.zeros((len(Xs), m))
    for i, x in enumerate(Xs):
        for tree in doc["trees"]:
            for node in tree_walk(tree, x)[:-1]:
                acq[i, tree["split_features"][node]] = 1
    np.testing.assert_allclose(booster.cost_report(Xs).acquisition_rate, acq.mean(axis=0))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_training_routes_match_prediction_routes(dtype):
    """Training scores (binned data) and predict() (raw values) agree, also with NaN,
    float32 data and values equal to bin edges."""
    rng = np.random.default_rng(21)
    X = rng.normal(size=(800, 4))
    X[:, 1] = np.round(X[:, 1], 1)  # few distinct values, many ties
    X[rng.random(800) < 0.1, 2] = np.nan
    X = X.astype(dtype)
    y = np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1]) ** 2 + np.isnan(X[:, 2])
    dtrain = Dataset(X, y, max_bin=31)
    Xva = X[:200].copy()
    Xva[:50, 0] = np.concatenate([dtrain.bin_edges[0][:25], dtrain.bin_edges[0][-25:]])
    dvalid = Dataset(Xva, y[:200], reference=dtrain)
    result = {}
    booster = train(dict(FAST, num_leaves=12, min_data_in_leaf=3), dtrain, 10,
                    evals=[(dtrain, "train"), (dvalid, "valid")], evals_result=result,
                    verbose_eval=False)
    for data, name, yy in ((X, "train", y), (Xva, "valid", y[:200])):
        pred = booster.predict(data)
        assert result[name]["rmse"][-1] == pytest.approx(np.sqrt(np.mean((pred - yy) ** 2)),
                                                         rel=1e-12)
    leaf = booster.predict(X, pred_leaf=True)
    for t, tree in enumerate(booster.to_dict()["trees"]):
        for i in range(0, 800, 37):
            assert leaf[i, t] == tree_walk(tree, X[i].astype(np.float64))[-1]


def test_constant_label_gives_stumps_without_splits(tmp_path):
    X = np.random.default_rng(0).normal(size=(100, 3))
    y = np.full(100, 4.0)
    d = Dataset(X, y, feature_costs=[1.0, 2.0, 3.0], tree_cost=0.5, coupled_costs=[1, 1, 1])
    booster = train(dict(FAST), d, 3, verbose_eval=False)
    assert all(t.shape[0] == 1 for t in booster.trees)
    np.testing.assert_allclose(booster.predict(X), 4.0)
    np.testing.assert_allclose(booster.predict_cost(X), 1.5)
    rep = booster.cost_report(X)
    assert rep.features_used == [] and rep.coupled_cost == 0.0
    np.testing.assert_array_equal(booster.feature_importance("gain"), np.zeros(3))
    booster.save_model(tmp_path / "m.json")
    loaded = cbudget.load_model(tmp_path / "m.json")
    np.testing.assert_array_equal(loaded.predict(X), booster.predict(X))
    np.testing.assert_array_equal(loaded.predict_cost(X), booster.predict_cost(X))


def test_metric_functions_match_references_with_ties():
    from cbudget.metrics import evaluate_metric
    rng = np.random.default_rng(5)
    y = (rng.random(80) < 0.4).astype(float)
    s = rng.integers(0, 5, size=80) / 4.0  # 5 distinct scores: many ties
    s = np.clip(s, 0.01, 0.99)
    w = rng.uniform(0.1, 2.0, size=80)
    assert evaluate_metric("auc", y, s) == pytest.approx(pairwise_auc(y, s), abs=1e-12)
    assert evaluate_metric("auc", y, s, w) == pytest.approx(pairwise_auc(y, s, w), abs=1e-12)
    assert evaluate_metric("auc", y, np.full(80, 0.3)) == pytest.approx(0.5)
    assert evaluate_metric("error", y, s, w) == pytest.approx(
        np.sum(w * ((s > 0.5) != (y > 0.5))) / w.sum())
    assert evaluate_metric("logloss", y, s, w) == pytest.approx(
        -np.sum(w * (y * np.log(s) + (1 - y) * np.log(1 - s))) / w.sum())
    k = rng.integers(0, 3, size=80).astype(float)
    P = rng.dirichlet(np.ones(3), size=80)
    assert evaluate_metric("mlogloss", k, P, w) == pytest.approx(
        -np.sum(w * np.log(P[np.arange(80), k.astype(int)])) / w.sum())
    assert evaluate_metric("merror", k, P) == pytest.approx(np.mean(P.argmax(axis=1) != k))
    assert math.isnan(evaluate_metric("auc", np.ones(5), np.linspace(0, 1, 5)))


# --------------------------------------------------------------------------------------
# command line
# --------------------------------------------------------------------------------------
def test_cli_version(capsys):
    from cbudget.__main__ import main
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"cbudget {cbudget.__version__}"


def test_cli_no_command_prints_help(capsys):
    from cbudget.__main__ import main
    assert main([]) == 2
    assert "demo" in capsys.readouterr().out


def _check_demo_output(out, split):
    """Every table of ``cbudget demo --rounds 5``: each algorithm's row, its rounds /
    nodes within the limits, accuracy above chance, a mean cost within the 16 features."""
    assert (f"UCI Letters: {split[0]} train / {split[1]} valid / {split[2]} test, "
            "16 features, 26 classes") in out
    table = {line.split()[0]: line.split()[1:] for line in out.splitlines()
             if len(line.split()) >= 6 and line.split()[1].isdigit()}
    assert {"gbdt", "cegb", "greedy_miser", "budget_rf", "cstc", "cstc+trees",
            "cscc+trees", "f0=gbdt", "adapt_gbrt"} <= set(table)
    for algorithm, max_count, min_accuracy in [("gbdt", 5, 0.5), ("cegb", 5, 0.5),
                                               ("greedy_miser", 10, 0.2),
                                               ("budget_rf", 40, 0.2),   # 26 classes
                                               ("cstc", 7, 0.6), ("cstc+trees", 7, 0.6),
                                               ("cscc+trees", 4, 0.6),   # binary
                                               ("f0=gbdt", 5, 0.6), ("adapt_gbrt", 5, 0.6)]:
        count, accuracy, cost = table[algorithm][:3]
        assert 0 < int(count) <= max_count, (algorithm, count)
        assert min_accuracy < float(accuracy) <= 1.0, (algorithm, accuracy)
        assert 0 < float(cost) <= 16.0, (algorithm, cost)
    assert "of the test inputs to f0" in out


def test_cli_demo(capsys):
    """The demo's every step, on the --quick split (the full one: test_cli_demo_full)."""
    from cbudget.__main__ import main
    assert main(["demo", "--rounds", "5", "--quick"]) == 0
    _check_demo_output(capsys.readouterr().out, (2000, 1000, 1000))


@pytest.mark.slow
def test_cli_demo_full(capsys):
    """The demo on its 12,000 / 4,000 / 4,000 split (5x the --quick run, minutes on a busy
    machine: marked slow, run by .ci/run with `pytest -n auto tests -m slow`)."""
    from cbudget.__main__ import main
    assert main(["demo", "--rounds", "5"]) == 0
    _check_demo_output(capsys.readouterr().out, (12000, 4000, 4000))


def test_letters_small():
    from cbudget.datasets import load_letters, train_valid_test_split
    X, y, names = load_letters()
    assert X.shape == (20000, 16) and y.shape == (20000,)
    assert len(names) == 16 and y.min() == 0 and y.max() == 25
    tr, va = train_valid_test_split(len(y), (1500, 500))
    assert np.intersect1d(tr, va).size == 0
    costs = np.linspace(0.5, 2.0, 16)
    dtrain = Dataset(X[tr], y[tr], feature_names=names, feature_costs=costs)
    dvalid = Dataset(X[va], y[va], reference=dtrain)
    result = {}
    booster = train(dict(FAST, objective="multi:softprob", num_class=26, num_leaves=8,
                         eval_metric="merror"), dtrain, 6, evals=[(dvalid, "valid")],
                    evals_result=result, verbose_eval=False)
    assert result["valid"]["merror"][-1] < 0.6  # 26 classes: chance is ~0.96
    doc = booster.to_dict()
    np.testing.assert_allclose(booster.predict_cost(X[va][:60]), brute_cost(doc, X[va][:60]),
                               rtol=1e-12)


def test_training_scores_equal_model_margins():
    """Round 2 is fitted to the gradients of the training scores kept during training
    (updated from the leaf partition): they must be the model's own margins."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(600, 4))
    y = X[:, 0] - 2 * X[:, 1] + 0.1 * rng.normal(size=600)
    params = {"reg_lambda": 0.5, "learning_rate": 0.3, "num_leaves": 8, "n_jobs": 1,
              "min_data_in_leaf": 5}
    booster = cbudget.train(params, cbudget.Dataset(X, y), 2, verbose_eval=False)
    gradients = booster[0:1].predict(X, output_margin=True) - y
    leaves = booster.predict(X, pred_leaf=True)[:, 1]
    tree = booster.trees[1]
    for leaf in np.flatnonzero(tree["left"] == -1):
        in_leaf = leaves == leaf
        expected = -0.3 * gradients[in_leaf].sum() / (in_leaf.sum() + 0.5)
        assert tree["value"][leaf] == pytest.approx(expected, rel=1e-9, abs=1e-12)
