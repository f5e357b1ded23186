/* The floor under provetop's sampler cost (docs/kernel.md): a loop that only reads its own
 * /proc/self/statm at 20 Hz, sleeping to absolute CLOCK_MONOTONIC deadlines, then prints the
 * share of a core it used (schedstat: time on CPU, wake-ups included).
 *
 *   cc -O2 -o statm-floor kernels/lab/statm-floor.c && ./statm-floor 30
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
  int secs = argc > 1 ? atoi(argv[1]) : 30;
  int fd = open("/proc/self/statm", O_RDONLY);
  char buf[256];
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  for (int i = 0; i < secs * 20; i++) {
    if (pread(fd, buf, sizeof buf, 0) < 0) return 1;
    t.tv_nsec += 50000000;
    if (t.tv_nsec >= 1000000000) { t.tv_nsec -= 1000000000; t.tv_sec++; }
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, 0);
  }
  FILE *f = fopen("/proc/self/schedstat", "r");
  unsigned long long ns = 0;
  if (!f || fscanf(f, "%llu", &ns) != 1) return 1;
  printf("statm at 20 Hz for %d s: %.3f %% of a core (schedstat)\n", secs, ns / 1e9 / secs * 100);
  return 0;
}
