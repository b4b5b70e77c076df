"""Speed and scale benchmarks (not part of the test suite): python -m benchmarks.<name>."""
