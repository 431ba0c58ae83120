"""What both product lines share: the CSR view and row kernels (``_csr``), the seeded
generator (``_rng.pxd``), the clock and Ctrl-C check (``_runtime.pxd`` and its C
headers), every input check (``_validation``), the estimators' common base and
one-vs-rest loop (``_estimator``), its thread pool (``_parallel``) and the progress
lines (``_progress``).  See docs/architecture.md."""
