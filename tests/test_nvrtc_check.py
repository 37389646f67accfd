"""``python -m gpunda nvrtc-check`` (_tools/nvrtc_check.py): every CUDA source gpunda holds or
generates compiles with NVRTC for sm_80, sm_90 and sm_100, without a GPU.

The compile tests run where an NVRTC wheel is importable (CI installs nvidia-cuda-nvrtc and
nvidia-cuda-nvrtc-cu12 with their runtime headers, .ci/run) and skip elsewhere; the registry
tests run everywhere.
"""
import pytest

from gpunda._core import cuda_sources as CS
from gpunda._tools import nvrtc_check as NC

_TOOLKITS, _PROBLEMS = NC.find_toolkits()
needs_nvrtc = pytest.mark.skipif(
    not _TOOLKITS, reason="no NVRTC library found (pip install nvidia-cuda-nvrtc "
    "nvidia-cuda-runtime, or set GPUNDA_NVRTC_LIBS)" + (f": {_PROBLEMS}" if _PROBLEMS else ""))


@pytest.fixture
def registry(monkeypatch):
    monkeypatch.setattr(CS, "_PROVIDERS", dict(CS._PROVIDERS))
    return CS


def test_builtin_providers_yield_every_source():
    got = CS.collect_sources()
    names = {(p, s.name) for p, s in got}
    for dt in ("float32", "float64", "float16"):
        assert ("cuda_gemm", f"gpunda_gemm[{dt}]") in names
        assert ("flat_optimizer", f"flat_optimizer[{dt}]") in names
    assert ("rtc_examples", "rtc_axpy") in names and ("rtc_examples", "rtc_shared_half") in names
    for _, s in got:
        assert s.code and "__global__" in s.code, s.name
    opt = [s for p, s in got if p == "flat_optimizer"]
    assert all("--fmad=false" in s.options for s in opt)
    for k in ("gpunda_flat_sgd", "gpunda_flat_adam", "gpunda_flat_lamb1", "gpunda_flat_lamb2",
              "gpunda_flat_adamw"):
        assert all(f'extern "C" __global__ void GPUNDA_K({k})(' in s.code for s in opt), k
    # the multi-precision forms (float16 weights, float32 masters) are their own source
    assert ("flat_optimizer", "flat_optimizer[float32_mp]") in names


def test_register_source_provider(registry):
    registry.register_source_provider("mine", lambda: [("k", "extern \"C\" __global__ void "
                                                              "k(float *x) { x[0] = 1; }")])
    registry.register_source_provider("lazy", "gpunda.rtc:cuda_sources")
    got = registry.collect_sources(["mine", "lazy"])
    assert [(p, s.name) for p, s in got] == [("mine", "k"), ("lazy", "rtc_axpy"),
                                             ("lazy", "rtc_shared_half")]
    assert got[0][1].name_expressions == () and got[0][1].options == ()
    with pytest.raises(TypeError, match="module:function"):
        registry.register_source_provider("bad", "no_colon")


def test_a_provider_that_raises_is_a_failure(registry):
    def broken():
        raise RuntimeError("codegen fell over")
    registry.register_source_provider("broken", broken)
    (p, s), = registry.collect_sources(["broken"])
    assert s.code is None and "codegen fell over" in s.options[0]
    lines = []
    compiled, failures = NC.check([], providers=["broken"], out=lines.append)
    assert compiled == 0 and failures == []        # no toolkit: nothing to compile with
    if _TOOLKITS:
        compiled, failures = NC.check(_TOOLKITS[:1], providers=["broken"], out=lines.append)
        assert compiled == 0 and len(failures) == 1 and "codegen fell over" in failures[0][3]


@needs_nvrtc
def test_toolkits_know_the_archs():
    for tk in _TOOLKITS:
        assert tk.version[0] >= 12
        assert 80 in tk.archs and 90 in tk.archs, (tk.version, tk.archs)
        assert any("include" in d for d in tk.include_dirs), tk.include_dirs


@needs_nvrtc
def test_every_source_compiles_for_every_arch():
    lines = []
    compiled, failures = NC.check(_TOOLKITS, out=lines.append)
    assert failures == [], "\n".join(lines)
    n_src = len(CS.collect_sources())
    want = sum(len([a for a in NC.ARCHS if a in tk.archs]) for tk in _TOOLKITS) * n_src
    assert compiled == want > 0


@needs_nvrtc
def test_a_bad_source_fails_with_the_nvrtc_log(registry):
    registry.register_source_provider(
        "bad", lambda: [("bad", 'extern "C" __global__ void bad(float *x) '
                                '{ x[0] = undefined_name; }')])
    lines = []
    compiled, failures = NC.check(_TOOLKITS[:1], archs=(80,), providers=["bad"],
                                  out=lines.append)
    assert compiled == 0 and len(failures) == 1
    ver, arch, name, log = failures[0]
    assert arch == 80 and name == "bad/bad" and "undefined_name" in log
    assert any(line.startswith("FAILED: NVRTC") for line in lines)


@needs_nvrtc
def test_cli(capsys):
    from gpunda.__main__ import main
    assert main(["nvrtc-check", "--provider", "rtc_examples", "--arch", "80"]) == 0
    out = capsys.readouterr().out
    assert "0 failed" in out and "sm_80" in out
    assert main(["nvrtc-check", "--list"]) == 0
    assert "flat_optimizer: flat_optimizer[float16]" in capsys.readouterr().out


@needs_nvrtc
@pytest.mark.skipif(not NC._cupy_include(), reason="CuPy is not installed (its headers are "
                    "what CuPy-generated kernels include)")
def test_cupy_headers_are_on_the_include_path(registry):
    # code as CuPy's ElementwiseKernel generates it includes cupy/carray.cuh and complex.cuh,
    # which include CuPy's bundled CCCL (thrust)
    registry.register_source_provider("cupy_style", lambda: [(
        "cupy_style", "#include <cupy/complex.cuh>\n#include <cupy/carray.cuh>\n"
        'extern "C" __global__ void k(CArray<float, 1, true, true> x) '
        "{ x[threadIdx.x] = thrust::abs(complex<float>(1.f, 2.f)); }")])
    compiled, failures = NC.check(_TOOLKITS, archs=(90,), providers=["cupy_style"],
                                  out=lambda s: None)
    assert failures == [] and compiled == len(_TOOLKITS)
