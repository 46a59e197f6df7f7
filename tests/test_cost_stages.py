"""Cost-staged boosting (``cost_stages``, cegb and greedy_miser): a staged model is the
manual continuation (train at one trade-off, continue with ``xgb_model=`` at the next),
the model records its stages (slicing, copies, pickling, the JSON file, files of older
formats), exits checked at the stage boundaries, Dask training, and the errors."""
import json
import pickle

import numpy as np
import pytest

import cbudget
from cbudget.datasets import make_ranking

COSTS = dict(feature_costs=[1.0, 1.0, 2.0, 40.0, 60.0, 200.0])
# a high trade-off that leaves the costly features for later, then a low one
STAGES = [[4, 0.05], [5, 0.001]]
PARAMS = {"cegb": dict(num_leaves=6, min_data_in_leaf=8, n_jobs=2, verbosity=0),
          "greedy_miser": dict(max_depth=3, min_data_in_leaf=8, n_jobs=2, verbosity=0)}


def make_data(task, n=300, seed=0):
    """Cheap features 0-2 decide most inputs; the costly 3-5 the borderline ones."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    X[rng.random(X.shape) < 0.03] = np.nan
    signal = np.nan_to_num(X[:, 0] + 0.5 * X[:, 1] + 1.5 * X[:, 3] * (np.abs(X[:, 0]) < 0.7)
                           + 0.5 * X[:, 5])
    if task == "regression":
        return X, signal + 0.2 * rng.normal(size=n)
    if task == "binary":
        return X, (signal + 0.3 * rng.normal(size=n) > 0).astype(float)
    return X, np.digitize(signal + 0.3 * rng.normal(size=n), [-0.7, 0.7]).astype(float)


OBJECTIVES = {"regression": {"objective": "reg:squarederror"},
              "binary": {"objective": "binary:logistic"},
              "multiclass": {"objective": "multi:softprob", "num_class": 3}}


def params_for(algorithm, task, **extra):
    tradeoffs = {"cegb": 1.0, "greedy_miser": 100.0}   # Greedy Miser's scale: phi per tree
    return {"algorithm": algorithm, **OBJECTIVES[task], **PARAMS[algorithm], **extra}, \
        tradeoffs[algorithm]


STRUCTURE = ("left", "right", "feature", "bin_threshold", "default_left", "n_samples",
             "new_acquisitions", "depth")


def assert_same_models(a, b, X):
    """Same trees (structure, features, acquisitions), predictions to 1e-10, costs."""
    assert len(a.trees) == len(b.trees) and a.iteration_indptr == b.iteration_indptr
    for t, (ta, tb) in enumerate(zip(a.trees, b.trees)):
        for field in STRUCTURE:
            np.testing.assert_array_equal(ta[field], tb[field], err_msg=f"tree {t} {field}")
        np.testing.assert_allclose(ta["cost_penalty"], tb["cost_penalty"], rtol=1e-9,
                                   atol=1e-12)
    np.testing.assert_allclose(a.predict(X, output_margin=True),
                               b.predict(X, output_margin=True), rtol=0, atol=1e-10)
    np.testing.assert_array_equal(a.acquisitions(X), b.acquisitions(X))
    np.testing.assert_allclose(a.predict_cost(X), b.predict_cost(X))
    np.testing.assert_allclose(a.summary["train_cost_per_iteration"],
                               b.summary["train_cost_per_iteration"])
    assert a.cost_stages == b.cost_stages


def scaled(stages, scale):
    return [[rounds, tradeoff * scale] for rounds, tradeoff in stages]


def manual_continuation(p, dtrain, stages, rounds):
    """The issue's recipe: each stage trained by continuing the previous model."""
    model, done = None, 0
    for k, (stage_rounds, tradeoff) in enumerate(stages):
        n = rounds - done if k == len(stages) - 1 else stage_rounds
        model = cbudget.train({**p, "cost_tradeoff": tradeoff}, dtrain, n, xgb_model=model)
        done += n
    return model


