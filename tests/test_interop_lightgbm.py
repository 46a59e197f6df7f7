"""cbudget.interop.from_lightgbm: imported models predict what LightGBM predicts, on
the values where the conventions differ most (NaN, zeros, the kZeroThreshold band,
every threshold and its float64 neighbours); costs and on-demand prediction work on
them; unsupported models and hostile files are refused with a ValueError."""
import re
import warnings

import numpy as np
import pytest

import cbudget
from cbudget.interop.from_lightgbm import from_lightgbm

lgb = pytest.importorskip("lightgbm")

# LightGBM's kZeroThreshold (1e-35f widened to double)
KZ = float(np.float32(1e-35))
SPECIAL = [0.0, -0.0, np.nan, KZ, -KZ, 1e-35, -1e-35, 1e-36, -1e-36, 5e-324, -5e-324,
           -np.inf, 1.0, -1.0]
EXACT = {"rtol": 1e-12, "atol": 1e-12}


def _data(seed, n=400):
    """Features with NaNs, many zeros (column 1) and a few integer values (column 2)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    X[:, 1] = np.where(rng.random(n) < 0.4, 0.0, X[:, 1])
    X[:, 2] = rng.integers(-2, 3, size=n)
    X[rng.random(X.shape) < 0.1] = np.nan
    signal = (np.nan_to_num(X[:, 0]) + (X[:, 1] == 0) - 0.5 * np.nan_to_num(X[:, 2])
              + np.isnan(X[:, 3]) + 0.3 * rng.normal(size=n))
    return X, signal


def _labels(kind, signal):
    if kind == "binary":
        return (signal > np.median(signal)).astype(int)
    if kind == "multiclass":
        return np.digitize(signal, np.quantile(signal, [0.25, 0.5, 0.75]))
    if kind == "rank":
        return np.digitize(signal, np.quantile(signal, [0.4, 0.7, 0.9]))
    if kind == "positive":        # a mean exp(signal / 2): poisson, gamma, tweedie
        return np.exp(0.5 * signal) * (1.0 + 0.5 * np.cos(7.0 * signal))
    return signal


def _train(params, X, y, rounds=6, **dataset):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return lgb.train({"verbose": -1, "min_data_in_leaf": 5, **params},
                         lgb.Dataset(X, y, **dataset), num_boost_round=rounds)


def _walk(node, path, found):
    """(leaf index, features on its path) of every leaf below a dump_model node."""
    if "leaf_index" in node:
        found.append((node["leaf_index"], path))
        return
    for child in ("left_child", "right_child"):
        _walk(node[child], path | {node["split_feature"]}, found)


def _thresholds(booster):
    out = []

    def walk(node):
        if "threshold" in node:
            out.append(float(node["threshold"]))
            walk(node["left_child"])
            walk(node["right_child"])
    for tree in booster.dump_model()["tree_info"]:
        walk(tree["tree_structure"])
    return out


def _probe(booster, X, seed, n_rows=800):
    """X, then rows of every threshold, its float64 neighbours and the special values
    (not +inf: see test_nan_split_of_infinite_threshold)."""
    values = np.array(_thresholds(booster) + SPECIAL)
    values = np.concatenate([values, np.nextafter(values, np.inf),
                             np.nextafter(values, -np.inf)])
    values = values[~np.isposinf(values)]
    grid = np.random.default_rng(seed).choice(values, size=(n_rows, X.shape[1]))
    return np.vstack([X, grid])


def _assert_same(model, booster, T, *, average=False):
    raw = booster.predict(T, raw_score=True)
    if average:     # LightGBM's raw score of a forest is the sum of its trees
        raw = raw / booster.current_iteration()
    np.testing.assert_allclose(model.predict(T, output_margin=True), raw, **EXACT)
    np.testing.assert_allclose(model.predict(T), booster.predict(T), **EXACT)


CASES = {
    "regression-nan": ("regression", {"objective": "regression", "num_leaves": 15}),
    "l1-depth3": ("regression", {"objective": "regression_l1", "max_depth": 3}),
    "huber-no-missing": ("regression", {"objective": "huber", "use_missing": False}),
    "regression-zero": ("regression", {"objective": "regression", "zero_as_missing": True,
                                       "num_leaves": 20}),
    "binary": ("binary", {"objective": "binary", "num_leaves": 7}),
    "binary-zero-depth4": ("binary", {"objective": "binary", "zero_as_missing": True,
                                      "max_depth": 4}),
    "xentropy": ("binary", {"objective": "cross_entropy", "num_leaves": 5}),
    "multiclass4": ("multiclass", {"objective": "multiclass", "num_class": 4,
                                   "num_leaves": 6}),
    "multiclass-zero": ("multiclass", {"objective": "multiclass", "num_class": 4,
                                       "zero_as_missing": True}),
    "rf": ("regression", {"objective": "regression", "boosting": "rf", "bagging_freq": 1,
                          "bagging_fraction": 0.6, "num_leaves": 10}),
    "rf-binary-no-missing": ("binary", {"objective": "binary", "boosting": "rf",
                                        "bagging_freq": 1, "bagging_fraction": 0.7,
                                        "use_missing": False}),
    "quantile": ("regression", {"objective": "quantile", "alpha": 0.8}),
    "poisson": ("positive", {"objective": "poisson", "num_leaves": 9}),
    "gamma": ("positive", {"objective": "gamma", "max_depth": 3}),
    "tweedie": ("positive", {"objective": "tweedie", "tweedie_variance_power": 1.3}),
}
# the cbudget objective each imports as (others: reg:squarederror, binary:logistic, ...)
IMPORTED_AS = {"l1-depth3": "reg:absoluteerror", "quantile": "reg:quantileerror",
               "poisson": "count:poisson", "gamma": "reg:gamma", "tweedie": "reg:tweedie"}


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("case", sorted(CASES))
def test_predictions_equal_lightgbm(case, seed, tmp_path):
    kind, params = CASES[case]
    X, signal = _data(seed)
    booster = _train({**params, "seed": seed}, X, _labels(kind, signal))
    T = _probe(booster, X, seed)
    path = tmp_path / "model.txt"
    booster.save_model(path)
    average = params.get("boosting") == "rf"
    for source in (booster, path, str(path), booster.model_to_string()):
        model = from_lightgbm(source)
        assert model.algorithm == "imported"
        if case in IMPORTED_AS:
            assert model.objective == IMPORTED_AS[case]
        _assert_same(model, booster, T, average=average)


def test_multiclass_trees_interleave_by_class():
    X, signal = _data(3)
    booster = _train({"objective": "multiclass", "num_class": 3}, X,
                      np.digitize(signal, [0, 1]), rounds=4)
    model = from_lightgbm(booster)
    assert (model.objective, model.num_class, model.num_boosted_rounds()) == \
        ("multi:softprob", 3, 4)
    T = _probe(booster, X, 3)
    _assert_same(model, booster, T)
    # round 1's trees alone: class k's margin comes from LightGBM's tree 3 + k
    leaves = booster.predict(T, pred_leaf=True)[:, 3:6]
    values = np.column_stack([[booster.get_leaf_output(3 + k, leaf) for leaf in leaves[:, k]]
                              for k in range(3)])
    np.testing.assert_allclose(model[1:2].predict(T, output_margin=True), values, **EXACT)


def test_lambdarank():
    X, signal = _data(4)
    booster = _train({"objective": "lambdarank", "num_leaves": 7}, X, _labels("rank", signal),
                     group=[20] * 20)
    model = from_lightgbm(booster)
    assert model.objective == "rank:ndcg"
    _assert_same(model, booster, _probe(booster, X, 4))


def test_custom_objective_predicts_raw_scores():
    X, signal = _data(5)

    def squared(preds, data):
        return preds - data.get_label(), np.ones_like(preds)
    booster = _train({"objective": squared, "num_leaves": 6}, X, signal)
    assert "objective=" not in booster.model_to_string().split("Tree=0")[0]
    model = from_lightgbm(booster)
    assert model.objective == "reg:squarederror"
    assert model.imported_from["objective"] == "none"
    _assert_same(model, booster, _probe(booster, X, 5))


def test_best_iteration():
    """A booster that kept its trees after early stopping: LightGBM predicts with the
    best iteration by default, and so does the import."""
    X, signal = _data(6)
    y = _labels("binary", signal)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        booster = lgb.train({"objective": "binary", "num_leaves": 6, "learning_rate": 0.3,
                             "verbose": -1}, lgb.Dataset(X[:300], y[:300]), 60,
                            valid_sets=[lgb.Dataset(X[300:], y[300:])],
                            callbacks=[lgb.early_stopping(3, verbose=False)],
                            keep_training_booster=True)
    best = booster.best_iteration
    assert 0 < best < booster.current_iteration()
    model = from_lightgbm(booster)
    assert model.num_boosted_rounds() == best
    _assert_same(model, booster, _probe(booster, X, 6))


def test_sklearn_wrapper(tmp_path):
    X, signal = _data(12)
    clf = lgb.LGBMClassifier(n_estimators=8, num_leaves=6, verbose=-1)
    clf.fit(X, _labels("multiclass", signal))
    model = from_lightgbm(clf)
    T = _probe(clf.booster_, X, 12)
    np.testing.assert_allclose(model.predict(T), clf.predict_proba(T), **EXACT)
    np.testing.assert_allclose(model.predict(T, output_margin=True),
                               clf.predict(T, raw_score=True), **EXACT)
    source = model.imported_from
    assert (source["library"], source["version"], source["estimator"], source["objective"]) \
        == ("lightgbm", lgb.__version__, "LGBMClassifier", "multiclass num_class:4")
    path = tmp_path / "model.txt"
    clf.booster_.save_model(path)
    assert from_lightgbm(path).imported_from["version"] == "v4"


def _one_split_model(threshold, decision_type, *, feature_names="a"):
    return f"""tree
