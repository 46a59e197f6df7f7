"""The JSON model format (ARCHITECTURE section 4): save, load, validate.

Top level: ``format``, ``format_version`` [major, minor], ``library_version``,
``model_type``, ``algorithm``, ``objective``, ``base_score``, ``num_class``,
``feature_names``, ``cost_model``, ``training_params``, ``attributes``, ``summary`` and
``trees``. A cost-aware algorithm adds a section named after it: ``cegb`` (format 1.1)
or ``greedy_miser`` (format 1.2), holding the trade-off ``cost_tradeoff`` (lambda), the
growth policy and limits, ``gain_scale`` (0.5: the factor 1/2 of CEGB's eq. 12 and of
Greedy Miser's impurity; LightGBM's gain has none), the ``gradient_order`` (2: Newton
leaves on gradient and hessian sums; 1: Greedy Miser's CART on residuals) and the
``learning_rate`` (Greedy Miser's step size). A forest (``model_type`` "forest",
format 1.3) has a ``budget_rf`` section (``alpha``, ``impurity``, ``path_free``,
``n_stumps``, ``stump_node_sizes``, ``max_depth``, ``budget``, ``vote``), its
``base_score`` holds the training class frequencies, and each tree adds
``class_counts`` (n_nodes x num_class, row by row; ``gain`` is a split's worst-child
impurity decrease, ``cost_penalty`` its c(t)). A tree or cascade of linear classifiers
(``model_type`` "tree_of_classifiers" or "cascade", format 1.4) has no ``trees``: its
``nodes`` section holds per node (level order) ``upper_children`` / ``lower_children``
(-1: terminal element), ``thresholds``, ``biases``, ``weights`` (n_nodes lists of
n_coordinates numbers), and the cost metadata ``path_cost`` (acquisition cost of the
features needed from the root to the node), ``new_features`` (features first needed
there), ``reach`` (mean training reach probability, soft traversal), ``n_samples`` and
``n_exits`` (training inputs reaching / leaving there, hard thresholds); ``impute``
holds the values of missing coordinates, ``basis`` the booster of the boosting trick
(a booster document) or null, and a ``classifier_tree`` section the loss,
``reg_alpha``, ``cost_tradeoff``, structure and basis settings. Each tree stores column
arrays indexed by node id, XGBoost-style, with the
cost metadata per node (``gain`` and ``cost_penalty`` apart, ``n_samples``,
``sum_hessian``, ``new_acquisitions``, ``path_cost``).
A gated model (``model_type`` "gated", format 1.5: ADAPT-GBRT / ADAPT-LIN) has no
``trees``: ``gate`` and ``predictor`` are booster documents (their trees carry the
per-node cost metadata) or ``{"model_type": "linear", "weights", "bias", "impute"}``;
``expensive`` is the expensive model's own document, or ``{"model_type": "external",
"class", "cost", "features"}`` for a model that is not cbudget's (not stored:
``load_model(path, expensive_model=...)`` takes it back); an ``adapt`` section holds
``gate_threshold`` (an input goes to the expensive model when the gate's margin is above
it), ``p_full`` and ``cost_tradeoff``. Floats are written with ``repr`` precision, so
save -> load -> predict is bit-identical.
"""
import json
import math

import numpy as np

from ._core._types import NODE_DTYPE
from ._version import __version__
from .costs import CostModel
from .params import ALGORITHMS, BOOSTING_ALGORITHMS, COST_AWARE_ALGORITHMS, IMPURITIES

__all__ = ["save_model", "load_model", "model_to_dict", "model_from_dict", "FORMAT_VERSION"]

FORMAT_NAME = "cbudget"
FORMAT_VERSION = (1, 5)

# JSON key -> NODE_DTYPE field, and the Python type of its values
_TREE_FIELDS = {
    "left_children": ("left", int),
    "right_children": ("right", int),
    "split_features": ("feature", int),
    "thresholds": ("threshold", float),
    "split_bins": ("bin_threshold", int),
    "default_left": ("default_left", int),
    "leaf_values": ("value", float),
    "gain": ("gain", float),
    "cost_penalty": ("cost_penalty", float),
    "n_samples": ("n_samples", int),
    "sum_hessian": ("sum_hessian", float),
    "new_acquisitions": ("new_acquisitions", int),
    "path_cost": ("path_cost", float),
    "depth": ("depth", int),
}


