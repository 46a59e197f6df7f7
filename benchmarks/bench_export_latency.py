"""Export latency: cbudget models served in every exported format, beside cbudget and LightGBM.

Issue 46's latency measurement: single-row and 10,000-row prediction time of a cbudget
model in every format it exports to, beside cbudget's own ``predict`` and LightGBM's own
model. Per data set (Lending Club, binary; Letters, 26 classes) and algorithm (gbdt,
cegb): train one cbudget model (``--rounds``: Lending Club 100, Letters 20 rounds, i.e.
520 trees; 31 leaves, learning rate 0.1, ``harness.library_params``; CEGB with the
loader's feature costs and ``LAMBDAS``) and LightGBM's own model with the same settings
(``lightgbm.train``, the reference); save the cbudget model as XGBoost JSON
(``save_model(format="xgboost")``), XGBoost JSON without the levels section
(``save_xgboost(levels=False)``, for Treelite), ONNX float64 and float32 graphs and
LightGBM text; load each in its runtime and time, interleaved: cbudget ``predict``;
``xgboost.Booster(model_file).inplace_predict``; ``treelite.gtil.predict``;
onnxruntime ``InferenceSession.run(["prediction"], ...)`` of the float64 graph (float64
rows) and of the float32 graph (the rows as float32); ``lightgbm.Booster(model_file)
.predict`` of the exported text; ``lleaves.Model`` (compiled once per model and cached by the
model file's hash in ``--workdir``, the compile time reported) ``.predict``; LightGBM's
own model's ``predict``. Every format's predictions are first checked equal to cbudget's
(to 1e-5, the largest difference reported). Single row: ``--single-calls`` calls, each
way once per call in turn, the test rows in order, median and p10-p90 microseconds per
call; batch: ``--batch-rows`` rows (the test rows repeated), ``--batch-calls`` calls
interleaved, median and min-max milliseconds. Threads: every library gets the run's
thread count (cbudget ``n_jobs``, XGBoost ``nthread``, Treelite ``nthread``, onnxruntime
``intra_op_num_threads`` with ``inter_op_num_threads`` 1, LightGBM ``num_threads``,
lleaves ``n_jobs``), for each of ``--thread-counts``; idle and, for the
``--busy-methods`` models, beside ``--busy`` spinning processes (started by the child
for the timed part only). OpenMP waits are passive (``OMP_WAIT_POLICY``, unless set).
"""
import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import harness as h
import numpy as np

# OpenMP threads sleep at barriers (unless the caller chose): the formats' runtimes (each
# library ships its own OpenMP) take turns in one process, and spinning workers of one
# starve the next on 2 busy cores (2 threads: 20-90 ms per single-row call instead of
# 0.1-1 ms); set before the libraries load, inherited by the children
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

DATASETS = ("lending_club", "letters")
IDENT = ("dataset", "algorithm", "threads", "busy")
ROWS = ()
FULL = {"rounds": {"lending_club": 100, "letters": 20}, "single_calls": 2000,
        "batch_calls": 20, "batch_rows": 10_000,
        "thread_counts": (1, 2)}
QUICK = {"rounds": 10, "single_calls": 200, "batch_calls": 3, "batch_rows": 1_000}
METHODS = ("gbdt", "cegb")
LAMBDAS = {"lending_club": 0.01, "letters": 0.1}   # CEGB's cost_tradeoff per data set
TOLERANCE = 1e-5
# (key, label, dtype of the rows it gets); cbudget first (the ratios' reference), then
# the served formats, LightGBM's own model last (the other reference)
FORMATS = (("cbudget", "cbudget `predict`", np.float64),
           ("xgboost", "XGBoost `inplace_predict`", np.float64),
           ("treelite", "Treelite `gtil.predict`", np.float64),
           ("onnx_float64", "onnxruntime, float64 graph", np.float64),
           ("onnx_float32", "onnxruntime, float32 graph (float32 rows)", np.float32),
           ("lightgbm_text", "LightGBM reading the exported text", np.float64),
           ("lleaves", "lleaves (compiled exported text)", np.float64),
           ("lightgbm_own", "LightGBM's own model (reference)", np.float64))
REFERENCES = ("cbudget", "lightgbm_own")


def add_arguments(parser):
    parser.add_argument("--busy", type=int, default=1,
                        help="spinning processes of the busy runs (default 1; 0: idle only)")
    parser.add_argument("--busy-methods", default="gbdt",
                        help="algorithms of the busy runs (default gbdt; comma-separated)")
    parser.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(),
                                                          "cbudget_export_latency"),
                        help="where compiled lleaves models are cached (by model hash)")


