/* Unit tests of the READ_PLUS merge gap (src/backend/readgap.c): the
 * model that turns two timings into a gap, with the costs of the two
 * machines it was measured on, its edges, and the timed value in range.
 * No timing is asserted: the calibration is only checked for its form. */
#include <stdio.h>
#include <stdlib.h>

#include "../test.h"
#include "backend/posix_int.h"

/* The timings n pieces of p bytes would take at call ns per read and
 * byte ns per byte copied, each piece followed by a gap as wide. */
static size_t gap_for(double call, double byte, int n, size_t p)
{
	double pieces = n * (call + byte * (double)p);
	double through = call + byte * 2.0 * n * (double)p;

	return posix_merge_gap_model(pieces, through, n, p);
}

int main(void)
{
	size_t g;

	/* stop 22's machine: a call ~1.8 us, a byte ~0.05 ns: 36 KB */
	CHECK(gap_for(1800, 0.05, 32, 4096) == 32768,
	      "dear calls (1.8 us, 0.05 ns/B): gaps up to 32 KiB read");
	/* stop 24's: a call ~0.3 us, a byte ~0.1 ns: 3 KB, under a page */
	CHECK(gap_for(300, 0.1, 32, 4096) == 0,
	      "cheap calls (0.3 us, 0.1 ns/B): a read per piece");
	CHECK(gap_for(500, 0.1, 32, 4096) == 4096,
	      "5000 bytes' worth of call: one page of gap read");
	CHECK(gap_for(1e6, 0.01, 32, 4096) == POSIX_MERGE_GAP_MAX,
	      "very dear calls: capped at the scratch size");
	CHECK(gap_for(300, 0.1, 128, 8192) == 0 &&
	          gap_for(1800, 0.05, 64, 8192) == 32768,
	      "the model holds for other counts and piece sizes");
	/* timings a model cannot explain */
	CHECK(posix_merge_gap_model(10000, 30000, 32, 4096) == 0,
	      "pieces faster than half the read through: never read a gap");
	CHECK(posix_merge_gap_model(64000, 100, 32, 4096) ==
	          POSIX_MERGE_GAP_MAX,
	      "a read through cheaper than one call: capped");
	CHECK(posix_merge_gap_model(0, 0, 32, 4096) == 0,
	      "no time at all: no gap (no division by zero)");

	/* the timed gap: whole pages within range, and the setter wins */
	g = posix_merge_gap();
	printf("# timed merge gap here: %zu\n", g);
	CHECK(g % 4096 == 0 && g <= POSIX_MERGE_GAP_MAX,
	      "timed gap: whole pages, at most the scratch size");
	CHECK(posix_merge_gap() == g, "timed once: the same gap again");
	posix_merge_gap_set(8192);
	CHECK(posix_merge_gap() == 8192, "a gap set is the gap used");
	posix_merge_gap_set(1u << 20);
	CHECK(posix_merge_gap() == POSIX_MERGE_GAP_MAX,
	      "a gap set past the scratch size is capped");
	TEST_EXIT();
}
