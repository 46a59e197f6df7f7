"""Hostile model files of other libraries (issue 42): the LightGBM text models and the
XGBoost JSON and UBJSON models that ``cbudget report`` reads, mutated, and read the way
the command reads them.

Shared by ``tools/fuzz_models.py`` (``--foreign-cases``) and the tests; the cases run in
``model_mutations.Worker`` subprocesses (``via`` ``"foreign:lightgbm"``,
``"foreign:xgboost-json"``, ``"foreign:xgboost-ubj"``).

* :func:`foreign_seed_models` -- ``[(name, via, file content)]``: small real models
  trained with LightGBM and XGBoost (needs both), saved by them into a temporary
  directory.
* :func:`make_foreign_case` -- case number N: a seed model and its mutations. XGBoost
  documents get the node mutations of :func:`model_mutations.mutate` and, a third of the
  time, a hostile declared size (``num_class``, ``num_feature``, ``num_trees``, ... as
  XGBoost writes them: integers in strings); UBJSON models are written back with
  :func:`to_ubjson`. LightGBM text gets line and token mutations
  (:func:`mutate_lightgbm`). Some cases are then mutated as bytes.
* :func:`check_foreign` -- the file read by ``cbudget report``'s reading function
  (``cbudget.__main__.read_model_file``: content sniffing, no unpickling), imported,
  summarised as the report does, then used as any model (``model_mutations.use_model``).
  The property is the one of cbudget's own files: refused with a message
  (``ValueError``, ``TypeError``, or the command's ``CommandError``), or everything
  works; never a crash, a hang or another exception.
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import random
import tempfile
import warnings
from typing import Any

import numpy as np
from model_mutations import (
    HUGE_INTS,
    Case,
    Deep,
    Outcome,
    inputs,
    mutate,
    mutate_text,
    use_model,
)

from cbudget.interop.ubjson import decode, encode

FOREIGN_VIAS = ("foreign:lightgbm", "foreign:xgboost-json", "foreign:xgboost-ubj")
# where a case's file is written: the name says nothing, the content decides
FILE_NAMES = {"foreign:lightgbm": "model.json", "foreign:xgboost-json": "model.txt",
              "foreign:xgboost-ubj": "model.pkl"}

# declared sizes and counts, as XGBoost writes them (strings) and as numbers
SIZE_KEYS = ("num_class", "num_feature", "num_target", "num_trees", "num_parallel_tree",
             "num_nodes", "size_leaf_vector", "num_deleted")
HUGE_COUNTS = ["2147483647", "2147483648", "4294967296", "1000000", "16777216",
               "99999999999999999999", "-1", "0", "1", "4", "3.5", "", "x"]


# -- seed models ------------------------------------------------------------------------
def _data(kind: str, n: int = 200, d: int = 5, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    score = X[:, 0] + 0.8 * X[:, 1] * (X[:, 2] > 0) + 0.5 * np.sin(2 * X[:, 3])
    X[rng.random(X.shape) < 0.05] = np.nan
    X[rng.random(X.shape) < 0.05] = 0.0            # LightGBM's zero-as-missing splits
    if kind == "regression":
        return X, score + 0.2 * rng.normal(size=n)
    if kind == "binary":
        return X, (score > 0).astype(np.float64)
    return X, np.digitize(score, np.quantile(score, [1 / 3, 2 / 3])).astype(np.float64)


@functools.lru_cache(maxsize=1)
def _foreign_seed_models() -> tuple[tuple[str, str, bytes], ...]:
    import lightgbm
    import xgboost

    models: list[tuple[str, str, bytes]] = []
    with tempfile.TemporaryDirectory(prefix="cbudget-fuzz-foreign-") as directory, \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quiet = {"verbose": -1, "num_threads": 1, "num_leaves": 5, "min_data_in_leaf": 5}
        for name, params, kind, rounds in [
                ("binary", {"objective": "binary"}, "binary", 4),
                ("multiclass", {"objective": "multiclass", "num_class": 3}, "multiclass", 2),
                ("regression_zero_as_missing", {"objective": "regression",
                                                "zero_as_missing": True}, "regression", 3),
                ("rf", {"objective": "regression", "boosting": "rf", "bagging_freq": 1,
                        "bagging_fraction": 0.7}, "regression", 3)]:
            X, y = _data(kind)
            booster = lightgbm.train({**quiet, **params}, lightgbm.Dataset(X, y), rounds)
            path = os.path.join(directory, f"lightgbm_{name}.txt")
            booster.save_model(path)
            with open(path, "rb") as f:
                models.append((f"lightgbm_{name}", "foreign:lightgbm", f.read()))
        for name, params, kind, rounds in [
                ("binary", {"objective": "binary:logistic"}, "binary", 4),
                ("multiclass", {"objective": "multi:softprob", "num_class": 3},
                 "multiclass", 2),
                ("regression", {"objective": "reg:squarederror"}, "regression", 3),
                ("dart", {"objective": "reg:squarederror", "booster": "dart",
                          "rate_drop": 0.3}, "regression", 3)]:
            X, y = _data(kind)
            booster = xgboost.train({**params, "max_depth": 3, "nthread": 1},
                                    xgboost.DMatrix(X, y), rounds)
            for ext in ("json", "ubj"):
                path = os.path.join(directory, f"xgboost_{name}.{ext}")
                booster.save_model(path)
                with open(path, "rb") as f:
                    models.append((f"xgboost_{name}_{ext}", f"foreign:xgboost-{ext}",
                                   f.read()))
    return tuple(models)


def foreign_seed_models() -> list[tuple[str, str, bytes]]:
    """``[(name, via, content)]`` of the seed models (trained once per process)."""
    return list(_foreign_seed_models())


# -- UBJSON -----------------------------------------------------------------------------
def _typed(value: list) -> Any:
    """A list of numbers as the numpy array XGBoost would have written (float32 when
    exact, as its node arrays, else float64; int32 or int64), so that ``encode`` writes
    it as a typed array; any other list as it is."""
    if value and all(isinstance(v, float) for v in value):
        floats = np.asarray(value, dtype=np.float64)
        with np.errstate(over="ignore"):
            as32 = floats.astype(np.float32)
        return as32 if np.array_equal(as32, floats, equal_nan=True) else floats
    if value and all(isinstance(v, int) and not isinstance(v, bool) and -2**63 <= v < 2**63
                     for v in value):
        wide = any(not -2**31 <= v < 2**31 for v in value)
        return np.asarray(value, dtype=np.int64 if wide else np.int32)
    return value


def to_ubjson(value: Any) -> bytes:
    """The UBJSON encoding of a (mutated) JSON document as XGBoost writes it
    (``cbudget.interop.ubjson.encode`` of it, lists of numbers as typed arrays), with
    the hostile values ``encode`` refuses: integers beyond int64 as UBJSON's
    high-precision numbers (``H``) and :class:`model_mutations.Deep` as arrays nested
    that deep. They are written as placeholder strings, then replaced as bytes."""
    hostile: dict[str, bytes] = {}

    def placeholder(raw: bytes) -> str:
        key = f"\x00cbudget-fuzz-{len(hostile)}\x00"
        hostile[key] = raw
        return key

    def replace(node: Any) -> Any:
        if isinstance(node, Deep):
            return placeholder(b"[" * node.levels + b"i\x01" + b"]" * node.levels)
        if isinstance(node, int) and not isinstance(node, bool) \
                and not -2**63 <= node < 2**63:
            return placeholder(b"H" + encode(str(node))[1:])   # a string's length + digits
        if isinstance(node, dict):
            return {k: replace(v) for k, v in node.items()}
        if isinstance(node, list):
            node = _typed(node)
            return [replace(v) for v in node] if isinstance(node, list) else node
        return node

    data = encode(replace(value))
    for key, raw in hostile.items():
        data = data.replace(encode(key), raw, 1)
    return data


def _plain(value: Any) -> Any:
    """A decoded document with its numpy arrays as lists (to mutate it)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


