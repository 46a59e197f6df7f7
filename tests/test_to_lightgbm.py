"""LightGBM text export (``save_model(path, format="lightgbm")``, issue 46): the file
LightGBM loads predicts as cbudget for float64 inputs, leaf by leaf; Treelite and
lleaves read it too."""
import warnings

import numpy as np
import pytest

import cbudget
from cbudget.interop.to_lightgbm import (
    GUARD_THRESHOLD,
    exported_trees,
    lightgbm_model_text,
)

lgb = pytest.importorskip("lightgbm")
pd = pytest.importorskip("pandas")

OBJECTIVES = {"binary": ("binary:logistic", {}),
              "multiclass": ("multi:softprob", {"num_class": 3}),
              "regression": ("reg:squarederror", {})}
ALGORITHMS = ["gbdt", "cegb", "greedy_miser"]
CAT = 4                 # the categorical feature's column
# values of the categorical feature that test LightGBM's rules against cbudget's: NaN,
# negative ones (missing in cbudget, category 0 or right in LightGBM), non-integers
# (truncated), codes beyond every bitset, huge and infinite values
CAT_PROBES = [np.nan, -0.5, -1.0, -1.5, -0.0, 0.0, -1e-36, 1e-36, 0.5, 1.0, 2.7, 3.0,
              5.99, 6.0, 31.0, 32.0, 1000.0, 2.0**31, 2.0**32 + 1, 1e300, np.inf, -np.inf, -1e300]


def _data(seed, n=400):
    """Numeric features with NaN, one of them of one decimal (repeated values), and an
    integer-coded categorical feature whose missing values and category 0 matter."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, CAT + 1))
    X[:, :CAT][rng.random((n, CAT)) < 0.1] = np.nan
    X[:, 1] = np.round(X[:, 1], 1)
    X[:, CAT] = rng.integers(0, 6, n)
    X[rng.random(n) < 0.15, CAT] = np.nan
    code = np.nan_to_num(X[:, CAT], nan=7)
    z = (np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1]) + 1.5 * np.isin(code, [0, 3])
         + 2.0 * (code == 7))
    return rng, X, z


def _labels(z, objective):
    if objective == "binary:logistic":
        return (z > 0.8).astype(int)
    if objective == "multi:softprob":
        return np.digitize(z, [0.3, 1.3])
    return z


def _train(algorithm, objective, extra, seed=0, rounds=6, **options):
    rng, X, z = _data(seed)
    params = {"objective": objective, "algorithm": algorithm, "max_depth": 4, **extra}
    if algorithm != "gbdt":
        params["cost_tradeoff"] = 0.01
    data = cbudget.Dataset(X, _labels(z, objective), categorical_feature=[CAT],
                           feature_costs=[1.0, 2.0, 4.0, 8.0, 0.5])
    return cbudget.train(params, data, rounds, **options), X


@pytest.fixture(scope="module")
def models():
    """(algorithm, objective key) -> (model, training X)."""
    return {(algorithm, key): _train(algorithm, *OBJECTIVES[key])
            for algorithm in ALGORITHMS for key in OBJECTIVES}


def _save(model, path):
    with warnings.catch_warnings():     # cost models do not travel (ExportWarning)
        warnings.simplefilter("ignore", cbudget.ExportWarning)
        model.save_model(path, format="lightgbm")
    return lgb.Booster(model_file=str(path))


def _probes(model, X, rng):
    """Training rows; rows of one decimal; rows putting each split's feature at its
    threshold and one float64 ulp either side; rows with each categorical probe."""
    rows = [X, np.round(X, 1)]
    base = X[rng.integers(0, len(X), 1)]
    for tree in model.trees:
        numeric = np.flatnonzero((tree["left"] != -1) & (tree["categorical"] == 0))
        for n in numeric:
            t = tree["threshold"][n]
            block = np.repeat(base, 3, axis=0)
            with np.errstate(over="ignore"):       # beyond the largest double: inf
                block[:, tree["feature"][n]] = [np.nextafter(t, -np.inf), t,
                                                np.nextafter(t, np.inf)]
            rows.append(block)
    for m in model.categories.features:
        block = X[rng.integers(0, len(X), len(CAT_PROBES))]
        block[:, m] = CAT_PROBES
        rows.append(block)
    return np.vstack(rows)


def as_lightgbm_reads(X):
    """The rows LightGBM's predict reads from a dense array: |x| <= 1e-35 is 0 to it."""
    return np.where(np.abs(X) <= 1e-35, 0.0, X)


