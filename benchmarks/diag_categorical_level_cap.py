"""Is a cap of 254 bins per categorical column the accuracy gap on the synthetic set?

LightGBM native (``bench_categorical.py``'s settings: ``harness.library_params``, 100
rounds) on ``datasets.make_synthetic_categorical`` with all levels, and with every
column of more than ``--keep`` levels capped as a binning of ``max_bin - 1`` level bins
would cap it: its ``--keep`` most frequent training levels kept, all others merged into
one level (missing stays missing). Prints the test AUC of both.

    cd benchmarks && PYTHONPATH=.. OMP_WAIT_POLICY=PASSIVE python diag_categorical_level_cap.py
"""
import argparse
import time

import datasets
import harness as h
import lightgbm as lgb
import numpy as np
import pandas as pd


def capped(data, keep):
    """The train / test frames with each categorical column of more than ``keep`` levels
    reduced to its ``keep`` most frequent training levels and one level for the rest."""
    out = {part: data[f"X_{part}"].copy() for part in ("train", "test")}
    for c in data["categorical"]:
        n_levels = len(data["X_train"][c].cat.categories)
        if n_levels <= keep:
            continue
        codes = data["X_train"][c].cat.codes.to_numpy()
        counts = np.bincount(codes[codes >= 0], minlength=n_levels)
        new = np.full(n_levels, keep, dtype=np.int64)
        new[np.argsort(-counts, kind="stable")[:keep]] = np.arange(keep)
        for part, frame in out.items():
            codes = data[f"X_{part}"][c].cat.codes.to_numpy()
            frame[c] = pd.Categorical.from_codes(np.where(codes < 0, -1, new[codes]),
                                                 categories=[f"l{j}" for j in range(keep + 1)])
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", type=int, default=254)
    parser.add_argument("--n-rows", type=int, default=1_000_000)
    parser.add_argument("--threads", type=int, default=h.N_THREADS)
    args = parser.parse_args()
    data = datasets.make_synthetic_categorical(n_samples=args.n_rows, seed=0)
    params = h.library_params("lightgbm", 2, args.threads)
    for label, parts in (("all levels", {p: data[f"X_{p}"] for p in ("train", "test")}),
                         (f"{args.keep} most frequent levels + one other",
                          capped(data, args.keep))):
        t = time.perf_counter()
        booster = lgb.train(params, lgb.Dataset(parts["train"], data["y_train"],
                                                params=params), 100)
        auc = datasets.auc(data["y_test"], booster.predict(parts["test"]))
        print(f"LightGBM native, {label}: test AUC {auc:.4f} "
              f"({time.perf_counter() - t:.1f} s)", flush=True)


if __name__ == "__main__":
    main()
