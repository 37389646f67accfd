"""MXNet's ``mxnet.contrib.text``: vocabularies (``vocab``), token embeddings loaded from
files (``embedding``) and token counting (``utils``)."""
from gpunda.contrib.text import _constants  # noqa: F401
from gpunda.contrib.text import utils  # noqa: F401
from gpunda.contrib.text import vocab  # noqa: F401
from gpunda.contrib.text import embedding  # noqa: F401
