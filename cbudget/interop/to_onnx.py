"""cbudget Boosters as ONNX models (``Booster.save_model(path, format="onnx")``) that
onnxruntime runs, predicting as cbudget does (docs/architecture.md, "Interoperability").

The trees become one ``TreeEnsemble`` operator of the ``ai.onnx.ml`` domain, version 5
(onnxruntime 1.20 and later), whose thresholds and leaf values have the input's type:
float64 by default, so that every float64 input routes exactly as in cbudget (a split
sends ``x <= threshold`` left, ``BRANCH_LEQ``; NaN follows ``default_left``, the node's
``missing_value_tracks_true``). A float32 graph (``dtype="float32"``) holds each
threshold as the largest float32 at most it: every float32 input routes as in cbudget.

A categorical split (cbudget: the codes of its bitset go left, others right; NaN and
negative values the ``default_left`` way; a value is truncated to its code) becomes a
``BRANCH_MEMBER`` node listing the codes, after a ``Floor`` of the categorical columns
(truncation, for the non-negative values that reach it); where negative values go left,
a ``BRANCH_LT 0`` node in front sends them (and NaN) to the left child. The graph then
adds each output's base score and applies the objective's transform:

* input ``input``: (n_samples, n_features), of the graph's type, the codes of
  categorical features (``booster.prepare_input(df)`` for a DataFrame);
* output ``prediction``: as ``booster.predict(X)``, (n_samples,) or
  (n_samples, num_class) for multi:softprob;
* output ``margin``: as ``booster.predict(X, output_margin=True)``.

This module does not import :mod:`cbudget.booster`'s users; it reads the model through
its public attributes. onnx itself is imported when a model is written.
"""
from __future__ import annotations

import json
import os
from types import ModuleType
from typing import Any

import numpy as np

from .._files import write_file_atomically
from .._version import __version__
from ..booster import Booster
from ..category_bins import bitset_codes
from ..dataset import float32_floor
from ..model_io import register_exporter
from .trees import leaf_tree

__all__ = ["save_onnx", "onnx_model", "ML_OPSET", "ONNX_OPSET"]

# ai.onnx.ml 5: TreeEnsemble (set-membership splits, thresholds of the input's type);
# the default domain's 21 goes with it (onnx 1.16, onnxruntime 1.20)
ML_OPSET = 5
ONNX_OPSET = 21
IR_VERSION = 10
# TreeEnsemble's node modes and aggregate function
BRANCH_LEQ, BRANCH_LT, BRANCH_GT, BRANCH_MEMBER = 0, 1, 3, 6
AGGREGATE_SUM = 1
# each objective's transform of the margins: an operator of the default domain, or none
TRANSFORMS = {"reg:squarederror": None, "binary:logistic": "Sigmoid",
              "multi:softprob": "Softmax", "rank:pairwise": None, "rank:ndcg": None}
DTYPES = {"float64": np.float64, "float32": np.float32}


def _onnx() -> ModuleType:
    """The onnx package, or an ImportError that says how to get it."""
    try:
        import onnx
    except ImportError as exc:
        raise ImportError("saving a model in ONNX's format needs the onnx package: pip "
                          "install onnx (or cbudget[onnx], which adds onnxruntime to run "
                          "it)") from exc
    return onnx


