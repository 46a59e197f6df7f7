"""pred_contrib (exact path-dependent TreeSHAP) and explain(): the kernel against the
brute-force Shapley values of tests/reference_shap.py, additivity on every model type it
applies to, agreement with LightGBM's and XGBoost's own contributions on imported
models, NotApplicableError for the others, and the cost paid per feature."""
import numpy as np
import pytest
from reference_shap import brute_contributions
from small_models import BOOSTERS, CLASSIFIER_TREES, GATED, takes_expensive_model

import cbudget
from cbudget._core._shap import expected_values, tree_shap
from cbudget._core._types import compact_nodes
from cbudget.explain import Explanation, paid_per_feature
from cbudget.plotting import plot_explanation

COSTS = dict(feature_costs=[1.0, 2.0, 3.0, 4.0, 5.0], cost_groups={"pair": [3, 4]},
             group_costs={"pair": 2.5}, split_cost=0.01)


def _data(n, seed, n_classes=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    score = X[:, 0] + 0.6 * X[:, 1] * (X[:, 2] > 0) - 0.4 * X[:, 4] + 0.3 * rng.normal(size=n)
    y = np.digitize(score, np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1]))
    X[rng.random(X.shape) < 0.08] = np.nan      # missing values follow the default direction
    return X, y.astype(np.float64)


def _booster_margin_blocks(model, X):
    """pred_contrib as (n_samples, n_outputs, n_features + 1) and the raw margin."""
    contrib = model.predict(X, pred_contrib=True)
    margin = model.predict(X, output_margin=True, early_exit=False)
    return contrib.reshape(X.shape[0], -1, X.shape[1] + 1), margin.reshape(X.shape[0], -1)


# -- the kernel against the brute-force reference ------------------------------------------
def _kernel(model, X, cover):
    """pred_contrib of a booster's trees with the node ``cover`` given, (n, outputs, F+1)."""
    trees = model.trees
    nodes = np.concatenate(trees)
    offsets = np.concatenate([[0], np.cumsum([t.shape[0] for t in trees])]).astype(np.int64)
    packed = compact_nodes(nodes)
    values = np.ascontiguousarray(nodes["value"][:, None])
    outputs = np.asarray(model.tree_outputs, dtype=np.int32)
    out = np.zeros((X.shape[0], model.n_outputs, X.shape[1] + 1))
    tree_shap(X, packed, offsets, outputs, cover, values, out, 2, model.cat_words)
    means = np.zeros((len(trees), 1))
    expected_values(packed, offsets, cover, values, means)
    np.add.at(out[:, :, -1], (slice(None), outputs), means[:, 0])
    return out


@pytest.mark.parametrize("seed", range(4))
def test_kernel_matches_brute_force_shapley_values_on_random_trees(seed):
    """Deep trees on 3 features (so features repeat along paths), random covers with
    zeros (children of no cover, splits whose children have none), NaNs: the optimised
    recursion against the subset enumeration."""
    rng = np.random.default_rng(seed)
    X, y = _data(200, seed, n_classes=3 if seed % 2 else 2)
    X = X[:, :3]
    params = {"objective": "multi:softprob" if seed % 2 else "binary:logistic",
              "max_depth": 5, "n_jobs": 1, "min_child_weight": 0.0}
    if seed % 2:
        params["num_class"] = 3
    model = cbudget.train(params, cbudget.Dataset(X, y), 3, verbose_eval=False)
    nodes = np.concatenate(model.trees)
    cover = rng.integers(0, 4, nodes.shape[0]).astype(np.float64)
    cover[rng.random(nodes.shape[0]) < 0.3] = 0.0
    doc = model.to_dict()
    start = 0
    for tree in doc["trees"]:
        tree["cover"] = cover[start:start + tree["num_nodes"]].tolist()
        start += tree["num_nodes"]
    Xp = model.prepare_input(X[:12])
    expected = brute_contributions(doc["trees"], Xp, model.n_outputs, "cover")
    got = _kernel(model, Xp, cover)
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)


