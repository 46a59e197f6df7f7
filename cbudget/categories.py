"""Categorical features, the input side (docs/architecture.md, "Categorical features"):
which columns are categorical, the levels of each, and the codes the engine reads.

A categorical column reaches the engine as float64 codes ``0..k-1``, NaN for a missing
value. Where the codes come from:

* a pandas ``category`` column: the position of the value among the dtype's categories
  (pandas' order, unused categories included, as LightGBM takes them);
* a string / object column (pandas, or a NumPy object or string array): the position of
  the value among the column's distinct values in the training data, sorted;
* a numeric column named in ``categorical_feature``: its values are the codes
  (non-negative integers; a negative value is missing, as in LightGBM); no levels are
  stored.

The levels of each column are kept (:class:`Categories`), in the Dataset, in the model
and in its file (the top-level ``categories`` key), so that later data -- validation
data built with ``reference=``, prediction on a DataFrame, a :class:`cbudget.FeatureSource`
-- are mapped by level, not by position: a level not seen in training gets the code
``k`` (no split's set holds it: the "other" side, as LightGBM's), a missing value stays
NaN (the node's learned missing direction). A NumPy array of numbers is taken as codes.
"""
from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any, Union

import numpy as np

from ._json_checks import invalid, require

__all__ = ["Categories", "NO_CATEGORIES", "MAX_LEVELS", "CategoricalSpec",
           "parse_categorical_feature", "auto_columns", "fit_categories",
           "is_table", "as_pandas", "encode_table", "encode_column", "as_numbers"]

# The most levels (codes 0..MAX_LEVELS-1) a categorical feature may have: the split sets
# of the tree nodes are bitsets over the codes, so their size grows with it.
MAX_LEVELS = 65_536

# What ``categorical_feature`` takes: "auto", column names / indices, or the Categories of
# data already coded.
CategoricalSpec = Union[str, Sequence[Union[str, int]], "Categories", None]

# the kinds of level a column holds; a column of one kind is not mapped with another's
_STRING, _NUMBER = "string", "number"


def _level_kind(level: Any) -> str:
    return _STRING if isinstance(level, str) else _NUMBER


class Categories:
    """The categorical features of a Dataset or model and their levels.

    Attributes
    ----------
    features : ndarray of int32
        Sorted column indices of the categorical features (empty when none).
    levels : list of (list or None)
        Per entry of ``features``: its levels in code order (code ``c`` is
        ``levels[c]``; str, int, float or bool), or None for an integer-coded column,
        whose values are the codes.
    """

    def __init__(self, features: Sequence[int] | np.ndarray = (),
                 levels: Sequence[Sequence[Any] | None] | None = None) -> None:
        self.features = np.asarray(features, dtype=np.int32).reshape(-1)
        self.levels: list[list[Any] | None] = (
            [None] * self.features.size if levels is None
            else [None if lv is None else list(lv) for lv in levels])
        if len(self.levels) != self.features.size:
            raise ValueError("one entry of levels per categorical feature")
        if np.any(np.diff(self.features) <= 0):
            raise ValueError("categorical features must be sorted and distinct")

    def __len__(self) -> int:
        return int(self.features.size)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Categories) and np.array_equal(self.features, other.features)
                and self.to_dict() == other.to_dict())

    def __repr__(self) -> str:
        return f"<cbudget.Categories features={self.features.tolist()}>"

    def levels_of(self, feature: int) -> list[Any] | None:
        """The levels of categorical feature ``feature`` (None: integer codes)."""
        where = np.flatnonzero(self.features == feature)
        if where.size == 0:
            raise KeyError(f"feature {feature} is not categorical")
        return self.levels[int(where[0])]

    def by_feature(self) -> dict[int, list[Any] | None]:
        """``{feature index: levels or None}``."""
        return dict(zip(self.features.tolist(), self.levels))

    def describe(self, feature: int) -> str:
        """How the cost report and the plots name feature ``feature``'s kind."""
        levels = self.levels_of(feature)
        return "categorical" if levels is None else f"categorical, {len(levels)} levels"

    def to_dict(self) -> dict[str, Any]:
        """The ``categories`` entry of a model file."""
        return {"features": self.features.tolist(), "levels": [
            None if lv is None else list(lv) for lv in self.levels]}

    @classmethod
    def from_dict(cls, doc: Any, n_features: int) -> Categories:
        """The categories of a model file's ``categories`` entry, checked (ValueError
        "invalid cbudget model" for a bad one)."""
        if not isinstance(doc, dict) or set(doc) != {"features", "levels"}:
            raise invalid("categories must be an object with 'features' and 'levels'")
        features = require(doc, "features", list, "categories.")
        levels = require(doc, "levels", list, "categories.")
        if not all(type(m) is int and 0 <= m < n_features for m in features):
            raise invalid(f"categories.features must hold feature indices in [0, {n_features})")
        if len(levels) != len(features):
            raise invalid("categories.levels must hold one entry per categorical feature")
        for m, lv in zip(features, levels):
            if lv is None:
                continue
            if not isinstance(lv, list) or len(lv) > MAX_LEVELS:
                raise invalid(f"categories.levels of feature {m} must be a list of at most "
                              f"{MAX_LEVELS} levels or null")
            if len({_level_kind(v) for v in lv}) > 1 or not all(
                    isinstance(v, (str, int, float)) for v in lv):
                raise invalid(f"categories.levels of feature {m} must all be strings or all "
                              "numbers")
            if len(set(lv)) != len(lv):
                raise invalid(f"categories.levels of feature {m} repeat a level")
        try:
            return cls(features, levels)
        except ValueError as exc:
            raise invalid(f"categories: {exc}") from None