class _Ensemble:
    """The ``TreeEnsemble`` attributes of a booster's trees, built tree by tree: its
    branch nodes (``nodes_*``) and leaves (``leaf_*``) numbered across all trees; a
    child is a branch node or a leaf by its ``*leafs`` flag."""

    def __init__(self, dtype: type) -> None:
        self.dtype = dtype
        self.roots: list[int] = []
        self.features: list[int] = []
        self.modes: list[int] = []
        self.splits: list[float] = []
        self.true_ids: list[int] = []
        self.true_leafs: list[int] = []
        self.false_ids: list[int] = []
        self.false_leafs: list[int] = []
        self.missing_true: list[int] = []
        self.members: list[float] = []
        self.leaf_targets: list[int] = []
        self.leaf_weights: list[float] = []

    def _branch(self, feature: int, mode: int, split: float, missing_true: bool) -> int:
        """A new branch node (children set afterwards)."""
        self.features.append(feature)
        self.modes.append(mode)
        self.splits.append(split)
        self.missing_true.append(int(missing_true))
        for column in (self.true_ids, self.true_leafs, self.false_ids, self.false_leafs):
            column.append(0)
        return len(self.features) - 1

    def _link(self, node: int, true_child: tuple[int, bool],
              false_child: tuple[int, bool]) -> None:
        """Set a branch node's children (ensemble references)."""
        self.true_ids[node], self.true_leafs[node] = true_child[0], int(true_child[1])
        self.false_ids[node], self.false_leafs[node] = false_child[0], int(false_child[1])

    def add_tree(self, tree: np.ndarray, output: int, bitsets: list[np.ndarray]) -> None:
        """Add a cbudget tree (``NODE_DTYPE``) of margin column ``output``
        (``bitsets``: those of its categorical nodes, in node order)."""
        is_leaf = tree["left"] == -1
        # leaves and branch nodes are numbered in node order, after those of the trees
        # before: node n's number among them
        number = np.where(is_leaf, len(self.leaf_weights) + np.cumsum(is_leaf) - 1,
                          len(self.features) + np.cumsum(~is_leaf) - 1)
        if not is_leaf[0]:
            left, right = tree["left"][0], tree["right"][0]
            if is_leaf[left] != is_leaf[right] and number[left] == number[right]:
                # onnxruntime before 1.24 takes a root whose leaf and branch children
                # have one number for a leaf: an unused leaf in front shifts the leaves
                self.leaf_targets.append(output)
                self.leaf_weights.append(0.0)
        # each cbudget node's ensemble reference: (branch node or leaf, is a leaf)
        refs: list[tuple[int, bool]] = []
        for node in range(len(tree)):
            if is_leaf[node]:
                self.leaf_targets.append(output)
                self.leaf_weights.append(float(tree["value"][node]))
                refs.append((len(self.leaf_weights) - 1, True))
            else:
                refs.append((self._branch(int(tree["feature"][node]), BRANCH_LEQ,
                                          float(tree["threshold"][node]),
                                          bool(tree["default_left"][node])), False))
        categorical = np.flatnonzero(tree["categorical"] != 0)
        for node, words in zip(categorical.tolist(), bitsets):
            at = refs[node][0]
            codes = bitset_codes(words[1:])
            if codes.size:
                self.modes[at], self.splits[at] = BRANCH_MEMBER, np.nan
                self.members.extend([*codes.tolist(), np.nan])
            else:         # no code goes left: a test that never holds
                self.modes[at], self.splits[at] = BRANCH_GT, np.inf
        for node in np.flatnonzero(~is_leaf).tolist():
            self._link(refs[node][0], refs[tree["left"][node]], refs[tree["right"][node]])
        if is_leaf[0]:
            # a tree of one leaf: a node whose two ways reach a copy of it each
            # (onnxruntime before 1.24 miscounts a leaf two ways reach)
            self.leaf_targets.append(output)
            self.leaf_weights.append(self.leaf_weights[refs[0][0]])
            root = self._branch(0, BRANCH_LEQ, 0.0, True)
            self._link(root, refs[0], (len(self.leaf_weights) - 1, True))
        else:
            root = refs[0][0]
        self.roots.append(root)

    def attributes(self, n_outputs: int) -> dict[str, Any]:
        """The operator's attributes."""
        from_array = _onnx().numpy_helper.from_array
        splits = np.asarray(self.splits, dtype=np.float64)
        if self.dtype == np.float32:
            # x <= float32_floor(t) iff x <= t, for every float32 x
            splits = np.where(np.isfinite(splits), float32_floor(splits), splits)
        typed = {"nodes_splits": splits.astype(self.dtype),
                 "leaf_weights": np.asarray(self.leaf_weights, dtype=self.dtype)}
        attributes: dict[str, Any] = {
            "n_targets": n_outputs, "aggregate_function": AGGREGATE_SUM,
            "post_transform": 0, "tree_roots": self.roots,
            "nodes_featureids": self.features,
            "nodes_modes": from_array(np.asarray(self.modes, dtype=np.uint8)),
            "nodes_truenodeids": self.true_ids, "nodes_trueleafs": self.true_leafs,
            "nodes_falsenodeids": self.false_ids, "nodes_falseleafs": self.false_leafs,
            "nodes_missing_value_tracks_true": self.missing_true,
            "leaf_targetids": self.leaf_targets,
            **{name: from_array(values) for name, values in typed.items()}}
        if self.members:
            attributes["membership_values"] = from_array(
                np.asarray(self.members, dtype=self.dtype))
        return attributes


