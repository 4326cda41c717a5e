/* machine.c: the machine and the process, for reports (machine.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "machine.h"

void machine_cpu_model(char *out, size_t size) {
    snprintf(out, size, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (f && fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) == 0 && colon) {
            snprintf(out, size, "%s", colon + 2);
            out[strcspn(out, "\n")] = '\0';
            break;
        }
    }
    if (f) fclose(f);
}

int machine_cores(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

double machine_load(void) {
    double load[1];
    return getloadavg(load, 1) == 1 ? load[0] : -1;
}

int64_t machine_rss_bytes(void) {
    long size = 0, pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f && fscanf(f, "%ld %ld", &size, &pages) != 2) pages = 0;
    if (f) fclose(f);
    return (int64_t)pages * (int64_t)sysconf(_SC_PAGESIZE);
}

int64_t machine_peak_rss_bytes(void) {
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return -1;
    /* The kernel's high-water mark lags its per-thread counters (synced every
     * few dozen page faults), so it can read below a fresh statm reading. */
    int64_t peak = (int64_t)ru.ru_maxrss * 1024, now = machine_rss_bytes();   /* kB on Linux */
    return peak > now ? peak : now;
}