def _tree_to_dict(tree, output):
    d = {"output": int(output), "num_nodes": int(tree.shape[0])}
    for key, (field, kind) in _TREE_FIELDS.items():
        d[key] = [kind(v) for v in tree[field].tolist()]
    return d


def _cost_aware_section(params):
    """The ``cegb`` / ``greedy_miser`` section: what a reader needs to interpret the
    per-node ``gain`` and ``cost_penalty``."""
    return {
        "cost_tradeoff": float(params["cost_tradeoff"]),
        "grow_policy": params["grow_policy"],
        "num_leaves": params["num_leaves"],
        "max_depth": params["max_depth"],
        "gain_scale": 0.5,
        "gradient_order": 1 if params["algorithm"] == "greedy_miser" else 2,
        "learning_rate": float(params["learning_rate"]),
    }


def _header(model):
    """The top-level fields every model type has."""
    attributes = {}
    if model.best_iteration is not None:
        attributes["best_iteration"] = int(model.best_iteration)
        attributes["best_score"] = float(model.best_score)
    return {
        "format": FORMAT_NAME,
        "format_version": list(FORMAT_VERSION),
        "library_version": __version__,
        "model_type": model.model_type,
        "algorithm": model.algorithm,
        "objective": model.objective,
        "num_class": model.num_class,
        "feature_names": list(model.feature_names),
        "cost_model": model.cost_model.to_dict(),
        "training_params": {k: v for k, v in model.params.items()},
        "attributes": attributes,
        "summary": model.summary,
    }


def _booster_to_dict(booster):
    doc = _header(booster)
    doc["iteration_indptr"] = list(booster.iteration_indptr)
    doc["base_score"] = booster.base_score.tolist()
    doc["trees"] = [_tree_to_dict(t, k) for t, k in zip(booster.trees, booster.tree_outputs)]
    if booster.algorithm in COST_AWARE_ALGORITHMS:
        doc[booster.algorithm] = _cost_aware_section(booster.params)
    return doc


def _forest_to_dict(forest):
    """A forest: ``base_score`` holds the training class frequencies (the prediction
    without trees); each tree adds ``class_counts``, its nodes' class counts row by row
    (n_nodes x num_class); ``leaf_values`` are the leaves' majority classes."""
    doc = _header(forest)
    doc["iteration_indptr"] = list(forest.iteration_indptr)
    doc["base_score"] = forest.class_prior.tolist()
    doc["trees"] = []
    for tree, counts in zip(forest.trees, forest.class_counts):
        d = _tree_to_dict(tree, 0)
        d["class_counts"] = counts.ravel().tolist()
        doc["trees"].append(d)
    p = forest.params
    doc["budget_rf"] = {
        "alpha": float(p["alpha"]), "impurity": p["impurity"], "path_free": p["path_free"],
        "n_stumps": p["n_stumps"] if p["n_stumps"] == "all" else list(p["n_stumps"]),
        "stump_node_sizes": list(p["stump_node_sizes"]), "max_depth": p["max_depth"],
        "budget": p["budget"], "vote": "majority",
    }
    return doc


CLASSIFIER_TREE_SETTINGS = ("loss", "reg_alpha", "cost_tradeoff", "tree_structure",
                            "max_depth", "fine_tune", "class_weight", "basis_trees",
                            "basis_max_depth", "basis_learning_rate", "tol")