NO_CATEGORIES = Categories()


# -- which columns ----------------------------------------------------------------------
def parse_categorical_feature(spec: CategoricalSpec, names: Sequence[str],
                              auto_columns: Sequence[int]) -> np.ndarray:
    """The sorted int32 indices of the columns ``spec`` names: "auto" (or None) takes
    ``auto_columns`` (the columns of pandas ``category`` and string/object dtype), a
    sequence takes column names and/or indices. ValueError naming an unknown or repeated
    column, TypeError for anything else."""
    if spec is None or (isinstance(spec, str) and spec == "auto"):
        return np.asarray(sorted(auto_columns), dtype=np.int32)
    if isinstance(spec, Categories):
        return spec.features.copy()
    if isinstance(spec, (str, bytes)) or not isinstance(spec, Sequence) and not hasattr(
            spec, "__array__"):
        raise TypeError(f"categorical_feature must be 'auto' or a list of column names or "
                        f"indices, got {spec!r}")
    positions: dict[str, list[int]] = {}
    for m, name in enumerate(names):
        positions.setdefault(name, []).append(m)
    chosen: list[int] = []
    for item in list(spec):
        if isinstance(item, (bool, np.bool_)):
            raise TypeError(f"categorical_feature: {item!r} is not a column name or index")
        if isinstance(item, numbers.Integral):
            m = int(item)
            if not 0 <= m < len(names):
                raise ValueError(f"categorical_feature: column index {m} is out of range "
                                 f"(the data has {len(names)} columns)")
        elif isinstance(item, str):
            if item not in positions:
                raise ValueError(f"categorical_feature: no column named {item!r}")
            if len(positions[item]) > 1:
                raise ValueError(f"categorical_feature: {len(positions[item])} columns are "
                                 f"named {item!r} (indices {positions[item]}): column "
                                 "names must be unique")
            m = positions[item][0]
        else:
            raise TypeError(f"categorical_feature: {item!r} is not a column name or index")
        if m in chosen:
            raise ValueError(f"categorical_feature names column {names[m]!r} twice")
        chosen.append(m)
    return np.asarray(sorted(chosen), dtype=np.int32)


# -- tables -----------------------------------------------------------------------------
def as_pandas(data: Any) -> Any:
    """A polars DataFrame or pyarrow Table as a pandas DataFrame (dictionary columns
    become ``category`` columns); anything else unchanged."""
    module = type(data).__module__.split(".")[0]
    if module in ("polars", "pyarrow") and hasattr(data, "to_pandas") and hasattr(
            data, "columns"):
        return data.to_pandas()
    return data


