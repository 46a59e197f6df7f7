"""cbudget.dask with categorical features: a DaskDataset's levels and bins equal those of
a cbudget.Dataset of all the rows, and cbudget.dask.train grows the single-machine
model's categorical splits from the workers' histograms (the session's ``dask_client``:
two single-threaded worker processes)."""
import pickle

import numpy as np
import pytest

import cbudget
import cbudget.dataset

distributed = pytest.importorskip("distributed")
dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
pd = pytest.importorskip("pandas")
from small_models import BOOSTERS  # noqa: E402

from cbudget.dask import DaskDataset, train  # noqa: E402

N_ROWS = 1500
STATES = [f"s{i:02d}" for i in range(30)]
COSTS = dict(feature_costs=[1.0, 2.0, 3.0, 4.0, 1.0], coupled_costs=[0.0, 5.0, 0.0, 0.0, 0.0])


def make_frame(seed=0, n=N_ROWS):
    """Strings (30 levels, some missing: many-vs-many splits), pandas categories in
    their own order (one-vs-rest), a number, integer codes and two strings; the
    label depends on all of them clearly."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "state": rng.choice(STATES, n),
        "grade": pd.Categorical(rng.choice(list("ABC"), n), categories=list("CBA")),
        "x": rng.normal(size=n),
        "code": rng.integers(0, 6, n).astype(float),
        "sex": rng.choice(["M", "F"], n)})
    frame.loc[rng.random(n) < 0.05, "state"] = None
    effect = dict(zip(STATES, 2 * rng.normal(size=len(STATES))))
    signal = (frame.state.map(effect).fillna(0.0).to_numpy() + 1.5 * (frame.grade == "A")
              + frame.x + 0.8 * (frame.code.to_numpy() % 3) + (frame.sex == "M"))
    return frame, np.asarray(signal + 0.3 * rng.normal(size=n), dtype=float)


def params_for(algorithm, n_jobs=1, **extra):
    p = dict(algorithm=algorithm, objective="reg:squarederror", num_leaves=8, verbosity=0,
             min_data_in_leaf=10, n_jobs=n_jobs)
    if algorithm != "gbdt":
        p["cost_tradeoff"] = 0.002 if algorithm == "cegb" else 0.05
    p.update(extra)
    return p


def dask_data(client, frame, y, npartitions, **kwargs):
    return DaskDataset(client, dd.from_pandas(frame, npartitions=npartitions, sort=False),
                       dd.from_pandas(pd.Series(y), npartitions=npartitions, sort=False),
                       **kwargs)


def assert_same_trees_up_to_mirroring(ours, theirs, X):
    """The same trees up to the order of floating-point sums: each tree sends the rows
    to the same leaves (node ids aside: a split and its mirror -- a two-level column's
    one level or the other to the left -- have equal gains, which rounding decides),
    with the same values, on the same features."""
    assert len(ours.trees) == len(theirs.trees)
    for a, b in zip(ours.trees, theirs.trees):
        assert sorted(a["feature"]) == sorted(b["feature"])
    leaves = ours.predict(X, pred_leaf=True), theirs.predict(X, pred_leaf=True)
    for a, b in zip(leaves[0].T, leaves[1].T):
        pairs = np.unique(np.column_stack([a, b]), axis=0)
        assert pairs.shape[0] == np.unique(a).size == np.unique(b).size
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(ours.predict_cost(X), theirs.predict_cost(X))


def assert_same_reference(ours, theirs):
    assert ours.categories == theirs.categories
    assert ours.categorical_bin_codes.keys() == theirs.categorical_bin_codes.keys()
    for f, codes in theirs.categorical_bin_codes.items():
        np.testing.assert_array_equal(ours.categorical_bin_codes[f], codes)
    for a, b in zip(ours.bin_edges, theirs.bin_edges):
        np.testing.assert_array_equal(a, b)


@pytest.mark.slow
def test_levels_and_bins_are_those_of_a_dataset_of_all_the_rows(dask_client, monkeypatch):
    """Partitions that hold different levels (rows sorted by level), pandas categories
    known to Dask and categories each partition found for itself, named integer codes:
    the reference's levels, bins and edges are a cbudget.Dataset's of the computed
    frame, also when the bins are fitted on a sample of the rows."""
    frame, y = make_frame(seed=1)
    frame = frame.sort_values("state", ascending=False).reset_index(drop=True)
    lazy = dd.from_pandas(frame, npartitions=4, sort=False)
    unknown = lazy.astype({"state": "category"})    # each partition: its own levels
    assert not unknown.state.cat.known
    label = dd.from_pandas(pd.Series(y), npartitions=4, sort=False)
    monkeypatch.setattr(cbudget.dataset, "BINNING_SUBSAMPLE", 700)   # bins on a sample
    for data in (lazy, unknown):
        ddata = DaskDataset(dask_client, data, label, categorical_feature=[
            "state", "grade", "code", "sex"])
        local = cbudget.Dataset(data.compute(), y, categorical_feature=[
            "state", "grade", "code", "sex"])
        assert_same_reference(ddata.reference, local)
        assert sorted(ddata.reference.categories.levels_of(0)) == STATES  # all levels
        assert ddata.reference.categories.levels_of(1) == list("CBA")
        assert ddata.reference.categories.levels_of(3) is None
    # "auto": the category and string columns
    auto = DaskDataset(dask_client, unknown, label)
    assert_same_reference(auto.reference, cbudget.Dataset(unknown.compute(), y))
    assert auto.reference.categorical_features.tolist() == [0, 1, 4]
    # (the partitions' categories in order of appearance, as Dask concatenates them)
    assert auto.reference.categories.levels_of(0) != STATES


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", BOOSTERS)
@pytest.mark.parametrize("n_jobs", [1, 2])
def test_training_grows_the_single_machine_categorical_splits(dask_client, algorithm,
                                                              n_jobs):
    """One partition: the single-machine model bit for bit; three: the same trees up
    to the order of floating-point sums."""
    frame, y = make_frame(seed=2)
    params = params_for(algorithm, n_jobs)
    local = cbudget.train(params, cbudget.Dataset(frame, y, **COSTS), 6)
    assert sum(int(tree["categorical"].sum()) for tree in local.trees) > 6
    one = train(dask_client, params, dask_data(dask_client, frame, y, 1, **COSTS), 6)
    for ours, theirs in zip(one.trees, local.trees):
        assert ours.tobytes() == theirs.tobytes()
    np.testing.assert_array_equal(one.cat_words, local.cat_words)
    assert one.summary["train_cost_per_iteration"] == local.summary["train_cost_per_iteration"]
    three = train(dask_client, params, dask_data(dask_client, frame, y, 3, **COSTS), 6)
    assert three.categories == local.categories
    frame.loc[:20, "state"] = "unseen"        # prediction maps levels by the model's
    assert_same_trees_up_to_mirroring(three, local, frame)
    np.testing.assert_allclose(three.summary["train_cost_per_iteration"],
                               local.summary["train_cost_per_iteration"], rtol=1e-12)


@pytest.mark.slow
def test_multiclass_on_a_dask_array_of_codes(dask_client):
    """A Dask array of integer codes with categorical_feature=[...] (negative codes
    missing), multiclass, several partitions: the single-machine trees."""
    frame, y = make_frame(seed=3)
    X = np.column_stack([frame.code, frame.x, pd.factorize(frame.state)[0]])  # -1: None
    label = np.digitize(y, np.quantile(y, [0.33, 0.66])).astype(float)
    params = params_for("cegb", objective="multi:softprob", num_class=3)
    local = cbudget.train(params, cbudget.Dataset(X, label, categorical_feature=[0, 2]), 4)
    ddata = DaskDataset(dask_client, da.from_array(X, chunks=(500, 3)),
                        da.from_array(label, chunks=500), categorical_feature=[0, 2])
    assert_same_reference(ddata.reference, cbudget.Dataset(X, label, categorical_feature=[0, 2]))
    remote = train(dask_client, params, ddata, 4)
    assert_same_trees_up_to_mirroring(remote, local, X)


@pytest.mark.slow
def test_evals_on_a_frame_with_an_unseen_level_and_the_saved_model(dask_client, tmp_path):
    frame, y = make_frame(seed=4)
    valid, yv = make_frame(seed=5, n=400)
    valid.loc[:30, "state"] = "unseen"
    params = params_for("cegb", eval_metric=["rmse"])
    dtrain = cbudget.Dataset(frame, y, **COSTS)
    local_log, remote_log = {}, {}
    local = cbudget.train(params, dtrain, 8, evals=[(cbudget.Dataset(
        valid, yv, reference=dtrain), "valid")], evals_result=local_log)
    ddata = dask_data(dask_client, frame, y, 1, **COSTS)
    remote = train(dask_client, params, ddata, 8, evals=[(cbudget.Dataset(
        valid, yv, reference=ddata.reference), "valid")], evals_result=remote_log)
    assert remote_log == local_log
    path = tmp_path / "model.json"
    remote.save_model(path)
    loaded = cbudget.load_model(path)
    assert loaded.categories == local.categories
    np.testing.assert_array_equal(loaded.predict(valid), local.predict(valid))


@pytest.mark.slow
def test_clear_errors_for_categorical_columns(dask_client):
    frame, y = make_frame(seed=6, n=300)
    label = dd.from_pandas(pd.Series(y), npartitions=2, sort=False)
    with pytest.raises(ValueError, match="no column named 'nope'"):
        DaskDataset(dask_client, dd.from_pandas(frame, npartitions=2, sort=False), label,
                    categorical_feature=["nope"])
    with pytest.raises(TypeError, match="'sex'.*not a categorical feature"):
        DaskDataset(dask_client, dd.from_pandas(frame, npartitions=2, sort=False), label,
                    categorical_feature=["state", "grade"])
    mixed = frame[["sex", "x"]].astype({"sex": object})
    mixed.loc[150:, "sex"] = 1         # strings in one partition, numbers in the other
    with dask.config.set({"dataframe.convert-string": False}):   # objects stay objects
        lazy = dd.from_pandas(mixed, npartitions=2, sort=False)
    with pytest.raises(TypeError, match="'sex' mixes strings and numbers"):
        DaskDataset(dask_client, lazy, label, categorical_feature=["sex"])
    numbers = dd.from_pandas(frame[["x", "code"]], npartitions=2, sort=False)
    for bad in (frame.sex, frame.grade, pd.Series(pd.Categorical(frame.code))):
        with pytest.raises(TypeError, match="label has dtype .*: labels are numbers"):
            DaskDataset(dask_client, numbers, dd.from_pandas(bad, npartitions=2, sort=False))
    codes = np.column_stack([frame.x, frame.code + 0.5])
    with pytest.raises(ValueError, match="'column 1' holds codes that are not integers"):
        DaskDataset(dask_client, da.from_array(codes, chunks=(150, 2)),
                    da.from_array(y, chunks=150), categorical_feature=[1])


def test_merge_levels_orders_them_as_a_dataset_of_all_the_rows():
    """Without a cluster: a category column's categories in order of first appearance
    over the partitions (as Dask concatenates them), another column's sorted."""
    from cbudget.dask.training import merge_levels
    assert merge_levels([["y", "z"], ["w", "y"]], "c", True) == ["y", "z", "w"]
    assert merge_levels([["y", "z"], ["w", "y"]], "c", False) == ["w", "y", "z"]
    assert merge_levels([[3, 1], [2]], "c", False) == [1, 2, 3]
    with pytest.raises(TypeError, match="'c' mixes strings and numbers"):
        merge_levels([["a"], [1]], "c", False)


