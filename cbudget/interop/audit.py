"""Auditing a model file of any library: read a LightGBM, XGBoost or scikit-learn model
file as a cbudget model (:func:`load_foreign_model`), and what predicting on demand saves
against computing every feature the model uses (:func:`on_demand_savings`); the
``cbudget report`` command uses both (docs/architecture.md, "Interoperability")."""
from __future__ import annotations

import os
import pickle
import pickletools
from typing import Any

import numpy as np

from .._model import Model
from .from_lightgbm import from_lightgbm
from .from_sklearn import from_sklearn
from .from_xgboost import from_xgboost

__all__ = ["load_foreign_model", "read_foreign_model", "foreign_model_kind",
           "on_demand_savings", "from_any"]

# the first bytes of a pickle of protocol 2 and later (its PROTO opcode and the
# protocol) and of joblib's compressed files: zlib's header at each compression level,
# gzip, bz2, xz, legacy lzma, lz4 and joblib's old "ZF"
_PICKLE_PROTOCOLS = tuple(bytes([0x80, p]) for p in range(2, 6))
_JOBLIB_COMPRESSED = (b"x\x01", b"x^", b"x\x9c", b"x\xda", b"\x1f\x8b", b"BZh",
                      b"\xfd7zXZ\x00", b"]\x00\x00", b"\x04\x22\x4d\x18", b"ZF")
# how much of a file decides its kind
_HEAD_BYTES = 4096

# the option of the cbudget command that allows unpickling (named in the refusals)
TRUST_PICKLE = "trust_pickle"


def is_pickle(head: bytes, whole: bool) -> bool:
    """Whether ``head`` (the first bytes of a file; ``whole``: all of it) starts a pickle
    or a joblib-compressed file. Protocols 2 and later and the compressed formats have
    fixed first bytes; protocols 0 and 1 have none, so their opcodes are parsed (without
    running them: :func:`pickletools.genops`) up to STOP or, for a longer file, up to
    the end of ``head``."""
    if head.startswith(_PICKLE_PROTOCOLS + _JOBLIB_COMPRESSED):
        return True
    if not head:
        return False
    try:
        for opcode, _, _ in pickletools.genops(head):
            if opcode.name == "STOP":
                return True
    except ValueError as exc:
        # an unknown opcode: not a pickle; anything else: ``head`` ended inside an opcode
        return not whole and "unknown" not in str(exc)
    return not whole


def foreign_model_kind(path: str | os.PathLike) -> str:
    """What kind of model file ``path`` is, from its content (never its name):
    ``"cbudget"``, ``"lightgbm"`` (LightGBM's text format), ``"xgboost"`` (XGBoost's JSON
    or UBJSON) or ``"pickle"`` (a pickled or joblib-dumped object, :func:`is_pickle`);
    ValueError otherwise."""
    with open(path, "rb") as f:
        head = f.read(_HEAD_BYTES + 1)
    whole = len(head) <= _HEAD_BYTES
    head = head[:_HEAD_BYTES]
    text = head.lstrip()
    if text.startswith(b"tree\n") or text.startswith(b"tree\r\n") or b"\nversion=v" in text[:200]:
        return "lightgbm"
    if text.startswith(b"{"):
        try:
            prefix = head.decode("utf-8")
        except UnicodeDecodeError:
            return "xgboost"                 # binary: UBJSON
        # XGBoost's documents start with their "learner"; anything else is left to
        # cbudget.load_model, whose errors say what is wrong
        return "xgboost" if '"learner"' in prefix else "cbudget"
    if is_pickle(head, whole):
        return "pickle"
    raise ValueError(f"{os.fspath(path)}: not a model file cbudget reads (a cbudget or "
                     "XGBoost JSON model, an XGBoost UBJSON model, a LightGBM text model, "
                     "or a pickled / joblib-dumped LightGBM, XGBoost or scikit-learn "
                     "estimator)")


def from_any(model: Any, **options: Any) -> Model:
    """A cbudget model of a LightGBM, XGBoost or scikit-learn model: an in-memory one (the
    ``from_*`` importer of its library), or what :func:`read_foreign_model` read (a
    LightGBM model's text, an XGBoost model's bytes); ``options``: the importers'
    keywords."""
    if isinstance(model, str):
        return from_lightgbm(model, **options)
    if isinstance(model, (bytes, bytearray)):
        return from_xgboost(model, **options)
    module = type(model).__module__.split(".")[0]
    if module == "lightgbm":
        return from_lightgbm(model, **options)
    if module == "xgboost":
        return from_xgboost(model, **options)
    if module == "sklearn":
        return from_sklearn(model, **options)
    raise TypeError(f"a {type(model).__module__}.{type(model).__name__} is not a "
                    "LightGBM, XGBoost or scikit-learn model")


