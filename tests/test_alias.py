"""The ``mxnet`` alias: ``python -m gpunda run``, the opt-ins, precedence over a real MXNet.

Scripts run in subprocesses; what ``python -m gpunda run script.py`` does is
compared with what plain ``python script.py`` does on the same script (the
reference), byte for byte where Python's own output is involved.
"""
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import gpunda
from gpunda._tools import alias as _alias
from gpunda.base import GpundaError

REPO = Path(__file__).resolve().parent.parent


def _env(extra_path=(), **overrides):
    env = {k: v for k, v in os.environ.items()
           if k not in ("GPUNDA_AS_MXNET", "PYTHONSTARTUP", "PYTHONWARNINGS")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *map(str, extra_path)])
    env["PYTHONNOUSERSITE"] = "1"
    env.update(overrides)
    return env


def _py(args, cwd, **kw):
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env=_env(**kw))


def _run(args, cwd, **kw):
    return _py(["-m", "gpunda", "run", *args], cwd, **kw)


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture
def fake_mxnet(tmp_path):
    """A folder holding a stand-in for a real MXNet install (``mxnet.REAL is True``)."""
    site = tmp_path / "site"
    _write(site / "mxnet" / "__init__.py", '__version__ = "1.9.1"\nREAL = True\n')
    return site


@pytest.fixture
def no_alias():
    """Leaves this process without the alias afterwards, whatever the test did."""
    saved = sys.modules.get("mxnet")
    yield
    _alias.uninstall_mxnet_alias()
    if saved is not None:
        sys.modules["mxnet"] = saved


IDENTITY = """
    import sys
    import mxnet as mx
    from mxnet import nd, gluon, autograd
    from mxnet.gluon import nn
    import mxnet.ndarray as ndm
    import mxnet.ndarray.sparse
    import mxnet.nd.sparse as nds
    import mxnet.gluon.nn
    import gpunda
    checks = {
        "nd": nd is gpunda.nd and mx.nd is gpunda.nd and ndm is gpunda.ndarray,
        "NDArray": mx.nd.NDArray is gpunda.nd.NDArray,
        "gluon": gluon is gpunda.gluon and nn is gpunda.gluon.nn,
        "autograd": autograd is gpunda.autograd,
        "sparse": nds is gpunda.ndarray.sparse is mxnet.ndarray.sparse,
        "sys.modules": sys.modules["mxnet.gluon.nn"] is gpunda.gluon.nn,
        "own spec": gpunda.ndarray.__spec__.name == "gpunda.ndarray",
        "versions": (mx.__version__, gpunda.__version__ != "1.9.1", mx.__gpunda__),
        "works": float((nd.ones((2, 2)) * 3).sum().asscalar()),
    }
    print(checks)
"""


def test_run_gives_gpunda_as_mxnet_same_module_objects(tmp_path):
    script = _write(tmp_path / "ident.py", IDENTITY)
    r = _run([script.name], tmp_path)
    assert r.returncode == 0, r.stderr
    got = eval(r.stdout)    # noqa: S307 -- our own script's dict literal
    assert got.pop("versions") == ("1.9.1", True, True)
    assert got.pop("works") == 12.0
    assert all(got.values()), got
    assert r.stderr == ""


def test_run_sets_argv_main_and_path_as_python_does(tmp_path):
    script = _write(tmp_path / "sub" / "args.py", """
        import sys
        print(repr((sys.argv, __name__, __file__, sys.path[0], __package__, __spec__)))
    """)
    args = ["sub/args.py", "a b", "--flag", "-m", "x"]
    ref = _py(args, tmp_path)
    got = _run(args, tmp_path)
    assert ref.returncode == got.returncode == 0
    assert got.stdout == ref.stdout
    assert str(script.parent) in got.stdout


@pytest.mark.parametrize("body, code", [
    ("import sys; sys.exit(3)", 3),
    ("import sys; sys.exit('bye now')", 1),
    ("raise SystemExit", 0),
    ("import sys; sys.exit(None)", 0),
])
def test_run_exit_codes_match_python(tmp_path, body, code):
    script = _write(tmp_path / "ex.py", body + "\n")
    ref, got = _py([script.name], tmp_path), _run([script.name], tmp_path)
    assert ref.returncode == code
    assert (got.returncode, got.stdout, got.stderr) == (ref.returncode, ref.stdout, ref.stderr)


@pytest.mark.parametrize("body", [
    # a chained exception raised two frames down
    """
    def inner():
        raise ValueError("boom")
    try:
        inner()
    except ValueError as e:
        raise KeyError("outer") from e
    """,
    "x = (\n",                       # a SyntaxError has no traceback header
    "import mxnet as mx\nmx.nd.ones((2, 3)) + mx.nd.ones((4, 5))\n",   # gpunda's own error
])
def test_run_traceback_matches_python(tmp_path, body):
    script = _write(tmp_path / "bad.py", body)
    got = _run([script.name], tmp_path)
    assert got.returncode == 1
    assert "_runscript" not in got.stderr and "runpy" not in got.stderr
    if "mxnet" in body:
        # plain python has no mxnet here: the script's frame leads the last traceback
        last = got.stderr.split("Traceback (most recent call last):\n")[-1]
        assert last.startswith(f'  File "{script}", line 2, in <module>\n')
        assert "GpundaError" in got.stderr.splitlines()[-1]
        return
    ref = _py([script.name], tmp_path)
    assert (got.returncode, got.stderr) == (ref.returncode, ref.stderr)


