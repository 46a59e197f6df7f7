"""Kernels of the trees and cascades of linear classifiers (CSTC / CSCC / Cronus, Xu et al.,
JMLR 2014): soft traversal, the per-input part of a node's objective and its analytic
gradient, and hard-threshold prediction.

A tree of classifiers is given by arrays over its nodes in level order (a parent before
its children): ``upper[k]`` / ``lower[k]`` is the child an input goes to when its score
``f_k(x) = x . w_k + b_k`` is above / not above ``thresholds[k]``, or -1 for a terminal
element (the input exits with ``f_k(x)``). A node with two terminals is a leaf.

Sums over inputs are taken over fixed blocks of rows, then added in block order, so the
results do not depend on the number of threads. Every entry point checks its arrays'
shapes and index arrays (children, columns) and raises ValueError before any loop.
"""
import numpy as np

from cython.parallel cimport prange
from libc.math cimport INFINITY, exp, fabs, log1p
from libc.stdint cimport int32_t, int64_t

from ._safety cimport check_n_threads, first_out_of_range_32, first_out_of_range_64

cdef Py_ssize_t ROW_BLOCK = 256

# The magnitudes a linear score reads: |x| < 2**512 (about 1.34e154, the magnitude whose
# square overflows float64). NaN, +-inf and larger values (1e308, DBL_MAX: sentinels or
# overflow, never measurements) are missing, in training and in prediction alike: one such
# value would outweigh every other term of a score, and the standardisation's second
# moments cannot hold it.
MAX_INPUT = 2.0 ** 512
cdef double _MAX_INPUT = MAX_INPUT


def readable(values):
    """bool array: where ``values`` hold a value a linear score reads (``|x| <
    MAX_INPUT``; False for NaN, +-inf and larger magnitudes, which are missing)."""
    return np.abs(values) < MAX_INPUT


cdef int _check_children(const int32_t[::1] upper, const int32_t[::1] lower,
                         Py_ssize_t n_nodes, str what) except -1:
    """One child id per node, each -1 (terminal) or a later node: every walk from the
    root ends."""
    cdef Py_ssize_t k
    if n_nodes < 1 or upper.shape[0] != n_nodes or lower.shape[0] != n_nodes:
        raise ValueError(f"{what}: upper / lower need one entry per node, and a tree at "
                         f"least one node")
    for k in range(n_nodes):
        if not ((upper[k] == -1 or k < upper[k] < n_nodes)
                and (lower[k] == -1 or k < lower[k] < n_nodes)):
            raise ValueError(f"{what}: node {k}'s children must be -1 or later nodes")
    return 0

# loss codes: squared 1/2 (f - y)^2 (the paper's); logistic log(1 + exp(-y f)), y = +-1
LOSS_SQUARED = 0
LOSS_LOGISTIC = 1


cdef int _check_sharpness(double sharpness, str name) except -1:
    if not (0.0 < sharpness < INFINITY):
        raise ValueError(f"{name}: sharpness must be finite and > 0, got {sharpness}")
    return 0


cdef inline double _sigmoid(double z) noexcept nogil:
    if z >= 0:
        return 1.0 / (1.0 + exp(-z))
    cdef double e = exp(z)
    return e / (1.0 + e)


cdef inline double _loss(double f, double y, int loss) noexcept nogil:
    cdef double m
    if loss == 0:
        return 0.5 * (f - y) * (f - y)
    m = -y * f
    if m > 0:
        return m + log1p(exp(-m))
    return log1p(exp(m))


cdef inline double _loss_derivative(double f, double y, int loss) noexcept nogil:
    if loss == 0:
        return f - y
    return -y * _sigmoid(-y * f)


def pointwise_loss(const double[:, ::1] F, const double[::1] y, int loss, double[:, ::1] out,
                   int n_threads):
    """``out[i, k] = loss(F[i, k], y[i])`` for every input and node."""
    cdef Py_ssize_t n = F.shape[0], n_nodes = F.shape[1], i, k
    check_n_threads(n_threads)
    if y.shape[0] != n or out.shape[0] != n or out.shape[1] != n_nodes:
        raise ValueError("pointwise_loss: y needs one entry per row of F, out F's shape")
    for i in prange(n, nogil=True, schedule="static", num_threads=n_threads):
        for k in range(n_nodes):
            out[i, k] = _loss(F[i, k], y[i], loss)