def read_foreign_model(path: str | os.PathLike, *, trust_pickle: bool = False) -> Any:
    """The model file ``path`` as :func:`from_any` takes it, read once: a LightGBM text
    model's text, an XGBoost JSON or UBJSON model's bytes, or, with ``trust_pickle``
    only, the estimator a pickled / joblib file holds.

    Unpickling runs code from the file, as whoever reads it: a file that is a pickle by
    its content (whatever its name, :func:`foreign_model_kind`) is refused unless
    ``trust_pickle=True`` says it comes from someone you trust. ValueError for such a
    refusal, a cbudget model, an unknown kind of file or an unreadable pickle."""
    kind = foreign_model_kind(path)
    if kind == "cbudget":
        raise ValueError(f"{os.fspath(path)} is a cbudget model: use cbudget.load_model")
    if kind == "lightgbm":
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    if kind == "xgboost":
        with open(path, "rb") as f:
            return f.read()
    if not trust_pickle:
        raise ValueError(f"{os.fspath(path)} is a pickle (by its content, whatever its "
                         "name), and unpickling runs code from the file: it is read only "
                         f"with {TRUST_PICKLE}=True, for a file you trust; or save the "
                         "model in its library's own format (a LightGBM text model, an "
                         "XGBoost JSON / UBJSON model)")
    try:
        return unpickle(path)
    except (pickle.UnpicklingError, EOFError, ValueError, KeyError, AttributeError,
            ImportError, IndexError, TypeError) as exc:
        raise ValueError(f"{os.fspath(path)}: not a readable pickle of an estimator "
                         f"({type(exc).__name__}: {exc})") from None


def load_foreign_model(path: str | os.PathLike, *, trust_pickle: bool = False,
                       **options: Any) -> Model:
    """A LightGBM, XGBoost or scikit-learn model file as a cbudget model.

    Parameters
    ----------
    path : str or path-like
        A LightGBM text model (``Booster.save_model``), an XGBoost JSON or UBJSON model
        (``Booster.save_model``), or a pickled / joblib-dumped fitted estimator of
        LightGBM, XGBoost or scikit-learn (told apart by content, not by name).
    trust_pickle : bool, default False
        Unpickling runs code from the file: a pickle is refused (ValueError) unless
        this says the file comes from someone you trust.
    **options
        The cost keywords and ``feature_names`` of :func:`cbudget.from_lightgbm`.

    Returns
    -------
    cbudget.Booster or cbudget.Forest
    """
    return from_any(read_foreign_model(path, trust_pickle=trust_pickle), **options)


def unpickle(path: str | os.PathLike) -> Any:
    """The object pickled or joblib-dumped in ``path``."""
    try:
        import joblib  # scikit-learn's dependency; it reads plain pickles too
    except ImportError:
        with open(path, "rb") as f:
            return pickle.load(f)    # noqa: S301 - the user's own model file
    return joblib.load(path)


def on_demand_savings(model: Model, cost: np.ndarray, acquired: np.ndarray) -> dict[str, float]:
    """What predicting on demand saves, from per-input costs ``cost`` and the 0/1
    ``acquired`` matrix of the inputs (:meth:`cbudget.Booster.acquisitions`).

    Computing every feature the model uses for every input (eager prediction) costs
    their acquisition cost, groups included, plus the same split and tree costs as on
    demand; on demand an input pays only for the features its paths read.

    Returns
    -------
    dict with ``eager_cost`` (mean per input, every used feature computed),
    ``on_demand_cost`` (mean per input) and ``saved_share`` (1 - on demand / eager; 0
    when eager costs nothing)
    """
    costs = model.cost_model
    on_demand = float(cost.mean()) if cost.size else 0.0
    structural = costs.structural_costs(cost, acquired)
    eager = costs.acquisition_cost(model.used_features()) + (
        float(structural.mean()) if structural.size else 0.0)
    return {"eager_cost": eager, "on_demand_cost": on_demand,
            "saved_share": 1.0 - on_demand / eager if eager > 0 else 0.0}
