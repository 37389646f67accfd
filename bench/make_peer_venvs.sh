#!/usr/bin/env bash
# Make one virtualenv per peer framework under bench/.venvs/ (their dependencies conflict).
# A peer that cannot be installed is reported as missing by the suite, never dropped silently.
# Usage: bash bench/make_peer_venvs.sh [mxnet] [torch] [chainer]
set -u
here="$(cd "$(dirname "$0")" && pwd)"
root="$here/.venvs"
mkdir -p "$root"
peers=("$@")
[ ${#peers[@]} -eq 0 ] && peers=(mxnet torch chainer)
py=${PYTHON:-python3}
for peer in "${peers[@]}"; do
    v="$root/$peer"
    log="$root/$peer.log"
    echo "== $peer -> $v (log: $log)"
    rm -rf "$v"
    "$py" -m venv "$v" || { echo "$peer: venv failed"; continue; }
    pip="$v/bin/pip"
    "$pip" install -q --upgrade pip >"$log" 2>&1
    case "$peer" in
        mxnet)   # MXNet 1.9.1 breaks on numpy >= 1.24 (np.bool) and needs an old scipy
            "$pip" install -q "mxnet==1.9.1" "numpy<1.24" "scipy<1.11" threadpoolctl >>"$log" 2>&1 ;;
        torch)   # this machine serves the CPU build for this exact version
            "$pip" install -q "torch==2.13.0" numpy scipy threadpoolctl >>"$log" 2>&1 ;;
        chainer) # an sdist that needs an old setuptools and no build isolation
            "$pip" install -q "setuptools<70" wheel "numpy<2" scipy threadpoolctl >>"$log" 2>&1 &&
            "$pip" install -q --no-build-isolation "chainer==7.8.1" >>"$log" 2>&1 ;;
        *) echo "unknown peer $peer"; continue ;;
    esac
    if [ $? -eq 0 ]; then echo "$peer: ok"; else echo "$peer: FAILED (see $log)"; touch "$v/.failed"; fi
done
