"""Import a LightGBM model as a cbudget Booster (docs/architecture.md, "Interoperability").

The model is read from LightGBM's text format (what ``Booster.save_model`` writes, or
``Booster.model_to_string()`` of an in-memory booster) by the parser of this module, so
auditing a model file's costs does not need LightGBM installed. The file is treated as
untrusted: anything malformed, truncated or inconsistent is a ValueError that says what
is wrong, and nothing is allocated from a count the file states without checking it
against the values the file holds.

Decisions. LightGBM sends ``x`` left when ``x <= threshold`` (float64), after two
rewrites of the input that cbudget's single ``x <= T`` with NaN to ``default_left``
must reproduce:

* its dense-input prediction stores ``|x| <= kZeroThreshold`` (``1e-35f``, widened to
  double) as 0, so the whole band ``[-kZeroThreshold, kZeroThreshold]`` goes where 0 goes
  (its sparse-input path does not, for explicitly stored values in the band; the import
  follows the dense path, which is also what a DataFrame input takes);
* the node's missing type (``decision_type`` bits 2-3): None sends NaN where 0 goes;
  NaN sends NaN the default way; Zero sends NaN and the band the default way.

So the real line falls into at most four intervals (below the band, the band, above it,
each side of the threshold), each going left or right. Joined where neighbours go the
same way, they make two runs (one cbudget split) or four (left, right, left, right: a
Zero split whose default direction is not the side of the threshold the band lies on),
which become three splits on the same feature with both children's subtrees copied
(:func:`_split_plan`). LightGBM's split of NaN from everything else has threshold +inf,
and cbudget's thresholds are finite: it becomes the largest float64, so an input of
exactly +inf goes right there where LightGBM sends it left (the one difference).

Categorical splits (``decision_type`` bit 0): LightGBM truncates the value to an
integer and sends it left when that category is in the node's bitset
(``cat_threshold[cat_boundaries[k]:cat_boundaries[k + 1]]``, ``k`` the node's
threshold); NaN, a negative integer and any category not in the bitset go right,
whatever the node's missing type (LightGBM 4's ``CategoricalDecision``). A cbudget
categorical node with that bitset and ``default_left`` False does the same, except for
values in ``(-1, 0)``: LightGBM truncates them to category 0, cbudget reads every
negative value as missing. The features with categorical splits (and those the file's
``feature_infos`` or ``categorical_feature`` parameter declare categorical) become the
model's :attr:`~cbudget.Booster.categories`; when LightGBM trained on a DataFrame, its
``pandas_categorical`` line gives the levels of its ``category`` columns, in order
(category ``c`` is the level at position ``c``, as LightGBM codes them), so a DataFrame
predicts by level: an unseen level or a missing value goes right, as in LightGBM.
"""
from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from ..booster import Booster
from ..categories import MAX_LEVELS, Categories
from ..costs import CostGroups, FeatureCosts, GroupCosts
from .trees import (
    COST_ARGUMENTS,
    MAX_NODES_PER_TREE,
    bitset_of_words,
    build_tree,
    cost_model_for,
    describe_source,
    finite_thresholds,
    imported_booster,
    preorder,
    source_feature_names,
)

__all__ = ["from_lightgbm"]

# LightGBM's kZeroThreshold: `const double kZeroThreshold = 1e-35f;` (a float literal)
ZERO_THRESHOLD = float(np.float32(1e-35))
# the largest float64 below the band [-kZeroThreshold, kZeroThreshold]
BELOW_ZERO_BAND = float(np.nextafter(-ZERO_THRESHOLD, -np.inf))

# decision_type bits (LightGBM's tree.h)
CATEGORICAL_MASK = 1
DEFAULT_LEFT_MASK = 2
MISSING_ZERO, MISSING_NAN = 1, 2     # bits 2-3; 0 is None

# the model format versions whose decision_type and tree keys this parser knows
FORMAT_VERSIONS = ("v2", "v3", "v4")

# objectives whose prediction is the raw score
IDENTITY_OBJECTIVES = ("regression", "regression_l2", "huber", "fair", "mape")
# LightGBM objectives cbudget has (those of LightGBM's names it takes as aliases):
# regression_l1 and quantile predict the raw score, poisson, gamma and tweedie exp of it
SAME_OBJECTIVES = {"regression_l1": "reg:absoluteerror", "quantile": "reg:quantileerror",
                   "poisson": "count:poisson", "gamma": "reg:gamma",
                   "tweedie": "reg:tweedie"}
