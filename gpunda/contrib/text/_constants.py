"""MXNet's ``mxnet.contrib.text._constants``. gpunda's text module is not built yet
(docs/compat.md); the pretrained-file checksum tables are empty: nothing is downloaded."""
UNKNOWN_IDX = 0
APACHE_REPO_URL = "https://apache-mxnet.s3-accelerate.dualstack.amazonaws.com/"
GLOVE_PRETRAINED_FILE_SHA1 = {}
GLOVE_PRETRAINED_ARCHIVE_SHA1 = {}
FAST_TEXT_FILE_SHA1 = {}
FAST_TEXT_ARCHIVE_SHA1 = {}
