"""Built-in example models: real architectures from transformers configs (random weights, offline)
and the seed-003 time-series regressors. Needs torch (the `torch` extra)."""
