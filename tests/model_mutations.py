"""Hostile model files: small models of every type, mutations of their JSON documents and
the check that a mutant is refused at load time with a clear ``ValueError`` (or
``TypeError``) or else works for everything a user does with a model (issue 20).

Shared by ``tests/test_fuzz_models.py`` (a bounded hypothesis property) and
``tools/fuzz_models.py`` (thousands of cases, each in a worker subprocess with a
timeout); it lives in ``tests/`` because the test suite is also run copied away from the
source tree.

* :func:`seed_models` -- ``[(name, document)]``: one tiny trained model of every model
  type and algorithm (regression and classification where supported, cost groups and
  coupled costs, early stopping, gated models with their own cbudget expensive model).
* :func:`mutate` -- ``(case, descriptions)``: a mutated deep copy of a document (a dict)
  or, for the text-level mutations and the deep nesting, the file's content (a str, or
  bytes when it is not valid UTF-8); deterministic from the ``random.Random`` given.
  :func:`make_case` -- case number N (the seed model and the mutations from N).
* :func:`check_case` -- :class:`Outcome`: ``ok``, ``rejected:<Type>`` or a failure
  (``load:<Type>``, ``bad-message:<Type>``, ``after-load:<Type>``; ``after-load:Coerced``
  when saving the loaded model changes a value of the file).
* :class:`Worker` -- runs cases in a subprocess: a crash or a hang is reported
  (``crash:<signal>``, ``timeout``) instead of ending the caller.
"""
from __future__ import annotations

import copy
import functools
import json
import math
import os
import random
import sys
import tempfile
import traceback
import warnings
from typing import Any, NamedTuple

import numpy as np

import cbudget
from cbudget.algorithms import REGISTRY
from cbudget.interop.trees import describe_source, imported_booster, imported_forest
from cbudget.model_io import model_from_dict

N_FEATURES = 5
FEATURE_NAMES = ["age", "pulse", "lab_a", "lab_b", "scan"]
COSTS = dict(feature_names=FEATURE_NAMES, feature_costs=[0.5, 1.0, 2.0, 2.0, 6.0],
             cost_groups={"lab": ["lab_a", "lab_b"]}, group_costs={"lab": 1.5},
             coupled_costs={"scan": 4.0}, split_cost=0.01, tree_cost=0.05)
FAST = {"n_jobs": 1, "verbosity": 0}


# -- seed models ------------------------------------------------------------------------
def _problem(objective: str, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, N_FEATURES))
    score = X[:, 0] + 0.7 * X[:, 1] * (X[:, 2] > 0) + 0.8 * np.sin(2 * X[:, 3]) + 0.5 * X[:, 4]
    noise = rng.normal(size=n)
    if objective == "reg:squarederror":
        y = score + 0.2 * noise
    elif objective == "binary:logistic":
        y = (score + 0.3 * noise > 0).astype(np.float64)
    else:
        s = score + 0.3 * noise
        y = np.digitize(s, np.quantile(s, [1 / 3, 2 / 3])).astype(np.float64)
    X[rng.random(X.shape) < 0.04] = np.nan
    return X, y


