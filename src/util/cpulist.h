/* CPU lists as the kernel prints them (cpuset(7) "list format"):
 * "0", "0-3", "1,4-6". */
#ifndef SNFS_UTIL_CPULIST_H
#define SNFS_UTIL_CPULIST_H

#include <sched.h>

/* Parse s into *set: comma-separated CPU numbers and inclusive ranges
 * LO-HI, each below CPU_SETSIZE. Returns 0, or -EINVAL for an empty list,
 * stray characters, a range running backwards or a CPU out of range
 * (*set then empty). */
int util_cpulist_parse(const char *s, cpu_set_t *set);

#endif
