"""Make the README's pictures (docs/images/*.png) with cbudget.plotting.

From the repository root, after building in place (``python setup.py build_ext
--inplace``) or installing cbudget with matplotlib (``pip install ".[plot]"``)::

    PYTHONPATH=. python tools/make_figures.py [--out docs/images]

The data: the shipped UCI Letters data set, letters A-M against N-Z (the binary task of
``cbudget demo``), 8,000 training, 4,000 validation and 4,000 test rows; every feature
costs 1, so a prediction's cost is the number of distinct features it reads. Models
train with learning rate 0.2 and stop early on the validation error. About a minute on
two cores.

* ``cost_curve.png``: validation error against mean cost per input after each round,
  plain boosting against CEGB;
* ``acquisition.png``: the share of test inputs that buy each feature under CEGB;
* ``tree.png``: CEGB's first tree down to depth 3, with the test inputs' reach;
* ``frontier.png``: test accuracy against cost of a CEGB lambda sweep and a Greedy
  Miser lambda sweep (one point per lambda), and plain boosting.
"""
import argparse
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import cbudget  # noqa: E402
from cbudget.datasets import load_letters, train_valid_test_split  # noqa: E402
from cbudget.plotting import (  # noqa: E402
    plot_acquisition,
    plot_cost_curve,
    plot_frontier,
    plot_tree,
)

SPLIT = (8000, 4000, 4000)
CEGB_TRADEOFF = 0.02            # the CEGB model of the cost curve, acquisitions and tree
CEGB_SWEEP = (0.002, 0.005, 0.01, 0.02, 0.03, 0.05)
GREEDY_MISER_SWEEP = (0.3, 1.0, 3.0, 10.0, 30.0)
DPI = 100


def train(dtrain, dvalid, algorithm, cost_tradeoff=None, rounds=200):
    """A binary model of ``algorithm``, stopped early on the validation error."""
    params = {"algorithm": algorithm, "objective": "binary:logistic", "eval_metric": "error",
              "learning_rate": 0.2}
    if cost_tradeoff is not None:
        params["cost_tradeoff"] = cost_tradeoff
    return cbudget.train(params, dtrain, rounds, evals=[(dvalid, "valid")],
                         early_stopping_rounds=40, verbose_eval=False)


def test_point(model, X, y):
    """(mean cost per input, accuracy) on the test rows, as the model predicts by
    default (up to its best iteration)."""
    return float(model.predict_cost(X).mean()), float(np.mean((model.predict(X) > 0.5) == y))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "docs"
                                             / "images"))
    out = Path(parser.parse_args().out)
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()

    X, y, names = load_letters()
    train_idx, valid_idx, test_idx = train_valid_test_split(len(y), SPLIT)
    binary = (y >= 13).astype(np.float64)       # A-M: 0, N-Z: 1
    dtrain = cbudget.Dataset(X[train_idx], binary[train_idx], feature_names=names,
                             feature_costs=np.ones(X.shape[1]))
    dvalid = cbudget.Dataset(X[valid_idx], binary[valid_idx], reference=dtrain)
    X_test, y_test = X[test_idx], binary[test_idx]

    gbdt = train(dtrain, dvalid, "gbdt")
    cegb = {lam: train(dtrain, dvalid, "cegb", lam) for lam in CEGB_SWEEP}
    miser = {lam: train(dtrain, dvalid, "greedy_miser", lam, rounds=400)
             for lam in GREEDY_MISER_SWEEP}
    model = cegb[CEGB_TRADEOFF]

    ax = plot_cost_curve(gbdt, dvalid, metric="error", label="plain boosting (gbdt)")
    plot_cost_curve(model, dvalid, metric="error", ax=ax,
                    label=f"CEGB, lambda {CEGB_TRADEOFF:g}")
    ax.set_title("Letters A-M vs N-Z: validation error after each round")
    ax.figure.tight_layout()
    ax.figure.savefig(out / "cost_curve.png", dpi=DPI)

    ax = plot_acquisition(model, X_test)
    ax.figure.savefig(out / "acquisition.png", dpi=DPI)

    ax = plot_tree(model, 0, X=X_test, max_depth=3)
    ax.figure.savefig(out / "tree.png", dpi=DPI)

    paths = {
        "CEGB (lambda sweep)": tuple(np.array(v) for v in
                                     zip(*(test_point(m, X_test, y_test)
                                           for m in cegb.values()))),
        "Greedy Miser (lambda sweep)": tuple(np.array(v) for v in
                                             zip(*(test_point(m, X_test, y_test)
                                                   for m in miser.values()))),
        "plain boosting": tuple(np.array([v]) for v in test_point(gbdt, X_test, y_test)),
    }
    for label, (costs, accuracy) in paths.items():
        print(f"{label}: " + ", ".join(f"cost {c:.2f} accuracy {a:.4f}"
                                       for c, a in zip(costs, accuracy)))
    ax = plot_frontier(paths, metric="accuracy")
    ax.set_ylabel("test accuracy")
    ax.set_title("Letters A-M vs N-Z: accuracy against cost (each feature costs 1)")
    ax.figure.tight_layout()
    ax.figure.savefig(out / "frontier.png", dpi=DPI)
    plt.close("all")

    for name in ("cost_curve", "acquisition", "tree", "frontier"):
        path = out / f"{name}.png"
        print(f"{path}: {path.stat().st_size / 1024:.0f} KB")
    print(f"{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
