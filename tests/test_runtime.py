"""mx.runtime.Features: MXNet's feature names, one shared instance, truthful values."""
import pytest

import gpunda as mx
from gpunda.runtime import Features, feature_list


MXNET_1_9_1_FEATURES = [
    "CUDA", "CUDNN", "NCCL", "CUDA_RTC", "TENSORRT", "CPU_SSE", "CPU_SSE2", "CPU_SSE3",
    "CPU_SSE4_1", "CPU_SSE4_2", "CPU_SSE4A", "CPU_AVX", "CPU_AVX2", "OPENMP", "SSE", "F16C",
    "JEMALLOC", "BLAS_OPEN", "BLAS_ATLAS", "BLAS_MKL", "BLAS_APPLE", "LAPACK", "MKLDNN",
    "OPENCV", "CAFFE", "PROFILER", "DIST_KVSTORE", "CXX14", "INT64_TENSOR_SIZE",
    "SIGNAL_HANDLER", "DEBUG", "TVM_OP"]


def test_has_every_mxnet_name_in_order():
    assert list(Features())[:len(MXNET_1_9_1_FEATURES)] == MXNET_1_9_1_FEATURES


def test_singleton():
    assert Features() is Features()
    assert feature_list() == list(Features().values())


def test_values_are_truthful():
    f = Features()
    assert f.is_enabled("cuda") == (mx.num_gpus() > 0)
    assert f.is_enabled("PROFILER") and f.is_enabled("SPARSE") and f.is_enabled("LAPACK")
    assert not f.is_enabled("MKLDNN") and not f.is_enabled("OPENCV")
    assert repr(f["CUDA"]) in ("✔ CUDA", "✖ CUDA")


def test_unknown_feature_is_a_runtime_error():
    with pytest.raises(RuntimeError, match="'this girl is on fire' is unknown"):
        Features().is_enabled("this girl is on fire")
