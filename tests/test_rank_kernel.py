"""The ranking gradient kernel (``cbudget._core._rank.ranking_gradients``) against its
slow reference (``reference_rank.py``), finite differences of the RankNet loss, the
sign convention, degenerate queries, thread counts and input checks.

Small random problems from ``np.random.default_rng(seed)``: queries of 0..40 rows,
graded labels 0..4 with many ties, scores with ties or all equal (the first round).
"""
import itertools

import numpy as np
import pytest
from reference_rank import ranking_gradients_reference

from cbudget._core._rank import ranking_gradients

TRUNCATION_LEVELS = [1, 3, 30, 1000]
SIGMOIDS = [1.0, 2.0]


def kernel(raw, label, weight, query_ptr, lambdarank, truncation_level=30, normalize=True,
           sigmoid=1.0, n_threads=1):
    """(grad, hess) from the kernel; the outputs start as NaN so that a row the kernel
    does not write shows."""
    n = len(raw)
    grad, hess = np.full(n, np.nan), np.full(n, np.nan)
    ranking_gradients(np.asarray(raw, np.float64), np.asarray(label, np.float64),
                      None if weight is None else np.asarray(weight, np.float64),
                      np.asarray(query_ptr, np.int64), lambdarank, truncation_level,
                      normalize, sigmoid, grad, hess, n_threads)
    return grad, hess


