/* A no-op CUDA driver for host-overhead measurements without a GPU (tools/fakegpu).
 *
 * The symbols take the driver API's arguments (cuLaunchKernel, cuGraphLaunch, cuStreamIsCapturing,
 * cuStreamGetDevice), so rocsample's ctypes call sites are the ones it uses on a GPU. A launch logs
 * the first 8 bytes of each kernel parameter (the function handle's low byte says how many), for
 * tests that check where a bound launch points. Capture status is set from Python.
 */
#include <stdint.h>

#define LOG 64
#define MAXP 48
static long n_launch, n_graph, n_query, n_device;
static uintptr_t capturing[16];
static int n_capturing, global_capture;
static uintptr_t log_func[LOG], log_stream[LOG];
static int64_t log_vals[LOG][MAXP];

int fake_launch(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                unsigned bz, unsigned shmem, void *stream, void **params, void **extra) {
    uintptr_t fn = (uintptr_t)f;
    int slot = (int)(n_launch % LOG), np = (int)(fn & 0xff);
    (void)gx; (void)gy; (void)gz; (void)bx; (void)by; (void)bz; (void)shmem; (void)extra;
    log_func[slot] = fn;
    log_stream[slot] = (uintptr_t)stream;
    for (int i = 0; i < np && i < MAXP; i++) log_vals[slot][i] = *(int64_t *)params[i];
    n_launch++;
    return 0;
}

int fake_graph_launch(void *g, void *s) { (void)g; (void)s; n_graph++; return 0; }

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
    return which == 0 ? n_launch : which == 1 ? n_graph : which == 2 ? n_query : n_device;
}
uintptr_t fake_log_func(long k) { return log_func[k % LOG]; }
uintptr_t fake_log_stream(long k) { return log_stream[k % LOG]; }
int64_t fake_log_val(long k, int i) { return log_vals[k % LOG][i]; }