def _check_same(model, booster, X):
    """LightGBM's raw scores and predictions equal cbudget's (up to the order of the
    float64 sum) and every row reaches the same leaves (0 rows routed differently), on
    the rows as LightGBM reads them."""
    n = len(X)
    lgb_X, X = X, as_lightgbm_reads(X)
    raw = booster.predict(lgb_X, raw_score=True).reshape(n, -1)
    np.testing.assert_allclose(raw, model.predict(X, output_margin=True).reshape(n, -1),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(booster.predict(lgb_X).reshape(n, -1),
                               model.predict(X).reshape(n, -1), rtol=1e-12, atol=1e-15)
    # the cbudget node of each LightGBM leaf reached, per exported tree
    trees = exported_trees(model)
    lgb_leaves = booster.predict(lgb_X, pred_leaf=True).reshape(n, -1).astype(np.int64)
    ours = model.predict(X, pred_leaf=True)
    differ = np.zeros(n, dtype=bool)
    for i, tree in enumerate(trees):
        if tree.source >= 0:
            differ |= tree.leaf_nodes[lgb_leaves[:, i]] != ours[:, tree.source]
    assert differ.sum() == 0


@pytest.mark.parametrize("key", list(OBJECTIVES))
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_lightgbm_predicts_as_cbudget(models, algorithm, key, tmp_path):
    model, X = models[algorithm, key]
    booster = _save(model, tmp_path / "model.txt")
    assert booster.num_trees() == len(exported_trees(model))
    assert booster.num_model_per_iteration() == model.n_outputs
    _check_same(model, booster, _probes(model, X, np.random.default_rng(1)))
    # LightGBM's JSON dump reads the header (feature_infos) and every tree
    dumped = booster.dump_model()
    assert len(dumped["tree_info"]) == booster.num_trees()
    assert dumped["feature_names"] == model.feature_names


def test_categorical_splits_need_guards(models):
    """The fixture has categorical splits whose missing values go left (LightGBM sends
    them right: a guard split goes first) and whose set holds category 0 (LightGBM reads
    (-1, 0) as category 0)."""
    default_left = zero_listed = unguarded = 0
    for model, _ in models.values():
        for tree in model.trees:
            nodes = np.flatnonzero(tree["categorical"])
            for n, words in zip(nodes, model.tree_bitsets(tree)):
                zero = bool(words[1] & 1)
                default_left += bool(tree["default_left"][n])
                zero_listed += zero and not tree["default_left"][n]
                unguarded += not zero and not tree["default_left"][n]
    assert default_left > 0 and zero_listed + unguarded > 0
    text = lightgbm_model_text(models["gbdt", "binary"][0])
    assert repr(GUARD_THRESHOLD) in text


def test_treelite_reads_the_file(models, tmp_path):
    treelite = pytest.importorskip("treelite")
    gtil = pytest.importorskip("treelite.gtil")
    for key in OBJECTIVES:
        model, X = models["cegb", key]
        _save(model, tmp_path / "model.txt")
        tl = treelite.frontend.load_lightgbm_model(str(tmp_path / "model.txt"))
        probes = _probes(model, X, np.random.default_rng(2))
        raw = gtil.predict(tl, probes, pred_margin=True).reshape(len(probes), -1)
        np.testing.assert_allclose(
            raw, model.predict(probes, output_margin=True).reshape(len(probes), -1),
            rtol=1e-12, atol=1e-12)


@pytest.mark.slow
def test_lleaves_compiles_the_file(tmp_path):
    """lleaves compiles a feature as numeric or categorical, so the test's models have
    no categorical feature (a guard split on one is a numeric split there)."""
    lleaves = pytest.importorskip("lleaves")
    import llvmlite.binding
    if not hasattr(llvmlite.binding, "PassManagerBuilder"):
        pytest.skip("lleaves 1.3 needs llvmlite < 0.45 (LLVM's legacy pass manager)")
    rng, X, z = _data(3)
    X = X[:, :CAT]
    for objective, extra in OBJECTIVES.values():
        model = cbudget.train({"objective": objective, "max_depth": 4, **extra},
                              cbudget.Dataset(X, _labels(z, objective)), 6)
        path = tmp_path / "model.txt"
        _save(model, path)
        compiled = lleaves.Model(model_file=str(path))
        compiled.compile()
        probes = _probes(model, X, rng)
        np.testing.assert_allclose(
            compiled.predict(probes, n_jobs=1).reshape(len(probes), -1),
            model.predict(probes).reshape(len(probes), -1), rtol=1e-12, atol=1e-15)


def test_ranking(tmp_path):
    rng, X, z = _data(4, n=300)
    y = np.clip(np.round(z), 0, 3).astype(int)
    model = cbudget.train({"objective": "rank:ndcg", "max_depth": 3},
                          cbudget.Dataset(X, y, group=[50] * 6, categorical_feature=[CAT]), 5)
    booster = _save(model, tmp_path / "rank.txt")
    assert "objective=lambdarank" in lightgbm_model_text(model)
    _check_same(model, booster, _probes(model, X, rng))


def test_early_stopped_model_writes_its_best_rounds(tmp_path):
    rng, X, z = _data(5, n=600)
    y = _labels(z, "binary:logistic")
    train = cbudget.Dataset(X[:300], y[:300], categorical_feature=[CAT])
    valid = cbudget.Dataset(X[300:], y[300:], reference=train)
    model = cbudget.train({"objective": "binary:logistic", "learning_rate": 0.5,
                           "max_depth": 5}, train, 60, evals=[(valid, "valid")],
                          early_stopping_rounds=3, verbose_eval=False)
    assert model.best_iteration is not None
    assert model.best_iteration + 1 < model.num_boosted_rounds()
    booster = _save(model, tmp_path / "early.txt")
    assert booster.num_trees() == model.best_iteration + 1
    _check_same(model, booster, _probes(model, X, rng))


def test_multiclass_rounds_are_filled_with_one_leaf_trees(models, tmp_path):
    """A round that lacks a class's tree becomes an iteration with a one-leaf tree of 0
    there; LightGBM needs one tree per class per iteration, in class order."""
    model, X = models["gbdt", "multiclass"]
    rebuilt = model[:1]
    second = model[1:2]
    rebuilt.add_round(second.trees[:1], bitsets=[second.tree_bitsets(second.trees[0])])
    for r in range(2, model.num_boosted_rounds()):
        piece = model[r:r + 1]
        rebuilt.add_round(piece.trees, bitsets=[piece.tree_bitsets(t) for t in piece.trees])
    exported = exported_trees(rebuilt)
    assert [t.output for t in exported] == [0, 1, 2] * model.num_boosted_rounds()
    assert [i for i, t in enumerate(exported) if t.source == -1] == [4, 5]
    _check_same(rebuilt, _save(rebuilt, tmp_path / "filled.txt"),
                _probes(rebuilt, X, np.random.default_rng(6)))


def test_model_of_no_rounds_predicts_its_base_scores(models, tmp_path):
    """No round: one iteration of one-leaf trees holding the base scores (LightGBM's
    one-leaf layout, which Treelite reads too)."""
    gtil = pytest.importorskip("treelite.gtil")
    import treelite
    model, X = models["gbdt", "multiclass"]
    empty = model[:0]
    booster = _save(empty, tmp_path / "empty.txt")
    assert booster.num_trees() == 3
    _check_same(empty, booster, X)
    tl = treelite.frontend.load_lightgbm_model(str(tmp_path / "empty.txt"))
    np.testing.assert_allclose(gtil.predict(tl, X, pred_margin=True).reshape(len(X), -1),
                               empty.predict(X, output_margin=True), rtol=1e-12)


def test_cost_model_does_not_travel(models, tmp_path):
    model, _ = models["cegb", "binary"]
    with pytest.warns(cbudget.ExportWarning, match="'lightgbm' format without the cost"):
        model.save_model(tmp_path / "cegb.txt", format="lightgbm")


def test_dataframe_with_levels(tmp_path):
    """A model trained on a DataFrame's category column: the file's
    pandas_categorical maps a DataFrame by level, in any order of its categories."""
    rng, X, z = _data(7)
    levels = ["red", "green", "blue", "teal", "grå", "rød"]
    df = pd.DataFrame(X[:, :CAT], columns=list("abcd"))
    codes = np.nan_to_num(X[:, CAT], nan=-1).astype(int)
    df["colour"] = pd.Categorical.from_codes(codes, categories=levels)
    model = cbudget.train({"objective": "binary:logistic", "max_depth": 4},
                          cbudget.Dataset(df, _labels(z, "binary:logistic")), 6)
    assert model.categories.levels_of(CAT) == levels
    booster = _save(model, tmp_path / "df.txt")
    assert booster.pandas_categorical == [levels]
    shuffled = df.copy()
    shuffled["colour"] = shuffled["colour"].cat.reorder_categories(levels[::-1])
    for frame in (df, shuffled):
        np.testing.assert_allclose(booster.predict(frame, raw_score=True),
                                   model.predict(frame, output_margin=True), rtol=1e-12)
    # a level the model lacks is missing to LightGBM (cbudget: code 6, right), as
    # documented
    unseen, missing = df.copy(), df.copy()
    unseen["colour"] = pd.Categorical(["mauve"] * len(df), categories=[*levels, "mauve"])
    missing["colour"] = pd.Categorical([None] * len(df), categories=levels)
    np.testing.assert_allclose(booster.predict(unseen, raw_score=True),
                               model.predict(missing, output_margin=True), rtol=1e-12)


def test_round_trip_of_a_lightgbm_model(tmp_path):
    """LightGBM -> cbudget.from_lightgbm -> LightGBM text: the same predictions as the
    import (and as the original model away from the import's documented differences),
    NaN-versus-rest splits (1e300-ish thresholds) included."""
    rng = np.random.default_rng(8)
    X = rng.normal(size=(500, 4))
    X[:, 3] = rng.integers(0, 5, 500)
    missing = rng.random(500) < 0.3
    X[missing, 0] = np.nan
    X[~missing, 0] = 1.0                 # feature 0 splits NaN from every number
    y = ((X[:, 1] > 0) ^ missing ^ (X[:, 3] == 2)).astype(int)
    source = lgb.train({"objective": "binary", "num_leaves": 8, "verbose": -1,
                        "min_data_per_group": 5, "cat_smooth": 1},
                       lgb.Dataset(X, y, categorical_feature=[3]), 5)
    imported = cbudget.from_lightgbm(source)
    thresholds = np.concatenate([t["threshold"][(t["left"] != -1) & (t["categorical"] == 0)]
                                 for t in imported.trees])
    assert np.any(np.abs(thresholds) >= 1e300)
    booster = _save(imported, tmp_path / "back.txt")
    probes = _probes(imported, X, rng)
    _check_same(imported, booster, probes)
    np.testing.assert_allclose(booster.predict(X, raw_score=True),
                               source.predict(X, raw_score=True), rtol=1e-12)


def test_feature_names(tmp_path):
    rng, X, z = _data(9, n=200)
    y = _labels(z, "reg:squarederror")
    names = ["température", "débit", "x=1", "ключ", "é"]
    model = cbudget.train({"objective": "reg:squarederror", "max_depth": 3},
                          cbudget.Dataset(X, y, feature_names=names), 2)
    assert _save(model, tmp_path / "utf8.txt").feature_name() == names
    for bad in ["two words", "a:b", "tab\there", "", "[0]"]:
        model.feature_names = [bad, *names[1:]]
        with pytest.raises(ValueError, match="LightGBM refuses .*feature names"):
            model.save_model(tmp_path / "bad.txt", format="lightgbm")


def test_refusals(tmp_path):
    rng, X, z = _data(10, n=100)
    y = _labels(z, "binary:logistic")
    forest = cbudget.train({"objective": "binary:logistic", "algorithm": "budget_rf"},
                           cbudget.Dataset(X, y), 3)
    with pytest.raises(ValueError, match="'lightgbm'"):
        forest.save_model(tmp_path / "forest.txt", format="lightgbm")
    model = cbudget.train({"objective": "binary:logistic", "max_depth": 2},
                          cbudget.Dataset(X, y), 2)
    model.objective = "reg:tweedie"
    with pytest.raises(ValueError, match="objective 'reg:tweedie' cannot be saved as a "
                                         "LightGBM model"):
        lightgbm_model_text(model)
    assert not (tmp_path / "forest.txt").exists()