def is_table(data: Any) -> bool:
    """Whether ``data`` is a pandas DataFrame (columns of their own dtypes)."""
    return hasattr(data, "columns") and hasattr(data, "to_numpy") and hasattr(data, "dtypes")


def _is_categorical_dtype(dtype: Any) -> bool:
    return getattr(dtype, "name", None) == "category"


def auto_columns(data: Any) -> list[int]:
    """The columns "auto" takes: a DataFrame's ``category`` and string columns, and the
    object columns (of a DataFrame or a NumPy object array) that hold a string; all
    the columns of a NumPy string array. An object column of numbers stays numeric."""
    if is_table(data):
        return [m for m, dtype in enumerate(data.dtypes)
                if _is_categorical_dtype(dtype) or getattr(dtype, "kind", "O") in "SU"
                or getattr(dtype, "kind", "O") == "O" and (
                    dtype != np.dtype(object) or _holds_strings(data.iloc[:, m]))]
    if isinstance(data, np.ndarray) and data.ndim == 2:
        if data.dtype.kind in "SU":
            return list(range(data.shape[1]))
        if data.dtype.kind == "O":
            return [m for m in range(data.shape[1]) if _holds_strings(data[:, m])]
    return []


def _holds_strings(column: Any) -> bool:
    return any(isinstance(v, str) for v in column)


def _column(data: Any, m: int) -> Any:
    return data.iloc[:, m] if is_table(data) else data[:, m]


def _plain(level: Any, name: str) -> Any:
    """A level as a plain JSON value (numpy scalars as Python ones); TypeError naming
    the column for a level JSON cannot hold."""
    if isinstance(level, np.generic):
        level = level.item()
    if isinstance(level, bool):
        return int(level)
    if isinstance(level, (str, int, float)) and not (isinstance(level, float)
                                                     and not np.isfinite(level)):
        return level
    raise TypeError(f"categorical column {name!r}: level {level!r} of type "
                    f"{type(level).__name__} is not a string or a finite number (the model "
                    "file keeps the levels): convert the column, e.g. with .astype(\"string\") "
                    "(missing values stay missing), or give its codes (e.g. .cat.codes of a "
                    "pandas.cut column)")


def _fit_levels(column: Any, name: str) -> list[Any] | None:
    """The levels of a training column (None: integer codes, for numeric columns)."""
    dtype = column.dtype
    if _is_categorical_dtype(dtype):
        levels = list(column.cat.categories)
    elif getattr(dtype, "kind", "O") in "OSU":
        distinct = {_plain(v, name) for v in _distinct(column)[1]}
        if len({_level_kind(v) for v in distinct}) > 1:
            raise TypeError(f"categorical column {name!r} mixes strings and numbers: make "
                            "its values one kind (e.g. all strings: .astype(\"string\"); "
                            "pandas.read_csv types a large file's column by chunks of rows "
                            "unless given low_memory=False or a dtype for it)")
        levels = sorted(distinct)
    elif getattr(dtype, "kind", "O") in "biuf":
        return None
    else:
        raise TypeError(f"categorical column {name!r} has dtype {dtype}: categorical "
                        "columns hold strings, pandas categories or integer codes")
    levels = [_plain(v, name) for v in levels]
    if len({_level_kind(v) for v in levels}) > 1:
        raise TypeError(f"categorical column {name!r} mixes strings and numbers among its "
                        "categories")
    if len(levels) > MAX_LEVELS:
        # a frame filtered from a larger one keeps all the categories of its dtype
        codes = np.asarray(column.cat.codes) if _is_categorical_dtype(dtype) else None
        n_unused = 0 if codes is None else len(levels) - np.unique(codes[codes >= 0]).size
        unused = (f" ({n_unused} of them unused: .cat.remove_unused_categories())"
                  if n_unused else "")
        raise ValueError(f"categorical column {name!r} has {len(levels)} levels{unused}; at "
                         f"most {MAX_LEVELS} are supported: group the rare ones into one "
                         "level")
    return levels


