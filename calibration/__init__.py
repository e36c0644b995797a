"""npufit's calibration: the models it is measured on, the real compiles recorded from them, and their replay.

Records live in docs/calibration/ (the rules of npufit/targets/ cite them there); the models are built into a cache
(~/.cache/npufit/calibration or $NPUFIT_CALIBRATION_CACHE), never committed. Modules, leaves first: paths (where records
live, their schemas), judge (npufit's verdicts and the compile a record is made from), corpus (the transformer-era
corpus and its export keys), records (write and replay a record), the case builders (rknn_cases, vela_cases, ...),
build / heldout / realworld (recorders), sweep (the compiler-driven sweep generator) and score (the tables).
Imported as a package from the repository root: `python -m calibration.score`, `import calibration.records`."""
