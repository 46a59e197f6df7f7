"""What the importers share: the cbudget API on imported models, a CEGB run continuing an
imported LightGBM model, and ``cbudget report`` auditing other libraries' model files."""
import json
import pickle

import numpy as np
import pytest

import cbudget
from cbudget import plotting
from cbudget.__main__ import main as cli
from cbudget.interop.audit import foreign_model_kind, load_foreign_model

lightgbm = pytest.importorskip("lightgbm")
xgboost = pytest.importorskip("xgboost")
sklearn_tree = pytest.importorskip("sklearn.tree")

COSTS = np.array([1.0, 1.0, 5.0, 20.0, 50.0, 100.0])


@pytest.fixture(scope="module")
def costly():
    """A binary problem where the costly features 4 and 5 decide a minority of inputs."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((3000, 6))
    hard = np.abs(X[:, 0]) < 0.3
    logit = np.where(hard, 3 * X[:, 4] - 2 * X[:, 5], 3 * X[:, 1] - 2 * X[:, 2])
    y = (rng.random(3000) < 1 / (1 + np.exp(-logit))).astype(float)
    return X, y


@pytest.fixture(scope="module")
def lightgbm_model(costly):
    X, y = costly
    # small enough that not every input buys every feature the model uses
    params = {"objective": "binary", "num_leaves": 8, "learning_rate": 0.2, "verbose": -1,
              "seed": 0, "deterministic": True, "num_threads": 1}
    return lightgbm.train(params, lightgbm.Dataset(X, y), 10)


def test_continuing_an_imported_lightgbm_model_with_cegb(costly, lightgbm_model):
    """The imported rounds stay as they were, the acquisitions they made are restored, so
    that the cost-aware rounds added reuse what inputs already bought: they add less cost
    than cost-blind rounds, and the restored training cost is the imported model's."""
    X, y = costly
    start = cbudget.from_lightgbm(lightgbm_model, feature_costs=COSTS)
    dtrain = cbudget.Dataset(X, y, feature_costs=COSTS,
                             feature_names=start.feature_names)
    start_cost = start.predict_cost(X).mean()
    added = {}
    for algorithm in ("cegb", "gbdt"):
        params = {"objective": "binary:logistic", "algorithm": algorithm, "num_leaves": 8,
                  "learning_rate": 0.2, "n_jobs": 1, "seed": 0}
        if algorithm == "cegb":
            params["cost_tradeoff"] = 0.05
        model = cbudget.train(params, dtrain, 10, xgb_model=start)
        assert model.num_boosted_rounds() == 20
        assert model.algorithm == algorithm
        np.testing.assert_allclose(
            model.predict(X, output_margin=True, iteration_range=(0, 10)),
            lightgbm_model.predict(X, raw_score=True), rtol=1e-12, atol=1e-12)
        added[algorithm] = model.predict_cost(X).mean() - start_cost
        if algorithm == "cegb":
            # the state before the first new round is the imported model's routing
            curve = model.summary["train_cost_per_iteration"]
            assert curve[9] == pytest.approx(start_cost)
            assert model.imported_from == start.imported_from
            assert model.to_dict()["imported_from"]["library"] == "lightgbm"
    # what the imported model made every input buy is free for the cost-aware rounds
    assert added["gbdt"] > 10
    assert added["cegb"] < 0.1 * added["gbdt"]


def test_imported_costs_must_match_the_training_data_to_continue(costly, lightgbm_model):
    X, y = costly
    start = cbudget.from_lightgbm(lightgbm_model, feature_costs=COSTS)
    dtrain = cbudget.Dataset(X, y, feature_costs=COSTS + 1, feature_names=start.feature_names)
    with pytest.raises(ValueError, match="costs differ"):
        cbudget.train({"objective": "binary:logistic", "algorithm": "cegb"}, dtrain, 2,
                      xgb_model=start)


def write_csv(path, X, names):
    header = ",".join(names)
    np.savetxt(path, X, delimiter=",", header=header, comments="")