def plan(args, names):
    algorithms = h.parse_choices(args.methods, METHODS, "method")
    busy_algorithms = h.parse_choices(args.busy_methods, METHODS, "method")
    spec = {key: h.setting(args, key) for key in ("single_calls", "batch_calls", "batch_rows")}
    spec["workdir"] = str(Path(args.workdir).resolve())
    jobs = [(d, f"{d} / {a} / {t} thread(s) / {busy} busy",
             dict(spec, dataset=d, algorithm=a, threads=t, busy=busy,
                  rounds=h.setting(args, "rounds", d)))
            for d in names for a in algorithms
            for busy in [0] + ([args.busy] if args.busy and a in busy_algorithms else [])
            for t in h.setting(args, "thread_counts")]
    return jobs, {"settings": dict(spec, thread_counts=h.setting(args, "thread_counts"),
                                   busy=args.busy, rounds={d: h.setting(args, "rounds", d)
                                                           for d in names})}


# ------------------------------------------------------------------------- child
def load(name):
    """(X_train, y_train, X_test, n_classes, feature_costs) of a data set, float64."""
    import datasets
    data = datasets.load_lending_club(seed=0) if name == "lending_club" \
        else datasets.load_letters(seed=0)
    return (np.asarray(data["X_train"], np.float64), data["y_train"],
            np.asarray(data["X_test"], np.float64), int(data["n_classes"]),
            np.asarray(data["feature_costs"], np.float64))


def train_models(spec, X, y, n_classes, costs):
    """(cbudget model, LightGBM's own booster), trained on 2 threads (the same models in
    every run); predicting with the run's threads."""
    import lightgbm as lgb

    import cbudget
    params = h.library_params("cbudget", n_classes, 2)
    if spec["algorithm"] == "cegb":
        params.update(algorithm="cegb", cost_tradeoff=LAMBDAS[spec["dataset"]])
    model = cbudget.train(params, cbudget.Dataset(X, y, feature_costs=costs),
                          spec["rounds"], verbose_eval=False)
    model.params["n_jobs"] = spec["threads"]
    own = lgb.train(h.library_params("lightgbm", n_classes, 2), lgb.Dataset(X, y),
                    spec["rounds"])
    return model, own


def export(model, folder):
    """The model saved in every format: {format: path}."""
    from cbudget.interop.to_xgboost import save_xgboost
    paths = {"xgboost": folder / "model.json", "treelite": folder / "model_nolevels.json",
             "onnx_float64": folder / "model64.onnx", "onnx_float32": folder / "model32.onnx",
             "lightgbm_text": folder / "model.txt"}
    model.save_model(paths["xgboost"], format="xgboost")
    save_xgboost(model, paths["treelite"], levels=False)
    model.save_model(paths["onnx_float64"], format="onnx", dtype="float64")
    model.save_model(paths["onnx_float32"], format="onnx", dtype="float32")
    model.save_model(paths["lightgbm_text"], format="lightgbm")
    return paths


def compiled_lleaves(path, workdir):
    """lleaves' model of the exported text, compiled into ``workdir`` (named by the file's
    hash, the compile time beside it; a cached library is reused): (model, the seconds
    its compilation took, here or in the run that cached it)."""
    import lleaves
    text = Path(path).read_bytes()
    cache = Path(workdir) / f"lleaves_{hashlib.sha256(text).hexdigest()[:16]}.so"
    seconds = cache.with_suffix(".seconds")
    cache.parent.mkdir(parents=True, exist_ok=True)
    cached = cache.exists() and seconds.exists()
    if not cached:                  # a library without its time: compile it again
        cache.unlink(missing_ok=True)
    ll = lleaves.Model(model_file=str(path))
    with h.Timer() as t:
        try:
            ll.compile(cache=str(cache))
        except AttributeError as exc:       # llvmlite 0.45 dropped the legacy pass manager
            raise RuntimeError(f"lleaves cannot compile with this llvmlite ({exc}): "
                               "pip install 'llvmlite<0.45'") from exc
    if not cached:
        seconds.write_text(f"{t.wall}\n")
    return ll, float(seconds.read_text())


