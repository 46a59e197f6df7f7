"""
Exporting a model to ONNX
=========================

``save_model(path, format="onnx")`` writes a booster or a forest as an ONNX model
(``pip install "cbudget[onnx]"``), which onnxruntime serves with the predictions of
cbudget's ``predict``. Here the model is trained on a DataFrame with a categorical column,
which the ONNX graph takes as codes: ``model.prepare_input(df)`` turns a DataFrame into the
float matrix the graph reads. ``format="xgboost"`` and ``format="lightgbm"`` write
boosters for those libraries the same way (user guide, "Models from LightGBM, XGBoost and
scikit-learn").
"""
import os
import tempfile
import warnings

import numpy as np
import onnxruntime as ort
import pandas as pd

import cbudget

rng = np.random.default_rng(0)
n = 3000
frame = pd.DataFrame({"age": rng.normal(50, 10, n),
                      "plan": pd.Categorical(rng.choice(["basic", "plus", "pro"], n)),
                      "usage": rng.exponential(1.0, n)})
label = ((frame.plan == "pro") ^ (frame.usage > 1.0)).astype(float)
costs = {"age": 1.0, "plan": 2.0, "usage": 5.0}
dtrain = cbudget.Dataset(frame, label, feature_costs=costs)
params = {"algorithm": "cegb", "objective": "binary:logistic", "seed": 0}
params["cost_tradeoff"] = 0.01 * cbudget.lambda_max(params, dtrain)
model = cbudget.train(params, dtrain, 20)
print("features used:", model.used_feature_names())

with tempfile.TemporaryDirectory() as folder:
    path = os.path.join(folder, "model.onnx")
    # ONNX holds the trees only: an ExportWarning says what the file leaves out (the cost
    # model: cost reports and on-demand prediction need cbudget's own file)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", cbudget.ExportWarning)
        model.save_model(path, format="onnx")
    print("warning:", caught[0].message)
    session = ort.InferenceSession(path)

# %%
# The graph has one input, ``input`` (float64, one column per feature). A DataFrame's
# category and string columns are not numbers: ``prepare_input`` gives their codes, as
# cbudget reads them (feeding ``frame.to_numpy()`` instead makes onnxruntime refuse the
# strings with "Unexpected input data type").
print([(i.name, i.type, i.shape) for i in session.get_inputs()])
X_new = frame.head(200)
outputs = dict(zip([o.name for o in session.get_outputs()],
                   session.run(None, {"input": model.prepare_input(X_new)})))
print(model.prepare_input(X_new)[:3])

# %%
# The ONNX outputs agree with cbudget's predictions:
print(sorted(outputs))
print("prediction agrees:", np.allclose(outputs["prediction"].ravel(), model.predict(X_new)))
print("margin agrees:",
      np.allclose(outputs["margin"].ravel(), model.predict(X_new, output_margin=True)))
