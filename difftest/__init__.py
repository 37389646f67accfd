"""Differential testing of gpunda against real MXNet 1.9.1 (issue 38).

Random small programs (``gen_ops``: one registry op; ``gen_more``: indexing, autograd,
Gluon hybridize, save/load) are run by one interpreter (``interp``) under MXNet and under
gpunda; results are normalised and compared with dtype-aware tolerances (``compare``);
explained differences live in ``known``. MXNet's answers are recorded as fixtures
(``record``, ``fixture``) that ``tests/test_difftest.py`` replays without MXNet.

    python -m difftest record --mxnet-python /work/mxref/bin/python   # regenerate
    python -m difftest replay -v                                      # classify
    python -m difftest shrink PROGRAM_ID --mxnet-python ...           # minimise

This package must not import gpunda at module level: MXNet's Python runs ``interp``.
"""
