"""Gluon helpers (MXNet 1.x ``gluon.utils``): split batches over devices, clip gradients."""
from __future__ import annotations

import collections
import math
import os
import warnings
import weakref

import numpy as np

from gpunda._engine import autograd as _ag
from gpunda import ndarray as nd
from gpunda.base import GpundaError
from gpunda.context import Context
from gpunda.util import is_np_array, is_np_shape  # noqa: F401 (MXNet re-exports them here)

__all__ = ["split_data", "split_and_load", "clip_global_norm", "check_sha1", "download",
           "replace_file", "HookHandle", "shape_is_known"]


def split_data(data, num_slice, batch_axis=0, even_split=True):
    """Split NDArray ``data`` into ``num_slice`` parts along ``batch_axis``."""
    size = data.shape[batch_axis]
    if even_split and size % num_slice != 0:
        raise ValueError(f"split_data: data with shape {data.shape} cannot be evenly split into "
                         f"{num_slice} slices along axis {batch_axis}; use a batch size that is "
                         f"a multiple of {num_slice} or set even_split=False")
    n_each = size // num_slice
    step = [n_each + (1 if i < size % num_slice and not even_split else 0)
            for i in range(num_slice)]
    bounds = np.concatenate([[0], np.cumsum(step)]).tolist()
    if num_slice == 1:
        return [data]
    if batch_axis == 0:
        return [data[bounds[i]:bounds[i + 1]] for i in range(num_slice)]
    return [nd.slice_axis(data, axis=batch_axis, begin=bounds[i], end=bounds[i + 1])
            for i in range(num_slice)]


def split_and_load(data, ctx_list, batch_axis=0, even_split=True):
    """Split ``data`` (NDArray or NumPy array) along ``batch_axis`` and put part i on ``ctx_list[i]``."""
    if isinstance(ctx_list, Context):
        ctx_list = [ctx_list]
    if not ctx_list:
        raise GpundaError("split_and_load: ctx_list is empty")
    if not isinstance(data, nd.NDArray):
        data = nd.array(data, ctx=ctx_list[0])
        if is_np_array():       # NumPy semantics: mx.np.ndarray parts, as MXNet's
            data = data.as_np_ndarray()
    if len(ctx_list) == 1:
        return [data.as_in_context(ctx_list[0])]
    slices = split_data(data, len(ctx_list), batch_axis, even_split)
    return [s.as_in_context(c) for s, c in zip(slices, ctx_list)]


def clip_global_norm(arrays, max_norm, check_isfinite=True):
    """Scale ``arrays`` in place so that their joint L2 norm is at most ``max_norm``.

    Returns the norm before clipping (a float when ``check_isfinite``, else a
    1-element NDArray), warning if it is not finite.
    """
    if not arrays:
        raise GpundaError("clip_global_norm: arrays is empty")
    if max_norm <= 0:
        raise GpundaError(f"clip_global_norm: max_norm={max_norm!r} must be positive")
    ctx = arrays[0].context
    total = 0.0
    for a in arrays:
        xp = a.context.backend.xp
        d = _stored_values(a)
        d = d.astype(np.float32) if d.dtype == np.float16 else d
        total = total + float(xp.sum(d * d))
    norm = math.sqrt(total)
    if check_isfinite and not math.isfinite(norm):
        warnings.warn(UserWarning("nan or inf is detected. Clipping results will be undefined."),
                      stacklevel=2)
    scale = max_norm / (norm + 1e-8)
    if scale < 1.0:
        for a in arrays:
            vals = _stored_values(a)
            vals *= scale
            _ag.bump_version(a)
    if check_isfinite:
        return norm
    return nd.array([norm], ctx=ctx)


def _stored_values(a):
    """The array of ``a``'s stored values: the dense buffer, or a sparse array's non-zeros."""
    d = a._data
    return d if getattr(a, "stype", "default") == "default" else d.data


def check_sha1(filename, sha1_hash):
    """Whether the SHA-1 of ``filename`` equals ``sha1_hash``."""
    import hashlib
    sha1 = hashlib.sha1()
    with open(filename, "rb") as f:
        while True:
            data = f.read(1048576)
            if not data:
                break
            sha1.update(data)
    return sha1.hexdigest() == sha1_hash


def download(url, path=None, overwrite=False, sha1_hash=None, retries=5, verify_ssl=True):
    """Download ``url`` to ``path`` (a file, a folder, or the current folder when None) and
    return the file name, as MXNet's: skipped when the file exists (and matches
    ``sha1_hash``) unless ``overwrite``; up to ``retries`` attempts (one when 0). The
    body goes to a uniquely named temporary file first, then replaces the target, so
    concurrent downloads of one file leave one complete file. Needs ``requests``."""
    import uuid
    try:
        import requests
    except ImportError:
        raise GpundaError("gluon.utils.download needs the 'requests' package "
                          "(pip install requests)") from None
    if path is None:
        fname = url.split("/")[-1]
        if not fname:
            raise GpundaError(f"gluon.utils.download: cannot take a file name from {url!r}; "
                              f"pass path=")
    else:
        path = os.path.expanduser(path)
        fname = os.path.join(path, url.split("/")[-1]) if os.path.isdir(path) else path
    if retries < 0:
        raise GpundaError(f"gluon.utils.download: retries={retries} must be at least 0")
    if not verify_ssl:
        warnings.warn("Unverified HTTPS request is being made (verify_ssl=False). Adding "
                      "certificate verification is strongly advised.")
    if not (overwrite or not os.path.exists(fname)
            or (sha1_hash and not check_sha1(fname, sha1_hash))):
        return fname
    os.makedirs(os.path.dirname(os.path.abspath(fname)), exist_ok=True)
    left = retries
    while True:
        try:
            print(f"Downloading {fname} from {url}...")
            r = requests.get(url, stream=True, verify=verify_ssl)
            if r.status_code != 200:
                raise RuntimeError(f"Failed downloading url {url} (HTTP {r.status_code})")
            tmp = f"{fname}.{uuid.uuid4()}"
            with open(tmp, "wb") as f:
                for chunk in r.iter_content(chunk_size=1 << 16):
                    if chunk:
                        f.write(chunk)
            if not os.path.exists(fname) or (sha1_hash and not check_sha1(fname, sha1_hash)):
                replace_file(tmp, fname)
            else:       # another process finished first: keep its file
                os.remove(tmp)
                warnings.warn(f"File {fname} exists in file system so the downloaded file is "
                              f"deleted")
            if sha1_hash and not check_sha1(fname, sha1_hash):
                raise UserWarning(f"File {fname} is downloaded but the content hash does not "
                                  f"match; the source may be outdated or the download "
                                  f"incomplete")
            return fname
        except Exception as e:
            left -= 1       # MXNet's count: `retries` attempts in all (one when 0)
            if left <= 0:
                raise
            print(f"download failed due to {e!r}, retrying, {left} attempt"
                  f"{'s' if left > 1 else ''} left")