def _integer_codes(values: Any, name: str, check: bool) -> np.ndarray:
    """An integer-coded column as float64 codes, negative values missing (NaN); with
    ``check``, ValueError naming the column for codes that are not integers or are
    larger than the limit."""
    try:
        codes = as_numbers(values)
    except (TypeError, ValueError):
        raise TypeError(f"categorical column {name!r} is integer-coded in training but "
                        "holds non-numeric values here") from None
    codes[codes < 0] = np.nan
    if check:
        present = codes[~np.isnan(codes)]
        if np.any(present != np.floor(present)):
            raise ValueError(f"categorical column {name!r} holds codes that are not "
                             "integers (categories are coded 0, 1, 2, ...; negative is "
                             "missing)")
        if present.size and present.max() >= MAX_LEVELS:
            raise ValueError(f"categorical column {name!r} holds code {present.max():.0f}; "
                             f"codes must be below {MAX_LEVELS}")
    return codes


def as_numbers(values: Any) -> np.ndarray:
    """A new float64 array of a 1-D column of numbers, its missing values (None, NaN,
    pandas' NA: an object array of a DataFrame's nullable ``Int64`` column holds it)
    NaN; TypeError or ValueError for values that are not numbers."""
    try:
        return np.array(values, dtype=np.float64)
    except (TypeError, ValueError):
        inverse, uniques = _distinct(values)
        return _spread(inverse, np.array(uniques, dtype=np.float64))


def _spread(inverse: np.ndarray, per_distinct: np.ndarray) -> np.ndarray:
    """float64 ``per_distinct[inverse]`` (the value of each row's distinct value), NaN
    where ``inverse`` is -1 (a missing value; a column of them only has no distinct
    values, e.g. one row to predict)."""
    values = np.full(inverse.shape, np.nan)
    present = inverse >= 0
    values[present] = per_distinct[inverse[present]]
    return values


def encode_column(column: Any, name: str, levels: list[Any] | None, *,
                  check: bool = True) -> np.ndarray:
    """The float64 codes of ``column`` (pandas Series or 1-D array) under ``levels``:
    the position of each value among them, ``len(levels)`` for a level not among them,
    NaN for a missing value; for ``levels`` None (integer codes), the values themselves
    (see :func:`_integer_codes`). TypeError naming the column for values of another
    kind than the levels (numbers for string levels, strings for codes)."""
    if levels is None:
        return _integer_codes(column, name, check)
    # the distinct values are mapped, then each row by its index among them
    inverse, uniques = _distinct(column)
    return _spread(inverse, _positions(uniques, levels, name))


def _distinct(column: Any) -> tuple[np.ndarray, list[Any]]:
    """``(inverse, uniques)`` of a 1-D column: ``column[i] == uniques[inverse[i]]``, and
    ``inverse[i]`` -1 for a missing value (None, NaN, pandas' NA / NaT). A pandas
    ``category`` column's uniques are its categories; otherwise pandas' hash table
    (when pandas is there), on the column as it is (no copy to objects)."""
    if _is_categorical_dtype(getattr(column, "dtype", None)):
        return (np.asarray(column.cat.codes, dtype=np.int64),
                list(column.cat.categories))
    try:
        import pandas
    except ImportError:  # pragma: no cover - pandas comes with any DataFrame
        seen: dict[Any, int] = {}
        values = np.asarray(column, dtype=object).reshape(-1)
        inverse = np.fromiter((-1 if v is None or v != v else seen.setdefault(v, len(seen))
                               for v in values), dtype=np.int64, count=values.size)
        return inverse, list(seen)
    if not hasattr(column, "dtype") or getattr(column, "ndim", 1) != 1:
        column = np.asarray(column, dtype=object).reshape(-1)
    elif column.dtype == object:
        # the array under an object Series (no copy): pandas < 2 would build an Index
        # of its uniques, inferring a numeric dtype from objects (a FutureWarning)
        column = np.asarray(column)
    inverse, uniques = pandas.factorize(column)
    return np.asarray(inverse, dtype=np.int64), list(uniques)


