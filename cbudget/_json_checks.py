"""Checks of the fields of a JSON model document, shared by the model readers
(:mod:`cbudget.model_io` and the ``from_dict`` of each model class and of the cost
model): types exactly as saved (a bool is never a number, a float never an integer),
finite numbers, integer ranges, and a bounded nesting depth walked without recursion.
Every failure is a ValueError that names the field."""
from __future__ import annotations

import json
import math
from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import Any, TypeVar, overload

import numpy as np
from numpy.typing import DTypeLike

__all__ = ["invalid", "require", "number_list", "finite_number", "check_integer_range",
           "json_values", "check_finite_json", "first_difference", "MAX_NESTING",
           "NestingError", "parse_json"]


def invalid(message: str) -> ValueError:
    """The error for a document that is not a valid model."""
    return ValueError(f"invalid cbudget model: {message}")


T = TypeVar("T")


@overload
def require(d: Mapping, key: str, kind: type[T], where: str = "") -> T: ...


@overload
def require(d: Mapping, key: str, kind: tuple[type, ...], where: str = "") -> Any: ...


def require(d: Mapping, key: str, kind: type | tuple[type, ...], where: str = "") -> Any:
    """``d[key]``, which must exist and be of ``kind`` (bool never counts as a number)."""
    if key not in d:
        raise invalid(f"missing field {where}{key!r}")
    value = d[key]
    if isinstance(value, bool) or not isinstance(value, kind):
        raise invalid(f"field {where}{key!r} has the wrong type ({type(value).__name__})")
    return value


def number_list(values: object, where: str, length: int | None = None, *,
                integer: bool = False) -> list:
    """``values``, which must be a list of finite numbers (integers with ``integer``; of
    ``length`` entries if given)."""
    kind = int if integer else (int, float)
    if not isinstance(values, list) or not all(
            isinstance(v, kind) and not isinstance(v, bool) for v in values):
        raise invalid(f"{where} must be a list of {'integers' if integer else 'numbers'}")
    if not integer and not all(math.isfinite(v) for v in values):
        raise invalid(f"{where} must hold finite numbers")
    if length is not None and len(values) != length:
        raise invalid(f"{where} has {len(values)} entries, expected {length}")
    return values


def finite_number(d: dict, key: str, where: str, *, allow_none: bool = False) -> float | None:
    """A finite number >= 0 (or None when allowed) from ``d[key]``."""
    if allow_none and d.get(key, 0) is None:
        return None
    value = require(d, key, (int, float), where)
    if not (math.isfinite(value) and value >= 0):
        raise invalid(f"{where}{key} must be finite and >= 0")
    return float(value)


def check_integer_range(values: Sequence[int], dtype: DTypeLike, where: str) -> None:
    """Reject integers that do not fit ``dtype``: numpy 1.x wraps them silently on
    conversion (2**32 + 3 would become node 3), numpy 2 raises OverflowError."""
    info = np.iinfo(dtype)
    if not all(info.min <= v <= info.max for v in values):
        raise invalid(f"{where} value out of range")


# A document nests a handful of levels (a gated model's parts hold trees that hold
# lists); far deeper nesting is refused before anything walks it recursively.
MAX_NESTING = 32


class NestingError(ValueError):
    """A JSON document nested deeper than allowed."""


def json_values(value: Any, max_depth: int = MAX_NESTING) -> Iterator[tuple[str, Any]]:
    """(path, value) of every value inside the JSON value ``value`` (itself included,
    path ""), walked iteratively; :class:`NestingError` (a ValueError) once one lies
    deeper than ``max_depth`` containers."""
    stack = [("", value, 0)]
    while stack:
        path, value, depth = stack.pop()
        if depth > max_depth:
            raise NestingError(
                str(invalid(f"the document nests more than {max_depth} levels deep")))
        yield path, value
        if isinstance(value, dict):
            stack.extend((f"{path}.{k}", v, depth + 1) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((f"{path}[{i}]", v, depth + 1) for i, v in enumerate(value))


def parse_json(text: str | bytes, where: str, max_depth: int = MAX_NESTING) -> Any:
    """The JSON value of ``text``, nested at most ``max_depth`` levels; ValueError naming
    ``where`` for text that is not JSON or nests deeper. Python's parser recurses: far
    deeper nesting ends it with a RecursionError, caught here; the rest is checked by an
    iterative walk."""
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{where} is not valid JSON ({exc})") from None
    except RecursionError:
        raise NestingError(f"{where} nests more than {max_depth} levels deep") from None
    try:
        for _ in json_values(value, max_depth):
            pass
    except NestingError:
        raise NestingError(f"{where} nests more than {max_depth} levels deep") from None
    return value


def check_finite_json(value: Any, where: str) -> None:
    """``value`` holds only JSON values that save again as they are: no NaN or infinity
    (Python's json would read them, but a saved model never holds them)."""
    for path, v in json_values(value):
        if isinstance(v, float) and not math.isfinite(v):
            raise invalid(f"{where}{path} holds {v}")
        if not isinstance(v, (dict, list, str, int, float, type(None))):
            raise invalid(f"{where}{path} holds a {type(v).__name__}")


def _same_scalar(a: object, b: object) -> bool:
    """JSON scalars equal as saved: a bool only equals a bool; 1 equals 1.0."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and a == b


def first_difference(stored: Any, rebuilt: Any, ignore: Collection[str] = ()) -> str | None:
    """Where ``rebuilt`` (a document as a model writes it: tuples count as lists) differs
    from the JSON value ``stored`` (a path and both values),
    or None. Keys present on one side only and keys in ``ignore`` are not compared (files
    of older versions lack newer fields; unknown fields are ignored). Walked
    iteratively."""
    stack = [("", stored, rebuilt)]
    while stack:
        path, a, b = stack.pop()
        if isinstance(a, dict) and isinstance(b, dict):
            stack.extend((f"{path}.{k}", a[k], b[k]) for k in a
                         if k in b and k not in ignore)
        elif isinstance(a, list) and isinstance(b, (list, tuple)):
            if len(a) != len(b):
                return f"{path.lstrip('.')} has {len(a)} entries, the model {len(b)}"
            stack.extend((f"{path}[{i}]", x, y) for i, (x, y) in enumerate(zip(a, b)))
        elif isinstance(a, (dict, list)) or isinstance(b, (dict, list, tuple)) \
                or not _same_scalar(a, b):
            return f"{path.lstrip('.')} is {_short(a)}, the model {_short(b)}"
    return None


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
