"""cbudget.dask.train: data-parallel gbdt / cegb / greedy_miser on a LocalCluster of two
worker processes (the session's ``dask_client``), against single-machine training."""
import logging
import os

import numpy as np
import pytest

import cbudget

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")
from small_models import BOOSTERS  # noqa: E402

from cbudget.dask import DaskDataset, train  # noqa: E402

pytestmark = pytest.mark.slow

N_ROWS, N_FEATURES = 1200, 6
COSTS = dict(feature_costs=[1.0, 2.0, 4.0, 1.0, 3.0, 5.0],
             cost_groups={"pair": ["f1", "f2"]}, group_costs={"pair": 2.0},
             coupled_costs=[0.0, 0.0, 0.0, 10.0, 0.0, 0.0], split_cost=0.01)
OBJECTIVES = {"regression": ("reg:squarederror", None),
              "binary": ("binary:logistic", None),
              "multiclass": ("multi:softprob", 3)}


def make_data(task, seed=0):
    """Features whose gains differ clearly (the trees do not hinge on rounding)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N_ROWS, N_FEATURES))
    X[rng.random(X.shape) < 0.03] = np.nan
    signal = np.nan_to_num(2 * X[:, 0] + X[:, 1] ** 2 - X[:, 2] + 0.5 * X[:, 3] * X[:, 4])
    if task == "regression":
        y = signal + 0.3 * rng.normal(size=N_ROWS)
    elif task == "binary":
        y = (signal + 0.5 * rng.normal(size=N_ROWS) > 1).astype(float)
    else:
        y = np.digitize(signal + 0.5 * rng.normal(size=N_ROWS), [0.0, 2.0]).astype(float)
    return X, y


def params_for(algorithm, task, **extra):
    objective, num_class = OBJECTIVES[task]
    p = dict(algorithm=algorithm, objective=objective, num_leaves=8, verbosity=0,
             min_data_in_leaf=10)
    if num_class:
        p["num_class"] = num_class
    if algorithm != "gbdt":
        p["cost_tradeoff"] = 0.002 if algorithm == "cegb" else 0.05
    p.update(extra)
    return p


def both(client, params, X, y, chunks, rounds=6, weight=None, evals_data=None):
    """(single-machine model, Dask model) on the same rows and costs."""
    dtrain = cbudget.Dataset(X, y, weight=weight, **COSTS)
    ddata = DaskDataset(client, da.from_array(X, chunks=(chunks, N_FEATURES)),
                        da.from_array(y, chunks=chunks), **COSTS,
                        weight=None if weight is None else da.from_array(weight, chunks=chunks))
    local = cbudget.train(params, dtrain, rounds)
    return local, train(client, params, ddata, rounds)


STRUCTURE = ("left", "right", "feature", "bin_threshold", "default_left", "n_samples",
             "new_acquisitions", "depth")


@pytest.mark.parametrize("algorithm", BOOSTERS)
@pytest.mark.parametrize("task", ["regression", "binary", "multiclass"])
def test_one_partition_trains_the_single_machine_model_bit_for_bit(dask_client, algorithm,
                                                                   task):
    X, y = make_data(task)
    local, remote = both(dask_client, params_for(algorithm, task), X, y, chunks=N_ROWS)
    assert len(remote.trees) == len(local.trees) > 0
    assert sum(tree.shape[0] for tree in local.trees) > len(local.trees)   # trees split
    for ours, theirs in zip(remote.trees, local.trees):
        assert ours.tobytes() == theirs.tobytes()
    assert remote.summary["train_cost_per_iteration"] == local.summary["train_cost_per_iteration"]
    assert np.array_equal(remote.predict(X), local.predict(X))


@pytest.mark.parametrize("algorithm", BOOSTERS)
@pytest.mark.parametrize("task", ["regression", "binary", "multiclass"])
def test_several_partitions_grow_the_same_trees_up_to_summation_order(dask_client, algorithm,
                                                                      task):
    X, y = make_data(task, seed=1)
    local, remote = both(dask_client, params_for(algorithm, task), X, y, chunks=350)
    assert len(remote.trees) == len(local.trees)
    for ours, theirs in zip(remote.trees, local.trees):
        for field in STRUCTURE:
            assert np.array_equal(ours[field], theirs[field]), field
        np.testing.assert_allclose(ours["value"], theirs["value"], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(remote.predict(X), local.predict(X), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(remote.predict_cost(X), local.predict_cost(X))
    np.testing.assert_allclose(remote.summary["train_cost_per_iteration"],
                               local.summary["train_cost_per_iteration"], rtol=1e-12)


@pytest.mark.parametrize("algorithm", BOOSTERS)
def test_features_of_few_bins_sum_packed_blocks_to_the_local_trees(dask_client, algorithm):
    """Features of 2 to 6 values beside wide ones: the workers send their histogram
    blocks without the bins no feature has, and grow the single-machine trees."""
    X, y = make_data("binary", seed=8)
    X[:, 1] = np.round(X[:, 1])           # about 6 values
    X[:, 4] = X[:, 4] > 0                 # 2 values
    local, remote = both(dask_client, params_for(algorithm, "binary"), X, y, chunks=350)
    for ours, theirs in zip(remote.trees, local.trees):
        for field in STRUCTURE:
            assert np.array_equal(ours[field], theirs[field]), field
    assert any(1 in tree["feature"][tree["left"] != -1] for tree in local.trees)


def fail_in_start_round():
    """Run on one worker: its next round fails there."""
    from cbudget.dask import training

    def start_round(self, iteration):
        raise ValueError("this worker's own failure")
    training.WorkerShard._saved_start_round = training.WorkerShard.start_round
    training.WorkerShard.start_round = start_round


def restore_start_round():
    from cbudget.dask import training
    saved = getattr(training.WorkerShard, "_saved_start_round", None)
    if saved is not None:
        training.WorkerShard.start_round = saved


def test_a_failure_on_a_worker_names_it_and_its_error_not_its_peers(dask_client):
    """The peers of the failing worker fail too (their sums lose it), but the error is
    the failing worker's own, and no worker waits for the timeout."""
    X, y = make_data("binary")
    ddata = DaskDataset(dask_client, da.from_array(X, chunks=(600, N_FEATURES)),
                        da.from_array(y, chunks=600))
    failing = list(ddata.placement())[-1]
    dask_client.run(fail_in_start_round, workers=[failing])
    try:
        with pytest.raises(RuntimeError, match="this worker's own failure") as failure:
            train(dask_client, params_for("gbdt", "binary"), ddata, 3, timeout=60)
        assert failing in str(failure.value)
    finally:
        dask_client.run(restore_start_round)
    assert len(train(dask_client, params_for("gbdt", "binary"), ddata, 2).trees) == 2


