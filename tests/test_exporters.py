"""The registry of model formats (cbudget.model_io.register_exporter): save_model looks
the format up; a format is one module that registers its writer and the models it holds."""
import ast
import warnings
from pathlib import Path

import numpy as np
import pytest

import cbudget
from cbudget import model_io

PACKAGE = Path(cbudget.__file__).resolve().parent


@pytest.fixture(scope="module")
def models():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 4))
    y = (X[:, 0] > 0).astype(float)
    data = cbudget.Dataset(X, y)
    return (cbudget.train({"objective": "binary:logistic"}, data, 2, verbose_eval=False),
            cbudget.train({"objective": "binary:logistic", "algorithm": "budget_rf"}, data,
                          2, verbose_eval=False))


def test_the_formats_are_registered():
    # cbudget's own first, then the interop exporters (in cbudget/__init__'s import order)
    assert list(model_io.EXPORTERS)[0] == "cbudget"
    assert {"lightgbm", "xgboost"} <= set(model_io.EXPORTERS)
    assert model_io.EXPORTERS["cbudget"].carries == set(model_io.MODEL_PARTS)


def test_what_a_format_leaves_out_warns(tmp_path, monkeypatch):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 4))
    y = (X[:, 0] + X[:, 1] > 0).astype(float)
    costs = {"feature_costs": [1.0, 2.0, 3.0, 4.0]}
    data = cbudget.Dataset(X, y, **costs)
    cegb = cbudget.train({"objective": "binary:logistic", "algorithm": "cegb",
                          "cost_stages": [(4, 0.1), (4, 0.5)]}, data, 8, verbose_eval=False)
    assert len(cegb.cost_stages) == 2
    monkeypatch.setitem(model_io.EXPORTERS, "plain", model_io.Exporter(
        lambda model, path: Path(path).write_text("x"), (object,), "anything"))
    with pytest.warns(cbudget.ExportWarning) as caught:
        cegb.save_model(tmp_path / "m.txt", format="plain")
    assert [w.filename for w in caught] == [__file__]
    message = str(caught[0].message)
    assert "the cost stages" in message and "the cost model" in message
    assert "exit rules" not in message
    # a format that carries them, or a model without them: no warning
    monkeypatch.setitem(model_io.EXPORTERS, "rich", model_io.Exporter(
        lambda model, path: Path(path).write_text("x"), (object,), "anything",
        frozenset(model_io.MODEL_PARTS)))
    plain = cbudget.train({"objective": "binary:logistic"}, cbudget.Dataset(X, y), 2,
                          verbose_eval=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cegb.save_model(tmp_path / "r.txt", format="rich")
        plain.save_model(tmp_path / "p.txt", format="plain")
    with pytest.raises(ValueError, match="unknown model parts"):
        model_io.register_exporter("odd", print, (object,), "x", ["costs"])


def test_a_registered_format_is_what_save_model_writes(models, tmp_path, monkeypatch):
    booster, forest = models
    written = []

    def write(model, path, **options):
        written.append((model, Path(path).name, options))
        Path(path).write_text("dummy")

    monkeypatch.setitem(model_io.EXPORTERS, "dummy",
                        model_io.Exporter(write, (cbudget.Forest,), "forests"))
    forest.save_model(tmp_path / "f.txt", format="dummy", flavour="plain")
    assert written == [(forest, "f.txt", {"flavour": "plain"})]
    booster_formats = ", ".join(map(repr, model_io.exporter_formats(booster)))
    with pytest.raises(ValueError, match=rf"a Booster is saved in the formats "
                                         rf"{booster_formats} only, not 'dummy' "
                                         r"\(which holds forests\)"):
        booster.save_model(tmp_path / "b.txt", format="dummy")
    assert "dummy" not in booster_formats and "'xgboost'" in booster_formats
    assert model_io.exporter_formats(forest)[0] == "cbudget"
    assert model_io.exporter_formats(forest)[-1] == "dummy"
    with pytest.raises(ValueError, match="unknown model format 'no-such'; valid: 'cbudget', "
                                         ".*'xgboost', .*'dummy'"):
        booster.save_model(tmp_path / "b.bin", format="no-such")
    with pytest.raises(ValueError, match="registered twice"):
        model_io.register_exporter("dummy", write, (object,), "anything")


def test_the_model_classes_do_not_import_the_exporters():
    # booster.py imported interop.to_xgboost: the one import that ran up the layers
    for module in ("booster.py", "_model.py", "model_io.py", "_ensemble.py"):
        tree = ast.parse((PACKAGE / module).read_text())
        imported = {node.module or "" for node in ast.walk(tree)
                    if isinstance(node, ast.ImportFrom)}
        assert not any("interop" in name for name in imported), module


@pytest.mark.parametrize("name, format", [("model.onnx", "cbudget"), ("model.ONNX", "xgboost"),
                                          ("model.ubj", "cbudget"), ("model.ubj", "lightgbm")])
def test_a_file_name_of_another_format_is_refused(models, tmp_path, name, format):
    """save_model("model.onnx") once wrote cbudget's JSON into model.onnx, which
    onnxruntime then refused: a suffix that a registered format owns must be saved in that
    format, and nothing is written otherwise."""
    booster, _ = models
    path = tmp_path / name
    owner = "onnx" if name.lower().endswith(".onnx") else "xgboost"
    with pytest.raises(ValueError, match=f"format={owner!r}"):
        booster.save_model(path, format=format)
    assert not path.exists()


def test_a_file_name_of_its_own_format_is_written(models, tmp_path):
    booster, _ = models
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cbudget.ExportWarning)
        booster.save_model(tmp_path / "model.ubj", format="xgboost")
    booster.save_model(tmp_path / "model.json")
    assert (tmp_path / "model.ubj").stat().st_size > 0
    X = np.random.default_rng(2).normal(size=(20, 4))
    assert np.array_equal(cbudget.load_model(tmp_path / "model.json").predict(X),
                          booster.predict(X))