RANKING_OBJECTIVES = ("lambdarank", "rank_xendcg")
# objectives refused, with the output transform cbudget has no objective for
OTHER_TRANSFORMS = {
    "cross_entropy_lambda": "log(1 + exp(raw score))",
    "xentlambda": "log(1 + exp(raw score))",
    "multiclassova": "a separate sigmoid per class",
}

INT_TOKEN = re.compile(r"[-+]?\d{1,18}")
FLOAT_TOKEN = re.compile(r"[-+]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|inf(?:inity)?|nan)",
                         re.IGNORECASE)


class SourceTree(NamedTuple):
    """One LightGBM tree in one numbering: internal nodes ``0..n_internal-1`` (0 the
    root), leaf ``j`` as node ``n_internal + j``; per internal node its split, per leaf
    (``left == right == -1``) its value."""

    left: list[int]
    right: list[int]
    feature: list[int]
    threshold: list[float]
    decision: list[int]
    value: list[float]
    gain: list[float] | None
    n_samples: list[float] | None
    sum_hessian: list[float] | None
    bitsets: list[np.ndarray]     # per categorical index (a split's threshold)


def from_lightgbm(model: Any, *, feature_costs: FeatureCosts | None = None,
                  cost_groups: CostGroups | None = None,
                  group_costs: GroupCosts | None = None,
                  coupled_costs: FeatureCosts | None = None, split_cost: float = 0.0,
                  tree_cost: float = 0.0, default_cost: float | None = None,
                  feature_names: Sequence[str] | None = None,
                  category_columns: Sequence[str | int] | None = None) -> Booster:
    """A cbudget Booster that predicts what a LightGBM model predicts, with a cost model.

    Parameters
    ----------
    model : lightgbm.Booster, fitted lightgbm.LGBMModel, str or os.PathLike
        The model: a booster, a fitted scikit-learn estimator (its ``booster_``), the
        path of a LightGBM text model file, or the text itself (a str of more than
        one line). Files are read without LightGBM. An in-memory model is taken as
        ``model_to_string()`` writes it: up to its best iteration when it has one (what
        LightGBM predicts with by default), else every iteration; files hold the
        iterations they were saved with.
    {cost_arguments}
    category_columns : list of str or int, optional
        The features (names or indices) that were pandas ``category`` columns when
        LightGBM trained, in column order: the file's ``pandas_categorical`` lists their
        levels, not which features they are. Default: every categorical feature, when
        the file lists as many level lists (a DataFrame whose categorical features were
        all ``category`` columns); needed when some were integer-coded.

    Returns
    -------
    cbudget.Booster
        ``algorithm == "imported"``, ``base_score`` 0 (LightGBM folds the initial score
        into its first trees), ``imported_from`` naming LightGBM, its version (the model
        format's, ``v4``, for a file) and objective. ``predict(X)`` equals LightGBM's
        ``predict(X)``; ``predict(X, output_margin=True)`` equals its
        ``predict(X, raw_score=True)``, except for ``boosting="rf"``, where LightGBM
        averages the trees for predictions but sums them for raw scores: the import
        divides the leaf values by the number of iterations, so its margin is the
        average.

    Notes
    -----
    Objectives: ``regression_l1``, ``quantile``, ``poisson``, ``gamma`` and ``tweedie``
    become cbudget's ``reg:absoluteerror``, ``reg:quantileerror``, ``count:poisson``,
    ``reg:gamma`` and ``reg:tweedie`` (the last three predict ``exp(raw score)``, as
    LightGBM; their parameters, e.g. the Tweedie power, are not carried); the other
    regression objectives with identity output (``regression``, ``huber``, ``fair``,
    ``mape``) and a model with no objective (a custom one: LightGBM predicts raw
    scores) become ``reg:squarederror``;
    ``binary`` with ``sigmoid:1`` and ``cross_entropy`` (a plain sigmoid) become
    ``binary:logistic``; ``multiclass`` becomes ``multi:softprob`` (tree ``i`` is class
    ``i % num_class``); ``lambdarank`` and ``rank_xendcg`` become ``rank:ndcg``.

    Refused (ValueError): other output transforms (cross_entropy_lambda, multiclassova,
    binary with another sigmoid, ``reg_sqrt``), linear trees, categorical splits that
    send a category above 65,535 left, a
    ``pandas_categorical`` list that does not pair with the categorical features (an
    ordered or numeric-coded pandas ``category`` column), and trees that the
    zero-as-missing rewrite would grow beyond ``MAX_NODES_PER_TREE`` nodes.

    Categorical splits become cbudget categorical splits on the same categories: the
    model's ``categories`` hold the categorical features, with the ``pandas_categorical``
    levels when LightGBM trained on a DataFrame (so a DataFrame is mapped by level;
    unseen levels and missing values go right, as in LightGBM). NaN and negative values
    go right at a categorical split, as in LightGBM, except that values in ``(-1, 0)``,
    which LightGBM truncates to category 0, are missing (right) here.

    Inputs with ``|x| <= 1e-35`` route as 0, as in LightGBM's prediction of dense
    inputs (NumPy, pandas); an input of +inf differs at LightGBM's NaN-versus-rest
    splits (threshold +inf), where cbudget's largest finite threshold sends it right.

    A Zero missing-type split whose default direction differs from where its threshold
    sends 0 becomes three splits on the same feature with both subtrees copied. The
    copies keep LightGBM's node counts and hessian sums; the added splits and the
    second copy carry no gain, so gain importance adds up to LightGBM's.
    """
    text, version, estimator = _model_text(model)
    header, sections = _read_sections(text)
    format_version = header.get("version")
    if format_version not in FORMAT_VERSIONS:
        raise ValueError(f"LightGBM model: format version {format_version!r} is not one "
                         f"this importer reads ({', '.join(FORMAT_VERSIONS)})")
    n_per_iteration = _header_int(header, "num_tree_per_iteration")
    num_class = _header_int(header, "num_class")
    if n_per_iteration < 1 or num_class < 1:
        raise ValueError("LightGBM model: num_class and num_tree_per_iteration must be >= 1")
    if n_per_iteration > max(len(sections), 1):   # before allocating per output
        raise ValueError(f"LightGBM model: num_tree_per_iteration={n_per_iteration} but "
                         f"the file has {len(sections)} trees")
    objective_line = header.get("objective") or ""
    objective, cbudget_class = _objective(objective_line, n_per_iteration, num_class)
    n_features = _header_int(header, "max_feature_idx") + 1
    stored_names = (header.get("feature_names") or "").split()
    if len(stored_names) != n_features:    # bounds n_features by what the file holds
        raise ValueError(f"LightGBM model: feature_names lists {len(stored_names)} names; "
                         f"max_feature_idx says {n_features}")
    names = source_feature_names(stored_names, feature_names, n_features)
    if len(sections) % n_per_iteration:
        raise ValueError(f"LightGBM model: {len(sections)} trees are not whole iterations "
                         f"of {n_per_iteration} trees")
    sizes = header.get("tree_sizes")
    if sizes is not None and len(sizes.split()) != len(sections):
        raise ValueError(f"LightGBM model: tree_sizes lists {len(sizes.split())} trees; "
                         f"the file has {len(sections)}")
    n_iterations = len(sections) // n_per_iteration
    # random forests (boosting=rf): LightGBM predicts the trees' average
    scale = 1.0 / n_iterations if "average_output" in header and n_iterations else 1.0
    parsed = [_parse_tree(fields, i, n_features) for i, fields in enumerate(sections)]
    categories = _categories(text, header, parsed, names, category_columns)
    trees = [_convert_tree(tree, i, n_features, scale) for i, tree in enumerate(parsed)]
    rounds = [trees[r * n_per_iteration:(r + 1) * n_per_iteration]
              for r in range(n_iterations)]
    bitsets = [[tree.bitsets for tree in parsed[r * n_per_iteration:(r + 1) * n_per_iteration]]
               for r in range(n_iterations)]
    cost_model = cost_model_for(names, feature_costs=feature_costs, cost_groups=cost_groups,
                                group_costs=group_costs, coupled_costs=coupled_costs,
                                split_cost=split_cost, tree_cost=tree_cost,
                                default_cost=default_cost)
    source = describe_source("lightgbm", version or format_version, estimator,
                             objective=objective_line or "none", model_format=format_version)
    return imported_booster(rounds, objective=objective, num_class=cbudget_class,
                            base_score=np.zeros(n_per_iteration), feature_names=names,
                            cost_model=cost_model, imported_from=source,
                            categories=categories, bitsets=bitsets)


