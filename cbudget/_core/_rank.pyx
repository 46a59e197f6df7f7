"""Gradients and hessians of the learning-to-rank objectives, in parallel over queries:
LambdaMART (LightGBM's ``lambdarank``, NDCG-weighted pairs) and pairwise RankNet
(``rank:pairwise``, every pair of rows with different labels).

A query's rows are ``query_ptr[q] : query_ptr[q + 1]``; each query is handled by one
thread, which writes only its own rows, so the result does not depend on the number of
threads. The slow reference is ``tests/reference_rank.py``.
"""
from cython.parallel cimport parallel, prange, threadid
from libc.math cimport exp, fabs, isinf, isnan, log2, pow
from libc.stdint cimport int64_t
from libc.stdlib cimport free, malloc, qsort

from ._safety cimport check_n_threads, checked_calloc, checked_malloc


cdef struct scored_row:
    double score
    int64_t row


cdef inline int _descending(double a, double b) noexcept nogil:
    """-1 when ``a`` goes before ``b`` in descending order, 1 when after, 0 when tied.
    NaN goes last: qsort needs a total order (glibc's can read outside the array
    otherwise)."""
    if a > b:
        return -1
    if a < b:
        return 1
    if a == b:
        return 0
    return <int> isnan(a) - <int> isnan(b)


cdef int _by_score(const void * pa, const void * pb) noexcept nogil:
    """Descending score, ties by ascending row: the order of LightGBM's
    ``std::stable_sort`` of a query's rows."""
    cdef const scored_row * a = <const scored_row *> pa
    cdef const scored_row * b = <const scored_row *> pb
    cdef int c = _descending(a.score, b.score)
    if c != 0:
        return c
    return (a.row > b.row) - (a.row < b.row)


cdef int _by_value(const void * pa, const void * pb) noexcept nogil:
    """Descending doubles (the labels of the ideal ranking)."""
    return _descending((<const double *> pa)[0], (<const double *> pb)[0])


cdef inline double _add_pair(int64_t high, int64_t low, double delta_score, double delta_ndcg,
                             double sigmoid, double * grad, double * hess) noexcept nogil:
    """Add the lambdas of the pair (``high`` should rank above ``low``) to both rows;
    returns ``p_lambda`` (<= 0)."""
    cdef double p = 1.0 / (1.0 + exp(sigmoid * delta_score))
    cdef double p_hess = p * (1.0 - p)
    cdef double p_lambda = -sigmoid * delta_ndcg * p
    p_hess *= sigmoid * sigmoid * delta_ndcg
    grad[low] -= p_lambda
    hess[low] += p_hess
    grad[high] += p_lambda
    hess[high] += p_hess
    return p_lambda


