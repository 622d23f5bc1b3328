/*
 * rss.h -- the resident memory of the test or bench process, shared by
 * the memory tests and benches (test_mem_lbm, test_sparse_mem, bench_lbm,
 * bench_world).
 *
 * NO_RSS is defined under AddressSanitizer, whose shadow memory makes the
 * resident bytes meaningless: memory tests skip their bounds there.
 */
#ifndef WB_TESTS_RSS_H
#define WB_TESTS_RSS_H

#include <stdio.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define NO_RSS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NO_RSS 1
#endif
#endif

/* Resident bytes of this process now (/proc/self/statm), or -1. */
static inline double rss_bytes(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	if (!f)
		return -1;
	long size = 0, res = 0;
	int n = fscanf(f, "%ld %ld", &size, &res);
	fclose(f);
	return n == 2 ? (double)res * (double)sysconf(_SC_PAGESIZE) : -1;
}

#endif
