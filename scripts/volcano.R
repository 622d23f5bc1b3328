#!/usr/bin/env Rscript
# volcano.R - convert R's 'volcano' dataset (Maunga Whau, Auckland: 87 x 61
# heights in metres on a 10 m grid, package datasets of r-base-core) into
# the 16-bit greyscale PNG heightmap of samples/volcano.
#
#   Rscript scripts/volcano.R [OUT.png]      (default samples/volcano/terrain.png)
#
# Orientation: R's row index r (1..87) becomes the image column x = r - 1,
# R's column index c (1..61, "grid lines running south to north", ?volcano)
# becomes the image row y = 61 - c, so north is the top of the image, as
# image(volcano) and filled.contour(volcano) draw it.
# Resolution: bilinear interpolation between the data points to a 5 m grid
# (every data point kept, one point added between each pair): 173 x 121
# pixels, metres_per_pixel 5.
# Heights: 16-bit value v = round((z - 90) / 110 * 65535), i.e. the scene's
# height_scale 110 and height_offset 90 (z from 94 to 195 m; step 1.7 mm).
# The PNG is written here (base R only: memCompress gives the zlib stream,
# the CRC-32 is computed below), so the script needs nothing but r-base-core.
# Output is byte-identical from run to run.

args <- commandArgs(trailingOnly = TRUE)
out <- if (length(args) >= 1) args[1] else "samples/volcano/terrain.png"

z <- datasets::volcano                       # 87 x 61, z[r, c]
nr <- nrow(z); nc <- ncol(z)
# bilinear refinement by 2 along both axes
refine <- function(m) {                      # refine rows of m
	n <- nrow(m)
	o <- matrix(0, 2 * n - 1, ncol(m))
	o[seq(1, 2 * n - 1, 2), ] <- m
	o[seq(2, 2 * n - 2, 2), ] <- (m[-n, , drop = FALSE] + m[-1, , drop = FALSE]) / 2
	o
}
zf <- t(refine(t(refine(z))))                # 173 x 121, zf[x + 1, c']
W <- nrow(zf); H <- ncol(zf)
img <- t(zf[, H:1])                          # img[y + 1, x + 1], north on top
v <- round((img - 90) / 110 * 65535)
stopifnot(min(v) >= 0, max(v) <= 65535)

# ---- PNG writer (greyscale, 16 bits, no interlace) ----------------------
# CRC-32 (ISO 3309, as PNG uses) on 16-bit halves: R integers are signed
# 32-bit, so the 32-bit register is kept as hi and lo.
crc_tab <- local({
	hi <- integer(256); lo <- integer(256)
	for (n in 0:255) {
		h <- 0L; l <- n
		for (k in 1:8) {
			odd <- bitwAnd(l, 1L)
			l <- bitwOr(bitwShiftR(l, 1L), bitwShiftL(bitwAnd(h, 1L), 15L))
			h <- bitwShiftR(h, 1L)
			if (odd) { h <- bitwXor(h, 0xEDB8L); l <- bitwXor(l, 0x8320L) }
		}
		hi[n + 1] <- h; lo[n + 1] <- l
	}
	list(hi = hi, lo = lo)
})
crc32 <- function(bytes) {
	h <- 0xFFFFL; l <- 0xFFFFL
	for (b in as.integer(bytes)) {
		i <- bitwAnd(bitwXor(l, b), 255L) + 1L
		l <- bitwXor(bitwOr(bitwShiftR(l, 8L), bitwShiftL(bitwAnd(h, 255L), 8L)),
			     crc_tab$lo[i])
		h <- bitwXor(bitwShiftR(h, 8L), crc_tab$hi[i])
	}
	h <- bitwXor(h, 0xFFFFL); l <- bitwXor(l, 0xFFFFL)
	as.raw(c(bitwShiftR(h, 8L), bitwAnd(h, 255L), bitwShiftR(l, 8L), bitwAnd(l, 255L)))
}
be32 <- function(x) as.raw(c(x %/% 16777216, (x %/% 65536) %% 256, (x %/% 256) %% 256, x %% 256))
chunk <- function(type, data) {
	td <- c(charToRaw(type), data)
	c(be32(length(data)), td, crc32(td))
}
ihdr <- c(be32(W), be32(H), as.raw(c(16, 0, 0, 0, 0)))
rows <- lapply(seq_len(H), function(y) {
	p <- v[y, ]
	c(as.raw(0), as.raw(as.vector(rbind(p %/% 256, p %% 256))))   # filter 0, big-endian
})
idat <- memCompress(do.call(c, rows), type = "gzip")             # zlib stream
png <- c(as.raw(c(0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A)),
	 chunk("IHDR", ihdr), chunk("IDAT", idat), chunk("IEND", raw(0)))
writeBin(png, out)
cat(sprintf("%s: %d x %d pixels, 5 m per pixel, heights %.1f .. %.1f m\n",
	    out, W, H, min(img), max(img)))