def onnx_model(booster: Booster, dtype: str = "float64") -> Any:
    """The ONNX ``ModelProto`` of ``booster`` (see :func:`save_onnx`)."""
    onnx = _onnx()
    if getattr(booster, "model_type", None) != "booster":
        raise ValueError(f"only a cbudget Booster can be saved as an ONNX model, not a "
                         f"{type(booster).__name__}")
    if booster.objective not in TRANSFORMS:
        raise ValueError(f"objective {booster.objective!r} cannot be saved as an ONNX "
                         f"model (supported: {', '.join(TRANSFORMS)})")
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {list(DTYPES)}, got {dtype!r}")
    helper, TensorProto = onnx.helper, onnx.TensorProto
    element = TensorProto.DOUBLE if dtype == "float64" else TensorProto.FLOAT
    n_features, n_outputs = len(booster.feature_names), booster.n_outputs
    # the rounds cbudget predicts with by default (up to best_iteration)
    _, end = booster.iterations_used()
    n_trees = booster.iteration_indptr[end]
    ensemble = _Ensemble(DTYPES[dtype])
    for tree, output in zip(booster.trees[:n_trees], booster.tree_outputs[:n_trees]):
        ensemble.add_tree(tree, int(output), booster.tree_bitsets(tree))
    if not n_trees:     # no trees: the base scores alone
        for output in range(n_outputs):
            ensemble.add_tree(leaf_tree(0.0), output, [])
    nodes, initializers = [], []
    features = "input"
    categorical = booster.categorical_features
    if categorical.size:
        # in the categorical columns, a value's category is its integer part, and a
        # negative value is missing: NaN, which the splits send the default way
        mask = np.zeros((1, n_features), dtype=bool)
        mask[0, categorical] = True
        initializers += [onnx.numpy_helper.from_array(mask, "categorical_columns"),
                         onnx.numpy_helper.from_array(np.zeros((), DTYPES[dtype]), "zero"),
                         onnx.numpy_helper.from_array(np.full((), np.nan, DTYPES[dtype]),
                                                      "missing")]
        nodes += [helper.make_node("Floor", ["input"], ["floored"]),
                  helper.make_node("Less", ["floored", "zero"], ["negative"]),
                  helper.make_node("Where", ["negative", "missing", "floored"],
                                   ["categories"]),
                  helper.make_node("Where", ["categorical_columns", "categories", "input"],
                                   ["codes"])]
        features = "codes"
    nodes.append(helper.make_node("TreeEnsemble", [features], ["tree_sums"],
                                  domain="ai.onnx.ml", name="trees",
                                  **ensemble.attributes(n_outputs)))
    base = np.asarray(booster.base_score, dtype=DTYPES[dtype]).reshape(1, n_outputs)
    initializers.append(onnx.numpy_helper.from_array(base, "base_score"))
    nodes.append(helper.make_node("Add", ["tree_sums", "base_score"], ["margins"]))
    transform = TRANSFORMS[booster.objective]
    scores = "margins"
    if transform is not None:
        nodes.append(helper.make_node(transform, ["margins"], ["scores"],
                                      **({"axis": 1} if transform == "Softmax" else {})))
        scores = "scores"
    if n_outputs == 1:      # one output: a vector, as predict returns
        initializers.append(onnx.numpy_helper.from_array(np.array([-1], np.int64), "flat"))
        nodes += [helper.make_node("Reshape", ["margins", "flat"], ["margin"]),
                  helper.make_node("Reshape", [scores, "flat"], ["prediction"])]
        shape: list[Any] = ["n_samples"]
    else:
        nodes += [helper.make_node("Identity", ["margins"], ["margin"]),
                  helper.make_node("Identity", [scores], ["prediction"])]
        shape = ["n_samples", n_outputs]
    graph = helper.make_graph(
        nodes, "cbudget", [helper.make_tensor_value_info("input", element,
                                                         ["n_samples", n_features])],
        [helper.make_tensor_value_info("prediction", element, shape),
         helper.make_tensor_value_info("margin", element, shape)],
        initializer=initializers)
    model = helper.make_model(
        graph, producer_name="cbudget", producer_version=__version__,
        opset_imports=[helper.make_opsetid("", ONNX_OPSET),
                       helper.make_opsetid("ai.onnx.ml", ML_OPSET)])
    model.ir_version = IR_VERSION
    model.doc_string = (f"cbudget {booster.algorithm} booster, objective "
                        f"{booster.objective}: input 'input' (n_samples, {n_features}) "
                        f"{dtype}; outputs 'prediction' (as predict) and 'margin'")
    helper.set_model_props(model, {
        "algorithm": booster.algorithm, "objective": booster.objective,
        "num_class": str(booster.num_class),
        "feature_names": json.dumps(list(booster.feature_names), ensure_ascii=False),
        "categorical_features": json.dumps(categorical.tolist())})
    onnx.checker.check_model(model, full_check=True)
    return model


