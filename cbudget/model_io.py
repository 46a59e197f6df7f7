"""The JSON model format (ARCHITECTURE section 4): save, load, validate.

Top level: ``format``, ``format_version`` [major, minor], ``library_version``,
``model_type``, ``algorithm``, ``objective``, ``base_score``, ``num_class``,
``feature_names``, ``cost_model``, ``training_params``, ``attributes``, ``summary`` and
``trees``. A cost-aware algorithm adds a section named after it: ``cegb`` (format 1.1)
or ``greedy_miser`` (format 1.2), holding the trade-off ``cost_tradeoff`` (lambda), the
growth policy and limits, ``gain_scale`` (0.5: the factor 1/2 of CEGB's eq. 12 and of
Greedy Miser's impurity; LightGBM's gain has none), the ``gradient_order`` (2: Newton
leaves on gradient and hessian sums; 1: Greedy Miser's CART on residuals) and the
``learning_rate`` (Greedy Miser's step size). Each tree stores column arrays indexed by
node id, XGBoost-style, with the
cost metadata per node (``gain`` and ``cost_penalty`` apart, ``n_samples``,
``sum_hessian``, ``new_acquisitions``, ``path_cost``). Floats are written with
``repr`` precision, so save -> load -> predict is bit-identical.
"""
import json
import math

import numpy as np

from ._core._types import NODE_DTYPE
from ._version import __version__
from .costs import CostModel
from .params import ALGORITHMS, COST_AWARE_ALGORITHMS

__all__ = ["save_model", "load_model", "booster_to_dict", "booster_from_dict",
           "FORMAT_VERSION"]

FORMAT_NAME = "cbudget"
FORMAT_VERSION = (1, 2)

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


def booster_to_dict(booster):
    """JSON-ready dict of a :class:`cbudget.Booster`."""
    attributes = {}
    if booster.best_iteration is not None:
        attributes["best_iteration"] = int(booster.best_iteration)
        attributes["best_score"] = float(booster.best_score)
    doc = {
        "format": FORMAT_NAME,
        "format_version": list(FORMAT_VERSION),
        "library_version": __version__,
        "model_type": "booster",
        "algorithm": booster.algorithm,
        "objective": booster.objective,
        "base_score": booster.base_score.tolist(),
        "num_class": booster.num_class,
        "feature_names": list(booster.feature_names),
        "cost_model": booster.cost_model.to_dict(),
        "training_params": {k: v for k, v in booster.params.items()},
        "attributes": attributes,
        "summary": booster.summary,
        "iteration_indptr": list(booster.iteration_indptr),
        "trees": [_tree_to_dict(t, k) for t, k in zip(booster.trees, booster.tree_outputs)],
    }
    if booster.algorithm in COST_AWARE_ALGORITHMS:
        doc[booster.algorithm] = _cost_aware_section(booster.params)
    return doc


def save_model(booster, path):
    """Write ``booster`` to ``path`` as JSON (written to a temporary file first, so an
    interrupted save never leaves a truncated model behind)."""
    import os
    doc = booster_to_dict(booster)
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
        try:
            tree[field] = values
        except OverflowError:
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


def booster_from_dict(doc):
    """Rebuild a :class:`cbudget.Booster` from its JSON dict, validating everything."""
    from .booster import Booster

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
    if model_type != "booster":
        raise ValueError(f"model_type {model_type!r} is not supported by this version")
    feature_names = _require(doc, "feature_names", list, "")
    if not feature_names or not all(isinstance(n, str) for n in feature_names):
        raise ValueError("invalid cbudget model: feature_names must be a non-empty list of str")
    n_features = len(feature_names)
    objective = _require(doc, "objective", str, "")
    num_class = _require(doc, "num_class", int, "")
    if num_class < 1 or (num_class > 1) != (objective == "multi:softprob"):
        raise ValueError(f"invalid cbudget model: num_class {num_class} does not fit "
                         f"objective {objective!r}")
    params = _require(doc, "training_params", dict, "")
    params["algorithm"] = _require(doc, "algorithm", str, "")
    if params["algorithm"] not in ALGORITHMS:
        raise ValueError(f"invalid cbudget model: unknown algorithm {params['algorithm']!r}")
    algorithm = params["algorithm"]
    if algorithm in COST_AWARE_ALGORITHMS:
        tradeoff = _require(_require(doc, algorithm, dict, ""), "cost_tradeoff", (int, float),
                            f"{algorithm}.")
        if not (math.isfinite(tradeoff) and tradeoff >= 0):
            raise ValueError(f"invalid cbudget model: {algorithm}.cost_tradeoff must be "
                             "finite and >= 0")
        params["cost_tradeoff"] = float(tradeoff)
    base_score = _require(doc, "base_score", list, "")
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in base_score):
        raise ValueError("invalid cbudget model: base_score must hold numbers")
    try:
        booster = Booster(objective=objective, num_class=num_class,
                          base_score=np.asarray(base_score, dtype=np.float64),
                          feature_names=feature_names,
                          cost_model=CostModel.from_dict(_require(doc, "cost_model", dict, ""),
                                                         n_features),
                          params=params)
    except (TypeError, KeyError, ValueError) as exc:
        raise ValueError(f"invalid cbudget model: {exc}") from None
    n_outputs = booster._objective.n_outputs
    if booster.base_score.shape != (n_outputs,) or not np.all(np.isfinite(booster.base_score)):
        raise ValueError(f"invalid cbudget model: base_score must hold {n_outputs} finite numbers")
    trees = _require(doc, "trees", list, "")
    indptr = _require(doc, "iteration_indptr", list, "")
    if (not indptr or indptr[0] != 0 or indptr[-1] != len(trees)
            or not all(isinstance(i, int) for i in indptr)
            or any(b < a for a, b in zip(indptr, indptr[1:]))):
        raise ValueError("invalid cbudget model: iteration_indptr does not match the trees")
    for i, d in enumerate(trees):
        tree, output = _tree_from_dict(d, i, n_features, n_outputs)
        booster.trees.append(tree)
        booster.tree_outputs.append(output)
    booster.iteration_indptr = list(indptr)
    attributes = _require(doc, "attributes", dict, "")
    if "best_iteration" in attributes:
        best_iteration = _require(attributes, "best_iteration", int, "attributes.")
        best_score = _require(attributes, "best_score", (int, float), "attributes.")
        if not 0 <= best_iteration < max(booster.num_boosted_rounds(), 1):
            raise ValueError("invalid cbudget model: attributes.best_iteration out of range")
        booster.best_iteration, booster.best_score = best_iteration, float(best_score)
    booster.summary = _require(doc, "summary", dict, "")
    return booster


def load_model(path):
    """Load a model saved by ``save_model``; returns the right model class.

    Raises ValueError for a file that is not a valid cbudget model (truncated, edited
    inconsistently, unknown format version).
    """
    with open(path, "r", encoding="utf-8") as f:
        text = f.read()
    try:
        doc = json.loads(text, parse_constant=lambda c: math.nan)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not a valid JSON model file ({exc})") from None
    return booster_from_dict(doc)