def xgboost_document(content: bytes, via: str) -> dict:
    """The document of an XGBoost seed model file."""
    if via == "foreign:xgboost-ubj":
        return _plain(decode(content))
    return json.loads(content.decode("utf-8"))


# -- mutations --------------------------------------------------------------------------
def _size_mutation(doc: dict, rng: random.Random) -> str | None:
    """A hostile value for one of the document's declared sizes (None if it has none)."""
    found = []
    stack: list[tuple[Any, str]] = [(doc, "")]
    while stack:
        node, path = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if key in SIZE_KEYS:
                    found.append((node, key, f"{path}.{key}"))
                stack.append((value, f"{path}.{key}"))
        elif isinstance(node, list):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(node[:3]))
    if not found:
        return None
    node, key, path = found[rng.randrange(len(found))]
    value = rng.choice(HUGE_COUNTS) if rng.random() < 0.8 else rng.choice(HUGE_INTS)
    node[key] = value
    return f"{path}: -> {value!r}"


def mutate_xgboost(content: bytes, via: str, rng: random.Random) -> tuple[bytes, list[str]]:
    """A mutated XGBoost model file (JSON or UBJSON, as ``content``) and the steps."""
    doc = xgboost_document(content, via)
    steps = []
    if rng.random() < 0.35:
        step = _size_mutation(doc, rng)
        if step:
            steps.append(step)
    if not steps or rng.random() < 0.5:
        doc, more = mutate(doc, rng, as_document=True)
        steps += more
    if via == "foreign:xgboost-ubj":
        data = to_ubjson(doc)
    else:   # JSON text: model_mutations writes NaN, infinities and deep nesting
        from model_mutations import to_text
        data = to_text(doc).encode("utf-8")
    if rng.random() < 0.1:
        data, step = mutate_text(data, rng)
        steps.append(step)
    return data, steps


