"""cbudget.interop.from_sklearn: scikit-learn's tree models as cbudget models predict
what scikit-learn predicts, at every threshold and for NaN, and get cbudget's costs."""
import os
import subprocess
import sys

import numpy as np
import pytest

import cbudget
from cbudget.interop.from_sklearn import from_sklearn

sklearn = pytest.importorskip("sklearn")
from sklearn import ensemble, tree  # noqa: E402
from sklearn.dummy import DummyClassifier  # noqa: E402
from sklearn.linear_model import LinearRegression  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

SEEDS = (0, 1, 2)


def _data(seed, task, n=160, nan=False):
    """(X, y) of a small problem: ``task`` regression, binary or 3-class; ``nan``: about
    10% of X missing."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    X[:, 3] = np.round(X[:, 3], 1)       # repeated values: thresholds between them
    score = X[:, 0] + 0.5 * X[:, 1] * X[:, 2] + 0.3 * rng.normal(size=n)
    if nan:
        X[rng.random(X.shape) < 0.1] = np.nan
    if task == "regression":
        return X, 3.0 * score + 5.0
    if task == "binary":
        return X, np.where(score > 0, "yes", "no")       # classes_ are not 0..K-1
    return X, np.digitize(score, [-0.5, 0.5]) * 10 + 1


def _estimator(kind, task, seed):
    """A randomised scikit-learn estimator of class ``kind`` for ``task``."""
    rng = np.random.default_rng(100 + seed)
    depth = [None, 3, 6][rng.integers(3)]
    leaves = [None, 8, 20][rng.integers(3)]
    min_leaf = int([1, 3, 7][rng.integers(3)])
    regression = task == "regression"
    common = {"random_state": seed}
    if kind in ("DecisionTree", "RandomForest", "ExtraTrees"):
        common.update(max_depth=depth, max_leaf_nodes=leaves, min_samples_leaf=min_leaf)
        if kind != "DecisionTree":
            common["n_estimators"] = 6
    elif kind == "GradientBoosting":
        common.update(n_estimators=8, learning_rate=0.3, max_depth=depth or 4,
                      max_leaf_nodes=leaves, min_samples_leaf=min_leaf, subsample=0.8)
        if regression:
            common["loss"] = ["squared_error", "absolute_error", "huber",
                              "quantile"][seed % 4]
    else:
        common.update(max_iter=8, learning_rate=0.3, max_depth=depth,
                      max_leaf_nodes=leaves or 31, min_samples_leaf=min_leaf * 3)
        if regression:
            common["loss"] = ["squared_error", "absolute_error", "quantile"][seed % 3]
            if common["loss"] == "quantile":
                common["quantile"] = 0.7
    module = tree if kind == "DecisionTree" else ensemble
    return getattr(module, kind + ("Regressor" if regression else "Classifier"))(**common)


def _splits(est):
    """(feature, threshold, float32 compare) of every split of the estimator's trees."""
    if hasattr(est, "tree_") or hasattr(est, "estimators_"):
        for member in np.ravel(getattr(est, "estimators_", [est])):
            t = member.tree_
            internal = t.children_left != -1
            for f, v in zip(t.feature[internal], t.threshold[internal]):
                yield int(f), float(v), True
    else:     # HistGradientBoosting: no public API for its trees
        for per_iteration in est._predictors:
            for predictor in per_iteration:
                nodes = predictor.nodes[predictor.nodes["is_leaf"] == 0]
                for f, v in zip(nodes["feature_idx"], nodes["num_threshold"]):
                    yield int(f), float(v), False


def _around(t):
    """Values at and around threshold ``t``: the five float32 nearest it, the float64
    midpoints between them and the float64 next to those (where rounding to float32
    changes sides), and ``t`` with its float64 neighbours."""
    q = np.float32(t)
    f32 = [q]
    for _ in range(2):
        f32 = [np.nextafter(f32[0], np.float32(-np.inf))] + f32 + [
            np.nextafter(f32[-1], np.float32(np.inf))]
    v = np.asarray(f32, dtype=np.float64)
    mids = (v[:-1] + v[1:]) / 2
    return np.concatenate([v, mids, np.nextafter(mids, -np.inf), np.nextafter(mids, np.inf),
                           [t, np.nextafter(t, -np.inf), np.nextafter(t, np.inf)]])


