"""The ``cbudget`` command: train -> predict -> report on CSV and Parquet files, every model
type ``load_model`` returns, and bad input (exit status 2, a one-line message). Commands
run in-process through ``main`` (one subprocess checks the program name in --help)."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import cbudget
from cbudget.__main__ import main

pd = pytest.importorskip("pandas")

FEATURES = ["age", "bmi", "blood_test", "mri"]
COSTS = {"age": 1.0, "bmi": 1.0, "blood_test": 5.0, "mri": 20.0}


def run(argv):
    """``main(argv)``'s exit status, also when argparse exits."""
    try:
        return main(argv)
    except SystemExit as exc:
        return exc.code


def make_frame(n, seed=0, n_classes=2):
    """Features named FEATURES and a ``label`` column between them (the command must not
    rely on the label's position); mri decides the hard cases, at a high cost."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, len(FEATURES)))
    score = X[:, 0] + 0.8 * X[:, 3] + 0.6 * rng.standard_normal(n)
    if n_classes == 2:
        label = (score > 0).astype(int)
    else:
        label = np.digitize(score, np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1]))
    frame = pd.DataFrame(X, columns=FEATURES)
    frame.insert(2, "label", label)
    return frame


@pytest.fixture
def files(tmp_path):
    """train.csv (300 rows), valid.csv (150 rows), costs.json in tmp_path."""
    frame = make_frame(450)
    frame[:300].to_csv(tmp_path / "train.csv", index=False)
    frame[300:].to_csv(tmp_path / "valid.csv", index=False)
    (tmp_path / "costs.json").write_text(json.dumps(COSTS))
    return tmp_path


def read_csv(path):
    """A CSV as the command reads it: the floats written, exactly (pandas < 2 parses
    them to within an ulp by default; pandas 3 deprecates the option and is exact)."""
    exact = {} if int(pd.__version__.split(".")[0]) >= 3 else {"float_precision": "round_trip"}
    return pd.read_csv(path, **exact)


def valid_matrix(path):
    return read_csv(path)[FEATURES].to_numpy()


def error_line(capsys):
    """The one line a failed command wrote to stderr (no traceback)."""
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err
    return err.splitlines()[-1]


def test_train_predict_report_round_trip(files, capsys):
    model_path, out_path = files / "model.json", files / "pred.csv"
    # a large step overfits quickly: early stopping must stop and cut the saved model
    status = run(["train", str(files / "train.csv"), "--label", "label",
                  "--valid", str(files / "valid.csv"), "--costs", str(files / "costs.json"),
                  "--param", "objective=binary:logistic", "--param", "algorithm=cegb",
                  "--param", "cost_tradeoff=0.01", "--param", "num_leaves=15",
                  "--param", "learning_rate=1.0", "--param", "n_jobs=1",
                  "--rounds", "60", "--early-stopping", "3", "--quiet",
                  "-o", str(model_path)])
    out = capsys.readouterr().out
    assert status == 0
    model = cbudget.load_model(model_path)
    assert isinstance(model, cbudget.Booster) and model.algorithm == "cegb"
    assert model.feature_names == FEATURES
    assert model.cost_model.feature_costs.tolist() == [COSTS[f] for f in FEATURES]
    # stopped early; predictions and costs use the rounds up to the best one
    ran = int(out.split("): ")[1].split(" iteration")[0])
    best_range = (0, model.best_iteration + 1)
    assert model.num_iterations() == ran and model.best_iteration + 1 < ran < 60
    assert f"the best on validation: {model.best_iteration + 1}" in out
    assert "[0]" not in out                       # --quiet: no per-round log
    X_valid = valid_matrix(files / "valid.csv")
    assert f"validation logloss: {model.best_score:.6g}" in out
    assert f"on {files / 'valid.csv'}: {model.predict_cost(X_valid).mean():.6g}" in out

    # predict: columns found by name (reordered here, the label left in)
    frame = read_csv(files / "valid.csv")
    frame[frame.columns[::-1]].to_csv(files / "reversed.csv", index=False)
    assert run(["predict", str(model_path), str(files / "reversed.csv"),
                "-o", str(out_path), "--cost"]) == 0
    written = read_csv(out_path)
    assert list(written.columns) == ["prediction", "cost"]
    np.testing.assert_array_equal(written["prediction"],
                                  model.predict(X_valid, iteration_range=best_range))
    np.testing.assert_array_equal(written["cost"],
                                  model.predict_cost(X_valid, iteration_range=best_range))

    # report --json: the per-input figures and the per-feature shares of the model's API
    capsys.readouterr()
    assert run(["report", str(model_path), str(files / "valid.csv"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    cost = model.predict_cost(X_valid)
    assert report["n_inputs"] == 150
    assert report["cost_per_input"] == pytest.approx(
        {"mean": cost.mean(), "p10": np.percentile(cost, 10), "p25": np.percentile(cost, 25),
         "median": np.median(cost), "p75": np.percentile(cost, 75),
         "p90": np.percentile(cost, 90), "p99": np.percentile(cost, 99), "max": cost.max()})
    # on demand against every used feature for every input (features cost COSTS)
    eager = sum(COSTS[name] for name in model.used_feature_names())
    assert report["on_demand"] == pytest.approx(
        {"eager_cost": eager, "on_demand_cost": cost.mean(),
         "saved_share": 1 - cost.mean() / eager})
    assert report["features_used"] == model.cost_report(X_valid).features_used
    share = dict(zip(FEATURES, model.acquisitions(X_valid).mean(axis=0)))
    rows = report["features"]
    assert [r["name"] for r in rows] == sorted(report["features_used"],
                                                key=lambda f: -COSTS[f] * share[f])
    for r in rows:
        assert r["cost"] == COSTS[r["name"]]
        assert r["acquired_share"] == pytest.approx(share[r["name"]])
        assert r["mean_cost"] == pytest.approx(COSTS[r["name"]] * share[r["name"]])
    assert sum(r["mean_cost"] for r in rows) == pytest.approx(cost.mean())
    assert report["other_cost"] == 0.0

    # the text form names the same features, most expensive contribution first
    assert run(["report", str(model_path), str(files / "valid.csv")]) == 0
    text = capsys.readouterr().out
    assert f"mean {cost.mean():.6g}" in text
    positions = [text.index(f"\n  {r['name']} ") for r in rows]
    assert positions == sorted(positions)


def test_multiclass_probabilities_and_default_costs(tmp_path, capsys):
    """Without --costs every feature costs 1 (--default-cost otherwise): a prediction's
    cost is the number of features it reads; one column per class."""
    make_frame(300, n_classes=3).to_csv(tmp_path / "data.csv", index=False)
    for default_cost in (None, 2.5):
        extra = [] if default_cost is None else ["--default-cost", str(default_cost)]
        assert run(["train", str(tmp_path / "data.csv"), "--label", "label", "--quiet",
                    "--param", "objective=multi:softprob", "--param", "num_class=3",
                    "--param", "num_leaves=4", "--rounds", "3", "-o",
                    str(tmp_path / "m.json"), *extra]) == 0
        model = cbudget.load_model(tmp_path / "m.json")
        assert model.cost_model.feature_costs.tolist() == [default_cost or 1.0] * 4
    assert run(["predict", str(tmp_path / "m.json"), str(tmp_path / "data.csv"), "--cost",
                "-o", str(tmp_path / "p.csv")]) == 0
    written = read_csv(tmp_path / "p.csv")
    assert list(written.columns) == ["proba_0", "proba_1", "proba_2", "cost"]
    X = read_csv(tmp_path / "data.csv")[FEATURES].to_numpy()
    np.testing.assert_array_equal(written[["proba_0", "proba_1", "proba_2"]],
                                  model.predict(X))
    np.testing.assert_array_equal(written["cost"], 2.5 * model.acquisitions(X).sum(axis=1))


def test_default_cost_fills_in_the_features_costs_leave_out(files, capsys):
    (files / "some.json").write_text(json.dumps({"mri": 20.0}))
    base = ["train", str(files / "train.csv"), "--label", "label", "--rounds", "2", "--quiet",
            "--costs", str(files / "some.json"), "-o", str(files / "m.json")]
    assert run(base + ["--default-cost", "3"]) == 0
    costs = cbudget.load_model(files / "m.json").cost_model.feature_costs
    assert costs.tolist() == [3.0, 3.0, 3.0, 20.0]
    # a costs dict that leaves features out, without a default: none silently free
    assert run(base) == 2
    assert error_line(capsys) == (
        "cbudget: error: --costs does not name 3 of the 4 features: age, bmi, blood_test; "
        "give them costs, or --default-cost X for the rest")


def test_params_json_and_param_overrides(files):
    (files / "params.json").write_text(json.dumps({"objective": "binary:logistic",
                                                   "num_leaves": 5, "learning_rate": 0.5}))
    for source in (str(files / "params.json"), (files / "params.json").read_text()):
        assert run(["train", str(files / "train.csv"), "--label", "label", "--quiet",
                    "--params-json", source, "--param", "num_leaves=3", "--rounds", "2",
                    "-o", str(files / "m.json")]) == 0
        model = cbudget.load_model(files / "m.json")
        assert model.params["num_leaves"] == 3 and model.params["learning_rate"] == 0.5
        assert model.objective == "binary:logistic"


@pytest.mark.parametrize("algorithm, params, model_type", [
    ("budget_rf", ["objective=binary:logistic"], cbudget.Forest),
    ("cstc", ["objective=binary:logistic", "max_depth=2"], cbudget.ClassifierTree),
    ("cscc", ["objective=binary:logistic", "max_depth=2"], cbudget.Cascade),
    ("adapt_gbrt", ["p_full=0.3"], cbudget.GatedModel),
])
def test_every_model_type_predicts_and_reports(files, capsys, algorithm, params, model_type):
    train, valid = str(files / "train.csv"), str(files / "valid.csv")
    extra = []
    if algorithm == "adapt_gbrt":       # its expensive model, saved by the command too
        assert run(["train", train, "--label", "label", "--costs", str(files / "costs.json"),
                    "--param", "objective=binary:logistic", "--rounds", "10", "--quiet",
                    "-o", str(files / "f0.json")]) == 0
        extra = ["--expensive-model", str(files / "f0.json")]
    params = [item for p in [f"algorithm={algorithm}", *params] for item in ("--param", p)]
    assert run(["train", train, "--label", "label", "--costs", str(files / "costs.json"),
                "--valid", valid, "--rounds", "4", "--quiet", "-o", str(files / "m.json"),
                *params, *extra]) == 0
    model = cbudget.load_model(files / "m.json")
    assert type(model) is model_type
    assert run(["predict", str(files / "m.json"), valid, "--cost",
                "-o", str(files / "p.csv")]) == 0
    written, X = read_csv(files / "p.csv"), valid_matrix(files / "valid.csv")
    np.testing.assert_array_equal(written["prediction"], model.predict(X))
    np.testing.assert_array_equal(written["cost"], model.predict_cost(X))
    capsys.readouterr()
    assert run(["report", str(files / "m.json"), valid, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["model_type"] == model.model_type
    assert report["cost_per_input"]["mean"] == pytest.approx(model.predict_cost(X).mean())


def test_report_with_cost_groups_and_split_costs(tmp_path, capsys):
    """Groups get their own rows; split costs are the rest of the mean cost."""
    frame = make_frame(300)
    X, y = frame[FEATURES].to_numpy(), frame["label"].to_numpy()
    dtrain = cbudget.Dataset(X, y, feature_names=FEATURES, feature_costs=COSTS,
                             cost_groups={"lab": ["blood_test", "mri"]},
                             group_costs={"lab": 4.0}, split_cost=0.5)
    model = cbudget.train({"objective": "binary:logistic", "num_leaves": 6}, dtrain, 3,
                          verbose_eval=False)
    model.save_model(tmp_path / "m.json")
    frame.to_csv(tmp_path / "data.csv", index=False)
    assert run(["report", str(tmp_path / "m.json"), str(tmp_path / "data.csv"),
                "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    acquired = model.acquisitions(X)
    touched = acquired[:, 2:].any(axis=1).mean()
    assert report["groups"] == [pytest.approx({"name": "lab", "cost": 4.0,
                                               "acquired_share": touched,
                                               "mean_cost": 4.0 * touched})]
    assert report["other_cost"] > 0
    parts = sum(r["mean_cost"] for r in report["features"] + report["groups"])
    assert parts + report["other_cost"] == pytest.approx(model.predict_cost(X).mean())


def test_parquet_in_and_out(files):
    pytest.importorskip("pyarrow")
    read_csv(files / "train.csv").to_parquet(files / "train.parquet")
    assert run(["train", str(files / "train.parquet"), "--label", "label", "--quiet",
                "--param", "objective=binary:logistic", "--rounds", "3",
                "-o", str(files / "m.json")]) == 0
    assert run(["predict", str(files / "m.json"), str(files / "train.parquet"),
                "-o", str(files / "p.parquet")]) == 0
    model = cbudget.load_model(files / "m.json")
    np.testing.assert_array_equal(pd.read_parquet(files / "p.parquet")["prediction"],
                                  model.predict(valid_matrix(files / "train.csv")))


def test_parquet_without_an_engine_says_to_install_pyarrow(files, capsys, monkeypatch):
    # None in sys.modules makes an import fail: pandas finds no Parquet engine
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "fastparquet", None)
    (files / "train.parquet").write_bytes(b"PAR1")
    assert run(["train", str(files / "train.parquet"), "--label", "label",
                "-o", str(files / "m.json")]) == 2
    assert "pip install pyarrow" in error_line(capsys)


def test_gated_model_with_an_external_expensive_model_is_a_clear_error(files, capsys):
    class FirstFeature:
        def predict_proba(self, X):
            p = 1 / (1 + np.exp(-X[:, 0]))
            return np.column_stack([1 - p, p])

    frame = read_csv(files / "train.csv")
    dtrain = cbudget.Dataset(frame[FEATURES], frame["label"], feature_costs=COSTS)
    gated = cbudget.train({"algorithm": "adapt_gbrt", "p_full": 0.3}, dtrain, 3,
                          verbose_eval=False,
                          expensive_model=cbudget.ExternalModel(FirstFeature(), cost=5.0))
    gated.save_model(files / "gated.json")
    assert run(["predict", str(files / "gated.json"), str(files / "valid.csv"),
                "-o", str(files / "p.csv")]) == 2
    message = error_line(capsys)
    assert "not a cbudget model" in message and "from Python" in message
    assert not (files / "p.csv").exists()


def _bad_inputs(files):
    """(argv, what the message must say) of bad invocations."""
    train, valid = str(files / "train.csv"), str(files / "valid.csv")
    model = str(files / "good.json")
    frame = read_csv(files / "valid.csv")
    frame.drop(columns=["mri", "bmi"]).to_csv(files / "no_mri.csv", index=False)
    frame.assign(bmi="high").to_csv(files / "text.csv", index=False)
    frame.assign(label="yes").to_csv(files / "text_label.csv", index=False)
    (files / "broken.json").write_text('{"format": "cbudget"')
    (files / "unknown_cost.json").write_text(json.dumps({**COSTS, "height": 1.0}))
    out = ["-o", str(files / "m.json")]
    return [
        (["train", train, "--label", "outcome", *out], "no label column 'outcome'"),
        (["train", train, "--label", "label", "--param", "num_trees=5", *out],
         "unknown parameter 'num_trees'"),
        (["train", train, "--label", "label", "--param", "num_iterations=5", *out],
         "give it as cbudget.train(params, dtrain, num_boost_round), or the command "
         "line's --rounds N"),
        (["train", train, "--label", "label", "--param", "num_leaves", *out],
         "--param expects key=value"),
        (["train", train, "--label", "label", "--early-stopping", "3", *out],
         "--early-stopping needs a validation file"),
        (["train", train, "--label", "label", "--costs", str(files / "unknown_cost.json"),
          *out], "--costs names height, not among the feature columns"),
        (["train", train, "--label", "label", "--valid", str(files / "no_mri.csv"), *out],
         "lacks 2 feature column(s) of the model: bmi, mri"),
        (["train", str(files / "text.csv"), "--label", "label", "--categorical", "none",
          *out], "'bmi'"),
        (["train", str(files / "text.csv"), "--label", "label", "--categorical", "bmi,nope",
          *out], "--categorical names nope"),
        (["train", str(files / "missing.csv"), "--label", "label", *out], "no such file"),
        (["train", str(files / "text_label.csv"), "--label", "label", *out],
         "the label holds one class ('yes'): a classifier needs two or more"),
        (["train", train, "--label", "label", "--params-json", "[1, 2]", *out],
         "--params-json must hold a JSON object"),
        (["predict", model, str(files / "no_mri.csv"), *out],
         "lacks 2 feature column(s) of the model: bmi, mri"),
        (["predict", str(files / "broken.json"), valid, *out], "not a valid JSON model"),
        (["report", str(files / "missing.json"), valid], "no such model file"),
    ]


def test_bad_input_exits_2_with_a_one_line_message(files, capsys):
    assert run(["train", str(files / "train.csv"), "--label", "label", "--rounds", "2",
                "--quiet", "-o", str(files / "good.json")]) == 0
    for argv, expected in _bad_inputs(files):
        capsys.readouterr()
        assert run(argv) == 2, argv
        message = error_line(capsys)
        assert message.startswith("cbudget: error: ") and expected in message, (argv, message)
    assert not (files / "m.json").exists()


def test_argument_errors_exit_2(files, capsys):
    for argv in (["demo", "--rounds", "0"], ["train", str(files / "train.csv"), "--label",
                                              "label", "--rounds", "-1", "-o", "m.json"],
                 ["train", str(files / "train.csv"), "-o", "m.json"]):
        assert run(argv) == 2
        assert "error:" in error_line(capsys)


def test_help_names_the_cbudget_command(tmp_path):
    # the subprocess finds this cbudget (installed, or an in-place build) from any cwd
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(cbudget.__file__)))
    result = subprocess.run([sys.executable, "-m", "cbudget", "train", "--help"],
                            cwd=tmp_path, env=env, capture_output=True, text=True,
                            check=True)
    assert result.stdout.startswith("usage: cbudget train ")
    assert "python -m" not in result.stdout


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_string_columns_become_categorical(tmp_path, suffix, capsys):
    """Strings in a CSV (or Parquet) file are categorical features: their levels are
    saved in the model and mapped by name in later files, an unseen level included."""
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    rng = np.random.default_rng(0)
    n = 200
    frame = pd.DataFrame({"dept": rng.choice(["cardio", "onco", "neuro"], n),
                          "grade": rng.integers(0, 3, n), "age": rng.normal(50, 10, n)})
    frame["label"] = ((frame.dept == "onco") | (frame.grade == 2)).astype(int)
    write = (lambda f, p: f.to_parquet(p, index=False)) if suffix == ".parquet" else (
        lambda f, p: f.to_csv(p, index=False))
    train, new = tmp_path / f"train{suffix}", tmp_path / f"new{suffix}"
    write(frame, train)
    later = frame.drop(columns="label").head(5).assign(dept=["onco", "psych", "neuro",
                                                              "cardio", "onco"])
    write(later, new)
    model_path, out = tmp_path / "m.json", tmp_path / "p.csv"
    assert run(["train", str(train), "--label", "label", "--categorical", "dept,grade",
                "--rounds", "5", "--quiet", "-o", str(model_path)]) == 0
    model = cbudget.load_model(model_path)
    assert model.categories.to_dict() == {"features": [0, 1],
                                          "levels": [["cardio", "neuro", "onco"], None]}
    assert run(["predict", str(model_path), str(new), "-o", str(out), "--cost"]) == 0
    written = pd.read_csv(out)
    codes = np.column_stack([[2, 3, 1, 0, 2], later.grade, later.age]).astype(float)
    np.testing.assert_allclose(written["prediction"], model.predict(codes), rtol=1e-15)
    # the default, "auto", takes the column of strings
    assert run(["train", str(train), "--label", "label", "--rounds", "2", "--quiet",
                "-o", str(model_path)]) == 0
    assert cbudget.load_model(model_path).categories.features.tolist() == [0]
    assert run(["report", str(model_path), str(new)]) == 0
    assert "dept" in capsys.readouterr().out


def test_predict_reads_the_lightgbm_and_xgboost_models_report_reads(files, capsys):
    # issue 46: predict refused a LightGBM model that report accepted
    lgb = pytest.importorskip("lightgbm")
    xgb = pytest.importorskip("xgboost")
    train = read_csv(files / "train.csv")
    X, y = train[FEATURES], train["label"]
    lgb.train({"objective": "binary", "verbose": -1, "num_leaves": 7}, lgb.Dataset(X, y),
              5).save_model(str(files / "lgb.txt"))
    xgb.train({"objective": "binary:logistic", "max_depth": 3}, xgb.DMatrix(X, y),
              5).save_model(str(files / "xgb.json"))
    for name in ("lgb.txt", "xgb.json"):
        out = files / f"{name}.csv"
        assert run(["predict", str(files / name), str(files / "valid.csv"),
                    "-o", str(out)]) == 0
        want = cbudget.interop.audit.from_any(
            cbudget.interop.audit.read_foreign_model(files / name)).predict(
                valid_matrix(files / "valid.csv"))
        np.testing.assert_array_equal(read_csv(out)["prediction"], want)
        assert run(["predict", str(files / name), str(files / "valid.csv"), "-o", str(out),
                    "--cost"]) == 2
        assert "carries no feature costs" in error_line(capsys)