def soft_route(const double[:, ::1] F, const double[::1] thresholds, const int32_t[::1] upper,
               const int32_t[::1] lower, double[:, ::1] reach, double[:, ::1] exit,
               double sharpness, int n_threads):
    """Soft traversal (eq. 4): ``reach[i, k]`` is the probability that input ``i`` reaches
    node ``k``, ``exit[i, k]`` that it leaves the tree through a terminal of ``k``.

    The root is reached with probability 1; node ``k`` sends ``s = sigmoid(sharpness
    (F[i, k] - thresholds[k]))`` of its probability up and ``1 - s`` down; a leaf passes
    all of it to its terminal. An infinite ``F[i, k] - thresholds[k]`` routes hard.

    Parameters
    ----------
    F : float64 (n_samples, n_nodes), node scores
    thresholds : float64 (n_nodes,)
    upper, lower : int32 (n_nodes,), child ids (-1: terminal), parents before children
    reach, exit : float64 (n_samples, n_nodes), overwritten
    sharpness : float > 0, the slope of the sigmoid
    """
    cdef Py_ssize_t n = F.shape[0], n_nodes = F.shape[1], i, k
    cdef double r, s
    check_n_threads(n_threads)
    _check_children(upper, lower, n_nodes, "soft_route")
    _check_sharpness(sharpness, "soft_route")
    if (thresholds.shape[0] != n_nodes or reach.shape[0] != n or reach.shape[1] != n_nodes
            or exit.shape[0] != n or exit.shape[1] != n_nodes):
        raise ValueError("soft_route: thresholds need one entry per node, reach and exit "
                         "F's shape")
    for i in prange(n, nogil=True, schedule="static", num_threads=n_threads):
        for k in range(n_nodes):
            reach[i, k] = 0.0
            exit[i, k] = 0.0
        reach[i, 0] = 1.0
        for k in range(n_nodes):
            r = reach[i, k]
            if upper[k] == -1 and lower[k] == -1:
                exit[i, k] = r
                continue
            s = _sigmoid(sharpness * (F[i, k] - thresholds[k]))
            if upper[k] == -1:
                exit[i, k] = exit[i, k] + r * s
            else:
                reach[i, upper[k]] = r * s
            if lower[k] == -1:
                exit[i, k] = exit[i, k] + r * (1.0 - s)
            else:
                reach[i, lower[k]] = r * (1.0 - s)


