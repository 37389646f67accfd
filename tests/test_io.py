"""nd.save / nd.load against MXNet 1.9.1's own files, plus safety of saving and loading."""
import hashlib
import json
import os
import struct

import numpy as np
import pytest

import gpunda as mx
from gpunda.base import GpundaError

FIX = os.environ["GPUNDA_MXNET_FIXTURES"]


@pytest.fixture
def sparse():
    return pytest.importorskip("gpunda.ndarray.sparse")


def _fixture(name):
    with open(os.path.join(FIX, name + ".json")) as f:
        manifest = json.load(f)
    npz = np.load(os.path.join(FIX, name + ".npz"))
    with open(os.path.join(FIX, name + ".nd"), "rb") as f:
        raw = f.read()
    return manifest, npz, raw


def _same_bits(a, b):
    """Exact equality including NaN payloads and -0.0: compare the raw bytes."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    assert a.shape == b.shape, (a.shape, b.shape)
    assert np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()


def _check_against_manifest(loaded, manifest, npz):
    entries = manifest["arrays"]
    if manifest["container"] == "dict":
        assert isinstance(loaded, dict)
        assert list(loaded) == [e["name"] for e in entries]   # file order
        arrays = list(loaded.values())
    else:
        assert isinstance(loaded, list)
        arrays = loaded
    assert len(arrays) == len(entries)
    for a, e in zip(arrays, entries):
        assert a.stype == e["stype"]
        assert np.dtype(a.dtype) == np.dtype(e["dtype"])
        assert a.shape == tuple(e["shape"])
        assert a.context == mx.cpu(0)
        if e["stype"] == "default":
            _same_bits(a.asnumpy(), npz[e["npz"]["dense_value"]])
        else:
            _same_bits(a.data.asnumpy(), npz[e["npz"]["data"]])
            _same_bits(a.indices.asnumpy().astype(np.int64), npz[e["npz"]["indices"]])
            if e["stype"] == "csr":
                _same_bits(a.indptr.asnumpy().astype(np.int64), npz[e["npz"]["indptr"]])
            _same_bits(a.tostype("default").asnumpy(), npz[e["npz"]["dense_value"]])


DENSE_FIXTURES = ["nd_list", "nd_dict", "nd_legacy_v1", "nd_legacy_v0"]


@pytest.mark.mxnet_fixtures
@pytest.mark.parametrize("name", DENSE_FIXTURES)
def test_load_fixture_values_exact(name):
    manifest, npz, _ = _fixture(name)
    _check_against_manifest(mx.nd.load(os.path.join(FIX, name + ".nd")), manifest, npz)


@pytest.mark.mxnet_fixtures
def test_load_npshape_fixture():
    manifest, npz, raw = _fixture("nd_npshape")
    with mx.util.np_shape(True):
        loaded = mx.nd.load(os.path.join(FIX, "nd_npshape.nd"))
        _check_against_manifest(loaded, manifest, npz)
        assert mx.nd.save_to_bytes(loaded) == raw


@pytest.mark.mxnet_fixtures
def test_load_sparse_fixture(sparse):
    manifest, npz, raw = _fixture("nd_sparse")
    loaded = mx.nd.load(os.path.join(FIX, "nd_sparse.nd"))
    assert isinstance(loaded["csr0"], sparse.CSRNDArray)
    assert isinstance(loaded["rsp0"], sparse.RowSparseNDArray)
    _check_against_manifest(loaded, manifest, npz)
    assert mx.nd.save_to_bytes(loaded) == raw


@pytest.mark.mxnet_fixtures
def test_sparse_built_from_npz_is_byte_identical(sparse):
    manifest, npz, raw = _fixture("nd_sparse")
    out = {}
    for e in manifest["arrays"]:
        k = e["npz"]
        if e["stype"] == "csr":
            out[e["name"]] = sparse.csr_matrix((npz[k["data"]], npz[k["indices"]], npz[k["indptr"]]),
                                               shape=tuple(e["shape"]), dtype=e["dtype"])
        elif e["stype"] == "row_sparse":
            out[e["name"]] = sparse.row_sparse_array((npz[k["data"]], npz[k["indices"]]),
                                                     shape=tuple(e["shape"]), dtype=e["dtype"])
        else:
            out[e["name"]] = mx.nd.array(npz[k["dense_value"]], dtype=e["dtype"])
    assert mx.nd.save_to_bytes(out) == raw


@pytest.mark.mxnet_fixtures
@pytest.mark.parametrize("name", ["nd_list", "nd_dict"])
def test_save_from_npz_is_byte_identical_to_mxnet(name, tmp_path):
    # build the arrays from the npz (not from our reader) and compare with MXNet's bytes
    manifest, npz, raw = _fixture(name)
    arrays = [mx.nd.array(npz[e["npz"]["dense_value"]], dtype=e["dtype"]) for e in manifest["arrays"]]
    data = arrays if manifest["container"] == "list" else {
        e["name"]: a for e, a in zip(manifest["arrays"], arrays)}
    assert mx.nd.save_to_bytes(data) == raw
    path = tmp_path / "out.nd"
    mx.nd.save(str(path), data)
    assert path.read_bytes() == raw
    assert os.listdir(tmp_path) == ["out.nd"]


@pytest.mark.mxnet_fixtures
@pytest.mark.parametrize("name", ["nd_legacy_v1", "nd_legacy_v0"])
def test_legacy_files_resave_as_v2(name):
    manifest, npz, raw = _fixture(name)
    loaded = mx.nd.load(os.path.join(FIX, name + ".nd"))
    buf = mx.nd.save_to_bytes(loaded)
    assert buf != raw and struct.unpack_from("<I", buf, 24)[0] == 0xF993FAC9
    _check_against_manifest(mx.nd.load_frombuffer(buf), manifest, npz)


@pytest.mark.mxnet_fixtures
@pytest.mark.parametrize("model", ["mlp", "cnn", "textemb"])
def test_params_fixture_checksums_and_roundtrip(model):
    path = os.path.join(FIX, f"{model}-0000.params")
    with open(os.path.join(FIX, f"{model}-manifest.json")) as f:
        manifest = json.load(f)
    params = mx.nd.load(path)
    assert list(params) == [p["file_key"] for p in manifest["params"]]
    for p in manifest["params"]:
        a = params[p["file_key"]].asnumpy()
        assert a.shape == tuple(p["shape"]) and a.dtype == np.dtype(p["dtype"])
        assert hashlib.sha256(a.tobytes()).hexdigest() == p["sha256"]
    with open(path, "rb") as f:
        assert mx.nd.save_to_bytes(params) == f.read()


@pytest.mark.mxnet_fixtures
def test_load_ctx_argument():
    path = os.path.join(FIX, "nd_list.nd")
    arrays = mx.nd.load(path, ctx=mx.cpu(1))
    assert all(a.context == mx.cpu(1) for a in arrays)


@pytest.mark.mxnet_fixtures
@pytest.mark.gpu
def test_load_to_gpu_and_save_from_gpu():
    manifest, npz, raw = _fixture("nd_dict")
    loaded = mx.nd.load(os.path.join(FIX, "nd_dict.nd"), ctx=mx.gpu(0))
    assert all(a.context == mx.gpu(0) for a in loaded.values())
    _same_bits(loaded["arg:fc1_weight"].asnumpy(), npz["arr0"])
    assert mx.nd.save_to_bytes(loaded) == raw    # written as cpu(0) like the fixture


# -- round trips written by gpunda --------------------------------------------------------

ALL_DTYPES = ["float16", "float32", "float64", "uint8", "int8", "int32", "int64", "bool",
              "int16", "uint16", "uint32", "uint64"]


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_roundtrip_every_dtype(dtype, rng, tmp_path):
    host = (rng.standard_normal((3, 4)) * 50).astype(dtype)
    if dtype.startswith("float"):
        host.reshape(-1)[:3] = [np.nan, -0.0, np.inf]
    path = str(tmp_path / "a.nd")
    mx.nd.save(path, [mx.nd.array(host, dtype=dtype), mx.nd.array(np.zeros((0, 2)), dtype=dtype)])
    out = mx.nd.load(path)
    _same_bits(out[0].asnumpy(), host)
    _same_bits(out[1].asnumpy(), np.zeros((0, 2), dtype))


def test_dtype_codes_on_disk():
    expected = {"float32": 0, "float64": 1, "float16": 2, "uint8": 3, "int32": 4, "int8": 5,
                "int64": 6, "bool": 7}
    for dt, code in expected.items():
        buf = mx.nd.save_to_bytes(mx.nd.zeros((2,), dtype=dt))
        # header 24 + magic 4 + stype 4 + shape (4 + 8) + context 8 -> dtype at 52
        assert struct.unpack_from("<i", buf, 52)[0] == code


def test_nan_payload_and_negative_zero_survive():
    host = np.array([0x7FC00001, 0xFFC12345, 0x80000000, 0x7F800001], dtype=np.uint32).view(np.float32)
    out = mx.nd.load_frombuffer(mx.nd.save_to_bytes([mx.nd.array(host, dtype=np.float32)]))
    _same_bits(out[0].asnumpy(), host)


def test_single_array_tuple_and_names(tmp_path):
    x = mx.nd.array([[1, 2], [3, 4]])
    out = mx.nd.load_frombuffer(mx.nd.save_to_bytes(x))
    assert isinstance(out, list) and len(out) == 1
    _same_bits(out[0].asnumpy(), x.asnumpy())
    assert isinstance(mx.nd.load_frombuffer(mx.nd.save_to_bytes((x, x))), list)
    names = {"": x, "with space": x * 2, "ünïcödé/键": x * 3}
    out = mx.nd.load_frombuffer(mx.nd.save_to_bytes(names))
    assert list(out) == list(names)
    for k in names:
        _same_bits(out[k].asnumpy(), names[k].asnumpy())
    assert mx.nd.load_frombuffer(mx.nd.save_to_bytes([])) == []
    assert mx.nd.load_frombuffer(mx.nd.save_to_bytes({})) == []   # as MXNet: no names -> list


def test_non_contiguous_arrays_are_saved_by_value():
    from gpunda.ndarray.ndarray import _new
    host = np.arange(24, dtype=np.float32).reshape(4, 6)
    base = mx.nd.array(host)
    view = base[:, 1:3]          # a strided view of base's memory
    transposed = _new(host.T, mx.cpu())
    out = mx.nd.load_frombuffer(mx.nd.save_to_bytes([view, transposed]))
    _same_bits(out[0].asnumpy(), host[:, 1:3])
    _same_bits(out[1].asnumpy(), np.ascontiguousarray(host.T))


def test_loaded_arrays_are_writable_and_independent(tmp_path):
    path = str(tmp_path / "a.nd")
    mx.nd.save(path, [mx.nd.ones((2, 2)), mx.nd.ones((3,))])
    a, b = mx.nd.load(path)
    a[:] = 5
    assert b.asnumpy().tolist() == [1, 1, 1]
    assert a.asnumpy().sum() == 20


def test_large_file_arrays_are_aligned_independent_and_exact(rng):
    # above 1 MiB the arrays are carved out of one buffer: check they behave as separate arrays
    hosts = [rng.standard_normal(n).astype(dt) for n, dt in
             ((150001, np.float32), (3, np.float64), (70001, np.float64), (5, np.int8),
              (100000, np.float16))]
    out = mx.nd.load_frombuffer(mx.nd.save_to_bytes([mx.nd.array(h, dtype=h.dtype) for h in hosts]))
    for a, h in zip(out, hosts):
        _same_bits(a.asnumpy(), h)
        assert a._data.ctypes.data % 64 == 0 and a._data.flags.writeable
    out[0][:] = 7
    out[2] += 1
    _same_bits(out[1].asnumpy(), hosts[1])
    _same_bits(out[3].asnumpy(), hosts[3])
    _same_bits(out[4].asnumpy(), hosts[4])
    assert np.all(out[0].asnumpy() == 7)


def test_zero_d_arrays():
    x = mx.nd.array(np.float32(3.5))
    if x.shape == ():
        with pytest.raises(GpundaError, match="0-d"):
            mx.nd.save_to_bytes([x])
    with mx.util.np_shape(True):
        buf = mx.nd.save_to_bytes([mx.nd.array(np.float32(3.5)), mx.nd.ones((2,))])
        assert struct.unpack_from("<I", buf, 24)[0] == 0xF993FACA
        out = mx.nd.load_frombuffer(buf)
    assert out[0].shape == () and out[0].asnumpy() == np.float32(3.5)
    assert out[1].shape == (2,)


def test_none_records_load_as_none():
    # V2: ndim 0 = no array; V3: ndim -1 = no array (MXNet's empty handles)
    v2_none = struct.pack("<Iii", 0xF993FAC9, 0, 0)
    v3_none = struct.pack("<Iii", 0xF993FACA, 0, -1)
    def file_of(*records):
        return struct.pack("<QQQ", 0x112, 0, len(records)) + b"".join(records) \
            + struct.pack("<Q", 0)
    assert mx.nd.load_frombuffer(file_of(v2_none, v2_none)) == [None, None]
    with mx.util.np_shape(True):
        assert mx.nd.load_frombuffer(file_of(v3_none)) == [None]


def test_records_load_only_in_their_shape_mode():
    # MXNet 1.9.1 refuses a V3 record (np_shape) in legacy mode and a V2 record under np_shape
    a = mx.nd.array([[1, 2], [3, 4]])
    legacy = mx.nd.save_to_bytes([a])
    with mx.util.np_shape(True):
        numpy_mode = mx.nd.save_to_bytes([a])
        with pytest.raises(GpundaError, match="legacy shape"):
            mx.nd.load_frombuffer(legacy)
        assert mx.nd.load_frombuffer(numpy_mode)[0].asnumpy().tolist() == [[1, 2], [3, 4]]
    with pytest.raises(GpundaError, match="NumPy shape"):
        mx.nd.load_frombuffer(numpy_mode)
    assert mx.nd.load_frombuffer(legacy)[0].asnumpy().tolist() == [[1, 2], [3, 4]]


def test_sparse_roundtrip(sparse, rng):
    dense = rng.standard_normal((5, 7)).astype(np.float32)
    dense[dense < 0.5] = 0
    csr = mx.nd.array(dense).tostype("csr")
    rdense = dense.copy()
    rdense[[0, 2]] = 0
    rsp = mx.nd.array(rdense).tostype("row_sparse")
    empty = mx.nd.zeros((3, 4)).tostype("csr")
    out = mx.nd.load_frombuffer(mx.nd.save_to_bytes({"c": csr, "r": rsp, "e": empty}))
    assert out["c"].stype == "csr" and out["r"].stype == "row_sparse"
    _same_bits(out["c"].tostype("default").asnumpy(), dense)
    _same_bits(out["r"].tostype("default").asnumpy(), rdense)
    _same_bits(out["e"].tostype("default").asnumpy(), np.zeros((3, 4), np.float32))
    with mx.util.np_shape(True):
        with pytest.raises(GpundaError, match="sparse"):
            mx.nd.save_to_bytes([csr])


# -- safe writing -------------------------------------------------------------------------

def test_failed_save_leaves_previous_file_intact(tmp_path):
    path = tmp_path / "model.params"
    mx.nd.save(str(path), {"w": mx.nd.ones((1000,))})
    before = path.read_bytes()
    big = mx.nd.ones((100000,))
    with pytest.raises(GpundaError, match=r"array 2 .*str.*not an NDArray"):
        # the first two records are written to the temporary file before element 2 fails
        mx.nd.save(str(path), [big, big, "oops", big])
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["model.params"]
    with pytest.raises(GpundaError, match="'b'"):
        mx.nd.save(str(path), {"a": big, "b": np.ones(3)})
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["model.params"]


def test_save_replaces_and_keeps_mode_and_symlink(tmp_path):
    target = tmp_path / "real.params"
    mx.nd.save(str(target), [mx.nd.ones((2,))])
    os.chmod(target, 0o640)
    link = tmp_path / "link.params"
    os.symlink(target, link)
    mx.nd.save(str(link), [mx.nd.zeros((3,))])
    assert os.path.islink(link)
    assert (os.stat(target).st_mode & 0o777) == 0o640
    assert mx.nd.load(str(target))[0].shape == (3,)
    assert sorted(os.listdir(tmp_path)) == ["link.params", "real.params"]


def test_save_bad_arguments(tmp_path):
    with pytest.raises(GpundaError, match="data must be"):
        mx.nd.save(str(tmp_path / "x"), 3)
    with pytest.raises(GpundaError, match="keys must be str"):
        mx.nd.save(str(tmp_path / "x"), {1: mx.nd.ones(1)})
    with pytest.raises(GpundaError, match="fname"):
        mx.nd.save(42, [mx.nd.ones(1)])
    with pytest.raises(GpundaError, match="cannot write"):
        mx.nd.save(str(tmp_path / "missing_dir" / "x"), [mx.nd.ones(1)])
    assert os.listdir(tmp_path) == []


def test_pathlike_accepted(tmp_path):
    mx.nd.save(tmp_path / "p.nd", [mx.nd.ones((2,))])
    assert mx.nd.load(tmp_path / "p.nd")[0].shape == (2,)


# -- defensive loading --------------------------------------------------------------------

def _dense_record(shape, code=0, data=None, magic=0xF993FAC9):
    rec = struct.pack(f"<Iii{len(shape)}q", magic, 0, len(shape), *shape) + struct.pack("<iii", 1, 0, code)
    return rec + (data if data is not None else b"")


def _file(records, names=()):
    out = struct.pack("<QQQ", 0x112, 0, len(records)) + b"".join(records)
    out += struct.pack("<Q", len(names))
    for n in names:
        b = n.encode()
        out += struct.pack("<Q", len(b)) + b
    return out


def _load_bytes_via_file(tmp_path, buf):
    path = tmp_path / "bad.params"
    path.write_bytes(buf)
    return mx.nd.load(str(path))


def test_handmade_file_loads():
    buf = _file([_dense_record((2,), 4, struct.pack("<ii", 7, -1))], ["x"])
    assert mx.nd.load_frombuffer(buf)["x"].asnumpy().tolist() == [7, -1]


def test_saved_context_is_ignored_and_legacy_none_records():
    # a record saved from gpu(3) (dev_type 2) and one from cpu_pinned(1) load on cpu / ctx
    gpu_rec = struct.pack("<Iiiq", 0xF993FAC9, 0, 1, 2) + struct.pack("<iii", 2, 3, 0) + b"\0" * 8
    pinned = struct.pack("<Iiiq", 0xF993FAC9, 0, 1, 1) + struct.pack("<iii", 3, 1, 6) + b"\x05" + b"\0" * 7
    v1_none = struct.pack("<Ii", 0xF993FAC8, 0)
    v0_none = struct.pack("<I", 0)
    buf = _file([gpu_rec, pinned, v1_none, v0_none])
    out = mx.nd.load_frombuffer(buf)
    assert out[0].context == mx.cpu() and out[0].asnumpy().tolist() == [0.0, 0.0]
    assert out[1].asnumpy().tolist() == [5] and out[1].dtype == np.int64
    assert out[2:] == [None, None]
    records, names = mx.nd.io.load_raw(buf)
    assert names is None and [r.version for r in records] == [2, 2, 1, 0]
    assert (records[0].dev_type, records[0].dev_id) == (2, 3)


def test_bfloat16_arrays_load_as_bfloat16():
    # MXNet writes bfloat16 (dtype code 12) as the upper 16 bits of float32
    vals = np.array([[1.5, -2.25, 2.0 ** 120], [0.0, -0.0, 7.8125e-3]], dtype=np.float32)
    bf16 = (vals.view(np.uint32) >> 16).astype("<u2").tobytes()
    buf = _file([_dense_record((2, 3), 12, bf16)], ["w"])
    loaded = mx.nd.load_frombuffer(buf)
    assert loaded["w"].asnumpy().dtype.name == "bfloat16"
    assert loaded["w"].dtype == np.dtype([("bfloat16", np.uint16)])     # MXNet's spelling
    np.testing.assert_array_equal(loaded["w"].asnumpy().astype(np.float32), vals)
    assert mx.nd.save_to_bytes(loaded) == buf           # written back with code 12


@pytest.mark.parametrize("buf, msg", [
    (b"", "truncated"),
    (b"PK\x03\x04 this is a zip file, not MXNet.....", "bad magic"),
    (struct.pack("<QQQ", 0x112, 0, 2 ** 62), "claims"),
    (_file([_dense_record((2,), 99, b"\0" * 8)]), "unknown dtype code 99"),
    (_file([_dense_record((2,), 12, b"\0" * 4)])[:-9], "needs 4 bytes"),   # 2-byte bfloat16
    (_file([_dense_record((2, 3), 0, b"\0" * 20)])[:-8], "needs 24 bytes"),
    (_file([_dense_record((2 ** 40, 2 ** 40, 2 ** 40), 0)]), "absurdly large"),
    (_file([_dense_record((2 ** 30, 2 ** 20), 0)]), "needs 4503599627370496 bytes"),
    (_file([_dense_record((-3,), 0)]), "negative"),
    (_file([struct.pack("<Iii", 0xF993FAC9, 0, 1000)]), "ndim=1000"),
    (_file([struct.pack("<Iii", 0xF993FAC9, 7, 1)]), "storage type code 7"),
    (_file([struct.pack("<I", 0xDEADBEEF)]), "magic"),
    (_file([_dense_record((1,), 0, b"\0" * 4)]) + b"junk", "unexpected bytes"),
    (_file([_dense_record((1,), 0, b"\0" * 4)])[:-8] + struct.pack("<Q", 5), "5 names for 1"),
    (_file([_dense_record((1,), 0, b"\0" * 4)], ["ab"])[:-2] + b"\xff\xfe", "UTF-8"),
    (_file([_dense_record((2,), 7, b"\x00\x02")]), "bool"),
], ids=["empty", "zip", "huge-count", "dtype-99", "bfloat16-short", "short-data", "overflow",
        "too-big", "negative-dim", "ndim", "stype", "record-magic", "trailing", "name-count",
        "utf8", "bool-byte"])
def test_corrupt_files_raise_named_errors(buf, msg, tmp_path):
    with pytest.raises(GpundaError, match=msg):
        mx.nd.load_frombuffer(buf)
    with pytest.raises(GpundaError, match="bad.params") as e:
        _load_bytes_via_file(tmp_path, buf)
    assert msg in str(e.value) or msg.split()[0] in str(e.value)


def test_corrupt_sparse_structure_is_refused():
    def csr(indptr, indices, shape=(2, 3)):
        vals = np.ones(len(indices), np.float32)
        head = struct.pack("<Ii", 0xF993FAC9, 2) + struct.pack("<iq", 1, len(indices))
        head += struct.pack("<iqq", 2, *shape) + struct.pack("<iii", 1, 0, 0)
        head += struct.pack("<iiq", 6, 1, len(indptr)) + struct.pack("<iiq", 6, 1, len(indices))
        return head + vals.tobytes() + np.array(indptr, "<i8").tobytes() + np.array(indices, "<i8").tobytes()
    with pytest.raises(GpundaError, match="indptr"):
        mx.nd.load_frombuffer(_file([csr([0, 2, 1], [0])]))
    with pytest.raises(GpundaError, match="column index"):
        mx.nd.load_frombuffer(_file([csr([0, 1, 1], [5])]))
    with pytest.raises(GpundaError, match="csr needs"):
        mx.nd.load_frombuffer(_file([csr([0, 1], [0])]))


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(GpundaError, match="nope.params"):
        mx.nd.load(str(tmp_path / "nope.params"))
    with pytest.raises(GpundaError, match="cannot read"):
        mx.nd.load(str(tmp_path))
    with pytest.raises(GpundaError, match="must be bytes"):
        mx.nd.load_frombuffer("a string")
    with pytest.raises(GpundaError, match="fname must be a str"):
        mx.nd.load(mx.nd.save_to_bytes([mx.nd.ones(1)]))   # bytes go to load_frombuffer


@pytest.mark.mxnet_fixtures
def test_symbol_json_is_not_an_ndarray_file():
    with pytest.raises(GpundaError, match="bad magic.*symbol JSON; load it with mx.sym.load"):
        mx.nd.load(os.path.join(FIX, "mlp-symbol.json"))


# -- python -m gpunda inspect -------------------------------------------------------------

@pytest.mark.mxnet_fixtures
def test_inspect_params_file_prints_names_and_manifest_digests(capsys):
    from gpunda._tools import inspect as _inspect
    with open(os.path.join(FIX, "cnn-manifest.json")) as f:
        manifest = json.load(f)
    assert _inspect.main([os.path.join(FIX, "cnn-0000.params"), "--full-hash"]) == 0
    out = capsys.readouterr().out
    assert "14 arrays saved from a dict" in out
    for p in manifest["params"]:
        line = next(ln for ln in out.splitlines() if ln.split()[:1] == [p["file_key"]])
        assert p["sha256"] in line and p["dtype"] in line
        assert "(" + ", ".join(map(str, p["shape"])) in line


@pytest.mark.mxnet_fixtures
def test_inspect_sparse_and_list_files(capsys):
    from gpunda._tools import inspect as _inspect
    assert _inspect.main([os.path.join(FIX, "nd_sparse.nd")]) == 0
    out = capsys.readouterr().out
    assert "csr0" in out and "row_sparse" in out and "stored (5,)" in out
    assert _inspect.main([os.path.join(FIX, "nd_legacy_v0.nd")]) == 0
    assert "records V0" in capsys.readouterr().out


@pytest.mark.mxnet_fixtures
def test_inspect_symbol_json_with_shapes(capsys):
    pytest.importorskip("gpunda.symbol")
    from gpunda._tools import inspect as _inspect
    path = os.path.join(FIX, "mlp-symbol.json")
    assert _inspect.main([path]) == 0
    out = capsys.readouterr().out
    assert "FullyConnected" in out and "softmax" in out and "MXNet 1.9.1" in out
    assert "arguments: data, mlp_dense0_weight" in out
    assert _inspect.main([path, "--shape", "data=4,20"]) == 0
    out = capsys.readouterr().out
    shapes = dict(ln.split(None, 1) for ln in out.splitlines()
                  if ln.startswith("  ") and ln.strip().endswith(")"))
    assert shapes["mlp_dense0_weight"] == "(32, 20)"
    assert shapes["mlp_softmaxhead0_softmax0_output"] == "(4, 10)"


@pytest.mark.mxnet_fixtures
def test_inspect_cli_errors(tmp_path, capsys):
    from gpunda import __main__ as cli
    from gpunda._tools import inspect as _inspect
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"\x00\x01garbage")
    with pytest.raises(GpundaError, match="neither an MXNet NDArray file"):
        _inspect.main([str(junk)])
    assert cli.main(["inspect", str(junk)]) == 1
    assert "neither" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        _inspect.main([str(junk), "--shape", "data=1,x"])
    assert cli.main(["inspect", os.path.join(FIX, "nd_list.nd")]) == 0


def test_inspect_reports_shapes_that_do_not_fit_and_json_without_heads(tmp_path, capsys):
    from gpunda import __main__ as cli
    w = mx.sym.var("fc_weight", shape=(32, 20))
    path = str(tmp_path / "fc-symbol.json")
    mx.sym.FullyConnected(mx.sym.var("data"), weight=w, num_hidden=32, name="fc").save(path)
    assert cli.main(["inspect", path, "--shape", "data=4,7"]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    assert err.startswith("error: inspect: the shapes data=(4, 7) do not fit the graph")
    assert "'fc'" in err and "(32, 20)" in err and "(32, 7)" in err
    g = json.load(open(path))
    del g["heads"]
    nohead = tmp_path / "nohead.json"
    nohead.write_text(json.dumps(g))
    assert cli.main(["inspect", str(nohead)]) == 1
    assert capsys.readouterr().err.strip() == (f"error: inspect: {str(nohead)!r} is not an MXNet "
                                               f"symbol JSON: it has no 'heads' entry")


# -- io.utils / io.io helpers of MXNet 1.9.1 (answers recorded from MXNet 1.9.1) -------------
def test_io_utils_helpers_match_mxnet():
    import importlib.util
    from gpunda.io import utils as U
    from gpunda.io.io import _init_data
    has_h5 = importlib.util.find_spec("h5py") is not None
    assert (U.h5py is not None and U.h5py.__name__ == "h5py") if has_h5 else U.h5py is None
    a = mx.nd.array(np.arange(12).reshape(4, 3))
    b = mx.nd.array([1, 2, 3, 4], dtype="int32")
    csr = mx.nd.sparse.csr_matrix(np.array([[0, 1], [2, 0], [0, 0], [3, 4]], dtype="float32"))
    data = _init_data([a, b, csr], allow_empty=False, default_name="data")
    assert U._has_instance(data, mx.nd.sparse.CSRNDArray)
    assert not U._has_instance(_init_data(a, False, "d"), mx.nd.sparse.CSRNDArray)
    out = U._getdata_by_idx(data, np.array([3, 0, 2]))
    assert [k for k, _ in out] == ["_0_data", "_1_data", "_2_data"]
    assert [type(v).__name__ for _, v in out] == ["NDArray", "NDArray", "CSRNDArray"]
    assert [v.dtype for _, v in out] == [np.float32] * 3     # MXNet's nd.array default
    assert out[0][1].asnumpy().tolist() == [[9, 10, 11], [0, 1, 2], [6, 7, 8]]
    assert out[1][1].asnumpy().tolist() == [4, 1, 3]
    assert out[2][1].asnumpy().tolist() == [[3, 4], [0, 1], [0, 0]]
    assert U._slice_along_batch_axis(a, slice(1, 3), 0).asnumpy().tolist() == \
        [[3, 4, 5], [6, 7, 8]]
    assert U._slice_along_batch_axis(a, slice(0, 2), 1).asnumpy().tolist() == \
        [[0, 1], [3, 4], [6, 7], [9, 10]]


def test_init_io_module_installs_the_iterators_and_make_io_iterator_says_why_not():
    from gpunda.io import io as io_mod
    io_mod._init_io_module()
    for name in ("CSVIter", "MNISTIter", "LibSVMIter", "ImageRecordIter"):
        assert vars(io_mod)[name] is getattr(mx.io, name)
    with pytest.raises(GpundaError, match="_make_io_iterator is not supported: .*handle"):
        io_mod._make_io_iterator(None)
