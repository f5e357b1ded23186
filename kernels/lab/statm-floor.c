/* The floor under provetop's sampler cost (docs/kernel.md): a loop that only reads a /proc
 * file at 20 Hz, sleeping to absolute CLOCK_MONOTONIC deadlines, then prints the share of a
 * core it used (schedstat: time on CPU, wake-ups included).
 *
 *   cc -O2 -o statm-floor kernels/lab/statm-floor.c
 *   ./statm-floor 30                 its own /proc/self/statm
 *   ./statm-floor 30 status          a child's /proc/PID/status (what the sampler reads)
 *   ./statm-floor 30 status clear    …and writes 5 to its clear_refs after each read (the
 *                                    interval-peak reset provetop makes under `run`)
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
  int secs = argc > 1 ? atoi(argv[1]) : 30;
  const char *file = argc > 2 ? argv[2] : NULL;
  int clear = argc > 3 && strcmp(argv[3], "clear") == 0;
  char path[64] = "/proc/self/statm";
  pid_t child = 0;
  int cfd = -1;
  if (file) {
    /* A sleeping child, as the sampler's target: its file, not this loop's own. */
    child = fork();
    if (child == 0) {
      execlp("sleep", "sleep", "100000", (char *)NULL);
      _exit(127);
    }
    snprintf(path, sizeof path, "/proc/%d/%s", child, file);
    if (clear) {
      char cr[64];
      snprintf(cr, sizeof cr, "/proc/%d/clear_refs", child);
      cfd = open(cr, O_WRONLY);
      if (cfd < 0) { perror(cr); return 1; }
    }
  }
  int fd = open(path, O_RDONLY);
  if (fd < 0) { perror(path); return 1; }
  char buf[4096];
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  for (int i = 0; i < secs * 20; i++) {
    if (pread(fd, buf, sizeof buf, 0) < 0) return 1;
    if (cfd >= 0 && pwrite(cfd, "5", 1, 0) < 0) return 1;
    t.tv_nsec += 50000000;
    if (t.tv_nsec >= 1000000000) { t.tv_nsec -= 1000000000; t.tv_sec++; }
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, 0);
  }
  if (child > 0) kill(child, SIGKILL);
  FILE *f = fopen("/proc/self/schedstat", "r");
  unsigned long long ns = 0;
  if (!f || fscanf(f, "%llu", &ns) != 1) return 1;
  printf("%s%s at 20 Hz for %d s: %.3f %% of a core (schedstat)\n", path,
         clear ? " + clear_refs" : "", secs, ns / 1e9 / secs * 100);
  return 0;
}
