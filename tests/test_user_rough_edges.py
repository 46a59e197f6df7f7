"""The rough edges a new user hit (issue 47): a misspelt parameter gets a suggestion,
validation data as an ``(X, y)`` pair, a DataFrame's columns matched by name, the
report's percentages, and the CLI's string labels."""
import numpy as np
import pytest

import cbudget
from cbudget.__main__ import main, percent

pd = pytest.importorskip("pandas")


@pytest.fixture(scope="module")
def binary():
    rng = np.random.default_rng(47)
    X = rng.normal(size=(400, 3))
    y = (X[:, 0] + 0.5 * X[:, 1] + 0.3 * rng.normal(size=len(X)) > 0).astype(float)
    frame = pd.DataFrame(X, columns=["age", "income", "score"])
    model = cbudget.train({"objective": "binary:logistic"}, cbudget.Dataset(frame, y), 15,
                          verbose_eval=False)
    return frame, y, model


def test_a_misspelt_parameter_gets_a_suggestion():
    data = cbudget.Dataset(np.zeros((10, 2)), np.zeros(10))
    with pytest.raises(ValueError, match=r"unknown parameter 'num_leave'; did you mean "
                                         r"'num_leaves'"):
        cbudget.train({"num_leave": 3}, data, 1)
    with pytest.raises(ValueError, match=r"unknown parameter 'zzz' \(valid parameters: "):
        cbudget.train({"zzz": 3}, data, 1)


def test_lightgbm_users_verbosity_is_taken(capsys):
    data = cbudget.Dataset(np.arange(40.0).reshape(20, 2), np.arange(20.0) % 2)
    for params in ({"verbosity": -1}, {"verbose": -1}):
        model = cbudget.train({"algorithm": "cegb", **params}, data, 2)
        assert model.params["verbosity"] == -1
    assert capsys.readouterr().out == ""
    with pytest.raises(ValueError, match="given twice"):
        cbudget.train({"verbose": 0, "verbosity": 0}, data, 1)


def test_percentages_never_read_minus_zero():
    assert percent(-1e-9) == "0.0%" and percent(-0.0) == "0.0%"
    assert percent(0.1234) == "12.3%" and percent(-0.5) == "-50.0%"


def test_validation_data_as_a_pair(binary):
    frame, y, model = binary
    as_dataset = model.exit_rules_for(cbudget.Dataset(frame, y), [0.05])[0]
    for data in ((frame, y), (frame.to_numpy(), y), (frame[["score", "age", "income"]], y),
                 (frame, y, np.ones(len(y)))):
        assert model.exit_rules_for(data, [0.05])[0].to_dict() == as_dataset.to_dict()
    by_metric = model.calibrate_exits((frame, y), max_metric_drop=0.01)
    assert by_metric.to_dict() == model.calibrate_exits(cbudget.Dataset(frame, y),
                                                        max_metric_drop=0.01).to_dict()
    with pytest.raises(TypeError, match="Dataset with labels"):
        model.calibrate_exits(frame, max_metric_drop=0.01)


def test_columns_in_another_order_are_matched_by_name(binary):
    frame, _, model = binary
    shuffled = frame[["score", "age", "income"]]
    np.testing.assert_array_equal(model.predict(shuffled), model.predict(frame))
    np.testing.assert_array_equal(model.predict_cost(shuffled), model.predict_cost(frame))
    with pytest.raises(ValueError, match="feature names differ"):
        model.predict(frame.rename(columns={"age": "Age"}))
    with pytest.raises(ValueError, match="2 features but the model was trained on 3"):
        model.predict(frame[["age", "income"]])


def test_next_features_answers_in_the_keys_it_was_asked_in(binary):
    frame, _, model = binary
    first = model.next_features({})
    assert all(isinstance(m, int) for m in first)
    row = frame.iloc[0]
    by_name = model.next_features({model.feature_names[m]: row.iloc[m] for m in first})
    assert all(isinstance(name, str) for name in by_name)
    assert by_name == [model.feature_names[m] for m in model.next_features(
        {m: row.iloc[m] for m in first})]