version=v4
num_class=1
num_tree_per_iteration=1
label_index=0
max_feature_idx=0
objective=regression
feature_names={feature_names}
feature_infos=none
tree_sizes=1

Tree=0
num_leaves=2
num_cat=0
split_feature=0
split_gain=3.5
threshold={threshold!r}
decision_type={decision_type}
left_child=-1
right_child=-2
leaf_value=1 2
leaf_weight=4 6
leaf_count=40 60
internal_value=0
internal_weight=10
internal_count=100
is_linear=0
shrinkage=1


end of trees
"""


BELOW_BAND = float(np.nextafter(-KZ, -np.inf))
THRESHOLDS = [-0.5, BELOW_BAND, -KZ, -1e-36, 0.0, 1e-36, KZ, float(np.nextafter(KZ, 1)),
              0.5]


@pytest.mark.parametrize("threshold", THRESHOLDS)
@pytest.mark.parametrize("missing", ["none", "zero", "nan"])
@pytest.mark.parametrize("default_left", [False, True])
def test_every_missing_type_at_the_zero_band(threshold, missing, default_left):
    """One split of each missing type and default direction, thresholds in and around
    the band, against LightGBM on the band's edges and their neighbours."""
    decision_type = 2 * default_left + 4 * ["none", "zero", "nan"].index(missing)
    text = _one_split_model(threshold, decision_type)
    booster = lgb.Booster(model_str=text)
    values = np.array(SPECIAL + THRESHOLDS + [np.inf])
    values = np.concatenate([values, np.nextafter(values, np.inf),
                             np.nextafter(values, -np.inf)])[:, None]
    model = from_lightgbm(text)
    np.testing.assert_array_equal(model.predict(values), booster.predict(values))
    # four intervals (left, right, left, right) only for a Zero split whose band goes
    # the way the far side of the threshold does: three splits, each child twice
    four = missing == "zero" and ((threshold < BELOW_BAND and default_left)
                                  or (threshold > KZ and not default_left))
    assert model.trees[0].shape[0] == (7 if four else 3)


