"""Thread counts (cbudget/_threads.py, ``resolve_n_threads``) and how idle OpenMP threads
wait: any ``n_jobs`` integer trains and predicts, a loaded model's stored ``n_jobs`` too,
the default is the CPUs the process may use (affinity, cgroup quota), and importing
cbudget puts the OpenMP runtime's idle threads to sleep unless the user chose a policy.

The runs with huge ``n_jobs`` values are subprocesses: a regression (a crash in the OpenMP
runtime) fails the test instead of killing pytest."""
import functools
import json
import os
import subprocess
import sys
import tempfile
import textwrap

import numpy as np
import pytest

import cbudget
from cbudget import _threads
from cbudget._core._openmp_helpers import openmp_enabled, resolve_n_threads

SOURCE_ROOT = os.path.dirname(os.path.dirname(cbudget.__file__))
HUGE = (10**6, 2**31 - 1, 2**63, 10**30, -10**30, -(2**31))


def _data(n=400, m=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, m))
    y = (X[:, 0] + X[:, 1] * X[:, 2] > 0).astype(np.float64)
    return X, y


def _run(code, tmp_path, **env_changes):
    """``code`` in a fresh Python running this cbudget (not a source tree in the cwd), with
    ``env_changes`` (None: removed); returns its stdout."""
    env = dict(os.environ, PYTHONPATH=SOURCE_ROOT)
    for name, value in env_changes.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


# --------------------------------------------------------------------------------------
# n_jobs -> threads
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("n_jobs, usable, expected", [
    (None, 4, 4), (0, 4, 4), (-1, 4, 4), (1, 4, 1), (3, 4, 3), (4, 4, 4), (5, 4, 4),
    (10**6, 4, 4), (2**31 - 1, 4, 4), (10**30, 4, 4), (-2, 4, 3), (-4, 4, 1), (-5, 4, 1),
    (-10**30, 4, 1), (np.int64(2), 4, 2), (np.int32(-2), 4, 3), (None, 1, 1), (7, 1, 1),
    (0, 0, 1),
])
def test_n_threads_for(n_jobs, usable, expected):
    assert _threads.n_threads_for(n_jobs, usable) == expected


def test_n_threads_for_default_cap():
    """The default (None, 0, -1) is ``default`` when given (OMP_NUM_THREADS' cap), an
    explicit count is not."""
    assert [_threads.n_threads_for(n, 8, default=2) for n in (None, 0, -1, 6, -3)] == [2, 2, 2,
                                                                                       6, 6]


@pytest.mark.parametrize("bad", [1.5, 2.0, True, False, "2", np.float64(2.0), [2]])
def test_non_integer_n_jobs_is_a_type_error(bad):
    with pytest.raises(TypeError, match="n_jobs"):
        resolve_n_threads(bad)
    with pytest.raises(TypeError, match="n_jobs"):
        _threads.n_threads_for(bad, 4)


@pytest.mark.parametrize("n_jobs", HUGE + (None, 0, -1, 1, 2, -2))
def test_resolve_n_threads_any_int(n_jobs):
    n = resolve_n_threads(n_jobs)
    assert type(n) is int
    assert 1 <= n <= (_threads.usable_cpu_count() if openmp_enabled() else 1)


def test_default_is_the_usable_cpus(monkeypatch):
    if not openmp_enabled():
        pytest.skip("serial build: always 1 thread")
    monkeypatch.setattr(_threads, "usable_cpu_count", lambda *args: 1)
    # _openmp_helpers imported the function by name: patch the one it calls
    import cbudget._core._openmp_helpers as helpers
    monkeypatch.setattr(helpers, "usable_cpu_count", lambda *args: 1)
    assert [resolve_n_threads(n) for n in (None, 0, -1, 2, 10**6)] == [1] * 5


