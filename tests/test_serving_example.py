"""The serving example (examples/serving/app.py) through its HTTP interface, in process:
a real SQLite database read through aiosqlite, concurrent requests batched by
cbudget.serving.Predictor; answers equal eager prediction, faults give degraded answers."""
import asyncio
import importlib.util
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("starlette")
pytest.importorskip("aiosqlite")
httpx = pytest.importorskip("httpx")

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "serving" / "app.py"
N_ROWS = 60
if not EXAMPLE.is_file():      # the suite also runs copied away from the source tree
    pytest.skip("examples/serving is not beside this test suite", allow_module_level=True)


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    spec = importlib.util.spec_from_file_location("serving_example_app", EXAMPLE)
    app = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(app)
    tmp = tmp_path_factory.mktemp("serving")
    model = app.train_model(tmp / "model.json", rounds=20)
    _, _, X, _, names = app.letters_split()
    X = X[:N_ROWS]
    app.build_database(tmp / "features.db", X)
    return app, model, X, names, tmp / "features.db"


def _ask(service, endpoint, bodies):
    async def main():
        async with service.router.lifespan_context(service):
            transport = httpx.ASGITransport(app=service)
            async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
                answers = await asyncio.gather(*(http.post(f"/{endpoint}", json=body)
                                                 for body in bodies))
                stats = (await http.get("/stats")).json()
        return [a.json() for a in answers], stats
    return asyncio.run(main())


def test_batched_answers_equal_eager_prediction_and_cost(example):
    app, model, X, names, db = example
    service = app.make_app(model, app.FeatureDatabase(db), max_wait_ms=20)
    answers, stats = _ask(service, "predict", [{"id": i} for i in range(N_ROWS)])
    np.testing.assert_array_equal([a["prediction"] for a in answers], model.predict(X))
    np.testing.assert_allclose([a["cost"] for a in answers], model.predict_cost(X),
                               rtol=1e-12)
    assert not any(a["degraded"] for a in answers)
    # the requests shared their reads: fewer reads than requests times rounds
    assert stats["reads"]["async"] == stats["predictor"]["calls"]
    assert stats["reads"]["async"] < sum(a["rounds"] for a in answers)
    assert max(a["batch_size"] for a in answers) > 1


@pytest.mark.parametrize("endpoint", ["predict", "predict_upfront", "predict_sync"])
def test_every_endpoint_takes_the_cheap_features_from_the_request(example, endpoint):
    app, model, X, names, db = example
    cheap = [names.index(name) for name in app.CHEAP]
    bodies = [{"id": i, "known": {names[m]: float(X[i, m]) for m in cheap}}
              for i in range(0, N_ROWS, 3)]
    answers, _ = _ask(app.make_app(model, app.FeatureDatabase(db)), endpoint, bodies)
    np.testing.assert_array_equal([a["prediction"] for a in answers],
                                  model.predict(X[::3]))
    if endpoint == "predict":
        assert not any(set(a["fetched"]) & set(app.CHEAP) for a in answers)


def test_failed_reads_give_degraded_answers(example):
    # every read fails: the answers are those of eager prediction with the expensive
    # features missing, each saying which features it went without
    app, model, X, names, db = example
    cheap = [names.index(name) for name in app.CHEAP]
    database = app.FeatureDatabase(db, faults=app.Faults(fail_rate=1.0))
    service = app.make_app(model, database, on_error="missing")
    bodies = [{"id": i, "known": {names[m]: float(X[i, m]) for m in cheap}}
              for i in range(N_ROWS)]
    answers, stats = _ask(service, "predict", bodies)
    X_missing = np.full_like(X, np.nan)
    X_missing[:, cheap] = X[:, cheap]
    np.testing.assert_array_equal([a["prediction"] for a in answers],
                                  model.predict(X_missing))
    assert all(a["degraded"] and a["missing"] and not a["fetched"] for a in answers)
    assert all(reason == "ConnectionError: feature database unavailable"
               for a in answers for _, reason in a["missing"])
    assert stats["predictor"]["degraded"] == N_ROWS and stats["predictor"]["failed"] == 0
