"""Tests of cbudget.Dataset: input conversion, labels/weights, costs and groups, binning."""
import numpy as np
import pytest

import cbudget
from cbudget import Dataset


def make_X(n=200, m=4, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, m))


def reference_bins(X, ds):
    """Bins by the documented rule: a value x falls in bin #(edges < x); NaN -> missing."""
    out = np.empty(X.shape, dtype=np.int64)
    for f in range(X.shape[1]):
        col = np.asarray(X[:, f], dtype=np.float64)
        out[:, f] = np.searchsorted(ds.bin_edges[f], col, side="left")
        out[np.isnan(col), f] = ds.missing_bin
    return out


# --------------------------------------------------------------------------------------
# input conversion
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("order", ["C", "F"])
def test_numpy_float_dtypes_and_orders(dtype, order):
    X = np.asarray(make_X(), dtype=dtype, order=order)
    y = np.arange(X.shape[0], dtype=np.float64)
    ds = Dataset(X, y)
    assert ds.num_data() == 200 and ds.num_feature() == 4
    assert ds.data.dtype == dtype
    assert ds.data.flags.c_contiguous
    np.testing.assert_array_equal(ds.data, X)
    assert ds.binned.dtype == np.uint8
    assert ds.binned.shape == X.shape
    assert ds.feature_names == ["f0", "f1", "f2", "f3"]
    np.testing.assert_array_equal(ds.binned, reference_bins(X, ds))
    np.testing.assert_array_equal(ds.get_label(), y)
    assert ds.get_weight() is None


def test_c_and_f_order_give_same_bins():
    X = make_X()
    a = Dataset(np.ascontiguousarray(X))
    b = Dataset(np.asfortranarray(X))
    for ea, eb in zip(a.bin_edges, b.bin_edges):
        np.testing.assert_array_equal(ea, eb)
    np.testing.assert_array_equal(a.binned, b.binned)


def test_int_input_is_converted():
    rng = np.random.default_rng(1)
    Xi = rng.integers(-5, 6, size=(100, 3))
    ds = Dataset(Xi, np.zeros(100))
    assert ds.data.dtype.kind == "f"
    np.testing.assert_array_equal(ds.data, Xi.astype(np.float64))
    ref = Dataset(Xi.astype(np.float64), np.zeros(100))
    np.testing.assert_array_equal(ds.binned, ref.binned)
    # 11 distinct integers per column -> 11 value bins
    assert list(ds.n_value_bins) == [np.unique(Xi[:, f]).size for f in range(3)]


def test_bool_and_list_input_are_converted():
    Xb = np.array([[True, False], [False, True], [True, True]])
    ds = Dataset(Xb)
    assert ds.data.dtype.kind == "f"
    np.testing.assert_array_equal(ds.data, Xb.astype(float))
    ds2 = Dataset([[1, 2], [3, 4], [5, 6]], [0, 1, 0])
    np.testing.assert_array_equal(ds2.data, [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    np.testing.assert_array_equal(ds2.label, [0.0, 1.0, 0.0])


def test_pandas_dataframe_feature_names():
    pd = pytest.importorskip("pandas")
    X = make_X(50, 3)
    df = pd.DataFrame(X, columns=["alpha", "beta", "gamma"])
    df["delta"] = (X[:, 0] > 0)  # bool column is numeric
    df["eps"] = np.arange(50)  # int column
    ds = Dataset(df, pd.Series(np.arange(50.0)))
    assert ds.feature_names == ["alpha", "beta", "gamma", "delta", "eps"]
    np.testing.assert_array_equal(ds.data[:, :3], X)
    np.testing.assert_array_equal(ds.data[:, 3], (X[:, 0] > 0).astype(float))
    np.testing.assert_array_equal(ds.label, np.arange(50.0))
    # explicit feature_names override the columns
    ds2 = Dataset(df, feature_names=list("abcde"))
    assert ds2.feature_names == list("abcde")


def test_pandas_nullable_column_gives_nan():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"a": pd.array([1, None, 3, 4], dtype="Int64"), "b": [1.0, 2.0, 3.0, 4.0]})
    ds = Dataset(df)
    assert np.isnan(ds.data[1, 0])
    assert ds.binned[1, 0] == ds.missing_bin


