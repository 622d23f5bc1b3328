/*
 * probe_cl_rect.c - where an OpenCL implementation puts a rectangle copy
 * whose byte offset into the buffer passes 2^32 (issue 14: the LBM/FV
 * hybrid's row transfers, src/cl.c fv_rect, in the 9-population buffer
 * of a 16384^2 grid; docs/opencl.md "Rectangle copies above 4 GiB").
 * Not a test: the sizes need a GPU with more than 10 GiB, which make test
 * does not have. Build: make OPENCL=1 build/rel-cl/tests/probe_cl_rect;
 * run: build/rel-cl/tests/probe_cl_rect [W [H]] (default 16386 x 16386,
 * the padded 16384^2 world), device WB_CL_DEVICE (default: the first GPU).
 *
 * The buffer holds 9 slices of W x H floats, as the populations do. For
 * the slices 0, 4 and 8 (offsets 0, 4 W H 4 and 8 W H 4 bytes) it writes
 * a rectangle of rows and columns three ways, and reads the rows back with
 * plain whole-row reads to see where the values landed:
 *   x:     buffer_origin = { slice offset + i0 * 4, j0, 0 } (fv_rect before)
 *   y:     buffer_origin = { i0 * 4, slice * H + j0, 0 } (the slice's
 *          offset folded into the row)
 *   plain: one clEnqueueWriteBuffer per row at offset slice offset + row
 * and it reads the rectangle back through each form too. A line per form
 * and slice says "ok" or where the first wrong value is.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

static cl_device_id pick(void)
{
	cl_platform_id p[8];
	cl_uint np = 0;
	if (clGetPlatformIDs(8, p, &np) != CL_SUCCESS || np == 0)
		return NULL;
	const char *s = getenv("WB_CL_DEVICE");
	int want = s && *s ? atoi(s) : -1, k = 0;
	cl_device_id first = NULL;
	for (cl_uint i = 0; i < np; i++) {
		cl_device_id d[8];
		cl_uint nd = 0;
		if (clGetDeviceIDs(p[i], CL_DEVICE_TYPE_ALL, 8, d, &nd) != CL_SUCCESS)
			continue;
		for (cl_uint j = 0; j < nd; j++, k++) {
			cl_device_type t;
			clGetDeviceInfo(d[j], CL_DEVICE_TYPE, sizeof(t), &t, NULL);
			if (k == want || (want < 0 && (t & CL_DEVICE_TYPE_GPU)))
				return d[j];
			if (!first)
				first = d[j];
		}
	}
	return want < 0 ? first : NULL;
}

/* 1 + value of rectangle cell (i, j) of slice a in form f: never 0 */
static float val(int f, int a, int i, int j)
{
	return (float)(1 + f * 1000000 + a * 100000 + (j % 100) * 1000 + i % 1000);
}

/* The rectangle rows j0 .. j1 - 1, columns i0 .. i1 - 1 of slice offset
 * base between the buffer and host (W floats per row), in form f: 0 or 1
 * one rectangle copy with buffer origin bo, 2 a plain copy per row.
 * Returns the first error. */
static cl_int rect_io(cl_command_queue q, cl_mem m, int f, int write,
		      const size_t bo[3], size_t W, size_t base, float *host,
		      int i0, int i1, int j0, int j1)
{
	const size_t es = sizeof(float), pitch = W * es;
	const size_t ho[3] = { i0 * es, (size_t)j0, 0 };
	const size_t rg[3] = { (i1 - i0) * es, (size_t)(j1 - j0), 1 };
	if (f < 2)
		return write ? clEnqueueWriteBufferRect(q, m, CL_TRUE, bo, ho, rg, pitch,
							0, pitch, 0, host, 0, NULL, NULL)
			     : clEnqueueReadBufferRect(q, m, CL_TRUE, bo, ho, rg, pitch,
						       0, pitch, 0, host, 0, NULL, NULL);
	cl_int err = CL_SUCCESS;
	for (int j = j0; j < j1 && err == CL_SUCCESS; j++) {
		const size_t off = base + j * pitch + i0 * es, len = (i1 - i0) * es;
		float *h = host + j * W + i0;
		err = write ? clEnqueueWriteBuffer(q, m, CL_TRUE, off, len, h, 0, NULL, NULL)
			    : clEnqueueReadBuffer(q, m, CL_TRUE, off, len, h, 0, NULL, NULL);
	}
	return err;
}

