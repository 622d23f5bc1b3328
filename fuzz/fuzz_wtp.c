/*
 * fuzz_wtp.c - libFuzzer target over the engines' pack reader
 * (include/wtp.h): open from memory, read every table entry, metadata
 * record and page, then verify. Run twice per input: with the tables CRC
 * checked (what engines do) and with WTP_OPEN_NOCRC, so mutated tables
 * reach the structural checks instead of stopping at the CRC.
 *
 * Corpus: fuzz/corpus/fuzz_wtp/ (small valid packs written by
 * tests/test_pack.c with WTP_CORPUS_DIR set, and truncated / flipped
 * variants). make test replays it; make fuzz builds the libFuzzer binary.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wtp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void walk(const wtp_pack *p)
{
	unsigned char *raw = malloc(p->page_raw_size ? p->page_raw_size : 1);
	unsigned char *work = malloc(p->page_raw_size ? p->page_raw_size : 1);
	if (!raw || !work)
		goto done;
	volatile float sink = 0;
	for (uint32_t i = 0; i < p->n_layers; i++) {
		wtp_layer l;
		wtp_layer_get(p, i, &l);
	}
	for (uint32_t k = 0; k < p->n_lods; k++) {
		wtp_lod L;
		if (wtp_lod_get(p, k, &L) != WTP_OK)
			continue;
		for (uint32_t y = 0; y < L.py; y++)
			for (uint32_t x = 0; x < L.px; x++) {
				wtp_vat_entry e;
				if (wtp_vat(p, k, x, y, &e, NULL) == WTP_OK)
					sink += e.height;
			}
	}
	for (uint32_t k = 0; k < p->n_qt_levels; k++) {
		wtp_qt_level q;
		if (wtp_qt_level_get(p, k, &q) != WTP_OK)
			continue;
		for (uint32_t y = 0; y < q.h; y++)
			for (uint32_t x = 0; x < q.w; x++) {
				wtp_qt_node n;
				if (wtp_qt_node_get(p, k, x, y, &n, NULL) == WTP_OK)
					sink += n.hmin;
			}
	}
	const void *v;
	uint32_t len;
	for (uint32_t t = 0; t < 20; t++)
		if (wtp_meta_find(p, t, 0, &v, &len, NULL) == WTP_OK && len)
			sink += ((const uint8_t *)v)[len - 1];
	for (uint32_t i = 0; i < wtp_material_count(p); i++) {
		wtp_material m;
		if (wtp_material_get(p, i, &m, NULL) == WTP_OK && m.name_len)
			sink += (float)m.name[m.name_len - 1];
	}
	uint32_t mpos = 0;
	wtp_material mt;
	while (wtp_material_next(p, &mpos, &mt))
		sink += (float)mt.id;
	/* expansion, location and pitched decode of every LOD's first and
	   last entries */
	for (uint32_t k = 0; k < p->n_lods; k++) {
		wtp_lod L;
		wtp_location at;
		if (wtp_lod_get(p, k, &L) != WTP_OK ||
		    wtp_locate(p, k, p->origin[0] + L.dx * 0.5,
			       p->origin[1] + L.dx * ((double)L.ny - 0.5), &at,
			       NULL) != WTP_OK)
			continue;
		wtp_vat_entry e;
		if (wtp_vat(p, k, at.x, at.y, &e, NULL) != WTP_OK)
			continue;
		wtp_plane_dst dst[WTP_LAYER_COUNT];
		size_t pitch = 2 * 4 * 130 + 16;
		unsigned char *big = malloc(pitch * 130 * WTP_LAYER_COUNT);
		if (!big)
			continue;
		for (uint32_t i = 0; i < WTP_LAYER_COUNT; i++) {
			dst[i].data = big + pitch * 130 * i;
			dst[i].row_pitch = pitch;
		}
		float sc[2 * WTP_LAYER_COUNT];
		int ok = e.state == WTP_DATA
				 ? wtp_page_decode_ex(p, e.page, NULL, 0, dst, sc,
						      work, NULL, NULL)
				 : wtp_page_expand_ex(p, &e, dst, sc, NULL);
		sink += big[pitch * 129];
		/* block-compressed planes (2.1) through the software decoder */
		float *f = malloc(130 * 130 * 2 * sizeof *f);
		for (uint32_t i = 0; f && ok == WTP_OK && i < p->n_layers; i++) {
			wtp_layer l;
			uint32_t rows, rb;
			if (wtp_layer_get(p, i, &l) == WTP_OK &&
			    wtp_plane_rows(p, &l, &rows, &rb) == WTP_OK &&
			    wtp_bc_decode(l.format, dst[i].data, pitch, sc + 2 * i,
					  f, 130 * 2 * sizeof *f) == WTP_OK)
				sink += f[130 * 130 - 1];
		}
		free(f);
		free(big);
	}
	int hl = wtp_layer_find(p, WTP_LAYER_HEIGHT);
	wtp_layer lh;
	for (uint32_t i = 0; i < p->n_pages; i++) {
		wtp_page_info_t pi;
		if (wtp_page_info(p, i, &pi, NULL) != WTP_OK)
			continue;
		if (wtp_page_read(p, i, NULL, 0, raw, work, NULL) == WTP_OK && hl >= 0 &&
		    wtp_layer_get(p, (uint32_t)hl, &lh) == WTP_OK)
			sink += wtp_pixel(&lh, raw, p->page_pixels - 1, 0, 1.0f);
		/* every layer's last texel (BC: decoded from its block) */
		for (uint32_t li = 0; li < p->n_layers; li++) {
			wtp_layer l;
			if (wtp_page_read(p, i, NULL, 0, raw, work, NULL) == WTP_OK &&
			    wtp_layer_get(p, li, &l) == WTP_OK)
				for (uint32_t c = 0; c < l.components; c++)
					sink += wtp_pixel(&l, raw, p->page_pixels - 1, c, 0);
		}
	}
	wtp_verify(p, raw, work, NULL);
	(void)sink;
done:
	free(raw);
	free(work);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	for (unsigned pass = 0; pass < 2; pass++) {
		wtp_pack p;
		if (wtp_open(&p, data, size, pass ? WTP_OPEN_NOCRC : 0, NULL) == WTP_OK)
			walk(&p);
	}
	(void)wtp_tables_size(data, size);
	return 0;
}