@pytest.mark.parametrize("algorithm", BOOSTERS)
def test_remote_growth_in_process_splits_categories_as_local_growth(algorithm):
    """Without a cluster: a worker's tree grower (``grow_remote``) sends each
    categorical split's bins to its row grower (``split_node(cat_bins=)``), whose rows
    are all the training rows (one worker: nothing summed): the first tree is the
    single-machine one."""
    from cbudget.algorithms.boosting import initial_base_score
    from cbudget.dask.collective import peer_token
    from cbudget.dask.training import WorkerShard
    from cbudget.training import set_up_training

    frame, y = make_frame(seed=7, n=600)
    params = params_for(algorithm)
    dtrain = cbudget.Dataset(frame, y, **COSTS)
    local = cbudget.train(params, dtrain, 1).trees[0]
    assert local["categorical"].any()
    _, p, _, setup = set_up_training(params, dtrain, 1, None, False, None, None)
    reference = dtrain.without_rows()
    base_score = initial_base_score(p, setup.objective, y, None)
    shard = WorkerShard(p, reference, base_score, y.size, [(0, y.size)], 0, 1,
                        peer_token(), 10.0, (dtrain.data, y, None))
    shard.connect([shard.listen_address()], ["here"])
    pickled, *_ = shard.train_round(0, p.get("cost_tradeoff"))
    (tree,) = pickle.loads(pickled)       # as the driver receives it
    for field in ("left", "right", "feature", "default_left", "n_samples", "categorical",
                  "cat_bins_at", "value"):
        np.testing.assert_array_equal(tree[field], local[field], err_msg=field)
    np.testing.assert_array_equal(tree.cat_bin_words, local.cat_bin_words)
    with pytest.raises(ValueError, match="categorical here: a split on it needs its cat_bins"):
        shard.grower.split_node(0, 0, 0, False, 1, False)
