"""What both product lines share: the CSR view and row kernels (``_csr``), the seeded
generator (``_rng.pxd``), the clock and Ctrl-C check (``_runtime.pxd`` and its C
headers), every input check (``_validation``) and the estimators' common base and
one-vs-rest loop (``_estimator``).  See docs/architecture.md."""