def predictors(model, own, paths, spec):
    """{format: function of a matrix (of the format's dtype) -> predictions}, and the
    lleaves compile time."""
    import lightgbm as lgb
    import onnxruntime as ort
    import treelite
    import xgboost
    threads = spec["threads"]
    xgb = xgboost.Booster(model_file=str(paths["xgboost"]))
    xgb.set_param({"nthread": threads})
    tl = treelite.frontend.load_xgboost_model(str(paths["treelite"]))
    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
    sessions = {k: ort.InferenceSession(str(paths[k]), options,
                                        providers=["CPUExecutionProvider"])
                for k in ("onnx_float64", "onnx_float32")}
    text = lgb.Booster(model_file=str(paths["lightgbm_text"]))
    ll, compile_s = compiled_lleaves(paths["lightgbm_text"], spec["workdir"])
    ways = {"cbudget": model.predict,
            "xgboost": xgb.inplace_predict,
            "treelite": lambda X: treelite.gtil.predict(tl, X, nthread=threads),
            "onnx_float64": lambda X: sessions["onnx_float64"].run(["prediction"],
                                                                   {"input": X})[0],
            "onnx_float32": lambda X: sessions["onnx_float32"].run(["prediction"],
                                                                   {"input": X})[0],
            "lightgbm_text": lambda X: text.predict(X, num_threads=threads),
            "lleaves": lambda X: ll.predict(X, n_jobs=threads),
            "lightgbm_own": lambda X: own.predict(X, num_threads=threads)}
    return ways, compile_s


def max_differences(ways, inputs, expected):
    """The largest absolute difference of every served format's predictions from
    cbudget's; AssertionError beyond TOLERANCE (a wrong answer timed is worthless)."""
    out = {}
    for key, _, dtype in FORMATS:
        if key in REFERENCES:
            continue
        got = np.asarray(ways[key](inputs[dtype]), dtype=np.float64)
        out[key] = float(np.max(np.abs(got.reshape(expected.shape) - expected)))
    wrong = {k: v for k, v in out.items() if not v <= TOLERANCE}
    if wrong:
        raise AssertionError(f"predictions differ from cbudget's by more than {TOLERANCE}: "
                             f"{wrong}")
    return out


def one_row_ways(ways, rows):
    """Per format, a function predicting the next one-row matrix of ``rows[dtype]`` (in
    order, cycling), so that interleaved calls see the same rows."""
    def way(key, dtype):
        state = {"i": 0}

        def call():
            x = rows[dtype][state["i"] % len(rows[dtype])]
            state["i"] += 1
            return ways[key](x)
        return call
    return {key: way(key, dtype) for key, _, dtype in FORMATS}


def run_point(spec):
    X_train, y_train, X_test, n_classes, costs = load(spec["dataset"])
    with h.Timer() as t_train:
        model, own = train_models(spec, X_train, y_train, n_classes, costs)
    batch = np.ascontiguousarray(np.resize(X_test, (spec["batch_rows"], X_test.shape[1])))
    inputs = {np.float64: batch, np.float32: batch.astype(np.float32)}
    rows = {dtype: [np.ascontiguousarray(X[i:i + 1]) for i in range(len(X_test))]
            for dtype, X in inputs.items()}
    with tempfile.TemporaryDirectory() as folder:
        paths = export(model, Path(folder))
        sizes = {k: p.stat().st_size for k, p in paths.items()}
        ways, compile_s = predictors(model, own, paths, spec)
        expected = model.predict(batch)
        differences = max_differences(ways, inputs, expected)
    single = one_row_ways(ways, rows)
    h.interleaved(50, **single)                                  # warm up every path
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                for _ in range(spec["busy"])]
    try:
        with h.Timer() as t:
            one = h.interleaved(spec["single_calls"], **single)
            many = h.interleaved(spec["batch_calls"], **{
                key: (lambda key=key, dtype=dtype: ways[key](inputs[dtype]))
                for key, _, dtype in FORMATS})
    finally:
        for p in spinners:
            p.kill()
            p.wait()

    def us(times):
        t = 1e6 * np.asarray(times)
        return {"median": float(np.median(t)), "p10": float(np.quantile(t, 0.1)),
                "p90": float(np.quantile(t, 0.9)), "n": len(t)}

    def ms(times):
        t = 1e3 * np.asarray(times)
        return {"median": float(np.median(t)), "min": float(t.min()), "max": float(t.max()),
                "n": len(t)}
    return {"dataset": spec["dataset"], "algorithm": spec["algorithm"],
            "threads": spec["threads"], "busy": spec["busy"], "rounds": spec["rounds"],
            "n_classes": n_classes, "n_features": X_test.shape[1], "n_test": len(X_test),
            "batch_rows": spec["batch_rows"], "trees": len(model.trees),
            "leaves": int(sum((t["left"] == -1).sum() for t in model.trees)),
            "lightgbm_own_trees": own.num_trees(),
            "features_used": int(model.used_features().size),
            "file_bytes": sizes, "max_difference": differences,
            "lleaves_compile_s": compile_s,
            "single_us": {k: us(v[0]) for k, v in one.items()},
            "batch_ms": {k: ms(v[0]) for k, v in many.items()},
            "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
            "model_train_s": t_train.wall, "train_s": t.wall, "train_cpu_s": t.cpu,
            "other_cores_during_train": t.other}


