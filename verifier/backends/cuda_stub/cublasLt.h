/* EvoKernel compile-gate stub of cuBLASLt (see verifier/backends/cuda_stub/__init__.py). */
#pragma once
#include <cublas_v2.h>
typedef struct cublasLtContext* cublasLtHandle_t;
