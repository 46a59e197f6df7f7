"""Contention benchmark: training time beside competing busy processes (cbudget vs LightGBM).

A 25-round CEGB training (``bench_cegb.py``'s settings, lambda 0.01; Letters unless
``--datasets`` names others) with the default thread count and with 1 thread, while 0, 1
and 2 other processes spin (``python -c "while True: pass"``, started and killed by each
child); LightGBM's CEGB on the same data in the same run as the anchor. ``--builds
NAME=PATH ...`` measures several cbudget checkouts side by side (each child imports
cbudget from its PATH), every (build, threads) and LightGBM once per repeat, interleaved.
Protocol: benchmarks/README.md.
"""
import hashlib
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import bench_cegb
import harness as h
import numpy as np

LIBRARIES = ("cbudget", "lightgbm")
DATASETS = h.COST_DATASETS   # --datasets; Letters unless given
IDENT = ("build", "library", "threads", "busy", "repeat")
ROWS, SYNTHETIC_ROWS = ("train",), h.SYNTHETIC_ROWS
# rounds and lambda (cbudget cost_tradeoff; LightGBM gets twice, as in bench_cegb.py) of one
# training; busy: the numbers of competing spinning processes; repeats of every cell
FULL = {"rounds": 25, "cost_tradeoff": 0.01, "busy": (0, 1, 2), "repeats": 5}
QUICK = {"rounds": 5, "repeats": 1, "train_rows": 3000}
THREADS = ("default", 1)   # the thread settings of every (build, library)
SPIN_UP_S = 0.3            # the busy processes run this long before the training starts
SPINNER = "while True: pass"


def add_arguments(parser):
    parser.set_defaults(datasets="letters")
    parser.add_argument(
        "--builds", nargs="+", default=None, metavar="NAME=PATH[,VAR=VALUE...]",
        help="cbudget checkouts to compare (PATH: the directory holding the cbudget package, "
             "built in place); VAR=VALUE items are set in that build's children before "
             "cbudget is imported, preload=MODULE imports MODULE first (e.g. lightgbm: its "
             "OpenMP runtime initialised before cbudget's). Default: the cbudget this "
             "Python imports, named 'current'. --threads is not used (the settings are "
             "the default thread count and 1)")


def parse_build(text):
    """``NAME=PATH[,VAR=VALUE...]`` -> (name, absolute path, environment, preload)."""
    name, sep, rest = text.partition("=")
    if not sep or not name or not rest:
        raise ValueError(f"--builds needs NAME=PATH[,VAR=VALUE...], got {text!r}")
    path, *items = rest.split(",")
    env, preload = {}, None
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--builds: {item!r} in {text!r} is not VAR=VALUE")
        if key == "preload":
            preload = value
        else:
            env[key] = value
    path = os.path.abspath(os.path.expanduser(path))
    if not os.path.isfile(os.path.join(path, "cbudget", "__init__.py")):
        raise ValueError(f"--builds: {path} holds no cbudget package")
    return name, path, env, preload


def plan(args, names):
    libraries = h.parse_choices(args.libraries, LIBRARIES, "library")
    if args.builds:
        builds = [parse_build(b) for b in args.builds]
    else:
        spec = importlib.util.find_spec("cbudget")
        if spec is None or spec.origin is None:
            raise ValueError("cbudget is not importable: set PYTHONPATH or give --builds")
        builds = [("current", str(Path(spec.origin).parents[1]), {}, None)]
    if len({b[0] for b in builds}) != len(builds):
        raise ValueError("--builds: every build needs its own name")
    base = {"rounds": h.setting(args, "rounds"), "cost_tradeoff": h.setting(args, "cost_tradeoff"),
            "train_rows": args.train_rows, "n_rows": args.n_rows, "threads": None}
    runners = ([dict(build=name, library="cbudget", build_path=path, env=env, preload=preload)
                for name, path, env, preload in builds] if "cbudget" in libraries else [])
    runners += [dict(build="-", library="lightgbm")] if "lightgbm" in libraries else []
    units = [dict(r, threads=t) for r in runners for t in THREADS]
    jobs = []
    for name in names:
        for repeat in range(h.setting(args, "repeats")):
            k = repeat % len(units)
            for busy in h.setting(args, "busy"):
                for u in units[k:] + units[:k]:  # the order rotates with the repeat
                    label = (f"{name} / repeat {repeat + 1} / {busy} busy / {u['library']}"
                             + (f" {u['build']}" if u["library"] == "cbudget" else "")
                             + f" / threads {u['threads']}")
                    jobs.append((name, label, dict(base, **u, dataset=name, busy=busy,
                                                   repeat=repeat + 1)))
    return jobs, {"builds": [{"name": n, "path": p, "env": e, "preload": pre,
                              "commit": git_commit(p)} for n, p, e, pre in builds],
                  "settings": {k: base[k] for k in ("rounds", "cost_tradeoff", "train_rows",
                                                    "n_rows")}}