def _probes(est, X, nan=True):
    """Rows of X with one feature set at and around each split's threshold (and to NaN
    when ``nan``), and how many of those values a float64 ``x <= t`` sends to the other
    side than scikit-learn's ``float32(x) <= t``."""
    base = np.nan_to_num(X)
    rows, naive_differs = [], 0
    for i, (f, t, float32_compare) in enumerate(_splits(est)):
        values = list(_around(t)) if np.isfinite(t) else [1e30, -1e30]
        if nan:
            values.append(np.nan)
        for j, x in enumerate(values):
            row = base[(i + j) % base.shape[0]].copy()
            row[f] = x
            rows.append(row)
            if float32_compare and np.isfinite(x):
                naive_differs += bool((np.float32(x) <= t) != (x <= t))
    return np.vstack([X] + rows), naive_differs


def _assert_same(est, model, X):
    """cbudget predicts what scikit-learn predicts: regression values, class
    probabilities, raw scores and the classes."""
    if not hasattr(est, "classes_"):
        np.testing.assert_allclose(model.predict(X), est.predict(X), rtol=1e-12, atol=1e-12)
        return
    expected = est.predict_proba(X)
    if isinstance(model, cbudget.Forest):
        proba = model.predict_proba(X)
    else:
        proba = model.predict(X)
        if proba.ndim == 1:
            proba = np.column_stack([1 - proba, proba])
        np.testing.assert_allclose(model.predict(X, output_margin=True),
                                   est.decision_function(X), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(proba, expected, rtol=1e-12, atol=1e-13)
    # classes where the two most probable are not tied up to rounding
    top = np.sort(expected, axis=1)
    clear = top[:, -1] - top[:, -2] > 1e-9
    assert clear.mean() > 0.5
    pred = model.predict(X) if isinstance(model, cbudget.Forest) else np.argmax(proba, axis=1)
    np.testing.assert_array_equal(est.classes_[pred][clear], est.predict(X)[clear])


def _sklearn_accepts_nan(est, X):
    try:
        est.predict(np.full((1, X.shape[1]), np.nan))
    except ValueError:
        return False
    return True


KINDS = ("DecisionTree", "RandomForest", "ExtraTrees", "GradientBoosting",
         "HistGradientBoosting")


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("task", ["regression", "binary", "multiclass"])
@pytest.mark.parametrize("kind", KINDS)
def test_predictions_equal_sklearn_at_every_threshold(kind, task, seed):
    nan = kind != "GradientBoosting"            # GradientBoosting rejects NaN
    X, y = _data(seed, task, nan=nan)
    est = _estimator(kind, task, seed).fit(X, y)
    model = from_sklearn(est)
    expected_type = (cbudget.Forest if task != "regression" and "Boosting" not in kind
                     else cbudget.Booster)
    assert type(model) is expected_type and model.algorithm == "imported"
    stages = est.n_iter_ if "Hist" in kind else len(getattr(est, "estimators_", [est]))
    assert model.num_iterations() == stages
    probes, naive_differs = _probes(est, X, nan=_sklearn_accepts_nan(est, X))
    _assert_same(est, model, probes)
    if "Hist" not in kind:
        # the probes hold inputs that the thresholds as stored would route elsewhere
        assert naive_differs > 0


def test_float32_conversion_is_necessary():
    """A split between the float32 a (odd significand) and the next float32 b has the
    float64 midpoint t as threshold; x = t rounds to b in float32 (ties to even), so
    scikit-learn sends it right while a float64 ``x <= t`` would send it left."""
    a = np.nextafter(np.float32(4.0), np.float32(5.0))
    b = np.nextafter(a, np.float32(5.0))
    X = np.array([[a], [b]], dtype=np.float64)
    est = tree.DecisionTreeRegressor().fit(X, [0.0, 1.0])
    t = est.tree_.threshold[0]
    assert t == (float(a) + float(b)) / 2 and t <= t          # the naive compare: left
    assert est.predict([[t]])[0] == 1.0                      # scikit-learn: right
    model = from_sklearn(est)
    assert model.predict(np.array([[t]]))[0] == 1.0
    assert model.trees[0]["threshold"][0] < t
    between = np.array([[np.nextafter(t, -np.inf)], [t], [np.nextafter(t, np.inf)]])
    np.testing.assert_array_equal(model.predict(between), est.predict(between))


def test_best_first_trees_keep_each_leafs_distribution():
    """max_leaf_nodes trees number children out of depth-first order, which the import
    renumbers: each leaf must still carry its own class distribution."""
    X, y = _data(3, "multiclass", n=300)
    est = tree.DecisionTreeClassifier(max_leaf_nodes=12, random_state=0).fit(X, y)
    t = est.tree_
    assert np.any(t.children_left[t.children_left != -1]
                  != np.flatnonzero(t.children_left != -1) + 1)     # not preorder
    model = from_sklearn(est)
    np.testing.assert_array_equal(model.predict_proba(X), est.predict_proba(X))
    assert model.trees[0]["n_samples"][0] == 300
    leaves = model.trees[0]["left"] == -1
    assert model.trees[0]["n_samples"][leaves].sum() == 300


def test_gain_is_sklearns_impurity_decrease_and_class_prior_the_frequencies():
    X, y = _data(4, "multiclass", n=200)
    est = tree.DecisionTreeClassifier(max_depth=4, random_state=0).fit(X, y)
    model = from_sklearn(est)
    gain = model.feature_importance("gain")
    np.testing.assert_allclose(gain / gain.sum(), est.feature_importances_, rtol=1e-10)
    frequencies = np.unique(y, return_counts=True)[1] / len(y)
    np.testing.assert_allclose(model.class_prior, frequencies, rtol=1e-12)
    assert model.vote == "average"


def test_gradient_boosting_base_score_is_the_init_prediction():
    X, y = _data(5, "regression")
    mean = from_sklearn(ensemble.GradientBoostingRegressor(n_estimators=5).fit(X, y))
    np.testing.assert_allclose(mean.base_score, [y.mean()], rtol=1e-12)
    zero = ensemble.GradientBoostingRegressor(n_estimators=5, init="zero").fit(X, y)
    np.testing.assert_allclose(from_sklearn(zero).base_score, [0.0], atol=1e-12)
    _assert_same(zero, from_sklearn(zero), X)
    Xc, yc = _data(5, "multiclass")
    prior = ensemble.GradientBoostingClassifier(
        n_estimators=5, init=DummyClassifier(strategy="prior")).fit(Xc, yc)
    model = from_sklearn(prior)
    assert model.objective == "multi:softprob" and model.num_class == 3
    # the raw scores of the class frequencies (up to a constant, which softmax ignores)
    softmax = np.exp(model.base_score) / np.exp(model.base_score).sum()
    np.testing.assert_allclose(softmax, np.unique(yc, return_counts=True)[1] / len(yc),
                               rtol=1e-12)
    _assert_same(prior, model, Xc)


def test_names_and_source_are_recorded():
    pd = pytest.importorskip("pandas")
    X, y = _data(6, "binary", nan=True)
    frame = pd.DataFrame(X, columns=["age", "bp", "chol", "glucose"])
    est = ensemble.HistGradientBoostingClassifier(max_iter=3).fit(frame, y)
    model = from_sklearn(est)
    assert model.feature_names == ["age", "bp", "chol", "glucose"]
    assert model.objective == "binary:logistic"
    assert model.imported_from == {"library": "scikit-learn",
                                   "version": sklearn.__version__,
                                   "estimator": "HistGradientBoostingClassifier",
                                   "loss": "log_loss"}
    renamed = from_sklearn(est, feature_names=["a", "b", "c", "d"])
    assert renamed.feature_names == ["a", "b", "c", "d"]
    plain = from_sklearn(ensemble.RandomForestRegressor(n_estimators=2).fit(X, y == "yes"))
    assert plain.feature_names == ["f0", "f1", "f2", "f3"]
    with pytest.raises(ValueError, match="feature_names has 3 names"):
        from_sklearn(est, feature_names=["a", "b", "c"])


def _sklearn_paths(est, X):
    """(acquired, split nodes visited) per input, from the leaves scikit-learn's
    ``apply`` reaches and their ancestors (``decision_path`` of scikit-learn 1.6 ignores
    missing values)."""
    members = getattr(est, "estimators_", [est])
    leaves = est.apply(X).reshape(X.shape[0], len(members))
    acquired = np.zeros(X.shape, dtype=bool)
    splits = np.zeros(X.shape[0], dtype=int)
    for member, reached in zip(members, leaves.T):
        t = member.tree_
        parent = np.full(t.node_count, -1)
        internal = np.flatnonzero(t.children_left != -1)
        parent[t.children_left[internal]] = parent[t.children_right[internal]] = internal
        for i, node in enumerate(reached):
            node = parent[node]
            while node != -1:
                acquired[i, t.feature[node]] = True
                splits[i] += 1
                node = parent[node]
    return acquired, splits


@pytest.mark.parametrize("kind", ["DecisionTreeRegressor", "RandomForestClassifier"])
def test_costs_are_those_of_sklearns_paths(kind):
    X, y = _data(7, "regression" if "Regressor" in kind else "multiclass", nan=True)
    est = _estimator(kind.replace("Regressor", "").replace("Classifier", ""),
                     "regression" if "Regressor" in kind else "multiclass", 1).fit(X, y)
    costs = {"f0": 1.0, "f1": 2.0, "f2": 4.0, "f3": 8.0}
    model = from_sklearn(est, feature_costs=costs, split_cost=0.5, tree_cost=0.25)
    acquired, splits = _sklearn_paths(est, X)
    expected = acquired @ np.array([1.0, 2.0, 4.0, 8.0]) + 0.5 * splits \
        + 0.25 * model.num_iterations()
    np.testing.assert_allclose(model.predict_cost(X), expected, rtol=1e-12)
    np.testing.assert_array_equal(model.acquisitions(X), acquired)
    report = model.cost_report(X)
    assert report.mean_cost == pytest.approx(expected.mean(), rel=1e-12)
    np.testing.assert_allclose(report.acquisition_rate, acquired.mean(axis=0))


@pytest.mark.parametrize("kind,task", [("HistGradientBoosting", "multiclass"),
                                       ("RandomForest", "binary"),
                                       ("GradientBoosting", "regression")])
def test_saved_and_on_demand_predictions_are_the_same(kind, task, tmp_path):
    nan = kind != "GradientBoosting"
    X, y = _data(8, task, nan=nan)
    est = _estimator(kind, task, 2).fit(X, y)
    model = from_sklearn(est, feature_costs=[1.0, 2.0, 3.0, 4.0],
                         cost_groups=[["f0", "f1"], ["f2", "f3"]], group_costs=[5.0, 0.5])
    path = tmp_path / "model.json"
    model.save_model(path)
    loaded = cbudget.load_model(path)
    assert type(loaded) is type(model) and loaded.imported_from == model.imported_from
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    np.testing.assert_array_equal(loaded.predict_cost(X), model.predict_cost(X))
    _assert_same(est, loaded, X)
    source = cbudget.FeatureSource(lambda features, rows: X[np.ix_(rows, features)],
                                   X.shape[0])
    np.testing.assert_array_equal(model.predict(source), model.predict(X))
    np.testing.assert_allclose(source.cost(), model.predict_cost(X), rtol=1e-12)


def _fitted(est, task="regression", transform=None):
    """``est`` fitted to a small problem (its labels transformed by ``transform``)."""
    X, y = _data(9, task)
    return est.fit(X, y if transform is None else transform(y))


REFUSED = [
    (lambda: _fitted(ensemble.HistGradientBoostingRegressor(loss="poisson", max_iter=3),
                     transform=lambda y: np.abs(y) + 1), "loss='poisson'"),
    (lambda: _fitted(ensemble.GradientBoostingClassifier(loss="exponential",
                                                         n_estimators=3), "binary"),
     "loss='exponential'"),
    (lambda: _fitted(ensemble.GradientBoostingRegressor(init=LinearRegression(),
                                                        n_estimators=3)),
     "init=LinearRegression"),
    (lambda: _fitted(ensemble.GradientBoostingClassifier(
        init=DummyClassifier(strategy="stratified"), n_estimators=3), "binary"),
     "init=DummyClassifier"),
    (lambda: _fitted(tree.DecisionTreeRegressor(),
                     transform=lambda y: np.column_stack([y, -y])), "2 outputs"),
    (lambda: ensemble.RandomForestClassifier(), "RandomForestClassifier is not fitted"),
    (lambda: _fitted(tree.DecisionTreeClassifier(), transform=np.zeros_like),
     "fitted to one class"),
]


@pytest.mark.parametrize("make,message", REFUSED)
def test_refused_models_say_why(make, message):
    with pytest.raises(ValueError, match=message):
        from_sklearn(make())


def test_other_estimators_are_type_errors():
    X, y = _data(10, "regression")
    pipeline = make_pipeline(StandardScaler(), tree.DecisionTreeRegressor()).fit(X, y)
    with pytest.raises(TypeError, match=r"got Pipeline\. For a Pipeline, convert its final"):
        from_sklearn(pipeline)
    with pytest.raises(TypeError, match="DecisionTreeRegressor.*got LinearRegression"):
        from_sklearn(LinearRegression().fit(X, y))
    model = from_sklearn(pipeline[-1])          # the advice works
    np.testing.assert_allclose(model.predict(pipeline[:-1].transform(X)), pipeline.predict(X))


def test_cbudget_imports_without_sklearn(tmp_path):
    code = ("import sys; sys.modules['sklearn'] = None; "
            "import cbudget, cbudget.interop.from_sklearn as m; "
            "assert not any(k.startswith('sklearn.') for k in sys.modules)\n"
            "try:\n    m.from_sklearn(object())\nexcept TypeError as e:\n    print(e)")
    # this cbudget (installed, or an in-place build), not a source tree in the cwd
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(cbudget.__file__)))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=tmp_path, env=env, check=True)
    assert "from_sklearn converts fitted DecisionTreeRegressor" in out.stdout
