"""The JSON model format: the header every model file has, format versioning, and the
registry that maps a file's ``model_type`` to the class that reads it.

Each model class writes and reads its own body (``to_dict`` / ``from_dict``); this module
only frames it. The format itself is described in docs/architecture.md ("Model files").

Format history (the reader accepts every minor version up to :data:`FORMAT_VERSION`):
1.0 boosters, 1.1 the ``cegb`` section, 1.2 the ``greedy_miser`` section, 1.3 forests
(``budget_rf``), 1.4 trees and cascades of linear classifiers, 1.5 gated models, 1.6
models imported from LightGBM, XGBoost and scikit-learn (``algorithm: "imported"``, the
``imported_from`` section), 1.7 a booster's exit rules (the ``exit_rules`` section), 1.8
a cost-aware booster's stages (``cost_stages`` in its ``cegb`` / ``greedy_miser`` section),
1.9 the features that hold an input from exiting (``hold`` in ``exit_rules``), 1.10
categorical features (the top-level ``categories``: which features, their levels; per
tree ``categorical``, ``cat_boundaries`` and ``cat_threshold``: docs/architecture.md,
"Categorical features").
Floats are written with ``repr`` precision, so save -> load -> predict is bit-identical.
"""
from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Callable, NamedTuple, Protocol, TypeVar

from ._files import write_file_atomically
from ._json_checks import (
    check_finite_json,
    check_integer_range,
    finite_number,
    first_difference,
    invalid,
    json_values,
    number_list,
    require,
)
from ._version import __version__
from .categories import NO_CATEGORIES, Categories
from .costs import CostModel

if TYPE_CHECKING:  # only for type hints: the model classes import this module
    from ._model import Model

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "load_model", "model_from_dict", "model_to_dict",
           "save_model", "register_exporter", "export_model", "exporter_formats",
           "ExportWarning", "MODEL_PARTS", "parts_left_out",
           "register_model_type", "register_params_check", "model_header",
           "read_header", "read_attributes", "nested_model_from_dict", "require",
           "checked_params", "number_list", "finite_number", "check_integer_range", "invalid",
           "build", "IMPORTED", "register_algorithms", "algorithms_of", "file_section"]

FORMAT_NAME = "cbudget"
FORMAT_VERSION = (1, 10)

# the ``algorithm`` of a model that cbudget did not train (cbudget.interop): it has no
# training parameters
IMPORTED = "imported"

# model_type -> model class; filled by register_model_type when the classes are defined
MODEL_TYPES: dict[str, type[Model]] = {}

# checks a file's training_params against the algorithm's declared parameters; set by
# cbudget.algorithms (which imports the model classes, so this module cannot import it)
_params_check: Callable[[dict], dict] | None = None


class AlgorithmEntry(Protocol):
    """What the file format reads of a registry entry (:class:`cbudget.engine.Algorithm`)."""
    name: str
    model_class: type
    section: str | None


# the registry of algorithms (cbudget.algorithms.REGISTRY, the same dict: algorithms
# registered later are seen); set by cbudget.algorithms, which imports the model classes
_algorithms: Mapping[str, AlgorithmEntry] = {}


def register_algorithms(registry: Mapping[str, AlgorithmEntry]) -> None:
    """Set the registry of algorithms the model classes read their dispatch from: which
    algorithms make which model class (:func:`algorithms_of`) and the file section each
    one writes (:func:`file_section`)."""
    global _algorithms
    _algorithms = registry


def algorithms_of(model_class: type) -> tuple[str, ...]:
    """The registered algorithms that train models of ``model_class`` (exactly: a Cascade
    is not a ClassifierTree here), in registry order."""
    return tuple(name for name, entry in _algorithms.items()
                 if entry.model_class is model_class)


def file_section(algorithm: str) -> str | None:
    """The name of the section of a model file that restates ``algorithm``'s settings
    (e.g. ``"cegb"``, ``"budget_rf"``), or None: it writes none (and for
    :data:`IMPORTED` or an unregistered name)."""
    entry = _algorithms.get(algorithm)
    return None if entry is None else entry.section


def register_params_check(check: Callable[[dict], dict]) -> None:
    """Set the function that checks a document's ``training_params`` (with its
    ``algorithm``) and returns them completed; it raises TypeError/ValueError naming the
    parameter."""
    global _params_check
    _params_check = check


def register_model_type(cls: type[ModelT]) -> type[ModelT]:
    """Class decorator: files whose ``model_type`` is ``cls.model_type`` are read by
    ``cls.from_dict(doc, expensive_model=...)``."""
    if cls.model_type in MODEL_TYPES:
        raise ValueError(f"model_type {cls.model_type!r} is registered twice")
    MODEL_TYPES[cls.model_type] = cls
    return cls


