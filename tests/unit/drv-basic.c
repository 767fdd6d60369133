/* drv-basic.c — the simulated driver: getter, init, device, context, memory, streams, events,
 * host functions, ordering rules and fault injection. */
#include "drv-common.h"

#include <pthread.h>

typedef CUresult (*get_proc_fn)(const char *, void **, int, cuuint64_t,
                                CUdriverProcAddressQueryResult *);

static void test_getter(void) {
  void *p, *q;
  CUdriverProcAddressQueryResult st;
  CHECK_CU(cuGetProcAddress_v2("cuMemAlloc", &p, 3020, 0, &st));
  CHECK_PTR(p, ==, (void *)cuMemAlloc_v2);
  CHECK_INT(st, ==, CU_GET_PROC_ADDRESS_SUCCESS);
  CHECK_STATUS_EQ(CUDA_ERROR_NOT_FOUND, cuGetProcAddress_v2("cuMemAlloc", &p, 2000, 0, &st));
  CHECK_INT(st, ==, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  CHECK_STATUS_EQ(CUDA_ERROR_NOT_FOUND, cuGetProcAddress_v2("cuNoSuchThing", &p, 13000, 0, &st));
  CHECK_INT(st, ==, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  CHECK_STATUS_EQ(CUDA_ERROR_NOT_FOUND, cuGetProcAddress_v2("", &p, 0, 0, &st));
  /* Per-thread flavour where one exists, legacy otherwise. */
  CHECK_CU(cuGetProcAddress_v2("cuLaunchKernel", &p, 7000, 0, NULL));
  CHECK_CU(cuGetProcAddress_v2("cuLaunchKernel", &q, 7000, 2, NULL));
  CHECK_PTR(p, ==, (void *)cuLaunchKernel);
  CHECK_PTR(q, !=, p);
  CHECK_CU(cuGetProcAddress_v2("cuMemcpyHtoD", &q, 7000, 2, NULL));
  CHECK_PTR(q, !=, (void *)cuMemcpyHtoD_v2);
  CHECK_CU(cuGetProcAddress_v2("cuStreamCreate", &q, 2000, 2, NULL));
  CHECK_PTR(q, ==, (void *)cuStreamCreate);
  /* Several ABIs of one name. */
  void *v1, *v2, *v3;
  CHECK_CU(cuGetProcAddress_v2("cuStreamGetCaptureInfo", &v1, 10010, 0, NULL));
  CHECK_CU(cuGetProcAddress_v2("cuStreamGetCaptureInfo", &v2, 11030, 0, NULL));
  CHECK_CU(cuGetProcAddress_v2("cuStreamGetCaptureInfo", &v3, 12030, 0, NULL));
  CHECK(v1 != v2 && v2 != v3 && v1 != v3);
  CHECK_PTR(v3, ==, (void *)cuStreamGetCaptureInfo_v3);
  CHECK_CU(cuGetProcAddress_v2("cuStreamGetCaptureInfo", &q, 12000, 0, NULL));
  CHECK_PTR(q, ==, v2);
  /* The getter answers for itself at both versions. */
  CHECK_CU(cuGetProcAddress_v2("cuGetProcAddress", &p, 12000, 0, NULL));
  CHECK_PTR(p, ==, (void *)cuGetProcAddress_v2);
  CHECK_CU(cuGetProcAddress_v2("cuGetProcAddress", &q, 11030, 0, NULL));
  CHECK_PTR(q, !=, p);
  CHECK_STATUS_EQ(CUDA_ERROR_INVALID_VALUE, cuGetProcAddress_v2("cuInit", &p, 13010, 0, NULL));
}

static void test_device(void) {
  int n, v;
  char name[64];
  CUdevice d;
  size_t mem;
  CHECK_STATUS_EQ(CUDA_ERROR_NOT_INITIALIZED, cuDeviceGetCount(&n));
  drv_test_init();
  CHECK_CU(cuDeviceGetCount(&n));
  CHECK_INT(n, ==, 1);
  CHECK_CU(cuDeviceGet(&d, 0));
  CHECK_STATUS_EQ(CUDA_ERROR_INVALID_DEVICE, cuDeviceGet(&d, 1));
  CHECK_CU(cuDeviceGetName(name, sizeof name, d));
  CHECK(strlen(name) > 0);
  CHECK_CU(cuDeviceTotalMem_v2(&mem, d));
  CHECK(mem >= (1ull << 30));
  CHECK_CU(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d));
  CHECK_INT(v, ==, 9);
  CHECK_CU(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d));
  CHECK_INT(v, >, 0);
  CHECK_CU(cuDriverGetVersion(&v));
  CHECK_INT(v, ==, 13000);
  unsigned flags;
  int active;
  CHECK_CU(cuDevicePrimaryCtxGetState(d, &flags, &active));
  CHECK_INT(active, ==, 1);
  CUcontext c, popped;
  CHECK_CU(cuCtxGetCurrent(&c));
  CHECK_CU(cuCtxPushCurrent_v2(c));
  CHECK_CU(cuCtxPopCurrent_v2(&popped));
  CHECK_PTR(popped, ==, c);
  CHECK_CU(cuCtxGetDevice(&d));
  CHECK_INT(d, ==, 0);
  const char *s;
  CHECK_CU(cuGetErrorName(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, &s));
  CHECK_STR(s, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT");
  CHECK_CU(cuGetErrorString(CUDA_ERROR_INVALID_VALUE, &s));
  CHECK_STR(s, "invalid argument");
}

static void test_memory(void) {
  CUdeviceptr d, d2;
  size_t fr, tot, fr2;
  CHECK_CU(cuMemGetInfo_v2(&fr, &tot));
  CHECK_CU(cuMemAlloc_v2(&d, 1 << 20));
  CHECK_CU(cuMemGetInfo_v2(&fr2, &tot));
  CHECK(fr2 < fr);
  CHECK_STATUS_EQ(CUDA_ERROR_INVALID_VALUE, cuMemAlloc_v2(&d2, 0));
  unsigned type;
  CHECK_CU(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d));
  CHECK_INT(type, ==, CU_MEMORYTYPE_DEVICE);
  int local;
  CHECK_STATUS_EQ(CUDA_ERROR_INVALID_VALUE,
                  cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)&local));
  /* Copies and memsets, including out-of-range ones. */
  int host[256], back[256];
  for (int i = 0; i < 256; i++) host[i] = i;
  CHECK_CU(cuMemcpyHtoD_v2(d, host, sizeof host));
  CHECK_CU(cuMemsetD32_v2(d + 512, 7, 64));
  CHECK_CU(cuMemcpyDtoH_v2(back, d, sizeof back));
  CHECK_INT(back[5], ==, 5);
  CHECK_INT(back[128], ==, 7);
  CHECK_INT(back[191], ==, 7);
  CHECK_INT(back[192], ==, 192);
  CHECK_STATUS_EQ(CUDA_ERROR_INVALID_VALUE, cuMemcpyHtoD_v2(d + (1 << 20) - 4, host, 8));
  CHECK_STATUS_EQ(CUDA_ERROR_INVALID_VALUE, cuMemcpyDtoH_v2(back, (CUdeviceptr)host, 8));
  CHECK_STATUS_EQ(CUDA_ERROR_INVALID_VALUE, cuMemsetD32_v2(d + 2, 1, 4));
  /* 2-D copy of a 4x3 window. */
  CHECK_CU(cuMemsetD8_v2(d, 0, 1 << 20));
  char src[12];
  for (int i = 0; i < 12; i++) src[i] = (char)(i + 1);
  CUDA_MEMCPY2D c2 = {0};
  c2.srcMemoryType = CU_MEMORYTYPE_HOST;
  c2.srcHost = src;
  c2.srcPitch = 4;
  c2.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  c2.dstDevice = d;
  c2.dstPitch = 64;
  c2.WidthInBytes = 4;
  c2.Height = 3;
  CHECK_CU(cuMemcpy2D_v2(&c2));
  char out[192];
  CHECK_CU(cuMemcpyDtoH_v2(out, d, sizeof out));
  CHECK_INT(out[0], ==, 1);
  CHECK_INT(out[64 + 3], ==, 8);
  CHECK_INT(out[128 + 3], ==, 12);
  CHECK_INT(out[4], ==, 0);
  /* Pinned and registered host memory. */
  void *pinned;
  CHECK_CU(cuMemAllocHost_v2(&pinned, 4096));
  CHECK_CU(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)pinned));
  CHECK_INT(type, ==, CU_MEMORYTYPE_HOST);
  static char reg[8192];
  CHECK_CU(cuMemHostRegister_v2(reg, sizeof reg, 0));
  CHECK_STATUS_EQ(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, cuMemHostRegister_v2(reg + 16, 16, 0));
  CHECK_CU(cuMemHostUnregister(reg));
  CHECK_STATUS_EQ(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, cuMemHostUnregister(reg));
  CHECK_CU(cuMemFreeHost(pinned));
  /* Frees: double and interior frees fail. */
  CHECK_STATUS_EQ(CUDA_ERROR_INVALID_VALUE, cuMemFree_v2(d + 4));
  CHECK_CU(cuMemFree_v2(d));
  CHECK_STATUS_EQ(CUDA_ERROR_INVALID_VALUE, cuMemFree_v2(d));
  /* Stream-ordered allocation. */
  CHECK_CU(cuMemAllocAsync(&d, 256, NULL));
  CHECK_CU(cuMemsetD8Async(d, 1, 256, NULL));
  CHECK_CU(cuMemFreeAsync(d, NULL));
  CHECK_CU(cuCtxSynchronize());
}