def test_subsampled_rows_are_the_same_and_out_of_bag_rows_are_charged(dask_client):
    """subsample < 1: each worker draws the whole data's sample for the round and keeps
    its rows; the rows left out are routed and charged, as single-machine training
    does (one partition: bit for bit)."""
    X, y = make_data("binary", seed=2)
    params = params_for("cegb", "binary", subsample=0.6, colsample_bytree=0.7, seed=3)
    local, remote = both(dask_client, params, X, y, chunks=N_ROWS)
    for ours, theirs in zip(remote.trees, local.trees):
        assert ours.tobytes() == theirs.tobytes()
    assert remote.summary["train_cost_per_iteration"] == local.summary["train_cost_per_iteration"]
    _, remote_parts = both(dask_client, params, X, y, chunks=500)
    for ours, theirs in zip(remote_parts.trees, local.trees):
        assert np.array_equal(ours["feature"], theirs["feature"])
        assert np.array_equal(ours["new_acquisitions"], theirs["new_acquisitions"])


def test_weights_evals_and_early_stopping_as_locally(dask_client):
    X, y = make_data("binary", seed=4)
    weight = np.random.default_rng(5).uniform(0.5, 2.0, size=N_ROWS)
    Xv, yv = make_data("binary", seed=6)
    params = params_for("cegb", "binary", eval_metric=["logloss"])
    dtrain = cbudget.Dataset(X, y, weight=weight, **COSTS)
    local_log, remote_log = {}, {}
    local = cbudget.train(params, dtrain, 30, evals=[(cbudget.Dataset(
        Xv, yv, reference=dtrain), "valid")], early_stopping_rounds=3, evals_result=local_log)
    ddata = DaskDataset(dask_client, da.from_array(X, chunks=(N_ROWS, N_FEATURES)),
                        da.from_array(y, chunks=N_ROWS),
                        weight=da.from_array(weight, chunks=N_ROWS), **COSTS)
    remote = train(dask_client, params, ddata, 30, evals=[(cbudget.Dataset(
        Xv, yv, reference=ddata.reference), "valid")], early_stopping_rounds=3,
        evals_result=remote_log)
    assert remote_log == local_log
    assert remote.best_iteration == local.best_iteration
    assert remote.summary == local.summary


def test_rows_of_weight_zero_are_no_training_rows_as_locally(dask_client):
    """Rows of weight 0 place no bin edge and count nowhere (min_data_in_leaf, CEGB's
    acquisitions): one partition trains the single-machine model bit for bit, and that
    is the model without those rows."""
    X, y = make_data("binary", seed=7)
    weight = np.ones(N_ROWS)
    weight[np.random.default_rng(8).random(N_ROWS) < 0.3] = 0.0
    X[weight == 0] += 1000.0
    params = params_for("cegb", "binary")
    local, remote = both(dask_client, params, X, y, chunks=N_ROWS, weight=weight)
    for ours, theirs in zip(remote.trees, local.trees):
        assert ours.tobytes() == theirs.tobytes()
    kept = weight > 0
    clean = cbudget.train(params, cbudget.Dataset(X[kept], y[kept], **COSTS), 6)
    np.testing.assert_array_equal(remote.predict(X), clean.predict(X))


