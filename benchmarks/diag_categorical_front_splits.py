"""Issue 44: is CEGB's front with Lending Club's categorical columns native no worse than
with them one-hot encoded (a column's indicators priced once, as a cost group)? One split
(results/categorical_merged.md) left it within the noise (test AUC SE 0.030), so here
over 10 splits (``datasets.load_lending_club_frame(seed=0..9)``), bench_categorical's
settings (CEGB, 100 rounds, 31 leaves, 12-point cost path, 2 threads). Per split, each
encoding's validation front is taken to test; the comparison is the difference of the
best test AUC at no more test cost, over the costs of both fronts up to the smaller of
their largest. From benchmarks/:
CBUDGET_DATA_DIR=... PYTHONPATH=.. python diag_categorical_front_splits.py
"""
import bench_categorical as bcat
import datasets
import harness as h
import numpy as np

import cbudget

SEEDS, ROUNDS, N_POINTS, THREADS = range(10), 100, 12, 2


def test_front(data, kind):
    """The validation front of CEGB's cost path with the categorical columns as ``kind``,
    as (test mean cost, test AUC) pairs."""
    data = bcat.represent(data, kind)
    extra = {"categorical_feature": data["categorical"]} if kind == "native" else {}
    dtrain = cbudget.Dataset(data["X_train"], data["y_train"], max_bin=255,
                             **bcat.pricing(data), **extra)
    dvalid = cbudget.Dataset(data["X_valid"], data["y_valid"], reference=dtrain)
    params = dict(bcat.params_for("cbudget", "binary", THREADS), algorithm="cegb")
    path = cbudget.cost_path(params, dtrain, dvalid, n_points=N_POINTS,
                             num_boost_round=ROUNDS)
    points = [{"valid_mean_cost": float(c), "valid_auc": datasets.auc(
        data["y_valid"], m.predict(data["X_valid"])), "mean_cost": float(
        np.mean(m.predict_cost(data["X_test"]))), "auc": datasets.auc(
        data["y_test"], m.predict(data["X_test"]))} for m, c in zip(path.models, path.costs)]
    front = h.pareto(points, cost_key="valid_mean_cost", score_key="valid_auc")
    return [(p["mean_cost"], p["auc"]) for p in front]


def best_at(front, cost):
    within = [auc for c, auc in front if c <= cost + 1e-12]
    return max(within) if within else np.nan


def main():
    gaps = []
    for seed in SEEDS:
        data = datasets.load_lending_club_frame(seed=seed)
        native, onehot = test_front(data, "native"), test_front(data, "onehot")
        top = min(max(c for c, _ in native), max(c for c, _ in onehot))
        costs = sorted({c for c, _ in native + onehot if c <= top})
        diffs = np.array([best_at(native, c) - best_at(onehot, c) for c in costs])
        diffs = diffs[~np.isnan(diffs)]
        gaps.append(diffs.mean())
        print(f"split {seed}: native front {len(native)} models, one-hot {len(onehot)}; "
              f"native - one-hot best test AUC at no more cost, over {diffs.size} costs up "
              f"to {top:.2f}: mean {diffs.mean():+.4f}, min {diffs.min():+.4f}, "
              f"max {diffs.max():+.4f}", flush=True)
    g = np.array(gaps)
    print(f"over {g.size} splits: mean {g.mean():+.4f} +- {g.std(ddof=1) / np.sqrt(g.size):.4f}"
          f" (SE); native ahead in {int(np.sum(g > 0))} of {g.size}")


if __name__ == "__main__":
    main()
