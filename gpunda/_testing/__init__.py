"""The parts of ``gpunda.test_utils`` (MXNet's ``mxnet.test_utils``), one concern per file.

Users import them from ``gpunda.test_utils``; these modules are private.
"""
