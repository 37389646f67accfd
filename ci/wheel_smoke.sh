#!/usr/bin/env bash
# gpunda as a user installs it, not as an editable checkout: build the sdist and the wheel
# (`python -m build`, which builds the wheel from the sdist, so a file the sdist forgets is
# missing from the wheel too), check that the wheel holds every file of the package that git
# tracks (the .py files and the data read at run time: gpunda/data/digits.npz and its README)
# and the `mxnet` alias start-up hook gpunda_mxnet_alias.pth at its root, then install it in
# a fresh venv (its dependencies as the wheel declares them) and run a smoke test from
# outside the checkout: import, the data file, a tiny forward/backward checked against NumPy,
# `GPUNDA_AS_MXNET=1 ... import mxnet`, `python -m gpunda info` and one epoch of
# `python -m gpunda demo` (which trains on the packaged digits). Then a plain, non-editable
# `pip install .` of the source tree must install the very same files, and pass the smoke test.
#
# Usage (repo root or anywhere): bash ci/wheel_smoke.sh      (PYTHON=python3.12 to pick one)
# Works in a scratch folder under /tmp (removed at the end; KEEP=1 keeps it) and reuses pip's
# cache; builds without isolation (setuptools from the venv) to save the build envs. The
# source is the checkout's files that git tracks or would (not ignored), as in the working
# tree. Exits non-zero, saying what, on the first failure.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
py="${PYTHON:-python3}"
work="$(mktemp -d /tmp/gpunda-wheel.XXXXXX)"
if [ "${KEEP:-0}" = 1 ]; then echo "wheel smoke: keeping $work"; else trap 'rm -rf "$work"' EXIT; fi
fail() { echo "wheel smoke: FAILED: $*" >&2; exit 1; }
step() { echo "wheel smoke [$((SECONDS))s]: $*"; }
export PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
# the installed package, not a checkout on the path nor an alias switched on by the caller
unset PYTHONPATH GPUNDA_AS_MXNET PIP_REQUIRE_VIRTUALENV

# 1. the source: tracked files only (what a clean clone has), so no build/, egg-info or venv
#    of the checkout leaks in, and nothing is written into the checkout
src="$work/src"
mkdir -p "$src"
listed() {   # tracked and new (not ignored) files that exist, NUL-separated
    git -C "$repo" ls-files -z --cached --others --exclude-standard "$@" \
        | (cd "$repo" && while IFS= read -r -d '' f; do [ -f "$f" ] && printf '%s\0' "$f"; done)
}
listed | (cd "$repo" && xargs -0 cp --parents -t "$src") || fail "could not copy the files of $repo"
listed gpunda | tr '\0' '\n' | sort > "$work/tracked.txt"

# 2. build the sdist and the wheel (from the sdist)
step "venv and build ($("$py" --version))"
"$py" -m venv "$work/venv" || fail "python -m venv"
vpy="$work/venv/bin/python"
"$vpy" -m pip install -q build 'setuptools>=64' wheel || fail "pip install build setuptools wheel"
"$vpy" -m build --no-isolation --outdir "$work/dist" "$src" > "$work/build.log" 2>&1 \
    || { tail -30 "$work/build.log"; fail "python -m build"; }
sdist="$(ls "$work"/dist/gpunda-*.tar.gz)" && whl="$(ls "$work"/dist/gpunda-*.whl)" \
    || fail "python -m build made no sdist or no wheel: $(ls "$work/dist")"
step "built $(basename "$sdist") and $(basename "$whl")"

# 3. what the wheel holds: every tracked package file, the start-up hook at the root
"$vpy" - "$whl" "$sdist" "$work/tracked.txt" "$src/gpunda_mxnet_alias.pth" <<'EOF' || fail "wheel contents"
import sys, tarfile, zipfile
whl, sdist, tracked, pth = sys.argv[1:]
names = set(zipfile.ZipFile(whl).namelist())
want = set(open(tracked).read().split())
missing = sorted(want - names)
assert not missing, f"the wheel lacks tracked package files: {missing[:20]}"
assert "gpunda_mxnet_alias.pth" in names, "the wheel lacks gpunda_mxnet_alias.pth at its root"
assert zipfile.ZipFile(whl).read("gpunda_mxnet_alias.pth") == open(pth, "rb").read()
assert not [n for n in names if n.startswith(("tests/", "bench/", "ci/"))], "tests/bench/ci in the wheel"
with tarfile.open(sdist) as t:
    top = t.getnames()[0].split("/")[0]
    snames = {n.split("/", 1)[1] for n in t.getnames() if "/" in n}
