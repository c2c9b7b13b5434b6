"""Numerics the algorithms share: features.py (FeatureSource: the features and the blocks every pass
over the arms walks, the large-K switch), checks.py (the feature matrix, the generator), ties.py (argmax
and top-m with ties broken at random), linalg.py, design.py (optimal designs and rounding), estimators.py
(rank-one ridge state), glm.py (penalised logistic MLE), lr_set.py (the likelihood-ratio confidence
set), thresholds.py, rules.py (selection rules, the L1 design)."""
