"""Thread-count resolution (once, in Python) and build-time OpenMP detection.

How the count is chosen: cbudget/_threads.py and docs/architecture.md, "Kernels and
threads"."""
from .._threads import as_n_jobs, default_n_threads, n_threads_for, usable_cpu_count

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
    """Number of OpenMP threads for ``n_jobs``, any Python int or None.

    None, 0 and -1: the CPUs this process may use (affinity mask and cgroup CPU quota),
    no more than OpenMP's default (``OMP_NUM_THREADS``), fewer when the OpenMP runtime was
    started by another library and other threads are running
    (:func:`cbudget._threads.default_n_threads`); ``k > 0``: ``k``, no more than the usable
    CPUs; ``-k``: usable CPUs + 1 - k, at least 1. TypeError for a non-integer (bool and
    float included). Always 1 in a serial build.
    """
    n_jobs = as_n_jobs(n_jobs)  # TypeError for a non-integer, in a serial build too
    if not CBUDGET_OPENMP:
        return 1
    usable = usable_cpu_count()
    if n_jobs is None or n_jobs == 0 or n_jobs == -1:
        return n_threads_for(None, usable, default_n_threads(usable, cbudget_max_threads()))
    return n_threads_for(n_jobs, usable)
