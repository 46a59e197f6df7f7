"""Wide data (issue 42, item 12): a Dataset of few rows and many features is built in
memory proportional to the data, and training checks what an algorithm will allocate
before it starts (cbudget.engine.check_memory), refusing with a clear error what does
not fit."""
import time
import tracemalloc

import numpy as np
import pytest
from small_models import ALGORITHMS, small_model_params, takes_expensive_model

import cbudget
from cbudget.algorithms import REGISTRY
from cbudget.engine import MEMORY_LIMIT_VARIABLE, TrainingMemoryError, memory_limit


def _wide(n_rows, n_features, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_rows, n_features))
    return X, (X[:, 0] > np.median(X[:, 0])).astype(np.float64)


def test_a_wide_dataset_takes_memory_proportional_to_the_data():
    """Before: a thread-pool task (and its future, about 1.6 KB) per feature, all alive
    at once: 2 rows x 10^6 features peaked at 2 GB."""
    X, y = _wide(2, 10_000)
    tracemalloc.start()
    try:
        data = cbudget.Dataset(X, y)
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # what is kept: the edges of each feature; the transient rest is a few bytes per
    # feature (was 1,600)
    assert (peak - kept) / X.shape[1] < 200
    assert data.n_value_bins.shape == (X.shape[1],) and np.all(data.n_value_bins == 2)
    edges, indptr = data.flat_bin_edges()
    assert indptr[-1] == edges.shape[0] == X.shape[1]
    np.testing.assert_array_equal(edges, np.concatenate(data.bin_edges))


def test_cstc_on_wide_data_is_refused_before_allocating(monkeypatch):
    """CSTC's nodes solve n_features x n_features normal equations: on 2 rows x 5,000
    features that is 400 MB, above a 100 MB limit: refused at once, naming the formula
    and what to change (before: it allocated them; on 2 x 10^6, 7.28 TiB)."""
    monkeypatch.setenv(MEMORY_LIMIT_VARIABLE, "100M")
    X, y = _wide(2, 5_000)
    data = cbudget.Dataset(X, y)
    for algorithm in ("cstc", "cscc"):
        tracemalloc.start()
        start = time.perf_counter()
        try:
            with pytest.raises(TrainingMemoryError) as caught:
                cbudget.train(small_model_params(algorithm), data, 5, verbose_eval=False)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert time.perf_counter() - start < 5
        assert peak < 10 * 2**20           # nothing large was allocated
        message = str(caught.value)
        assert algorithm in message and "n_features^2" in message
        assert "381 MiB" in message        # 2 x 5000^2 x 8 bytes
        assert "basis_trees" in message and MEMORY_LIMIT_VARIABLE in message
        assert isinstance(caught.value, (MemoryError, ValueError))


def test_the_boosting_trick_needs_no_features_squared(monkeypatch):
    """With basis_trees=T the coordinates are T tree outputs: the same data trains."""
    monkeypatch.setenv(MEMORY_LIMIT_VARIABLE, "100M")
    X, y = _wide(40, 5_000)
    model = cbudget.train({**small_model_params("cstc"), "basis_trees": 5},
                          cbudget.Dataset(X, y), 2, verbose_eval=False)
    assert model.num_nodes() >= 1


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_every_algorithm_checks_its_memory_before_training(algorithm, monkeypatch):
    """Every registered algorithm declares its large allocations: below them, training
    is refused with a message naming the algorithm, each allocation's formula and a
    parameter to change."""
    X, y = _wide(100, 6)
    data = cbudget.Dataset(X, y)
    extra = {}
    if takes_expensive_model(algorithm):
        extra["expensive_model"] = cbudget.train({"objective": "binary:logistic",
                                                  "n_jobs": 1}, data, 2, verbose_eval=False)
    needs = REGISTRY[algorithm].memory_needs(
        cbudget.algorithms.resolve_params(small_model_params(algorithm)), data,
        cbudget.engine.TrainingSetup(cbudget.objectives.get_objective("binary:logistic", None),
                                     [], [], 1, False))
    assert needs and all(need.n_bytes > 0 and need.hint for need in needs)
    monkeypatch.setenv(MEMORY_LIMIT_VARIABLE, "1K")
    with pytest.raises(TrainingMemoryError, match=f"^{algorithm} would need about"):
        cbudget.train(small_model_params(algorithm), data, 2, verbose_eval=False, **extra)
    monkeypatch.setenv(MEMORY_LIMIT_VARIABLE, "none")
    cbudget.train(small_model_params(algorithm), data, 2, verbose_eval=False, **extra)


def test_memory_limit_from_the_environment(monkeypatch):
    monkeypatch.setenv(MEMORY_LIMIT_VARIABLE, "64G")
    assert memory_limit()[0] == 64 * 2**30
    monkeypatch.setenv(MEMORY_LIMIT_VARIABLE, "1.5GiB")
    assert memory_limit()[0] == 1.5 * 2**30
    monkeypatch.setenv(MEMORY_LIMIT_VARIABLE, "123456")
    assert memory_limit()[0] == 123456
    monkeypatch.setenv(MEMORY_LIMIT_VARIABLE, "None")
    assert memory_limit()[0] is None
    for bad in ("lots", "-1G", "0", "nan", "inf", "5X"):
        monkeypatch.setenv(MEMORY_LIMIT_VARIABLE, bad)
        with pytest.raises(ValueError, match=MEMORY_LIMIT_VARIABLE):
            memory_limit()
    monkeypatch.delenv(MEMORY_LIMIT_VARIABLE)
    limit, source = memory_limit()
    assert limit is None or (limit > 0 and source)