@pytest.mark.parametrize("algorithm,task,extra", [
    ("cegb", "binary", {}),
    ("cegb", "multiclass", {}),
    ("cegb", "regression", {}),
    ("cegb", "binary", {"subsample": 0.7, "colsample_bytree": 0.8}),
    ("greedy_miser", "binary", {}),
    ("greedy_miser", "multiclass", {}),     # speculative growers on 2 threads
])
def test_staged_model_is_the_manual_continuation(algorithm, task, extra):
    X, y = make_data(task)
    dtrain = cbudget.Dataset(X, y, **COSTS)
    p, scale = params_for(algorithm, task, **extra)
    stages = scaled(STAGES, scale)
    staged = cbudget.train({**p, "cost_stages": stages}, dtrain, 12)
    manual = manual_continuation(p, dtrain, stages, 12)
    assert_same_models(staged, manual, X)
    assert staged.cost_stages == ((0, 4, stages[0][1]), (4, 12, stages[1][1]))
    # the stages change the model: the first stage's trade-off throughout is another one
    single = cbudget.train({**p, "cost_tradeoff": stages[0][1]}, dtrain, 12)
    assert not np.array_equal(single.acquisitions(X), staged.acquisitions(X))


def test_staged_ranking_model_is_the_manual_continuation():
    X, y, group, costs = make_ranking(60, 0)
    dtrain = cbudget.Dataset(X, y, group=group, feature_costs=costs)
    p = {"algorithm": "cegb", "objective": "rank:ndcg", "num_leaves": 7,
         "min_data_in_leaf": 5, "n_jobs": 2, "verbosity": 0}
    stages = [[3, 0.005], [4, 0.0001]]
    staged = cbudget.train({**p, "cost_stages": stages}, dtrain, 7)
    assert_same_models(staged, manual_continuation(p, dtrain, stages, 7), X)
    with pytest.raises(cbudget.NotApplicableError, match="exit rules do not apply"):
        staged.calibrate_exits(X, 0.01, checks="stages")


@pytest.mark.parametrize("algorithm", ["cegb", "greedy_miser"])
def test_one_stage_is_plain_cost_tradeoff_training_bit_for_bit(algorithm):
    X, y = make_data("multiclass")
    dtrain = cbudget.Dataset(X, y, **COSTS)
    p, scale = params_for(algorithm, "multiclass")
    staged = cbudget.train({**p, "cost_stages": [(3, 0.01 * scale)]}, dtrain, 8)
    plain = cbudget.train({**p, "cost_tradeoff": 0.01 * scale}, dtrain, 8)
    for a, b in zip(staged.trees, plain.trees):     # every field, bit for bit
        assert all(a[f].tobytes() == b[f].tobytes() for f in a.dtype.names)
    assert staged.cost_stages == plain.cost_stages == ((0, 8, 0.01 * scale),)
    # the trade-off of a staged model is its first stage's; giving both the same is fine
    assert staged.params["cost_tradeoff"] == 0.01 * scale
    cbudget.train({**p, "cost_stages": [(3, 0.05)], "cost_tradeoff": 0.05}, dtrain, 1)


def test_stages_past_the_rounds_and_rounds_past_the_stages():
    X, y = make_data("binary")
    dtrain = cbudget.Dataset(X, y, **COSTS)
    p, _ = params_for("cegb", "binary")
    # a stage cut short is fine; one never reached is said (the cascade asked for is not
    # the model trained), not silently dropped
    with pytest.warns(UserWarning, match=r"cost_stages\[2:\] start after the last of the 6 "
                                         r"rounds .*ask for 58 rounds"):
        short = cbudget.train({**p, "cost_stages": [[3, 0.3], [50, 0.01], [5, 0.0]]},
                              dtrain, 6)
    assert short.cost_stages == ((0, 3, 0.3), (3, 6, 0.01))
    merged = cbudget.train({**p, "cost_stages": [[2, 0.3], [2, 0.3], [1, 0.01]]}, dtrain, 6)
    assert merged.cost_stages == ((0, 4, 0.3), (4, 6, 0.01))