def git_commit(path):
    """``<short commit>`` of the checkout at ``path`` (``+ changes`` when its tracked files
    differ from it), None outside git."""
    def git(*args):
        return subprocess.run(["git", "-C", path, *args], capture_output=True, text=True,
                              check=False)
    head = git("rev-parse", "--short", "HEAD")
    if head.returncode != 0:
        return None
    dirty = git("status", "--porcelain", "--untracked-files=no").stdout.strip()
    return head.stdout.strip() + (" + changes" if dirty else "")


# ------------------------------------------------------------------------- child
def process_cpu_ticks(pid):
    """User + system clock ticks of process ``pid`` so far (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    return int(fields[11]) + int(fields[12])


def libgomp_spin_counts():
    """{file name: spin count} of every GNU OpenMP runtime in this process, as the runtime
    reports it (``omp_display_env``, OpenMP 5.1, GCC 11+; its idle threads spin this many
    rounds before they sleep); {} without one."""
    import ctypes
    import tempfile
    with open("/proc/self/maps") as f:
        mapped = {parts[5].strip() for parts in (line.split(None, 5) for line in f)
                  if len(parts) == 6}
    paths = sorted(p for p in mapped if os.path.basename(p).startswith("libgomp"))
    out = {}
    for path in paths:
        runtime = ctypes.CDLL(path)
        if not hasattr(runtime, "omp_display_env"):
            continue
        with tempfile.TemporaryFile("w+") as tmp:  # the runtime prints to C's stderr
            sys.stderr.flush()
            saved = os.dup(2)
            os.dup2(tmp.fileno(), 2)
            try:
                runtime.omp_display_env(1)
            finally:
                os.dup2(saved, 2)
                os.close(saved)
            tmp.seek(0)
            text = tmp.read()
        spin = [line.split("=", 1)[1].strip().strip("'") for line in text.splitlines()
                if "GOMP_SPINCOUNT" in line]
        out[os.path.basename(path)] = spin[0] if spin else "?"
    return out


def openmp_settings():
    """The environment variables that set OpenMP's thread count and waiting."""
    return {k: v for k, v in sorted(os.environ.items())
            if k.startswith(("OMP_", "GOMP_")) or k in ("KMP_BLOCKTIME", "KMP_LIBRARY")}


