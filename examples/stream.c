/*
 * stream.c - an engine's page streamer, written against include/wtp.h and
 * include/wtp_alloc.h only (plus zlib), as an engine team would: a camera
 * moves over the world; every frame the DATA pages nearest to it are made
 * resident in a 64 x 64 slot pool (the talk's 8192^2 tile texture), the
 * farthest resident page is evicted when the budget is reached, pages are
 * decoded straight into 256-byte-aligned upload rows (D3D12 style), and
 * FLAT / EMPTY entries need no slot (wtp_page_expand() fills a constant
 * page when a renderer wants one). Block-compressed layers (format 2.1:
 * flow BC5, distance / foam BC4) arrive as raw 4x4 blocks, 33 block rows
 * per page (wtp_plane_rows), for a 132x132 slice of a BC texture array,
 * with a per-page scale the engine keeps per slot (wtp_page_decode_ex).
 *
 *   stream PACK [--frames N] [--budget B] [--quiet] [--no-evict]
 *
 * --no-evict makes it a broken streamer (it never evicts, it only stops
 * uploading when the pool is full), to show that the checks catch one.
 *
 * Distance of a page: from the camera to the nearest point of the page's
 * world rectangle, divided by 2^lod (fine pages matter near the camera,
 * coarse ones far away); a directory page shared by several VAT entries
 * (deduplication) takes its nearest entry. The resident set after each
 * frame must be exactly the B nearest pages (ties: lower page index
 * first); every frame the program asserts:
 *   - no pool slot is booked twice and the allocator's free count matches;
 *   - the resident set equals the B nearest pages;
 *   - each resident page's uploaded rows decode to its directory hash, and
 *     the height under the camera read from the pool equals a fresh decode.
 * Exit 0 with a summary line when all hold, 1 on usage, 2 when the pack
 * cannot be opened, 3 when an invariant breaks.
 */
#define WTP_IMPLEMENTATION
#include "wtp.h"
#include "wtp_alloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POOL 64
#define ROW_ALIGN 256

struct ent {
	uint32_t lod, x, y, page;
	double x0, y0, size; /* world rectangle */
};

struct key {
	double d;
	uint32_t page;
};

static int key_cmp(const void *a, const void *b)
{
	const struct key *p = a, *q = b;
	if (p->d != q->d)
		return p->d < q->d ? -1 : 1;
	return p->page < q->page ? -1 : p->page > q->page;
}

struct streamer {
	const wtp_pack *p;
	wtp_alloc pool;
	int *slot_of;           /* per directory page: slot or -1 */
	int32_t owner[POOL * POOL]; /* per slot: page or -1 */
	unsigned char *texels[POOL * POOL]; /* per slot: its upload rows */
	size_t pitch[WTP_LAYER_COUNT], slot_bytes;
	uint32_t rows[WTP_LAYER_COUNT]; /* 130, or 33 block rows (BC) */
	float scale[POOL * POOL][2 * WTP_LAYER_COUNT]; /* per slot (BC) */
	long resident, uploads, evictions;
};

static int fail(const char *what, long frame)
{
	fprintf(stderr, "stream: frame %ld: invariant broken: %s\n", frame, what);
	return 3;
}

static void dst_of(const struct streamer *s, unsigned char *base,
		   wtp_plane_dst *dst)
{
	size_t off = 0;
	for (uint32_t i = 0; i < s->p->n_layers; i++) {
		dst[i].data = base + off;
		dst[i].row_pitch = s->pitch[i];
		off += s->pitch[i] * s->rows[i];
	}
}

static void *zalloc(void *user, size_t n)
{
	(void)user;
	return malloc(n);
}
static void zfree(void *user, void *ptr)
{
	(void)user;
	free(ptr);
}

