"""CEGB benchmark: cbudget's cost-efficient gradient boosting vs LightGBM's built-in CEGB.

The same boosted models with per-input ("lazy") feature costs over lambda sweeps on the
data sets with costs; LightGBM runs with ``cegb_tradeoff = 2 * cost_tradeoff`` (its gain
has no factor 1/2: the same split criterion), the lambda of the tables is cbudget's. The
per-input cost of both libraries is the harness's leaf-path routine (for cbudget checked
against ``predict_cost``). Mapping, grids, options: benchmarks/README.md.
"""
import sys
import time

import datasets
import harness as h
import numpy as np

NAME, TITLE = "cegb", "CEGB benchmark: cbudget vs LightGBM (cost-efficient gradient boosting)"
LIBRARIES = ("cbudget", "lightgbm")
DATASETS = h.COST_DATASETS
INFO_LIBRARIES = ("lightgbm",)
SUBSET_OPTION = "libraries"
IDENT = ("library", "dataset", "lambda")
# Rounds and lambdas (cbudget cost_tradeoff) of the full run; the README says how they
# were chosen.
DEFAULT_ROUNDS = {"letters": 200, "mnist_multires": 60, "synthetic_costly": 200}
DEFAULT_LAMBDAS = {
    "letters": (0.0, 0.01, 0.03, 0.06, 0.1, 0.15, 0.2),
    "mnist_multires": (0.0, 0.001, 0.003, 0.01, 0.03, 0.1),
    "synthetic_costly": (0.0, 1e-6, 1e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2),
}
QUICK = {"rounds": {"letters": 10, "mnist_multires": 3, "synthetic_costly": 10},
         "lambdas": {"letters": (0.0, 0.01, 0.1), "mnist_multires": (0.0, 0.01),
                     "synthetic_costly": (0.0, 1e-4, 1e-3)},
         "train_rows": 2000, "n_rows": 20_000}
QUICK_HELP = "2,000 training rows, 20,000 synthetic rows, 3-10 rounds, 2-3 lambdas"
# LightGBM's histogram layout per data set (what its automatic test chose on the
# benchmark machine; deterministic=True asks for a forced one)
LIGHTGBM_LAYOUT = {"letters": "force_row_wise", "mnist_multires": "force_row_wise",
                   "synthetic_costly": "force_col_wise"}


def cegb_params(library, dataset, n_classes, lam, feature_costs, split_cost=0.0,
                n_threads=2, cbudget_algorithm="cegb"):
    """Parameters of ``library`` for trade-off ``lam`` (cbudget's cost_tradeoff)."""
    p = h.library_params(library, n_classes, n_threads)
    if library == "cbudget":
        p["algorithm"] = cbudget_algorithm
        if cbudget_algorithm == "cegb":
            p["cost_tradeoff"] = float(lam)
        return p  # feature costs and split_cost go on the cbudget.Dataset
    p.update({"deterministic": True, LIGHTGBM_LAYOUT[dataset]: True,
              "cegb_tradeoff": 2.0 * float(lam),
              "cegb_penalty_feature_lazy": [float(c) for c in feature_costs],
              "cegb_penalty_split": float(split_cost)})
    return p


def add_arguments(parser):
    parser.add_argument("--lambdas", default=None,
                        help="trade-offs (cbudget cost_tradeoff; LightGBM gets twice) for "
                             "every data set (default per data set, DEFAULT_LAMBDAS)")
    parser.add_argument("--rounds", type=int, default=None,
                        help="boosting rounds for every data set (default per data set: "
                             + ", ".join(f"{k} {v}" for k, v in DEFAULT_ROUNDS.items()) + ")")
    h.add_row_arguments(parser, ("train", "test"), h.SYNTHETIC_ROWS)
    parser.add_argument("--split-cost", type=float, default=0.0,
                        help="cost of one split node per input (cbudget Dataset split_cost, "
                             "LightGBM cegb_penalty_split); default 0")
    parser.add_argument("--cbudget-algorithm", default="cegb", choices=("cegb", "gbdt"),
                        help="gbdt: development stand-in that ignores lambda")