def test_zero_band_rewrite_copies_subtrees():
    """A Zero split at -0.5 sending the band left, above a subtree on another feature:
    three splits, the subtree copied, predictions equal LightGBM's on a grid."""
    text = _one_split_model(-0.5, 6, feature_names="a b")
    text = (text.replace("max_feature_idx=0", "max_feature_idx=1")
            .replace("feature_infos=none", "feature_infos=none none")
            .replace("num_leaves=2", "num_leaves=3")
            .replace("split_feature=0\n", "split_feature=0 1\n")
            .replace("split_gain=3.5\n", "split_gain=3.5 1.5\n")
            .replace("threshold=-0.5\n", "threshold=-0.5 0.25\n")
            .replace("decision_type=6\n", "decision_type=6 8\n")
            .replace("left_child=-1\n", "left_child=-1 -2\n")
            .replace("right_child=-2\n", "right_child=1 -3\n")
            .replace("leaf_value=1 2\n", "leaf_value=1 2 3\n")
            .replace("leaf_weight=4 6\n", "leaf_weight=4 3 3\n")
            .replace("leaf_count=40 60\n", "leaf_count=40 30 30\n")
            .replace("internal_value=0\n", "internal_value=0 0\n")
            .replace("internal_weight=10\n", "internal_weight=10 6\n")
            .replace("internal_count=100\n", "internal_count=100 60\n"))
    booster = lgb.Booster(model_str=text)
    values = np.array(SPECIAL + [-0.5, 0.25, np.nextafter(-0.5, 0), np.nextafter(0.25, 1)])
    grid = np.array(np.meshgrid(values, values)).reshape(2, -1).T
    model = from_lightgbm(text)
    np.testing.assert_array_equal(model.predict(grid), booster.predict(grid))
    tree = model.trees[0]
    splits = tree[tree["left"] >= 0]
    assert sorted(splits["feature"].tolist()) == [0, 0, 0, 1, 1]   # the subtree twice
    # the added splits and the copy carry no gain: gain importance is LightGBM's
    np.testing.assert_allclose(model.feature_importance("gain"),
                               booster.feature_importance("gain"))
    assert tree["n_samples"][0] == 100 and tree["sum_hessian"][0] == 10