@pytest.mark.parametrize("bad", ["strings", "category", "object"])
def test_pandas_non_numeric_column_is_type_error(bad):
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"a": [1.0, 2.0, 3.0]})
    if bad == "strings":
        df["c"] = ["x", "y", "z"]
    elif bad == "category":
        df["c"] = pd.Categorical(["x", "y", "x"])
    else:
        df["c"] = pd.Series([1, "y", 2.0], dtype=object)
    # not categorical (categorical_feature=[]): refused, naming the column
    with pytest.raises(TypeError, match="'c'"):
        Dataset(df, categorical_feature=[])


def test_non_numeric_numpy_is_type_error():
    # not categorical: refused (by default such columns are categorical)
    with pytest.raises(TypeError, match="column 1 holds non-numeric"):
        Dataset(np.array([[1, "b"], [2, "d"]], dtype=object), categorical_feature=[])
    with pytest.raises(TypeError, match="unsupported dtype"):
        Dataset(np.array([["a", "b"], ["c", "d"]]), categorical_feature=[])
    with pytest.raises(TypeError, match="unsupported dtype"):
        Dataset(np.ones((3, 2), dtype=complex))


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
def test_sparse_gives_same_bins_as_dense(fmt):
    sp = pytest.importorskip("scipy.sparse")
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 5))
    X[rng.random(X.shape) < 0.6] = 0.0  # mostly zeros
    X[5, 2] = np.nan  # an explicit NaN stays missing
    S = sp.csr_matrix(X).asformat(fmt)  # the NaN is an explicitly stored entry
    assert S.nnz < X.size
    dense = Dataset(X, np.zeros(300))
    sparse = Dataset(S, np.zeros(300))
    np.testing.assert_array_equal(sparse.data, dense.data)
    for a, b in zip(sparse.bin_edges, dense.bin_edges):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(sparse.binned, dense.binned)
    assert sparse.binned[5, 2] == sparse.missing_bin
    # implicit zeros are zeros, not missing values
    zero_rows = np.flatnonzero(X[:, 0] == 0.0)
    assert np.all(sparse.binned[zero_rows, 0] != sparse.missing_bin)


# --------------------------------------------------------------------------------------
# costs and groups
# --------------------------------------------------------------------------------------
NAMES = ["a", "b", "c", "d"]


def named_dataset(**kwargs):
    return Dataset(make_X(40, 4), np.zeros(40), feature_names=NAMES, **kwargs)


def test_default_costs_are_zero():
    cm = named_dataset().cost_model
    assert isinstance(cm, cbudget.CostModel)
    np.testing.assert_array_equal(cm.feature_costs, np.zeros(4))
    np.testing.assert_array_equal(cm.coupled_costs, np.zeros(4))
    np.testing.assert_array_equal(cm.feature_group, [-1, -1, -1, -1])
    assert cm.n_groups == 0 and cm.split_cost == 0 and cm.tree_cost == 0
    assert cm.is_zero()


def test_feature_costs_array_and_dict_agree():
    arr = named_dataset(feature_costs=[1.0, 0.0, 2.5, 4.0]).cost_model
    by_name = named_dataset(feature_costs={"a": 1, "b": 0, "c": 2.5, "d": 4}).cost_model
    by_index = named_dataset(feature_costs={0: 1, 1: 0, 2: 2.5, 3: 4}).cost_model
    with_default = named_dataset(feature_costs={"a": 1, "c": 2.5, "d": 4},
                                 default_cost=0).cost_model
    for cm in (arr, by_name, by_index, with_default):
        np.testing.assert_array_equal(cm.feature_costs, [1.0, 0.0, 2.5, 4.0])
        assert cm.feature_costs.dtype == np.float64
    assert not arr.is_zero()


def test_a_cost_dict_names_every_feature_or_gives_a_default():
    """A forgotten expensive feature must not become free silently."""
    with pytest.raises(ValueError, match=r"does not name 2 of the 4 features: 'b', 'd'"):
        named_dataset(feature_costs={"a": 1, "c": 2.5})
    cm = named_dataset(feature_costs={"c": 2.5}, default_cost=3).cost_model
    np.testing.assert_array_equal(cm.feature_costs, [3.0, 3.0, 2.5, 3.0])
    # coupled costs are extras: a dict names the features that have one
    cm = named_dataset(feature_costs=[1, 1, 1, 1], coupled_costs={"b": 7}).cost_model
    np.testing.assert_array_equal(cm.coupled_costs, [0, 7, 0, 0])
    for bad in (-1, float("nan"), "x"):
        with pytest.raises((ValueError, TypeError), match="default_cost"):
            named_dataset(feature_costs={"c": 2.5}, default_cost=bad)
    with pytest.raises(ValueError, match="default_cost applies to a dict"):
        named_dataset(feature_costs=[1, 1, 1, 1], default_cost=2)


