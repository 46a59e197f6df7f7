"""A decoder of Universal Binary JSON (UBJSON, draft 12) as XGBoost writes its ``.ubj``
model files, so that :func:`cbudget.interop.from_xgboost.from_xgboost` reads them without
XGBoost installed, and an encoder (:func:`encode`) for the exporter's ``.ubj`` files.

It covers objects and arrays, counted (``#``) and typed (``$``) containers, the integer
types ``i U I l L``, ``d`` (float32) and ``D`` (float64), strings ``S``, chars ``C``,
``T F Z`` and the no-op ``N``. Typed numeric arrays become numpy arrays (read with
``frombuffer``: XGBoost's node arrays hold most of a file); everything else becomes
Python dicts, lists, str, int, float, bool and None.

The input is treated as hostile: anything malformed or truncated, a count larger than
the bytes left, nesting deeper than :data:`MAX_DEPTH` or trailing bytes raise
ValueError. The decoder keeps its own stack, so deep nesting never reaches Python's
recursion limit.
"""
from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["decode", "encode", "MAX_DEPTH"]

# XGBoost's models nest 7 levels; anything far deeper is not a model
MAX_DEPTH = 64

# marker -> big-endian numpy dtype of the fixed-size numbers
INTEGER_TYPES = {b"i": ">i1", b"U": ">u1", b"I": ">i2", b"l": ">i4", b"L": ">i8"}
NUMBER_TYPES = {**INTEGER_TYPES, b"d": ">f4", b"D": ">f8"}
CONSTANTS = {b"T": True, b"F": False, b"Z": None}


class _Container:
    """An array or object being filled: its values so far, how many it holds (None
    until its end marker when not counted), the type of its values (None: each value
    has its own marker) and, for an object, the key of the value being read."""

    def __init__(self, is_object: bool, count: int | None, value_type: bytes | None):
        self.is_object = is_object
        self.value: dict[str, Any] | list[Any] = {} if is_object else []
        self.count = count
        self.value_type = value_type
        self.n_read = 0
        self.key = ""

    def add(self, key: str, value: Any) -> None:
        if isinstance(self.value, dict):
            self.value[key] = value
        else:
            self.value.append(value)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def remaining(self) -> int:
        return len(self.data) - self.pos

    def take(self, n: int) -> bytes:
        if n > self.remaining():
            raise ValueError(f"UBJSON: truncated at byte {self.pos} ({n} bytes needed, "
                             f"{self.remaining()} left)")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def marker(self) -> bytes:
        """The next type marker, no-ops skipped."""
        m = self.take(1)
        while m == b"N":
            m = self.take(1)
        return m

    def number(self, marker: bytes) -> int | float:
        dtype = np.dtype(NUMBER_TYPES[marker])
        value = np.frombuffer(self.take(dtype.itemsize), dtype=dtype)[0]
        return int(value) if marker in INTEGER_TYPES else float(value)

    def length(self, marker: bytes | None = None) -> int:
        """A length or count: an integer of its own marker, >= 0 and at most the bytes
        left (every counted item takes at least one byte)."""
        marker = self.marker() if marker is None else marker
        if marker not in INTEGER_TYPES:
            raise ValueError(f"UBJSON: a length must be an integer, not {marker!r} "
                             f"(byte {self.pos - 1})")
        n = int(self.number(marker))
        if n < 0 or n > self.remaining():
            raise ValueError(f"UBJSON: length {n} at byte {self.pos} is negative or larger "
                             f"than the {self.remaining()} bytes left")
        return n

    def string(self) -> str:
        raw = self.take(self.length())
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError(f"UBJSON: a string before byte {self.pos} is not UTF-8") from None

    def value_or_container(self, marker: bytes) -> Any:
        """The value that starts with ``marker``, or a new :class:`_Container` for one
        that is an array or object not read in one go."""
        if marker in NUMBER_TYPES:
            return self.number(marker)
        if marker in CONSTANTS:
            return CONSTANTS[marker]
        if marker == b"S":
            return self.string()
        if marker == b"C":
            return self.take(1).decode("latin-1")
        if marker in (b"[", b"{"):
            return self.container(marker == b"{")
        raise ValueError(f"UBJSON: unknown or unsupported marker {marker!r} at byte "
                         f"{self.pos - 1}")

    def container(self, is_object: bool) -> Any:
        """After ``[`` or ``{``: its optional ``$`` type and ``#`` count. A typed numeric
        array is read at once (a numpy array); otherwise a :class:`_Container`."""
        value_type = None
        count = None
        following = self.take(1)
        if following == b"$":
            value_type = self.take(1)
            if value_type in CONSTANTS or value_type == b"N":
                # values of no bytes: a count of them would be unbounded by the file
                raise ValueError(f"UBJSON: containers typed {value_type!r} are not supported")
            if self.take(1) != b"#":
                raise ValueError(f"UBJSON: a typed container needs a count (byte {self.pos})")
            count = self.length()
        elif following == b"#":
            count = self.length()
        else:
            self.pos -= 1          # the first value's (or the key's) marker, or the end
        if not is_object and value_type in NUMBER_TYPES and count is not None:
            dtype = np.dtype(NUMBER_TYPES[value_type])
            raw = self.take(count * dtype.itemsize)
            return np.frombuffer(raw, dtype=dtype).astype(dtype.newbyteorder("="))
        return _Container(is_object, count, value_type)


