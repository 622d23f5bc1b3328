/*
 * fuzz_scene.c - libFuzzer target: any bytes through the scene parser, and
 * when they parse, through the rasteriser over a small synthetic terrain.
 * Must never crash, hang or leak, whatever the input.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wbake.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wb_scene sc;
	struct wb_diags d;
	wb_diags_init(&d);
	if (wb_scene_parse((const char *)data, size, "fuzz.json", ".", &sc, &d) == WB_OK) {
		struct wb_heightmap hm = { 0 };
		hm.nx = 24;
		hm.ny = 16;
		hm.z = malloc(sizeof(float) * 24 * 16);
		if (hm.z) {
			for (int k = 0; k < 24 * 16; k++)
				hm.z[k] = (float)((k * 7919) % 13);
			struct wb_raster r;
			if (wb_raster_build(&sc, &hm, &r, &d) == WB_OK)
				wb_raster_free(&r);
		}
		wb_heightmap_free(&hm);
	}
	char buf[2048];
	for (int i = 0; i < d.n; i++)
		wb_diag_format(&d.v[i], buf, sizeof(buf));
	wb_scene_free(&sc);
	wb_diags_release(&d);
	return 0;
}