def test_feature_costs_array_is_copied():
    costs = np.array([1.0, 2.0, 3.0, 4.0])
    cm = named_dataset(feature_costs=costs).cost_model
    costs[0] = 100.0
    assert cm.feature_costs[0] == 1.0


def test_coupled_split_tree_costs():
    cm = named_dataset(coupled_costs={"b": 7.0}, split_cost=0.25, tree_cost=1.5).cost_model
    np.testing.assert_array_equal(cm.coupled_costs, [0, 7.0, 0, 0])
    assert cm.split_cost == 0.25 and cm.tree_cost == 1.5
    assert cm.coupled_cost([0, 1]) == 7.0 and cm.coupled_cost([2, 3]) == 0.0


def test_cost_groups_dict_with_group_costs_dict_and_array():
    groups = {"sensor": ["a", "c"], "db": ["d"]}
    cm1 = named_dataset(cost_groups=groups, group_costs={"sensor": 5.0, "db": 2.0}).cost_model
    cm2 = named_dataset(cost_groups=groups, group_costs=[5.0, 2.0]).cost_model
    for cm in (cm1, cm2):
        assert cm.group_names == ["sensor", "db"]
        np.testing.assert_array_equal(cm.feature_group, [0, -1, 0, 1])
        np.testing.assert_array_equal(cm.group_costs, [5.0, 2.0])
        assert cm.n_groups == 2
    # acquisition cost of a set of features: each group once
    cm = named_dataset(feature_costs=[1, 2, 3, 4], cost_groups=groups,
                       group_costs=[5.0, 2.0]).cost_model
    assert cm.acquisition_cost([0, 2]) == 1 + 3 + 5
    assert cm.acquisition_cost([0, 0, 1]) == 1 + 2 + 5
    assert cm.acquisition_cost([3]) == 4 + 2
    assert cm.acquisition_cost([0, 1, 2, 3]) == 1 + 2 + 3 + 4 + 5 + 2


def test_cost_groups_list_with_indices():
    cm = named_dataset(cost_groups=[[0, 1], ["d"]], group_costs=[3.0, 1.0]).cost_model
    np.testing.assert_array_equal(cm.feature_group, [0, 0, -1, 1])
    assert len(cm.group_names) == 2
    np.testing.assert_array_equal(cm.group_costs, [3.0, 1.0])
    # list groups are named, and can be addressed by that name in a dict of costs
    cm2 = named_dataset(cost_groups=[[0, 1], ["d"]],
                        group_costs={cm.group_names[1]: 1.0, cm.group_names[0]: 3.0}).cost_model
    np.testing.assert_array_equal(cm2.group_costs, [3.0, 1.0])


def test_cost_model_dict_round_trip():
    cm = named_dataset(feature_costs=[1, 2, 3, 4], cost_groups={"g": ["a", "b"]},
                       group_costs=[5.0], coupled_costs=[0, 0, 1, 0], split_cost=0.1,
                       tree_cost=0.2).cost_model
    back = cbudget.CostModel.from_dict(cm.to_dict(), 4)
    assert back.to_dict() == cm.to_dict()


# --------------------------------------------------------------------------------------
# bad input: clear ValueError / TypeError
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("data", [np.zeros(5), np.zeros((2, 3, 4))], ids=["1d", "3d"])
def test_data_must_be_2d(data):
    with pytest.raises(ValueError, match="2-D"):
        Dataset(data)


@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (0, 0)])
def test_empty_data(shape):
    with pytest.raises(ValueError, match="empty"):
        Dataset(np.zeros(shape))


def test_label_length_mismatch():
    with pytest.raises(ValueError, match="label has 3 entries but data has 5 rows"):
        Dataset(np.zeros((5, 2)), [1, 2, 3])


