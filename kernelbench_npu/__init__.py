"""kernelbench_npu: KernelBench-format problems, backend variants, task lint and reproducible builds.

Imports nothing else of the project. Other packages use :mod:`kernelbench_npu.spec` to read a build.
"""
