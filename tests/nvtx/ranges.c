/* A program marked with NVTX v3 (the header-only C API), for tests/nvtx.rs. It prints what it
 * did on its own CLOCK_MONOTONIC: `at NS0 NS1 WHAT NAME TID` lines (the clock just before and
 * just after the NVTX call) the test compares provetop's phases with.
 *
 *   ranges basic        push/pop nesting on two threads, a named thread, a start/end range
 *                       ended on another thread, a domain with a registered string and a
 *                       named category, markers, and one unbalanced pop
 *   ranges flood N [W]  N push/pop pairs, W steps of arithmetic inside each (default 0);
 *                       prints `took NS`
 *   ranges strings N    registers N distinct strings, pushes and pops a range of each
 *   ranges crash        pushes "doomed", then aborts inside it
 *   ranges none N [W]   never calls NVTX: the flood's loop without its ranges
 */
#define _GNU_SOURCE
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static unsigned long long now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (unsigned long long)t.tv_sec * 1000000000ull + t.tv_nsec;
}

static unsigned tid(void) { return (unsigned)syscall(SYS_gettid); }

static unsigned long long t0;

/* The clock before a call; `said` prints it with the clock after. */
static void before(void) { t0 = now(); }
static void said(const char *what, const char *name) {
  unsigned long long t1 = now();
  printf("at %llu %llu %s %s %u\n", t0, t1, what, name, tid());
  fflush(stdout);
}

static void nap(int ms) {
  struct timespec t = {0, ms * 1000000L};
  nanosleep(&t, 0);
}

static nvtxRangeId_t crossing;

static void *worker(void *arg) {
  (void)arg;
  nvtxNameOsThreadA(tid(), "worker");
  before();
  nvtxRangePushA("work");
  said("push", "work");
  nap(30);
  before();
  nvtxMarkA("checkpoint");
  said("mark", "checkpoint");
  before();
  nvtxRangeEnd(crossing);
  said("end", "crossing");
  nap(10);
  before();
  nvtxRangePop();
  said("pop", "work");
  return 0;
}

static int basic(void) {
  nvtxNameOsThreadA(tid(), "main");
  before();
  nvtxRangePushA("outer");
  said("push", "outer");
  nap(20);
  before();
  crossing = nvtxRangeStartA("crossing");
  said("start", "crossing");
  before();
  nvtxRangePushA("inner");
  said("push", "inner");
  nap(20);
  pthread_t th;
  pthread_create(&th, 0, worker, 0);
  pthread_join(th, 0);
  before();
  nvtxRangePop();
  said("pop", "inner");

  nvtxDomainHandle_t d = nvtxDomainCreateA("prover");
  nvtxDomainNameCategoryA(d, 7, "io");
  nvtxStringHandle_t s = nvtxDomainRegisterStringA(d, "witgen");
  nvtxEventAttributes_t a;
  memset(&a, 0, sizeof a);
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.category = 7;
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = s;
  before();
  nvtxDomainRangePushEx(d, &a);
  said("push", "witgen");
  nap(20);
  nvtxDomainMarkEx(d, &a);
  before();
  nvtxDomainRangePop(d);
  said("pop", "witgen");
  nap(20);
  before();
  nvtxRangePop();
  said("pop", "outer");
  /* Unbalanced: nothing is open. */
  if (nvtxRangePop() >= 0) {
    fprintf(stderr, "an unbalanced pop returned a level\n");
    return 1;
  }
  return 0;
}

static unsigned long long work(long w, unsigned long long x) {
  for (long j = 0; j < w; j++) x = x * 6364136223846793005ull + 1442695040888963407ull;
  return x;
}

static int flood(long n, long w, int nvtx) {
  volatile unsigned long long sink = 0;
  unsigned long long x = 1, t0 = now();
  for (long i = 0; i < n; i++) {
    if (nvtx) {
      nvtxRangePushA("flood");
      x = work(w, x);
      nvtxRangePop();
    } else {
      x = work(w, x);
    }
  }
  sink = x;
  (void)sink;
  printf("took %llu\n", now() - t0);
  return 0;
}

static int strings(long n) {
  nvtxDomainHandle_t d = nvtxDomainCreateA("strings");
  char buf[64];
  nvtxEventAttributes_t a;
  memset(&a, 0, sizeof a);
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  for (long i = 0; i < n; i++) {
    snprintf(buf, sizeof buf, "string-%ld", i);
    a.message.registered = nvtxDomainRegisterStringA(d, buf);
    nvtxDomainRangePushEx(d, &a);
    nvtxDomainRangePop(d);
  }
  printf("registered %ld\n", n);
  return 0;
}

int main(int argc, char **argv) {
  const char *what = argc > 1 ? argv[1] : "basic";
  long n = argc > 2 ? atol(argv[2]) : 0;
  long w = argc > 3 ? atol(argv[3]) : 0;
  if (!strcmp(what, "basic")) return basic();
  if (!strcmp(what, "flood")) return flood(n, w, 1);
  if (!strcmp(what, "none")) return flood(n, w, 0);
  if (!strcmp(what, "strings")) return strings(n);
  if (!strcmp(what, "crash")) {
    before();
    nvtxRangePushA("doomed");
    said("push", "doomed");
    nap(50);
    abort();
  }
  fprintf(stderr, "usage: ranges basic|flood N|strings N|crash|none N\n");
  return 2;
}