from_lightgbm.__doc__ = (from_lightgbm.__doc__ or "").replace("{cost_arguments}",
                                                              COST_ARGUMENTS)


def _model_text(model: Any) -> tuple[str, str | None, str]:
    """(model text, LightGBM's version if known, estimator name) of ``model``."""
    if isinstance(model, str) and "\n" in model:     # no path has a line break
        return model, None, "Booster"
    if isinstance(model, (str, os.PathLike)):
        try:
            return Path(model).read_text(encoding="utf-8"), None, "Booster"
        except UnicodeDecodeError as error:
            raise ValueError(f"{os.fspath(model)!r} is not a LightGBM text model "
                             "(not UTF-8 text)") from error
    # duck typing, so that lightgbm is imported only by whoever made the model
    library = sys.modules.get("lightgbm")
    version = getattr(library, "__version__", None)
    if callable(getattr(model, "model_to_string", None)):
        return model.model_to_string(), version, "Booster"
    # an unfitted estimator's booster_ raises LGBMNotFittedError, an AttributeError
    booster = getattr(model, "booster_", None)
    if booster is not None and callable(getattr(booster, "model_to_string", None)):
        return booster.model_to_string(), version, type(model).__name__
    raise TypeError("from_lightgbm takes a lightgbm.Booster, a fitted LightGBM estimator "
                    "or the path of a LightGBM text model, not "
                    f"{type(model).__name__}")