def test_dask_dataframe_input_keeps_the_column_names(dask_client):
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    X, y = make_data("regression", seed=7)
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(N_FEATURES)])
    frame["target"] = y
    ddf = dd.from_pandas(frame, npartitions=1)
    ddata = DaskDataset(dask_client, ddf[[f"f{i}" for i in range(N_FEATURES)]],
                        ddf["target"], **COSTS)
    params = params_for("greedy_miser", "regression")
    remote = train(dask_client, params, ddata, 4)
    local = cbudget.train(params, cbudget.Dataset(frame.drop(columns="target"), y, **COSTS), 4)
    assert remote.feature_names == local.feature_names
    for ours, theirs in zip(remote.trees, local.trees):
        assert ours.tobytes() == theirs.tobytes()


def test_log_link_objectives_train_as_locally(dask_client):
    X, y = make_data("regression")
    counts = np.round(np.exp(0.3 * y))
    local, distributed_model = both(dask_client, params_for("gbdt", "regression",
                                                            objective="count:poisson"),
                                    X, counts, 600)
    assert distributed_model.objective == "count:poisson"
    np.testing.assert_allclose(distributed_model.predict(X), local.predict(X), rtol=1e-9)


def test_clear_errors(dask_client):
    X, y = make_data("binary")
    ddata = DaskDataset(dask_client, da.from_array(X, chunks=(600, N_FEATURES)),
                        da.from_array(y, chunks=600))
    with pytest.raises(ValueError, match="not data-parallel"):
        train(dask_client, {"algorithm": "budget_rf"}, ddata, 2)
    with pytest.raises(ValueError, match="unknown parameter"):
        train(dask_client, {"algorithm": "cegb", "not_a_param": 1}, ddata, 2)
    with pytest.raises(TypeError, match="DaskDataset"):
        train(dask_client, {}, cbudget.Dataset(X, y), 2)
    for timeout in (0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="timeout must be a positive number"):
            train(dask_client, {}, ddata, 2, timeout=timeout)
    for objective in ("reg:absoluteerror", "reg:quantileerror"):    # leaves re-fitted
        with pytest.raises(ValueError, match="re-fits each leaf to a quantile"):
            train(dask_client, {"objective": objective}, ddata, 2)
    with pytest.raises(TypeError, match="Dask array or DataFrame"):
        DaskDataset(dask_client, X, da.from_array(y, chunks=600))
    with pytest.raises(ValueError, match="partitioned alike"):
        DaskDataset(dask_client, da.from_array(X, chunks=(600, N_FEATURES)),
                    da.from_array(y, chunks=400))
    bad = y.copy()
    bad[3] = np.nan
    with pytest.raises(ValueError, match="label"):
        DaskDataset(dask_client, da.from_array(X, chunks=(600, N_FEATURES)),
                    da.from_array(bad, chunks=600))
    with pytest.raises(ValueError, match="feature_costs"):
        DaskDataset(dask_client, da.from_array(X, chunks=(600, N_FEATURES)),
                    da.from_array(y, chunks=600), feature_costs=[-1.0] * N_FEATURES)


def test_three_workers_fold_the_third_in_and_grow_the_local_trees():
    """Its own cluster of 3 workers (not a power of two: the third folds its sums into
    the first): the same trees as one machine, on 6 partitions."""
    from distributed import Client, LocalCluster
    with LocalCluster(n_workers=3, threads_per_worker=1, dashboard_address=":0",
                      silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
        X, y = make_data("regression", seed=9)
        local, remote = both(client, params_for("cegb", "regression"), X, y, chunks=200,
                             rounds=4)
        ddata = DaskDataset(client, da.from_array(X, chunks=(200, N_FEATURES)),
                            da.from_array(y, chunks=200))
        assert len(ddata.placement()) == 3
    for ours, theirs in zip(remote.trees, local.trees):
        for field in STRUCTURE:
            assert np.array_equal(ours[field], theirs[field]), field
        np.testing.assert_allclose(ours["value"], theirs["value"], rtol=1e-9, atol=1e-12)


class KillWorker(cbudget.TrainingCallback):
    """Kills a worker process after the first round."""

    def __init__(self, pid):
        self.pid = pid

    def after_iteration(self, model, epoch, evals_log):
        if epoch == 0:
            os.kill(self.pid, 9)
        return False


def test_a_lost_worker_is_an_error_naming_it_not_a_hang():
    """Its own cluster: the session's keeps both workers."""
    from distributed import Client, LocalCluster
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0",
                      silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
        X, y = make_data("binary")
        ddata = DaskDataset(client, da.from_array(X, chunks=(600, N_FEATURES)),
                            da.from_array(y, chunks=600))
        worker, indices = next(iter(ddata.placement().items()))
        pid = client.run(os.getpid, workers=[worker])[worker]
        with pytest.raises(RuntimeError, match="worker") as failure:
            train(client, params_for("gbdt", "binary"), ddata, 5,
                  callbacks=[KillWorker(pid)])
        assert "tcp://" in str(failure.value)