/* Upload page into a fresh slot; 0, or an exit code. */
static int upload(struct streamer *s, uint32_t page, unsigned char *work)
{
	int slot = wtp_alloc_take(&s->pool);
	if (slot == WTP_ALLOC_NONE)
		return fail("pool full below the budget", -1);
	if (s->owner[slot] != -1)
		return fail("slot handed out twice", -1);
	if (!s->texels[slot] && !(s->texels[slot] = malloc(s->slot_bytes)))
		return 4;
	wtp_plane_dst dst[WTP_LAYER_COUNT];
	dst_of(s, s->texels[slot], dst);
	wtp_allocator za = { zalloc, zfree, NULL };
	wtp_error err;
	if (wtp_page_decode_ex(s->p, page, NULL, 0, dst, s->scale[slot], work,
			       &za, &err) != WTP_OK) {
		fprintf(stderr, "stream: %s\n", err.msg);
		return 2;
	}
	s->owner[slot] = (int32_t)page;
	s->slot_of[page] = slot;
	s->resident++;
	s->uploads++;
	return 0;
}

static void evict(struct streamer *s, uint32_t page)
{
	int slot = s->slot_of[page];
	wtp_alloc_free(&s->pool, slot);
	s->owner[slot] = -1;
	s->slot_of[page] = -1;
	s->resident--;
	s->evictions++;
}

/* The uploaded rows of a slot, packed back, hash to the directory's. */
static int check_slot(const struct streamer *s, int slot, unsigned char *raw)
{
	const wtp_pack *p = s->p;
	size_t off = 0, at = 0;
	for (uint32_t i = 0; i < p->n_layers; i++) {
		wtp_layer l;
		wtp_layer_get(p, i, &l);
		uint32_t rows = 0, rb = 0;
		wtp_plane_rows(p, &l, &rows, &rb);
		size_t rowb = rb;
		if (rows != p->page_side) {
			/* a BC plane starts with its scales (format 4.1) */
			memset(raw + at, 0, WTP_BC_HEADER);
			for (uint32_t c = 0; c < l.components; c++) {
				uint32_t u;
				memcpy(&u, &s->scale[slot][2 * i + c], 4);
				for (int k = 0; k < 4; k++)
					raw[at + 4 * c + k] = (unsigned char)(u >> (8 * k));
			}
			at += WTP_BC_HEADER;
		}
		for (uint32_t r = 0; r < rows; r++)
			memcpy(raw + at + r * rowb, s->texels[slot] + off + r * s->pitch[i],
			       rowb);
		off += s->pitch[i] * rows;
		at += rowb * rows;
	}
	wtp_page_info_t pi;
	wtp_page_info(p, (uint32_t)s->owner[slot], &pi, NULL);
	return wtp_hash64(raw, p->page_raw_size) == pi.hash;
}

