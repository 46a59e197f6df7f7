"""How many threads the kernels use and how their idle threads wait (docs/architecture.md,
"Kernels and threads").

* :func:`usable_cpu_count`: the CPUs this process may use, i.e. its affinity mask
  (``os.process_cpu_count()`` on Python 3.13+) limited by the CPU quota of its cgroup
  (v2 ``cpu.max``, v1 ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``), as loky does.
* :func:`n_threads_for`: the thread count of an ``n_jobs`` value, any Python int;
  :func:`default_n_threads`, that of ``n_jobs=None``.
* :func:`passive_openmp_waiting`: around the first import of the compiled kernels, asks
  the OpenMP runtime to put idle threads to sleep instead of spinning, unless the user chose
  a wait policy; when another library started the runtime first (it keeps its policy),
  :func:`default_n_threads` leaves out the CPUs other threads are running on.

``resolve_n_threads`` in ``_core/_openmp_helpers.pyx`` puts them together.
"""
from __future__ import annotations

import math
import operator
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

CGROUP_ROOT = "/sys/fs/cgroup"
PROC_SELF_CGROUP = "/proc/self/cgroup"
CGROUP_CACHE_S = 10.0
PROC_LOADAVG = "/proc/loadavg"
PROC_SELF_TASK = "/proc/self/task"
LOAD_CACHE_S = 1.0

# Environment variables by which a user (or a library) chose how OpenMP threads wait:
# any one of them set and cbudget leaves the waiting alone.
WAIT_SETTINGS = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME", "KMP_LIBRARY")
# What cbudget asks for otherwise: idle threads sleep at once (GNU libgomp: spin count 0,
# LLVM/Intel libomp: blocktime 0).
WAIT_POLICY = {"OMP_WAIT_POLICY": "PASSIVE"}
# The shared objects of the OpenMP runtimes the kernels may be linked with.
OPENMP_RUNTIMES = ("libgomp", "libomp", "libiomp")

# How the wait policy was handled at import (passive_openmp_waiting): "passive" (set by
# cbudget), "user" (the environment chose one), "already loaded" (the runtime had started
# before cbudget: it keeps its own policy) or "not applied" (not yet imported / no OpenMP).
wait_policy_state = "not applied"


def as_n_jobs(n_jobs: object) -> int | None:
    """``n_jobs`` as an int (None stays None); TypeError for anything else, bool included."""
    if n_jobs is None:
        return None
    if isinstance(n_jobs, bool):
        raise TypeError(f"n_jobs must be an integer or None, got {n_jobs!r}")
    try:
        return operator.index(n_jobs)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"n_jobs must be an integer or None, got {n_jobs!r} "
                        f"({type(n_jobs).__name__})") from None


def n_threads_for(n_jobs: object, usable: int, default: int | None = None) -> int:
    """Threads for ``n_jobs`` on ``usable`` CPUs: None, 0 and -1 give ``default`` (the
    usable count when None), ``k > 0`` gives ``min(k, usable)``, ``-k`` gives
    ``usable + 1 - k``; always at least 1 and at most ``usable``. Any Python int is
    accepted (no overflow); a non-integer (bool, float, str) raises TypeError."""
    n = as_n_jobs(n_jobs)
    usable = max(1, int(usable))
    if n is None or n == 0 or n == -1:
        n = usable if default is None else default
    elif n < 0:
        n = usable + 1 + n
    return max(1, min(n, usable))


def _affinity_cpu_count() -> int:
    """CPUs in this process's affinity mask (``os.cpu_count()`` where there is none)."""
    process_cpu_count = getattr(os, "process_cpu_count", None)
    if process_cpu_count is not None:  # Python 3.13+
        n = process_cpu_count()
    elif hasattr(os, "sched_getaffinity"):
        try:
            n = len(os.sched_getaffinity(0))
        except OSError:
            n = os.cpu_count()
    else:
        n = os.cpu_count()
    return max(1, n or 1)


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii") as f:
            return f.read()
    except (OSError, UnicodeDecodeError):
        return None