def save_onnx(booster: Booster, path: str | os.PathLike, *, dtype: str = "float64") -> None:
    """Write ``booster`` as an ONNX model that onnxruntime (1.20 and later) runs,
    predicting as cbudget does.

    Parameters
    ----------
    booster : cbudget.Booster
        Of algorithm gbdt, cegb, greedy_miser or imported; objective
        reg:squarederror, binary:logistic, multi:softprob, rank:pairwise or rank:ndcg.
    path : str or os.PathLike
        Written whole or not at all (as :func:`cbudget.model_io.save_model`).
    dtype : {"float64", "float32"}, default "float64"
        The type of the graph's input, thresholds, leaf values and outputs. float64:
        every float64 input routes exactly as in cbudget. float32 (for runtimes or
        callers that feed float32): every float32 input does; margins are float32 sums.

    Notes
    -----
    The graph has one input, ``input`` (n_samples, n_features), and two outputs,
    ``prediction`` (as ``booster.predict(X)``) and ``margin`` (as
    ``predict(X, output_margin=True)``). Categorical features are given as their codes
    (``booster.prepare_input(df)`` recodes a DataFrame as cbudget does). The rounds
    written are those ``predict`` uses by default (up to ``best_iteration`` after
    early stopping). The model's properties (``metadata_props``) hold its algorithm,
    objective, ``num_class``, feature names and categorical features. Not carried: the
    cost model and per-node cost metadata, the exit rules (the graph predicts with every
    tree) and the training parameters. Needs the ``onnx`` package (``pip install
    cbudget[onnx]`` also installs onnxruntime).

    Raises
    ------
    ValueError
        For a model that is not a Booster, or of another objective; an unknown dtype.
    ImportError
        When onnx is not installed.
    """
    write_file_atomically(path, onnx_model(booster, dtype).SerializeToString())


register_exporter("onnx", save_onnx, (Booster,),
                  "boosters of gbdt, cegb, greedy_miser and imported ones")