def _read_sections(text: str) -> tuple[dict[str, str | None], list[dict[str, str]]]:
    """The header's ``key=value`` lines (a bare key such as ``average_output`` maps to
    None) and each ``Tree=i`` section's, in order; the rest of the file (importances,
    parameters) is not read."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "tree":
        raise ValueError("not a LightGBM text model: the first line is not 'tree'")
    header: dict[str, str | None] = {}
    sections: list[dict[str, str]] = []
    for number, raw in enumerate(lines[1:], start=2):
        line = raw.strip()
        if line == "end of trees":
            return header, sections
        if not line:
            continue
        key, equals, value = line.partition("=")
        where = (f"LightGBM model, tree {len(sections) - 1}" if sections
                 else "LightGBM model header")
        if key == "Tree":
            if value != str(len(sections)):
                raise ValueError(f"LightGBM model, line {number}: expected Tree="
                                 f"{len(sections)}, found {line[:40]!r}")
            sections.append({})
            continue
        if not equals and sections:
            raise ValueError(f"{where}: line {number} is not key=value: {line[:40]!r}")
        fields: dict[str, Any] = sections[-1] if sections else header
        if key in fields:
            raise ValueError(f"{where}: {key!r} appears twice")
        fields[key] = value if equals else None
    raise ValueError("LightGBM model is truncated: no 'end of trees' line")


def _header_int(header: dict[str, str | None], key: str) -> int:
    """The integer header field ``key`` (ValueError when missing or not an integer)."""
    value = header.get(key)
    if value is None or not INT_TOKEN.fullmatch(value.strip()):
        raise ValueError(f"LightGBM model header: {key} is missing or not an integer")
    return int(value)


def _objective(line: str, n_outputs: int, num_class: int) -> tuple[str, int]:
    """(cbudget objective, its num_class) of LightGBM's objective line, or ValueError
    for an output transform cbudget does not have."""
    name, *options = line.split() or [""]
    settings = dict(o.partition(":")[::2] for o in options)
    if name in OTHER_TRANSFORMS:
        raise ValueError(f"LightGBM objective {name!r} predicts {OTHER_TRANSFORMS[name]}, "
                         "an output transform no cbudget objective has")
    multiclass = name == "multiclass"
    if n_outputs != (num_class if multiclass else 1) or (not multiclass and num_class != 1):
        raise ValueError(f"LightGBM model: objective {line or 'none'!r} with num_class="
                         f"{num_class} and {n_outputs} trees per iteration is inconsistent "
                         "or not supported (several outputs only for multiclass)")
    if "sqrt" in options:
        raise ValueError(f"LightGBM objective {line!r} (reg_sqrt) predicts "
                         "sign(raw) * raw**2, an output transform no cbudget objective has")
    if name in ("", "none", "custom") or name in IDENTITY_OBJECTIVES:
        return "reg:squarederror", 1     # LightGBM predicts the raw score
    if name in SAME_OBJECTIVES:
        return SAME_OBJECTIVES[name], 1
    if name == "binary":
        if _option_float(settings.get("sigmoid")) != 1.0:
            raise ValueError(f"LightGBM objective {line!r}: only sigmoid:1 is supported "
                             "(binary:logistic is 1 / (1 + exp(-raw)))")
        return "binary:logistic", 1
    if name in ("cross_entropy", "xentropy"):   # LightGBM's output: 1 / (1 + exp(-raw))
        return "binary:logistic", 1
    if multiclass:
        if settings.get("num_class") != str(num_class) or num_class < 2:
            raise ValueError(f"LightGBM objective {line!r} disagrees with num_class="
                             f"{num_class}")
        return "multi:softprob", num_class
    if name in RANKING_OBJECTIVES:
        return "rank:ndcg", 1
    raise ValueError(f"LightGBM objective {line!r} is not one this importer knows")


def _option_float(text: str | None) -> float | None:
    """An objective option's number, or None."""
    return float(text) if text is not None and FLOAT_TOKEN.fullmatch(text) else None


