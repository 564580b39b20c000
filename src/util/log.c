#include "util/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

static int current_level = LOG_INFO;

void log_set_level(int level) { current_level = level; }
int log_get_level(void) { return current_level; }

void log_msg(int level, const char *fmt, ...)
{
	static const char *const tag[] = {"error", "warning", "info", "debug"};
	char line[1024];
	struct timespec ts;
	struct tm tm;
	va_list ap;
	int n;

	if (level > current_level)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = (int)strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%S", &tm);
	n += snprintf(line + n, sizeof(line) - (size_t)n, ".%03ldZ snfsd %s: ",
		      ts.tv_nsec / 1000000, tag[level < 0 ? 0 : level > 3 ? 3 : level]);
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	/* one fputs per line keeps lines from threads whole */
	fprintf(stderr, "%s\n", line);
}
