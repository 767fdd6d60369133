/* nvtx.c — NVTX ranges and marks of the engine's decisions (see nvtx.h, docs/nvtx.md).
 *
 * The NVTX v3 header defines its entry points inline, with one table of function pointers per
 * library that includes it (hidden here: -fvisibility=hidden and the export list). The first
 * call, the domain's creation at start-up, loads the tool if NVTX_INJECTION64_PATH names one and
 * lets it fill the table; without a tool every pointer becomes NULL and the domain handle is
 * NULL, which is how ag__nvtx_init knows that nothing listens. From then on the engine tests
 * ag__nvtx_on before calling any function here, so without a tool the only cost is that test, on
 * paths that already are per held run or per replay, never per launch passed through.
 *
 * Messages with a number in them are formatted into a stack buffer (ASCII) only when a tool
 * listens; fixed names are registered once, so a tool can group them without comparing text.
 */
#include "nvtx.h"

#include <nvtx3/nvToolsExt.h>
#include <stdio.h>

#include "config.h"
#include "trace.h"

int ag__nvtx_on;

static struct {
  nvtxDomainHandle_t domain;
  nvtxStringHandle_t learned, built, evicted;
} N;

void ag__nvtx_init(void) {
  if (!ag__config.nvtx) return;
  N.domain = nvtxDomainCreateA("autograph");
  if (!N.domain) return; /* no tool: the NVTX entry points are no-ops from now on */
  N.learned = nvtxDomainRegisterStringA(N.domain, "sequence learned");
  N.built = nvtxDomainRegisterStringA(N.domain, "graph built");
  N.evicted = nvtxDomainRegisterStringA(N.domain, "graph evicted");
  __atomic_store_n(&ag__nvtx_on, 1, __ATOMIC_RELEASE);
}

/* The attributes of an event with payload `payload` and the ASCII message `text`, or the
 * registered string `reg` when `text` is NULL. */
static nvtxEventAttributes_t attrs(const char *text, nvtxStringHandle_t reg, uint64_t payload) {
  nvtxEventAttributes_t a = {0};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
  a.payload.ullValue = payload;
  if (text) {
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = text;
  } else {
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = reg;
  }
  return a;
}

static void mark(const char *text, nvtxStringHandle_t reg, uint64_t payload) {
  nvtxEventAttributes_t a = attrs(text, reg, payload);
  nvtxDomainMarkEx(N.domain, &a);
}

void ag__nvtx_replay_begin(const ag_seq_t *s, int launches, int ops, uint64_t updates) {
  char msg[96];
  snprintf(msg, sizeof msg, "replay seq %u: %d launches, %d ops, %llu updates", (unsigned)s->id,
           launches, ops, (unsigned long long)updates);
  nvtxEventAttributes_t a = attrs(msg, NULL, (uint64_t)launches);
  nvtxDomainRangePushEx(N.domain, &a);
}

void ag__nvtx_replay_end(void) { nvtxDomainRangePop(N.domain); }

void ag__nvtx_learned(const ag_seq_t *s) { mark(NULL, N.learned, s->id); }

void ag__nvtx_built(const ag_seq_t *s, int status) {
  char msg[80];
  if (!status) {
    mark(NULL, N.built, s->id);
    return;
  }
  snprintf(msg, sizeof msg, "graph build failed: seq %u (CUDA error %d)", (unsigned)s->id, status);
  mark(msg, NULL, s->id);
}

void ag__nvtx_demoted(const ag_seq_t *s, const char *why) {
  char msg[160];
  snprintf(msg, sizeof msg, "demoted seq %u: %s", (unsigned)s->id, why);
  mark(msg, NULL, s->id);
}

void ag__nvtx_evicted(const ag_seq_t *s) { mark(NULL, N.evicted, s->id); }

void ag__nvtx_flushed(int n, int fb, const char *why, const ag_seq_t *cand) {
  char msg[160], of[32] = "";
  if (cand) snprintf(of, sizeof of, " of seq %u", (unsigned)cand->id);
  snprintf(msg, sizeof msg, "flush %d launches%s (%s): %s", n, of, ag__trace_fallback_name(fb),
           why);
  mark(msg, NULL, (uint64_t)n);
}