def _numbers(fields: dict[str, str], key: str, count: int, where: str, *,
             integer: bool = False) -> list[Any]:
    """Field ``key`` as ``count`` numbers (it may be missing when ``count`` is 0)."""
    text = fields.get(key)
    if text is None:
        if count:
            raise ValueError(f"{where}: {key} is missing")
        return []
    tokens = text.split()
    if len(tokens) != count:    # before converting anything
        raise ValueError(f"{where}: {key} has {len(tokens)} values, expected {count}")
    pattern = INT_TOKEN if integer else FLOAT_TOKEN
    bad = next((t for t in tokens if not pattern.fullmatch(t)), None)
    if bad is not None:
        kind = "an integer" if integer else "a number"
        raise ValueError(f"{where}: {key} holds {bad[:30]!r}, not {kind}")
    return [int(t) for t in tokens] if integer else [float(t) for t in tokens]


def _optional_numbers(fields: dict[str, str], key: str, count: int,
                      where: str) -> list[float] | None:
    """Field ``key`` as ``count`` numbers, or None when it is missing or empty
    (LightGBM leaves some statistics empty in one-leaf trees)."""
    if not fields.get(key, "").strip():
        return None
    return _numbers(fields, key, count, where)


def _parse_tree(fields: dict[str, str], index: int, n_features: int) -> SourceTree:
    """Tree ``index``'s section, checked: counts, child ranges, one tree from the root,
    split features, finite thresholds, the categorical splits' bitsets; linear trees
    refused."""
    where = f"LightGBM model, tree {index}"
    num_leaves = _numbers(fields, "num_leaves", 1, where, integer=True)[0]
    if not 1 <= num_leaves <= (MAX_NODES_PER_TREE + 1) // 2:
        raise ValueError(f"{where}: num_leaves={num_leaves} is out of range "
                         f"(1 to {(MAX_NODES_PER_TREE + 1) // 2})")
    if fields.get("is_linear", "0").strip() != "0":
        raise ValueError(f"{where} is a linear tree (linear_tree=True): its leaves hold "
                         "linear models, which cbudget's trees do not have")
    num_cat = _numbers(fields, "num_cat", 1, where, integer=True)[0] if "num_cat" in fields else 0
    n_internal = num_leaves - 1
    decision = _numbers(fields, "decision_type", n_internal, where, integer=True)
    if any(not 0 <= d < 16 or (d >> 2) & 3 == 3 for d in decision):
        raise ValueError(f"{where}: decision_type holds a value that is not a known "
                         "decision type")
    feature = _numbers(fields, "split_feature", n_internal, where, integer=True)
    if any(not 0 <= f < n_features for f in feature):
        raise ValueError(f"{where}: split_feature out of range [0, {n_features})")
    threshold = _numbers(fields, "threshold", n_internal, where)
    if any(np.isnan(t) or t == -np.inf for t in threshold):
        raise ValueError(f"{where}: threshold holds NaN or -inf")
    bitsets = _bitsets(fields, num_cat, where)
    categorical = [d & CATEGORICAL_MASK for d in decision]
    # each categorical split's threshold is its bitset's index, numbering the splits
    if sorted(t for t, c in zip(threshold, categorical) if c) != list(range(num_cat)):
        raise ValueError(f"{where}: the thresholds of the categorical splits must number "
                         f"them 0 .. num_cat - 1 (num_cat={num_cat})")
    threshold = finite_thresholds(threshold).tolist()
    children = [_numbers(fields, key, n_internal, where, integer=True)
                for key in ("left_child", "right_child")]
    # LightGBM's leaf j is ~j in the child arrays; here it is node n_internal + j
    left, right = ([c if c >= 0 else n_internal + ~c for c in side] for side in children)
    if any(not (0 <= c < n_internal if c >= 0 else ~c < num_leaves)
           for side in children for c in side):
        raise ValueError(f"{where}: child index out of range")
    left, right = left + [-1] * num_leaves, right + [-1] * num_leaves
    # one tree rooted at node 0, checked before the rewrite (which copies subtrees and so
    # could not tell them from shared ones)
    preorder(left, right, where=where)
    value = _numbers(fields, "leaf_value", num_leaves, where)

    def statistic(internal_key: str, leaf_key: str) -> list[float] | None:
        inner = _optional_numbers(fields, internal_key, n_internal, where)
        leaves = _optional_numbers(fields, leaf_key, num_leaves, where)
        if leaves is None or (inner is None and n_internal):
            return None
        return (inner or []) + leaves

    gain = _optional_numbers(fields, "split_gain", n_internal, where)
    return SourceTree(left=left, right=right, bitsets=bitsets,
                      feature=feature, threshold=threshold, decision=decision,
                      value=[0.0] * n_internal + value,
                      gain=None if gain is None and n_internal else (gain or []),
                      n_samples=statistic("internal_count", "leaf_count"),
                      sum_hessian=statistic("internal_weight", "leaf_weight"))


