"""cbudget Boosters as LightGBM text models (``Booster.save_model(path,
format="lightgbm")``), loadable by ``lightgbm.Booster(model_file=path)`` (LightGBM 4),
Treelite's ``load_lightgbm_model`` and lleaves, predicting as cbudget does for float64
inputs (docs/architecture.md, "Interoperability").

LightGBM, like cbudget, sends ``x`` left when ``x <= threshold`` in float64: each
threshold is written in its shortest exact form (``repr``), which every reader parses back
to the same double, and every numeric split has LightGBM's NaN missing type (zero is an
ordinary number), its ``default_left`` bit cbudget's.

A categorical split (cbudget: the codes of its bitset go left, other codes right, NaN and
negative values the ``default_left`` way; a value is truncated to its code) becomes a
LightGBM categorical split over the same bitset. LightGBM sends NaN and values below -1
right and truncates a value in ``(-1, 0)`` to category 0, so where that differs from
cbudget (missing values go left, or category 0 goes left) a numeric split on the same
feature goes first (:data:`GUARD_THRESHOLD`): NaN and negative values to a copy of the
subtree that cbudget sends missing values to, other values to the categorical split.

LightGBM's ``predict`` reads a dense input with ``|x| <= 1e-35`` as 0 (its
``kZeroThreshold``): such a value routes as 0 does, which differs from cbudget only at a
threshold between it and 0 (cbudget's lie between training values) or, for a tiny
negative value, at a guarded categorical split (category 0 to LightGBM, missing to
cbudget). The module reads the model through its public attributes, as
:mod:`.to_xgboost` does.
"""
from __future__ import annotations

import json
import os
import string
import sys
from typing import Any, NamedTuple

import numpy as np

from .._files import write_file_atomically
from ..booster import Booster
from ..category_bins import bitset_codes
from ..model_io import register_exporter

__all__ = ["save_lightgbm", "lightgbm_model_text", "exported_trees", "ExportedTree",
           "LIGHTGBM_OBJECTIVES", "REFUSED_IN_NAMES", "GUARD_THRESHOLD"]

# cbudget objective -> LightGBM's objective line (multiclass adds num_class:K)
LIGHTGBM_OBJECTIVES = {
    "reg:squarederror": "regression",
    "binary:logistic": "binary sigmoid:1",
    "multi:softprob": "multiclass",
    "rank:pairwise": "lambdarank",
    "rank:ndcg": "lambdarank",
}

# characters a LightGBM feature name cannot hold: the file separates names with spaces
# and lines with newlines; LightGBM's Dataset refuses JSON's special characters (its JSON
# dump writes names unescaped)
REFUSED_IN_NAMES = string.whitespace + '",:[]{}'

# The threshold of the numeric split put before a categorical split whose missing values
# (NaN and negative values, in cbudget) must not follow LightGBM's categorical rule: NaN
# (missing type NaN, default left) and ``x <= -DBL_MIN`` go left. The negative subnormal
# numbers, above it, would need the threshold -5e-324, which Treelite refuses (a
# subnormal number is a range error to strtod); LightGBM's predict reads them as 0
# anyway (as every |x| <= 1e-35), Treelite sends them right.
GUARD_THRESHOLD = -sys.float_info.min

# LightGBM's decision_type bits
_CATEGORICAL, _DEFAULT_LEFT, _MISSING_NAN = 1, 2, 2 << 2


class ExportedTree(NamedTuple):
    """One tree of the LightGBM file: its text (``Tree=i`` block without the header
    line), the cbudget tree it comes from (index in ``booster.trees``, -1 for a one-leaf
    tree added to fill its iteration), its output (class), and, per LightGBM leaf (as
    ``lightgbm.Booster.predict(X, pred_leaf=True)`` numbers them), the cbudget node it
    copies (as ``booster.predict(X, pred_leaf=True)`` numbers them; -1: added)."""
    text: str
    source: int
    output: int
    leaf_nodes: np.ndarray


def _number(x: float) -> str:
    """A double's shortest text that parses back to it (LightGBM, strtod, Python)."""
    return repr(float(x))


def _stat(x: float) -> str:
    """A statistic no prediction reads (gain, internal value, weight): 6 digits, as
    LightGBM writes them."""
    return f"{float(np.nan_to_num(x)):g}"


def _needs_guard(default_left: bool, codes: np.ndarray) -> bool:
    """Whether LightGBM's categorical rule (NaN and values <= -1 right, ``(-1, 0)`` as
    category 0) differs from cbudget's at a split listing ``codes``."""
    return default_left or (codes.size > 0 and codes[0] == 0)


