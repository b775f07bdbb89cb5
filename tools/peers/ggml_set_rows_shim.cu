// rocsample's shim around ggml's CUDA set_rows (ggml/src/ggml-cuda/set-rows.cu, compiled beside
// this file by tools/peers/build_ggml.sh; nothing of ggml is committed). The op node is built
// with ggml's own C API (ggml_init, ggml_new_tensor, ggml_set_rows from libggml-base), its data
// pointers set to the caller's device buffers (torch tensors), and launched with ggml's
// ggml_cuda_op_set_rows on the caller's stream, so a torch CUDA graph can capture it.
// The few out-of-line ggml-cuda symbols set-rows.cu needs (ggml-cuda.cu is not built) are
// defined here.
#include "common.cuh"
#include "set-rows.cuh"

#include <cstdio>
#include <cstdlib>

void ggml_cuda_error(const char * stmt, const char * func, const char * file, int line, const char * msg) {
    fprintf(stderr, "ggml peer: CUDA error %s: %s in %s at %s:%d\n", msg, stmt, func, file, line);
    abort();
}

int ggml_cuda_get_device() {
    int id;
    CUDA_CHECK(cudaGetDevice(&id));
    return id;
}

void ggml_cuda_set_device(int device) {
    int current;
    CUDA_CHECK(cudaGetDevice(&current));
    if (current != device) {
        CUDA_CHECK(cudaSetDevice(device));
    }
}

// ggml-cuda.cu's destructor frees the context's streams; ours borrow the caller's streams.
ggml_backend_cuda_context::~ggml_backend_cuda_context() {}

struct rsg_op {
    ggml_context * gctx;
    ggml_tensor  * node;
};

static ggml_backend_cuda_context * rsg_ctx[GGML_CUDA_MAX_DEVICES];

static ggml_tensor * rsg_tensor(ggml_context * gctx, int type, void * data, const int64_t * ne, const size_t * nb) {
    ggml_tensor * t = ggml_new_tensor(gctx, (ggml_type) type, 4, ne);
    for (int i = 0; i < 4; ++i) {
        t->nb[i] = nb[i];
    }
    t->data = data;
    return t;
}

extern "C" {

// ne/nb in ggml order (ne[0] innermost, nb in bytes). Returns an op handle, or NULL.
void * rsg_prepare(int dst_type, void * dst, const int64_t * dst_ne, const size_t * dst_nb,
                   int src_type, void * src, const int64_t * src_ne, const size_t * src_nb,
                   int idx_type, void * idx, const int64_t * idx_ne, const size_t * idx_nb) {
    ggml_init_params params = { 8 * ggml_tensor_overhead(), nullptr, /*no_alloc =*/ true };
    ggml_context * gctx = ggml_init(params);
    if (gctx == nullptr) {
        return nullptr;
    }
    ggml_tensor * a = rsg_tensor(gctx, dst_type, dst, dst_ne, dst_nb);
    ggml_tensor * b = rsg_tensor(gctx, src_type, src, src_ne, src_nb);
    ggml_tensor * c = rsg_tensor(gctx, idx_type, idx, idx_ne, idx_nb);
    rsg_op * op = new rsg_op;
    op->gctx = gctx;
    op->node = ggml_set_rows(gctx, a, b, c);
    return op;
}

// Launches ggml_cuda_op_set_rows on `stream` (a cudaStream_t; 0 = legacy default stream).
int rsg_launch(void * handle, void * stream) {
    rsg_op * op = (rsg_op *) handle;
    int dev = ggml_cuda_get_device();
    if (rsg_ctx[dev] == nullptr) {
        rsg_ctx[dev] = new ggml_backend_cuda_context(dev);
    }
    ggml_backend_cuda_context * ctx = rsg_ctx[dev];
    ctx->curr_stream_no = 0;
    ctx->streams[dev][0] = (cudaStream_t) stream;
    ggml_cuda_op_set_rows(*ctx, op->node);
    return (int) cudaPeekAtLastError();
}

// The op node's layout, for checking the Python side's ne / nb: out[0..35] = for dst (the node),
// src0, src1: type, ne[0..3], nb[0..3], data pointer.
void rsg_node_info(void * handle, int64_t * out) {
    const ggml_tensor * ts[3] = { ((rsg_op *) handle)->node, ((rsg_op *) handle)->node->src[0],
                                  ((rsg_op *) handle)->node->src[1] };
    for (int k = 0; k < 3; ++k) {
        int64_t * o = out + 12 * k;
        o[0] = ts[k]->type;
        for (int i = 0; i < 4; ++i) { o[1 + i] = ts[k]->ne[i]; o[5 + i] = (int64_t) ts[k]->nb[i]; }
        o[9] = (int64_t) (intptr_t) ts[k]->data;
        o[10] = o[11] = 0;
    }
}

void rsg_free(void * handle) {
    rsg_op * op = (rsg_op *) handle;
    ggml_free(op->gctx);
    delete op;
}

// ggml's own type names and sizes, so the Python side checks its table against the library.
const char * rsg_type_name(int type) { return ggml_type_name((ggml_type) type); }
size_t rsg_row_size(int type, int64_t ne0) { return ggml_row_size((ggml_type) type, ne0); }

// ggml's CPU reference row conversion (libggml-base's from_float_ref: quantize_row_*_ref,
// ggml_fp32_to_fp16_row, ...), the one ggml's CPU set_rows uses, for the byte comparison.
int rsg_from_float_ref(int type, const float * src, void * dst, int64_t n) {
    const ggml_type_traits * tt = ggml_get_type_traits((ggml_type) type);
    if (tt == nullptr || tt->from_float_ref == nullptr) {
        return -1;
    }
    tt->from_float_ref(src, dst, n);
    return 0;
}

}
