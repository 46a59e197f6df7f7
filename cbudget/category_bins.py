"""Categorical features in the histogram engine (docs/architecture.md, "Categorical
features"): which columns are categorical, how their integer codes become bins, and the
bitsets of the codes a categorical split sends left.

A categorical column holds integer codes 0, 1, 2, ... as floats; NaN and negative values
are missing. Binning gives each of the most frequent codes of the training data a bin of
its own (bins in increasing code order; at least ``max_bin - 1`` of them, more until they
cover 99% of the rows, as LightGBM: :func:`fit_codes`) and puts every other code -- rare
ones, and codes never seen in training -- in one last "other" bin, which never goes left
(LightGBM sends the rest right with NaN). A split node stores the raw codes that go
left as a bitset, so prediction needs no bins: a code in the bitset goes left, any other
code right, a missing value the node's ``default_left``.
"""
from __future__ import annotations

import numpy as np

from ._core._grower import bin_words
from .categories import MAX_LEVELS

__all__ = ["MAX_CATEGORY_CODE", "fit_codes", "codes_to_bin_values", "codes_to_bitset",
           "bins_to_bitset", "bitset_codes", "grown_tree_bitsets"]

# The largest code a categorical column may hold (the input side's limit on levels): a
# split's bitset has one bit per code up to its largest, so it stays within 8 KB.
MAX_CATEGORY_CODE = MAX_LEVELS - 1


# LightGBM's categorical binning (BinMapper::FindBin): codes get bins of their own until
# they cover this share of the non-missing rows ...
COVERED_SHARE = 0.99
# ... except, beyond the first max_bin - 1, codes with fewer rows than this
# (LightGBM's min_data_in_bin default)
MIN_CODE_ROWS = 3
# The most codes with a bin of their own: with "other" and the missing bin, the bins
# fit uint16 (missing bin <= 65535).
MAX_KEPT_CODES = 65534


def fit_codes(codes: np.ndarray, max_bin: int) -> np.ndarray:
    """The codes of a column that get a bin of their own, sorted (int64): the most
    frequent (ties to the smaller code), taken in order of decreasing frequency

    * all of the first ``max_bin - 1`` (every code when there are no more: such a
      column bins as with any larger ``max_bin``),
    * then more while those taken cover fewer than ``round(0.99 n)`` of the ``n``
      non-missing rows and the next code has at least 3 rows,
    * at most 65534 (the bins, "other" and missing included, fit uint16).

    This is LightGBM's rule (``BinMapper::FindBin``, categorical features: ``max_bin``
    bins including its NaN/"other" bin, then on to 99% coverage, stopping at a
    category with fewer than ``min_data_in_bin`` = 3 rows), except that LightGBM may
    stop at such a rare category within the first ``max_bin`` too. The column holds
    codes as the input side makes them (``cbudget.categories``: integers 0 ..
    :data:`MAX_CATEGORY_CODE`, NaN missing)."""
    values, counts = np.unique(codes[~np.isnan(codes)], return_counts=True)
    first = min(max_bin - 1, MAX_KEPT_CODES)
    if values.size > first:
        order = np.lexsort((values, -counts))
        sorted_counts = counts[order]
        covered = np.cumsum(sorted_counts)
        cut = int(round(COVERED_SHARE * covered[-1]))
        n_kept = max(first, int(np.searchsorted(covered, cut)) + 1)
        rare = np.flatnonzero(sorted_counts[first:] < MIN_CODE_ROWS)
        if rare.size:
            n_kept = min(n_kept, first + int(rare[0]))
        values = np.sort(values[order[:min(n_kept, MAX_KEPT_CODES)]])
    return values.astype(np.int64)


def codes_to_bin_values(codes: np.ndarray, kept: np.ndarray) -> np.ndarray:
    """A column of codes (as :func:`fit_codes` takes them), each replaced by its bin:
    ``b`` for ``kept[b]``, ``len(kept)`` (the "other" bin) for any other code, NaN for
    missing. Binned with the edges ``0.5, 1.5, ..., len(kept) - 0.5`` these values fall
    in those bins."""
    out = np.full(codes.shape, np.nan)
    present = ~np.isnan(codes)
    values = codes[present].astype(np.int64)
    position = np.searchsorted(kept, values)
    found = position < kept.size
    found[found] = kept[position[found]] == values[found]
    out[present] = np.where(found, position, kept.size)
    return out


def bins_to_bitset(bin_bitset: np.ndarray, kept: np.ndarray) -> np.ndarray:
    """The bitset of a categorical split (a length word ``n``, then ``n`` uint32 words with
    bit ``c`` set for each code ``c`` going left) from its bin bitset ``bin_bitset`` (the
    same layout, bit ``b`` for bin ``b``) and the feature's ``kept`` codes (bin ``b`` is
    code ``kept[b]``)."""
    bins = bitset_codes(bin_bitset[1:1 + int(bin_bitset[0])])
    return codes_to_bitset(kept[bins[bins < kept.size]])


def codes_to_bitset(codes: np.ndarray) -> np.ndarray:
    """The bitset (a length word ``n``, then ``n`` uint32 words with bit ``c`` set for
    each code ``c``; no trailing zero word) of the integer ``codes`` (>= 0)."""
    codes = np.asarray(codes, dtype=np.int64).reshape(-1)
    n_words = int(codes.max()) // 32 + 1 if codes.size else 0
    words = np.zeros(n_words + 1, dtype=np.uint32)
    words[0] = n_words
    np.bitwise_or.at(words, 1 + codes // 32, (np.uint32(1) << (codes % 32)).astype(np.uint32))
    return words


def bitset_codes(words: np.ndarray) -> np.ndarray:
    """The codes (int64, ascending) of the bitset words (without the length word)."""
    bits = np.unpackbits(np.ascontiguousarray(words, dtype="<u4").view(np.uint8),
                         bitorder="little")
    return np.flatnonzero(bits).astype(np.int64)


def grown_tree_bitsets(tree: np.ndarray, bin_codes: dict[int, np.ndarray]) -> list[np.ndarray]:
    """The bitsets of the categorical nodes (in node order) of a tree just grown on a
    Dataset whose ``categorical_bin_codes`` are ``bin_codes`` (its bin bitsets in
    ``tree.cat_bin_words``: ``cbudget._core._grower.GrownTree``): what
    ``Booster.add_round`` takes with it."""
    words = bin_words(tree)
    return [bins_to_bitset(words[int(tree["cat_bins_at"][n]):],
                           bin_codes[int(tree["feature"][n])])
            for n in np.flatnonzero(tree["categorical"])]
