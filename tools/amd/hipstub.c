/* A recording stand-in for libamdhip64.so: the HIP runtime calls rocsample's GPU runtime makes,
 * with their C signatures (HIP 7 headers), answering with made-up handles and writing one line
 * per call to a log that the test reads back (rocsample_stub_log).
 *
 * It exists so that tests/backends/test_hip_offline.py can drive rocsample's real DriverRuntime
 * and hip.Vendor through hip-python-interop's real cuda.bindings layer with no AMD GPU: what
 * reaches the C function (handles, flags, enum values, out-pointers) is what rocsample's
 * argument translation produced. It runs nothing and has no device: hipInit answers
 * hipErrorNoDevice unless rocsample_stub_devices() says otherwise.
 * Built by tools/amd/setup.sh into DIR/hipstub/lib/libamdhip64.so (gcc -shared).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <stdarg.h>

typedef int hipError_t;
typedef void *hipStream_t, *hipGraph_t, *hipGraphExec_t, *hipGraphNode_t, *hipEvent_t,
    *hipCtx_t, *hipFunction_t, *hipDeviceptr_t;
typedef int hipDevice_t;

enum { hipSuccess = 0, hipErrorInvalidValue = 1, hipErrorNotReady = 600 };
#define HIP_POINTER_ATTRIBUTE_DEVICE_ORDINAL 9

static char log_buf[1 << 16];
static size_t log_len;
static uintptr_t capturing;   /* the stream a capture was begun on, 0: none */
static int capture_mode = -1;
static uintptr_t next_handle = 0x1000;
static int launch_params;     /* how many kernel parameters the next launches carry */
static int init_error = 100;  /* hipInit's answer: hipErrorNoDevice, as HIP with no GPU */
static int device_count;

static void note(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(log_buf + log_len, sizeof log_buf - log_len, fmt, ap);
  va_end(ap);
  if (n > 0 && log_len + (size_t)n + 1 < sizeof log_buf) {
    log_len += (size_t)n;
    log_buf[log_len++] = '\n';
    log_buf[log_len] = 0;
  }
}

static void *fresh(void) { next_handle += 0x10; return (void *)next_handle; }

/* the test's side */
const char *rocsample_stub_log(void) { return log_buf; }
void rocsample_stub_reset(void) { log_len = 0; log_buf[0] = 0; capturing = 0; capture_mode = -1; }
void rocsample_stub_launch_params(int n) { launch_params = n; }
void rocsample_stub_devices(int init_err, int count) { init_error = init_err; device_count = count; }

/* devices and contexts */
hipError_t hipInit(unsigned int flags) { note("hipInit %u", flags); return init_error; }
hipError_t hipGetDeviceCount(int *count) {
  *count = device_count;
  note("hipGetDeviceCount");
  return hipSuccess;
}
hipError_t hipDevicePrimaryCtxRetain(hipCtx_t *pctx, hipDevice_t dev) {
  *pctx = (hipCtx_t)(uintptr_t)(0xC000 + dev);
  note("hipDevicePrimaryCtxRetain %d", dev);
  return hipSuccess;
}
hipError_t hipCtxPushCurrent(hipCtx_t ctx) { note("hipCtxPushCurrent %#lx", (unsigned long)(uintptr_t)ctx); return hipSuccess; }
hipError_t hipCtxPopCurrent(hipCtx_t *ctx) { *ctx = (hipCtx_t)0xC000; note("hipCtxPopCurrent"); return hipSuccess; }
hipError_t hipPointerGetAttribute(void *data, int attribute, hipDeviceptr_t ptr) {
  note("hipPointerGetAttribute %d %#lx", attribute, (unsigned long)(uintptr_t)ptr);
  if (attribute != HIP_POINTER_ATTRIBUTE_DEVICE_ORDINAL) return hipErrorInvalidValue;
  *(int *)data = (int)(((uintptr_t)ptr >> 28) & 0xF);  /* "device" = bits 28..31 of the address */
  return hipSuccess;
}