@pytest.fixture(scope="module")
def model_files(tmp_path_factory, costly, lightgbm_model):
    """The same kind of model saved by each library (and pickled for scikit-learn)."""
    X, y = costly
    directory = tmp_path_factory.mktemp("foreign")
    files = {"lightgbm": directory / "model.txt", "xgboost_json": directory / "model.json",
             "xgboost_ubj": directory / "model.ubj", "sklearn": directory / "model.pkl"}
    lightgbm_model.save_model(str(files["lightgbm"]))
    booster = xgboost.train({"objective": "binary:logistic", "max_depth": 4, "nthread": 1},
                            xgboost.DMatrix(X, y), 5)
    booster.save_model(str(files["xgboost_json"]))
    booster.save_model(str(files["xgboost_ubj"]))
    tree = sklearn_tree.DecisionTreeClassifier(max_depth=5, random_state=0).fit(X, y)
    with open(files["sklearn"], "wb") as f:
        pickle.dump(tree, f)
    cbudget_model = directory / "cbudget.json"
    cbudget.train({"objective": "binary:logistic"}, cbudget.Dataset(X, y), 3).save_model(
        cbudget_model)
    files["cbudget"] = cbudget_model
    data = directory / "data.csv"
    write_csv(data, X[:500], [f"x{i}" for i in range(6)])
    files["data"] = data
    return files


def test_model_files_are_recognised_by_their_content(model_files):
    kinds = {name: foreign_model_kind(path) for name, path in model_files.items()
             if name != "data"}
    assert kinds == {"lightgbm": "lightgbm", "xgboost_json": "xgboost",
                     "xgboost_ubj": "xgboost", "sklearn": "pickle", "cbudget": "cbudget"}
    with pytest.raises(ValueError, match="not a model file"):
        foreign_model_kind(model_files["data"])


@pytest.mark.parametrize("name", ["lightgbm", "xgboost_json", "xgboost_ubj", "sklearn"])
def test_report_audits_another_librarys_model_file(model_files, costly, capsys, name):
    """The data's columns stand for the model's features (LightGBM's Column_i, XGBoost's
    f<i> and the tree's unnamed ones differ from the file's x<i>); the figures are those of
    the imported model's API."""
    X, _ = costly
    costs = {f"x{i}": float(c) for i, c in enumerate(COSTS)}
    capsys.readouterr()
    # a pickle is read only when the user says it is trusted
    trust = ["--trust-pickle"] if name == "sklearn" else []
    assert cli(["report", str(model_files[name]), str(model_files["data"]), "--json",
                "--costs", json.dumps(costs), *trust]) == 0
    report = json.loads(capsys.readouterr().out)
    model = load_foreign_model(model_files[name], feature_costs=COSTS,
                               feature_names=list(costs), trust_pickle=bool(trust))
    cost = model.predict_cost(X[:500])
    assert report["algorithm"] == "imported"
    assert report["cost_per_input"]["mean"] == pytest.approx(cost.mean())
    assert report["cost_per_input"]["p90"] == pytest.approx(np.percentile(cost, 90))
    eager = COSTS[model.used_features()].sum()
    assert report["on_demand"]["eager_cost"] == pytest.approx(eager)
    assert report["on_demand"]["saved_share"] == pytest.approx(1 - cost.mean() / eager)
    assert 0 < report["on_demand"]["saved_share"] < 1
    shares = model.acquisitions(X[:500]).mean(axis=0)
    for row in report["features"]:
        assert row["acquired_share"] == pytest.approx(shares[list(costs).index(row["name"])])
    # the text form names the saving
    assert cli(["report", str(model_files[name]), str(model_files["data"]), *trust]) == 0
    assert "saved" in capsys.readouterr().out


def test_report_errors_on_foreign_files(model_files, tmp_path, capsys):
    # costs are the model's own for a cbudget model
    assert cli(["report", str(model_files["cbudget"]), str(model_files["data"]),
                "--costs", "{}"]) == 2
    assert "carries its costs" in capsys.readouterr().err
    # a data file with other columns than the model's features
    narrow = tmp_path / "narrow.csv"
    write_csv(narrow, np.zeros((3, 4)), ["a", "b", "c", "d"])
    assert cli(["report", str(model_files["lightgbm"]), str(narrow)]) == 2
    assert "4 feature columns, not the model's 6" in capsys.readouterr().err
    # a corrupt pickle and a truncated LightGBM file
    broken = tmp_path / "broken.pkl"
    broken.write_bytes(b"\x80\x04garbage")
    assert cli(["report", str(broken), str(model_files["data"]), "--trust-pickle"]) == 2
    assert "not a readable pickle" in capsys.readouterr().err
    truncated = tmp_path / "truncated.txt"
    truncated.write_text(model_files["lightgbm"].read_text()[:300])
    assert cli(["report", str(truncated), str(model_files["data"])]) == 2
    assert "error" in capsys.readouterr().err