def test_nan_split_of_infinite_threshold():
    """LightGBM splits NaN from the rest with threshold inf; cbudget's largest finite
    threshold routes every other value alike (only +inf itself goes right)."""
    text = _one_split_model(1.0, 8).replace("threshold=1.0", "threshold=inf")
    booster = lgb.Booster(model_str=text)
    values = np.array(SPECIAL + [np.finfo(np.float64).max])[:, None]
    model = from_lightgbm(text)
    np.testing.assert_array_equal(model.predict(values), booster.predict(values))
    assert model.trees[0]["threshold"][0] == np.finfo(np.float64).max
    # the documented difference: +inf itself goes right in cbudget, left in LightGBM
    assert model.predict(np.array([[np.inf]]))[0] == 2.0
    assert booster.predict(np.array([[np.inf]]))[0] == 1.0


def test_statistics_and_feature_names():
    X, signal = _data(7)
    booster = _train({"objective": "regression", "num_leaves": 5}, X, signal, rounds=2)
    model = from_lightgbm(booster)
    assert model.feature_names == [f"Column_{i}" for i in range(5)]
    root = model.trees[0][0]
    dump = booster.dump_model()["tree_info"][0]["tree_structure"]
    assert root["n_samples"] == dump["internal_count"] == X.shape[0]
    assert root["sum_hessian"] == pytest.approx(dump["internal_weight"])
    assert root["gain"] == pytest.approx(dump["split_gain"])
    np.testing.assert_allclose(model.feature_importance("gain"),
                               booster.feature_importance("gain"), rtol=1e-5)
    renamed = from_lightgbm(booster, feature_names=list("abcde"))
    assert renamed.feature_names == list("abcde")
    with pytest.raises(ValueError, match="feature_names has 2 names"):
        from_lightgbm(booster, feature_names=["a", "b"])


def test_save_load_costs_and_on_demand(tmp_path):
    X, signal = _data(8)
    booster = _train({"objective": "binary", "num_leaves": 6, "zero_as_missing": True}, X,
                     _labels("binary", signal))
    names = [f"Column_{i}" for i in range(5)]
    costs = {"Column_0": 1.0, "Column_1": 2.0, "Column_2": 4.0, "Column_3": 8.0,
             "Column_4": 16.0}
    model = from_lightgbm(booster, feature_costs=costs)
    T = _probe(booster, X, 8, n_rows=200)

    path = tmp_path / "imported.json"
    model.save_model(path)
    loaded = cbudget.load_model(path)
    assert loaded.algorithm == "imported" and loaded.imported_from == model.imported_from
    np.testing.assert_array_equal(loaded.predict(T), model.predict(T))
    np.testing.assert_array_equal(loaded.predict_cost(T), model.predict_cost(T))

    # the features each input pays for: those on its LightGBM paths
    paths = []
    for tree in booster.dump_model()["tree_info"]:
        found = []
        _walk(tree["tree_structure"], frozenset(), found)
        paths.append(dict(found))
    leaves = booster.predict(T, pred_leaf=True)
    expected = np.array([[any(f in paths[t][leaf] for t, leaf in enumerate(row))
                          for f in range(5)] for row in leaves])
    np.testing.assert_array_equal(model.acquisitions(T), expected)
    np.testing.assert_allclose(model.predict_cost(T), expected @ [costs[n] for n in names])
    report = model.cost_report(T)
    assert report.mean_cost == pytest.approx(model.predict_cost(T).mean())
    np.testing.assert_allclose(report.acquisition_rate, expected.mean(axis=0))

    source = cbudget.FeatureSource(lambda features, rows: T[np.ix_(rows, features)],
                                   T.shape[0])
    np.testing.assert_array_equal(model.predict(source), model.predict(T))
    np.testing.assert_allclose(source.cost(), model.predict_cost(T))