def run_point(spec):
    """Train once beside ``spec["busy"]`` spinning processes."""
    library = spec["library"]
    if library == "cbudget":  # this build's cbudget, its environment before any import
        os.environ.update(spec["env"])
        sys.path.insert(0, spec["build_path"])
        if spec["preload"]:
            __import__(spec["preload"])
    env_at_start = openmp_settings()
    data, result = h.start_child(spec, library)
    costs = data["feature_costs"]
    params = bench_cegb.cegb_params(library, spec["dataset"], data["n_classes"],
                                    spec["cost_tradeoff"], costs, 0.0, 1)
    default = spec["threads"] == "default"
    if library == "cbudget":
        import cbudget
        from cbudget._core._openmp_helpers import resolve_n_threads
        params["n_jobs"] = None if default else int(spec["threads"])
        kwargs = {"feature_names": data["feature_names"], "feature_costs": costs}
        trainer = h.train_cbudget_timed
        result["build_path"] = os.path.dirname(os.path.dirname(cbudget.__file__))
    else:
        params["num_threads"] = 0 if default else int(spec["threads"])  # 0: OpenMP's default
        kwargs, trainer = {}, h.train_lightgbm_timed
    spinners = [subprocess.Popen([sys.executable, "-c", SPINNER]) for _ in range(spec["busy"])]
    try:
        time.sleep(SPIN_UP_S if spinners else 0.0)
        if library == "cbudget":  # the thread count training resolves, here and now
            result["n_threads_resolved"] = int(resolve_n_threads(params["n_jobs"]))
        ticks0 = sum(process_cpu_ticks(p.pid) for p in spinners)
        (booster, *_), timing = h.timed_training(trainer, data, params, spec["rounds"],
                                                 **kwargs)
        spin_s = (sum(process_cpu_ticks(p.pid) for p in spinners) - ticks0) \
            / os.sysconf("SC_CLK_TCK")
    finally:
        for p in spinners:
            p.kill()
            p.wait()
    proba = np.ascontiguousarray(booster.predict(data["X_test"]), dtype=np.float64)
    if library == "cbudget":  # how this build set up the waiting (None: before _threads)
        threads = sys.modules.get("cbudget._threads")
        result["wait_policy_state"] = getattr(threads, "wait_policy_state", None)
    result["libgomp_spin_counts"] = libgomp_spin_counts()
    wall = timing["train_s"]
    # cores the other processes kept busy, the benchmark's own spinners not counted
    spinner_cores = spin_s / max(wall, 1e-9)
    result.update({
        "build": spec["build"], "threads": spec["threads"], "busy": spec["busy"],
        "repeat": spec["repeat"], "rounds": spec["rounds"], "params": params,
        "env_at_start": env_at_start, "openmp_env_after_import": openmp_settings(),
        **timing, "spinner_cores": spinner_cores,
        "other_cores_during_train": max(0.0, timing["other_cores_during_train"] - spinner_cores),
        "accuracy": h.accuracy(proba, data["y_test"]),
        "prediction_sha256": hashlib.sha256(proba.tobytes()).hexdigest()[:16]})
    return result


# ------------------------------------------------------------------------ report
def _runner(r):
    return (r["library"], r["build"])


def _runner_label(runner, builds):
    library, build = runner
    if library == "lightgbm":
        return "LightGBM"
    extra = next((b for b in builds if b["name"] == build), {})
    details = [f"{k}={v}" for k, v in extra.get("env", {}).items()]
    details += [f"{extra['preload']} imported first"] if extra.get("preload") else []
    return f"cbudget {build}" + (f" ({', '.join(details)})" if details else "")


def _cell(values, spec=".2f"):
    if not values:
        return "n/a"
    text = format(statistics.median(values), spec)
    return text + (f" ({min(values):{spec}}-{max(values):{spec}})" if len(values) > 1 else "")


def render(doc):
    runs = [r for rs in doc["results"].values() for r in h.ok_results(rs)]
    versions = {}
    for r in runs:
        if r["library"] == "cbudget":
            versions.setdefault(r["build"], set()).add(r["version"])
    lines = ["Builds: " + "; ".join(
        f"**{b['name']}** `{b['path']}`" + (f" (git {b['commit']})" if b.get("commit") else "")
        + (f", cbudget {', '.join(sorted(versions[b['name']]))}" if b["name"] in versions
           else "") for b in doc.get("builds", [])) + ".", ""]
    for name, results in doc["results"].items():
        lines += [f"### {h.title(name)}", ""] if len(doc["results"]) > 1 else []
        lines += render_dataset(doc, h.ok_results(results))
    return lines


