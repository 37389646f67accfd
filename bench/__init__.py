"""gpunda's benchmark suite (``python -m bench``); see bench/run.py."""
