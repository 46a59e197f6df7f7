"""cbudget.dask, the scoring half (docs/architecture.md, "Dask"), on a LocalCluster of two
worker processes: every model type's predictions, probabilities, costs and acquisitions
of Dask arrays and DataFrames equal the local methods bit for bit, with the model in the
graph once; on-demand prediction with fetch running on the workers fetches exactly the
acquisitions; cost paths and sweeps trained on the cluster equal the local ones; the
errors."""
import os
import pickle
import re
import subprocess
import sys

import numpy as np
import pytest

pytestmark = pytest.mark.slow
distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
pd = pytest.importorskip("pandas")
import dask  # noqa: E402
from small_models import ALGORITHMS, small_model_params, takes_expensive_model  # noqa: E402

import cbudget  # noqa: E402
import cbudget.dask as cbudget_dask  # noqa: E402

MODELS = ALGORITHMS + ("gbdt_multiclass", "budget_rf_multiclass")
N_FEATURES = 6
NAMES = [f"f{m}" for m in range(N_FEATURES)]
COSTS = {"feature_costs": [1.0, 1.0, 2.0, 2.0, 4.0, 8.0], "split_cost": 0.01}


def _data(n, seed, n_classes=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, N_FEATURES))
    z = X[:, 0] + 0.8 * X[:, 1] * X[:, 2] - 0.6 * X[:, 4] + 0.3 * rng.normal(size=n)
    y = (z > 0) if n_classes == 2 else np.digitize(z, [-0.5, 0.5])
    X[rng.random(X.shape) < 0.05] = np.nan      # missing values: the default directions
    return X, y.astype(np.float64)


@pytest.fixture(scope="module")
def models():
    """Every algorithm's model (binary), a multi-class booster and forest, and the test
    inputs."""
    X, y = _data(400, 0)
    dtrain = cbudget.Dataset(X, y, **COSTS)
    f0 = cbudget.train({"objective": "binary:logistic", "n_jobs": 1, "max_depth": 4}, dtrain,
                       8, verbose_eval=False)
    out = {}
    for algorithm in ALGORITHMS:
        extra = {"expensive_model": f0} if takes_expensive_model(algorithm) else {}
        out[algorithm] = cbudget.train(small_model_params(algorithm), dtrain, 6, verbose_eval=False,
                                       **extra)
    X3, y3 = _data(400, 2, n_classes=3)
    dtrain3 = cbudget.Dataset(X3, y3, **COSTS)
    out["gbdt_multiclass"] = cbudget.train(
        {"objective": "multi:softprob", "num_class": 3, "n_jobs": 1, "max_depth": 3},
        dtrain3, 5, verbose_eval=False)
    out["budget_rf_multiclass"] = cbudget.train(
        {"algorithm": "budget_rf", "objective": "multi:softprob", "num_class": 3,
         "n_jobs": 1}, dtrain3, 6, verbose_eval=False)
    return out, _data(300, 1)[0]


def _local(model, method, X, **options):
    """What the local model gives for ``method`` (predict_proba: a column per class)."""
    if method == "predict_proba":
        if isinstance(model, cbudget.Forest):
            return model.predict_proba(X, **options)
        p = model.predict(X, **options)
        return p if p.ndim == 2 else np.column_stack([1.0 - p, p])
    return getattr(model, method)(X, **options)


METHODS = ("predict", "predict_proba", "predict_cost", "acquisitions")


def _check_equal(lazy, expected):
    """The lazy arrays' declared dtypes and their computed values, bit for bit."""
    computed = dask.compute(*lazy)
    for array, value, want in zip(lazy, computed, expected):
        assert array.dtype == want.dtype and value.dtype == want.dtype
        np.testing.assert_array_equal(value, want, strict=True)


