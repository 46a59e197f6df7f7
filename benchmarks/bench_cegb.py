"""CEGB benchmark: cbudget vs LightGBM (cost-efficient gradient boosting).

LightGBM runs with ``cegb_tradeoff = 2 * cost_tradeoff`` (the same split criterion); the
tables' lambda is cbudget's. Mapping and protocol: benchmarks/README.md.
"""
import sys
import time

import datasets
import harness as h
import numpy as np

LIBRARIES = ("cbudget", "lightgbm")
DATASETS = h.COST_DATASETS
IDENT = ("library", "dataset", "lambda")
ROWS, SYNTHETIC_ROWS = ("train", "test"), h.SYNTHETIC_ROWS
# Rounds and lambdas (cbudget cost_tradeoff; LightGBM gets twice) of the full run (the
# README says how they were chosen); split_cost: of one split node per input (cbudget
# Dataset split_cost, LightGBM cegb_penalty_split)
FULL = {"split_cost": 0.0,
        "rounds": {"letters": 200, "mnist_multires": 60, "synthetic_costly": 200},
        "lambdas": {"letters": (0.0, 0.01, 0.03, 0.06, 0.1, 0.15, 0.2),
                    "mnist_multires": (0.0, 0.001, 0.003, 0.01, 0.03, 0.1),
                    "synthetic_costly": (0.0, 1e-6, 1e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2)}}
QUICK = {"rounds": {"letters": 10, "mnist_multires": 3, "synthetic_costly": 10},
         "lambdas": {"letters": (0.0, 0.01, 0.1), "mnist_multires": (0.0, 0.01),
                     "synthetic_costly": (0.0, 1e-4, 1e-3)},
         "train_rows": 2000, "n_rows": 20_000}
# LightGBM's histogram layout per data set (what its automatic test chose on the
# benchmark machine; deterministic=True asks for a forced one)
LIGHTGBM_LAYOUT = {"letters": "force_row_wise", "mnist_multires": "force_row_wise",
                   "synthetic_costly": "force_col_wise"}


def cegb_params(library, dataset, n_classes, lam, feature_costs, split_cost=0.0, n_threads=2):
    """Parameters of ``library`` for trade-off ``lam`` (cbudget's cost_tradeoff)."""
    p = h.library_params(library, n_classes, n_threads)
    if library == "cbudget":  # feature costs and split_cost go on the cbudget.Dataset
        return dict(p, algorithm="cegb", cost_tradeoff=float(lam))
    p.update({"deterministic": True, LIGHTGBM_LAYOUT[dataset]: True,
              "cegb_tradeoff": 2.0 * float(lam),
              "cegb_penalty_feature_lazy": [float(c) for c in feature_costs],
              "cegb_penalty_split": float(split_cost)})
    return p


def plan(args, names):
    libraries = h.parse_choices(args.libraries, LIBRARIES, "library")
    grids = {d: (h.setting(args, "rounds", d), h.setting(args, "lambdas", d)) for d in names}
    split_cost = h.setting(args, "split_cost")
    spec = {"threads": args.threads, "split_cost": split_cost, "n_rows": args.n_rows,
            "train_rows": args.train_rows, "test_rows": args.test_rows}
    # the children of one lambda run back to back: similar machine conditions
    jobs = [(d, f"{d} / {lib} / lambda={lam:g} / {rounds} rounds",
             dict(spec, library=lib, dataset=d, **{"lambda": lam}, rounds=rounds))
            for d, (rounds, lambdas) in grids.items() for lam in lambdas for lib in libraries]
    return jobs, {"plan": {d: {"rounds": r, "lambdas": ls} for d, (r, ls) in grids.items()},
                  "threads": args.threads, "split_cost": split_cost}