LIGHTGBM_HEADER_KEYS = ("num_class", "num_tree_per_iteration", "max_feature_idx",
                        "label_index", "version", "objective", "feature_names",
                        "tree_sizes", "average_output")
LIGHTGBM_OBJECTIVES = ["binary sigmoid:1", "binary sigmoid:0", "multiclass num_class:3",
                       "multiclass num_class:2147483647", "regression", "poisson",
                       "lambdarank", "cross_entropy", "multiclassova num_class:3", "", "x"]
ODD_TOKENS = ["2147483647", "-2147483648", "4294967296", "99999999999999999999", "-1", "0",
              "1e308", "-1e308", "inf", "-inf", "nan", "5e-324", "0.5", "x", "", "1,2"]


def mutate_lightgbm(content: bytes, rng: random.Random) -> tuple[bytes, list[str]]:
    """A mutated LightGBM text model: header values (declared counts, the objective),
    tree fields (a token changed, dropped, added; every token the same), lines deleted,
    duplicated or swapped, a tree section dropped; sometimes then mutated as bytes."""
    lines = content.decode("utf-8").split("\n")
    steps = []
    for _ in range(rng.choice([1, 1, 1, 2, 2, 3])):
        i = rng.randrange(len(lines))
        op = rng.random()
        key, equals, value = lines[i].partition("=")
        if op < 0.25:      # a header field
            target = rng.choice(LIGHTGBM_HEADER_KEYS)
            where = next((j for j, line in enumerate(lines)
                          if line.startswith(target + "=") or line == target), None)
            if where is None:
                continue
            new = (rng.choice(LIGHTGBM_OBJECTIVES) if target == "objective"
                   else rng.choice(ODD_TOKENS + ["v1", "v5", "v4 v4"]))
            lines[where] = f"{target}={new}"
            steps.append(f"header {target} -> {new!r}")
        elif op < 0.65 and equals and value:    # a field's tokens
            tokens = value.split(" ")
            how = rng.choice(["replace", "replace", "drop", "add", "fill", "double", "empty"])
            j = rng.randrange(len(tokens))
            odd = rng.choice(ODD_TOKENS)
            if how == "replace":
                tokens[j] = odd
            elif how == "drop":
                del tokens[j]
            elif how == "add":
                tokens.insert(j, odd)
            elif how == "fill":
                tokens = [odd] * len(tokens)
            elif how == "double":
                tokens = tokens * 2
            else:
                tokens = []
            lines[i] = f"{key}={' '.join(tokens)}"
            steps.append(f"line {i} ({key}): {how} {odd!r}")
        elif op < 0.75:
            del lines[i]
            steps.append(f"line {i} ({key}): deleted")
        elif op < 0.85:
            lines.insert(i, lines[i])
            steps.append(f"line {i} ({key}): duplicated")
        elif op < 0.92:
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
            steps.append(f"lines {i} and {j} swapped")
        else:      # a whole tree section
            starts = [j for j, line in enumerate(lines) if line.startswith("Tree=")]
            if not starts:
                continue
            j = rng.choice(starts)
            end = next((k for k in range(j + 1, len(lines)) if lines[k].startswith(
                ("Tree=", "end of trees"))), len(lines))
            del lines[j:end]
            steps.append(f"tree section at line {j} deleted")
    data = "\n".join(lines).encode("utf-8")
    if rng.random() < 0.1 or not steps:
        data, step = mutate_text(data, rng)
        steps.append(step)
    return data, steps


