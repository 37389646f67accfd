#!/usr/bin/env bash
# Print the path of a working Python X.Y interpreter (argument: X.Y), or exit 1.
# CI machines carry Python 3.10 to 3.13 under pyenv, where only the global version's shims
# run; so the pyenv install itself is looked at first, then whatever python3.X is on PATH.
set -u
want="${1:?usage: find_python.sh X.Y}"
root="${PYENV_ROOT:-$HOME/.pyenv}"
for cand in $(ls -d "$root"/versions/"$want".*/bin/python"$want" 2>/dev/null | sort -V -r) \
            "$(command -v "python$want" 2>/dev/null)"; do
    [ -n "$cand" ] && [ -x "$cand" ] || continue
    got="$("$cand" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)" || continue
    if [ "$got" = "$want" ]; then echo "$cand"; exit 0; fi
done
exit 1
