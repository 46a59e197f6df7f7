"""What categorical input costs: a DataFrame's levels mapped to codes by
``cbudget.Dataset`` and by prediction, against the same codes given as a float array.

    PYTHONPATH=. python benchmarks/bench_categorical_input.py [--rows 1000000]
        [--repeats 3] [--rounds 5]

Synthetic data (seed 0): ``--rows`` rows of five categorical columns -- strings of
1,000 levels, strings of 50 levels (as US states), a pandas ``category`` of 35 levels
(as loan sub-grades), a ``category`` of 1,000 levels and integer codes 0..199 -- and five
normal numeric columns; a random binary label. Per repeat (interleaved): build the
Dataset from the DataFrame and from its codes (``Dataset.data``, the float matrix the
engine reads), and predict the DataFrame and the codes with a gbdt model of ``--rounds``
rounds. It prints the fastest and the median time of each; it writes no results file.
"""
import argparse
import statistics
import time

import numpy as np
import pandas as pd

import cbudget

CATEGORICAL = ["s1000", "state", "grade", "c1000", "code"]


def make_frame(n_rows: int, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    words = np.array([f"l{i:04d}" for i in range(1000)], dtype=object)
    states = np.array([f"S{i:02d}" for i in range(50)], dtype=object)
    frame = pd.DataFrame({
        "s1000": words[rng.integers(0, 1000, n_rows)],
        "state": states[rng.integers(0, 50, n_rows)],
        "grade": pd.Categorical.from_codes(rng.integers(0, 35, n_rows),
                                           [f"G{i:02d}" for i in range(35)]),
        "c1000": pd.Categorical.from_codes(rng.integers(0, 1000, n_rows), list(words)),
        "code": rng.integers(0, 200, n_rows),
        **{f"x{i}": rng.normal(size=n_rows) for i in range(5)}})
    return frame, (rng.random(n_rows) < 0.5).astype(np.float64)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    frame, label = make_frame(args.rows)
    data = cbudget.Dataset(frame, label, categorical_feature=CATEGORICAL)
    codes = data.data
    model = cbudget.train({"objective": "binary:logistic"}, data, args.rounds,
                          verbose_eval=False)
    steps = {
        "Dataset(DataFrame)": lambda: cbudget.Dataset(frame, label,
                                                      categorical_feature=CATEGORICAL),
        "Dataset(codes)": lambda: cbudget.Dataset(codes, label,
                                                  categorical_feature=data.categories),
        "predict(DataFrame)": lambda: model.predict(frame),
        "predict(codes)": lambda: model.predict(codes),
    }
    times: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(args.repeats):
        for name, step in steps.items():
            start = time.perf_counter()
            step()
            times[name].append(time.perf_counter() - start)
    print(f"{args.rows} rows, 5 categorical + 5 numeric columns, {args.repeats} repeats")
    print(f"{'step':<22}{'fastest s':>11}{'median s':>11}")
    for name, seconds in times.items():
        print(f"{name:<22}{min(seconds):>11.3f}{statistics.median(seconds):>11.3f}")


if __name__ == "__main__":
    main()
