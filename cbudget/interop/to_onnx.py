"""cbudget boosters and forests as ONNX models (``save_model(path, format="onnx")``)
that onnxruntime runs, predicting as cbudget does (docs/architecture.md,
"Interoperability").

The trees become a ``TreeEnsemble`` operator of the ``ai.onnx.ml`` domain, version 5
(onnxruntime 1.21 and later), whose thresholds and leaf values have the input's type:
float64 by default, so that every float64 input routes exactly as in cbudget (a split
sends ``x <= threshold`` left, ``BRANCH_LEQ``; NaN follows ``default_left``, the node's
``missing_value_tracks_true``). A float32 graph (``dtype="float32"``) holds each
threshold as the largest float32 at most it: every float32 input routes as in cbudget.

A categorical split (cbudget: the codes of its bitset go left, others right; NaN and
negative values the ``default_left`` way; a value is truncated to its code) becomes a
``BRANCH_MEMBER`` node listing the codes, after a ``Floor`` of the categorical columns
(truncation, for the non-negative values that reach it) that also makes every negative
value NaN. A booster's graph then adds each output's base score and applies the
objective's transform:

* input ``input``: (n_samples, n_features), of the graph's type, the codes of
  categorical features (``booster.prepare_input(df)`` for a DataFrame);
* output ``prediction``: as ``booster.predict(X)``, (n_samples,) or
  (n_samples, num_class) for multi:softprob;
* output ``margin``: as ``booster.predict(X, output_margin=True)``.

A forest's graph sums the class counts of the leaves reached (a copy of each tree per
class: a ``TreeEnsemble`` leaf adds to one output) and the trees' votes: outputs
``label`` (as ``forest.predict``) and ``probabilities`` (as ``predict_proba``).
onnx itself is imported when a model is written.
"""
from __future__ import annotations

import json
import os
from types import ModuleType
from typing import Any

import numpy as np

