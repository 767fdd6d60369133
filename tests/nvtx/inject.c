/* inject.c — an NVTX tool that records what it receives, for tests/cases/nvtx.sh.
 *
 * Loaded by NVTX v3 through NVTX_INJECTION64_PATH, as Nsight Systems' own injection is: the
 * first NVTX call of each library that includes the NVTX header dlopens this file and calls
 * InitializeInjectionNvtx2 with that library's export-table getter; the tool asks it for the
 * callbacks table (NVTX_ETID_CALLBACKS) and writes its own functions into the slots of the
 * modules it handles: CORE (the default domain) and CORE2 (named domains). Slots left alone stay
 * no-ops.
 *
 * Every domain creation, registered string, mark, range push and pop, range start and end is
 * written to the file named by NVTX_RECORD_FILE as one tab-separated line:
 *   domain  <name>
 *   string  <domain>  <string>
 *   mark    <domain>  <thread>  <message>  <payload>
 *   push    <domain>  <thread>  <message>  <payload>
 *   pop     <domain>  <thread>
 *   start   <domain>  <thread>  <message>  <payload>  <range id>
 *   end     <domain>  <thread>  <range id>
 * <domain> is the name given at creation, "(default)" for the default domain; <message> is the
 * ASCII or registered string ("(none)" without one, "(unicode)" for wide strings, which this
 * tool does not decode); <payload> is the number, "-" without one. Each line goes out in one
 * write to a file opened with O_APPEND, so threads and processes never interleave within a line.
 */
#define _GNU_SOURCE /* gettid */
#include <fcntl.h>
#define NVTX_NO_IMPL /* the types only: this is the tool, not a user of NVTX */
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A domain or registered string handle is a pointer to one of these. */
typedef struct named {
  struct named *domain; /* a string's domain, NULL for a domain */
  char text[256];
} named_t;

static int fd = -1;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t next_range = 1;

static void put(const char *fmt, ...) {
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line - 1, fmt, ap);
  va_end(ap);
  if (fd < 0 || n < 0) return;
  if (n > (int)sizeof line - 2) n = (int)sizeof line - 2;
  line[n++] = '\n';
  if (write(fd, line, (size_t)n) != n) {
    /* A short write would only make the test fail, which is what it should do. */
  }
}

static named_t *make(named_t *domain, const char *text) {
  named_t *h = calloc(1, sizeof *h);
  if (!h) return NULL;
  h->domain = domain;
  snprintf(h->text, sizeof h->text, "%s", text ? text : "(null)");
  return h;
}

static const char *dname(nvtxDomainHandle_t d) {
  return d ? ((named_t *)(void *)d)->text : "(default)";
}

static long tid(void) { return (long)gettid(); }

/* The message and payload of an event, as text. */
static void describe(const nvtxEventAttributes_t *a, char *msg, size_t mn, char *pay, size_t pn) {
  snprintf(msg, mn, "(none)");
  snprintf(pay, pn, "-");
  if (!a) return;
  switch (a->messageType) {
  case NVTX_MESSAGE_TYPE_ASCII: snprintf(msg, mn, "%s", a->message.ascii); break;
  case NVTX_MESSAGE_TYPE_REGISTERED:
    snprintf(msg, mn, "%s",
             a->message.registered ? ((named_t *)(void *)a->message.registered)->text : "(null)");
    break;
  case NVTX_MESSAGE_TYPE_UNICODE: snprintf(msg, mn, "(unicode)"); break;
  default: break;
  }
  switch (a->payloadType) {
  case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64: snprintf(pay, pn, "%llu", (unsigned long long)a->payload.ullValue); break;
  case NVTX_PAYLOAD_TYPE_INT64: snprintf(pay, pn, "%lld", (long long)a->payload.llValue); break;
  case NVTX_PAYLOAD_TYPE_DOUBLE: snprintf(pay, pn, "%g", a->payload.dValue); break;
  case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32: snprintf(pay, pn, "%u", a->payload.uiValue); break;
  case NVTX_PAYLOAD_TYPE_INT32: snprintf(pay, pn, "%d", a->payload.iValue); break;
  case NVTX_PAYLOAD_TYPE_FLOAT: snprintf(pay, pn, "%g", (double)a->payload.fValue); break;
  default: break;
  }
}

static void event(const char *kind, nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) {
  char msg[512], pay[32];
  describe(a, msg, sizeof msg, pay, sizeof pay);
  put("%s\t%s\t%ld\t%s\t%s", kind, dname(d), tid(), msg, pay);
}

static nvtxRangeId_t range_id(void) {
  pthread_mutex_lock(&mu);
  nvtxRangeId_t id = next_range++;
  pthread_mutex_unlock(&mu);
  return id;
}

