/* machine.h: what a report says about the machine and the process: the CPU
 * (lscpu's "Model name", from /proc/cpuinfo), its cores, the load average,
 * and the resident size now and at its peak. */
#ifndef TINYLLM_TOOL_MACHINE_H
#define TINYLLM_TOOL_MACHINE_H

#include <stddef.h>
#include <stdint.h>

/* The CPU's model name into out ("unknown CPU" when /proc/cpuinfo has none). */
void machine_cpu_model(char *out, size_t size);
/* Online cores. */
int machine_cores(void);
/* The 1-minute load average (-1 when unknown). */
double machine_load(void);
/* The resident set size now, and its peak so far (VmHWM), in bytes. */
int64_t machine_rss_bytes(void);
int64_t machine_peak_rss_bytes(void);

#endif
