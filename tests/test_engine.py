"""mx.engine: the bulk size is per thread, returned and restored as MXNet's."""
import threading

import pytest

import gpunda as mx


def test_bulk_size_per_thread_and_scope():
    assert mx.engine.set_bulk_size(5) == 0
    seen = []
    t = threading.Thread(target=lambda: seen.append(mx.engine.set_bulk_size(3)))
    t.start()
    t.join()
    assert seen == [0]
    with mx.engine.bulk(10):
        assert mx.engine.set_bulk_size(10) == 10
    assert mx.engine.set_bulk_size(0) == 5


def test_bad_bulk_size():
    with pytest.raises(mx.MXNetError, match="size=-1"):
        mx.engine.set_bulk_size(-1)