# -- refusals ------------------------------------------------------------------------
@pytest.mark.parametrize(("params", "message"), [
    ({"objective": "cross_entropy_lambda"}, "log\\(1 \\+ exp"),
    ({"objective": "binary", "sigmoid": 2.0}, "only sigmoid:1"),
    ({"objective": "regression", "reg_sqrt": True}, "reg_sqrt"),
    ({"objective": "multiclassova", "num_class": 3}, "a separate sigmoid per class"),
    ({"objective": "regression", "linear_tree": True}, "is a linear tree"),
])
def test_unsupported_models_refused(params, message):
    X, signal = _data(10)
    y = signal
    if params["objective"] == "multiclassova":
        y = np.digitize(signal, [0, 1])
    elif params["objective"] in ("binary", "cross_entropy_lambda"):
        y = (signal > 0).astype(int)
    booster = _train({**params, "num_leaves": 4}, np.nan_to_num(X), y, rounds=2)
    with pytest.raises(ValueError, match=message):
        from_lightgbm(booster)


def test_not_a_model():
    with pytest.raises(TypeError, match="from_lightgbm takes"):
        from_lightgbm(42)
    with pytest.raises(TypeError, match="from_lightgbm takes"):
        from_lightgbm(lgb.LGBMRegressor())     # not fitted


# -- hostile files ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def model_text():
    X, signal = _data(11)
    booster = _train({"objective": "regression", "num_leaves": 5}, X, signal, rounds=3)
    return booster.model_to_string()


def _first_tree_line(text, key):
    return re.search(rf"^{key}=.*$", text, re.MULTILINE).group(0)