def node_objective(const double[::1] f, const double[::1] y, const double[::1] sample_weight,
                   const double[::1] own_weight, const double[::1] own_slope,
                   const double[::1] loss_upper, const double[::1] loss_lower,
                   const double[::1] cost_upper, const double[::1] cost_lower,
                   double threshold, double sharpness, bint splits, int loss,
                   double[::1] grad_f,
                   int n_threads):
    """The per-input part of one node's objective with the other nodes fixed, and its
    gradient with respect to the node's scores and threshold.

    With ``s_i = sigmoid(sharpness (f_i - threshold))`` (``splits``; else ``s_i`` plays
    no part), the value is::

        sum_i sw_i [(a_i + b_i s_i) loss(f_i, y_i) + s_i LU_i + (1 - s_i) LV_i]

    where ``a + b s`` is the node's own loss weight (CSTC: its reach probability, b = 0;
    CSCC: the class weight times its exit probability), and ``LU_i`` / ``LV_i`` are the
    weighted losses of the descendants above / below it divided by ``s_i`` / ``1 - s_i``
    (constants while this node is optimised). ``CU_i`` / ``CV_i`` are the matching
    derivatives of the cost term with respect to ``s_i``; they enter the gradient only
    (the cost's value is computed by the caller from the mean probabilities).

    Returns
    -------
    (value, d value / d threshold); ``grad_f[i]`` receives d value / d f_i.
    """
    cdef Py_ssize_t n = f.shape[0]
    cdef Py_ssize_t n_blocks = (n + ROW_BLOCK - 1) // ROW_BLOCK
    cdef Py_ssize_t block, i, stop
    cdef double[::1] value_parts = np.zeros(max(n_blocks, 1))
    cdef double[::1] theta_parts = np.zeros(max(n_blocks, 1))
    cdef double s, ds, loss_i, w, dl, slope_term, v, t
    check_n_threads(n_threads)
    if (y.shape[0] != n or sample_weight.shape[0] != n or own_weight.shape[0] != n
            or grad_f.shape[0] != n
            or (splits and (own_slope.shape[0] != n or loss_upper.shape[0] != n
                            or loss_lower.shape[0] != n or cost_upper.shape[0] != n
                            or cost_lower.shape[0] != n))):
        raise ValueError(f"node_objective: every per-input array needs {n} entries")
    _check_sharpness(sharpness, "node_objective")
    for block in prange(n_blocks, nogil=True, schedule="static", num_threads=n_threads):
        stop = min((block + 1) * ROW_BLOCK, n)
        v = 0.0
        t = 0.0
        for i in range(block * ROW_BLOCK, stop):
            loss_i = _loss(f[i], y[i], loss)
            dl = _loss_derivative(f[i], y[i], loss)
            w = sample_weight[i]
            if splits:
                s = _sigmoid(sharpness * (f[i] - threshold))
                ds = sharpness * s * (1.0 - s)
                slope_term = (own_slope[i] * loss_i + loss_upper[i] - loss_lower[i]
                              + cost_upper[i] - cost_lower[i])
                v = v + w * ((own_weight[i] + own_slope[i] * s) * loss_i
                             + s * loss_upper[i] + (1.0 - s) * loss_lower[i])
                grad_f[i] = w * ((own_weight[i] + own_slope[i] * s) * dl + ds * slope_term)
                t = t - w * ds * slope_term
            else:
                v = v + w * own_weight[i] * loss_i
                grad_f[i] = w * own_weight[i] * dl
        value_parts[block] = v
        theta_parts[block] = t
    cdef double value = 0.0, d_threshold = 0.0
    for block in range(n_blocks):
        value += value_parts[block]
        d_threshold += theta_parts[block]
    return value, d_threshold


def predict_hard(const double[:, ::1] X, const int64_t[::1] weight_indptr,
                 const int32_t[::1] weight_index, const double[::1] weight_value,
                 const double[::1] impute, const double[::1] bias,
                 const double[::1] thresholds, const int32_t[::1] upper,
                 const int32_t[::1] lower, double[::1] out_value, int32_t[::1] out_exit,
                 int n_threads):
    """Hard traversal for prediction: from the root, go to ``upper[k]`` when
    ``f_k(x) > thresholds[k]``, else ``lower[k]``, until a terminal; the prediction is
    the score of the last node. Only the visited nodes' scores are computed, from
    their non-zero weights (node ``k``'s are ``weight_index/weight_value[
    weight_indptr[k]:weight_indptr[k + 1]]``); a value that is not :func:`readable`
    (missing, infinite, ``|x| >= MAX_INPUT``) counts as ``impute[m]``, as in training
    and in ADAPT-LIN's linear parts (+inf and -inf in one input would otherwise give
    inf - inf = NaN).
    """
    cdef Py_ssize_t n = X.shape[0], i
    cdef int64_t j
    cdef int32_t k, child
    cdef double f, x
    cdef Py_ssize_t n_nodes = bias.shape[0], n_weights
    check_n_threads(n_threads)
    _check_children(upper, lower, n_nodes, "predict_hard")
    if thresholds.shape[0] != n_nodes or weight_indptr.shape[0] != n_nodes + 1:
        raise ValueError("predict_hard: thresholds need one entry per node, weight_indptr "
                         "n_nodes + 1")
    if out_value.shape[0] != n or out_exit.shape[0] != n or impute.shape[0] != X.shape[1]:
        raise ValueError("predict_hard: out_value / out_exit need one entry per input, "
                         "impute one per feature")
    n_weights = weight_indptr[n_nodes]
    if (weight_indptr[0] != 0 or weight_index.shape[0] < n_weights
            or weight_value.shape[0] < n_weights
            or first_out_of_range_64(&weight_indptr[0], n_nodes + 1, 0, n_weights + 1) >= 0
            or (n_weights and first_out_of_range_32(&weight_index[0], n_weights, 0,
                                                    X.shape[1]) >= 0)):
        raise ValueError("predict_hard: weight_indptr must run from 0 over weight_index / "
                         "weight_value, whose indices are features of X")
    for k in range(n_nodes):
        if weight_indptr[k + 1] < weight_indptr[k]:
            raise ValueError("predict_hard: weight_indptr must be non-decreasing")
    for i in prange(n, nogil=True, schedule="static", num_threads=n_threads):
        k = 0
        while True:
            f = bias[k]
            for j in range(weight_indptr[k], weight_indptr[k + 1]):
                x = X[i, weight_index[j]]
                if not fabs(x) < _MAX_INPUT:     # NaN too
                    x = impute[weight_index[j]]
                f = f + weight_value[j] * x
            child = upper[k] if f > thresholds[k] else lower[k]
            if child == -1:
                break
            k = child
        out_value[i] = f
        out_exit[i] = k