def _classifier_tree_to_dict(model):
    """A tree / cascade of linear classifiers: the ``nodes`` section, ``impute``,
    ``basis`` and the ``classifier_tree`` settings."""
    doc = _header(model)
    paths = model._path_table()
    seen_on_path = [set(paths[k][1].tolist()) for k in range(model.num_nodes())]
    parent = model.parents()
    doc["nodes"] = {
        "num_nodes": model.num_nodes(),
        "upper_children": model.upper.tolist(),
        "lower_children": model.lower.tolist(),
        "thresholds": model.thresholds.tolist(),
        "biases": model.bias.tolist(),
        "weights": model.weights.tolist(),
        "path_cost": model.path_costs().tolist(),
        "new_features": [sorted(seen_on_path[k] - (seen_on_path[parent[k]] if parent[k] >= 0
                                                  else set())) for k in range(model.num_nodes())],
        "reach": model.reach.tolist(),
        "n_samples": model.n_samples.tolist(),
        "n_exits": model.n_exits.tolist(),
    }
    doc["impute"] = model.impute.tolist()
    doc["basis"] = None if model.basis is None else _booster_to_dict(model.basis)
    doc["classifier_tree"] = {name: model.params[name] for name in CLASSIFIER_TREE_SETTINGS}
    return doc


ADAPT_SETTINGS = ("p_full", "cost_tradeoff", "q_update_period", "acquisition", "n_restarts")


def _gated_part_to_dict(part):
    if part.model_type == "linear":
        return {"model_type": "linear", "weights": part.weights.tolist(),
                "bias": part.bias, "impute": part.impute.tolist()}
    return _booster_to_dict(part)


def _gated_to_dict(model):
    """A gated model: ``gate``, ``predictor``, ``expensive`` and the ``adapt`` section."""
    from .adapt import ExternalModel

    doc = _header(model)
    doc["gate"] = _gated_part_to_dict(model.gate)
    doc["predictor"] = _gated_part_to_dict(model.predictor)
    f0 = model._expensive()
    if isinstance(f0, ExternalModel):
        kind = type(f0.model)
        features = f0.feature_indices(model.feature_names)
        doc["expensive"] = {
            "model_type": "external", "class": f"{kind.__module__}.{kind.__qualname__}",
            "cost": f0.cost if isinstance(f0.cost, float) else None,
            "cost_callable": callable(f0.cost),
            "features": None if features is None else features.tolist()}
    else:
        doc["expensive"] = model_to_dict(f0)
    doc["adapt"] = {name: model.params[name] for name in ADAPT_SETTINGS if name in model.params}
    doc["adapt"]["gate_threshold"] = model.gate_threshold
    return doc


def model_to_dict(model):
    """JSON-ready dict of a :class:`cbudget.Booster`, :class:`cbudget.Forest`,
    :class:`cbudget.ClassifierTree`, :class:`cbudget.Cascade` or
    :class:`cbudget.GatedModel`."""
    return {"booster": _booster_to_dict, "forest": _forest_to_dict,
            "tree_of_classifiers": _classifier_tree_to_dict,
            "cascade": _classifier_tree_to_dict, "gated": _gated_to_dict}[model.model_type](model)


def save_model(model, path):
    """Write ``model`` to ``path`` as JSON (written to a temporary file first, so an
    interrupted save never leaves a truncated model behind)."""
    import os
    doc = model_to_dict(model)
    text = json.dumps(doc, allow_nan=False, separators=(",", ":"))
    tmp = f"{os.fspath(path)}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def _require(d, key, kind, where):
    if key not in d:
        raise ValueError(f"invalid cbudget model: missing field {where}{key!r}")
    value = d[key]
    if isinstance(value, bool) or not isinstance(value, kind):
        raise ValueError(f"invalid cbudget model: field {where}{key!r} has the wrong type "
                         f"({type(value).__name__})")
    return value