def decode(data: bytes | bytearray | memoryview) -> Any:
    """The value that the UBJSON document ``data`` holds (ValueError if it is not
    exactly one well-formed value, optionally followed by no-ops)."""
    reader = _Reader(bytes(data))
    top = reader.value_or_container(reader.marker())
    stack: list[_Container] = []
    result = top
    if isinstance(top, _Container):
        stack.append(top)
    while stack:
        current = stack[-1]
        if current.count is None:      # a container closed by its end marker
            finished = reader.marker() == (b"}" if current.is_object else b"]")
            if not finished:
                reader.pos -= 1
        else:                          # a counted container
            finished = current.n_read == current.count
        if finished:
            stack.pop()
            if stack:
                stack[-1].add(current.key, current.value)
            else:
                result = current
            continue
        current.n_read += 1
        key = reader.string() if current.is_object else ""
        marker = current.value_type or reader.marker()
        value = reader.value_or_container(marker)
        if isinstance(value, _Container):
            if len(stack) >= MAX_DEPTH:
                raise ValueError(f"UBJSON: nested deeper than {MAX_DEPTH} levels")
            value.key = key
            stack.append(value)
        else:
            current.add(key, value)
    while reader.remaining() and reader.data[reader.pos:reader.pos + 1] == b"N":
        reader.pos += 1
    if reader.remaining():
        raise ValueError(f"UBJSON: {reader.remaining()} bytes after the value")
    return result.value if isinstance(result, _Container) else result


# numpy dtype -> marker of the typed arrays :func:`encode` writes. XGBoost writes its
# node arrays as ``d`` (float32), ``l`` (int32), ``L`` (int64) and ``U`` (uint8) typed
# arrays, and its reader takes only those four (and a tree's arrays all typed or none):
# int8, int16 and float64 arrays are written for decode, not for XGBoost.
TYPED_ARRAY_MARKERS = {np.dtype(t[1:]): m for m, t in NUMBER_TYPES.items()}


def _length(n: int) -> bytes:
    """A length or count: always ``L`` (int64), the only form XGBoost's reader takes."""
    return b"L" + np.array(n, dtype=">i8").tobytes()


def _integer(value: int) -> bytes:
    """An integer value in the narrowest of ``i I l L`` that holds it, as XGBoost writes
    them (its reader takes any)."""
    for marker in (b"i", b"I", b"l", b"L"):
        info = np.iinfo(INTEGER_TYPES[marker])
        if info.min <= value <= info.max:
            return marker + np.array(value, dtype=INTEGER_TYPES[marker]).tobytes()
    raise ValueError(f"UBJSON: integer {value} does not fit in 64 bits")


def _string(text: str) -> bytes:
    """A string's length and UTF-8 bytes (an object key; a value adds ``S`` before)."""
    raw = text.encode("utf-8")
    return _length(len(raw)) + raw


def encode(value: Any) -> bytes:
    """The UBJSON document of ``value``, as XGBoost writes its models: dicts (str keys),
    lists and tuples (untyped containers), 1-D numpy arrays of float32, float64, int8,
    uint8, int16, int32, int64 or bool (typed arrays: ``[$d#L<n>`` and the big-endian
    values; bool as uint8; other dtypes as lists), str, bool, None, int (the narrowest
    of ``i I l L``), float (``D``, float64) and numpy floats (``d`` for float32, else
    ``D``). Lengths and counts are int64 (``L``). :func:`decode` reads it back (typed
    arrays as numpy arrays). Documents are the caller's own, a few levels deep, so this
    recurses."""
    if isinstance(value, dict):
        return b"{" + b"".join(_string(str(k)) + encode(v) for k, v in value.items()) + b"}"
    if isinstance(value, (list, tuple)):
        return b"[" + b"".join(encode(v) for v in value) + b"]"
    if isinstance(value, np.ndarray):
        if value.ndim != 1:
            raise ValueError("UBJSON: only 1-D arrays are encoded")
        values = value.astype(np.uint8) if value.dtype == np.bool_ else value
        marker = TYPED_ARRAY_MARKERS.get(values.dtype.newbyteorder("="))
        if marker is None:
            return encode(value.tolist())
        return (b"[$" + marker + b"#" + _length(len(values))
                + values.astype(NUMBER_TYPES[marker]).tobytes())
    if isinstance(value, str):
        return b"S" + _string(value)
    if isinstance(value, (bool, np.bool_)) or value is None:
        return {True: b"T", False: b"F", None: b"Z"}[None if value is None else bool(value)]
    if isinstance(value, (int, np.integer)):
        return _integer(int(value))
    if isinstance(value, np.float32):
        return b"d" + np.array(value, dtype=">f4").tobytes()
    if isinstance(value, (float, np.floating)):
        return b"D" + np.array(value, dtype=">f8").tobytes()
    raise TypeError(f"UBJSON: cannot encode a {type(value).__name__}")