for f in ("gpunda_mxnet_alias.pth", "LICENSE", "setup.py", "pyproject.toml", "README.md"):
    assert f in snames, f"the sdist lacks {f}"
assert any(n.endswith("LICENSE") for n in names), "the wheel lacks the LICENSE"
print(f"wheel smoke: the wheel holds all {len(want)} tracked package files and the .pth hook")
EOF

# 4. install the wheel (dependencies from pip's cache) and smoke-test it outside the checkout
smoke() {   # $1: what was installed; $2: "full" adds info and the demo
    local site
    cd "$work"
    site="$("$vpy" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    [ -f "$site/gpunda_mxnet_alias.pth" ] || fail "$1: no gpunda_mxnet_alias.pth in $site"
    "$vpy" - "$site" <<'EOF' || fail "$1: import / data / forward-backward"
import os, sys
import numpy as np
import gpunda as mx
from gpunda import autograd, nd
site = sys.argv[1]
assert os.path.realpath(mx.__file__).startswith(os.path.realpath(site)), mx.__file__
data = os.path.join(os.path.dirname(mx.__file__), "data")
with np.load(os.path.join(data, "digits.npz")) as d:
    assert d["images"].shape == (1797, 8, 8) and d["labels"].shape == (1797,)
assert os.path.isfile(os.path.join(data, "README.md"))
xv, wv = np.array([[1., 2.], [3., 4.]], "float32"), np.array([[.5, -1.], [.25, 2.]], "float32")
x, w = nd.array(xv), nd.array(wv)
w.attach_grad()
with autograd.record():
    y = nd.dot(x, w).tanh().sum()
y.backward()
t = np.tanh(xv @ wv)
assert np.allclose(y.asscalar(), t.sum(), rtol=1e-5)
assert np.allclose(w.grad.asnumpy(), xv.T @ (1 - t * t), rtol=1e-5)
print("wheel smoke: import, data files and a forward/backward: ok")
EOF
    GPUNDA_AS_MXNET=1 "$vpy" -c 'import mxnet, gpunda; assert mxnet.__gpunda__; assert mxnet.nd.NDArray is gpunda.nd.NDArray' \
        || fail "$1: GPUNDA_AS_MXNET=1 import mxnet"
    "$vpy" -c 'import sys; import mxnet' 2>/dev/null && fail "$1: import mxnet without the alias"
    if [ "${2:-}" = full ]; then
        "$vpy" -m gpunda info > "$work/info.txt" 2>&1 || { cat "$work/info.txt"; fail "$1: gpunda info"; }
        grep -q '^CUDA driver: ' "$work/info.txt" || { cat "$work/info.txt"; fail "$1: info lacks the CUDA lines"; }
        "$work/venv/bin/gpunda" --help > /dev/null || fail "$1: the gpunda console script"
        # one epoch (a few seconds): it trains on the packaged data; exit 1 = short of the
        # 97% accuracy the full six epochs reach, anything else is a failure
        local rc=0
        "$vpy" -m gpunda demo --epochs 1 --bench-steps 0 > "$work/demo.txt" 2>&1 || rc=$?
        { [ "$rc" -le 1 ] && grep -q '^final test accuracy' "$work/demo.txt"; } \
            || { tail -5 "$work/demo.txt"; fail "$1: python -m gpunda demo (exit $rc)"; }
        grep "^final test accuracy" "$work/demo.txt"
    fi
    step "$1: ok"
}
files_of() { "$vpy" -m pip show -f gpunda | sed -n '/^Files:/,$p' | grep -v '__pycache__' | sort; }

step "pip install the wheel"
"$vpy" -m pip install -q "$whl" || fail "pip install $(basename "$whl")"
smoke "wheel" full
files_of > "$work/files-wheel.txt"

# 5. a plain `pip install .` of the source tree: the same files, the same smoke
step "pip install . (not editable)"
"$vpy" -m pip install -q --force-reinstall --no-deps --no-build-isolation "$src" \
    || fail "pip install ."
files_of > "$work/files-tree.txt"
diff "$work/files-wheel.txt" "$work/files-tree.txt" || fail "pip install . installs other files than the wheel"
smoke "pip install ."
step "passed"