def _quota_v2(text: str | None) -> float | None:
    """CPUs of a cgroup v2 ``cpu.max`` (``"<quota> <period>"`` or ``"max <period>"``)."""
    parts = (text or "").split()
    if len(parts) != 2 or parts[0] == "max":
        return None
    try:
        quota, period = int(parts[0]), int(parts[1])
    except ValueError:
        return None
    return quota / period if quota > 0 and period > 0 else None


def _quota_v1(quota_text: str | None, period_text: str | None) -> float | None:
    """CPUs of cgroup v1 ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us`` (-1: no quota)."""
    try:
        quota, period = int((quota_text or "").strip()), int((period_text or "").strip())
    except ValueError:
        return None
    return quota / period if quota > 0 and period > 0 else None


def _cgroup_dirs(mount: str, own_path: str | None) -> list[str]:
    """``mount`` joined with the process's cgroup path and each of its ancestors (the
    limits of every ancestor apply), then ``mount`` itself (inside a container the
    process's cgroup is usually the mount's root)."""
    dirs = []
    if own_path:
        parts = [p for p in own_path.strip().split("/") if p and p not in (".", "..")]
        for k in range(len(parts), 0, -1):
            dirs.append(os.path.join(mount, *parts[:k]))
    dirs.append(mount)
    return dirs


def cgroup_cpu_limit(root: str = CGROUP_ROOT,
                     proc_cgroup: str = PROC_SELF_CGROUP) -> float | None:
    """The CPU quota of this process's cgroup in CPUs (e.g. 1.5), None without one: the
    smallest of the cgroup v2 ``cpu.max`` and v1 CFS quotas found for the process's cgroup
    (from ``proc_cgroup``) and its ancestors under ``root``."""
    v2_path, v1_path = None, None
    for line in (_read(proc_cgroup) or "").splitlines():
        hierarchy, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if hierarchy == "0" and controllers == "":
            v2_path = path
        elif "cpu" in controllers.split(","):
            v1_path = path
    limits = []
    for d in _cgroup_dirs(root, v2_path):
        limits.append(_quota_v2(_read(os.path.join(d, "cpu.max"))))
    for mount in (os.path.join(root, "cpu"), os.path.join(root, "cpu,cpuacct")):
        for d in _cgroup_dirs(mount, v1_path):
            limits.append(_quota_v1(_read(os.path.join(d, "cpu.cfs_quota_us")),
                                    _read(os.path.join(d, "cpu.cfs_period_us"))))
    found = [v for v in limits if v is not None]
    return min(found) if found else None


# this process's quota, read again after CGROUP_CACHE_S seconds: (time read, quota)
_own_limit: tuple[float, float | None] | None = None


def _own_cgroup_cpu_limit() -> float | None:
    """:func:`cgroup_cpu_limit` of this process, cached for ``CGROUP_CACHE_S`` seconds
    (reading it takes about 0.1 ms, and predictions resolve their thread count every call)."""
    global _own_limit
    now = time.monotonic()
    if _own_limit is None or not 0 <= now - _own_limit[0] < CGROUP_CACHE_S:
        _own_limit = (now, cgroup_cpu_limit())
    return _own_limit[1]


def usable_cpu_count(root: str = CGROUP_ROOT, proc_cgroup: str = PROC_SELF_CGROUP) -> int:
    """The CPUs this process may use: its affinity mask, limited by its cgroup's CPU quota
    rounded up (a quota of 1.5 CPUs gives 2); at least 1."""
    n = _affinity_cpu_count()
    if sys.platform.startswith("linux"):
        limit = (_own_cgroup_cpu_limit() if (root, proc_cgroup) == (CGROUP_ROOT, PROC_SELF_CGROUP)
                 else cgroup_cpu_limit(root, proc_cgroup))
        if limit is not None:
            n = min(n, max(1, math.ceil(limit)))
    return max(1, n)