def test_truncated_files(model_text, tmp_path):
    end = model_text.index("end of trees")
    assert from_lightgbm(model_text[:end + len("end of trees")]).num_boosted_rounds() == 3
    for cut in range(0, end, max(1, end // 97)):
        path = tmp_path / "cut.txt"
        path.write_text(model_text[:cut])
        with pytest.raises(ValueError):
            from_lightgbm(path)


def test_garbage_files(tmp_path):
    path = tmp_path / "garbage.txt"
    path.write_bytes(np.random.default_rng(0).integers(0, 256, 4000, dtype=np.uint8)
                     .tobytes())
    with pytest.raises(ValueError, match="not UTF-8"):
        from_lightgbm(path)
    path.write_text("hello\nworld\n")
    with pytest.raises(ValueError, match="first line is not 'tree'"):
        from_lightgbm(path)
    with pytest.raises(ValueError, match="first line is not 'tree'"):
        from_lightgbm("hello\nworld\n")


def _edit(text, key, new):
    """``text`` with the first tree's ``key`` line replaced by ``key=new``."""
    line = _first_tree_line(text.split("Tree=0", 1)[1], key)
    head, tail = text.split("Tree=0", 1)
    return head + "Tree=0" + tail.replace(line, f"{key}={new}", 1)


@pytest.mark.parametrize(("key", "new", "message"), [
    ("left_child", "1 2 3 99", "child index out of range"),
    ("right_child", "-1 -2 -3 -7", "child index out of range"),
    ("left_child", "0 -1 -2 -3", "reached twice"),
    ("num_leaves", "1000000000000", "num_leaves=1000000000000 is out of range"),
    ("num_leaves", "99999999999999999999999999", "not an integer"),
    ("num_leaves", "500000", "has 4 values, expected 499999"),
    ("leaf_value", "1 2 3", "leaf_value has 3 values, expected 5"),
    ("leaf_value", "1 2 3 x 5", "'x', not a number"),
    ("leaf_value", "1 2 3 nan 5", "value that is not finite"),
    ("split_feature", "0 1 2 5", r"split_feature out of range \[0, 5\)"),
    ("threshold", "nan 1 2 3", "NaN or -inf"),
    ("decision_type", "12 2 2 2", "not a known decision type"),
    ("decision_type", "1 2 2 2", "categorical splits must number them"),
    ("is_linear", "1", "linear tree"),
])
def test_inconsistent_trees(model_text, key, new, message):
    text = _edit(model_text, key, new)
    with pytest.raises(ValueError, match=message):
        from_lightgbm(text)


@pytest.mark.parametrize(("old", "new", "message"), [
    ("version=v4", "version=v9", "format version 'v9'"),
    ("max_feature_idx=4", "max_feature_idx=1000000000000", "feature_names lists 5 names"),
    ("num_class=1", "num_class=x", "num_class is missing or not an integer"),
    ("num_tree_per_iteration=1", "num_tree_per_iteration=2", "inconsistent"),
    ("Tree=1", "Tree=7", "expected Tree=1"),
    ("Tree=1\n", "Tree=1\nnum_leaves=2\n", "'num_leaves' appears twice"),
    ("left_child=", "left_child", "not key=value"),
    ("objective=regression", "objective=mystery", "'mystery' is not one"),
])
def test_inconsistent_headers(model_text, old, new, message):
    assert old in model_text
    with pytest.raises(ValueError, match=message):
        from_lightgbm(model_text.replace(old, new, 1))


def test_huge_class_count_without_trees(model_text):
    head = model_text.split("Tree=0")[0].replace("num_class=1", "num_class=1000000000000")
    head = head.replace("num_tree_per_iteration=1", "num_tree_per_iteration=1000000000000")
    head = head.replace("objective=regression", "objective=multiclass num_class:1000000000000")
    head = re.sub(r"tree_sizes=.*", "tree_sizes=", head)
    with pytest.raises(ValueError, match="num_tree_per_iteration=1000000000000 but the file "
                                         "has 0 trees"):
        from_lightgbm(head + "end of trees\n")


def test_missing_field(model_text):
    line = _first_tree_line(model_text, "right_child")
    with pytest.raises(ValueError, match="tree 0: right_child is missing"):
        from_lightgbm(model_text.replace(line + "\n", "", 1))


def test_mutated_files_import_or_raise_value_error():
    """Random edits of a multiclass zero-as-missing model (lines deleted or repeated,
    values replaced, added or removed): each file imports and predicts, or raises
    ValueError; nothing else escapes."""
    X, signal = _data(13, n=200)
    booster = _train({"objective": "multiclass", "num_class": 3, "num_leaves": 5,
                      "zero_as_missing": True}, X, np.digitize(signal, [0, 1]), rounds=2)
    lines = booster.model_to_string().split("end of trees")[0].splitlines() + ["end of trees"]
    tokens = ["-1", "0", "1", "3", "-7", "99", "1e308", "inf", "-inf", "nan", "x", "",
              "Tree=0", "1.5", "4294967296", "6", "8", "12"]
    rng = np.random.default_rng(0)
    outcomes = {"imported": 0, "refused": 0}
    for _ in range(400):
        edited = list(lines)
        for _ in range(rng.integers(1, 4)):
            k = rng.integers(len(edited))
            key, _, value = edited[k].partition("=")
            values = value.split()
            operation = rng.integers(4)
            if operation == 0:
                del edited[k]
                continue
            if operation == 1:
                edited.insert(k, edited[rng.integers(len(edited))])
                continue
            if operation == 2 and values:
                values[rng.integers(len(values))] = str(rng.choice(tokens))
            elif values and rng.random() < 0.5:
                del values[rng.integers(len(values))]
            else:
                values.append(str(rng.choice(tokens)))
            edited[k] = f"{key}={' '.join(values)}"
        try:
            from_lightgbm("\n".join(edited)).predict(X)
            outcomes["imported"] += 1
        except ValueError:
            outcomes["refused"] += 1
    assert outcomes["imported"] > 0 and outcomes["refused"] > 0