def _tree_text(tree: np.ndarray, bitsets: list[np.ndarray], shift: float
               ) -> tuple[str, np.ndarray]:
    """LightGBM text of one cbudget tree (``shift`` added to its leaf values) and the
    cbudget node of each LightGBM leaf. Nodes are numbered depth first from the root
    (LightGBM's node 0); a leaf is ``~k`` for the ``k``-th leaf."""
    codes_of = dict(zip(np.flatnonzero(tree["categorical"]).tolist(),
                        (bitset_codes(words[1:]) for words in bitsets)))
    words_of = dict(zip(np.flatnonzero(tree["categorical"]).tolist(),
                        (np.asarray(words[1:], dtype=np.uint32) for words in bitsets)))
    split: dict[str, list[Any]] = {key: [] for key in (
        "split_feature", "split_gain", "threshold", "decision_type", "left_child",
        "right_child", "internal_value", "internal_weight", "internal_count")}
    leaves: dict[str, list[Any]] = {"leaf_value": [], "leaf_weight": [], "leaf_count": []}
    leaf_nodes: list[int] = []
    cat_words: list[np.ndarray] = []

    def add_split(n: int, feature: int, gain: float, threshold: float, kind: int) -> int:
        node = tree[n]
        split["split_feature"].append(feature)
        split["split_gain"].append(_stat(gain))
        split["threshold"].append(_number(threshold))
        split["decision_type"].append(kind)
        split["left_child"].append(0)
        split["right_child"].append(0)
        split["internal_value"].append(_stat(node["value"] + shift))
        split["internal_weight"].append(_stat(node["sum_hessian"]))
        split["internal_count"].append(int(node["n_samples"]))
        return len(split["split_feature"]) - 1

    # (cbudget node, LightGBM parent, its side, copy: a second copy carries no gain so
    # that gain importance adds up, unguarded: a categorical node's guard is written)
    stack: list[tuple[int, int, str, bool, bool]] = [(0, -1, "", False, False)]
    while stack:
        n, parent, side, copy, guarded = stack.pop()
        node = tree[n]
        if node["left"] == -1:
            ref = ~len(leaf_nodes)
            leaf_nodes.append(n)
            leaves["leaf_value"].append(_number(node["value"] + shift))
            leaves["leaf_weight"].append(_number(node["sum_hessian"]))
            leaves["leaf_count"].append(int(node["n_samples"]))
        else:
            feature, gain = int(node["feature"]), 0.0 if copy else float(node["gain"])
            default_left = bool(node["default_left"])
            children: tuple[int, ...] = (int(node["left"]), int(node["right"]))
            if not node["categorical"]:
                ref = add_split(n, feature, gain, float(node["threshold"]),
                                _MISSING_NAN | (_DEFAULT_LEFT if default_left else 0))
            elif not guarded and _needs_guard(default_left, codes_of[n]):
                ref = add_split(n, feature, 0.0, GUARD_THRESHOLD, _MISSING_NAN | _DEFAULT_LEFT)
                # right: the categorical split itself; left: the subtree of missing values
                stack.append((n, ref, "right_child", copy, True))
                stack.append((children[0 if default_left else 1], ref, "left_child", True,
                              False))
                children = ()
            else:
                ref = add_split(n, feature, gain, float(len(cat_words)), _CATEGORICAL)
                cat_words.append(words_of[n])
            for child, child_side in reversed(list(zip(children, ("left_child", "right_child")))):
                stack.append((child, ref, child_side, copy, False))
        if parent >= 0:
            split[side][parent] = ref

    keys = ("split_feature", "split_gain", "threshold", "decision_type", "left_child",
            "right_child", "leaf_value", "leaf_weight", "leaf_count", "internal_value",
            "internal_weight", "internal_count")
    lines = [f"num_leaves={len(leaf_nodes)}", f"num_cat={len(cat_words)}"]
    lines += [f"{key}={' '.join(map(str, {**split, **leaves}[key]))}" for key in keys]
    if cat_words:
        sizes = [0] + [w.size for w in cat_words]
        lines.append("cat_boundaries=" + " ".join(map(str, np.cumsum(sizes).tolist())))
        lines.append("cat_threshold=" + " ".join(map(str, np.concatenate(cat_words).tolist())))
    lines += ["is_linear=0", "shrinkage=1"]
    return "\n".join(lines) + "\n\n", np.asarray(leaf_nodes, dtype=np.int64)


def _leaf_tree(value: float) -> str:
    """The text of a one-leaf tree of ``value`` (LightGBM's layout: empty split lines)."""
    empty = ("split_feature", "split_gain", "threshold", "decision_type", "left_child",
             "right_child")
    return "\n".join(["num_leaves=1", "num_cat=0", *(f"{key}=" for key in empty),
                      f"leaf_value={_number(value)}", "leaf_weight=", "leaf_count=0",
                      "internal_value=", "internal_weight=", "internal_count=",
                      "is_linear=0", "shrinkage=1"]) + "\n\n"


