"""gpunda.kvstore is a package as MXNet's: kvstore.kvstore, kvstore.base, kvstore_server."""
import pytest

import gpunda as mx


def test_package_layout_is_mxnets():
    from gpunda.kvstore import base, kvstore, kvstore_server
    assert mx.kv.KVStore is kvstore.KVStore and mx.kv.KVStoreBase is base.KVStoreBase
    assert mx.kv.KVStoreServer is kvstore_server.KVStoreServer
    assert isinstance(base.create("local"), kvstore.KVStore)
    assert isinstance(base.create("teststore"), base.TestStore)


def test_server_command_codes_are_mxnets():
    from gpunda.kvstore.kvstore import _get_kvstore_server_command_type as code
    # MXNet 1.9.1's table
    assert [code(c) for c in ("kController", "kSetMultiPrecision", "kStopServer", "kSyncMode",
                              "kSetGradientCompression", "kSetProfilerParams")] == list(range(6))
    with pytest.raises(mx.MXNetError, match="kNope"):
        code("kNope")


def test_updater_wrapper_calls_the_updater():
    from gpunda.kvstore.kvstore import _updater_wrapper
    seen = []
    _updater_wrapper(lambda k, a, b: seen.append((k, a, b)))(3, "merged", "stored", None)
    assert seen == [(3, "merged", "stored")]


def test_server_role_and_c_helpers_say_unsupported(monkeypatch):
    from gpunda.kvstore import base, kvstore_server
    monkeypatch.setenv("DMLC_ROLE", "server")
    with pytest.raises(mx.MXNetError, match="parameter-server"):
        kvstore_server._init_kvstore_server_module()
    monkeypatch.setenv("DMLC_ROLE", "worker")
    kvstore_server._init_kvstore_server_module()
    with pytest.raises(mx.MXNetError, match="_ctype_key_value is not supported"):
        base._ctype_key_value([1], [mx.nd.ones(1)])
