"""Thread-count resolution (once, in Python) and build-time OpenMP detection."""
import os

cdef extern from *:
    """
    #ifdef _OPENMP
    #include <omp.h>
    #define CBUDGET_OPENMP 1
    static int cbudget_max_threads(void) { return omp_get_max_threads(); }
    #else
    #define CBUDGET_OPENMP 0
    static int cbudget_max_threads(void) { return 1; }
    #endif
    """
    int CBUDGET_OPENMP
    int cbudget_max_threads()


def openmp_enabled():
    """True when the kernels were built with OpenMP."""
    return bool(CBUDGET_OPENMP)


def resolve_n_threads(n_jobs):
    """Number of OpenMP threads for ``n_jobs`` (None/0/-1: all available cores).

    Always 1 in a serial build.
    """
    if not CBUDGET_OPENMP:
        return 1
    if n_jobs is None or n_jobs == 0 or n_jobs == -1:
        return max(1, min(cbudget_max_threads(), os.cpu_count() or 1))
    if n_jobs < 0:
        return max(1, (os.cpu_count() or 1) + 1 + int(n_jobs))
    return int(n_jobs)
