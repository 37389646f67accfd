"""Predefined models (MXNet 1.x ``gluon.model_zoo``): ``vision`` architectures and the file store.

Pretrained weights are never downloaded: ``pretrained=True`` loads MXNet's released
``.params`` file from ``$MXNET_HOME/models`` (see ``model_store.get_model_file``).
"""
from gpunda.gluon.model_zoo import model_store  # noqa: F401
from gpunda.gluon.model_zoo import vision  # noqa: F401