def test_continuing_a_model_appends_its_stages():
    X, y = make_data("binary")
    dtrain = cbudget.Dataset(X, y, **COSTS)
    p, _ = params_for("cegb", "binary")
    first = cbudget.train({**p, "cost_stages": [[2, 0.3], [2, 0.03]]}, dtrain, 4)
    more = cbudget.train({**p, "cost_stages": [[1, 0.03], [2, 0.001]]}, dtrain, 4,
                         xgb_model=first)
    assert more.cost_stages == ((0, 2, 0.3), (2, 5, 0.03), (5, 8, 0.001))
    assert first.cost_stages == ((0, 2, 0.3), (2, 4, 0.03))      # left as it was
    gbdt = cbudget.train({**p, "algorithm": "gbdt"}, dtrain, 3)
    assert gbdt.cost_stages == ()
    on_gbdt = cbudget.train({**p, "cost_tradeoff": 0.1}, dtrain, 2, xgb_model=gbdt)
    assert on_gbdt.cost_stages == ((0, 3, 0.0), (3, 5, 0.1))


@pytest.fixture(scope="module")
def staged_binary():
    X, y = make_data("binary", n=400)
    Xv, yv = make_data("binary", n=300, seed=1)
    dtrain = cbudget.Dataset(X, y, **COSTS)
    dvalid = cbudget.Dataset(Xv, yv, reference=dtrain)
    p, _ = params_for("cegb", "binary")
    model = cbudget.train({**p, "cost_stages": [[5, 0.05], [5, 0.01], [5, 0.0005]]}, dtrain,
                          15)
    return model, dvalid, Xv


def test_slicing_copies_and_pickling_keep_the_stages(staged_binary):
    model = staged_binary[0]
    assert model[3:12].cost_stages == ((0, 2, 0.05), (2, 7, 0.01), (7, 9, 0.0005))
    assert model[6:9].cost_stages == ((0, 3, 0.01),)
    assert model[:0].cost_stages == ()
    assert model[14].cost_stages == ((0, 1, 0.0005),)
    assert model.copy().cost_stages == model.cost_stages
    assert pickle.loads(pickle.dumps(model)).cost_stages == model.cost_stages
    assert "cost_stages=[0:5]@0.05,[5:10]@0.01,[10:15]@0.0005" in repr(model)
    copy = model.copy()
    with pytest.raises(ValueError, match="does not follow"):
        copy.record_cost_stage(14, 16, 0.1)
    with pytest.raises(ValueError, match="finite number >= 0"):
        copy.record_cost_stage(15, 16, float("nan"))
    assert copy.cost_stages == model.cost_stages


def test_file_round_trip_keeps_the_stages(staged_binary, tmp_path):
    model, _, X = staged_binary
    path = tmp_path / "staged.json"
    model.save_model(path)
    doc = json.loads(path.read_text())
    assert doc["format_version"] == list(cbudget.model_io.FORMAT_VERSION)
    assert doc["cegb"]["cost_stages"] == [[0, 5, 0.05], [5, 10, 0.01], [10, 15, 0.0005]]
    assert doc["training_params"]["cost_stages"] == [[5, 0.05], [5, 0.01], [5, 0.0005]]
    loaded = cbudget.load_model(path)
    assert loaded.cost_stages == model.cost_stages
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    sliced = tmp_path / "sliced.json"
    model[7:].save_model(sliced)
    assert cbudget.load_model(sliced).cost_stages == ((0, 3, 0.01), (3, 8, 0.0005))


@pytest.mark.parametrize("stages,message", [
    ([[0, 5, 0.05], [6, 15, 0.01]], "follow each other"),
    ([[1, 15, 0.05]], "follow each other"),
    ([[0, 5, 0.05], [5, 5, 0.01], [5, 15, 0.1]], "follow each other"),
    ([[0, 5, 0.05], [5, 14, 0.01]], "cover"),
    ([[0, 5, 0.05], [5, 15, 0.05]], "another than"),
    ([[0, 5, -1.0], [5, 15, 0.05]], "finite number >= 0"),
    ([[0, 5, 0.05], [5, 15, "x"]], "must be"),
    ([[0, 5.0, 0.05], [5, 15, 0.01]], "must be"),
    ([[0, 15]], "must be"),
    ({"0": 1}, "cost_stages"),
    ([], "cover"),
])
def test_loading_checks_the_stages(staged_binary, stages, message):
    doc = staged_binary[0].to_dict()
    doc["cegb"]["cost_stages"] = stages
    with pytest.raises(ValueError, match=message):
        cbudget.model_io.model_from_dict(json.loads(json.dumps(doc)))


