/* CPU list parsing: see cpulist.h. */
#include "util/cpulist.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>

/* One CPU number at *p, advancing *p past it. */
static int cpu_number(const char **p, long *out)
{
	char *end;
	long v;

	if (!isdigit((unsigned char)**p))
		return -EINVAL;
	errno = 0;
	v = strtol(*p, &end, 10);
	if (errno || v < 0 || v >= CPU_SETSIZE)
		return -EINVAL;
	*p = end;
	*out = v;
	return 0;
}

int util_cpulist_parse(const char *s, cpu_set_t *set)
{
	const char *p = s;
	cpu_set_t got;

	CPU_ZERO(set);
	CPU_ZERO(&got);
	if (!s || !*s)
		return -EINVAL;
	for (;;) {
		long lo, hi;

		if (cpu_number(&p, &lo) != 0)
			return -EINVAL;
		hi = lo;
		if (*p == '-') {
			p++;
			if (cpu_number(&p, &hi) != 0 || hi < lo)
				return -EINVAL;
		}
		for (long c = lo; c <= hi; c++)
			CPU_SET((size_t)c, &got);
		if (*p == '\0') {
			*set = got;
			return 0;
		}
		if (*p++ != ',')
			return -EINVAL;
	}
}
