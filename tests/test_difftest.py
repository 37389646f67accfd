"""Replay the differential-testing fixtures (difftest/fixtures, MXNet 1.9.1's recorded
answers to random programs; see difftest/__init__.py) on gpunda.

Each fixture file is one test: every program runs on gpunda and is compared with
MXNet's normalised results; differences not explained by difftest/known.py fail the
test, listed with the program (shrink one with ``python -m difftest shrink ID``).
"""
import json
import os

import pytest

import gpunda as mx

from difftest import replay

FILES = replay.fixture_files()


def test_fixtures_exist():
    assert len(FILES) >= 10


@pytest.mark.parametrize("path", FILES, ids=[os.path.basename(p)[:-4] for p in FILES])
def test_replay(path):
    # on the CPU, where MXNet's answers were recorded (its Gluon blocks initialise there)
    with mx.cpu():
        failures = [(p, bad) for p, bad, _ in replay.replay_file(path) if bad]
    if failures:
        lines = ["%d programs differ from MXNet 1.9.1:" % len(failures)]
        for prog, bad in failures[:20]:
            lines.append("%s: %s\n    %s" % (prog["id"], bad[:3], json.dumps(prog["steps"])))
        pytest.fail("\n".join(lines))


def test_comparer_catches_a_value_change():
    """A replay that cannot fail is worthless: perturb one recorded value and expect
    the comparer to report it."""
    from difftest import fixture
    from difftest.compare import compare
    import gpunda as mx
    from difftest.interp import run_program
    programs, results = fixture.load(os.path.join(replay.FIXTURES, "op-elemwise.npz"))
    for prog, ref in zip(programs, results):
        ent = ref.get("y")
        if ent and ent["t"] == "a" and ent["dtype"] == "float32" and ent["v"].size:
            got, _ = run_program(mx, prog)
            ref = dict(ref, y=dict(ent, v=ent["v"] + 1.0))
            assert any(d[1] == "value" for d in compare(ref, got))
            return
    pytest.fail("no float32 op result to perturb")