int main(int argc, char **argv)
{
	const char *path = NULL;
	long frames = 240, budget = POOL * POOL;
	int quiet = 0, no_evict = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--frames") && i + 1 < argc)
			frames = strtol(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--budget") && i + 1 < argc)
			budget = strtol(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--quiet"))
			quiet = 1;
		else if (!strcmp(argv[i], "--no-evict"))
			no_evict = 1;
		else if (argv[i][0] != '-' && !path)
			path = argv[i];
		else
			path = NULL, i = argc;
	}
	if (!path || frames < 1 || budget < 1 || budget > POOL * POOL) {
		fprintf(stderr, "usage: stream PACK [--frames N] [--budget 1..4096] "
				"[--quiet] [--no-evict]\n");
		return 1;
	}
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		return 2;
	}
	fseek(f, 0, SEEK_END);
	long len = ftell(f);
	fseek(f, 0, SEEK_SET);
	unsigned char *buf = malloc(len > 0 ? (size_t)len : 1);
	if (!buf || len <= 0 || fread(buf, 1, (size_t)len, f) != (size_t)len) {
		fprintf(stderr, "stream: cannot read %s\n", path);
		return 2;
	}
	fclose(f);
	wtp_pack pk;
	wtp_error err;
	if (wtp_open(&pk, buf, (size_t)len, 0, &err) != WTP_OK) {
		fprintf(stderr, "stream: %s: %s\n", path, err.msg);
		return 2;
	}
	const wtp_pack *p = &pk;

	/* every DATA entry of every LOD, with its world rectangle */
	size_t n_ent = 0, cap = 0;
	struct ent *ents = NULL;
	double wx0 = p->origin[0], wy0 = p->origin[1], wx1 = wx0, wy1 = wy0;
	for (uint32_t k = 0; k < p->n_lods; k++) {
		wtp_lod L;
		wtp_lod_get(p, k, &L);
		wx1 = fmax(wx1, wx0 + L.nx * L.dx);
		wy1 = fmax(wy1, wy0 + L.ny * L.dx);
		for (uint32_t y = 0; y < L.py; y++)
			for (uint32_t x = 0; x < L.px; x++) {
				wtp_vat_entry e;
				wtp_vat(p, k, x, y, &e, NULL);
				if (e.state != WTP_DATA)
					continue;
				if (n_ent == cap) {
					cap = cap ? 2 * cap : 256;
					ents = realloc(ents, cap * sizeof *ents);
					if (!ents)
						return 4;
				}
				double size = p->page_interior * L.dx;
				struct ent en = { k, x, y, e.page, wx0 + x * size,
						  wy0 + y * size, size };
				ents[n_ent++] = en;
			}
	}
	struct streamer s;
	memset(&s, 0, sizeof s);
	s.p = p;
	wtp_alloc_init(&s.pool, POOL, POOL);
	for (int i = 0; i < POOL * POOL; i++)
		s.owner[i] = -1;
	for (uint32_t i = 0; i < p->n_layers; i++) {
		wtp_layer l;
		wtp_format_desc fd;
		wtp_layer_get(p, i, &l);
		uint32_t rb;
		if (wtp_format_info(l.format, &fd) != WTP_OK ||
		    wtp_plane_rows(p, &l, &s.rows[i], &rb) != WTP_OK)
			return 2;
		/* rows of texels, or of 4x4 blocks for BC formats */
		s.pitch[i] = (rb + ROW_ALIGN - 1) / ROW_ALIGN * ROW_ALIGN;
		s.slot_bytes += s.pitch[i] * s.rows[i];
	}
	s.slot_of = malloc((p->n_pages ? p->n_pages : 1) * sizeof *s.slot_of);
	struct key *keys = malloc((p->n_pages ? p->n_pages : 1) * sizeof *keys);
	char *want = malloc(p->n_pages ? p->n_pages : 1);
	unsigned char *work = malloc(p->page_raw_size), *raw = malloc(p->page_raw_size);
	if (!s.slot_of || !keys || !want || !work || !raw)
		return 4;
	for (uint32_t i = 0; i < p->n_pages; i++)
		s.slot_of[i] = -1;
	long max_up = 0, checked_px = 0;
	int rc = 0;
	for (long fr = 0; fr < frames && !rc; fr++) {
		/* camera on a Lissajous path over the world */
		double t = (double)fr / (double)frames * 6.283185307179586;
		double cx = wx0 + (wx1 - wx0) * (0.5 + 0.45 * sin(t));
		double cy = wy0 + (wy1 - wy0) * (0.5 + 0.45 * sin(2 * t + 0.7));
		for (uint32_t i = 0; i < p->n_pages; i++) {
			keys[i].d = INFINITY;
			keys[i].page = i;
		}
		for (size_t i = 0; i < n_ent; i++) {
			const struct ent *e = &ents[i];
			double dx = fmax(fmax(e->x0 - cx, 0), cx - (e->x0 + e->size));
			double dy = fmax(fmax(e->y0 - cy, 0), cy - (e->y0 + e->size));
			double d = sqrt(dx * dx + dy * dy) / (double)(1u << e->lod);
			if (d < keys[e->page].d)
				keys[e->page].d = d;
		}
		qsort(keys, p->n_pages, sizeof *keys, key_cmp);
		long nb = budget < (long)p->n_pages ? budget : (long)p->n_pages;
		memset(want, 0, p->n_pages);
		for (long i = 0; i < nb; i++)
			want[keys[i].page] = 1;
		/* nearest first: bring each wanted page in, evicting the
		   farthest resident page that is no longer wanted */
		long up0 = s.uploads;
		for (long i = 0; i < nb && !rc; i++) {
			uint32_t pg = keys[i].page;
			if (s.slot_of[pg] >= 0)
				continue;
			if (s.resident >= nb && no_evict) {
				if (s.resident >= POOL * POOL)
					break;
			} else if (s.resident >= nb) {
				long j = (long)p->n_pages - 1;
				while (j >= 0 && (want[keys[j].page] ||
						  s.slot_of[keys[j].page] < 0))
					j--;
				if (j < 0) {
					rc = fail("nothing to evict", fr);
					break;
				}
				evict(&s, keys[j].page);
			}
			rc = upload(&s, pg, work);
		}
		if (rc)
			break;
		max_up = s.uploads - up0 > max_up ? s.uploads - up0 : max_up;
		/* invariants */
		long booked = 0, free_slots = 0;
		for (int sl = 0; sl < POOL * POOL; sl++) {
			if (s.owner[sl] < 0)
				continue;
			booked++;
			if (s.slot_of[s.owner[sl]] != sl)
				rc = fail("slot and page disagree", fr);
		}
		for (int y = 0; y < POOL; y++)
			for (int x = 0; x < POOL; x++)
				free_slots += (s.pool.rows[y] >> x) & 1u;
		if (booked != s.resident || free_slots != POOL * POOL - booked)
			rc = fail("slot double-booked or lost", fr);
		for (uint32_t i = 0; i < p->n_pages && !rc; i++)
			if ((s.slot_of[i] >= 0) != want[i])
				rc = fail("resident set is not the nearest pages", fr);
		for (int sl = 0; sl < POOL * POOL && !rc && fr % 16 == 0; sl++)
			if (s.owner[sl] >= 0 && !check_slot(&s, sl, raw))
				rc = fail("uploaded page does not match its hash", fr);
		/* the height under the camera, from the pool, at the finest
		   resident LOD, against a fresh decode */
		for (uint32_t k = 0; k < p->n_lods && !rc; k++) {
			wtp_location at;
			wtp_vat_entry e;
			if (wtp_locate(p, k, cx, cy, &at, NULL) != WTP_OK ||
			    wtp_vat(p, k, at.x, at.y, &e, NULL) != WTP_OK ||
			    e.state != WTP_DATA || s.slot_of[e.page] < 0)
				continue;
			uint32_t a = (uint32_t)at.tx, b = (uint32_t)at.ty;
			const unsigned char *tx =
				s.texels[s.slot_of[e.page]] + b * s.pitch[0] + 2 * a;
			uint16_t o = (uint16_t)(tx[0] | tx[1] << 8);
			float h = o == WTP_DRY_HALF ? WTP_DRY_HEIGHT
						   : e.height + wtp_half_to_float(o);
			wtp_layer lh;
			wtp_layer_get(p, 0, &lh);
			wtp_page_read(p, e.page, NULL, 0, raw, work, NULL);
			float ref = wtp_pixel(&lh, raw, a + b * p->page_side, 0, e.height);
			if (memcmp(&h, &ref, 4) != 0)
				rc = fail("pool texel differs from the page", fr);
			checked_px++;
			break;
		}
		if (!quiet && fr % 60 == 0)
			printf("frame %ld: camera (%.1f, %.1f), %ld resident, %ld "
			       "uploads so far\n", fr, cx, cy, s.resident, s.uploads);
	}
	if (!rc)
		printf("stream: %ld frames, %zu DATA entries, %u pages, budget %ld, "
		       "%ld uploads (max %ld a frame), %ld evictions, %ld camera "
		       "texels checked: invariants held\n", frames, n_ent,
		       (unsigned)p->n_pages, budget, s.uploads, max_up, s.evictions,
		       checked_px);
	for (int sl = 0; sl < POOL * POOL; sl++)
		free(s.texels[sl]);
	free(s.slot_of);
	free(keys);
	free(want);
	free(work);
	free(raw);
	free(ents);
	free(buf);
	return rc;
}
