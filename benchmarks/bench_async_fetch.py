"""Async fetch against the synchronous FeatureSource (issue 45): a CEGB model, 1,000
inputs, a fetch costing 10 ms per call (time.sleep for sync, asyncio.sleep for async).
Then faults: the async fetch with 5 % of its calls failing and 5 % running past the
timeout (seeded), on_error="missing", without and with one retry: no input lost, how many
inputs were degraded, and how accurate their predictions are against the same inputs
predicted with every feature present.

    PYTHONPATH=. python benchmarks/bench_async_fetch.py
"""
import asyncio
import time

import numpy as np

import cbudget

DELAY = 0.010
TIMEOUT = 0.050       # per attempt; a late call sleeps LATE, past it
LATE = 0.100
P_FAIL = P_LATE = 0.05
RUNS = 20


def main() -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 20))
    y = (X[:, :5].sum(axis=1) + 0.5 * rng.normal(size=3000) > 0).astype(float)
    costs = {"feature_costs": list(np.linspace(1.0, 5.0, 20))}
    dtrain = cbudget.Dataset(X[:2000], y[:2000], **costs)
    model = cbudget.train({"objective": "binary:logistic", "algorithm": "cegb", "n_jobs": 1,
                           "max_depth": 4, "cost_tradeoff": 1e-3}, dtrain, 50, verbose_eval=False)
    Xt, yt = X[2000:], y[2000:]

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
    faults(model, Xt, yt, eager)


def faults(model, Xt, yt, eager) -> None:
    """The async fetch with injected faults, on_error="missing", retries 0 and 1: RUNS
    seeded runs each (one run has only ~15 calls), counted together."""
    for retries in (0, 1):
        walls, calls, retried, errors, timeouts, lost = [], 0, 0, 0, 0, 0
        preds, hits = [], []
        for seed in range(RUNS):
            rng = np.random.default_rng(seed)   # the same draws, in call order, per seed

            async def afetch(features, rows, rng=rng):
                draw = rng.random()
                if draw < P_FAIL:
                    await asyncio.sleep(DELAY)
                    raise ConnectionError("injected outage")
                await asyncio.sleep(LATE if draw < P_FAIL + P_LATE else DELAY)
                return Xt[np.ix_(rows, features)]

            source = cbudget.FeatureSource(afetch, len(Xt), timeout=TIMEOUT,
                                           on_error="missing", retries=retries)
            start = time.perf_counter()
            pred = asyncio.run(model.apredict(source))
            walls.append(time.perf_counter() - start)
            lost += len(Xt) - int(np.isfinite(pred).sum())
            calls += len(source.calls)
            retried += sum(c.attempts > 1 for c in source.calls)
            errors += sum(f.reason.startswith("ConnectionError") for f in source.failures)
            timeouts += sum("took more than" in f.reason
                            for f in source.failures)
            preds.append(pred)
            hits.append(source.degraded_inputs)
        pred, hit = np.concatenate(preds), np.concatenate(hits)
        base, y = np.tile(eager, RUNS), np.tile(yt, RUNS)
        print(f"faults retries={retries} ({RUNS} runs): wall median "
              f"{np.median(walls) * 1e3:6.1f} ms, max {max(walls) * 1e3:6.1f} ms  "
              f"calls returned {calls} ({retried} after a retry)  failed after retries: "
              f"{errors} errors, "
              f"{timeouts} timeouts  inputs lost {lost}")
        print(f"  degraded inputs {hit.sum()} of {hit.size} ({hit.mean():.1%})")
        if hit.any():
            print(f"  on them: accuracy {((pred > 0.5) == y)[hit].mean():.3f} against "
                  f"{((base > 0.5) == y)[hit].mean():.3f} with the features present, same "
                  f"class {((pred > 0.5) == (base > 0.5))[hit].mean():.3f}, mean |p - p_eager| "
                  f"{np.abs(pred - base)[hit].mean():.4f}")
        print(f"  all inputs: accuracy {((pred > 0.5) == y).mean():.3f} against "
              f"{((base > 0.5) == y).mean():.3f}; the others equal eager: "
              f"{np.array_equal(pred[~hit], base[~hit])}")

if __name__ == "__main__":
    main()
