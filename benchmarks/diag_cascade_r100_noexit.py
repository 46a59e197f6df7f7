"""Issue 43 ratio-100 diagnosis (results/cascade_r100_diagnosis.md): the search pick's accuracy on
the inputs that buy the test with exits, with all trees, for a trade-off-0 model and for Bayes;
then every cascade with exits again with "no exit once the test is bought" (post hoc, same
calibration).  python diag_cascade_r100_noexit.py bin_s20_r100
"""
import sys

import bench_cascade as bc
import numpy as np

import cbudget

name = sys.argv[1]
k, s, r = bc.MEMBERS[name]
data = bc.load_member(name, {p: bc.FULL[p + '_rows'] for p in bc.ROWS})
dtr, dva = bc.cbudget_sets(data)
p = {kk: v for kk, v in bc.cegb_base({'threads': 1}, data).items() if kk != 'eval_metric'}
path = cbudget.cost_path(p, dtr, dva, n_points=16, num_boost_round=200, cascades=True)
i = path.best_index(1.2 * bc.ideal_cost(name))
m = path.models[i]
X, y = data['X_test'], data['y_test']
test = m.acquisitions(X)[:, 6]
lt = bc.log_posteriors(X, s, k, True)


def right(pr):
    return (np.asarray(pr).reshape(-1) > 0.5) == y


full = cbudget.train(dict(p, cost_tradeoff=0.0), dtr, 50)
print(name, path.stages[i], path.epsilons[i], 'tested', test.mean())
print('on tested: with exits %.4f  all 200 trees %.4f  trade-off-0 model %.4f  Bayes+test %.4f' % (
    right(m.predict(X))[test].mean(), right(m.predict(X, early_exit=False))[test].mean(),
    right(full.predict(X))[test].mean(), (lt.argmax(1) == y)[test].mean()))
# in how many trees do the tested inputs' paths read the test (before their exit)?
# "no exit once the test is bought": the tested inputs (under the exits) run all trees
for j in range(len(path)):
    mj = path.models[j]
    if path.stages[j] is None or np.isnan(path.epsilons[j]) \
            or path.costs[j] > 2 * bc.ideal_cost(name):
        continue
    t = mj.acquisitions(X)[:, 6]
    acc = np.where(t, right(mj.predict(X, early_exit=False)), right(mj.predict(X))).mean()
    cost = np.where(t, mj.predict_cost(X, early_exit=False), mj.predict_cost(X)).mean()
    print(j, path.stages[j][0][0], f"{path.epsilons[j]:.3f}",
          f"exits {right(mj.predict(X)).mean():.4f} at {mj.predict_cost(X).mean():.1f}",
          f"| tested run all trees {acc:.4f} at {cost:.1f}", "PICK" if j == i else "")
