"""Issue 43 ratio-100 diagnosis: two- and three-stage cost_stages cascades (cheap, test, extra)
with exits.  python diag_cascade_r100_stages.py bin_s20_r100
"""
import sys

import bench_cascade as bc
from diag_cascade_r100 import describe

import cbudget

name = sys.argv[1]
data = bc.load_member(name, {p: bc.FULL[p + '_rows'] for p in bc.ROWS})
dtr, dva = bc.cbudget_sets(data)
p = {k: v for k, v in bc.cegb_base({'threads': 1}, data).items() if k != 'eval_metric'}
hi = 0.00021064202910308722
for stages in ([[50, hi], [150, hi / 2]], [[50, hi], [100, hi / 2], [50, 0.0]],
               [[50, hi], [100, hi / 2], [50, hi / 20]]):
    m0 = cbudget.train(dict(p, cost_stages=stages), dtr, 200)
    for eps in (0.01, 0.02, 0.03, 0.04):
        m = m0.copy()
        m.calibrate_exits(dva, eps, every=10)
        d = describe(m, data, name)
        keys = ("acc", "cost", "test_frac", "extra_frac", "acc_tested", "bayes_t_tested")
        print(stages, eps, " ".join(f"{k}={d[k]:.4f}" for k in keys), flush=True)
