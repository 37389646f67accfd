"""MXNet's ``mxnet.notebook``: live training charts and data frames for Jupyter
(``callback``).

``bokeh`` is the bokeh package when it is installed (imported on first use of the name),
else the placeholder class ``Bokeh_Failed_To_Import``, as in MXNet 1.9.1.
"""
from gpunda.notebook import callback  # noqa: F401
from gpunda._core.reexports import optional_module_getattr


class Bokeh_Failed_To_Import:  # noqa: N801 - MXNet's name
    """Stands for ``bokeh`` when it is not installed (``pip install bokeh``)."""


# bokeh, as MXNet's module shows it (Bokeh_Failed_To_Import without it), loaded on first use
__getattr__ = optional_module_getattr(__name__, "bokeh", "bokeh", Bokeh_Failed_To_Import)