def test_files_of_the_previous_format_load_as_one_stage(staged_binary, tmp_path):
    # format 1.7 (commit 709deaf) wrote the cegb section without cost_stages
    X = staged_binary[2]
    plain = cbudget.train({**params_for("cegb", "binary")[0], "cost_tradeoff": 0.01},
                          cbudget.Dataset(*make_data("binary"), **COSTS), 4)
    doc = plain.to_dict()
    del doc["cegb"]["cost_stages"], doc["training_params"]["cost_stages"]
    doc["format_version"] = [1, 7]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(doc))
    loaded = cbudget.load_model(path)
    assert loaded.cost_stages == ((0, 4, 0.01),)
    np.testing.assert_array_equal(loaded.predict(X), plain.predict(X))
    # and the files of cbudget 0.1.0 (formats 1.1, 1.2)
    for name, section in (("format_1_1_cegb_binary", "cegb"),
                          ("format_1_2_greedy_miser_multiclass", "greedy_miser")):
        fixture = f"tests/fixtures/v0_1_0/{name}.json"
        old = cbudget.load_model(fixture)
        with open(fixture) as f:
            tradeoff = json.load(f)[section]["cost_tradeoff"]
        assert old.cost_stages == ((0, old.num_boosted_rounds(), tradeoff),)


def test_exits_at_the_stage_boundaries(staged_binary):
    model, dvalid, Xv = staged_binary
    model = model.copy()
    rules = model.calibrate_exits(dvalid, 0.0, checks="stages")
    np.testing.assert_array_equal(rules.check_after, [5, 10])
    assert rules.calibration["checks"] == "stages"
    # epsilon 0 changes no class
    full = model.predict(Xv, early_exit=False) > 0.5
    np.testing.assert_array_equal(model.predict(Xv) > 0.5, full)
    loose = model.calibrate_exits(dvalid, 0.1, checks="stages")
    np.testing.assert_array_equal(loose.check_after, [5, 10])
    exited = model.exit_iterations(Xv)
    assert set(np.unique(exited)) <= {5, 10, 15} and (exited < 15).any()
    # an explicit list of checks; iteration_range cuts "stages" to the range
    np.testing.assert_array_equal(
        model.copy().calibrate_exits(dvalid, 0.01, checks=[3, 10]).check_after, [3, 10])
    np.testing.assert_array_equal(model.copy().calibrate_exits(
        dvalid, 0.01, checks="stages", iteration_range=(0, 8)).check_after, [5])
    choice = model.best_exit_within_budget(dvalid, 1e9, epsilons=[0.05], checks="stages",
                                           iterations=[15])
    np.testing.assert_array_equal(choice.model.exit_rules.check_after, [5, 10])


def test_stages_checks_without_a_boundary_are_refused(staged_binary):
    # a one-stage model (or iterations within one stage) has no boundary: the rules made
    # would never check, and were set silently
    model, dvalid, _ = staged_binary
    for one_stage, options in ((model[:5], {}), (model.copy(), {"iteration_range": (0, 4)})):
        with pytest.raises(ValueError, match="no stage boundary to check at"):
            one_stage.calibrate_exits(dvalid, 0.05, checks="stages", **options)
        assert one_stage.exit_rules is None


@pytest.mark.parametrize("edit", [
    {"checks": "banana"}, {"checks": "stages", "every": 1}, {"checks": 5}])
def test_loading_checks_how_the_exit_checks_were_given(staged_binary, edit):
    model = staged_binary[0].copy()
    model.calibrate_exits(staged_binary[1], 0.05, checks="stages")
    doc = model.to_dict()
    assert doc["exit_rules"]["calibration"]["checks"] == "stages"
    doc["exit_rules"]["calibration"].update(edit)
    with pytest.raises(ValueError, match="calibration.checks"):
        cbudget.model_io.model_from_dict(json.loads(json.dumps(doc)))