/* ---- named domains (CORE2) ---- */

static nvtxDomainHandle_t NVTX_API domain_create(const char *name) {
  put("domain\t%s", name ? name : "(null)");
  return (nvtxDomainHandle_t)(void *)make(NULL, name);
}

static void NVTX_API domain_destroy(nvtxDomainHandle_t d) { put("destroy\t%s", dname(d)); }

static nvtxStringHandle_t NVTX_API register_string(nvtxDomainHandle_t d, const char *s) {
  put("string\t%s\t%s", dname(d), s ? s : "(null)");
  return (nvtxStringHandle_t)(void *)make((named_t *)(void *)d, s);
}

static void NVTX_API domain_mark(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) {
  event("mark", d, a);
}

static int NVTX_API domain_push(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) {
  event("push", d, a);
  return 0;
}

static int NVTX_API domain_pop(nvtxDomainHandle_t d) {
  put("pop\t%s\t%ld", dname(d), tid());
  return 0;
}

static nvtxRangeId_t NVTX_API domain_start(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) {
  char msg[512], pay[32];
  nvtxRangeId_t id = range_id();
  describe(a, msg, sizeof msg, pay, sizeof pay);
  put("start\t%s\t%ld\t%s\t%s\t%llu", dname(d), tid(), msg, pay, (unsigned long long)id);
  return id;
}

static void NVTX_API domain_end(nvtxDomainHandle_t d, nvtxRangeId_t id) {
  put("end\t%s\t%ld\t%llu", dname(d), tid(), (unsigned long long)id);
}

static void NVTX_API domain_category(nvtxDomainHandle_t d, uint32_t c, const char *name) {
  put("category\t%s\t%u\t%s", dname(d), c, name ? name : "(null)");
}

/* ---- the default domain (CORE) ---- */

static void NVTX_API mark_ex(const nvtxEventAttributes_t *a) { event("mark", NULL, a); }
static void NVTX_API mark_a(const char *m) { put("mark\t(default)\t%ld\t%s\t-", tid(), m); }
static int NVTX_API push_ex(const nvtxEventAttributes_t *a) { event("push", NULL, a); return 0; }
static int NVTX_API push_a(const char *m) {
  put("push\t(default)\t%ld\t%s\t-", tid(), m);
  return 0;
}
static int NVTX_API pop(void) { return domain_pop(NULL); }
static nvtxRangeId_t NVTX_API start_ex(const nvtxEventAttributes_t *a) { return domain_start(NULL, a); }
static nvtxRangeId_t NVTX_API start_a(const char *m) {
  nvtxRangeId_t id = range_id();
  put("start\t(default)\t%ld\t%s\t-\t%llu", tid(), m, (unsigned long long)id);
  return id;
}
static void NVTX_API end(nvtxRangeId_t id) { domain_end(NULL, id); }

/* Writes fn into slot `id` of module `m`'s table, when the table has that slot. */
static void set(const NvtxExportTableCallbacks *cb, NvtxCallbackModule m, unsigned id,
                NvtxFunctionPointer fn) {
  NvtxFunctionTable table = NULL;
  unsigned size = 0;
  if (!cb->GetModuleFunctionTable(m, &table, &size) || !table || id > size || !table[id]) return;
  *table[id] = fn;
}

#define FN(f) ((NvtxFunctionPointer)(void *)(f))

__attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get) {
  const NvtxExportTableCallbacks *cb = get(NVTX_ETID_CALLBACKS);
  const char *path = getenv("NVTX_RECORD_FILE");
  if (!cb || cb->struct_size < sizeof *cb) return 0;
  pthread_mutex_lock(&mu);
  if (fd < 0 && path && *path) fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  pthread_mutex_unlock(&mu);
  put("init\t%ld", tid());

  set(cb, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainCreateA, FN(domain_create));
  set(cb, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainDestroy, FN(domain_destroy));
  set(cb, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRegisterStringA, FN(register_string));
  set(cb, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainMarkEx, FN(domain_mark));
  set(cb, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangePushEx, FN(domain_push));
  set(cb, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangePop, FN(domain_pop));
  set(cb, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangeStartEx, FN(domain_start));
  set(cb, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangeEnd, FN(domain_end));
  set(cb, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainNameCategoryA, FN(domain_category));

  set(cb, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_MarkEx, FN(mark_ex));
  set(cb, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_MarkA, FN(mark_a));
  set(cb, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePushEx, FN(push_ex));
  set(cb, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePushA, FN(push_a));
  set(cb, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePop, FN(pop));
  set(cb, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangeStartEx, FN(start_ex));
  set(cb, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangeStartA, FN(start_a));
  set(cb, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangeEnd, FN(end));
  return 1;
}