@pytest.mark.parametrize("name", MODELS)
def test_dask_array_scoring_equals_local_for_every_model(dask_client, models, name):
    by_name, X = models
    model = by_name[name]
    # 3 row chunks; the columns in 2 chunks, which are put together
    X_dask = da.from_array(X, chunks=(100, 4))
    lazy = [getattr(cbudget_dask, method)(dask_client, model, X_dask) for method in METHODS]
    expected = [_local(model, method, X) for method in METHODS]
    assert lazy[0].numblocks[0] == 3 and lazy[1].shape == (300, max(model.num_class, 2))
    assert expected[3].shape == (300, N_FEATURES) and expected[3].dtype == bool
    _check_equal(lazy, expected)


@pytest.mark.parametrize("name", ["gbdt", "budget_rf", "cscc", "adapt_gbrt"])
def test_dask_dataframe_scoring_equals_local(dask_client, models, name):
    by_name, X = models
    model = by_name[name]
    frame = dd.from_pandas(pd.DataFrame(X, columns=NAMES), npartitions=3)
    lazy = [getattr(cbudget_dask, method)(dask_client, model, frame) for method in METHODS]
    assert all(isinstance(array, da.Array) for array in lazy)
    _check_equal(lazy, [_local(model, method, X) for method in METHODS])
    # partitions left empty by a filter (the models reject empty input)
    kept = frame.map_partitions(lambda part: part[part.index < 60])
    rows = np.arange(60)
    _check_equal([getattr(cbudget_dask, method)(dask_client, model, kept) for method in METHODS],
                 [_local(model, method, X[rows]) for method in METHODS])


def test_options_pass_through(dask_client, models):
    by_name, X = models
    X_dask = da.from_array(X, chunks=100)
    booster, tree, forest = by_name["gbdt"], by_name["cstc"], by_name["budget_rf"]
    cases = [(booster, "predict", {"output_margin": True}),
             (booster, "predict", {"pred_leaf": True}),
             (booster, "predict", {"iteration_range": (1, 3)}),
             (booster, "predict_cost", {"iteration_range": (0, 2)}),
             (booster, "acquisitions", {"iteration_range": (0, 2)}),
             (booster, "predict_proba", {"iteration_range": (0, 2)}),
             (tree, "predict", {"pred_exit": True}),
             (forest, "predict_proba", {"votes": True, "iteration_range": (0, 3)})]
    _check_equal([getattr(cbudget_dask, method)(dask_client, model, X_dask, **options)
                  for model, method, options in cases],
                 [_local(model, method, X, **options) for model, method, options in cases])


def test_exit_rules_hold_on_the_cluster(dask_client, models):
    """A booster with exit rules scores on the workers as it does locally, with and
    without its exits."""
    by_name, X = models
    booster = by_name["gbdt_multiclass"].copy()
    booster.calibrate_exits(X[:150], 0.05)
    X_dask = da.from_array(X, chunks=100)
    cases = [(method, options) for method in METHODS
             for options in ({}, {"early_exit": False})]
    _check_equal([getattr(cbudget_dask, method)(dask_client, booster, X_dask, **options)
                  for method, options in cases],
                 [_local(booster, method, X, **options) for method, options in cases])
    assert booster.predict_cost(X).mean() < booster.predict_cost(X, early_exit=False).mean()


def test_the_graph_refers_to_the_model_once(dask_client, models):
    by_name, X = models
    model = by_name["adapt_gbrt"]           # holds its expensive booster too
    size = len(pickle.dumps(model))
    X_dask = da.from_array(X, chunks=30)    # 10 blocks
    frame = dd.from_pandas(pd.DataFrame(X, columns=NAMES), npartitions=10)
    for data in (X_dask, frame):
        lazy = cbudget_dask.predict(dask_client, model, data)
        added = (len(pickle.dumps(dict(lazy.__dask_graph__())))
                 - len(pickle.dumps(dict(data.__dask_graph__()))))
        assert added < size / 4, (added, size)     # not even one copy: a reference
        np.testing.assert_array_equal(lazy.compute(), model.predict(X))