def test_label_2d_column_accepted_other_2d_rejected():
    ds = Dataset(np.zeros((3, 2)), np.array([[1.0], [2.0], [3.0]]))
    np.testing.assert_array_equal(ds.label, [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="label must be 1-D"):
        Dataset(np.zeros((3, 2)), np.zeros((3, 2)))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_label_nan_inf(bad):
    y = np.zeros(5)
    y[3] = bad
    with pytest.raises(ValueError, match=r"label contains NaN or inf \(first at row 3"):
        Dataset(np.zeros((5, 2)), y)


def test_label_not_numeric():
    with pytest.raises(TypeError, match="label must be numeric"):
        Dataset(np.zeros((3, 2)), ["a", "b", "c"])


def test_weight_errors():
    X, y = np.zeros((4, 2)), np.zeros(4)
    with pytest.raises(ValueError, match="weight contains NaN"):
        Dataset(X, y, weight=[1.0, np.nan, 1.0, 1.0])
    with pytest.raises(ValueError, match="weight must be >= 0"):
        Dataset(X, y, weight=[1.0, -0.5, 1.0, 1.0])
    with pytest.raises(ValueError, match="weight has 3 entries"):
        Dataset(X, y, weight=[1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="weight sums to 0"):
        Dataset(X, y, weight=np.zeros(4))
    ds = Dataset(X, y, weight=[0.0, 1.0, 2.0, 3.0])
    np.testing.assert_array_equal(ds.get_weight(), [0.0, 1.0, 2.0, 3.0])


@pytest.mark.parametrize("bad", [-1.0, np.nan, np.inf])
def test_bad_feature_cost_array(bad):
    costs = [1.0, bad, 1.0, 1.0]
    with pytest.raises(ValueError, match="feature_costs must be"):
        named_dataset(feature_costs=costs)


@pytest.mark.parametrize("bad", [-1.0, np.nan, np.inf])
def test_bad_feature_cost_dict(bad):
    with pytest.raises(ValueError, match=r"feature_costs\['b'\] must be finite and >= 0"):
        named_dataset(feature_costs={"b": bad})


@pytest.mark.parametrize("bad", [-1.0, np.nan, np.inf])
def test_bad_coupled_and_group_costs(bad):
    with pytest.raises(ValueError, match="coupled_costs"):
        named_dataset(coupled_costs=[0.0, 0.0, bad, 0.0])
    with pytest.raises(ValueError, match="group_costs"):
        named_dataset(cost_groups={"g": ["a"]}, group_costs=[bad])
    with pytest.raises(ValueError, match="group_costs"):
        named_dataset(cost_groups={"g": ["a"]}, group_costs={"g": bad})


@pytest.mark.parametrize("name", ["split_cost", "tree_cost"])
def test_bad_split_tree_cost(name):
    with pytest.raises(ValueError, match=f"{name} must be finite and >= 0"):
        named_dataset(**{name: -0.5})
    with pytest.raises(ValueError, match=f"{name} must be finite and >= 0"):
        named_dataset(**{name: float("nan")})
    with pytest.raises(TypeError, match=f"{name} must be a real number"):
        named_dataset(**{name: "1"})


@pytest.mark.parametrize("costs", [[1.0, 2.0, 3.0], [1.0] * 5, [[1.0] * 4]])
def test_cost_array_wrong_length(costs):
    with pytest.raises(ValueError, match=r"one entry per feature \(4\)"):
        named_dataset(feature_costs=costs)


def test_cost_array_not_numeric():
    with pytest.raises(TypeError, match="feature_costs"):
        named_dataset(feature_costs=["x", "y", "z", "w"])


def test_unknown_feature_in_cost_dict():
    with pytest.raises(ValueError, match="unknown feature name 'zz'"):
        named_dataset(feature_costs={"a": 1.0, "zz": 2.0})
    with pytest.raises(ValueError, match="feature index 4 out of range"):
        named_dataset(feature_costs={4: 1.0})
    with pytest.raises(ValueError, match="unknown feature name 'zz'"):
        named_dataset(coupled_costs={"zz": 1.0})


def test_group_referencing_missing_feature():
    with pytest.raises(ValueError, match="cost group 'g'.*unknown feature name 'zz'"):
        named_dataset(cost_groups={"g": ["a", "zz"]}, group_costs=[1.0])
    with pytest.raises(ValueError, match="out of range"):
        named_dataset(cost_groups=[[0, 9]], group_costs=[1.0])


def test_feature_in_two_groups():
    with pytest.raises(ValueError, match="'b' is in two cost groups"):
        named_dataset(cost_groups={"g1": ["a", "b"], "g2": ["b", "c"]}, group_costs=[1, 1])
    with pytest.raises(ValueError, match="two cost groups"):
        named_dataset(cost_groups=[[0, 1], [1]], group_costs=[1, 1])


def test_group_costs_without_cost_groups():
    with pytest.raises(ValueError, match="group_costs given without cost_groups"):
        named_dataset(group_costs=[1.0])


def test_cost_groups_without_group_costs():
    with pytest.raises(ValueError, match="cost_groups given without group_costs"):
        named_dataset(cost_groups={"g": ["a"]})


def test_group_costs_wrong_length_or_unknown_group():
    with pytest.raises(ValueError, match="group_costs must have one entry"):
        named_dataset(cost_groups={"g": ["a"], "h": ["b"]}, group_costs=[1.0])
    with pytest.raises(ValueError, match="unknown cost group 'x'"):
        named_dataset(cost_groups={"g": ["a"]}, group_costs={"x": 1.0})


def test_bad_cost_groups_types():
    with pytest.raises(TypeError, match="cost_groups must be"):
        named_dataset(cost_groups="a", group_costs=[1.0])
    with pytest.raises(TypeError, match="must be a list of features"):
        named_dataset(cost_groups={"g": "a"}, group_costs=[1.0])
    with pytest.raises(ValueError, match="is empty"):
        named_dataset(cost_groups={"g": []}, group_costs=[1.0])


@pytest.mark.parametrize("max_bin", [1, 0, 65536, -3, 2.5, True, "16"])
def test_max_bin_out_of_range(max_bin):
    with pytest.raises(ValueError, match=r"max_bin must be an integer in \[2, 65535\]"):
        Dataset(make_X(), max_bin=max_bin)


@pytest.mark.parametrize("max_bin, dtype", [(255, np.uint8), (256, np.uint16),
                                            (65535, np.uint16)])
def test_binned_dtype_follows_the_bin_count(max_bin, dtype):
    """uint8 bins while NaN's bin (max_bin) fits them, uint16 beyond; validation data
    made with reference= and subsets keep the dtype."""
    X = make_X(300, 3)
    data = Dataset(X, max_bin=max_bin)
    assert data.binned.dtype == dtype and data.binned.flags.f_contiguous
    assert data.missing_bin == max_bin
    assert Dataset(X[:50], reference=data).binned.dtype == dtype
    assert data.subset(np.arange(10)).binned.dtype == dtype
    assert data.without_rows().binned.dtype == dtype


def test_with_binned_rows_trains_as_the_rows_it_was_binned_from():
    """A Dask worker's Dataset: bins without floats, the same model as the float rows."""
    X = make_X(300, 3)
    y = X[:, 0] + np.random.default_rng(1).normal(size=300)
    data = Dataset(X, y)
    binned = data.without_rows().with_binned_rows(data.bin_data(X), y)
    assert binned.num_data() == 300 and binned.num_feature() == 3
    assert binned.data.shape == (0, 3)          # no float copy kept
    assert np.array_equal(binned.binned, data.binned) and binned.label is not None
    with pytest.raises(ValueError, match="bins without their float rows"):
        cbudget.train({"verbosity": 0}, binned, 1)      # it needs the floats
    for bad in (data.bin_data(X)[:, :2], data.bin_data(X).astype(np.uint16), X):
        with pytest.raises(ValueError, match="binned must be a uint8 array of 3 columns"):
            data.with_binned_rows(bad, y)
    with pytest.raises(ValueError, match="label"):
        data.with_binned_rows(data.bin_data(X), y[:10])


def test_duplicate_feature_names():
    with pytest.raises(ValueError, match="feature_names must be unique"):
        Dataset(make_X(10, 3), feature_names=["a", "b", "a"])


def test_duplicate_dataframe_columns():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame(make_X(10, 2), columns=["a", "a"])
    with pytest.raises(ValueError, match="feature_names must be unique"):
        Dataset(df)


def test_feature_names_wrong_length():
    with pytest.raises(ValueError, match="feature_names has 2 names for 3 features"):
        Dataset(make_X(10, 3), feature_names=["a", "b"])


def test_reference_with_different_feature_count():
    train = Dataset(make_X(50, 4), np.zeros(50))
    with pytest.raises(ValueError, match="data has 3 features but the reference Dataset has 4"):
        Dataset(make_X(20, 3), np.zeros(20), reference=train)


@pytest.mark.parametrize("kwargs", [
    {"feature_costs": [1.0, 1.0, 1.0, 1.0]},
    {"coupled_costs": {"a": 1.0}},
    {"cost_groups": {"g": ["a"]}, "group_costs": [1.0]},
    {"split_cost": 1.0},
    {"tree_cost": 1.0},
])
def test_costs_with_reference_rejected(kwargs):
    train = named_dataset(feature_costs=[1, 2, 3, 4])
    with pytest.raises(ValueError, match="with reference"):
        Dataset(make_X(20, 4), np.zeros(20), reference=train, **kwargs)


def test_reference_must_be_dataset():
    with pytest.raises(TypeError, match="reference must be a cbudget.Dataset"):
        Dataset(make_X(20, 4), reference=make_X(20, 4))


def test_reference_with_different_feature_names():
    train = named_dataset()
    with pytest.raises(ValueError, match="feature names differ"):
        Dataset(make_X(20, 4), feature_names=["a", "b", "x", "d"], reference=train)


# Row limit (docs/architecture.md, "Limits"): training indexes rows and tree nodes with
# int32, so a Dataset takes at most 2**30 rows. Checked on the shape, before anything is
# converted or copied: zero-memory broadcast views of 2**31 rows are refused at once (a
# copy would be 48 GB).
@pytest.mark.parametrize("n_rows", [2**30 + 1, 2**31, 2**40])
def test_more_rows_than_training_takes_refused_before_copying(n_rows):
    from cbudget._core._types import MAX_ROWS
    assert MAX_ROWS == 2**30
    X = np.broadcast_to(np.zeros((1, 3)), (n_rows, 3))
    y = np.broadcast_to(0.0, (n_rows,))
    with pytest.raises(ValueError, match=r"at most 1073741824 \(2\*\*30\) rows"):
        Dataset(X, y)
    with pytest.raises(ValueError, match="at most 1073741824"):
        Dataset(X, y, reference=named_dataset())


def test_row_limit_reads_only_the_shape():
    class Huge:
        """Has a shape but no data: converting it would fail with a TypeError."""
        shape = (2**31, 3)

    with pytest.raises(ValueError, match="has 2147483648 rows"):
        Dataset(Huge())


def test_row_limit_of_sparse_input():
    sparse = pytest.importorskip("scipy.sparse")
    X = sparse.coo_matrix((2**30 + 1, 3))       # no stored entries: no memory
    with pytest.raises(ValueError, match="at most 1073741824"):
        Dataset(X)


# --------------------------------------------------------------------------------------
# binning
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("max_bin", [2, 7, 16, 64, 255])
def test_at_most_max_bin_value_bins(max_bin):
    rng = np.random.default_rng(max_bin)
    X = np.column_stack([rng.normal(size=2000), rng.exponential(size=2000),
                         rng.integers(0, 1000, 2000)])
    X[rng.random(2000) < 0.05, 1] = np.nan
    ds = Dataset(X, max_bin=max_bin)
    assert ds.missing_bin == max_bin
    assert np.all(ds.n_value_bins <= max_bin)
    assert np.all(ds.n_value_bins >= 2)
    for f in range(3):
        edges = ds.bin_edges[f]
        assert edges.shape[0] == ds.n_value_bins[f] - 1
        assert np.all(np.diff(edges) > 0)
        col_bins = ds.binned[:, f]
        nan = np.isnan(X[:, f])
        assert np.all(col_bins[nan] == ds.missing_bin)
        assert np.all(col_bins[~nan] < ds.n_value_bins[f])
    np.testing.assert_array_equal(ds.binned, reference_bins(X, ds))


def test_quantile_bins_are_balanced():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(5000, 1)) ** 3  # skewed: equal-width bins would be very uneven
    ds = Dataset(X, max_bin=10)
    counts = np.bincount(ds.binned[:, 0], minlength=10)
    assert ds.n_value_bins[0] == 10
    assert counts.min() >= 350 and counts.max() <= 650, counts


def test_nan_goes_to_missing_bin():
    X = np.array([[1.0, np.nan], [np.nan, 2.0], [3.0, 3.0], [4.0, np.nan]])
    ds = Dataset(X, max_bin=32)
    assert ds.missing_bin == 32
    assert ds.binned[1, 0] == 32 and ds.binned[0, 1] == 32 and ds.binned[3, 1] == 32
    assert np.all(ds.binned[[0, 2, 3], 0] < 32)
    all_nan = Dataset(np.array([[np.nan, 1.0], [np.nan, 2.0]]))
    assert all_nan.n_value_bins[0] == 1
    assert np.all(all_nan.binned[:, 0] == all_nan.missing_bin)


def test_infinities_go_to_outer_bins():
    X = np.array([[-np.inf], [0.0], [1.0], [2.0], [np.inf]])
    ds = Dataset(X)
    assert ds.binned[0, 0] == 0
    assert ds.binned[4, 0] == ds.n_value_bins[0] - 1
    assert np.all(np.isfinite(ds.bin_edges[0]))


def test_validation_dataset_shares_bin_edges():
    rng = np.random.default_rng(5)
    Xtr, Xva = rng.normal(size=(500, 3)), rng.normal(size=(100, 3)) * 2
    Xva[0, 1] = np.nan
    train = Dataset(Xtr, np.zeros(500), feature_names=["x", "y", "z"],
                    feature_costs={"y": 2.0}, default_cost=0, max_bin=20)
    valid = Dataset(Xva, np.zeros(100), reference=train)
    assert valid.bin_edges is train.bin_edges
    assert valid.cost_model is train.cost_model
    assert valid.feature_names == ["x", "y", "z"]
    assert valid.max_bin == 20 and valid.missing_bin == train.missing_bin
    np.testing.assert_array_equal(valid.n_value_bins, train.n_value_bins)
    np.testing.assert_array_equal(valid.binned, reference_bins(Xva, train))
    np.testing.assert_array_equal(valid.binned, train.bin_data(Xva))
    assert valid.binned[0, 1] == train.missing_bin
    # a value present in both gets the same bin
    both = Dataset(Xtr[:7], reference=train)
    np.testing.assert_array_equal(both.binned, train.binned[:7])


def test_validation_dataframe_with_reference():
    pd = pytest.importorskip("pandas")
    X = make_X(60, 3)
    train = Dataset(pd.DataFrame(X, columns=["p", "q", "r"]), np.zeros(60))
    valid = Dataset(pd.DataFrame(X[:10], columns=["p", "q", "r"]), np.zeros(10), reference=train)
    np.testing.assert_array_equal(valid.binned, train.binned[:10])
    with pytest.raises(ValueError, match="feature names differ"):
        Dataset(pd.DataFrame(X[:10], columns=["q", "p", "r"]), reference=train)


@pytest.mark.parametrize("values", [
    [1.0, 2.0, 5.0],
    [-3.5, 0.0, 0.25, 1e6],
    [0.0, 1.0],
    list(range(255)),
])
def test_few_distinct_values_one_bin_each(values):
    values = np.asarray(values, dtype=np.float64)
    rng = np.random.default_rng(0)
    col = rng.choice(values, size=1000)
    col[: values.size] = values  # every value present
    ds = Dataset(col[:, None])
    assert ds.n_value_bins[0] == values.size
    bins = ds.binned[:, 0]
    # one bin per value, in increasing order
    for b, v in enumerate(np.sort(values)):
        assert np.all(bins[col == v] == b)


def test_constant_column_single_bin():
    ds = Dataset(np.column_stack([np.full(50, 3.0), np.arange(50.0)]))
    assert ds.n_value_bins[0] == 1
    assert np.all(ds.binned[:, 0] == 0)


@pytest.mark.parametrize("values", [
    # adjacent doubles: the midpoint rounds to the upper value
    [1.0 + 2.0 ** -52, 1.0 + 2.0 ** -51],
    # huge magnitudes: the sum of the two values overflows
    [1e308, 1.7e308],
], ids=["adjacent-doubles", "huge"])
def test_distinct_values_never_share_a_bin(values):
    col = np.array(values * 10)
    ds = Dataset(col[:, None])
    assert ds.n_value_bins[0] == 2
    assert np.all(np.isfinite(ds.bin_edges[0]))
    b = ds.binned[:, 0]
    assert np.all(b[col == values[0]] == 0)
    assert np.all(b[col == values[1]] == 1)


F32_MAX = float(np.finfo(np.float32).max)


def _edge_columns():
    """Columns of every kind: a decimal grid with repeats (more distinct values than
    bins and fewer), integers, normal values, neighbours within float32 rounding of
    each other, float32 values and their float64 neighbours, huge values beyond
    float32's range, subnormals, signed zeros and a single value."""
    rng = np.random.default_rng(3)
    f32 = rng.normal(size=300).astype(np.float32).astype(np.float64)
    return {
        "grid3": np.round(rng.uniform(0, 1, 3000), 3),
        "grid2": np.round(rng.normal(size=3000), 2),
        "integers": rng.integers(-5, 40, 3000).astype(np.float64),
        "normal": rng.normal(size=3000),
        "float32-neighbours": np.concatenate([f32, np.nextafter(f32, np.inf),
                                              np.nextafter(f32, -np.inf)]),
        "within-float32-rounding": 1.0 + rng.integers(0, 400, 3000) * 2.0 ** -40,
        "huge": np.concatenate([rng.choice([-1e308, -1e39, -F32_MAX, -1e38, 0.0, 1e38,
                                            F32_MAX, 3.4e38, 1e39, 1.7e308], 500),
                                np.nextafter(F32_MAX, 0.0) * np.ones(5)]),
        "subnormal": rng.choice([-1e-310, -1e-45, -0.0, 0.0, 1e-320, 1e-46, 1.4e-45,
                                 2.8e-45, 1e-40, 1e-38], 500),
        "adjacent-doubles": np.array([1.0, 1.0 + 2.0 ** -52, 1.0 + 2.0 ** -51] * 20),
        "single": np.full(50, 0.123),
        "with-inf": np.concatenate([np.round(rng.normal(size=500), 1), [np.inf, -np.inf]]),
    }


@pytest.mark.parametrize("max_bin", [8, 255])
@pytest.mark.parametrize("name", list(_edge_columns()))
def test_edges_lie_between_training_values(name, max_bin):
    """Every edge lies strictly between two adjacent distinct training values (on the
    lower one only for adjacent doubles), each bin holds a training value, and XGBoost's
    ``float32(x) < c`` with the exported condition ``c`` routes every training value as
    ``x <= edge`` does, except at edges whose neighbours float32 cannot tell apart: the
    same float32 rounding, or the lower one rounding to float32's largest value or
    beyond (XGBoost's condition would be infinite)."""
    from cbudget.dataset import find_bin_edges
    from cbudget.interop.to_xgboost import float32_split_conditions
    column = _edge_columns()[name]
    edges = find_bin_edges(column, max_bin)
    distinct = np.unique(column[np.isfinite(column)])
    assert len(edges) <= max_bin - 1
    assert np.all(np.isfinite(edges)) and np.all(np.diff(edges) > 0)
    assert not np.any(np.signbit(edges) & (edges == 0))
    # every bin holds a training value: no edge is wasted on an empty bin
    bins = np.searchsorted(edges, distinct, side="left")
    np.testing.assert_array_equal(np.unique(bins), np.arange(len(edges) + 1))
    above = np.searchsorted(distinct, edges, side="right")       # first value > edge
    lower, upper = distinct[above - 1], distinct[above]
    assert np.all((lower <= edges) & (edges < upper))
    on_value = lower == edges
    assert np.all(upper[on_value] == np.nextafter(lower[on_value], np.inf)), \
        "an edge sits on a training value that has room above it"
    with np.errstate(over="ignore"):
        lower32, upper32 = lower.astype(np.float32), upper.astype(np.float32)
        inseparable = (lower32 == upper32) | (lower32 >= np.float32(F32_MAX))
        conditions = float32_split_conditions(edges)
        values32 = column[np.isfinite(column)].astype(np.float32)
    assert np.all(np.isfinite(conditions[~inseparable]))
    values = column[np.isfinite(column)]
    for edge, condition in zip(edges[~inseparable], conditions[~inseparable]):
        np.testing.assert_array_equal(values32 < condition, values <= edge)
    if name in ("grid3", "grid2", "integers", "normal"):
        assert not inseparable.any()
    if name == "within-float32-rounding":
        assert inseparable.all()


def test_edges_keep_the_training_bins():
    """The bins of the training values are those of edges at the quantile values
    themselves (the rule before edges moved between values): only values the training
    data lacks can bin differently."""
    rng = np.random.default_rng(4)
    column = np.round(rng.exponential(size=5000), 2)
    ds = Dataset(column[:, None], max_bin=16)
    values = np.sort(column)
    positions = np.linspace(0, 1, 17)[1:-1] * (values.size - 1)
    quantile_values = np.unique(values[np.floor(positions).astype(int)])
    np.testing.assert_array_equal(
        ds.binned[:, 0], np.searchsorted(quantile_values[quantile_values < values[-1]],
                                         column, side="left"))


def test_float32_bins_match_values():
    rng = np.random.default_rng(11)
    X = rng.normal(size=(400, 2)).astype(np.float32)
    ds = Dataset(X, max_bin=255)
    np.testing.assert_array_equal(ds.binned, reference_bins(X, ds))
    # < 255 distinct values in a float32 column -> one bin per value
    Xs = np.round(X * 4).astype(np.float32) / np.float32(7)
    ds2 = Dataset(Xs)
    for f in range(2):
        assert ds2.n_value_bins[f] == np.unique(Xs[:, f]).size


def test_required_label_is_the_label_or_a_value_error():
    # what the trainers read: the labels, typed without None
    X = np.arange(6.0).reshape(3, 2)
    np.testing.assert_array_equal(Dataset(X, [0, 1, 0]).required_label(), [0.0, 1.0, 0.0])
    with pytest.raises(ValueError, match="has no label"):
        Dataset(X).required_label()
