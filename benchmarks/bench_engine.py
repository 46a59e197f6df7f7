"""Engine benchmark: plain gradient boosting, cbudget vs LightGBM vs XGBoost.

Matched settings (``harness.library_params``); one child per (library, data set) trains
once for max(--rounds) rounds: training time at each of --rounds (binning included),
test accuracy (AUC), prediction throughput, memory. Protocol, options: README.md.
"""
import sys
import time

import datasets
import harness as h
import numpy as np

NAME, TITLE = "engine", "Engine benchmark: cbudget vs LightGBM vs XGBoost"
LIBRARIES = ("cbudget", "lightgbm", "xgboost")
DATASETS = ("letters", "mnist", "synthetic")
QUICK = {"rounds": "5,10", "n_rows": 20_000, "train_rows": 2_000}
QUICK_HELP = "rounds 5,10, 20,000 synthetic rows, 2,000 training rows"
INFO_LIBRARIES = ("lightgbm", "xgboost")
SUBSET_OPTION = "libraries"
IDENT = ("library", "dataset")
DATASET_TITLES = {
    "letters": "Letters (UCI, 26 classes)", "mnist": "MNIST (10 classes)",
    "synthetic": "Synthetic binary (benchmarks/datasets.py make_synthetic_binary, seed 0)"}


def add_arguments(parser):
    parser.add_argument("--rounds", default=None,
                        help="comma-separated round counts (default 100,500); training runs "
                             "once for the largest")
    h.add_row_arguments(parser, ("train",), synthetic_rows=1_000_000)


def parse_rounds(text):
    rounds = sorted({int(v) for v in str(text).split(",") if v.strip()})
    if not rounds or rounds[0] < 1:
        raise ValueError(f"--rounds needs positive integers, got {text!r}")
    return rounds


def plan(args, names):
    rounds = args.rounds or (QUICK["rounds"] if args.quick else "100,500")
    parse_rounds(rounds)
    spec = {"rounds": rounds, "threads": args.threads, "n_rows": args.n_rows,
            "train_rows": args.train_rows}
    return [(name, f"{name} / {lib}", dict(spec, library=lib, dataset=name))
            for name in names
            for lib in h.parse_choices(args.libraries, LIBRARIES, "library")], {}


# ------------------------------------------------------------------------- child
def _train_cbudget(data, params, n_rounds, clock):
    booster, t_dataset, t_total, _ = h.train_cbudget_timed(data, params, n_rounds, clock)
    return booster, t_dataset, t_total, lambda X, r=None: booster.predict(
        X, iteration_range=None if r is None else (0, r))


def _train_lightgbm(data, params, n_rounds, clock):
    booster, t_dataset, t_total, _ = h.train_lightgbm_timed(data, params, n_rounds, clock)
    return booster, t_dataset, t_total, lambda X, r=None: booster.predict(X, num_iteration=r)


def _train_xgboost(data, params, n_rounds, clock):
    import xgboost as xgb

    class RoundClock(xgb.callback.TrainingCallback):
        def after_iteration(self, model, epoch, evals_log):
            clock.tick()
            return False

    clock.start()
    dtrain = xgb.QuantileDMatrix(data["X_train"], data["y_train"], max_bin=params["max_bin"],
                                 nthread=params["nthread"])
    t_dataset = clock.since_start()
    booster = xgb.train(params, dtrain, num_boost_round=n_rounds, callbacks=[RoundClock()],
                        verbose_eval=False)
    return booster, t_dataset, clock.since_start(), lambda X, r=None: booster.inplace_predict(
        X, iteration_range=(0, 0) if r is None else (0, r))


TRAINERS = {"cbudget": _train_cbudget, "lightgbm": _train_lightgbm, "xgboost": _train_xgboost}