def plan(args, names):
    libraries = h.parse_choices(args.libraries, LIBRARIES, "library")
    if args.rounds is not None and args.rounds < 1:
        raise ValueError("--rounds must be >= 1")
    grids = {}
    for d in names:
        grids[d] = (args.rounds or (QUICK["rounds"] if args.quick else DEFAULT_ROUNDS)[d],
                    h.parse_values(args.lambdas) if args.lambdas else
                    list((QUICK["lambdas"] if args.quick else DEFAULT_LAMBDAS)[d]))
    spec = {"threads": args.threads, "split_cost": args.split_cost,
            "cbudget_algorithm": args.cbudget_algorithm, "n_rows": args.n_rows,
            "train_rows": args.train_rows, "test_rows": args.test_rows}
    # the children of one lambda run back to back: similar machine conditions
    jobs = [(d, f"{d} / {lib} / lambda={lam:g} / {rounds} rounds",
             dict(spec, library=lib, dataset=d, **{"lambda": lam}, rounds=rounds))
            for d, (rounds, lambdas) in grids.items() for lam in lambdas for lib in libraries]
    return jobs, {"plan": {d: {"rounds": r, "lambdas": ls} for d, (r, ls) in grids.items()},
                  "threads": args.threads, "split_cost": args.split_cost,
                  "cbudget_algorithm": args.cbudget_algorithm}


# ------------------------------------------------------------------------- child
def run_point(spec):
    """Train and measure one (library, data set, lambda)."""
    library, name, lam = spec["library"], spec["dataset"], float(spec["lambda"])
    split_cost = spec["split_cost"]
    version, location = h.library_version(library)
    data, t_load, rss_after_load = h.load_for_child(name, spec)
    costs = np.asarray(data["feature_costs"], dtype=np.float64)
    params = cegb_params(library, name, data["n_classes"], lam, costs, split_cost,
                         spec["threads"], spec["cbudget_algorithm"])
    kwargs = ({} if library == "lightgbm" else {"feature_names": data["feature_names"],
                                                 "feature_costs": costs, "split_cost": split_cost})
    (booster, *_), timing = h.timed_training(
        h.train_lightgbm_timed if library == "lightgbm" else h.train_cbudget_timed, data,
        params, spec["rounds"], **kwargs)
    X_test, y_test = data["X_test"], data["y_test"]
    proba = np.asarray(booster.predict(X_test))
    if data["n_classes"] == 2:
        proba = proba.reshape(-1)
        accuracy = float(np.mean((proba > 0.5) == (y_test == 1)))
    else:
        accuracy = float(np.mean(np.argmax(proba, axis=1) == y_test))
    t = time.perf_counter()
    check = {}
    if library == "cbudget":
        cost, n_acquired, tables, diff = h.check_leaf_path_costs(booster, X_test, costs,
                                                                  split_cost)
        check["cost_check_max_abs_diff"] = diff
    else:
        trees = booster.dump_model()["tree_info"]
        tables = h.PathTables([h.lightgbm_leaf_paths(t["tree_structure"]) for t in trees],
                              X_test.shape[1])
        cost, n_acquired = h.prediction_costs(booster.predict(X_test, pred_leaf=True),
                                              tables, costs, split_cost)
    t_cost = time.perf_counter() - t
    used = tables.used_features()
    result = {
        "library": library, "version": version, "location": location, "dataset": name,
        "lambda": lam, "n_train": int(data["X_train"].shape[0]),
        "n_test": int(X_test.shape[0]), "n_features": int(X_test.shape[1]),
        "n_classes": int(data["n_classes"]), "rounds": spec["rounds"],
        "n_trees": int(tables.n_trees), "params": params, "split_cost": split_cost,
        "load_s": t_load, **timing, "n_threads": spec["threads"], "accuracy": accuracy,
        "mean_cost": float(cost.mean()),
        **h.cost_fields(cost, n_acquired, costs, data, cut_test=bool(spec["test_rows"])),
        "features_used": int(used.shape[0]), "used_features_cost": float(costs[used].sum()),
        "cost_measure_s": t_cost, "rss_after_load_mb": rss_after_load / 2**20, **check}
    if data["n_classes"] == 2:
        result["auc"] = datasets.auc(y_test, proba)
    result["peak_rss_mb"] = h.maxrss_bytes() / 2**20
    return result