def replace_file(src, dst):
    """Move ``src`` over ``dst`` atomically; on failure remove ``src`` and raise OSError."""
    try:
        os.replace(src, dst)
    except OSError as e:
        try:
            os.remove(src)
        except OSError:
            pass
        raise OSError(f"replace_file: moving {src!r} to {dst!r} failed ({e}); "
                      f"retry the download") from None


class HookHandle:
    """A handle on one hook in a block's hook dict: ``detach()`` (or leaving a ``with``) removes it.

    The handle refers to the dict weakly, so it never keeps a block's hooks alive.
    """

    def __init__(self):
        self._hooks_dict_ref = None
        self._id = None

    def attach(self, hooks_dict, hook):
        """Put ``hook`` into ``hooks_dict`` under this handle's key."""
        if self._hooks_dict_ref is not None:
            raise AssertionError("The same handle cannot be attached twice.")
        self._id = id(hook)
        hooks_dict[self._id] = hook
        self._hooks_dict_ref = weakref.ref(hooks_dict)

    def detach(self):
        """Remove the hook (a no-op when it is already gone)."""
        hooks = self._hooks_dict_ref() if self._hooks_dict_ref is not None else None
        if hooks is not None:
            hooks.pop(self._id, None)

    def __getstate__(self):
        hooks = self._hooks_dict_ref() if self._hooks_dict_ref is not None else None
        return hooks, self._id

    def __setstate__(self, state):
        hooks, self._id = state
        # a pickled handle whose dict is gone points at an empty dict of its own
        self._keep = hooks if hooks is not None else collections.OrderedDict()
        self._hooks_dict_ref = weakref.ref(self._keep)

    def __enter__(self):
        return self

    def __exit__(self, ptype, value, trace):
        self.detach()
        return False


def shape_is_known(shape):
    """Whether every dimension of ``shape`` is known.

    Unknown is 0 under MXNet's legacy shapes and -1 under NumPy shapes
    (``is_np_shape()``), where ``()`` is a known scalar shape.
    """
    if shape is None:
        return False
    unknown = -1 if is_np_shape() else 0
    if len(shape) == 0:
        return unknown == -1
    for d in shape:
        if d == unknown:
            return False
        if d < unknown:
            raise AssertionError(f"shape_is_known: dimension size {d} in shape {tuple(shape)} "
                                 f"cannot be less than {unknown}")
    return True


def _indent(s_, numSpaces):
    """``s_`` with every line after the first indented by ``numSpaces`` spaces (the nested
    blocks of a Block's repr)."""
    lines = s_.split("\n")
    return lines[0] + "".join("\n" + " " * numSpaces + ln for ln in lines[1:])


def _brief_print_list(lst, limit=7):
    """The items of ``lst`` quoted and comma separated; more than ``limit`` of them are cut
    to the first ``limit // 2`` and the last ``ceil(limit / 2)`` around ', ..., '
    (parameter lists in errors)."""
    lst = list(lst)
    if len(lst) > limit:
        return (_brief_print_list(lst[:limit // 2], limit) + ", ..., "
                + _brief_print_list(lst[-limit // 2:], limit))
    return ", ".join(f"'{i}'" for i in lst)


def _check_same_symbol_type(symbols):
    """The Symbol class of ``symbols`` (``sym.np._Symbol`` or ``sym.Symbol``); TypeError when
    classic and numpy Symbols are mixed."""
    from gpunda.gluon._np_mode import check_same_symbol_type
    if check_same_symbol_type(symbols):
        from gpunda.symbol.numpy import _Symbol
        return _Symbol
    from gpunda.symbol import Symbol
    return Symbol


def _check_all_np_ndarrays(out):
    """TypeError unless every array or Symbol in ``out`` (nested lists/tuples) is an
    ``mx.np.ndarray`` or an np Symbol; other values are ignored."""
    from gpunda.gluon._np_mode import check_all_np
    check_all_np(out)


_APACHE_REPO_URL = "https://apache-mxnet.s3-accelerate.dualstack.amazonaws.com/"


def _get_repo_url():
    """The base URL of MXNet's file repository: ``MXNET_GLUON_REPO`` when set, else
    Apache's, always ending in '/' (GluonNLP calls this)."""
    url = os.environ.get("MXNET_GLUON_REPO", _APACHE_REPO_URL)
    return url if url.endswith("/") else url + "/"


def _get_repo_file_url(namespace, filename):
    """The URL of ``filename`` under ``namespace`` in MXNet's file repository."""
    return f"{_get_repo_url()}{namespace}/{filename}"
