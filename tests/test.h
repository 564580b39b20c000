/* A minimal unit-test harness. Each check prints one line, "ok - name" or
 * "not ok - name (file:line)"; tests/run.sh counts them. */
#ifndef SNFS_TEST_H
#define SNFS_TEST_H

#include <stdio.h>
#include <stdlib.h>

static int test_failures;

#define CHECK(cond, name)                                                     \
	do {                                                                  \
		if (cond) {                                                   \
			printf("ok - %s\n", name);                            \
		} else {                                                      \
			printf("not ok - %s (%s:%d: %s)\n", name, __FILE__,  \
			       __LINE__, #cond);                              \
			test_failures++;                                      \
		}                                                             \
	} while (0)

#define TEST_EXIT() return test_failures ? 1 : 0

#endif