from .._ensemble import TreeEnsemble
from .._files import write_file_atomically
from .._version import __version__
from ..booster import Booster
from ..category_bins import bitset_codes
from ..dataset import float32_floor
from ..forest import Forest
from ..model_io import register_exporter
from .trees import check_exportable, leaf_tree

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
              "multi:softprob": "Softmax", "rank:pairwise": None, "rank:ndcg": None,
              "reg:absoluteerror": None, "reg:pseudohubererror": None,
              "reg:quantileerror": None, "count:poisson": "Exp", "reg:tweedie": "Exp",
              "reg:gamma": "Exp"}
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

    def add_tree(self, tree: np.ndarray, output: int | np.ndarray, bitsets: list[np.ndarray],
                 values: np.ndarray | None = None) -> None:
        """Add a cbudget tree (``NODE_DTYPE``) whose leaves add ``values`` (per node;
        default: the tree's leaf values) to output column ``output`` (or per node);
        ``bitsets``: those of its categorical nodes, in node order."""
        values = tree["value"] if values is None else values
        outputs = np.broadcast_to(output, len(tree))
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
                self.leaf_targets.append(0)
                self.leaf_weights.append(0.0)
        # each cbudget node's ensemble reference: (branch node or leaf, is a leaf)
        refs: list[tuple[int, bool]] = []
        for node in range(len(tree)):
            if is_leaf[node]:
                self.leaf_targets.append(int(outputs[node]))
                self.leaf_weights.append(float(values[node]))
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
            self.leaf_targets.append(self.leaf_targets[refs[0][0]])
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
        typed: dict[str, np.ndarray] = {"nodes_splits": splits.astype(self.dtype),
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


class _Graph:
    """An ONNX graph under construction: its nodes, constants and outputs, over the
    input ``input`` of type ``dtype``."""

    def __init__(self, dtype: str) -> None:
        self.onnx = _onnx()
        self.dtype = DTYPES[dtype]
        self.nodes: list[Any] = []
        self.constants: list[Any] = []
        self.outputs: list[Any] = []

    def node(self, op: str, inputs: list[str], output: str, **attributes: Any) -> str:
        self.nodes.append(self.onnx.helper.make_node(op, inputs, [output], **attributes))
        return output

    def constant(self, name: str, value: Any) -> str:
        self.constants.append(self.onnx.numpy_helper.from_array(np.asarray(value), name))
        return name

    def output(self, name: str, value: str, element: int, shape: list[Any]) -> None:
        self.node("Identity", [value], name)
        self.outputs.append(self.onnx.helper.make_tensor_value_info(name, element, shape))

    def trees(self, name: str, features: str, ensemble: _Ensemble, n_outputs: int) -> str:
        return self.node("TreeEnsemble", [features], name, domain="ai.onnx.ml", name=name,
                         **ensemble.attributes(n_outputs))

    def split_input(self, model: TreeEnsemble) -> str:
        """What the trees read: the input, whose categorical columns hold a value's
        integer part (its category) and NaN for a negative value (missing: the splits
        send it the default way)."""
        categorical = model.categorical_features
        if not categorical.size:
            return "input"
        mask = np.zeros((1, len(model.feature_names)), dtype=bool)
        mask[0, categorical] = True
        floored = self.node("Floor", ["input"], "floored")
        negative = self.node("Less", [floored, self.constant("zero", self.dtype(0))],
                             "negative")
        categories = self.node("Where", [negative, self.constant("missing", self.dtype(np.nan)),
                                         floored], "categories")
        return self.node("Where", [self.constant("categorical_columns", mask), categories,
                                   "input"], "codes")

    def model(self, model: TreeEnsemble, description: str) -> Any:
        """The checked ``ModelProto``; its properties name the model's algorithm,
        objective, classes and features."""
        helper = self.onnx.helper
        element = self.element()
        graph = helper.make_graph(
            self.nodes, "cbudget",
            [helper.make_tensor_value_info("input", element,
                                           ["n_samples", len(model.feature_names)])],
            self.outputs, initializer=self.constants)
        proto = helper.make_model(
            graph, producer_name="cbudget", producer_version=__version__,
            opset_imports=[helper.make_opsetid("", ONNX_OPSET),
                           helper.make_opsetid("ai.onnx.ml", ML_OPSET)])
        proto.ir_version = IR_VERSION
        proto.doc_string = description
        helper.set_model_props(proto, {
            "algorithm": model.algorithm, "objective": model.objective,
            "num_class": str(model.num_class),
            "feature_names": json.dumps(list(model.feature_names), ensure_ascii=False),
            "categorical_features": json.dumps(model.categorical_features.tolist())})
        self.onnx.checker.check_model(proto, full_check=True)
        return proto

    def element(self) -> int:
        """The ONNX element type of the graph's floats."""
        tensor = self.onnx.TensorProto
        return tensor.DOUBLE if self.dtype == np.float64 else tensor.FLOAT


def _booster_graph(booster: Booster, graph: _Graph) -> str:
    """The graph of a booster: the trees' sums plus the base scores (``margin``), and
    the objective's transform of them (``prediction``)."""
    check_exportable(booster, "ONNX", TRANSFORMS)
    n_outputs = booster.n_outputs
    # the rounds cbudget predicts with by default (up to best_iteration)
    _, end = booster.iterations_used()
    n_trees = booster.iteration_indptr[end]
    ensemble = _Ensemble(graph.dtype)
    for tree, output in zip(booster.trees[:n_trees], booster.tree_outputs[:n_trees]):
        ensemble.add_tree(tree, int(output), booster.tree_bitsets(tree))
    if not n_trees:     # no trees: the base scores alone
        for output in range(n_outputs):
            ensemble.add_tree(leaf_tree(0.0), output, [])
    sums = graph.trees("trees", graph.split_input(booster), ensemble, n_outputs)
    base = np.asarray(booster.base_score, dtype=graph.dtype).reshape(1, n_outputs)
    margins = graph.node("Add", [sums, graph.constant("base_score", base)], "margins")
    transform = TRANSFORMS[booster.objective]
    scores = margins if transform is None else graph.node(
        transform, [margins], "scores", **({"axis": 1} if transform == "Softmax" else {}))
    shape: list[Any] = ["n_samples", n_outputs]
    if n_outputs == 1:      # one output: a vector, as predict returns
        flat = graph.constant("flat", np.array([-1], np.int64))
        margins = graph.node("Reshape", [margins, flat], "margin_vector")
        scores = graph.node("Reshape", [scores, flat], "prediction_vector")
        shape = ["n_samples"]
    graph.output("prediction", scores, graph.element(), shape)
    graph.output("margin", margins, graph.element(), shape)
    return "outputs 'prediction' (as predict) and 'margin' (as predict(output_margin=True))"


def _forest_graph(forest: Forest, graph: _Graph) -> str:
    """The graph of a forest: the class counts of the leaves reached, summed and
    normalised (``probabilities``, as predict_proba), and the vote (``label``, as
    predict): the class of most trees (their leaves' majority classes), or the most
    probable one; ties to the lower class."""
    _, end = forest.iterations_used()
    n_class = forest.num_class
    trees = forest.trees[:end] or [leaf_tree(0.0)]
    class_counts = forest.class_counts[:end] or [np.zeros((1, n_class))]
    counts, votes = _Ensemble(graph.dtype), _Ensemble(graph.dtype)
    for tree, tree_counts in zip(trees, class_counts):
        bitsets = forest.tree_bitsets(tree)
        # a leaf adds to one output: a copy of the tree per class
        for k in range(n_class):
            counts.add_tree(tree, k, bitsets, tree_counts[:, k])
        votes.add_tree(tree, tree["value"].astype(np.int64), bitsets,
                       np.ones(len(tree)) if end else np.zeros(1))
    features = graph.split_input(forest)
    class_axis = graph.constant("class_axis", np.array([1], np.int64))
    prior = graph.constant("class_prior", forest.class_prior.astype(graph.dtype)[None, :])
    zero = graph.constant("zero_total", graph.dtype(0))

    def normalised(sums: str) -> str:
        """Rows of summed counts or votes as shares; the class prior where none."""
        totals = graph.node("ReduceSum", [sums, class_axis], f"{sums}_totals", keepdims=1)
        none = graph.node("LessOrEqual", [totals, zero], f"{sums}_none")
        shares = graph.node("Div", [sums, totals], f"{sums}_shares")
        return graph.node("Where", [none, prior, shares], f"{sums}_normalised")

    probabilities = normalised(graph.trees("class_counts", features, counts, n_class))
    by = (normalised(graph.trees("votes", features, votes, n_class))
          if forest.vote == "majority" else probabilities)
    label = graph.node("ArgMax", [by], "label_of_rows", axis=1, keepdims=0)
    graph.output("label", label, graph.onnx.TensorProto.INT64, ["n_samples"])
    graph.output("probabilities", probabilities, graph.element(), ["n_samples", n_class])
    return "outputs 'label' (as predict) and 'probabilities' (as predict_proba)"


def onnx_model(model: TreeEnsemble, dtype: str = "float64") -> Any:
    """The ONNX ``ModelProto`` of a booster or forest (see :func:`save_onnx`)."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {list(DTYPES)}, got {dtype!r}")
    graph = _Graph(dtype)
    if isinstance(model, Booster):
        outputs = _booster_graph(model, graph)
    elif isinstance(model, Forest):
        outputs = _forest_graph(model, graph)
    else:
        raise ValueError(f"only a cbudget Booster or Forest can be saved as an ONNX model, "
                         f"not a {type(model).__name__}")
    return graph.model(model, f"cbudget {model.algorithm} {model.model_type}, objective "
                              f"{model.objective}: input 'input' (n_samples, "
                              f"{len(model.feature_names)}) {dtype}; {outputs}")


def save_onnx(model: TreeEnsemble, path: str | os.PathLike, *,
              dtype: str = "float64") -> None:
    """Write a booster or forest as an ONNX model that onnxruntime (1.21 and later)
    runs, predicting as cbudget does.

    Parameters
    ----------
    model : cbudget.Booster or cbudget.Forest
        A booster of algorithm gbdt, cegb, greedy_miser or imported, of objective
        reg:squarederror, binary:logistic, multi:softprob, rank:pairwise, rank:ndcg,
        reg:absoluteerror, reg:pseudohubererror, reg:quantileerror, or count:poisson,
        reg:tweedie, reg:gamma (an ``Exp`` after the margin); a forest of budget_rf or
        imported from scikit-learn.
    path : str or os.PathLike
        Written whole or not at all (as :func:`cbudget.model_io.save_model`).
    dtype : {"float64", "float32"}, default "float64"
        The type of the graph's input, thresholds, leaf values and outputs. float64:
        every float64 input routes exactly as in cbudget. float32 (for runtimes or
        callers that feed float32): every float32 input does; sums are float32. The
        caller casts its input to the graph's type (onnxruntime refuses another).

    Notes
    -----
    The graph has one input, ``input`` (n_samples, n_features). A booster's outputs
    are ``prediction`` (as ``booster.predict(X)``) and ``margin`` (as
    ``predict(X, output_margin=True)``); a forest's ``label`` (int64, as
    ``forest.predict(X)``) and ``probabilities`` (as ``predict_proba``; the trees'
    class counts, so a forest of ``T`` trees and ``K`` classes holds ``K`` copies of
    each tree, and ``T`` more for the vote). Categorical features are given as their
    codes (``model.prepare_input(df)`` recodes a DataFrame as cbudget does). The trees
    written are those ``predict`` uses by default (up to ``best_iteration`` after
    early stopping). The model's properties (``metadata_props``) hold its algorithm,
    objective, ``num_class``, feature names and categorical features. Not carried: the
    cost model and per-node cost metadata, the exit rules (the graph predicts with every
    tree) and the training parameters. Needs the ``onnx`` package (``pip install
    "cbudget[onnx]"`` also installs onnxruntime).

    Raises
    ------
    ValueError
        For a model that is not a Booster or Forest, a booster of another objective, an
        unknown dtype.
    ImportError
        When onnx is not installed.
    """
    write_file_atomically(path, onnx_model(model, dtype).SerializeToString())


register_exporter("onnx", save_onnx, (Booster, Forest),
                  "boosters of gbdt, cegb, greedy_miser and imported ones, and forests",
                  suffixes=(".onnx",))
