"""``mx.contrib.svrg_optimization``: SVRGModule and its optimizers (Stochastic Variance
Reduced Gradient training over ``mx.mod.Module``)."""
from gpunda.contrib.svrg_optimization import svrg_module  # noqa: F401
from gpunda.contrib.svrg_optimization import svrg_optimizer  # noqa: F401
