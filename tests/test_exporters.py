"""The registry of model formats (cbudget.model_io.register_exporter): save_model looks
the format up; a format is one module that registers its writer and the models it holds."""
import ast
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
    assert list(model_io.EXPORTERS) == ["cbudget", "xgboost"]


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
    with pytest.raises(ValueError, match=r"a Booster is saved in the formats 'cbudget', "
                                         r"'xgboost' only, not 'dummy' \(which holds forests\)"):
        booster.save_model(tmp_path / "b.txt", format="dummy")
    assert model_io.exporter_formats(forest) == ["cbudget", "dummy"]
    with pytest.raises(ValueError, match="unknown model format 'onnx'; valid: 'cbudget', "
                                         "'xgboost', 'dummy'"):
        booster.save_model(tmp_path / "b.onnx", format="onnx")
    with pytest.raises(ValueError, match="registered twice"):
        model_io.register_exporter("dummy", write, (object,), "anything")


def test_the_model_classes_do_not_import_the_exporters():
    # booster.py imported interop.to_xgboost: the one import that ran up the layers
    for module in ("booster.py", "_model.py", "model_io.py", "_ensemble.py"):
        tree = ast.parse((PACKAGE / module).read_text())
        imported = {node.module or "" for node in ast.walk(tree)
                    if isinstance(node, ast.ImportFrom)}
        assert not any("interop" in name for name in imported), module