@pytest.mark.parametrize("checks,message", [
    ([5, 5], "ascend"), ([0, 5], r"\[1, 15\)"), ([5, 15], r"\[1, 15\)"), ("every", "stages"),
    ([2.5], "integers"),
])
def test_bad_checks_are_refused(staged_binary, checks, message):
    model, dvalid, _ = staged_binary
    with pytest.raises((ValueError, TypeError), match=message):
        model.copy().calibrate_exits(dvalid, 0.01, checks=checks)
    with pytest.raises(ValueError, match="checks or every"):
        model.copy().calibrate_exits(dvalid, 0.01, checks=[5], every=2)


def test_on_demand_prediction_with_exits_at_the_stages_fetches_what_it_pays_for(
        staged_binary):
    model, dvalid, Xv = staged_binary
    model = model.copy()
    model.calibrate_exits(dvalid, 0.05, checks="stages")
    fetched = np.zeros(Xv.shape, dtype=bool)

    def fetch(features, rows):
        assert not fetched[np.ix_(rows, features)].any()     # each pair fetched once
        fetched[np.ix_(rows, features)] = True
        return Xv[np.ix_(rows, features)]

    source = cbudget.FeatureSource(fetch, Xv.shape[0])
    np.testing.assert_array_equal(model.predict(source), model.predict(Xv))
    np.testing.assert_array_equal(fetched, model.acquisitions(Xv))
    # what an input pays is what was fetched for it (these costs are per input)
    np.testing.assert_allclose(model.predict_cost(Xv),
                               fetched @ np.asarray(COSTS["feature_costs"]))
    assert model.exit_iterations(Xv).min() == 5
    # next_features, input by input: asks for exactly what the input pays for
    for i in range(20):
        known = {}
        while ask := model.next_features(known):
            known.update({m: Xv[i, m] for m in ask})
        np.testing.assert_array_equal(sorted(known), np.flatnonzero(fetched[i]))
        row = np.full((1, Xv.shape[1]), np.nan)
        row[0, list(known)] = [known[m] for m in known]
        assert model.predict(row)[0] == model.predict(Xv[i:i + 1])[0]
    assert not fetched[:, 5].all()      # inputs that exit early never fetch the costly one


def test_cost_report_and_cli_show_the_stages(staged_binary, tmp_path, capsys):
    model, dvalid, Xv = staged_binary
    full = model.cost_report(Xv)
    assert [(s["first_iteration"], s["end_iteration"], s["cost_tradeoff"], s["reached_share"])
            for s in full.cost_stages] == [(0, 5, 0.05, 1.0), (5, 10, 0.01, 1.0),
                                           (10, 15, 0.0005, 1.0)]
    assert full.cost_stages[-1]["mean_cost"] == pytest.approx(full.mean_cost)
    for stage in full.cost_stages:
        assert stage["mean_cost"] == pytest.approx(model.predict_cost(
            Xv, iteration_range=(0, stage["end_iteration"])).mean())
    assert "iterations 5-9 at cost_tradeoff 0.01: reached by 100.00% of inputs" in str(full)
    # with exits, a stage is reached by the inputs still in
    exiting = model.copy()
    exiting.calibrate_exits(dvalid, 0.05, checks="stages")
    report = exiting.cost_report(Xv)
    reached = [s["reached_share"] for s in report.cost_stages]
    exited = exiting.exit_iterations(Xv)
    assert reached == [1.0, (exited > 5).mean(), (exited > 10).mean()] and reached[2] < 1
    assert report.cost_stages[-1]["mean_cost"] == pytest.approx(report.mean_cost)
    assert model[2:8].cost_report(Xv).cost_stages[0]["end_iteration"] == 3
    # the CLI
    path = tmp_path / "staged.json"
    exiting.save_model(path)
    data = tmp_path / "data.csv"
    np.savetxt(data, Xv, delimiter=",", header=",".join(model.feature_names), comments="")
    from cbudget.__main__ import main
    main(["report", str(path), str(data)])
    assert "cost stages:\n  iterations 0-4 at cost_tradeoff 0.05" in capsys.readouterr().out
    main(["report", str(path), str(data), "--json"])
    summary = json.loads(capsys.readouterr().out)
    assert [s["end_iteration"] for s in summary["cost_stages"]] == [5, 10, 15]


