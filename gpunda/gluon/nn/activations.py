"""Gluon activation layers (MXNet 1.x ``gluon.nn.activations``)."""
from __future__ import annotations

from gpunda import initializer as _init
from gpunda.base import GpundaError
from gpunda.gluon.block import HybridBlock

__all__ = ["Activation", "LeakyReLU", "PReLU", "ELU", "SELU", "Swish", "GELU"]


class Activation(HybridBlock):
    """Elementwise activation: 'relu', 'sigmoid', 'tanh', 'softrelu' or 'softsign'."""

    def __init__(self, activation, **kwargs):
        self._act_type = activation
        super().__init__(**kwargs)

    def _alias(self):
        return self._act_type

    def hybrid_forward(self, F, x):
        return F.Activation(x, act_type=self._act_type, name="fwd")

    def __repr__(self):
        return f"{type(self).__name__}({self._act_type})"


class LeakyReLU(HybridBlock):
    """``x`` for x > 0, ``alpha * x`` otherwise."""

    def __init__(self, alpha, **kwargs):
        if alpha < 0:
            raise GpundaError(f"LeakyReLU: alpha={alpha!r} must be >= 0")
        super().__init__(**kwargs)
        self._alpha = alpha

    def hybrid_forward(self, F, x):
        return F.LeakyReLU(x, act_type="leaky", slope=self._alpha, name="fwd")

    def __repr__(self):
        return f"{type(self).__name__}({self._alpha})"


class PReLU(HybridBlock):
    """Leaky ReLU with a learned slope ``alpha`` (one per channel when in_channels > 1)."""

    def __init__(self, alpha_initializer=_init.Constant(0.25), in_channels=1, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.alpha = self.params.get("alpha", shape=(in_channels,), init=alpha_initializer)

    def hybrid_forward(self, F, x, alpha):
        return F.LeakyReLU(x, gamma=alpha, act_type="prelu", name="fwd")


class ELU(HybridBlock):
    """``x`` for x > 0, ``alpha * (exp(x) - 1)`` otherwise."""

    def __init__(self, alpha=1.0, **kwargs):
        super().__init__(**kwargs)
        self._alpha = alpha

    def hybrid_forward(self, F, x):
        return F.LeakyReLU(x, act_type="elu", slope=self._alpha)


class SELU(HybridBlock):
    """Scaled ELU with the self-normalising constants."""

    def hybrid_forward(self, F, x):
        return F.LeakyReLU(x, act_type="selu", name="fwd")


class GELU(HybridBlock):
    """Gaussian error linear unit (erf form)."""

    def hybrid_forward(self, F, x):
        return F.LeakyReLU(x, act_type="gelu", name="fwd")


class Swish(HybridBlock):
    """``x * sigmoid(beta * x)``."""

    def __init__(self, beta=1.0, **kwargs):
        super().__init__(**kwargs)
        self._beta = beta

    def hybrid_forward(self, F, x):
        return x * F.sigmoid(self._beta * x, name="fwd")