def run_point(spec):
    """Train and measure one (library, data set)."""
    library, name = spec["library"], spec["dataset"]
    rounds = parse_rounds(spec["rounds"])
    version, location = h.library_version(library)  # before the data: in the baseline
    data, t_load, rss_after_load = h.load_for_child(name, spec)
    maxrss_after_load = h.maxrss_bytes()
    params = h.library_params(library, data["n_classes"], spec["threads"])
    (_, _, t_total, predict), timing = h.timed_training(TRAINERS[library], data, params,
                                                        max(rounds))
    X_test, y_test = data["X_test"], data["y_test"]
    quality = {}
    for r in rounds:
        p = predict(X_test, r)
        if data["n_classes"] == 2:
            p = np.asarray(p).reshape(-1)
            quality[str(r)] = {"accuracy": float(np.mean((p > 0.5) == (y_test == 1))),
                               "auc": datasets.auc(y_test, p)}
        else:
            quality[str(r)] = {"accuracy": float(np.mean(np.argmax(p, axis=1) == y_test))}
    predict_times = []
    with h.Timer() as t:
        for _ in range(3):
            t0 = time.perf_counter()
            predict(X_test)
            predict_times.append(time.perf_counter() - t0)
    result = {
        "library": library, "version": version, "location": location, "dataset": name,
        "n_train": int(data["X_train"].shape[0]), "n_test": int(X_test.shape[0]),
        "n_features": int(X_test.shape[1]), "n_classes": int(data["n_classes"]),
        "params": params, "rounds": rounds, "load_s": t_load, **timing,
        "train_s": {str(r): timing["round_end_s"][r - 1] for r in rounds},
        "train_total_s": t_total, "other_cores_during_predict": t.other,
        "n_threads": spec["threads"], "quality": quality, "predict_s": predict_times,
        "predict_rows_per_s": X_test.shape[0] / min(predict_times),
        "rss_after_load_mb": rss_after_load / 2**20,
        "maxrss_after_load_mb": maxrss_after_load / 2**20,
        "peak_rss_mb": h.maxrss_bytes() / 2**20}
    result["rss_increase_mb"] = result["peak_rss_mb"] - result["rss_after_load_mb"]
    for key in ("bayes_auc_test", "bayes_accuracy_test"):
        if key in data:
            result[key] = data[key]
    return result


# ------------------------------------------------------------------------ report
def render(doc):
    lines = []
    for name, results in doc["results"].items():
        ok = h.ok_results(results)
        first = ok[0] if ok else None
        rounds = first["rounds"] if first else []
        lines += [f"### {DATASET_TITLES.get(name, name)}: " + (
            f"{first['n_train']:,} train / {first['n_test']:,} test rows, "
            f"{first['n_features']} features" if first else ""), ""]
        binary = bool(first) and first["n_classes"] == 2
        rs = " / ".join(str(r) for r in rounds)
        head = ([f"train s ({r} rounds)" for r in rounds]
                + ["+ after last round s", f"train ratio vs LightGBM ({rs})", "predict rows/s",
                   "predict ratio vs LightGBM", "peak RSS MB", "RSS increase MB",
                   f"test accuracy ({rs})"] + ([f"test AUC ({rs})"] if binary else []))
        ref = next((r for r in ok if r["library"] == "lightgbm"), None)
        rows = []
        for r in results:
            label = h.LIBRARY_LABELS[r["library"]]
            if "error" in r:
                rows.append([label, f"failed: {r['error']}"] + [""] * (len(head) - 1))
                continue
            train = [r["train_s"][str(k)] for k in rounds]
            row = [label] + [h.fmt(t, ".2f") for t in train] + [
                h.fmt(r["after_last_round_s"], ".2f"),
                " / ".join(h.fmt(h.ratio(t, ref["train_s"][str(k)] if ref else None), ".2f")
                           for t, k in zip(train, rounds, strict=True)),
                h.fmt(r["predict_rows_per_s"], ",.0f"),
                h.fmt(h.ratio(r["predict_rows_per_s"],
                              ref["predict_rows_per_s"] if ref else None), ".2f"),
                h.fmt(r["peak_rss_mb"], ".0f"), h.fmt(r["rss_increase_mb"], ".0f"),
                " / ".join(h.fmt(r["quality"][str(k)]["accuracy"], ".4f") for k in rounds)]
            if binary:
                row.append(" / ".join(h.fmt(r["quality"][str(k)]["auc"], ".4f")
                                      for k in rounds))
            rows.append(row)
        lines += h.table(["library", *head], rows, "l" + "r" * len(head)) + [""]
    return lines


if __name__ == "__main__":
    sys.exit(h.main(sys.modules[__name__]))
