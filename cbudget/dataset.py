"""Dataset: validated input data, labels, weights, costs, and quantile-binned features."""
from __future__ import annotations

import copy
import numbers
import warnings
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeAlias, Union

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._core._binning import map_to_bins
from ._core._histogram import SparseBins
from ._core._openmp_helpers import resolve_n_threads
from ._core._types import MAX_ROWS, X_BINNED_DTYPE, X_BINNED_WIDE_DTYPE
from .categories import (
    NO_CATEGORIES,
    CategoricalSpec,
    Categories,
    as_numbers,
    as_pandas,
    auto_columns,
    encode_column,
    encode_table,
    fit_categories,
    is_table,
    recode,
)
from .category_bins import codes_to_bin_values, fit_codes
from .costs import CostGroups, CostModel, FeatureCosts, GroupCosts

if TYPE_CHECKING:  # only for type hints: the model classes import this module
    from scipy.sparse import sparray, spmatrix

    from ._model import Model

__all__ = ["Dataset", "as_float_matrix", "binning_rows", "edges_between",
           "find_bin_edges", "float32_floor", "few_rows_bin_edges"]

# Bin edges are found on at most this many rows (as scikit-learn's binner does).
BINNING_SUBSAMPLE = 200_000


def binning_rows(n_samples: int, weight: np.ndarray | None = None) -> np.ndarray | None:
    """The sorted rows whose values place the bin edges of a training set of
    ``n_samples`` rows (None: all of them): those of positive ``weight`` (a row of weight
    0 has no influence on a model), at most ``BINNING_SUBSAMPLE`` of them drawn at random;
    a Dask training gathers the same ones."""
    candidates = None if weight is None or np.all(weight > 0) else np.flatnonzero(weight > 0)
    n_candidates = n_samples if candidates is None else candidates.size
    if n_candidates <= BINNING_SUBSAMPLE:
        return candidates
    drawn = np.sort(np.random.default_rng(0).choice(n_candidates, BINNING_SUBSAMPLE,
                                                    replace=False))
    return drawn if candidates is None else candidates[drawn]

# What a Dataset is built from: a numpy array (or anything numpy converts to a 2-D array
# of numbers, a pandas DataFrame included) or a scipy.sparse matrix.
MatrixLike: TypeAlias = Union[ArrayLike, "spmatrix", "sparray"]
# What a model predicts on: the same, or a Dataset.
InputData: TypeAlias = Union[MatrixLike, "Dataset"]


def as_float_matrix(data: MatrixLike, what: str = "data"
                    ) -> tuple[np.ndarray, list[str] | None]:
    """Convert numpy / pandas / scipy.sparse input to a C-ordered float32/float64 matrix.

    Returns ``(X, column_names)`` where ``column_names`` is a list of str for a pandas
    DataFrame and None otherwise. Implicit zeros of a sparse matrix are zeros, not
    missing values; NaN marks a missing value.
    """
    names = None
    if hasattr(data, "columns") and hasattr(data, "to_numpy") and hasattr(data, "dtypes"):
        names = [str(c) for c in data.columns]
        for col, dtype in zip(names, data.dtypes):
            kind = getattr(dtype, "kind", "O")
            if kind not in "biuf":
                raise TypeError(f"{what}: column {col!r} has dtype {dtype}; only numeric and "
                                "bool columns are supported here (cbudget.Dataset takes "
                                "categorical columns: categorical_feature)")
        data = data.to_numpy(dtype=np.float64, na_value=np.nan)
    else:
        try:
            import scipy.sparse as sp
        except ImportError:  # pragma: no cover - scipy is a dependency
            sp = None
        if sp is not None and sp.issparse(data):
            data = data.toarray()  # type: ignore[union-attr]  # issparse: it has toarray
    if not isinstance(data, np.ndarray):
        try:
            data = np.asarray(data)
        except Exception as exc:  # noqa: BLE001 - report any conversion failure clearly
            raise TypeError(f"{what}: cannot convert {type(data).__name__} to an array: "
                            f"{exc}") from None
    if data.dtype.kind not in "biuf":
        if data.dtype.kind == "O":
            try:
                data = _object_numbers(data)
            except (TypeError, ValueError):
                column = _first_non_numeric_column(data)
                raise TypeError(f"{what}: column {column} holds non-numeric values (name "
                                "it in categorical_feature to make it categorical)") from None
        else:
            raise TypeError(f"{what}: unsupported dtype {data.dtype}; expected numbers")
    if data.ndim != 2:
        raise ValueError(f"{what} must be 2-D (n_samples, n_features), got {data.ndim}-D "
                         f"with shape {data.shape}")
    if data.shape[0] == 0 or data.shape[1] == 0:
        raise ValueError(f"{what} is empty: shape {data.shape}")
    dtype = data.dtype if data.dtype in (np.float32, np.float64) else np.float64
    return np.ascontiguousarray(data, dtype=dtype), names


def _object_numbers(data: np.ndarray) -> np.ndarray:
    """An object array's numbers as float64, a 2-D one's column by column so that None,
    NaN and pandas' NA are missing values (an object array of a DataFrame's nullable
    ``Int64`` columns holds NA); TypeError or ValueError for other values."""
    if data.ndim != 2 or data.shape[1] == 0:
        return data.astype(np.float64)
    return np.column_stack([as_numbers(data[:, m]) for m in range(data.shape[1])])


def _first_non_numeric_column(data: np.ndarray) -> int:
    """The index of the first column of a 2-D object array that is not all numbers."""
    for m in range(data.shape[1] if data.ndim == 2 else 0):
        try:
            as_numbers(data[:, m])
        except (TypeError, ValueError):
            return m
    return 0


