"""Tests of the JSON model format: save -> load round trips and validation of bad files."""
import copy
import json
import os
from pathlib import Path

import numpy as np
import pytest

import cbudget
from cbudget import Dataset, load_model, train

FAST = {"n_jobs": 1}

TOP_LEVEL = ["format", "format_version", "library_version", "model_type", "algorithm",
             "objective", "base_score", "num_class", "feature_names", "cost_model",
             "training_params", "attributes", "summary", "trees", "iteration_indptr"]
TREE_ARRAYS = ["left_children", "right_children", "split_features", "thresholds",
               "default_left", "leaf_values", "gain", "cost_penalty", "n_samples",
               "sum_hessian", "new_acquisitions", "path_cost"]


def make_data(objective, n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    X[::13, 1] = np.nan
    if objective == "reg:squarederror":
        y = X[:, 0] * 2 + np.nan_to_num(X[:, 1]) + 0.1 * rng.normal(size=n)
    elif objective == "binary:logistic":
        y = (X[:, 0] + np.nan_to_num(X[:, 1]) * X[:, 2] > 0).astype(float)
    else:
        y = np.argmax(X[:, :3], axis=1).astype(float)
    return X, y


def train_model(objective, *, costs=True, early_stopping=False, rounds=10):
    X, y = make_data(objective)
    kwargs = {}
    if costs:
        kwargs = dict(feature_names=["u", "v", "w", "x", "z"],
                      feature_costs=[0.1, 2.0 / 3.0, 1e-7, 3.0, 1.0],
                      cost_groups={"cam": ["v", "x"]}, group_costs={"cam": 1.0 / 7.0},
                      coupled_costs={"w": 2.5}, split_cost=0.01, tree_cost=0.3)
    dtrain = Dataset(X[:300], y[:300], **kwargs)
    dvalid = Dataset(X[300:], y[300:], reference=dtrain)
    params = dict(FAST, objective=objective, num_leaves=7, min_data_in_leaf=5,
                  subsample=0.9, colsample_bytree=0.8, learning_rate=0.3)
    if objective == "multi:softprob":
        params["num_class"] = 3
    booster = train(params, dtrain, rounds, evals=[(dvalid, "valid")],
                    early_stopping_rounds=3 if early_stopping else None, verbose_eval=False)
    return booster, X


OBJECTIVES = ["reg:squarederror", "binary:logistic", "multi:softprob"]


@pytest.fixture(scope="module", params=[(o, c) for o in OBJECTIVES for c in (False, True)],
                ids=lambda p: f"{p[0]}-{'costs' if p[1] else 'nocosts'}")
def model(request):
    objective, costs = request.param
    return train_model(objective, costs=costs)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A saved regression model with costs: (path, document)."""
    booster, X = train_model("reg:squarederror", rounds=4)
    path = tmp_path_factory.mktemp("model") / "model.json"
    booster.save_model(path)
    with open(path) as f:
        doc = json.load(f)
    return path, doc, booster, X


def write_json(tmp_path, doc, name="bad.json"):
    path = tmp_path / name
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


def assert_same_predictions(a, b, X):
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    np.testing.assert_array_equal(a.predict(X, output_margin=True),
                                  b.predict(X, output_margin=True))
    np.testing.assert_array_equal(a.predict(X, pred_leaf=True), b.predict(X, pred_leaf=True))
    np.testing.assert_array_equal(a.predict_cost(X), b.predict_cost(X))


# --------------------------------------------------------------------------------------
# round trip
# --------------------------------------------------------------------------------------
def test_round_trip_bit_identical(model, tmp_path):
    booster, X = model
    path = tmp_path / "m.json"
    booster.save_model(path)
    loaded = load_model(path)
    assert isinstance(loaded, cbudget.Booster)
    assert_same_predictions(booster, loaded, X)
    Xn = np.random.default_rng(1).normal(size=(50, 5)) * 3
    Xn[::4, 0] = np.nan
    assert_same_predictions(booster, loaded, Xn)
    np.testing.assert_array_equal(booster.cost_curve(X), loaded.cost_curve(X))
    for kind in ("split", "gain", "cost"):
        np.testing.assert_array_equal(booster.feature_importance(kind),
                                      loaded.feature_importance(kind))
    assert loaded.num_boosted_rounds() == booster.num_boosted_rounds()
    assert loaded.objective == booster.objective
    assert loaded.num_class == booster.num_class
    assert loaded.feature_names == booster.feature_names
    np.testing.assert_array_equal(loaded.base_score, booster.base_score)
    assert loaded.cost_model.to_dict() == booster.cost_model.to_dict()
    assert loaded.summary == booster.summary
    for a, b in zip(booster.trees, loaded.trees):
        np.testing.assert_array_equal(a, b)
    # saving the loaded model gives the same document
    assert loaded.to_dict() == booster.to_dict()
    # slices of the loaded model agree too
    np.testing.assert_array_equal(loaded[2:5].predict(X), booster[2:5].predict(X))


def test_round_trip_string_path_and_no_temp_file(tmp_path):
    booster, X = train_model("binary:logistic", rounds=3)
    path = str(tmp_path / "m.json")
    booster.save_model(path)
    assert sorted(os.listdir(tmp_path)) == ["m.json"]
    assert_same_predictions(booster, cbudget.load_model(path), X)
    # overwrite in place
    train_model("binary:logistic", rounds=2)[0].save_model(path)
    assert load_model(path).num_boosted_rounds() == 2


def test_round_trip_float32_input(saved):
    path, _, booster, X = saved
    X32 = X.astype(np.float32)
    assert_same_predictions(booster, load_model(path), X32)


def test_round_trip_zero_rounds(tmp_path):
    X, y = make_data("binary:logistic")
    booster = train(dict(FAST, objective="binary:logistic"), Dataset(X, y), 0, verbose_eval=False)
    booster.save_model(tmp_path / "m.json")
    loaded = load_model(tmp_path / "m.json")
    assert loaded.num_boosted_rounds() == 0
    assert_same_predictions(booster, loaded, X)


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_best_iteration_survives(objective, tmp_path):
    booster, X = train_model(objective, early_stopping=True, rounds=40)
    assert booster.best_iteration is not None
    booster.save_model(tmp_path / "m.json")
    loaded = load_model(tmp_path / "m.json")
    assert loaded.best_iteration == booster.best_iteration
    assert loaded.best_score == booster.best_score
    r = (0, booster.best_iteration + 1)
    np.testing.assert_array_equal(loaded.predict(X, iteration_range=r),
                                  booster.predict(X, iteration_range=r))
    doc = booster.to_dict()
    assert doc["attributes"]["best_iteration"] == booster.best_iteration


def test_no_best_iteration_when_not_early_stopped(saved):
    path, doc, _, _ = saved
    assert "best_iteration" not in doc["attributes"]
    assert load_model(path).best_iteration is None


def test_loaded_model_keeps_training_params(saved):
    """A loaded model keeps its training parameters and feature names."""
    path, doc, booster, _ = saved
    loaded = load_model(path)
    assert loaded.params["num_leaves"] == 7
    assert loaded.params["learning_rate"] == 0.3
    assert loaded.feature_names == ["u", "v", "w", "x", "z"]


# --------------------------------------------------------------------------------------
# the document
# --------------------------------------------------------------------------------------
def test_json_top_level_fields(saved):
    _, doc, booster, _ = saved
    for key in TOP_LEVEL:
        assert key in doc, key
    assert doc["format"] == "cbudget"
    assert isinstance(doc["format_version"], list) and len(doc["format_version"]) == 2
    assert all(isinstance(v, int) for v in doc["format_version"])
    assert doc["library_version"] == cbudget.__version__
    assert doc["model_type"] == "booster"
    assert doc["algorithm"] == "gbdt"
    assert doc["objective"] == "reg:squarederror"
    assert doc["num_class"] == 1
    assert doc["base_score"] == booster.base_score.tolist()
    assert doc["feature_names"] == ["u", "v", "w", "x", "z"]
    cm = doc["cost_model"]
    assert cm["feature_costs"] == [0.1, 2.0 / 3.0, 1e-7, 3.0, 1.0]
    assert cm["group_costs"] == [1.0 / 7.0]
    assert cm["feature_group"] == [-1, 0, -1, 0, -1]
    assert cm["coupled_costs"] == [0.0, 0.0, 2.5, 0.0, 0.0]
    assert cm["split_cost"] == 0.01 and cm["tree_cost"] == 0.3
    assert doc["training_params"]["num_leaves"] == 7
    assert isinstance(doc["attributes"], dict)
    for key in ("train_cost", "valid_cost", "features_used", "train_cost_per_iteration"):
        assert key in doc["summary"]
    assert doc["iteration_indptr"] == [0, 1, 2, 3, 4]
    assert len(doc["trees"]) == 4


def test_json_tree_fields(saved):
    _, doc, _, _ = saved
    for tree in doc["trees"]:
        n = tree["num_nodes"]
        for key in TREE_ARRAYS:
            assert key in tree, key
            assert len(tree[key]) == n, key
        internal = [i for i in range(n) if tree["left_children"][i] != -1]
        assert len(internal) == (n - 1) // 2
        for i in range(n):
            assert (tree["left_children"][i] == -1) == (tree["right_children"][i] == -1)
        assert all(tree["gain"][i] > 0 for i in internal)
        assert all(tree["cost_penalty"][i] >= 0 for i in internal)
        assert tree["n_samples"][0] == 270  # subsample 0.9 of 300
        assert tree["sum_hessian"][0] == pytest.approx(270.0)
        assert all(v in (0, 1) for v in tree["default_left"])


def test_multiclass_iteration_indptr():
    booster, _ = train_model("multi:softprob", costs=False, rounds=4)
    doc = booster.to_dict()
    assert doc["num_class"] == 3
    assert doc["iteration_indptr"] == [0, 3, 6, 9, 12]
    assert [t["output"] for t in doc["trees"]] == [0, 1, 2] * 4
    assert len(doc["base_score"]) == 3


def test_file_is_plain_json(saved):
    path, _, _, _ = saved
    text = Path(path).read_text()
    assert "NaN" not in text and "Infinity" not in text
    json.loads(text)  # strict JSON


# --------------------------------------------------------------------------------------
# corrupt files: always ValueError
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("fraction", [0.0, 0.001, 0.1, 0.5, 0.9, 0.999])
def test_truncated_file(saved, tmp_path, fraction):
    path, _, _, _ = saved
    text = Path(path).read_text()
    cut = tmp_path / "cut.json"
    cut.write_text(text[: int(len(text) * fraction)])
    with pytest.raises(ValueError, match="not a valid JSON model file"):
        load_model(cut)


def test_truncated_by_one_character(saved, tmp_path):
    path, _, _, _ = saved
    text = Path(path).read_text()
    cut = tmp_path / "cut.json"
    cut.write_text(text[:-1])
    with pytest.raises(ValueError):
        load_model(cut)


@pytest.mark.parametrize("content", ["hello", "{'a': 1}", "<xml/>", "[1, 2", "\x00\x01\x02"])
def test_not_json(tmp_path, content):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ValueError):
        load_model(path)


def test_binary_garbage(tmp_path):
    path = tmp_path / "bad.json"
    path.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(ValueError):
        load_model(path)


@pytest.mark.parametrize("doc", [[], [1, 2], "cbudget", 3, None])
def test_json_not_an_object(tmp_path, doc):
    with pytest.raises(ValueError):
        load_model(write_json(tmp_path, doc))


def test_duplicate_feature_names_refused(saved, tmp_path):
    doc = copy.deepcopy(saved[1])
    doc["feature_names"] = ["x"] * len(doc["feature_names"])
    with pytest.raises(ValueError, match="feature_names must be unique"):
        load_model(write_json(tmp_path, doc))


def test_a_round_with_more_trees_than_outputs_refused(saved, tmp_path):
    doc = copy.deepcopy(saved[1])
    doc["iteration_indptr"] = [0, 2] + doc["iteration_indptr"][2:]
    with pytest.raises(ValueError, match="at most one tree per output"):
        load_model(write_json(tmp_path, doc))


@pytest.mark.parametrize("value", ["xgboost", None, "", 1])
def test_wrong_format(saved, tmp_path, value):
    doc = copy.deepcopy(saved[1])
    doc["format"] = value
    with pytest.raises(ValueError, match="not a cbudget model"):
        load_model(write_json(tmp_path, doc))


@pytest.mark.parametrize("version", [[2, 0], [1, 99], [0, 9], [1], [1, 0, 0], "1.0", [1, "0"],
                                     [1.0, 0]])
def test_unsupported_format_version(saved, tmp_path, version):
    doc = copy.deepcopy(saved[1])
    doc["format_version"] = version
    with pytest.raises(ValueError, match="format_version"):
        load_model(write_json(tmp_path, doc))


def test_unknown_model_type(saved, tmp_path):
    doc = copy.deepcopy(saved[1])
    doc["model_type"] = "forest_of_dreams"
    with pytest.raises(ValueError, match="model_type"):
        load_model(write_json(tmp_path, doc))


@pytest.mark.parametrize("key", [k for k in TOP_LEVEL if k not in ("format", "library_version")])
def test_missing_top_level_field(saved, tmp_path, key):
    doc = copy.deepcopy(saved[1])
    del doc[key]
    with pytest.raises(ValueError, match=f"'{key}'|{key}"):
        load_model(write_json(tmp_path, doc))


@pytest.mark.parametrize("key", TREE_ARRAYS + ["num_nodes", "output"])
def test_missing_tree_field(saved, tmp_path, key):
    doc = copy.deepcopy(saved[1])
    del doc["trees"][1][key]
    with pytest.raises(ValueError, match=key):
        load_model(write_json(tmp_path, doc))


@pytest.mark.parametrize("key", ["feature_costs", "feature_group", "group_costs",
                                 "coupled_costs", "split_cost", "tree_cost", "group_names"])
def test_missing_cost_model_field(saved, tmp_path, key):
    doc = copy.deepcopy(saved[1])
    del doc["cost_model"][key]
    with pytest.raises(ValueError, match="cost_model"):
        load_model(write_json(tmp_path, doc))


@pytest.mark.parametrize("key", TREE_ARRAYS)
@pytest.mark.parametrize("change", ["short", "long"])
def test_wrong_array_length(saved, tmp_path, key, change):
    doc = copy.deepcopy(saved[1])
    values = doc["trees"][0][key]
    doc["trees"][0][key] = values[:-1] if change == "short" else values + values[-1:]
    with pytest.raises(ValueError, match=f"{key} has"):
        load_model(write_json(tmp_path, doc))


def test_num_nodes_mismatch(saved, tmp_path):
    doc = copy.deepcopy(saved[1])
    doc["trees"][0]["num_nodes"] += 2
    with pytest.raises(ValueError, match="expected"):
        load_model(write_json(tmp_path, doc))
    doc["trees"][0]["num_nodes"] = 0
    with pytest.raises(ValueError, match="num_nodes"):
        load_model(write_json(tmp_path, doc))


def test_huge_num_nodes(saved, tmp_path):
    """A corrupt node count is a ValueError, not an attempt to allocate terabytes."""
    doc = copy.deepcopy(saved[1])
    doc["trees"][0]["num_nodes"] = 10 ** 12
    with pytest.raises(ValueError, match="num_nodes|entries"):
        load_model(write_json(tmp_path, doc))


@pytest.mark.parametrize("key", ["feature_costs", "feature_group", "coupled_costs"])
def test_wrong_cost_array_length(saved, tmp_path, key):
    doc = copy.deepcopy(saved[1])
    doc["cost_model"][key] = doc["cost_model"][key][:-1]
    with pytest.raises(ValueError, match=f"cost_model.{key}"):
        load_model(write_json(tmp_path, doc))


@pytest.mark.parametrize("key,value", [("feature_costs", -1.0), ("group_costs", -0.5),
                                       ("split_cost", -1.0), ("feature_group", 5),
                                       ("feature_group", 2 ** 64)])
def test_bad_cost_values(saved, tmp_path, key, value):
    doc = copy.deepcopy(saved[1])
    if isinstance(doc["cost_model"][key], list):
        doc["cost_model"][key][0] = value
    else:
        doc["cost_model"][key] = value
    with pytest.raises(ValueError, match="cost_model"):
        load_model(write_json(tmp_path, doc))


def _first_split(tree):
    return next(i for i, left in enumerate(tree["left_children"]) if left != -1)


def _last_split(tree):
    return max(i for i, left in enumerate(tree["left_children"]) if left != -1)


@pytest.mark.parametrize("value", [999, 10**6, -5])
def test_child_index_out_of_range(saved, tmp_path, value):
    doc = copy.deepcopy(saved[1])
    tree = doc["trees"][0]
    tree["left_children"][_last_split(tree)] = value
    with pytest.raises(ValueError, match="tree|child"):
        load_model(write_json(tmp_path, doc))


def test_child_index_overflows_int32(saved, tmp_path):
    doc = copy.deepcopy(saved[1])
    tree = doc["trees"][0]
    tree["right_children"][0] = 2 ** 32 + tree["right_children"][0]  # wraps to a valid id
    with pytest.raises(ValueError):
        load_model(write_json(tmp_path, doc))


@pytest.mark.parametrize("side", ["left_children", "right_children"])
def test_cycle_to_root(saved, tmp_path, side):
    doc = copy.deepcopy(saved[1])
    tree = doc["trees"][0]
    tree[side][_last_split(tree)] = 0
    with pytest.raises(ValueError, match="cyclic|tree"):
        load_model(write_json(tmp_path, doc))


def test_self_loop(saved, tmp_path):
    doc = copy.deepcopy(saved[1])
    tree = doc["trees"][0]
    node = _last_split(tree)
    tree["left_children"][node] = node
    with pytest.raises(ValueError, match="cyclic|tree"):
        load_model(write_json(tmp_path, doc))


def test_shared_child(saved, tmp_path):
    """Two parents pointing to the same child: a DAG, not a tree."""
    doc = copy.deepcopy(saved[1])
    tree = doc["trees"][0]
    root_right = tree["right_children"][0]
    tree["right_children"][0] = tree["left_children"][0]
    # keep every id referenced once more than allowed
    assert root_right != tree["right_children"][0]
    with pytest.raises(ValueError, match="tree"):
        load_model(write_json(tmp_path, doc))


@pytest.mark.parametrize("side", ["left_children", "right_children"])
def test_node_with_one_child(saved, tmp_path, side):
    doc = copy.deepcopy(saved[1])
    tree = doc["trees"][0]
    tree[side][_last_split(tree)] = -1
    with pytest.raises(ValueError, match="one child"):
        load_model(write_json(tmp_path, doc))


@pytest.mark.parametrize("value", [5, 100, -1, -2])
def test_split_feature_out_of_range(saved, tmp_path, value):
    doc = copy.deepcopy(saved[1])
    tree = doc["trees"][0]
    tree["split_features"][_first_split(tree)] = value
    with pytest.raises(ValueError, match="split feature out of range"):
        load_model(write_json(tmp_path, doc))


@pytest.mark.parametrize("value", [None, "NaN", "0.5", [0.5], {"v": 1}, True])
def test_bad_threshold_value(saved, tmp_path, value):
    doc = copy.deepcopy(saved[1])
    tree = doc["trees"][0]
    tree["thresholds"][_first_split(tree)] = value
    with pytest.raises(ValueError, match="thresholds"):
        load_model(write_json(tmp_path, doc))


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_threshold_literal(saved, tmp_path, literal):
    doc = copy.deepcopy(saved[1])
    tree = doc["trees"][0]
    tree["thresholds"][_first_split(tree)] = 12345.5
    text = json.dumps(doc).replace("12345.5", literal)
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(ValueError, match="threshold"):
        load_model(path)


@pytest.mark.parametrize("literal", ["NaN", "Infinity"])
def test_non_finite_leaf_value_literal(saved, tmp_path, literal):
    doc = copy.deepcopy(saved[1])
    tree = doc["trees"][0]
    leaf = tree["left_children"].index(-1)
    tree["leaf_values"][leaf] = 12345.5
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc).replace("12345.5", literal))
    with pytest.raises(ValueError, match="value"):
        load_model(path)


@pytest.mark.parametrize("value", ["0.5", None, [0.1]])
def test_leaf_value_not_a_number(saved, tmp_path, value):
    doc = copy.deepcopy(saved[1])
    tree = doc["trees"][0]
    tree["leaf_values"][tree["left_children"].index(-1)] = value
    with pytest.raises(ValueError, match="leaf_values"):
        load_model(write_json(tmp_path, doc))


@pytest.mark.parametrize("key,value", [("left_children", 1.5), ("split_features", "0"),
                                       ("default_left", 0.5), ("n_samples", None)])
def test_integer_arrays_must_hold_integers(saved, tmp_path, key, value):
    doc = copy.deepcopy(saved[1])
    doc["trees"][0][key][0] = value
    with pytest.raises(ValueError, match=key):
        load_model(write_json(tmp_path, doc))


@pytest.mark.parametrize("key,value", [("default_left", 300), ("split_features", 2 ** 40)])
def test_integer_out_of_range(saved, tmp_path, key, value):
    doc = copy.deepcopy(saved[1])
    tree = doc["trees"][0]
    tree[key][_first_split(tree)] = value
    with pytest.raises(ValueError):
        load_model(write_json(tmp_path, doc))


@pytest.mark.parametrize("base_score", [[], [0.1, 0.2], [[0.1]], ["a"], [None], 0.5])
def test_base_score_wrong(saved, tmp_path, base_score):
    doc = copy.deepcopy(saved[1])
    doc["base_score"] = base_score
    with pytest.raises(ValueError, match="base_score"):
        load_model(write_json(tmp_path, doc))


def test_multiclass_base_score_wrong_length(tmp_path):
    booster, _ = train_model("multi:softprob", costs=False, rounds=2)
    doc = booster.to_dict()
    doc["base_score"] = doc["base_score"][:2]
    with pytest.raises(ValueError, match="base_score"):
        load_model(write_json(tmp_path, doc))


@pytest.mark.parametrize("objective,num_class", [("reg:nope", 1), ("multi:softprob", 1),
                                                 ("reg:squarederror", 3),
                                                 ("reg:squarederror", 0),
                                                 ("reg:squarederror", -3)])
def test_bad_objective_or_num_class(saved, tmp_path, objective, num_class):
    doc = copy.deepcopy(saved[1])
    doc["objective"], doc["num_class"] = objective, num_class
    with pytest.raises(ValueError):
        load_model(write_json(tmp_path, doc))


@pytest.mark.parametrize("output", [1, -1, "0"])
def test_tree_output_out_of_range(saved, tmp_path, output):
    doc = copy.deepcopy(saved[1])
    doc["trees"][0]["output"] = output
    with pytest.raises(ValueError, match="output"):
        load_model(write_json(tmp_path, doc))


@pytest.mark.parametrize("indptr", [[0, 1, 2, 3], [0, 1, 2, 3, 5], [1, 2, 3, 4], [0, 3, 2, 4],
                                    [], [0, 1, 2, 3, 4.0]])
def test_iteration_indptr_mismatch(saved, tmp_path, indptr):
    doc = copy.deepcopy(saved[1])
    doc["iteration_indptr"] = indptr
    with pytest.raises(ValueError, match="iteration_indptr"):
        load_model(write_json(tmp_path, doc))


@pytest.mark.parametrize("names", [[], ["u", "v", "w", "x"], ["u", "v", 3, "x", "z"], "uvwxz"])
def test_bad_feature_names(saved, tmp_path, names):
    doc = copy.deepcopy(saved[1])
    doc["feature_names"] = names
    with pytest.raises(ValueError):
        load_model(write_json(tmp_path, doc))


@pytest.mark.parametrize("key,value", [("trees", {}), ("trees", None), ("cost_model", []),
                                       ("attributes", []), ("summary", "x"),
                                       ("training_params", None), ("num_class", "1"),
                                       ("objective", 3)])
def test_wrong_field_type(saved, tmp_path, key, value):
    doc = copy.deepcopy(saved[1])
    doc[key] = value
    with pytest.raises(ValueError, match=key):
        load_model(write_json(tmp_path, doc))


@pytest.mark.parametrize("objective", [float("inf"), 3, "multi:softprob"])
def test_training_params_objective_must_be_the_documents(saved, objective):
    """No parameter check reads the stored objective: a file whose training_params
    objective differs (a number, another objective) is refused, not saved as given."""
    doc = copy.deepcopy(saved[1])
    doc["training_params"]["objective"] = objective
    with pytest.raises(ValueError, match="training_params.objective"):
        cbudget.model_io.model_from_dict(doc)


@pytest.mark.parametrize("entry", [1, None, "tree", [1, 2]])
def test_tree_entry_not_an_object(saved, tmp_path, entry):
    doc = copy.deepcopy(saved[1])
    doc["trees"][2] = entry
    with pytest.raises(ValueError):
        load_model(write_json(tmp_path, doc))


@pytest.mark.parametrize("attributes", [{"best_iteration": 2},
                                        {"best_iteration": None, "best_score": 0.5},
                                        {"best_iteration": "two", "best_score": 0.5},
                                        {"best_iteration": 1, "best_score": "low"}])
def test_bad_attributes(saved, tmp_path, attributes):
    doc = copy.deepcopy(saved[1])
    doc["attributes"] = attributes
    with pytest.raises(ValueError):
        load_model(write_json(tmp_path, doc))


def test_missing_file_is_os_error(tmp_path):
    with pytest.raises(OSError):
        load_model(tmp_path / "nope.json")


# --------------------------------------------------------------------------------------
# valid hand edits
# --------------------------------------------------------------------------------------
def test_hand_edited_leaf_value(saved, tmp_path):
    _, doc, booster, X = saved
    doc = copy.deepcopy(doc)
    tree = doc["trees"][0]
    tree["leaf_values"] = [0.0] * tree["num_nodes"]  # tree 0 now adds nothing
    edited = load_model(write_json(tmp_path, doc))
    np.testing.assert_array_equal(edited.predict(X), booster[1:].predict(X))
    # one leaf set to a known value
    doc2 = copy.deepcopy(saved[1])
    leaf_ids = booster.predict(X, pred_leaf=True)[:, 0]
    leaf = int(leaf_ids[0])
    old = doc2["trees"][0]["leaf_values"][leaf]
    doc2["trees"][0]["leaf_values"][leaf] = old + 10.0
    edited2 = load_model(write_json(tmp_path, doc2, "e2.json"))
    diff = edited2.predict(X) - booster.predict(X)
    hit = leaf_ids == leaf
    np.testing.assert_allclose(diff[hit], 10.0, rtol=1e-9)
    np.testing.assert_array_equal(diff[~hit], 0.0)
    # costs do not depend on leaf values
    np.testing.assert_array_equal(edited2.predict_cost(X), booster.predict_cost(X))


def test_hand_edited_threshold_and_costs(saved, tmp_path):
    _, doc, booster, X = saved
    doc = copy.deepcopy(doc)
    doc["trees"][0]["thresholds"][0] = 1e30  # everyone goes left at the root of tree 0
    doc["cost_model"]["tree_cost"] = 1.0
    edited = load_model(write_json(tmp_path, doc))
    leaf_ids = edited.predict(X, pred_leaf=True)[:, 0]
    left = doc["trees"][0]["left_children"][0]
    # every leaf reached in tree 0 is in the root's left subtree
    subtree, stack = set(), [left]
    while stack:
        node = stack.pop()
        subtree.add(node)
        if doc["trees"][0]["left_children"][node] != -1:
            stack += [doc["trees"][0]["left_children"][node],
                      doc["trees"][0]["right_children"][node]]
    assert set(leaf_ids.tolist()) <= subtree
    assert np.all(edited.predict_cost(X[:1], iteration_range=(0, 1)) >= 1.0)


def test_older_minor_version_and_extra_fields_accepted(saved, tmp_path):
    _, doc, booster, X = saved
    doc = copy.deepcopy(doc)
    doc["format_version"] = [1, 0]
    doc["comment"] = "written by hand"
    doc["trees"][0]["note"] = "extra"
    loaded = load_model(write_json(tmp_path, doc))
    np.testing.assert_array_equal(loaded.predict(X), booster.predict(X))