# -- the header -----------------------------------------------------------------------
def model_header(model: Model) -> dict[str, Any]:
    """The top-level fields every model file has; the model class adds its body."""
    attributes: dict[str, Any] = {}
    if model.best_iteration is not None and model.best_score is not None:
        attributes["best_iteration"] = int(model.best_iteration)
        attributes["best_score"] = float(model.best_score)
    header = {
        "format": FORMAT_NAME,
        "format_version": list(FORMAT_VERSION),
        "library_version": __version__,
        "model_type": model.model_type,
        "algorithm": model.algorithm,
        "objective": model.objective,
        "num_class": model.num_class,
        "feature_names": list(model.feature_names),
        "cost_model": model.cost_model.to_dict(),
        "training_params": dict(model.params),
        "attributes": attributes,
        "summary": model.summary,
    }
    if len(model.categories):
        # optional: a file without it (any older file) has no categorical features
        header["categories"] = model.categories.to_dict()
    return header


class Header(NamedTuple):
    """The validated common fields of a document."""
    feature_names: list
    objective: str
    params: dict          # training_params with the document's algorithm
    cost_model: CostModel


def read_header(doc: dict, model_class: type) -> Header:
    """Feature names, objective, parameters and cost model of ``doc``, checked; its
    ``algorithm`` must be one that trains ``model_class`` (:func:`algorithms_of`) or, for
    a class whose models may be imported from other libraries (``importable``),
    :data:`IMPORTED`."""
    algorithms = algorithms_of(model_class) + (
        (IMPORTED,) if getattr(model_class, "importable", False) else ())
    feature_names = require(doc, "feature_names", list)
    if not feature_names or not all(isinstance(n, str) for n in feature_names):
        raise invalid("feature_names must be a non-empty list of str")
    if len(set(feature_names)) != len(feature_names):   # as a Dataset requires
        raise invalid("feature_names must be unique")
    objective = require(doc, "objective", str)
    require(doc, "library_version", str)
    params = dict(require(doc, "training_params", dict))
    algorithm = require(doc, "algorithm", str)
    if algorithm not in algorithms:
        raise invalid(f"unknown algorithm {algorithm!r} for a {doc.get('model_type')} "
                      f"(made by {', '.join(map(repr, algorithms))})")
    if params.setdefault("algorithm", algorithm) != algorithm:
        raise invalid(f"training_params.algorithm {params['algorithm']!r} is not the "
                      f"document's algorithm {algorithm!r}")
    # no parameter check compares the objective with the document's
    if params.get("objective", objective) != objective:
        raise invalid(f"training_params.objective {params['objective']!r} is not the "
                      f"document's objective {objective!r}")
    if algorithm == IMPORTED:
        if params != {"algorithm": IMPORTED}:
            raise invalid("an imported model has no training_params but its algorithm")
    else:
        params = checked_params({"objective": objective, **params}, "training_params")
    cost_model = CostModel.from_dict(require(doc, "cost_model", dict), len(feature_names))
    return Header(feature_names, objective, params, cost_model)


def checked_params(params: dict, where: str) -> dict:
    """A document's training parameters (with ``algorithm``), checked by the declarations
    of the algorithm (see :func:`register_params_check`) and completed."""
    if _params_check is None:
        raise RuntimeError("import cbudget before reading model files")
    try:
        return _params_check(params)
    except (TypeError, ValueError) as exc:
        raise invalid(f"{where}: {exc}") from None


def build(model_class: Callable[..., BuiltT], **fields: Any) -> BuiltT:
    """``model_class(**fields)``, its errors reported as an invalid document."""
    try:
        return model_class(**fields)
    except (TypeError, KeyError, OverflowError, ValueError) as exc:
        raise invalid(str(exc)) from None


ModelT = TypeVar("ModelT", bound="Model")
# what build makes
BuiltT = TypeVar("BuiltT")


def read_categories(doc: dict, n_features: int) -> Categories:
    """The document's ``categories`` (the categorical features and their levels); none
    when it has no such key (any file before them)."""
    return Categories.from_dict(doc["categories"], n_features) if "categories" in doc \
        else NO_CATEGORIES


def read_attributes(model: ModelT, doc: dict, n_iterations: int | None = None) -> ModelT:
    """``model`` with the document's ``best_iteration`` / ``best_score`` (checked against
    ``n_iterations`` when the model has iterations), ``summary`` and ``categories`` (the
    levels of its categorical features, when it has some)."""
    model.categories = read_categories(doc, len(model.feature_names))
    attributes = require(doc, "attributes", dict)
    if "best_iteration" in attributes:
        best_iteration = require(attributes, "best_iteration", int, "attributes.")
        best_score = require(attributes, "best_score", (int, float), "attributes.")
        if n_iterations is not None and not 0 <= best_iteration < max(n_iterations, 1):
            raise invalid("attributes.best_iteration out of range")
        if not math.isfinite(best_score):
            raise invalid("attributes.best_score must be finite")
        model.best_iteration, model.best_score = best_iteration, float(best_score)
    model.summary = require(doc, "summary", dict)
    check_finite_json(model.summary, "summary")
    return model


