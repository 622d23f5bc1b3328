/*
 * bench_pack.c - tile pack writer throughput and size.
 *
 *   bench pack_pages_per_s <v> pages/s   DATA page slots packed per second
 *                                        (encode, hash, dedup, compress,
 *                                        write), all threads
 *   bench pack_kib_per_km2 <v> KiB/km2   pack size per km^2 of LOD0 water
 *
 * Input: tests/pack_synth.h's world, 2048 x 2048 m at 1 m/px, 5 LODs, all
 * layers, 2 cm of hash noise on the river surface (a solver's output is
 * never perfectly smooth). The periodic lake deduplicates; the river does
 * not. Best of 3 runs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#include "pack.h"
#include "pack_synth.h"

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(void)
{
	struct synth_opts o = { 2048, 2048, 5, (1u << WB_LAYER_COUNT) - 1, 1.0,
				0.02, 0 };
	struct wb_pageset ps;
	if (synth_pageset(&o, &ps)) {
		fprintf(stderr, "bench_pack: out of memory\n");
		return 1;
	}
	mkdir("tests/tmp", 0777);
	struct wb_pack_meta meta = { 0 };
	meta.scene_name = "bench";
	meta.tool_version = WB_VERSION_STRING;
	meta.solver = "lbm";
	struct wb_pack_stats st;
	double best = 1e30;
	for (int r = 0; r < 3; r++) {
		struct wb_diags d;
		wb_diags_init(&d);
		double t0 = now();
		enum wb_status s = pack_write("tests/tmp/bench_pack.wtp", &ps, &meta,
					      &st, &d);
		double t = now() - t0;
		if (s != WB_OK) {
			fprintf(stderr, "bench_pack: %s\n", d.n ? d.v[0].msg : "failed");
			wb_diags_release(&d);
			wb_pageset_free(&ps);
			return 1;
		}
		wb_diags_release(&d);
		best = t < best ? t : best;
	}
	double km2 = synth_water_km2(&ps);
	fprintf(stderr, "bench_pack: %ld data pages (%ld unique), %ld flat, %ld "
		"empty, %lld bytes, %.3f km2 water, %.3f s\n", st.pages_data,
		st.pages_unique, st.pages_flat, st.pages_empty, st.file_bytes, km2,
		best);
	printf("bench pack_pages_per_s %.1f pages/s\n", (double)st.pages_data / best);
	printf("bench pack_kib_per_km2 %.1f KiB/km2\n",
	       (double)st.file_bytes / 1024.0 / km2);
	remove("tests/tmp/bench_pack.wtp");
	wb_pageset_free(&ps);
	return 0;
}