# ------------------------------------------------------------------------- child
def run_point(spec):
    """Train and measure one (library, data set, lambda)."""
    library, lam, split_cost = spec["library"], float(spec["lambda"]), spec["split_cost"]
    data, result = h.start_child(spec, library)
    costs, X_test = data["feature_costs"], data["X_test"]
    params = dict(cegb_params(library, spec["dataset"], data["n_classes"], lam, costs,
                              split_cost, spec["threads"]), **spec.get("extra_params", {}))
    kwargs = ({} if library == "lightgbm" else {"feature_names": data["feature_names"],
                                                 "feature_costs": costs, "split_cost": split_cost})
    (booster, *_), timing = h.timed_training(
        h.train_lightgbm_timed if library == "lightgbm" else h.train_cbudget_timed, data,
        params, spec["rounds"], **kwargs)
    proba = np.asarray(booster.predict(X_test))
    t = time.perf_counter()
    if library == "cbudget":
        cost, n_acquired, tables, diff = h.check_leaf_path_costs(booster, X_test, costs, split_cost)
        result["cost_check_max_abs_diff"] = diff
    else:
        trees = booster.dump_model()["tree_info"]
        tables = h.PathTables([h.lightgbm_leaf_paths(t["tree_structure"]) for t in trees],
                              X_test.shape[1])
        cost, n_acquired, _ = h.prediction_costs(booster.predict(X_test, pred_leaf=True),
                                                 tables, costs, split_cost)
    used = tables.used_features()
    result.update({
        "lambda": lam, "rounds": spec["rounds"], "n_trees": int(tables.n_trees),
        "max_depth": int(tables.depths.max()), "params": params, "split_cost": split_cost,
        **timing,
        "accuracy": h.accuracy(proba, data["y_test"]), "mean_cost": float(cost.mean()),
        **h.cost_fields(cost, n_acquired, costs, data, cut_test=bool(spec.get("test_rows"))),
        "features_used": int(used.shape[0]), "used_features_cost": float(costs[used].sum()),
        "cost_measure_s": time.perf_counter() - t})
    if data["n_classes"] == 2:
        result["auc"] = datasets.auc(data["y_test"], proba.reshape(-1))
    return result


# ------------------------------------------------------------------------ report
def render(doc):
    lines = []
    for name, results in doc["results"].items():
        ok = h.ok_results(results)
        first = ok[0] if ok else None
        lines += [f"### {h.title(name)}: " + (
            f"{h.sizes_text(first)}, {first['rounds']} rounds "
            f"({first['n_trees'] // max(first['rounds'], 1)} tree(s) per round)"
            if first else ""), ""]
        by = {(r["library"], r["lambda"]): r for r in ok}
        binary = bool(first) and first["n_classes"] == 2
        columns = [("accuracy", "accuracy", ".4f"), *([("AUC", "auc", ".4f")] if binary else []),
                   ("mean cost", "mean_cost", ",.2f"), ("features used", "features_used", "d"),
                   ("train s", "train_s", ".2f")]
        rows = []
        for lam in sorted({r["lambda"] for r in results}):
            c, g = by.get(("cbudget", lam)), by.get(("lightgbm", lam))
            rows.append([f"{lam:g}", f"{2 * lam:g}"]
                        + [h.fmt(r.get(key), spec) if r else "failed"
                           for _, key, spec in columns for r in (c, g)]
                        + [h.fmt(h.ratio(c["train_s"], g["train_s"]) if c and g else None,
                                 ".2f")])
        lines += h.table(["lambda", "LightGBM cegb_tradeoff"]
                         + [f"{h.LIBRARY_LABELS[lib]} {c[0]}" for c in columns for lib in LIBRARIES]
                         + ["train ratio cbudget / LightGBM"], rows, "r") + [""]
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
                      h.title(name, short=True))
    return h.plot_panels(path, doc, [n for n, rs in doc["results"].items() if h.ok_results(rs)],
                         draw, "CEGB: accuracy vs cost (labels: lambda)",
                         "accuracy vs mean test cost, symlog cost axis", (5.2, 4.2), fontsize=10)


if __name__ == "__main__":
    sys.exit(h.main(sys.modules[__name__]))
