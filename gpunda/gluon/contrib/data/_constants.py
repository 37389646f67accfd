"""MXNet's ``mxnet.gluon.contrib.data._constants``."""
EOS_TOKEN = "<eos>"