def _tree_from_dict(d, index, n_features, n_outputs):
    where = f"trees[{index}]."
    if not isinstance(d, dict):
        raise ValueError(f"invalid cbudget model: trees[{index}] is not an object")
    n_nodes = _require(d, "num_nodes", int, where)
    if n_nodes < 1:
        raise ValueError(f"invalid cbudget model: {where}num_nodes must be >= 1")
    for key in _TREE_FIELDS:  # lengths first: never allocate for a bogus num_nodes
        n_values = len(_require(d, key, list, where))
        if n_values != n_nodes:
            raise ValueError(f"invalid cbudget model: {where}{key} has {n_values} "
                             f"entries, expected {n_nodes}")
    output = _require(d, "output", int, where)
    if not 0 <= output < n_outputs:
        raise ValueError(f"invalid cbudget model: {where}output {output} out of range")
    tree = np.zeros(n_nodes, dtype=NODE_DTYPE)
    for key, (field, kind) in _TREE_FIELDS.items():
        values = d[key]
        allowed = (int,) if kind is int else (int, float)
        if not all(isinstance(v, allowed) and not isinstance(v, bool) for v in values):
            raise ValueError(f"invalid cbudget model: {where}{key} must hold "
                             f"{'integers' if kind is int else 'numbers'}")
        if kind is int:
            _check_integer_range(values, tree.dtype[field], f"{where}{key}")
        try:
            tree[field] = values
        except OverflowError:   # an integer too large for a float field
            raise ValueError(f"invalid cbudget model: {where}{key} value out of range") from None
    left, right, feature = tree["left"], tree["right"], tree["feature"]
    is_leaf = left == -1
    if np.any(is_leaf != (right == -1)):
        raise ValueError(f"invalid cbudget model: {where} a node has exactly one child")
    internal = ~is_leaf
    ids = np.arange(n_nodes)
    # children after their parent and within the tree: no cycles, no out-of-range ids
    if np.any(internal & ((left <= ids) | (right <= ids) | (left >= n_nodes)
                          | (right >= n_nodes))):
        raise ValueError(f"invalid cbudget model: {where} child index out of range or cyclic")
    children = np.concatenate([left[internal], right[internal]])
    if np.unique(children).size != children.size or children.size != n_nodes - 1:
        raise ValueError(f"invalid cbudget model: {where} nodes do not form one tree")
    if np.any(internal & ((feature < 0) | (feature >= n_features))):
        raise ValueError(f"invalid cbudget model: {where} split feature out of range")
    for field in ("threshold", "value"):
        if not np.all(np.isfinite(tree[field])):
            raise ValueError(f"invalid cbudget model: {where} non-finite {field}")
    return tree, output


def _check_integer_range(values, dtype, where):
    """Reject integers that do not fit ``dtype``: numpy 1.x wraps them silently on
    conversion (2**32 + 3 would become node 3), numpy 2 raises OverflowError."""
    info = np.iinfo(dtype)
    if not all(info.min <= v <= info.max for v in values):
        raise ValueError(f"invalid cbudget model: {where} value out of range")


def _finite_number(d, key, where, *, allow_none=False):
    """A finite number >= 0 (or None when allowed) from ``d[key]``."""
    if allow_none and d.get(key, 0) is None:
        return None
    value = _require(d, key, (int, float), where)
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"invalid cbudget model: {where}{key} must be finite and >= 0")
    return float(value)


def _booster_params(doc, params, num_class, objective):
    if num_class < 1 or (num_class > 1) != (objective == "multi:softprob"):
        raise ValueError(f"invalid cbudget model: num_class {num_class} does not fit "
                         f"objective {objective!r}")
    algorithm = params["algorithm"]
    if algorithm not in BOOSTING_ALGORITHMS:
        raise ValueError(f"invalid cbudget model: a booster cannot be a {algorithm!r} model")
    if algorithm in COST_AWARE_ALGORITHMS:
        params["cost_tradeoff"] = _finite_number(_require(doc, algorithm, dict, ""),
                                                 "cost_tradeoff", f"{algorithm}.")


def _forest_params(doc, params, num_class, objective):
    if num_class < 2 or (objective == "binary:logistic") != (num_class == 2) \
            or objective not in ("binary:logistic", "multi:softprob"):
        raise ValueError(f"invalid cbudget model: num_class {num_class} does not fit a "
                         f"forest with objective {objective!r}")
    if params["algorithm"] != "budget_rf":
        raise ValueError("invalid cbudget model: a forest must be a 'budget_rf' model")
    section = _require(doc, "budget_rf", dict, "")
    params["alpha"] = _finite_number(section, "alpha", "budget_rf.")
    params["budget"] = _finite_number(section, "budget", "budget_rf.", allow_none=True)
    params["impurity"] = _require(section, "impurity", str, "budget_rf.")
    if params["impurity"] not in IMPURITIES:
        raise ValueError(f"invalid cbudget model: unknown impurity {params['impurity']!r}")
    params["path_free"] = section.get("path_free")
    if not isinstance(params["path_free"], bool):
        raise ValueError("invalid cbudget model: budget_rf.path_free must be true or false")


