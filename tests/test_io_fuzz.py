"""Fuzzing nd.load: damaged files must raise GpundaError, never crash, hang or over-allocate."""
import importlib.util
import os
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gpunda as mx
from gpunda.base import GpundaError
from gpunda.ndarray import io as ndio

FIX = os.environ["GPUNDA_MXNET_FIXTURES"]
_HAS_SPARSE = importlib.util.find_spec("gpunda.ndarray.sparse") is not None
FUZZ = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow])


def _seeds():
    """Valid files of every record kind: MXNet's fixtures plus one written by gpunda."""
    out = {}
    for name in ("nd_list.nd", "nd_dict.nd", "nd_sparse.nd", "nd_npshape.nd",
                 "nd_legacy_v0.nd", "nd_legacy_v1.nd", "cnn-0000.params"):
        path = os.path.join(FIX, name)
        if os.path.exists(path):
            with open(path, "rb") as f:
                out[name] = f.read()
    rng = np.random.default_rng(0)
    mine = {f"k{i}": mx.nd.array((rng.standard_normal((2, 3)) * 9).astype(dt), dtype=dt)
            for i, dt in enumerate(["float16", "float64", "int8", "uint8", "bool", "int64"])}
    out["gpunda"] = mx.nd.save_to_bytes(mine)
    return out


SEEDS = _seeds()
SEED_NAMES = sorted(SEEDS)


def _parse(buf):
    """Load ``buf`` completely; only GpundaError may escape."""
    try:
        if _HAS_SPARSE:
            return mx.nd.load_frombuffer(buf)
        return ndio.load_raw(buf)
    except GpundaError:
        return None


@pytest.mark.parametrize("name", SEED_NAMES)
def test_seeds_are_valid(name):
    records, _ = ndio.load_raw(SEEDS[name])
    assert records and all(r.data is not None for r in records)


@FUZZ
@given(name=st.sampled_from(SEED_NAMES), frac=st.floats(0, 1, exclude_max=True))
def test_every_truncation_raises(name, frac):
    buf = SEEDS[name]
    cut = int(len(buf) * frac)
    with pytest.raises(GpundaError):
        ndio.load_raw(buf[:cut])


def test_all_truncations_of_small_files():
    # exhaustive on two small files: every strict prefix is refused
    for name in ("nd_legacy_v0.nd", "nd_sparse.nd"):
        buf = SEEDS.get(name)
        if buf is None:
            continue
        for cut in range(len(buf)):
            with pytest.raises(GpundaError):
                ndio.load_raw(buf[:cut])


@FUZZ
@given(name=st.sampled_from(SEED_NAMES), data=st.data())
def test_bit_flips_never_crash(name, data):
    buf = bytearray(SEEDS[name])
    for _ in range(data.draw(st.integers(1, 4))):
        pos = data.draw(st.integers(0, len(buf) - 1))
        buf[pos] ^= 1 << data.draw(st.integers(0, 7))
    _parse(bytes(buf))


@FUZZ
@given(name=st.sampled_from(SEED_NAMES), data=st.data())
def test_overwritten_fields_never_crash(name, data):
    # integers written over header/shape/count fields: huge, negative and boundary values
    buf = bytearray(SEEDS[name])
    width = data.draw(st.sampled_from([4, 8]))
    pos = data.draw(st.integers(0, max(0, len(buf) - width)))
    value = data.draw(st.sampled_from([0, 1, 2, -1, 2 ** 31 - 1, -2 ** 31, 2 ** 62, 2 ** 63 - 1, 65])
                      | st.integers(-2 ** 31, 2 ** 31 - 1))
    fmt = "<i" if width == 4 else "<q"
    if width == 4 and not -2 ** 31 <= value < 2 ** 31:
        value = -1
    struct.pack_into(fmt, buf, pos, value)
    _parse(bytes(buf))


@FUZZ
@given(body=st.binary(max_size=300), header=st.booleans(), count=st.integers(0, 5))
def test_random_bytes_never_crash(body, header, count):
    buf = (struct.pack("<QQQ", 0x112, 0, count) + body) if header else body
    _parse(buf)


@FUZZ
@given(magic=st.sampled_from([0xF993FAC8, 0xF993FAC9, 0xF993FACA, 2]), body=st.binary(max_size=120))
def test_random_records_never_crash(magic, body):
    buf = struct.pack("<QQQI", 0x112, 0, 1, magic) + body
    _parse(buf)
