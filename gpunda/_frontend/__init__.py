"""Machinery shared by the front ends (ndarray, symbol, numpy): MXNet's legacy Python operator
interface."""