def model_from_dict(doc, *, expensive_model=None):
    """Rebuild a model from its JSON dict, validating everything (``expensive_model``:
    see :func:`load_model`)."""
    from .booster import Booster
    from .forest import Forest

    if not isinstance(doc, dict):
        raise ValueError("invalid cbudget model: the document is not a JSON object")
    if doc.get("format") != FORMAT_NAME:
        raise ValueError(f"not a cbudget model (format={doc.get('format')!r})")
    version = _require(doc, "format_version", list, "")
    if (len(version) != 2 or not all(isinstance(v, int) for v in version)
            or version[0] != FORMAT_VERSION[0] or version[1] > FORMAT_VERSION[1]):
        raise ValueError(f"unsupported cbudget model format_version {version}; this is "
                         f"cbudget {__version__}, which reads {FORMAT_VERSION[0]}.0 to "
                         f"{FORMAT_VERSION[0]}.{FORMAT_VERSION[1]}")
    model_type = _require(doc, "model_type", str, "")
    if model_type not in ("booster", "forest", "tree_of_classifiers", "cascade", "gated"):
        raise ValueError(f"model_type {model_type!r} is not supported by this version")
    if model_type == "gated":
        return _gated_from_dict(doc, expensive_model)
    if expensive_model is not None:
        raise ValueError(f"expensive_model is for gated models; this is a {model_type}")
    if model_type in ("tree_of_classifiers", "cascade"):
        return _classifier_tree_from_dict(doc, model_type)
    is_forest = model_type == "forest"
    feature_names = _require(doc, "feature_names", list, "")
    if not feature_names or not all(isinstance(n, str) for n in feature_names):
        raise ValueError("invalid cbudget model: feature_names must be a non-empty list of str")
    n_features = len(feature_names)
    objective = _require(doc, "objective", str, "")
    num_class = _require(doc, "num_class", int, "")
    params = _require(doc, "training_params", dict, "")
    params["algorithm"] = _require(doc, "algorithm", str, "")
    if params["algorithm"] not in ALGORITHMS:
        raise ValueError(f"invalid cbudget model: unknown algorithm {params['algorithm']!r}")
    (_forest_params if is_forest else _booster_params)(doc, params, num_class, objective)
    base_score = _require(doc, "base_score", list, "")
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in base_score):
        raise ValueError("invalid cbudget model: base_score must hold numbers")
    base_score = np.asarray(base_score, dtype=np.float64)
    n_scores = num_class if (is_forest or objective == "multi:softprob") else 1
    if base_score.shape != (n_scores,) or not np.all(np.isfinite(base_score)) \
            or (is_forest and (np.any(base_score < 0) or not base_score.sum() > 0)):
        raise ValueError(f"invalid cbudget model: base_score must hold {n_scores} finite "
                         f"numbers{' >= 0 (class frequencies)' if is_forest else ''}")
    try:
        common = dict(objective=objective, num_class=num_class, feature_names=feature_names,
                      cost_model=CostModel.from_dict(_require(doc, "cost_model", dict, ""),
                                                     n_features),
                      params=params)
        model = (Forest(class_prior=base_score, **common) if is_forest
                 else Booster(base_score=base_score, **common))
    except (TypeError, KeyError, ValueError) as exc:
        raise ValueError(f"invalid cbudget model: {exc}") from None
    n_outputs = 1 if is_forest else model._objective.n_outputs
    trees = _require(doc, "trees", list, "")
    indptr = _require(doc, "iteration_indptr", list, "")
    if (not indptr or indptr[0] != 0 or indptr[-1] != len(trees)
            or not all(isinstance(i, int) for i in indptr)
            or any(b < a for a, b in zip(indptr, indptr[1:]))
            or (is_forest and indptr != list(range(len(trees) + 1)))):
        raise ValueError("invalid cbudget model: iteration_indptr does not match the trees")
    for i, d in enumerate(trees):
        tree, output = _tree_from_dict(d, i, n_features, n_outputs)
        if is_forest:
            model._append_tree(tree, _class_counts(d, i, tree.shape[0], num_class))
        else:
            model.trees.append(tree)
            model.tree_outputs.append(output)
    model.iteration_indptr = list(indptr)
    attributes = _require(doc, "attributes", dict, "")
    if "best_iteration" in attributes:
        best_iteration = _require(attributes, "best_iteration", int, "attributes.")
        best_score = _require(attributes, "best_score", (int, float), "attributes.")
        if not 0 <= best_iteration < max(model.num_iterations(), 1):
            raise ValueError("invalid cbudget model: attributes.best_iteration out of range")
        model.best_iteration, model.best_score = best_iteration, float(best_score)
    model.summary = _require(doc, "summary", dict, "")
    return model