def test_early_stopping_inside_a_stage():
    X, y = make_data("binary")
    Xv, yv = make_data("binary", seed=1)
    dtrain = cbudget.Dataset(X, y, **COSTS)
    dvalid = cbudget.Dataset(Xv, yv, reference=dtrain)
    p, _ = params_for("cegb", "binary", learning_rate=0.8)
    result = {}
    model = cbudget.train({**p, "cost_stages": [[3, 0.05], [40, 0.0]]}, dtrain, 43,
                          evals=[(dvalid, "valid")], early_stopping_rounds=2,
                          evals_result=result)
    assert model.best_iteration is not None and 3 <= model.best_iteration < 42
    assert len(result["valid"]["logloss"]) == model.num_boosted_rounds()
    assert model.cost_stages[-1].end_iteration == model.num_boosted_rounds()
    best = model[:model.best_iteration + 1]
    assert best.cost_stages == ((0, 3, 0.05), (3, model.best_iteration + 1, 0.0))


def test_callbacks_see_the_trade_off_of_each_round():
    X, y = make_data("binary")
    dtrain = cbudget.Dataset(X, y, **COSTS)
    seen = []

    class Watch(cbudget.TrainingCallback):
        def after_iteration(self, model, epoch, evals_log):
            seen.append(model.cost_stages[-1].cost_tradeoff)
            return False

    p, _ = params_for("cegb", "binary")
    cbudget.train({**p, "cost_stages": [[2, 0.3], [1, 0.01]]}, dtrain, 4, callbacks=[Watch()])
    assert seen == [0.3, 0.3, 0.01, 0.01]


@pytest.mark.parametrize("params,message", [
    ({"algorithm": "gbdt"}, "applies to algorithms 'cegb', 'greedy_miser'"),
    ({"algorithm": "budget_rf"}, "applies to algorithms 'cegb', 'greedy_miser'"),
    ({"cost_tradeoff": 0.1}, "not both"),
    ({"cegb_tradeoff": 0.1}, "not both"),
])
def test_cost_stages_errors(params, message):
    X, y = make_data("binary", n=60)
    dtrain = cbudget.Dataset(X, y, **COSTS)
    with pytest.raises(ValueError, match=message):
        cbudget.train({"algorithm": "cegb", "objective": "binary:logistic",
                       "cost_stages": [[2, 1.0], [2, 0.5]], **params}, dtrain, 2)


@pytest.mark.parametrize("stages,error,message", [
    ([], ValueError, "non-empty list"),
    ("1,2", ValueError, "non-empty list"),
    ([[1, 0.1, 3]], ValueError, "pair"),
    ([5], ValueError, "pair"),
    ([[0, 0.1]], ValueError, r"cost_stages\[0\] rounds must be >= 1"),
    ([[1.5, 0.1]], TypeError, "integer"),
    ([[2, -0.1]], ValueError, r"cost_stages\[0\] cost_tradeoff must be >= 0"),
    ([[2, 0.1], [2, float("nan")]], ValueError, "NaN"),
    ([[2, float("inf")]], ValueError, "finite"),
    ([[True, 0.1]], TypeError, "integer"),
])
def test_bad_cost_stages_are_refused(stages, error, message):
    X, y = make_data("binary", n=60)
    dtrain = cbudget.Dataset(X, y, **COSTS)
    with pytest.raises(error, match=message):
        cbudget.train({"algorithm": "cegb", "objective": "binary:logistic",
                       "cost_stages": stages}, dtrain, 2)


# slow, as every Dask training test (tests/test_dask_training.py): the cluster the session
# starts for it took more time than the rest of this file
@pytest.mark.slow
@pytest.mark.parametrize("task", ["binary", "multiclass"])
def test_dask_training_in_stages_is_the_single_machine_model(dask_client, task):
    da = pytest.importorskip("dask.array")
    from cbudget.dask import DaskDataset, predict, train
    X, y = make_data(task)
    p, _ = params_for("cegb", task, cost_stages=STAGES)
    local = cbudget.train(p, cbudget.Dataset(X, y, **COSTS), 9)
    ddata = DaskDataset(dask_client, da.from_array(X, chunks=(X.shape[0], 6)),
                        da.from_array(y, chunks=X.shape[0]), **COSTS)
    remote = train(dask_client, p, ddata, 9)
    assert remote.cost_stages == local.cost_stages == ((0, 4, 0.05), (4, 9, 0.001))
    for a, b in zip(local.trees, remote.trees):
        for field in STRUCTURE:
            np.testing.assert_array_equal(a[field], b[field])
    np.testing.assert_array_equal(remote.predict(X), local.predict(X))
    # scoring on the cluster with exits at the stage boundary
    remote.calibrate_exits(cbudget.Dataset(X, y, reference=ddata.reference), 0.05,
                           checks="stages")
    scored = predict(dask_client, remote, da.from_array(X, chunks=(100, 6))).compute()
    np.testing.assert_allclose(scored, remote.predict(X))