def _own_running_threads(task_dir: str) -> int:
    """This process's threads in state R (running or runnable), at least 1 (the caller)."""
    try:
        tids = os.listdir(task_dir)
    except OSError:
        return 1
    running = 0
    for tid in tids:
        stat = _read(os.path.join(task_dir, tid, "stat")) or ""
        fields = stat.rsplit(")", 1)[-1].split()
        running += bool(fields) and fields[0] == "R"
    return max(1, running)


def other_runnable_tasks(path: str | None = None, task_dir: str | None = None) -> int | None:
    """Threads of other processes runnable on the machine right now: the running count of
    ``/proc/loadavg`` (``path``; the fourth field, ``running/total``) less this process's
    running threads (``/proc/self/task``, ``task_dir``: the caller, and OpenMP threads still
    spinning after a parallel region); None where unknown."""
    fields = (_read(path or PROC_LOADAVG) or "").split()
    try:
        running = int(fields[3].split("/")[0])
    except (IndexError, ValueError):
        return None
    return max(0, running - _own_running_threads(task_dir or PROC_SELF_TASK))


# other_runnable_tasks() as default_n_threads last read it: (time read, count)
_other_load: tuple[float, int | None] | None = None


def default_n_threads(usable: int, openmp_max: int) -> int:
    """The thread count of ``n_jobs=None``: the usable CPUs, no more than OpenMP's default
    ``openmp_max`` (``OMP_NUM_THREADS``). When the OpenMP runtime was started before cbudget
    with its own wait policy (``wait_policy_state == "already loaded"``, e.g. by LightGBM),
    its idle threads may spin: then no more threads than the CPUs no other thread is
    runnable on right now (at least 1), as a team larger than the free CPUs collapses."""
    global _other_load
    n = max(1, min(usable, openmp_max))
    if wait_policy_state == "already loaded":
        now = time.monotonic()   # read at most every LOAD_CACHE_S (0.15 ms; every predict)
        if _other_load is None or not 0 <= now - _other_load[0] < LOAD_CACHE_S:
            _other_load = (now, other_runnable_tasks())
        other = _other_load[1]
        if other is not None:
            n = max(1, min(n, (os.cpu_count() or 1) - other))
    return n


def openmp_runtimes_mapped() -> set[str] | None:
    """The files of the OpenMP runtimes mapped into this process (GNU libgomp, LLVM libomp,
    Intel libiomp, also under the hashed names of the copies wheels bundle); None where
    this cannot be told (no ``/proc/self/maps``)."""
    maps = _read("/proc/self/maps")
    if maps is None:
        return None
    paths = {parts[5].strip() for parts in (line.split(None, 5) for line in maps.splitlines())
             if len(parts) == 6}
    return {p for p in paths if os.path.basename(p).startswith(OPENMP_RUNTIMES)}


@contextmanager
def passive_openmp_waiting() -> Iterator[None]:
    """Run the first import of the compiled kernels inside this. Their OpenMP runtime reads
    its wait policy from the environment when it is loaded; unless the user chose one
    (``WAIT_SETTINGS``), ``OMP_WAIT_POLICY=PASSIVE`` is in the environment meanwhile and
    removed afterwards (child processes and runtimes loaded later see the user's
    environment). Idle threads then sleep at once instead of spinning up to 300,000
    rounds (libgomp's default, about 10 ms) after every parallel region, which on a shared
    CPU takes the time from the threads that have work.

    Sets ``wait_policy_state``: "passive", "user", "already loaded" (no OpenMP runtime was
    loaded by the import, but one is mapped: another library started it before cbudget and
    it keeps its own policy) or "not applied" (no OpenMP runtime: a serial build)."""
    global wait_policy_state
    if any(os.environ.get(name) for name in WAIT_SETTINGS):
        wait_policy_state = "user"
        yield
        return
    before = openmp_runtimes_mapped()
    saved = {name: os.environ.get(name) for name in WAIT_POLICY}
    os.environ.update(WAIT_POLICY)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    after = openmp_runtimes_mapped()
    if before is None or after is None or after - before:
        wait_policy_state = "passive"    # loaded by this import (or assumed so)
    else:
        wait_policy_state = "already loaded" if after else "not applied"
