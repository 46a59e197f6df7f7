"""Per-input acquired-feature bitsets (docs/architecture.md, "Cost model"): update and query.

:class:`AcquisitionState` is the training state of the cost-aware learners: which
training inputs have acquired which features (and touched which cost groups), how many
inputs have each (CEGB's per-input penalty), and which features and groups the model
uses (CEGB's coupled costs, Greedy Miser's phi). It persists across trees and rounds.
"""
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t

import numpy as np

from ._predict cimport binned_child
from ._safety cimport (check_rows_in_range, checked_bin_words, first_bad_node,
                      first_out_of_range_32)
from ._types cimport BITSET_WORD_C, MAX_ROWS_C, binned_t, node_struct


cdef inline Py_ssize_t _n_words(Py_ssize_t n_bits) noexcept nogil:
    return max(1, (n_bits + 63) // 64)


cdef class AcquisitionState:
    """What the training inputs have acquired so far.

    Parameters
    ----------
    n_samples : int
    feature_group : int32 array of shape (n_features,); -1 = no cost group
    n_groups : int

    Attributes (numpy views, updated in place)
    ----------
    acquired_bits : uint64 (n_samples, ceil(n_features / 64)), Fortran order
    groups_touched_bits : uint64 (n_samples, ceil(n_groups / 64)), Fortran order
    acquired_counts : int64 (n_features,), inputs that have acquired each feature
    touched_counts : int64 (n_groups,), inputs that have touched each group
    used_mask : uint8 (n_features,), 1 once the model splits on the feature
    group_used_mask : uint8 (n_groups,), 1 once the model splits on a member of the group
    """

    def __init__(self, Py_ssize_t n_samples, feature_group, Py_ssize_t n_groups):
        if not 0 <= n_samples <= MAX_ROWS_C:
            raise ValueError(f"n_samples must be in [0, {MAX_ROWS_C}] (the most rows "
                             f"training takes), got {n_samples}")
        if n_groups < 0:
            raise ValueError(f"n_groups must be >= 0, got {n_groups}")
        fg = np.ascontiguousarray(feature_group, dtype=np.int32)
        if fg.ndim != 1 or (fg.size and (fg.min() < -1 or fg.max() >= n_groups)):
            raise ValueError("feature_group must hold group indices in [-1, n_groups)")
        self.n_samples = n_samples
        self.n_features = fg.shape[0]
        self.n_groups = n_groups
        self.feature_group = fg
        # Fortran order: the histogram pass reads one word of every row of a leaf, like
        # a feature column
        self.acquired = np.zeros((n_samples, _n_words(self.n_features)), dtype=np.uint64,
                                 order="F")
        self.groups_touched = np.zeros((n_samples, _n_words(n_groups)), dtype=np.uint64,
                                       order="F")
        self.n_acquired = np.zeros(self.n_features, dtype=np.int64)
        self.n_touched = np.zeros(n_groups, dtype=np.int64)
        self.feature_used = np.zeros(self.n_features, dtype=np.uint8)
        self.group_used = np.zeros(n_groups, dtype=np.uint8)

    @property
    def acquired_bits(self):
        return np.asarray(self.acquired)

    @property
    def groups_touched_bits(self):
        return np.asarray(self.groups_touched)

    @property
    def acquired_counts(self):
        return np.asarray(self.n_acquired)

    @property
    def touched_counts(self):
        return np.asarray(self.n_touched)

    @property
    def used_mask(self):
        return np.asarray(self.feature_used)

    @property
    def group_used_mask(self):
        return np.asarray(self.group_used)

    def load_bitsets(self, acquired, groups_touched, used_features):
        """Replace the state by given bitsets (e.g. from routing the training inputs
        through a saved model's trees) and the features the model uses.

        ``acquired`` and ``groups_touched`` have the shapes of ``acquired_bits`` and
        ``groups_touched_bits``; ``used_features`` are feature indices."""
        own_acquired, own_touched = np.asarray(self.acquired), np.asarray(self.groups_touched)
        if np.shape(acquired) != own_acquired.shape \
                or np.shape(groups_touched) != own_touched.shape:
            raise ValueError(f"the bitsets must have the shapes {own_acquired.shape} and "
                             f"{own_touched.shape}, got {np.shape(acquired)} and "
                             f"{np.shape(groups_touched)}")
        used_features = np.asarray(used_features, dtype=np.intp)
        if used_features.size and (used_features.min() < 0
                                   or used_features.max() >= self.n_features):
            raise ValueError(f"used_features must be in [0, {self.n_features})")
        own_acquired[...] = acquired
        own_touched[...] = groups_touched
        per_feature = np.zeros((self.n_samples, max(self.n_features, 1)), dtype=np.uint8)
        bitset_to_bool(np.ascontiguousarray(own_acquired), self.n_features, per_feature)
        np.asarray(self.n_acquired)[...] = per_feature[:, :self.n_features].sum(axis=0)
        per_group = np.zeros((self.n_samples, max(self.n_groups, 1)), dtype=np.uint8)
        bitset_to_bool(np.ascontiguousarray(own_touched), self.n_groups, per_group)
        np.asarray(self.n_touched)[...] = per_group[:, :self.n_groups].sum(axis=0)
        used = np.asarray(self.feature_used)
        used[...] = 0
        used[used_features] = 1
        groups = np.asarray(self.feature_group)[used_features]
        group_used = np.asarray(self.group_used)
        group_used[...] = 0
        group_used[groups[groups >= 0]] = 1

    def copy_from(self, AcquisitionState other):
        """Make this state a copy of ``other`` (same samples, features and groups)."""
        if (other.n_samples != self.n_samples or other.n_features != self.n_features
                or other.n_groups != self.n_groups
                or np.any(np.asarray(other.feature_group) != np.asarray(self.feature_group))):
            raise ValueError("copy_from needs a state of the same samples, features and "
                             "groups")
        self.acquired[:, :] = other.acquired
        self.groups_touched[:, :] = other.groups_touched
        self.n_acquired[:] = other.n_acquired
        self.n_touched[:] = other.n_touched
        self.feature_used[:] = other.feature_used
        self.group_used[:] = other.group_used

    cdef bint acquire_rows(self, const int32_t * rows, Py_ssize_t n_rows, int feature,
                           int64_t * newly_acquired) noexcept nogil:
        """Every row of ``rows`` acquires ``feature`` (and touches its group); adds the
        number of rows that did not have it to ``newly_acquired``; returns True when
        the model had not used the feature before."""
        cdef Py_ssize_t i, word = feature >> 6, group_word = 0
        cdef int32_t row, group = self.feature_group[feature]
        cdef BITSET_WORD_C bit = (<BITSET_WORD_C> 1) << (feature & 63), group_bit = 0
        cdef int64_t newly = 0, newly_touched = 0
        if group >= 0:
            group_word, group_bit = group >> 6, (<BITSET_WORD_C> 1) << (group & 63)
        # every input has the feature (and so its group) already: nothing can change;
        # after the first rounds this holds for most splits (the root's features)
        if self.n_acquired[feature] == self.n_samples:
            n_rows = 0
        for i in range(n_rows):
            row = rows[i]
            if not self.acquired[row, word] & bit:
                self.acquired[row, word] |= bit
                newly += 1
                if group >= 0 and not self.groups_touched[row, group_word] & group_bit:
                    self.groups_touched[row, group_word] |= group_bit
                    newly_touched += 1
        newly_acquired[0] += newly
        return self.add_acquisitions(feature, newly, newly_touched)

    cdef bint add_acquisitions(self, int feature, int64_t newly,
                               int64_t newly_touched) noexcept nogil:
        """What :meth:`acquire_rows` records in the counts and the model's use, for rows
        held elsewhere (the workers of a distributed training, which keep the bitsets):
        ``newly`` inputs acquired ``feature``, ``newly_touched`` touched its group.
        Returns True when the model had not used the feature before."""
        cdef int32_t group = self.feature_group[feature]
        cdef bint first_use = not self.feature_used[feature]
        self.n_acquired[feature] += newly
        if group >= 0:
            self.n_touched[group] += newly_touched
            self.group_used[group] = 1
        self.feature_used[feature] = 1
        return first_use

    def set_counts(self, acquired_counts, touched_counts):
        """Replace the per-feature and per-group input counts (summed over the workers
        of a distributed training after each tree); the bitsets are not touched."""
        acquired = np.asarray(acquired_counts, dtype=np.int64)
        touched = np.asarray(touched_counts, dtype=np.int64)
        if acquired.shape != (self.n_features,) or touched.shape != (self.n_groups,):
            raise ValueError(f"the counts must have the shapes ({self.n_features},) and "
                             f"({self.n_groups},)")
        np.asarray(self.n_acquired)[...] = acquired
        np.asarray(self.n_touched)[...] = touched

    def acquire(self, const int32_t[::1] rows, int feature):
        """Python access to :meth:`acquire_rows` (rows must be distinct); returns
        (first use by the model, number of rows that newly acquired the feature)."""
        if not 0 <= feature < self.n_features:
            raise ValueError("feature out of range")
        if rows.shape[0] and (np.min(rows) < 0 or np.max(rows) >= self.n_samples):
            raise ValueError("rows out of range")
        cdef int64_t newly = 0
        with nogil:
            first = self.acquire_rows(&rows[0] if rows.shape[0] else NULL, rows.shape[0],
                                      feature, &newly)
        return first, newly

    cdef int _check_tree(self, const node_struct[::1] tree, str feature_is) except -1:
        """ValueError unless the tree has nodes, each a leaf or a split on a feature of
        the state (``feature_is`` says how) with both children after it."""
        cdef Py_ssize_t bad
        if tree.shape[0] == 0:
            raise ValueError("tree has no nodes")
        with nogil:
            bad = first_bad_node(&tree[0], tree.shape[0], self.n_features)
        if bad >= 0:
            raise ValueError(f"tree node {bad}: children must come after it within the "
                             f"tree, and its feature must be {feature_is}")
        return 0

    def acquire_partition(self, node_struct[::1] tree, const int32_t[::1] rows):
        """The acquisitions of a tree grown without a cost penalty, from the partition
        its grower left: ``rows`` (as :meth:`TreeGrower.grow` reordered them) holds each
        node's rows contiguously, the left child's first, so node ``i``'s rows follow
        from the ``n_samples`` of the nodes before it. The rows of every split node
        acquire its feature, parents before children (a row's order along its path: the
        same counts as routing it); ``tree["new_acquisitions"]`` is incremented where
        rows first acquire a feature. Returns the number of split nodes the rows visit.

        ValueError when a row is out of range, the nodes' ``n_samples`` do not
        partition ``rows`` (root: all of them; a split node: its children's sum), or a
        node is neither a leaf nor a split on a feature of the state with both children
        after it in the tree."""
        cdef Py_ssize_t node, n_nodes = tree.shape[0]
        cdef int64_t visits = 0, newly
        cdef int32_t left, right
        self._check_tree(tree, "a feature of the state")
        if tree[0].n_samples != rows.shape[0]:
            raise ValueError(f"the root holds {tree[0].n_samples} rows, rows has "
                             f"{rows.shape[0]}")
        for node in range(n_nodes):
            left, right = tree[node].left, tree[node].right
            if left != -1 and (tree[left].n_samples < 0 or tree[right].n_samples < 0
                               or tree[left].n_samples + tree[right].n_samples
                               != tree[node].n_samples):
                raise ValueError(f"tree node {node}: its children's n_samples do not add "
                                 f"up to its own")
        if rows.shape[0] == 0:
            return 0
        check_rows_in_range(rows, self.n_samples)
        # -1: not reached from the root (skipped; such a node's range is unknown)
        start_array = np.full(n_nodes, -1, dtype=np.int64)
        start_array[0] = 0
        cdef int64_t[::1] start = start_array
        with nogil:
            for node in range(n_nodes):
                left, right = tree[node].left, tree[node].right
                if left == -1 or start[node] < 0:
                    continue
                start[left] = start[node]
                start[right] = start[node] + tree[left].n_samples
                newly = 0
                self.acquire_rows(&rows[start[node]], tree[node].n_samples,
                                  tree[node].feature, &newly)
                tree[node].new_acquisitions += <int32_t> newly
                visits += tree[node].n_samples
        return visits

    def acquire_along_paths(self, const binned_t[::1, :] binned, node_struct[::1] tree,
                            const int missing_bin, const int32_t[::1] rows,
                            const uint32_t[::1] cat_bin_words=None):
        """Each row of ``rows`` acquires the features of the split nodes on its path
        through ``tree`` (binned data, as in training); ``tree["new_acquisitions"]`` is
        incremented where a row first acquires a feature. Used for the inputs left out
        of a subsampled round: they are charged for what the new tree makes them
        compute. ``cat_bin_words``: the bin bitsets of the tree's categorical splits
        (a grown tree's). Returns the number of split nodes the rows visit.

        ValueError when ``binned`` does not match the state, a row is out of range, or
        a node of ``tree`` is neither a leaf nor a split on a feature of ``binned`` with
        both children after it in the tree."""
        cdef Py_ssize_t i
        cdef int64_t visits = 0, newly
        cdef int32_t node, row
        cdef int32_t[::1] one = np.zeros(1, dtype=np.int32)
        if binned.shape[0] != self.n_samples or binned.shape[1] != self.n_features:
            raise ValueError("binned does not match the acquisition state")
        if rows.shape[0] == 0:
            return 0
        check_rows_in_range(rows, self.n_samples)
        self._check_tree(tree, "a column of binned")
        cdef const uint32_t * bin_words = checked_bin_words(tree, cat_bin_words)
        with nogil:
            for i in range(rows.shape[0]):
                row = rows[i]
                one[0] = row
                node = 0
                while tree[node].left != -1:
                    newly = 0
                    self.acquire_rows(&one[0], 1, tree[node].feature, &newly)
                    tree[node].new_acquisitions += <int32_t> newly
                    visits += 1
                    node = binned_child(&tree[node], binned[row, tree[node].feature],
                                        missing_bin, bin_words)
        return visits


def mark_acquired(BITSET_WORD_C[:, ::1] bitset, const int32_t[::1] rows, const int bit):
    """Set ``bit`` for every row in ``rows``; return how many rows did not have it.
    ValueError when a row or ``bit`` is out of range of ``bitset``."""
    cdef Py_ssize_t i, bad
    cdef int32_t row
    if not 0 <= bit < bitset.shape[1] * 64:
        raise ValueError(f"bit {bit} out of range for {bitset.shape[1]} words per row")
    with nogil:
        bad = first_out_of_range_32(&rows[0] if rows.shape[0] else NULL, rows.shape[0], 0,
                                    bitset.shape[0])
    if bad >= 0:
        raise ValueError(f"rows[{bad}] = {rows[bad]} is out of range for "
                         f"{bitset.shape[0]} rows")
    cdef Py_ssize_t word = bit >> 6
    cdef uint64_t mask = (<uint64_t> 1) << (bit & 63)
    cdef Py_ssize_t newly = 0
    with nogil:
        for i in range(rows.shape[0]):
            row = rows[i]
            if not bitset[row, word] & mask:
                bitset[row, word] |= mask
                newly = newly + 1
    return newly


def bitset_to_bool(const BITSET_WORD_C[:, ::1] bitset, const Py_ssize_t n_bits,
                   unsigned char[:, ::1] out):
    """Expand a bitset to an ``(n_rows, n_bits)`` array of 0/1 (``out`` may have more
    columns; the others are not written). ValueError when ``out`` has fewer rows than
    ``bitset`` or fewer than ``n_bits`` columns, or ``bitset`` fewer than ``n_bits``
    bits per row."""
    cdef Py_ssize_t i, b
    if n_bits < 0 or out.shape[0] != bitset.shape[0] or out.shape[1] < n_bits \
            or bitset.shape[1] * 64 < n_bits:
        raise ValueError(f"bitset_to_bool: {n_bits} bits of a bitset of shape "
                         f"({bitset.shape[0]}, {bitset.shape[1]}) into out of shape "
                         f"({out.shape[0]}, {out.shape[1]})")
    with nogil:
        for i in range(bitset.shape[0]):
            for b in range(n_bits):
                out[i, b] = (bitset[i, b >> 6] >> (b & 63)) & 1