def read_matrix(data: MatrixLike, what: str, categories: Categories, *,
                check: bool, feature_names: Sequence[str] | None = None
                ) -> tuple[np.ndarray, list[str] | None]:
    """``data`` as :func:`as_float_matrix` converts it, with the categorical columns of
    ``categories`` as codes (cbudget.categories): a DataFrame's (or NumPy object array's)
    mapped by level, a numeric array's taken as codes -- with ``check`` (training and
    validation data), checked as integer codes, negative ones missing (NaN). Errors name
    a column by ``feature_names`` when given, else by ``data``'s own column names.
    ``(X, column_names)``."""
    if isinstance(data, np.ndarray) and data.dtype.kind in "biuf" and not (
            check and len(categories)):
        return as_float_matrix(data, what)      # numbers as they are: the common case
    data = as_pandas(data)
    by_dtype = is_table(data) or (isinstance(data, np.ndarray) and data.dtype.kind in "OSU")
    if not by_dtype or not (len(categories) or is_table(data) and _has_levels_dtype(data)):
        X, names = as_float_matrix(data, what)
        if check and len(categories):
            X = X.copy() if np.shares_memory(X, data) else X     # never edit the caller's
            for m in categories.features.tolist():
                X[:, m] = encode_column(X[:, m], _column_name(
                    _labels(feature_names, X.shape[1]) or names, m), None)
        return X, names
    if getattr(data, "ndim", 2) != 2:
        raise ValueError(f"{what} must be 2-D (n_samples, n_features), got {data.ndim}-D")
    if 0 in data.shape:
        raise ValueError(f"{what} is empty: shape {data.shape}")
    names = [str(c) for c in data.columns] if is_table(data) else None
    labels = _labels(feature_names, data.shape[1]) or names
    return encode_table(data, labels or [f"column {m}" for m in range(data.shape[1])],
                        categories, check=check), names


def _labels(feature_names: Sequence[str] | None, n_columns: int) -> list[str] | None:
    """The names the user gave the columns, if as many as there are (a wrong count is
    reported later, with the names)."""
    if feature_names is None or len(feature_names) != n_columns:
        return None
    return [str(n) for n in feature_names]


def _has_levels_dtype(frame: Any) -> bool:
    """Whether a DataFrame has a column that is neither numbers nor bools."""
    return any(getattr(dtype, "kind", "O") not in "biuf" for dtype in frame.dtypes)


def _column_name(names: Sequence[str] | None, m: int) -> str:
    return names[m] if names is not None else f"column {m}"


def prediction_input(X: InputData, feature_names: Sequence[str],
                     categories: Categories = NO_CATEGORIES) -> np.ndarray:
    """``X`` (a Dataset, numpy, pandas or scipy.sparse) as the float matrix a model
    trained on ``feature_names`` with the categorical features ``categories`` predicts
    on (a DataFrame's levels mapped by the model's, a numeric array taken as codes);
    ValueError for a wrong number of features or different feature names, or a Dataset
    whose categories are not the model's."""
    if isinstance(X, Dataset):
        if X.categories != categories:
            raise ValueError("the Dataset's categorical features or levels differ from the "
                             "model's: build it with reference= the training Dataset, or "
                             "predict on the DataFrame itself")
        # (mypy checks X.feature_names with X already the ndarray: a false positive)
        X, names = X.data, X.feature_names  # type: ignore[attr-defined]
    else:
        if len(categories):
            X = as_pandas(X)
        X = in_model_order(X, feature_names)
        if len(categories):
            check_columns(X, feature_names, "X", "the model")     # before mapping levels
        X, names = read_matrix(X, "X", categories, check=False)
    check_columns(X, feature_names, "X", "the model", names)
    return X


def in_model_order(data: Any, feature_names: Sequence[str]) -> Any:
    """A DataFrame whose columns are the model's features in another order, with its
    columns in the model's order (matched by name, as the CLI matches a file's); any
    other data as it is."""
    if not is_table(data):
        return data
    names = [str(c) for c in data.columns]
    if names == list(feature_names) or sorted(names) != sorted(feature_names) \
            or len(set(names)) != len(names):
        return data
    position = {name: j for j, name in enumerate(names)}
    return data.iloc[:, [position[name] for name in feature_names]]


def labelled_data(data: Any, feature_names: Sequence[str]) -> Any:
    """``(X, y)`` or ``(X, y, weight)`` (a 2-D ``X``, as scikit-learn's ``eval_set``
    pairs) as a Dataset, for the methods that score validation data (an array's columns
    named ``feature_names``, the model's); any other data as it is."""
    if (isinstance(data, tuple) and len(data) in (2, 3)
            and getattr(data[0], "ndim", np.ndim(data[0])) == 2 and np.ndim(data[1]) == 1):
        return Dataset(in_model_order(data[0], feature_names), data[1],
                       weight=data[2] if len(data) == 3 else None,
                       feature_names=None if is_table(data[0]) else feature_names)
    return data


def check_columns(data: Any, feature_names: Sequence[str], what: str, owner: str,
                  names: Sequence[str] | None = None) -> None:
    """ValueError when ``data`` (2-D, of a known shape) has another number of columns
    than ``feature_names`` (those of ``owner``: "the model", "the reference Dataset"),
    or columns of other names (``names``, by default a DataFrame's)."""
    shape = getattr(data, "shape", None)
    if not isinstance(shape, tuple) or len(shape) != 2:
        return
    if shape[1] != len(feature_names):
        verb = "was trained on" if owner == "the model" else "has"
        raise ValueError(f"{what} has {shape[1]} features but {owner} {verb} "
                         f"{len(feature_names)}")
    if names is None and is_table(data):
        names = [str(c) for c in data.columns]
    if names is not None and list(names) != list(feature_names):
        differences = [(a, b) for a, b in zip(names, feature_names) if a != b][:3]
        raise ValueError(f"{what}'s feature names differ from {owner}'s (first "
                         f"differences: {differences})")