def _with_attributes(model, doc):
    """``model`` with the document's ``best_iteration`` / ``best_score`` and ``summary``
    (the linear-node models: no iteration range to check)."""
    attributes = _require(doc, "attributes", dict, "")
    if "best_iteration" in attributes:
        model.best_iteration = _require(attributes, "best_iteration", int, "attributes.")
        model.best_score = float(_require(attributes, "best_score", (int, float), "attributes."))
    model.summary = _require(doc, "summary", dict, "")
    return model


def _class_counts(d, index, n_nodes, num_class):
    """A forest tree's ``class_counts``: n_nodes x num_class finite numbers >= 0."""
    values = _require(d, "class_counts", list, f"trees[{index}].")
    if len(values) != n_nodes * num_class or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        raise ValueError(f"invalid cbudget model: trees[{index}].class_counts must hold "
                         f"{n_nodes} x {num_class} numbers")
    counts = np.asarray(values, dtype=np.float64).reshape(n_nodes, num_class)
    if not np.all(np.isfinite(counts)) or np.any(counts < 0):
        raise ValueError(f"invalid cbudget model: trees[{index}].class_counts must be "
                         "finite and >= 0")
    return counts


def load_model(path, *, expensive_model=None):
    """Load a model saved by ``save_model``; returns the right model class.

    Parameters
    ----------
    path : str or path-like
    expensive_model : object, optional
        A gated model whose expensive model is not a cbudget model does not store it:
        give it here (a :class:`cbudget.ExternalModel`, or the estimator itself when its
        cost was declared as a number or as features).

    Raises ValueError for a file that is not a valid cbudget model (truncated, edited
    inconsistently, unknown format version), or for a gated model saved with an external
    expensive model when ``expensive_model`` is not given.
    """
    with open(path, "r", encoding="utf-8") as f:
        text = f.read()
    try:
        doc = json.loads(text, parse_constant=lambda c: math.nan)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not a valid JSON model file ({exc})") from None
    return model_from_dict(doc, expensive_model=expensive_model)


def _number_list(values, where, length=None):
    if not isinstance(values, list) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        raise ValueError(f"invalid cbudget model: {where} must be a list of numbers")
    if length is not None and len(values) != length:
        raise ValueError(f"invalid cbudget model: {where} has {len(values)} entries, "
                         f"expected {length}")
    return values