def test_kernel_matches_brute_force_with_categorical_splits():
    rng = np.random.default_rng(3)
    X, y = _data(300, 3)
    X[:, 2] = rng.integers(0, 6, X.shape[0])
    X[rng.random(X.shape[0]) < 0.1, 2] = np.nan
    y = ((X[:, 2] % 2 == 1) ^ (np.nan_to_num(X[:, 0]) > 0)).astype(np.float64)
    model = cbudget.train({"objective": "binary:logistic", "max_depth": 4, "n_jobs": 1,
                           "min_data_per_group": 5, "cat_smooth": 1.0},
                          cbudget.Dataset(X, y, categorical_feature=[2]), 3,
                          verbose_eval=False)
    assert any(t["categorical"].any() for t in model.trees)
    Xp = model.prepare_input(X[:15])
    Xp[0, 2] = -1.0     # a negative code is missing: the default direction
    doc = model.to_dict()
    expected = brute_contributions(doc["trees"], Xp, 1, "n_samples")
    expected[:, 0, -1] += model.base_score[0]
    np.testing.assert_allclose(model.predict(Xp, pred_contrib=True)[:, None, :], expected,
                               rtol=1e-9, atol=1e-12)


def test_kernel_refuses_malformed_trees_and_shapes():
    X = np.zeros((2, 2))
    nodes = np.zeros(3, dtype=cbudget._core._types.PREDICT_NODE_DTYPE)
    nodes["left"] = [1, -1, -1]
    nodes["right"] = [0, -1, -1]    # a child before its parent: a cycle
    offsets = np.array([0, 3], dtype=np.int64)
    args = (np.zeros(1, np.int32), np.ones(3), np.zeros((3, 1)))
    with pytest.raises(ValueError, match="child outside its tree"):
        tree_shap(X, nodes, offsets, *args, np.zeros((2, 1, 3)), 1)
    nodes["right"] = [2, -1, -1]
    nodes["feature"] = [5, 0, 0]
    with pytest.raises(ValueError, match="feature outside X"):
        tree_shap(X, nodes, offsets, *args, np.zeros((2, 1, 3)), 1)
    nodes["feature"] = [1, 0, 0]
    with pytest.raises(ValueError, match="out must have shape"):
        tree_shap(X, nodes, offsets, *args, np.zeros((2, 1, 2)), 1)
    with pytest.raises(ValueError, match="node_cover must hold"):
        tree_shap(X, nodes, offsets, args[0], -np.ones(3), args[2], np.zeros((2, 1, 3)), 1)
    with pytest.raises(ValueError, match="tree_columns"):
        tree_shap(X, nodes, offsets, np.ones(1, np.int32), *args[1:], np.zeros((2, 1, 3)), 1)


def test_kernel_refuses_trees_too_deep_for_its_recursion():
    depth = 1025
    nodes = np.zeros(2 * depth + 1, dtype=cbudget._core._types.PREDICT_NODE_DTYPE)
    nodes["left"] = nodes["right"] = -1
    split = np.arange(0, 2 * depth, 2)      # a chain: a leaf on the left at each level
    nodes["left"][split] = split + 1
    nodes["right"][split] = split + 2
    offsets = np.array([0, nodes.shape[0]], dtype=np.int64)
    with pytest.raises(ValueError, match="1025 levels deep"):
        tree_shap(np.zeros((1, 1)), nodes, offsets, np.zeros(1, np.int32),
                  np.ones(nodes.shape[0]), np.zeros((nodes.shape[0], 1)),
                  np.zeros((1, 1, 2)), 1)


# -- additivity on every model type ----------------------------------------------------------
@pytest.fixture(scope="module")
def data():
    X, y = _data(300, 0)
    Xv, _ = _data(80, 1)
    return cbudget.Dataset(X, y, **COSTS), Xv


@pytest.mark.parametrize("algorithm", BOOSTERS)
@pytest.mark.parametrize("objective", ["binary:logistic", "multi:softprob", "reg:squarederror"])
def test_booster_contributions_add_up_to_the_margin(algorithm, objective):
    n_classes = 3 if objective == "multi:softprob" else 2
    X, y = _data(300, 0, n_classes)
    params = {"algorithm": algorithm, "objective": objective, "n_jobs": 1, "max_depth": 3}
    if objective == "multi:softprob":
        params["num_class"] = 3
    if algorithm == "cegb":
        params["cost_tradeoff"] = 0.001
    model = cbudget.train(params, cbudget.Dataset(X, y, **COSTS), 6, verbose_eval=False)
    Xv = _data(80, 1)[0]
    contrib, margin = _booster_margin_blocks(model, Xv)
    assert contrib.shape == (80, n_classes if n_classes > 2 else 1, 6)
    np.testing.assert_allclose(contrib.sum(axis=2), margin, rtol=1e-12, atol=1e-12)
    assert np.abs(contrib[:, :, :-1]).max() > 0      # the trees split
    # the bias is each output's expectation: the same for every input
    np.testing.assert_array_equal(contrib[:, :, -1], np.broadcast_to(contrib[0, :, -1],
                                                                      contrib.shape[:2]))
    # an iteration range explains those rounds only
    part = model.predict(Xv, pred_contrib=True, iteration_range=(1, 4))
    np.testing.assert_allclose(
        part.reshape(80, -1, 6).sum(axis=2),
        model.predict(Xv, output_margin=True, iteration_range=(1, 4)).reshape(80, -1),
        rtol=1e-12, atol=1e-12)


