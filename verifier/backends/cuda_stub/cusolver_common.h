/* EvoKernel compile-gate stub of cuSOLVER's common header (see verifier/backends/cuda_stub/__init__.py). */
#pragma once
typedef enum {
  CUSOLVER_STATUS_SUCCESS = 0,
  CUSOLVER_STATUS_NOT_INITIALIZED = 1,
  CUSOLVER_STATUS_ALLOC_FAILED = 2,
  CUSOLVER_STATUS_INVALID_VALUE = 3,
  CUSOLVER_STATUS_INTERNAL_ERROR = 7
} cusolverStatus_t;
