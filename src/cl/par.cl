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
			     int N, global const int *cells, int n,
			     global uint *buf)
{
	const int k = get_global_id(0);
	if (k >= n)
		return;
	const int c = cells[k];
	for (int q = 0; q < 9; q++)
		buf[10 * k + q] = f[WB_SLICE(q, N, c)];
	buf[10 * k + 9] = h[c];
}

/* The LBM's block-sparse step (lbm.cl lbm_blk_run) over several
 * processes: an interior cell received with a nonzero bit sets the wet
 * flag of its 32 x 32 block. */
kernel void par_cells_scatter(global uint *f, global uint *h, int N,
			      global const int *cells, int n,
			      global const uint *buf, global uint *wet,
			      int sparse, int W, int nx, int ny, int nbx)
{
	const int k = get_global_id(0);
	if (k >= n)
		return;
	const int c = cells[k];
	uint acc = buf[10 * k + 9];
	for (int q = 0; q < 9; q++) {
		f[WB_SLICE(q, N, c)] = buf[10 * k + q];
		acc |= buf[10 * k + q];
	}
	h[c] = buf[10 * k + 9];
	const int i = c % W - 1, j = c / W - 1;
	if (sparse && acc && i >= 0 && i < nx && j >= 0 && j < ny)
		atomic_or(&wet[(j / 32) * nbx + i / 32], 1u);
}
