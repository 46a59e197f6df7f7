"""Diagnosis of issue 43's ratio-100 misses (benchmarks/results/cascade_r100_diagnosis.md).

For one member: the budget search (as bench_cascade.run_search), and for the models it
keeps within ``factor`` x the ideal cost: which test inputs buy the test and the extra
feature, how they overlap the ideal policy's set (the most borderline by the cheap Bayes
posterior) and the truly borderline ones, and how accurate the model is on the inputs it
lets out without the test against the cheap Bayes decision there.

    python diag_cascade_r100.py bin_s20_r100 [--quick]
"""
import sys

import bench_cascade as bc
import numpy as np

import cbudget


def describe(model, data, name):
    """Per-model figures on the test split (see the module docstring)."""
    k, share, _ = bc.MEMBERS[name]
    X, y, hard = data["X_test"], data["y_test"], data["hard_test"]
    bought = model.acquisitions(X)
    test, extra = bought[:, 6], bought[:, 7]
    proba = np.asarray(model.predict(X))
    pred = (proba.reshape(-1) > 0.5).astype(int) if k == 2 else proba.argmax(axis=1)
    lc = bc.log_posteriors(X, share, k, False)
    lt = bc.log_posteriors(X, share, k, True)
    top = np.exp(lc.max(axis=1) - np.logaddexp.reduce(lc, axis=1))
    ideal_set = np.zeros(len(y), bool)
    ideal_set[np.argsort(top)[:round(share * len(y))]] = True
    bayes_c, bayes_t = lc.argmax(axis=1) == y, lt.argmax(axis=1) == y
    right = pred == y
    out = {"acc": right.mean(), "cost": model.predict_cost(X).mean(),
           "test_frac": test.mean(), "extra_frac": extra.mean(),
           "test_in_ideal": (test & ideal_set).sum() / max(test.sum(), 1),
           "ideal_tested": (test & ideal_set).sum() / ideal_set.sum(),
           "hard_tested": test[hard].mean(),
           "acc_out": right[~test].mean(), "bayes_c_out": bayes_c[~test].mean(),
           "acc_tested": right[test].mean() if test.any() else np.nan,
           "bayes_t_tested": bayes_t[test].mean() if test.any() else np.nan,
           # the ideal's decisions on this model's split of the inputs
           "bayes_split": np.where(test, bayes_t, bayes_c).mean()}
    return out


def main(name, quick):
    sizes = bc.QUICK if quick else bc.FULL
    rows = {p: sizes[f"{p}_rows"] for p in bc.ROWS}
    data = bc.load_member(name, rows)
    ideal = bc.ideal_cost(name)
    spec = {"threads": 1, "dataset": name}
    dtrain, dvalid = bc.cbudget_sets(data)
    params = {kk: v for kk, v in bc.cegb_base(spec, data).items() if kk != "eval_metric"}
    extra = dict(a.split("=") for a in sys.argv[3:] if "=" in a)
    path = cbudget.cost_path(params, dtrain, dvalid, n_points=int(extra.get("points", 16)),
                             num_boost_round=sizes["rounds"], cascades=True)
    print(f"{name}: ideal cost {ideal}, rows {rows}")
    eps = path.epsilons if path.epsilons is not None else [np.nan] * len(path)
    keys = None
    for i, model in enumerate(path.models):
        if not path.pareto[i] and path.costs[i] > 3 * ideal:
            continue
        d = describe(model, data, name)
        if d["cost"] > 2 * ideal:
            continue
        if keys is None:
            keys = list(d)
            print("idx lam stages eps " + " ".join(keys))
        st = path.stages[i] if path.stages is not None else None
        print(i, f"{path.lambdas[i]:.3g}", st, eps[i], " ".join(f"{d[kk]:.4f}" for kk in keys),
              "PICK" if i == path.best_index(1.2 * ideal) else "")


if __name__ == "__main__":
    main(sys.argv[1], "--quick" in sys.argv)