def _check_exportable(booster: Any) -> None:
    """ValueError for a model LightGBM's format cannot hold: not a booster, another
    objective, feature names that the file cannot separate."""
    if getattr(booster, "model_type", None) != "booster":
        raise ValueError(f"only a cbudget Booster can be saved as a LightGBM model, not a "
                         f"{type(booster).__name__}")
    if booster.objective not in LIGHTGBM_OBJECTIVES:
        raise ValueError(f"objective {booster.objective!r} cannot be saved as a LightGBM "
                         f"model (supported: {', '.join(LIGHTGBM_OBJECTIVES)})")
    refused = [name for name in booster.feature_names
               if not name or set(name) & set(REFUSED_IN_NAMES)]
    if refused:
        raise ValueError(f"LightGBM refuses empty feature names and names containing "
                         f"whitespace or any of {' '.join(REFUSED_IN_NAMES.strip())}: "
                         f"{refused[:5]}; rename them (model.feature_names) before saving "
                         "in its format")


def exported_trees(booster: Booster) -> list[ExportedTree]:
    """The trees of the LightGBM file of ``booster``, in file order: round by
    round, one tree per output (class) in output order, as LightGBM requires: a round
    that lacks a tree of some output gets a one-leaf tree of 0 there. Each output's base
    score is added to the leaves of its first tree."""
    _check_exportable(booster)
    n_outputs = booster.n_outputs
    # the rounds cbudget predicts with by default (up to best_iteration after early
    # stopping): LightGBM predicts with every tree of the file
    _, end = booster.iterations_used()
    indptr = booster.iteration_indptr
    # a round holds at most one tree per output (Booster.add_round)
    iterations: list[list[int]] = []          # cbudget tree per output, -1: none
    for r in range(end):
        sources = [-1] * n_outputs
        for t in range(indptr[r], indptr[r + 1]):
            sources[int(booster.tree_outputs[t])] = t
        iterations.append(sources)
    if not iterations:
        iterations.append([-1] * n_outputs)   # a model of no rounds: the base scores
    base = np.asarray(booster.base_score, dtype=np.float64)
    trees = []
    for i, sources in enumerate(iterations):
        for k, t in enumerate(sources):
            shift = float(base[k]) if i == 0 else 0.0
            if t == -1:
                trees.append(ExportedTree(_leaf_tree(shift), -1, k,
                                          np.full(1, -1, dtype=np.int64)))
            else:
                tree = booster.trees[t]
                text, leaf_nodes = _tree_text(tree, booster.tree_bitsets(tree), shift)
                trees.append(ExportedTree(text, t, k, leaf_nodes))
    return trees


def _feature_infos(booster: Booster, trees: list[ExportedTree]) -> list[str]:
    """LightGBM's ``feature_infos``: ``[min:max]`` of a numeric feature (here the range
    of its thresholds), the categories of a categorical one (``a:b:c``), ``none`` for a
    feature no split tests. Only readers that tell categorical features from numeric
    ones by it (lleaves) use it for prediction."""
    n_features = len(booster.feature_names)
    categorical = set(booster.categories.features.tolist())
    low, high = np.full(n_features, np.inf), np.full(n_features, -np.inf)
    codes: list[set[int]] = [set() for _ in range(n_features)]
    for t in sorted({e.source for e in trees} - {-1}):
        tree = booster.trees[t]
        splits = tree["left"] != -1
        numeric = splits & (tree["categorical"] == 0)
        np.minimum.at(low, tree["feature"][numeric], tree["threshold"][numeric])
        np.maximum.at(high, tree["feature"][numeric], tree["threshold"][numeric])
        for n, words in zip(np.flatnonzero(tree["categorical"]), booster.tree_bitsets(tree)):
            codes[int(tree["feature"][n])].update(bitset_codes(words[1:]).tolist())
            categorical.add(int(tree["feature"][n]))
    infos = []
    for m in range(n_features):
        if m in categorical:
            infos.append(":".join(map(str, sorted(codes[m]))) or "none")
        elif low[m] <= high[m]:
            infos.append(f"[{_number(low[m])}:{_number(high[m])}]")
        else:
            infos.append("none")
    return infos


def _pandas_categorical(booster: Booster) -> str:
    """The ``pandas_categorical`` line's JSON: the levels of the features that have
    some, in feature order (LightGBM's Python package sets them on a DataFrame's
    ``category`` columns, in column order, before taking their codes), or null."""
    levels = [lv for lv in booster.categories.by_feature().values() if lv is not None]
    return json.dumps(levels) if levels else "null"


