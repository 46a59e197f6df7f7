"""Map raw feature values to uint8 or uint16 bins (quantile edges are found in dataset.py)."""
from cython.parallel cimport prange
from libc.math cimport isnan
from libc.stdint cimport int64_t, uint8_t

from ._safety cimport check_n_threads
from ._types cimport binned_t

ctypedef fused floating_t:
    float
    double


cdef inline Py_ssize_t _count_below(const double * edges, Py_ssize_t n,
                                    double x) noexcept nogil:
    """Number of ``edges[:n]`` (sorted) that are ``< x``: a branch-free binary search
    (a fixed number of steps with conditional moves; the data's order cannot mislead
    the branch predictor)."""
    cdef const double * base = edges
    cdef Py_ssize_t half
    if n == 0:
        return 0
    while n > 1:
        half = n >> 1
        base = base + half if base[half] < x else base
        n -= half
    return (base - edges) + (base[0] < x)


def map_to_bins(
    const floating_t[:, :] X,
    const double[::1] edges,
    const int64_t[::1] edges_indptr,
    const int missing_bin,
    binned_t[::1, :] out,
    int n_threads,
):
    """Bin every value of ``X`` in place into ``out``.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), float32 or float64, any layout
    edges : ndarray of float64
        The upper edges of all features, concatenated: feature ``f`` owns
        ``edges[edges_indptr[f]:edges_indptr[f + 1]]`` (sorted, strictly increasing).
        A value ``x`` falls in bin ``b`` = number of edges ``< x``, so that
        ``x <= edges[t]`` exactly when ``b <= t``.
    edges_indptr : ndarray of int64, shape (n_features + 1,)
    missing_bin : int
        Bin of NaN values (at most the largest value of ``out``'s dtype).
    out : ndarray of uint8 or uint16, shape (n_samples, n_features), Fortran order
    n_threads : int

    Raises ValueError when the shapes disagree, when ``edges_indptr`` does not split
    ``edges`` into the features' runs, when a feature has ``missing_bin`` edges or
    more (its top value bin would reach the missing bin), or when ``missing_bin`` does
    not fit ``out``'s dtype.
    """
    cdef Py_ssize_t n_samples = X.shape[0]
    cdef Py_ssize_t n_features = X.shape[1]
    cdef Py_ssize_t i, f
    cdef double x
    cdef int highest = 255 if binned_t is uint8_t else 65535
    check_n_threads(n_threads)
    if not 0 <= missing_bin <= highest:
        raise ValueError(f"missing_bin must be in [0, {highest}] for "
                         f"{'uint8' if binned_t is uint8_t else 'uint16'} bins, got "
                         f"{missing_bin}")
    if out.shape[0] != n_samples or out.shape[1] != n_features:
        raise ValueError(f"out has shape ({out.shape[0]}, {out.shape[1]}), X "
                         f"({n_samples}, {n_features})")
    if edges_indptr.shape[0] != n_features + 1:
        raise ValueError(f"edges_indptr has {edges_indptr.shape[0]} entries for "
                         f"{n_features} features (needs n_features + 1)")
    if edges_indptr[0] != 0 or edges_indptr[n_features] > edges.shape[0]:
        raise ValueError("edges_indptr must start at 0 and end within edges")
    for f in range(n_features):
        if not 0 <= edges_indptr[f + 1] - edges_indptr[f] < missing_bin:
            raise ValueError(f"feature {f} has {edges_indptr[f + 1] - edges_indptr[f]} "
                             f"edges: edges_indptr must be non-decreasing, with fewer "
                             f"than missing_bin ({missing_bin}) edges per feature")
    for i in prange(n_samples, nogil=True, schedule="static", num_threads=n_threads):
        for f in range(n_features):
            x = X[i, f]
            if isnan(x):
                out[i, f] = <binned_t> missing_bin
            else:
                out[i, f] = <binned_t> _count_below(
                    &edges[edges_indptr[f]], edges_indptr[f + 1] - edges_indptr[f], x)