cdef void _lambdarank_query(const double * raw, const double * label, int64_t start,
                            int64_t cnt, int truncation_level, bint normalize, double sigmoid,
                            const double * discount, scored_row * order, double * gain,
                            double * grad, double * hess) noexcept nogil:
    """LambdaMART lambdas of the query ``start : start + cnt`` (its grad and hess already
    zeroed, ``cnt >= 2``). ``order`` and ``gain`` hold ``cnt`` entries each."""
    cdef int64_t i, j, n_top, high, low
    cdef double max_dcg = 0.0, inverse_max_dcg, best_score, worst_score, delta_score
    cdef double delta_ndcg, sum_lambdas = 0.0, norm_factor
    cdef bint scale_by_score
    for i in range(cnt):
        order[i].score = raw[start + i]
        order[i].row = start + i
    qsort(order, cnt, sizeof(scored_row), _by_score)
    # The ideal DCG: the labels sorted descending ("gain" holds them for now)
    for i in range(cnt):
        gain[i] = label[start + i]
    qsort(gain, cnt, sizeof(double), _by_value)
    for i in range(min(<int64_t> truncation_level, cnt)):
        max_dcg += (pow(2.0, gain[i]) - 1.0) * discount[i]
    inverse_max_dcg = 1.0 / max_dcg if max_dcg > 0.0 else 0.0
    # From here on gain[i] is the gain of the row at position i (one pow per row, not
    # per pair)
    for i in range(cnt):
        gain[i] = pow(2.0, label[order[i].row]) - 1.0
    best_score = order[0].score
    worst_score = order[cnt - 1].score
    # all scores equal (the first round): no score gap to scale by
    scale_by_score = normalize and best_score != worst_score
    n_top = min(<int64_t> truncation_level, cnt - 1)
    for i in range(n_top):
        for j in range(i + 1, cnt):
            if label[order[i].row] == label[order[j].row]:
                continue
            if label[order[i].row] > label[order[j].row]:
                high, low = i, j
            else:
                high, low = j, i
            delta_score = order[high].score - order[low].score
            delta_ndcg = ((gain[high] - gain[low]) * fabs(discount[high] - discount[low])
                          * inverse_max_dcg)
            if scale_by_score:
                delta_ndcg /= 0.01 + fabs(delta_score)
            sum_lambdas -= 2.0 * _add_pair(order[high].row, order[low].row, delta_score,
                                           delta_ndcg, sigmoid, grad, hess)
    if normalize and sum_lambdas > 0.0:
        norm_factor = log2(1.0 + sum_lambdas) / sum_lambdas
        for i in range(start, start + cnt):
            grad[i] *= norm_factor
            hess[i] *= norm_factor


cdef void _pairwise_query(const double * raw, const double * label, int64_t start,
                          int64_t cnt, double sigmoid, double * grad,
                          double * hess) noexcept nogil:
    """RankNet lambdas of the query ``start : start + cnt`` (its grad and hess already
    zeroed): every pair with different labels, in row order (no sort needed)."""
    cdef int64_t a, b
    for a in range(start, start + cnt - 1):
        for b in range(a + 1, start + cnt):
            if label[a] == label[b]:
                continue
            if label[a] > label[b]:
                _add_pair(a, b, raw[a] - raw[b], 1.0, sigmoid, grad, hess)
            else:
                _add_pair(b, a, raw[b] - raw[a], 1.0, sigmoid, grad, hess)