def _special_columns(rng, n_rows, n_features, dtype):
    """Columns of ``n_rows`` values drawn from awkward ones: repeats, NaN, +-inf, -0.0 and
    0.0, subnormals, values near float64's and float32's largest, adjacent doubles,
    values with the same float32 rounding, midpoints on a decimal grid; some columns
    single-valued, some all NaN, some normal values."""
    f64_max, f32_max = np.finfo(np.float64).max, float(np.finfo(np.float32).max)
    special = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 5e-324, -5e-324, 1e-310,
                        1e-45, 1.0, np.nextafter(1.0, 2.0), np.nextafter(1.0, 0.0),
                        1.0 + 2.0 ** -40, f64_max, -f64_max, np.nextafter(f64_max, 0.0),
                        f32_max, np.nextafter(f32_max, np.inf), 3.5e38, 0.1, 0.101, 0.102])
    columns = rng.choice(special, size=(n_rows, n_features))
    normal = rng.random(n_features) < 0.3
    columns[:, normal] = np.where(rng.random((n_rows, int(normal.sum()))) < 0.2,
                                  columns[:, normal], rng.normal(size=(n_rows, normal.sum())))
    columns[:, rng.random(n_features) < 0.1] = np.nan
    single = np.flatnonzero(rng.random(n_features) < 0.1)
    columns[:, single] = columns[0, single]
    with np.errstate(over="ignore"):
        return columns.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("max_bin", [2, 3, 17, 255])
def test_few_rows_bin_edges_are_find_bin_edges_bit_for_bit(max_bin, dtype):
    """The vectorised rule of a block of few rows (at most max_bin: one bin per distinct
    value) gives each column exactly the edges find_bin_edges gives it alone."""
    from cbudget.dataset import few_rows_bin_edges, find_bin_edges
    rng = np.random.default_rng(max_bin)
    for trial in range(40):
        # mostly a few rows (where the columns' values repeat), sometimes max_bin
        n_rows = int(rng.integers(1, (max_bin if trial % 10 == 0 else min(max_bin, 12)) + 1))
        X = _special_columns(rng, n_rows, int(rng.integers(1, 60)), dtype)
        found = few_rows_bin_edges(X, max_bin)
        assert len(found) == X.shape[1]
        for f, edges in enumerate(found):
            expected = find_bin_edges(X[:, f], max_bin)
            assert edges.dtype == expected.dtype == np.float64
            assert np.array_equal(edges.view(np.int64), expected.view(np.int64)), \
                (X[:, f].tolist(), edges, expected)
    with pytest.raises(ValueError, match="at most max_bin"):
        few_rows_bin_edges(np.zeros((max_bin + 1, 3)), max_bin)


@pytest.mark.parametrize("n_rows", [1, 2, 7, 300])
def test_a_dataset_bins_each_column_as_find_bin_edges(n_rows):
    """Few rows (the vectorised blocks) or many (find_bin_edges per column), dense or
    scipy.sparse (implicit zeros are zeros), with rows of weight 0 (they place no
    edge): the Dataset's edges are find_bin_edges' of the rows that place them."""
    sparse = pytest.importorskip("scipy.sparse")
    from cbudget.dataset import find_bin_edges
    rng = np.random.default_rng(n_rows)
    X = _special_columns(rng, n_rows, 300, np.float64)
    X[rng.random(X.shape) < 0.5] = 0.0
    weight = np.ones(n_rows)
    weight[rng.random(n_rows) < 0.3] = 0.0
    weight[0] = 1.0
    for max_bin in (3, 255):
        for data in (X, sparse.csr_matrix(X), sparse.csc_matrix(X)):
            for w in (None, weight):
                dataset = cbudget.Dataset(data, weight=w, max_bin=max_bin)
                rows = X if w is None else X[w > 0]
                for f, edges in enumerate(dataset.bin_edges):
                    assert np.array_equal(edges, find_bin_edges(rows[:, f], max_bin))


def test_a_wide_dataset_finds_its_edges_a_block_at_a_time(monkeypatch):
    """On 2 rows the edges of a block of features come from one edges_between call (a
    find_bin_edges call per feature cost 17-47 us, 85% of building 2 x 10^6)."""
    import cbudget.dataset as dataset_module
    calls = []
    real = dataset_module.edges_between

    def counted(lower, upper):
        calls.append(lower.size)
        return real(lower, upper)

    monkeypatch.setattr(dataset_module, "edges_between", counted)
    X, y = _wide(2, 10_000)
    data = cbudget.Dataset(X, y)
    assert len(calls) <= 64 and sum(calls) == X.shape[1]
    assert all(len(edges) == 1 for edges in data.bin_edges)