def test_forest_contributions_add_up_to_the_averaged_counts_and_votes(data):
    dtrain, Xv = data
    forest = cbudget.train({"algorithm": "budget_rf", "objective": "binary:logistic",
                            "n_jobs": 1, "max_depth": 4}, dtrain, 5, verbose_eval=False)
    X = forest.prepare_input(Xv)
    votes = forest.predict_proba(Xv, pred_contrib=True, votes=True).reshape(80, 2, 6)
    np.testing.assert_allclose(votes.sum(axis=2), forest.predict_proba(Xv, votes=True),
                               atol=1e-12)
    counts = forest.predict_proba(Xv, pred_contrib=True).reshape(80, 2, 6)
    np.testing.assert_allclose(counts.sum(axis=2),
                               forest.leaf_sums(X, "counts") / forest.num_trees(), atol=1e-9)
    # a forest without trees predicts the class frequencies: its bias, nothing else
    none = forest[:0].predict_proba(Xv, pred_contrib=True).reshape(80, 2, 6)
    np.testing.assert_array_equal(none[:, :, :-1], 0.0)
    np.testing.assert_allclose(none[:, :, -1], forest[:0].predict_proba(Xv))


@pytest.mark.parametrize("algorithm", CLASSIFIER_TREES + GATED)
def test_models_that_are_not_sums_of_trees_refuse_with_a_reason(data, algorithm):
    dtrain, Xv = data
    extra = {}
    if takes_expensive_model(algorithm):
        extra["expensive_model"] = cbudget.train({"objective": "binary:logistic",
                                                  "n_jobs": 1}, dtrain, 3,
                                                 verbose_eval=False)
    params = {"algorithm": algorithm, "objective": "binary:logistic", "n_jobs": 1}
    if algorithm in CLASSIFIER_TREES:
        params["max_depth"] = 2
    if algorithm == "adapt_lin":
        params["n_restarts"] = 1
    model = cbudget.train(params, dtrain, 3, verbose_eval=False, **extra)
    for call in (lambda: model.predict(Xv, pred_contrib=True), lambda: model.explain(Xv)):
        with pytest.raises(cbudget.NotApplicableError, match="not sums? of trees|add up"):
            call()


def test_pred_contrib_explains_every_tree_whatever_the_exit_rules(data):
    dtrain, Xv = data
    model = cbudget.train({"objective": "binary:logistic", "n_jobs": 1, "max_depth": 3},
                          dtrain, 12, verbose_eval=False)
    model.calibrate_exits(dtrain, epsilon=0.2)
    assert model.exit_rules is not None
    full = model.predict(Xv, output_margin=True, early_exit=False)
    assert not np.allclose(model.predict(Xv, output_margin=True), full)   # inputs exit
    np.testing.assert_allclose(model.predict(Xv, pred_contrib=True).sum(axis=1), full,
                               atol=1e-12)
    np.testing.assert_allclose(model.explain(Xv).cost, model.predict_cost(Xv, early_exit=False))


def test_pred_contrib_reads_float32_inputs_as_prediction_does(data):
    dtrain, Xv = data
    model = cbudget.train({"objective": "binary:logistic", "n_jobs": 1, "max_depth": 3},
                          dtrain, 4, verbose_eval=False)
    X32 = Xv.astype(np.float32)
    np.testing.assert_allclose(model.predict(X32, pred_contrib=True).sum(axis=1),
                               model.predict(X32, output_margin=True), atol=1e-12)


