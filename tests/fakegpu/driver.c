/* A no-op CUDA driver for host-overhead measurements without a GPU (tools/fakegpu).
 *
 * The symbols take the driver API's arguments (cuLaunchKernel, cuGraphLaunch, cuStreamIsCapturing,
 * cuStreamGetDevice, and the kernel-node graph calls cuGraphCreate, cuGraphAddKernelNode_v2,
 * cuGraphInstantiateWithFlags, cuGraphExecKernelNodeSetParams_v2, cuGraphExecDestroy,
 * cuGraphDestroy), so rocsample's ctypes call sites are the ones it uses on a GPU. Every kernel
 * run (a launch, or a node of a graph launch) logs the first 8 bytes of each kernel parameter (the
 * function handle's low byte says how many), for tests that check where a bound launch points.
 * Capture status is set from Python.
 */
#include <stddef.h>
#include <stdint.h>

#define LOG 64
#define MAXP 48
static long n_launch, n_graph, n_query, n_device, n_logged, n_setp, n_inst, n_xdestroy, n_node;
static uintptr_t capturing[16];
static int n_capturing, global_capture;
static uintptr_t log_func[LOG], log_stream[LOG];
static int64_t log_vals[LOG][MAXP];

/* The log ring: one entry per kernel run, by a launch or as a node of a graph launch. */
static int64_t *log_next(uintptr_t fn, void *stream) {
    int slot = (int)(n_logged % LOG);
    log_func[slot] = fn;
    log_stream[slot] = (uintptr_t)stream;
    n_logged++;
    return log_vals[slot];
}

/* A launch's parameters: by kernelParams (one pointer per parameter), or as one packed buffer
 * in extra ({CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, END}),
 * logged as its 8-byte words (rocsample's array fields and int64 scalars are 8-aligned there,
 * so an array's data address is the same word either way while no smaller scalar precedes it). */
static void copy_params(int64_t *to, uintptr_t fn, void **params, void **extra) {
    int np = (int)(fn & 0xff);
    if (params) {
        for (int i = 0; i < np && i < MAXP; i++) to[i] = *(int64_t *)params[i];
        return;
    }
    const char *buf = 0;
    size_t size = 0;
    for (int k = 0; extra && extra[k] && k < 8; k += 2) {
        if ((uintptr_t)extra[k] == 1) buf = (const char *)extra[k + 1];
        else if ((uintptr_t)extra[k] == 2) size = *(size_t *)extra[k + 1];
    }
    for (int i = 0; i < MAXP; i++) {
        to[i] = 0;
        if (buf && (size_t)(i + 1) * 8 <= size) to[i] = *(const int64_t *)(buf + 8 * i);
    }
}

int fake_launch(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                unsigned bz, unsigned shmem, void *stream, void **params, void **extra) {
    (void)gx; (void)gy; (void)gz; (void)bx; (void)by; (void)bz; (void)shmem;
    if (!params && !extra) return 1; /* CUDA_ERROR_INVALID_VALUE */
    copy_params(log_next((uintptr_t)f, stream), (uintptr_t)f, params, extra);
    n_launch++;
    return 0;
}

/* Kernel-node graphs: a node's parameter values are copied when it is added or set (as the
 * driver does), and a graph launch logs each node with those copies. Handles: graph g is
 * GBASE + g, node j of graph g is NBASE + g * MAXN + j, exec e is XBASE + e. */
typedef struct {
    void *func;
    unsigned gx, gy, gz, bx, by, bz, shmem;
    void **kernelParams, **extra;
    void *kern, *ctx;
} knp_t;
#define MAXG 512
#define MAXN 8
#define GBASE 0x6000000
#define NBASE 0x7000000
#define XBASE 0x8000000
static uintptr_t g_func[MAXG][MAXN], x_func[MAXG][MAXN];
static int64_t g_vals[MAXG][MAXN][MAXP], x_vals[MAXG][MAXN][MAXP];
static int g_nodes[MAXG], x_nodes[MAXG], x_dead[MAXG];
/* per node: a bit mask of the nodes of its graph it depends on */
static unsigned g_deps[MAXG][MAXN], x_deps[MAXG][MAXN];
static long n_g, n_x;
/* A driver refusing kernel nodes: cuGraphAddKernelNode returns fail_add (> 0) for every node,
 * or (-1) CUDA_ERROR_INVALID_HANDLE for a node naming its kernel as func, as the H200's driver
 * did for numba-cuda's library kernels, taking it as kern. */
static int fail_add;
void fake_set_fail_add(int err) { fail_add = err; }
static uintptr_t node_kernel(knp_t *p) { return (uintptr_t)(p->func ? p->func : p->kern); }

int fake_graph_create(void **g, unsigned flags) {
    (void)flags;
    if (n_g >= MAXG) return 2; /* out of memory */
    g_nodes[n_g] = 0;
    *g = (void *)(uintptr_t)(GBASE + n_g++);
    return 0;
}