def test_run_missing_script_like_python(tmp_path):
    ref, got = _py(["nope.py"], tmp_path), _run(["nope.py"], tmp_path)
    assert ref.returncode == got.returncode == 2
    assert got.stderr == ref.stderr
    assert f"can't open file '{tmp_path / 'nope.py'}'" in got.stderr


def test_run_module_like_python_dash_m(tmp_path):
    _write(tmp_path / "pkg" / "__init__.py", "")
    _write(tmp_path / "pkg" / "tool.py", """
        import sys
        import mxnet
        print(sys.argv[1:], __name__, mxnet.__gpunda__)
        raise ValueError("from the module")
    """)
    got = _run(["-m", "pkg.tool", "x", "-y"], tmp_path)
    assert got.returncode == 1
    assert got.stdout == "['x', '-y'] __main__ True\n"
    # the traceback opens as plain ``python -m`` opens it on this interpreter (runpy's frames:
    # "<frozen runpy>" on 3.11+, the path of runpy.py on 3.10)
    _write(tmp_path / "pkg" / "plain.py", 'raise ValueError("plain")')
    ref = _py(["-m", "pkg.plain"], tmp_path)
    assert ref.returncode == 1
    opening = "\n".join(ref.stderr.splitlines()[:2])
    assert "runpy" in opening
    assert got.stderr.startswith(opening + "\n")
    assert "_runscript" not in got.stderr
    assert got.stderr.endswith("ValueError: from the module\n")
    missing = _run(["-m", "no_such_module_here"], tmp_path)
    assert missing.returncode == 1 and "No module named no_such_module_here" in missing.stderr


def test_run_help_and_usage_errors(tmp_path):
    h = _run(["--help"], tmp_path)
    assert h.returncode == 0 and "-m module" in h.stdout and "sys.argv[1:]" in h.stdout
    bare = _run([], tmp_path)
    assert bare.returncode == 2 and "give the script to run" in bare.stderr


def test_missing_mxnet_module_names_it(tmp_path):
    script = _write(tmp_path / "miss.py", """
        import mxnet as mx
        try:
            import mxnet.contrib.tensorrt
        except ModuleNotFoundError as e:
            print(e.name, "|", e)
        try:
            mx.no_such_thing
        except AttributeError as e:
            print(e)
    """)
    r = _run([script.name], tmp_path)
    assert r.returncode == 0, r.stderr
    first, second = r.stdout.splitlines()
    # as MXNet 1.9.1's wheel, which has no contrib.tensorrt either
    assert first == "mxnet.contrib.tensorrt | No module named 'mxnet.contrib.tensorrt'"
    assert second.startswith("module 'mxnet' (gpunda ") and second.endswith(
        "has no attribute 'no_such_thing'")


def test_env_var_opt_in_through_the_startup_hook(tmp_path):
    """The .pth line the package installs, processed as site processes site-packages."""
    site = tmp_path / "site"
    site.mkdir()
    shutil.copy(REPO / "gpunda_mxnet_alias.pth", site)
    start = f"import site; site.addsitedir({str(site)!r}); import sys; "
    on = _py(["-c", start + "import mxnet; print(mxnet.__gpunda__, mxnet.nd is "
                            "sys.modules['gpunda'].nd)"], tmp_path, GPUNDA_AS_MXNET="1")
    assert on.returncode == 0 and on.stdout == "True True\n", on.stderr
    # unset or off: the hook neither imports gpunda nor installs anything
    probe = start + "print('gpunda' in sys.modules, [type(f).__name__ for f in sys.meta_path])"
    for off in ("0", "", None):
        env = {} if off is None else {"GPUNDA_AS_MXNET": off}
        r = _py(["-c", probe], tmp_path, **env)
        assert r.returncode == 0 and r.stdout.startswith("False ["), r.stderr
        assert "_MxnetFinder" not in r.stdout


def test_env_opt_in_beside_a_real_mxnet_notices_at_the_first_import_only(tmp_path, fake_mxnet):
    site = tmp_path / "hook"
    site.mkdir()
    shutil.copy(REPO / "gpunda_mxnet_alias.pth", site)
    start = f"import site; site.addsitedir({str(site)!r}); "
    quiet = _py(["-c", start + "print('ok')"], tmp_path, extra_path=[fake_mxnet],
                GPUNDA_AS_MXNET="1")
    assert quiet.stdout == "ok\n" and quiet.stderr == ""
    loud = _py(["-c", start + "import mxnet; import mxnet.nd; print(mxnet.__gpunda__)"],
               tmp_path, extra_path=[fake_mxnet], GPUNDA_AS_MXNET="1")
    assert loud.stdout == "True\n"
    (line,) = loud.stderr.splitlines()
    assert "GPUNDA_AS_MXNET=1" in line and str(fake_mxnet / "mxnet") in line