class Fetch:
    """Reads the test matrix, on a worker only: ``keys`` are row indices (an array), or
    a DataFrame with them in its column "row". Counts the times it is pickled in this
    process."""
    pickled = 0

    def __init__(self, X):
        self.X = X

    def __getstate__(self):
        type(self).pickled += 1
        return self.__dict__

    def __call__(self, features, keys):
        distributed.get_worker()         # ValueError outside a worker
        rows = keys["row"].to_numpy() if isinstance(keys, pd.DataFrame) else keys
        return self.X[np.ix_(rows, features)]


@pytest.mark.parametrize("name", MODELS)
def test_on_demand_on_the_workers_fetches_the_acquisitions(dask_client, models, name):
    by_name, X = models
    model = by_name[name]
    keys = da.arange(X.shape[0], chunks=100)
    Fetch.pickled = 0
    result = cbudget_dask.predict_on_demand(dask_client, model, Fetch(X), keys)
    predictions, cost, acquired = dask.compute(*result)
    assert Fetch.pickled == 1                # sent once, not with each of the 3 partitions
    np.testing.assert_array_equal(predictions, _local(model, "predict", X), strict=True)
    np.testing.assert_array_equal(acquired, model.acquisitions(X), strict=True)
    np.testing.assert_allclose(cost, model.predict_cost(X), rtol=1e-12, atol=1e-12)


class ReusedBufferFetch(Fetch):
    """Fetch's values written into one buffer per worker, returned as a view of it that
    the next call overwrites (as fetches over preallocated arrays or cursors do)."""

    def __call__(self, features, keys):
        if not hasattr(self, "buffer"):
            self.buffer = np.empty(self.X.shape)
        out = self.buffer[:len(keys), :len(features)]
        out[:] = super().__call__(features, keys)
        return out


@pytest.mark.parametrize("name", ["gbdt", "cstc", "adapt_gbrt"])
def test_on_demand_on_the_workers_copies_what_fetch_returns(dask_client, models, name):
    by_name, X = models
    model = by_name[name]
    keys = da.arange(X.shape[0], chunks=100)
    result = cbudget_dask.predict_on_demand(dask_client, model, ReusedBufferFetch(X), keys)
    predictions, cost, acquired = dask.compute(*result)
    np.testing.assert_array_equal(predictions, _local(model, "predict", X), strict=True)
    np.testing.assert_array_equal(acquired, model.acquisitions(X), strict=True)
    np.testing.assert_allclose(cost, model.predict_cost(X), rtol=1e-12, atol=1e-12)


def test_on_demand_with_a_dataframe_of_keys_and_known_features(dask_client, models):
    by_name, X = models
    forest = by_name["budget_rf"]
    frame = pd.DataFrame({"row": np.arange(X.shape[0]), "f0": X[:, 0], "f1": X[:, 1]})
    keys = dd.from_pandas(frame, npartitions=3)
    result = cbudget_dask.predict_on_demand(dask_client, forest, Fetch(X), keys,
                                            method="predict_proba", known=["f0", "f1"],
                                            max_workers=2)
    probabilities, cost, acquired = dask.compute(*result)
    np.testing.assert_array_equal(probabilities, forest.predict_proba(X), strict=True)
    read = forest.acquisitions(X)
    assert read[:, :2].any()                 # the known features are read, and free
    paid = read.copy()
    paid[:, :2] = False
    np.testing.assert_array_equal(acquired, paid)
    prices = forest.cost_model.acquisition_costs
    np.testing.assert_allclose(cost, forest.predict_cost(X) - (prices(read) - prices(paid)),
                               rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match=r"\['f9'\] are not columns"):
        cbudget_dask.predict_on_demand(dask_client, forest, Fetch(X), keys, known=["f9"])
    with pytest.raises(ValueError, match=r"\['row'\] are not features"):
        cbudget_dask.predict_on_demand(dask_client, forest, Fetch(X), keys, known=["row"])


class CountingDataset(cbudget.Dataset):
    """A Dataset that counts the times it is pickled in this process."""
    pickled = 0

    def __getstate__(self):
        type(self).pickled += 1
        return super().__getstate__()


