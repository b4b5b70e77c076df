"""Declaration stubs of the CUDA math libraries, for the compile gate only (never linked, never run).

torch's ``<ATen/cuda/CUDAContext.h>`` includes ``<cublas_v2.h>``, ``<cublasLt.h>``, ``<cusparse.h>``,
``<cusolverDn.h>`` and ``<cusolver_common.h>`` for the handle getters and error macros it declares.
Those headers ship with cuBLAS/cuSPARSE/cuSOLVER (~930 MB of wheels), not with the CUDA compiler,
so a compile host with only nvcc lacks them. The headers in this folder declare exactly what
torch's headers use: the opaque handle types (``cublasHandle_t``, ``cublasLtHandle_t``,
``cusparseHandle_t``, ``cusolverDnHandle_t``), the status enums with their success/invalid-value
codes, and ``cusparseGetErrorString``. They are put on nvcc's include path (after the toolkit's
own, so real headers win) only when the toolkit has no ``cublas_v2.h``; the compile verdict says
so. A kernel that calls a library function itself (``cublasSgemm``...) fails here with an
undeclared identifier, which the verdict explains: the gate checks hand-written kernels.
"""
