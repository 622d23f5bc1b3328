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

#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
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

/* Whether memory that is only read costs nothing resident here. Most
 * kernels map every page read before it is written to one shared zero
 * page; some back each such page with its own (measured 2026-11-29 on a
 * Firecracker guest's 6.18 kernel: reading 100 MiB of a fresh mapping
 * made 100 MiB resident). The memory tests read what the code writes
 * from the resident growth, which only the first kind shows; on the
 * second they skip, saying why (RSS_READ_COST). Probes 1 MiB: 1 when
 * reading it grew the resident memory by less than half of it, 0 when
 * by more, -1 when it cannot tell. */
static inline int rss_reads_free(void)
{
	const size_t n = (size_t)1 << 20;
	const long pg = sysconf(_SC_PAGESIZE);
	/* a private mapping of /dev/zero: anonymous memory in POSIX terms */
	int fd = open("/dev/zero", O_RDONLY);
	if (fd < 0)
		return -1;
	void *m = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED || pg <= 0)
		return -1;
	const volatile unsigned char *p = m;
	double r0 = rss_bytes();
	unsigned s = 0;
	for (size_t k = 0; k < n; k += (size_t)pg)
		s += p[k];
	double r1 = rss_bytes();
	munmap(m, n);
	if (r0 < 0 || r1 < 0 || s != 0)
		return -1;
	return r1 - r0 < 0.5 * (double)n;
}

/* Why, where rss_reads_free is not 1: a memory test prints "skipped: "
 * and this before it skips (tests/run.sh shows such lines). */
#define RSS_READ_COST \
	"this kernel backs memory that is only read (no shared zero page), " \
	"so the resident growth cannot show what the code writes\n"

#endif
