"""Test-suite settings, here rather than in pyproject.toml because the suite also runs
copied away from the source tree (tools/check_packaging.sh, cibuildwheel).

Idle threads that spin: pytest loads this file before the test modules import numpy,
scipy and cbudget, so these defaults reach OpenBLAS and the OpenMP runtime. On a busy
machine (CI, shared hosts) spinning threads take the cores the working ones need:
scipy's L-BFGS-B, which CSTC's and ADAPT-LIN's solvers call on vectors of a few numbers,
wakes OpenBLAS's threads at every step (9x the CPU time of a small CSTC model; 4x for
ADAPT-LIN when threadpoolctl is not installed), and OpenMP's threads spin-wait between
kernel calls (the demo's Greedy Miser step: 21 s instead of 1 s with more runnable
processes than cores). Neither changes what a test computes; a variable already set is
kept.

The `slow` marker: checks of minutes on a busy machine are left out of `pytest -n auto tests`
(the README's command) and run by `pytest -n auto tests -m slow` (.ci/run runs both)."""
import logging
import os

import pytest

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: a check of minutes on a busy machine, left out "
                                       "unless selected with -m (`pytest -n auto tests -m slow`)")


def pytest_collection_modifyitems(config, items):
    if config.option.markexpr:          # -m given: the expression decides
        return
    slow = [item for item in items if item.get_closest_marker("slow")]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if not item.get_closest_marker("slow")]


@pytest.fixture(scope="session")
def dask_client():
    """A client of one LocalCluster for every Dask test of the session (starting one
    costs seconds): two single-threaded worker processes, so that what crosses between
    processes is pickled, as on a real cluster."""
    pytest.importorskip("distributed")
    from distributed import Client, LocalCluster
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           dashboard_address=":0", silence_logs=logging.ERROR)
    client = Client(cluster)
    yield client
    client.close()
    cluster.close()
