/* util_cpulist_parse: the kernel's list format, and what it refuses. */
#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>

#include "test.h"
#include "util/cpulist.h"

/* Whether s parses to exactly the CPUs in want (n of them). */
static bool parses_to(const char *s, const int *want, int n)
{
	cpu_set_t set;

	if (util_cpulist_parse(s, &set) != 0 || CPU_COUNT(&set) != n)
		return false;
	for (int i = 0; i < n; i++)
		if (!CPU_ISSET(want[i], &set))
			return false;
	return true;
}

static bool refused(const char *s)
{
	cpu_set_t set;

	return util_cpulist_parse(s, &set) == -EINVAL && CPU_COUNT(&set) == 0;
}

int main(void)
{
	char big[32];

	CHECK(parses_to("0", (int[]){0}, 1), "one CPU");
	CHECK(parses_to("1", (int[]){1}, 1), "another CPU");
	CHECK(parses_to("0-3", (int[]){0, 1, 2, 3}, 4), "a range");
	CHECK(parses_to("1,4-6", (int[]){1, 4, 5, 6}, 4),
	      "a list with a range");
	CHECK(parses_to("2-2", (int[]){2}, 1), "a range of one");
	CHECK(parses_to("3,1,3", (int[]){1, 3}, 2), "repeats and order");
	snprintf(big, sizeof(big), "%d", CPU_SETSIZE - 1);
	CHECK(parses_to(big, (int[]){CPU_SETSIZE - 1}, 1), "the highest CPU");

	CHECK(refused(""), "empty list refused");
	CHECK(refused(NULL), "no list refused");
	CHECK(refused(","), "a lone comma refused");
	CHECK(refused("1,"), "a trailing comma refused");
	CHECK(refused(",1"), "a leading comma refused");
	CHECK(refused("3-1"), "a backwards range refused");
	CHECK(refused("1-"), "an open range refused");
	CHECK(refused("-1"), "a negative CPU refused");
	CHECK(refused("1 2"), "a space refused");
	CHECK(refused("a"), "a letter refused");
	CHECK(refused("0x1"), "hex refused");
	snprintf(big, sizeof(big), "%d", CPU_SETSIZE);
	CHECK(refused(big), "a CPU past CPU_SETSIZE refused");
	CHECK(refused("99999999999999999999"), "an overflowing number refused");
	CHECK(refused("0-99999999999999999999"),
	      "an overflowing range refused");
	TEST_EXIT();
}