int fake_graph_add_kernel_node(void **node, void *g, void **deps, size_t ndeps, knp_t *p) {
    long gi = (long)((uintptr_t)g - GBASE);
    if (fail_add > 0) return fail_add;
    if (fail_add < 0 && p->func) return 400;
    if (!node_kernel(p)) return 400;
    if (gi < 0 || gi >= n_g || g_nodes[gi] >= MAXN) return 400;
    unsigned mask = 0;
    for (size_t d = 0; d < ndeps; d++) {
        long nd = (long)((uintptr_t)deps[d] - NBASE);
        if (nd < gi * MAXN || nd >= gi * MAXN + g_nodes[gi]) return 400; /* not a node of g */
        mask |= 1u << (nd % MAXN);
    }
    int j = g_nodes[gi]++;
    g_deps[gi][j] = mask;
    g_func[gi][j] = node_kernel(p);
    if (!p->kernelParams && !p->extra) return 1;
    copy_params(g_vals[gi][j], node_kernel(p), p->kernelParams, p->extra);
    *node = (void *)(uintptr_t)(NBASE + gi * MAXN + j);
    return 0;
}

int fake_graph_instantiate(void **ex, void *g, unsigned long long flags) {
    long gi = (long)((uintptr_t)g - GBASE);
    (void)flags;
    if (gi < 0 || gi >= n_g || n_x >= MAXG) return 400;
    long e = n_x++;
    x_nodes[e] = g_nodes[gi];
    x_dead[e] = 0;
    for (int j = 0; j < g_nodes[gi]; j++) {
        x_func[e][j] = g_func[gi][j];
        x_deps[e][j] = g_deps[gi][j];
        for (int i = 0; i < MAXP; i++) x_vals[e][j][i] = g_vals[gi][j][i];
    }
    n_inst++;
    *ex = (void *)(uintptr_t)(XBASE + e);
    return 0;
}

int fake_graph_exec_set_params(void *ex, void *node, knp_t *p) {
    long e = (long)((uintptr_t)ex - XBASE), nj = (long)((uintptr_t)node - NBASE);
    int j = (int)(nj % MAXN);
    if (e < 0 || e >= n_x || x_dead[e] || nj < 0 || j >= x_nodes[e]) return 400;
    if (node_kernel(p) != x_func[e][j]) return 1; /* the function cannot change */
    if (!p->kernelParams && !p->extra) return 1;
    copy_params(x_vals[e][j], node_kernel(p), p->kernelParams, p->extra);
    n_setp++;
    return 0;
}

int fake_graph_exec_destroy(void *ex) {
    long e = (long)((uintptr_t)ex - XBASE);
    if (e < 0 || e >= n_x || x_dead[e]) return 400;
    x_dead[e] = 1;
    n_xdestroy++;
    return 0;
}

int fake_graph_destroy(void *g) { (void)g; return 0; }

/* A graph launch: an exec of kernel nodes logs its nodes; any other handle (the Python fake's
 * captured graphs) is only counted. */
int fake_graph_launch(void *ex, void *s) {
    long e = (long)((uintptr_t)ex - XBASE);
    n_graph++;
    if (e >= 0 && e < n_x) {
        if (x_dead[e]) return 400;
        for (int j = 0; j < x_nodes[e]; j++) {
            int64_t *to = log_next(x_func[e][j], s);
            for (int i = 0; i < MAXP; i++) to[i] = x_vals[e][j][i];
            n_node++;
        }
    }
    return 0;
}

int fake_is_capturing(void *s, int *out) {
    n_query++;
    if (s == 0 && global_capture) return 906; /* CUDA_ERROR_STREAM_CAPTURE_IMPLICIT */
    *out = 0;
    for (int i = 0; i < n_capturing; i++)
        if (capturing[i] == (uintptr_t)s) *out = 1;
    return 0;
}

int fake_get_device(void *s, int *out) { (void)s; n_device++; *out = 0; return 0; }

void fake_set_capturing(uintptr_t h, int on) {
    int j = 0;
    for (int i = 0; i < n_capturing; i++)
        if (capturing[i] != h) capturing[j++] = capturing[i];
    n_capturing = j;
    if (on && n_capturing < 16) capturing[n_capturing++] = h;
}
void fake_set_global(int on) { global_capture = on; }
long fake_count(int which) {
    long c[] = {n_launch, n_graph, n_query, n_device, n_logged, n_setp, n_inst, n_xdestroy, n_node};
    return which >= 0 && which < 9 ? c[which] : -1;
}
uintptr_t fake_log_func(long k) { return log_func[k % LOG]; }
long fake_exec_deps(uintptr_t ex, int j) {
    long e = (long)(ex - XBASE);
    return e >= 0 && e < n_x && j >= 0 && j < x_nodes[e] ? (long)x_deps[e][j] : -1;
}
uintptr_t fake_log_stream(long k) { return log_stream[k % LOG]; }
int64_t fake_log_val(long k, int i) { return log_vals[k % LOG][i]; }
