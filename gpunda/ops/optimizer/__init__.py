"""Optimizer update ops (MXNet's optimizer_op.cc and contrib updates): sgd, adam, lamb, multi-tensor."""
