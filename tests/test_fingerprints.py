"""Same seeds, same bits: every linear strategy and budget solver reproduces the models
and step counts recorded in tests/data/fingerprints.json before the package was
reorganised (tests/data/make_fingerprints.py, commit d07f2db).  Since then the offset
rule changed: the intercepts of the five default configurations with an offset (bsca,
bsca_lookup_wd, bsca_m3, bsca_multi3, bsgd_checkpoints) were recorded again; their
support vectors, coefficients and step counts are those of d07f2db, and the old rule
still reproduces the old digests.  BSCA's default now averages its tail: the
four BSCA entries (bsca, bsca_lookup_wd, bsca_m3, bsca_multi3) were recorded again, and
with averaging="none" they give the digests recorded before (BSCA_LAST_ITERATE).
"auto" now goes to the primal Newton solver for the smooth classification losses on
rows that outnumber the columns 100 times: a9a's two squared-hinge "auto" entries were
recorded again; the dual CD bits they held before are the "shrinking" entries' (the same
digests), which still check them."""
import importlib.util
import json
import warnings
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
RECORDED = json.loads((DATA / "fingerprints.json").read_text())


def _generator():
    spec = importlib.util.spec_from_file_location("make_fingerprints",
                                                  DATA / "make_fingerprints.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def computed():
    gen = _generator()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # some runs hit max_iter on purpose
        return {"linear": gen.linear_prints(), "budget": gen.budget_prints()}


# Entries whose model digest differs between machines with the same code: bsgd_project
# (its projection solves a small system with LAPACK's dposv from scipy's OpenBLAS).  On
# one AMD EPYC machine the digest differed for the commit that had
# passed CI before too, with scipy 1.16.3 and 1.17.1, numpy 2.3.5 and 2.4.6 and Cython
# 3.2.9 and 3.3.1; its step counts were the recorded ones.  There only the counts are
# compared (the cause is not found yet).
COUNTS_ONLY = {"budget": {"bsgd_project"},
               # the Newton route: recorded when its conjugate gradients took their dot
               # products from BLAS (bits that depend on the CPU's kernel); since 3616f15
               # they are fixed-order sums, other bits, the same iteration counts
               "linear": {"a9a/squared_hinge/auto/C=0.1/bias=False",
                          "a9a/squared_hinge/auto/C=10.0/bias=True"}}


@pytest.mark.parametrize("family", ["linear", "budget"])
def test_models_and_step_counts_unchanged(computed, family):
    assert set(computed[family]) == set(RECORDED[family])
    loose = COUNTS_ONLY.get(family, set())
    changed = {k: (computed[family][k], v) for k, v in RECORDED[family].items()
               if (computed[family][k][1:] != v[1:] if k in loose
                   else computed[family][k] != v)}
    assert not changed, f"{len(changed)} fingerprints changed: {changed}"


# The BSCA digests before the tail average (the current offset rule, no averaging): the last
# iterate is unchanged by the tail average's bookkeeping.
BSCA_LAST_ITERATE = {"bsca": ["8d3657cf818692d8420e7299", 3000, 1706, 1666],
                        "bsca_lookup_wd": ["255ed374cb11732b6b345796", 3000, 1704, 1664],
                        "bsca_m3": ["1e35912696385e6cb4124434", 3000, 1732, 843],
                        "bsca_multi3": ["b77e78fb27e971ac36223e90", 0]}


def test_bsca_last_iterate_unchanged():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prints = _generator().budget_prints(bsca_opts={"averaging": "none"})
    assert {k: prints[k] for k in BSCA_LAST_ITERATE} == BSCA_LAST_ITERATE
    # and the default differs from it: the tail average is on
    assert all(RECORDED["budget"][k][0] != v[0] for k, v in BSCA_LAST_ITERATE.items())