def render_dataset(doc, runs):
    if not runs:
        return ["No successful runs.", ""]
    busy_levels = sorted({r["busy"] for r in runs})
    present = {_runner(r) for r in runs}
    runners = [u for u in [("cbudget", b["name"]) for b in doc.get("builds", [])]
               + [("lightgbm", "-")] if u in present]
    cells = {}
    for r in runs:
        cells.setdefault((_runner(r), str(r["threads"]), r["busy"]), []).append(r)

    def values(runner, threads, busy, key):
        return [r[key] for r in cells.get((runner, threads, busy), []) if r.get(key) is not None]

    def threads_label(runner, threads):
        if threads != "default":
            return f"{threads}"
        n = sorted({r.get("n_threads_resolved") for b in busy_levels
                    for r in cells.get((runner, "default", b), [])} - {None})
        return "default" + (f" ({'/'.join(map(str, n))})" if n else "")

    first, settings = runs[0], doc.get("settings", {})
    n_rep = max(len(v) for v in cells.values())
    lines = [f"{h.title(first['dataset'])}: {h.sizes_text(first)}; CEGB, lambda "
             f"{settings.get('cost_tradeoff', 0):g} (LightGBM cegb_tradeoff twice that), "
             f"{first['rounds']} rounds, bench_cegb.py's settings otherwise. Up to {n_rep} "
             "repeats per cell, interleaved; every child starts its own busy processes "
             f"(`python -c \"{SPINNER}\"`) {SPIN_UP_S:g} s before training and kills them "
             "after it.", ""]
    # training time per cell
    rows = []
    for u in runners:
        for t in (str(t) for t in THREADS):
            rows.append([_runner_label(u, doc.get("builds", [])), threads_label(u, t)]
                        + [_cell(values(u, t, b, "train_s")) for b in busy_levels])
        rows.append(["", "**default / 1 thread**"] + [
            h.fmt(h.ratio(statistics.median(d), statistics.median(o)), ".2f")
            if (d := values(u, "default", b, "train_s")) and (o := values(u, "1", b, "train_s"))
            else "n/a" for b in busy_levels])
    lines += ["**Training seconds** (data set construction included, to the return of "
              "`train()`): median (min-max) over the repeats; *default / 1 thread* is the "
              "ratio of the medians (the issue's target with 1 busy process: at most 1.5). "
              "The thread count after *default* is cbudget's `resolve_n_threads(None)` in "
              "the child.", ""]
    lines += h.table(["run", "threads"] + [f"{b} busy" for b in busy_levels], rows,
                     "ll" + "r" * len(busy_levels)) + [""]
    # CPU per wall second and the machine's other load
    rows = [[_runner_label(u, doc.get("builds", [])), threads_label(u, t)]
            + [_cell([r["train_cpu_s"] / r["train_s"] for r in cells.get((u, t, b), [])])
               for b in busy_levels]
            + [_cell([r["other_cores_during_train"] for b in busy_levels
                      for r in cells.get((u, t, b), [])])]
            for u in runners for t in (str(t) for t in THREADS)]
    lines += ["**CPU seconds per wall second** of the training process (a process that "
              "waits passively uses less than its thread count; spinning threads use "
              "it whole), and the cores **other processes** kept busy during the "
              "trainings (the benchmark's own busy processes not counted: above about "
              "0.2 the machine was not quiet and the times are inflated).", ""]
    lines += h.table(["run", "threads"] + [f"{b} busy" for b in busy_levels]
                     + ["other processes' cores (all cells)"], rows,
                     "ll" + "r" * (len(busy_levels) + 1)) + [""]
    # the same model whatever the thread count and the load
    rows = []
    for u in runners:
        rs = [r for (v, _, _), c in cells.items() if v == u for r in c]
        hashes = sorted({r["prediction_sha256"] for r in rs})
        rows.append([_runner_label(u, doc.get("builds", [])), len(rs), len(hashes),
                     ", ".join(hashes), _cell([r["accuracy"] for r in rs], ".4f")])
    lines += ["**Models**: the distinct test predictions (sha256 of the float64 "
              "probabilities) over all runs of a row; 1 = the same model whatever the "
              "thread count and the load.", ""]
    lines += h.table(["run", "runs", "distinct predictions", "sha256 (16 hex digits)",
                      "test accuracy"], rows, "lrrll") + [""]
    rows = []
    for u in runners:
        rs = [r for (v, _, _), c in cells.items() if v == u for r in c]
        rows.append([_runner_label(u, doc.get("builds", [])),
                     ", ".join(sorted({json.dumps(r["env_at_start"]) for r in rs})),
                     ", ".join(sorted({str(r.get("wait_policy_state", "")) for r in rs})),
                     ", ".join(sorted({", ".join(f"{k}: {v}" for k, v in
                                                 r.get("libgomp_spin_counts", {}).items())
                                       for r in rs}))])
    lines += ["**OpenMP waiting**: the OpenMP variables in a child's environment before "
              "the import, cbudget's `_threads.wait_policy_state` (none before it existed) "
              "and the spin count of the GNU OpenMP runtime after training, as it reports "
              "it (`omp_display_env`: an idle thread spins this many rounds, about 10-40 ns "
              "each, before it sleeps; libgomp's default is 300000).", ""]
    lines += h.table(["run", "environment", "wait policy state", "libgomp spin count"],
                     rows, "llll") + [""]
    return lines


if __name__ == "__main__":
    sys.exit(h.main(sys.modules[__name__]))
