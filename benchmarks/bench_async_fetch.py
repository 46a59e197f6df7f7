"""Async fetch against the synchronous FeatureSource (issue 45): a CEGB model, 1,000
inputs, a fetch costing 10 ms per call (time.sleep for sync, asyncio.sleep for async).

    PYTHONPATH=. python benchmarks/bench_async_fetch.py
"""
import asyncio
import time

import numpy as np

import cbudget

DELAY = 0.010


def main() -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 20))
    y = (X[:, :5].sum(axis=1) + 0.5 * rng.normal(size=3000) > 0).astype(float)
    costs = {"feature_costs": list(np.linspace(1.0, 5.0, 20))}
    dtrain = cbudget.Dataset(X[:2000], y[:2000], **costs)
    model = cbudget.train({"objective": "binary:logistic", "algorithm": "cegb", "n_jobs": 1,
                           "max_depth": 4, "cost_tradeoff": 1e-3}, dtrain, 50, verbose_eval=False)
    Xt = X[2000:]

    def fetch(features, rows):
        time.sleep(DELAY)
        return Xt[np.ix_(rows, features)]

    async def afetch(features, rows):
        await asyncio.sleep(DELAY)
        return Xt[np.ix_(rows, features)]

    eager = model.predict(Xt)
    for name, make, run in (
            ("sync max_workers=1", lambda: cbudget.FeatureSource(fetch, len(Xt)),
             model.predict),
            ("sync max_workers=8", lambda: cbudget.FeatureSource(fetch, len(Xt), max_workers=8),
             model.predict),
            ("async", lambda: cbudget.FeatureSource(afetch, len(Xt)),
             lambda s: asyncio.run(model.apredict(s)))):
        source = make()
        start = time.perf_counter()
        pred = run(source)
        wall = time.perf_counter() - start
        assert np.array_equal(pred, eager)
        print(f"{name:20s} wall {wall * 1e3:8.1f} ms  calls {len(source.calls):4d}  "
              f"rounds {source.n_rounds}")


if __name__ == "__main__":
    main()