def ranking_gradients(const double[::1] raw, const double[::1] label, const double[::1] weight,
                      const int64_t[::1] query_ptr, bint lambdarank, int truncation_level,
                      bint normalize, double sigmoid, double[::1] grad, double[::1] hess,
                      int n_threads):
    """Fill ``grad`` and ``hess`` (one entry per row of ``raw``) with the ranking lambdas.

    Query ``q`` holds the rows ``query_ptr[q] : query_ptr[q + 1]`` (``query_ptr`` starts
    at 0, never decreases, ends at the number of rows; a query may be empty).

    Each pair of rows of a query with different labels, ``high`` the row of the higher
    label, has ``p = 1 / (1 + exp(sigmoid * (s_high - s_low)))`` and a weight ``d``;
    ``grad[high] -= sigmoid * d * p`` and ``grad[low] += sigmoid * d * p`` (a relevant row
    ranked too low has a negative gradient), and both rows' hess grows by
    ``sigmoid**2 * d * p * (1 - p)``.

    ``lambdarank=True``: LightGBM's ``lambdarank`` objective. The query's rows are sorted
    by score descending (ties: lower row first); only pairs with a row among the first
    ``truncation_level`` positions count, and ``d`` is the pair's NDCG change (gain
    ``2**label - 1``, discount ``1 / log2(2 + position)``, over the ideal DCG of the
    first ``truncation_level`` positions). ``normalize``: ``d`` is divided by
    ``0.01 + |s_high - s_low|`` (unless all the query's scores are equal), and the
    query's grad and hess are scaled by ``log2(1 + S) / S``, ``S`` the sum of
    ``2 * sigmoid * d * p`` over its pairs.

    ``lambdarank=False``: pairwise RankNet, every pair with ``d = 1``
    (``truncation_level`` and ``normalize`` are ignored): the derivatives of
    ``sum log(1 + exp(-sigmoid * (s_high - s_low)))`` over the pairs.

    Then each row's grad and hess are multiplied by ``weight`` (None: 1). Rows of queries
    without such a pair get 0.

    ValueError on inconsistent lengths, a bad ``query_ptr``, ``truncation_level < 1``,
    ``sigmoid`` not positive and finite, or ``n_threads < 1``.
    """
    cdef Py_ssize_t n = raw.shape[0], n_queries = query_ptr.shape[0] - 1
    cdef Py_ssize_t q, i
    cdef int64_t start, cnt, max_cnt = 0
    cdef bint weighted = weight is not None, buffers_ok = True
    cdef double * discount = NULL
    cdef int * failed = NULL
    cdef scored_row * order = NULL
    cdef double * gain = NULL
    cdef const double * w_ptr
    cdef double w

    check_n_threads(n_threads)
    if (label.shape[0] != n or grad.shape[0] != n or hess.shape[0] != n
            or (weighted and weight.shape[0] != n)):
        raise ValueError(f"label / weight / grad / hess must have one entry per row of raw "
                         f"({n})")
    if truncation_level < 1:
        raise ValueError(f"truncation_level must be >= 1, got {truncation_level}")
    if not sigmoid > 0.0 or isinf(sigmoid):
        raise ValueError(f"sigmoid must be positive and finite, got {sigmoid}")
    if n_queries < 0 or query_ptr[0] != 0 or query_ptr[n_queries] != n:
        raise ValueError(f"query_ptr must start at 0 and end at the number of rows ({n})")
    for q in range(n_queries):
        cnt = query_ptr[q + 1] - query_ptr[q]
        if cnt < 0:
            raise ValueError(f"query_ptr must be non-decreasing (query {q}: "
                             f"{query_ptr[q]} > {query_ptr[q + 1]})")
        max_cnt = max(max_cnt, cnt)
    if n == 0:
        return

    w_ptr = &weight[0] if weighted else NULL
    # Shared by all threads, read-only: the discount of each position
    discount = <double *> checked_malloc(max_cnt, sizeof(double), "ranking discounts")
    try:
        for i in range(max_cnt):
            discount[i] = 1.0 / log2(2.0 + i)
        failed = <int *> checked_calloc(n_threads, sizeof(int), "ranking thread flags")
        with nogil, parallel(num_threads=n_threads):
            # One sort buffer per thread, for all its queries (pairwise needs none)
            order = NULL
            gain = NULL
            buffers_ok = True
            if lambdarank:
                order = <scored_row *> malloc(max(max_cnt, 1) * sizeof(scored_row))
                gain = <double *> malloc(max(max_cnt, 1) * sizeof(double))
                buffers_ok = order != NULL and gain != NULL
                if not buffers_ok:
                    failed[threadid()] = 1
            for q in prange(n_queries, schedule="dynamic"):
                start = query_ptr[q]
                cnt = query_ptr[q + 1] - start
                for i in range(start, start + cnt):
                    grad[i] = 0.0
                    hess[i] = 0.0
                if cnt >= 2 and buffers_ok:
                    if lambdarank:
                        _lambdarank_query(&raw[0], &label[0], start, cnt, truncation_level,
                                          normalize, sigmoid, discount, order, gain,
                                          &grad[0], &hess[0])
                    else:
                        _pairwise_query(&raw[0], &label[0], start, cnt, sigmoid, &grad[0],
                                        &hess[0])
                if weighted:
                    for i in range(start, start + cnt):
                        w = w_ptr[i]
                        grad[i] *= w
                        hess[i] *= w
            free(order)
            free(gain)
        for i in range(n_threads):
            if failed[i]:
                raise MemoryError(f"cannot allocate the ranking sort buffers: 2 x {max_cnt} "
                                  "entries per thread")
    finally:
        free(discount)
        free(failed)