# -- documents and files --------------------------------------------------------------
# fields saving always writes anew: they describe the writer, not the model
WRITTEN_ANEW = ("library_version", "format_version")


def model_to_dict(model: Model) -> dict[str, Any]:
    """The JSON document of any cbudget model (``model.to_dict()``)."""
    return model.to_dict()


def model_from_dict(doc: dict, *, expensive_model: Any = None) -> Model:
    """Rebuild a model from its JSON document, validating everything (``expensive_model``:
    see :func:`load_model`)."""
    if not isinstance(doc, dict):
        raise invalid("the document is not a JSON object")
    for _ in json_values(doc):   # the depth, before anything recurses into it
        pass
    model = nested_model_from_dict(doc, expensive_model=expensive_model)
    # What loads is what was saved: a field the model would save differently (a derived
    # one edited, a value the reader normalised) means the file is not a saved model.
    difference = first_difference(doc, model.to_dict(), ignore=WRITTEN_ANEW)
    if difference is not None:
        raise invalid(f"{difference}: the document does not describe one model")
    return model


def nested_model_from_dict(doc: dict, *, expensive_model: Any = None) -> Model:
    """A model from a document inside another model's (a gated model's parts, a basis
    booster), checked as :func:`model_from_dict` checks it but for the nesting depth and
    the final comparison, which the outer document's cover."""
    if not isinstance(doc, dict):
        raise invalid("the document is not a JSON object")
    if doc.get("format") != FORMAT_NAME:
        raise ValueError(f"not a cbudget model (format={doc.get('format')!r})")
    version = require(doc, "format_version", list)
    if (len(version) != 2 or not all(isinstance(v, int) for v in version)
            or version[0] != FORMAT_VERSION[0] or version[1] > FORMAT_VERSION[1]):
        raise ValueError(f"unsupported cbudget model format_version {version}; this is "
                         f"cbudget {__version__}, which reads {FORMAT_VERSION[0]}.0 to "
                         f"{FORMAT_VERSION[0]}.{FORMAT_VERSION[1]}")
    model_type = require(doc, "model_type", str)
    if model_type not in MODEL_TYPES:
        raise ValueError(f"model_type {model_type!r} is not supported by this version")
    model_class = MODEL_TYPES[model_type]
    if expensive_model is not None and not model_class.loads_expensive_model:
        raise ValueError(f"expensive_model is for gated models; this is a {model_type}")
    return model_class.from_dict(doc, expensive_model=expensive_model)


def save_model(model: Model, path: str | os.PathLike) -> None:
    """Write ``model`` to ``path`` as JSON, whole or not at all: over a regular file or
    none, never over (or through) a link, device, FIFO, socket or folder, which raise
    FileExistsError (see :func:`cbudget._files.write_file_atomically`)."""
    doc = model.to_dict()
    try:
        text = json.dumps(doc, allow_nan=False, separators=(",", ":"))
    except ValueError:
        # a model file holds only finite numbers (load_model refuses others): say where
        try:
            check_finite_json(doc, "")
        except ValueError as exc:
            where = str(exc).removeprefix("invalid cbudget model: ")
            raise ValueError(f"cannot save this model: {where} (a model file holds only "
                             "finite numbers)") from None
        raise
    write_file_atomically(path, text)


# -- other formats --------------------------------------------------------------------
class ExportWarning(UserWarning):
    """A part of the model that the format it is saved in cannot hold (the exit rules,
    the cost stages, the cost model): the file predicts as the model does without it."""


# the parts of a model other formats may leave out: name -> (whether a model has it,
# what leaving it out means)
MODEL_PARTS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "exit_rules": (lambda m: getattr(m, "exit_rules", None) is not None,
                   "the exit rules (the file predicts with every tree, as "
                   "predict(X, early_exit=False) does)"),
    "cost_stages": (lambda m: len(getattr(m, "cost_stages", ())) > 1,
                    "the cost stages (the trade-off of each run of rounds)"),
    "cost_model": (lambda m: not m.cost_model.is_zero(),
                   "the cost model and per-node cost metadata (cost reports and "
                   "on-demand prediction need the cbudget file)"),
}