/* ---- ordering ---- */

static void sleep_then_write(void *p) {
  drv_test_sleep_ms(2);
  __atomic_store_n((int *)p, 1, __ATOMIC_RELAXED); /* atomic: unordered streams may race */
}

static volatile int seen;
static void read_flag(void *p) { seen = __atomic_load_n((int *)p, __ATOMIC_RELAXED); }

/* Host functions stand for kernels here: one writes after a delay, one reads. */
static int race(CUstream a, CUstream b, int with_event) {
  static int flag;
  flag = 0;
  seen = -1;
  CUevent e;
  CHECK_CU(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
  CHECK_CU(cuLaunchHostFunc(a, sleep_then_write, &flag));
  if (with_event) {
    CHECK_CU(cuEventRecord(e, a));
    CHECK_CU(cuStreamWaitEvent(b, e, 0));
  }
  CHECK_CU(cuLaunchHostFunc(b, read_flag, &flag));
  CHECK_CU(cuCtxSynchronize());
  CHECK_CU(cuEventDestroy_v2(e));
  return seen;
}

static void test_ordering(void) {
  CUstream a, b, nb;
  CHECK_CU(cuStreamCreate(&a, 0));
  CHECK_CU(cuStreamCreate(&b, 0));
  CHECK_CU(cuStreamCreate(&nb, CU_STREAM_NON_BLOCKING));
  /* A missing synchronisation between two streams is observably wrong in some runs... */
  int wrong = 0;
  for (int i = 0; i < 40; i++) wrong += race(a, b, 0) == 0;
  CHECK_INT(wrong, >, 0);
  /* ...and an event makes it right in every run. */
  for (int i = 0; i < 40; i++) CHECK_INT(race(a, b, 1), ==, 1);
  /* The legacy stream orders blocking streams, both ways; non-blocking streams are exempt. */
  for (int i = 0; i < 20; i++) {
    CHECK_INT(race(a, NULL, 0), ==, 1);
    CHECK_INT(race(NULL, b, 0), ==, 1);
  }
  wrong = 0;
  for (int i = 0; i < 40; i++) wrong += race(nb, NULL, 0) == 0;
  CHECK_INT(wrong, >, 0);
  /* Per-thread default stream: blocking with respect to the legacy stream too. */
  for (int i = 0; i < 20; i++) CHECK_INT(race(CU_STREAM_PER_THREAD, CU_STREAM_LEGACY, 0), ==, 1);
  /* Query, sync, flags, priority, ids. */
  unsigned flags;
  int prio;
  unsigned long long ida, idb;
  CHECK_CU(cuStreamGetFlags(nb, &flags));
  CHECK_INT(flags, ==, CU_STREAM_NON_BLOCKING);
  CUstream hp;
  CHECK_CU(cuStreamCreateWithPriority(&hp, 0, -3));
  CHECK_CU(cuStreamGetPriority(hp, &prio));
  CHECK_INT(prio, ==, -3);
  CHECK_CU(cuStreamGetId(a, &ida));
  CHECK_CU(cuStreamGetId(b, &idb));
  CHECK(ida != idb);
  static int flag;
  CHECK_CU(cuLaunchHostFunc(a, sleep_then_write, &flag));
  CUresult q = cuStreamQuery(a);
  CHECK(q == CUDA_ERROR_NOT_READY || q == CUDA_SUCCESS);
  CHECK_CU(cuStreamSynchronize(a));
  CHECK_CU(cuStreamQuery(a));
  CHECK_CU(cuStreamDestroy_v2(hp));
  CHECK_STATUS_EQ(CUDA_ERROR_INVALID_HANDLE, cuStreamQuery(hp));
}

static void callback(CUstream s, CUresult st, void *data) {
  (void)s;
  *(int *)data = st == CUDA_SUCCESS ? 42 : -1;
}

static void test_events(void) {
  CUevent a, b, nt;
  CUstream s;
  float ms;
  CHECK_CU(cuStreamCreate(&s, 0));
  CHECK_CU(cuEventCreate(&a, 0));
  CHECK_CU(cuEventCreate(&b, 0));
  CHECK_CU(cuEventCreate(&nt, CU_EVENT_DISABLE_TIMING));
  CHECK_STATUS_EQ(CUDA_ERROR_INVALID_HANDLE, cuEventElapsedTime_v2(&ms, a, b));
  CHECK_CU(cuEventQuery(a)); /* never recorded: complete */
  static int flag;
  CHECK_CU(cuEventRecord(a, s));
  CHECK_CU(cuLaunchHostFunc(s, sleep_then_write, &flag));
  CHECK_CU(cuEventRecord(b, s));
  CHECK_CU(cuEventRecord(nt, s));
  CHECK_CU(cuEventSynchronize(b));
  CHECK_CU(cuEventQuery(b));
  CHECK_CU(cuEventElapsedTime_v2(&ms, a, b));
  CHECK(ms >= 1.5f);
  CHECK_STATUS_EQ(CUDA_ERROR_INVALID_HANDLE, cuEventElapsedTime_v2(&ms, a, nt));
  int cb = 0;
  CHECK_CU(cuStreamAddCallback(s, callback, &cb, 0));
  CHECK_STATUS_EQ(CUDA_ERROR_INVALID_VALUE, cuStreamAddCallback(s, callback, &cb, 1));
  CHECK_CU(cuStreamSynchronize(s));
  CHECK_INT(cb, ==, 42);
  CHECK_CU(cuEventDestroy_v2(a));
  CHECK_STATUS_EQ(CUDA_ERROR_INVALID_HANDLE, cuEventQuery(a));
}

/* Work never runs on the caller's thread. */
static pthread_t host_thread;
static void record_thread(void *p) { *(pthread_t *)p = pthread_self(); }

static void test_device_thread(void) {
  CHECK_CU(cuLaunchHostFunc(NULL, record_thread, &host_thread));
  CHECK_CU(cuCtxSynchronize());
  CHECK(!pthread_equal(host_thread, pthread_self()));
}

static void test_fault_injection(void) {
  CUdeviceptr d;
  CHECK_CU(cuMemAlloc_v2(&d, 64));
  CHECK_STATUS_EQ(CUDA_ERROR_OUT_OF_MEMORY, cuMemAlloc_v2(&d, 64)); /* SIM_FAIL=cuMemAlloc:4 */
  CHECK_CU(cuMemAlloc_v2(&d, 64));
  CHECK_STATUS_EQ(CUDA_ERROR_INVALID_HANDLE, cuStreamSynchronize(NULL)); /* :1+ */
  CHECK_STATUS_EQ(CUDA_ERROR_INVALID_HANDLE, cuStreamSynchronize(NULL));
}

int main(void) {
  setenv("SIM_FAIL", "cuMemAlloc:4,cuStreamSynchronize:3+", 1);
  test_getter();
  test_device();
  test_memory(); /* cuMemAlloc calls 1 and 2 */
  test_ordering();
  test_events();
  test_device_thread();
  test_fault_injection();
  printf("drv-basic: ok\n");
  return 0;
}
