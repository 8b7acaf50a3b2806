#!/usr/bin/env python3
"""ggml-xdna's benchmark harness: configurations interleaved in passes, a Markdown table and a PNG chart.
Python 3 standard library only; scripts/bench.sh builds the project and runs this. --help explains the options."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from xdna_bench.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