int main(int argc, char **argv)
{
	const size_t W = argc > 1 ? strtoul(argv[1], NULL, 10) : 16386;
	const size_t H = argc > 2 ? strtoul(argv[2], NULL, 10) : W;
	const size_t es = sizeof(float), pitch = W * es, slice = W * H * es;
	const int i0 = 3, i1 = 3 + 70, j0 = 7, j1 = 7 + 5;
	cl_device_id dev = pick();
	if (!dev) {
		fprintf(stderr, "probe_cl_rect: no OpenCL device\n");
		return 1;
	}
	char name[256] = "";
	cl_ulong maxa = 0;
	clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof(name), name, NULL);
	clGetDeviceInfo(dev, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof(maxa), &maxa, NULL);
	printf("probe_cl_rect: %s, W %zu H %zu, buffer %.3f GiB (max alloc %.3f GiB)\n",
	       name, W, H, 9.0 * slice / 1073741824.0, maxa / 1073741824.0);
	cl_int err;
	cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
	if (err != CL_SUCCESS)
		return fprintf(stderr, "clCreateContext: %d\n", err), 1;
	cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
	cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 9 * slice, NULL, &err);
	if (err != CL_SUCCESS)
		return fprintf(stderr, "clCreateBuffer %zu bytes: %d\n", 9 * slice, err), 1;
	float *row = calloc(W * (size_t)(j1 - j0), es);
	float *host = calloc(W * (size_t)j1, es);
	if (!row || !host)
		return fprintf(stderr, "out of memory\n"), 1;
	const char *fname[3] = { "x", "y", "plain" };
	int bad = 0;
	for (int f = 0; f < 3; f++) {
		for (int a = 0; a <= 8; a += 4) {
			const size_t base = (size_t)a * slice;
			/* zero the rows, then write the rectangle in form f */
			memset(row, 0, W * (j1 - j0) * es);
			err = clEnqueueWriteBuffer(q, m, CL_TRUE, base + j0 * pitch,
						   (j1 - j0) * pitch, row, 0, NULL, NULL);
			for (int j = j0; j < j1; j++)
				for (int i = i0; i < i1; i++)
					host[j * W + i] = val(f, a, i, j);
			size_t bo[3] = { base + i0 * es, (size_t)j0, 0 };
			if (f == 1)
				bo[0] = i0 * es, bo[1] = (size_t)a * H + j0;
			if (err == CL_SUCCESS)
				err = rect_io(q, m, f, 1, bo, W, base, host, i0, i1, j0, j1);
			if (err == CL_SUCCESS)
				err = clEnqueueReadBuffer(q, m, CL_TRUE, base + j0 * pitch,
							  (j1 - j0) * pitch, row, 0, NULL, NULL);
			int first = -1;
			for (int j = j0; j < j1 && first < 0; j++)
				for (int i = 0; i < (int)W && first < 0; i++) {
					float want = i >= i0 && i < i1 ? val(f, a, i, j) : 0.0f;
					if (row[(j - j0) * W + i] != want)
						first = (j - j0) * (int)W + i;
				}
			/* and read the rectangle back through the same form */
			memset(host, 0, W * j1 * es);
			if (err == CL_SUCCESS)
				err = rect_io(q, m, f, 0, bo, W, base, host, i0, i1, j0, j1);
			int rfirst = -1;
			for (int j = j0; j < j1 && rfirst < 0; j++)
				for (int i = i0; i < i1 && rfirst < 0; i++)
					if (host[j * W + i] != val(f, a, i, j))
						rfirst = j * (int)W + i;
			const int ok = err == CL_SUCCESS && first < 0 && rfirst < 0;
			bad += !ok;
			printf("form %-5s slice %d (offset %.3f GiB): %s", fname[f], a,
			       base / 1073741824.0, ok ? "ok" : "WRONG");
			if (err != CL_SUCCESS)
				printf(", error %d", err);
			if (first >= 0)
				printf(", write: first wrong value at row %d column %d",
				       j0 + first / (int)W, first % (int)W);
			if (rfirst >= 0)
				printf(", read back: first wrong value at row %d column %d",
				       rfirst / (int)W, rfirst % (int)W);
			printf("\n");
			err = CL_SUCCESS;
		}
	}
	printf("probe_cl_rect: %d of 9 wrong\n", bad);
	clReleaseMemObject(m);
	clReleaseCommandQueue(q);
	clReleaseContext(ctx);
	free(row);
	free(host);
	return bad != 0;
}
