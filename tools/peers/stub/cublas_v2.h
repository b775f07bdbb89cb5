/* Declarations only, so that ggml-cuda/common.cuh compiles without the cuBLAS SDK (not part of
 * CUDA 13.0 on the build machine). set-rows.cu never calls cuBLAS: the inline helpers in
 * common.cuh that would are never instantiated, and nothing here is linked. rocsample's own
 * file (tools/peers/build_ggml.sh), not ggml's. */
#pragma once
#include <stddef.h>
typedef enum { CUBLAS_STATUS_SUCCESS = 0 } cublasStatus_t;
typedef enum { CUBLAS_DEFAULT_MATH = 0, CUBLAS_TF32_TENSOR_OP_MATH = 3 } cublasMath_t;
typedef struct cublasContext *cublasHandle_t;
cublasStatus_t cublasCreate(cublasHandle_t *handle);
cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode);
cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream);
cublasStatus_t cublasSetWorkspace(cublasHandle_t handle, void *workspace, size_t size);
cublasStatus_t cublasDestroy(cublasHandle_t handle);
const char *cublasGetStatusString(cublasStatus_t status);