@pytest.fixture(scope="module")
def cegb_problem():
    X, y = _data(500, 3)
    Xv, yv = _data(300, 4)
    dtrain = CountingDataset(X, y, **COSTS)
    params = {"algorithm": "cegb", "objective": "binary:logistic", "num_leaves": 8}
    return params, dtrain, cbudget.Dataset(Xv, yv, reference=dtrain)


def test_cost_path_on_the_cluster_equals_the_local_one(dask_client, cegb_problem):
    params, dtrain, dvalid = cegb_problem
    kwargs = {"n_points": 6, "eps": 1e-2, "num_boost_round": 15}
    local = cbudget.cost_path(params, dtrain, dvalid, **kwargs)
    CountingDataset.pickled = 0
    with distributed.get_task_stream(dask_client) as tasks:
        path = cbudget_dask.cost_path(dask_client, params, dtrain, dvalid, **kwargs)
    assert CountingDataset.pickled == 1      # the data sent once, not with each point
    assert len(path) == 6 and path.lambda_max == local.lambda_max
    for field in ("lambdas", "costs", "scores", "pareto"):
        np.testing.assert_array_equal(getattr(path, field), getattr(local, field), strict=True)
    for model, same in zip(path.models, local.models):
        np.testing.assert_array_equal(model.predict(dvalid), same.predict(dvalid))
        assert model.params["n_jobs"] == 1
    # one task per point, each on a worker
    trained = [task for task in tasks.data if "_call" in str(task["key"])]
    assert len(trained) == len(path)
    with pytest.raises(ValueError, match="n_jobs"):
        cbudget_dask.cost_path(dask_client, params, dtrain, dvalid, n_jobs=2, **kwargs)


def test_sweep_equals_training_each_locally(dask_client, cegb_problem):
    params, dtrain, dvalid = cegb_problem
    params = {**params, "cost_tradeoff": 0.01}
    gbdt = {"algorithm": "gbdt", "objective": "binary:logistic", "max_depth": 3}
    grid = {"num_leaves": [4, 8], "learning_rate": [0.1, 0.3]}
    CountingDataset.pickled = 0
    results = cbudget_dask.sweep(dask_client, [params, gbdt], dtrain, dvalid, grid=grid,
                                 num_boost_round=12, metric="error")
    assert CountingDataset.pickled == 1      # the data sent once, not with each point
    expected = [{**p, "num_leaves": leaves, "learning_rate": rate}
                for p in (params, gbdt) for leaves in (4, 8) for rate in (0.1, 0.3)]
    assert len(results) == len(expected) == 8
    for result, point in zip(results, expected):
        log = {}
        model = cbudget.train({**point, "eval_metric": "error"}, dtrain, 12,
                              evals=[(dvalid, "valid")], evals_result=log, verbose_eval=False)
        assert {k: result.model.params[k] for k in point} == point
        np.testing.assert_array_equal(result.model.predict(dvalid), model.predict(dvalid))
        assert result.metric == "error" and result.score == log["valid"]["error"][-1]
        assert result.cost == model.predict_cost(dvalid).mean()
    one = cbudget_dask.sweep(dask_client, gbdt, dtrain, dvalid, num_boost_round=3)
    assert len(one) == 1 and one[0].model.algorithm == "gbdt"
    with pytest.raises(ValueError, match="non-empty list"):
        cbudget_dask.sweep(dask_client, gbdt, dtrain, dvalid, grid={"num_leaves": []})
    with pytest.raises(ValueError, match="no label"):
        cbudget_dask.sweep(dask_client, gbdt, dtrain, cbudget.Dataset(dvalid.data))


