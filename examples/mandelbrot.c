/*
 * The dwork demo: a Mandelbrot image computed in horizontal bands (tiles)
 * over the workers, written to mandelbrot.pgm.
 *
 * Tiles cost very different amounts: a pixel inside the set runs every
 * iteration, most pixels outside escape after a few, and the view puts
 * the set's body in the middle bands.  A static split would leave the
 * workers with the top and bottom bands idle, so the master hands out
 * tiles dynamically: each worker has one call outstanding, and the next
 * tile goes to whichever worker finishes first.
 *
 *   ./mandelbrot -p 4                       4 local workers
 *   dwork run --trace -p 4 ./mandelbrot     the same, with every process
 *                                           traced and the trace merged
 *
 * Options: -s WIDTHxHEIGHT (default 960x720), -i MAX_ITERATIONS (4000),
 * -o FILE (mandelbrot.pgm).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <dwork/dwork.h>

#define TILES       50 /* about this many bands */
#define MAX_WORKERS 256

/* The view: the whole set, its body in the middle rows. */
#define CENTER_RE (-0.75)
#define CENTER_IM 0.0
#define SPAN_RE   3.0

/* ---- a tile, as bytes: five little-endian 32-bit numbers ---- */

struct tile {
	uint32_t width, height, maxiter; /* the whole image */
	uint32_t y0, rows;               /* this band */
};

#define TILE_BYTES 20

static void
put_u32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t
get_u32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static void
tile_encode(const struct tile *t, unsigned char *p)
{
	put_u32(p, t->width);
	put_u32(p + 4, t->height);
	put_u32(p + 8, t->maxiter);
	put_u32(p + 12, t->y0);
	put_u32(p + 16, t->rows);
}

static int
tile_decode(const void *arg, size_t len, struct tile *t)
{
	const unsigned char *p = arg;
	if (len != TILE_BYTES)
		return -1;
	t->width = get_u32(p);
	t->height = get_u32(p + 4);
	t->maxiter = get_u32(p + 8);
	t->y0 = get_u32(p + 12);
	t->rows = get_u32(p + 16);
	return t->width && t->height && t->width <= 16384 &&
	               t->height <= 16384 && t->y0 < t->height &&
	               t->rows <= t->height - t->y0
	           ? 0
	           : -1;
}

/* ---- the work: runs in the workers ---- */

static uint32_t
escape_time(double cr, double ci, uint32_t maxiter)
{
	double zr = 0, zi = 0;
	uint32_t i = 0;
	while (i < maxiter && zr * zr + zi * zi < 4.0) {
		double t = zr * zr - zi * zi + cr;
		zi = 2 * zr * zi + ci;
		zr = t;
		i++;
	}
	return i;
}

/* Inside the set: black; outside: darker the longer it took to escape
 * (saturating at 200 iterations, beyond which the eye sees no change). */
static unsigned char
shade(uint32_t i, uint32_t maxiter)
{
	if (i >= maxiter)
		return 0;
	double v = log1p(i) / log1p(200);
	return (unsigned char)(255.0 - 225.0 * (v < 1 ? v : 1));
}

/* Computes a band of rows; replies rows * width grey bytes. */
static int
mandel_tile(const void *arg, size_t len, dw_reply *r)
{
	struct tile t;
	if (tile_decode(arg, len, &t))
		return dw_reply_error(r, "bad tile request (%zu bytes)", len);
	unsigned char *px = malloc((size_t)t.rows * t.width + 1);
	if (!px)
		return dw_reply_error(r, "out of memory");
	double step = SPAN_RE / t.width;
	for (uint32_t y = 0; y < t.rows; y++) {
		double ci =
		    CENTER_IM + ((double)(t.y0 + y) - t.height / 2.0) * step;
		for (uint32_t x = 0; x < t.width; x++) {
			double cr =
			    CENTER_RE + ((double)x - t.width / 2.0) * step;
			px[(size_t)y * t.width + x] =
			    shade(escape_time(cr, ci, t.maxiter), t.maxiter);
		}
	}
	return dw_reply_take(r, px, (size_t)t.rows * t.width);
}
DW_REGISTER(mandel_tile)

/* ---- the master: hands out tiles, assembles the image ---- */

struct job {
	uint32_t width, height, maxiter, tile_rows;
	uint32_t ntiles, next; /* tiles handed out so far */
	uint32_t *retry;       /* tiles whose worker failed */
	uint32_t nretry;
	unsigned char *image;
};

/* A worker and its outstanding call (f == NULL: none). */
struct slot {
	int pid;
	dw_future *f;
	uint32_t tile;
	int tiles_done;
	int failed;
};

static int
job_take(struct job *j, uint32_t *tile)
{
	if (j->nretry) {
		*tile = j->retry[--j->nretry];
		return 1;
	}
	if (j->next >= j->ntiles)
		return 0;
	*tile = j->next++;
	return 1;
}

/* Gives the slot's worker the next tile, if any is left. */
static void
slot_start(struct job *j, struct slot *s)
{
	uint32_t k;
	while (!s->failed && job_take(j, &k)) {
		struct tile t = {j->width, j->height, j->maxiter,
		                 k * j->tile_rows, j->tile_rows};
		if (t.y0 + t.rows > j->height)
			t.rows = j->height - t.y0;
		unsigned char req[TILE_BYTES];
		tile_encode(&t, req);
		if (dw_remotecall(s->pid, "mandel_tile", req, sizeof req,
		                  &s->f) == DW_OK) {
			s->tile = k;
			return;
		}
		fprintf(stderr, "mandelbrot: worker %d: %s\n", s->pid,
		        dw_errmsg());
		j->retry[j->nretry++] = k;
		s->failed = 1;
	}
}

