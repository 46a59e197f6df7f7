"""The registry of algorithms (cbudget.algorithms.REGISTRY) is the only list of them: an
algorithm added by the documented recipe (docs/architecture.md, "Adding an algorithm")
trains, saves, loads and predicts like the built-in ones, and no other module spells out
a list of algorithm names (issue 42, item 13)."""
import ast
import pathlib

import numpy as np
import pytest

import cbudget
from cbudget.algorithms import REGISTRY, register_algorithm, unregister_algorithm
from cbudget.algorithms.boosting import OBJECTIVE, SAMPLING_PARAMS, TREE_PARAMS, Boosting
from cbudget.algorithms.budget_rf import PARAMS as BUDGET_RF_PARAMS
from cbudget.algorithms.budget_rf import BudgetRF, ForestTrainer
from cbudget.params import Param, number

PACKAGE = pathlib.Path(cbudget.__file__).parent
REGISTRY_MODULE = PACKAGE / "algorithms" / "__init__.py"


def _toy_forest():
    """A forest algorithm made as the recipe says: parameters, trainer, model class and
    file section (BudgetRF's trainer with another name and section)."""
    return BudgetRF("toy_forest", BUDGET_RF_PARAMS, ForestTrainer,
                    "a toy forest (tests/test_registry.py)",
                    model_class=cbudget.Forest, section="toy_forest")


def _toy_booster():
    """A cost-aware booster variant with its own trade-off parameter default."""
    tradeoff = Param("cost_tradeoff", 0.01, number(low=0), "lambda")
    return Boosting("toy_booster", (OBJECTIVE, tradeoff) + TREE_PARAMS + SAMPLING_PARAMS,
                    "a toy cost-aware booster (tests/test_registry.py)")


@pytest.fixture
def registered(request):
    """Register the algorithm the test asks for; unregister it afterwards."""
    algorithm = request.param()
    register_algorithm(algorithm)
    try:
        yield algorithm
    finally:
        unregister_algorithm(algorithm.name)
    assert algorithm.name not in REGISTRY


def _data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 5))
    y = (X[:, 0] + 0.5 * X[:, 1] + 0.3 * rng.normal(size=300) > 0).astype(np.float64)
    return cbudget.Dataset(X, y, feature_costs=[1.0, 2.0, 3.0, 4.0, 5.0]), X


@pytest.mark.parametrize("registered", [_toy_forest, _toy_booster], indirect=True,
                         ids=["forest", "booster"])
def test_an_algorithm_added_by_the_recipe_trains_saves_loads_and_predicts(registered,
                                                                          tmp_path):
    """Before: the model classes kept their own tuples of algorithm names, so the model
    saved and load_model refused it (``unknown algorithm ... for a forest``)."""
    name = registered.name
    dtrain, X = _data()
    model = cbudget.train({"algorithm": name, "objective": "binary:logistic", "n_jobs": 1,
                           "max_depth": 3}, dtrain, 5, verbose_eval=False)
    assert isinstance(model, registered.model_class)
    assert model.algorithm == name
    path = tmp_path / "toy.json"
    model.save_model(path)
    assert name in path.read_text()       # its own file section, named in the registry
    loaded = cbudget.load_model(path)
    assert type(loaded) is registered.model_class
    assert loaded.algorithm == name
    assert np.array_equal(loaded.predict(X), model.predict(X))
    assert np.array_equal(loaded.predict_cost(X), model.predict_cost(X))
    assert loaded.to_dict() == model.to_dict()
    # unregistered, its files are refused, naming the algorithm
    unregister_algorithm(name)
    try:
        with pytest.raises(ValueError, match=name):
            cbudget.load_model(path)
    finally:
        register_algorithm(registered)


def test_a_registered_name_is_not_taken_twice():
    with pytest.raises(ValueError, match="registered already"):
        register_algorithm(REGISTRY["gbdt"])
    with pytest.raises(ValueError, match="unknown algorithm"):
        unregister_algorithm("no_such_algorithm")
    unloadable = BudgetRF("toy_unloadable", BUDGET_RF_PARAMS, ForestTrainer, "toy",
                          model_class=cbudget.Dataset)
    with pytest.raises(ValueError, match="register_model_type"):
        register_algorithm(unloadable)
    assert "toy_unloadable" not in REGISTRY


def test_every_algorithm_declares_its_model_class():
    """Each entry's model class is a registered model type, and loading a file of the
    algorithm makes one (the registry is where read_header takes its list)."""
    for name, algorithm in REGISTRY.items():
        assert algorithm.model_class.model_type in cbudget.model_io.MODEL_TYPES, name
        assert name in cbudget.model_io.algorithms_of(algorithm.model_class)


def spelled_lists(source: str, names) -> list:
    """(line, names) of each place in ``source`` that spells out two or more of ``names``
    as string literals together: a tuple, list, set or dict's keys, or a boolean
    combination of comparisons (``a == "x" or a == "y"``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            parts = node.elts
        elif isinstance(node, ast.Dict):
            parts = [key for key in node.keys if key is not None]
        elif isinstance(node, ast.BoolOp):
            parts = [part for value in node.values if isinstance(value, ast.Compare)
                     for part in [value.left, *value.comparators]]
        else:
            continue
        spelled = sorted({part.value for part in parts
                          if isinstance(part, ast.Constant) and part.value in names})
        if len(spelled) >= 2:
            found.append((node.lineno, spelled))
    return found


def test_the_scan_finds_spelled_lists():
    names = {"gbdt", "cegb", "cstc"}
    assert spelled_lists('x in ("gbdt", "cegb")', names) == [(1, ["cegb", "gbdt"])]
    assert spelled_lists('y = {"cegb": 1, "cstc": 2}', names) == [(1, ["cegb", "cstc"])]
    assert spelled_lists('a == "gbdt" or a == "cstc"', names) == [(1, ["cstc", "gbdt"])]
    assert spelled_lists('s = ["gbdt", "other"]\nt = a == "cegb"', names) == []


def test_no_module_but_the_registry_lists_algorithm_names():
    """The model classes, the file format, the exporters, the estimators and the Dask
    trainer derive their algorithms from the registry (cbudget.model_io.algorithms_of,
    the entries' attributes): a second list would miss an algorithm added later."""
    names = set(REGISTRY)
    offenders = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == REGISTRY_MODULE:
            continue
        found = spelled_lists(path.read_text(encoding="utf-8"), names)
        if found:
            offenders[str(path.relative_to(PACKAGE))] = found
    assert not offenders, f"lists of algorithm names outside the registry: {offenders}"