/* streams and capture */
hipError_t hipStreamGetDevice(hipStream_t stream, hipDevice_t *device) {
  *device = (int)(((uintptr_t)stream >> 28) & 0xF);
  note("hipStreamGetDevice %#lx", (unsigned long)(uintptr_t)stream);
  return hipSuccess;
}
hipError_t hipStreamSynchronize(hipStream_t stream) { note("hipStreamSynchronize %#lx", (unsigned long)(uintptr_t)stream); return hipSuccess; }
hipError_t hipStreamIsCapturing(hipStream_t stream, int *status) {
  *status = (capturing != 0 && (uintptr_t)stream == capturing) ? 1 : 0;
  note("hipStreamIsCapturing %#lx", (unsigned long)(uintptr_t)stream);
  /* the legacy default stream cannot be queried while a global capture runs */
  if (stream == 0 && capturing && capture_mode == 0) return 906; /* hipErrorStreamCaptureImplicit */
  return hipSuccess;
}
hipError_t hipStreamBeginCapture(hipStream_t stream, int mode) {
  note("hipStreamBeginCapture %#lx %d", (unsigned long)(uintptr_t)stream, mode);
  capturing = (uintptr_t)stream;
  capture_mode = mode;
  return hipSuccess;
}
hipError_t hipStreamEndCapture(hipStream_t stream, hipGraph_t *graph) {
  note("hipStreamEndCapture %#lx", (unsigned long)(uintptr_t)stream);
  if ((uintptr_t)stream != capturing) return hipErrorInvalidValue;
  capturing = 0;
  *graph = fresh();
  return hipSuccess;
}

/* graphs */
hipError_t hipGraphInstantiate(hipGraphExec_t *exec, hipGraph_t graph, hipGraphNode_t *node,
                               char *log, size_t size) {
  note("hipGraphInstantiate %#lx %zu", (unsigned long)(uintptr_t)graph, size);
  *exec = (hipGraphExec_t)((uintptr_t)graph + 1);
  return hipSuccess;
}
hipError_t hipGraphInstantiateWithFlags(hipGraphExec_t *exec, hipGraph_t graph, unsigned long long flags) {
  note("hipGraphInstantiateWithFlags %#lx %llu", (unsigned long)(uintptr_t)graph, flags);
  *exec = (hipGraphExec_t)((uintptr_t)graph + 1);
  return hipSuccess;
}
hipError_t hipGraphLaunch(hipGraphExec_t exec, hipStream_t stream) {
  note("hipGraphLaunch %#lx %#lx", (unsigned long)(uintptr_t)exec, (unsigned long)(uintptr_t)stream);
  return hipSuccess;
}
hipError_t hipGraphDestroy(hipGraph_t graph) { note("hipGraphDestroy %#lx", (unsigned long)(uintptr_t)graph); return hipSuccess; }
hipError_t hipGraphExecDestroy(hipGraphExec_t exec) { note("hipGraphExecDestroy %#lx", (unsigned long)(uintptr_t)exec); return hipSuccess; }

/* memory and events */
hipError_t hipMalloc(void **ptr, size_t size) {
  *ptr = (void *)(0x10000000u + (next_handle += 0x100));  /* "device 1" memory */
  note("hipMalloc %zu", size);
  return hipSuccess;
}
hipError_t hipFree(void *ptr) { note("hipFree %#lx", (unsigned long)(uintptr_t)ptr); return hipSuccess; }
hipError_t hipEventCreateWithFlags(hipEvent_t *event, unsigned int flags) {
  *event = fresh();
  note("hipEventCreateWithFlags %u", flags);
  return hipSuccess;
}
hipError_t hipEventRecord(hipEvent_t event, hipStream_t stream) {
  note("hipEventRecord %#lx %#lx", (unsigned long)(uintptr_t)event, (unsigned long)(uintptr_t)stream);
  return hipSuccess;
}
hipError_t hipEventQuery(hipEvent_t event) { note("hipEventQuery %#lx", (unsigned long)(uintptr_t)event); return hipSuccess; }
hipError_t hipEventDestroy(hipEvent_t event) { note("hipEventDestroy %#lx", (unsigned long)(uintptr_t)event); return hipSuccess; }

/* launches: the first rocsample_stub_launch_params() kernel parameters are logged as the int64
 * values they point at (a launch's parameter array has no terminator) */
hipError_t hipModuleLaunchKernel(hipFunction_t f, unsigned gx, unsigned gy, unsigned gz,
                                 unsigned bx, unsigned by, unsigned bz, unsigned shared,
                                 hipStream_t stream, void **params, void **extra) {
  char args[512] = "";
  size_t n = 0;
  for (int i = 0; params && i < launch_params && i < 8 && n < sizeof args - 32; i++)
    n += (size_t)snprintf(args + n, sizeof args - n, " %lld", (long long)*(int64_t *)params[i]);
  note("hipModuleLaunchKernel %#lx %u,%u,%u %u,%u,%u %u %#lx%s extra=%p", (unsigned long)(uintptr_t)f,
       gx, gy, gz, bx, by, bz, shared, (unsigned long)(uintptr_t)stream, args, (void *)extra);
  return hipSuccess;
}