/* Copies a finished tile into the image; a failed one is handed out
 * again and its worker gets no more. */
static void
slot_finish(struct job *j, struct slot *s)
{
	const void *px;
	size_t len;
	uint32_t y0 = s->tile * j->tile_rows;
	uint32_t rows = j->tile_rows;
	if (y0 + rows > j->height)
		rows = j->height - y0;
	int e = dw_future_fetch(s->f, &px, &len);
	if (e == DW_OK && len == (size_t)rows * j->width) {
		memcpy(j->image + (size_t)y0 * j->width, px, len);
		s->tiles_done++;
	} else {
		fprintf(stderr, "mandelbrot: tile %u on worker %d failed: %s\n",
		        s->tile, s->pid,
		        e == DW_OK ? "wrong size" : dw_errmsg());
		j->retry[j->nretry++] = s->tile;
		s->failed = 1;
	}
	dw_future_free(s->f);
	s->f = NULL;
}

/*
 * Keeps every worker busy until all tiles are done: waits for whichever
 * call finishes first (dw_future_waitany) and hands that worker the next
 * tile.
 */
static int
run_tiles(struct job *j, struct slot *s, int n)
{
	dw_future *fs[MAX_WORKERS];
	for (int i = 0; i < n; i++)
		slot_start(j, &s[i]);
	for (;;) {
		for (int i = 0; i < n; i++)
			fs[i] = s[i].f;
		int i = dw_future_waitany(fs, n, -1);
		if (i < 0)
			break; /* none left in flight */
		slot_finish(j, &s[i]);
		slot_start(j, &s[i]);
		for (int k = 0; k < n; k++) /* a failed worker's tiles */
			if (!s[k].f)
				slot_start(j, &s[k]);
	}
	return j->nretry || j->next < j->ntiles ? -1 : 0;
}

static int
write_pgm(const char *path, const struct job *j)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	fprintf(f, "P5\n%u %u\n255\n", j->width, j->height);
	size_t n = (size_t)j->width * j->height;
	int ok = fwrite(j->image, 1, n, f) == n;
	return fclose(f) == 0 && ok ? 0 : -1;
}

static double
now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int
usage(void)
{
	fprintf(stderr, "usage: mandelbrot [-p N] [-s WIDTHxHEIGHT] "
	                "[-i MAX_ITERATIONS] [-o FILE]\n");
	return 2;
}

static int
parse_args(int argc, char **argv, struct job *j, const char **out)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v)
			return -1;
		if (!strcmp(a, "-s")) {
			if (sscanf(v, "%ux%u", &j->width, &j->height) != 2 ||
			    !j->width || !j->height || j->width > 16384 ||
			    j->height > 16384)
				return -1;
		} else if (!strcmp(a, "-i")) {
			if (sscanf(v, "%u", &j->maxiter) != 1 || !j->maxiter)
				return -1;
		} else if (!strcmp(a, "-o")) {
			*out = v;
		} else {
			return -1;
		}
		i++;
	}
	return 0;
}

static int
job_init(struct job *j)
{
	j->tile_rows = (j->height + TILES - 1) / TILES;
	j->ntiles = (j->height + j->tile_rows - 1) / j->tile_rows;
	j->image = calloc((size_t)j->width, j->height);
	j->retry = calloc(j->ntiles, sizeof *j->retry);
	return j->image && j->retry ? 0 : -1;
}

static void
report(const struct job *j, const struct slot *s, int n, double secs,
       const char *out)
{
	printf("mandelbrot: %ux%u, %u iterations max, %u tiles of %u rows "
	       "on %d worker%s in %.2f s -> %s\n",
	       j->width, j->height, j->maxiter, j->ntiles, j->tile_rows, n,
	       n == 1 ? "" : "s", secs, out);
	for (int i = 0; i < n; i++)
		printf("  worker %d: %d tiles%s\n", s[i].pid, s[i].tiles_done,
		       s[i].failed ? " (failed)" : "");
}

int
main(int argc, char **argv)
{
	if (dw_init(&argc, &argv) != DW_OK)
		return 1;
	struct job j = {.width = 960, .height = 720, .maxiter = 4000};
	const char *out = "mandelbrot.pgm";
	if (parse_args(argc, argv, &j, &out))
		return usage();
	if (job_init(&j)) {
		fprintf(stderr, "mandelbrot: out of memory\n");
		return 1;
	}
	static int ids[MAX_WORKERS];
	static struct slot slots[MAX_WORKERS];
	int n = dw_workers(ids, MAX_WORKERS);
	if (n > MAX_WORKERS)
		n = MAX_WORKERS;
	for (int i = 0; i < n; i++)
		slots[i].pid = ids[i];
	double t0 = now_s();
	int rc = run_tiles(&j, slots, n);
	double secs = now_s() - t0;
	if (rc)
		fprintf(stderr,
		        "mandelbrot: some tiles could not be computed\n");
	else if (write_pgm(out, &j))
		fprintf(stderr, "mandelbrot: cannot write %s\n", out), rc = -1;
	else
		report(&j, slots, n, secs, out);
	free(j.image);
	free(j.retry);
	dw_finalize();
	return rc ? 1 : 0;
}