def warn_unseen_levels(X: np.ndarray, categories: Categories,
                       feature_names: Sequence[str]) -> None:
    """A UserWarning per categorical column of ``X`` (data made with a reference: coded
    with the reference's levels) whose rows hold levels the training data did not have:
    they are coded ``k`` (the number of levels), which every split sends to its "other"
    side, so validation on them measures that side, not what the model learnt of them."""
    for m, levels in zip(categories.features.tolist(), categories.levels):
        if levels is None:          # integer codes: any code is a level
            continue
        unseen = int(np.count_nonzero(X[:, m] == len(levels)))
        if unseen:
            warnings.warn(f"{unseen} of {X.shape[0]} rows of categorical column "
                          f"{feature_names[m]!r} hold levels not in the training data: "
                          f"they take code {len(levels)}, which every categorical split "
                          "sends to its other side", UserWarning, stacklevel=3)


def check_model_matches(model: Model, data: Dataset, what: str, hint: str) -> None:
    """ValueError unless ``model`` was trained on ``data``'s features with its costs
    (``what`` names the model in the message, ``hint`` ends the cost message)."""
    if model.feature_names != data.feature_names:
        raise ValueError(f"{what}'s features differ from dtrain's")
    if model.cost_model.to_dict() != data.cost_model.to_dict():
        raise ValueError(f"{what}'s costs differ from dtrain's: {hint}")
    if model.categories != data.categories:
        raise ValueError(f"{what}'s categorical features or levels differ from dtrain's: "
                         "build dtrain with categorical_feature= the model's categories "
                         "(model.categories: its levels, in their order)")


def query_boundaries_of(X: InputData) -> np.ndarray | None:
    """The query boundaries of ``X`` when it is a Dataset with query groups (the cost
    reports give the mean cost per query then), else None."""
    return X.group_ptr if isinstance(X, Dataset) else None


def check_row_count(data: object, what: str = "data") -> None:
    """ValueError when ``data`` has more rows than training takes (``MAX_ROWS``, 2**30:
    docs/architecture.md, "Limits"). Reads only the shape (or the length), so it costs
    nothing whatever the size of ``data``; data of unknown shape passes (the Dataset
    checks again after converting it)."""
    shape = getattr(data, "shape", None)
    if isinstance(shape, tuple) and shape and isinstance(shape[0], numbers.Integral):
        n_rows = int(shape[0])
    else:
        try:
            n_rows = len(data)  # type: ignore[arg-type]  # anything with a length
        except TypeError:
            return
    if n_rows > MAX_ROWS:
        raise ValueError(f"{what} has {n_rows} rows; cbudget trains on at most {MAX_ROWS} "
                         f"(2**30) rows (row indices and tree node ids are 32-bit): "
                         f"subsample the data")


def _vector(values: ArrayLike | None, n: int, name: str) -> NDArray[np.float64] | None:
    if values is None:
        return None
    if getattr(getattr(values, "dtype", None), "name", None) == "category":
        raise TypeError(f"{name} is a categorical column: {name}s are numbers (classes "
                        "numbered 0..K-1: encode them, e.g. with pandas.factorize)")
    if hasattr(values, "to_numpy"):
        values = values.to_numpy()
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be numeric (classes numbered 0..K-1; a {name} of "
                        "strings or categories must be encoded first, e.g. with "
                        "pandas.factorize)") from None
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.shape[0] != n:
        raise ValueError(f"{name} has {arr.shape[0]} entries but data has {n} rows")
    if not np.all(np.isfinite(arr)):
        bad = np.flatnonzero(~np.isfinite(arr))
        raise ValueError(f"{name} contains NaN or inf (first at row {bad[0]}, "
                         f"{bad.size} in all)")
    return np.ascontiguousarray(arr)


def query_boundaries(group: ArrayLike | None, qid: ArrayLike | None,
                     n_rows: int) -> np.ndarray | None:
    """The row boundaries of the queries (int64, ``n_queries + 1`` entries from 0 to
    ``n_rows``) from query sizes ``group`` or per-row ids ``qid`` (at most one of them;
    None when neither is given). ValueError for sizes that are not positive integers
    summing to ``n_rows``, or ids whose rows are not contiguous."""
    if group is not None and qid is not None:
        raise ValueError("give group (query sizes) or qid (a query id per row), not both")
    if group is not None:
        sizes = np.asarray(group.to_numpy() if hasattr(group, "to_numpy") else group)
        if sizes.ndim != 1 or sizes.size == 0:
            raise ValueError(f"group must be a 1-D array of query sizes, got shape "
                             f"{sizes.shape}")
        if sizes.dtype.kind not in "iuf" or sizes.dtype.kind == "f" and not np.all(
                np.isfinite(sizes) & (sizes == np.floor(sizes))):
            raise ValueError("group must hold integer query sizes")
        if np.any(sizes <= 0):
            raise ValueError(f"group sizes must be positive; query "
                             f"{int(np.flatnonzero(sizes <= 0)[0])} has {sizes[sizes <= 0][0]}")
        sizes = sizes.astype(np.int64)
        if int(sizes.sum()) != n_rows:
            raise ValueError(f"group sizes sum to {int(sizes.sum())} but data has "
                             f"{n_rows} rows")
        return np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    if qid is not None:
        ids = np.asarray(qid.to_numpy() if hasattr(qid, "to_numpy") else qid)
        if ids.ndim == 2 and ids.shape[1] == 1:
            ids = ids[:, 0]
        if ids.ndim != 1 or ids.shape[0] != n_rows:
            raise ValueError(f"qid must hold one id per row ({n_rows}), got shape "
                             f"{ids.shape}")
        if ids.dtype.kind == "f" and not np.all(np.isfinite(ids)):
            raise ValueError("qid contains NaN or inf")
        starts = np.flatnonzero(np.concatenate(([True], ids[1:] != ids[:-1])))
        run_ids = ids[starts]
        if np.unique(run_ids).size != run_ids.size:
            values, counts = np.unique(run_ids, return_counts=True)
            split = values[counts > 1].tolist()[0]
            raise ValueError(f"the rows of query {split!r} are not contiguous: sort the "
                             "rows by qid (or keep each query's rows together)")
        return np.append(starts, n_rows).astype(np.int64)
    return None


