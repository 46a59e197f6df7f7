"""
Exporting a model to ONNX
=========================

``save_model(path, format="onnx")`` writes a booster or a forest as an ONNX model
(``pip install "cbudget[onnx]"``), which onnxruntime serves with the predictions of
cbudget's ``predict``.
"""
import os
import tempfile

import numpy as np
import onnxruntime as ort

import cbudget
from cbudget.datasets import make_quadrants

X, y = make_quadrants(2000, seed=0)
model = cbudget.train({"algorithm": "cegb", "objective": "reg:squarederror", "seed": 0},
                      cbudget.Dataset(X, y, feature_costs=[10.0, 10.0, 10.0, 10.0, 1.0, 1.0]), 20)

with tempfile.TemporaryDirectory() as folder:
    path = os.path.join(folder, "model.onnx")
    # an ExportWarning says what the ONNX file leaves out: the cost model (cost reports
    # and on-demand prediction need cbudget's own file)
    model.save_model(path, format="onnx")
    session = ort.InferenceSession(path)
    inputs = {session.get_inputs()[0].name: X[:100].astype(np.float64)}
    outputs = session.run(None, inputs)

# %%
# The ONNX graph's outputs, beside cbudget's predictions:
print([o.name for o in session.get_outputs()])
for output in outputs:
    print(np.asarray(output)[:3])
print(model.predict(X[:3]))