def random_problem(seed, scores="rounded", n_queries=25, max_size=40):
    """(raw, label, weight, query_ptr). Empty queries first, in the middle and last (a
    repeated query_ptr value); one query of equal labels; labels skewed to 0 (ties)."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(0, max_size + 1, n_queries)
    sizes[0] = sizes[n_queries // 2] = sizes[-1] = 0
    sizes[1] = 1
    query_ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(query_ptr[-1])
    label = rng.choice(5, size=n, p=[0.45, 0.25, 0.15, 0.1, 0.05]).astype(np.float64)
    label[query_ptr[2]:query_ptr[3]] = 2.0
    if scores == "rounded":
        raw = np.round(rng.normal(size=n), 1)
    elif scores == "equal":
        raw = np.zeros(n)
    else:
        raw = rng.normal(scale=3.0, size=n)
    weight = rng.uniform(0.5, 2.0, n)
    return raw, label, weight, query_ptr


def assert_matches(got, expected):
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-15)


# ---------------------------------------------------------------------------------------
# Kernel against the reference
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("scores", ["rounded", "equal", "continuous"])
def test_lambdarank_matches_reference(scores, weighted):
    raw, label, weight, query_ptr = random_problem(1, scores)
    weight = weight if weighted else None
    results = {}
    for truncation_level, normalize, sigmoid in itertools.product(
            TRUNCATION_LEVELS, [False, True], SIGMOIDS):
        expected = ranking_gradients_reference(raw, label, weight, query_ptr, True,
                                               truncation_level, normalize, sigmoid)
        assert np.count_nonzero(expected[0]) > len(raw) // 3    # the problem has pairs
        for n_threads in (1, 2):
            got = kernel(raw, label, weight, query_ptr, True, truncation_level, normalize,
                         sigmoid, n_threads)
            assert_matches(got, expected)
        results[truncation_level, normalize, sigmoid] = got[0]
    # every setting matters (with equal scores, normalize only scales by log2(1 + S) / S)
    for (a, ra), (b, rb) in itertools.combinations(results.items(), 2):
        assert not np.array_equal(ra, rb), (a, b)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("scores", ["rounded", "equal", "continuous"])
def test_pairwise_matches_reference(scores, weighted):
    raw, label, weight, query_ptr = random_problem(2, scores)
    weight = weight if weighted else None
    for sigmoid in SIGMOIDS:
        expected = ranking_gradients_reference(raw, label, weight, query_ptr, False, 1, False,
                                               sigmoid)
        assert np.count_nonzero(expected[0]) > len(raw) // 3
        first = None
        # truncation_level and normalize are ignored: the same result, bit for bit
        for truncation_level, normalize, n_threads in itertools.product(
                TRUNCATION_LEVELS, [False, True], (1, 2)):
            got = kernel(raw, label, weight, query_ptr, False, truncation_level, normalize,
                         sigmoid, n_threads)
            assert_matches(got, expected)
            if first is None:
                first = got
            np.testing.assert_array_equal(got[0], first[0])
            np.testing.assert_array_equal(got[1], first[1])


@pytest.mark.parametrize("lambdarank", [True, False])
def test_thread_counts_give_identical_results(lambdarank):
    raw, label, weight, query_ptr = random_problem(3, "rounded", n_queries=400, max_size=60)
    for weighted, normalize in itertools.product([False, True], [False, True]):
        w = weight if weighted else None
        one = kernel(raw, label, w, query_ptr, lambdarank, 10, normalize, 1.5, n_threads=1)
        for n_threads in (2, 3):
            many = kernel(raw, label, w, query_ptr, lambdarank, 10, normalize, 1.5, n_threads)
            np.testing.assert_array_equal(many[0], one[0])
            np.testing.assert_array_equal(many[1], one[1])
        assert np.all(np.isfinite(one[0])) and np.count_nonzero(one[0]) > len(raw) // 3


# ---------------------------------------------------------------------------------------
# Degenerate queries, the sign convention
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("lambdarank", [True, False])
@pytest.mark.parametrize("weighted", [False, True])
def test_queries_without_pairs_get_zero(lambdarank, weighted):
    # queries: empty, one row, equal labels (3), all labels 0, empty, one regular query
    query_ptr = np.array([0, 0, 1, 5, 9, 9, 12], np.int64)
    label = np.array([3, 3, 3, 3, 3, 0, 0, 0, 0, 0, 1, 2], np.float64)
    raw = np.array([0.5, 1.0, -2.0, 0.3, 0.3, 4.0, -1.0, 0.0, 2.5, 0.1, 0.7, -0.4])
    weight = np.linspace(0.5, 2.0, 12) if weighted else None
    for truncation_level, normalize in itertools.product([1, 3, 1000], [False, True]):
        grad, hess = kernel(raw, label, weight, query_ptr, lambdarank, truncation_level,
                            normalize)
        np.testing.assert_array_equal(grad[:9], 0.0)
        np.testing.assert_array_equal(hess[:9], 0.0)
        assert np.all(grad[9:] != 0.0) and np.all(hess[9:] > 0.0)


def test_no_rows_at_all():
    for query_ptr in ([0], [0, 0, 0]):
        grad, hess = kernel(np.empty(0), np.empty(0), None, query_ptr, True)
        assert grad.shape == hess.shape == (0,)


@pytest.mark.parametrize("lambdarank", [True, False])
def test_relevant_row_ranked_too_low_gets_a_negative_gradient(lambdarank):
    # one query: the relevant row (label 2) is scored below the irrelevant ones
    label = np.array([0.0, 2.0, 0.0])
    raw = np.array([1.0, -0.5, 0.2])
    for normalize, sigmoid in itertools.product([False, True], SIGMOIDS):
        grad, hess = kernel(raw, label, None, [0, 3], lambdarank, 30, normalize, sigmoid)
        assert grad[1] < 0.0
        assert grad[0] > 0.0 and grad[2] > 0.0
        assert np.all(hess > 0.0)
        assert grad.sum() == pytest.approx(0.0, abs=1e-15)     # each pair: +l and -l
        # the irrelevant row scored highest is pushed down hardest
        assert grad[0] > grad[2]


# ---------------------------------------------------------------------------------------
# Pairwise mode: the derivatives of the RankNet loss (an independent check of the formulas)
# ---------------------------------------------------------------------------------------
def ranknet_loss(raw, label, query_ptr, sigmoid):
    """sum over pairs (high, low) of a query of log(1 + exp(-sigmoid (s_high - s_low)))."""
    total = 0.0
    for q in range(len(query_ptr) - 1):
        s = raw[query_ptr[q]:query_ptr[q + 1]]
        y = label[query_ptr[q]:query_ptr[q + 1]]
        higher = y[:, None] > y[None, :]
        total += np.logaddexp(0.0, -sigmoid * (s[:, None] - s[None, :]))[higher].sum()
    return total


@pytest.mark.parametrize("sigmoid", SIGMOIDS)
def test_pairwise_gradients_are_derivatives_of_the_ranknet_loss(sigmoid):
    raw, label, _, query_ptr = random_problem(4, "continuous", n_queries=10, max_size=12)
    raw = raw / 3.0
    grad, hess = kernel(raw, label, None, query_ptr, False, sigmoid=sigmoid)
    h = 1e-5
    fd_grad, fd_hess = np.empty_like(raw), np.empty_like(raw)
    for k in range(len(raw)):
        up, down = raw.copy(), raw.copy()
        up[k] += h
        down[k] -= h
        fd_grad[k] = (ranknet_loss(up, label, query_ptr, sigmoid)
                      - ranknet_loss(down, label, query_ptr, sigmoid)) / (2 * h)
        fd_hess[k] = (kernel(up, label, None, query_ptr, False, sigmoid=sigmoid)[0][k]
                      - kernel(down, label, None, query_ptr, False, sigmoid=sigmoid)[0][k]
                      ) / (2 * h)
    assert np.count_nonzero(grad) > len(raw) // 3
    np.testing.assert_allclose(grad, fd_grad, rtol=0, atol=1e-6)
    np.testing.assert_allclose(hess, fd_hess, rtol=0, atol=1e-6)


# ---------------------------------------------------------------------------------------
# Input checks
# ---------------------------------------------------------------------------------------
def test_bad_inputs_raise_value_error():
    raw, label, weight, query_ptr = random_problem(5, n_queries=8, max_size=6)
    n = len(raw)
    assert n > 2

    def call(**changes):
        args = dict(raw=raw, label=label, weight=weight, query_ptr=query_ptr,
                    lambdarank=True, truncation_level=3, normalize=True, sigmoid=1.0,
                    grad=np.empty(n), hess=np.empty(n), n_threads=1)
        args.update(changes)
        ranking_gradients(*args.values())

    bad_ptr = query_ptr.copy()
    bad_ptr[2] = bad_ptr[1] - 1 if bad_ptr[1] > 0 else bad_ptr[3] + 1      # decreasing
    bad_calls = {
        "short label": dict(label=label[:-1]),
        "long label": dict(label=np.append(label, 0.0)),
        "short weight": dict(weight=weight[:-1]),
        "short grad": dict(grad=np.empty(n - 1)),
        "short hess": dict(hess=np.empty(n - 1)),
        "long hess": dict(hess=np.empty(n + 1)),
        "no query_ptr": dict(query_ptr=np.empty(0, np.int64)),
        "query_ptr not from 0": dict(query_ptr=np.array([1, n], np.int64)),
        "query_ptr decreasing": dict(query_ptr=bad_ptr),
        "query_ptr short of n": dict(query_ptr=np.array([0, n - 1], np.int64)),
        "query_ptr beyond n": dict(query_ptr=np.array([0, n + 1], np.int64)),
        "query_ptr only 0": dict(query_ptr=np.array([0], np.int64)),
        "truncation_level 0": dict(truncation_level=0),
        "truncation_level negative": dict(truncation_level=-3),
        "sigmoid 0": dict(sigmoid=0.0),
        "sigmoid negative": dict(sigmoid=-1.0),
        "sigmoid nan": dict(sigmoid=np.nan),
        "sigmoid inf": dict(sigmoid=np.inf),
        "n_threads 0": dict(n_threads=0),
        "n_threads negative": dict(n_threads=-2),
    }
    call()
    call(weight=None, lambdarank=False)
    for name, changes in bad_calls.items():
        with pytest.raises(ValueError):
            call(**changes)
            pytest.fail(f"{name}: did not raise")