def _train(params: dict, objective: str, rounds: int, *, n: int = 200, labels: str = "",
           valid: bool = False, group: list | None = None, categorical: list | None = None,
           **kwargs: Any) -> cbudget.Model:
    """A model trained on 200 rows of the problem of ``objective`` (of ``labels``: the
    labels of another objective; ``group``: the query sizes, for ranking; ``categorical``:
    columns made integer codes and split as categories)."""
    X, y = _problem(labels or objective, n, 0)
    for c in categorical or ():
        X[:, c] = np.floor(np.abs(X[:, c]) * 8)
    dtrain = cbudget.Dataset(X, y, group=group, categorical_feature=categorical, **COSTS)
    if valid:
        Xv, yv = _problem(labels or objective, 80, 1)
        kwargs["evals"] = [(cbudget.Dataset(Xv, yv, reference=dtrain), "valid")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cbudget.train({**FAST, "objective": objective, **params}, dtrain, rounds,
                             verbose_eval=False, **kwargs)


BOOST = {"num_leaves": 5, "min_data_in_leaf": 10, "learning_rate": 0.3}
FOREST = {"algorithm": "budget_rf", "n_stumps": (4, 2, 2), "max_depth": 4}
TREE_OF_CLASSIFIERS = {"cost_tradeoff": 0.002, "reg_alpha": 0.001, "max_depth": 2}


@functools.lru_cache(maxsize=1)
def _seed_models() -> tuple[tuple[str, str], ...]:
    models: dict[str, cbudget.Model] = {}
    models["gbdt_regression"] = _train(BOOST, "reg:squarederror", 3)
    models["gbdt_multiclass"] = _train({**BOOST, "num_class": 3}, "multi:softprob", 2)
    models["gbdt_early_stopping"] = _train(
        {**BOOST, "learning_rate": 0.8}, "binary:logistic", 12, valid=True,
        early_stopping_rounds=1)
    models["cegb_binary"] = _train({**BOOST, "algorithm": "cegb", "cost_tradeoff": 0.02},
                                   "binary:logistic", 3)
    models["gbdt_categorical"] = _train({**BOOST, "max_cat_to_onehot": 2,
                                         "min_data_per_group": 5, "cat_smooth": 1.0},
                                        "binary:logistic", 3, categorical=[0, 1])
    models["greedy_miser_regression"] = _train(
        {"algorithm": "greedy_miser", "cost_tradeoff": 0.5, "max_depth": 2,
         "min_data_in_leaf": 10}, "reg:squarederror", 3)
    models["cegb_ranking"] = _train({**BOOST, "algorithm": "cegb", "cost_tradeoff": 0.001},
                                    "rank:ndcg", 3, labels="multi:softprob", group=[10] * 20)
    models["budget_rf_binary"] = _train({**FOREST, "budget": 30.0}, "binary:logistic", 3,
                                        valid=True)
    models["budget_rf_multiclass"] = _train({**FOREST, "num_class": 3}, "multi:softprob", 2)
    # issue 20: a forest trained with num_class=2 (on 0/1 labels) must load again
    models["budget_rf_num_class_2"] = _train({**FOREST, "num_class": 2}, "multi:softprob", 2,
                                             labels="binary:logistic")
    models["cstc_regression"] = _train({**TREE_OF_CLASSIFIERS, "algorithm": "cstc"},
                                       "reg:squarederror", 2)
    models["cstc_basis_trees"] = _train(
        {**TREE_OF_CLASSIFIERS, "algorithm": "cstc", "basis_trees": 2, "basis_max_depth": 2},
        "binary:logistic", 2)
    models["cscc"] = _train({**TREE_OF_CLASSIFIERS, "algorithm": "cscc", "loss": "logistic"},
                            "binary:logistic", 2)
    models["cronus"] = _train({**TREE_OF_CLASSIFIERS, "algorithm": "cronus",
                               "loss": "logistic"}, "binary:logistic", 2)
    f0 = _train({**BOOST, "num_leaves": 7}, "binary:logistic", 4)
    models["adapt_gbrt"] = _train(
        {"algorithm": "adapt_gbrt", "p_full": 0.3, "cost_tradeoff": 0.5, "max_depth": 2,
         "q_update_period": 2}, "binary:logistic", 3, expensive_model=f0)
    f0_forest = _train({**FOREST}, "binary:logistic", 2)
    models["adapt_lin"] = _train(
        {"algorithm": "adapt_lin", "p_full": 0.3, "cost_tradeoff": 0.02, "n_restarts": 1},
        "binary:logistic", 2, expensive_model=f0_forest)
    # exit rules (issue 26): calibrated on a binary booster, LightGBM's margin rule on a
    # multiclass one, and in a gated model's gate and predictor
    exits = _train(BOOST, "binary:logistic", 6)
    exits.calibrate_exits(_problem("binary:logistic", 80, 1)[0], 0.1, every=2)
    models["gbdt_exit_rules"] = exits
    margin = _train({**BOOST, "num_class": 3}, "multi:softprob", 4)
    margin.exit_rules = cbudget.ExitRules.margin_rule(margin, 1.0, every=1)
    models["gbdt_margin_exit_rules"] = margin
    gated = cbudget.model_io.model_from_dict(models["adapt_gbrt"].to_dict())
    gated.calibrate_exits(_problem("binary:logistic", 80, 1)[0], 0.1)
    models["adapt_gbrt_exit_rules"] = gated
    # issue 43: cost stages with exits at their boundary and calibrated output maps
    # (binary knots on the logit scale, multiclass temperatures, regression knots within
    # a tolerance)
    staged = _train({**BOOST, "algorithm": "cegb", "cost_stages": [[3, 0.05], [3, 0.001]]},
                    "binary:logistic", 6)
    staged.calibrate_exits(cbudget.Dataset(*_problem("binary:logistic", 80, 1),
                                           feature_names=FEATURE_NAMES), 0.1,
                           checks="stages")
    models["cegb_stages_exit_outputs"] = staged
    # ... and exits held by the features of the dear stage (format 1.9)
    held = staged.copy()
    held.calibrate_exits(cbudget.Dataset(*_problem("binary:logistic", 80, 1),
                                         feature_names=FEATURE_NAMES), 0.1, every=2,
                         hold=list(range(1, len(FEATURE_NAMES))))
    models["cegb_stages_exit_hold"] = held
    # ... and binary exits calibrated with a probability tolerance
    tolerant = staged.copy()
    tolerant.calibrate_exits(cbudget.Dataset(*_problem("binary:logistic", 80, 1),
                                             feature_names=FEATURE_NAMES), 0.1, every=2,
                             tolerance=0.05)
    models["cegb_stages_exit_tolerance"] = tolerant
    for objective, options in (("multi:softprob", {}),
                               ("reg:squarederror", {"tolerance": 0.5})):
        mapped = _train({**BOOST, "num_class": 3} if objective == "multi:softprob"
                        else BOOST, objective, 6)
        mapped.calibrate_exits(cbudget.Dataset(*_problem(objective, 80, 1),
                                               feature_names=FEATURE_NAMES), 0.1,
                               every=2, **options)
        models[f"gbdt_{objective.split(':')[0]}_exit_outputs"] = mapped
    models["imported_booster"] = _imported(models["gbdt_multiclass"])
    models["imported_forest"] = _imported(models["budget_rf_multiclass"])
    return tuple((name, json.dumps(model.to_dict(), allow_nan=False))
                 for name, model in models.items())


def _imported(model: Any) -> cbudget.Model:
    """``model``'s trees as a model imported from another library (algorithm
    "imported", the imported_from section; a forest of class distributions that votes by
    averaging), without needing that library."""
    source = describe_source("another library", "1.0", type(model).__name__)
    if isinstance(model, cbudget.Forest):
        distributions = [counts / np.maximum(counts.sum(axis=1, keepdims=True), 1.0)
                         for counts in model.class_counts]
        return imported_forest(model.trees, distributions, num_class=model.num_class,
                               class_prior=model.class_prior,
                               feature_names=model.feature_names,
                               cost_model=model.cost_model, imported_from=source)
    rounds = [model.trees[a:b] for a, b in zip(model.iteration_indptr[:-1],
                                               model.iteration_indptr[1:])]
    return imported_booster(rounds, objective=model.objective, num_class=model.num_class,
                            base_score=model.base_score, feature_names=model.feature_names,
                            cost_model=model.cost_model, imported_from=source)


def seed_models() -> list[tuple[str, dict]]:
    """``[(name, document)]``: a small trained model of every model type and algorithm,
    as fresh JSON documents (trained once per process, then copied)."""
    return [(name, json.loads(text)) for name, text in _seed_models()]


# -- mutations --------------------------------------------------------------------------
HUGE_INTS = [2**31 - 1, 2**31, 2**32 + 3, 2**63, 2**64, 10**30, 10**6, -1, -2, -2**31,
             -2**63 - 1, 0, 1]
# for the integer fields of NUMBER_FIELDS
KNOB_VALUES = [10**6, 2**31 - 1, 2**31, 2**63, 10**30, -1, -2**31, 0, 0.9, 2.0, True, None,
               "2"]
ODD_FLOATS = [math.nan, math.inf, -math.inf, 0.9, -0.5, 1e308, -1e308, 5e-324, 0.0, -0.0,
              1e-300, 2.5]
ODD_STRINGS = ["", "x", "nan", "inf", "1", "binary:logistic", "multi:softprob",
               "reg:squarederror", "booster", "forest", "gated", "linear", "external",
               "tree_of_classifiers", "cascade", "all", "\x00", "é" * 3, "a" * 10_000]
TYPE_STRINGS = {
    "model_type": ["booster", "forest", "tree_of_classifiers", "cascade", "gated", "linear",
                   "external", "Booster", ""],
    "algorithm": [*REGISTRY, "xgboost", "imported"],
    "objective": ["reg:squarederror", "binary:logistic", "multi:softprob", "multi:softmax",
                  "rank:pairwise", "rank:ndcg", ""],
    "loss": ["squared", "logistic", "hinge"],
    "impurity": ["threshold_pairs", "gini", "entropy", "powers"],
    "grow_policy": ["lossguide", "depthwise", "widthwise"],
    "acquisition": ["model", "input", "none"],
    "format": ["cbudget", "xgboost"],
}
NUMBER_FIELDS = ("num_class", "num_nodes", "n_jobs", "best_iteration", "output", "seed",
                 "max_depth", "num_leaves")
DEEP_LEVELS = (50, 1_000, 100_000)


class Deep:
    """Placeholder for a list nested ``levels`` deep; :func:`to_text` writes it as text
    (``json.dumps`` of such a list would itself hit the recursion limit)."""

    def __init__(self, levels: int):
        self.levels = levels


def _paths(node: Any, path: tuple = ()) -> list[tuple]:
    """Every path (tuple of keys / indices) to a node of the document, the root included;
    long lists contribute a few of their entries only."""
    out = [path]
    if isinstance(node, dict):
        for key, value in node.items():
            out.extend(_paths(value, path + (key,)))
    elif isinstance(node, list):
        indices = range(len(node)) if len(node) <= 8 else \
            sorted({0, 1, len(node) // 2, len(node) - 2, len(node) - 1})
        for i in indices:
            out.extend(_paths(node[i], path + (i,)))
    return out


def _get(doc: Any, path: tuple) -> Any:
    for key in path:
        doc = doc[key]
    return doc


def _set(doc: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    _get(doc, path[:-1])[path[-1]] = value
    return doc


def _name(path: tuple) -> str:
    return "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in path) or "<root>"


def _replacement(rng: random.Random, value: Any, key: Any) -> tuple[Any, str]:
    """A hostile value for the node ``value`` (found under ``key``)."""
    if isinstance(key, str) and key in TYPE_STRINGS and rng.random() < 0.5:
        new = rng.choice(TYPE_STRINGS[key])
        return new, f"-> {new!r}"
    if isinstance(key, str) and key in NUMBER_FIELDS and rng.random() < 0.8:
        new = rng.choice(KNOB_VALUES)
        return new, f"-> {new!r}"
    kind = rng.choice(["nan", "inf", "int", "float", "bool", "none", "str", "empty_list",
                       "empty_dict", "number_of_type", "neighbour"])
    if kind == "nan":
        return math.nan, "-> NaN"
    if kind == "inf":
        new = rng.choice([math.inf, -math.inf])
        return new, f"-> {new}"
    if kind == "int":
        new = rng.choice(HUGE_INTS)
        return new, f"-> int {new}"
    if kind == "float":
        if isinstance(value, int) and not isinstance(value, bool) and rng.random() < 0.5:
            new = value + 0.5 if rng.random() < 0.5 else float(value)
        else:
            new = rng.choice(ODD_FLOATS)
        return new, f"-> float {new!r}"
    if kind == "bool":
        new = rng.choice([True, False])
        return new, f"-> {new}"
    if kind == "none":
        return None, "-> null"
    if kind == "str":
        new = rng.choice(ODD_STRINGS)
        return new, f"-> str {new[:20]!r}"
    if kind == "empty_list":
        return [], "-> []"
    if kind == "empty_dict":
        return {}, "-> {}"
    if kind == "number_of_type":    # a plausible but wrong number of the same type
        if isinstance(value, bool):
            return (not value), f"-> {not value}"
        if isinstance(value, int):
            new = value + rng.choice([-2, -1, 1, 2, 100])
            return new, f"-> int {new}"
        if isinstance(value, float):
            new = rng.choice([-value, value * 1e6, value + 1.0, -1.0])
            return new, f"-> float {new!r}"
        if isinstance(value, list) and value:
            return [value[0]], "-> [first entry]"
    return [[1, 2], {"a": 1}, "x", 1.5][rng.randrange(4)], "-> a value of another type"


def _pick_path(doc: Any, rng: random.Random) -> tuple:
    """A random node: a third of the time a member of an object (the header, parameters,
    sections: where most of a file's meaning is), a fifth of the time one inside
    ``training_params``, ``attributes`` or ``cost_model``, else any node."""
    paths = _paths(doc)
    r = rng.random()
    if r < 0.33:
        members = [p for p in paths if p and isinstance(p[-1], str)]
        paths = members or paths
    elif r < 0.53:
        inside = [p for p in paths if any(k in p for k in ("training_params", "attributes",
                                                            "cost_model"))]
        paths = inside or paths
    return rng.choice(paths)


def _mutate_node(doc: Any, rng: random.Random) -> tuple[Any, str]:
    """One structural or value mutation at a random node of ``doc`` (a JSON value)."""
    path = _pick_path(doc, rng)
    node = _get(doc, path)
    key = path[-1] if path else None
    where = _name(path)
    r = rng.random()
    if isinstance(node, dict) and r < 0.45:
        op = rng.choice(["delete", "delete", "add", "rename"])
        if node and op in ("delete", "rename"):
            victim = rng.choice(sorted(node))
            value = node.pop(victim)
            if op == "rename":
                node[victim + "_"] = value
                return doc, f"{where}: rename key {victim!r}"
            return doc, f"{where}: delete key {victim!r}"
        extra = rng.choice(["unknown", "extra_field", "__proto__"])
        node[extra] = rng.choice([1, "x", None, [1, 2], {"a": 1}])
        return doc, f"{where}: add unknown key {extra!r}"
    if isinstance(node, list) and r < 0.55:
        op = rng.choice(["duplicate", "truncate", "extend", "swap", "reverse", "empty",
                         "drop_one", "resize", "fill", "fill"])
        n = len(node)
        if op == "fill" and n:     # every entry (a tree's leaves among them)
            value, what = _replacement(rng, node[0], key)
            node[:] = [copy.deepcopy(value) for _ in range(n)]
            return doc, f"{where}: every entry {what}"
        if op == "duplicate" and n:
            i = rng.randrange(n)
            node.insert(i, copy.deepcopy(node[i]))
        elif op == "truncate" and n:
            del node[rng.randrange(n):]
        elif op == "extend":
            filler = copy.deepcopy(node[-1]) if node and rng.random() < 0.7 else \
                rng.choice([0, 1.5, None, "x"])
            node.extend(copy.deepcopy(filler) for _ in range(rng.choice([1, 2, 7])))
        elif op == "swap" and n >= 2:
            i, j = rng.sample(range(n), 2)
            node[i], node[j] = node[j], node[i]
        elif op == "reverse":
            node.reverse()
        elif op == "empty":
            node.clear()
        elif op == "drop_one" and n:
            del node[rng.randrange(n)]
        elif op == "resize":
            size = rng.choice([0, 1, n + 1, 2 * n + 1])
            node[:] = (node * (size // max(n, 1) + 1))[:size] if n else [0] * size
        else:
            node.append(0)
            op = "append 0"
        return doc, f"{where}: {op} list (was {n} entries)"
    if r < 0.015:
        levels = rng.choice(DEEP_LEVELS)
        return _set(doc, path, Deep(levels)), f"{where}: -> list nested {levels} deep"
    value, what = _replacement(rng, node, key)
    return _set(doc, path, value), f"{where}: {what}"


def to_text(doc: Any) -> str:
    """The JSON text of a (mutated) document: NaN and infinities as JSON's extensions
    ``NaN`` / ``Infinity``, as Python writes them, and :class:`Deep` nests as text."""
    deep: dict[str, int] = {}

    def replace(node: Any) -> Any:
        if isinstance(node, Deep):
            marker = f"__deep_{len(deep)}__"
            deep[marker] = node.levels
            return marker
        if isinstance(node, dict):
            return {k: replace(v) for k, v in node.items()}
        if isinstance(node, list):
            return [replace(v) for v in node]
        return node

    text = json.dumps(replace(doc))
    for marker, levels in deep.items():
        text = text.replace(json.dumps(marker), "[" * levels + "1" + "]" * levels, 1)
    return text


def mutate_text(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """One mutation of a file's bytes (which may leave it invalid UTF-8)."""
    op = rng.choice(["truncate", "flip", "garbage", "delete_span", "duplicate_span"])
    n = len(data)
    i = rng.randrange(max(n, 1))
    if op == "truncate":
        return data[:i], f"text: truncated at byte {i} of {n}"
    if op == "flip" and n:
        b = bytearray(data)
        b[i] ^= 1 << rng.randrange(8)
        return bytes(b), f"text: flipped a bit of byte {i}"
    if op == "garbage":
        junk = rng.choice([b"\x00", b"}", b"]", b",", b'"', b"NaN", b"-", b"1e999", b"\xff",
                           b"\xc3", b"{{[[", b"Infinity", b" true ", b"\\u0000", b"\\ud800"])
        return data[:i] + junk + data[i:], f"text: inserted {junk!r} at byte {i}"
    j = min(n, i + rng.randrange(1, 40))
    if op == "delete_span":
        return data[:i] + data[j:], f"text: deleted bytes {i}:{j}"
    return data[:j] + data[i:j] + data[j:], f"text: duplicated bytes {i}:{j}"


def mutate(doc: dict, rng: random.Random, *, as_document: bool = False
           ) -> tuple[Any, list[str]]:
    """A mutated deep copy of the model document ``doc`` and what was done to it.

    Most cases are one to four mutations of random nodes of the document (values,
    lists, objects, the type strings, a list nested deep); some are then written as text
    and mutated as bytes (truncated, a bit flipped, garbage inserted). Returns a dict, or
    the file's content when the case only exists as a file: a str (text mutations that
    leave valid UTF-8, deep nesting) or bytes (invalid UTF-8). ``as_document``: only the
    node mutations, the document returned as it is (:class:`Deep` placeholders and all),
    for a caller that writes it in another format."""
    doc = copy.deepcopy(doc)
    steps = []
    for _ in range(rng.choice([1, 1, 1, 1, 2, 2, 3, 4])):
        doc, step = _mutate_node(doc, rng)
        steps.append(step)
    if as_document:
        return doc, steps
    deep = any("nested" in step for step in steps)
    if rng.random() < 0.1:
        data = to_text(doc).encode("utf-8")
        for _ in range(rng.choice([1, 1, 2])):
            data, step = mutate_text(data, rng)
            steps.append(step)
        try:
            return data.decode("utf-8"), steps
        except UnicodeDecodeError:
            return data, steps
    if deep or not isinstance(doc, dict):
        return to_text(doc), steps
    return doc, steps


# -- checking a case --------------------------------------------------------------------
class Outcome(NamedTuple):
    """``kind``: ``ok``, ``rejected:<Type>`` (a ValueError or TypeError with a message at
    load time) or a failure: ``load:<Type>`` (another exception at load time),
    ``bad-message:<Type>`` (refused with an empty message), ``after-load:<Type>`` (the
    model loaded, then ``step`` failed), ``crash:<signal>``, ``timeout``.
    ``message``: the exception's message and, for failures, where it was raised."""
    kind: str
    message: str = ""
    step: str = ""

    @property
    def failed(self) -> bool:
        return not (self.kind == "ok" or self.kind.startswith("rejected:"))


_PACKAGE_DIR = os.path.dirname(os.path.abspath(cbudget.__file__)) + os.sep


def _where(exc: BaseException) -> str:
    """`` [at file:line function]`` of the innermost cbudget frame of the traceback."""
    frames = traceback.extract_tb(exc.__traceback__)
    inside = [f for f in frames if os.path.abspath(f.filename).startswith(_PACKAGE_DIR)]
    if not inside:       # raised by the checks here (a round trip that differs)
        return ""
    f = inside[-1]
    return f" [at {os.path.basename(f.filename)}:{f.lineno} {f.name}]"


def _message(exc: BaseException) -> str:
    text = str(exc)
    return text if len(text) <= 400 else text[:400] + "..."


def inputs(model: cbudget.Model, seed: int = 0) -> np.ndarray:
    """Inputs with the model's number of features: random rows (10% NaN) and edge rows
    (all NaN, +inf, -inf, zeros, 1e300)."""
    d = model.num_features()
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(12, d)) * 2
    X[rng.random(X.shape) < 0.1] = np.nan
    edges = np.array([np.full(d, np.nan), np.full(d, np.inf), np.full(d, -np.inf),
                      np.zeros(d), np.full(d, 1e300)])
    return np.ascontiguousarray(np.vstack([X, edges]))


def _labels(model: cbudget.Model, n: int) -> np.ndarray:
    if model.objective == "multi:softprob":
        return (np.arange(n) % max(int(model.num_class), 2)).astype(np.float64)
    if model.objective.startswith("rank:"):
        return (np.arange(n) % 3).astype(np.float64)     # relevance grades
    if model.objective == "binary:logistic":
        return (np.arange(n) % 2).astype(np.float64)
    return np.linspace(-1.0, 1.0, n)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, tuple):
        return isinstance(b, tuple) and len(a) == len(b) and all(map(_same, a, b))
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and bool(
        np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))


class Coerced(ValueError):
    """A loaded model whose saved document changed a value of its file."""


def _raise(exc: BaseException) -> None:
    raise exc


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


def _short(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, float) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _same_number(a: Any, b: Any) -> bool:
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    try:
        return float(a) == float(b)
    except OverflowError:
        return False


# what the saving library writes of itself, not of the model (docs/architecture.md,
# "Model files")
WRITTEN_ANEW = ("library_version", "format_version")


def changed_values(original: Any, saved: Any, path: tuple = (), limit: int = 3) -> list[str]:
    """The values of the file ``original`` that saving the loaded model changed (up to
    ``limit``): where both documents hold a value, it must be the same (an integer may
    come back as the equal float; a bool stays a bool, a string a string; lists keep
    their length). Keys only one of them has are not compared (unknown keys a loader
    ignores, defaults it adds), nor :data:`WRITTEN_ANEW`."""
    found: list[str] = []

    def walk(a: Any, b: Any, path: tuple) -> None:
        if len(found) >= limit:
            return
        if isinstance(a, dict) and isinstance(b, dict):
            for key in a:
                if key in b and key not in WRITTEN_ANEW:
                    walk(a[key], b[key], path + (key,))
            return
        if isinstance(a, list) and isinstance(b, list):
            if len(a) != len(b):
                found.append(f"{_name(path)}: {len(a)} entries in the file, {len(b)} saved")
                return
            for i, (x, y) in enumerate(zip(a, b)):
                walk(x, y, path + (i,))
            return
        same = (_same_number(a, b) if _number(a) and _number(b)
                else type(a) is type(b) and a == b)
        if not same:
            found.append(f"{_name(path)}: {_short(a)} in the file, {_short(b)} saved")

    walk(original, saved, path)
    return found


def use_model(model: cbudget.Model, tmpdir: str, original: Any = None) -> None:
    """Everything a user does with a loaded model: predictions (with each model type's
    options, on rows with NaN and infinities), costs, acquisitions, reports, importance,
    the staged helpers, on-demand prediction (equal to eager prediction), save -> load
    (the same document, predictions and costs), and no value of the ``original``
    document changed on the way (:func:`changed_values`: no silent coercion). Raises on
    the first failure, with the step's name in the exception's ``step`` attribute. A
    ``NotApplicableError`` (the helper does not apply to this model type) is an answer,
    not a failure."""
    X = inputs(model)

    def run(step: str, call):
        try:
            return call()
        except cbudget.NotApplicableError:
            return None
        except BaseException as exc:
            exc.step = step      # type: ignore[attr-defined]
            raise

    prediction = run("predict", lambda: model.predict(X))
    if isinstance(model, cbudget.Forest):
        run("predict_proba", lambda: model.predict_proba(X))
        run("predict_proba(votes)", lambda: model.predict_proba(X, votes=True))
    else:
        run("predict(output_margin)", lambda: model.predict(X, output_margin=True))
    if isinstance(model, (cbudget.Booster, cbudget.GatedModel)):
        run("predict(early_exit=False)", lambda: model.predict(X, early_exit=False))
        run("predict_cost(early_exit=False)", lambda: model.predict_cost(X, early_exit=False))
    if isinstance(model, cbudget.Booster):
        run("exit_iterations", lambda: model.exit_iterations(X))
    if isinstance(model, (cbudget.Booster, cbudget.Forest)):
        run("predict(pred_leaf)", lambda: model.predict(X, pred_leaf=True))
        run("predict(iteration_range=(0, 0))", lambda: model.predict(X, iteration_range=(0, 0)))
    if isinstance(model, cbudget.ClassifierTree):
        run("predict(pred_exit)", lambda: model.predict(X, pred_exit=True))
    if isinstance(model, cbudget.GatedModel):
        run("predict(return_route)", lambda: model.predict(X, return_route=True))
    cost = run("predict_cost", lambda: model.predict_cost(X))
    run("acquisitions", lambda: model.acquisitions(X))
    run("cost_parts", lambda: model.cost_parts(X))
    run("cost_report", lambda: str(model.cost_report(X)))
    run("used_feature_names", lambda: model.used_feature_names())
    run("cost_tracker", lambda: model.cost_tracker(X).mean_cost(model))
    run("repr", lambda: repr(model))
    for kind in ("split", "gain", "cost"):
        run(f"feature_importance_by_name({kind})",
            lambda kind=kind: model.feature_importance_by_name(kind))
    n_iterations = run("num_iterations", lambda: model.num_iterations())
    if n_iterations:
        # one query of all the rows: the ranking models' metrics need query groups
        # the model's categorical features as codes (a Dataset refuses other values in
        # them; prediction takes any, above)
        coded, cats = X.copy(), model.categories.features
        coded[:, cats] = np.minimum(np.floor(np.abs(np.where(
            np.isfinite(coded[:, cats]), coded[:, cats], np.nan))), 100)
        data = cbudget.Dataset(coded, _labels(model, X.shape[0]),
                               feature_names=model.feature_names, group=[X.shape[0]],
                               categorical_feature=model.categories)
        run("cost_curve", lambda: model.cost_curve(X))
        run("staged_scores", lambda: model.staged_scores(data))
        run("slice [:1]", lambda: model[:1].predict(X))
        run("best_iteration_within_budget",
            lambda: model.best_iteration_within_budget(data, 1e300))
    run("next_features", lambda: model.next_features({}))
    run("next_features(known)", lambda: model.next_features(
        {name: 0.0 for name in model.feature_names[:2]}))
    source = cbudget.FeatureSource(lambda features, rows: X[np.ix_(rows, features)],
                                   X.shape[0])
    on_demand = run("predict(FeatureSource)", lambda: model.predict(source))
    if on_demand is not None:
        run("predict(FeatureSource) == predict(X)",
            lambda: _check(_same(on_demand, prediction), "on-demand prediction differs"))
        run("FeatureSource.cost", lambda: source.cost())

    # save, load again: the same document, predictions and costs
    path = os.path.join(tmpdir, "saved.json")
    run("save_model", lambda: model.save_model(path))
    with open(path, encoding="utf-8") as f:
        saved = f.read()
    if original is not None:
        changed = changed_values(original, json.loads(saved))
        if changed:
            run("no silent coercion", lambda: _raise(Coerced(
                "saving the loaded model changed the file's values: " + "; ".join(changed))))
    reloaded = run("load the saved model", lambda: cbudget.load_model(path))
    run("round trip: the same document", lambda: _check(
        json.dumps(reloaded.to_dict(), allow_nan=False, separators=(",", ":")) == saved,
        "the reloaded model's document differs from the saved one"))
    run("round trip: the same predictions", lambda: _check(
        _same(reloaded.predict(X), prediction), "the reloaded model predicts differently"))
    run("round trip: the same costs", lambda: _check(
        _same(reloaded.predict_cost(X), cost), "the reloaded model's costs differ"))


def case_content(case: dict | str | bytes) -> bytes:
    """The bytes of the model file of a case."""
    if isinstance(case, bytes):
        return case
    return (case if isinstance(case, str) else to_text(case)).encode("utf-8")


def load_case(case: dict | str | bytes, tmpdir: str, via: str = "file") -> cbudget.Model:
    """Load a case: a document with ``model_from_dict`` (``via="dict"``), anything else
    (or ``via="file"``) written to a file and read with ``cbudget.load_model``."""
    if isinstance(case, dict) and via == "dict":
        return model_from_dict(case)
    path = os.path.join(tmpdir, "case.json")
    with open(path, "wb") as f:
        f.write(case_content(case))
    return cbudget.load_model(path)


def check_case(case: dict | str | bytes, via: str = "file") -> Outcome:
    """Load ``case`` (see :func:`load_case`) and, if it loads, use it as a user would
    (:func:`use_model`); the :class:`Outcome`. In this process: a case that crashes the
    interpreter takes it down (:class:`Worker` runs cases in a subprocess). Another
    library's model file (``via`` one of ``foreign_mutations.FOREIGN_VIAS``) is checked
    by :func:`foreign_mutations.check_foreign`."""
    if isinstance(via, str) and via.startswith("foreign:"):
        from foreign_mutations import check_foreign
        return check_foreign(case_content(case), via)
    with tempfile.TemporaryDirectory(prefix="cbudget-fuzz-") as tmpdir, \
            warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            original = copy.deepcopy(case) if isinstance(case, dict) and via == "dict" else None
            model = load_case(case, tmpdir, via)
        except (ValueError, TypeError) as exc:
            kind = type(exc).__name__
            if not str(exc).strip():
                return Outcome(f"bad-message:{kind}", repr(exc) + _where(exc), "load")
            return Outcome(f"rejected:{kind}", _message(exc), "load")
        except Exception as exc:   # every other exception at load time is a bug
            return Outcome(f"load:{type(exc).__name__}", _message(exc) + _where(exc), "load")
        try:
            if original is None:      # the file as load_model read it
                original = json.loads(case_content(case).decode("utf-8"),
                                      parse_constant=lambda c: math.nan)
            use_model(model, tmpdir, original)
        except Exception as exc:
            return Outcome(f"after-load:{type(exc).__name__}", _message(exc) + _where(exc),
                           getattr(exc, "step", "?"))
    return Outcome("ok")


# -- cases ------------------------------------------------------------------------------
class Case(NamedTuple):
    """Case number ``seed`` of the fuzzer: the seed model mutated, the mutations, the
    case (a document, or a file's content) and how it is loaded."""
    seed: int
    model: str
    steps: list
    case: Any          # dict | str | bytes
    via: str           # "file" (cbudget.load_model) or "dict" (model_from_dict)

    def describe(self) -> str:
        return f"case {self.seed} ({self.model}, via {self.via}): " + "; ".join(self.steps)


def make_case(seed: int, model_index: int | None = None,
              models: list[tuple[str, dict]] | None = None) -> Case:
    """Case number ``seed`` (of seed model ``model_index``, else one chosen by the seed),
    the same on every run and machine."""
    models = models if models is not None else seed_models()
    rng = random.Random(seed)
    index = rng.randrange(len(models)) if model_index is None else model_index % len(models)
    name, doc = models[index]
    case, steps = mutate(doc, rng)
    via = "dict" if isinstance(case, dict) and rng.random() < 0.25 else "file"
    return Case(seed, name, steps, case, via)


# -- running cases in a subprocess ------------------------------------------------------
# The worker reads one request per line on stdin, {"content": base64 of the file,
# "via": "file" | "dict"}, and answers each with one line {"kind", "message", "step"} on
# the stdout it had when it started (anything else the process prints goes to stderr).
# A case that kills the worker (a segfault) or runs past the timeout is reported as
# "crash:<signal>" / "timeout" and the worker is restarted for the next case.
MEMORY_LIMIT = 4 << 30     # bytes of address space a worker may use (POSIX)


def _serve() -> None:
    import base64
    import faulthandler

    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)                     # prints of the code under test go to stderr
    sys.stdout = sys.stderr
    faulthandler.enable()             # a crash leaves the Python stack on stderr
    try:
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    except (ImportError, ValueError, OSError):
        pass
    answers.write(json.dumps({"ready": True}) + "\n")
    answers.flush()
    for line in sys.stdin:
        request = json.loads(line)
        content = base64.b64decode(request["content"])
        case: dict | bytes = content
        if request["via"] == "dict":
            case = json.loads(content.decode("utf-8"))     # NaN and Infinity as Python's
        print(f"--- case {request.get('seed')}", file=sys.stderr, flush=True)
        outcome = check_case(case, request["via"])
        answers.write(json.dumps(outcome._asdict()) + "\n")
        answers.flush()


class Worker:
    """A subprocess that checks cases (:func:`check_case`) one after another; a case
    that crashes it or runs past ``timeout`` seconds gets ``crash:<signal>`` /
    ``timeout`` and the worker is started again for the next one."""

    def __init__(self, timeout: float = 20.0, startup_timeout: float = 120.0):
        self.timeout = timeout
        self.startup_timeout = startup_timeout
        self.proc: Any = None
        self.restarts = 0

    def _start(self) -> None:
        import queue
        import subprocess
        import threading

        env = dict(os.environ)
        env.setdefault("OPENBLAS_NUM_THREADS", "1")
        env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        env["PYTHONFAULTHANDLER"] = "1"
        # the worker imports the cbudget this process imported
        root = os.path.dirname(os.path.dirname(os.path.abspath(cbudget.__file__)))
        env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in [env.get("PYTHONPATH")] if p])
        self.stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--serve"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, env=env)
        self.lines: queue.Queue = queue.Queue()
        proc, lines = self.proc, self.lines

        def read():
            for line in proc.stdout:
                lines.put(line)
            lines.put(None)

        threading.Thread(target=read, daemon=True).start()
        if self._answer(self.startup_timeout) is None:
            raise RuntimeError(f"the fuzz worker did not start:\n{self._stderr_tail(40)}")

    def _answer(self, timeout: float) -> dict | None:
        """The worker's next answer; None if it sent none within ``timeout`` seconds or
        closed its output (it died)."""
        import queue
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            return None
        return None if line is None else json.loads(line)

    def _stderr_tail(self, n_lines: int = 12) -> str:
        self.stderr.seek(0)
        lines = self.stderr.read().decode("utf-8", "replace").splitlines()
        # from the last case marker on: what this case printed
        for i in range(len(lines) - 1, -1, -1):
            if lines[i].startswith("--- case"):
                lines = lines[i + 1:]
                break
        return "\n".join(lines[-n_lines:])

    def stop(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            for stream in (self.proc.stdin, self.proc.stdout):
                try:
                    stream.close()
                except OSError:
                    pass
            self.stderr.close()
            self.proc = None

    def check(self, content: bytes, via: str = "file", seed: int | None = None) -> Outcome:
        """The outcome of the model file ``content`` (``via="dict"``: its document given
        to ``model_from_dict``)."""
        import base64
        import signal
        import subprocess

        if self.proc is None:
            self._start()
        request = {"content": base64.b64encode(content).decode("ascii"), "via": via,
                   "seed": seed}
        try:
            self.proc.stdin.write((json.dumps(request) + "\n").encode("ascii"))
            self.proc.stdin.flush()
        except OSError:
            pass                       # it died: reported below
        answer = self._answer(self.timeout)
        if answer is not None:
            return Outcome(**answer)
        try:             # it closed its output when it died: wait for its exit status
            code = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:   # still running: a timeout
            self.stop()
            self.restarts += 1
            return Outcome("timeout", f"no answer within {self.timeout:g} s", "?")
        tail = self._stderr_tail()
        self.stop()
        self.restarts += 1
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
        else:
            name = f"exit {code}"
        return Outcome(f"crash:{name}", tail, "?")

    def check_case(self, case: Case) -> Outcome:
        content = json.dumps(case.case).encode("utf-8") if case.via == "dict" \
            else case_content(case.case)
        return self.check(content, case.via, case.seed)

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


if __name__ == "__main__" and sys.argv[1:2] == ["--serve"]:
    _serve()