# ------------------------------------------------------------------------ report
def _machine(r):
    return "idle" if not r["busy"] else f"{r['busy']} busy process" + "es" * (r["busy"] > 1)


def _versions():
    """Versions of the serving libraries (the parent's; the children import the same)."""
    from importlib import metadata
    out = []
    for name in ("onnxruntime", "treelite", "lleaves", "llvmlite"):
        try:
            out.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            out.append(f"{name} not installed")
    return ", ".join(out)


def point_table(r):
    """One format per line: the largest difference from cbudget, single-row and batch
    times with their spread and the ratios to cbudget's predict and LightGBM's model."""
    one, many = r["single_us"], r["batch_ms"]
    rows = []
    for key, label, _ in FORMATS:
        diff = r["max_difference"].get(key)
        rows.append([label, "(reference)" if diff is None else f"{diff:.1g}",
                     f"{one[key]['median']:.1f}",
                     f"{one[key]['p10']:.1f}-{one[key]['p90']:.1f}",
                     *(h.fmt(h.ratio(one[key]["median"], one[ref]["median"]), ".2f")
                       for ref in REFERENCES),
                     f"{many[key]['median']:.2f}",
                     f"{many[key]['min']:.2f}-{many[key]['max']:.2f}",
                     *(h.fmt(h.ratio(many[key]["median"], many[ref]["median"]), ".2f")
                       for ref in REFERENCES)])
    n = f"{r['batch_rows']:,}"
    return h.table(["format", "max difference from cbudget", "1 row us (median)",
                    "p10-p90", "/ cbudget", "/ LightGBM's own",
                    f"{n} rows ms (median)", "min-max", "/ cbudget", "/ LightGBM's own"],
                   rows, "llrrrrrrrr")


def render(doc):
    ok = [r for rs in doc["results"].values() for r in h.ok_results(rs)]
    if not ok:
        return []
    s = doc["settings"]
    rounds = ", ".join(f"{d} {n}" for d, n in s["rounds"].items())
    lines = [f"Settings: rounds {rounds} (Letters: 26 trees a round), 31 leaves; single row: "
             f"{s['single_calls']:,} calls per format (median and p10-p90 microseconds per "
             f"call); batch: {s['batch_rows']:,} rows (the test rows repeated), "
             f"{s['batch_calls']} calls per format (median and min-max milliseconds); "
             "every format interleaved with the others, on the run's thread count "
             "(onnxruntime: intra_op_num_threads, inter_op_num_threads 1), OpenMP waits "
             f"{ok[0].get('omp_wait_policy')}. Max difference: "
             "largest absolute difference of the format's predictions from cbudget's on the "
             f"batch rows (checked <= {TOLERANCE:g}). Ratios: the format's median over "
             "cbudget `predict`'s and over LightGBM's own model's (trained with the same "
             f"settings: not the same trees). Serving libraries: {_versions()}.", ""]
    for r in ok:
        files = ", ".join(f"{k} {v / 1e6:.2f}" for k, v in r["file_bytes"].items())
        lines += [f"### {r['dataset']} / {r['algorithm']} / {r['threads']} thread"
                  + "s" * (r["threads"] > 1) + f" / {_machine(r)}", "",
                  f"{r['trees']} trees ({r['leaves']:,} leaves, {r['features_used']} of "
                  f"{r['n_features']} features; LightGBM's own model {r['lightgbm_own_trees']}"
                  f" trees); lleaves compile {r['lleaves_compile_s']:.1f} s; files (MB): "
                  f"{files}; other processes' cores while timing "
                  f"{r['other_cores_during_train']:.2f}.", ""]
        lines += point_table(r) + [""]
    return lines


if __name__ == "__main__":
    sys.exit(h.main(sys.modules[__name__]))