def _positions(uniques: list[Any], levels: list[Any], name: str) -> np.ndarray:
    """float64 position of each of the distinct values ``uniques`` among ``levels``
    (``len(levels)`` if absent); TypeError naming the column for values of another kind
    than the levels."""
    uniques = [_plain(v, name) for v in uniques]
    kinds, expected = {_level_kind(v) for v in uniques}, {_level_kind(v) for v in levels}
    if kinds and expected and kinds != expected:
        raise TypeError(f"categorical column {name!r} has {' and '.join(sorted(expected))} "
                        f"levels in training but holds {' and '.join(sorted(kinds))} values "
                        "here")
    index = {level: code for code, level in enumerate(levels)}
    return np.array([index.get(v, len(levels)) for v in uniques], dtype=np.float64)


def recode(X: np.ndarray, source: Categories, target: Categories,
           names: Sequence[str]) -> np.ndarray:
    """The float64 matrix ``X``, whose categorical columns hold codes of ``source``'s
    levels, with those columns as codes of ``target``'s levels: each level's position
    among them, ``len(levels)`` (the "other" side) for a level ``target`` lacks; NaN stays
    missing. ValueError when the two do not have the same categorical features, each
    with levels or each integer-coded (codes are then not levels to map)."""
    same_kind = [(a is None) == (b is None) for a, b in zip(source.levels, target.levels)]
    if not np.array_equal(source.features, target.features) or not all(same_kind):
        raise ValueError("the categorical features differ (columns, or levels against "
                         "integer codes)")
    out = X.copy()
    for m, levels, to in zip(source.features.tolist(), source.levels, target.levels):
        if levels is None or to is None or levels == to:
            continue
        # code len(levels) (a level source lacks) stays on the other side
        table = np.append(_positions(levels, to, names[m]), len(to))
        present = ~np.isnan(X[:, m])
        out[present, m] = table[np.minimum(X[present, m].astype(np.int64), len(levels))]
    return out


def encode_table(data: Any, names: Sequence[str], categories: Categories, *,
                 check: bool = True) -> np.ndarray:
    """A DataFrame or NumPy object array as the float64 matrix the engine reads: the
    categorical columns of ``categories`` as codes (:func:`encode_column`), the others
    as numbers (TypeError naming a column that is not numeric)."""
    n_rows, n_columns = len(data), len(names)
    X = np.empty((n_rows, n_columns), dtype=np.float64)
    levels = categories.by_feature()
    numeric = [m for m in range(n_columns) if m not in levels]
    if numeric and is_table(data):
        for m in numeric:
            dtype = data.dtypes.iloc[m]
            if getattr(dtype, "kind", "O") not in "biuf" or _is_categorical_dtype(dtype):
                raise _not_numeric(f"column {names[m]!r} has dtype {dtype}", dtype,
                                   categories, names)
        X[:, numeric] = data.iloc[:, numeric].to_numpy(dtype=np.float64, na_value=np.nan)
    for m in numeric if not is_table(data) else ():
        try:
            X[:, m] = as_numbers(data[:, m])
        except (TypeError, ValueError):
            raise _not_numeric(f"column {names[m]!r} (index {m}) holds non-numeric values",
                               data.dtype, categories, names) from None
    for m, lv in levels.items():
        X[:, m] = encode_column(_column(data, m), names[m], lv, check=check)
    return X


def _not_numeric(what: str, dtype: Any, categories: Categories,
                 names: Sequence[str]) -> TypeError:
    """The TypeError of a column that is neither numeric nor categorical."""
    if not (_is_categorical_dtype(dtype) or getattr(dtype, "kind", "O") in "OSU"):
        return TypeError(f"{what}: only numeric, bool and categorical columns are supported")
    chosen = [names[m] for m in categories.features.tolist()]
    return TypeError(f"{what}, but it is not a categorical feature (those are "
                     f"{chosen or 'none'}): name it in categorical_feature when training, "
                     "or encode it as numbers")


def fit_categories(data: Any, names: Sequence[str], spec: CategoricalSpec) -> Categories:
    """The categorical features ``spec`` names in training ``data`` and their levels."""
    features = parse_categorical_feature(spec, names, auto_columns(data))
    levels = [_fit_levels(_column(data, int(m)), names[int(m)]) if _has_dtypes(data)
              else None for m in features]
    return Categories(features, levels)


def _has_dtypes(data: Any) -> bool:
    return is_table(data) or (isinstance(data, np.ndarray) and data.dtype.kind in "OSU")
