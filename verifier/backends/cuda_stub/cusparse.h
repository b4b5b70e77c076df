/* EvoKernel compile-gate stub of cuSPARSE (see verifier/backends/cuda_stub/__init__.py). */
#pragma once
typedef struct cusparseContext* cusparseHandle_t;
typedef enum {
  CUSPARSE_STATUS_SUCCESS = 0,
  CUSPARSE_STATUS_NOT_INITIALIZED = 1,
  CUSPARSE_STATUS_ALLOC_FAILED = 2,
  CUSPARSE_STATUS_INVALID_VALUE = 3,
  CUSPARSE_STATUS_INTERNAL_ERROR = 7
} cusparseStatus_t;
#ifdef __cplusplus
extern "C" {
#endif
const char* cusparseGetErrorString(cusparseStatus_t status);
#ifdef __cplusplus
}
#endif