@pytest.mark.parametrize("levels", [["no", "yes"], ["cat", "dog", "emu"]])
def test_cli_trains_on_string_labels(levels, tmp_path, capsys):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 3))
    classes = np.digitize(X[:, 0], np.linspace(-0.5, 0.5, len(levels) - 1))
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    frame["y"] = np.asarray(levels, dtype=object)[classes]
    frame.to_csv(tmp_path / "train.csv", index=False)
    frame.iloc[:100].to_csv(tmp_path / "valid.csv", index=False)
    assert main(["train", str(tmp_path / "train.csv"), "--label", "y", "--rounds", "5",
                 "--valid", str(tmp_path / "valid.csv"), "-o", str(tmp_path / "m.json"),
                 "--quiet"]) in (0, None)
    assert f"classes {', '.join(levels)}" in capsys.readouterr().out
    model = cbudget.load_model(tmp_path / "m.json")
    assert model.objective == ("binary:logistic" if len(levels) == 2 else "multi:softprob")
    assert model.summary["class_labels"] == levels
    frame.drop(columns="y").to_csv(tmp_path / "new.csv", index=False)
    main(["predict", str(tmp_path / "m.json"), str(tmp_path / "new.csv"), "-o",
          str(tmp_path / "out.csv")])
    out = pd.read_csv(tmp_path / "out.csv")
    assert set(out["label"]) <= set(levels)
    assert (out["label"] == frame["y"]).mean() > 0.8
    # a validation label the training labels lack is refused, naming it
    frame.loc[0, "y"] = "unseen"
    frame.iloc[:100].to_csv(tmp_path / "valid.csv", index=False)
    assert main(["train", str(tmp_path / "train.csv"), "--label", "y", "--rounds", "2",
                 "--valid", str(tmp_path / "valid.csv"), "-o", str(tmp_path / "m2.json")]) == 2
    assert "'unseen'" in capsys.readouterr().err


def test_progress_lines_on_long_jobs_only():
    import io

    from cbudget.callback import ProgressLines
    ticks = iter([0.0, 0.0, 4.0, 11.0, 12.0, 25.0])
    out = io.StringIO()
    lines = ProgressLines(10, "models", interval=10, stream=out, clock=lambda: next(ticks))
    lines.start()
    for done in range(1, 5):
        lines.step(done, prefix="cost_path: ")
    assert out.getvalue().splitlines() == [
        "cost_path: 2/10 models in 11 s, about 44 s left at most",
        "cost_path: 4/10 models in 25 s, about 38 s left at most"]


def test_estimators_and_cost_path_are_quiet_on_short_runs(capsys):
    sklearn = pytest.importorskip("cbudget.sklearn")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = (X[:, 0] > 0).astype(int)
    estimator = sklearn.CEGBClassifier(n_estimators=5, feature_costs=[1.0, 2.0, 3.0])
    assert [type(c).__name__ for c in estimator._progress()] == ["ProgressMonitor"]
    assert sklearn.CEGBClassifier(verbose=-1)._progress() == []
    estimator.fit(X, y)
    assert capsys.readouterr().out == ""


def test_cli_names_the_output_it_cannot_write_not_a_temporary_file(tmp_path, capsys):
    rng = np.random.default_rng(5)
    frame = pd.DataFrame(rng.normal(size=(60, 2)), columns=["a", "b"])
    frame["y"] = (frame["a"] > 0).astype(int)
    frame.to_csv(tmp_path / "train.csv", index=False)
    target = tmp_path / "no" / "such" / "m.json"
    assert main(["train", str(tmp_path / "train.csv"), "--label", "y", "--rounds", "2",
                 "-o", str(target), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"cannot save {str(target)!r}" in err and ".tmp" not in err


@pytest.mark.parametrize("key", ["num_iterations", "num_boost_round", "n_estimators",
                                 "nrounds"])
def test_the_number_of_rounds_in_params_points_to_num_boost_round(key):
    """LightGBM takes the rounds in params (num_iterations and its aliases), XGBoost's
    estimators as n_estimators: cbudget.train takes them as num_boost_round, and the error
    says so instead of listing every parameter (issue 48's new-user trial)."""
    data = cbudget.Dataset(np.zeros((10, 2)), np.zeros(10))
    with pytest.raises(ValueError, match=rf"'{key}'.*train\(params, dtrain, "
                                         r"num_boost_round\)"):
        cbudget.train({key: 5}, data, 1)
    # budget_rf's own n_estimators is still a parameter
    assert cbudget.algorithms.resolve_params({"algorithm": "budget_rf",
                                              "n_estimators": 5})["n_estimators"] == 5


def test_training_on_raw_data_says_how_to_wrap_it(binary):
    frame, y, _ = binary
    with pytest.raises(TypeError, match=r"got DataFrame: wrap the data and its label as "
                                        r"cbudget\.Dataset\(X, label"):
        cbudget.train({"objective": "binary:logistic"}, frame, 2)