def _bitsets(fields: dict[str, str], num_cat: int, where: str) -> list[np.ndarray]:
    """The cbudget bitsets of a tree's ``num_cat`` categorical splits (``cat_boundaries``
    and ``cat_threshold``)."""
    if not 0 <= num_cat <= MAX_NODES_PER_TREE:
        raise ValueError(f"{where}: num_cat={num_cat} is out of range")
    if not num_cat:
        return []
    bounds = _numbers(fields, "cat_boundaries", num_cat + 1, where, integer=True)
    words = (fields.get("cat_threshold") or "").split()
    if bounds[0] != 0 or bounds[-1] != len(words) or np.any(np.diff(bounds) < 0):
        raise ValueError(f"{where}: cat_boundaries must rise from 0 to the number of "
                         "cat_threshold words")
    values = np.asarray(_numbers(fields, "cat_threshold", len(words), where, integer=True))
    return [bitset_of_words(values[a:b], where) for a, b in zip(bounds[:-1], bounds[1:])]


def _categories(text: str, header: dict[str, str | None], trees: Sequence[SourceTree],
                names: Sequence[str], columns: Sequence[str | int] | None) -> Categories:
    """The imported model's categorical features and their levels: every feature with a
    categorical split or declared categorical by the file (``feature_infos`` lists its
    categories; the ``categorical_feature`` parameter), with the ``pandas_categorical``
    levels, when the file has some, for the features ``columns`` (default: all)."""
    features = {f for tree in trees
                for f, d in zip(tree.feature, tree.decision) if d & CATEGORICAL_MASK}
    infos = (header.get("feature_infos") or "").split()
    if len(infos) == len(names):    # a numeric feature's is [min:max] or none
        features |= {m for m, info in enumerate(infos)
                     if not info.startswith("[") and info != "none"}
    parameter = re.search(r"^\[categorical_feature: ([^\]]*)\]$", text, re.MULTILINE)
    listed = parameter.group(1).strip() if parameter else ""
    if listed and not listed.startswith("name:"):
        if not all(INT_TOKEN.fullmatch(t) for t in listed.split(",")):
            raise ValueError(f"LightGBM model: categorical_feature {listed[:40]!r} is not a "
                             "list of feature indices")
        features |= {int(t) for t in listed.split(",") if 0 <= int(t) < len(names)}
    elif listed:
        features |= {names.index(t) for t in listed[5:].split(",") if t in names}
    ordered = sorted(features)
    line = re.search(r"^pandas_categorical:(.*)$", text, re.MULTILINE)
    try:
        levels = json.loads(line.group(1)) if line else None
    except (ValueError, RecursionError):
        raise ValueError("LightGBM model: its pandas_categorical line is not JSON (or is "
                         "nested too deeply)") from None
    if not levels:       # null, [] or absent: categories are the integer values
        if columns:
            raise ValueError("category_columns given, but the LightGBM model has no "
                             "pandas_categorical levels")
        return Categories(ordered)
    chosen = ordered if columns is None else [
        names.index(c) if isinstance(c, str) and c in names else c for c in columns]
    given = list(ordered if columns is None else columns)
    described = ", ".join(names[m] for m in ordered) or "none"
    if not isinstance(levels, list) or len(levels) != len(chosen):
        raise ValueError(
            f"LightGBM model: pandas_categorical lists the levels of "
            f"{len(levels) if isinstance(levels, list) else 'no'} pandas category columns "
            f"but {len(chosen)} features are named for them (categorical features: "
            f"{described}): pass category_columns=, the features that were pandas "
            "category columns in training, in column order")
    for c, as_given in zip(chosen, given):
        if c not in ordered:
            raise ValueError(f"category_columns: {as_given!r} is not a categorical feature of the "
                             f"LightGBM model ({described}); a category column LightGBM "
                             "read as numeric codes cannot be mapped by level: predict on "
                             "its codes, or retrain with it categorical")
    by_feature = dict(zip(chosen, levels))
    if len(by_feature) != len(chosen):
        raise ValueError("category_columns names a feature twice")
    return Categories(ordered, [None if m not in by_feature
                                else _checked_levels(by_feature[m], names[m]) for m in ordered])


