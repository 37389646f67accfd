"""Compare two normalised program results (``interp.normalise``) with dtype-aware tolerances.

``compare(ref, got)`` returns a list of differences, each ``(where, what, detail)``:
``where`` is the environment entry (``x``, ``x[1]``, ``d['k']``), ``what`` one of the
classes below, so the classifier (``known.py``) can group them:

  missing / extra   the entry exists on one side only
  kind              array vs exception vs list ...
  error             both raised, different exception classes
  dtype / shape / stype / np-type
  inplace           one side left an input untouched, the other changed it
  value             values differ beyond the tolerance of the dtype
  moments           random samples: mean/std too far apart for the sample size
"""
from __future__ import annotations

import numpy as np

# (rtol, atol) per dtype kind/size; atol scales with the reference's magnitude
TOL = {"float16": (1e-2, 1e-2), "float32": (1e-4, 1e-5), "float64": (1e-7, 1e-9)}
# ops whose results are long accumulations or iterative (linalg, big sums) get this
LOOSE = {"float16": (3e-2, 3e-2), "float32": (2e-3, 2e-4), "float64": (1e-6, 1e-8)}


def _values_close(a, b, dtype, loose=False):
    if a.shape != b.shape:
        return False, "shape %s vs %s" % (a.shape, b.shape)
    if a.dtype.kind not in "fc":
        if np.array_equal(a, b):
            return True, ""
        bad = np.argwhere(a != b)
        return False, "%d of %d differ, first at %s: %r vs %r" % (
            len(bad), a.size, tuple(bad[0]), a[tuple(bad[0])], b[tuple(bad[0])])
    rtol, atol = (LOOSE if loose else TOL).get(dtype, (1e-4, 1e-5))
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    fin = np.isfinite(a64)
    scale = max(1.0, float(np.abs(a64[fin]).max())) if fin.any() else 1.0
    ok = np.isclose(a64, b64, rtol=rtol, atol=atol * scale, equal_nan=True)
    if ok.all():
        return True, ""
    bad = np.argwhere(~ok)
    first = tuple(bad[0])
    return False, "%d of %d differ, first at %s: %r vs %r" % (
        len(bad), a.size, first, a64[first], b64[first])


def summarise(v):
    """What a fixture keeps of a random sample: [mean, std, size] (NaN when not finite)."""
    v = v.astype(np.float64).ravel()
    if not np.isfinite(v).all():
        return np.array([np.nan, np.nan, v.size])
    return np.array([v.mean(), v.std(), v.size])


def _moments_close(sa, sb):
    """Summaries (``summarise``) of samples of the same distribution from different
    generators: means within 6 standard errors and standard deviations within 25%."""
    (ma, da, n), (mb, db, _) = sa, sb
    if np.isnan(ma) or np.isnan(mb):
        return np.isnan(ma) == np.isnan(mb), "non-finite samples"
    se = np.sqrt((da ** 2 + db ** 2) / n) + 1e-12
    if abs(ma - mb) > 6 * se + 1e-6:
        return False, "mean %.4g vs %.4g (se %.3g)" % (ma, mb, se)
    if max(da, db) > 1e-6 and not 0.75 < (db + 1e-12) / (da + 1e-12) < 1.33:
        return False, "std %.4g vs %.4g" % (da, db)
    return True, ""


MOMENT_MIN_SIZE = 400


def compact(res):
    """A recorded result made small for the fixture: random samples keep only their
    moments (large float samples) or nothing (shape and dtype are compared)."""
    if isinstance(res, dict):
        if res.get("t") == "a" and res.get("random") and "v" in res:
            v = res.pop("v")
            if v.size >= MOMENT_MIN_SIZE and v.dtype.kind == "f":
                res["moments"] = summarise(v)
            return res
        return {k: compact(v) for k, v in res.items()}
    if isinstance(res, list):
        return [compact(v) for v in res]
    return res


def compare(ref, got, loose=False, where=""):
    """Differences between normalised results ``ref`` (MXNet) and ``got`` (gpunda)."""
    out = []
    if isinstance(ref, dict) and "t" not in ref:      # the top-level environment
        for k in ref:
            if k not in got:
                out.append((k, "missing", ref[k].get("cls", ref[k]["t"])))
            else:
                out.extend(compare(ref[k], got[k], loose, k))
        for k in got:
            if k not in ref:
                out.append((k, "extra", got[k].get("cls", got[k]["t"])))
        return out
    if ref["t"] != got["t"]:
        return [(where, "kind", "%s vs %s" % (_desc(ref), _desc(got)))]
    t = ref["t"]
    if t == "e":
        if ref["cls"] != got["cls"]:
            out.append((where, "error", "%s vs %s" % (ref["cls"], got["cls"])))
    elif t == "s":
        r, g = ref["v"], got["v"]
        if isinstance(r, float) and isinstance(g, (int, float)):
            if not np.isclose(r, g, rtol=1e-5, equal_nan=True):
                out.append((where, "value", "%r vs %r" % (r, g)))
        elif r != g:
            out.append((where, "value", "%r vs %r" % (r, g)))
    elif t in ("l", "d"):
        if t == "d" and ref["keys"] != got["keys"]:
            return [(where, "keys", "%s vs %s" % (ref["keys"], got["keys"]))]
        if len(ref["items"]) != len(got["items"]):
            return [(where, "length", "%d vs %d" % (len(ref["items"]), len(got["items"])))]
        names = ref["keys"] if t == "d" else range(len(ref["items"]))
        for n, r, g in zip(names, ref["items"], got["items"]):
            out.extend(compare(r, g, loose, "%s[%r]" % (where, n)))
    elif t == "a":
        out.extend(_compare_arrays(ref, got, loose, where))
    return out


def _compare_arrays(ref, got, loose, where):
    out = []
    for field in ("dtype", "shape", "stype"):
        if ref[field] != got[field]:
            out.append((where, field, "%s vs %s" % (ref[field], got[field])))
    if ref.get("np", False) != got.get("np", False):
        out.append((where, "np-type", "%s vs %s" % (ref.get("np"), got.get("np"))))
    if out:
        return out
    if ref.get("same") or got.get("same"):
        if not (ref.get("same") and got.get("same")):
            out.append((where, "inplace", "input %s by MXNet, %s by gpunda" % (
                "untouched" if ref.get("same") else "changed",
                "untouched" if got.get("same") else "changed")))
        return out
    if ref.get("random") or got.get("random"):
        if "moments" in ref:
            b = got["v"] if "v" in got else None
            if b is not None and b.size >= MOMENT_MIN_SIZE:
                ok, why = _moments_close(ref["moments"], summarise(b))
                if not ok:
                    out.append((where, "moments", why))
        return out
    a, b = ref["v"], got["v"]
    ok, why = _values_close(a, b, ref["dtype"], loose)
    if not ok:
        out.append((where, "value", why))
    return out


def _desc(e):
    return e["cls"] if e["t"] == "e" else {"a": "array", "l": "list", "d": "dict", "s": "scalar",
                                           "n": "None", "o": e.get("type", "object")}[e["t"]]