def _classifier_tree_from_dict(doc, model_type):
    """A :class:`cbudget.ClassifierTree` / :class:`cbudget.Cascade` from its document."""
    from .cstc import Cascade, ClassifierTree
    from .params import CLASSIFIER_TREE_ALGORITHMS, LOSSES

    feature_names = _require(doc, "feature_names", list, "")
    if not feature_names or not all(isinstance(n, str) for n in feature_names):
        raise ValueError("invalid cbudget model: feature_names must be a non-empty list of str")
    objective = _require(doc, "objective", str, "")
    if objective not in ("reg:squarederror", "binary:logistic"):
        raise ValueError(f"invalid cbudget model: objective {objective!r} of a tree of "
                         "classifiers")
    params = _require(doc, "training_params", dict, "")
    params["algorithm"] = _require(doc, "algorithm", str, "")
    if params["algorithm"] not in CLASSIFIER_TREE_ALGORITHMS or \
            (model_type == "cascade") != (params["algorithm"] != "cstc"):
        raise ValueError(f"invalid cbudget model: a {model_type} cannot be a "
                         f"{params['algorithm']!r} model")
    section = _require(doc, "classifier_tree", dict, "")
    missing = [name for name in CLASSIFIER_TREE_SETTINGS if name not in section]
    if missing:
        raise ValueError(f"invalid cbudget model: classifier_tree lacks {missing}")
    params.update(section)
    if params["loss"] not in LOSSES:
        raise ValueError(f"invalid cbudget model: unknown loss {params['loss']!r}")
    nodes = _require(doc, "nodes", dict, "")
    n_nodes = _require(nodes, "num_nodes", int, "nodes.")
    if n_nodes < 1:
        raise ValueError("invalid cbudget model: nodes.num_nodes must be >= 1")
    basis = doc.get("basis")
    if basis is not None:
        if not isinstance(basis, dict) or basis.get("model_type") != "booster":
            raise ValueError("invalid cbudget model: basis must be a booster document or null")
        basis = model_from_dict(basis)
        if basis.feature_names != feature_names:
            raise ValueError("invalid cbudget model: the basis booster's features differ")
    n_coords = len(feature_names) if basis is None else len(basis.trees)
    columns = {}
    for key in ("upper_children", "lower_children", "thresholds", "biases", "path_cost",
                "reach", "n_samples", "n_exits"):
        columns[key] = _number_list(_require(nodes, key, list, "nodes."), f"nodes.{key}",
                                    n_nodes)
    weights = _require(nodes, "weights", list, "nodes.")
    if len(weights) != n_nodes:
        raise ValueError(f"invalid cbudget model: nodes.weights has {len(weights)} rows, "
                         f"expected {n_nodes}")
    for k, row in enumerate(weights):
        _number_list(row, f"nodes.weights[{k}]", n_coords)
    impute = _number_list(_require(doc, "impute", list, ""), "impute", n_coords)
    for key, dtype in (("upper_children", np.int32), ("lower_children", np.int32),
                       ("n_samples", np.int64), ("n_exits", np.int64)):
        if not all(isinstance(v, int) for v in columns[key]):
            raise ValueError(f"invalid cbudget model: nodes.{key} must hold integers")
        _check_integer_range(columns[key], dtype, f"nodes.{key}")
    try:
        cost_model = CostModel.from_dict(_require(doc, "cost_model", dict, ""),
                                         len(feature_names))
        model = (Cascade if model_type == "cascade" else ClassifierTree)(
            objective=objective, loss=params["loss"], feature_names=feature_names,
            cost_model=cost_model, params=params, weights=np.asarray(weights, dtype=np.float64),
            bias=columns["biases"], thresholds=columns["thresholds"],
            upper=columns["upper_children"], lower=columns["lower_children"], impute=impute,
            basis=basis)
    except (TypeError, KeyError, OverflowError, ValueError) as exc:
        raise ValueError(f"invalid cbudget model: {exc}") from None
    model.reach = np.asarray(columns["reach"], dtype=np.float64)
    model.n_samples = np.asarray(columns["n_samples"], dtype=np.int64)
    model.n_exits = np.asarray(columns["n_exits"], dtype=np.int64)
    return _with_attributes(model, doc)


def _gated_part_from_dict(d, name, feature_names, cost_model):
    """The gate or the predictor: a binary booster with the model's features and costs,
    or a linear classifier."""
    from .adapt import LinearClassifier
    from .booster import Booster

    if not isinstance(d, dict):
        raise ValueError(f"invalid cbudget model: {name} must be an object")
    if d.get("model_type") == "linear":
        weights = _number_list(_require(d, "weights", list, f"{name}."), f"{name}.weights",
                               len(feature_names))
        impute = _number_list(_require(d, "impute", list, f"{name}."), f"{name}.impute",
                              len(feature_names))
        bias = _require(d, "bias", (int, float), f"{name}.")
        try:
            return LinearClassifier(weights, bias, impute, feature_names=feature_names,
                                    cost_model=cost_model)
        except ValueError as exc:
            raise ValueError(f"invalid cbudget model: {name}: {exc}") from None
    if d.get("model_type") != "booster":
        raise ValueError(f"invalid cbudget model: {name} must be a booster document or a "
                         "linear classifier")
    part = model_from_dict(d)
    if not isinstance(part, Booster) or part.objective != "binary:logistic":
        raise ValueError(f"invalid cbudget model: {name} must be a binary:logistic booster")
    if part.feature_names != feature_names or \
            part.cost_model.to_dict() != cost_model.to_dict():
        raise ValueError(f"invalid cbudget model: {name}'s features or costs differ from the "
                         "gated model's")
    return part