def lightgbm_model_text(booster: Booster) -> str:
    """The LightGBM text model of ``booster`` (see :func:`save_lightgbm`)."""
    trees = exported_trees(booster)
    n_outputs = booster.n_outputs
    objective = LIGHTGBM_OBJECTIVES[booster.objective]
    if booster.objective == "multi:softprob":
        objective += f" num_class:{n_outputs}"
    blocks = [f"Tree={i}\n{tree.text}\n" for i, tree in enumerate(trees)]
    names = list(booster.feature_names)
    header = ["tree", "version=v4", f"num_class={n_outputs}",
              f"num_tree_per_iteration={n_outputs}", "label_index=0",
              f"max_feature_idx={len(names) - 1}", f"objective={objective}",
              f"feature_names={' '.join(names)}",
              f"feature_infos={' '.join(_feature_infos(booster, trees))}",
              # LightGBM finds each tree by these byte counts
              "tree_sizes=" + " ".join(str(len(b.encode())) for b in blocks)]
    # split counts, LightGBM's saved feature importance, most used first
    counts = np.zeros(len(names), dtype=np.int64)
    for tree in trees:
        line = tree.text.split("\n")[2]          # split_feature=...
        features = line.partition("=")[2].split()
        np.add.at(counts, np.asarray(features, dtype=np.int64), 1)
    importances = [f"{names[m]}={counts[m]}"
                   for m in sorted(np.flatnonzero(counts).tolist(), key=lambda m: -counts[m])]
    categorical = sorted(set(booster.categories.features.tolist()))
    parameters = ["[boosting: gbdt]", f"[objective: {objective.split()[0]}]",
                  f"[num_class: {n_outputs}]", f"[num_iterations: {len(trees) // n_outputs}]",
                  f"[categorical_feature: {','.join(map(str, categorical))}]"]
    return "\n".join([*header, "", "".join(blocks) + "end of trees", "",
                      "feature_importances:", *importances, "", "parameters:",
                      *parameters, "end of parameters", "",
                      f"pandas_categorical:{_pandas_categorical(booster)}", ""])


def save_lightgbm(booster: Booster, path: str | os.PathLike) -> None:
    """Write ``booster`` as a LightGBM text model that ``lightgbm.Booster(model_file=
    path)`` (LightGBM 4) loads and that predicts as cbudget does.

    Parameters
    ----------
    booster : cbudget.Booster
        Of algorithm gbdt, cegb, greedy_miser or imported; objective
        reg:squarederror (LightGBM's regression), binary:logistic (binary), multi:softprob
        (multiclass) or rank:pairwise / rank:ndcg (lambdarank: raw scores).
    path : str or os.PathLike
        Written whole or not at all (a temporary file in the same folder, then
        renamed), over a regular file or none: a link, device, FIFO, socket or folder
        at ``path`` raises FileExistsError.

    Notes
    -----
    LightGBM compares float64 inputs with float64 thresholds, as cbudget: every input
    reaches the leaf it reaches in cbudget, NaN included, and the raw scores equal
    cbudget's up to the order of the float64 sum. The exceptions: LightGBM's predict
    reads a dense input with ``|x| <= 1e-35`` as 0 (it then routes as 0 does in
    cbudget); Treelite sends a negative subnormal value (between -2.2e-308 and 0) of a
    categorical feature right (see :data:`GUARD_THRESHOLD`).

    LightGBM has no base score: each output's is added to the leaves of its first tree.
    The rounds written are those ``predict`` uses by default (up to ``best_iteration``
    after early stopping); slice the model (``booster[:n]``) to write others. A
    multiclass model has one tree per class in every iteration (one-leaf trees of 0 fill
    the gaps). Categorical splits whose missing values go left, or whose set holds
    category 0, get a numeric split on the same feature before them (NaN and negative
    values to a copy of the missing values' subtree): lleaves compiles a feature as
    either numeric or categorical and cannot compile such a file. The levels of the
    categorical features that have some are written as ``pandas_categorical``, so
    ``lightgbm.Booster.predict`` maps a DataFrame's ``category`` columns by level;
    LightGBM makes a level the model lacks missing (the split's missing direction),
    where cbudget sends it right. Not carried: the cost model and per-node cost
    metadata, exit rules, the training parameters and, for ranking, the objective's
    settings.

    Raises
    ------
    ValueError
        For a model that is not a Booster, another objective, or feature names that are
        empty or hold whitespace or ``" , : [ ] { }`` (which LightGBM refuses).
    """
    write_file_atomically(path, lightgbm_model_text(booster))


register_exporter("lightgbm", save_lightgbm, (Booster,),
                  "boosters of gbdt, cegb, greedy_miser and imported ones")
