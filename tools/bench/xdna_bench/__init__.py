"""ggml-xdna benchmark harness (see bench.py)."""