def _external_from_dict(d, expensive_model):
    """The expensive model of a document that did not store it: ``expensive_model``, with
    the declared cost stored in the document unless it is already an ExternalModel."""
    from .adapt import ExternalModel

    if expensive_model is None:
        raise ValueError(
            f"this gated model's expensive model ({d.get('class')}) is not a cbudget model "
            "and was not saved: load it with cbudget.load_model(path, expensive_model=...)")
    if isinstance(expensive_model, ExternalModel):
        return expensive_model
    if d.get("cost_callable"):
        raise ValueError("this gated model's expensive model has a cost function, which "
                         "was not saved: pass expensive_model=cbudget.ExternalModel(model, "
                         "cost=...)")
    cost, features = d.get("cost"), d.get("features")
    if cost is not None:
        _finite_number(d, "cost", "expensive.")
    if features is not None and not (isinstance(features, list)
                                     and all(isinstance(m, int) for m in features)):
        raise ValueError("invalid cbudget model: expensive.features must be a list of "
                         "feature indices")
    try:
        return ExternalModel(expensive_model, cost=cost, features=features)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"invalid cbudget model: expensive: {exc}") from None


def _gated_from_dict(doc, expensive_model):
    """A :class:`cbudget.GatedModel` from its document."""
    from .adapt import GatedModel
    from .params import ADAPT_ALGORITHMS

    feature_names = _require(doc, "feature_names", list, "")
    if not feature_names or not all(isinstance(n, str) for n in feature_names):
        raise ValueError("invalid cbudget model: feature_names must be a non-empty list of str")
    if _require(doc, "objective", str, "") != "binary:logistic":
        raise ValueError("invalid cbudget model: a gated model is binary:logistic")
    params = _require(doc, "training_params", dict, "")
    params["algorithm"] = _require(doc, "algorithm", str, "")
    if params["algorithm"] not in ADAPT_ALGORITHMS:
        raise ValueError(f"invalid cbudget model: a gated model cannot be a "
                         f"{params['algorithm']!r} model")
    section = _require(doc, "adapt", dict, "")
    threshold = _require(section, "gate_threshold", (int, float), "adapt.")
    if not math.isfinite(threshold):
        raise ValueError("invalid cbudget model: adapt.gate_threshold must be finite")
    params.update({k: v for k, v in section.items() if k != "gate_threshold"})
    try:
        cost_model = CostModel.from_dict(_require(doc, "cost_model", dict, ""),
                                         len(feature_names))
    except (TypeError, KeyError, ValueError) as exc:
        raise ValueError(f"invalid cbudget model: {exc}") from None
    gate = _gated_part_from_dict(_require(doc, "gate", dict, ""), "gate", feature_names,
                                 cost_model)
    predictor = _gated_part_from_dict(_require(doc, "predictor", dict, ""), "predictor",
                                      feature_names, cost_model)
    stored = _require(doc, "expensive", dict, "")
    if stored.get("model_type") == "external":
        expensive = _external_from_dict(stored, expensive_model)
    else:
        if expensive_model is not None:
            raise ValueError("this gated model stores its expensive model: do not pass "
                             "expensive_model")
        expensive = model_from_dict(stored)
        if expensive.feature_names != feature_names or \
                expensive.cost_model.to_dict() != cost_model.to_dict():
            raise ValueError("invalid cbudget model: the expensive model's features or costs "
                             "differ from the gated model's")
    model = GatedModel(gate=gate, predictor=predictor, expensive=expensive,
                       feature_names=feature_names, cost_model=cost_model, params=params,
                       gate_threshold=threshold)
    return _with_attributes(model, doc)