def dense_scores(const double[:, ::1] Z, const int64_t[::1] columns, const double[::1] beta,
                 double bias, double[::1] out, int n_threads):
    """``out[i] = sum_j Z[i, columns[j]] beta[j] + bias``: a node's scores on the
    columns it uses, without copying them out of ``Z``."""
    cdef Py_ssize_t n = Z.shape[0], n_columns = columns.shape[0], i, j
    cdef double f
    check_n_threads(n_threads)
    if beta.shape[0] != n_columns or out.shape[0] != n:
        raise ValueError("dense_scores: beta needs one entry per column, out per row of Z")
    if n_columns and first_out_of_range_64(&columns[0], n_columns, 0, Z.shape[1]) >= 0:
        raise ValueError(f"dense_scores: columns must be in [0, {Z.shape[1]})")
    for i in prange(n, nogil=True, schedule="static", num_threads=n_threads):
        f = bias
        for j in range(n_columns):
            f = f + Z[i, columns[j]] * beta[j]
        out[i] = f


def dense_gradient(const double[:, ::1] Z, const int64_t[::1] columns, const double[::1] g,
                   double[::1] out, int n_threads):
    """``out[j] = sum_i Z[i, columns[j]] g[i]`` by blocks of rows added in block order
    (the same sums whatever the thread count)."""
    cdef Py_ssize_t n = Z.shape[0], n_columns = columns.shape[0]
    cdef Py_ssize_t n_blocks = (n + ROW_BLOCK - 1) // ROW_BLOCK
    check_n_threads(n_threads)
    if g.shape[0] != n or out.shape[0] != n_columns:
        raise ValueError("dense_gradient: g needs one entry per row of Z, out per column")
    if n_columns and first_out_of_range_64(&columns[0], n_columns, 0, Z.shape[1]) >= 0:
        raise ValueError(f"dense_gradient: columns must be in [0, {Z.shape[1]})")
    cdef double[:, ::1] parts = np.zeros((max(n_blocks, 1), max(n_columns, 1)))
    cdef Py_ssize_t block, i, j, stop
    cdef double gi
    for block in prange(n_blocks, nogil=True, schedule="static", num_threads=n_threads):
        stop = min((block + 1) * ROW_BLOCK, n)
        for i in range(block * ROW_BLOCK, stop):
            gi = g[i]
            for j in range(n_columns):
                parts[block, j] += Z[i, columns[j]] * gi
    for j in range(n_columns):
        out[j] = 0.0
    for block in range(n_blocks):
        for j in range(n_columns):
            out[j] += parts[block, j]