def test_errors_are_raised_before_anything_runs(dask_client, models):
    by_name, X = models
    booster = by_name["gbdt"]
    X_dask = da.from_array(X, chunks=100)
    for function in (cbudget_dask.predict, cbudget_dask.predict_proba,
                     cbudget_dask.predict_cost, cbudget_dask.acquisitions):
        with pytest.raises(TypeError, match="dask.array.Array or a dask.dataframe.DataFrame"):
            function(dask_client, booster, X)
        with pytest.raises(TypeError, match="distributed.Client"):
            function(object(), booster, X_dask)
        with pytest.raises(TypeError, match="cbudget model"):
            function(dask_client, object(), X_dask)
    # the local model's own messages
    narrow = X[:, :4]
    with pytest.raises(ValueError) as local:
        booster.predict(narrow)
    with pytest.raises(ValueError, match=re.escape(str(local.value))):
        cbudget_dask.predict(dask_client, booster, da.from_array(narrow, chunks=100))
    renamed = dd.from_pandas(pd.DataFrame(X, columns=[f"x{m}" for m in range(6)]),
                             npartitions=2)
    with pytest.raises(ValueError, match="feature names differ"):
        cbudget_dask.predict_cost(dask_client, booster, renamed)
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        cbudget_dask.predict(dask_client, booster, X_dask, no_such_option=True)
    with pytest.raises(ValueError, match="2-D"):
        cbudget_dask.predict(dask_client, booster, X_dask[:, 0])
    with pytest.raises(TypeError, match="return_route"):
        cbudget_dask.predict(dask_client, by_name["adapt_gbrt"], X_dask, return_route=True)
    with pytest.raises(TypeError, match="iteration_range and early_exit only"):
        cbudget_dask.predict_proba(dask_client, booster, X_dask, output_margin=True)
    Xr, yr = _data(200, 5)
    regression = cbudget.train({"objective": "reg:squarederror", "n_jobs": 1},
                               cbudget.Dataset(Xr, yr), 2, verbose_eval=False)
    with pytest.raises(cbudget.NotApplicableError, match="no probabilities"):
        cbudget_dask.predict_proba(dask_client, regression, X_dask)
    with pytest.raises(TypeError, match="keys must be"):
        cbudget_dask.predict_on_demand(dask_client, booster, Fetch(X), np.arange(300))
    with pytest.raises(TypeError, match="fetch must be callable"):
        cbudget_dask.predict_on_demand(dask_client, booster, None, da.arange(300, chunks=100))
    with pytest.raises(ValueError, match="method must be one of"):
        cbudget_dask.predict_on_demand(dask_client, booster, Fetch(X), da.arange(300, chunks=100),
                                       method="cost_report")


def test_import_without_dask_says_what_to_install(tmp_path):
    code = ("import sys\n"
            "sys.modules['dask'] = sys.modules['distributed'] = None\n"
            "import cbudget.dask\n")
    # from an empty directory: the cbudget this suite tests (installed, or the source
    # tree built in place, which the suite's own path puts first) -- not an unbuilt
    # source tree in the working directory
    package_root = os.path.dirname(os.path.dirname(cbudget.__file__))
    env = dict(os.environ, PYTHONPATH=package_root)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, cwd=tmp_path, env=env)
    assert run.returncode != 0
    assert "ImportError" in run.stderr and "pip install cbudget[dask]" in run.stderr


def test_categorical_levels_are_mapped_on_the_workers(dask_client):
    """A Dask DataFrame of strings and pandas categories scores as the model maps them
    in memory (each partition by the model's levels, whatever the partition holds)."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"sex": rng.choice(["M", "F"], 300),
                          "dept": pd.Categorical(rng.choice(["a", "b", "c"], 300)),
                          "x": rng.normal(size=300)})
    y = ((frame.sex == "M") ^ (frame.dept == "a")).to_numpy(dtype=float)
    model = cbudget.train({"objective": "binary:logistic", "n_jobs": 1}, cbudget.Dataset(frame, y),
                          4, verbose_eval=False)
    frame.loc[:9, "sex"] = "unseen"
    lazy = dd.from_pandas(frame, npartitions=3)
    for method in ("predict", "predict_cost"):
        np.testing.assert_array_equal(getattr(cbudget_dask, method)(dask_client, model,
                                                                     lazy).compute(),
                                      getattr(model, method)(frame))
