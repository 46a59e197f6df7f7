"""Gradients and hessians of the training objectives, in parallel over rows (the
per-round work that is not tree growth)."""
from cython.parallel cimport prange
from libc.math cimport exp

from ._safety cimport check_n_threads

# Smallest hessian of the logistic and softmax losses (keeps Newton steps finite).
cdef double MIN_HESSIAN = 1e-16
# Rows of one softmax block: each class column of the block is read and written
# contiguously (the arrays are Fortran ordered), not one cache line per class per row.
cdef enum:
    SOFTMAX_BLOCK = 64


cdef inline double _larger(double a, double b) noexcept nogil:
    """``fmax`` for numbers (never NaN here), inlined: libm's fmax is a call."""
    return a if a >= b else b


cdef int _check(Py_ssize_t n, Py_ssize_t n_y, Py_ssize_t n_grad, Py_ssize_t n_hess,
                const double[::1] weight, int n_threads) except -1:
    check_n_threads(n_threads)
    if n_y != n or n_grad != n or n_hess != n or (weight is not None and weight.shape[0] != n):
        raise ValueError(f"y / weight / grad / hess must have one entry per row of raw ({n})")
    return 0


def squared_error_gradients(const double[::1] raw, const double[::1] y,
                            const double[::1] weight, double[::1] grad, double[::1] hess,
                            int n_threads):
    """``grad = raw - y``, ``hess = 1``, times ``weight`` (None: 1)."""
    cdef Py_ssize_t i, n = raw.shape[0]
    cdef bint weighted = weight is not None
    _check(n, y.shape[0], grad.shape[0], hess.shape[0], weight, n_threads)
    cdef double w
    for i in prange(n, nogil=True, schedule="static", num_threads=n_threads):
        w = weight[i] if weighted else 1.0
        grad[i] = (raw[i] - y[i]) * w
        hess[i] = w


def logistic_gradients(const double[::1] raw, const double[::1] y,
                       const double[::1] weight, double[::1] grad, double[::1] hess,
                       int n_threads):
    """``p = sigmoid(raw)``, ``grad = p - y``, ``hess = max(p (1 - p), 1e-16)``, times
    ``weight`` (None: 1)."""
    cdef Py_ssize_t i, n = raw.shape[0]
    cdef bint weighted = weight is not None
    _check(n, y.shape[0], grad.shape[0], hess.shape[0], weight, n_threads)
    cdef double w, p
    for i in prange(n, nogil=True, schedule="static", num_threads=n_threads):
        w = weight[i] if weighted else 1.0
        p = 1.0 / (1.0 + exp(-raw[i]))
        grad[i] = (p - y[i]) * w
        hess[i] = _larger(p * (1.0 - p), MIN_HESSIAN) * w


cdef void _softmax_block(const double[:, :] raw, double[:, :] prob,
                         Py_ssize_t start, Py_ssize_t stop) noexcept nogil:
    """Softmax probabilities of rows ``start:stop`` (at most SOFTMAX_BLOCK) into
    ``prob``, class by class; each row's arithmetic is that of a row-by-row loop (the
    row's max, then its exponentials summed in class order, then divided by the sum)."""
    cdef double top[SOFTMAX_BLOCK]
    cdef double total[SOFTMAX_BLOCK]
    cdef Py_ssize_t i, k, n_classes = raw.shape[1]
    for i in range(start, stop):
        top[i - start] = raw[i, 0]
        total[i - start] = 0.0
    for k in range(1, n_classes):
        for i in range(start, stop):
            top[i - start] = _larger(top[i - start], raw[i, k])
    for k in range(n_classes):
        for i in range(start, stop):
            prob[i, k] = exp(raw[i, k] - top[i - start])
            total[i - start] = total[i - start] + prob[i, k]
    for k in range(n_classes):
        for i in range(start, stop):
            prob[i, k] = prob[i, k] / total[i - start]


def softmax(const double[:, :] raw, double[:, :] prob, int n_threads):
    """``prob[i] = softmax(raw[i])`` (any strides; rows in parallel): the probabilities
    :func:`softmax_gradients` computes."""
    cdef Py_ssize_t block, n = raw.shape[0]
    cdef Py_ssize_t n_blocks = (n + SOFTMAX_BLOCK - 1) // SOFTMAX_BLOCK
    check_n_threads(n_threads)
    if prob.shape[0] != n or prob.shape[1] != raw.shape[1] or raw.shape[1] < 1:
        raise ValueError(f"prob must have the shape of raw ({n}, {raw.shape[1]}), with at "
                         "least one class")
    for block in prange(n_blocks, nogil=True, schedule="static", num_threads=n_threads):
        _softmax_block(raw, prob, block * SOFTMAX_BLOCK, min((block + 1) * SOFTMAX_BLOCK, n))


def softmax_gradients(const double[:, :] raw, const double[::1] y,
                      const double[::1] weight, double[::1, :] grad, double[::1, :] hess,
                      int n_threads):
    """Softmax cross-entropy: ``p = softmax(raw[i])``, ``grad[i, k] = p_k - [y_i = k]``,
    ``hess[i, k] = max(p_k (1 - p_k), 1e-16)``, times ``weight`` (None: 1).
    ``grad`` and ``hess`` are Fortran ordered (one contiguous column per class); ``raw``
    may have any strides (training keeps it Fortran ordered too: a tree adds its leaf
    values to one contiguous column)."""
    cdef Py_ssize_t n = raw.shape[0], n_classes = raw.shape[1]
    cdef bint weighted = weight is not None
    _check(n, y.shape[0], grad.shape[0], hess.shape[0], weight, n_threads)
    if grad.shape[1] != n_classes or hess.shape[1] != n_classes or n_classes < 1:
        raise ValueError(f"grad / hess must have the shape of raw ({n}, {n_classes}), "
                         "with at least one class")
    cdef const double * w = &weight[0] if weighted and n else NULL
    cdef Py_ssize_t block, n_blocks = (n + SOFTMAX_BLOCK - 1) // SOFTMAX_BLOCK
    cdef Py_ssize_t i, k, start, stop
    cdef double p, w_i
    for block in prange(n_blocks, nogil=True, schedule="static", num_threads=n_threads):
        start = block * SOFTMAX_BLOCK
        stop = min(start + SOFTMAX_BLOCK, n)
        _softmax_block(raw, grad, start, stop)
        for k in range(n_classes):
            for i in range(start, stop):
                w_i = w[i] if weighted else 1.0
                p = grad[i, k]
                grad[i, k] = (p - (1.0 if <Py_ssize_t> y[i] == k else 0.0)) * w_i
                hess[i, k] = _larger(p * (1.0 - p), MIN_HESSIAN) * w_i
