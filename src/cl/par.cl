/*
 * par.cl - one bake over several processes (src/par.h, docs/mpi.md): the
 * cells a step's exchange moves (halo rows, boundary ring), gathered into
 * one buffer and scattered back by a list of padded cell indices, so that
 * a rank moves them with one copy each way instead of one per field and
 * row (small copies cost tens of microseconds each on a GPU).
 *
 * Fields: q = 0 .. 8 the populations, slice q of f (N cells each), q = 9
 * the depth h. Record k of buf: the 10 fields of cell cells[k]. Bits are
 * copied as they are (uint).
 */
kernel void par_cells_gather(global const uint *f, global const uint *h,
			     int N, global const int *cells, int o, int n,
			     global uint *buf)
{
	const int k = get_global_id(0);
	if (k >= n)
		return;
	const int c = cells[o + k];
	for (int q = 0; q < 9; q++)
		buf[10 * k + q] = f[WB_SLICE(q, N, c)];
	buf[10 * k + 9] = h[c];
}

/* The halo parts in chunks (src/par.h, WB_PAR_CHUNK = 32): one work-group
 * of 32 items per chunk, group g = part d * nch + chunk c of the list's
 * entries d * nh + c * 32 + (0 .. 31). A chunk with a nonzero bit takes
 * the next slot (the count at buf[zo], zeroed before), writes its number
 * g to buf[zo + 2 + slot] and its records to the slot; a zero chunk
 * writes nothing. The slots' order varies from run to run; the receiver
 * places each chunk by its number. */
kernel void par_chunks_gather(global const uint *f, global const uint *h,
			      int N, global const int *cells, int nh, int nch,
			      global uint *buf, int zo)
{
	local uint any, slot;
	const int g = get_group_id(0), l = get_local_id(0);
	const int d = g / nch, w = (g % nch) * 32 + l;
	uint v[10], acc = 0;
	for (int q = 0; q < 10; q++)
		v[q] = 0;
	if (w < nh) {
		const int c = cells[d * nh + w];
		for (int q = 0; q < 9; q++)
			acc |= v[q] = f[WB_SLICE(q, N, c)];
		acc |= v[9] = h[c];
	}
	if (l == 0)
		any = 0;
	barrier(CLK_LOCAL_MEM_FENCE);
	if (acc)
		atomic_or(&any, 1u);
	barrier(CLK_LOCAL_MEM_FENCE);
	if (!any) /* the same for the whole group */
		return;
	if (l == 0) {
		slot = atomic_inc(&buf[zo]);
		buf[zo + 2 + slot] = (uint)g;
	}
	barrier(CLK_LOCAL_MEM_FENCE);
	global uint *o = buf + zo + 2 + 2 * nch + (slot * 32 + l) * 10;
	for (int q = 0; q < 10; q++)
		o[q] = v[q];
}

/* The records received (src/par.h, io with write = 1): the list's
 * entries below np * nh from the chunk slots through the map at buf[mo]
 * (zero where a chunk's entry is -1), the others (the ring) from
 * buf[10 (k - np nh)]. The LBM's block-sparse step (lbm.cl lbm_blk_run)
 * over several processes: an interior cell received with a nonzero bit
 * sets the wet flag of its 32 x 32 block. */
kernel void par_cells_scatter(global uint *f, global uint *h, int N,
			      global const int *cells, int n,
			      global const uint *buf, int nh, int np, int nch,
			      int mo, global uint *wet, int sparse, int W,
			      int nx, int ny, int nbx)
{
	const int k = get_global_id(0);
	if (k >= n)
		return;
	const int c = cells[k];
	uint v[10], acc = 0;
	for (int q = 0; q < 10; q++)
		v[q] = 0;
	global const uint *r = 0;
	if (k < np * nh) {
		const int p = k / nh, w = k % nh;
		const int s = ((global const int *)buf)[mo + p * nch + w / 32];
		if (s >= 0)
			r = buf + mo + np * nch + (s * 32 + w % 32) * 10;
	} else {
		r = buf + 10 * (k - np * nh);
	}
	if (r)
		for (int q = 0; q < 10; q++)
			acc |= v[q] = r[q];
	for (int q = 0; q < 9; q++)
		f[WB_SLICE(q, N, c)] = v[q];
	h[c] = v[9];
	const int i = c % W - 1, j = c / W - 1;
	if (sparse && acc && i >= 0 && i < nx && j >= 0 && j < ny)
		atomic_or(&wet[(j / 32) * nbx + i / 32], 1u);
}