def _checked_levels(levels: Any, name: str) -> list[Any]:
    """One feature's ``pandas_categorical`` levels as cbudget's: distinct strings or
    distinct finite numbers (bools as 0 / 1, as cbudget codes them)."""
    if not isinstance(levels, list) or len(levels) > MAX_LEVELS:
        raise ValueError(f"LightGBM model: pandas_categorical for feature {name!r} is not "
                         f"a list of at most {MAX_LEVELS} levels")
    plain = [int(v) if isinstance(v, bool) else v for v in levels]
    kinds = {isinstance(v, str) for v in plain}
    if len(kinds) > 1 or not all(
            isinstance(v, str) or (isinstance(v, (int, float)) and np.isfinite(v))
            for v in plain) or len(set(plain)) != len(plain):
        raise ValueError(f"LightGBM model: the pandas levels of feature {name!r} must be "
                         "distinct strings or distinct finite numbers (cbudget maps those)")
    return plain


def _split_plan(threshold: float, decision: int) -> tuple[list[float], bool]:
    """The cbudget thresholds of one LightGBM split and where NaN goes (left?).

    Returns one threshold (a single split) or three ``u1 < u2 < u3`` (inputs ``<= u1``
    go left, ``<= u2`` right, ``<= u3`` left, the rest right)."""
    default_left = bool(decision & DEFAULT_LEFT_MASK)
    missing = (decision >> 2) & 3
    zero_left = 0.0 <= threshold
    band_left = default_left if missing == MISSING_ZERO else zero_left
    nan_left = default_left if missing == MISSING_NAN else band_left
    # (upper bound, goes left) of each interval, in order; the first goes left, the
    # last right (the threshold is finite)
    runs = ([(threshold, True), (BELOW_ZERO_BAND, False)] if threshold < -ZERO_THRESHOLD
            else [(BELOW_ZERO_BAND, True)])
    runs.append((ZERO_THRESHOLD, band_left))
    if threshold >= ZERO_THRESHOLD:
        runs.append((threshold, True))
    runs.append((np.inf, False))
    merged: list[tuple[float, bool]] = []
    for bound, goes_left in runs:
        if merged and bound <= merged[-1][0]:      # an empty interval
            continue
        if merged and merged[-1][1] == goes_left:
            merged[-1] = (bound, goes_left)
        else:
            merged.append((bound, goes_left))
    return [bound for bound, _ in merged[:-1]], nan_left