def make_foreign_case(seed: int, models: list[tuple[str, str, bytes]] | None = None
                      ) -> Case:
    """Foreign case number ``seed``, the same on every run and machine."""
    models = models if models is not None else foreign_seed_models()
    rng = random.Random(seed)
    name, via, content = models[rng.randrange(len(models))]
    if via == "foreign:lightgbm":
        data, steps = mutate_lightgbm(content, rng)
    else:
        data, steps = mutate_xgboost(content, via, rng)
    return Case(seed, name, steps, data, via)


# -- checking a case --------------------------------------------------------------------
def check_foreign(content: bytes, via: str) -> Outcome:
    """Read the file ``content`` as ``cbudget report`` does (its reading function, its
    size limit, no unpickling), import it, compute the report's summary and use the
    model (:func:`model_mutations.use_model`); the :class:`model_mutations.Outcome`."""
    from cbudget.__main__ import (
        DEFAULT_MAX_MODEL_MB,
        CommandError,
        cost_summary,
        read_model_file,
    )
    from cbudget.interop.audit import from_any

    args = argparse.Namespace(max_model_mb=DEFAULT_MAX_MODEL_MB, trust_pickle=False,
                              command="report")
    with tempfile.TemporaryDirectory(prefix="cbudget-fuzz-") as tmpdir, \
            warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        path = os.path.join(tmpdir, FILE_NAMES.get(via, "model"))
        with open(path, "wb") as f:
            f.write(content)
        try:
            kind, source = read_model_file(path, args, foreign=True)
            model = source if kind == "cbudget" else from_any(source, default_cost=1.0)
        except (ValueError, TypeError, CommandError) as exc:
            kind_name = type(exc).__name__
            if not str(exc).strip():
                return Outcome(f"bad-message:{kind_name}", repr(exc), "load")
            text = str(exc)
            return Outcome(f"rejected:{kind_name}", text if len(text) <= 400
                           else text[:400] + "...", "load")
        except Exception as exc:
            return Outcome(f"load:{type(exc).__name__}", str(exc)[:400], "load")
        try:
            summary = cost_summary(model, inputs(model))
            json.dumps(summary, allow_nan=False)
            use_model(model, tmpdir)
        except Exception as exc:
            return Outcome(f"after-load:{type(exc).__name__}", str(exc)[:400],
                           getattr(exc, "step", "report summary"))
    return Outcome("ok")


def directed_cases() -> list[tuple[str, str, bytes]]:
    """``[(description, via, content)]``: the declared sizes that hung the XGBoost
    importer (issue 42, item 10) and their LightGBM counterparts, on every seed model."""
    cases = []
    for name, via, content in foreign_seed_models():
        if via == "foreign:lightgbm":
            text = content.decode("utf-8")
            for key in ("num_class", "num_tree_per_iteration", "max_feature_idx"):
                for value in ("2147483647", "1000000"):
                    lines = [f"{key}={value}" if line.startswith(key + "=") else line
                             for line in text.split("\n")]
                    cases.append((f"{name} {key}={value}", via,
                                  "\n".join(lines).encode("utf-8")))
            continue
        for key, value in (("num_class", "2147483647"), ("num_class", "1000000"),
                           ("num_feature", "2147483647"), ("num_feature", "16777216"),
                           ("num_feature", "1000000")):
            doc = xgboost_document(content, via)
            doc["learner"]["learner_model_param"][key] = value
            if key == "num_class" and not name.startswith("xgboost_multiclass"):
                doc["learner"]["objective"]["name"] = "multi:softprob"
            data = to_ubjson(doc) if via.endswith("ubj") else json.dumps(doc).encode()
            cases.append((f"{name} {key}={value}", via, data))
    return cases


__all__ = ["FOREIGN_VIAS", "foreign_seed_models", "make_foreign_case", "check_foreign",
           "to_ubjson", "mutate_xgboost", "mutate_lightgbm", "directed_cases",
           "xgboost_document"]