class Exporter(NamedTuple):
    """A model format: ``write(model, path, **options)``, the model classes it holds,
    what it holds in words (for the refusal of other models), the parts of
    :data:`MODEL_PARTS` it carries, and the file name suffixes that are its own (lower
    case, e.g. ".onnx": a file so named is written in this format only)."""
    write: Callable[..., None]
    model_classes: tuple[type, ...]
    holds: str
    carries: frozenset[str] = frozenset()
    suffixes: frozenset[str] = frozenset()


# format name -> its exporter; each format's module registers itself (register_exporter)
EXPORTERS: dict[str, Exporter] = {}


def register_exporter(format: str, write: Callable[..., None],
                      model_classes: tuple[type, ...], holds: str,
                      carries: Iterable[str] = (), suffixes: Iterable[str] = ()) -> None:
    """Make ``save_model(path, format=format)`` call ``write(model, path, **options)``
    for models of ``model_classes``; ``carries``: the parts of :data:`MODEL_PARTS` the
    format holds (saving a model with another part warns, :class:`ExportWarning`);
    ``suffixes``: the file name suffixes that only this format may be saved under (saving
    another format under one raises ValueError)."""
    if format in EXPORTERS:
        raise ValueError(f"model format {format!r} is registered twice")
    unknown = set(carries) - set(MODEL_PARTS)
    if unknown:
        raise ValueError(f"unknown model parts {sorted(unknown)}; valid: {list(MODEL_PARTS)}")
    EXPORTERS[format] = Exporter(write, model_classes, holds, frozenset(carries),
                                 frozenset(suffix.lower() for suffix in suffixes))


def exporter_formats(model: Model) -> list[str]:
    """The formats ``model`` can be saved in."""
    return [name for name, exporter in EXPORTERS.items()
            if isinstance(model, exporter.model_classes)]


def parts_left_out(model: Model, format: str) -> list[str]:
    """What saving ``model`` in ``format`` leaves out, in words (empty: nothing)."""
    carries = EXPORTERS[format].carries
    return [what for part, (has, what) in MODEL_PARTS.items()
            if part not in carries and has(model)]


def export_model(model: Model, path: str | os.PathLike, format: str = FORMAT_NAME,
                 **options: Any) -> None:
    """Write ``model`` to ``path`` in ``format`` (what ``Model.save_model`` does);
    ValueError for an unknown format or one that cannot hold this model; an
    :class:`ExportWarning` naming what the format leaves out of this model."""
    exporter = EXPORTERS.get(format)
    if exporter is None:
        raise ValueError(f"unknown model format {format!r}; valid: "
                         f"{', '.join(map(repr, EXPORTERS))}")
    if not isinstance(model, exporter.model_classes):
        formats = exporter_formats(model)
        only = ("cbudget's format only" if formats == [FORMAT_NAME]
                else f"the formats {', '.join(map(repr, formats))} only")
        raise ValueError(f"a {type(model).__name__} is saved in {only}, not {format!r} "
                         f"(which holds {exporter.holds})")
    # save_model("model.onnx") without format= would write cbudget's JSON under a name
    # that another runtime then fails to read
    suffix = os.path.splitext(os.fsdecode(path))[1].lower()
    owner = next((name for name, other in EXPORTERS.items() if suffix in other.suffixes),
                 format)
    if owner != format:
        raise ValueError(f"{os.fsdecode(path)!r} is named as a {owner!r} file but the format "
                         f"is {format!r}: give format={owner!r} to write that format, or "
                         "name the file otherwise")
    exporter.write(model, path, **options)
    left_out = parts_left_out(model, format)
    if left_out:
        warnings.warn(f"saved in the {format!r} format without " + "; ".join(left_out)
                      + f". cbudget's own format ({FORMAT_NAME!r}) keeps them.",
                      ExportWarning, stacklevel=3)     # the caller of Model.save_model


register_exporter(FORMAT_NAME, save_model, (object,), "every cbudget model", MODEL_PARTS)


def load_model(path: str | os.PathLike, *, expensive_model: Any = None) -> Model:
    """Load a model saved by ``save_model``; returns the right model class.

    Parameters
    ----------
    path : str or path-like
    expensive_model : object, optional
        A gated model whose expensive model is not a cbudget model does not store it:
        give it here (a :class:`cbudget.ExternalModel`, or the estimator itself when its
        cost was declared as a number or as features).

    Raises
    ------
    ValueError
        For a file that is not a valid cbudget model (truncated, edited inconsistently,
        unknown format version), or for a gated model saved with an external expensive
        model when ``expensive_model`` is not given.
    """
    try:
        with open(path, "r", encoding="utf-8") as f:
            text = f.read()
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not a valid JSON model file ({exc})") from None
    try:
        doc = json.loads(text, parse_constant=lambda c: math.nan)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not a valid JSON model file ({exc})") from None
    except RecursionError:
        raise invalid(f"{path}: the document nests too deeply") from None
    return model_from_dict(doc, expensive_model=expensive_model)
