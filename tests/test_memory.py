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
