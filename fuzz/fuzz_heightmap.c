/*
 * fuzz_heightmap.c - libFuzzer target for wb_heightmap_decode().
 *
 * Input layout:
 *   byte 0      bits 0-1: format (0 png, 1 r16, 2 r32f, 3 png);
 *               bit 7: the PNG case also takes width/height from bytes 1-2
 *   byte 1, 2   width, height for r16/r32f (0..255; 0 exercises the
 *               missing-size error), or for png when bit 7 is set
 *   rest        the file bytes (png: from byte 1 unless bit 7 is set)
 * Invariants checked (abort on violation, so the fuzzer reports them):
 * success gives nx, ny > 0, matching any stated size, and finite heights;
 * failure gives no allocation and at least one error naming the file.
 * Replayed over fuzz/corpus/fuzz_heightmap/ by make test.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "wbake.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	struct wb_terrain_desc t;
	memset(&t, 0, sizeof(t));
	t.heightmap = "fuzz.bin";
	t.dx = 1;
	t.height_scale = 100;
	t.height_offset = -3;
	int f = data[0] & 3;
	int sized = f == 1 || f == 2 || (data[0] & 0x80);
	t.format = f == 1 ? WB_HM_R16 : f == 2 ? WB_HM_R32F : WB_HM_PNG;
	size_t skip = 1;
	if (sized) {
		if (size < 3)
			return 0;
		t.width = data[1];
		t.height = data[2];
		skip = 3;
	}
	struct wb_diags d;
	struct wb_heightmap hm;
	wb_diags_init(&d);
	enum wb_status st = wb_heightmap_decode(data + skip, size - skip, &t,
						&hm, &d);
	if (st == WB_OK) {
		if (hm.nx <= 0 || hm.ny <= 0 || !hm.z || d.errors)
			abort();
		if ((t.width && hm.nx != t.width) ||
		    (t.height && hm.ny != t.height))
			abort();
		for (size_t k = 0; k < (size_t)hm.nx * (size_t)hm.ny; k++)
			if (!isfinite(hm.z[k]))
				abort();
	} else {
		if (hm.z || d.errors < 1 || d.n < 1)
			abort();
		if (!d.v[0].file || strcmp(d.v[0].file, t.heightmap) != 0)
			abort();
	}
	wb_heightmap_free(&hm);
	wb_diags_release(&d);
	return 0;
}
