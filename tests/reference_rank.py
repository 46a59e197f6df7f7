"""Slow pure-Python reference for the ranking gradients (``cbudget._core._rank``):
LambdaMART (LightGBM's ``lambdarank``) and pairwise RankNet, one pair at a time, straight
from their definitions (python's ``math`` calls the same libm as the kernel, so the two
agree to a few ulps)."""
import math

import numpy as np


def _gain(label):
    return 2.0 ** label - 1.0


def _discount(position):
    return 1.0 / math.log2(2.0 + position)


def _add_pair(grad, hess, high, low, delta_score, delta_ndcg, sigmoid):
    """Lambdas of one pair (``high`` should rank above ``low``); returns ``p_lambda``."""
    p = 1.0 / (1.0 + math.exp(sigmoid * delta_score))
    p_hess = p * (1.0 - p)
    p_lambda = -sigmoid * delta_ndcg * p
    p_hess *= sigmoid * sigmoid * delta_ndcg
    grad[low] -= p_lambda
    hess[low] += p_hess
    grad[high] += p_lambda
    hess[high] += p_hess
    return p_lambda


def _lambdarank_query(raw, label, rows, truncation_level, normalize, sigmoid, grad, hess):
    cnt = len(rows)
    # rows by score descending, ties by row (a stable sort)
    order = sorted(rows, key=lambda r: (-raw[r], r))
    ideal = sorted((label[r] for r in rows), reverse=True)
    max_dcg = 0.0
    for position in range(min(truncation_level, cnt)):
        max_dcg += _gain(ideal[position]) * _discount(position)
    inverse_max_dcg = 1.0 / max_dcg if max_dcg > 0 else 0.0
    best_score, worst_score = raw[order[0]], raw[order[-1]]
    sum_lambdas = 0.0
    for i in range(min(truncation_level, cnt - 1)):
        for j in range(i + 1, cnt):
            if label[order[i]] == label[order[j]]:
                continue
            r_high, r_low = (i, j) if label[order[i]] > label[order[j]] else (j, i)
            high, low = order[r_high], order[r_low]
            delta_score = raw[high] - raw[low]
            dcg_gap = _gain(label[high]) - _gain(label[low])
            paired_discount = abs(_discount(r_high) - _discount(r_low))
            delta_ndcg = dcg_gap * paired_discount * inverse_max_dcg
            if normalize and best_score != worst_score:
                delta_ndcg /= 0.01 + abs(delta_score)
            sum_lambdas -= 2.0 * _add_pair(grad, hess, high, low, delta_score, delta_ndcg,
                                           sigmoid)
    if normalize and sum_lambdas > 0:
        norm_factor = math.log2(1.0 + sum_lambdas) / sum_lambdas
        for r in rows:
            grad[r] *= norm_factor
            hess[r] *= norm_factor


def _pairwise_query(raw, label, rows, sigmoid, grad, hess):
    for a_index, a in enumerate(rows):
        for b in rows[a_index + 1:]:
            if label[a] == label[b]:
                continue
            high, low = (a, b) if label[a] > label[b] else (b, a)
            _add_pair(grad, hess, high, low, raw[high] - raw[low], 1.0, sigmoid)


def ranking_gradients_reference(raw, label, weight, query_ptr, lambdarank, truncation_level,
                                normalize, sigmoid):
    """(grad, hess) of ``ranking_gradients`` (same arguments, no outputs, no threads)."""
    raw = [float(v) for v in raw]
    label = [float(v) for v in label]
    n = len(raw)
    grad, hess = [0.0] * n, [0.0] * n
    for q in range(len(query_ptr) - 1):
        rows = list(range(int(query_ptr[q]), int(query_ptr[q + 1])))
        if len(rows) < 2:
            continue
        if lambdarank:
            _lambdarank_query(raw, label, rows, truncation_level, normalize, sigmoid, grad,
                              hess)
        else:
            _pairwise_query(raw, label, rows, sigmoid, grad, hess)
    if weight is not None:
        for r in range(n):
            grad[r] *= float(weight[r])
            hess[r] *= float(weight[r])
    return np.array(grad, dtype=np.float64), np.array(hess, dtype=np.float64)