def float32_floor(values: ArrayLike) -> np.ndarray:
    """The largest float32 at most each float64 value (``-inf`` below float32's range,
    its largest finite value above it): XGBoost's ``float32(x) < c`` sends ``x`` left
    exactly when ``float32(x) <= float32_floor(T)`` for ``c`` the float32 after it."""
    x = np.asarray(values, dtype=np.float64)
    with np.errstate(over="ignore"):
        rounded = x.astype(np.float32)
        return np.where(rounded.astype(np.float64) > x,
                        np.nextafter(rounded, np.float32(-np.inf)), rounded)


def _midpoints(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Float64 midpoints in ``[lower, upper)``: halves first (no overflow near float64's
    limits); adjacent doubles, whose midpoint rounds up, get the lower value."""
    middle = lower * 0.5 + upper * 0.5
    return np.where(middle >= upper, lower, middle)


def edges_between(lower: np.ndarray, upper: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The edge placed between adjacent distinct training values ``lower < upper``
    (float64 arrays), and whether XGBoost's float32 comparison can tell them apart.

    Each edge ``T`` has ``lower <= T < upper``, so ``x <= T`` bins the training values
    as ``x <= lower`` would; ``T`` equals ``lower`` only for adjacent doubles. Where the
    two are float32-separable (``float32(lower) < float32(upper)``, with ``lower`` not
    rounding to float32's largest value or beyond), ``float32(x) <= float32_floor(T)``
    iff ``x <= T`` for both, so the exported condition (the float32 after
    ``float32_floor(T)``, finite) sends them where cbudget does.

    ``T`` is a float32 above ``lower`` and below ``float32(upper)`` when one exists: the
    smallest at or above the midpoint, moved into that range. Otherwise, for separable
    values, the float64 midpoint of ``lower`` and ``min(upper, float32(upper))``; for
    inseparable ones (False in the second array) the float64 midpoint."""
    top = np.float32(np.finfo(np.float32).max)
    with np.errstate(over="ignore"):
        # float32 rounding, +inf kept at float32's end: XGBoost cannot write an infinite
        # split condition, so nothing above float32's largest value is told apart from it
        key_lower = np.minimum(lower.astype(np.float32), top)
        key_upper = np.minimum(upper.astype(np.float32), top)
        separable = key_lower < key_upper
        # float32 candidates: above lower (never a training value) and below
        # float32(upper), so that upper's rounding stays right of T
        first = np.nextafter(float32_floor(lower), np.float32(np.inf))
        last = np.nextafter(key_upper, np.float32(-np.inf))
    # the float32 at or above the midpoint: a value at the midpoint itself (an unseen one
    # on the training values' grid, such as 0.101 between 0.1 and 0.102) goes left in
    # both, where the nearest float32 sends it right in cbudget and left in XGBoost
    # whenever its float32 rounding goes down
    above_middle = -float32_floor(-_midpoints(lower, upper))
    in_float32 = first <= last
    float32_edge = np.minimum(np.maximum(above_middle, first), last)   # where in_float32
    # no float32 candidate, yet separable: lower rounds down and upper to the float32
    # just above it; any T in [lower, float32(upper)) has lower's float32 floor
    below_upper = _midpoints(lower, np.where(separable, np.minimum(upper, key_upper), upper))
    edges = np.where(in_float32, float32_edge.astype(np.float64), below_upper)
    return edges + 0.0, separable       # + 0.0: no edge of -0.0


def _distinct_steps(values: np.ndarray) -> np.ndarray:
    """Where ``values``, sorted along the last axis (as ``np.sort`` sorts: -inf, the
    finite values, +inf, NaN), step from a finite value to a larger finite one: a bool
    array of ``values``' shape less one on the last axis (-0.0 equals 0.0, as in
    ``np.unique``)."""
    below, above = values[..., :-1], values[..., 1:]
    return (below != above) & np.isfinite(below) & np.isfinite(above)


def _edges_at_steps(values: np.ndarray, step: np.ndarray) -> np.ndarray:
    """The edge between the two values of each step of ``values`` (:func:`_distinct_steps`)
    in the order of ``values``' rows, then along them: each distinct value in its own bin."""
    return edges_between(values[..., :-1][step], values[..., 1:][step])[0]


# The largest max_bin (as LightGBM's): NaN's bin, max_bin, must fit uint16 bins.
MAX_BIN = 65535


def binned_dtype(missing_bin: int) -> np.dtype:
    """The dtype of binned data whose largest bin is ``missing_bin``: uint8 up to 255
    (the fast, compact case), else uint16 (at most 65535)."""
    if not 0 <= missing_bin <= MAX_BIN:
        raise ValueError(f"missing_bin must be in [0, {MAX_BIN}], got {missing_bin}")
    return np.dtype(X_BINNED_DTYPE if missing_bin <= 255 else X_BINNED_WIDE_DTYPE)


def find_bin_edges(column: np.ndarray, max_bin: int) -> np.ndarray:
    """Upper bin edges of one feature: at most ``max_bin - 1`` strictly increasing
    thresholds, so at most ``max_bin`` value bins. Every edge lies between two adjacent
    distinct training values, on neither (:func:`edges_between`), so that a training
    value ``x`` and its float32 rounding fall on the same side of every edge unless
    float32 cannot tell ``x`` from its neighbour. With few distinct values each gets its own
    bin; otherwise the edges follow quantiles (midpoint rule): each goes right above the
    distinct value at or below the quantile. Non-finite values are ignored here (NaN has
    its own bin; +-inf fall in the outer bins)."""
    values = np.sort(column[np.isfinite(column)].astype(np.float64, copy=False))
    if values.size == 0:
        return np.zeros(0)
    step = _distinct_steps(values)
    if np.count_nonzero(step) < max_bin:      # at most max_bin distinct values
        return _edges_at_steps(values, step)
    # np.percentile(values, q, method="midpoint") on the sorted values lies in [lower,
    # upper] of adjacent sorted values; its edge goes above lower, where it bins the
    # training values as the quantile itself would (x <= quantile)
    positions = np.linspace(0, 100, max_bin + 1)[1:-1] / 100 * (values.size - 1)
    lower = values[np.floor(positions).astype(np.intp)]
    distinct = values[np.concatenate(([True], step))]
    gaps = np.unique(np.searchsorted(distinct, lower))
    gaps = gaps[gaps < distinct.size - 1]   # above the largest value: no edge
    return edges_between(distinct[gaps], distinct[gaps + 1])[0]


# The few-rows rule works on blocks of this many values at most (512 KB of float64): its
# temporaries (edges_between's) are about ten times that, per thread; larger blocks are
# no faster (2^14 to 2^18 values: the same time to 5%).
_BLOCK_VALUES = 1 << 16


def few_rows_bin_edges(block: np.ndarray, max_bin: int) -> list[np.ndarray]:
    """:func:`find_bin_edges` of each column of ``block`` (float32/float64, shape
    ``(n_rows, n_features)``), which has at most ``max_bin`` rows: each distinct value
    in its own bin. The columns are sorted together and all their adjacent distinct
    values go through one :func:`edges_between` call (on 2 rows, a call per column cost
    17-47 us against about 0.3 us here). The edges of column ``f`` are a view of one
    array shared by the block."""
    n_rows, n_features = block.shape
    if n_rows > max_bin:
        raise ValueError(f"few_rows_bin_edges takes at most max_bin ({max_bin}) rows, got "
                         f"{n_rows}: use find_bin_edges per column")
    found: list[np.ndarray] = []
    width = max(1, _BLOCK_VALUES // max(n_rows, 1))
    for start in range(0, n_features, width):
        # a row per feature: its pairs come out feature after feature
        values = np.sort(np.ascontiguousarray(block[:, start:start + width].T,
                                              dtype=np.float64), axis=1)
        step = _distinct_steps(values)
        edges = _edges_at_steps(values, step)
        ends = np.cumsum(step.sum(axis=1)).tolist()
        found.extend(edges[a:b] for a, b in zip([0] + ends[:-1], ends))
    return found


def flatten_edges(bin_edges: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The features' edges back to back (float64) and the int64 offsets of each
    feature's (see :meth:`Dataset.flat_bin_edges`)."""
    indptr = np.zeros(len(bin_edges) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, bin_edges), dtype=np.int64, count=len(bin_edges)),
              out=indptr[1:])
    edges = np.concatenate(bin_edges) if indptr[-1] else np.zeros(0)
    return np.ascontiguousarray(edges, dtype=np.float64), indptr


class Dataset:
    """Training or validation data for :func:`cbudget.train`.

    Parameters
    ----------
    data : array-like of shape (n_samples, n_features)
        numpy (float32/float64, C or F order; ints and bools are converted), a pandas
        DataFrame (column names become feature names) or a scipy.sparse matrix. NaN is a
        missing value; implicit zeros of sparse input are zeros.
    label : array-like of shape (n_samples,), optional
        Finite values; integer classes 0..K-1 for classification.
    weight : array-like of shape (n_samples,), optional
        Non-negative, finite, not all zero. A row of weight 0 places no bin edge and is
        no training row (the model is the one trained without it).
    feature_names : list of str, optional
        Default: DataFrame columns, else ``f0, f1, ...``.
    feature_costs : array-like of shape (n_features,) or dict {name: cost}, optional
        Per-input acquisition cost of each feature (docs/architecture.md, "Cost model").
        A dict names every feature (ValueError listing the ones it misses), or gives
        ``default_cost`` for the others. None: every feature is free.
    cost_groups : dict {group name: [features]} or list of lists, optional
        Features that share one acquisition, paid ``group_costs[g]`` once per input.
    group_costs : array-like of shape (n_groups,) or dict {group name: cost}, optional
    coupled_costs : array-like of shape (n_features,) or dict, optional
        Once-per-model cost of using a feature at all.
    split_cost, tree_cost : float, default 0
        Cost of evaluating one split node / one tree for one input.
    default_cost : float, optional
        The cost of the features a ``feature_costs`` dict does not name.
    max_bin : int, default 255
        Maximum number of value bins per numeric feature (2..65535, as LightGBM's);
        NaN gets one more bin. A categorical feature may get more (its most frequent
        levels up to 99% of its rows: :func:`cbudget.category_bins.fit_codes`). The
        bins are stored in uint8 while every feature has at most 256 bins (NaN's
        included), else in uint16: twice the memory, and histograms of
        ``missing_bin + 1`` bins for every feature.
    reference : Dataset, optional
        Share this training Dataset's bin edges, feature names and costs (for
        validation data). Costs cannot be given together with ``reference``.
    categorical_feature : "auto" or list of str or int, default "auto"
        The categorical columns (docs/architecture.md, "Categorical features"): "auto"
        takes a DataFrame's pandas ``category`` and string columns and the object columns
        (of a DataFrame or NumPy array) that hold strings; a list names them (names or
        indices), where a numeric column holds integer codes 0, 1, 2, ... (negative:
        missing). Their levels (:attr:`categories`) go into the model, which maps later
        data by level; a level not seen here gets code ``k`` (the number of levels),
        which every categorical split sends to its "other" side. At most
        ``cbudget.categories.MAX_LEVELS`` levels (65,536) per column. With
        ``reference``, the reference's are taken. A :class:`cbudget.categories.Categories`
        (another Dataset's or a model's :attr:`categories`): those levels, ``data``'s
        levels mapped to their codes (a DataFrame), or its codes under them (e.g. rows of
        that Dataset's ``data``).
    group : array-like of int, optional
        Learning to rank: the number of rows of each query, in row order (as LightGBM
        and XGBoost take them; positive, summing to the number of rows). Each query's
        rows are contiguous.
    qid : array-like, optional
        Learning to rank, instead of ``group``: a query id per row; the rows of a query
        must be contiguous (sorted by id, as XGBoost asks, or grouped another way).

    Notes
    -----
    At most ``2**30`` (1,073,741,824) rows: training indexes rows and tree nodes with
    32-bit integers (docs/architecture.md, "Limits"). More rows raise a ValueError before
    anything is copied. Prediction has no such limit.

    Attributes
    ----------
    binned : ndarray of uint8 (uint16 when ``missing_bin > 255``), shape (n_samples,
        n_features), Fortran order
    bin_edges : list of ndarray
        Upper edges per feature; a value ``x`` falls in bin ``#(edges < x)``.
    n_value_bins : ndarray of uint32, shape (n_features,)
    missing_bin : int
        The bin index of NaN: the largest of ``max_bin`` and every feature's number of
        value bins (at most 65535).
    categorical_bin_codes : dict {column: ndarray of int64}
        Per categorical column, the code of each of its bins but the last ("other": the
        codes without a bin of their own).
    cost_model : cbudget.CostModel
    group_ptr : ndarray of int64, shape (n_queries + 1,), or None
        With ``group`` or ``qid``: query ``q`` holds rows ``group_ptr[q]:group_ptr[q+1]``.
    categorical_features : ndarray of int32
        Sorted indices of the categorical features (empty when none).
    categories : cbudget.categories.Categories
        The categorical features and the levels of each (code ``c`` is level ``c``).
    """

    feature_names: list[str]
    max_bin: int
    missing_bin: int
    bin_edges: list[np.ndarray]
    categorical_bin_codes: dict[int, np.ndarray]
    cost_model: CostModel
    categories: Categories

    def __init__(self, data: MatrixLike, label: ArrayLike | None = None, *,
                 weight: ArrayLike | None = None, feature_names: Sequence[str] | None = None,
                 feature_costs: FeatureCosts | None = None,
                 cost_groups: CostGroups | None = None,
                 group_costs: GroupCosts | None = None,
                 coupled_costs: FeatureCosts | None = None,
                 split_cost: float = 0.0, tree_cost: float = 0.0,
                 default_cost: float | None = None, max_bin: int = 255,
                 reference: Dataset | None = None, group: ArrayLike | None = None,
                 qid: ArrayLike | None = None,
                 categorical_feature: CategoricalSpec = "auto") -> None:
        check_row_count(data)       # before any conversion copies the data
        data = as_pandas(data)
        if reference is not None:
            if not isinstance(reference, Dataset):
                raise TypeError("reference must be a cbudget.Dataset")
            if not (isinstance(categorical_feature, str) and categorical_feature == "auto"):
                raise ValueError("categorical_feature comes from the reference Dataset; do "
                                 "not pass it with reference")
            self.categories = reference.categories
            check_columns(data, reference.feature_names, "data", "the reference Dataset",
                          None if feature_names is None else list(feature_names))
        else:
            self.categories = self._fit_categories(data, feature_names, categorical_feature)
        X, column_names = read_matrix(data, "data", self.categories, check=True,
                                      feature_names=feature_names)
        if reference is not None:
            warn_unseen_levels(X, self.categories, reference.feature_names)
        check_row_count(X)
        n_samples, n_features = X.shape
        self.data = X
        self.label = _vector(label, n_samples, "label")
        self.weight = _vector(weight, n_samples, "weight")
        if self.weight is not None:
            if np.any(self.weight < 0):
                raise ValueError("weight must be >= 0")
            if not self.weight.sum() > 0:
                raise ValueError("weight sums to 0: all weights are zero")
        self.group_ptr = query_boundaries(group, qid, n_samples)

        if reference is not None:
            given = {k: v for k, v in dict(
                feature_costs=feature_costs, cost_groups=cost_groups, group_costs=group_costs,
                coupled_costs=coupled_costs).items() if v is not None}
            if given or split_cost or tree_cost or default_cost is not None:
                raise ValueError("costs come from the reference Dataset; do not pass "
                                 f"{sorted(given) or ['split_cost/tree_cost']} with reference")
            check_columns(X, reference.feature_names, "data", "the reference Dataset",
                          feature_names if feature_names is not None else column_names)
            self.feature_names = list(reference.feature_names)
            self.categorical_bin_codes = reference.categorical_bin_codes
            self.max_bin = reference.max_bin
            self.missing_bin = reference.missing_bin
            self.bin_edges = reference.bin_edges
            self._flat_edges = reference.flat_bin_edges()
            self.cost_model = reference.cost_model
        else:
            if (isinstance(max_bin, bool) or not isinstance(max_bin, numbers.Integral)
                    or not 2 <= max_bin <= MAX_BIN):
                raise ValueError(f"max_bin must be an integer in [2, {MAX_BIN}], got "
                                 f"{max_bin!r}")
            self.max_bin = int(max_bin)
            names = feature_names if feature_names is not None else column_names
            if names is None:
                names = [f"f{i}" for i in range(n_features)]
            names = [str(n) for n in names]
            if len(names) != n_features:
                raise ValueError(f"feature_names has {len(names)} names for "
                                 f"{n_features} features")
            if len(set(names)) != len(names):
                raise ValueError("feature_names must be unique")
            self.feature_names = names
            self.cost_model = CostModel.from_user(
                names, feature_costs=feature_costs, cost_groups=cost_groups,
                group_costs=group_costs, coupled_costs=coupled_costs,
                split_cost=split_cost, tree_cost=tree_cost, default_cost=default_cost)
            self.bin_edges = self._fit_bin_edges(X)
            self.categorical_bin_codes = {}
            rows = binning_rows(n_samples, self.weight)  # the rows that place bin edges
            for f in self.categorical_features.tolist():
                column = X[:, f] if rows is None else X[rows, f]
                kept = fit_codes(column, self.max_bin)    # codes read_matrix checked
                self.categorical_bin_codes[f] = kept
                # bin b of value b: bins 0 .. len(kept) - 1, then "other"
                self.bin_edges[f] = np.arange(kept.size) + 0.5
            self._flat_edges = flatten_edges(self.bin_edges)
        self.n_value_bins = (np.diff(self._flat_edges[1]) + 1).astype(np.uint32)
        if reference is None:
            # NaN's bin above every value bin: a categorical feature may have more than
            # max_bin (fit_codes keeps at most MAX_BIN - 1 codes + "other")
            self.missing_bin = max(self.max_bin, int(self.n_value_bins.max(initial=0)))
        self.binned = self.bin_data(X)
        self._sparse_bins: SparseBins | None = None

    @staticmethod
    def _fit_categories(data: Any, feature_names: Sequence[str] | None,
                        categorical_feature: CategoricalSpec) -> Categories:
        """The categorical features ``categorical_feature`` names in training ``data``
        (with the names it will have), and their levels."""
        if isinstance(categorical_feature, Categories):
            return categorical_feature
        if isinstance(categorical_feature, str) and categorical_feature == "auto" \
                and not auto_columns(data):
            return NO_CATEGORIES        # numbers only: nothing to look at
        if feature_names is not None:
            names = [str(n) for n in feature_names]
        elif is_table(data):
            names = [str(c) for c in data.columns]
        else:
            shape = getattr(data, "shape", None) or np.shape(data)
            names = [f"f{m}" for m in range(shape[1] if len(shape) == 2 else 0)]
        return fit_categories(data, names, categorical_feature)

    @property
    def categorical_features(self) -> np.ndarray:
        """Sorted int32 indices of the categorical features (empty when none)."""
        return self.categories.features

    def without_rows(self) -> Dataset:
        """A copy with this Dataset's bin edges, feature names and costs but no rows: a
        light ``reference`` to send to where the rows are (the workers of a Dask
        training)."""
        light = copy.copy(self)
        light.data, light.binned = self.data[:0], self.binned[:0]
        light.label = light.weight = light.group_ptr = None
        light._sparse_bins = None
        return light

    def with_binned_rows(self, binned: np.ndarray, label: ArrayLike | None = None,
                         weight: ArrayLike | None = None) -> Dataset:
        """A Dataset of rows already binned with this one's edges (:meth:`bin_data`),
        with their labels and weights but not their float values (:attr:`data` has no
        rows): what a Dask worker trains on, whose float rows Dask's partitions hold."""
        shape = (binned.shape[0] if binned.ndim == 2 else -1, self.num_feature())
        if binned.shape != shape or binned.dtype != binned_dtype(self.missing_bin):
            raise ValueError(f"binned must be a {binned_dtype(self.missing_bin)} array of "
                             f"{self.num_feature()} columns, as bin_data returns; got "
                             f"{binned.dtype} {binned.shape}")
        rows = self.without_rows()
        rows.binned = np.asfortranarray(binned)
        rows.label = _vector(label, binned.shape[0], "label")
        rows.weight = _vector(weight, binned.shape[0], "weight")
        return rows

    def coded_as(self, reference: Dataset) -> Dataset:
        """This data as if built with ``reference=reference``: its categorical columns
        coded with the reference's levels (a level the reference lacks on the "other"
        side, with the same warning), its bins the reference's. What training does with
        evaluation data built without a reference, as LightGBM's does. ValueError when
        the categorical features differ (:func:`cbudget.categories.recode`)."""
        X = recode(self.data, self.categories, reference.categories, self.feature_names)
        return Dataset(X, self.label, weight=self.weight, reference=reference,
                       group=None if self.group_ptr is None else np.diff(self.group_ptr))

    def subset(self, rows: np.ndarray) -> Dataset:
        """The Dataset of the given rows (sorted indices; a query keeps its rows that are
        given, a query with none is dropped), with this one's bin edges, feature names
        and costs."""
        rows = np.asarray(rows, dtype=np.intp)
        part = copy.copy(self)
        part.data, part.binned = self.data[rows], np.asfortranarray(self.binned[rows])
        part.label = None if self.label is None else self.label[rows]
        part.weight = None if self.weight is None else self.weight[rows]
        if self.group_ptr is not None:
            query = np.repeat(np.arange(self.group_ptr.shape[0] - 1), np.diff(self.group_ptr))
            sizes = np.bincount(query[rows], minlength=self.group_ptr.shape[0] - 1)
            part.group_ptr = np.concatenate(([0], np.cumsum(sizes[sizes > 0]))).astype(np.int64)
        part._sparse_bins = None
        return part

    def sparse_bins(self) -> SparseBins:
        """The row-wise layout of the mostly-constant features of :attr:`binned`
        (``cbudget._core._histogram.SparseBins``), made on first use and kept: every
        training on this Dataset builds their histograms from it."""
        if self._sparse_bins is None:
            self._sparse_bins = SparseBins(self.binned, self.n_value_bins, self.missing_bin)
        return self._sparse_bins

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_sparse_bins"] = None    # a cache (not picklable): made again on first use
        return state

    def _fit_bin_edges(self, X: np.ndarray) -> list[np.ndarray]:
        rows = binning_rows(X.shape[0], self.weight)
        if rows is not None:
            X = X[rows]
        # numpy's sort releases the GIL: the features' edges are found in parallel, a
        # block of features per task (a task per feature costs more than the feature
        # itself when there are few rows, and keeps a future per feature alive: 2 KB)
        n_features, n_threads = X.shape[1], resolve_n_threads(None)
        n_blocks = min(n_features, 4 * n_threads)
        bounds = np.linspace(0, n_features, n_blocks + 1).astype(np.intp)

        def block(b: int) -> list[np.ndarray]:
            columns = X[:, bounds[b]:bounds[b + 1]]
            if X.shape[0] <= self.max_bin:     # one bin per distinct value: vectorised
                return few_rows_bin_edges(columns, self.max_bin)
            return [find_bin_edges(columns[:, f], self.max_bin)
                    for f in range(columns.shape[1])]

        with ThreadPoolExecutor(max_workers=n_threads) as pool:
            return [edges for part in pool.map(block, range(n_blocks)) for edges in part]

    def flat_bin_edges(self) -> tuple[np.ndarray, np.ndarray]:
        """All features' edges back to back, and the int64 offsets of each feature's.

        Returns
        -------
        edges : ndarray of float64, shape (total number of edges,)
        indptr : ndarray of int64, shape (n_features + 1,)
            Feature ``f``'s edges are ``edges[indptr[f]:indptr[f + 1]]``.
        """
        return self._flat_edges

    def bin_data(self, X: np.ndarray) -> np.ndarray:
        """Bins (Fortran order; uint8, or uint16 when ``missing_bin > 255``) of a float
        matrix under this Dataset's edges.

        Parameters
        ----------
        X : ndarray of float32 or float64, shape (n_samples, n_features)
            As :attr:`data` holds it: categorical columns as checked codes.

        Returns
        -------
        ndarray of uint8 or uint16, shape (n_samples, n_features), Fortran order
            NaN falls in ``missing_bin``.
        """
        edges, indptr = self.flat_bin_edges()
        dtype = binned_dtype(self.missing_bin)
        binned = np.empty(X.shape, dtype=dtype, order="F")
        map_to_bins(X, edges, indptr, self.missing_bin, binned, resolve_n_threads(None))
        for f, kept in self.categorical_bin_codes.items():
            values = codes_to_bin_values(X[:, f], kept)
            binned[:, f] = np.where(np.isnan(values), self.missing_bin,
                                    np.nan_to_num(values)).astype(dtype)
        return binned

    def num_data(self) -> int:
        """Number of rows."""
        return self.binned.shape[0]      # data has none in with_binned_rows' Datasets

    def num_feature(self) -> int:
        """Number of features."""
        return self.data.shape[1]

    def get_label(self) -> np.ndarray | None:
        """The labels.

        Returns
        -------
        ndarray of float64, shape (n_samples,), or None
            None when the Dataset was built without labels.
        """
        return self.label

    def required_label(self) -> NDArray[np.float64]:
        """The labels, which training reads: ValueError when the Dataset was built
        without them (:meth:`get_label` returns None then).

        Returns
        -------
        ndarray of float64, shape (n_samples,)
        """
        if self.label is None:
            raise ValueError("the Dataset has no label: build the training data with "
                             "Dataset(data, label)")
        return self.label

    def get_weight(self) -> np.ndarray | None:
        """The sample weights.

        Returns
        -------
        ndarray of float64, shape (n_samples,), or None
            None when the Dataset was built without weights (every input counts 1).
        """
        return self.weight

    def get_group(self) -> np.ndarray | None:
        """The query sizes (learning to rank).

        Returns
        -------
        ndarray of int64, shape (n_queries,), or None
            None when the Dataset was built without ``group`` or ``qid``.
        """
        return None if self.group_ptr is None else np.diff(self.group_ptr)

    def num_queries(self) -> int | None:
        """The number of queries; None without ``group`` or ``qid``."""
        return None if self.group_ptr is None else self.group_ptr.shape[0] - 1

    def __repr__(self) -> str:
        queries = "" if self.group_ptr is None else f", {self.num_queries()} queries"
        return (f"<cbudget.Dataset {self.num_data()} x {self.num_feature()}, "
                f"max_bin={self.max_bin}{queries}>")


def zero_one_labels(data: Dataset) -> Dataset:
    """``data`` with labels -1/+1 as 0/1 (a shallow copy; 0/1 labels unchanged): the
    binary labels gated models train and are scored on."""
    y = data.label
    if y is None or not np.any(y == -1) or not np.all((y == -1) | (y == 1)):
        return data
    data = copy.copy(data)
    data.label = (y > 0).astype(np.float64)
    return data
