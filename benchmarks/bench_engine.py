"""Engine benchmark: cbudget vs LightGBM vs XGBoost.

Matched settings (``harness.library_params``); one training per (library, data set), timed
at each round count. Protocol: benchmarks/README.md.
"""
import sys
import time

import datasets
import harness as h
import numpy as np

LIBRARIES = ("cbudget", "lightgbm", "xgboost")
DATASETS = ("letters", "mnist", "synthetic")
ROWS, SYNTHETIC_ROWS = ("train",), 1_000_000
FULL = {"rounds": (100, 500)}  # round counts reported; training runs once for the largest
QUICK = {"rounds": (5, 10), "n_rows": 20_000, "train_rows": 2_000}
IDENT = ("library", "dataset")


def plan(args, names):
    spec = {"rounds": h.setting(args, "rounds"), "threads": args.threads,
            "n_rows": args.n_rows, "train_rows": args.train_rows}
    return [(name, f"{name} / {lib}", dict(spec, library=lib, dataset=name))
            for name in names
            for lib in h.parse_choices(args.libraries, LIBRARIES, "library")], {}


# ------------------------------------------------------------------------- child
TRAINERS = {"cbudget": h.train_cbudget_timed, "lightgbm": h.train_lightgbm_timed,
            "xgboost": h.train_xgboost_timed}
PREDICT = {  # the prediction of the first r rounds (None: all)
    "cbudget": lambda b, X, r: b.predict(X, iteration_range=None if r is None else (0, r)),
    "lightgbm": lambda b, X, r: b.predict(X, num_iteration=r),
    "xgboost": lambda b, X, r: b.inplace_predict(X, iteration_range=(0, r or 0))}


def run_point(spec):
    """Train and measure one (library, data set)."""
    library, rounds = spec["library"], spec["rounds"]
    data, result = h.start_child(spec, library)
    maxrss_after_load = h.maxrss_bytes()
    params = h.library_params(library, data["n_classes"], spec["threads"])
    (booster, _, t_total, _), timing = h.timed_training(TRAINERS[library], data, params,
                                                        max(rounds))

    def predict(X, r=None):
        return PREDICT[library](booster, X, r)
    X_test, y_test = data["X_test"], data["y_test"]
    quality = {}
    for r in rounds:
        p = predict(X_test, r)
        quality[str(r)] = {"accuracy": h.accuracy(p, y_test)}
        if data["n_classes"] == 2:
            quality[str(r)]["auc"] = datasets.auc(y_test, np.asarray(p).reshape(-1))
    predict_times = []
    with h.Timer() as t:
        for _ in range(3):
            t0 = time.perf_counter()
            predict(X_test)
            predict_times.append(time.perf_counter() - t0)
    result.update({
        "params": params, "rounds": rounds, **timing,
        "train_s": {str(r): timing["round_end_s"][r - 1] for r in rounds},
        "train_total_s": t_total, "other_cores_during_predict": t.other,
        "quality": quality, "predict_s": predict_times,
        "predict_rows_per_s": X_test.shape[0] / min(predict_times),
        "maxrss_after_load_mb": maxrss_after_load / 2**20,
        "peak_rss_mb": h.maxrss_bytes() / 2**20})
    result["rss_increase_mb"] = result["peak_rss_mb"] - result["rss_after_load_mb"]
    for key in ("bayes_auc_test", "bayes_accuracy_test"):
        if key in data:
            result[key] = data[key]
    return result


# ------------------------------------------------------------------------ report
def library_table(ok):
    """One row per library: training times (and their ratio to LightGBM's), prediction
    throughput, memory, test scores."""
    rounds = [str(k) for k in ok[0]["rounds"]]
    ref = next((r for r in ok if r["library"] == "lightgbm"), None)
    each = " / ".join(rounds)
    scores = {"accuracy": "accuracy", "auc": "AUC"} if ok[0]["n_classes"] == 2 else {
        "accuracy": "accuracy"}

    def per_round(value, spec):
        return lambda r: " / ".join(h.fmt(value(r, k), spec) for k in rounds)

    def vs_lightgbm(r, key, k=None):
        return h.ratio(*[x[key][k] if k else x[key] for x in (r, ref)]) if ref else None
    return h.points_table(ok, [
        ("library", lambda r: h.LIBRARY_LABELS[r["library"]]),
        *[(f"train s ({k} rounds)", lambda r, k=k: h.fmt(r["train_s"][k], ".2f"))
          for k in rounds],
        ("+ after last round s", h.col("after_last_round_s", ".2f")),
        (f"train ratio vs LightGBM ({each})",
         per_round(lambda r, k: vs_lightgbm(r, "train_s", k), ".2f")),
        ("predict rows/s", h.col("predict_rows_per_s", ",.0f")),
        ("predict ratio vs LightGBM", lambda r: h.fmt(vs_lightgbm(r, "predict_rows_per_s"), ".2f")),
        ("peak RSS MB", h.col("peak_rss_mb", ".0f")),
        ("RSS increase MB", h.col("rss_increase_mb", ".0f")),
        *[(f"test {name} ({each})", per_round(lambda r, k, m=m: r["quality"][k][m], ".4f"))
          for m, name in scores.items()]])


def render(doc):
    lines = []
    for name, results in doc["results"].items():
        ok = h.ok_results(results)
        lines += [f"### {h.title(name)}: "
                  + (h.sizes_text(ok[0]) if ok else ""), ""]
        lines += library_table(ok) + [""] if ok else []
    return lines


if __name__ == "__main__":
    sys.exit(h.main(sys.modules[__name__]))