def test_the_estimators_pass_cost_stages_through():
    from sklearn.base import clone

    from cbudget.sklearn import CEGBClassifier, GreedyMiserRegressor
    X, y = make_data("binary")
    estimator = CEGBClassifier(n_estimators=9, cost_stages=STAGES, num_leaves=6,
                               params={"min_data_in_leaf": 8},
                               feature_costs=COSTS["feature_costs"]).fit(X, y)
    assert estimator.model_.cost_stages == ((0, 4, 0.05), (4, 9, 0.001))
    assert clone(estimator).get_params()["cost_stages"] == STAGES
    assert "cost_stages : list of [rounds, cost_tradeoff]" in CEGBClassifier.__doc__
    p, _ = params_for("cegb", "binary", cost_stages=STAGES)
    direct = cbudget.train(p, cbudget.Dataset(X, y, **COSTS), 9)
    np.testing.assert_array_equal(estimator.predict_proba(X)[:, 1], direct.predict(X))
    Xr, yr = make_data("regression", n=120)
    regressor = GreedyMiserRegressor(n_estimators=3, cost_stages=[(1, 500.0), (2, 0.0)],
                                     feature_costs=COSTS["feature_costs"]).fit(Xr, yr)
    assert regressor.model_.cost_stages == ((0, 1, 500.0), (1, 3, 0.0))
    with pytest.raises(ValueError, match="not both"):
        CEGBClassifier(n_estimators=2, cost_stages=STAGES, cost_tradeoff=0.5).fit(X, y)
    with pytest.raises(ValueError, match="leave cost_tradeoff None"):
        CEGBClassifier(n_estimators=2, cost_stages=STAGES, cost_tradeoff="path").fit(X, y)


@pytest.mark.parametrize("task", ["multiclass", "regression"])
def test_exits_at_the_stages_of_multiclass_and_regression_models(task):
    X, y = make_data(task)
    Xv, yv = make_data(task, seed=1)
    dtrain = cbudget.Dataset(X, y, **COSTS)
    p, _ = params_for("cegb", task, cost_stages=STAGES)
    model = cbudget.train(p, dtrain, 12)
    tolerance = {"tolerance": 0.3} if task == "regression" else {}
    full = model.predict(Xv)
    rules = model.calibrate_exits(cbudget.Dataset(Xv, yv, reference=dtrain), 0.0,
                                  checks="stages", **tolerance)
    np.testing.assert_array_equal(rules.check_after, [4])
    exited = model.predict(Xv)
    if task == "regression":
        assert np.abs(exited - full).max() <= 0.3
    else:
        np.testing.assert_array_equal(exited.argmax(axis=1), full.argmax(axis=1))
    model.calibrate_exits(Xv, 0.2, checks="stages", **tolerance)
    assert (model.exit_iterations(Xv) == 4).any()
    assert model.predict_cost(Xv).mean() < model.predict_cost(Xv, early_exit=False).mean()


def test_the_constant_model_warning_names_the_lowest_trade_off_of_the_stages():
    import warnings
    X, y = make_data("binary")
    dtrain = cbudget.Dataset(X, y, **COSTS)
    p, _ = params_for("cegb", "binary")
    with pytest.warns(UserWarning, match="cost_tradeoff=0.5, so the model predicts a const"):
        cbudget.train({**p, "cost_stages": [[2, 5.0], [2, 0.5]]}, dtrain, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")       # the later stage splits: no warning
        model = cbudget.train({**p, "cost_stages": [[2, 5.0], [2, 0.01]]}, dtrain, 4)
    assert model[:2].used_features().size == 0 and model.used_features().size > 0
