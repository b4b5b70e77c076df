/* EvoKernel compile-gate stub of cuSOLVER Dn (see verifier/backends/cuda_stub/__init__.py). */
#pragma once
#include <cusolver_common.h>
typedef struct cusolverDnContext* cusolverDnHandle_t;