def test_a_pickled_object_that_is_not_a_model_is_refused(tmp_path):
    path = tmp_path / "list.pkl"
    with open(path, "wb") as f:
        pickle.dump([1, 2, 3], f)
    with pytest.raises(TypeError, match="not a LightGBM, XGBoost or scikit-learn model"):
        load_foreign_model(path, trust_pickle=True)


@pytest.fixture(scope="module")
def imported_models(costly, lightgbm_model):
    """One imported model of each kind, with costs (a cost group included)."""
    X, y = costly
    ensemble = pytest.importorskip("sklearn.ensemble")
    costs = dict(feature_costs=COSTS, cost_groups={"pair": [4, 5]}, group_costs={"pair": 7.0})
    booster = xgboost.train({"objective": "binary:logistic", "max_depth": 3, "nthread": 1},
                            xgboost.DMatrix(X, y), 10)
    forest = ensemble.RandomForestClassifier(n_estimators=5, max_depth=4,
                                             random_state=0).fit(X, y)
    boosting = ensemble.GradientBoostingClassifier(n_estimators=5, max_depth=2,
                                                   random_state=0).fit(X, y)
    return {"lightgbm": cbudget.from_lightgbm(lightgbm_model, **costs),
            "xgboost": cbudget.from_xgboost(booster, **costs),
            "sklearn_forest": cbudget.from_sklearn(forest, **costs),
            "sklearn_boosting": cbudget.from_sklearn(boosting, **costs)}


@pytest.mark.parametrize("kind", ["lightgbm", "xgboost", "sklearn_forest", "sklearn_boosting"])
def test_the_model_api_works_on_imported_models(imported_models, costly, tmp_path, kind):
    """Costs, reports, stages, importance, next_features, files and plots: what a trained
    cbudget model of the same class offers."""
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    X, y = costly
    X = X[:300]
    model = imported_models[kind]
    assert model.algorithm == "imported"
    cost = model.predict_cost(X)
    acquired = model.acquisitions(X)
    # the cost model: features once per input, the pair's group once
    pair = acquired[:, [4, 5]].any(axis=1)
    np.testing.assert_allclose(cost, acquired @ COSTS + 7.0 * pair)
    report = model.cost_report(X)
    assert report.mean_cost == pytest.approx(cost.mean())
    assert set(report.features_used) == set(model.used_feature_names())
    curve = model.cost_curve(X)
    assert curve.shape == (model.num_iterations(),) and curve[-1] == pytest.approx(cost.mean())
    assert np.all(np.diff(curve) >= -1e-12)
    half = model[: model.num_iterations() // 2]
    assert half.predict_cost(X).mean() == pytest.approx(curve[half.num_iterations() - 1])
    data = cbudget.Dataset(X, y[:300], feature_costs=COSTS,
                           cost_groups={"pair": [4, 5]}, group_costs={"pair": 7.0},
                           feature_names=model.feature_names)
    scores = model.staged_scores(data)
    assert scores.shape == (model.num_iterations(),)
    choice = model.best_iteration_within_budget(data, budget=float(curve[-1]))
    assert choice.cost <= curve[-1] + 1e-9
    assert model.feature_importance("split").sum() > 0
    assert model.feature_importance("cost").sum() == 0      # no training data routed
    first = model.next_features({})
    assert first and all(0 <= m < 6 for m in first)
    path = tmp_path / "imported.json"
    model.save_model(path)
    loaded = cbudget.load_model(path)
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    assert loaded.imported_from == model.imported_from
    fig, ax = plt.subplots()
    plotting.plot_cost_curve(model, data, ax=ax)
    plotting.plot_acquisition(model, X, ax=ax)
    plotting.plot_tree(model, 0, X=X, ax=ax)
    plt.close("all")
