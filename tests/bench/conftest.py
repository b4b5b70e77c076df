"""Makes tests/bench/bench_fixtures.py importable from the bench tests."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
