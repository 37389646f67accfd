"""MXNet's ``mxnet.notebook``: live training charts and data frames for Jupyter
(``callback``).

``bokeh`` is the bokeh package when it is installed (imported on first use of the name),
else the placeholder class ``Bokeh_Failed_To_Import``, as in MXNet 1.9.1.
"""
from gpunda.notebook import callback  # noqa: F401


class Bokeh_Failed_To_Import:  # noqa: N801 - MXNet's name
    """Stands for ``bokeh`` when it is not installed (``pip install bokeh``)."""


def __getattr__(name):
    if name == "bokeh":
        try:
            import bokeh
        except ImportError:
            bokeh = Bokeh_Failed_To_Import
        globals()["bokeh"] = bokeh
        return bokeh
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
