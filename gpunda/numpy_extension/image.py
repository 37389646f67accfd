"""``npx.image``: MXNet's image ops (``_image_*``) on mx.np arrays."""
from gpunda.ops.registry import all_names
from gpunda.numpy_extension._ops import _make

__all__ = []
for _full in all_names():
    if _full.startswith("_image_"):
        globals()[_full[len("_image_"):]] = _make(_full[len("_image_"):], _full)
        __all__.append(_full[len("_image_"):])
del _full
