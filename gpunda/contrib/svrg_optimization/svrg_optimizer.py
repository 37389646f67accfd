"""``mx.contrib.svrg_optimization.svrg_optimizer``: the two optimizers behind SVRGModule.

``_SVRGOptimizer`` routes each parameter by name: the ``<name>_full`` keys (where SVRGModule
accumulates full gradients in the KVStore) go to ``_AssignmentOptimizer``, which stores the
pushed value as is; every other parameter goes to the default optimizer.
"""
from gpunda.optimizer.optimizer import Optimizer, create, register

__all__ = ["_AssignmentOptimizer", "_SVRGOptimizer"]

# the keyword arguments that belong to the base Optimizer (the rest go to the default one)
_BASE_PARAMS = ("rescale_grad", "param_idx2name", "wd", "clip_gradient", "learning_rate",
                "lr_scheduler", "sym", "begin_num_update", "multi_precision", "param_dict")


@register
class _AssignmentOptimizer(Optimizer):
    """Writes the gradient into the weight (SVRGModule's full-gradient accumulation)."""

    def update(self, index, weight, grad, state):
        weight[:] = grad


@register
class _SVRGOptimizer(Optimizer):
    """The default optimizer for ordinary parameters, ``_AssignmentOptimizer`` for keys
    whose name holds ``full``.

    Args:
        default_optimizer: a name (created with all of ``kwargs``) or an Optimizer.
        **kwargs: optimizer parameters; those of the base Optimizer also configure this one.
    """

    def __init__(self, default_optimizer, **kwargs):
        super().__init__(**self._check_params(**kwargs))
        if isinstance(default_optimizer, str):
            self.default_opt = create(default_optimizer, **kwargs)
        else:
            self.default_opt = default_optimizer
        self.aux_opt = create(_AssignmentOptimizer.__name__)

    @staticmethod
    def _check_params(**kwargs):
        """The entries of ``kwargs`` that the base Optimizer takes."""
        return {k: v for k, v in kwargs.items() if k in _BASE_PARAMS}

    def _check_index(self, index):
        """The parameter name of ``index`` (an int key of ``idx2name`` or a name)."""
        if index in self.idx2name.values():
            return index
        return self.idx2name[index]

    def _route(self, index):
        return self.aux_opt if "full" in self._check_index(index) else self.default_opt

    def create_state(self, index, weight):
        return self._route(index).create_state(index, weight)

    def update(self, index, weight, grad, state):
        self._route(index).update(index, weight, grad, state)