# --------------------------------------------------------------------------------------
# usable CPUs: affinity and cgroup quota
# --------------------------------------------------------------------------------------
@pytest.fixture
def affinity(monkeypatch):
    """Set the CPUs of the (fake) affinity mask: ``affinity(n)``."""
    def set_count(n):
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(n)), raising=False)
        if hasattr(os, "process_cpu_count"):
            monkeypatch.setattr(os, "process_cpu_count", lambda: n)
        monkeypatch.setattr(os, "cpu_count", lambda: 64)
    return set_count


def _cgroup(tmp_path, proc_lines, files):
    """A fake cgroup mount (``files``: relative path -> content) and /proc/self/cgroup."""
    root = tmp_path / "cgroup"
    for rel, content in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(content)
    root.mkdir(parents=True, exist_ok=True)
    proc = tmp_path / "proc_self_cgroup"
    proc.write_text("".join(line + "\n" for line in proc_lines))
    return str(root), str(proc)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="cgroups are Linux's")
@pytest.mark.parametrize("proc_lines, files, n_affinity, expected", [
    # no cgroup files: the affinity mask
    (["0::/"], {}, 6, 6),
    # cgroup v2 at the mount's root (a container): quota / period rounded up
    (["0::/"], {"cpu.max": "150000 100000\n"}, 8, 2),
    (["0::/"], {"cpu.max": "100000 100000\n"}, 8, 1),
    (["0::/"], {"cpu.max": "20000 100000\n"}, 8, 1),
    (["0::/"], {"cpu.max": "max 100000\n"}, 8, 8),
    (["0::/"], {"cpu.max": "400000 100000\n"}, 3, 3),   # the quota above the affinity
    (["0::/"], {"cpu.max": "garbage\n"}, 5, 5),
    # cgroup v2, the process in a nested cgroup: its own and its ancestors' limits
    (["0::/user.slice/job.scope"],
     {"cpu.max": "max 100000", "user.slice/cpu.max": "300000 100000",
      "user.slice/job.scope/cpu.max": "max 100000"}, 8, 3),
    (["0::/user.slice/job.scope"],
     {"user.slice/cpu.max": "max 100000",
      "user.slice/job.scope/cpu.max": "250000 100000"}, 8, 3),
    # cgroup v1 (CFS quota; -1: none), at the mount and nested
    (["4:cpu,cpuacct:/", "0::/"],
     {"cpu/cpu.cfs_quota_us": "50000\n", "cpu/cpu.cfs_period_us": "100000\n"}, 4, 1),
    (["4:cpu,cpuacct:/", "0::/"],
     {"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, 4, 4),
    (["3:cpuacct,cpu:/docker/abc"],
     {"cpu,cpuacct/docker/abc/cpu.cfs_quota_us": "200000",
      "cpu,cpuacct/docker/abc/cpu.cfs_period_us": "100000"}, 16, 2),
])
def test_usable_cpu_count(tmp_path, affinity, proc_lines, files, n_affinity, expected):
    affinity(n_affinity)
    root, proc = _cgroup(tmp_path, proc_lines, files)
    assert _threads.usable_cpu_count(root, proc) == expected


def test_usable_cpu_count_without_affinity(monkeypatch, tmp_path):
    """No affinity call (macOS, Windows before 3.13): ``os.cpu_count()``."""
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    monkeypatch.delattr(os, "process_cpu_count", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 3)
    root, proc = _cgroup(tmp_path, [], {})
    assert _threads.usable_cpu_count(root, proc) == 3
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert _threads.usable_cpu_count(root, proc) == 1


def test_cgroup_cpu_limit(tmp_path):
    root, proc = _cgroup(tmp_path, ["0::/"], {"cpu.max": "150000 100000"})
    assert _threads.cgroup_cpu_limit(root, proc) == pytest.approx(1.5)
    root, proc = _cgroup(tmp_path / "none", ["0::/"], {})
    assert _threads.cgroup_cpu_limit(root, proc) is None


def test_usable_cpu_count_on_this_machine():
    n = _threads.usable_cpu_count()
    assert 1 <= n <= (os.cpu_count() or 1)


# --------------------------------------------------------------------------------------
# training, prediction and loading with any n_jobs (subprocesses)
# --------------------------------------------------------------------------------------
TRAIN_AND_PREDICT = """
    import numpy as np
    import cbudget
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 5))
    y = (X[:, 0] + X[:, 1] * X[:, 2] > 0) + (X[:, 3] > 1.0) * {n_classes_minus_2}
    dtrain = cbudget.Dataset(X, y.astype(np.float64), feature_costs=[1.0, 2.0, 1.0, 3.0, 1.0])
    params = {params}
    one = cbudget.train(dict(params, n_jobs=1), dtrain, 5, verbose_eval=False)
    many = cbudget.train(dict(params, n_jobs={n_jobs}), dtrain, 5, verbose_eval=False)
    assert np.array_equal(one.predict(X), many.predict(X)), "models differ"
    assert np.array_equal(one.predict_cost(X), many.predict_cost(X))
    print("ok", many.n_threads())
"""
BINARY = {"objective": "binary:logistic"}


def _train_code(n_jobs, params, n_classes=2):
    return TRAIN_AND_PREDICT.format(n_jobs=n_jobs, params=repr(params),
                                    n_classes_minus_2=n_classes - 2)


def test_huge_n_jobs_trains_and_predicts(tmp_path):
    """Each huge count in turn, in one subprocess (starting one takes most of the time).
    BudgetRF grows ``n_threads`` trees at a time, GBDT multiclass grows a round's trees in
    parallel: both take the capped count too."""
    code = "".join(_train_code(n_jobs, dict(BINARY, algorithm="cegb", cost_tradeoff=0.001,
                                            num_leaves=8))
                   for n_jobs in (10**6, 2**31 - 1, -10**30))
    code += (_train_code(10**30, dict(BINARY, algorithm="budget_rf"))
             + _train_code(2**31 - 1, {"objective": "multi:softprob", "num_class": 3,
                                       "num_leaves": 8}, n_classes=3))
    out = _run(code, tmp_path).split()
    assert out[::2] == ["ok"] * 5
    assert all(1 <= int(n) <= (os.cpu_count() or 1) for n in out[1::2])


def test_loaded_model_with_huge_n_jobs_predicts(tmp_path):
    X, y = _data()
    booster = cbudget.train({"objective": "binary:logistic", "algorithm": "cegb",
                             "cost_tradeoff": 0.001, "num_leaves": 8, "n_jobs": 1},
                            cbudget.Dataset(X, y, feature_costs=[1.0] * 5), 5,
                            verbose_eval=False)
    path = tmp_path / "model.json"
    booster.save_model(path)
    doc = json.loads(path.read_text())
    assert "n_jobs" in doc["training_params"]
    doc["training_params"]["n_jobs"] = 10**6
    path.write_text(json.dumps(doc))
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "expected.npy", booster.predict(X))
    out = _run("""
        import numpy as np
        import cbudget
        model = cbudget.load_model("model.json")
        assert model.params["n_jobs"] == 10**6
        X = np.load("X.npy")
        assert np.array_equal(model.predict(X), np.load("expected.npy"))
        model.predict_cost(X)
        print("ok", model.n_threads())
    """, tmp_path)
    assert out.split()[0] == "ok"
    assert int(out.split()[1]) <= (os.cpu_count() or 1)


# --------------------------------------------------------------------------------------
# the OpenMP wait policy
# --------------------------------------------------------------------------------------
WAIT_ENV = {name: None for name in _threads.WAIT_SETTINGS}
# The spin count cbudget's runtime reports (omp_display_env, OpenMP 5.1; GCC 11+), in a
# fresh process; {before}: what runs before `import cbudget`; RUNTIME: the file of the
# runtime cbudget's kernels use (the system's libgomp.so.1, or the copy a wheel bundles)
SHOW_SPIN = """
    import ctypes, os, sys
    RUNTIME = {runtime!r}
    {before}
    import cbudget
    from cbudget import _threads
    print("state", _threads.wait_policy_state)
    print("env", os.environ.get("OMP_WAIT_POLICY"))
    sys.stdout.flush()
    ctypes.CDLL(RUNTIME).omp_display_env(1)  # 1: the GOMP_ ones too
"""


def _clean_env(**env):
    full_env = dict(os.environ, PYTHONPATH=SOURCE_ROOT)
    for name, value in {**WAIT_ENV, **env}.items():
        if value is None:
            full_env.pop(name, None)
        else:
            full_env[name] = value
    return full_env


@functools.cache
def _cbudget_libgomp():
    """The GNU OpenMP runtime file cbudget's kernels load (a fresh process that imports
    only cbudget), None without one (a serial build, another runtime, not Linux)."""
    if not (openmp_enabled() and sys.platform.startswith("linux")):
        return None
    code = ("import cbudget\n"
            "from cbudget._threads import openmp_runtimes_mapped\n"
            "print('\\n'.join(sorted(openmp_runtimes_mapped())))")
    proc = subprocess.run([sys.executable, "-c", code], env=_clean_env(), capture_output=True,
                          text=True, timeout=120, check=False, cwd=tempfile.gettempdir())
    found = [path for path in proc.stdout.split()
             if os.path.basename(path).startswith("libgomp")]
    return found[0] if proc.returncode == 0 and len(found) == 1 else None


@pytest.fixture
def runtime():
    """The file of the GNU OpenMP runtime cbudget's kernels use (the test is skipped
    without one)."""
    path = _cbudget_libgomp()
    if path is None:
        pytest.skip("the kernels use no GNU OpenMP runtime")
    return path


def _libgomp_spin(stderr):
    for line in stderr.splitlines():
        if "GOMP_SPINCOUNT" in line:
            return line.split("=", 1)[1].strip().strip("'")
    return None


def _show(tmp_path, runtime, before="", **env):
    code = textwrap.dedent(SHOW_SPIN.format(before=before, runtime=runtime))
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=_clean_env(**env),
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    lines = dict(line.split(" ", 1) for line in proc.stdout.splitlines())
    return lines["state"], lines["env"], _libgomp_spin(proc.stderr)


def test_import_makes_idle_threads_sleep(tmp_path, runtime):
    """Without a user setting, the runtime starts with spin count 0 (passive); the
    environment variable is gone again after the import."""
    assert _show(tmp_path, runtime) == ("passive", "None", "0")


@pytest.mark.parametrize("env, spin", [({"OMP_WAIT_POLICY": "ACTIVE"}, "30000000000"),
                                       ({"GOMP_SPINCOUNT": "1234"}, "1234")])
def test_user_wait_policy_is_kept(tmp_path, runtime, env, spin):
    state, value, effective = _show(tmp_path, runtime, **env)
    assert (state, effective) == ("user", spin)
    assert value == env.get("OMP_WAIT_POLICY", "None")


def test_runtime_loaded_before_cbudget_keeps_its_policy(tmp_path, runtime):
    """An OpenMP runtime started before cbudget (another library linking libgomp) has read
    its settings already: cbudget says so and leaves the environment alone."""
    state, value, effective = _show(tmp_path, runtime, before="ctypes.CDLL(RUNTIME)")
    assert (state, value, effective) == ("already loaded", "None", "300000")


def test_wait_policy_context_restores_the_environment(monkeypatch):
    monkeypatch.setattr(_threads, "wait_policy_state", _threads.wait_policy_state)
    for name in _threads.WAIT_SETTINGS:
        monkeypatch.delenv(name, raising=False)
    maps = iter([set(), {"/x/libgomp-1a2b3c4d.so.1.0.0"}])   # a runtime loaded meanwhile
    monkeypatch.setattr(_threads, "openmp_runtimes_mapped", lambda: next(maps))
    with _threads.passive_openmp_waiting():
        assert os.environ["OMP_WAIT_POLICY"] == "PASSIVE"
    assert "OMP_WAIT_POLICY" not in os.environ
    assert _threads.wait_policy_state == "passive"
    monkeypatch.setenv("OMP_WAIT_POLICY", "")               # empty: not a choice
    maps = iter([{"/usr/lib/libgomp.so.1"}] * 2)            # no runtime loaded meanwhile
    with _threads.passive_openmp_waiting():
        assert os.environ["OMP_WAIT_POLICY"] == "PASSIVE"
    assert os.environ["OMP_WAIT_POLICY"] == ""
    assert _threads.wait_policy_state == "already loaded"
    monkeypatch.setenv("KMP_BLOCKTIME", "5")
    with _threads.passive_openmp_waiting():
        assert os.environ["OMP_WAIT_POLICY"] == ""
    assert _threads.wait_policy_state == "user"


def test_runtimes_mapped_here():
    mapped = _threads.openmp_runtimes_mapped()
    if sys.platform.startswith("linux"):
        assert mapped is not None
        if _cbudget_libgomp() is not None:
            assert _cbudget_libgomp() in mapped


def _tasks(tmp_path, *states):
    """A fake /proc/self/task: one thread per state."""
    task_dir = tmp_path / "task"
    for tid, state in enumerate(states, 100):
        (task_dir / str(tid)).mkdir(parents=True)
        (task_dir / str(tid) / "stat").write_text(f"{tid} (python (x)) {state} 1 2 3\n")
    return task_dir


def test_other_runnable_tasks(tmp_path):
    """This process's own running threads (an OpenMP thread still spinning) are not others."""
    path = tmp_path / "loadavg"
    path.write_text("2.0 1.0 0.5 3/150 999\n")
    assert _threads.other_runnable_tasks(str(path), str(_tasks(tmp_path, "R", "S"))) == 2
    assert _threads.other_runnable_tasks(str(path), str(_tasks(tmp_path / "b", "R", "R"))) == 1
    assert _threads.other_runnable_tasks(str(path), str(tmp_path / "missing")) == 2
    path.write_text("")
    assert _threads.other_runnable_tasks(str(path)) is None
    assert _threads.other_runnable_tasks() is not None or not sys.platform.startswith("linux")


@pytest.mark.parametrize("loadavg, state, expected", [
    ("0.5 0.4 0.3 1/200 123", "already loaded", 4),   # only the caller runs: all 4
    ("3.0 2.0 1.0 3/200 123", "already loaded", 4),   # 2 others running on 8 CPUs: 6 free
    ("3.0 2.0 1.0 6/200 123", "already loaded", 3),   # 5 others: 3 free
    ("9.0 9.0 9.0 9/200 123", "already loaded", 1),   # 8 others: at least 1
    ("9.0 9.0 9.0 9/200 123", "passive", 4),          # passive waiting: the usable CPUs
    ("garbage", "already loaded", 4),
])
def test_default_n_threads(monkeypatch, tmp_path, loadavg, state, expected):
    path = tmp_path / "loadavg"
    path.write_text(loadavg)
    monkeypatch.setattr(_threads, "PROC_LOADAVG", str(path))
    monkeypatch.setattr(_threads, "PROC_SELF_TASK", str(_tasks(tmp_path, "R", "S")))
    monkeypatch.setattr(_threads, "_other_load", None)      # no cached reading
    monkeypatch.setattr(_threads, "wait_policy_state", state)
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    assert _threads.default_n_threads(4, 64) == expected
    assert _threads.default_n_threads(4, 1) == 1       # OMP_NUM_THREADS=1
