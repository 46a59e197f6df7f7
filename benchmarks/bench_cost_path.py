"""Cost path: one cbudget.cost_path call against bench_cegb.py's hand-picked lambdas.

Both train CEGB with bench_cegb.py's parameters and rounds (no early stopping); the
path's grid is geometric from lambda_max (computed from the training data) down to
lambda_max * eps. Every model is scored on the test set (accuracy, mean cost per input).
"""
import sys

import bench_cegb
import harness as h
import numpy as np

DATASETS = ("letters", "synthetic_costly")
IDENT = ("dataset", "method")
ROWS, SYNTHETIC_ROWS = ("train", "valid", "test"), h.SYNTHETIC_ROWS
FULL = {"rounds": bench_cegb.FULL["rounds"], "lambdas": bench_cegb.FULL["lambdas"],
        "n_points": 16, "eps": 1e-3}
QUICK = {"rounds": {"letters": 10, "synthetic_costly": 10},
         "lambdas": bench_cegb.QUICK["lambdas"], "n_points": 4,
         "train_rows": 2000, "n_rows": 20_000}
METHODS = ("hand_grid", "cost_path")


def plan(args, names):
    methods = h.parse_choices(args.methods, METHODS, "method")
    spec = {"threads": args.threads, "n_rows": args.n_rows, "train_rows": args.train_rows,
            "valid_rows": args.valid_rows, "test_rows": args.test_rows,
            "n_points": h.setting(args, "n_points"), "eps": h.setting(args, "eps")}
    jobs = [(d, f"{d} / {method}",
             dict(spec, dataset=d, method=method, rounds=h.setting(args, "rounds", d),
                  lambdas=list(h.setting(args, "lambdas", d))))
            for d in names for method in methods]
    return jobs, {"threads": args.threads}


def run_point(spec):
    """The models of one method on one data set, each scored on the test set."""
    import cbudget
    data, result = h.start_child(spec, "cbudget", keep_valid=True)
    params = bench_cegb.cegb_params("cbudget", spec["dataset"], data["n_classes"], 0.0,
                                    data["feature_costs"], n_threads=spec["threads"])
    dtrain = cbudget.Dataset(data["X_train"], data["y_train"], max_bin=255,
                             feature_names=data["feature_names"],
                             feature_costs=data["feature_costs"])
    dvalid = cbudget.Dataset(data["X_valid"], data["y_valid"], reference=dtrain)
    with h.Timer() as t:
        path = cbudget.cost_path(
            params, dtrain, dvalid, num_boost_round=spec["rounds"],
            **({"n_points": spec["n_points"], "eps": spec["eps"]}
               if spec["method"] == "cost_path" else {"lambdas": spec["lambdas"]}))
    points = []
    for lam, model, valid_cost in zip(path.lambdas, path.models, path.costs):
        cost = model.predict_cost(data["X_test"])
        points.append({"lambda": float(lam), "valid_mean_cost": float(valid_cost),
                       "accuracy": h.accuracy(model.predict(data["X_test"]), data["y_test"]),
                       "mean_cost": float(cost.mean()),
                       "features_used": int(model.used_features().size),
                       "n_splits": int(sum((tree["left"] != -1).sum() for tree in model.trees))})
    valid_costs = np.array([p["valid_mean_cost"] for p in points])
    return dict(result, method=spec["method"], rounds=spec["rounds"], points=points,
                lambda_max=path.lambda_max, **t.fields(), other_cores_during_train=t.other,
                cost_monotone=bool(np.all(np.diff(valid_costs) >= 0)))


def render(doc):
    lines = []
    for name, results in doc["results"].items():
        by = {r["method"]: r for r in h.ok_results(results)}
        if not by:
            continue
        first = next(iter(by.values()))
        lines += [f"### {h.title(name)}: {h.sizes_text(first)}, {first['rounds']} rounds", ""]
        for method, r in by.items():
            lines += [f"**{method.replace('_', ' ')}** ({r['train_s']:.0f} s for "
                      f"{len(r['points'])} models"
                      + (f"; lambda_max = {r['lambda_max']:.4g}; validation cost "
                         f"{'monotone' if r['cost_monotone'] else 'NOT monotone'} along "
                         "the grid" if r["lambda_max"] else "") + ")", ""]
            lines += h.points_table(r["points"], [
                ("lambda", lambda p: f"{p['lambda']:.4g}"), ("splits", h.col("n_splits", "d")),
                ("features used", h.col("features_used", "d")),
                ("valid mean cost", h.col("valid_mean_cost", ",.3f")),
                ("test mean cost", h.col("mean_cost", ",.3f")),
                ("test accuracy", h.col("accuracy", ".4f"))], "r") + [""]
        if len(by) == 2:
            lines += ["Each hand-picked lambda against the best cost-path model at no more "
                      "test cost:", ""]
            lines += h.comparison_table(by["cost_path"]["points"], by["hand_grid"]["points"],
                                        ("hand grid", "cost path", "mean cost", "accuracy"),
                                        lambda p: f"lambda={p['lambda']:.3g}") + [""]
    return lines


if __name__ == "__main__":
    sys.exit(h.main(sys.modules[__name__]))
