"""Gluon Estimator (MXNet 1.x ``gluon.contrib.estimator``): a training loop driven by
event handlers.

``Estimator.fit`` runs epochs (or a number of batches) over a DataLoader and calls
the handlers at train/epoch/batch begin and end, sorted by ``priority`` (lower first):
GradientUpdateHandler (-2000), MetricHandler and ValidationHandler (-1000), user
handlers (0 unless set), LoggingHandler (last, +inf). Handlers the user did not pass
are added by default, as in MXNet.
"""
from gpunda.gluon.contrib.estimator import estimator, event_handler, batch_processor, utils  # noqa: F401
from gpunda.gluon.contrib.estimator.estimator import *  # noqa: F401,F403
from gpunda.gluon.contrib.estimator.event_handler import *  # noqa: F401,F403
from gpunda.gluon.contrib.estimator.batch_processor import *  # noqa: F401,F403