def test_run_passes_the_opt_in_to_child_processes(tmp_path):
    script = _write(tmp_path / "child.py", "import os; print(os.environ.get('GPUNDA_AS_MXNET'))\n")
    assert _run([script.name], tmp_path).stdout == "1\n"


def test_explicit_call_and_env_helper(no_alias):
    sys.modules.pop("mxnet", None)
    mx = gpunda.install_mxnet_alias()
    import mxnet
    import mxnet.gluon.nn as nn
    assert mxnet is mx and _alias.is_alias(mx) and nn is gpunda.gluon.nn
    assert gpunda.install_mxnet_alias() is mx            # idempotent
    assert repr(mx).startswith("<module 'mxnet' (gpunda ") and "MXNet 1.9.1 API" in repr(mx)
    assert "nd" in dir(mx)
    assert [_alias.env_requests_alias({"GPUNDA_AS_MXNET": v}) for v in ("1", "yes", "0", "off")] \
        == [True, True, False, False]
    _alias.uninstall_mxnet_alias()
    assert "mxnet" not in sys.modules and "mxnet.gluon.nn" not in sys.modules


def test_without_opt_in_a_real_mxnet_is_untouched(tmp_path, fake_mxnet):
    r = _py(["-c", "import gpunda, mxnet; print(getattr(mxnet, 'REAL', False), mxnet.__file__)"],
            tmp_path, extra_path=[fake_mxnet])
    assert r.stdout == f"True {fake_mxnet / 'mxnet' / '__init__.py'}\n" and r.stderr == ""


def test_opt_in_wins_over_a_real_mxnet_and_says_so(tmp_path, fake_mxnet):
    script = _write(tmp_path / "which.py", "import mxnet; print(hasattr(mxnet, 'REAL'))\n")
    r = _run(["--", script.name], tmp_path, extra_path=[fake_mxnet])
    assert r.returncode == 0 and r.stdout == "False\n"
    notice = r.stderr.splitlines()
    assert len(notice) == 1, r.stderr
    assert str(fake_mxnet / "mxnet") in notice[0]
    assert str(REPO / "gpunda") in notice[0] and "python -m gpunda run" in notice[0]


def test_install_after_a_real_mxnet_was_imported_refuses(tmp_path, fake_mxnet):
    r = _py(["-c", "import mxnet, gpunda\ntry:\n    gpunda.install_mxnet_alias()\n"
                   "except gpunda.GpundaError as e:\n    print(e)"],
            tmp_path, extra_path=[fake_mxnet])
    assert "already imported" in r.stdout and str(fake_mxnet / "mxnet") in r.stdout, r.stderr


def test_refusal_is_a_gpunda_error(no_alias, monkeypatch):
    import types
    monkeypatch.setitem(sys.modules, "mxnet", types.ModuleType("mxnet"))
    with pytest.raises(GpundaError, match="before the first `import mxnet`"):
        _alias.install_mxnet_alias()


def test_import_mxnet_leaves_mxnets_stdlib_modules(tmp_path):
    # MXNet 1.9.1's import leaves multiprocessing.pool and friends imported (code reaches
    # them as attributes); through the alias `import mxnet` does too, `import gpunda` not
    import subprocess
    import sys
    code = ("import sys, gpunda; before = 'multiprocessing.pool' in sys.modules; "
            "gpunda.install_mxnet_alias(); import multiprocessing, mxnet; "
            "print(before, multiprocessing.pool.ThreadPool.__name__, "
            "mxnet.gluon.data.dataloader.ForkingPickler.__name__, "
            "mxnet.contrib.amp.amp._amp_initialized)")
    env = {k: v for k, v in __import__("os").environ.items() if k != "GPUNDA_AS_MXNET"}
    env["PYTHONPATH"] = str(__import__("pathlib").Path(__file__).resolve().parents[1])
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=120)
    assert out.stdout.split() == ["False", "ThreadPool", "ForkingPickler", "False"], out.stderr


def test_gluonnlp_repo_urls(monkeypatch):
    from gpunda.gluon import utils
    # MXNet 1.9.1's answers
    monkeypatch.delenv("MXNET_GLUON_REPO", raising=False)
    assert utils._get_repo_file_url("gluon/dataset", "x.zip") == \
        "https://apache-mxnet.s3-accelerate.dualstack.amazonaws.com/gluon/dataset/x.zip"
    monkeypatch.setenv("MXNET_GLUON_REPO", "http://mirror/a")
    assert utils._get_repo_url() == "http://mirror/a/"