# ------------------------------------------------------------------------ report
def render(doc):
    lines = []
    if doc.get("cbudget_algorithm", "cegb") != "cegb":
        lines += [(f"**cbudget ran `algorithm=\"{doc['cbudget_algorithm']}\"` (development "
                  "stand-in): its lambda has no effect.**"), ""]
    for name, results in doc["results"].items():
        ok = h.ok_results(results)
        first = ok[0] if ok else None
        lines += [f"### {h.DATASET_TITLES.get(name, name)}: " + (
            f"{first['n_train']:,} train / {first['n_test']:,} test rows, "
            f"{first['n_features']} features, {first['rounds']} rounds "
            f"({first['n_trees'] // max(first['rounds'], 1)} tree(s) per round)"
            if first else ""), ""]
        binary = bool(first) and first["n_classes"] == 2
        by = {(r["library"], r["lambda"]): r for r in ok}
        head = ["lambda", "LightGBM cegb_tradeoff", "cbudget accuracy", "LightGBM accuracy"]
        head += ["cbudget AUC", "LightGBM AUC"] if binary else []
        head += ["cbudget mean cost", "LightGBM mean cost", "cbudget features used",
                 "LightGBM features used", "cbudget train s", "LightGBM train s",
                 "train ratio cbudget / LightGBM"]
        columns = [("accuracy", ".4f")] + ([("auc", ".4f")] if binary else []) + [
            ("mean_cost", ",.2f"), ("features_used", "d"), ("train_s", ".2f")]
        rows = []
        for lam in sorted({r["lambda"] for r in results}):
            c, g = by.get(("cbudget", lam)), by.get(("lightgbm", lam))
            rows.append([f"{lam:g}", f"{2 * lam:g}"]
                        + [h.fmt(r.get(key), spec) if r else "failed"
                           for key, spec in columns for r in (c, g)]
                        + [h.fmt(h.ratio(c["train_s"], g["train_s"]) if c and g else None,
                                 ".2f")])
        lines += h.table(head, rows, "r") + [""]
        cb = [r for r in ok if r["library"] == "cbudget"]
        lg = [r for r in ok if r["library"] == "lightgbm"]
        if cb and lg:
            lines += ["Accuracy at equal or lower cost (reference: LightGBM's points):", ""]
            lines += h.comparison_table(cb, lg, ("LightGBM", "cbudget", "mean cost", "accuracy"),
                                        lambda r: f"lambda={r['lambda']:g}") + [""]
    return lines


def plot(doc, path):
    def draw(ax, name, plt):
        for library, style in (("cbudget", "o-"), ("lightgbm", "s--")):
            h.curve(ax, [r for r in h.ok_results(doc["results"][name]) if r["library"] == library],
                    "mean_cost", "accuracy", style, label=h.LIBRARY_LABELS[library],
                    annotate=lambda r: f"{r['lambda']:g}", fontsize=7, markersize=5)
        h.finish_axis(ax, "mean prediction cost per test input", "test accuracy",
                      h.DATASET_TITLES.get(name, name).split(" (")[0])
    algorithm = doc.get("cbudget_algorithm", "cegb")
    return h.plot_panels(path, doc, [n for n, rs in doc["results"].items() if h.ok_results(rs)],
                         draw, "CEGB: accuracy vs cost (labels: lambda)"
                         + (f" - cbudget {algorithm} stand-in" if algorithm != "cegb" else ""),
                         "accuracy vs mean test cost, symlog cost axis", (5.2, 4.2), fontsize=10)


if __name__ == "__main__":
    sys.exit(h.main(sys.modules[__name__]))
