/*
 * replay_main.c - run a libFuzzer target over a corpus without libFuzzer.
 *
 * make test links every fuzz/fuzz_*.c against this main and feeds it each
 * file of fuzz/corpus/<target>/, so inputs that once crashed stay fixed
 * under gcc (and under ASan/UBSan with make SAN=1). Any crash fails the run.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "replay: cannot open %s\n", path);
		return -1;
	}
	size_t cap = 1 << 16, n = 0;
	uint8_t *buf = malloc(cap);
	size_t got;
	while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
		n += got;
		if (n == cap) {
			uint8_t *nb = realloc(buf, cap *= 2);
			if (!nb) { free(buf); buf = NULL; }
			else buf = nb;
		}
	}
	fclose(f);
	if (!buf)
		return -1;
	LLVMFuzzerTestOneInput(buf, n);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	int count = 0;
	for (int i = 1; i < argc; i++) {
		DIR *d = opendir(argv[i]);
		if (!d) {
			if (run_file(argv[i]) < 0)
				return 1;
			count++;
			continue;
		}
		struct dirent *e;
		while ((e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			size_t len = strlen(argv[i]) + strlen(e->d_name) + 2;
			char *p = malloc(len);
			if (!p)
				return 1;
			snprintf(p, len, "%s/%s", argv[i], e->d_name);
			int rc = run_file(p);
			free(p);
			if (rc < 0) {
				closedir(d);
				return 1;
			}
			count++;
		}
		closedir(d);
	}
	printf("replayed %d inputs\n", count);
	return count > 0 ? 0 : 1;
}