def test_pred_contrib_refuses_pred_leaf_and_feature_sources(data):
    dtrain, Xv = data
    model = cbudget.train({"objective": "binary:logistic", "n_jobs": 1}, dtrain, 3,
                          verbose_eval=False)
    with pytest.raises(ValueError, match="pred_leaf and pred_contrib"):
        model.predict(Xv, pred_leaf=True, pred_contrib=True)
    source = cbudget.FeatureSource(lambda features, rows: Xv[np.ix_(rows, features)],
                                   n_samples=Xv.shape[0])
    with pytest.raises(TypeError, match="not a FeatureSource"):
        model.predict(source, pred_contrib=True)


# -- imported models: the libraries' own contributions ------------------------------------
def _foreign_data(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    X[rng.random(X.shape) < 0.1] = np.nan
    X[rng.random(X.shape) < 0.15] = 0.0       # zero-as-missing splits
    X[:, 5] = rng.integers(0, 6, n)
    y3 = np.digitize(np.nan_to_num(X[:, 0]) + (X[:, 5] % 2) + 0.3 * rng.normal(size=n),
                     [0.3, 1.2]).astype(np.float64)
    return X, y3


@pytest.mark.parametrize("case", ["binary", "multiclass", "regression", "zero_as_missing",
                                  "categorical"])
def test_imported_lightgbm_contributions_match_lightgbm(case):
    lgb = pytest.importorskip("lightgbm")
    X, y3 = _foreign_data()
    params = {"verbose": -1, "num_leaves": 12, "min_data_in_leaf": 5,
              "objective": "binary", "num_threads": 1}
    y = (y3 > 0).astype(np.float64)
    categorical = "auto"
    if case == "multiclass":
        params.update(objective="multiclass", num_class=3)
        y = y3
    elif case == "regression":
        params["objective"] = "regression"
        y = y3 + np.nan_to_num(X[:, 1])
    elif case == "zero_as_missing":
        params["zero_as_missing"] = True
    elif case == "categorical":
        categorical = [5]
    source = lgb.train(params, lgb.Dataset(X, y, categorical_feature=categorical), 10)
    model = cbudget.from_lightgbm(source)
    if case == "zero_as_missing":
        # the importer copied subtrees with their counts: a rewritten split's children
        # hold twice its count, which a split's own cover would not weigh as LightGBM
        split = np.concatenate([t[t["left"] != -1] for t in model.trees])
        children = np.concatenate([t["n_samples"][t["left"][t["left"] != -1]]
                                   + t["n_samples"][t["right"][t["left"] != -1]]
                                   for t in model.trees])
        assert np.any(children != split["n_samples"])
    if case == "categorical":
        assert any(t["categorical"].any() for t in model.trees)
    np.testing.assert_allclose(model.predict(X, pred_contrib=True),
                               source.predict(X, pred_contrib=True), rtol=0, atol=1e-10)


@pytest.mark.parametrize("case", ["binary", "multiclass", "categorical"])
def test_imported_xgboost_contributions_match_xgboost(case):
    xgb = pytest.importorskip("xgboost")
    pd = pytest.importorskip("pandas")
    X, y3 = _foreign_data()
    params = {"objective": "binary:logistic", "max_depth": 4, "nthread": 1}
    y = (y3 > 0).astype(np.float64)
    data = X
    if case == "multiclass":
        params.update(objective="multi:softprob", num_class=3)
        y = y3
    elif case == "categorical":
        data = pd.DataFrame(X, columns=[f"f{i}" for i in range(6)])
        data["f5"] = pd.Categorical(X[:, 5].astype(int))
        params["max_cat_to_onehot"] = 1
    source = xgb.train(params, xgb.DMatrix(data, y, enable_categorical=True), 10)
    model = cbudget.from_xgboost(source)
    assert model.cover_field == "sum_hessian"
    expected = source.predict(xgb.DMatrix(data, enable_categorical=True), pred_contribs=True)
    # XGBoost sums in float32 and stores its covers in float32
    np.testing.assert_allclose(model.predict(data, pred_contrib=True),
                               expected.reshape(X.shape[0], -1), rtol=0, atol=1e-5)


def test_imported_sklearn_models_add_up():
    ensemble = pytest.importorskip("sklearn.ensemble")
    X, y3 = _foreign_data()
    X = np.nan_to_num(X)
    y = (y3 > 0).astype(np.float64)
    forest = ensemble.RandomForestClassifier(8, max_depth=5, random_state=0).fit(X, y)
    contrib = cbudget.from_sklearn(forest).predict_proba(X, pred_contrib=True)
    # the leaves hold class distributions: the blocks add up to the probabilities
    np.testing.assert_allclose(contrib.reshape(-1, 2, 7).sum(axis=2), forest.predict_proba(X),
                               atol=1e-12)
    boosted = ensemble.GradientBoostingClassifier(n_estimators=8, max_depth=3).fit(X, y)
    contrib = cbudget.from_sklearn(boosted).predict(X, pred_contrib=True)
    np.testing.assert_allclose(contrib.sum(axis=1), boosted.decision_function(X), atol=1e-10)


# -- explain: contributions and the cost paid per feature ----------------------------------
def test_explain_gives_contributions_and_the_cost_paid_per_feature(data):
    dtrain, Xv = data
    model = cbudget.train({"objective": "binary:logistic", "n_jobs": 1, "max_depth": 3},
                          dtrain, 6, verbose_eval=False)
    e = model.explain(Xv)
    assert isinstance(e, Explanation)
    contrib = model.predict(Xv, pred_contrib=True)
    np.testing.assert_array_equal(e.contributions[:, 0], contrib[:, :-1])
    np.testing.assert_array_equal(e.expected_value, contrib[0, -1:])
    np.testing.assert_allclose(e.output[:, 0], model.predict(Xv, output_margin=True))
    np.testing.assert_allclose(e.cost, model.predict_cost(Xv))
    np.testing.assert_array_equal(e.acquired, model.acquisitions(Xv))
    assert np.all(e.feature_cost[~e.acquired] == 0)
    name, value, cost, bought = e.top_features(0, k=1)[0]
    assert abs(value) == np.abs(e.contributions[0, 0]).max()
    m = e.feature_names.index(name)
    assert cost == e.feature_cost[0, m] and bought == e.acquired[0, m]


def test_paid_per_feature_shares_a_group_cost_among_the_features_bought():
    cost_model = cbudget.CostModel.from_user([f"f{i}" for i in range(5)], **{
        k: COSTS[k] for k in ("feature_costs", "cost_groups", "group_costs")})
    acquired = np.array([[1, 0, 0, 1, 1], [0, 1, 0, 0, 1], [0, 0, 1, 0, 0]], dtype=np.uint8)
    paid = paid_per_feature(cost_model, acquired)
    np.testing.assert_allclose(paid, [[1, 0, 0, 4 + 1.25, 5 + 1.25],
                                      [0, 2, 0, 0, 5 + 2.5],
                                      [0, 0, 3, 0, 0]])
    np.testing.assert_allclose(paid.sum(axis=1), cost_model.acquisition_costs(acquired))


def test_plot_explanation_draws_the_contributions_with_their_costs(data, tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    dtrain, Xv = data
    model = cbudget.train({"objective": "binary:logistic", "n_jobs": 1, "max_depth": 3},
                          dtrain, 6, verbose_eval=False)
    e = model.explain(Xv)
    ax = plot_explanation(e, 2, top=3)
    widths = [bar.get_width() for bar in ax.patches]
    assert widths == [value for _, value, _, _ in e.top_features(2, k=3)]
    labels = [t.get_text() for t in ax.texts]
    assert labels == [f"paid {cost:.3g}" if bought else "not bought"
                      for _, _, cost, bought in e.top_features(2, k=3)]
    ax.figure.savefig(tmp_path / "explanation.png")
    with pytest.raises(TypeError, match="Explanation"):
        plot_explanation(model, 0)
    with pytest.raises(IndexError, match="out of range"):
        plot_explanation(e, 500)


def test_estimators_give_contributions_as_lightgbm_estimators_do():
    sklearn = pytest.importorskip("cbudget.sklearn")
    rng = np.random.default_rng(12)
    X = rng.normal(size=(300, 4))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    for estimator in (sklearn.GBDTClassifier(n_estimators=5),
                      sklearn.CEGBRegressor(n_estimators=5, cost_tradeoff=0.0),
                      sklearn.BudgetRFClassifier(n_estimators=3)):
        estimator.fit(X, y)
        contributions = estimator.predict(X, pred_contrib=True)
        model = estimator.model_
        expected = (model.predict_proba(X, pred_contrib=True)
                    if isinstance(model, cbudget.Forest)
                    else model.predict(X, pred_contrib=True))
        np.testing.assert_array_equal(contributions, expected)
    with pytest.raises(cbudget.NotApplicableError):
        sklearn.CSTCClassifier(n_estimators=2).fit(X, y).predict(X, pred_contrib=True)