def _convert_tree(source: SourceTree, index: int, n_features: int,
                  scale: float) -> np.ndarray:
    """The cbudget tree of a checked LightGBM tree: its splits rewritten by
    :func:`_split_plan` (copying subtrees where a split becomes three), leaf values
    times ``scale``."""
    where = f"LightGBM model, tree {index}"
    columns: dict[str, list[Any]] = {k: [] for k in ("left", "right", "feature", "threshold",
                                                     "default_left", "value", "gain",
                                                     "n_samples", "sum_hessian",
                                                     "categorical")}

    def add(node: int, threshold: float, default_left: bool, copy: bool) -> int:
        """A new node with ``node``'s statistics; its id."""
        if len(columns["left"]) >= MAX_NODES_PER_TREE:
            raise ValueError(f"{where}: rewriting its zero-as-missing splits would take "
                             f"more than {MAX_NODES_PER_TREE} nodes")
        leaf = source.left[node] == -1
        columns["left"].append(-1)
        columns["right"].append(-1)
        columns["feature"].append(0 if leaf else source.feature[node])
        columns["threshold"].append(threshold)
        columns["default_left"].append(default_left)
        columns["value"].append(source.value[node] * scale)
        gain = source.gain[node] if source.gain is not None and not leaf else 0.0
        columns["gain"].append(0.0 if copy else gain)
        columns["categorical"].append(not leaf and source.decision[node] & CATEGORICAL_MASK)
        columns["n_samples"].append(source.n_samples[node] if source.n_samples else 0.0)
        columns["sum_hessian"].append(source.sum_hessian[node] if source.sum_hessian else 0.0)
        return len(columns["left"]) - 1

    # (source node, parent's new id or -1, which child, in a copied subtree)
    stack: list[tuple[int, int, str, bool]] = [(0, -1, "left", False)]
    while stack:
        node, parent, side, copy = stack.pop()
        children = (source.left[node], source.right[node])
        if source.left[node] == -1:
            new = add(node, 0.0, False, copy)
            subtrees: list[tuple[int, str, int, bool]] = []
        elif source.decision[node] & CATEGORICAL_MASK:
            # threshold: the bitset's index; NaN and negative values go right
            new = add(node, source.threshold[node], False, copy)
            subtrees = [(new, "left", children[0], copy), (new, "right", children[1], copy)]
        else:
            bounds, nan_left = _split_plan(source.threshold[node], source.decision[node])
            if len(bounds) == 1:
                new = add(node, bounds[0], nan_left, copy)
                subtrees = [(new, "left", children[0], copy),
                            (new, "right", children[1], copy)]
            else:   # the middle split, then one split on each side of it
                new = add(node, bounds[1], nan_left, copy)
                below = add(node, bounds[0], nan_left, True)
                above = add(node, bounds[2], nan_left, True)
                columns["left"][new], columns["right"][new] = below, above
                subtrees = [(below, "left", children[0], copy),
                            (below, "right", children[1], copy),
                            (above, "left", children[0], True),
                            (above, "right", children[1], True)]
        if parent >= 0:
            columns[side][parent] = new
        stack += [(child, at, which, in_copy)
                  for at, which, child, in_copy in reversed(subtrees)]
    return build_tree(columns["left"], columns["right"], columns["feature"],
                      columns["threshold"], columns["default_left"], columns["value"],
                      n_features=n_features, where=where, gain=columns["gain"],
                      n_samples=columns["n_samples"] if source.n_samples else None,
                      sum_hessian=columns["sum_hessian"] if source.sum_hessian else None,
                      categorical=columns["categorical"])
